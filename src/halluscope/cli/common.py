"""Helpers shared by CLI commands: option parsing, component creation, the console."""

from __future__ import annotations

import sys
from pathlib import Path
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
    from halluscope.redact import mask_text

    console(stderr=True).print(f"[bold red]error:[/bold red] {mask_text(message)}")
    raise typer.Exit(code)


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


def interactive() -> bool:
    return sys.stderr.isatty()
