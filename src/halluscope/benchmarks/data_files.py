"""Reading a benchmark's official files, and the error that names what is wrong with one.

The official question files come in two layouts (a JSON list, or JSONL); one reader takes both and names
the file and the line or item of any problem.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from halluscope.jsonio import MAX_LINE_DEPTH, loads_json

__all__ = ["BenchmarkDataError", "read_json_rows"]


class BenchmarkDataError(ValueError):
    """A benchmark file is missing or malformed; the message names the file and the line or item."""


def read_json_rows(path: Path) -> list[dict[str, Any]]:
    """A JSON list of objects, or JSONL (one object a line): the two layouts the official files use."""
    path = Path(path)
    if not path.exists():
        raise BenchmarkDataError(f"file not found: {path}")
    text = path.read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            rows = loads_json(text)
        except json.JSONDecodeError as error:
            raise BenchmarkDataError(f"{path} is not valid JSON: {error}") from error
        for index, row in enumerate(rows):
            if not isinstance(row, dict):
                raise BenchmarkDataError(f"{path}: item {index} is not a JSON object")
        return list(rows)
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = loads_json(line, max_depth=MAX_LINE_DEPTH)
        except json.JSONDecodeError as error:
            raise BenchmarkDataError(f"{path} line {number}: not valid JSON ({error.msg})") from error
        if not isinstance(row, dict):
            raise BenchmarkDataError(f"{path} line {number}: not a JSON object")
        rows.append(row)
    return rows
