"""The fake OpenAI server for the wire benchmarks, in its own process.

``python benchmarks/model_server.py`` starts ``convo.testing.OpenAIServer`` on 127.0.0.1,
prints its base URL on one line, and serves until its stdin closes. Each reply follows from
the request (a tool call, then the final text once a tool result is in), so any number of
conversations may interleave. Requests are not kept: a benchmark sends hundreds of thousands.
"""

from __future__ import annotations

import sys

from conversation import server_reply

from convo.testing import OpenAIServer


def main() -> None:
    # A fixed script answers in order; concurrent conversations need replies that depend on
    # the request instead: the handler gives them.
    with OpenAIServer(handler=server_reply, keep_requests=False) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()  # serve until the parent closes our stdin (or dies)


if __name__ == "__main__":
    main()
