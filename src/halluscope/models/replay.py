"""The ``replay`` backend: answers read from a file instead of a live model.

Many users already have their model's answers, produced by the benchmark's own scripts or another harness.
Replaying them through the same ``generate`` interface lets every later stage (extraction, judging, metrics,
mitigation comparisons) run unchanged. Layouts read (``format=auto`` picks by content):

- ``halluscope``: JSONL, ``{"id", "response", "claims"?, ...}`` per line (see :mod:`halluscope.responses`);
- ``tri-he``: the official ``tri-he.json`` with each question's answer written under a key of its instance
  (``key=``; found automatically when exactly one extra text field exists). Extracted triplets under
  ``<key>_triplets`` (or ``claims_key=``) are used as pre-extracted claims. Ids ``<image_id>-<index>``;
- ``reefknot``: the official JSONL files with ``response`` filled in (``yes_prob``/``no_prob`` kept as
  option probabilities). Ids ``yesno-<line>``, ``mcq-<line>``, ``vqa-<line>`` by the row's ``type``, the
  0-based line of the file (use one official file per task, unchanged in order);
- ``hqh``: ``HQH.json`` items with an ``answer`` field; id = the item's ``id``;
- ``prove``: a JSON list of objects with a question id (``qa_id``/``question_id``/``id``, or ``id_key=``) and
  the response (``response``/``prediction``/``output``/``answer``, or ``key=``), or a JSON object mapping
  ids to response texts or to such objects.

A sample with no answer in the file is a per-sample failure that names the file and the id; a file none of
whose ids matches the benchmark is rejected before anything runs (:meth:`ReplayModel.check_ids`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from halluscope.cache import Cache
from halluscope.models.base import GenerateRequest, GenerateResult, Model

FORMATS = ("auto", "halluscope", "tri-he", "reefknot", "hqh", "prove")
_REEFKNOT_TASKS = {"yes/no": "yesno", "yesno": "yesno", "multichoice": "mcq", "mcq": "mcq", "vqa": "vqa"}
_TRI_HE_OFFICIAL = {"question", "answer", "triplet"}
_PROVE_ID_KEYS = ("qa_id", "question_id", "qid", "id")
_PROVE_RESPONSE_KEYS = ("response", "prediction", "output", "model_answer", "answer")


class ReplayError(ValueError):
    """The answers file cannot be read, or does not fit the benchmark; the message names file and ids."""


@dataclass
class ReplayAnswer:
    text: str
    claims: list[list[str]] | None = None
    option_probs: dict[str, float] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class ReplayFile:
    format: str
    answers: dict[str, ReplayAnswer] = field(default_factory=dict)
    #: Rows that could not be used, each naming its line or id.
    problems: list[str] = field(default_factory=list)


# -- readers -------------------------------------------------------------------------------------------


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ReplayError(f"{path}: not valid JSON ({error.msg}, line {error.lineno})") from error


def _jsonl_rows(path: Path) -> Iterable[tuple[int, Any | None, str | None]]:
    """(0-based line, parsed row or None, problem or None) for every line, blank ones included."""
    with path.open(encoding="utf-8") as handle:
        for index, line in enumerate(handle):
            if not line.strip():
                yield index, None, None
                continue
            try:
                yield index, json.loads(line), None
            except json.JSONDecodeError as error:
                yield index, None, f"{path.name} line {index + 1}: not valid JSON ({error.msg})"


def _first_jsonl_row(path: Path) -> Any:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                try:
                    return json.loads(line)
                except json.JSONDecodeError:
                    return None
    return None


def detect_format(path: Path) -> str:
    """Guess the layout from the content (the first row of JSONL, the shape of JSON)."""
    with path.open(encoding="utf-8") as handle:
        head = handle.read(4096)
    stripped = head.lstrip()
    if not stripped:
        raise ReplayError(f"{path} is empty")
    first = _first_jsonl_row(path)
    whole: Any = None
    if not isinstance(first, dict) or stripped.startswith("["):
        whole = _read_json(path)
    elif path.suffix == ".json":
        try:
            whole = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            whole = None  # JSONL with a .json suffix
    if whole is None and isinstance(first, dict):
        if "query_prompt" in first:
            return "reefknot"
        if "id" in first and "response" in first:
            return "halluscope"
        raise ReplayError(
            f"{path}: cannot tell the layout of this JSONL (first row has fields {sorted(first)}); "
            "expected 'id'+'response' (halluscope) or Reefknot's 'query_prompt'+'response'; "
            "name it with ?format=..."
        )
    if isinstance(whole, dict):
        values = list(whole.values())
        if values and all(isinstance(v, dict) and "instance" in v for v in values[:20]):
            return "tri-he"
        return "prove"
    if isinstance(whole, list):
        items = [x for x in whole[:20] if isinstance(x, dict)]
        if items and all("instruction" in x and "ground_truth" in x for x in items):
            return "hqh"
        return "prove"
    raise ReplayError(f"{path}: expected a JSON object or list, or JSONL")


def _parse_claims(value: Any, where: str) -> list[list[str]]:
    from halluscope.scene.triplets import TripletParseError, parse_triplet_string

    if not isinstance(value, list):
        raise ReplayError(f"{where}: triplets must be a list, got {type(value).__name__}")
    claims: list[list[str]] = []
    for item in value:
        if isinstance(item, list | tuple) and len(item) == 3 and all(isinstance(p, str) for p in item):
            parts = [p.strip().strip("\"'").strip() for p in item]
            if all(parts):
                claims.append(parts)
                continue
        elif isinstance(item, str):
            try:
                for claim in parse_triplet_string(item):
                    parts = [p.strip().strip("\"'").strip() for p in claim.as_tuple()]
                    if all(parts):
                        claims.append(parts)
                continue
            except TripletParseError:
                pass
        raise ReplayError(f"{where}: cannot read triplet {item!r} as (subject, relation, object)")
    return claims


def read_halluscope(path: Path) -> ReplayFile:
    from halluscope.responses import ResponsesError, load_responses

    try:
        loaded = load_responses(path)
    except ResponsesError as error:
        raise ReplayError(str(error)) from error
    result = ReplayFile("halluscope", problems=list(loaded.problems))
    for sample_id, response in loaded.responses.items():
        metadata = dict(response.metadata)
        option_probs = metadata.pop("option_probs", None)
        result.answers[sample_id] = ReplayAnswer(
            text=response.response,
            claims=[list(c.as_tuple()) for c in response.claims] if response.claims is not None else None,
            option_probs=option_probs if isinstance(option_probs, dict) else None,
            metadata=metadata,
        )
    return result


def read_tri_he(path: Path, key: str | None = None, claims_key: str | None = None) -> ReplayFile:
    raw = _read_json(path)
    if not isinstance(raw, dict):
        raise ReplayError(f"{path}: the Tri-HE layout is a JSON object keyed by image id")
    text_keys: set[str] = set()
    list_keys: set[str] = set()
    for entry in raw.values():
        for instance in entry.get("instance", []) if isinstance(entry, dict) else []:
            for k, v in instance.items():
                if k in _TRI_HE_OFFICIAL:
                    continue
                (text_keys if isinstance(v, str) else list_keys if isinstance(v, list) else set()).add(k)
    if key is None:
        if len(text_keys) != 1:
            found = ", ".join(sorted(text_keys)) or "none"
            raise ReplayError(
                f"{path}: cannot tell which field of each question holds the model's answer (text fields "
                f"besides question/answer/triplet: {found}); name it with ?key=<field>"
            )
        key = next(iter(text_keys))
    if claims_key is None and f"{key}_triplets" in list_keys:
        claims_key = f"{key}_triplets"
    if claims_key in {"none", ""}:
        claims_key = None
    result = ReplayFile("tri-he")
    for image_id, entry in raw.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("instance"), list):
            result.problems.append(f"{path.name}: image {image_id}: no 'instance' list")
            continue
        for index, instance in enumerate(entry["instance"]):
            sample_id = f"{image_id}-{index}"
            value = instance.get(key) if isinstance(instance, dict) else None
            if not isinstance(value, str):
                what = "no answer" if value is None else f"a {type(value).__name__}, not text,"
                result.problems.append(f"{path.name}: {sample_id}: {what} under key {key!r}")
                continue
            claims = None
            if claims_key is not None and instance.get(claims_key) is not None:
                try:
                    claims = _parse_claims(instance[claims_key], f"{path.name}: {sample_id} {claims_key!r}")
                except ReplayError as error:
                    result.problems.append(str(error))
                    continue
            result.answers[sample_id] = ReplayAnswer(text=value, claims=claims, metadata={"answer_key": key})
    return result


def _probability(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if 0.0 <= number <= 1.0 else None


def read_reefknot(path: Path, key: str | None = None) -> ReplayFile:
    field_name = key or "response"
    result = ReplayFile("reefknot")
    for index, row, problem in _jsonl_rows(path):
        where = f"{path.name} line {index + 1}"
        if problem:
            result.problems.append(problem)
            continue
        if row is None:
            continue
        if not isinstance(row, dict):
            result.problems.append(f"{where}: expected a JSON object")
            continue
        task = _REEFKNOT_TASKS.get(str(row.get("type", "")).strip().lower())
        if task is None:
            result.problems.append(
                f"{where}: unknown Reefknot type {row.get('type')!r} (Yes/No, Multichoice, VQA)"
            )
            continue
        sample_id = f"{task}-{index}"
        value = row.get(field_name)
        if not isinstance(value, str) or not value.strip():
            result.problems.append(f"{where} ({sample_id}): no answer in {field_name!r}")
            continue
        metadata: dict[str, Any] = {}
        option_probs = None
        yes, no = _probability(row.get("yes_prob")), _probability(row.get("no_prob"))
        if yes is not None or no is not None:
            option_probs = {"yes": yes or 0.0, "no": no or 0.0}
            metadata.update({"yes_prob": yes, "no_prob": no})
        if row.get("mllm_name"):
            metadata["mllm_name"] = row["mllm_name"]
        result.answers[sample_id] = ReplayAnswer(text=value, option_probs=option_probs, metadata=metadata)
    if not result.answers and any("no answer" in p for p in result.problems):
        raise ReplayError(
            f"{path}: no row has an answer in {field_name!r} (is this the unanswered official file?)"
        )
    return result


def read_hqh(path: Path, key: str | None = None) -> ReplayFile:
    field_name = key or "answer"
    raw = _read_json(path)
    if not isinstance(raw, list):
        raise ReplayError(f"{path}: the HQH layout is a JSON list of items")
    result = ReplayFile("hqh")
    for position, item in enumerate(raw):
        if not isinstance(item, dict) or "id" not in item:
            result.problems.append(f"{path.name} item {position}: no 'id'")
            continue
        sample_id = str(item["id"])
        value = item.get(field_name)
        if not isinstance(value, str):
            result.problems.append(
                f"{path.name} item {position} (id {sample_id}): no answer in {field_name!r}"
            )
            continue
        result.answers[sample_id] = ReplayAnswer(text=value)
    if not result.answers and result.problems:
        raise ReplayError(
            f"{path}: no HQH item has an answer in {field_name!r} (is this the unanswered HQH.json?)"
        )
    return result


def read_prove(path: Path, key: str | None = None, id_key: str | None = None) -> ReplayFile:
    raw = _read_json(path)
    result = ReplayFile("prove")

    def pick(row: dict[str, Any], names: Iterable[str]) -> str | None:
        return next((n for n in names if n in row), None)

    if isinstance(raw, dict):
        items = []
        for sample_id, value in raw.items():
            if isinstance(value, str):
                items.append({"__id": sample_id, "__text": value})
            elif isinstance(value, dict):
                items.append({"__id": sample_id, **value})
            else:
                result.problems.append(f"{path.name}: id {sample_id}: expected text or an object")
        id_names: tuple[str, ...] = ("__id",)
    elif isinstance(raw, list):
        items = [x for x in raw if isinstance(x, dict)]
        if len(items) != len(raw):
            result.problems.append(f"{path.name}: {len(raw) - len(items)} items are not JSON objects")
        id_names = (id_key,) if id_key else _PROVE_ID_KEYS
    else:
        raise ReplayError(f"{path}: expected a JSON list or object of responses")
    response_names = (key,) if key else ("__text", *_PROVE_RESPONSE_KEYS)
    for position, row in enumerate(items):
        id_field = pick(row, id_names)
        if id_field is None:
            result.problems.append(f"{path.name} item {position}: no id field ({', '.join(id_names)})")
            continue
        sample_id = str(row[id_field])
        text_field = pick(row, response_names)
        value = row.get(text_field) if text_field else None
        if not isinstance(value, str):
            result.problems.append(
                f"{path.name} item {position} (id {sample_id}): "
                f"no response field ({', '.join(response_names)})"
            )
            continue
        if sample_id in result.answers:
            result.problems.append(
                f"{path.name} item {position}: duplicate id {sample_id!r}; the first is used"
            )
            continue
        result.answers[sample_id] = ReplayAnswer(text=value)
    return result


def read_answers(
    path: Path,
    *,
    format: str = "auto",
    key: str | None = None,
    claims_key: str | None = None,
    id_key: str | None = None,
) -> ReplayFile:
    """Read an answers file in any supported layout."""
    if not path.is_file():
        raise ReplayError(f"answers file not found: {path}")
    if format not in FORMATS:
        raise ReplayError(f"unknown replay format {format!r}; choose one of: {', '.join(FORMATS)}")
    chosen = detect_format(path) if format == "auto" else format
    if chosen == "halluscope":
        return read_halluscope(path)
    if chosen == "tri-he":
        return read_tri_he(path, key, claims_key)
    if chosen == "reefknot":
        return read_reefknot(path, key)
    if chosen == "hqh":
        return read_hqh(path, key)
    return read_prove(path, key, id_key)


# -- the backend ---------------------------------------------------------------------------------------


class ReplayModel(Model):
    """Answers each request with the file's answer for its ``sample_id``."""

    provider: ClassVar[str] = "replay"

    def __init__(self, path: Path, data: ReplayFile, *, key: str | None = None) -> None:
        self.path = path
        self.data = data
        self.key = key

    @classmethod
    def from_spec(
        cls,
        spec: str,
        *,
        cache: Cache | None = None,
        format: str = "auto",
        key: str | None = None,
        claims_key: str | None = None,
        id_key: str | None = None,
    ) -> ReplayModel:
        """``spec`` is the path of the answers file (``replay/runs/llava/answers.jsonl``)."""
        path = Path(spec).expanduser()
        data = read_answers(path, format=format, key=key, claims_key=claims_key, id_key=id_key)
        return cls(path, data, key=key)

    @property
    def problems(self) -> list[str]:
        return self.data.problems

    def ids(self) -> set[str]:
        return set(self.data.answers)

    def identity(self) -> dict[str, Any]:
        from halluscope.models.images import file_digest

        return {
            "provider": self.provider,
            "path": str(self.path),
            "sha256": file_digest(self.path),
            "format": self.data.format,
            "key": self.key,
        }

    def check_ids(self, sample_ids: Iterable[str]) -> list[str]:
        """Compare the file's ids with the benchmark's; raise when none match, else return warnings."""
        wanted = list(sample_ids)
        have = self.ids()
        matched = [i for i in wanted if i in have]
        missing = [i for i in wanted if i not in have]
        extra = sorted(have - set(wanted))
        if wanted and not matched:
            raise ReplayError(
                f"none of the {len(wanted)} sample ids match the {len(have)} ids in {self.path} "
                f"({self.data.format} layout): the benchmark expects e.g. {wanted[:3]}, the file has e.g. "
                f"{sorted(have)[:3]}; is it the right file, benchmark and --format?"
            )
        warnings = []
        if missing:
            warnings.append(
                f"{self.path} has no answer for {len(missing)} of {len(wanted)} samples (e.g. {missing[:5]})"
            )
        if extra:
            warnings.append(
                f"{self.path} has {len(extra)} answers for ids outside this selection (e.g. {extra[:5]})"
            )
        return warnings

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        if request.sample_id is None:
            raise ReplayError("replay answers by sample id, and this request has none")
        answer = self.data.answers.get(request.sample_id)
        if answer is None:
            raise ReplayError(f"{self.path} has no answer for sample {request.sample_id!r}")
        metadata = dict(answer.metadata)
        if answer.claims is not None:
            metadata["claims"] = answer.claims
        return GenerateResult(text=answer.text, option_probs=answer.option_probs, metadata=metadata)
