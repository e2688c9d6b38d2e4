"""A folder of answers other tools wrote, sorted into the runs that score them (``halluscope eval --from``).

Why by name first: lmms-eval names its sample logs after the task (``samples_<task>.jsonl``) and VLMEvalKit
its prediction sheets after the model and dataset (``<model>_<dataset>.xlsx``), and those names say which
benchmark a file answers; the file's content then says which tool wrote it (the importers' own detection,
:func:`halluscope.importers.detect_external`). Each benchmark is scored with the reading the tool used
where halluscope has it (VLMEvalKit's exact matching for POPE and HallusionBench; POPE's official rule,
which LLaVA's ``eval_pope`` applies, for LLaVA's answer files). Every file not scored is listed with why,
so nothing in the folder is passed over in silence.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["FoundAnswers", "Skipped", "scan_answers"]

#: lmms-eval task → (benchmark, benchmark options). lmms-eval's own yes/no reading is not one halluscope
#: has, so these are read with the benchmark's default reading (docs/suite.md says so).
LMMS_TASKS: dict[str, tuple[str, dict[str, Any]]] = {
    "hallusion_bench_image": ("hallusionbench", {}),
    "pope_adv": ("pope", {"sources": "coco"}),
    "pope_pop": ("pope", {"sources": "coco"}),
    "pope_random": ("pope", {"sources": "coco"}),
    "pope": ("pope", {"sources": "coco"}),
}

#: VLMEvalKit dataset name → (benchmark, benchmark options, judge): VLMEvalKit's own reading and rating.
VLMEVALKIT_DATASETS: dict[str, tuple[str, dict[str, Any], str | None]] = {
    "POPE": ("pope", {"mode": "vlmevalkit"}, None),
    "HallusionBench": ("hallusionbench", {}, "vlmevalkit"),
}

#: Files VLMEvalKit writes beside a prediction sheet, and what they are.
_VLMEVALKIT_SIDE_FILES = {
    "auxmatch": "VLMEvalKit's intermediate sheet (its extracted answers), not the predictions",
    "score": "VLMEvalKit's score table (figures, not answers)",
    "acc": "VLMEvalKit's score table (figures, not answers)",
}

_LMMS_NAME = re.compile(r"(?:^|_)samples_(?P<task>[A-Za-z0-9_]+)$")


class FoundAnswers(BaseModel):
    """A file of answers halluscope scores: which tool wrote it, for which benchmark, read how."""

    model_config = ConfigDict(frozen=True)

    path: Path
    tool: str
    model: str
    benchmark: str
    options: dict[str, Any] = Field(default_factory=dict)
    judge: str | None = None


class Skipped(BaseModel):
    """A file of the folder that is not scored, and why."""

    model_config = ConfigDict(frozen=True)

    path: Path
    why: str


def scan_answers(folder: Path) -> tuple[list[FoundAnswers], list[Skipped]]:
    """Every file under ``folder`` (recursively, in name order): the answers to score and the files skipped."""
    if not folder.is_dir():
        from halluscope.suite.spec import SuiteError

        raise SuiteError(f"--from {folder}: not a folder of answer files")
    found: list[FoundAnswers] = []
    skipped: list[Skipped] = []
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith("."))
    questions = {p for p in files if _is_llava_questions(p)}
    for path in files:
        if path in questions:
            skipped.append(Skipped(path=path, why="LLaVA's question file (read with the answers beside it)"))
            continue
        outcome = _recognise(path, questions)
        (found if isinstance(outcome, FoundAnswers) else skipped).append(outcome)  # type: ignore[arg-type]
    return found, skipped


def _recognise(path: Path, questions: set[Path]) -> FoundAnswers | Skipped:
    from halluscope.importers import detect_external

    suffix = path.suffix.lower()
    if suffix in (".xlsx", ".tsv", ".csv"):
        return _vlmevalkit(path)
    if suffix not in (".jsonl", ".json"):
        return Skipped(path=path, why=f"not an answer file ({suffix or 'no suffix'})")
    tool = detect_external(path)
    if tool == "lmms-eval":
        return _lmms_eval(path)
    if tool == "llava":
        return _llava(path, questions)
    return Skipped(path=path, why="not an lmms-eval sample log, a VLMEvalKit sheet or a LLaVA answer file")


def _vlmevalkit(path: Path) -> FoundAnswers | Skipped:
    stem = path.stem
    for dataset, (benchmark, options, judge) in VLMEVALKIT_DATASETS.items():
        if stem.endswith(f"_{dataset}") and len(stem) > len(dataset) + 1:
            model = stem[: -len(dataset) - 1]
            return FoundAnswers(
                path=path, tool="vlmevalkit", model=model, benchmark=benchmark, options=options, judge=judge
            )
        marker = f"_{dataset}_"
        if marker in stem:
            rest = stem.split(marker, 1)[1].lower()
            why = next((w for key, w in _VLMEVALKIT_SIDE_FILES.items() if rest.startswith(key)), None)
            return Skipped(path=path, why=why or f"a file VLMEvalKit writes beside its {dataset} predictions")
    known = ", ".join(VLMEVALKIT_DATASETS)
    return Skipped(path=path, why=f"a table named for no dataset halluscope scores from VLMEvalKit ({known})")


def _lmms_eval(path: Path) -> FoundAnswers | Skipped:
    match = _LMMS_NAME.search(path.stem)
    if match is None:
        return Skipped(
            path=path, why="an lmms-eval sample log whose name does not say its task (samples_<task>)"
        )
    task = match.group("task")
    if task not in LMMS_TASKS:
        return Skipped(
            path=path, why=f"lmms-eval task {task!r} is not one halluscope scores ({', '.join(LMMS_TASKS)})"
        )
    benchmark, options = LMMS_TASKS[task]
    model = path.parent.name if path.parent.name else "lmms-eval"
    return FoundAnswers(path=path, tool="lmms-eval", model=model, benchmark=benchmark, options=options)


def _llava(path: Path, questions: set[Path]) -> FoundAnswers | Skipped:
    beside = sorted(q for q in questions if q.parent == path.parent)
    names = " ".join(p.name.lower() for p in (path, *beside, *path.parents[:3]))
    if "pope" not in names:
        return Skipped(
            path=path, why="a LLaVA answer file for a benchmark its name and folder do not say (POPE)"
        )
    options: dict[str, Any] = {"mode": "paper", "sources": "coco"}
    if beside:
        options["questions"] = str(beside[0])
    return FoundAnswers(path=path, tool="llava", model=path.stem, benchmark="pope", options=options)


def _is_llava_questions(path: Path) -> bool:
    """LLaVA's question file (``question_id``, ``image``, ``text``, ``category``; no answer fields)."""
    if path.suffix.lower() != ".jsonl" or not path.name.startswith("llava_"):
        return False
    import json

    try:
        with path.open(encoding="utf-8") as handle:
            row = json.loads(handle.readline())
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(row, dict) and {"question_id", "image", "text"} <= set(row) and "answer_id" not in row
