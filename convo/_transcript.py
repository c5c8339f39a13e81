"""Transcripts' names in one import for convo's own modules: reading (``load_transcript``,
``read_transcript``) and writing (``TranscriptWriter``) from ``convo._record.transcript``, their
error (``TranscriptError``), the event of a resumed run (``CaughtUp``) and ``resume`` /
``Resume``. Users import ``load_transcript`` from ``convo``."""

from ._errors import TranscriptError
from ._record.transcript import (
    FORMAT,
    FORMAT_VERSION,
    Transcript,
    TranscriptWriter,
    load_transcript,
    read_transcript,
)
from ._resume import Resume, resume
from .events import CaughtUp

__all__ = ["FORMAT", "FORMAT_VERSION", "CaughtUp", "Resume", "Transcript", "TranscriptError",
           "TranscriptWriter", "load_transcript", "read_transcript", "resume"]
