"""MMHal-Bench: 96 open questions about OpenImages photos, each answer rated 0–6 by an LLM judge.

Sun et al., "Aligning Large Multimodal Models with Factually Augmented RLHF" (LLaVA-RLHF, arXiv 2309.14525).
Data: ``response_template.json`` (Hugging Face dataset ``Shengcao1006/MMHal-Bench``; the same bytes are
``eval/data/mmhal-bench_answer_template.json`` in RLHF-V/RLHF-V on GitHub, where the default download reads
it). It is a list of 96 records ``{question_type, question_topic, image_id, image_src, image_content,
question, gt_answer, model_answer}``: eight question types, twelve questions each, in a fixed rotation
(record i has type ``attribute, adversarial, comparison, counting, relation, environment, holistic, other``
[i % 8]). ``image_content`` lists the photo's OpenImages labels; ``image_src`` is its Flickr URL.

**Sample ids are the 0-based position of the record in the template** (``"0"`` … ``"95"``), which is what
the official scoring code uses: it pairs the judge's replies with records by position and derives the
type from the position. ``image_id`` (the OpenImages id) is kept as the sample's image id.

**Responses** in the official layout are the template with ``model_answer`` filled (the files of the
dataset's ``responses/`` folder): read by position, each record's ``question`` checked against the
template's, so a reordered or foreign file is refused item by item instead of scored against the wrong
reference. halluscope's own JSONL (``{"id": "0", "response": ...}``) is read as everywhere.

**Images** (``--bench-opt images=DIR``, so ``--model`` runs send the photo): the photo of a record is the
file named as the last part of its ``image_src`` (``7206072054_c53d53b97d_o.jpg``, the dataset's
``images/`` folder), else ``<image_id>.jpg`` (OpenImages naming). Without the option, an ``images`` folder
next to the template is used when there is one. The judge never sees the photo (the benchmark's judge
is text-only: it reads the labels and the reference).

Benchmark options (``--bench-opt``) are declared once, in :attr:`MMHal.options` (``halluscope list``,
docs/mmhal.md).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from halluscope.benchmarks._download import ensure_data
from halluscope.benchmarks.base import Benchmark, MetricsReport, ScoringContext
from halluscope.benchmarks.images import (
    IMAGES_OPTION,
    MISSING_IMAGES_OPTION,
    ImageLookup,
    check_missing_policy,
    image_spec,
    images_folder,
    locate_image,
    photo_missing,
    unanswered_failure,
)
from halluscope.download import ByHand, DataSet, RemoteFile
from halluscope.jsonio import loads_json
from halluscope.judges.mmhal import MMHalItem, MMHalJudge, MMHalRating
from halluscope.metrics.mmhal import TYPES, mmhal_table
from halluscope.options import BenchmarkOption
from halluscope.responses import ResponsesError, ResponsesFile, load_responses
from halluscope.stages import Failure, MetricDeclaration, MetricTable, ProfileFigure
from halluscope.types import Response, Sample, SampleRecord

__all__ = [
    "TEMPLATE_NAMES",
    "TYPES",
    "MMHal",
    "MMHalDataError",
    "image_file_name",
    "is_mmhal_layout",
    "load_mmhal_answers",
    "read_template",
]

TEMPLATE_NAMES = ("response_template.json", "mmhal-bench_answer_template.json")
#: The template, from RLHF-V at the commit the shared copy comes from, else from the Hugging Face dataset
#: (the same bytes); the photos are the dataset's image archive, fetched by hand.
MMHAL_DATA = DataSet(
    name="mmhal-bench",
    title="MMHal-Bench",
    files=(
        RemoteFile(
            TEMPLATE_NAMES[0],
            (
                "https://raw.githubusercontent.com/RLHF-V/RLHF-V/8daac8a8f30df123818ae9d3a0e3f0018497714c/"
                "eval/data/mmhal-bench_answer_template.json",
                "https://huggingface.co/datasets/Shengcao1006/MMHal-Bench/resolve/main/response_template.json",
            ),
            50519,
            "28ed24e19ffef292597c35f1dad37760b2e0a088b3b40ca3b50f105fc1b951bb",
        ),
    ),
    by_hand=(
        ByHand(
            "the 96 photos (images/, each named as the last part of its image_src)",
            "https://huggingface.co/datasets/Shengcao1006/MMHal-Bench", "images",
        ),
    ),
)  # fmt: skip
_REQUIRED = ("question_type", "question", "gt_answer")


class MMHalDataError(ValueError):
    """The MMHal-Bench template is missing or malformed; the message names the file and the record."""


def download_template() -> Path:
    """``response_template.json`` in the user cache, fetched first if missing (machines with internet only)."""
    folder = ensure_data(MMHAL_DATA, error=MMHalDataError, hint="pass --data with the file or its folder")
    return folder / TEMPLATE_NAMES[0]


def resolve_template(data: Path | None) -> Path:
    """The template: ``data`` itself, or a template file in the folder ``data``; else the download."""
    if data is None:
        env = os.environ.get("HALLUSCOPE_MMHAL")
        return resolve_template(Path(env)) if env else download_template()
    path = Path(data)
    if path.is_dir():
        for name in TEMPLATE_NAMES:
            if (path / name).is_file():
                return path / name
        raise MMHalDataError(f"no {' or '.join(TEMPLATE_NAMES)} in {path}")
    if not path.is_file():
        raise MMHalDataError(f"MMHal-Bench template not found at {path}")
    return path


def _read_list(path: Path) -> list[Any]:
    try:
        raw = loads_json(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise MMHalDataError(f"{path} is not valid JSON: {error}") from error
    except UnicodeDecodeError as error:
        raise MMHalDataError(f"{path} is not UTF-8 text: {error}") from error
    if not isinstance(raw, list):
        raise MMHalDataError(f"{path}: expected a JSON list of MMHal-Bench records, got {type(raw).__name__}")
    return raw


def read_template(path: Path) -> list[Any]:
    """The template's records, unchecked one by one (each is checked when it becomes a sample)."""
    return _read_list(path)


def image_file_name(record: dict[str, Any]) -> str | None:
    """The photo's file name in the dataset's ``images/`` folder: the last part of ``image_src``."""
    src = record.get("image_src")
    if isinstance(src, str) and src.strip():
        return src.strip().rstrip("/").rsplit("/", 1)[-1] or None
    return None


# -- answers in the official layout --------------------------------------------------------------------------


def is_mmhal_layout(path: Path) -> bool:
    """A JSON list whose records have ``gt_answer`` and ``model_answer``: the filled template."""
    try:
        with Path(path).open(encoding="utf-8") as handle:
            head = handle.read(8192).lstrip()
    except (OSError, UnicodeDecodeError):
        return False
    return head.startswith("[") and '"gt_answer"' in head and '"model_answer"' in head


def load_mmhal_answers(
    path: Path, template: Sequence[Any], *, key: str | None = None, benchmark_ids: set[str] | None = None
) -> ResponsesFile:
    """Answers from a filled template: record i answers item i; its question must be the template's."""
    field_name = key or "model_answer"
    try:
        raw = _read_list(Path(path))
    except MMHalDataError as error:
        raise ResponsesError(str(error)) from error
    result = ResponsesFile()
    if len(raw) != len(template):
        result.problems.append(
            f"{Path(path).name}: {len(raw)} records where the template has {len(template)}; "
            "records are matched by position, so only those whose question matches are read"
        )
    for position, record in enumerate(raw):
        where = f"{Path(path).name} record {position}"
        if not isinstance(record, dict):
            result.problems.append(f"{where}: not a JSON object")
            continue
        if position >= len(template):
            result.problems.append(f"{where}: beyond the template's {len(template)} items")
            continue
        expected = template[position].get("question") if isinstance(template[position], dict) else None
        if record.get("question") != expected:
            result.problems.append(
                f"{where}: question {str(record.get('question'))[:60]!r} is not the template's question "
                f"{str(expected)[:60]!r} at this position (records are matched by position)"
            )
            continue
        sample_id = str(position)
        if benchmark_ids is not None and sample_id not in benchmark_ids:
            continue
        value = record.get(field_name)
        if not isinstance(value, str):
            result.problems.append(f"{where}: no answer in {field_name!r}")
            continue
        result.responses[sample_id] = Response(id=sample_id, response=value)
    if not result.responses:
        raise ResponsesError(
            f"{path}: no MMHal-Bench record with an answer in {field_name!r} could be read"
            + (f"; first problem: {result.problems[0]}" if result.problems else "")
        )
    return result


# -- the benchmark ---------------------------------------------------------------------------------------------


class MMHal(Benchmark):
    """MMHal-Bench: one 0–6 rating per answer; average score and hallucination rate, per question type."""

    name: ClassVar[str] = "mmhal"
    profile: ClassVar[tuple[ProfileFigure, ...]] = (
        ProfileFigure("attribute", "generative", "hallucination_rate_attribute"),
        ProfileFigure("relation", "generative", "hallucination_rate_relation"),
    )
    title: ClassVar[str] = "MMHal-Bench"
    data_sets: ClassVar[tuple[DataSet, ...]] = (MMHAL_DATA,)
    options: ClassVar[tuple[BenchmarkOption, ...]] = (
        replace(IMAGES_OPTION, default_text="images/ beside the template, when there is one"),
        BenchmarkOption("types", "csv", "which question types", choices=TYPES, default_text="all"),
        MISSING_IMAGES_OPTION,
    )
    default_extractor: ClassVar[str | None] = None
    #: The benchmark's protocol is an LLM judge; there is no offline judge good enough to be a default
    #: (docs/mmhal.md), so ``--judge mmhal-llm`` is the default and needs an endpoint or ``--judge-model local``.
    default_judge: ClassVar[str | None] = "mmhal-llm"
    judge_kind: ClassVar[str] = "mmhal"

    def __init__(
        self,
        data: Path | None = None,
        *,
        images: Path | None = None,
        types: Sequence[str] | None = None,
        missing_images: str = "refuse",
    ) -> None:
        self.path = resolve_template(data)
        self.missing_images = check_missing_policy(missing_images)
        self.images = images_folder("MMHal-Bench", images, beside=self.path.parent / "images")
        chosen = []
        for value in types or []:
            kind = value.strip().lower()
            if kind not in TYPES:
                raise ValueError(f"the MMHal-Bench benchmark: unknown type {value!r}; choose from {', '.join(TYPES)}")
            chosen.append(kind)
        self.types = sorted(set(chosen), key=TYPES.index) if chosen else None

    @cached_property
    def records(self) -> list[Any]:
        return read_template(self.path)

    def _image(self, record: dict[str, Any]) -> ImageLookup:
        name = image_file_name(record)
        names = [name] if name else []
        if isinstance(record.get("image_id"), str):
            names.append(f"{record['image_id']}.jpg")
        return locate_image(self.images, names)

    def _sample(self, position: int, record: Any) -> Sample:
        if not isinstance(record, dict):
            return Sample(
                id=str(position), benchmark=self.name, prompt="",
                metadata={"problem": f"MMHal-Bench item {position}: not a JSON object", "position": position},
            )  # fmt: skip
        missing = [k for k in _REQUIRED if not isinstance(record.get(k), str) or not record[k].strip()]
        metadata: dict[str, Any] = {
            "question_type": str(record.get("question_type") or TYPES[position % len(TYPES)]),
            "question_topic": record.get("question_topic"),
            "image_content": [str(c) for c in record.get("image_content") or [] if isinstance(c, str)],
            "position": position,
        }
        if missing:
            metadata["problem"] = f"MMHal-Bench item {position}: missing or empty field(s) {', '.join(missing)}"
        photo = self._image(record)
        metadata.update(photo.metadata)
        metadata.update(photo_missing(photo))
        return Sample(
            id=str(position),
            benchmark=self.name,
            prompt=str(record.get("question") or ""),
            image_id=str(record["image_id"]) if record.get("image_id") is not None else None,
            image_path=photo.path,
            reference=str(record.get("gt_answer") or "") or None,
            metadata=metadata,
        )

    def samples(self) -> Iterator[Sample]:
        for position, record in enumerate(self.records):
            kind = record.get("question_type") if isinstance(record, dict) else None
            if self.types is not None and kind not in self.types:
                continue
            yield self._sample(position, record)

    def spec(self, samples: Sequence[Sample] | None = None) -> dict[str, Any]:
        samples = self._counted(samples)
        return {
            "benchmark": self.name,
            "data": str(self.path),
            "types": self.types,
            "items_with_a_problem": sum(1 for s in samples if s.metadata.get("problem")),
            # images_found / images_needed, as every benchmark records them (resuming ignores the counts)
            **image_spec(self.images, samples, self.missing_images),
        }

    def read_responses(
        self, path: Path, *, benchmark_ids: set[str] | None = None, key: str | None = None
    ) -> ResponsesFile:
        """halluscope JSONL, or the official layout (the template with ``model_answer`` filled)."""
        if is_mmhal_layout(Path(path)):
            return load_mmhal_answers(Path(path), self.records, key=key, benchmark_ids=benchmark_ids)
        return load_responses(Path(path), benchmark_ids=benchmark_ids)

    # -- scoring ----------------------------------------------------------------------------------------

    async def score_many(
        self, pairs: Sequence[tuple[Sample, Response | None]], ctx: ScoringContext
    ) -> list[SampleRecord]:
        judge = ctx.judge
        failures: dict[str, tuple[str, str | None]] = {}
        ratings: dict[str, MMHalRating | Failure] = {}
        items: list[MMHalItem] = []
        for sample, response in pairs:
            if sample.metadata.get("problem"):
                failures[sample.id] = (str(sample.metadata["problem"]), None)
            elif response is None:
                failures[sample.id] = (unanswered_failure(f"MMHal-Bench item {sample.id}", sample), None)
            elif not isinstance(judge, MMHalJudge):
                name = getattr(judge, "name", None)
                failures[sample.id] = (
                    f"judge {name!r} cannot rate MMHal-Bench answers; use --judge mmhal-llm", "judge"
                )
            elif not response.response.strip():
                ratings[sample.id] = MMHalRating(None, unjudged_reason="empty answer: nothing to rate")
            else:
                items.append(
                    MMHalItem(
                        sample_id=sample.id,
                        question_type=str(sample.metadata["question_type"]),
                        question=sample.prompt,
                        reference=sample.reference or "",
                        image_content=list(sample.metadata.get("image_content") or []),
                        answer=response.response,
                    )
                )
        if items and isinstance(judge, MMHalJudge):
            for item, result in zip(items, await judge.grade_many(items), strict=True):
                ratings[item.sample_id] = result
        records = []
        for sample, response in pairs:
            extras: dict[str, Any] = {"rating": None, "hallucinated": None}
            failure, stage = failures.get(sample.id, (None, None))
            outcome = ratings.get(sample.id)
            if isinstance(outcome, Failure):
                failure, stage = f"MMHal-Bench item {sample.id}: {outcome.reason}", "judge"
            elif isinstance(outcome, MMHalRating):
                extras.update(outcome.record_fields())
                if outcome.rating is None and response is not None and response.response.strip():
                    # No single rating in the reply: a judge failure, as for every benchmark; a resumed run asks
                    # again (the reply was not cached), and more than --max-failure-share of them fails the run.
                    failure = f"MMHal-Bench item {sample.id}: unjudged: {outcome.unjudged_reason}"
                    stage = "judge"
            records.append(
                SampleRecord(
                    id=sample.id,
                    prompt=sample.prompt,
                    response=response.response if response else None,
                    failure=failure,
                    failed_stage=stage,
                    image_id=sample.image_id,
                    image_path=sample.image_path,
                    reference=sample.reference,
                    model=response.model if response else None,
                    metadata={
                        "question_type": sample.metadata.get("question_type"),
                        "image_content": sample.metadata.get("image_content"),
                    },
                    **extras,
                )
            )
        return records

    def metric_declarations(self) -> Sequence[MetricDeclaration]:
        """The figures of the benchmark's paper table and official summary: the average rating, the
        hallucination rate and the average rating of each question type of the run, in halluscope's reading
        (unrated answers left out); and the overall two in the official reading (unrated counted as 0), the
        one published figures were made with. The per-type hallucination rates are reported but not
        headline (the paper and the official summary give none), so they are not declared."""

        def declare(name: str, table: str, *, rate: bool = False, description: str) -> MetricDeclaration:
            return MetricDeclaration(
                name=name, statistic="ratio", components=("low", "rated") if rate else ("rating", "rated"),
                scale=100.0 if rate else 1.0, higher_is_better=not rate, table=table, unit="image",
                description=description, judged="rating" if rate else None,
            )  # fmt: skip

        return (
            declare("average_score", "items", description="mean 0-6 rating of the rated answers"),
            declare("hallucination_rate", "items", rate=True, description="rated answers rated below 3"),
            *(
                declare(f"score_{kind}", f"type_{kind}", description=f"mean rating of the {kind} questions")
                for kind in self.types or TYPES
            ),
            declare("official_average_score", "official", description="mean rating, an unrated answer as 0"),
            declare("official_hallucination_rate", "official", rate=True,
                    description="answers rated below 3 or unrated"),
        )

    def metric_tables(self, records: Sequence[SampleRecord]) -> dict[str, MetricTable]:
        tables = {"items": mmhal_table(records), "official": mmhal_table(records, official=True)}
        for kind in self.types or TYPES:
            tables[f"type_{kind}"] = mmhal_table(records, kind=kind)
        return tables

    def metrics(self, records: Sequence[SampleRecord]) -> MetricsReport:
        from halluscope.metrics.mmhal import mmhal_metrics

        return mmhal_metrics(records, benchmark=self.name)
