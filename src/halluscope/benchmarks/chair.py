"""CHAIR on COCO: object hallucination in image descriptions, scored as Rohrbach et al.'s ``chair.py``.

Rohrbach et al., "Object Hallucination in Image Captioning" (EMNLP 2018); the evaluator most decoding papers
use is OPERA's ``chair.py`` (Huang et al., CVPR 2024; also used by VCD, DeCo, HALC), a port of the original.
A model describes COCO images; each COCO object word of a description (a class name or a synonym, after the
evaluator's two-word and special-case rules) is checked against the image's ground truth, the union of its
COCO instance classes and the objects named in its five reference captions. How words are found and counted
is in :mod:`halluscope.metrics.chair_coco`; how captions become base forms in
:mod:`halluscope.claims.chair_words`.

Data (``--data``): a folder holding the evaluator's ground truth as JSON, ``coco2014_chair_gt.wordnet.json.gz``
and/or ``coco2014_chair_gt.singularize.json.gz`` (every attribute of a pickled chair.py evaluator:
``imid_to_objects`` for all 123,287 COCO 2014 train+val images, ``mscoco_objects``, ``inverse_synonym_dict``,
``double_word_dict``), or one such file, or a ``chair.pkl`` cache of chair.py itself (read without running
any code from it). ``synonyms_refine.txt`` beside them serves ``synonyms=refine``.

Sample ids are COCO image ids (``"226988"``); the sample's image is ``COCO_val2014_%012d.jpg`` in the
``images`` folder when one is given.

Benchmark options (``--bench-opt key=value``) are declared once, in :attr:`Chair.options` (``halluscope
list``, docs/chair.md). Use the ``build`` the figures you compare with were made with: the ground truth of
that build is used. With ``synonyms=refine`` or a file, the ground truth stays the evaluator's (built with the
original table).
"""

from __future__ import annotations

import gzip
import json
import pickle
import random
import re
from collections.abc import Iterator, Mapping, Sequence
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, ClassVar

from halluscope.benchmarks.base import Benchmark, MetricsReport, ScoringContext
from halluscope.benchmarks.closed import ClosedDataError
from halluscope.benchmarks.images import locate_image
from halluscope.claims.chair_words import BUILDS, TAGGERS
from halluscope.download import ByHand, DataSet
from halluscope.jsonio import MAX_LINE_DEPTH, loads_json
from halluscope.metrics.chair_coco import (
    ChairVocabulary,
    chair_coco_metrics,
    find_objects,
    judge_caption,
)
from halluscope.options import BenchmarkOption
from halluscope.responses import ResponsesError, ResponsesFile
from halluscope.scene.graph import SceneGraph
from halluscope.stages import HeadlineView, MetricDeclaration, MetricTable, ProfileFigure
from halluscope.types import ErrorType, JudgedClaim, Response, Sample, SampleRecord, VerdictLabel

__all__ = [
    "DEFAULT_PROMPT",
    "Chair",
    "ChairGroundTruth",
    "caption_counts",
    "chair_declarations",
    "chair_table",
    "mention_claims",
    "mention_spans",
    "read_captions",
    "read_id_file",
]

DEFAULT_PROMPT = "Please describe this image in detail."
GT_FILE = "coco2014_chair_gt.{build}.json.gz"
REFINED_SYNONYMS = "synonyms_refine.txt"
_COCO_NAME = re.compile(r"COCO_(?:val|train)2014_(\d{12})\.jpg$")


_OBJECT_TYPE: dict[str, Any] = {"type": "object"}

#: The per-caption counts CHAIR's figures are sums of, in :func:`chair_coco_metrics`' order.
_COUNTS = ("mentions", "hallucinated_mentions", "truth_objects_mentioned", "truth_objects", "words")


def caption_counts(record: SampleRecord) -> tuple[int, int, int, int, int]:
    """One scored caption's counts, in :data:`_COUNTS` order: what both :meth:`Chair.metrics` and
    :meth:`Chair.metric_tables` sum, so the declared figures are the reported ones by construction."""
    extra = record.model_extra or {}
    return (
        len(extra.get("coco_objects") or []),
        len(extra.get("hallucinated_objects") or []),
        len(extra.get("recalled_objects") or []),
        len(extra.get("truth_objects") or []),
        int(extra.get("word_count") or 0),
    )


def chair_declarations() -> tuple[MetricDeclaration, ...]:
    """CHAIRs, CHAIRi, Recall and Len over rows of :func:`chair_table`, one row per caption.

    The unit is the caption: each describes its own image, while the object mentions within one caption
    share it (a model that misreads a scene names several absent objects at once), so CHAIRi and Recall
    resample whole captions, never single mentions. CHAIRs is a share of independent captions (Wilson).
    """

    def declare(name: str, components: tuple[str, str], description: str, *, scale: float = 100.0,
                higher: bool = False) -> MetricDeclaration:
        return MetricDeclaration(name=name, statistic="ratio", components=components, scale=scale,
                                 higher_is_better=higher, unit="caption", description=description)

    return (
        declare("CHAIRs", ("hallucinated", "captions"), "captions naming an object the image lacks"),
        declare("CHAIRi", ("hallucinated_mentions", "mentions"), "object mentions the image lacks"),
        declare("Recall", ("truth_objects_mentioned", "truth_objects"), "the image's objects the caption names",
                higher=True),
        # Neither direction is better: a longer caption names more objects, so CHAIR is compared at equal Len.
        declare("Len", ("words", "captions"), "mean words per caption", scale=1.0),
    )


def chair_table(records: Sequence[SampleRecord]) -> MetricTable:
    """One row per scored caption (failures left out, as :meth:`Chair.metrics` leaves them): its counts,
    ``hallucinated`` (1 when any mention is) and ``captions`` (1). Rows are captions, each its own unit."""
    ids: list[str] = []
    columns: dict[str, list[float]] = {name: [] for name in (*_COUNTS, "hallucinated", "captions")}
    for record in records:
        if record.failure is not None:
            continue
        counts = caption_counts(record)
        for name, value in zip(_COUNTS, counts, strict=True):
            columns[name].append(float(value))
        columns["hallucinated"].append(float(counts[1] > 0))
        columns["captions"].append(1.0)
        ids.append(record.id)
    return MetricTable(ids=ids, components=columns)


class ChairGroundTruth:
    """The evaluator's ground truth: each image's COCO classes, and its word tables."""

    def __init__(self, objects: Mapping[str, Sequence[str]], tables: Mapping[str, Any], source: str) -> None:
        self.objects = objects
        self.tables = tables
        self.source = source

    @classmethod
    def load(cls, path: Path) -> ChairGroundTruth:
        return _load_ground_truth(str(Path(path).resolve()))

    def vocabulary(self) -> ChairVocabulary:
        return ChairVocabulary.from_evaluator(self.tables, self.source)


class _Evaluator:
    """Stands in for chair.py's ``CHAIR`` class while its pickle is read: only its attributes are kept."""

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


class _EvaluatorUnpickler(pickle.Unpickler):
    """Reads a chair.py ``chair.pkl`` (``__main__.CHAIR`` of lists, sets, dicts) and nothing else."""

    def find_class(self, module: str, name: str) -> Any:
        if name == "CHAIR":
            return _Evaluator
        if (module, name) in (("collections", "defaultdict"), ("builtins", "list"), ("builtins", "set"),
                              ("builtins", "dict")):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"a chair.pkl holds no {module}.{name}; refusing to load it")


@lru_cache(maxsize=4)
def _load_ground_truth(path: str) -> ChairGroundTruth:
    source = Path(path)
    try:
        if source.suffix == ".pkl":
            with open(source, "rb") as handle:
                evaluator = _EvaluatorUnpickler(handle).load()
            data = dict(vars(evaluator)) if isinstance(evaluator, _Evaluator) else {}
        else:
            with gzip.open(source, "rt", encoding="utf-8") if source.suffix == ".gz" else open(
                source, encoding="utf-8"
            ) as handle:
                data = loads_json(handle.read())
    except (OSError, EOFError, ValueError, pickle.UnpicklingError) as error:
        raise ClosedDataError(f"cannot read the CHAIR ground truth {source}: {error}") from error
    if not isinstance(data, dict) or not isinstance(data.get("imid_to_objects"), dict):
        raise ClosedDataError(f"{source}: not a CHAIR ground truth (no imid_to_objects)")
    objects = {str(k): list(v) for k, v in data["imid_to_objects"].items()}
    tables = {k: data.get(k) for k in ("mscoco_objects", "inverse_synonym_dict", "double_word_dict")}
    truth = ChairGroundTruth(objects, tables, source.name)
    truth.vocabulary()  # check the tables now, with the file's name in the message
    return truth


def _ground_truth_path(data: Path | None, build: str) -> Path:
    if data is None:
        raise ClosedDataError(
            "CHAIR needs its ground truth: --data FOLDER holding coco2014_chair_gt.wordnet.json.gz or "
            "coco2014_chair_gt.singularize.json.gz (or a chair.pkl of chair.py); see docs/chair.md"
        )
    path = Path(data)
    if path.is_file():
        return path
    candidate = path / GT_FILE.format(build=build)
    if candidate.is_file():
        return candidate
    raise ClosedDataError(f"no {candidate.name} in {path} (the ground truth of the {build} build)")


def _image_id(value: Any) -> str | None:
    """A COCO image id as the sample id ("226988"), from an int, a digit string or a COCO file name."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        text = value.strip()
        match = _COCO_NAME.search(text)
        if match:
            return str(int(match.group(1)))
        if text.isdigit():
            return str(int(text))
    return None


def read_captions(path: Path, *, caption_key: str = "caption") -> tuple[list[tuple[Any, Any]], str]:
    """Rows ``(image id value, caption value)`` of an OPERA/VCD ``{image_id, caption}`` JSONL file, a JSON
    list of such objects, or chair.py's ``--save_path`` output; and the layout's name. Values are unchecked."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            whole = loads_json(text)
        except json.JSONDecodeError:
            whole = None
        if isinstance(whole, dict) and isinstance(whole.get("sentences"), list):
            return [(_get(r, "image_id"), _get(r, caption_key)) for r in whole["sentences"]], "chair.py output"
        if isinstance(whole, list):
            return [(_get(r, "image_id"), _get(r, caption_key)) for r in whole], "captions JSON"
    rows: list[tuple[Any, Any]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = loads_json(line, max_depth=MAX_LINE_DEPTH)
        except json.JSONDecodeError as error:
            rows.append((None, f"line {number}: not JSON ({error.msg})"))
            continue
        rows.append((_get(row, "image_id"), _get(row, caption_key)))
    return rows, "captions JSONL"


def _get(row: Any, key: str) -> Any:
    return row.get(key) if isinstance(row, dict) else None


def _is_captions_file(path: Path, key: str = "caption") -> bool:
    """OPERA's layout (rows with ``image_id`` and the caption under ``key``) or chair.py's output, rather than
    halluscope's ``{id, response}`` JSONL or a plain list of ids."""
    try:
        with open(path, encoding="utf-8") as handle:
            head = handle.read(4096).lstrip()
    except (OSError, UnicodeDecodeError):
        return False
    if head.startswith("{") and '"sentences"' in head[:200]:
        return True
    first = head.split("\n", 1)[0]
    try:
        row = loads_json(first, max_depth=MAX_LINE_DEPTH)
    except json.JSONDecodeError:
        return head.startswith("[") and '"image_id"' in head and f'"{key}"' in head
    if isinstance(row, list) and row:  # a JSON list on one line
        row = row[0]
    return isinstance(row, dict) and "image_id" in row and key in row


def read_id_file(path: Path) -> list[str]:
    """Image ids, in order, from a captions file, chair.py's output, a JSON list, or one id a line.

    In a captions file a row without a usable id is skipped (reading its captions reports it); in a list of
    ids it is an error naming the item."""
    path = Path(path)
    captions = _is_captions_file(path)
    try:
        if captions:
            values: list[Any] = [value for value, _ in read_captions(path)[0]]
        else:
            text = path.read_text(encoding="utf-8")
            try:
                parsed = loads_json(text)
            except json.JSONDecodeError:
                parsed = None
            if isinstance(parsed, list):
                values = [v.get("image_id", v.get("id")) if isinstance(v, dict) else v for v in parsed]
            else:
                values = []
                for line in text.splitlines():
                    if not line.strip():
                        continue
                    try:
                        row = loads_json(line, max_depth=MAX_LINE_DEPTH)
                    except json.JSONDecodeError:
                        row = line.strip()
                    values.append(row.get("image_id", row.get("id")) if isinstance(row, dict) else row)
    except OSError as error:
        raise ClosedDataError(f"cannot read the CHAIR ids file {path}: {error}") from error
    ids: dict[str, None] = {}
    bad = []
    for number, value in enumerate(values, 1):
        image_id = _image_id(value)
        if image_id is None:
            bad.append(f"item {number}: {value!r}")
        else:
            ids.setdefault(image_id)
    if bad and not captions:
        raise ClosedDataError(f"{path}: not COCO image ids: {', '.join(bad[:5])}")
    if not ids:
        raise ClosedDataError(f"{path}: no image ids")
    return list(ids)


def coco_val_ids(images: Path) -> list[str]:
    """Image ids of the ``COCO_val2014_*.jpg`` files of a folder, ascending."""
    found = sorted(int(m.group(1)) for p in Path(images).iterdir() if (m := _COCO_NAME.match(p.name))
                   and p.name.startswith("COCO_val2014_"))
    if not found:
        raise ClosedDataError(f"{images}: no COCO_val2014_*.jpg images")
    return [str(i) for i in found]


def token_offsets(text: str, tokens: Sequence[str]) -> list[tuple[int, int] | None]:
    """Where each token of ``text`` (as the tokenizer gave it, lower-cased) is in ``text``, in order.

    The tokenizer turns quotes into ``` `` ``` / ``''``: those are looked for as ``"``; a token not found from the
    end of the previous one (a form the tokenizer rewrote) is None and moves nothing.
    """
    lowered = "".join(ch if len(ch.lower()) != 1 else ch.lower() for ch in text)  # same length as text
    out: list[tuple[int, int] | None] = []
    cursor = 0
    for token in tokens:
        found = None
        for form in (token, '"') if token in ("``", "''") else (token,):
            at = lowered.find(form, cursor)
            if at >= 0:
                found = (at, at + len(form))
                break
        out.append(found)
        if found is not None:
            cursor = found[1]
    return out


def mention_spans(
    text: str, tokens: Sequence[str], mention_tokens: Sequence[tuple[int, int]]
) -> list[list[int] | None]:
    """Character offsets ``[start, end]`` in ``text`` of each COCO mention (a word, or a joined pair such as
    "dining table" / "seated" read as "seat"), for the report to mark; None where a token cannot be placed."""
    offsets = token_offsets(text, tokens)
    spans: list[list[int] | None] = []
    for first, width in mention_tokens:
        parts = offsets[first : first + width]
        if len(parts) == width and all(p is not None for p in parts):
            spans.append([parts[0][0], parts[-1][1]])  # type: ignore[index]
        else:
            spans.append(None)
    return spans


def mention_claims(mentions: Sequence[str], classes: Sequence[str], truth: Sequence[str]) -> list[JudgedClaim]:
    """Each COCO mention as a judged claim ("dog", "names", "dog"): hallucinated when its class is not among
    the image's objects. This is what the report marks; the metrics read the record's own fields."""
    allowed = set(truth)
    shown = ", ".join(sorted(allowed)) or "none"
    claims = []
    for word, cls in zip(mentions, classes, strict=True):
        present = cls in allowed
        claims.append(JudgedClaim(
            subject=word, relation="names", object=cls,
            verdict=VerdictLabel.SUPPORTED if present else VerdictLabel.HALLUCINATED,
            error=None if present else ErrorType.OBJECT,
            evidence=[f"COCO objects of the image: {shown}"],
            explanation=None if present else f"{cls} is not among the image's COCO objects",
        ))
    return claims


class Chair(Benchmark):
    """CHAIR over the COCO 2014 images a selection names (see the module docstring)."""

    name: ClassVar[str] = "chair"
    profile: ClassVar[tuple[ProfileFigure, ...]] = (ProfileFigure("object", "generative", "CHAIRi"),)
    title: ClassVar[str] = "CHAIR"
    #: No official file to fetch: the ground truth is chair.py's pickled evaluator (or its JSON conversion).
    data_sets: ClassVar[tuple[DataSet, ...]] = (
        DataSet("chair-coco", "CHAIR", by_hand=(
            ByHand(
                "CHAIR's ground truth: coco2014_chair_gt.wordnet.json.gz, or chair.py's chair.pkl (docs/chair.md)",
                "https://github.com/shikiw/OPERA", "", "--data FOLDER",
            ),
            ByHand(
                "COCO val2014 photos", "https://cocodataset.org/#download (val2014.zip)", "images",
                "--bench-opt images=FOLDER",
            ),
        )),
    )  # fmt: skip
    headline_view: ClassVar[HeadlineView | None] = HeadlineView(
        "CHAIR, as chair.py prints it",
        (("CHAIRs", "CHAIRs"), ("CHAIRi", "CHAIRi"), ("Recall", "Recall"), ("Len", "Len")),
        rows="overall",
    )
    options: ClassVar[tuple[BenchmarkOption, ...]] = (
        BenchmarkOption(
            "build", "choice", "how words are reduced, and which ground truth is used: OPERA's chair.py (NLTK tags "
            "+ WordNet lemmatiser) or the original (Pattern's singularize)", default="wordnet", choices=BUILDS,
        ),
        BenchmarkOption(
            "tagger", "choice", "part-of-speech tags for the wordnet build", default="auto", choices=TAGGERS
        ),
        BenchmarkOption(
            "synonyms", "text", "object words: chair (the evaluator's own table, quirks included), refine (Object "
            "HalBench's synonyms_refine.txt, from the data folder) or a synonym file of that layout",
            default="chair",
        ),
        BenchmarkOption(
            "ids", "text", "which images: a file (a captions file, chair.py's output, a JSON list, or one id or "
            "COCO file name a line), or all (every image of the ground truth); without it, images is required",
        ),
        BenchmarkOption(
            "images", "path", "your COCO val2014 images (COCO_val2014_%012d.jpg), shown to the model in --model "
            "runs; without ids, a seeded sample of them is scored",
        ),
        BenchmarkOption(
            "sample", "int", "without ids: how many of the folder's val2014 images, drawn with "
            "random.Random(seed).sample from their ids in ascending order", default=500,
        ),
        BenchmarkOption("seed", "int", "without ids: the seed of that sample", default=0),
        BenchmarkOption(
            "prompt", "text", "the instruction a --model run sends", default=DEFAULT_PROMPT,
            default_text=f'OPERA\'s "{DEFAULT_PROMPT}"',
        ),
    )

    def __init__(
        self,
        data: Path | None = None,
        *,
        build: str = "wordnet",
        tagger: str = "auto",
        synonyms: str = "chair",
        ids: str | Path | None = None,
        images: Path | None = None,
        sample: int = 500,
        seed: int = 0,
        prompt: str = DEFAULT_PROMPT,
    ) -> None:
        if build not in BUILDS:
            raise ValueError(f"unknown CHAIR build {build!r}; choose {' or '.join(BUILDS)}")
        if tagger not in TAGGERS:
            raise ValueError(f"unknown tagger {tagger!r}; choose from {', '.join(TAGGERS)}")
        if sample < 1:
            raise ValueError("sample must be at least 1")
        self.data = data
        self.build = build
        self.tagger_choice = tagger
        self.truth_path = _ground_truth_path(data, build)
        self.synonyms = synonyms
        self.images = Path(images) if images else None
        if self.images is not None and not self.images.is_dir():
            raise ClosedDataError(f"images folder {self.images} does not exist")
        self.ids_option = str(ids) if ids is not None else None
        self.sample_size = sample
        self.seed = seed
        self.prompt = prompt
        if self.ids_option is None and self.images is None:
            raise ValueError(
                "choose the CHAIR images: --bench-opt ids=FILE (a captions file, chair.py output or a list of "
                "COCO image ids; e.g. the file you score), ids=all, or images=DIR (a seeded sample of "
                "COCO val2014, sample=500 by default)"
            )
        self._words: Any = None
        if self.ids_option != "all":
            _ = self.image_ids  # a bad ids file or images folder is reported now, naming it

    @classmethod
    def given_options(cls, options: dict[str, Any]) -> dict[str, Any]:
        """spec.json also records the tokenizer found at run time; recreating a run's benchmark from its spec
        (the report does) passes it back: it describes this machine's NLTK data, it is not a choice."""
        options.pop("tokenizer", None)
        return options

    # -- data -------------------------------------------------------------------------------------------------

    @cached_property
    def truth(self) -> ChairGroundTruth:
        return ChairGroundTruth.load(self.truth_path)

    @cached_property
    def vocabulary(self) -> ChairVocabulary:
        if self.synonyms == "chair":
            return self.truth.vocabulary()
        path = Path(self.synonyms)
        if self.synonyms == "refine":
            folder = self.truth_path.parent
            path = folder / REFINED_SYNONYMS
        if not path.is_file():
            raise ClosedDataError(f"synonyms={self.synonyms}: no synonym file {path}")
        return ChairVocabulary.from_synonyms(path.read_text(encoding="utf-8"), path.name)

    @cached_property
    def image_ids(self) -> list[str]:
        if self.ids_option == "all":
            return sorted(self.truth.objects, key=int)
        if self.ids_option is not None:
            return read_id_file(Path(self.ids_option))
        assert self.images is not None
        pool = coco_val_ids(self.images)
        chosen = random.Random(self.seed).sample(pool, min(self.sample_size, len(pool)))
        return sorted(chosen, key=int)

    def words(self) -> Any:
        from halluscope.claims.chair_words import CaptionWords

        if self._words is None:
            self._words = CaptionWords(self.build, self.tagger_choice)
        return self._words

    def samples(self) -> Iterator[Sample]:
        for image_id in self.image_ids:
            photo = locate_image(self.images, [f"COCO_val2014_{int(image_id):012d}.jpg"])
            yield Sample(id=image_id, benchmark=self.name, prompt=self.prompt, image_id=image_id,
                         image_path=photo.path, metadata=photo.metadata)

    def spec(self, samples: Sequence[Sample] | None = None) -> dict[str, Any]:
        selection: dict[str, Any] = (
            {"ids": self.ids_option} if self.ids_option is not None
            else {"images": str(self.images), "sample": self.sample_size, "seed": self.seed}
        )
        return {
            "benchmark": self.name,
            "data": str(self.truth_path),
            **self.words().identity(),
            "synonyms": self.synonyms,
            **selection,
            "prompt": self.prompt,
        }

    # -- responses --------------------------------------------------------------------------------------------

    def read_responses(
        self, path: Path, *, benchmark_ids: set[str] | None = None, key: str | None = None
    ) -> ResponsesFile:
        """halluscope JSONL, OPERA/VCD ``{image_id, caption}`` JSONL (or a JSON list), or chair.py's output.

        A caption whose image id appears again is a problem (halluscope keys answers by image id; chair.py
        would score both); the first is kept.
        """
        path = Path(path)
        if not _is_captions_file(path, key or "caption"):
            return super().read_responses(path, benchmark_ids=benchmark_ids, key=key)
        try:
            rows, layout = read_captions(path, caption_key=key or "caption")
        except (OSError, UnicodeDecodeError) as error:
            raise ResponsesError(f"cannot read {path}: {error}") from error
        result = ResponsesFile(layout=layout)
        for number, (raw_id, caption) in enumerate(rows, 1):
            where = f"{path.name} item {number}"
            image_id = _image_id(raw_id)
            if image_id is None:
                detail = caption if raw_id is None and isinstance(caption, str) else f"image_id {raw_id!r}"
                result.problems.append(f"{where}: no COCO image id ({detail})")
                continue
            where = f"{where} (image {image_id})"
            if not isinstance(caption, str):
                result.problems.append(f"{where}: no string {key or 'caption'!r}")
                continue
            if benchmark_ids is not None and image_id not in benchmark_ids:
                result.problems.append(f"{where}: not among the selected images (the ids option)")
                continue
            if image_id in result.responses:
                result.problems.append(f"{where}: a second caption for this image; the first is kept")
                continue
            result.responses[image_id] = Response(id=image_id, response=caption)
        if not result.responses:
            raise ResponsesError(f"{path}: no usable caption ({len(result.problems)} problem(s))")
        return result

    # -- scoring ----------------------------------------------------------------------------------------------

    async def score_many(
        self, pairs: Sequence[tuple[Sample, Response | None]], ctx: ScoringContext
    ) -> list[SampleRecord]:
        vocabulary = self.vocabulary
        known = self.truth.objects
        answered = [(s, r) for s, r in pairs if r is not None and s.id in known]
        from halluscope.claims.chair_words import kept_words

        # Tokens and base forms of each caption, kept in the cache: a caption scored before costs no tagging.
        made = kept_words(self.words(), [r.response for _, r in answered], ctx.cache)
        scored: dict[str, SampleRecord] = {}
        for (sample, response), (tokens, base_forms) in zip(answered, made, strict=True):
            truth = known[sample.id]
            found = find_objects(base_forms, vocabulary)
            verdict = judge_caption(found, truth)
            extras: dict[str, Any] = {
                "type": "object",
                "coco_words": found.mentions,
                "coco_objects": found.classes,
                # where each of coco_words is in the response (for the report; no figure reads it)
                "coco_spans": mention_spans(response.response, tokens, found.tokens),
                "hallucinated_objects": [list(pair) for pair in verdict.hallucinated],
                "hallucination_positions": verdict.hallucinated_positions,
                "truth_objects": sorted(truth),
                "recalled_objects": verdict.recalled,
                "word_count": len(found.words),
                "hallucinated": bool(verdict.hallucinated),
                "words": found.words,
            }
            scored[sample.id] = SampleRecord(
                id=sample.id, prompt=sample.prompt, response=response.response, image_id=sample.image_id,
                image_path=sample.image_path, model=response.model,
                claims=mention_claims(found.mentions, found.classes, truth), **extras,
            )
        out = []
        for sample, answer in pairs:
            if sample.id in scored:
                out.append(scored[sample.id])
                continue
            reason = (
                "no response for this sample" if answer is None
                else f"image {sample.id} is not in the CHAIR ground truth (COCO 2014 train+val images only)"
            )
            out.append(SampleRecord(id=sample.id, prompt=sample.prompt, response=answer.response if answer
                                    else None, image_id=sample.image_id, image_path=sample.image_path,
                                    failure=reason, **_OBJECT_TYPE))
        return out

    def scene(self, sample: Sample) -> SceneGraph | None:
        """The image's ground-truth COCO classes, as a graph of objects only (what the report lists)."""
        objects = self.truth.objects.get(sample.id)
        if objects is None:
            return None
        graph = SceneGraph(image_id=sample.id)
        for name in sorted(objects):
            graph.add_entity(name)
            graph.object_names.append(name)
        return graph

    def metric_declarations(self) -> Sequence[MetricDeclaration]:
        return chair_declarations()

    def metric_tables(self, records: Sequence[SampleRecord]) -> dict[str, MetricTable]:
        return {"items": chair_table(records)}

    def metrics(self, records: Sequence[SampleRecord]) -> MetricsReport:
        scored = [r for r in records if r.failure is None]
        result = chair_coco_metrics(caption_counts(r) for r in scored)
        counts = {
            "samples": len(records),
            "scored": len(scored),
            "no_response": sum(1 for r in records if r.response is None),
            "not_in_ground_truth": sum(1 for r in records if r.failure is not None and r.response is not None),
            **result["counts"],
        }
        return MetricsReport(
            benchmark=self.name,
            metrics=result["metrics"],
            counts=counts,
            details={
                "chair_py_overall_metrics": result["raw"],
                "scale": "CHAIRs, CHAIRi, Recall in percent; Len = mean words per caption (chair.py's Len x 100)",
            },
        )
