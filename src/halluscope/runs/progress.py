"""Progress display. Core code reports progress through this one object and never prints."""

from __future__ import annotations

from types import TracebackType
from typing import Protocol


class ProgressSink(Protocol):
    def start(self, description: str, total: int, done: int = 0) -> None: ...
    def advance(self, n: int = 1) -> None: ...
    def close(self) -> None: ...


class NullProgress:
    """Shows nothing (tests, library use)."""

    def start(self, description: str, total: int, done: int = 0) -> None:
        return None

    def advance(self, n: int = 1) -> None:
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

    def advance(self, n: int = 1) -> None:
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


def make_progress(show: bool) -> ProgressSink:
    return RichProgress() if show else NullProgress()
