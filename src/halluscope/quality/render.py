"""HQM results for people: rich tables that read at 80 columns, and a section for the HTML report."""

from __future__ import annotations

from html import escape
from typing import Any

from halluscope.quality.assess import QualityReport
from halluscope.quality.measures import COVERAGE_TYPES, YesNoStats
from halluscope.quality.stats import Coefficient


def _coef(c: Coefficient | None) -> str:
    if c is None or c.value is None:
        return "—"
    if c.ci_low is None or c.ci_high is None:
        return f"{c.value:.2f}"
    return f"{c.value:.2f} [{c.ci_low:.2f}, {c.ci_high:.2f}]"


def _ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def terminal_tables(report: QualityReport) -> list[Any]:
    """Rich renderables, in reading order: correlations, warnings, coverage, response bias, problems."""
    from rich.table import Table
    from rich.text import Text

    out: list[Any] = []
    if report.correlations:
        table = Table(title=f"{report.benchmark} — how far {report.metric} can be trusted", title_justify="left")
        table.add_column("measure")
        table.add_column("n", justify="right")
        table.add_column("Pearson [95% CI]", justify="right")
        table.add_column("Spearman [95% CI]", justify="right")
        for measure in report.correlations:
            c = measure.correlation
            if c is None:
                table.add_row(measure.measure, str(len(measure.scores)), "—", "—")
            else:
                table.add_row(measure.measure, str(c.n), _coef(c.pearson), _coef(c.spearman))
        out.append(table)
        for measure in report.correlations:
            if measure.correlation is not None and measure.correlation.warning:
                out.append(Text(f"! {measure.measure}: {measure.correlation.warning}", style="yellow"))
            out.extend(Text(f"  {measure.measure}: {note}", style="dim") for note in measure.notes)
    if report.coverage.benchmarks:
        table = Table(title="coverage of hallucination types", title_justify="left")
        table.add_column("type")
        for bench in report.coverage.benchmarks:
            table.add_column(bench.benchmark, justify="right")
        for type_name in report.coverage.rows():
            cells = [str(b.counts[type_name]) if b.counts.get(type_name) else "—"
                     for b in report.coverage.benchmarks]
            table.add_row(COVERAGE_TYPES.get(type_name, type_name), *cells)
        table.add_row(
            "types covered",
            *[f"{len(b.covered)} of {len(report.coverage.rows())}" for b in report.coverage.benchmarks],
            style="bold",
        )
        out.append(table)
        units = "; ".join(f"{b.benchmark}: {b.unit}" for b in report.coverage.benchmarks)
        out.append(Text(f"counts are — {units}", style="dim"))
    if report.response_bias:
        table = Table(title="response bias on yes/no items (fractions)", title_justify="left")
        table.add_column("model", overflow="fold", max_width=24)
        for label in ("acc", "yes", "truth", "acc-p", "yes-p", "truth-p"):
            table.add_column(label, justify="right")
        for bias in report.response_bias:
            values: list[str] = []
            for stats in (bias.original, bias.parallel):
                values += _stats_cells(stats)
            table.add_row(bias.model, *values)
        out.append(table)
        out.append(Text("yes: share of answers that are yes; truth: share of labels that are yes; "
                        "-p: the parallel form", style="dim"))
    if report.problems:
        out.append(Text(f"{len(report.problems)} problem(s):", style="yellow"))
        out.extend(Text(f"  • {p}", style="yellow") for p in report.problems)
    return out


def _stats_cells(stats: YesNoStats | None) -> list[str]:
    if stats is None:
        return ["—", "—", "—"]
    return [_ratio(stats.accuracy), _ratio(stats.yes_ratio), _ratio(stats.label_yes_ratio)]


def html_section(report: QualityReport) -> str:
    """A self-contained ``<section>`` for the HTML report (plain tables; no script needed)."""
    parts = [f'<section class="quality"><h2>Benchmark quality (HQM): {escape(report.benchmark)}, '
             f"{escape(report.metric)}</h2>"]
    if report.correlations:
        parts.append("<table><thead><tr><th>measure</th><th>n</th><th>Pearson [95% CI]</th>"
                     "<th>Spearman [95% CI]</th><th>note</th></tr></thead><tbody>")
        for m in report.correlations:
            c = m.correlation
            note = "; ".join(x for x in [c.warning if c is not None else m.error, *m.notes] if x)
            parts.append(
                f"<tr><td>{escape(m.measure)}</td><td>{c.n if c else len(m.scores)}</td>"
                f"<td>{escape(_coef(c.pearson if c else None))}</td>"
                f"<td>{escape(_coef(c.spearman if c else None))}</td><td>{escape(note)}</td></tr>"
            )
        parts.append("</tbody></table>")
    if report.coverage.benchmarks:
        heads = "".join(f"<th>{escape(b.benchmark)} ({escape(b.unit)})</th>" for b in report.coverage.benchmarks)
        parts.append(f"<h3>Coverage of hallucination types</h3><table><thead><tr><th>type</th>{heads}</tr>"
                     "</thead><tbody>")
        for type_name in report.coverage.rows():
            cells = "".join(f"<td>{b.counts.get(type_name) or '—'}</td>" for b in report.coverage.benchmarks)
            parts.append(f"<tr><td>{escape(COVERAGE_TYPES.get(type_name, type_name))}</td>{cells}</tr>")
        parts.append("</tbody></table>")
    if report.response_bias:
        parts.append("<h3>Response bias on yes/no items</h3><table><thead><tr><th>model</th><th>accuracy</th>"
                     "<th>yes</th><th>labels yes</th><th>accuracy (parallel)</th><th>yes (parallel)</th>"
                     "<th>labels yes (parallel)</th></tr></thead><tbody>")
        for bias in report.response_bias:
            cells = "".join(f"<td>{escape(v)}</td>" for s in (bias.original, bias.parallel) for v in _stats_cells(s))
            parts.append(f"<tr><td>{escape(bias.model)}</td>{cells}</tr>")
        parts.append("</tbody></table>")
    if report.problems:
        items = "".join(f"<li>{escape(p)}</li>" for p in report.problems)
        parts.append(f"<h3>Problems</h3><ul>{items}</ul>")
    parts.append("</section>")
    return "".join(parts)
