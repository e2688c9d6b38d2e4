"""A content-addressed cache of expensive results: model answers, extractions, judgements, embeddings.

Keys are hashes of everything that determines a result (component identity and configuration, the
exact inputs), so a cached value is only ever reused for the same question, and changing a prompt,
a threshold or a model changes the key. One SQLite connection per process, in WAL mode, so several
processes (parallel runs, a report while a run is going) can read and write the same file safely.

A cache only saves work, so a cache that cannot be used never stops a run: a file that is not a SQLite
database (overwritten, truncated) is moved aside as ``<name>.corrupt-<time>`` and a fresh one is started;
a folder that cannot be written, or a file that fails later, leaves the run going on without a cache.
Either way one line naming the file or folder is reported (``on_problem``; a :class:`CacheWarning` by
default).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

_T = TypeVar("_T")

#: The first bytes of every SQLite database file.
_SQLITE_HEADER = b"SQLite format 3\x00"

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


class CacheWarning(UserWarning):
    """The cache file or folder cannot be used; the run goes on with a fresh cache or without one."""


def _warn(message: str) -> None:
    warnings.warn(message, CacheWarning, stacklevel=5)  # the caller of Cache(...)


def _connect(target: str, on_disk: bool) -> sqlite3.Connection:
    """A connection with the schema in place; raises ``sqlite3.DatabaseError`` when the file is no database."""
    conn = sqlite3.connect(target, check_same_thread=False, timeout=30.0, isolation_level=None)
    try:
        if on_disk:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(_SCHEMA)
        conn.execute("SELECT 1 FROM entries LIMIT 1").fetchall()
    except BaseException:
        conn.close()
        raise
    return conn


class Cache:
    """A namespaced key-value store on SQLite. ``Cache(None)`` keeps everything in memory only.

    ``on_problem`` receives the one line that says a cache file could not be used and what was done
    instead (a :class:`CacheWarning` when not given); :attr:`problem` keeps the last such line.
    """

    def __init__(self, path: Path | str | None, *, on_problem: Callable[[str], None] | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.problem: str | None = None
        self._on_problem = on_problem or _warn
        # One connection for this process; the lock serialises the few calls made from worker threads
        # (embedding in a thread pool) with those from the event loop.
        self._lock = threading.Lock()
        self._on_disk = self.path is not None
        self._conn = self._open()

    def _report(self, message: str) -> None:
        self.problem = message
        self._on_problem(message)

    def _open(self) -> sqlite3.Connection:
        """The file's connection; else (reported) a fresh file after moving a corrupt one aside, or memory."""
        if self.path is None:
            return _connect(":memory:", on_disk=False)
        path = self.path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            return _connect(str(path), on_disk=True)
        except sqlite3.OperationalError as error:  # cannot open or write: a read-only folder, a full disk
            return self._without_file(f"cannot be opened or written ({error})")
        except sqlite3.DatabaseError as error:  # not a database, or a damaged one
            problem = f"is not a usable SQLite database ({error})"
        except OSError as error:  # the folder cannot be created
            return self._without_file(f"cannot be created ({error.strerror or error})")
        try:
            aside = self._move_aside()
            conn = _connect(str(path), on_disk=True)
        except (OSError, sqlite3.DatabaseError) as error:
            return self._without_file(f"{problem}, and no fresh one can be started there ({error})")
        done = (
            f"moved it to {aside.name} and started a fresh cache" if aside is not None
            else "another process has already started a fresh cache in its place"
        )
        self._report(f"cache {path} {problem}: {done} (results it held are computed again)")
        return conn

    def _move_aside(self) -> Path | None:
        """Rename the unusable file (and its WAL files) to ``<name>.corrupt-<time>``; the new name, or None
        when another process has already put a working cache in its place."""
        assert self.path is not None
        stamp = time.strftime("%Y%m%d-%H%M%S")
        aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        with contextlib.suppress(FileNotFoundError):
            with self.path.open("rb") as handle:
                if handle.read(len(_SQLITE_HEADER)) == _SQLITE_HEADER and _healthy(self.path):
                    return None
            self.path.replace(aside)
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                self.path.with_name(self.path.name + suffix).replace(aside.with_name(aside.name + suffix))
        return aside

    def _without_file(self, problem: str) -> sqlite3.Connection:
        """Report that ``self.path`` cannot be used, and keep results in memory for this process only."""
        assert self.path is not None
        folder_at_fault = not self.path.parent.is_dir() or not os.access(self.path.parent, os.W_OK)
        where = f"cache folder {self.path.parent}" if folder_at_fault else f"cache {self.path}"
        self._report(
            f"{where}: {problem}; going on without a cache (nothing is reused or kept for next time; "
            "pass --cache FILE in a folder you can write, or --no-cache to skip it)"
        )
        self._on_disk = False
        return _connect(":memory:", on_disk=False)

    def _guarded(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        """``work`` on the connection, under the lock; a file that fails mid-run is dropped for memory."""
        with self._lock:
            try:
                return work(self._conn)
            except sqlite3.DatabaseError as error:
                if not self._on_disk:
                    raise
                with contextlib.suppress(sqlite3.Error):
                    self._conn.close()
                self._conn = self._without_file(f"failed while in use ({error})")
                return work(self._conn)

    @property
    def persistent(self) -> bool:
        """Whether what is put here outlives this process (a file in use, not memory)."""
        return self._on_disk

    @classmethod
    def default(cls, *, on_problem: Callable[[str], None] | None = None) -> Cache:
        return cls(default_cache_dir() / "cache.sqlite", on_problem=on_problem)

    # -- JSON values -----------------------------------------------------------------------------------

    def get(self, namespace: str, key: str) -> Any | None:
        row = self._guarded(
            lambda conn: conn.execute(
                "SELECT value FROM entries WHERE namespace=? AND key=?", (namespace, key)
            ).fetchone()
        )
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
        wanted = list(dict.fromkeys(keys))

        def fetch(conn: sqlite3.Connection) -> dict[str, Any]:
            found: dict[str, Any] = {}
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = conn.execute(
                    f"SELECT key, {column} FROM entries WHERE namespace=? AND key IN ({marks})",
                    (namespace, *chunk),
                ).fetchall()
                found.update({k: v for k, v in rows if v is not None})
            return found

        return self._guarded(fetch)

    def _store(self, namespace: str, column: str, items: Mapping[str, Any]) -> None:
        """Write all items in one transaction: a crash leaves either all of them or none."""
        rows = [(namespace, k, v) for k, v in items.items()]

        def store(conn: sqlite3.Connection) -> None:
            conn.execute("BEGIN")
            try:
                conn.executemany(f"INSERT OR REPLACE INTO entries(namespace, key, {column}) VALUES (?, ?, ?)", rows)
                conn.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise

        self._guarded(store)

    def count(self, namespace: str | None = None) -> int:
        def counted(conn: sqlite3.Connection) -> Any:
            if namespace is None:
                return conn.execute("SELECT COUNT(*) FROM entries").fetchone()
            return conn.execute("SELECT COUNT(*) FROM entries WHERE namespace=?", (namespace,)).fetchone()

        return int(self._guarded(counted)[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _healthy(path: Path) -> bool:
    """Whether ``path`` opens as a database with halluscope's table (read only, nothing changed)."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5.0)
        try:
            conn.execute("SELECT 1 FROM entries LIMIT 1").fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return True
