"""Reading and writing the answers a model gave, in the formats users bring.

halluscope's own format is JSONL, one object per line::

    {"id": "2374892-0", "response": "The lamp is on.", "claims": [["lamp", "is", "on"]]}

``id`` and ``response`` are required; ``claims`` (pre-extracted triplets) is optional and, when present,
skips extraction for that sample; any other field is kept in ``Response.metadata``. The official Tri-HE
layout (answers written into ``tri-he.json`` under a key of each question) is read too.

A bad line never stops the others from loading: each problem is collected with its line number and id,
so a user sees every fault at once and the valid answers can still be scored.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from halluscope.jsonio import write_jsonl_atomic
from halluscope.types import Claim, Response

_CORE_FIELDS = {"id", "response", "claims", "model"}


class ResponsesError(ValueError):
    """The responses file cannot be used at all (missing, unreadable, no valid row)."""


@dataclass
class ResponsesFile:
    """Valid responses by id, and every problem found on the way, in file order."""

    responses: dict[str, Response] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def _parse_claims(value: Any, where: str) -> list[Claim]:
    if not isinstance(value, list):
        raise ValueError(f"{where}: 'claims' must be a list of [subject, relation, object] lists")
    claims: list[Claim] = []
    for position, item in enumerate(value):
        if not isinstance(item, list | tuple) or len(item) != 3 or not all(isinstance(p, str) for p in item):
            raise ValueError(f"{where}: claim {position} is not a list of 3 strings: {item!r}")
        if not all(p.strip() for p in item):
            raise ValueError(f"{where}: claim {position} has an empty part: {item!r}")
        claims.append(Claim.of(item))
    return claims


def parse_response_row(row: Any, where: str) -> Response:
    """One JSON object → Response; raises ValueError naming ``where`` and the problem."""
    if not isinstance(row, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(row).__name__}")
    if "id" not in row:
        raise ValueError(f"{where}: missing field 'id'")
    sample_id = row["id"]
    if not isinstance(sample_id, str | int) or isinstance(sample_id, bool):
        raise ValueError(f"{where}: 'id' must be a string, got {sample_id!r}")
    where = f"{where} (id {sample_id})"
    if "response" not in row:
        raise ValueError(f"{where}: missing field 'response'")
    if not isinstance(row["response"], str):
        raise ValueError(f"{where}: 'response' must be a string, got {type(row['response']).__name__}")
    claims = _parse_claims(row["claims"], where) if row.get("claims") is not None else None
    metadata = {k: v for k, v in row.items() if k not in _CORE_FIELDS}
    if isinstance(row.get("metadata"), dict):
        metadata = {**{k: v for k, v in metadata.items() if k != "metadata"}, **row["metadata"]}
    model = row.get("model") if isinstance(row.get("model"), str) else None
    return Response(
        id=str(sample_id), response=row["response"], claims=claims, model=model, metadata=metadata
    )


def load_responses(path: Path, *, benchmark_ids: set[str] | None = None) -> ResponsesFile:
    """Read a halluscope JSONL responses file; unknown ids are reported when ``benchmark_ids`` is given."""
    path = Path(path)
    if not path.exists():
        raise ResponsesError(f"responses file not found: {path}")
    result = ResponsesFile()
    first_line: dict[str, int] = {}
    with path.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path.name} line {line_number}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                result.problems.append(f"{where}: not valid JSON ({error.msg} at column {error.colno})")
                continue
            try:
                response = parse_response_row(row, where)
            except ValueError as error:
                result.problems.append(str(error))
                continue
            if response.id in first_line:
                result.problems.append(
                    f"{where}: duplicate id {response.id!r} (first seen on line {first_line[response.id]}); "
                    "the first one is used"
                )
                continue
            if benchmark_ids is not None and response.id not in benchmark_ids:
                result.problems.append(
                    f"{where}: unknown id {response.id!r}: no such sample in the benchmark"
                )
                continue
            first_line[response.id] = line_number
            result.responses[response.id] = response
    if not result.responses and result.problems:
        raise ResponsesError(
            f"no usable response in {path}: "
            + "; ".join(result.problems[:5])
            + (f" (and {len(result.problems) - 5} more problems)" if len(result.problems) > 5 else "")
        )
    return result


def load_tri_he_answers(path: Path, key: str | None = None) -> ResponsesFile:
    """Answers in the official Tri-HE layout: ``tri-he.json`` with each question's answer under ``key``.

    Without ``key``, the one field that is not part of the official file (question/answer/triplet) is used.
    """
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    result = ResponsesFile()
    official = {"question", "answer", "triplet"}
    if key is None:
        extra = {k for entry in raw.values() for inst in entry.get("instance", []) for k in inst} - official
        if len(extra) != 1:
            raise ResponsesError(
                f"{path}: cannot tell which field holds the answers (found {sorted(extra) or 'none'}); "
                "pass the answer key explicitly"
            )
        key = extra.pop()
    for image_id, entry in raw.items():
        for index, instance in enumerate(entry.get("instance", [])):
            sample_id = f"{image_id}-{index}"
            value = instance.get(key)
            if value is None:
                result.problems.append(f"{path.name}: {sample_id}: no answer under key {key!r}")
            elif not isinstance(value, str):
                result.problems.append(f"{path.name}: {sample_id}: answer under {key!r} is not a string")
            else:
                result.responses[sample_id] = Response(id=sample_id, response=value, model=key)
    return result


def read_any_responses(
    path: Path, *, benchmark_ids: set[str] | None = None, key: str | None = None
) -> ResponsesFile:
    """Pick the reader by content: a JSON object keyed by image id is the Tri-HE layout, else JSONL."""
    path = Path(path)
    if path.suffix == ".json":
        with path.open(encoding="utf-8") as handle:
            head = handle.read(1).strip() or handle.read(64).lstrip()[:1]
        if head == "{":
            try:
                return load_tri_he_answers(path, key)
            except json.JSONDecodeError:
                pass
    return load_responses(path, benchmark_ids=benchmark_ids)


def response_to_row(response: Response) -> dict[str, Any]:
    row: dict[str, Any] = {"id": response.id, "response": response.response}
    if response.claims is not None:
        row["claims"] = [list(c.as_tuple()) for c in response.claims]
    if response.model:
        row["model"] = response.model
    if response.metadata:
        row["metadata"] = response.metadata
    return row


def write_responses(path: Path, responses: Iterable[Response]) -> Path:
    """Write halluscope JSONL (atomically: a reader never sees half a file)."""
    return write_jsonl_atomic(path, (response_to_row(response) for response in responses))
