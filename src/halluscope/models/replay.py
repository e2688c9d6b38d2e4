"""The ``replay`` backend: answers read from a file instead of a live model.

Many users already have their model's answers, produced by the benchmark's own scripts or another harness.
Replaying them through the same ``generate`` interface lets every later stage (extraction, judging, metrics,
mitigation comparisons) run unchanged. Layouts read (``format=auto`` picks by content):

- ``halluscope``: JSONL, ``{"id", "response", "claims"?, ...}`` per line;
- ``tri-he``: the official ``tri-he.json`` with each question's answer written under a key of its instance
  (``key=``); extracted triplets under ``<key>_triplets`` (or ``claims_key=``) are used as claims;
- ``reefknot``: the official JSONL files (or a folder of them) with ``response`` filled in;

these three are read by the one reader of each layout in :mod:`halluscope.responses`, the same one
``halluscope run --responses FILE`` uses. Once the replay model is bound to the benchmark it answers
(:meth:`ReplayModel.bind`, done by the collector), the file is read exactly as the benchmark reads it
(Reefknot lines matched to ids by content, not only by line number), so both paths score alike;
- ``hqh``: ``HQH.json`` items with an ``answer`` field; id = the item's ``id``;
- ``prove``: a JSON list of objects with a question id (``qa_id``/``question_id``/``id``, or ``id_key=``) and
  the response (``response``/``prediction``/``output``/``answer``, or ``key=``), or a JSON object mapping
  ids to response texts or to such objects.

A sample with no answer in the file is a per-sample failure that names the file and the id; a file none of
whose ids matches the benchmark is rejected before anything runs (:meth:`ReplayModel.check_ids`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from halluscope.cache import Cache
from halluscope.jsonio import iter_jsonl, loads_json
from halluscope.models.base import GenerateRequest, GenerateResult, Model
from halluscope.responses import (
    ResponsesError,
    ResponsesFile,
    is_reefknot_jsonl,
    load_reefknot_responses,
    load_responses,
    load_tri_he_answers,
)

if TYPE_CHECKING:
    from halluscope.stages import Benchmark

FORMATS = ("auto", "halluscope", "tri-he", "reefknot", "hqh", "prove")
#: Layouts whose one reader lives in :mod:`halluscope.responses` (shared with ``--responses``).
SHARED_LAYOUTS = ("halluscope", "tri-he", "reefknot")
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
        return loads_json(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ReplayError(f"{path}: not valid JSON ({error.msg}, line {error.lineno})") from error


def _first_jsonl_row(path: Path) -> Any:
    for line in iter_jsonl(path):
        return line.value if line.ok else None
    return None


def detect_format(path: Path) -> str:
    """Guess the layout from the content (the first row of JSONL, the shape of JSON)."""
    if path.is_dir():
        if is_reefknot_jsonl(path):
            return "reefknot"
        raise ReplayError(f"{path} is a folder, and not one holding Reefknot's official files")
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
            whole = loads_json(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            whole = None  # JSONL with a .json suffix
    if whole is None and isinstance(first, dict):
        if is_reefknot_jsonl(path):
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


def _probability(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if 0.0 <= number <= 1.0 else None


def from_responses(loaded: ResponsesFile) -> ReplayFile:
    """A file read by :mod:`halluscope.responses` as replay answers: nothing added, nothing dropped.

    Option probabilities are lifted out of the metadata only when the file gives them all (``option_probs``,
    or both of Reefknot's ``yes_prob``/``no_prob``); a missing probability stays missing, never 0.
    """
    result = ReplayFile(loaded.layout, problems=list(loaded.problems))
    for sample_id, response in loaded.responses.items():
        metadata = dict(response.metadata)
        option_probs = metadata.pop("option_probs", None)
        if not isinstance(option_probs, dict):
            option_probs = None
            yes, no = _probability(metadata.get("yes_prob")), _probability(metadata.get("no_prob"))
            if yes is not None and no is not None:
                option_probs = {"yes": yes, "no": no}
        if response.model and loaded.layout == "reefknot":
            metadata["mllm_name"] = response.model
        result.answers[sample_id] = ReplayAnswer(
            text=response.response,
            claims=[list(c.as_tuple()) for c in response.claims] if response.claims is not None else None,
            option_probs=option_probs,
            metadata=metadata,
        )
    return result


def _shared_reader(chosen: str, path: Path, key: str | None, claims_key: str | None) -> ResponsesFile:
    try:
        if chosen == "halluscope":
            return load_responses(path)
        if chosen == "tri-he":
            return load_tri_he_answers(path, key, claims_key)
        return load_reefknot_responses(path, key=key)
    except ResponsesError as error:
        raise ReplayError(str(error)) from error


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
    if not path.exists():
        raise ReplayError(f"answers file not found: {path}")
    if format not in FORMATS:
        raise ReplayError(f"unknown replay format {format!r}; choose one of: {', '.join(FORMATS)}")
    chosen = detect_format(path) if format == "auto" else format
    if chosen in SHARED_LAYOUTS:
        return from_responses(_shared_reader(chosen, path, key, claims_key))
    if path.is_dir():
        raise ReplayError(f"{path} is a folder; the {chosen} layout is one file")
    if chosen == "hqh":
        return read_hqh(path, key)
    return read_prove(path, key, id_key)


# -- the backend ---------------------------------------------------------------------------------------


class ReplayModel(Model):
    """Answers each request with the file's answer for its ``sample_id``."""

    provider: ClassVar[str] = "replay"

    def __init__(
        self, path: Path, data: ReplayFile, *, key: str | None = None, claims_key: str | None = None
    ) -> None:
        self.path = path
        self.data = data
        self.key = key
        self.claims_key = claims_key

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
        try:
            data = read_answers(path, format=format, key=key, claims_key=claims_key, id_key=id_key)
        except UnicodeDecodeError as error:
            raise ReplayError(
                f"{path}: not a UTF-8 text file (byte {error.start}: {error.reason}); give the answers as JSON "
                "or JSONL text"
            ) from error
        return cls(path, data, key=key, claims_key=claims_key)

    def bind(self, benchmark: Benchmark) -> None:
        """Read the file again the way ``benchmark`` reads a responses file, so replay scores like it.

        Only for the layouts with a shared reader, and only when the benchmark reads the file as the same
        layout: a Reefknot benchmark then matches lines to sample ids by content, exactly as
        ``--responses`` does. An explicit ``claims_key`` keeps the file as first read.
        """
        if self.data.format not in SHARED_LAYOUTS or self.claims_key is not None:
            return
        try:
            loaded = benchmark.read_responses(self.path, key=self.key)
        except (ResponsesError, ValueError, OSError) as error:
            raise ReplayError(f"{self.path}: {error}") from error
        if loaded.layout == self.data.format:
            self.data = from_responses(loaded)

    @property
    def problems(self) -> list[str]:
        return self.data.problems

    def ids(self) -> set[str]:
        return set(self.data.answers)

    def identity(self) -> dict[str, Any]:
        from halluscope.models.images import file_digest

        if self.path.is_dir():  # Reefknot's official files in one folder: one digest over them
            digest = hashlib.sha256()
            for file in sorted(self.path.iterdir()):
                if file.is_file() and file.suffix == ".jsonl":
                    digest.update(f"{file.name}:{file_digest(file)}\n".encode())
            sha256 = digest.hexdigest()
        else:
            sha256 = file_digest(self.path)
        return {
            "provider": self.provider,
            "path": str(self.path),
            "sha256": sha256,
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
