"""The Python API: :func:`evaluate` runs what ``halluscope run`` runs; :func:`load_run` reads a finished run.

Both return an :class:`EvaluationResult`. The set-up steps (benchmark, stages, answers) live here as plain
functions that raise :class:`EvaluationError`, and ``halluscope run`` calls the same functions, so the
CLI and the API cannot drift apart: for the same inputs they write the same ``metrics.json``.

Notebooks run an event loop already, and ``asyncio.run`` refuses to start inside one; :func:`evaluate`
then runs the whole evaluation in a worker thread with its own loop, so the same call works in a script
and in Jupyter.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from halluscope.types import MetricsReport, Response, SampleRecord

if TYPE_CHECKING:
    from halluscope.cache import Cache
    from halluscope.llm.local import LocalLLM
    from halluscope.responses import ResponsesFile
    from halluscope.stages import Benchmark

__all__ = ["EvaluationError", "EvaluationResult", "evaluate", "load_run"]


class EvaluationError(ValueError):
    """The evaluation could not be set up (unknown component, bad option, unreadable responses, ...)."""


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


# --- the set-up steps shared with ``halluscope run`` -------------------------------------------------


def create_benchmark(name: str, data: Path | None, options: Mapping[str, Any]) -> Benchmark:
    from halluscope.benchmarks import BENCHMARKS
    from halluscope.registry import UnknownComponentError

    try:
        bench: Benchmark = BENCHMARKS.create(name, data=data, **dict(options))
    except (UnknownComponentError, ValueError, OSError, TypeError) as error:
        raise EvaluationError(str(error)) from error
    return bench


def known_sample_ids(name: str, data: Path | None, options: Mapping[str, Any], bench: Benchmark) -> set[str]:
    """Every id of the benchmark: answers to samples outside a ``limit`` selection are not "unknown"."""
    if "limit" not in options:
        return {s.id for s in bench.samples()}
    unlimited = {k: v for k, v in options.items() if k != "limit"}
    return {s.id for s in create_benchmark(name, data, unlimited).samples()}


#: The extractors and judges that call an OpenAI-compatible endpoint: those ``--base-url`` (``base_url=``) is for.
ENDPOINT_STAGES = ("llm", "hqh-llm", "vlm", "mmhal-llm")


def create_stage(
    registry: Any,
    kind: str,
    name: str | None,
    default: str | None,
    options: Mapping[str, Any],
    *,
    cache: Cache,
    base_url: str | None = None,
    local: LocalLLM | None = None,
) -> Any:
    """The extractor or judge ``name`` (else the benchmark's ``default``), or None when neither is set.

    A ``model`` option ``local`` points an LLM stage at ``local``'s packaged server (started now if it is
    not running yet); ``base_url``, the endpoint of every LLM stage, then goes to the others only.
    """
    from halluscope.llm.local import is_local
    from halluscope.registry import UnknownComponentError

    chosen = name or default
    if chosen is None:
        return None
    opts = dict(options)
    if is_local(opts.get("model")):
        opts = _local_options(registry, kind, chosen, opts, local)
    elif base_url and chosen in ENDPOINT_STAGES:
        opts.setdefault("base_url", base_url)
    try:
        return registry.create(chosen, cache=cache, **opts)
    except (UnknownComponentError, ValueError, TypeError) as error:
        raise EvaluationError(f"{kind} {chosen!r}: {error}") from error


def takes_endpoint(registry: Any, name: str) -> bool:
    """Whether the component ``name`` talks to an LLM endpoint (its factory takes a ``base_url``)."""
    import inspect

    from halluscope.registry import UnknownComponentError

    try:
        return "base_url" in inspect.signature(registry.factory(name)).parameters
    except (UnknownComponentError, ValueError, TypeError):
        return False


def _local_options(
    registry: Any, kind: str, chosen: str, opts: dict[str, Any], local: LocalLLM | None
) -> dict[str, Any]:
    from halluscope.llm.offline import LocalServerError, OfflineModelError

    if not takes_endpoint(registry, chosen):
        raise EvaluationError(
            f"{kind} {chosen!r} uses no LLM, so model 'local' (the packaged LLM) does not apply to it; "
            f"choose an LLM {kind} (e.g. llm) or name a model it takes"
        )
    if local is None:
        raise EvaluationError(f"{kind} {chosen!r}: model 'local' cannot be started here")
    try:
        return local.stage_options(f"{kind} {chosen!r}", opts)
    except (ValueError, LocalServerError, OfflineModelError) as error:
        raise EvaluationError(str(error)) from error


def local_base_url_conflict(local_stages: Iterable[str], other_llm_stages: Iterable[str]) -> str | None:
    """Why a run-wide ``base_url`` cannot be used, when every LLM stage it would reach says ``local``."""
    local_list, others = list(local_stages), list(other_llm_stages)
    if not local_list or others:
        return None
    which = " and ".join(f"the {stage}" for stage in local_list)
    return (
        f"model 'local' starts the packaged model on a server of its own for {which}, and --base-url names "
        "another endpoint for the same stage; give one of the two (for a server you run yourself, "
        "`halluscope serve` prints a --base-url and a model name to use instead of 'local')"
    )


def read_answers(
    bench: Benchmark, path: Path, *, benchmark_ids: set[str] | None, key: str | None
) -> ResponsesFile:
    """The answers in ``path`` as the benchmark reads them; an :class:`EvaluationError` naming the file when
    it cannot be read (missing, not text, bad JSON) or holds no answer to any selected sample."""
    from halluscope.responses import ResponsesError

    path = Path(path)
    try:
        loaded = bench.read_responses(path, benchmark_ids=benchmark_ids, key=key)
    except UnicodeDecodeError as error:
        raise EvaluationError(
            f"{path}: not a UTF-8 text file (byte {error.start}: {error.reason}); give the answers as JSON or "
            "JSONL text"
        ) from error
    except (ResponsesError, ValueError, OSError) as error:
        message = str(error)
        named = str(path) in message or path.name in message
        raise EvaluationError(message if named else f"{path}: {message}") from error
    # A file that defines its own items (a VLMEvalKit POPE sheet) is measured on those.
    selected = {s.id for s in loaded.items} if loaded.items else {s.id for s in bench.samples()}
    if not any(sample_id in selected for sample_id in loaded.responses):
        if not loaded.responses:
            why = "holds no answer" if not loaded.problems else f"holds no usable answer ({loaded.problems[0]})"
        else:
            example = next(iter(loaded.responses))
            why = (
                f"answers none of the {len(selected)} selected {bench.name} samples ({len(loaded.responses)} "
                f"answer(s) for other ids, e.g. {example!r})"
            )
        raise EvaluationError(f"{path} {why}; nothing would be measured")
    return loaded


def write_responses(responses: Iterable[Response | Mapping[str, Any]], path: Path) -> Path:
    """In-memory answers → a halluscope JSONL file, read back through the same reader as ``--responses``."""
    from halluscope.jsonio import write_jsonl_atomic

    rows: list[dict[str, Any]] = []
    for index, item in enumerate(responses):
        if isinstance(item, Response):
            rows.append(item.model_dump(mode="json", exclude_none=True))
        elif isinstance(item, Mapping):
            rows.append(dict(item))
        else:
            raise EvaluationError(
                f"responses[{index}]: expected a dict or a halluscope.Response, got {type(item).__name__}"
            )
    path.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl_atomic(path, rows)
    return path


def _move_judge_aliases(
    benchmark: str, b_options: dict[str, Any], judge: str | None, judge_options: Mapping[str, Any] | None
) -> tuple[dict[str, Any], str | None, Mapping[str, Any] | None]:
    """A judge given the old way, as a benchmark option, moved into the judge slot with a FutureWarning."""
    import warnings

    from halluscope.benchmarks.judge_aliases import JudgeAliasError, move_judge_aliases

    try:
        moved = move_judge_aliases(benchmark, b_options, bool(judge or judge_options))
    except JudgeAliasError as error:
        message = str(error).replace("--judge/--judge-model/--judge-opt", "judge=/judge_options=")
        raise EvaluationError(message) from error
    if moved is None:
        return b_options, judge, judge_options
    warnings.warn(moved.note, FutureWarning, stacklevel=4)
    return moved.bench_options, moved.judge, moved.judge_options


def _check_out(out_dir: Path, fields: Mapping[str, Any], overwrite: bool) -> None:
    """Refuse, before any answer is collected or written, an ``out`` that holds another run."""
    from halluscope.runs.runner import check_run_dir
    from halluscope.runs.store import RunDirError

    if overwrite:
        return
    try:
        check_run_dir(out_dir, fields, tuple(fields))
    except RunDirError as error:
        raise EvaluationError(str(error).replace("--out", "out=").replace("--overwrite", "overwrite=True")) from error


# --- evaluate -------------------------------------------------------------------------------------------

#: Keyword options of :func:`evaluate`, besides the named parameters; each mirrors a ``halluscope run`` flag.
_OPTIONS = {
    "bench_options": "--bench-opt key=value, as a mapping",
    "extractor_options": "--extractor-opt (``model`` here is --extractor-model)",
    "judge_options": "--judge-opt (``model`` here is --judge-model)",
    "model_options": "--model-opt",
    "limit": "--limit",
    "base_url": "--base-url",
    "responses_key": "--responses-key",
    "only_answered": "--only-answered",
    "strict": "--strict",
    "overwrite": "--overwrite",
    "cache": "--cache (a path), or False for --no-cache",
    "chunk_size": "--chunk-size",
    "max_failure_share": "--max-failure-share",
    "max_tokens": "--max-tokens",
    "concurrency": "--concurrency",
    "progress": "show progress bars (default False)",
}


def evaluate(
    benchmark: str,
    *,
    data: str | Path | None = None,
    responses: str | Path | Iterable[Response | Mapping[str, Any]] | None = None,
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
    kwargs = {
        "benchmark": benchmark,
        "data": data,
        "responses": responses,
        "model": model,
        "extractor": extractor,
        "judge": judge,
        "out": out,
        **options,
    }
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _evaluate(**kwargs)
    # A running loop (Jupyter): do the work on a thread of its own, where asyncio.run may start a loop.
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["result"] = _evaluate(**kwargs)
        except BaseException as error:  # re-raised in the caller's thread
            outcome["error"] = error

    thread = threading.Thread(target=work, name="halluscope-evaluate", daemon=True)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    result: EvaluationResult = outcome["result"]
    return result


def _evaluate(
    benchmark: str,
    data: str | Path | None,
    responses: str | Path | Iterable[Response | Mapping[str, Any]] | None,
    model: str | None,
    extractor: str | None,
    judge: str | None,
    out: str | Path | None,
    bench_options: Mapping[str, Any] | None = None,
    extractor_options: Mapping[str, Any] | None = None,
    judge_options: Mapping[str, Any] | None = None,
    model_options: Mapping[str, Any] | None = None,
    limit: int | None = None,
    base_url: str | None = None,
    responses_key: str | None = None,
    only_answered: bool = False,
    strict: bool = False,
    overwrite: bool = False,
    cache: str | Path | bool | None = None,
    chunk_size: int = 256,
    max_failure_share: float = 0.1,
    max_tokens: int = 512,
    concurrency: int = 4,
    progress: bool = False,
) -> EvaluationResult:
    import asyncio
    import tempfile
    import warnings

    from halluscope.cache import Cache
    from halluscope.claims import EXTRACTORS
    from halluscope.judges import judge_registry
    from halluscope.runs.runner import StageFailureError, discard_run, run_benchmark
    from halluscope.runs.store import RunDirError
    from halluscope.stages import ScoringContext

    if (responses is None) == (model is None):
        raise EvaluationError("give exactly one of responses= (answers you have) or model= (collect them now)")
    if only_answered and responses is None:
        raise EvaluationError("only_answered goes with responses=")
    out_dir = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="halluscope-run-"))
    data_path = Path(data) if data is not None else None

    b_options = dict(bench_options or {})
    if limit is not None:
        b_options["limit"] = limit
    b_options, judge, judge_options = _move_judge_aliases(benchmark, b_options, judge, judge_options)
    bench = create_benchmark(benchmark, data_path, b_options)
    if cache is False:
        store = Cache(None)
    elif cache is None or cache is True:
        store = Cache.default()
    else:
        store = Cache(Path(cache))

    spec_extra: dict[str, Any] = {}
    model_failures: dict[str, str] = {}
    if overwrite and model is not None:
        discard_run(out_dir)  # the answers of the run being replaced go too (the cache still has them)
    if responses is not None:
        path = Path(responses) if isinstance(responses, (str, Path)) else out_dir / "responses.jsonl"
        spec_extra["responses"] = str(path)
        _check_out(out_dir, {"model": None, "responses": str(path)}, overwrite)
        if not isinstance(responses, (str, Path)):
            write_responses(responses, path)
        loaded = read_answers(
            bench, path, benchmark_ids=known_sample_ids(benchmark, data_path, b_options, bench), key=responses_key
        )
        if loaded.problems:
            if strict:
                raise EvaluationError(f"{len(loaded.problems)} problem(s) in {path}: {loaded.problems[0]}")
            more = f" (and {len(loaded.problems) - 1} more)" if len(loaded.problems) > 1 else ""
            warnings.warn(f"{path}: {loaded.problems[0]}{more}", stacklevel=3)
        answers = loaded.responses
        spec_extra["responses_file"] = loaded.summary(path)
        spec_extra["model"] = None
        if loaded.items:
            from halluscope.runs.selection import items_from_responses

            bench = items_from_responses(bench, loaded.items, loaded.notes.get("labels"))
            warnings.warn(f"{path}: labels are {loaded.notes.get('labels', 'the file own')}", stacklevel=3)
    else:
        from halluscope.models.spec import create_model
        from halluscope.registry import UnknownComponentError
        from halluscope.runs.respond import RespondError, collect_responses, read_respond_errors

        try:
            model_obj = create_model(str(model), cache=store, **dict(model_options or {}))
        except (UnknownComponentError, ValueError, TypeError) as error:
            raise EvaluationError(f"model {model!r}: {error}") from error
        spec_extra["model"] = model_obj.identity()
        spec_extra["responses"] = str(out_dir / "responses.jsonl")
        _check_out(out_dir, {k: spec_extra[k] for k in ("model", "responses")}, overwrite)

        async def collect() -> dict[str, Response]:
            try:
                return await collect_responses(
                    bench, model_obj, out_dir, limit=limit, concurrency=concurrency, max_tokens=max_tokens,
                    show_progress=progress,
                )
            finally:
                await model_obj.aclose()

        try:
            answers = asyncio.run(collect())
        except RespondError as error:
            raise EvaluationError(str(error)) from error
        model_failures = read_respond_errors(out_dir)

    if only_answered:
        from halluscope.runs.selection import answered_only

        bench = answered_only(bench, answers)

    # As `halluscope run`: a stage the benchmark does not use for these samples is refused, not recorded.
    for stage, given in (("extractor", extractor or extractor_options), ("judge", judge or judge_options)):
        if given and not bench.uses_stage(stage):
            raise EvaluationError(
                f"the {bench.name} benchmark uses no {stage} for the selected samples, so {stage} options "
                "would change nothing; leave them out"
            )
    judges = judge_registry(bench.judge_kind)
    from halluscope.llm.local import LocalLLM, is_local

    chosen = {  # stage -> (component name, its options), for the stages this benchmark uses
        stage: (name, dict(opts or {}))
        for stage, name, opts in (
            ("extractor", extractor or bench.default_extractor, extractor_options),
            ("judge", judge or bench.default_judge, judge_options),
        )
        if bench.uses_stage(stage) and name is not None
    }
    if base_url:
        conflict = local_base_url_conflict(
            [stage for stage, (_, opts) in chosen.items() if is_local(opts.get("model"))],
            [
                s
                for s, (name, opts) in chosen.items()
                if not is_local(opts.get("model")) and name in ENDPOINT_STAGES
            ],
        )
        if conflict:
            raise EvaluationError(conflict.replace("--base-url", "base_url="))
    # One packaged server for every stage whose model is "local", stopped however the run ends.
    with LocalLLM() as local:
        ctx = ScoringContext(
            cache=store,
            extractor=create_stage(
                EXTRACTORS, "extractor", extractor, bench.default_extractor, extractor_options or {},
                cache=store, base_url=base_url, local=local,
            )
            if bench.uses_stage("extractor")
            else None,
            judge=create_stage(
                judges, "judge", judge, bench.default_judge, judge_options or {}, cache=store,
                base_url=base_url, local=local,
            )
            if bench.uses_stage("judge")
            else None,
        )
        if local.started:
            spec_extra["local_llm"] = local.describe()
        try:
            report = run_benchmark(
                bench, answers, ctx, out_dir, spec_extra=spec_extra, chunk_size=chunk_size,
                show_progress=progress, overwrite=overwrite, max_failure_share=max_failure_share,
                model_failures=model_failures,
            )
        except RunDirError as error:
            raise EvaluationError(str(error)) from error
        except StageFailureError as error:
            raise EvaluationError(
                f"{error} (metrics.json in {out_dir} rests on the samples that were scored)"
            ) from error
    return EvaluationResult(run_dir=out_dir, report=report)
