"""A content-addressed cache of expensive results: model answers, extractions, judgements, embeddings.

Keys are hashes of everything that determines a result (component identity and configuration, the
exact inputs), so a cached value is only ever reused for the same question, and changing a prompt,
a threshold or a model changes the key. One SQLite connection per process, in WAL mode, so several
processes (parallel runs, a report while a run is going) can read and write the same file safely.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT,
    blob BLOB,
    PRIMARY KEY (namespace, key)
) WITHOUT ROWID;
"""


def default_cache_dir() -> Path:
    """``$HALLUSCOPE_CACHE_DIR``, else ``$XDG_CACHE_HOME/halluscope``, else ``~/.cache/halluscope``."""
    explicit = os.environ.get("HALLUSCOPE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "halluscope"


def content_key(*parts: Any) -> str:
    """A stable hash of JSON-serialisable parts (dict keys sorted), used as a cache key."""
    payload = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class Cache:
    """A namespaced key-value store on SQLite. ``Cache(None)`` keeps everything in memory only."""

    def __init__(self, path: Path | str | None) -> None:
        self.path = Path(path) if path is not None else None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            target = str(self.path)
        else:
            target = ":memory:"
        # One connection for this process; the lock serialises the few calls made from worker threads
        # (embedding in a thread pool) with those from the event loop.
        self._conn = sqlite3.connect(target, check_same_thread=False, timeout=30.0, isolation_level=None)
        self._lock = threading.Lock()
        with self._lock:
            if self.path is not None:
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(_SCHEMA)

    @classmethod
    def default(cls) -> Cache:
        return cls(default_cache_dir() / "cache.sqlite")

    # -- JSON values -----------------------------------------------------------------------------------

    def get(self, namespace: str, key: str) -> Any | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT value FROM entries WHERE namespace=? AND key=?", (namespace, key)
            ).fetchone()
        return None if row is None or row[0] is None else json.loads(row[0])

    def put(self, namespace: str, key: str, value: Any) -> None:
        self.put_many(namespace, {key: value})

    def get_many(self, namespace: str, keys: Iterable[str]) -> dict[str, Any]:
        return {k: json.loads(v) for k, v in self._fetch(namespace, keys, "value").items()}

    def put_many(self, namespace: str, items: Mapping[str, Any]) -> None:
        self._store(namespace, "value", {k: json.dumps(v, ensure_ascii=False) for k, v in items.items()})

    # -- binary values (embedding vectors) -------------------------------------------------------------

    def get_blobs(self, namespace: str, keys: Iterable[str]) -> dict[str, bytes]:
        return {k: bytes(b) for k, b in self._fetch(namespace, keys, "blob").items()}

    def put_blobs(self, namespace: str, items: Mapping[str, bytes]) -> None:
        self._store(namespace, "blob", {k: sqlite3.Binary(v) for k, v in items.items()})

    # -- storage ---------------------------------------------------------------------------------------

    def _fetch(self, namespace: str, keys: Iterable[str], column: str) -> dict[str, Any]:
        """Non-null ``column`` of the given keys, looked up in chunks (SQLite limits bound parameters)."""
        found: dict[str, Any] = {}
        wanted = list(dict.fromkeys(keys))
        with self._lock:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    f"SELECT key, {column} FROM entries WHERE namespace=? AND key IN ({marks})",
                    (namespace, *chunk),
                ).fetchall()
                found.update({k: v for k, v in rows if v is not None})
        return found

    def _store(self, namespace: str, column: str, items: Mapping[str, Any]) -> None:
        """Write all items in one transaction: a crash leaves either all of them or none."""
        rows = [(namespace, k, v) for k, v in items.items()]
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany(
                    f"INSERT OR REPLACE INTO entries(namespace, key, {column}) VALUES (?, ?, ?)", rows
                )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def count(self, namespace: str | None = None) -> int:
        with self._lock:
            if namespace is None:
                row = self._conn.execute("SELECT COUNT(*) FROM entries").fetchone()
            else:
                row = self._conn.execute(
                    "SELECT COUNT(*) FROM entries WHERE namespace=?", (namespace,)
                ).fetchone()
        return int(row[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()
