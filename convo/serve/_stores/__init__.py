"""Where served conversations live: the ``Store`` protocol by capability (``base.py``), its
three implementations (``memory.py``; ``sqlite.py`` and ``postgres.py``, each imported only
when a URL names it, sharing ``rows.py``), and ``open_store``, which store a URL names. The
names of ``base.py`` and ``MemoryStore`` are here too (``convo.serve._stores``, as they were).
"""

from __future__ import annotations

from .base import (
    CANCEL,
    DEFAULT_OWNER,
    HELD,
    LEASE_S,
    LOST,
    SCHEMA_VERSION,
    Change,
    Conversations,
    Creating,
    Idempotency,
    Leases,
    Listing,
    Ratings,
    Renaming,
    Store,
    Stored,
    StoreError,
    TurnStore,
    dumps,
    split,
)
from .memory import MemoryStore

__all__ = [
    "CANCEL",
    "DEFAULT_OWNER",
    "HELD",
    "LEASE_S",
    "LOST",
    "SCHEMA_VERSION",
    "Change",
    "Conversations",
    "Creating",
    "Idempotency",
    "Leases",
    "Listing",
    "MemoryStore",
    "Ratings",
    "Renaming",
    "Store",
    "StoreError",
    "Stored",
    "TurnStore",
    "dumps",
    "open_store",
    "split",
]


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
