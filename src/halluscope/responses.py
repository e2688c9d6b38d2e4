"""Reading and writing the answers a model gave, in the formats users bring.

halluscope's own format is JSONL, one object per line::

    {"id": "2374892-0", "response": "The lamp is on.", "claims": [["lamp", "is", "on"]]}

``id`` and ``response`` are required; ``claims`` (pre-extracted triplets) is optional and, when present,
skips extraction for that sample; any other field is kept in ``Response.metadata``. Two official layouts
are read too: Tri-HE's (answers written into ``tri-he.json`` under a key of each question) and Reefknot's
(the official JSONL lines with ``response`` filled in).

There is exactly one reader per layout, here, and both ways of bringing answers use it: ``halluscope run
--responses FILE`` (through ``Benchmark.read_responses``) and ``--model replay/FILE`` (the replay backend),
so the same file scores the same either way.

A bad line never stops the others from loading: each problem is collected with its line number and id,
so a user sees every fault at once and the valid answers can still be scored.

The readers build one small acyclic object per line, so they run with the cyclic collector paused
(:mod:`halluscope.gcpause`): it would otherwise walk the growing set of loaded objects again and again while a
large file (Reefknot's 21,560 answers) is read.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from halluscope.gcpause import gc_paused
from halluscope.jsonio import JsonlLine, iter_jsonl, loads_json, write_jsonl_atomic
from halluscope.types import Claim, Response, Sample

_CORE_FIELDS = {"id", "response", "claims", "model"}


class ResponsesError(ValueError):
    """The responses file cannot be used at all (missing, unreadable, no valid row)."""


@dataclass
class ResponsesFile:
    """Valid responses by id, and every problem found on the way, in file order."""

    responses: dict[str, Response] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    #: Which layout the file was read as: ``halluscope``, ``tri-he``, ``reefknot`` or another tool's
    #: (``llava``, ``lmms-eval``, ``vlmevalkit``).
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


def _jsonl_problem(where: str, line: JsonlLine) -> str:
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
    for line in iter_jsonl(path):
        where = f"{path.name} line {line.number}"
        if not line.ok:
            result.problems.append(_jsonl_problem(where, line))
            continue
        try:
            response = parse_response_row(line.value, where)
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
        first_line[response.id] = line.number
        result.responses[response.id] = response
    if not result.responses and result.problems:
        raise ResponsesError(
            f"no usable response in {path}: "
            + "; ".join(result.problems[:5])
            + (f" (and {len(result.problems) - 5} more problems)" if len(result.problems) > 5 else "")
        )
    return result


# -- Tri-HE's official layout --------------------------------------------------------------------------

#: Fields of an official Tri-HE question; any other field holds something a user added (an answer).
TRI_HE_OFFICIAL_FIELDS = frozenset({"question", "answer", "triplet"})


def _read_json(path: Path) -> Any:
    try:
        return loads_json(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ResponsesError(f"{path}: not valid JSON ({error.msg}, line {error.lineno})") from error


def _parse_triplets(value: Any, where: str) -> list[Claim]:
    """Pre-extracted triplets as ``[s, r, o]`` lists or Tri-HE's ``"(s, r, o)"`` strings."""
    from halluscope.scene.triplets import TripletParseError, parse_triplet_string

    if not isinstance(value, list):
        raise ValueError(f"{where}: triplets must be a list, got {type(value).__name__}")
    claims: list[Claim] = []
    for item in value:
        if isinstance(item, list | tuple) and len(item) == 3 and all(isinstance(p, str) for p in item):
            parts = [p.strip().strip("\"'").strip() for p in item]
            if all(parts):
                claims.append(Claim.of(parts))
                continue
        elif isinstance(item, str):
            try:
                for claim in parse_triplet_string(item):
                    parts = [p.strip().strip("\"'").strip() for p in claim.as_tuple()]
                    if all(parts):
                        claims.append(Claim.of(parts))
                continue
            except TripletParseError:
                pass
        raise ValueError(f"{where}: cannot read triplet {item!r} as (subject, relation, object)")
    return claims


@gc_paused()
def load_tri_he_answers(
    path: Path,
    key: str | None = None,
    claims_key: str | None = None,
    *,
    benchmark_ids: set[str] | None = None,
) -> ResponsesFile:
    """Answers in the official Tri-HE layout: ``tri-he.json`` with each question's answer under ``key``.

    Ids are ``<image_id>-<index>``. Without ``key``, the one text field that is not part of the official
    file (question/answer/triplet) is used. Triplets already extracted from the answers, under
    ``<key>_triplets`` (or ``claims_key``; ``"none"`` ignores them), become the responses' claims, so
    extraction is skipped for them. This is the only reader of this layout: ``--responses FILE`` and
    ``--model replay/FILE`` both use it.
    """
    path = Path(path)
    if not path.exists():
        raise ResponsesError(f"responses file not found: {path}")
    raw = _read_json(path)
    if not isinstance(raw, dict):
        raise ResponsesError(f"{path}: the Tri-HE layout is a JSON object keyed by image id")
    text_keys: set[str] = set()
    list_keys: set[str] = set()
    for entry in raw.values():
        instances = entry.get("instance") if isinstance(entry, dict) else None
        for instance in instances if isinstance(instances, list) else []:
            for name, value in instance.items() if isinstance(instance, dict) else ():
                if name in TRI_HE_OFFICIAL_FIELDS:
                    continue
                if isinstance(value, str):
                    text_keys.add(name)
                elif isinstance(value, list):
                    list_keys.add(name)
    if key is None:
        if len(text_keys) != 1:
            found = ", ".join(sorted(text_keys)) or "none"
            raise ResponsesError(
                f"{path}: cannot tell which field of each question holds the model's answer (text fields "
                f"besides question/answer/triplet: {found}); pass the answer key explicitly "
                "(--responses-key, or ?key=<field> for replay)"
            )
        key = next(iter(text_keys))
    if claims_key is None and f"{key}_triplets" in list_keys:
        claims_key = f"{key}_triplets"
    if claims_key in {"none", ""}:
        claims_key = None
    result = ResponsesFile(layout="tri-he")
    for image_id, entry in raw.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("instance"), list):
            result.problems.append(f"{path.name}: image {image_id}: no 'instance' list")
            continue
        for index, instance in enumerate(entry["instance"]):
            sample_id = f"{image_id}-{index}"
            if benchmark_ids is not None and sample_id not in benchmark_ids:
                result.problems.append(f"{path.name}: {sample_id}: no such sample in the benchmark")
                continue
            value = instance.get(key) if isinstance(instance, dict) else None
            if not isinstance(value, str):
                what = "no answer" if value is None else f"a {type(value).__name__}, not text,"
                result.problems.append(f"{path.name}: {sample_id}: {what} under key {key!r}")
                continue
            claims = None
            if claims_key is not None and instance.get(claims_key) is not None:
                try:
                    claims = _parse_triplets(instance[claims_key], f"{path.name}: {sample_id} {claims_key!r}")
                except ValueError as error:
                    result.problems.append(str(error))
                    continue
            result.responses[sample_id] = Response(
                id=sample_id, response=value, claims=claims, model=key, metadata={"answer_key": key}
            )
    if not result.responses and result.problems:
        raise ResponsesError(f"no usable response in {path}: " + "; ".join(result.problems[:5]))
    return result


def is_tri_he_layout(path: Path) -> bool:
    """A ``.json`` file holding one JSON object (Tri-HE's layout is keyed by image id)."""
    path = Path(path)
    if path.suffix != ".json" or not path.is_file():
        return False
    with path.open(encoding="utf-8") as handle:
        head = handle.read(256).lstrip()
    return head.startswith("{")


# -- Reefknot's official layout ------------------------------------------------------------------------

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
                result.problems.append(_jsonl_problem(where, line))
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
        raise ResponsesError(f"no usable response in {path}: " + "; ".join(result.problems[:5]))
    return result


def read_any_responses(
    path: Path, *, benchmark_ids: set[str] | None = None, key: str | None = None
) -> ResponsesFile:
    """Pick the reader by content: a JSON object keyed by image id is the Tri-HE layout, else JSONL."""
    path = Path(path)
    if is_tri_he_layout(path):
        try:
            return load_tri_he_answers(path, key, benchmark_ids=benchmark_ids)
        except ResponsesError:
            if _is_single_json_object(path):
                raise
    return load_responses(path, benchmark_ids=benchmark_ids)


def _is_single_json_object(path: Path) -> bool:
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
