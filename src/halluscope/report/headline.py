"""The headline view of a run: the table a user of its benchmark's own tool expects, made from the benchmark's
one declaration (:class:`halluscope.stages.HeadlineView`) and the run's ``metrics.json``.

Why one module for every surface: the terminal after ``run``, ``report`` (terminal, CSV, markdown) and the HTML
report must show the same rows and columns under the same names, or a user comparing with eval_pope's printout
would find the figure in one place and not in another. Each surface formats the rows this module gives.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from halluscope.stages import HeadlineView

__all__ = ["Figures", "HeadlineRows", "headline_rows", "headline_table", "view_for"]

#: The row of the run as a whole in a table of groups.
OVERALL = "overall"


@dataclass(frozen=True)
class Figures:
    """What a run's ``metrics.json`` holds that a view reads: figures and intervals, overall and per group."""

    metrics: Mapping[str, float | None]
    groups: Mapping[str, Mapping[str, float | None]] = field(default_factory=dict)
    intervals: Mapping[str, Mapping[str, Any] | None] = field(default_factory=dict)
    group_intervals: Mapping[str, Mapping[str, Mapping[str, Any] | None]] = field(default_factory=dict)

    @classmethod
    def of(cls, found: Any) -> Figures:
        """From a ``MetricsReport``, a ``RunSummary`` or ``metrics.json`` as a dict."""
        if isinstance(found, Mapping):
            return cls(
                metrics=found.get("metrics") or {}, groups=found.get("groups") or {},
                intervals=found.get("intervals") or {}, group_intervals=found.get("group_intervals") or {},
            )  # fmt: skip
        # A report's RunSummary keeps its intervals as (low, high) pairs; metrics.json as records.
        intervals = {
            k: ({"low": i[0], "high": i[1]} if isinstance(i, tuple) else i) for k, i in found.intervals.items()
        }
        return cls(
            metrics=found.metrics, groups=found.groups, intervals=intervals,
            group_intervals=found.group_intervals or {},
        )  # fmt: skip


@dataclass(frozen=True)
class HeadlineRows:
    """A view filled in: its columns (key, name) that the run has, and per row its label and cells."""

    view: HeadlineView
    columns: list[tuple[str, str]]
    #: (row label, [(value, interval or None) per column]).
    rows: list[tuple[str, list[tuple[float | None, Mapping[str, Any] | None]]]]


def view_for(benchmark: str) -> HeadlineView | None:
    """The view a benchmark declares, by its registry name; None for one that declares none or is unknown here
    (a run written by a plugin not installed still reports, through its plain metrics)."""
    from halluscope.benchmarks import benchmark_class

    try:
        return benchmark_class(benchmark).headline_view
    except Exception:  # an unknown name, or a plugin that fails to import: the plain table stands
        return None


def _interval(found: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    return found if found and found.get("low") is not None and found.get("high") is not None else None


def headline_rows(view: HeadlineView, figures: Figures) -> HeadlineRows | None:
    """The view's rows over ``figures``; None when the run has none of its figures (another mode's report)."""
    rows: list[tuple[str, Mapping[str, float | None], Mapping[str, Any]]] = []
    if view.rows == "groups" and figures.groups:
        rows += [(g, v, figures.group_intervals.get(g) or {}) for g, v in figures.groups.items()]
    if view.rows == "overall" or view.overall or not figures.groups:
        rows.append((OVERALL, figures.metrics, figures.intervals))
    columns = [(k, name) for k, name in view.columns if any(values.get(k) is not None for _, values, _ in rows)]
    if not columns:
        return None
    return HeadlineRows(
        view=view,
        columns=columns,
        rows=[
            (label, [(values.get(k), _interval(intervals.get(k))) for k, _ in columns])
            for label, values, intervals in rows
        ],
    )


def cell_text(value: float | None, interval: Mapping[str, Any] | None) -> str:
    """``85.13 [84.0, 86.2]``: the figure as its tool prints it (two decimals) and its interval, rougher."""
    if value is None:
        return "—"
    text = f"{value:.0f}" if float(value).is_integer() and abs(value) >= 1000 else f"{value:.2f}"
    if not interval:
        return text
    return f"{text} [{float(interval['low']):.1f}, {float(interval['high']):.1f}]"


def headline_table(filled: HeadlineRows, title: str | None = None) -> Any:
    """The view as a rich table: a row per group (or the run), the peer tool's names as column heads."""
    from rich.table import Table

    table = Table(title=title or filled.view.title)
    table.add_column("set" if filled.view.rows == "groups" else "", no_wrap=True)
    for _, name in filled.columns:
        table.add_column(name, justify="right", no_wrap=True)
    for label, cells in filled.rows:
        table.add_row(label, *(cell_text(v, i) for v, i in cells))
    return table


def headline_markdown(filled: HeadlineRows, title: str) -> str:
    """The view as a markdown table under a ``title`` line."""
    head = ["set" if filled.view.rows == "groups" else "", *(name for _, name in filled.columns)]
    lines = [f"**{title}**", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, cells in filled.rows:
        texts = [label, *(cell_text(v, i) for v, i in cells)]
        lines.append("| " + " | ".join(text.replace("|", "\\|") for text in texts) + " |")
    return "\n".join(lines) + "\n"


def headline_csv_columns(filled: HeadlineRows) -> dict[str, float | str]:
    """The view's cells as CSV columns of one run's row: ``<row>:<metric>`` per group row (the run's own row
    is the plain metric columns already), so a spreadsheet holds eval_pope's per-set figures too."""
    out: dict[str, float | str] = {}
    for label, cells in filled.rows:
        if label == OVERALL:
            continue
        for (key, _), (value, _) in zip(filled.columns, cells, strict=True):
            out[f"{label}:{key}"] = "" if value is None else value
    return out
