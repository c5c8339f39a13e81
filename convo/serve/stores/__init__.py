"""Which store a URL names (each implementation is imported only when it is used)."""

from __future__ import annotations

from .store import MemoryStore, Store


def open_store(url: str) -> Store:
    """A store from ``memory``, ``sqlite:///PATH`` or ``postgresql://…``."""
    if url == "memory":
        return MemoryStore()
    if url.startswith("sqlite:///"):
        from .sqlite import SQLiteStore

        return SQLiteStore(url[len("sqlite:///"):])
    if url.startswith(("postgresql://", "postgres://")):
        from .postgres import PostgresStore

        return PostgresStore(url)
    raise ValueError(f"--store must be memory, sqlite:///PATH or postgresql://…, got {url!r}")
