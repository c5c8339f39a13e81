"""A chat with one tool (the tests' ``weather``), for the command-line tests of local-model
options."""

import sys
from pathlib import Path

from convo import LinearTemplate, LoopTemplate, MockModel, ToolingTemplate, UserTemplate

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from weather_tools import weather

template = LinearTemplate([LoopTemplate([UserTemplate(), ToolingTemplate([weather])])])
demo_input = ["Weather in Oslo?", "And Rome?"]
mock_model = MockModel(["{weather(city='Oslo')}", "Sunny."])
