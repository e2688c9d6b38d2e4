"""AMBER: an LLM-free multi-dimensional benchmark of hallucination, generative and discriminative.

Wang et al., "AMBER: An LLM-free Multi-dimensional Benchmark for MLLMs Hallucination Evaluation" (2023).
Official data and code: https://github.com/junyangwang0410/AMBER (``data/annotations.json``,
``data/query/query_all.json``, ``relation.json``, ``safe_words.txt``; images separate, not needed to score,
only to ask a model: ``images=DIR`` finds each query's ``image`` (``AMBER_<n>.jpg``) in DIR or ``DIR/image``).

Sample ids are AMBER's own ``id`` (1-based, as in ``annotations.json`` and ``query_all.json``): 1–1004 are
the generative items ("Describe this image."), the rest yes/no questions.

- Discriminative: ``paper`` mode is the official exact match ("Yes" / "No" only; "no" is the positive
  class); ``robust`` (default) uses the shared yes/no parser, refusals unanswered. Both are in every record.
- Generative: object nouns of the description (see :mod:`halluscope.claims.nouns`), kept if they are in
  AMBER's association vocabulary, ignored if in its safe words, matched against the item's ``truth`` and
  ``hallu`` objects and their associations exactly or by word similarity
  (:mod:`halluscope.judges.word_similarity`); a noun matching no truth object is hallucinated.

Benchmark options (``--bench-opt``) are declared once, in :attr:`Amber.options` (``halluscope list``,
docs/amber.md). AMBER's exact-match rule reads only a bare "Yes" or "No", whatever the ``prompt``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from halluscope.benchmarks._download import ensure_data
from halluscope.benchmarks.base import Benchmark, MetricsReport, ScoringContext
from halluscope.benchmarks.closed import (
    ClosedDataError,
    check_mode,
    check_prompt,
    yes_no_record,
)
from halluscope.benchmarks.images import (
    IMAGES_OPTION,
    MISSING_IMAGES_OPTION,
    ImageLookup,
    check_missing_policy,
    image_spec,
    locate_image,
)
from halluscope.benchmarks.yes_no import yes_no_declarations, yes_no_table
from halluscope.download import ByHand, DataSet, github_files
from halluscope.jsonio import loads_json
from halluscope.metrics.amber import dimension_of
from halluscope.options import BenchmarkOption
from halluscope.responses import ResponsesFile
from halluscope.stages import HeadlineView, MetricDeclaration, MetricTable, ProfileFigure
from halluscope.types import Response, Sample, SampleRecord

__all__ = ["Amber", "amber_declarations", "amber_paper_rule", "amber_table", "judge_description"]

#: What scoring reads of AMBER's ``data/`` folder, at the commit the shared copies come from.
AMBER_DATA = DataSet(
    name="amber",
    title="AMBER",
    files=github_files(
        "junyangwang0410/AMBER",
        ("534babf",),
        "data/",
        {
            "annotations.json": (1813301, "db22a436c4836fbb295e60b4e80d519573077579fb7032f01b193c1bd022b797"),
            "query/query_all.json": (1844750, "127680ae61f7d4a92d2f7f07a8deaec07f0689b194d2c7c0f41ead7bd2c5bcf5"),
            "relation.json": (12699, "c4c1491e9bbc3209abc1888c12a1bf8413bdbab8a0d8be04b990a2e7680cf23e"),
            "safe_words.txt": (57, "f92cf1123f4578a2630832fac3e6ac4de36212ea55859d3bed4fd233723f4043"),
        },
    ),
    by_hand=(
        ByHand(
            "AMBER's photos (the image archive linked from its README)", "https://github.com/junyangwang0410/AMBER",
            "images", "--bench-opt images=FOLDER",
        ),
    ),
)  # fmt: skip
_FILES = tuple(f.path for f in AMBER_DATA.files)
_GROUPS = ("generative", "existence", "attribute", "relation")
_GENERATIVE: dict[str, Any] = {"type": "generative"}
#: Where an item's image is looked for under the ``images`` folder (the release unpacks into ``image/``).
_IMAGE_PLACES = ("", "image", "images")
#: What the model is asked (the ``prompt`` option), for the yes/no items; descriptions always get the query.
PROMPTS = {"query": "{query}", "yesno": "{query} Please answer yes or no."}


def _ask(prompt: str, query: str) -> str:
    """A yes/no query in the chosen prompt; the default leaves the query file's text exactly as it is."""
    return query if prompt == "query" else PROMPTS[prompt].format(query=query.strip())


def amber_paper_rule(answer: str) -> str | None:
    """The official exact match: "Yes" → yes, "No" → no, anything else → no answer (and wrong)."""
    return {"Yes": "yes", "No": "no"}.get(answer)


def _group(kind: str) -> str:
    dimension = dimension_of(kind)
    return "attribute" if dimension in ("state", "number", "action") else dimension


def _resolve(data: Path | None) -> Path:
    if data is None:
        return ensure_data(AMBER_DATA)
    path = Path(data)
    if path.is_dir() and (path / "data" / "annotations.json").exists():
        path = path / "data"
    missing = [f for f in _FILES if not (path / f).exists()]
    if missing:
        raise ClosedDataError(f"AMBER data at {path} lacks {', '.join(missing)}")
    return path


def judge_description(
    nouns: Sequence[str],
    truth: Sequence[str],
    hallu: Sequence[str],
    *,
    vocabulary: set[str],
    association: Mapping[str, Sequence[str]],
    safe_words: set[str],
    similar: Any,
) -> dict[str, list[str]]:
    """The official per-noun decision, in its order; returns the kept, hallucinated and covered objects.

    ``similar(a, b)`` is the word-similarity test. A truth (or hallu) object counts as covered when it, or
    one of its associated words, is matched.
    """
    safe_words_of = [(w, i) for i, t in enumerate(truth) for w in association.get(t, [])]
    safe_words_of += [(t, i) for i, t in enumerate(truth)]
    ha_words_of = [(w, i) for i, h in enumerate(hallu) for w in association.get(h, [])]
    ha_words_of += [(h, i) for i, h in enumerate(hallu)]
    safe_set = {w for w, _ in safe_words_of}
    ha_set = {w for w, _ in ha_words_of}
    kept = [n for n in nouns if n in vocabulary]
    truth_hit: set[int] = set()
    hallu_hit: set[int] = set()
    hallucinated: list[str] = []
    for noun in kept:
        if noun in safe_words:
            continue
        if noun in safe_set:
            truth_hit.add(next(i for w, i in safe_words_of if w == noun))
            continue
        if noun in ha_set:
            hallu_hit.add(next(i for w, i in ha_words_of if w == noun))
        for word, index in ha_words_of:
            if similar(noun, word):
                hallu_hit.add(index)
                break
        match = next((i for w, i in safe_words_of if similar(noun, w)), None)
        if match is not None:
            truth_hit.add(match)
            continue
        hallucinated.append(noun)
    return {
        "object_nouns": kept,
        "hallucinated_nouns": hallucinated,
        "truth_covered": [truth[i] for i in sorted(truth_hit)],
        "hallu_covered": [hallu[i] for i in sorted(hallu_hit)],
    }


def _read_own_layout(path: Path, benchmark_ids: set[str] | None) -> ResponsesFile:
    """AMBER's own answers layout, a JSON list of ``{"id", "response"}``: every problem names the file and
    the line of the item; a duplicate id keeps the first answer."""
    text = path.read_text(encoding="utf-8")
    try:
        rows = loads_json(text)
    except json.JSONDecodeError as error:
        raise ClosedDataError(
            f"{path} line {error.lineno} column {error.colno}: not valid JSON ({error.msg})"
        ) from error
    # Where each item starts: parse it again with positions (a decoder walk over the top-level list).
    decoder = json.JSONDecoder()
    starts: list[int] = []
    position = text.index("[") + 1
    while len(starts) < len(rows):
        while text[position] in " \t\r\n,":
            position += 1
        starts.append(text.count("\n", 0, position) + 1)
        _, position = decoder.raw_decode(text, position)
    result = ResponsesFile()
    first: dict[str, int] = {}
    for index, (row, line) in enumerate(zip(rows, starts, strict=True)):
        where = f"{path.name} line {line} (item {index})"
        if not isinstance(row, dict) or "id" not in row or not isinstance(row.get("response"), str):
            result.problems.append(f"{where}: needs 'id' and a string 'response'")
            continue
        sample_id = str(row["id"])
        if benchmark_ids is not None and sample_id not in benchmark_ids:
            result.problems.append(f"{where}: id {sample_id} is not an item of the benchmark")
            continue
        if sample_id in first:
            result.problems.append(
                f"{where}: duplicate id {sample_id} (first on line {first[sample_id]}); the first answer is kept"
            )
            continue
        first[sample_id] = line
        result.responses[sample_id] = Response(id=sample_id, response=row["response"])
    return result


#: The yes/no figures AMBER reports (its metrics.json has no yes-ratio, so none is declared).
_DECLARED = ("accuracy", "precision", "recall", "f1")


def amber_declarations(mode: str) -> tuple[MetricDeclaration, ...]:
    """The declared headline of a run in ``mode``, over :func:`amber_table` (clustered by image).

    Why these only: every figure declared must equal the one ``metrics.json`` holds, exactly, and AMBER's
    official arithmetic is not a ratio of sums — its counters start at 0.001 and every figure is rounded to
    0.1 (:mod:`halluscope.metrics.amber`). That rules out the generative CHAIR, Cover, Hal and Cog (in
    every mode) and the paper-mode accuracy / precision / recall / F1. The robust reading (the shared parser,
    unanswered items left out, no offset, no rounding) is exactly a ratio / F1 of sums with "no" the positive
    class: it is the headline in robust mode, and reported as ``robust_*`` in paper mode, where it is what
    gets an interval. AMBER's combined score ((100 − CHAIR + F1) / 2, in the paper) is not in metrics.json.
    """
    robust = tuple(d for d in yes_no_declarations("image") if d.name in _DECLARED)
    if mode == "paper":
        return tuple(replace(d, name=f"robust_{d.name}") for d in robust)
    return robust


def amber_table(records: Sequence[SampleRecord]) -> MetricTable:
    """The yes/no items by the robust reading, "no" positive, clustered by image: AMBER asks 7 to 25 (mostly
    10 to 19) existence, attribute and relation questions of each of its 1,004 images, and a model that misreads an
    image tends to miss all of them, so the image is the unit that is resampled."""
    return yes_no_table(
        records, cluster=lambda r: r.image_id or r.id, positive="no", prediction_field="robust_prediction"
    )


class Amber(Benchmark):
    name: ClassVar[str] = "amber"
    profile: ClassVar[tuple[ProfileFigure, ...]] = (
        ProfileFigure("object", "discriminative", "existence/accuracy", rate=False),
        ProfileFigure("attribute", "discriminative", "attribute/accuracy", rate=False),
        ProfileFigure("relation", "discriminative", "relation/accuracy", rate=False),
        ProfileFigure("object", "generative", "CHAIR"),
    )
    title: ClassVar[str] = "AMBER"
    data_sets: ClassVar[tuple[DataSet, ...]] = (AMBER_DATA,)
    headline_view: ClassVar[HeadlineView | None] = HeadlineView(
        "AMBER, as its README's table reads (generative CHAIR, Cover, Hal, Cog; discriminative Acc, P, R, F1)",
        (("CHAIR", "CHAIR"), ("Cover", "Cover"), ("Hal", "Hal"), ("Cog", "Cog"), ("accuracy", "Acc."),
         ("precision", "P."), ("recall", "R."), ("f1", "F1")),
        rows="overall",
    )  # fmt: skip
    options: ClassVar[tuple[BenchmarkOption, ...]] = (
        BenchmarkOption("types", "csv", "which parts", default=_GROUPS, choices=_GROUPS),
        BenchmarkOption(
            "mode", "choice", "which reading of yes/no gives the headline (every record carries both)",
            default="robust", choices=("robust", "paper"),
        ),
        BenchmarkOption(
            "word_similarity", "choice", "how a described noun is matched to the truth objects",
            default="embedding", choices=("embedding", "exact", "spacy-lg"),
        ),
        BenchmarkOption(
            "similarity_threshold", "float", "the word similarity at which two nouns match", default=0.8
        ),
        BenchmarkOption(
            "tagger", "choice", "the part-of-speech tagger that finds nouns (auto: NLTK when its data is installed)",
            default="auto", choices=("auto", "nltk", "spacy"),
        ),
        IMAGES_OPTION,
        MISSING_IMAGES_OPTION,
        BenchmarkOption(
            "prompt", "choice", "query: the query file's text, as AMBER's inference sends it; yesno: the yes/no "
            "questions followed by \" Please answer yes or no.\"", default="query", choices=tuple(PROMPTS),
        ),
    )

    def __init__(
        self,
        data: Path | None = None,
        *,
        types: Sequence[str] = _GROUPS,
        mode: str = "robust",
        word_similarity: str = "embedding",
        similarity_threshold: float = 0.8,
        tagger: str = "auto",
        images: Path | None = None,
        prompt: str = "query",
        missing_images: str = "refuse",
    ) -> None:
        self.path = _resolve(data)
        self.images = Path(images) if images else None
        self.prompt = check_prompt(prompt, PROMPTS, "the AMBER benchmark")
        self.missing_images = check_missing_policy(missing_images)
        unknown = [t for t in types if t not in _GROUPS]
        if unknown:
            raise ValueError(f"unknown AMBER types {unknown}; choose from {', '.join(_GROUPS)}")
        self.types = tuple(types)
        self.mode = check_mode(mode)
        self.word_similarity = word_similarity
        self.similarity_threshold = float(similarity_threshold)
        self.tagger = tagger
        self._similarity: Any = None
        self._nouns: Any = None

    @cached_property
    def items(self) -> list[dict[str, Any]]:
        def load(name: str) -> Any:
            try:
                return loads_json((self.path / name).read_text(encoding="utf-8"))
            except json.JSONDecodeError as error:
                raise ClosedDataError(f"{self.path / name} is not valid JSON: {error}") from error

        annotations, queries = load("annotations.json"), load("query/query_all.json")
        by_id = {q.get("id"): q for q in queries if isinstance(q, dict)}
        items = []
        for index, note in enumerate(annotations):
            if not isinstance(note, dict) or "id" not in note or "type" not in note or "truth" not in note:
                raise ClosedDataError(f"{self.path}/annotations.json item {index}: needs id, type and truth")
            query = by_id.get(note["id"])
            if query is None:
                raise ClosedDataError(f"AMBER item {note['id']}: no query in query/query_all.json")
            group = _group(str(note["type"]))
            if group not in self.types:
                continue
            items.append({**note, "query": query.get("query", ""), "image": query.get("image")})
        return items

    @cached_property
    def association(self) -> dict[str, list[str]]:
        raw = loads_json((self.path / "relation.json").read_text(encoding="utf-8"))
        return {str(k): [str(v) for v in vs] for k, vs in raw.items()}

    @cached_property
    def vocabulary(self) -> set[str]:
        return set(self.association) | {w for ws in self.association.values() for w in ws}

    @cached_property
    def safe_words(self) -> set[str]:
        lines = (self.path / "safe_words.txt").read_text(encoding="utf-8").split("\n")
        return {line for line in lines if line}

    def samples(self) -> Iterator[Sample]:
        for item in self.items:
            kind = str(item["type"])
            generative = kind == "generative"
            image = str(item.get("image") or "")
            query = str(item["query"])
            photo = locate_image(self.images, [image], _IMAGE_PLACES) if image else ImageLookup(None)
            yield Sample(
                id=str(item["id"]),
                benchmark=self.name,
                prompt=query if generative else _ask(self.prompt, query),
                image_id=Path(image).stem or None,
                image_path=photo.path,
                reference=None if generative else str(item["truth"]),
                metadata={
                    "type": kind,
                    "dimension": dimension_of(kind),
                    **({"truth": list(item["truth"]), "hallu": list(item.get("hallu", []))} if generative
                       else {"label": str(item["truth"])}),
                    **photo.metadata,
                },
            )

    def spec(self, samples: Sequence[Sample] | None = None) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "benchmark": self.name,
            "data": str(self.path),
            "types": list(self.types),
            "mode": self.mode,
            **({"prompt": self.prompt} if self.prompt != "query" else {}),
            **image_spec(self.images, self._counted(samples), self.missing_images),
        }
        if "generative" in self.types:
            spec["word_similarity"] = self.similarity().identity()
            nouns = self.nouns()  # the tagger that runs ("auto" resolved), not the option's word
            spec["tagger"] = nouns.tagger
            if nouns.tagger == "spacy":
                spec["spacy_model"] = nouns.spacy_model
        return spec

    def nouns(self) -> Any:
        """The noun tagger, made once (``auto`` is resolved here, to NLTK when its data is installed)."""
        from halluscope.claims.nouns import NounExtractor

        if self._nouns is None:
            self._nouns = NounExtractor(self.tagger)
        return self._nouns

    def similarity(self) -> Any:
        from halluscope.judges.word_similarity import WordSimilarity

        if self._similarity is None:
            self._similarity = WordSimilarity(self.word_similarity, threshold=self.similarity_threshold)
        return self._similarity

    def external_id(self, row: Mapping[str, Any]) -> str | None:
        value = row.get("id", row.get("question_id"))
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        return None if value is None else str(value)

    def read_responses(
        self, path: Path, *, benchmark_ids: set[str] | None = None, key: str | None = None
    ) -> ResponsesFile:
        """halluscope JSONL, AMBER's own layout (a JSON list of ``{"id", "response"}``), or another harness's."""
        path = Path(path)
        if path.suffix == ".json" and path.read_text(encoding="utf-8").lstrip().startswith("["):
            return _read_own_layout(path, benchmark_ids)
        return super().read_responses(path, benchmark_ids=benchmark_ids, key=key)

    async def score_many(
        self, pairs: Sequence[tuple[Sample, Response | None]], ctx: ScoringContext
    ) -> list[SampleRecord]:
        records: dict[str, SampleRecord] = {}
        descriptions = [
            (s, r) for s, r in pairs if s.metadata["type"] == "generative" and isinstance(r, Response)
        ]
        if descriptions:
            similarity = self.similarity()
            similarity.cache = ctx.cache
            similarity.prepare(self.vocabulary)
            nouns = self.nouns().extract_many([r.response for _, r in descriptions])
            for (sample, response), found in zip(descriptions, nouns, strict=True):
                verdict = judge_description(
                    found,
                    sample.metadata["truth"],
                    sample.metadata["hallu"],
                    vocabulary=self.vocabulary,
                    association=self.association,
                    safe_words=self.safe_words,
                    similar=similarity.similar,
                )
                extras: dict[str, Any] = {
                    "type": "generative",
                    "truth": sample.metadata["truth"],
                    "hallu": sample.metadata["hallu"],
                    **verdict,
                }
                records[sample.id] = SampleRecord(
                    id=sample.id,
                    prompt=sample.prompt,
                    response=response.response,
                    image_id=sample.image_id,
                    model=response.model,
                    **extras,
                )
        out = []
        for sample, answer in pairs:
            if sample.id in records:
                out.append(records[sample.id])
            elif sample.metadata["type"] == "generative":
                out.append(
                    SampleRecord(id=sample.id, prompt=sample.prompt, response=None, image_id=sample.image_id,
                                 failure="no response for this sample", **_GENERATIVE)
                )
            else:
                out.append(
                    yes_no_record(sample, answer, mode=self.mode, paper_rule=amber_paper_rule,
                                  fields=("type", "dimension"))
                )
        return out

    def metrics(self, records: Sequence[SampleRecord]) -> MetricsReport:
        from halluscope.metrics.amber import amber_metrics

        return amber_metrics(records, benchmark=self.name, mode=self.mode)

    def answer_reader(self) -> str:
        return "robust" if self.mode == "robust" else "amber-exact"

    def metric_declarations(self) -> Sequence[MetricDeclaration]:
        return amber_declarations(self.mode)

    def metric_tables(self, records: Sequence[SampleRecord]) -> dict[str, MetricTable]:
        return {"items": amber_table(records)}
