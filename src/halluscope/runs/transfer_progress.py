"""Progress of file transfers (``halluscope data pull``, ``eval --download``), in bytes.

Why apart from :mod:`halluscope.runs.progress`: a transfer counts bytes of one file at a time, with a speed,
where a run counts samples. Same two displays: a rich bar (bytes, speed, time left) when stderr is a
terminal, and plain lines when it is a file or a pipe, where a bar prints nothing useful: one line when a
file starts, one every few seconds, one when it ends. Both satisfy :class:`halluscope.download.TransferProgress`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

__all__ = ["LineTransfer", "RichTransfer", "make_transfer_progress", "size_text"]


def size_text(n: float) -> str:
    """``368.2 kB``: bytes in decimal units, as rich's download column shows them."""
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


class RichTransfer:
    """A rich bar per file on stderr: name, bar, bytes done of total, speed, time left."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
        )
        self._task: Any = None
        self._progress.start()

    def begin(self, label: str, total: int | None, done: int) -> None:
        self._task = self._progress.add_task(label, total=total, completed=done)

    def advance(self, n: int) -> None:
        if self._task is not None:
            self._progress.advance(self._task, n)

    def end(self, ok: bool) -> None:
        self._task = None

    def close(self) -> None:
        self._progress.stop()


class LineTransfer:
    """Plain lines on ``stream`` (stderr): ``fetching F (0 B of 368.2 kB)``, one every ``every_seconds``, and
    ``received F: 368.2 kB in 0.3 s (1.2 MB/s)`` at the end (checked next)."""

    def __init__(
        self,
        every_seconds: float = 5.0,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.every_seconds, self._stream, self._clock = every_seconds, stream, clock
        self._label, self._done, self._start_done = "", 0, 0
        self._total: int | None = None
        self._started = self._last = clock()

    def begin(self, label: str, total: int | None, done: int) -> None:
        self._label, self._total, self._done, self._start_done = label, total, done, done
        self._started = self._last = self._clock()
        resumed = f", resuming at {size_text(done)}" if done else ""
        self._write(f"fetching {label} ({self._of()}{resumed})")

    def advance(self, n: int) -> None:
        self._done += n
        now = self._clock()
        if now - self._last >= self.every_seconds:
            self._last = now
            self._write(f"fetching {self._label}: {self._of()} ({self._speed(now)})")

    def end(self, ok: bool) -> None:
        now = self._clock()
        took = f"{size_text(self._done)} in {now - self._started:.1f} s ({self._speed(now)})"
        self._write(
            f"received {self._label}: {took}" if ok else f"stopped {self._label} at {size_text(self._done)}"
        )

    def close(self) -> None:
        return None

    def _of(self) -> str:
        total = f" of {size_text(self._total)}" if self._total is not None else ""
        return f"{size_text(self._done)}{total}"

    def _speed(self, now: float) -> str:
        seconds = max(now - self._started, 1e-6)
        return f"{size_text((self._done - self._start_done) / seconds)}/s"

    def _write(self, line: str) -> None:
        stream = self._stream or sys.stderr
        stream.write(line + "\n")
        stream.flush()


class _NoTransfer:
    def begin(self, label: str, total: int | None, done: int) -> None:
        return None

    def advance(self, n: int) -> None:
        return None

    def end(self, ok: bool) -> None:
        return None

    def close(self) -> None:
        return None


def make_transfer_progress(show: bool) -> RichTransfer | LineTransfer | _NoTransfer:
    """A bar when stderr is a terminal, lines when it is a file or a pipe, nothing when not ``show``."""
    if not show:
        return _NoTransfer()
    return RichTransfer() if sys.stderr.isatty() else LineTransfer()
