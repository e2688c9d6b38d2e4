"""PROVE: free-form answers scored for helpfulness (hscore) and truthfulness (tscore) against scene-graph tuples.

Prabhu, Purushwalkam, Yan, Xiong and Xu, "Trust but Verify: Programmatic VLM Evaluation in the Wild"
(Salesforce AI Research, 2024). Data: the Hugging Face dataset ``Salesforce/PROVE`` (DOCCI test images,
not shipped with it).

**Layout read** (the released one; also what ``halluscope build prove`` writes): a JSON file holding a list
of items, or a JSONL file with one item per line, or a folder holding one such file (``prove.json`` /
``prove.jsonl`` / the only ``*.json[l]``) and optionally ``images/``. Each item::

    {"image": "test_01234.jpg", "caption": "...", "question": "...", "answer": "...",
     "image_tuples": ["entity - whole (dog)", "attribute - color (dog, brown)", ...],
     "qa_diff_tuples": ["attribute - color (dog, brown)", ...]}

``image_tuples`` are the image's scene-graph tuples (repeated on every question of the image; the first
non-empty list of an image is used); ``qa_diff_tuples`` the answer's tuples minus the question's. Tuple
lists may also be given as one JSON-encoded string. A folder from ``halluscope build synthetic`` is read too:
its questions become PROVE items with exact tuples (the known-truth setting).

**Sample ids**: ``<image id>-<k>``, the image id being the image file name without its extension
(``test_01234``) and ``k`` the 0-based position of the question among that image's items in file order
(``test_01234-0``, ``test_01234-1``, ...). Items that carry their own ``id`` (and ``image_id``), as
``halluscope build prove`` writes them, keep those.

**Benchmark options** (``--bench-opt key=value``) are declared once, in :attr:`Prove.options` (``halluscope
list``, docs/prove.md).
**Visual entailment** (Eq. 2's second chance for a tuple the scene graph does not cover) is the run's judge
slot (``judge_kind`` "visual-entailment"): ``--judge none`` (default), ``--judge vlm --judge-model M``
(any VLM on an OpenAI-compatible endpoint) or ``--judge itm`` (a transformers ITM model; ``--judge-opt
device=cuda``). The old spelling, ``--bench-opt entailment=vlm`` with ``entailment_model``,
``entailment_base_url`` and ``entailment_api_key_env``, still works: the orchestrator moves it into the judge
slot with a note; given to the constructor in Python it is used where the run's context has no judge.
Without ``images``, each item's ``image`` is looked for in ``images/`` next to the data, then beside it.
An ``--extractor`` given on the command line replaces the tuple extractor: its claims become tuples.
Responses may carry their own ``tuples`` (DSG strings) or ``claims``; those skip extraction.
"""

from __future__ import annotations

import json
import os
import warnings
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from halluscope.benchmarks.base import Benchmark, MetricsReport, ScoringContext
from halluscope.benchmarks.images import (
    IMAGES_OPTION,
    MISSING_IMAGES_OPTION,
    ImageLookup,
    check_missing_policy,
    image_spec,
    locate_image,
)
from halluscope.claims.dsg import TUPLE_EXTRACTORS, TupleExtractor
from halluscope.download import ByHand, DataSet
from halluscope.jsonio import MAX_LINE_DEPTH, loads_json
from halluscope.judges.prove import ProveItem, ProveResult, ProveScorer
from halluscope.judges.visual_entailment import VisualEntailment, make_visual_entailment
from halluscope.metrics.prove import prove_declarations, prove_metrics, prove_tables, question_type
from halluscope.options import BenchmarkOption
from halluscope.responses import ResponsesError, ResponsesFile, is_single_json_object, read_json_file
from halluscope.scene.graph import SceneGraph
from halluscope.scene.tuples import (
    SceneTuple,
    TupleParseError,
    claims_to_tuples,
    parse_tuples,
    subtract_tuples,
    tuples_to_graph,
)
from halluscope.stages import Failure, MetricDeclaration, MetricTable
from halluscope.types import Claim, Response, Sample, SampleRecord

HUB_REPO = "Salesforce/PROVE"
DATA_NAMES = ("prove.json", "prove.jsonl", "data.json", "test.json")


class ProveDataError(ValueError):
    """The PROVE data cannot be read at all; the message names the file."""


@dataclass
class ProveRow:
    """One released item, as read; ``error`` says why it cannot be scored (it still gets its sample)."""

    id: str
    image_id: str
    image: str
    index: int
    question: str
    answer: str
    caption: str | None
    image_tuples: list[str]
    qa_diff_tuples: list[str]
    error: str | None = None


def _image_name(value: Any) -> str:
    if isinstance(value, dict):  # Hugging Face Image feature as stored in JSON
        value = value.get("path") or value.get("file_name") or ""
    return str(value or "")


def _tuple_list(value: Any, field: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        try:
            value = loads_json(value) if value.strip() else []
        except json.JSONDecodeError:
            raise ValueError(f"'{field}' is a string that is not a JSON list of tuples") from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"'{field}' must be a list of tuple strings")
    return list(value)


def rows_from_items(items: Sequence[Any], source: str) -> list[ProveRow]:
    """Released items → rows with stable ids; a bad item becomes a row with ``error`` naming it."""
    rows: list[ProveRow] = []
    per_image: dict[str, int] = defaultdict(int)
    seen: set[str] = set()
    for position, item in enumerate(items):
        where = f"{source} item {position}"
        if not isinstance(item, dict):
            rows.append(ProveRow(f"item-{position}", "", "", 0, "", "", None, [], [],
                                 f"{where}: expected a JSON object, got {type(item).__name__}"))
            continue
        image = _image_name(item.get("image"))
        own_image_id = item.get("image_id")
        image_id = own_image_id if isinstance(own_image_id, str) and own_image_id else (
            Path(image).stem if image else f"item-{position}")
        index = per_image[image_id]
        per_image[image_id] += 1
        own_id = item.get("id")
        sample_id = own_id if isinstance(own_id, str) and own_id else f"{image_id}-{index}"
        problems: list[str] = []
        if sample_id in seen:
            problems.append(f"id {sample_id!r} repeats an earlier item's")
            sample_id = f"{sample_id}#{position}"
        seen.add(sample_id)
        if not image:
            problems.append("missing 'image'")
        for name in ("question", "answer"):
            if not isinstance(item.get(name), str) or not item[name].strip():
                problems.append(f"missing or empty '{name}'")
        tuples: dict[str, list[str]] = {}
        for name in ("image_tuples", "qa_diff_tuples"):
            try:
                tuples[name] = _tuple_list(item.get(name), name)
            except ValueError as error:
                problems.append(str(error))
                tuples[name] = []
        caption = item.get("caption")
        rows.append(ProveRow(
            id=sample_id, image_id=image_id, image=image, index=index,
            question=str(item.get("question") or ""), answer=str(item.get("answer") or ""),
            caption=caption if isinstance(caption, str) else None,
            image_tuples=tuples["image_tuples"], qa_diff_tuples=tuples["qa_diff_tuples"],
            error=f"{where} ({sample_id}): {'; '.join(problems)}" if problems else None,
        ))
    return rows


def _data_file(folder: Path) -> Path:
    for name in DATA_NAMES:
        if (folder / name).is_file():
            return folder / name
    candidates = sorted([*folder.glob("*.json"), *folder.glob("*.jsonl")])
    if len(candidates) == 1:
        return candidates[0]
    raise ProveDataError(
        f"{folder}: no PROVE data file (looked for {', '.join(DATA_NAMES)}, or a single *.json / *.jsonl)"
    )


def read_items(path: Path) -> list[Any]:
    """The items of a PROVE JSON (list) or JSONL file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ProveDataError(f"cannot read PROVE data {path}: {error.strerror or error}") from error
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            listed = loads_json(text)
        except json.JSONDecodeError as error:
            raise ProveDataError(f"{path} is not valid JSON: {error.msg} at line {error.lineno}") from error
        return list(listed)
    if stripped.startswith("{") and path.suffix == ".json":
        try:
            data = loads_json(text)
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict):
            for key in ("data", "test", "items"):
                if isinstance(data.get(key), list):
                    return list(data[key])
            raise ProveDataError(f"{path}: a JSON object without a list of items ('data', 'test' or 'items')")
    items: list[Any] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            items.append(loads_json(line, max_depth=MAX_LINE_DEPTH))
        except json.JSONDecodeError as error:
            items.append(f"line {number} is not valid JSON ({error.msg})")
    if not items:
        raise ProveDataError(f"{path} holds no PROVE items")
    return items


def download_from_hub(repo: str = HUB_REPO) -> Path:
    """The dataset's JSON files from the Hugging Face hub (needs internet and ``huggingface_hub``)."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ProveDataError(
            "PROVE data: give --data FILE, or install huggingface_hub to download it"
        ) from error
    try:
        folder = snapshot_download(repo_id=repo, repo_type="dataset", allow_patterns=["*.json", "*.jsonl"])
    except Exception as error:
        raise ProveDataError(
            f"could not download {repo} from the Hugging Face hub ({type(error).__name__}: {error}); "
            "download it elsewhere and pass --data FILE"
        ) from error
    return Path(folder)


def rows_from_synthetic(folder: Path) -> list[ProveRow]:
    """A ``halluscope build synthetic`` folder as PROVE items with exact tuples (known truth).

    Image tuples are the scene graph's; an answer's tuples are its supporting triplets as tuples, minus the
    entity tuples of the objects its question names (g(A) − g(Q)).
    """
    from halluscope.builders.synthetic import load_questions, load_scenes
    from halluscope.scene.tuples import graph_to_tuples

    scenes = load_scenes(folder)
    rows: list[ProveRow] = []
    graphs: dict[str, SceneGraph] = {}
    for question in load_questions(folder):
        scene = scenes[question.image_id]
        graph = graphs.setdefault(question.image_id, scene.graph())
        answer = claims_to_tuples([Claim.of(t) for t in question.triplets], graph)
        words = f" {question.question.lower().rstrip('?')} "
        asked = {SceneTuple.entity(o.name) for o in scene.objects if f" {o.name} " in words}
        rows.append(ProveRow(
            id=question.id, image_id=question.image_id, image=str(folder / scene.image), index=question.index,
            question=question.question, answer=question.answer, caption=None,
            image_tuples=[t.text() for t in graph_to_tuples(graph)],
            qa_diff_tuples=[t.text() for t in subtract_tuples(answer, asked)],
        ))
    return rows


# -- answers in PROVE's layout -----------------------------------------------------------------------------

_ANSWER_ID_KEYS = ("qa_id", "question_id", "qid", "id")
_ANSWER_TEXT_KEYS = ("response", "prediction", "output", "model_answer", "answer")


def is_prove_answers(path: Path) -> bool:
    """A whole-file JSON list (or, in a ``.json`` file, one JSON object): PROVE's answer layout, not JSONL."""
    path = Path(path)
    if not path.is_file():
        return False
    with path.open(encoding="utf-8") as handle:
        head = handle.read(4096).lstrip()
    if head.startswith("["):
        return True
    return path.suffix == ".json" and head.startswith("{") and is_single_json_object(path)


def _prove_rows(
    raw: Any, path: Path, id_key: str | None, problems: list[str]
) -> tuple[list[dict[str, Any]], tuple[str, ...]]:
    """The answer objects of the file and the fields that may hold their id."""
    if isinstance(raw, dict):
        items = []
        for sample_id, value in raw.items():
            if isinstance(value, str):
                items.append({"__id": sample_id, "__text": value})
            elif isinstance(value, dict):
                items.append({"__id": sample_id, **value})
            else:
                problems.append(f"{path.name}: id {sample_id}: expected text or an object")
        return items, ("__id",)
    if isinstance(raw, list):
        items = [x for x in raw if isinstance(x, dict)]
        if len(items) != len(raw):
            problems.append(f"{path.name}: {len(raw) - len(items)} items are not JSON objects")
        return items, (id_key,) if id_key else _ANSWER_ID_KEYS
    raise ResponsesError(f"{path}: expected a JSON list or object of responses")


def load_prove_answers(
    path: Path, *, key: str | None = None, id_key: str | None = None, benchmark_ids: set[str] | None = None
) -> ResponsesFile:
    """Answers as PROVE's users keep them: a JSON list of objects with a question id (``qa_id``,
    ``question_id``, ``qid``, ``id``, or ``id_key``) and the response (``response``, ``prediction``, ``output``,
    ``model_answer``, ``answer``, the first present, or ``key``), or a JSON object mapping ids to response texts
    or to such objects. The one reader of this layout: ``--responses`` and ``--model replay/FILE`` use it."""
    path = Path(path)
    result = ResponsesFile(layout="prove")
    items, id_names = _prove_rows(read_json_file(path), path, id_key, result.problems)
    text_names = (key,) if key else ("__text", *_ANSWER_TEXT_KEYS)
    for position, row in enumerate(items):
        id_field = next((n for n in id_names if n in row), None)
        if id_field is None:
            result.problems.append(f"{path.name} item {position}: no id field ({', '.join(id_names)})")
            continue
        sample_id = str(row[id_field])
        text_field = next((n for n in text_names if n in row), None)
        value = row.get(text_field) if text_field else None
        if not isinstance(value, str):
            result.problems.append(
                f"{path.name} item {position} (id {sample_id}): no response field ({', '.join(text_names)})"
            )
        elif sample_id in result.responses:
            result.problems.append(f"{path.name} item {position}: duplicate id {sample_id!r}; the first is used")
        elif benchmark_ids is not None and sample_id not in benchmark_ids:
            result.problems.append(
                f"{path.name} item {position}: unknown id {sample_id!r}: no such sample in the benchmark"
            )
        else:
            result.responses[sample_id] = Response(id=sample_id, response=value)
    return result


class Prove(Benchmark):
    """PROVE's open questions, scored by hscore / tscore (see the module docstring)."""

    name: ClassVar[str] = "prove"
    title: ClassVar[str] = "PROVE"
    #: No raw file to declare: the data is a Hugging Face dataset, which huggingface_hub fetches when --data
    #: is omitted; ``data pull`` says so.
    data_sets: ClassVar[tuple[DataSet, ...]] = (
        DataSet("prove", "PROVE", by_hand=(
            ByHand(
                f"the Hugging Face dataset {HUB_REPO} (huggingface_hub fetches it when --data is omitted)",
                f"https://huggingface.co/datasets/{HUB_REPO}", "", "--data FILE",
            ),
        )),
    )  # fmt: skip
    options: ClassVar[tuple[BenchmarkOption, ...]] = (
        replace(IMAGES_OPTION, default_text="images/ beside the data, then beside it"),
        BenchmarkOption(
            "tuples", "choice", "how an answer's tuples are extracted: rules (offline) or an LLM", default="rules",
            choices=tuple(TUPLE_EXTRACTORS.names()),
        ),
        BenchmarkOption("tuple_model", "text", "the LLM of tuples=llm"),
        BenchmarkOption("tuple_base_url", "text", "its OpenAI-compatible endpoint"),
        BenchmarkOption("tuple_api_key_env", "text", "the environment variable holding its API key"),
        BenchmarkOption(
            "embedding_model", "text", "any sentence-transformers model", default_text="the packaged all-MiniLM-L6-v2"
        ),
        BenchmarkOption("entailment", "text", "the old spelling of --judge (moved into the judge slot with a note)"),
        BenchmarkOption("entailment_model", "text", "the old spelling of --judge-model"),
        BenchmarkOption("entailment_base_url", "text", "the old spelling of --judge-opt base_url"),
        BenchmarkOption("entailment_api_key_env", "text", "the old spelling of --judge-opt api_key_env"),
        BenchmarkOption(
            "tuple_text", "choice", "the text a tuple is embedded as: a phrase made from it, or the tuple as written",
            default="phrase", choices=("phrase", "raw"),
        ),
        BenchmarkOption("device", "text", "where the embedding and ITM models run", default="cpu"),
        BenchmarkOption("hub_repo", "text", "the Hugging Face dataset downloaded without --data", default=HUB_REPO),
        MISSING_IMAGES_OPTION,
    )
    default_judge: ClassVar[str | None] = "none"
    judge_kind: ClassVar[str] = "visual-entailment"

    def __init__(
        self,
        data: Path | None = None,
        *,
        images: Path | None = None,
        tuples: str = "rules",
        tuple_model: str | None = None,
        tuple_base_url: str | None = None,
        tuple_api_key_env: str | None = None,
        embedding_model: str | None = None,
        entailment: str | None = None,
        entailment_model: str | None = None,
        entailment_base_url: str | None = None,
        entailment_api_key_env: str | None = None,
        tuple_text: str = "phrase",
        device: str = "cpu",
        hub_repo: str = HUB_REPO,
        missing_images: str = "refuse",
    ) -> None:
        if data is None:
            data = default_data() or download_from_hub(hub_repo)
        self.path = Path(data)
        if not self.path.exists():
            raise ProveDataError(f"PROVE data {self.path} does not exist")
        self.images = Path(images) if images is not None else None
        self.missing_images = check_missing_policy(missing_images)
        if tuples not in TUPLE_EXTRACTORS.names():
            choices = ", ".join(TUPLE_EXTRACTORS.names())
            raise ValueError(f"the PROVE benchmark: tuples={tuples!r}; choose one of: {choices}")
        self.tuples = tuples
        self.tuple_options = {
            k: v for k, v in {"model": tuple_model, "base_url": tuple_base_url,
                              "api_key_env": tuple_api_key_env}.items() if v is not None
        }
        self.embedding_model = embedding_model
        # The old spelling of the visual entailment (benchmark options): kept for contexts without a judge.
        options = {
            k: v for k, v in {"model": entailment_model, "base_url": entailment_base_url,
                              "api_key_env": entailment_api_key_env}.items() if v is not None
        }
        self.legacy_entailment: tuple[str, dict[str, Any]] | None = None
        if entailment is not None or options:
            kind = entailment or "none"
            if kind == "itm":
                options.pop("base_url", None)
                options.pop("api_key_env", None)
                options["device"] = device
            make_visual_entailment(kind, **dict(options))  # fail early on a bad name or option
            self.legacy_entailment = (kind, options)
            warnings.warn(
                f"Prove(entailment=..., entailment_*=...) is the old spelling of PROVE's visual entailment; "
                f"give it in the judge slot instead: --judge {kind} (Python: judge={kind!r})",
                FutureWarning,
                stacklevel=2,
            )
        self.tuple_text = tuple_text
        self.device = device
        self._extractor: TupleExtractor | None = None
        self._scorer: ProveScorer | None = None
        self._graphs: dict[str, SceneGraph | Failure] = {}
        self.rows  # noqa: B018 - fail early, naming the file, if it cannot be read

    # -- data ------------------------------------------------------------------------------------------

    @cached_property
    def rows(self) -> list[ProveRow]:
        if self.path.is_dir() and (self.path / "scenes.json").is_file() and (self.path / "questions.json").is_file():
            return rows_from_synthetic(self.path)
        file = _data_file(self.path) if self.path.is_dir() else self.path
        items = read_items(file)
        return rows_from_items(items, file.name)

    @cached_property
    def by_id(self) -> dict[str, ProveRow]:
        return {row.id: row for row in self.rows}

    @cached_property
    def image_tuples(self) -> dict[str, list[str]]:
        """Each image's tuple strings: the first non-empty list among its items."""
        out: dict[str, list[str]] = {}
        for row in self.rows:
            if row.image_tuples and row.image_id not in out:
                out[row.image_id] = row.image_tuples
        return out

    def _graph(self, image_id: str) -> SceneGraph | Failure:
        cached = self._graphs.get(image_id)
        if cached is not None:
            return cached
        tuples = self.image_tuples.get(image_id)
        if not tuples:
            reason = f"no scene graph for image {image_id!r}: its 'image_tuples' are empty or missing"
            result: SceneGraph | Failure = Failure(reason)
        else:
            try:
                caption = next((r.caption for r in self.rows if r.image_id == image_id and r.caption), None)
                result = tuples_to_graph(parse_tuples(tuples, where=f"image {image_id!r} image_tuples"),
                                         image_id=image_id, caption=caption)
            except TupleParseError as error:
                result = Failure(str(error))
        self._graphs[image_id] = result
        return result

    def image(self, row: ProveRow) -> ImageLookup:
        """The row's image: in ``images``, else ``images/`` next to the data, else the data's folder; each
        folder keeps its files inside it. When it is nowhere, what the first folder said (where it was
        expected, or that the name leads outside)."""
        if not row.image:
            return ImageLookup(None)
        base = self.path if self.path.is_dir() else self.path.parent
        folders = [self.images] if self.images is not None else []
        lookups = [locate_image(folder, [row.image]) for folder in [*folders, base / "images", base]]
        return next((lookup for lookup in lookups if lookup.found), lookups[0])

    def spec(self, samples: Sequence[Sample] | None = None) -> dict[str, Any]:
        return {
            "benchmark": self.name,
            "data": str(self.path.resolve()),
            "tuples": {"extractor": self.tuples, **{k: v for k, v in self.tuple_options.items() if k != "api_key_env"}},
            "embedding_model": self.embedding_model,
            **self._legacy_spec(),
            "tuple_text": self.tuple_text,
            **image_spec(self.images, self._counted(samples), self.missing_images),
        }

    def _legacy_spec(self) -> dict[str, Any]:
        """The entailment given the old way, to the constructor (else it is the run's judge, in ``judge``)."""
        if self.legacy_entailment is None:
            return {}
        kind, options = self.legacy_entailment
        return {"entailment": {"kind": kind, **{k: v for k, v in options.items() if k != "api_key_env"}}}

    def read_responses(
        self,
        path: Path,
        *,
        benchmark_ids: set[str] | None = None,
        key: str | None = None,
        id_key: str | None = None,
    ) -> ResponsesFile:
        """PROVE's answer layout (a JSON list or object, see :func:`load_prove_answers`), else the defaults."""
        from halluscope.importers import detect_external

        if is_prove_answers(Path(path)) and detect_external(Path(path)) is None:
            return load_prove_answers(Path(path), key=key, id_key=id_key, benchmark_ids=benchmark_ids)
        return super().read_responses(path, benchmark_ids=benchmark_ids, key=key)

    def samples(self) -> Iterator[Sample]:
        for row in self.rows:
            photo = self.image(row)
            yield Sample(
                id=row.id,
                benchmark=self.name,
                prompt=row.question,
                image_id=row.image_id,
                image_path=photo.path,
                reference=row.answer,
                metadata={
                    "question_index": row.index,
                    "question_type": question_type(row.question),
                    "qa_diff_tuples": row.qa_diff_tuples,
                    **({"load_error": row.error} if row.error else {}),
                    **photo.metadata,
                },
            )

    def scene(self, sample: Sample) -> SceneGraph | None:
        graph = self._graph(sample.image_id or "")
        return graph if isinstance(graph, SceneGraph) else None

    # -- scoring ---------------------------------------------------------------------------------------

    def extractor(self, ctx: ScoringContext) -> TupleExtractor:
        if self._extractor is None:
            self._extractor = TUPLE_EXTRACTORS.create(self.tuples, cache=ctx.cache, **self.tuple_options)
        return self._extractor

    def visual_entailment(self, ctx: ScoringContext) -> VisualEntailment:
        """The run's judge slot; else the entailment of the old spelling given to the constructor; else none."""
        if ctx.judge is not None:
            if self.legacy_entailment is not None:
                raise ValueError(
                    "PROVE's visual entailment is given twice: to the benchmark (entailment=, the old spelling) "
                    "and in the judge slot; give it in the judge slot only"
                )
            if not isinstance(ctx.judge, VisualEntailment):
                raise ValueError(
                    f"judge {ctx.judge.name!r} is no visual entailment; PROVE takes --judge none, vlm or itm"
                )
            return ctx.judge
        kind, options = self.legacy_entailment or ("none", {})
        return make_visual_entailment(kind, cache=ctx.cache, **dict(options))

    def scorer(self, ctx: ScoringContext) -> ProveScorer:
        if self._scorer is None:
            entailment = self.visual_entailment(ctx)
            self._scorer = ProveScorer(
                embedding_model=self.embedding_model, entailment=entailment, tuple_text=self.tuple_text,
                cache=ctx.cache, device=self.device,
            )
        return self._scorer

    async def _response_tuples(
        self, todo: list[tuple[int, Response]], ctx: ScoringContext, graphs: dict[int, SceneGraph]
    ) -> dict[int, tuple[list[SceneTuple], str] | Failure]:
        out: dict[int, tuple[list[SceneTuple], str] | Failure] = {}
        texts: list[tuple[int, str]] = []
        for index, response in todo:
            supplied = response.metadata.get("tuples")
            if isinstance(supplied, list):
                try:
                    out[index] = (parse_tuples(supplied, where=f"response {response.id!r}"), "supplied")
                except TupleParseError as error:
                    out[index] = Failure(str(error))
            elif response.claims is not None:
                out[index] = (claims_to_tuples(response.claims, graphs.get(index)), "supplied claims")
            else:
                texts.append((index, response.response))
        if texts:
            if ctx.extractor is not None:
                claim_lists = await ctx.extractor.extract_many([t for _, t in texts])
                for (index, _), claims in zip(texts, claim_lists, strict=True):
                    out[index] = claims if isinstance(claims, Failure) else (
                        claims_to_tuples(claims, graphs.get(index)), f"extracted ({ctx.extractor.name} claims)")
            else:
                extractor = self.extractor(ctx)
                results = await extractor.extract_many([t for _, t in texts])
                for (index, _), result in zip(texts, results, strict=True):
                    out[index] = result if isinstance(result, Failure) else (result, f"extracted ({extractor.name})")
        return out

    async def score_many(
        self, pairs: Sequence[tuple[Sample, Response | None]], ctx: ScoringContext
    ) -> list[SampleRecord]:
        records: list[SampleRecord | None] = [None] * len(pairs)
        failures: dict[int, str] = {}
        graphs: dict[int, SceneGraph] = {}
        answers: dict[int, list[SceneTuple]] = {}
        todo: list[tuple[int, Response]] = []
        # The stage of each failure that is not the inputs' fault (the runner calls the others "input").
        stages: dict[int, str] = {}
        for index, (sample, response) in enumerate(pairs):
            if sample.metadata.get("load_error"):
                failures[index] = str(sample.metadata["load_error"])
                continue
            if response is None:
                failures[index] = f"sample {sample.id}: no response"
                continue
            if not response.response.strip() and not response.claims and not response.metadata.get("tuples"):
                failures[index] = f"sample {sample.id}: empty response"
                continue
            graph = self._graph(sample.image_id or "")
            if isinstance(graph, Failure):
                failures[index] = f"sample {sample.id}: {graph.reason}"
                continue
            try:
                answers[index] = parse_tuples(sample.metadata.get("qa_diff_tuples") or [],
                                              where=f"sample {sample.id} qa_diff_tuples")
            except TupleParseError as error:
                failures[index] = str(error)
                continue
            graphs[index] = graph
            todo.append((index, response))

        extracted = await self._response_tuples(todo, ctx, graphs)
        todo_response = dict(todo)
        items: list[tuple[int, ProveItem, str]] = []
        for index, _ in todo:
            got = extracted[index]
            if isinstance(got, Failure):
                failures[index] = f"sample {pairs[index][0].id}: {got.reason}"
                if not isinstance(todo_response[index].metadata.get("tuples"), list):  # supplied tuples: input
                    stages[index] = "extractor"
                continue
            tuples, source = got
            sample = pairs[index][0]
            items.append((index, ProveItem(
                sample_id=sample.id, answer_tuples=answers[index], response_tuples=tuples,
                image_tuples=parse_tuples(self.image_tuples[sample.image_id or ""]),
                image_path=sample.image_path,
            ), source))
        results: list[ProveResult | Failure] = []
        if items:
            results = await self.scorer(ctx).score_many([item for _, item, _ in items])
        for (index, item, source), result in zip(items, results, strict=True):
            sample, response = pairs[index]
            if isinstance(result, Failure):
                failures[index] = f"sample {sample.id}: {result.reason}"
                stages[index] = "judge"
                continue
            records[index] = self._record(sample, response, source, item, result)
        for index, reason in failures.items():
            sample, response = pairs[index]
            records[index] = SampleRecord(
                id=sample.id, prompt=sample.prompt, response=response.response if response else None,
                failure=reason, failed_stage=stages.get(index, "input"),
                image_id=sample.image_id, image_path=sample.image_path,
                reference=sample.reference, model=response.model if response else None,
                metadata={"question_type": sample.metadata.get("question_type")},
            )
        return [r for r in records if r is not None]

    @staticmethod
    def _record(
        sample: Sample, response: Response | None, source: str, item: ProveItem, result: ProveResult
    ) -> SampleRecord:
        assert response is not None
        return SampleRecord(
            id=sample.id, prompt=sample.prompt, response=response.response, claims_source=source,
            image_id=sample.image_id, image_path=sample.image_path, reference=sample.reference,
            model=response.model,
            metadata={
                "question_type": sample.metadata.get("question_type"),
                "hscore": result.hscore,
                "tscore": result.tscore,
                **({"tscore_error": result.tscore_error} if result.tscore_error else {}),
                "response_tuples": [t.text() for t in item.response_tuples],
                "answer_matches": result.answer_matches,
                "response_matches": result.response_matches,
                **({"response_metadata": response.metadata} if response.metadata else {}),
            },
        )

    def metric_declarations(self) -> Sequence[MetricDeclaration]:
        """hscore, tscore and average, means over questions resampled by image; alike whatever extracts the
        tuples or judges entailment (those change each answer's scores, not how they are averaged)."""
        return prove_declarations()

    def metric_tables(self, records: Sequence[SampleRecord]) -> dict[str, MetricTable]:
        return prove_tables(records)

    def metrics(self, records: Sequence[SampleRecord]) -> MetricsReport:
        return prove_metrics(records, benchmark=self.name)


def default_data() -> Path | None:
    """``$HALLUSCOPE_PROVE`` when set (a file or folder in the released layout)."""
    env = os.environ.get("HALLUSCOPE_PROVE")
    return Path(env) if env else None


__all__ = ["HUB_REPO", "Prove", "ProveDataError", "ProveRow", "read_items", "rows_from_items",
           "rows_from_synthetic"]
