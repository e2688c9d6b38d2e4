"""halluscope's own answer files, and the pieces every answer-layout reader shares.

halluscope's own format is JSONL, one object per line::

    {"id": "2374892-0", "response": "The lamp is on.", "claims": [["lamp", "is", "on"]]}

``id`` and ``response`` are required; ``claims`` (pre-extracted triplets) is optional and, when present,
skips extraction for that sample; any other field is kept in ``Response.metadata``.

A benchmark's official layouts (Tri-HE's ``tri-he.json`` with answers added, Reefknot's JSONL lines with
``response`` filled in, HQH's ``HQH.json`` items, PROVE's lists) are read by that benchmark's
``read_responses``, in its module under ``benchmarks/``: the benchmark owns the layout and its ids. What those
readers share lives here, below them (the record they fill, :class:`ResponsesFile`; JSON and JSONL reading;
the error lines), so every layout reports its problems in the same words. Both ways of bringing answers use
the benchmark's reader: ``halluscope run --responses FILE`` and ``--model replay/FILE`` (the replay backend,
bound to the benchmark), so the same file scores the same either way.

A bad line never stops the others from loading: each problem is collected with its line number and id,
so a user sees every fault at once and the valid answers can still be scored.

The readers build one small acyclic object per line, so they run with the cyclic collector paused
(:mod:`halluscope.gcpause`): it would otherwise walk the growing set of loaded objects again and again while a
large file (Reefknot's 21,560 answers) is read.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from halluscope.gcpause import gc_paused
from halluscope.jsonio import JsonlLine, iter_jsonl_values, loads_json, write_jsonl_atomic
from halluscope.types import Claim, Response, Sample

_CORE_FIELDS = {"id", "response", "claims", "model"}


class ResponsesError(ValueError):
    """The responses file cannot be used at all (missing, unreadable, no valid row)."""


@dataclass
class ResponsesFile:
    """Valid responses by id, and every problem found on the way, in file order."""

    responses: dict[str, Response] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    #: Which layout the file was read as: ``halluscope``, a benchmark's own (``tri-he``, ``reefknot``, ``hqh``,
    #: ``prove``, ...) or another tool's (``llava``, ``lmms-eval``, ``vlmevalkit``).
    layout: str = "halluscope"
    #: Items the file defines itself, scored instead of the benchmark's own when its rows cannot be tied
    #: to those (a VLMEvalKit POPE sheet: no COCO image names, so its own ``answer`` column is the label).
    items: list[Sample] = field(default_factory=list)
    #: What a run should record about how the file was read (where the labels came from, the order used).
    notes: dict[str, Any] = field(default_factory=dict)

    def summary(self, path: Path | str, *, keep: int = 50) -> dict[str, Any]:
        """What ``spec.json`` keeps about the file: layout, answers, problems (count and the first ``keep``)."""
        out: dict[str, Any] = {
            "path": str(path),
            "layout": self.layout,
            "answers": len(self.responses),
            "problems": len(self.problems),
        }
        if self.problems:
            out["first_problems"] = self.problems[:keep]
        if self.items:
            out["items_from_file"] = len(self.items)
        out.update(self.notes)
        return out


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


def jsonl_problem(where: str, line: JsonlLine) -> str:
    """The problem of a JSONL line that did not parse, saying when it is a last line cut short."""
    torn = " (the file ends in the middle of this line: an interrupted write?)" if line.torn else ""
    return f"{where}: {line.error}{torn}"


@gc_paused()
def load_responses(path: Path, *, benchmark_ids: set[str] | None = None) -> ResponsesFile:
    """Read a halluscope JSONL responses file; unknown ids are reported when ``benchmark_ids`` is given.

    A last line without its newline is kept when it parses (files written by hand often end so); when it
    does not parse it is reported as an interrupted write, with its line number, like any bad line.
    """
    path = Path(path)
    if not path.exists():
        raise ResponsesError(f"responses file not found: {path}")
    result = ResponsesFile(layout="halluscope")
    first_line: dict[str, int] = {}
    for number, value, _torn, bad in iter_jsonl_values(path):
        where = f"{path.name} line {number}"
        if bad is not None:
            result.problems.append(jsonl_problem(where, bad))
            continue
        try:
            response = parse_response_row(value, where)
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
            result.problems.append(f"{where}: unknown id {response.id!r}: no such sample in the benchmark")
            continue
        first_line[response.id] = number
        result.responses[response.id] = response
    if not result.responses and result.problems:
        raise ResponsesError(
            f"no usable response in {path}: "
            + "; ".join(result.problems[:5])
            + (f" (and {len(result.problems) - 5} more problems)" if len(result.problems) > 5 else "")
        )
    return result


def nothing_usable(path: Path, problems: list[str]) -> ResponsesError:
    """The error of a file no answer of which could be used, naming its first five problems."""
    return ResponsesError(f"no usable response in {path}: " + "; ".join(problems[:5]))


def read_json_file(path: Path) -> Any:
    """The whole file as JSON; a :class:`ResponsesError` naming the file, the problem and its line if not."""
    try:
        return loads_json(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ResponsesError(f"{path}: not valid JSON ({error.msg}, line {error.lineno})") from error


def is_single_json_object(path: Path) -> bool:
    """Whether the whole file parses as one JSON object (a layout keyed by id, not JSONL)."""
    try:
        return isinstance(loads_json(path.read_text(encoding="utf-8")), dict)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False


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
