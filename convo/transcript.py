"""Transcripts, where code written before ``convo.record`` looks for them: reading
(``load_transcript``, ``read_transcript``) and writing (``TranscriptWriter``) live in
``convo.record.transcript``."""

from .record.transcript import (
    FORMAT,
    FORMAT_VERSION,
    Transcript,
    TranscriptWriter,
    load_transcript,
    read_transcript,
)

__all__ = ["FORMAT", "FORMAT_VERSION", "Transcript", "TranscriptWriter", "load_transcript",
           "read_transcript"]
