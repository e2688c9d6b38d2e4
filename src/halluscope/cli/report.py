"""``halluscope report``: compare finished runs in a table; write CSV, markdown or an HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from halluscope.cli.common import console, fail


def report(
    run_dirs: Annotated[list[Path], typer.Argument(help="Run directories to compare.")],
    csv: Annotated[Path | None, typer.Option("--csv", help="Write the table as CSV here.")] = None,
    markdown: Annotated[
        Path | None, typer.Option("--markdown", "--md", help="Write a markdown table.")
    ] = None,
    html: Annotated[Path | None, typer.Option("--html", help="Write a self-contained HTML report.")] = None,
    quality: Annotated[
        Path | None, typer.Option(help="With --html: add this quality.json (`halluscope quality`) as a section.")
    ] = None,
    baseline: Annotated[
        Path | None,
        typer.Option(
            help="Compare every other run of the same benchmark with this one, item by item: the difference, "
            "its interval and a p-value per headline metric (Holm-adjusted). Default: the first run, when "
            "two or more runs of one benchmark are given."
        ),
    ] = None,
    ci: Annotated[
        float, typer.Option("--ci", min=0.5, max=0.999, help="Confidence level of every interval shown.")
    ] = 0.95,
    power: Annotated[
        bool,
        typer.Option(
            "--power", help="Show, per run and headline metric, the smallest difference detectable at 80 % power "
            "and a 5 % level with this many items and this clustering."
        ),
    ] = False,
    show_all: Annotated[
        bool,
        typer.Option(
            "--all", help="Also show each figure under the readings that are not the run's own (paper_*, robust_*)."
        ),
    ] = False,
) -> None:
    """Print a comparison table of runs (rows) and their metrics (columns), each headline with its interval;
    runs of one benchmark are compared item by item with the first (or --baseline)."""
    from halluscope.report.compare import ComparisonError
    from halluscope.report.table import rich_table, summarise_run, to_csv, to_markdown, write_text
    from halluscope.runs.store import RunDirError

    try:
        summaries = [summarise_run(d, level=ci) for d in run_dirs]
    except RunDirError as error:
        fail(str(error))
    out = console()
    _print_choices(run_dirs, summaries)
    out.print(rich_table(summaries, title="halluscope runs", width=out.width, show_all=show_all))
    _print_folded(summaries, show_all)
    _print_groups(summaries)
    _print_coverage(run_dirs, [s.benchmark for s in summaries])
    _print_judge_errors(run_dirs)
    try:
        _print_comparisons(run_dirs, [s.benchmark for s in summaries], baseline, ci)
        if power:
            _print_power(run_dirs, ci)
    except ComparisonError as error:
        fail(str(error))
    if csv:
        out.print(f"CSV: {write_text(csv, to_csv(summaries))}")
    if markdown:
        out.print(f"markdown: {write_text(markdown, to_markdown(summaries, show_all=show_all))}")
    if html:
        from halluscope.report.html import write_html_report

        section = None
        if quality is not None:
            from halluscope.quality.assess import QualityReport
            from halluscope.quality.render import html_section

            try:
                section = html_section(QualityReport.model_validate_json(quality.read_text(encoding="utf-8")))
            except (OSError, ValueError) as error:
                fail(f"{quality}: not a quality.json written by `halluscope quality` ({error})")
        out.print(f"HTML: {write_html_report(list(run_dirs), html, quality_html=section)}")


def _print_comparisons(run_dirs: list[Path], benchmarks: list[str], baseline: Path | None, level: float) -> None:
    """The paired comparisons: every run of the baseline's benchmark against the baseline."""
    from halluscope.report.compare import ComparisonError, compare_runs
    from halluscope.report.comparison_view import comparison_table

    if baseline is None:
        if len(run_dirs) < 2 or len(set(benchmarks)) != 1:
            return
        try:  # not asked for: runs that cannot be paired are said so, and the table above stands
            _print_comparisons(run_dirs, benchmarks, run_dirs[0], level)
        except ComparisonError as error:
            console().print(f"not compared: {error}")
        return
    base_key = Path(baseline).resolve()
    base_benchmark = next((b for d, b in zip(run_dirs, benchmarks, strict=True) if d.resolve() == base_key), None)
    others = [(d, b) for d, b in zip(run_dirs, benchmarks, strict=True) if d.resolve() != base_key]
    # A baseline outside the runs listed is compared with all of them (compare_runs refuses another benchmark).
    candidates = [d for d, b in others if base_benchmark is None or b == base_benchmark]
    skipped = [str(d) for d, _ in others if d not in candidates]
    out = console()
    if skipped:
        out.print(f"not compared with {baseline} (another benchmark): {', '.join(skipped)}")
    if not candidates:
        return
    for comparison in compare_runs(baseline, candidates, level=level):
        out.print(comparison_table(comparison, level))


def _print_choices(run_dirs: list[Path], summaries: list[Any]) -> None:
    """Before the table, what each run chose that changes its figures (tagger, reading, labels, judge,
    --only-answered, --limit), a line each, so the figures are read with it."""
    from halluscope.report.choices import run_choices
    from halluscope.runs.store import read_spec

    for run_dir, summary in zip(run_dirs, summaries, strict=True):
        for line in run_choices(read_spec(run_dir), summary.counts, summary.judge):
            console().print(f"{summary.run}: {line}", markup=False, highlight=False)


def _print_folded(summaries: list[Any], show_all: bool) -> None:
    from halluscope.report.table import folded_columns

    folded = [] if show_all else folded_columns(summaries)
    if folded:
        console().print(
            f"{len(folded)} figures under other readings not shown ({', '.join(folded[:4])}"
            f"{', …' if len(folded) > 4 else ''}): --all shows them; CSV and metrics.json hold every one",
            markup=False, highlight=False,
        )  # fmt: skip


def _print_groups(summaries: list[Any]) -> None:
    """Each run's headline view (POPE per set as eval_pope prints it), the figures its benchmark's users
    compare; a benchmark that declares none, or whose view is not per group, gets its per-group table."""
    from halluscope.report.groups_view import group_table
    from halluscope.report.headline import headline_table
    from halluscope.report.table import headline_view_of

    for summary in summaries:
        filled = headline_view_of(summary)
        if filled is not None:
            console().print(headline_table(filled, f"{summary.run}: {filled.view.title}"))
            if filled.view.rows == "groups":
                continue
        table = group_table(
            f"{summary.run} ({summary.benchmark}) by group", summary.groups, summary.group_intervals,
            list(summary.intervals),
        )  # fmt: skip
        if table is not None:
            console().print(table)


def _print_coverage(run_dirs: list[Path], benchmarks: list[str]) -> None:
    """Runs of one benchmark side by side that scored different items: said, with how many they share, since
    their figures above are over different questions (the paired comparison below uses the shared ones)."""
    from halluscope.report.compare import scored_item_ids

    by_benchmark: dict[str, list[Path]] = {}
    for run_dir, benchmark in zip(run_dirs, benchmarks, strict=True):
        by_benchmark.setdefault(benchmark, []).append(run_dir)
    for benchmark, dirs in by_benchmark.items():
        ids = [scored_item_ids(d) for d in dirs]
        known = [(d, i) for d, i in zip(dirs, ids, strict=True) if i is not None]
        if len(known) < 2 or all(i == known[0][1] for _, i in known):
            continue
        shared = set.intersection(*(i for _, i in known))
        sizes = ", ".join(f"{d.name} {len(i):,}" for d, i in known)
        console().print(
            f"{benchmark}: these runs scored different items ({sizes}; {len(shared):,} shared): their figures "
            "above are over different questions; the paired comparison uses the shared items only",
            markup=False, highlight=False,
        )  # fmt: skip


def _print_judge_errors(run_dirs: list[Path]) -> None:
    """Each run's judge and how far it was measured to be right, beside the judged headlines above."""
    from halluscope.report.table import judge_error_lines
    from halluscope.runs.store import read_metrics

    for run_dir in run_dirs:
        for line in judge_error_lines(read_metrics(run_dir).judge_error):
            console().print(f"{run_dir.name}: {line}", markup=False, highlight=False)


def _print_power(run_dirs: list[Path], level: float) -> None:
    from halluscope.report.comparison_view import power_table

    console().print(power_table(run_dirs, level))


def register(app: typer.Typer) -> None:
    app.command("report")(report)
