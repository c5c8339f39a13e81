"""Record and replay, as the test kit offers them (the models live in convo.models._recording,
where the ``convo run --record`` command uses them too)."""

from ..models._recording import (
    Exchange,
    RecordingModel,
    ReplayModel,
    load_recording,
    replay_or_record,
)

__all__ = ["Exchange", "RecordingModel", "ReplayModel", "load_recording", "replay_or_record"]
