"""Running a benchmark over a set of responses into a run directory, resumably.

Re-running the same command continues where the last run stopped: records already in ``samples.jsonl``
are kept, unless they failed (missing response, extractor or judge error) or their response text changed,
in which case they are redone. A run with nothing left to do only writes ``metrics.json``, and reads the last
one back when the log, spec, interval level and code it was computed from are unchanged (:mod:`.finished`).

Nothing fails silently (docs/failures.md):

- a line of ``samples.jsonl`` that cannot be read is counted (``counts["corrupt_log_lines"]``, listed in
  ``details``) and its sample redone, never left out of the metrics without a word;
- a stage failure (the model, extractor, judge or any other scoring step failed for a sample) marks the
  record failed, so the next run retries it; :func:`settle_failures` names the stage by one rule for every
  benchmark, and when stage failures exceed ``max_failure_share`` of the samples that reached the stages,
  or hit every one of them, :class:`StageFailureError` is raised after ``metrics.json`` is written, naming
  the stage, the share and the last error;
- a run directory holding another run (another benchmark config, stages, model or responses file) is
  refused in one line naming what differs, unless ``overwrite``;
- a run in which no sample was scored raises :class:`NothingMeasuredError` (after ``metrics.json`` is
  written), with the count of failures by stage, instead of a table of "—" and success;
- a run directory another process is writing is refused (:mod:`halluscope.runs.lock`); one that cannot be
  written (full disk, read-only) raises :class:`~halluscope.runs.lock.RunDirWriteError` naming it.

Records are written batch by batch as they finish, batches sized to take a couple of seconds (up to
``chunk_size``), so an interrupted run (:mod:`halluscope.runs.interrupt`) keeps nearly all finished work;
an interrupted run writes no ``metrics.json``, and a run with work left removes the one of its previous
finish first, so a ``metrics.json`` always describes every record in the log.
"""

from __future__ import annotations

import datetime as dt
import functools
import time
from collections import Counter
from collections.abc import Callable, Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec

from halluscope.gcpause import gc_frozen
from halluscope.jsonio import write_json_atomic
from halluscope.metrics.stats.interval import DEFAULT_LEVEL
from halluscope.redact import mask_data
from halluscope.runs.failures import FailedSamples
from halluscope.runs.finished import FinishedMetrics, finished_key, forget_metrics, remember_metrics
from halluscope.runs.images import name_refused_images
from halluscope.runs.interrupt import run_async
from halluscope.runs.progress import NullProgress, ProgressSink, make_progress
from halluscope.runs.selection import Selection, every_sample
from halluscope.runs.store import (
    METRICS_FILE,
    TABLES_FILE,
    RecordScan,
    RecordWriter,
    holding_run_dir,
    records_as_logged,
    rewrite_records,
    scan_records,
    start_run,
    write_metric_tables,
)
from halluscope.stages import BenchmarkInterface, MetricTable, ScoringContext
from halluscope.types import MetricsReport, Response, SampleRecord
from halluscope.version import __version__

P = ParamSpec("P")

#: The default largest share of samples (that reached the extractor or judge) a stage may fail on before
#: the run counts as failed. A few failures are worth a retry on the next run; more mean a broken stage.
DEFAULT_MAX_FAILURE_SHARE = 0.1


class StageFailureError(RuntimeError):
    """A stage failed on too many samples; ``metrics.json`` was written but rests on too few of them."""

    def __init__(
        self,
        message: str,
        report: MetricsReport,
        stage: str,
        failed: int,
        reached: int,
        failures: FailedSamples | None = None,
    ) -> None:
        super().__init__(message)
        self.report = report
        self.stage = stage
        self.failed = failed
        self.reached = reached
        #: Every failed sample of the run (inputs too), the first few named.
        self.failures = failures or FailedSamples()


class NothingMeasuredError(RuntimeError):
    """No sample of the run was scored, so every metric is empty; ``metrics.json`` was written to inspect."""

    def __init__(self, message: str, report: MetricsReport, failures: Mapping[str, int]) -> None:
        super().__init__(message)
        self.report = report
        #: Failed records by ``failed_stage`` (``input`` for failures in the inputs).
        self.failures = dict(failures)


#: ``failed_stage`` of a record whose failure lies in its inputs (no response, no scene graph, a broken
#: item): no stage ever saw it, so it does not count against any stage.
INPUT_FAILURE = "input"
#: ``failed_stage`` of a record whose model request failed (``--model`` runs): the model is a stage too.
MODEL_STAGE = "model"
#: ``failed_stage`` given by the runner to a failed record that has a response and names no stage: scoring
#: failed somewhere, and the failure counts (a benchmark that does not say which stage failed still trips
#: the check, instead of passing silently).
SCORING_STAGE = "scoring"


def settle_failures(records: list[SampleRecord], model_failures: Mapping[str, str] | None = None) -> None:
    """Give every failed record its ``failed_stage``, one rule for every benchmark.

    A benchmark may name the stage itself (``extractor``, ``judge``) or mark an input problem
    (:data:`INPUT_FAILURE`). Otherwise: no response is an input problem, unless the model was asked and
    failed (``model_failures``, sample id → error), which is a failure of the ``model`` stage; a failure
    with a response is a failure of ``scoring``.
    """
    failed_model = model_failures or {}
    for record in records:
        if record.failure is None:
            record.failed_stage = None
        elif record.response is None and record.id in failed_model:
            record.failed_stage = MODEL_STAGE
            record.failure = f"the model gave no answer: {failed_model[record.id]}"
        elif record.failed_stage is None:
            record.failed_stage = INPUT_FAILURE if record.response is None else SCORING_STAGE


def is_stage_failure(record: SampleRecord) -> bool:
    """Whether the record failed in a stage (model, extractor, judge, scoring), not in its inputs."""
    return record.failure is not None and record.failed_stage not in (None, INPUT_FAILURE)


def check_stage_failures(records: list[SampleRecord], max_share: float) -> tuple[str, int, int, str] | None:
    """The worst failing stage as (stage, failed, reached, last error) when it is over the limit, else None.

    "Reached" counts the samples that got to the stages at all: a sample failed by its inputs (no
    response, no scene graph) is a problem of the inputs, reported as such, not a stage failure.
    """
    reached = [r for r in records if r.failure is None or is_stage_failure(r)]
    if not reached:
        return None
    worst: tuple[str, int, int, str] | None = None
    for stage in dict.fromkeys(r.failed_stage for r in reached if is_stage_failure(r)):
        failed = [r for r in reached if r.failed_stage == stage]
        over = len(failed) == len(reached) or len(failed) > max_share * len(reached)
        if over and (worst is None or len(failed) > worst[1]):
            worst = (str(stage), len(failed), len(reached), str(failed[-1].failure))
    return worst


def check_measured(records: list[SampleRecord], report: MetricsReport) -> str | None:
    """Why the run measured nothing (no sample scored, or no metric with a value), else None."""
    scored = sum(1 for r in records if r.failure is None)
    if scored and any(value is not None for value in report.metrics.values()):
        return None
    if not records:
        return "nothing was measured: the run has no sample to score"
    failures = Counter(str(r.failed_stage or INPUT_FAILURE) for r in records if r.failure is not None)
    by_stage = ", ".join(
        f"{count} failed in their inputs" if stage == INPUT_FAILURE else f"{count} failed in the {stage}"
        for stage, count in failures.most_common()
    )
    last = next((r for r in reversed(records) if r.failure is not None), None)
    if not scored:
        why = f"none of the {len(records)} samples was scored ({by_stage})"
    else:
        why = f"the {scored} scored samples gave no metric a value"
    return f"nothing was measured: {why}" + (f"; last error: {last.failure}" if last else "")


def build_spec(
    benchmark: BenchmarkInterface, selection: Selection, ctx: ScoringContext, spec_extra: Mapping[str, Any] | None
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "halluscope_version": __version__,
        "benchmark": selection.spec(benchmark),
        "extractor": ctx.extractor.identity() if ctx.extractor else None,
        "judge": ctx.judge.identity() if ctx.judge else None,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    spec.update(spec_extra or {})
    masked: dict[str, Any] = mask_data(spec)  # a key in a base URL or a model spec stays off the disk
    return masked


def _is_done(record: SampleRecord, responses: Mapping[str, Response]) -> bool:
    response = responses.get(record.id)
    return record.failure is None and response is not None and record.response == response.response


#: The most samples scored per call of ``BenchmarkInterface.score_many`` (and per write). Batched judges encode
#: each call's strings together, so small chunks cost throughput: on Tri-HE the similarity judge took
#: 1.62x the ideal batched time in chunks of 64 and 1.10x in chunks of 256 (``bench/similarity_speed.py``).
#: A crash loses at most one chunk's local work; LLM calls are cached one by one and are never lost.
DEFAULT_CHUNK_SIZE = 256
#: The first chunk's size; chunks then double while one takes under :data:`CHUNK_TARGET_S` and halve when
#: one takes over four times that, so slow stages (an LLM judge) write their records every few seconds
#: and fast batched ones still reach ``chunk_size``.
FIRST_CHUNK = 8
CHUNK_TARGET_S = 2.0


def next_chunk_size(size: int, took_s: float, largest: int) -> int:
    """The next chunk's size after one of ``size`` samples took ``took_s`` seconds."""
    smallest = min(FIRST_CHUNK, largest)
    if took_s < CHUNK_TARGET_S:
        return min(largest, size * 2)
    if took_s > 4 * CHUNK_TARGET_S:
        return max(smallest, size // 2)
    return size


@dataclass(frozen=True)
class RunSettings:
    """How a run scores and reports, beside what it scores: batch size, whether to start the folder afresh,
    the failure share that fails the run, and the confidence level of the headline intervals."""

    chunk_size: int = DEFAULT_CHUNK_SIZE
    overwrite: bool = False
    max_failure_share: float = DEFAULT_MAX_FAILURE_SHARE
    interval_level: float = DEFAULT_LEVEL

    def __post_init__(self) -> None:
        if not 0.0 <= self.max_failure_share <= 1.0:
            raise ValueError(f"max_failure_share must be between 0 and 1, got {self.max_failure_share}")


@dataclass(frozen=True)
class ScoredRun:
    """What scoring a run gives back: its metrics, and the samples it could not score (from the records the
    runner holds, so that no caller reads ``samples.jsonl`` again to name them)."""

    report: MetricsReport
    failures: FailedSamples


async def score_run_async(
    benchmark: BenchmarkInterface,
    responses: Mapping[str, Response],
    ctx: ScoringContext,
    out_dir: Path,
    *,
    spec_extra: Mapping[str, Any] | None = None,
    settings: RunSettings | None = None,
    progress: ProgressSink | None = None,
    model_failures: Mapping[str, str] | None = None,
    selection: Selection | None = None,
) -> ScoredRun:
    """Score the samples of ``selection`` (every sample of ``benchmark`` when None) into ``out_dir``; see the
    module docstring for resuming.

    The samples it could not score come back on the :class:`ScoredRun` (count and the first few), so the
    caller names them without reading the run log again.

    Each headline metric the benchmark declares gets its confidence interval (at ``settings.interval_level``)
    in ``metrics.json`` (``intervals``), computed from the declarations, never per benchmark.

    Raises :class:`StageFailureError` (after writing ``metrics.json``) when a stage failed on every sample
    that reached it or on more than ``settings.max_failure_share`` of them. ``model_failures`` (sample id →
    error) names the samples whose model request failed (``--model`` runs): they count as failures of the
    ``model`` stage, not as answers missing from a file.
    """
    settings = settings or RunSettings()
    out_dir = Path(out_dir)
    selection = selection if selection is not None else every_sample(benchmark)
    with holding_run_dir(out_dir):
        spec = start_run(out_dir, build_spec(benchmark, selection, ctx, spec_extra), overwrite=settings.overwrite)
        samples = list(selection.samples())
        wanted = {s.id for s in samples}
        scan = scan_records(out_dir)
        kept = [r for r in scan.records if r.id in wanted and _is_done(r, responses)]
        done = {r.id for r in kept}
        pending = [s for s in samples if s.id not in done]
        finished = FinishedMetrics.read(out_dir)
        changed = bool(pending or scan.corrupt or scan.torn or len(kept) < len(scan.records))
        if changed:
            rewrite_records(out_dir, kept)
            # The run changes: its last metrics would describe records that are gone or not yet there.
            forget_metrics(out_dir)
            (out_dir / METRICS_FILE).unlink(missing_ok=True)
            (out_dir / TABLES_FILE).unlink(missing_ok=True)
        # The samples and responses stay alive throughout: the collector need not walk them again and again.
        with gc_frozen():
            written = await _score_pending(
                benchmark, pending, responses, ctx, out_dir, progress or NullProgress(),
                total=len(samples), largest=max(1, settings.chunk_size), model_failures=model_failures,
            )  # fmt: skip
            key = finished_key(out_dir, spec, settings.interval_level)
            # A run that ends with the log, spec and code of its last metrics.json reads it back.
            report = finished.reuse(out_dir, key) if finished is not None else None
            records = (
                scan.records
                if report is not None and not changed
                else records_as_logged(out_dir, kept, written)
            )
            if report is None:
                report = _measure(benchmark, records, ctx, settings.interval_level, out_dir, scan)
                write_json_atomic(out_dir / METRICS_FILE, report.model_dump(mode="json"))
                remember_metrics(out_dir, key)
    failures = FailedSamples.of(records)
    _check_outcome(records, report, settings.max_failure_share, failures)
    return ScoredRun(report, failures)


def _measure(
    benchmark: BenchmarkInterface,
    records: list[SampleRecord],
    ctx: ScoringContext,
    level: float,
    out_dir: Path,
    scan: RecordScan,
) -> MetricsReport:
    """``metrics.json``'s report of ``records``: the benchmark's metrics, the declared intervals (the tables
    they read saved beside it), the judge's error and the run's own counts."""
    # One build of the tables serves the intervals, the saved tables and the judge correction.
    declared = bool(benchmark.metric_declarations())
    tables = benchmark.metric_tables(records) if declared else {}
    if declared:
        # The intervals' bootstrap runs in numpy, which lets go of the interpreter while it draws and gathers,
        # so the benchmark's own metrics are counted meanwhile (a full Reefknot run: a tenth of a second less).
        # Both read the records and tables, and neither writes to them.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="halluscope-intervals") as pool:
            intervals = pool.submit(headline_intervals, benchmark, records, level, out_dir, tables=tables)
            report = benchmark.metrics(records)
            report.intervals, report.group_intervals = intervals.result()
    else:
        report = benchmark.metrics(records)
    report.judge_error = _judge_error(benchmark, records, tables, ctx, level)
    report.counts["corrupt_log_lines"] = len(scan.corrupt)
    if scan.corrupt:
        report.details["corrupt_log_lines"] = [
            {"line": c.number, "id": c.id, "problem": c.problem} for c in scan.corrupt
        ]
    report.counts["stage_failures"] = sum(1 for r in records if is_stage_failure(r))
    return report


def headline_intervals(
    benchmark: BenchmarkInterface,
    records: Sequence[SampleRecord],
    level: float = DEFAULT_LEVEL,
    out_dir: Path | None = None,
    *,
    tables: Mapping[str, MetricTable] | None = None,
) -> tuple[dict[str, dict[str, Any] | None], dict[str, dict[str, dict[str, Any] | None]]]:
    """The interval of each metric the benchmark declares, overall and per group, as ``metrics.json`` holds
    them; with ``out_dir``, the tables they come from are saved there too (``metric_tables.json``). ``tables``:
    the benchmark's tables of these records when the caller already built them."""
    from halluscope.metrics.declared import declared_group_intervals, declared_intervals, declared_value

    declarations = benchmark.metric_declarations()
    if not declarations:
        return {}, {}
    tables = tables if tables is not None else benchmark.metric_tables(records)
    if out_dir is not None:
        write_metric_tables(out_dir, declarations, tables)
    intervals = declared_intervals(declarations, tables, level=level)
    # Each interval keeps the declaration's own point estimate: it must equal the benchmark's figure (the golden
    # test checks it for every benchmark), so the interval bounds the number the user reads.
    overall = {
        d.name: _interval_json(declared_value(d, tables), intervals[d.name]) for d in declarations
    }
    by_group = {
        group: {name: _interval_json(value, interval) for name, (value, interval) in metrics.items()}
        for group, metrics in declared_group_intervals(declarations, tables, level=level).items()
    }
    return overall, by_group


def _judge_error(
    benchmark: BenchmarkInterface,
    records: Sequence[SampleRecord],
    tables: Mapping[str, MetricTable],
    ctx: ScoringContext,
    level: float,
) -> dict[str, Any]:
    from halluscope.runs.judge_error import judge_error_section, reader_section

    declarations = benchmark.metric_declarations()
    section: dict[str, Any] = {}
    if any(d.judged for d in declarations) and ctx.judge is not None:
        section = judge_error_section(ctx.judge, declarations, tables, level)
    reader = benchmark.answer_reader()
    if reader is not None and records:
        section["reader"] = reader_section(reader)
    return section


def _interval_json(estimate: float | None, interval: Any) -> dict[str, Any] | None:
    return None if interval is None else {"estimate": estimate, **interval.to_json(digits=6)}


async def _score_pending(
    benchmark: BenchmarkInterface,
    pending: list[Any],
    responses: Mapping[str, Response],
    ctx: ScoringContext,
    out_dir: Path,
    progress: ProgressSink,
    *,
    total: int,
    largest: int,
    model_failures: Mapping[str, str] | None,
) -> list[SampleRecord]:
    """Score ``pending`` chunk by chunk, each chunk's records written as soon as it is scored; returns them."""
    progress.start(f"scoring {benchmark.name}", total=total, done=total - len(pending))
    writer = RecordWriter(out_dir)
    written: list[SampleRecord] = []
    try:
        position, size = 0, min(FIRST_CHUNK, largest)
        while position < len(pending):
            chunk = pending[position : position + size]
            started = time.monotonic()
            records = await benchmark.score_many([(s, responses.get(s.id)) for s in chunk], ctx)
            name_refused_images(records, chunk)
            settle_failures(records, model_failures)
            writer.write(records)
            written.extend(records)
            progress.advance(len(chunk), failed=sum(1 for record in records if record.failure is not None))
            position += len(chunk)
            size = next_chunk_size(size, time.monotonic() - started, largest)
    finally:
        writer.close()
    return written


def _check_outcome(
    records: list[SampleRecord],
    report: MetricsReport,
    max_failure_share: float,
    failed_samples: FailedSamples,
) -> None:
    """Raise when a stage failed on too many samples, or when nothing at all was measured."""
    over = check_stage_failures(records, max_failure_share)
    if over is not None:
        stage, failed, reached, last = over
        raise StageFailureError(
            f"the {stage} failed on {failed} of {reached} samples ({100 * failed / reached:.0f}%, more than "
            f"the allowed {100 * max_failure_share:g}%); last error: {last}",
            report,
            stage,
            failed,
            reached,
            failed_samples,
        )
    nothing = check_measured(records, report)
    if nothing is not None:
        failures = Counter(str(r.failed_stage or INPUT_FAILURE) for r in records if r.failure is not None)
        raise NothingMeasuredError(nothing, report, failures)


def score_run(
    benchmark: BenchmarkInterface,
    responses: Mapping[str, Response],
    ctx: ScoringContext,
    out_dir: Path,
    *,
    spec_extra: Mapping[str, Any] | None = None,
    settings: RunSettings | None = None,
    show_progress: bool = True,
    model_failures: Mapping[str, str] | None = None,
    selection: Selection | None = None,
) -> ScoredRun:
    """Synchronous entry point around :func:`score_run_async`, with a progress bar if asked.

    Ctrl-C or SIGTERM stop it promptly with :class:`~halluscope.runs.interrupt.RunInterrupted`.
    """
    progress = make_progress(show_progress)
    try:
        return run_async(
            score_run_async(
                benchmark, responses, ctx, out_dir, spec_extra=spec_extra, settings=settings, progress=progress,
                model_failures=model_failures, selection=selection,
            )
        )
    finally:
        progress.close()


def _metrics_of(scoring: Callable[P, ScoredRun]) -> Callable[P, MetricsReport]:
    """``scoring`` giving back only the metrics, as callers written before :class:`ScoredRun` expect."""

    @functools.wraps(scoring)
    def metrics(*args: P.args, **kwargs: P.kwargs) -> MetricsReport:
        return scoring(*args, **kwargs).report

    return metrics


def _metrics_of_async(
    scoring: Callable[P, Coroutine[Any, Any, ScoredRun]],
) -> Callable[P, Coroutine[Any, Any, MetricsReport]]:
    """:func:`_metrics_of` for a coroutine function."""

    @functools.wraps(scoring)
    async def metrics(*args: P.args, **kwargs: P.kwargs) -> MetricsReport:
        return (await scoring(*args, **kwargs)).report

    return metrics


#: :func:`score_run` giving back its metrics: the samples that failed are in the run's log.
run_benchmark = _metrics_of(score_run)
#: :func:`score_run_async` giving back its metrics: the samples that failed are in the run's log.
run_benchmark_async = _metrics_of_async(score_run_async)
