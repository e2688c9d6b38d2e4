"""The ``replay`` backend: answers read from a file instead of a live model.

Many users already have their model's answers, produced by the benchmark's own scripts or another harness.
Replaying them through the same ``generate`` interface lets every later stage (extraction, judging, metrics,
mitigation comparisons) run unchanged.

The file is read by the benchmark the model answers, through its ``read_responses``: each answer layout has
one reader, in the module of the benchmark that owns it (halluscope JSONL and other tools' outputs for every
benchmark; Tri-HE's ``tri-he.json``, Reefknot's official JSONL files, HQH's ``HQH.json``, PROVE's lists, ...;
docs/models.md lists them). Replay only hands the file to that reader when it is bound to the benchmark
(:meth:`ReplayModel.bind`, done by the collector before the first question), so ``--model replay/FILE`` and
``halluscope run --responses FILE`` read a file alike and score it alike. ``?key=`` (the answer's field),
``?claims_key=`` (Tri-HE: pre-extracted triplets) and ``?id_key=`` (PROVE: the id's field) go to that reader.

Before binding, the file is only checked (it exists, is text, its layout is told from its content): the
layout recorded in the model's identity (``format``) is the one :func:`detect_format` names, and a layout
named with ``?format=`` must be the one the benchmark reads the file as.

A sample with no answer in the file is a per-sample failure that names the file and the id; a file none of
whose ids matches the benchmark is rejected before anything runs (:meth:`ReplayModel.check_ids`).
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from halluscope.cache import Cache
from halluscope.jsonio import iter_jsonl, loads_json
from halluscope.models.base import GenerateRequest, GenerateResult, Model
from halluscope.responses import ResponsesError, ResponsesFile

if TYPE_CHECKING:
    from halluscope.stages import BenchmarkInterface

FORMATS = ("auto", "halluscope", "tri-he", "reefknot", "hqh", "prove")
#: The layout options a benchmark's reader may take besides ``key`` (Tri-HE's and PROVE's).
LAYOUT_OPTIONS = ("claims_key", "id_key")


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


def _reefknot_row(row: Any) -> bool:
    """A line of Reefknot's official files: a question (``query_prompt``) and no halluscope ``id``."""
    return isinstance(row, dict) and "query_prompt" in row and "id" not in row


def detect_format(path: Path) -> str:
    """Name the layout from the content (the first row of JSONL, the shape of JSON): the ``format`` of the
    model's identity. Only a name: the benchmark's reader reads the file (:meth:`ReplayModel.bind`)."""
    if path.is_dir():
        if any(_reefknot_row(_first_jsonl_row(file)) for file in sorted(path.glob("*.jsonl"))):
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
        if _reefknot_row(first):
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


def _not_text(path: Path, error: UnicodeDecodeError) -> ReplayError:
    return ReplayError(
        f"{path}: not a UTF-8 text file (byte {error.start}: {error.reason}); give the answers as JSON or JSONL text"
    )


# -- the backend ---------------------------------------------------------------------------------------


class ReplayModel(Model):
    """Answers each request with the file's answer for its ``sample_id``."""

    provider: ClassVar[str] = "replay"

    def __init__(
        self,
        path: Path,
        layout: str,
        *,
        key: str | None = None,
        claims_key: str | None = None,
        id_key: str | None = None,
        named: bool = False,
    ) -> None:
        self.path = path
        #: The answers, once :meth:`bind` has had the benchmark read the file; ``format`` is the layout.
        self.data = ReplayFile(layout)
        self.key = key
        self.claims_key = claims_key
        self.id_key = id_key
        #: Whether the layout was named (``?format=``) rather than told from the content.
        self.named = named
        self.bound = False

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
        """``spec`` is the path of the answers file (``replay/runs/llava/answers.jsonl``). The file is checked
        and its layout named here; it is read when the model is bound to the benchmark it answers."""
        path = Path(spec).expanduser()
        if not path.exists():
            raise ReplayError(f"answers file not found: {path}")
        if format not in FORMATS:
            raise ReplayError(f"unknown replay format {format!r}; choose one of: {', '.join(FORMATS)}")
        try:
            layout = detect_format(path) if format == "auto" else format
        except UnicodeDecodeError as error:
            raise _not_text(path, error) from error
        if path.is_dir() and layout != "reefknot":
            raise ReplayError(f"{path} is a folder; the {layout} layout is one file")
        return cls(path, layout, key=key, claims_key=claims_key, id_key=id_key, named=format != "auto")

    def bind(self, benchmark: BenchmarkInterface) -> None:
        """Read the file the way ``benchmark`` reads a responses file (its ``read_responses``, the one reader
        of each layout), so replay scores exactly like ``--responses``: a Reefknot benchmark matches lines to
        sample ids by content, Tri-HE reads its answer key and triplets, and so on."""
        reader: Callable[..., ResponsesFile] = benchmark.read_responses
        options = {name: getattr(self, name) for name in LAYOUT_OPTIONS if getattr(self, name) is not None}
        refused = [name for name in options if name not in inspect.signature(reader).parameters]
        if refused:
            raise ReplayError(
                f"{self.path}: the {benchmark.name} benchmark's answer layouts take no "
                + ", ".join(f"?{name}=" for name in refused)
            )
        try:
            loaded = reader(self.path, key=self.key, **options)
        except UnicodeDecodeError as error:
            raise _not_text(self.path, error) from error
        except (ResponsesError, ValueError, OSError) as error:
            message = str(error)
            raise ReplayError(message if str(self.path) in message else f"{self.path}: {message}") from error
        if self.named and loaded.layout != self.data.format:
            raise ReplayError(
                f"{self.path}: the {benchmark.name} benchmark reads this file as the {loaded.layout} layout, "
                f"not {self.data.format} (?format=)"
            )
        self.data = replace(from_responses(loaded), format=self.data.format)
        self.bound = True

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
        if not self.bound:
            raise ReplayError(
                f"{self.path} is read by the benchmark it answers: bind the replay model to it first (the run "
                "and `halluscope respond` do)"
            )
        answer = self.data.answers.get(request.sample_id)
        if answer is None:
            raise ReplayError(f"{self.path} has no answer for sample {request.sample_id!r}")
        metadata = dict(answer.metadata)
        if answer.claims is not None:
            metadata["claims"] = answer.claims
        return GenerateResult(text=answer.text, option_probs=answer.option_probs, metadata=metadata)
