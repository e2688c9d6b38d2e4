"""VLMEvalKit's prediction sheets (``<model>_<dataset>.xlsx``, also ``.tsv`` / ``.csv``) as responses.

A sheet holds VLMEvalKit's own copy of the dataset's columns plus the model's ``prediction``. Two of its
layouts need more than a column lookup (seen in the sheets VLMEvalKit wrote for VILA-1.5-8B):

- **HallusionBench**: no id columns; the official ids are packed into ``index`` as
  ``<category>_<subcategory>_<visual_input>_<set_id>_<figure_id>_<question_id>`` (``VD_illusion_1_0_0_0``),
  which is read back into the five official id fields; the row's ``question`` must agree with the item's.
- **POPE**: VLMEvalKit's table merges POPE's three COCO sets, one row per distinct (image, question), so a
  row's ``category`` may list several settings (``adversarial,popular``); VLMEvalKit counts such a row in
  each, and so does halluscope. Its ``index`` is VLMEvalKit's own row number and the image is only a local
  path (``.../POPE/0.jpg``), so the rows cannot be tied to POPE's items. When no row can be, the sheet's
  rows themselves become the items, labelled by the sheet's ``answer`` column (ids
  ``coco-<setting>-vlmevalkit<index>``), and the run's ``spec.json`` says so (``labels``). A sheet whose rows
  do name COCO images is matched to POPE's own items, setting by setting.

Reading the predictions the way VLMEvalKit does is a scoring mode of the benchmarks (POPE
``--bench-opt mode=vlmevalkit``, HallusionBench ``--bench-opt judge=vlmevalkit``), see
:mod:`halluscope.metrics.vlmevalkit`.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from halluscope.importers.common import ExternalRow, Matcher
from halluscope.importers.xlsx import iter_xlsx_rows
from halluscope.responses import ResponsesError, ResponsesFile
from halluscope.types import Sample

__all__ = ["TABLE_SUFFIXES", "hallusion_fields_from_index", "read_table", "read_vlmevalkit"]

TABLE_SUFFIXES = (".xlsx", ".tsv", ".csv")
_HALLUSION_INDEX = re.compile(r"^(VD|VS)_([A-Za-z]+)_(\d+)_(\d+)_(\d+)_(\d+)$")
_POPE_SETTINGS = ("random", "popular", "adversarial")
_COCO_IMAGE = re.compile(r"COCO_val2014_\d+", re.IGNORECASE)


def read_table(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows of a VLMEvalKit table with their 1-based row number in the file (the header is row 1)."""
    suffix = path.suffix.lower()
    if suffix == ".xlsx":
        yield from iter_xlsx_rows(path)  # checked first: it must be a zip that does not unpack too large
        return
    delimiter = "\t" if suffix == ".tsv" else ","
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter=delimiter)
        for number, row in enumerate(reader, start=2):
            yield number, {k: v for k, v in row.items() if k}


def hallusion_fields_from_index(index: object) -> dict[str, str] | None:
    """HallusionBench's official id fields from VLMEvalKit's ``index`` (``VD_illusion_1_0_0_0``), or None."""
    match = _HALLUSION_INDEX.match(str(index).strip())
    if not match:
        return None
    category, subcategory, visual_input, set_id, figure_id, question_id = match.groups()
    return {
        "category": category,
        "subcategory": subcategory,
        "visual_input": visual_input,
        "set_id": set_id,
        "figure_id": figure_id,
        "question_id": question_id,
    }


def _settings(value: object) -> list[str] | None:
    parts = [p.strip() for p in str(value or "").split(",") if p.strip()]
    return parts if parts and all(p in _POPE_SETTINGS for p in parts) else None


def _label(value: object) -> str | None:
    text = str(value or "").strip().lower()
    return text if text in ("yes", "no") else None


def read_vlmevalkit(path: Path, benchmark: object, *, benchmark_ids: set[str] | None = None) -> ResponsesFile:
    """A VLMEvalKit prediction sheet, matched to ``benchmark``'s items (see the module docstring)."""
    path = Path(path)
    name = getattr(benchmark, "name", "")
    matcher = Matcher(benchmark, "vlmevalkit", benchmark_ids)
    if name == "pope":
        return _read_pope(path, benchmark, matcher)
    for number, row in read_table(path):
        where = f"{path.name} row {number}"
        fields = dict(row)
        if name == "hallusionbench" and not all(k in row for k in ("set_id", "figure_id", "question_id")):
            parsed = hallusion_fields_from_index(row.get("index"))
            if parsed is not None:
                fields.update(parsed)
        answer = row.get("prediction")
        question = row.get("question")
        matcher.add(
            ExternalRow(
                where,
                fields,
                None if answer is None else str(answer),
                problem="no 'prediction' column value" if answer is None else None,
                question=str(question) if question is not None else None,
            )
        )
    return matcher.finish(path)


def _read_pope(path: Path, benchmark: Any, matcher: Matcher) -> ResponsesFile:
    """POPE sheets: each row counts once per setting it lists; untied sheets are scored on their own labels."""
    rows = list(read_table(path))
    tied = 0
    for _, row in rows:
        settings = _settings(row.get("category")) or []
        if any(matcher.match({**row, "category": s}) is not None for s in settings):
            tied += 1
    if tied == 0 and rows and any(_label(row.get("answer")) for _, row in rows):
        return _pope_from_sheet(path, benchmark, rows, matcher)
    for number, row in rows:
        where = f"{path.name} row {number}"
        answer = row.get("prediction")
        listed = _settings(row.get("category"))
        if listed is None:
            matcher.problem(f"{where}: category {row.get('category')!r} names no POPE setting")
            continue
        for setting in listed:
            matcher.add(
                ExternalRow(
                    f"{where} ({setting})" if len(listed) > 1 else where,
                    {**row, "category": setting},
                    None if answer is None else str(answer),
                    problem="no 'prediction' column value" if answer is None else None,
                    question=str(row["question"]) if row.get("question") is not None else None,
                )
            )
    return matcher.finish(path)


def _pope_from_sheet(
    path: Path, benchmark: Any, rows: list[tuple[int, dict[str, Any]]], matcher: Matcher
) -> ResponsesFile:
    """The sheet's rows as POPE items (COCO), labelled by its ``answer`` column; one item per listed setting."""
    from halluscope.types import Response

    selected = {st for src, st in getattr(benchmark, "files", {}) if src == "coco"}
    result = matcher.result
    outside = 0
    for number, row in rows:
        where = f"{path.name} row {number}"
        settings = _settings(row.get("category"))
        label = _label(row.get("answer"))
        answer = row.get("prediction")
        index = row.get("index")
        problem = (
            f"category {row.get('category')!r} names no POPE setting" if settings is None
            else f"label {row.get('answer')!r} is neither Yes nor No" if label is None
            else "no 'prediction' column value" if answer is None
            else "no 'index'" if index is None
            else None
        )
        if problem is not None:
            result.problems.append(f"{where}: {problem}")
            continue
        assert settings is not None and label is not None
        for setting in settings:
            if setting not in selected:
                outside += 1
                continue
            sample_id = f"coco-{setting}-vlmevalkit{index}"
            if sample_id in result.responses:
                result.problems.append(f"{where}: a second row with index {index} in {setting}; the first is used")
                continue
            question = str(row.get("question") or "")
            result.items.append(
                Sample(
                    id=sample_id,
                    benchmark="pope",
                    prompt=question,
                    reference=label,
                    metadata={
                        "source": "coco",
                        "setting": setting,
                        "question_id": f"vlmevalkit{index}",
                        "type": "existence",
                        "label": label,
                        "line": number,
                        "image": str(row.get("image_path") or ""),
                        "settings_of_row": ",".join(settings),
                    },
                )
            )
            result.responses[sample_id] = Response(
                id=sample_id, response=str(answer), metadata={"imported_from": "vlmevalkit", "source_row": where}
            )
    if outside:
        result.notes["rows_outside_selected_settings"] = outside
    has_image = any(_COCO_IMAGE.search(str(row.get("image_path") or "")) for _, row in rows)
    result.notes["labels"] = (
        "the responses file's own 'answer' column: its rows name no POPE item"
        + ("" if has_image else " (no COCO image name in the sheet)")
        + f"; {len(result.items)} items from {len(rows)} rows, a row counted once per setting it lists"
    )
    if not result.items:
        raise ResponsesError(f"no usable row in {path}: " + "; ".join(result.problems[:5]))
    return result
