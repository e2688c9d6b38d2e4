"""Per-group tables in the terminal: the figures a benchmark's users compare (POPE per set, as eval_pope and
VLMEvalKit print them; HallusionBench per split; AMBER per dimension), each with its interval.

Why its own table: the pooled figure of a POPE run is one that LLaVA's script never prints; users compare
the adversarial / popular / random rows, so those rows must be on screen, not only in ``metrics.json``.
Columns are the run's declared headlines in their declared order, then any other group figure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["folded_readings", "group_table"]

#: Prefixes of the same figure under a reading that is not the run's mode (``paper_f1`` beside ``f1``).
READING_PREFIXES = ("paper_", "robust_")


def folded_readings(keys: list[str]) -> list[str]:
    """The keys that repeat a plain figure under another reading (``paper_f1`` where ``f1`` is there too):
    shown on request only, since the plain figure already is the run's reading."""
    present = set(keys)
    return [k for k in keys if k.startswith(READING_PREFIXES) and k.split("_", 1)[1] in present]


def _cell(value: float | None, interval: Mapping[str, Any] | None) -> str:
    if value is None:
        return "—"
    if not interval:
        return f"{value:.0f}" if float(value).is_integer() else f"{value:.2f}"
    return f"{value:.2f} [{float(interval['low']):.1f}, {float(interval['high']):.1f}]"


def group_table(
    title: str,
    groups: Mapping[str, Mapping[str, float | None]],
    group_intervals: Mapping[str, Mapping[str, Mapping[str, Any] | None]],
    headlines: list[str],
) -> Any | None:
    """A rich table with one row per group; None when the run has no groups."""
    if not groups:
        return None
    from rich.table import Table

    every = list(dict.fromkeys(k for figures in groups.values() for k in figures))
    folded = set(folded_readings(every))
    columns = [k for k in headlines if k in every] + [k for k in every if k not in headlines and k not in folded]
    table = Table(title=title)
    table.add_column("group", no_wrap=True)
    for name in columns:
        table.add_column(name, justify="right", no_wrap=True)
    for group, figures in groups.items():
        intervals = group_intervals.get(group) or {}
        table.add_row(group, *(_cell(figures.get(name), intervals.get(name)) for name in columns))
    return table
