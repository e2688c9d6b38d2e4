"""Reading the result files that lmms-eval and VLMEvalKit already wrote, as halluscope responses.

Why: users switch tools only if they need not re-run their models. Two layouts are read:

- **lmms-eval** ``--log_samples`` output: JSONL, one object per answered document, with ``doc_id``, ``doc``
  (the dataset row, images left out), ``target``, ``resps`` (a list per request of the model's raw outputs)
  and ``filtered_resps`` (after the task's filters). The answer is the first ``filtered_resps`` entry (the
  first ``resps`` entry when there is no filtered one).
- **VLMEvalKit** prediction files: a table (``.xlsx``, ``.tsv`` or ``.csv``) holding the dataset's columns
  (``index``, ``question``, ``answer``, ``category``, ...) plus the model's ``prediction``.

How rows become sample ids: the benchmark's ``external_id(fields)`` when it has one (POPE: ``question_id``
and ``category``; HallusionBench: category, subcategory, set, figure and question ids; AMBER: ``id``), else a
field that already holds a sample id of the benchmark (``id``, ``sample_id``, ``question_id``, ``index``).
Rows that match nothing are reported with their line (or spreadsheet row) number, never dropped silently.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

from halluscope.jsonio import iter_jsonl
from halluscope.responses import ResponsesError, ResponsesFile
from halluscope.types import Response

__all__ = ["EXTERNAL_KINDS", "detect_external", "iter_external_rows", "read_external"]

EXTERNAL_KINDS = ("lmms-eval", "vlmevalkit")
_TABLE_SUFFIXES = (".xlsx", ".tsv", ".csv")
_ID_FIELDS = ("id", "sample_id", "question_id", "index")


class _Matches(Protocol):
    def external_id(self, row: Mapping[str, Any]) -> str | None: ...


def detect_external(path: Path) -> str | None:
    """``"lmms-eval"``, ``"vlmevalkit"`` or None (then it is one of halluscope's own layouts)."""
    path = Path(path)
    if path.suffix.lower() in _TABLE_SUFFIXES:
        return "vlmevalkit"
    try:
        with path.open(encoding="utf-8") as handle:
            first = handle.readline()
        row = json.loads(first)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if isinstance(row, dict) and "doc_id" in row and ("resps" in row or "filtered_resps" in row):
        return "lmms-eval"
    return None


def _lmms_answer(row: Mapping[str, Any]) -> str | None:
    for key in ("filtered_resps", "resps"):
        value = row.get(key)
        while isinstance(value, list) and value:
            value = value[0]
        if isinstance(value, str):
            return value
    return None


def _read_table(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows of a VLMEvalKit table with their 1-based row number in the file (header is row 1)."""
    suffix = path.suffix.lower()
    if suffix == ".xlsx":
        try:
            import openpyxl
        except ImportError as error:  # pragma: no cover - openpyxl is in the "import" extra
            raise ResponsesError("reading .xlsx needs openpyxl: pip install 'halluscope[import]'") from error
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
        try:
            sheet = book.worksheets[0]
            rows = sheet.iter_rows(values_only=True)
            header = [str(h) if h is not None else "" for h in next(rows, ())]
            for number, values in enumerate(rows, start=2):
                if values is None or all(v is None for v in values):
                    continue
                yield number, {h: v for h, v in zip(header, values, strict=False) if h}
        finally:
            book.close()
        return
    delimiter = "\t" if suffix == ".tsv" else ","
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter=delimiter)
        for number, row in enumerate(reader, start=2):
            yield number, {k: v for k, v in row.items() if k}


def iter_external_rows(path: Path, kind: str) -> Iterator[tuple[str, dict[str, Any], str | None, str | None]]:
    """``(where, fields, answer, problem)`` for each row; ``fields`` are what ids are matched on."""
    path = Path(path)
    if kind == "lmms-eval":
        for line in iter_jsonl(path):
            where = f"{path.name} line {line.number}"
            if not line.ok or not isinstance(line.value, dict):
                yield where, {}, None, line.error or "not a JSON object"
                continue
            row = line.value
            doc: dict[str, Any] = row["doc"] if isinstance(row.get("doc"), dict) else {}
            fields = {**doc, "doc_id": row.get("doc_id")}
            answer = _lmms_answer(row)
            yield where, fields, answer, None if answer is not None else "no model output in resps"
    elif kind == "vlmevalkit":
        for number, row in _read_table(path):
            where = f"{path.name} row {number}"
            answer = row.get("prediction")
            if answer is None:
                yield where, row, None, "no 'prediction' column value"
                continue
            yield where, row, str(answer), None
    else:
        raise ValueError(f"unknown external layout {kind!r}; choose one of {', '.join(EXTERNAL_KINDS)}")


def _generic_id(fields: Mapping[str, Any], benchmark_ids: set[str] | None) -> str | None:
    for key in _ID_FIELDS:
        value = fields.get(key)
        if value is None:
            continue
        text = str(value)
        if benchmark_ids is None or text in benchmark_ids:
            return text
    return None


def read_external(
    path: Path, kind: str, benchmark: object, *, benchmark_ids: set[str] | None = None
) -> ResponsesFile:
    """Responses from an lmms-eval or VLMEvalKit file, matched to ``benchmark``'s sample ids."""
    path = Path(path)
    if not path.exists():
        raise ResponsesError(f"responses file not found: {path}")
    matcher = benchmark.external_id if hasattr(benchmark, "external_id") else None
    result = ResponsesFile()
    seen: dict[str, str] = {}
    for where, fields, answer, problem in iter_external_rows(path, kind):
        if problem is not None:
            result.problems.append(f"{where}: {problem}")
            continue
        sample_id = matcher(fields) if matcher is not None else None
        if sample_id is None:
            sample_id = _generic_id(fields, benchmark_ids)
        if sample_id is None or (benchmark_ids is not None and sample_id not in benchmark_ids):
            shown = {k: fields[k] for k in list(fields)[:6]}
            result.problems.append(f"{where}: matches no sample of the benchmark ({kind} fields {shown})")
            continue
        if sample_id in seen:
            result.problems.append(f"{where}: duplicate answer for {sample_id} (first at {seen[sample_id]})")
            continue
        seen[sample_id] = where
        result.responses[sample_id] = Response(
            id=sample_id, response=answer or "", metadata={"imported_from": kind, "source_row": where}
        )
    if not result.responses and result.problems:
        raise ResponsesError(
            f"no row of {path} matched the benchmark: " + "; ".join(result.problems[:5])
            + (f" (and {len(result.problems) - 5} more)" if len(result.problems) > 5 else "")
        )
    return result
