"""Comparison tables of finished runs: rows are runs, columns are metrics, in terminal, CSV or markdown."""

from __future__ import annotations

import csv
import io
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


def _component_name(value: Any) -> str:
    if isinstance(value, dict):
        name = (
            value.get("judge") or value.get("extractor") or value.get("name") or value.get("provider") or "?"
        )
        detail = value.get("model") or value.get("spec")
        return f"{name} ({detail})" if detail else str(name)
    return "" if value is None else str(value)


def summarise_run(run_dir: Path) -> RunSummary:
    spec = read_spec(run_dir)
    report = read_metrics(run_dir)
    model = spec.get("model") or spec.get("responses") or ""
    return RunSummary(
        run=Path(run_dir).name,
        benchmark=report.benchmark,
        model=mask_text(_component_name(model) if isinstance(model, dict) else str(model)),
        judge=mask_text(_component_name(spec.get("judge"))),
        metrics=dict(report.metrics),
        counts=dict(report.counts),
    )


def metric_columns(summaries: Sequence[RunSummary]) -> list[str]:
    """Every metric present in any run, in the one fixed order (:func:`halluscope.report.order.order_metrics`)."""
    return order_metrics(key for summary in summaries for key in summary.metrics)


def format_value(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def table_rows(summaries: Sequence[RunSummary]) -> tuple[list[str], list[list[str]]]:
    columns = metric_columns(summaries)
    header = ["run", "benchmark", "model", "judge", *columns]
    rows = [
        [s.run, s.benchmark, s.model, s.judge, *(format_value(s.metrics.get(c)) for c in columns)]
        for s in summaries
    ]
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
    columns = metric_columns(summaries)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([csv_cell(name) for name in ["run", "benchmark", "model", "judge", *columns]])
    for s in summaries:
        writer.writerow(
            [
                csv_cell(s.run),
                csv_cell(s.benchmark),
                csv_cell(s.model),
                csv_cell(s.judge),
                *("" if s.metrics.get(c) is None else s.metrics[c] for c in columns),
            ]
        )
    return buffer.getvalue()


def to_markdown(summaries: Sequence[RunSummary]) -> str:
    header, rows = table_rows(summaries)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


#: Narrowest a run's column may get in the transposed table before runs are split over several tables.
_MIN_RUN_COLUMN = 18


def rich_table(summaries: Sequence[RunSummary], title: str | None = None, width: int | None = None) -> Any:
    """Runs as rows and metrics as columns when that fits ``width``; else transposed (metrics as rows).

    A comparison of a handful of runs has far more metrics than runs, so a terminal of normal width
    (80 columns) cannot hold a column per metric: every cell would shrink to "…". Transposed, each run
    gets a column and long names wrap inside it; with more runs than fit, they are split over several
    tables that each repeat the metric names.
    """
    from rich.console import Console, Group

    wide = _wide_table(summaries, title)
    if width is None or Console(width=100_000).measure(wide).maximum <= width:
        return wide
    label_width = max(len(name) for name in ["run", "benchmark", "model", "judge", *metric_columns(summaries)])
    per_table = max(1, (width - label_width - 4) // (_MIN_RUN_COLUMN + 3))
    tables = []
    for start in range(0, len(summaries), per_table):
        part = summaries[start : start + per_table]
        heading = title if start == 0 else None
        if len(summaries) > per_table:
            which = f"{start + 1}" if len(part) == 1 else f"{start + 1}–{start + len(part)}"
            which = f"run{'s' if len(part) > 1 else ''} {which} of {len(summaries)}"
            heading = f"{heading} ({which})" if heading else which
        tables.append(_transposed_table(part, summaries, heading))
    return Group(*tables)


def _wide_table(summaries: Sequence[RunSummary], title: str | None) -> Any:
    from rich.table import Table

    header, rows = table_rows(summaries)
    table = Table(title=title)
    for index, name in enumerate(header):
        table.add_column(name, justify="right" if index >= 4 else "left")
    for row in rows:
        table.add_row(*row)
    return table


def _transposed_table(part: Sequence[RunSummary], every: Sequence[RunSummary], title: str | None) -> Any:
    from rich.table import Table

    table = Table(title=title, show_lines=False)
    table.add_column("", style="bold", no_wrap=True)
    for summary in part:
        table.add_column(summary.run, justify="right", overflow="fold", min_width=8)
    for field_name in ("benchmark", "model", "judge"):
        table.add_row(field_name, *(getattr(s, field_name) for s in part), style="dim")
    for key in metric_columns(every):
        table.add_row(key, *(format_value(s.metrics.get(key)) for s in part))
    return table


def metrics_table(metrics: dict[str, float | None], counts: dict[str, int], title: str) -> Any:
    """A two-column table of one run's metrics and counts."""
    from rich.table import Table

    table = Table(title=title)
    table.add_column("measure")
    table.add_column("value", justify="right")
    for key, value in metrics.items():
        table.add_row(key, format_value(value))
    for key, count in counts.items():
        table.add_row(f"[dim]{key}[/dim]", f"[dim]{count}[/dim]")
    return table


def write_text(path: Path, text: str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
