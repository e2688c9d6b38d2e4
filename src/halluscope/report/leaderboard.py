"""A leaderboard of finished runs: per benchmark, models ranked on its headline with the headline's interval,
and each model's difference from a baseline model marked where it is significant; then each model's
hallucination profile across the benchmarks (:mod:`halluscope.report.profile`).

Why built from run folders only: a suite's runs may have been made at different times (a resumed suite, a
model added later), and every number here is read from what each run saved — ``metrics.json`` for the value
and its interval, ``metric_tables.json`` for the paired comparison, which is :func:`compare_runs`, the same
comparison ``halluscope report`` prints. A rank says only the order of the point estimates; whether two models
differ is what the comparison with the baseline says (Holm-adjusted, as ``halluscope report``).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from halluscope.report.compare import ComparisonError, compare_runs
from halluscope.report.comparison_view import verdict
from halluscope.report.profile import PROFILE_COLUMNS, SHORT, ProfileCell, build_profile, cell_text
from halluscope.runs.store import RunDirError, read_metric_tables, read_metrics

__all__ = [
    "Leaderboard",
    "LeaderboardRow",
    "build_leaderboard",
    "interval_text",
    "versus_text",
    "write_leaderboard",
]


class LeaderboardRow(BaseModel):
    """One model on one benchmark: its headline, interval, rank and difference from the baseline."""

    model_config = ConfigDict(frozen=True)

    benchmark: str
    metric: str
    model: str
    run_dir: Path
    value: float | None
    low: float | None = None
    high: float | None = None
    unit: str | None = None
    units: int | None = None
    higher_is_better: bool | None = None
    rank: int | None = None
    is_baseline: bool = False
    difference: float | None = None
    difference_low: float | None = None
    difference_high: float | None = None
    p_adjusted: float | None = None
    #: "better" / "worse" than the baseline (significant), "no clear difference", or None (not compared).
    versus_baseline: str | None = None


class Leaderboard(BaseModel):
    """Rows grouped by benchmark, best first; what could not be compared is said in ``notes``."""

    baseline: str | None
    level: float
    rows: list[LeaderboardRow]
    notes: list[str] = []
    #: Each model's hallucination profile across the benchmarks (:mod:`halluscope.report.profile`).
    profile: list[ProfileCell] = []

    def benchmarks(self) -> list[str]:
        return list(dict.fromkeys(row.benchmark for row in self.rows))

    def profile_models(self) -> list[str]:
        return list(dict.fromkeys(cell.model for cell in self.profile))

    def profile_csv(self) -> str:
        """One line per model and profile cell: the mean share hallucinated and the figures it averages."""
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(["model", "kind", "form", "hallucinated_percent", "sources"])
        for c in self.profile:
            writer.writerow([c.model, c.kind, c.form, c.value, "; ".join(c.sources)])
        return buffer.getvalue()

    def _profile_markdown(self) -> list[str]:
        if not self.profile:
            return []
        head = " | ".join(f"{kind} {SHORT[form]}" for kind, form in PROFILE_COLUMNS)
        lines = [
            "## Hallucination profile (% hallucinated, lower is better)", "",
            f"| model | {head} |", "|---|" + "---:|" * len(PROFILE_COLUMNS),
        ]  # fmt: skip
        for model in self.profile_models():
            cells = " | ".join(cell_text(self.profile, model, k, f) for k, f in PROFILE_COLUMNS)
            lines.append(f"| {model} | {cells} |")
        sources = sorted({s.split(" = ")[0] for c in self.profile for s in c.sources})
        return [*lines, "", "Figures averaged: " + ", ".join(sources) + ".", ""]

    def to_csv(self) -> str:
        """One line per row, every field, numbers unrounded."""
        buffer = io.StringIO()
        fields = list(LeaderboardRow.model_fields)
        writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        for row in self.rows:
            writer.writerow({k: "" if v is None else v for k, v in row.model_dump(mode="json").items()})
        return buffer.getvalue()

    def to_markdown(self) -> str:
        """One table per benchmark: rank, model, headline with interval, difference from the baseline."""
        lines = [f"# Leaderboard ({self.level:.0%} intervals; baseline: {self.baseline or 'none'})", ""]
        for benchmark in self.benchmarks():
            rows = [r for r in self.rows if r.benchmark == benchmark]
            arrow = _direction(rows[0].higher_is_better)
            lines += [f"## {benchmark}: {rows[0].metric} ({arrow})", ""]
            lines += [
                "| rank | model | " + rows[0].metric + " | interval | vs baseline |",
                "|---:|---|---:|---|---|",
            ]
            lines += [
                f"| {r.rank or '–'} | {r.model} | {_num(r.value)} | {interval_text(r)} | {versus_text(r)} |"
                for r in rows
            ]
            lines.append("")
        lines += self._profile_markdown()
        lines += [f"- {note}" for note in self.notes]
        return "\n".join(lines).rstrip() + "\n"

    def to_html(self) -> str:
        """One self-contained page: the markdown's tables as HTML, no script, no outside file."""
        from halluscope.report.formatting import esc

        parts = [
            "<!doctype html><html><head><meta charset='utf-8'><title>halluscope leaderboard</title><style>",
            "body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:2em}",
            "td,th{border:1px solid #ccc;padding:.3em .6em}td.num{text-align:right}.better{color:#070}",
            ".worse{color:#a00}</style></head><body>",
            f"<h1>Leaderboard</h1><p>{self.level:.0%} intervals; baseline: {esc(self.baseline or 'none')}</p>",
        ]
        for benchmark in self.benchmarks():
            rows = [r for r in self.rows if r.benchmark == benchmark]
            parts.append(
                f"<h2>{esc(benchmark)}: {esc(rows[0].metric)} ({_direction(rows[0].higher_is_better)})</h2>"
                "<table><tr><th>rank</th><th>model</th><th>value</th><th>interval</th><th>vs baseline</th></tr>"
            )
            for r in rows:
                css = r.versus_baseline if r.versus_baseline in ("better", "worse") else ""
                parts.append(
                    f"<tr><td class='num'>{r.rank or '–'}</td><td>{esc(r.model)}</td><td class='num'>{_num(r.value)}"
                    f"</td><td>{esc(interval_text(r))}</td><td class='{esc(css)}'>{esc(versus_text(r))}</td></tr>"
                )
            parts.append("</table>")
        parts += self._profile_html()
        parts += [f"<p>{esc(note)}</p>" for note in self.notes]
        return "".join(parts) + "</body></html>\n"


    def _profile_html(self) -> list[str]:
        """The profile table; each cell's title lists the figures it averages."""
        from halluscope.report.formatting import esc

        if not self.profile:
            return []
        head = "".join(f"<th>{esc(kind)}<br>{esc(form)}</th>" for kind, form in PROFILE_COLUMNS)
        parts = [
            "<h2 id='profile'>Hallucination profile</h2><p>% hallucinated (a hallucination rate, or 100 − an "
            "accuracy), averaged over the benchmarks that measure it; lower is better.</p>",
            f"<table class='profile'><tr><th>model</th>{head}</tr>",
        ]
        for model in self.profile_models():
            parts.append(f"<tr><td>{esc(model)}</td>")
            for kind, form in PROFILE_COLUMNS:
                cell = next((c for c in self.profile if (c.model, c.kind, c.form) == (model, kind, form)), None)
                title = esc("; ".join(cell.sources)) if cell else "not measured"
                parts.append(f"<td class='num' title='{title}'>{cell_text(self.profile, model, kind, form)}</td>")
            parts.append("</tr>")
        return [*parts, "</table>"]


def build_leaderboard(
    runs: Sequence[tuple[str, Path]], *, baseline: str | None = None, level: float = 0.95
) -> Leaderboard:
    """The leaderboard of finished runs ``(model label, run folder)``; ``baseline`` is a model label (default:
    the first model given). Runs without ``metrics.json`` are left out, with a note."""
    notes: list[str] = []
    by_benchmark: dict[str, list[tuple[str, Path, Any]]] = {}
    for model, run_dir in runs:
        try:
            report = read_metrics(run_dir)
        except RunDirError as error:
            notes.append(f"{model}: {run_dir} left out ({error})")
            continue
        by_benchmark.setdefault(report.benchmark, []).append((model, run_dir, report))
    baseline = baseline or (runs[0][0] if runs else None)
    rows: list[LeaderboardRow] = []
    for benchmark, entries in by_benchmark.items():
        rows += _benchmark_rows(benchmark, entries, baseline, level, notes)
    profile = build_profile(runs)
    return Leaderboard(baseline=baseline, level=level, rows=rows, notes=notes, profile=profile)


def _headline(entries: list[tuple[str, Path, Any]]) -> tuple[str, bool | None]:
    """The metric to rank on: the one ``details.headline`` names, else the first declared headline with a
    better direction, else the first metric; with its direction (None: no rank)."""
    _, run_dir, report = entries[0]
    try:
        declarations, _ = read_metric_tables(run_dir)
    except RunDirError:
        declarations = []
    directions = {d.name: d.higher_is_better for d in declarations}
    named = report.details.get("headline")
    if isinstance(named, str) and named in report.metrics:
        return named, directions.get(named, False if "hallu" in named else None)
    for declaration in declarations:
        if declaration.higher_is_better is not None and declaration.name in report.metrics:
            return declaration.name, declaration.higher_is_better
    return next(iter(report.metrics), ""), None


def _benchmark_rows(
    benchmark: str, entries: list[tuple[str, Path, Any]], baseline: str | None, level: float, notes: list[str]
) -> list[LeaderboardRow]:
    metric, higher = _headline(entries)
    rows = []
    for model, run_dir, report in entries:
        interval = (report.intervals or {}).get(metric) or {}
        rows.append(
            LeaderboardRow(
                benchmark=benchmark,
                metric=metric,
                model=model,
                run_dir=run_dir,
                value=report.metrics.get(metric),
                low=interval.get("low"),
                high=interval.get("high"),
                unit=interval.get("unit"),
                units=interval.get("units"),
                higher_is_better=higher,
                is_baseline=model == baseline,
            )
        )
    rows = _ranked(rows, higher)
    return _with_baseline(rows, baseline, level, notes)


def _ranked(rows: list[LeaderboardRow], higher: bool | None) -> list[LeaderboardRow]:
    """Best first (ties share a rank); no rank where the metric has no better direction or no value."""
    if higher is None:
        return rows
    valued = sorted((r for r in rows if r.value is not None), key=lambda r: r.value or 0.0, reverse=higher)
    ranked: list[LeaderboardRow] = []
    for position, row in enumerate(valued):
        tie = ranked and ranked[-1].value == row.value
        rank = ranked[-1].rank if tie else position + 1
        ranked.append(row.model_copy(update={"rank": rank}))
    return ranked + [r for r in rows if r.value is None]


def _with_baseline(
    rows: list[LeaderboardRow], baseline: str | None, level: float, notes: list[str]
) -> list[LeaderboardRow]:
    """Each other model's paired difference from the baseline on the items both scored."""
    base = next((r for r in rows if r.is_baseline), None)
    others = [r for r in rows if not r.is_baseline]
    if base is None or not others:
        if baseline and base is None and rows:
            notes.append(f"{rows[0].benchmark}: baseline {baseline!r} has no finished run; nothing compared")
        return rows
    try:
        compared = compare_runs(base.run_dir, [r.run_dir for r in others], level=level)
    except ComparisonError as error:
        notes.append(f"{base.benchmark}: not compared with the baseline ({error})")
        return rows
    updated = {}
    for row, comparison in zip(others, compared, strict=True):
        metric = next((m for m in comparison.metrics if m.metric == row.metric), None)
        paired = metric.comparison if metric else None
        if paired is None:
            continue
        updated[row.run_dir] = row.model_copy(
            update={
                "difference": paired.difference, "p_adjusted": paired.p_adjusted,
                "difference_low": paired.interval.low if paired.interval else None,
                "difference_high": paired.interval.high if paired.interval else None,
                "versus_baseline": verdict(paired.difference, paired.p_adjusted, row.higher_is_better),
            }
        )  # fmt: skip
    return [updated.get(r.run_dir, r) for r in rows]


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def interval_text(row: LeaderboardRow) -> str:
    if row.low is None or row.high is None:
        return "–"
    over = f" over {row.units} {row.unit}s" if row.units and row.unit else ""
    return f"[{row.low:.2f}, {row.high:.2f}]{over}"


def versus_text(row: LeaderboardRow) -> str:
    if row.is_baseline:
        return "baseline"
    if row.difference is None:
        return "–"
    spread = (
        f" [{row.difference_low:+.2f}, {row.difference_high:+.2f}]"
        if row.difference_low is not None and row.difference_high is not None
        else ""
    )
    p = f", p={row.p_adjusted:.3g}" if row.p_adjusted is not None else ""
    mark = " *" if row.versus_baseline in ("better", "worse", "higher", "lower") else ""
    return f"{row.difference:+.2f}{spread}{p}: {row.versus_baseline}{mark}"


def _direction(higher: bool | None) -> str:
    return {True: "higher is better", False: "lower is better", None: "no better direction; not ranked"}[
        higher
    ]


def write_leaderboard(board: Leaderboard, out: Path, *, html: bool = True) -> dict[str, Path]:
    """``leaderboard.csv``, ``leaderboard.md`` (and ``leaderboard.html``) in ``out``; their paths by kind."""
    out.mkdir(parents=True, exist_ok=True)
    written = {"csv": out / "leaderboard.csv", "markdown": out / "leaderboard.md"}
    written["csv"].write_text(board.to_csv(), encoding="utf-8")
    written["markdown"].write_text(board.to_markdown(), encoding="utf-8")
    if board.profile:
        written["profile"] = out / "profile.csv"
        written["profile"].write_text(board.profile_csv(), encoding="utf-8")
    if html:
        written["html"] = out / "leaderboard.html"
        written["html"].write_text(board.to_html(), encoding="utf-8")
    return written
