"""Anthropic's room: everything that speaks the Messages API's words, behind ``Model``.

- ``wire.py``: the pure converter (requests out, responses and stream events in), with no
  SDK import (the fake server's side is the test kit's, ``convo.testing.server``).
"""
