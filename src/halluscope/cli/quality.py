"""``halluscope quality``: how far can a benchmark be trusted to rank models? (HQM)"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from halluscope.cli.common import console, fail


def quality(
    runs: Annotated[
        list[str],
        typer.Argument(help="Run directories of several models on one benchmark ([NAME=]PATH; a folder of "
                            "runs stands for all of them). A model is known by its run directory's name."),
    ],
    metric: Annotated[str, typer.Option("--metric", "-m", help="Metric to assess: a key of metrics.json's "
                                        "metrics, or GROUP:NAME from its groups.")],
    retest: Annotated[
        list[str] | None,
        typer.Option(help="Runs of the same models with another sampling seed (test-retest; repeatable)."),
    ] = None,
    parallel: Annotated[
        list[str] | None,
        typer.Option(help="Runs of the same models on the parallel form (parallel-forms; repeatable)."),
    ] = None,
    labels: Annotated[
        Path | None, typer.Option(help="Human labels JSONL for criterion validity (see docs/quality.md).")
    ] = None,
    coverage: Annotated[
        list[str] | None, typer.Option(help="Runs of other benchmarks, for the coverage table (repeatable).")
    ] = None,
    higher_is_better: Annotated[
        bool, typer.Option(help="The metric rises as hallucination falls (accuracy, R); human scores follow.")
    ] = False,
    out: Annotated[Path, typer.Option("--out", "-o", help="Where to write quality.json.")] = Path("quality.json"),
    html: Annotated[Path | None, typer.Option(help="Also write an HTML report of the runs with this section.")] = None,
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples per interval.")] = 2000,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap.")] = 0,
) -> None:
    """Test-retest and parallel-forms reliability, criterion validity, coverage and response bias."""
    from halluscope.jsonio import write_json_atomic
    from halluscope.quality.assess import QualityError, assess
    from halluscope.quality.labels import LabelsError
    from halluscope.quality.render import html_section, terminal_tables

    try:
        import scipy  # noqa: F401
    except ImportError:
        fail("halluscope quality needs scipy: pip install 'halluscope[quality]'")
    if resamples < 100:
        fail("--resamples must be at least 100")
    try:
        report = assess(
            runs, metric, retest=retest, parallel=parallel, labels=labels, coverage_runs=coverage,
            higher_is_better=higher_is_better, resamples=resamples, seed=seed,
        )
    except (QualityError, LabelsError) as error:
        fail(str(error))
    write_json_atomic(out, report.model_dump(mode="json"))
    out_console = console()
    for renderable in terminal_tables(report):
        out_console.print(renderable)
    out_console.print(f"quality.json: {out}")
    if html is not None:
        from halluscope.quality.runs import expand
        from halluscope.report.html import ReportError, write_html_report

        directories = [path for _, path in expand(runs)[0]]
        try:
            out_console.print(f"HTML: {write_html_report(directories, html, quality_html=html_section(report))}")
        except ReportError as error:
            fail(str(error))


def register(app: typer.Typer) -> None:
    app.command("quality")(quality)
