"""``halluscope eval``: a suite of benchmarks for one or several models, or a folder of other tools' answers.

This module only parses and presents: the flags become a :class:`~halluscope.suite.SuitePlan` and shared run
settings, :func:`halluscope.suite.run_planned` runs each benchmark for each model through the one
orchestrator, and what comes back is printed: one line per run (why, for a run that failed), the files of a
``--from`` folder that were not scored, and the leaderboard.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from halluscope.cli.common import console, exit_interrupted, fail, join_urls, stops_on_signals
from halluscope.cli.flags import flags_command

if TYPE_CHECKING:
    from halluscope.suite import SuiteResult


@dataclass(frozen=True)
class EvalFlags:
    """The options of ``halluscope eval``, as typer parses them."""

    out: Annotated[
        Path, typer.Option("--out", "-o", help="Suite folder: one run folder per model and benchmark.")
    ]
    benchmarks: Annotated[
        str | None, typer.Option("--benchmarks", "-b", help="Benchmarks, comma-separated (pope,tri-he,...).")
    ] = None
    model: Annotated[
        list[str] | None,
        typer.Option(
            "--model", "-m", help="Model to ask (provider/name, or LABEL=SPEC); repeat for several."
        ),
    ] = None
    suite: Annotated[
        Path | None,
        typer.Option("--suite", help="Suite file (TOML): \\[benchmarks.NAME] and \\[models.LABEL] tables."),
    ] = None
    answers_from: Annotated[
        Path | None,
        typer.Option(
            "--from", help="Folder of lmms-eval sample logs, VLMEvalKit sheets or LLaVA answer files."
        ),
    ] = None
    data_root: Annotated[
        Path | None,
        typer.Option("--data-root", help="Folder holding each benchmark's data (pope/, tri-he/, ...)."),
    ] = None
    limit: Annotated[
        int | None, typer.Option(help="Ask and score only the first N samples of each benchmark.")
    ] = None
    baseline: Annotated[
        str | None,
        typer.Option(help="Model label the leaderboard compares the others with (default: the first)."),
    ] = None
    base_url: Annotated[
        list[str] | None, typer.Option(help="OpenAI-compatible endpoint for LLM judges and extractors.")
    ] = None
    max_tokens: Annotated[int | None, typer.Option(help="Longest answer, in tokens (default: 512).")] = None
    concurrency: Annotated[int | None, typer.Option(help="Requests in flight at once (default: 4).")] = None
    cache: Annotated[Path | None, typer.Option(help="Cache file (default: the user cache).")] = None
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the cache.")] = False
    ci: Annotated[
        float, typer.Option("--ci", min=0.5, max=0.999, help="Confidence level of the headline intervals.")
    ] = 0.95
    no_html: Annotated[
        bool, typer.Option("--no-html", help="Write the leaderboard as CSV and markdown only.")
    ] = False
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False
    download: Annotated[
        bool,
        typer.Option(
            "--download",
            help="First fetch the official files of each benchmark that lacks its data (into --data-root, else "
            "the user cache), as 'halluscope data pull' does.",
        ),
    ] = False


@flags_command(EvalFlags)
def eval_suite(flags: EvalFlags) -> None:
    """Run several benchmarks for one or several models (or score a folder of answers), then rank them."""
    from halluscope.runs.progress import make_progress
    from halluscope.suite import run_planned
    from halluscope.suite.spec import SuiteError

    try:
        plan, settings = _plan(flags)
    except SuiteError as error:
        fail(str(error))
    if flags.download:
        plan = _download(plan, flags)
    from halluscope.cli.run import CliHooks

    try:
        with stops_on_signals():
            result = run_planned(
                plan,
                settings,
                CliHooks(),
                make_progress(not flags.quiet),
                html=not flags.no_html,
            )
    except KeyboardInterrupt:  # what finished is kept; the same command resumes
        exit_interrupted()
    show_result(result)
    if not result.ok:
        raise typer.Exit(1)


def _plan(flags: EvalFlags) -> tuple[Any, Any]:
    from halluscope.suite.plan import plan_suite, run_settings

    names = [n.strip() for n in (flags.benchmarks or "").split(",") if n.strip()] or None
    plan = plan_suite(
        names, models=flags.model, suite=flags.suite, answers_from=flags.answers_from, data_root=flags.data_root,
        out=flags.out, baseline=flags.baseline,
    )  # fmt: skip
    options: dict[str, Any] = {**plan.settings, "ci": flags.ci}
    given = {"limit": flags.limit, "max_tokens": flags.max_tokens, "concurrency": flags.concurrency}
    options.update({k: v for k, v in given.items() if v is not None})
    options["base_url"] = join_urls(flags.base_url)
    options["cache"] = False if flags.no_cache else flags.cache
    return plan, run_settings(options, surface="cli")


def _download(plan: Any, flags: EvalFlags) -> Any:
    """The plan after pulling each benchmark's missing data; one line per data set pulled or failed."""
    from halluscope.cli.data import show_report
    from halluscope.runs.transfer_progress import make_transfer_progress
    from halluscope.suite.fetch import fetch_missing_data

    progress = make_transfer_progress(not flags.quiet)
    try:
        plan, reports = fetch_missing_data(plan, flags.data_root, progress=progress)
    finally:
        progress.close()
    for report in reports:
        show_report(report)
    return plan


def show_result(result: SuiteResult) -> None:
    """One line per run, the skipped files, the leaderboard, and where its files are."""
    from rich.markup import escape

    out = console()
    for run in result.runs:
        where = escape(str(run.run_dir))
        if run.ok:
            out.print(f"[green]ok[/green]      {escape(run.model)} · {escape(run.benchmark)}  {where}", soft_wrap=True)
        else:
            out.print(
                f"[red]{escape(run.status)}[/red]  {escape(run.model)} · {escape(run.benchmark)}: "
                f"{escape(run.message or '')}",
                soft_wrap=True,
            )
    if result.skipped:
        out.print(f"{len(result.skipped)} file(s) not scored:")
        for skipped in result.skipped:
            out.print(f"  • {escape(str(skipped.path))}: {escape(skipped.why)}", soft_wrap=True)
    if result.leaderboard is not None and result.leaderboard.rows:
        show_leaderboard(result.leaderboard)
    for kind, path in result.files.items():
        out.print(f"leaderboard ({kind}): {escape(str(path))}", soft_wrap=True)
    failed = len(result.failed)
    if failed or not result.runs:
        console(stderr=True).print(
            f"[bold red]error:[/bold red] {failed} of {len(result.runs)} run(s) measured nothing or failed"
            + (
                "; fix the cause and re-run the same command: finished runs are not asked again"
                if failed
                else ""
            )
        )


def show_leaderboard(board: Any) -> None:
    """One rich table per benchmark: rank, model, headline with its interval, difference from the baseline."""
    from rich.table import Table

    from halluscope.report.leaderboard import interval_text, versus_text

    for benchmark in board.benchmarks():
        rows = [r for r in board.rows if r.benchmark == benchmark]
        table = Table(title=f"{benchmark}: {rows[0].metric} ({board.level:.0%} intervals)")
        for column in ("rank", "model", rows[0].metric, "interval", f"vs {board.baseline}"):
            table.add_column(column)
        for r in rows:
            value = "–" if r.value is None else f"{r.value:.2f}"
            table.add_row(str(r.rank or "–"), r.model, value, interval_text(r), versus_text(r))
        console().print(table)
    if board.profile:
        show_profile(board)
    for note in board.notes:
        console().print(f"note: {note}", markup=False, highlight=False)


def show_profile(board: Any) -> None:
    """The hallucination profile: per model, % hallucinated by kind and form, lower is better."""
    from rich.table import Table

    from halluscope.report.profile import PROFILE_COLUMNS, SHORT, cell_text

    table = Table(title="hallucination profile (% hallucinated, lower is better)")
    table.add_column("model")
    for kind, form in PROFILE_COLUMNS:
        table.add_column(f"{kind}\n{SHORT[form]}", justify="right")
    for model in board.profile_models():
        table.add_row(model, *(cell_text(board.profile, model, k, f) for k, f in PROFILE_COLUMNS))
    console().print(table)


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_suite)
