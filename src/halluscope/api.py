"""The Python API: :func:`evaluate` runs what ``halluscope run`` runs; :func:`load_run` reads a finished run.

Both return an :class:`EvaluationResult`. :func:`evaluate` turns its arguments into the same
:class:`~halluscope.runs.config.RunConfig` that ``halluscope run`` builds from its flags, and hands it to
the same orchestrator (:func:`halluscope.runs.evaluation.execute`), so the CLI and the API cannot drift
apart: for the same inputs they write the same ``metrics.json``.

Notebooks run an event loop already, and ``asyncio.run`` refuses to start inside one; :func:`evaluate`
then runs the whole evaluation in a worker thread with its own loop, so the same call works in a script
and in Jupyter.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from halluscope.runs.config import EvaluationError, RunConfig, StageChoice
from halluscope.types import MetricsReport, Response, SampleRecord

if TYPE_CHECKING:
    from halluscope.report.compare import RunComparison

__all__ = ["EvaluationError", "EvaluationResult", "evaluate", "load_run"]


@dataclass(frozen=True)
class EvaluationResult:
    """A finished run: its metrics, its per-sample records and where it lives on disk."""

    run_dir: Path
    report: MetricsReport

    @property
    def benchmark(self) -> str:
        return self.report.benchmark

    @property
    def metrics(self) -> dict[str, float | None]:
        return self.report.metrics

    @property
    def groups(self) -> dict[str, dict[str, float | None]]:
        return self.report.groups

    @property
    def intervals(self) -> dict[str, dict[str, Any] | None]:
        """Each declared headline metric's confidence interval (``low``, ``high``, ``level``, ``method``,
        ``unit``, ``n``, ``units``, ...), as in ``metrics.json``."""
        return self.report.intervals

    @property
    def counts(self) -> dict[str, int]:
        return self.report.counts

    @property
    def spec(self) -> dict[str, Any]:
        from halluscope.runs.store import read_spec

        return read_spec(self.run_dir)

    @property
    def records(self) -> list[SampleRecord]:
        """Every scored sample, read from ``samples.jsonl`` (read afresh on each access)."""
        from halluscope.runs.store import read_records

        return read_records(self.run_dir)

    def to_pandas(self) -> Any:
        """One row per sample: id, response, failure, claim counts by verdict, and the benchmark's fields.

        Needs pandas (``pip install pandas``); it is imported only here.
        """
        try:
            import pandas as pd
        except ImportError as error:  # pragma: no cover - depends on the environment
            raise ImportError("EvaluationResult.to_pandas() needs pandas: pip install pandas") from error
        rows = []
        for record in self.records:
            verdicts = [c.verdict.value for c in record.claims]
            row: dict[str, Any] = {
                "id": record.id,
                "prompt": record.prompt,
                "response": record.response,
                "failure": record.failure,
                "image_id": record.image_id,
                "claims": len(record.claims),
                "supported": verdicts.count("supported"),
                "hallucinated": verdicts.count("hallucinated"),
                "unjudged": verdicts.count("unjudged"),
            }
            for key, value in record.metadata.items():
                row.setdefault(key, value)
            rows.append(row)
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in list(self.metrics.items())[:4]
        )
        return f"EvaluationResult({self.benchmark}, {shown}, run_dir={str(self.run_dir)!r})"


def load_run(run_dir: str | Path) -> EvaluationResult:
    """The result of a finished run directory (one with ``metrics.json``), as :func:`evaluate` returns it."""
    from halluscope.runs.store import RunDirError, read_metrics, read_spec

    path = Path(run_dir)
    try:
        read_spec(path)
        report = read_metrics(path)
    except RunDirError as error:
        raise EvaluationError(str(error)) from error
    return EvaluationResult(run_dir=path, report=report)


def compare(baseline: str | Path, *candidates: str | Path, level: float = 0.95) -> list[RunComparison]:
    """Each candidate run against ``baseline``, item by item on the items both scored: per declared headline
    metric the difference, its paired interval at ``level``, a p-value and its Holm adjustment across every
    metric and candidate (as ``halluscope report BASELINE CANDIDATE``). Raises :class:`EvaluationError` for
    runs of different benchmarks, with no item in common, or without saved metric tables."""
    from halluscope.report.compare import ComparisonError, compare_runs

    if not candidates:
        raise EvaluationError("compare() needs a baseline run and at least one candidate run")
    try:
        return compare_runs(Path(baseline), [Path(c) for c in candidates], level=level)
    except ComparisonError as error:
        raise EvaluationError(str(error)) from error


def rejudge(
    run: str | Path,
    *,
    out: str | Path,
    judge: str | None = None,
    judge_options: Mapping[str, Any] | None = None,
    extractor: str | None = None,
    extractor_options: Mapping[str, Any] | None = None,
    **settings: Any,
) -> EvaluationResult:
    """Score the answers of the finished run ``run`` with another judge (and, if given, extractor) into the new
    run folder ``out``, never asking the model again (as ``halluscope rejudge``). ``settings`` are ``cache``,
    ``overwrite``, ``progress``, ``chunk_size``, ``base_url`` and ``ci`` as in :func:`evaluate`. Compare the two
    runs with :func:`compare`: the difference is the judge's alone."""
    from halluscope.runs.rejudge import rejudge_config

    allowed = {"cache", "overwrite", "progress", "chunk_size", "base_url", "ci"}
    unknown = sorted(set(settings) - allowed)
    if unknown:
        raise TypeError(f"rejudge() got unknown option(s) {unknown}; known: {sorted(allowed)}")
    cache = settings.pop("cache", None)
    extras = {**settings, "surface": "api", "use_cache": cache is not False}
    if isinstance(cache, str | Path):
        extras["cache"] = Path(cache)
    judge_choice = StageChoice(name=judge, options=dict(judge_options or {}), given=("judge",) if judge else ())
    extractor_choice = (
        StageChoice(name=extractor, options=dict(extractor_options or {}), given=("extractor",))
        if extractor or extractor_options
        else None
    )
    config = rejudge_config(Path(run), out=Path(out), judge=judge_choice, extractor=extractor_choice, settings=extras)
    return _execute(config, None)


# --- evaluate -------------------------------------------------------------------------------------------

#: Keyword options of :func:`evaluate`, besides the named parameters: the fields of :class:`RunConfig` a user
#: sets, each the mirror of a ``halluscope run`` flag (spelled by :mod:`halluscope.spelling`), so a new run
#: option is taken here without a second table. Left out: the named parameters, the stages (given as a
#: name and ``*_options``), and what the run sets itself (``cache=False`` is ``use_cache``; the surface; the
#: re-judged run, which ``rejudge`` sets).
_OPTIONS: frozenset[str] = (
    frozenset(RunConfig.model_fields)
    - {"benchmark", "data", "responses", "model", "out", "extractor", "judge"}
    - {"use_cache", "surface", "rejudged_from"}
) | {"extractor_options", "judge_options"}

#: What :func:`evaluate` takes as answers: a file, or the answers themselves.
Answers = str | Path | Iterable[Response | Mapping[str, Any]]


def evaluate(
    benchmark: str,
    *,
    data: str | Path | None = None,
    responses: Answers | None = None,
    model: str | None = None,
    extractor: str | None = None,
    judge: str | None = None,
    out: str | Path | None = None,
    **options: Any,
) -> EvaluationResult:
    """Score answers on a benchmark, as ``halluscope run`` does, and return the result.

    Give ``responses`` (a file in any layout ``--responses`` takes, or a list of dicts / :class:`Response`
    objects) or ``model`` (a model spec; its answers are collected first). ``out`` is the run directory
    (resumable, as with the CLI); without it a fresh temporary directory is used. Other keyword options
    mirror the CLI's flags: ``bench_options``, ``extractor_options``, ``judge_options`` and
    ``model_options`` are the ``--*-opt`` mappings, and ``limit``, ``base_url``, ``responses_key``,
    ``only_answered``, ``strict``, ``overwrite``, ``cache``, ``chunk_size``, ``max_tokens``,
    ``concurrency`` and ``progress`` are the flags of the same names.
    """
    import asyncio  # here, not at the top: `import halluscope` (and `halluscope --help`) stays light
    import threading

    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise TypeError(f"evaluate() got unknown option(s) {unknown}; known: {sorted(_OPTIONS)}")
    named = {"extractor": extractor, "judge": judge, "data": data, "out": out, "model": model}
    config, inline = run_config(benchmark, responses, named, options)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _execute(config, inline)
    # A running loop (Jupyter): do the work on a thread of its own, where asyncio.run may start a loop.
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["result"] = _execute(config, inline)
        except BaseException as error:  # re-raised in the caller's thread
            outcome["error"] = error

    thread = threading.Thread(target=work, name="halluscope-evaluate", daemon=True)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    result: EvaluationResult = outcome["result"]
    return result


def run_config(
    benchmark: str, responses: Answers | None, named: Mapping[str, Any], options: Mapping[str, Any]
) -> tuple[RunConfig, list[Response | Mapping[str, Any]] | None]:
    """:func:`evaluate`'s arguments as a :class:`RunConfig`, with the answers given in memory (if any)."""
    import tempfile

    from pydantic import ValidationError

    out = Path(named["out"]) if named["out"] is not None else Path(tempfile.mkdtemp(prefix="halluscope-run-"))
    inline = None if responses is None or isinstance(responses, str | Path) else list(responses)
    path = out / "responses.jsonl" if inline is not None else None
    if isinstance(responses, str | Path):
        path = Path(responses)
    cache = options.get("cache")
    settings = {k: v for k, v in options.items() if k not in ("cache", "extractor_options", "judge_options")}
    for key in ("bench_options", "model_options"):
        settings[key] = dict(settings.get(key) or {})
    stages: dict[str, Any] = {
        stage: StageChoice(
            name=named[stage],
            options=dict(options.get(f"{stage}_options") or {}),
            given=tuple(
                k
                for k, v in ((stage, named[stage]), (f"{stage}_options", options.get(f"{stage}_options")))
                if v
            ),
        )
        for stage in ("extractor", "judge")
    }
    try:
        config = RunConfig(
            benchmark=benchmark, out=out, data=named["data"], responses=path, model=named["model"],
            cache=Path(cache) if isinstance(cache, str | Path) else None, use_cache=cache is not False,
            surface="api", **stages, **settings,
        )  # fmt: skip
    except ValidationError as error:
        raise EvaluationError(f"evaluate(): {error}") from error
    return config, inline


def _execute(config: RunConfig, inline: list[Response | Mapping[str, Any]] | None) -> EvaluationResult:
    import warnings

    from halluscope.runs.evaluation import execute
    from halluscope.runs.runner import NothingMeasuredError, StageFailureError

    try:
        outcome = execute(config, inline_responses=inline)
    except StageFailureError as error:
        raise EvaluationError(
            f"{error} (metrics.json in {config.out} rests on the samples that were scored)"
        ) from error
    except NothingMeasuredError as error:  # a run with no figure is a failed run, not an empty result
        raise EvaluationError(f"{error} (metrics.json in {config.out} is kept to inspect)") from error
    if outcome.responses_file.get("items_from_file"):
        labels = outcome.responses_file.get("labels", "the file's own")
        warnings.warn(f"{config.responses}: labels are {labels}", stacklevel=3)
    return EvaluationResult(run_dir=outcome.run_dir, report=outcome.report)
