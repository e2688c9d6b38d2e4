"""Running a suite: each (benchmark, model) pair through the one single-run orchestrator, in turn.

Why one run after another through :func:`halluscope.runs.evaluation.execute`: a run folder already knows how
to resume (a finished one asks nothing again and scores nothing again), so the suite is resumable as a whole
by running every folder again. A run that cannot be set up or measures nothing becomes a failed
:class:`SuiteRun` with one line saying why, and the next run starts; only Ctrl-C stops the suite.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from halluscope.suite.spec import SuiteRunSpec

if TYPE_CHECKING:
    from halluscope.runs.config import RunConfig
    from halluscope.runs.evaluation import RunHooks
    from halluscope.runs.progress import ProgressSink

__all__ = ["RunSettings", "SuiteRun", "run_suite"]

Status = Literal["ok", "failed", "nothing measured", "stage failures"]


class RunSettings(BaseModel):
    """What every run of the suite shares: the flags of ``halluscope run`` that are not per benchmark."""

    model_config = ConfigDict(frozen=True)

    limit: int | None = None
    base_url: str | None = None
    cache: Path | None = None
    use_cache: bool = True
    max_tokens: int | None = None
    concurrency: int | None = None
    ci: float = 0.95
    only_answered: bool = False
    surface: Literal["cli", "api"] = "api"


class SuiteRun(BaseModel):
    """One benchmark for one model, as it ended: ``ok``, or why not in one line."""

    model_config = ConfigDict(frozen=True)

    benchmark: str
    model: str
    run_dir: Path
    status: Status
    message: str | None = None
    tool: str | None = None
    responses: Path | None = None
    counts: dict[str, int] = Field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def run_config(spec: SuiteRunSpec, settings: RunSettings) -> RunConfig:
    """The single run's config, as ``halluscope run`` would build it from the same flags."""
    from halluscope.runs.config import RunConfig, StageChoice

    entry = spec.benchmark
    options = dict(entry.options)
    if entry.images is not None and spec.model_spec is not None:
        options.setdefault("images", str(entry.images))

    def choice(stage: str, name: str | None, opts: dict[str, Any]) -> StageChoice:
        given = tuple(k for k, v in ((stage, name), (f"{stage}_options", opts)) if v)
        return StageChoice(name=name, options=dict(opts), given=given)

    from_file = spec.responses is not None
    return RunConfig(
        benchmark=entry.name, out=spec.out, data=entry.data, bench_options=options,
        limit=entry.limit or settings.limit, responses=spec.responses, model=spec.model_spec,
        model_options=dict(spec.model_options), only_answered=from_file and settings.only_answered,
        max_tokens=None if from_file else settings.max_tokens,
        concurrency=None if from_file else settings.concurrency,
        base_url=settings.base_url, cache=settings.cache, use_cache=settings.use_cache, ci=settings.ci,
        surface=settings.surface, extractor=choice("extractor", entry.extractor, entry.extractor_options),
        judge=choice("judge", entry.judge, entry.judge_options),
    )  # fmt: skip


def run_suite(
    specs: Sequence[SuiteRunSpec], settings: RunSettings, hooks: RunHooks, progress: ProgressSink
) -> list[SuiteRun]:
    """Run every spec in order; one that fails is recorded and the next starts. Ctrl-C propagates."""
    done: list[SuiteRun] = []
    for index, spec in enumerate(specs):
        progress.start(f"{spec.model} · {spec.benchmark.name}", total=len(specs), done=index)
        done.append(run_one(spec, settings, Labelled(hooks, f"{spec.model} · {spec.benchmark.name}")))
    progress.start("suite", total=len(specs), done=len(specs))
    return done


class Labelled:
    """A run's hooks with each message led by the run's model and benchmark: in a suite, a notice must say
    which of the runs it is about."""

    def __init__(self, hooks: RunHooks, label: str) -> None:
        self._hooks = hooks
        self._label = label

    def notice(self, message: str) -> None:
        self._hooks.notice(f"{self._label}: {message}")

    def info(self, message: str) -> None:
        self._hooks.info(f"{self._label}: {message}")

    def problems(self, path: Path, problems: list[str]) -> None:
        self._hooks.problems(path, problems)

    def old_spelling(self, note: str) -> None:
        self._hooks.old_spelling(f"{self._label}: {note}")

    def local_llm(self) -> Any:
        return self._hooks.local_llm()


def run_one(spec: SuiteRunSpec, settings: RunSettings, hooks: RunHooks) -> SuiteRun:
    """One run of the suite; what stopped it as the run's status and one-line message."""
    from halluscope.runs.config import EvaluationError
    from halluscope.runs.evaluation import execute
    from halluscope.runs.runner import NothingMeasuredError, StageFailureError

    base: dict[str, Any] = {
        "benchmark": spec.benchmark.name, "model": spec.model, "run_dir": spec.out, "tool": spec.tool,
        "responses": spec.responses,
    }  # fmt: skip
    if spec.benchmark.missing:
        return SuiteRun(**base, status="failed", message=spec.benchmark.missing)
    try:
        outcome = execute(run_config(spec, settings), hooks)
    except NothingMeasuredError as error:
        return SuiteRun(**base, status="nothing measured", message=_line(error), counts=error.report.counts)
    except StageFailureError as error:
        return SuiteRun(**base, status="stage failures", message=_line(error), counts=error.report.counts)
    except EvaluationError as error:
        return SuiteRun(**base, status="failed", message=_line(error))
    except (ValueError, OSError, RuntimeError) as error:  # a run's own bug or data problem: the suite goes on
        return SuiteRun(**base, status="failed", message=f"{type(error).__name__}: {_line(error)}")
    return SuiteRun(**base, status="ok", counts=outcome.report.counts)


def _line(error: BaseException) -> str:
    """The error as one line (a message spanning lines is joined)."""
    from halluscope.redact import mask_text

    return mask_text(" ".join(str(error).split()))
