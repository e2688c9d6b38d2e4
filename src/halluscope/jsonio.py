"""The one place that writes JSON files atomically and reads JSONL files line by line.

Why one place: run directories, responses files, benchmark builds and profiles are all read by other tools
while halluscope may still be writing them. Writing to a temporary file and renaming it means a reader sees
the old file or the new one, never half of one; reading JSONL line by line with line numbers means a torn
last line (a process killed mid-write) or a corrupt line is reported by number instead of vanishing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

__all__ = [
    "JsonlLine",
    "iter_jsonl",
    "iter_jsonl_lines",
    "iter_jsonl_text",
    "json_line",
    "write_json_atomic",
    "write_jsonl_atomic",
    "write_text_atomic",
]


def write_text_atomic(path: Path, text: str, *, fsync: bool = False) -> Path:
    """Write ``text`` to ``path`` through a temporary file in the same folder, then rename it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with tmp.open("w", encoding="utf-8") as handle:
            handle.write(text)
            if fsync:
                handle.flush()
                os.fsync(handle.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)  # a full disk keeps its last free bytes; the old file is intact
        raise
    tmp.replace(path)
    return path


def write_json_atomic(path: Path, data: Any, *, fsync: bool = False) -> Path:
    """Pretty-printed UTF-8 JSON (values JSON cannot hold are written with ``str``)."""
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"
    return write_text_atomic(path, text, fsync=fsync)


def write_jsonl_atomic(path: Path, rows: Iterable[Mapping[str, Any] | str], *, fsync: bool = False) -> Path:
    """One JSON object a line; a ``str`` row is taken as an already-serialised line."""
    lines = [(row if isinstance(row, str) else json.dumps(row, ensure_ascii=False, default=str)) for row in rows]
    return write_text_atomic(path, "".join(line + "\n" for line in lines), fsync=fsync)


@dataclass(frozen=True)
class JsonlLine:
    """One non-blank line of a JSONL file: its 1-based number and either its value or what is wrong."""

    number: int
    value: Any = None
    #: Why the line could not be read (bad JSON); None when ``value`` holds it.
    error: str | None = None
    #: The file ends in this line without a newline: a write that was interrupted.
    torn: bool = False
    #: The raw text, for messages and for lines a caller wants to keep as they were.
    text: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None


def iter_jsonl_text(path: Path) -> Iterator[tuple[int, str, bool]]:
    """Every non-blank line as (1-based number, text without its newline, torn), not parsed.

    For readers that parse a line themselves (pydantic's ``model_validate_json`` reads a record in one
    step, faster than ``json.loads`` and then validating the dict); :func:`iter_jsonl` is built on it.
    """
    with Path(path).open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            torn = not line.endswith("\n")
            text = line.rstrip("\n")
            if text.strip():
                yield number, text, torn


class TextLine(NamedTuple):
    """One non-blank line of a JSONL file, not parsed, read whatever bytes it holds."""

    number: int
    #: The line without its newline (undecodable bytes shown as U+FFFD).
    text: str
    #: The file ends in this line without a newline: a write that was interrupted.
    torn: bool
    #: Why the line is not UTF-8 text (the first bad byte's column), or None when it is.
    undecodable: str | None


def iter_jsonl_lines(path: Path) -> Iterator[TextLine]:
    """Every non-blank line, like :func:`iter_jsonl_text`, but a line that is not UTF-8 text is yielded
    with what is wrong (``undecodable``) instead of stopping the whole file with ``UnicodeDecodeError``.

    For logs halluscope writes itself (``samples.jsonl``), where one damaged line is one corrupt record to
    list and redo; a file given by the user that is not text at all is refused whole, by its reader.
    """
    with Path(path).open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            torn = not raw.endswith(b"\n")
            body = raw.rstrip(b"\n")
            try:
                text, undecodable = body.decode("utf-8"), None
            except UnicodeDecodeError as error:
                text = body.decode("utf-8", "replace")
                undecodable = f"not UTF-8 text (byte {error.object[error.start]:#04x} at column {error.start + 1})"
            if text.strip():
                yield TextLine(number, text, torn, undecodable)


def json_line(number: int, text: str, torn: bool = False) -> JsonlLine:
    """One line parsed: its value, or the JSON error (column and message) as the problem."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        return JsonlLine(number, None, f"not valid JSON ({error.msg} at column {error.colno})", torn, text)
    return JsonlLine(number, value, None, torn, text)


def iter_jsonl(path: Path) -> Iterator[JsonlLine]:
    """Every non-blank line with its number; bad JSON and a torn last line come back flagged, not skipped.

    A torn last line that happens to parse is still flagged ``torn``: the writer did not finish it, so a
    run log treats it as not written.
    """
    for number, text, torn in iter_jsonl_text(path):
        yield json_line(number, text, torn)
