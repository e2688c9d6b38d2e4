"""VLMEvalKit's prediction sheets (``<model>_<dataset>.xlsx``, also ``.tsv`` / ``.csv``) as responses.

A sheet holds VLMEvalKit's own copy of the dataset's columns plus the model's ``prediction``. Each row is
handed to the benchmark's ``external_rows`` hook first, which reads back what VLMEvalKit's copy changed (seen
in the sheets VLMEvalKit wrote for VILA-1.5-8B): HallusionBench's official ids packed into ``index``; POPE's
table merging the three COCO sets, one row per distinct (image, question), so a row stands for an item in
each setting its ``category`` lists. Then each item is matched like any other tool's row (:mod:`.common`).

When no row can be tied to the benchmark's items at all, the benchmark's ``items_from_rows`` hook may make
items from the sheet's own rows (POPE: VLMEvalKit's ``index`` is its own row number and the image only a
local path, so the rows are scored on the sheet's ``answer`` column), and the run's ``spec.json`` says so
(``labels``). This module names no benchmark.

Reading the predictions the way VLMEvalKit does is a scoring mode of the benchmarks (POPE
``--bench-opt mode=vlmevalkit``, HallusionBench ``--bench-opt judge=vlmevalkit``), see
:mod:`halluscope.metrics.vlmevalkit`.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from halluscope.importers.common import ExternalRow, Matcher
from halluscope.importers.xlsx import iter_xlsx_rows
from halluscope.responses import ResponsesError, ResponsesFile
from halluscope.stages import BenchmarkInterface

__all__ = ["TABLE_SUFFIXES", "read_table", "read_vlmevalkit"]

TABLE_SUFFIXES = (".xlsx", ".tsv", ".csv")


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


def _sheet_row(path: Path, number: int, row: dict[str, Any]) -> ExternalRow:
    answer = row.get("prediction")
    question = row.get("question")
    return ExternalRow(
        f"{path.name} row {number}",
        row,
        None if answer is None else str(answer),
        problem="no 'prediction' column value" if answer is None else None,
        question=str(question) if question is not None else None,
        number=number,
    )


def _ties(benchmark: BenchmarkInterface, matcher: Matcher, row: ExternalRow) -> bool:
    """Whether an item the row stands for is one of the benchmark's."""
    try:
        items = benchmark.external_rows(row.fields)
    except ValueError:
        return False
    return any(matcher.match(fields) is not None for _, fields in items)


def read_vlmevalkit(
    path: Path, benchmark: BenchmarkInterface, *, benchmark_ids: set[str] | None = None
) -> ResponsesFile:
    """A VLMEvalKit prediction sheet, matched to ``benchmark``'s items (see the module docstring)."""
    path = Path(path)
    matcher = Matcher(benchmark, "vlmevalkit", benchmark_ids)
    rows = [_sheet_row(path, number, row) for number, row in read_table(path)]
    if rows and not any(_ties(benchmark, matcher, row) for row in rows):
        made = benchmark.items_from_rows(rows, "vlmevalkit")
        if made is not None:
            if not made.items:
                raise ResponsesError(f"no usable row in {path}: " + "; ".join(made.problems[:5]))
            return made
    for row in rows:
        try:
            items = benchmark.external_rows(row.fields)
        except ValueError as error:
            matcher.problem(f"{row.where}: {error}")
            continue
        for label, fields in items:
            where = f"{row.where} ({label})" if label else row.where
            matcher.add(ExternalRow(where, fields, row.answer, row.problem, row.question, row.number))
    return matcher.finish(path)
