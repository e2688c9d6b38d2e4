"""Comparison tables of finished runs: rows are runs, columns are metrics, in terminal, CSV or markdown."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from halluscope.redact import mask_text
from halluscope.report.order import order_metrics
from halluscope.runs.store import read_metrics, read_spec


@dataclass
class RunSummary:
    """What one run directory contributes to a comparison."""

    run: str
    benchmark: str
    model: str
    judge: str
    metrics: dict[str, float | None]
    counts: dict[str, int] = field(default_factory=dict)
    #: The declared headlines' intervals (metric -> (low, high)), at :attr:`level`.
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)
    level: float | None = None
    #: Per-group figures and intervals (POPE's sets), as ``metrics.json`` holds them.
    groups: dict[str, dict[str, float | None]] = field(default_factory=dict)
    group_intervals: dict[str, dict[str, dict[str, Any] | None]] = field(default_factory=dict)


def component_name(value: Any) -> str:
    if isinstance(value, dict):
        name = (
            value.get("judge") or value.get("extractor") or value.get("name") or value.get("provider") or "?"
        )
        detail = value.get("model") or value.get("spec")
        return f"{name} ({detail})" if detail else str(name)
    return "" if value is None else str(value)


def _stored_intervals(stored: dict[str, dict[str, Any] | None]) -> tuple[dict[str, tuple[float, float]], float | None]:
    intervals = {name: (float(i["low"]), float(i["high"])) for name, i in stored.items() if i is not None}
    levels = {float(i["level"]) for i in stored.values() if i is not None}
    return intervals, (levels.pop() if len(levels) == 1 else None)


def summarise_run(run_dir: Path, *, level: float | None = None) -> RunSummary:
    """One run's row; with ``level``, its intervals at that level (recomputed from its saved tables when
    ``metrics.json`` holds another level)."""
    spec = read_spec(run_dir)
    report = read_metrics(run_dir)
    # Answers from a file are named by the file, not by where it happens to lie on this machine.
    model = spec.get("model") or (Path(str(spec["responses"])).name if spec.get("responses") else "")
    intervals, stored_level = _stored_intervals(report.intervals)
    if level is not None and report.intervals and not (stored_level and math.isclose(stored_level, level)):
        from halluscope.report.compare import run_intervals

        _, recomputed = run_intervals(Path(run_dir), level=level)
        intervals = {name: (i.low, i.high) for name, i in recomputed.items() if i is not None}
        stored_level = level
    return RunSummary(
        run=Path(run_dir).name,
        benchmark=report.benchmark,
        model=mask_text(component_name(model) if isinstance(model, dict) else str(model)),
        judge=mask_text(judge_label(spec.get("judge"), report.judge_error)),
        metrics=dict(report.metrics),
        counts=dict(report.counts),
        intervals=intervals,
        level=stored_level,
        groups={g: dict(m) for g, m in report.groups.items()},
        group_intervals={g: dict(m) for g, m in report.group_intervals.items()},
    )


def judge_label(judge: Any, judge_error: dict[str, Any]) -> str:
    """The judge in the slot; for a run whose answers a rule reads (POPE, AMBER, Reefknot), that rule."""
    name = component_name(judge)
    reader = (judge_error.get("reader") or {}).get("name")
    if name or not reader:
        return name
    return f"none (yes/no read by the {reader} rule)"


def metric_columns(summaries: Sequence[RunSummary], *, show_all: bool = True) -> list[str]:
    """Every metric present in any run, in the one fixed order (:func:`halluscope.report.order.order_metrics`);
    without ``show_all``, the copies of a figure under a reading that is not the run's (``paper_f1`` beside
    ``f1``) are left out (:func:`halluscope.report.groups_view.folded_readings`)."""
    from halluscope.report.groups_view import folded_readings
    from halluscope.report.headline import view_for

    views = [view_for(summary.benchmark) for summary in summaries]
    declared = [key for view in views if view is not None for key in view.keys]
    headlines = [*declared, *(key for summary in summaries for key in summary.intervals)]
    ordered = order_metrics((key for summary in summaries for key in summary.metrics), headlines)
    if show_all:
        return ordered
    folded = set(folded_readings(ordered))
    return [k for k in ordered if k not in folded]


def folded_columns(summaries: Sequence[RunSummary]) -> list[str]:
    """The metrics :func:`metric_columns` leaves out unless asked for all."""
    every = metric_columns(summaries)
    shown = set(metric_columns(summaries, show_all=False))
    return [k for k in every if k not in shown]


def format_value(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def format_with_interval(value: float | None, interval: tuple[float, float] | None) -> str:
    """``85.90 [85.02, 86.77]``: the figure and its interval (bounds to one decimal fewer: they are rougher)."""
    if value is None or interval is None:
        return format_value(value)
    return f"{value:.2f} [{interval[0]:.1f}, {interval[1]:.1f}]"


def _cell(summary: RunSummary, metric: str) -> str:
    return format_with_interval(summary.metrics.get(metric), summary.intervals.get(metric))


def table_rows(summaries: Sequence[RunSummary], *, show_all: bool = True) -> tuple[list[str], list[list[str]]]:
    columns = metric_columns(summaries, show_all=show_all)
    header = ["run", "benchmark", "model", "judge", *columns]
    rows = [[s.run, s.benchmark, s.model, s.judge, *(_cell(s, c) for c in columns)] for s in summaries]
    return header, rows


#: First characters that make a spreadsheet read a cell as a formula (or, for tab and CR, that some
#: spreadsheets strip before doing so): ``=cmd|' -C calc'!A0`` as a run folder's name would run a command.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: str | float | int) -> str | float | int:
    """A CSV cell that a spreadsheet reads as the text it is: text that would start a formula gets a
    leading ``'`` (OWASP's rule for CSV injection). Numbers stay numbers, negative ones included: only
    text (names of runs, models, judges, metrics) comes from outside."""
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value


def to_csv(summaries: Sequence[RunSummary]) -> str:
    """One row per run; a metric with an interval in any run gets ``<metric>_low`` / ``<metric>_high`` columns
    beside it (numbers, so a spreadsheet can plot error bars)."""
    columns: list[str] = []
    for name in metric_columns(summaries):
        columns.append(name)
        if any(name in s.intervals for s in summaries):
            columns += [f"{name}_low", f"{name}_high"]

    def value(summary: RunSummary, column: str) -> float | str:
        if column in summary.metrics:
            found = summary.metrics[column]
            return "" if found is None else found
        for suffix, index in (("_low", 0), ("_high", 1)):
            bounds = summary.intervals.get(column.removesuffix(suffix)) if column.endswith(suffix) else None
            if bounds is not None:
                return bounds[index]
        return ""

    per_group = [headline_cells(s) for s in summaries]
    group_columns = list(dict.fromkeys(key for cells in per_group for key in cells))
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([csv_cell(name) for name in ["run", "benchmark", "model", "judge", *columns, *group_columns]])
    for s, cells in zip(summaries, per_group, strict=True):
        names = [csv_cell(s.run), csv_cell(s.benchmark), csv_cell(s.model), csv_cell(s.judge)]
        writer.writerow([*names, *(value(s, c) for c in columns), *(cells.get(c, "") for c in group_columns)])
    return buffer.getvalue()


def headline_view_of(summary: RunSummary) -> Any | None:
    """The run's headline view filled in (:mod:`halluscope.report.headline`), or None."""
    from halluscope.report.headline import Figures, headline_rows, view_for

    view = view_for(summary.benchmark)
    return headline_rows(view, Figures.of(summary)) if view is not None else None


def headline_cells(summary: RunSummary) -> dict[str, float | str]:
    """The per-group cells of the run's headline view as CSV columns (``coco/adversarial:f1``)."""
    from halluscope.report.headline import headline_csv_columns

    filled = headline_view_of(summary)
    return headline_csv_columns(filled) if filled is not None else {}


def to_markdown(summaries: Sequence[RunSummary], *, show_all: bool = False) -> str:
    header, rows = table_rows(summaries, show_all=show_all)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    text = "\n".join(lines) + "\n"
    from halluscope.report.headline import headline_markdown

    for summary in summaries:  # each run's headline view under the runs: eval_pope's per-set table
        filled = headline_view_of(summary)
        if filled is not None:
            text += "\n" + headline_markdown(filled, f"{summary.run}: {filled.view.title}")
    return text


#: Narrowest a run's column may get in the transposed table before runs are split over several tables.
_MIN_RUN_COLUMN = 18


def rich_table(
    summaries: Sequence[RunSummary], title: str | None = None, width: int | None = None, *, show_all: bool = False
) -> Any:
    """Runs as rows and metrics as columns when that fits ``width``; else transposed (metrics as rows).

    A comparison of a handful of runs has far more metrics than runs, so a terminal of normal width
    (80 columns) cannot hold a column per metric: every cell would shrink to "…". Transposed, each run
    gets a column and long names wrap inside it; with more runs than fit, they are split over several
    tables that each repeat the metric names.
    """
    from rich.console import Console, Group

    wide = _wide_table(summaries, title, show_all)
    if width is None or Console(width=100_000).measure(wide).maximum <= width:
        return wide
    columns = metric_columns(summaries, show_all=show_all)
    label_width = max(len(name) for name in ["run", "benchmark", "model", "judge", *columns])
    per_table = max(1, (width - label_width - 4) // (_MIN_RUN_COLUMN + 3))
    tables = []
    for start in range(0, len(summaries), per_table):
        part = summaries[start : start + per_table]
        heading = title if start == 0 else None
        if len(summaries) > per_table:
            which = f"{start + 1}" if len(part) == 1 else f"{start + 1}–{start + len(part)}"
            which = f"run{'s' if len(part) > 1 else ''} {which} of {len(summaries)}"
            heading = f"{heading} ({which})" if heading else which
        tables.append(_transposed_table(part, summaries, heading, show_all))
    return Group(*tables)


def _wide_table(summaries: Sequence[RunSummary], title: str | None, show_all: bool) -> Any:
    from rich.table import Table

    header, rows = table_rows(summaries, show_all=show_all)
    table = Table(title=title)
    for index, name in enumerate(header):
        table.add_column(name, justify="right" if index >= 4 else "left")
    for row in rows:
        table.add_row(*row)
    return table


def _transposed_table(
    part: Sequence[RunSummary], every: Sequence[RunSummary], title: str | None, show_all: bool
) -> Any:
    from rich.table import Table

    table = Table(title=title, show_lines=False)
    table.add_column("", style="bold", no_wrap=True)
    for summary in part:
        table.add_column(summary.run, justify="right", overflow="fold", min_width=8)
    for field_name in ("benchmark", "model", "judge"):
        table.add_row(field_name, *(getattr(s, field_name) for s in part), style="dim")
    for key in metric_columns(every, show_all=show_all):
        table.add_row(key, *(_cell(s, key) for s in part))
    return table


def judge_error_lines(section: dict[str, Any]) -> list[str]:
    """What a run says of its judge's own error, in a line or two under its table."""
    if not section:
        return []
    lines = _reader_lines(section.get("reader"))
    if "judge" not in section:
        return lines
    return lines + _judge_lines(section)


def _reader_lines(reader: dict[str, Any] | None) -> list[str]:
    """How the rule that read the yes/no answers was measured, in one line."""
    if not reader:
        return []
    name, m = reader.get("name", "?"), reader.get("measured")
    if not m:
        return [f"yes/no reader {name}: {reader.get('note', 'not measured on labelled answers')}"]
    return [
        f"yes/no reader {name}, measured on {reader.get('on', 'labelled answers')}: read {m['answered']} of the "
        f"{m['decided']} a person reads as yes or no, {m['agreed']} of them alike; left {m['unclear_unanswered']} "
        f"of {m['unclear']} unclear answers unanswered"
    ]


def _judge_lines(section: dict[str, Any]) -> list[str]:
    judge = section.get("judge", "the judge")
    measured = section.get("measured")
    if not measured:
        return [f"judge {judge}: {section.get('note', 'judge error not measured')}"]
    first = next(iter(measured.values()))
    lines = [f"judge {judge}, measured on {first['on']}:"]
    for reading, m in measured.items():
        lines.append(
            f"  reading '{reading}': sensitivity {m['sensitivity']:.2f} ({m['flagged']} of {m['hallucinated']} "
            f"hallucinated {m['unit']}s flagged), specificity {m['specificity']:.2f} ({m['passed']} of "
            f"{m['faithful']} faithful passed)"
        )
    for name, corrected in (section.get("corrected") or {}).items():
        if corrected is None:
            lines.append(f"  {name}: no corrected estimate (the judge is no better than chance on its measurement)")
            continue
        lines.append(
            f"  {name} corrected for the judge's error: {corrected['estimate']:.2f} "
            f"[{corrected['low']:.2f}, {corrected['high']:.2f}] ({100 * corrected['level']:g} %, sampling and judge)"
        )
    return lines


def _interval_cell(found: dict[str, Any] | None) -> str:
    """``[85.02, 86.77] over 500 images``: the bounds and the units they were resampled over."""
    if not found:
        return ""
    units = f"{found['units']} {found['unit']}{'' if found['units'] == 1 else 's'}"
    return f"[{found['low']:.2f}, {found['high']:.2f}] over {units}"


def metrics_table(
    metrics: dict[str, float | None],
    counts: dict[str, int],
    title: str,
    intervals: dict[str, dict[str, Any] | None] | None = None,
) -> Any:
    """One run's metrics and counts; the declared headlines first, each with its interval and what it was
    resampled over, so the figure a user reads says how sure it is."""
    from rich.table import Table

    intervals = intervals or {}
    levels = {float(i["level"]) for i in intervals.values() if i}
    table = Table(title=title)
    table.add_column("measure")
    table.add_column("value", justify="right")
    if intervals:
        level = f"{100 * levels.pop():g} % interval" if len(levels) == 1 else "interval"
        table.add_column(level, justify="right")
    ordered = [k for k in intervals if k in metrics] + [k for k in metrics if k not in intervals]
    for key in ordered:
        row = [key, format_value(metrics[key])]
        if intervals:
            row.append(_interval_cell(intervals.get(key)))
        table.add_row(*row)
    for key, count in counts.items():
        table.add_row(f"[dim]{key}[/dim]", f"[dim]{count}[/dim]", *([""] if intervals else []))
    return table


def write_text(path: Path, text: str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
