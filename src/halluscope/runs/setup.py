"""The set-up steps of a run: the benchmark, its stages, the answers; each raises :class:`EvaluationError`.

:func:`halluscope.runs.evaluation.execute` calls them for ``halluscope run`` and :func:`halluscope.evaluate`
alike; the build and validation commands use some of them on their own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from halluscope.runs.config import EvaluationError
from halluscope.spelling import Message, phrase
from halluscope.types import Response

if TYPE_CHECKING:
    from halluscope.cache import Cache
    from halluscope.llm.local import LocalLLM
    from halluscope.responses import ResponsesFile
    from halluscope.runs.selection import Selection
    from halluscope.stages import BenchmarkInterface

__all__ = [
    "create_benchmark",
    "create_stage",
    "known_sample_ids",
    "local_base_url_conflict",
    "read_responses_for_run",
    "select_first",
    "takes_endpoint",
    "write_inline_responses",
]


def create_benchmark(name: str, data: Path | None, options: Mapping[str, Any]) -> BenchmarkInterface:
    from halluscope.benchmarks import BENCHMARKS
    from halluscope.registry import UnknownComponentError

    try:
        bench: BenchmarkInterface = BENCHMARKS.create(name, data=data, **dict(options))
    except (UnknownComponentError, ValueError, OSError, TypeError) as error:
        raise EvaluationError(str(error)) from error
    return bench


def select_first(bench: BenchmarkInterface, limit: int | None) -> Selection:
    """The run's selection: the first ``limit`` samples of ``bench`` (all without a limit), the ones the model
    is asked and the scoring uses; a benchmark file that cannot be read is an :class:`EvaluationError`."""
    from halluscope.runs.selection import first_samples

    try:
        return first_samples(bench, limit)
    except (ValueError, OSError) as error:
        raise EvaluationError(str(error)) from error


def known_sample_ids(bench: BenchmarkInterface) -> set[str]:
    """Every id of the whole benchmark (before ``--limit`` selects some): an answer to a sample outside the
    selection belongs to the benchmark, so it is not reported as an unknown id."""
    try:
        return set(bench.sample_ids())
    except (ValueError, OSError) as error:
        raise EvaluationError(str(error)) from error


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
    elif base_url and takes_endpoint(registry, chosen):
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


def local_base_url_conflict(local_stages: Iterable[str], endpoint_stage: bool) -> Message | None:
    """Why a run-wide ``base_url`` cannot be used: some stage's model is ``local`` and no other stage
    (``endpoint_stage``) would call the endpoint it names."""
    local_list = list(local_stages)
    if not local_list or endpoint_stage:
        return None
    which = " and ".join(f"the {stage}" for stage in local_list)
    return phrase(
        "model 'local' starts the packaged model on a server of its own for {which}, and {flag:base_url} names "
        "another endpoint for the same stage; give one of the two (for a server you run yourself, "
        "`halluscope serve` prints a {flag:base_url} and a model name to use instead of 'local')",
        which=which,
    )


def _imported(path: Path) -> bool:
    """Whether ``path`` is another tool's answers (LLaVA, lmms-eval, VLMEvalKit), whose reading matches every row
    to a sample and is worth keeping; halluscope's own layouts read back about as fast as a kept reading would."""
    from halluscope.importers import detect_external

    return detect_external(path) is not None


def read_responses_for_run(
    bench: BenchmarkInterface,
    path: Path,
    *,
    benchmark_ids: set[str] | None,
    key: str | None,
    selected: Selection | None = None,
    cache: Cache | None = None,
) -> ResponsesFile:
    """The answers in ``path`` as the benchmark reads them; an :class:`EvaluationError` naming the file when
    it cannot be read (missing, not text, bad JSON) or holds no answer to any selected sample (of
    ``selected``, the run's ``--limit`` selection, when given; else of ``bench``). With a ``cache`` kept on disk, a
    reading of the same imported file by the same benchmark kept there is used instead of reading it again
    (:mod:`halluscope.runs.answers_cache`)."""
    from halluscope.responses import ResponsesError

    path = Path(path)

    def read() -> ResponsesFile:
        return bench.read_responses(path, benchmark_ids=benchmark_ids, key=key)

    try:
        if cache is None or not cache.persistent or not _imported(path):
            loaded = read()
        else:
            from halluscope.cache import content_key
            from halluscope.runs.answers_cache import read_kept

            ids = None if benchmark_ids is None else content_key(sorted(benchmark_ids))
            loaded = read_kept(bench, path, cache, read, options={"key": key, "benchmark_ids": ids})
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
    chosen = loaded.items if loaded.items else (bench.every_sample() if selected is None else selected.items)
    selected_ids = {s.id for s in chosen}
    if not any(sample_id in selected_ids for sample_id in loaded.responses):
        if not loaded.responses:
            why = (
                "holds no answer" if not loaded.problems else f"holds no usable answer ({loaded.problems[0]})"
            )
        else:
            example = next(iter(loaded.responses))
            why = (
                f"answers none of the {len(selected_ids)} selected {bench.name} samples ({len(loaded.responses)} "
                f"answer(s) for other ids, e.g. {example!r})"
            )
        raise EvaluationError(f"{path} {why}; nothing would be measured")
    return loaded


def write_inline_responses(responses: Iterable[Response | Mapping[str, Any]], path: Path) -> Path:
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
