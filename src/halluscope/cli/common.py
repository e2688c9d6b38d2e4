"""Helpers shared by CLI commands: option parsing, component creation, the console."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

import typer


def parse_options(pairs: list[str] | None, flag: str) -> dict[str, Any]:
    """``["k=v", ...]`` → dict, with numbers and booleans converted."""
    options: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"expected key=value, got {pair!r}", param_hint=flag)
        options[key.strip().replace("-", "_")] = coerce(value.strip())
    return options


def coerce(value: str) -> Any:
    lowered = value.lower()
    if lowered in {"true", "yes"}:
        return True
    if lowered in {"false", "no"}:
        return False
    if lowered in {"none", "null"}:
        return None
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def console(stderr: bool = False) -> Any:
    from rich.console import Console

    return Console(stderr=stderr, highlight=False)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a clear error and exit (no traceback for user errors); a key the message quotes is masked."""
    from rich.markup import escape

    from halluscope.redact import mask_text

    # Escaped: a message is plain text, and an install hint's ``halluscope[import]`` is not a style tag.
    console(stderr=True).print(f"[bold red]error:[/bold red] {escape(mask_text(message))}")
    raise typer.Exit(code)


def judge_names() -> str:
    """Every registered judge, by the kind of judge slot it fills, for ``--judge``'s help: made from the
    registries (names only; no judge is imported), so a new judge is listed without editing a help text."""
    from halluscope.judges import JUDGE_KINDS

    return "; ".join(f"{kind}: {' | '.join(registry.names())}" for kind, registry in JUDGE_KINDS.items())


def join_urls(urls: list[str] | None) -> str | None:
    """Repeated ``--base-url`` values as the one comma-separated string every LLM stage option takes."""
    return ",".join(urls) if urls else None


def open_cache(cache_path: Path | None, no_cache: bool) -> Any:
    """The command's cache; one that cannot be used is said in one line on stderr and the command goes on."""
    from halluscope.cache import Cache

    if no_cache:
        return Cache(None)
    if cache_path:
        return Cache(cache_path, on_problem=warn_line)
    return Cache.default(on_problem=warn_line)


def warn_line(message: str) -> None:
    """One yellow ``warning:`` line on stderr (markup in ``message`` is printed as is)."""
    from rich.markup import escape

    console(stderr=True).print(f"[yellow]warning:[/yellow] {escape(message)}")


@contextlib.contextmanager
def stops_on_signals() -> Iterator[None]:
    """Make SIGTERM stop a command as Ctrl-C does (a ``KeyboardInterrupt``), for the ``with`` block.

    By default SIGTERM (``kill``, a job scheduler's time limit) ends Python at once, with no message and no
    clean-up; while a run scores, :func:`halluscope.runs.interrupt.run_async` handles both signals itself.
    """

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, on_sigterm) if main else None
    try:
        yield
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)


def exit_interrupted() -> NoReturn:
    """Say the command was interrupted and how to resume, and exit 130 at once.

    At once: a thread still busy with the interrupted work (an embedding batch, say) would otherwise keep
    Python from exiting until it finished. What the run finished is already written.
    """
    from halluscope.runs.interrupt import INTERRUPTED_EXIT, INTERRUPTED_MESSAGE

    console(stderr=True).print(f"[bold yellow]{INTERRUPTED_MESSAGE}[/bold yellow]")
    sys.stdout.flush()
    sys.stderr.flush()
    busy = [t for t in threading.enumerate() if t is not threading.current_thread() and not t.daemon]
    if busy:
        os._exit(INTERRUPTED_EXIT)
    raise typer.Exit(INTERRUPTED_EXIT)
