"""Progress display. Core code reports progress through this one object and never prints.

Two displays: a rich bar on a terminal, and plain lines when stderr is a file or a pipe (a long run under
``nohup``, in CI or with ``2> log``), where a bar prints nothing useful for minutes: a line every N items or M
seconds, ``scoring tri-he: 120/300 samples, 1 failed (42 s)``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import Protocol, TextIO

#: Environment variables that set how often :class:`LineProgress` writes a line (defaults below).
SECONDS_ENV, ITEMS_ENV = "HALLUSCOPE_PROGRESS_SECONDS", "HALLUSCOPE_PROGRESS_ITEMS"
DEFAULT_SECONDS = 30.0


class ProgressSink(Protocol):
    def start(self, description: str, total: int, done: int = 0) -> None: ...
    def advance(self, n: int = 1, failed: int = 0) -> None: ...
    def close(self) -> None: ...


class NullProgress:
    """Shows nothing (tests, library use)."""

    def start(self, description: str, total: int, done: int = 0) -> None:
        return None

    def advance(self, n: int = 1, failed: int = 0) -> None:
        return None

    def close(self) -> None:
        return None


class RichProgress:
    """A rich progress bar on stderr with rate and time remaining."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self._task: int | None = None
        self._progress.start()

    def start(self, description: str, total: int, done: int = 0) -> None:
        if self._task is not None:
            self._progress.remove_task(self._task)  # type: ignore[arg-type]
        self._task = self._progress.add_task(description, total=total, completed=done)

    def advance(self, n: int = 1, failed: int = 0) -> None:
        if self._task is not None:
            self._progress.advance(self._task, n)  # type: ignore[arg-type]

    def close(self) -> None:
        self._progress.stop()

    def __enter__(self) -> RichProgress:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class LineProgress:
    """A line on ``stream`` (stderr) every ``every_items`` items or ``every_seconds`` seconds, whichever comes
    first, and a last line when the work ends if any was written: what a log file of a long run shows."""

    def __init__(
        self,
        every_seconds: float = DEFAULT_SECONDS,
        every_items: int | None = None,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.every_seconds, self.every_items = every_seconds, every_items
        self._stream, self._clock = stream, clock
        self._description, self._total, self._done, self._failed = "", 0, 0, 0
        self._started = self._last_time = clock()
        self._last_done, self._wrote = 0, False

    @classmethod
    def from_env(cls) -> LineProgress:
        """With the intervals of ``HALLUSCOPE_PROGRESS_SECONDS`` / ``HALLUSCOPE_PROGRESS_ITEMS`` when set."""
        seconds = float(os.environ.get(SECONDS_ENV) or DEFAULT_SECONDS)
        items = os.environ.get(ITEMS_ENV)
        return cls(every_seconds=seconds, every_items=int(items) if items else None)

    def start(self, description: str, total: int, done: int = 0) -> None:
        self._finish()
        self._description, self._total, self._done, self._failed = description, total, done, 0
        self._started = self._last_time = self._clock()
        self._last_done, self._wrote = done, False

    def advance(self, n: int = 1, failed: int = 0) -> None:
        self._done += n
        self._failed += failed
        now = self._clock()
        by_items = self.every_items is not None and self._done - self._last_done >= self.every_items
        if by_items or now - self._last_time >= self.every_seconds:
            self._write(now)

    def close(self) -> None:
        self._finish()

    def _finish(self) -> None:
        if self._wrote and self._done != self._last_done:
            self._write(self._clock())
        self._wrote = False

    def _write(self, now: float) -> None:
        failed = f", {self._failed} failed" if self._failed else ""
        stream = self._stream or sys.stderr
        stream.write(
            f"{self._description}: {self._done}/{self._total}{failed} ({now - self._started:.0f} s)\n"
        )
        stream.flush()
        self._last_time, self._last_done, self._wrote = now, self._done, True


def make_progress(show: bool) -> ProgressSink:
    """A bar when stderr is a terminal, lines when it is a file or a pipe, nothing when not ``show``."""
    if not show:
        return NullProgress()
    return RichProgress() if sys.stderr.isatty() else LineProgress.from_env()
