"""The bot the serving benchmark serves: the standard conversation, one user turn at a time."""

from conversation import SYSTEM, get_weather, mock_model

from convo import LinearTemplate, LoopTemplate, SystemTemplate, ToolingTemplate, UserTemplate

template = LinearTemplate([SystemTemplate(SYSTEM), LoopTemplate([
    UserTemplate(), ToolingTemplate([get_weather])])])
mock_model = mock_model()
