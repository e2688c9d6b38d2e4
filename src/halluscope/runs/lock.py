"""One writer per run folder, and write failures of the run folder told in one line.

Why a lock: two processes given the same ``--out`` both append to ``responses.jsonl`` and
``samples.jsonl``, and each rewrites the log the other is appending to on resume. The result was every
answer twice, a ``FileNotFoundError``, or a run that read an empty log and reported nothing. A run
therefore holds an exclusive ``flock`` on ``OUT/.halluscope.lock`` from the first thing it writes to its
end; a second process is refused at once, naming the holder (pid, host, command) written in that file.
The operating system releases a ``flock`` when its holder dies, however it dies, so a killed run never
leaves a lock behind; the file itself stays (removing it would race with a process about to lock it).

The lock is re-entrant within one thread (``halluscope run --model`` collects answers, then scores, both
under the lock); two threads of one process are refused like two processes, because two ``flock`` calls
on two opens of one file conflict even in one process.

Why the write-failure wrapper: a full disk or a read-only folder raises ``OSError`` from deep inside a
write, with no file name; :func:`run_dir_writes` turns it into an error naming the folder and what to do.

This module is the mechanism; what writes a run folder takes both through
:func:`halluscope.runs.store.holding_run_dir`, beside the folder's identity check and ``--overwrite``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import json
import os
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from halluscope.spelling import Message, PhrasedError, phrase

LOCK_FILE = ".halluscope.lock"


class RunDirBusyError(PhrasedError, RuntimeError):
    """Another process is writing to the run folder."""


class RunDirWriteError(PhrasedError, RuntimeError):
    """The run folder cannot be written (full disk, read-only file system, no permission)."""

    def __init__(self, message: Message | str, errno_value: int) -> None:
        super().__init__(message)
        self.errno = errno_value


_held: dict[tuple[Path, int], tuple[int, int]] = {}  # (folder, thread) -> (fd, depth): locks held here
_held_guard = threading.Lock()


def _holder_note() -> str:
    command = " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv)) or "python"
    return json.dumps(
        {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": command,
            "since": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        }
    )


def describe_holder(out_dir: Path) -> str:
    """Who holds the lock, as its file says (pid, host, command, since), or that it does not say."""
    try:
        note = json.loads((Path(out_dir) / LOCK_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "another process"
    if not isinstance(note, dict):
        return "another process"
    where = f" on {note['host']}" if note.get("host") else ""
    since = f", since {note['since']}" if note.get("since") else ""
    command = f" (`{note['command']}`{since})" if note.get("command") else ""
    return f"process {note.get('pid', '?')}{where}{command}"


@contextlib.contextmanager
def run_dir_lock(out_dir: Path) -> Iterator[None]:
    """Hold the run folder's lock for the ``with`` block; refuse at once if another process holds it.

    Creates the folder (and the lock file) when missing. Raises :class:`RunDirBusyError` naming the
    holder, or :class:`RunDirWriteError` when the folder cannot be written.
    """
    folder = Path(out_dir).resolve()
    key = (folder, threading.get_ident())
    with _held_guard:
        if key in _held:
            fd, depth = _held[key]
            _held[key] = (fd, depth + 1)
            reentered = True
        else:
            reentered = False
    if reentered:
        try:
            yield
        finally:
            _release(key)
        return
    created = not folder.exists()
    with run_dir_writes(out_dir):
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise RunDirBusyError(
            phrase(
                "{out_dir} is in use by {holder}; wait for it to finish or stop it, or choose another {flag:out} "
                "(one process writes a run folder at a time)",
                out_dir=out_dir,
                holder=describe_holder(folder),
            )
        ) from None
    try:
        with run_dir_writes(out_dir):
            os.ftruncate(fd, 0)
            os.pwrite(fd, (_holder_note() + "\n").encode(), 0)
    except BaseException:
        os.close(fd)  # closing releases the lock
        raise
    with _held_guard:
        _held[key] = (fd, 1)
    try:
        yield
    finally:
        if created:
            _remove_if_unused(folder)
        _release(key)


def _remove_if_unused(folder: Path) -> None:
    """Remove a folder this run created and left holding only its lock file (the run was refused at set-up).

    A refused run must leave nothing behind: no empty folder that a later ``--out`` would take for a run.
    Done while the lock is still held, so no other process is between its checks and its first write.
    """
    with contextlib.suppress(OSError):
        if [entry.name for entry in folder.iterdir()] == [LOCK_FILE]:
            (folder / LOCK_FILE).unlink()
            folder.rmdir()


def _release(key: tuple[Path, int]) -> None:
    with _held_guard:
        fd, depth = _held[key]
        if depth > 1:
            _held[key] = (fd, depth - 1)
            return
        del _held[key]
    os.close(fd)  # releases the flock; the file stays for the next run


#: ``errno`` values that mean the folder cannot take what the run writes, with what to do about each.
_WRITE_PROBLEMS = {
    errno.ENOSPC: "the disk is full; free some space",
    errno.EDQUOT: "the disk quota is used up; free some space",
    errno.EROFS: "it is on a read-only file system; choose an {flag:out} on a writable disk",
    errno.EACCES: "permission denied; choose an {flag:out} you may write to",
    errno.EPERM: "permission denied; choose an {flag:out} you may write to",
}


@contextlib.contextmanager
def run_dir_writes(out_dir: Path) -> Iterator[None]:
    """Turn an ``OSError`` that means "this folder cannot be written" into one naming the folder.

    Only errors about the folder itself are turned: one naming no file (a write to an open handle) or a
    file inside ``out_dir``; a data file elsewhere that cannot be read keeps its own error.
    """
    try:
        yield
    except OSError as error:
        what = _WRITE_PROBLEMS.get(error.errno or 0)
        if what is None or not _inside(error.filename, out_dir):
            raise
        raise RunDirWriteError(
            phrase(
                "cannot write to {out_dir}: " + what + " ({reason}); then re-run the same command to resume: "
                "what was written before is kept",
                out_dir=out_dir, reason=os.strerror(error.errno or 0),
            ),
            error.errno or 0,
        ) from error


def _inside(filename: object, out_dir: Path) -> bool:
    """Whether an error's file is the run folder, inside it, or a folder above it being created."""
    if filename is None:
        return True
    path, folder = Path(os.fsdecode(filename)).resolve(), Path(out_dir).resolve()  # type: ignore[arg-type]
    return path == folder or folder in path.parents or path in folder.parents

