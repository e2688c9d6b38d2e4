"""Running a benchmark over a set of responses into a run directory, resumably.

Re-running the same command continues where the last run stopped: records already in ``samples.jsonl``
are kept, unless they failed (missing response, extractor or judge error) or their response text changed,
in which case they are redone. A run with nothing left to do only recomputes ``metrics.json``.

Nothing fails silently (docs/failures.md):

- a line of ``samples.jsonl`` that cannot be read is counted (``counts["corrupt_log_lines"]``, listed in
  ``details``) and its sample redone, never left out of the metrics without a word;
- a stage failure (the extractor or judge gave a :class:`~halluscope.stages.Failure` for a sample) marks
  the record failed, so the next run retries it; when stage failures exceed ``max_failure_share`` of the
  samples that reached the stages, or hit every one of them, :class:`StageFailureError` is raised after
  ``metrics.json`` is written, naming the stage, the share and the last error.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from halluscope import __version__
from halluscope.gcpause import gc_frozen
from halluscope.jsonio import write_json_atomic
from halluscope.runs.progress import NullProgress, ProgressSink, make_progress
from halluscope.runs.store import (
    METRICS_FILE,
    SPEC_FILE,
    RecordWriter,
    RunDirError,
    read_records,
    read_spec,
    rewrite_records,
    scan_records,
)
from halluscope.stages import Benchmark, ScoringContext
from halluscope.types import MetricsReport, Response, SampleRecord

#: The default largest share of samples (that reached the extractor or judge) a stage may fail on before
#: the run counts as failed. A few failures are worth a retry on the next run; more mean a broken stage.
DEFAULT_MAX_FAILURE_SHARE = 0.1


class StageFailureError(RuntimeError):
    """A stage failed on too many samples; ``metrics.json`` was written but rests on too few of them."""

    def __init__(self, message: str, report: MetricsReport, stage: str, failed: int, reached: int) -> None:
        super().__init__(message)
        self.report = report
        self.stage = stage
        self.failed = failed
        self.reached = reached


def check_stage_failures(records: list[SampleRecord], max_share: float) -> tuple[str, int, int, str] | None:
    """The worst failing stage as (stage, failed, reached, last error) when it is over the limit, else None.

    "Reached" counts the samples that got to the stages at all: a sample failed by missing data (no
    response, no scene graph) is a problem of the inputs, reported as such, not a stage failure.
    """
    reached = [r for r in records if r.failure is None or r.failed_stage is not None]
    if not reached:
        return None
    worst: tuple[str, int, int, str] | None = None
    for stage in dict.fromkeys(r.failed_stage for r in reached if r.failed_stage is not None):
        failed = [r for r in reached if r.failed_stage == stage]
        over = len(failed) == len(reached) or len(failed) > max_share * len(reached)
        if over and (worst is None or len(failed) > worst[1]):
            worst = (stage, len(failed), len(reached), str(failed[-1].failure))
    return worst


#: Spec fields that must match for a run directory to be resumed rather than refused.
IDENTITY_FIELDS = ("benchmark", "extractor", "judge", "model")


def build_spec(
    benchmark: Benchmark, ctx: ScoringContext, spec_extra: Mapping[str, Any] | None
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "halluscope_version": __version__,
        "benchmark": benchmark.spec(),
        "extractor": ctx.extractor.identity() if ctx.extractor else None,
        "judge": ctx.judge.identity() if ctx.judge else None,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    spec.update(spec_extra or {})
    return spec


#: Benchmark spec fields that count what is on disk (images found) rather than say what was asked for: a
#: photo added since the last run, or a run made before they were recorded, does not make it another run.
COUNTED_FIELDS = ("images_found", "images_needed", "text_only_samples")


def _identity(spec: dict[str, Any], key: str) -> Any:
    value = spec.get(key)
    if key == "benchmark" and isinstance(value, dict):
        return {k: v for k, v in value.items() if k not in COUNTED_FIELDS}
    return value


def _check_resumable(out_dir: Path, spec: dict[str, Any]) -> None:
    previous = read_spec(out_dir)
    for key in IDENTITY_FIELDS:
        if _identity(previous, key) != _identity(spec, key):
            raise RunDirError(
                f"{out_dir} holds a run with a different {key} ({previous.get(key)!r} there, "
                f"{spec.get(key)!r} now); choose another --out, or pass --overwrite to start it afresh"
            )


def _is_done(record: SampleRecord, responses: Mapping[str, Response]) -> bool:
    response = responses.get(record.id)
    return record.failure is None and response is not None and record.response == response.response


#: Samples scored per call of ``Benchmark.score_many`` (and per durable write). Batched judges encode
#: each call's strings together, so small chunks cost throughput: on Tri-HE the similarity judge took
#: 1.62x the ideal batched time in chunks of 64 and 1.10x in chunks of 256 (``bench/similarity_speed.py``).
#: A crash loses at most one chunk's local work; LLM calls are cached one by one and are never lost.
DEFAULT_CHUNK_SIZE = 256


async def run_benchmark_async(
    benchmark: Benchmark,
    responses: Mapping[str, Response],
    ctx: ScoringContext,
    out_dir: Path,
    *,
    spec_extra: Mapping[str, Any] | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    progress: ProgressSink | None = None,
    overwrite: bool = False,
    max_failure_share: float = DEFAULT_MAX_FAILURE_SHARE,
) -> MetricsReport:
    """Score every sample of ``benchmark`` into ``out_dir``; see the module docstring for resuming.

    Raises :class:`StageFailureError` (after writing ``metrics.json``) when a stage failed on every sample
    that reached it or on more than ``max_failure_share`` of them.
    """
    if not 0.0 <= max_failure_share <= 1.0:
        raise ValueError(f"max_failure_share must be between 0 and 1, got {max_failure_share}")
    progress = progress or NullProgress()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    spec = build_spec(benchmark, ctx, spec_extra)
    if overwrite:
        for name in (SPEC_FILE, "samples.jsonl", METRICS_FILE):
            (out_dir / name).unlink(missing_ok=True)
    if (out_dir / SPEC_FILE).exists():
        _check_resumable(out_dir, spec)
        spec["created"] = read_spec(out_dir).get("created", spec["created"])
    write_json_atomic(out_dir / SPEC_FILE, spec)

    samples = list(benchmark.samples())
    wanted = {s.id for s in samples}
    scan = scan_records(out_dir)
    kept = [r for r in scan.records if r.id in wanted and _is_done(r, responses)]
    rewrite_records(out_dir, kept)
    done = {r.id for r in kept}
    pending = [s for s in samples if s.id not in done]

    progress.start(f"scoring {benchmark.name}", total=len(samples), done=len(done))
    # The samples and responses stay alive throughout: the collector need not walk them again and again.
    with gc_frozen():
        writer = RecordWriter(out_dir)
        try:
            for start in range(0, len(pending), max(1, chunk_size)):
                chunk = pending[start : start + chunk_size]
                records = await benchmark.score_many([(s, responses.get(s.id)) for s in chunk], ctx)
                writer.write(records)
                progress.advance(len(chunk))
        finally:
            writer.close()

        records = read_records(out_dir)
        report = benchmark.metrics(records)
    report.counts["corrupt_log_lines"] = len(scan.corrupt)
    if scan.corrupt:
        report.details["corrupt_log_lines"] = [
            {"line": c.number, "id": c.id, "problem": c.problem} for c in scan.corrupt
        ]
    report.counts["stage_failures"] = sum(1 for r in records if r.failed_stage is not None)
    write_json_atomic(out_dir / METRICS_FILE, report.model_dump(mode="json"))
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
        )
    return report


def run_benchmark(
    benchmark: Benchmark,
    responses: Mapping[str, Response],
    ctx: ScoringContext,
    out_dir: Path,
    *,
    spec_extra: Mapping[str, Any] | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    show_progress: bool = True,
    overwrite: bool = False,
    max_failure_share: float = DEFAULT_MAX_FAILURE_SHARE,
) -> MetricsReport:
    """Synchronous entry point around :func:`run_benchmark_async`, with a progress bar if asked."""
    progress = make_progress(show_progress)
    try:
        return asyncio.run(
            run_benchmark_async(
                benchmark,
                responses,
                ctx,
                out_dir,
                spec_extra=spec_extra,
                chunk_size=chunk_size,
                progress=progress,
                overwrite=overwrite,
                max_failure_share=max_failure_share,
            )
        )
    finally:
        progress.close()
