"""A bot for the AG-UI client tests: the serving tests' bot (its `refund` tool needs the user's
approval; "fail…" makes the model call fail), served by `convo serve` in a process of its own."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from refund_bot import TEMPLATE, model

template = TEMPLATE
mock_model = model()
