"""Transcripts, where code written before ``convo.record`` looks for them: reading
(``load_transcript``, ``read_transcript``) and writing (``TranscriptWriter``) live in
``convo.record.transcript``. Every name this module has exported before still imports from
here: its error (``TranscriptError``, in ``convo.errors``), the event of a resumed run
(``CaughtUp``, in ``convo.events``) and ``resume`` / ``Resume`` (in ``convo.resume``)."""

from .errors import TranscriptError
from .events import CaughtUp
from .record.transcript import (
    FORMAT,
    FORMAT_VERSION,
    Transcript,
    TranscriptWriter,
    load_transcript,
    read_transcript,
)
from .resume import Resume, resume

__all__ = ["FORMAT", "FORMAT_VERSION", "CaughtUp", "Resume", "Transcript", "TranscriptError",
           "TranscriptWriter", "load_transcript", "read_transcript", "resume"]
