"""Planning a suite and running the plan; :func:`evaluate_suite` is the Python entry point of ``halluscope eval``.

Why a plan before any run: every problem with the suite as a whole (a bad suite file, two models with one
folder, a ``--from`` folder that is not one) is refused before the first model is asked, while a problem with
one benchmark (its data missing under the data root) becomes that run's failure and the others go on.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from halluscope.suite.answers import Skipped
from halluscope.suite.execute import RunSettings, SuiteRun
from halluscope.suite.spec import BenchmarkEntry, ModelEntry, SuiteError, SuiteRunSpec

if TYPE_CHECKING:
    from halluscope.runs.evaluation import RunHooks
    from halluscope.runs.progress import ProgressSink

__all__ = ["SuiteError", "SuitePlan", "SuiteResult", "evaluate_suite", "plan_suite", "run_planned"]

#: The record of the suite's last run, in ``out``: each run's status and message.
SUITE_FILE = "suite.json"


class SuitePlan(BaseModel):
    """The runs to make, in order, the files of a ``--from`` folder not scored, and the suite's settings."""

    model_config = ConfigDict(frozen=True)

    out: Path
    runs: list[SuiteRunSpec]
    skipped: list[Skipped] = Field(default_factory=list)
    baseline: str | None = None
    #: From the suite file's top level (``limit``), before the caller's own settings.
    settings: dict[str, Any] = Field(default_factory=dict)


class SuiteResult(BaseModel):
    """A finished suite: each run's outcome, the files skipped, the leaderboard and where the files are."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    out: Path
    runs: list[SuiteRun]
    skipped: list[Skipped] = Field(default_factory=list)
    leaderboard: Any = None
    files: dict[str, Path] = Field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Every run measured something and none failed (``halluscope eval`` exits 0 only then)."""
        return bool(self.runs) and all(run.ok for run in self.runs)

    @property
    def failed(self) -> list[SuiteRun]:
        return [run for run in self.runs if not run.ok]


def plan_suite(
    benchmarks: Sequence[str] | None = None,
    *,
    models: Sequence[str] | None = None,
    suite: Path | None = None,
    answers_from: Path | None = None,
    data_root: Path | None = None,
    out: Path,
    baseline: str | None = None,
) -> SuitePlan:
    """The runs of a suite given as benchmark names and model specs, a suite file, or a folder of answers."""
    sources = [
        name
        for name, given in (("models", models), ("suite", suite), ("answers_from", answers_from))
        if given
    ]
    if len(sources) != 1:
        raise SuiteError(
            "give the models to ask (--model), a suite file (--suite) or a folder of answers (--from), one of them"
        )
    if answers_from is not None:
        return _plan_from_answers(answers_from, benchmarks, data_root, out, baseline)
    settings: dict[str, Any] = {}
    if suite is not None:
        entries, model_list, settings = _from_file(suite, data_root, benchmarks)
    else:
        from halluscope.suite.spec import model_entries

        if not benchmarks:
            raise SuiteError("name the benchmarks to run: -b pope,tri-he (or give a suite file)")
        entries = [_entry(name, data_root) for name in benchmarks]
        model_list = model_entries(list(models or []))
    runs = [
        SuiteRunSpec(benchmark=entry, model=model.label, model_spec=model.spec, model_options=model.options,
                     out=out / model.label / entry.name)
        for model in model_list
        for entry in entries
    ]  # fmt: skip
    chosen = baseline or settings.pop("baseline", None)
    return SuitePlan(out=out, runs=runs, baseline=chosen, settings=settings)


def _entry(name: str, data_root: Path | None) -> BenchmarkEntry:
    from halluscope.suite.spec import find_data

    return find_data(name, data_root) if data_root is not None else BenchmarkEntry(name=name)


def _from_file(
    suite: Path, data_root: Path | None, only: Sequence[str] | None
) -> tuple[list[BenchmarkEntry], list[ModelEntry], dict[str, Any]]:
    from halluscope.suite.spec import load_suite_file

    entries, model_list, settings = load_suite_file(suite, data_root)
    if only:
        unknown = sorted(set(only) - {e.name for e in entries})
        if unknown:
            raise SuiteError(f"-b {','.join(unknown)}: not in the suite file {suite}")
        entries = [e for e in entries if e.name in only]
    if not entries or not model_list:
        raise SuiteError(f"suite file {suite}: needs at least one [benchmarks.NAME] and one [models.LABEL]")
    return entries, model_list, {k: v for k, v in settings.items() if k != "data_root"}


def _plan_from_answers(
    folder: Path, only: Sequence[str] | None, data_root: Path | None, out: Path, baseline: str | None
) -> SuitePlan:
    from halluscope.suite.answers import scan_answers

    found, skipped = scan_answers(folder)
    runs: list[SuiteRunSpec] = []
    taken: set[Path] = set()
    for answers in found:
        if only and answers.benchmark not in only:
            skipped.append(
                Skipped(path=answers.path, why=f"answers {answers.benchmark}, not among -b {','.join(only)}")
            )
            continue
        entry = _entry(answers.benchmark, data_root)
        entry = entry.model_copy(
            update={"options": {**entry.options, **answers.options}, "judge": answers.judge}
        )
        target = out / answers.model / answers.benchmark
        if target in taken:
            target = out / answers.model / f"{answers.benchmark}-{answers.path.stem}"
        taken.add(target)
        runs.append(
            SuiteRunSpec(
                benchmark=entry, model=answers.model, responses=answers.path, tool=answers.tool, out=target
            )
        )
    return SuitePlan(out=out, runs=runs, skipped=skipped, baseline=baseline, settings={"only_answered": True})


def run_planned(
    plan: SuitePlan, settings: RunSettings, hooks: RunHooks, progress: ProgressSink, *, html: bool = True
) -> SuiteResult:
    """Every run of the plan in turn, then the leaderboard of those that finished and ``suite.json``."""
    from halluscope.report.leaderboard import build_leaderboard, write_leaderboard
    from halluscope.suite.execute import run_suite

    try:
        runs = run_suite(plan.runs, settings, hooks, progress)
    finally:
        progress.close()
    finished = [(run.model, run.run_dir) for run in runs if (run.run_dir / "metrics.json").is_file()]
    board = build_leaderboard(finished, baseline=plan.baseline, level=settings.ci)
    files = write_leaderboard(board, plan.out, html=html) if finished else {}
    result = SuiteResult(out=plan.out, runs=runs, skipped=plan.skipped, leaderboard=board, files=files)
    _write_record(result)
    return result


def _write_record(result: SuiteResult) -> None:
    """``suite.json``: each run's benchmark, model, folder, status and message, and the files skipped."""
    result.out.mkdir(parents=True, exist_ok=True)
    record = {
        "runs": [run.model_dump(mode="json") for run in result.runs],
        "skipped": [s.model_dump(mode="json") for s in result.skipped],
        "files": {k: str(v) for k, v in result.files.items()},
    }
    (result.out / SUITE_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


def evaluate_suite(
    benchmarks: Sequence[str] | str | None = None,
    *,
    models: Sequence[str] | str | None = None,
    suite: str | Path | None = None,
    answers_from: str | Path | None = None,
    data_root: str | Path | None = None,
    out: str | Path,
    baseline: str | None = None,
    progress: bool = False,
    **options: Any,
) -> SuiteResult:
    """Run a suite, as ``halluscope eval`` does, and return each run's outcome and the leaderboard.

    ``benchmarks`` (names, or ``"pope,tri-he"``) with ``models`` (specs, ``LABEL=SPEC`` to name one), or a
    ``suite`` TOML file, or ``answers_from`` (a folder of lmms-eval / VLMEvalKit / LLaVA answer files);
    ``data_root`` where each benchmark's data folder is; ``out`` the suite folder (one run folder per model and
    benchmark, ``OUT/<model>/<benchmark>``; re-running resumes). Other options are those every run shares:
    ``limit``, ``base_url``, ``cache`` (a path, or False), ``max_tokens``, ``concurrency``, ``ci``,
    ``html`` (write ``leaderboard.html``, default True), and ``download`` (first fetch the official files of
    each benchmark that lacks its data, into ``data_root`` or the user cache, as ``halluscope eval --download``
    does; what cannot be fetched is that benchmark's failure). A failed run does not raise: it is in
    :attr:`SuiteResult.failed` with one line saying why. A bad suite raises :class:`SuiteError`.
    """
    from halluscope.runs.evaluation import WarningHooks
    from halluscope.runs.progress import make_progress

    html = bool(options.pop("html", True))
    download = bool(options.pop("download", False))
    plan = plan_suite(
        _names(benchmarks), models=[models] if isinstance(models, str) else models,
        suite=Path(suite) if suite else None, answers_from=Path(answers_from) if answers_from else None,
        data_root=Path(data_root) if data_root else None, out=Path(out), baseline=baseline,
    )  # fmt: skip
    if download:
        from halluscope.suite.fetch import fetch_missing_data

        plan, _ = fetch_missing_data(plan, Path(data_root) if data_root else None)
    settings = run_settings({**plan.settings, **options}, surface="api")
    return run_planned(plan, settings, WarningHooks(), make_progress(progress), html=html)


def run_settings(options: dict[str, Any], *, surface: Literal["cli", "api"]) -> RunSettings:
    """The shared run settings from keyword options; an unknown one is a ``TypeError`` naming the known."""
    from pydantic import ValidationError

    cache = options.pop("cache", None)
    known = set(RunSettings.model_fields) - {"cache", "use_cache", "surface"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(
            f"evaluate_suite() got unknown option(s) {unknown}; known: {sorted(known | {'cache', 'html', 'download'})}"
        )
    try:
        return RunSettings(
            **options, cache=Path(cache) if isinstance(cache, str | Path) else None, use_cache=cache is not False,
            surface=surface,
        )  # fmt: skip
    except ValidationError as error:
        raise SuiteError(f"suite settings: {error.errors()[0]['loc']}: {error.errors()[0]['msg']}") from error


def _names(value: Sequence[str] | str | None) -> list[str] | None:
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    names = [item.strip() for part in items for item in part.split(",") if item.strip()]
    return names or None
