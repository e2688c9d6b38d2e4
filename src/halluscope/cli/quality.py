"""``halluscope quality``: how far can a benchmark be trusted to rank models? (HQM)"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from halluscope.cli.common import console, fail
from halluscope.cli.flags import flags_command


@dataclass(frozen=True)
class QualityFlags:
    """The arguments and options of ``halluscope quality``, as typer parses them."""

    runs: Annotated[
        list[str],
        typer.Argument(help="Run directories of several models on one benchmark ([NAME=]PATH; a folder of "
                            "runs stands for all of them). A model is known by its run directory's name."),
    ]
    metric: Annotated[str, typer.Option("--metric", "-m", help="Metric to assess: a key of metrics.json's "
                                        "metrics, or GROUP:NAME from its groups.")]
    retest: Annotated[
        list[str] | None,
        typer.Option(help="Runs of the same models with another sampling seed (test-retest; repeatable)."),
    ] = None
    parallel: Annotated[
        list[str] | None,
        typer.Option(help="Runs of the same models on the parallel form (parallel-forms; repeatable)."),
    ] = None
    labels: Annotated[
        Path | None, typer.Option(help="Human labels JSONL for criterion validity (see docs/quality.md).")
    ] = None
    coverage: Annotated[
        list[str] | None, typer.Option(help="Runs of other benchmarks, for the coverage table (repeatable).")
    ] = None
    higher_is_better: Annotated[
        bool, typer.Option(help="The metric rises as hallucination falls (accuracy, R); human scores follow.")
    ] = False
    out: Annotated[Path, typer.Option("--out", "-o", help="Where to write quality.json.")] = Path("quality.json")
    html: Annotated[Path | None, typer.Option(help="Also write an HTML report of the runs with this section.")] = None
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples per interval.")] = 2000
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap.")] = 0


@flags_command(QualityFlags)
def quality(flags: QualityFlags) -> None:
    """Test-retest and parallel-forms reliability, criterion validity, coverage and response bias."""
    from halluscope.jsonio import write_json_atomic
    from halluscope.quality.render import terminal_tables

    report = assess_quality(flags)
    write_json_atomic(flags.out, report.model_dump(mode="json"))
    out_console = console()
    for renderable in terminal_tables(report):
        out_console.print(renderable)
    out_console.print(f"quality.json: {flags.out}")
    if flags.html is not None:
        write_html(flags.runs, flags.html, report)


def assess_quality(flags: QualityFlags) -> Any:
    """The quality report of the runs, once scipy and ``--resamples`` are checked."""
    from halluscope.quality.assess import QualityError, assess
    from halluscope.quality.labels import LabelsError

    try:
        import scipy  # noqa: F401
    except ImportError:
        fail("halluscope quality needs scipy: pip install 'halluscope[quality]'")
    if flags.resamples < 100:
        fail("--resamples must be at least 100")
    try:
        return assess(
            flags.runs, flags.metric, retest=flags.retest, parallel=flags.parallel, labels=flags.labels,
            coverage_runs=flags.coverage, higher_is_better=flags.higher_is_better, resamples=flags.resamples,
            seed=flags.seed,
        )  # fmt: skip
    except (QualityError, LabelsError) as error:
        fail(str(error))


def write_html(runs: list[str], html: Path, report: Any) -> None:
    """Write the HTML report of the runs with the quality section, and say where."""
    from halluscope.quality.render import html_section
    from halluscope.quality.runs import expand
    from halluscope.report.html import ReportError, write_html_report

    directories = [path for _, path in expand(runs)[0]]
    try:
        written = write_html_report(directories, html, quality_html=html_section(report))
    except ReportError as error:
        fail(str(error))
        return
    console().print(f"HTML: {written}")


def register(app: typer.Typer) -> None:
    app.command("quality")(quality)
