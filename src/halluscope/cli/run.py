"""``halluscope run``: score a model's answers on a benchmark into a run directory (resumable).

This module only parses: the flags (:class:`RunFlags`) become a :class:`~halluscope.runs.config.RunConfig`,
which the one orchestrator (:func:`halluscope.runs.evaluation.execute`) runs, as it does for
:func:`halluscope.evaluate`; what comes back is printed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from halluscope.cli.common import (
    console,
    exit_interrupted,
    fail,
    join_urls,
    judge_names,
    parse_options,
    stops_on_signals,
)
from halluscope.cli.flags import flags_command

if TYPE_CHECKING:
    import contextlib

    from halluscope.llm.local import LocalLLM
    from halluscope.runs.config import RunConfig, StageChoice
    from halluscope.runs.evaluation import RunOutcome


@dataclass(frozen=True)
class RunFlags:
    """The options of ``halluscope run``, as typer parses them."""

    benchmark: Annotated[
        str, typer.Option("--benchmark", "-b", help="Benchmark name (see `halluscope list`).")
    ]
    out: Annotated[Path, typer.Option("--out", "-o", help="Run directory (created; re-run to resume).")]
    data: Annotated[
        Path | None, typer.Option("--data", help="Benchmark data file or folder (downloaded if omitted).")
    ] = None
    responses: Annotated[
        Path | None,
        typer.Option(
            "--responses", "-r", help="Answers: halluscope JSONL or the benchmark's official layout."
        ),
    ] = None
    responses_key: Annotated[
        str | None, typer.Option(help="Field holding the answers in an official-layout file.")
    ] = None
    model: Annotated[
        list[str] | None,
        typer.Option("--model", "-m", help="Collect answers from this model first (provider/name; one)."),
    ] = None
    model_opt: Annotated[list[str] | None, typer.Option(help="Model option key=value (repeatable).")] = None
    max_tokens: Annotated[
        int | None, typer.Option(help="With --model: longest answer, in tokens [default: 512].")
    ] = None
    concurrency: Annotated[
        int | None, typer.Option(help="With --model: requests in flight at once [default: 4].")
    ] = None
    extractor: Annotated[str | None, typer.Option(help="Claim extractor: rules | llm.")] = None
    extractor_model: Annotated[
        str | None, typer.Option(help="LLM for the llm extractor; local: the packaged model, run for this run.")
    ] = None
    extractor_opt: Annotated[list[str] | None, typer.Option(help="Extractor option key=value.")] = None
    judge: Annotated[
        str | None,
        typer.Option(
            help=f"Judge, by the kind of answer it judges (`halluscope list` names each kind's benchmarks): "
            f"{judge_names()} (benchmark default)."
        ),
    ] = None
    judge_model: Annotated[
        str | None,
        typer.Option(
            help="Embedding model (similarity, typed), NLI model (nli) or LLM (llm) for the judge; "
            "local: the packaged LLM on a llama.cpp server started for this run."
        ),
    ] = None
    judge_opt: Annotated[list[str] | None, typer.Option(help="Judge option key=value (repeatable).")] = None
    base_url: Annotated[
        list[str] | None,
        typer.Option(
            help="OpenAI-compatible endpoint for LLM stages (else $HALLUSCOPE_BASE_URL, comma-separated)."
            + ' Repeat it for several replicas of one model.'
        ),
    ] = None
    bench_opt: Annotated[
        list[str] | None,
        typer.Option(help="Benchmark option key=value (repeatable); halluscope list shows each benchmark's."),
    ] = None
    limit: Annotated[
        int | None, typer.Option(help="Ask and score only the first N samples, in the benchmark's order.")
    ] = None
    cache: Annotated[Path | None, typer.Option(help="Cache file (default: the user cache).")] = None
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the cache.")] = False
    overwrite: Annotated[bool, typer.Option(help="Discard an existing run in --out.")] = False
    strict: Annotated[bool, typer.Option(help="Stop if the responses file has any problem.")] = False
    only_answered: Annotated[
        bool, typer.Option(help="With --responses: score only the samples the file answers.")
    ] = False
    # runs.runner.DEFAULT_CHUNK_SIZE, written out so that `--help` need not import the runner.
    chunk_size: Annotated[
        int, typer.Option(help="Most samples scored per batch; batches start small and grow while quick.")
    ] = 256
    # runs.runner.DEFAULT_MAX_FAILURE_SHARE, written out for the same reason.
    max_failure_share: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Exit 1 when the extractor or judge failed on more than this share of samples (or all).",
        ),
    ] = 0.1
    ci: Annotated[
        float,
        typer.Option("--ci", min=0.5, max=0.999, help="Confidence level of the headline metrics' intervals."),
    ] = 0.95
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False


@flags_command(RunFlags)
def run(flags: RunFlags) -> None:
    """Score answers on a benchmark: extract claims, judge them, and write spec, samples and metrics."""
    execute_and_show(run_config(flags))


def execute_and_show(config: RunConfig) -> None:
    """Run ``config`` (``run`` and ``rejudge``) and show its table, or say in one line why it failed."""
    from halluscope.cli.failures_view import show_failures
    from halluscope.runs.config import EvaluationError
    from halluscope.runs.evaluation import execute
    from halluscope.runs.runner import NothingMeasuredError, StageFailureError

    try:
        with stops_on_signals():
            outcome = execute(config, CliHooks())
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: what finished is written; no metrics.json
        exit_interrupted()
    except EvaluationError as error:
        fail(str(error))
    except NothingMeasuredError as error:
        warn_corrupt(console(stderr=True), error.report)
        fail(
            f"{error}. metrics.json is written for inspection and samples.jsonl holds each sample's failure; "
            "fix the cause and re-run the same command.",
            code=1,
        )
    except StageFailureError as error:
        warn_corrupt(console(stderr=True), error.report)
        show_metrics(error.report, config.out)
        show_failures(console(stderr=True), config.out)
        fail(
            f"{error} — the metrics above rest on the samples that were scored. Fix the cause and re-run "
            "the same command: the failed samples are retried, the rest are kept.",
            code=1,
        )
    warn_corrupt(console(stderr=True), outcome.report)
    show_outcome(outcome, config.out)


def run_config(flags: RunFlags) -> RunConfig:
    """The flags as the orchestrator's config; ``--*-model`` folds into the stage's options."""
    from halluscope.runs.config import RunConfig

    if flags.model and len(flags.model) > 1:
        fail(
            f"run scores one model at a time, got --model {' --model '.join(flags.model)}; run once per model, "
            "each with its own --out, then compare them with `halluscope report`"
        )
    return RunConfig(
        benchmark=flags.benchmark, out=flags.out, data=flags.data,
        bench_options=parse_options(flags.bench_opt, "--bench-opt"), limit=flags.limit,
        responses=flags.responses, responses_key=flags.responses_key, only_answered=flags.only_answered,
        strict=flags.strict, model=flags.model[0] if flags.model else None,
        model_options=parse_options(flags.model_opt, "--model-opt"), max_tokens=flags.max_tokens,
        concurrency=flags.concurrency,
        extractor=stage_choice("extractor", flags.extractor, flags.extractor_model, flags.extractor_opt),
        judge=stage_choice("judge", flags.judge, flags.judge_model, flags.judge_opt),
        base_url=join_urls(flags.base_url), cache=flags.cache, use_cache=not flags.no_cache,
        overwrite=flags.overwrite, chunk_size=flags.chunk_size, max_failure_share=flags.max_failure_share,
        ci=flags.ci, progress=not flags.quiet, surface="cli",
    )  # fmt: skip


def stage_choice(stage: str, name: str | None, model: str | None, opts: list[str] | None) -> StageChoice:
    from halluscope.runs.config import StageChoice

    options = parse_options(opts, f"--{stage}-opt")
    if model:
        options["model"] = model
    given = [(stage, name), (f"{stage}_model", model), (f"{stage}_options", opts)]
    return StageChoice(name=name, options=options, given=tuple(option for option, value in given if value))


class CliHooks:
    """The run's notices and problems printed on stderr; the local LLM stopped on SIGTERM too."""

    def notice(self, message: str) -> None:
        from rich.markup import escape

        from halluscope.redact import mask_text

        console(stderr=True).print(f"[yellow]{escape(mask_text(message))}[/yellow]")

    def info(self, message: str) -> None:
        from halluscope.redact import mask_text

        console(stderr=True).print(mask_text(message), markup=False, highlight=False)

    def problems(self, path: Path, problems: list[str]) -> None:
        from rich.markup import escape

        err = console(stderr=True)
        err.print(f"[yellow]{len(problems)} problem(s) in {escape(str(path))}:[/yellow]")
        for problem in problems[:20]:
            err.print(f"  [yellow]•[/yellow] {escape(problem)}")
        if len(problems) > 20:
            err.print(f"  … and {len(problems) - 20} more")

    def old_spelling(self, note: str) -> None:
        console(stderr=True).print(f"note: {note}", style="yellow", markup=False, highlight=False)

    def local_llm(self) -> contextlib.AbstractContextManager[LocalLLM]:
        from halluscope.cli.local_llm import local_llm

        return local_llm()


def show_metrics(report: Any, out: Path) -> None:
    """What the run chose that changes a figure (a line each), the benchmark's headline view (the table its
    users know), then every figure of the run's own reading with its interval, and the judge's error."""
    from halluscope.report.choices import run_choices
    from halluscope.report.groups_view import folded_readings, group_table
    from halluscope.report.headline import Figures, headline_rows, headline_table, view_for
    from halluscope.report.table import judge_error_lines, judge_label, metrics_table
    from halluscope.runs.store import read_spec

    out_console = console()
    try:
        spec = read_spec(out)
    except Exception:  # a run stopped before its spec was written: nothing to say about its choices
        spec = {}
    for line in run_choices(spec, report.counts, judge_label(spec.get("judge"), report.judge_error)):
        out_console.print(line, markup=False, highlight=False)
    view = view_for(report.benchmark)
    filled = headline_rows(view, Figures.of(report)) if view is not None else None
    if filled is not None:
        out_console.print(headline_table(filled))
    folded = folded_readings(list(report.metrics))
    shown = {k: v for k, v in report.metrics.items() if k not in folded}
    intervals = dict(report.intervals)
    if report.details.get("headline") in intervals:  # Tri-HE's headline under this judge leads, as in the report
        from halluscope.report.order import order_metrics

        intervals = {k: intervals[k] for k in order_metrics(intervals, [str(report.details["headline"])])}
    title = f"{report.benchmark} — {out}"
    out_console.print(metrics_table(shown, report.counts, title=title, intervals=intervals))
    if folded:
        out_console.print(
            f"{len(folded)} figures under other readings in metrics.json ({', '.join(folded[:3])}"
            f"{', …' if len(folded) > 3 else ''})",
            markup=False, highlight=False,
        )  # fmt: skip
    if filled is None or filled.view.rows != "groups":
        groups = group_table(
            f"{report.benchmark} by group", report.groups, report.group_intervals, list(report.intervals)
        )
        if groups is not None:
            out_console.print(groups)
    for line in judge_error_lines(report.judge_error):
        out_console.print(line, markup=False, highlight=False)


def show_outcome(outcome: RunOutcome, out: Path) -> None:
    """The metrics table, the samples that failed, what the responses file said of its labels and problems,
    and where the run is."""
    from halluscope.cli.failures_view import show_failures

    out_console = console()
    show_metrics(outcome.report, out)
    show_failures(console(stderr=True), out, outcome.failed)
    imported = outcome.responses_file
    if imported.get("labels"):
        out_console.print(f"labels: {imported['labels']}")
    if imported.get("problems"):
        count = imported["problems"]
        out_console.print(f"{count} problem(s) in the responses file, kept in spec.json (responses_file)")
    out_console.print(f"run directory: {out}")


def warn_corrupt(err_console: Any, report: Any) -> None:
    """Say which lines of the run log could not be read (their samples were redone)."""
    corrupt = report.details.get("corrupt_log_lines") or []
    if not corrupt:
        return
    err_console.print(
        f"[yellow]{len(corrupt)} corrupt line(s) in samples.jsonl could not be read; "
        "their samples were scored again:[/yellow]"
    )
    for entry in corrupt[:10]:
        which = f" (sample {entry['id']})" if entry.get("id") else ""
        err_console.print(f"  [yellow]•[/yellow] line {entry['line']}{which}: {entry['problem']}")
    if len(corrupt) > 10:
        err_console.print(f"  … and {len(corrupt) - 10} more")


def register(app: typer.Typer) -> None:
    app.command("run")(run)
