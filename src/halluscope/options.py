"""One check for options a component does not take, so that every typo is the same clear error.

Components take their options as keyword arguments (``--judge-opt key=value`` on the command line); an
option nobody reads would otherwise be accepted, recorded in spec.json, and silently change nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["check_options", "split_csv"]


def check_options(component: str, unknown: Mapping[str, Any] | Iterable[str], known: Iterable[str]) -> None:
    """Raise ``ValueError`` naming ``component``, the unknown option(s) and the ones it takes."""
    names = sorted(unknown)
    if names:
        takes = ", ".join(sorted(known)) or "(none)"
        # The number of samples is chosen by the run for every benchmark alike (--limit), not by a benchmark.
        hint = "; the number of samples is the run's --limit N" if "limit" in names else ""
        raise ValueError(f"{component}: unknown option(s) {', '.join(names)}; it takes: {takes}{hint}")


def split_csv(value: Any) -> list[str]:
    """A list option as given: a comma list on the command line (``types=count,OCR``), or a list in Python."""
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v) for v in value]
