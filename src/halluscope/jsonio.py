"""The one place that writes JSON files atomically and reads JSONL files line by line.

Why one place: run directories, responses files, benchmark builds and profiles are all read by other tools
while halluscope may still be writing them. Writing to a temporary file and renaming it means a reader sees
the old file or the new one, never half of one; reading JSONL line by line with line numbers means a torn
last line (a process killed mid-write) or a corrupt line is reported by number instead of vanishing.

Reading goes through :func:`loads_json` too, because Python's ``json`` parser recurses once per nesting
level: a hostile or broken value nested thousands of levels deep raises ``RecursionError``, which no
reader expects. Here it becomes :class:`JsonTooDeepError`, a ``json.JSONDecodeError``, so every reader's
"not valid JSON" handling covers it. A JSONL line is held to :data:`MAX_LINE_DEPTH` levels as well: deeper
values parse, but pydantic refuses them when a run writes and reads its records, so such a line is
reported as bad where it is read instead of failing a run later.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

__all__ = [
    "MAX_LINE_DEPTH",
    "JsonTooDeepError",
    "JsonlLine",
    "iter_jsonl",
    "iter_jsonl_lines",
    "iter_jsonl_text",
    "iter_jsonl_values",
    "json_line",
    "loads_json",
    "write_json_atomic",
    "write_jsonl_atomic",
    "write_text_atomic",
]


#: How deeply one JSONL line may nest (objects and lists); no record halluscope reads comes close, and
#: pydantic stops at about 200 levels when it reads a record back.
MAX_LINE_DEPTH = 100


class JsonTooDeepError(json.JSONDecodeError):
    """JSON nested more deeply than it may be; a ``json.JSONDecodeError`` so "bad JSON" handling covers it."""


def _too_deep_at(text: str, limit: int) -> int:
    """Where in ``text`` the nesting first passes ``limit`` levels (strings skipped), or -1."""
    depth = 0
    in_string = escaped = False
    for position, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return position
        elif char in "]}":
            depth -= 1
    return -1


def _nests_deeper_than(value: Any, limit: int) -> bool:
    """Whether a parsed value holds lists or objects more than ``limit`` levels deep (walked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        container, depth = stack.pop()
        if depth > limit:
            return True
        children = container.values() if isinstance(container, dict) else container
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def loads_json(text: str | bytes, *, max_depth: int | None = None) -> Any:
    """``json.loads``, except that a value nested too deeply raises :class:`JsonTooDeepError`.

    Without ``max_depth`` the limit is what Python's parser can follow (about a thousand levels); with it,
    values nested more than ``max_depth`` levels are refused too.
    """
    if isinstance(text, bytes | bytearray):
        text = text.decode("utf-8")
    try:
        value = json.loads(text)
    except RecursionError:
        raise _too_deep(text, max_depth) from None
    if (
        max_depth is not None
        and isinstance(value, dict | list)
        # Only a text with that many brackets can nest that deep: most values skip the walk.
        and text.count("[") + text.count("{") > max_depth
        and _nests_deeper_than(value, max_depth)
    ):
        raise _too_deep(text, max_depth)
    return value


def _too_deep(text: str, max_depth: int | None) -> JsonTooDeepError:
    """The error for ``text``, placed where its nesting passes the limit (as a JSON error's line/column)."""
    if max_depth is None:
        problem, limit = "nested too deeply (more levels of lists and objects than can be read)", 500
    else:
        problem, limit = f"nested too deeply (more than {max_depth} levels of lists and objects)", max_depth
    return JsonTooDeepError(problem, text, max(_too_deep_at(text, limit), 0))


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
    """One line parsed: its value, or the JSON error (column and message) as the problem.

    A line nested more than :data:`MAX_LINE_DEPTH` levels is a bad line like any other.
    """
    try:
        value = loads_json(text, max_depth=MAX_LINE_DEPTH)
    except JsonTooDeepError as error:
        return JsonlLine(number, None, f"{error.msg} at column {error.colno}", torn, text)
    except json.JSONDecodeError as error:
        return JsonlLine(number, None, f"not valid JSON ({error.msg} at column {error.colno})", torn, text)
    return JsonlLine(number, value, None, torn, text)


def iter_jsonl_values(path: Path) -> Iterator[tuple[int, Any, bool, JsonlLine | None]]:
    """Every non-blank line as (number, value, torn, bad): ``bad`` is None when the line parsed, else the
    :class:`JsonlLine` :func:`iter_jsonl` gives for it (value None, its error). The same lines and errors as
    :func:`iter_jsonl`, without a line object for each good line (a third of reading a large file)."""
    for number, text, torn in iter_jsonl_text(path):
        try:
            value = loads_json(text, max_depth=MAX_LINE_DEPTH)
        except (JsonTooDeepError, json.JSONDecodeError):
            yield number, None, torn, json_line(number, text, torn)
            continue
        yield number, value, torn, None


def iter_jsonl(path: Path) -> Iterator[JsonlLine]:
    """Every non-blank line with its number; bad JSON and a torn last line come back flagged, not skipped.

    A torn last line that happens to parse is still flagged ``torn``: the writer did not finish it, so a
    run log treats it as not written.
    """
    for number, text, torn in iter_jsonl_text(path):
        yield json_line(number, text, torn)
