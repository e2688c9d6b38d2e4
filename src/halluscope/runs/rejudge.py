"""Re-judge a finished run: score the answers it already holds with another judge, never asking the model again.

Why: a free-form headline is only as good as its judge, and the question users ask most (which judge: a
hosted one, a local one, the similarity judge) is answered by scoring the *same* answers twice and comparing
the two runs item by item (``halluscope report OLD NEW``). The new run is an ordinary run folder: the old
run's benchmark, data, options and selection, the judge (and, if given, extractor) replaced, the answers read
from where the old run read them — its answers file, or, for a run that asked a model, the answers it saved
in its own folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from halluscope.runs.config import EvaluationError, RunConfig, StageChoice
from halluscope.runs.respond import RESPONSES_FILE
from halluscope.runs.store import RunDirError, read_spec

__all__ = ["rejudge_config"]

#: What a re-judged run takes over from the old run's recorded config, besides the answers and stages.
_KEPT = ("benchmark", "data", "bench_options", "limit", "responses_key", "only_answered", "strict", "base_url")


def _answers_of(run_dir: Path, recorded: dict[str, Any]) -> Path:
    """The answers the old run scored: the file it read, or those it collected from a model."""
    if recorded.get("model"):
        saved = run_dir / RESPONSES_FILE
        if not saved.is_file():
            raise EvaluationError(f"{run_dir} asked a model but holds no {RESPONSES_FILE}: nothing to re-judge")
        return saved
    given = recorded.get("responses")
    if not given:
        raise EvaluationError(f"{run_dir}: its spec.json names no answers file; nothing to re-judge")
    for candidate in (Path(given), run_dir / given, run_dir.parent / given):
        if candidate.is_file():
            return candidate
    raise EvaluationError(
        f"{run_dir} read its answers from {given}, which is not there any more; re-judging needs that file"
    )


def rejudge_config(
    run_dir: Path,
    *,
    out: Path,
    judge: StageChoice,
    extractor: StageChoice | None = None,
    settings: dict[str, Any] | None = None,
) -> RunConfig:
    """The config of a run that scores ``run_dir``'s answers with ``judge`` into ``out``.

    ``settings`` overrides run settings that do not change what is measured (``cache``, ``use_cache``,
    ``overwrite``, ``progress``, ``chunk_size``, ``base_url``, ``ci``, ``surface``).
    """
    run_dir = Path(run_dir)
    try:
        spec = read_spec(run_dir)
    except RunDirError as error:
        raise EvaluationError(str(error)) from error
    recorded = spec.get("run")
    if not isinstance(recorded, dict) or "benchmark" not in recorded:
        raise EvaluationError(f"{run_dir}: spec.json does not record the run's config (made by an older halluscope?)")
    if Path(out).resolve() == run_dir.resolve():
        raise EvaluationError("re-judging writes a new run: give an --out other than the run being re-judged")
    kept = {key: recorded[key] for key in _KEPT if key in recorded}
    old = recorded.get("extractor") or {}
    chosen_extractor = extractor or StageChoice(name=old.get("name"), options=old.get("options") or {})
    try:
        return RunConfig(
            **kept, out=Path(out), responses=_answers_of(run_dir, recorded), extractor=chosen_extractor,
            judge=judge, rejudged_from=run_dir, **(settings or {}),
        )  # fmt: skip
    except ValidationError as error:
        raise EvaluationError(f"re-judging {run_dir}: {error}") from error
