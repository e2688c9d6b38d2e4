"""Reading the answer files other tools already wrote, as halluscope responses (one module per tool).

Why: users switch tools only if they need not re-run their models, and trust a score only if it comes out
the same as the number their tool printed. Three tools' layouts are read, each recognised by content:

- **LLaVA** (:mod:`.llava`): ``model_vqa_loader``'s answer lines (``question_id``, ``prompt``, ``text``,
  ``answer_id``, ``model_id``), with LLaVA's question file (``--bench-opt questions=FILE``) where the
  ``question_id`` is the question file's and not the benchmark's;
- **lmms-eval** (:mod:`.lmms_eval`): ``--log_samples`` output of every version, with or without ``doc``;
- **VLMEvalKit** (:mod:`.vlmevalkit`): prediction sheets (``.xlsx``, ``.tsv``, ``.csv``).

Every row is tied to one sample by the checks of :mod:`.common` (ids, then the question must agree), or
reported with its line or spreadsheet row number; never dropped or paired silently.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from halluscope.importers.common import ExternalRow, Matcher, question_agrees
from halluscope.importers.llava import is_llava_answers, read_llava
from halluscope.importers.lmms_eval import is_lmms_eval_row, lmms_answer, read_lmms_eval
from halluscope.importers.vlmevalkit import TABLE_SUFFIXES, read_table, read_vlmevalkit
from halluscope.jsonio import MAX_LINE_DEPTH, iter_jsonl, loads_json
from halluscope.responses import ResponsesError, ResponsesFile
from halluscope.stages import BenchmarkInterface

__all__ = [
    "EXTERNAL_KINDS",
    "ExternalRow",
    "Matcher",
    "detect_external",
    "iter_external_rows",
    "question_agrees",
    "read_external",
]

EXTERNAL_KINDS = ("lmms-eval", "vlmevalkit", "llava")


def detect_external(path: Path) -> str | None:
    """``"lmms-eval"``, ``"vlmevalkit"``, ``"llava"`` or None (then it is one of halluscope's own layouts)."""
    path = Path(path)
    if path.suffix.lower() in TABLE_SUFFIXES:
        return "vlmevalkit"
    try:
        with path.open(encoding="utf-8") as handle:
            first = handle.readline()
        row = loads_json(first, max_depth=MAX_LINE_DEPTH)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if is_lmms_eval_row(row):
        return "lmms-eval"
    if is_llava_answers(row):
        return "llava"
    return None


def iter_external_rows(path: Path, kind: str) -> Iterator[tuple[str, dict[str, Any], str | None, str | None]]:
    """``(where, fields, answer, problem)`` for each row, before any matching (for inspection and tests)."""
    path = Path(path)
    if kind == "vlmevalkit":
        for number, row in read_table(path):
            answer = row.get("prediction")
            where = f"{path.name} row {number}"
            yield where, row, None if answer is None else str(answer), (
                "no 'prediction' column value" if answer is None else None
            )
        return
    if kind not in EXTERNAL_KINDS:
        raise ValueError(f"unknown external layout {kind!r}; choose one of {', '.join(EXTERNAL_KINDS)}")
    for line in iter_jsonl(path):
        where = f"{path.name} line {line.number}"
        if not line.ok or not isinstance(line.value, dict):
            yield where, {}, None, line.error or "not a JSON object"
            continue
        row = line.value
        if kind == "lmms-eval":
            doc = row["doc"] if isinstance(row.get("doc"), dict) else {}
            answer = lmms_answer(row)
            yield where, {**doc, "doc_id": row.get("doc_id")}, answer, (
                None if answer is not None else "no model output in resps"
            )
        else:
            answer = row.get("text") if isinstance(row.get("text"), str) else None
            yield where, {"question_id": row.get("question_id")}, answer, None if answer else "no answer text"


_READERS = {"lmms-eval": read_lmms_eval, "vlmevalkit": read_vlmevalkit, "llava": read_llava}


def read_external(
    path: Path, kind: str, benchmark: BenchmarkInterface, *, benchmark_ids: set[str] | None = None
) -> ResponsesFile:
    """Responses from another tool's file, matched to ``benchmark``'s sample ids (see each module)."""
    path = Path(path)
    if not path.exists():
        raise ResponsesError(f"responses file not found: {path}")
    reader = _READERS.get(kind)
    if reader is None:
        raise ValueError(f"unknown external layout {kind!r}; choose one of {', '.join(EXTERNAL_KINDS)}")
    return reader(path, benchmark, benchmark_ids=benchmark_ids)
