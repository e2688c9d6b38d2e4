"""Reefknot's official answer layout: the released JSONL lines with ``response`` filled in, one file per task
or a folder of them. This is the one reader of that layout: ``Reefknot.read_responses`` uses it, so
``halluscope run --responses FILE`` and ``--model replay/FILE`` (bound to the benchmark) read a file alike.

Kept beside :mod:`halluscope.benchmarks.reefknot` rather than in it only for size; the benchmark module
re-exports what users import.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from halluscope.gcpause import gc_paused
from halluscope.jsonio import iter_jsonl
from halluscope.responses import ResponsesError, ResponsesFile, jsonl_problem, nothing_usable
from halluscope.types import Response

#: File of each Reefknot task in the official release (and in what ``halluscope build reefknot`` writes).
REEFKNOT_FILES = {"yesno": "YESNO.jsonl", "mcq": "Multichoice.jsonl", "vqa": "VQA.jsonl"}
#: The ``type`` field of each task's lines.
REEFKNOT_TYPES = {"yesno": "Yes/No", "mcq": "Multichoice", "vqa": "VQA"}
_REEFKNOT_TASK_OF_TYPE = {
    **{v.lower(): k for k, v in REEFKNOT_TYPES.items()},
    "yesno": "yesno",
    "mcq": "mcq",
    "multichoice": "mcq",
}
#: Fields of an official Reefknot line that are not part of a model's answer.
REEFKNOT_OFFICIAL_FIELDS = frozenset(
    {"image_id", "query_prompt", "label", "type", "relation_type", "mllm_name", "response"}
)


def is_reefknot_jsonl(path: Path) -> bool:
    """A file (or folder of files) in Reefknot's layout: lines with ``query_prompt`` and no ``id``."""
    path = Path(path)
    if path.is_dir():
        return any((path / name).exists() for name in REEFKNOT_FILES.values())
    try:
        for line in iter_jsonl(path):
            return line.ok and isinstance(line.value, dict) and "query_prompt" in line.value and (
                "id" not in line.value
            )
    except (OSError, UnicodeDecodeError):
        return False
    return False


def _reefknot_key(task: str, row: Mapping[str, Any]) -> tuple[str, str, str, str]:
    return (
        task,
        str(row.get("image_id")).strip(),
        str(row.get("query_prompt")).strip(),
        str(row.get("label")).strip(),
    )


@gc_paused()
def load_reefknot_responses(
    path: Path,
    *,
    official: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    benchmark_ids: set[str] | None = None,
    key: str | None = None,
) -> ResponsesFile:
    """Answers in Reefknot's own layout: the official lines with ``response`` (or ``key``) filled in.

    ``path`` is one JSONL file or a folder holding ``YESNO.jsonl``/``Multichoice.jsonl``/``VQA.jsonl``.
    Each line's task comes from its ``type`` field (else from the file name). A line is matched to its
    sample id by its line number when that line of the official data (``official``: each task's rows)
    has the same image, question and label; otherwise by that content (so files the official scripts
    split per relation type, or reordered, still match). Without ``official`` the line number alone gives
    the id. Empty answers are kept (scored as given). ``yes_prob`` / ``no_prob`` and any other extra
    field go to ``Response.metadata`` unchanged (a missing probability stays missing); ``mllm_name``
    becomes ``Response.model``. This is the only reader of this layout: ``--responses FILE`` and
    ``--model replay/FILE`` both use it.
    """
    path = Path(path)
    field_name = key or "response"
    if not path.exists():
        raise ResponsesError(f"responses file not found: {path}")
    files = (
        [path / name for name in REEFKNOT_FILES.values() if (path / name).exists()]
        if path.is_dir()
        else [path]
    )
    index: dict[tuple[str, str, str, str], list[str]] = {}
    if official is not None:
        for task, rows in official.items():
            for number, row in enumerate(rows):
                index.setdefault(_reefknot_key(task, row), []).append(f"{task}-{number}")
    used: set[str] = set()
    result = ResponsesFile(layout="reefknot")
    outside = empty = 0
    for file in files:
        default_task = next((t for t, n in REEFKNOT_FILES.items() if file.name == n), None)
        for line in iter_jsonl(file):
            where = f"{file.name} line {line.number}"
            if not line.ok:
                result.problems.append(jsonl_problem(where, line))
                continue
            row = line.value
            if not isinstance(row, dict):
                result.problems.append(f"{where}: expected a JSON object")
                continue
            kind = _REEFKNOT_TASK_OF_TYPE.get(str(row.get("type", "")).strip().lower(), default_task)
            if kind is None:
                result.problems.append(
                    f"{where}: unknown type {row.get('type')!r} (expected Yes/No, Multichoice or VQA)"
                )
                continue
            answer = row.get(field_name)
            if not isinstance(answer, str):
                result.problems.append(f"{where}: {field_name!r} missing or not a string")
                continue
            number = line.number - 1
            sample_id = f"{kind}-{number}"
            if official is not None:
                official_rows = official.get(kind, [])
                content = _reefknot_key(kind, row)
                same_line = number < len(official_rows) and _reefknot_key(kind, official_rows[number]) == content
                if not same_line or sample_id in used:
                    candidates = [c for c in index.get(content, []) if c not in used]
                    if not candidates:
                        result.problems.append(
                            f"{where}: no {REEFKNOT_TYPES[kind]} question with this "
                            f"image, prompt and label in the benchmark data"
                        )
                        continue
                    sample_id = candidates[0]
            if sample_id in used:
                result.problems.append(f"{where}: a second answer for {sample_id}; the first one is used")
                continue
            used.add(sample_id)
            if benchmark_ids is not None and sample_id not in benchmark_ids:
                outside += 1
                continue
            if not answer.strip():
                empty += 1
            metadata = {
                k: v for k, v in row.items() if k not in REEFKNOT_OFFICIAL_FIELDS and k != field_name
            }
            model = row["mllm_name"] if isinstance(row.get("mllm_name"), str) and row["mllm_name"] else None
            result.responses[sample_id] = Response(id=sample_id, response=answer, model=model, metadata=metadata)
    if outside:
        result.problems.append(
            f"{outside} answers are for samples outside the selected tasks/relation types; ignored"
        )
    if empty:
        result.problems.append(
            f"{empty} answers are empty strings (scored as given: unanswered in robust mode)"
        )
    if result.responses and empty == len(result.responses):
        raise ResponsesError(
            f"{path}: no line has its {field_name!r} filled in (is this the unanswered official file?)"
        )
    if not result.responses:
        raise nothing_usable(path, result.problems)
    return result
