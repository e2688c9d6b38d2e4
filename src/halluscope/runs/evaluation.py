"""The one orchestrator: a :class:`RunConfig` in, a scored run directory out.

``halluscope run`` and :func:`halluscope.evaluate` both parse their options into a config and call
:func:`execute`, so the order of the steps, the rules between options and the contents of ``spec.json``
are written once. The steps, each refused early with an :class:`EvaluationError` naming the problem:

1. check the config (one source of answers; no option that would change nothing);
2. load the benchmark and refuse stage options it does not use, or an endpoint no stage would call;
3. get the answers: read the responses file, or ask the model (resumable, in ``out``);
4. start what the stages need (the packaged LLM server for ``model 'local'``) and score.

How a run talks back to its caller (a console or Python warnings) is :class:`RunHooks`.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from halluscope.redact import mask_text
from halluscope.runs.config import EvaluationError, RunConfig, StageChoice
from halluscope.runs.failures import FailedSamples
from halluscope.runs.selection import LimitOptionError, Selection, items_from_responses, limit_from_options
from halluscope.runs.setup import (
    create_benchmark,
    create_stage,
    known_sample_ids,
    local_base_url_conflict,
    read_responses_for_run,
    select_first,
    takes_endpoint,
    write_inline_responses,
)
from halluscope.types import MetricsReport, Response

if TYPE_CHECKING:
    from halluscope.cache import Cache
    from halluscope.llm.local import LocalLLM
    from halluscope.spelling import PhrasedError
    from halluscope.stages import BenchmarkInterface, ScoringContext

__all__ = ["RunHooks", "RunOutcome", "WarningHooks", "execute"]

STAGES = ("extractor", "judge")


class RunHooks(Protocol):
    """How a run reports to its caller: :class:`WarningHooks` for Python, a console for the command line."""

    def notice(self, message: str) -> None: ...

    def info(self, message: str) -> None: ...

    def problems(self, path: Path, problems: list[str]) -> None: ...

    def old_spelling(self, note: str) -> None: ...

    def local_llm(self) -> contextlib.AbstractContextManager[LocalLLM]: ...


class WarningHooks:
    """A run's notices as Python warnings (the API's way); the packaged LLM stopped when the run ends."""

    def notice(self, message: str) -> None:
        """Something the user should know that does not stop the run."""
        # Six frames up (notice, _select, execute, api._execute, evaluate): the caller of evaluate().
        warnings.warn(message, stacklevel=6)

    def info(self, message: str) -> None:
        """What the run does as asked (``only_answered``): logged, not warned about."""
        import logging

        logging.getLogger("halluscope").info(message)

    def problems(self, path: Path, problems: list[str]) -> None:
        """Lines of the responses file that could not be used (each names its line and the problem)."""
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        warnings.warn(f"{path}: {problems[0]}{more}", stacklevel=7)  # the caller of evaluate(), as above

    def old_spelling(self, note: str) -> None:
        """An option written the old way: it still works; ``note`` says what to write instead."""
        warnings.warn(note, FutureWarning, stacklevel=6)  # the caller of evaluate(), as above

    def local_llm(self) -> contextlib.AbstractContextManager[LocalLLM]:
        """The packaged LLM for stages whose model is ``local``, started only when a stage asks for it."""
        from halluscope.llm.local import LocalLLM

        return LocalLLM()


@dataclass(frozen=True)
class RunOutcome:
    """A finished run: where it is, its metrics, what was read from the responses file (if any), and the
    samples it could not score (how many, the first few named)."""

    run_dir: Path
    report: MetricsReport
    responses_file: dict[str, Any] = field(default_factory=dict)
    failures: FailedSamples = field(default_factory=FailedSamples)


@dataclass
class _Answers:
    selection: Selection
    responses: dict[str, Response]
    spec: dict[str, Any]
    model_failures: dict[str, str] = field(default_factory=dict)


def execute(
    config: RunConfig,
    hooks: RunHooks | None = None,
    *,
    inline_responses: Iterable[Response | Mapping[str, Any]] | None = None,
) -> RunOutcome:
    """Run ``config``: answers, scoring, ``spec.json``, ``samples.jsonl`` and ``metrics.json`` in ``out``.

    ``inline_responses`` (answers held in memory) are written to ``config.responses`` first. Raises
    :class:`EvaluationError` when the run cannot be set up, its ``out`` is used by another process or cannot
    be written, or an LLM endpoint refuses every request; :class:`~halluscope.runs.runner.StageFailureError`
    (after writing ``metrics.json``) when a stage failed on too many samples,
    :class:`~halluscope.runs.runner.NothingMeasuredError` when no sample was scored at all, and
    :class:`~halluscope.runs.interrupt.RunInterrupted` on Ctrl-C or SIGTERM (re-run to resume).
    """
    from halluscope.llm.errors import LLMError
    from halluscope.runs.runner import RunSettings, score_run
    from halluscope.runs.store import RunDirError

    hooks = hooks or WarningHooks()
    config.check()
    config = _move_old_judge_spelling(config, hooks)
    config = _move_limit_option(config, hooks)
    bench = create_benchmark(config.benchmark, config.data, config.benchmark_options())
    chosen = select_first(bench, config.limit)  # the one selection the model is asked and the scoring uses
    _check_stages(config, bench, chosen)
    store = _open_cache(config, hooks)
    with _holding_out(config):  # one process writes a run folder, from the first answer to metrics.json
        try:
            answers = _gather_answers(config, bench, chosen, store, hooks, inline_responses)
        except RunDirError as error:
            raise _run_dir_error(config, error) from error
        selection = _select(config, answers, hooks)
        with hooks.local_llm() as local:
            ctx = _scoring_context(config, bench, selection, store, local)
            spec = {**answers.spec, "run": config.recorded()}
            if local.started:
                spec["local_llm"] = local.describe()
            try:
                scored = score_run(
                    bench, answers.responses, ctx, config.out, spec_extra=spec, show_progress=config.progress,
                    settings=RunSettings(
                        chunk_size=config.chunk_size, overwrite=config.overwrite,
                        max_failure_share=config.max_failure_share, interval_level=config.ci,
                    ),
                    model_failures=answers.model_failures, selection=selection,
                )  # fmt: skip
            except RunDirError as error:
                raise _run_dir_error(config, error) from error
            except LLMError as error:  # auth and bad-request failures stop the run: every item fails alike
                raise EvaluationError(
                    f"{type(error).__name__}: {error} (finished samples are saved; re-run to resume)"
                ) from error
    return RunOutcome(
        run_dir=config.out,
        report=scored.report,
        responses_file=answers.spec.get("responses_file", {}),
        failures=scored.failures,
    )


@contextlib.contextmanager
def _holding_out(config: RunConfig) -> Iterator[None]:
    """The run folder's lock for the block; a busy or unwritable folder as an :class:`EvaluationError`."""
    from halluscope.runs.lock import RunDirBusyError, RunDirWriteError
    from halluscope.runs.store import holding_run_dir

    try:
        with holding_run_dir(config.out):
            yield
    except (RunDirBusyError, RunDirWriteError) as error:
        raise _run_dir_error(config, error) from error


def _check_stages(config: RunConfig, bench: BenchmarkInterface, selection: Selection) -> None:
    """Refuse stage options the benchmark does not use, and a ``base_url`` no stage would call."""
    from halluscope.llm.local import is_local

    endpoint_stage = False
    local_stages: list[str] = []  # stages whose model is "local": the packaged server, not base_url
    for stage in STAGES:
        choice = getattr(config, stage)
        if selection.uses_stage(bench, stage):
            _check_known(config, stage, bench)
            if is_local(choice.options.get("model")):
                local_stages.append(stage)
            else:
                registry, default = _stage_registry(stage, bench)
                chosen = choice.name or default
                endpoint_stage = endpoint_stage or (chosen is not None and takes_endpoint(registry, chosen))
        elif choice.given:
            raise EvaluationError(
                f"{', '.join(config.flag(option) for option in choice.given)}: the {bench.name} benchmark "
                f"uses no {stage} for the selected samples (see `halluscope list`), so this would change "
                "nothing; leave it out"
            )
    if not config.base_url:
        return
    conflict = local_base_url_conflict(local_stages, endpoint_stage)
    if conflict:
        raise EvaluationError(conflict.phrase(config.surface))
    if not endpoint_stage:
        raise EvaluationError(
            f"{config.flag('base_url')} is the endpoint of the llm extractor or judge, and neither is used in "
            "this run"
        )


def _check_known(config: RunConfig, stage: str, bench: BenchmarkInterface) -> None:
    """Refuse, before any answer is collected, an extractor or judge the benchmark's slot does not have;
    a judge of another benchmark is named with the benchmark it belongs to."""
    from halluscope.benchmarks import judge_belongs_elsewhere

    registry, _ = _stage_registry(stage, bench)
    name = getattr(config, stage).name
    if name is None or name in registry.names():
        return
    elsewhere = judge_belongs_elsewhere(name, bench.judge_kind) if stage == "judge" else None
    choose = f"the {bench.name} benchmark takes {', '.join(registry.names())}"
    given = f"{config.flag(stage)} {name}" if config.surface == "cli" else f"{config.flag(stage)}{name!r}"
    raise EvaluationError(f"{given}: " + (f"{elsewhere}; {choose}" if elsewhere else f"unknown; {choose}"))


def _stage_registry(stage: str, bench: BenchmarkInterface) -> tuple[Any, str | None]:
    """The registry that fills ``stage`` for ``bench``, and the benchmark's default name in it."""
    from halluscope.claims import EXTRACTORS
    from halluscope.judges import judge_registry

    if stage == "extractor":
        return EXTRACTORS, bench.default_extractor
    return judge_registry(bench.judge_kind), bench.default_judge


def _move_old_judge_spelling(config: RunConfig, hooks: RunHooks) -> RunConfig:
    """A judge given the old way, as a benchmark option (``--bench-opt judge=llm``), moved into the judge
    slot; the note says what to write instead."""
    from halluscope.benchmarks.judge_aliases import JudgeAliasError, move_judge_aliases

    try:
        moved = move_judge_aliases(config.benchmark, config.bench_options, bool(config.judge.given))
    except JudgeAliasError as error:
        raise EvaluationError(error.phrase(config.surface)) from error
    if moved is None:
        return config
    hooks.old_spelling(moved.note)  # it gives both spellings
    judge = StageChoice(name=moved.judge, options=moved.judge_options)
    return config.model_copy(update={"bench_options": moved.bench_options, "judge": judge})


def _move_limit_option(config: RunConfig, hooks: RunHooks) -> RunConfig:
    """``--bench-opt limit=N`` (the old spelling) moved to the run's limit; the note says what to write."""
    try:
        moved = limit_from_options(config.bench_options, config.limit)
    except LimitOptionError as error:
        raise EvaluationError(error.phrase(config.surface)) from error
    if moved.note is None:
        return config
    hooks.old_spelling(moved.note.phrase(config.surface))
    return config.model_copy(update={"bench_options": moved.bench_options, "limit": moved.limit})


def _open_cache(config: RunConfig, hooks: RunHooks) -> Cache:
    """The run's cache; one that cannot be used is reported as a notice and the run goes on (see cache.py)."""
    from halluscope.cache import Cache

    if not config.use_cache:
        return Cache(None)
    if config.cache:
        return Cache(config.cache, on_problem=hooks.notice)
    return Cache.default(on_problem=hooks.notice)


def _check_out(config: RunConfig, fields: Mapping[str, Any]) -> None:
    """Refuse, before any answer is collected or written, an ``out`` that holds another run."""
    from halluscope.runs.store import check_run_dir

    if not config.overwrite:
        check_run_dir(config.out, fields, tuple(fields))


def _run_dir_error(config: RunConfig, error: PhrasedError) -> EvaluationError:
    """A run folder that cannot be used, as an :class:`EvaluationError` naming ``out`` as the user wrote it."""
    return EvaluationError(error.phrase(config.surface))


def _gather_answers(
    config: RunConfig,
    bench: BenchmarkInterface,
    chosen: Selection,
    store: Cache,
    hooks: RunHooks,
    inline: Iterable[Response | Mapping[str, Any]] | None,
) -> _Answers:
    if config.responses is not None:
        return _read_file(config, bench, chosen, config.responses, hooks, inline, store)
    return _ask_model(config, bench, chosen, store)


def _read_file(
    config: RunConfig,
    bench: BenchmarkInterface,
    chosen: Selection,
    path: Path,
    hooks: RunHooks,
    inline: Iterable[Response | Mapping[str, Any]] | None,
    store: Cache,
) -> _Answers:
    _check_out(config, {"model": None, "responses": str(path)})
    if inline is not None:
        write_inline_responses(inline, path)
    # Read as the whole benchmark reads it (answers to samples past --limit are not unknown), checked against
    # the run's selection.
    loaded = read_responses_for_run(
        bench, path, benchmark_ids=known_sample_ids(bench), key=config.responses_key, selected=chosen, cache=store
    )
    if loaded.problems:
        hooks.problems(path, loaded.problems)
        if config.strict:
            raise EvaluationError(
                f"{len(loaded.problems)} problem(s) in {path}: {loaded.problems[0]}; stopping because of "
                f"{config.flag('strict')}"
            )
    if loaded.items:  # the file defines its own items (a VLMEvalKit sheet): those are measured
        items = items_from_responses(loaded.items, loaded.notes.get("labels"))
        chosen = items.first(config.limit)  # --limit takes the first N of the file's own items
    spec = {"responses": str(path), "responses_file": loaded.summary(path), "model": None}
    return _Answers(selection=chosen, responses=dict(loaded.responses), spec=spec)


def _ask_model(config: RunConfig, bench: BenchmarkInterface, chosen: Selection, store: Cache) -> _Answers:
    from halluscope.models.spec import create_model
    from halluscope.registry import UnknownComponentError
    from halluscope.runs.interrupt import run_async
    from halluscope.runs.respond import RespondError, collect_responses, read_respond_errors
    from halluscope.runs.store import discard_run

    if config.overwrite:
        discard_run(config.out)  # the answers of the run being replaced go too (the cache still has them)
    try:
        model = create_model(str(config.model), cache=store, **config.model_options)
    except (UnknownComponentError, ValueError, TypeError) as error:
        raise EvaluationError(mask_text(f"model {config.model!r}: {error}")) from error
    spec = {"model": model.identity(), "responses": str(config.out / "responses.jsonl")}
    _check_out(config, {**spec, "benchmark": chosen.spec(bench)})  # another --limit too: refused before asking

    async def collect() -> dict[str, Response]:
        try:
            return await collect_responses(
                bench, model, config.out,
                concurrency=config.concurrency or RunConfig.DEFAULT_CONCURRENCY,
                max_tokens=config.max_tokens or RunConfig.DEFAULT_MAX_TOKENS, show_progress=config.progress,
                selection=chosen,
            )  # fmt: skip
        finally:
            await model.aclose()

    try:
        responses = run_async(collect())
    except RespondError as error:
        raise EvaluationError(str(error)) from error
    return _Answers(
        selection=chosen, responses=responses, spec=spec, model_failures=read_respond_errors(config.out)
    )


def _select(config: RunConfig, answers: _Answers, hooks: RunHooks) -> Selection:
    """The samples to score: every selected one, or with ``only_answered`` those that have an answer."""
    ids = set(answers.selection.ids())
    missing = len(ids - set(answers.responses))
    if config.only_answered:
        if missing:
            hooks.info(f"scoring the {len(ids) - missing} answered samples; {missing} without an answer left out")
        return answers.selection.answered(answers.responses)
    if missing:
        asked = sum(1 for i in ids if i in answers.model_failures)
        from halluscope.runs.respond import RESPOND_ERRORS_FILE

        errors = config.out / RESPOND_ERRORS_FILE
        why = f" ({asked} because the model's request failed: see {errors})" if asked else ""
        hooks.notice(
            f"{missing} of {len(ids)} samples have no response{why}; they are recorded as failures and left "
            "out of the rates."
        )
    return answers.selection


def _scoring_context(
    config: RunConfig, bench: BenchmarkInterface, selection: Selection, store: Cache, local: LocalLLM
) -> ScoringContext:
    from halluscope.stages import ScoringContext

    stages: dict[str, Any] = {}
    for stage in STAGES:
        if selection.uses_stage(bench, stage):
            registry, default = _stage_registry(stage, bench)
            choice = getattr(config, stage)
            stages[stage] = create_stage(
                registry, stage, choice.name, default, choice.options, cache=store, base_url=config.base_url,
                local=local,
            )  # fmt: skip
    return ScoringContext(cache=store, **stages)
