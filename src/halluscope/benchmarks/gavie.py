"""GAVIE: 1,000 open visual instructions over 120 Visual Genome images, each answer scored 0–10 for relevancy
and accuracy by an LLM judge that reads the image's region descriptions.

Liu et al., "Mitigating Hallucination in Large Multi-Modal Models via Robust Instruction Tuning" (LRV-Instruction,
ICLR 2024). Data: ``evaluation_set.json`` (``Evaluation/`` of FuxiaoLiu/LRV-Instruction on GitHub), a JSON list of
``{"image_id": "<Visual Genome id>", "question": "..."}`` (the official script calls the field ``instruction``;
both are read). Many instructions are deliberately misleading: they ask about objects or attributes the image
does not show.

**Sample ids are the 0-based position of the instruction in the file** (``"0"`` … ``"999"``): the file has no
ids of its own, and an image is asked several instructions. ``image_id`` is kept as the sample's image id and is
the resampling unit of the intervals (the instructions about one image share it).

**Region descriptions** (``--bench-opt regions=FILE``): the judge reads each image's Visual Genome region
descriptions (phrase and box), which the benchmark does not ship. Either Visual Genome's own
``region_descriptions.json`` (a list of ``{"id", "regions": [{"phrase", "x", "y", "width", "height"}]}``) or the
official script's ``vg_annotation.json`` (``{image_id: [{"caption", "bbox": [x, y, w, h]}]}``). The official script
writes each box's width where its height belongs; halluscope writes the height. An item whose image has no
descriptions in the file is a failure naming the item and the image; the others are scored.

**Images** (``--bench-opt images=DIR``, for ``--model`` runs): ``<image_id>.jpg`` in the folder or in its
``VG_100K``/``VG_100K_2`` sub-folders (Visual Genome's own layout). The judge never sees the photo.

Benchmark options (``--bench-opt``) are declared once, in :attr:`Gavie.options` (``halluscope list``, docs/gavie.md);
its metrics once, in :meth:`Gavie.metric_declarations`, from which ``metrics.json`` and its intervals are made.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from halluscope.benchmarks._download import ensure_data
from halluscope.benchmarks.base import Benchmark, ScoringContext
from halluscope.benchmarks.images import (
    IMAGES_OPTION,
    MISSING_IMAGES_OPTION,
    check_missing_policy,
    image_spec,
    images_folder,
    locate_image,
    photo_missing,
    unanswered_failure,
)
from halluscope.download import ByHand, DataSet, github_files
from halluscope.jsonio import loads_json
from halluscope.judges.gavie import GavieGrade, GavieItem, GavieJudge, Region
from halluscope.options import BenchmarkOption
from halluscope.stages import Failure, MetricDeclaration, MetricTable
from halluscope.types import Response, Sample, SampleRecord

__all__ = ["Gavie", "GavieDataError", "read_regions"]

FILE_NAME = "evaluation_set.json"
#: The instructions, at the commit the shared copy comes from; the region descriptions and photos are Visual
#: Genome's, fetched by hand.
GAVIE_DATA = DataSet(
    name="gavie",
    title="GAVIE",
    files=github_files(
        "FuxiaoLiu/LRV-Instruction",
        ("0a5ab53",),
        "Evaluation/",
        {FILE_NAME: (102141, "86d54d1478b22d7a143b8ad7b6ba7d7a397e40d9f6c4ca7768c2107ce2733dc6")},
    ),
    by_hand=(
        ByHand(
            "Visual Genome's region descriptions (region_descriptions.json) and photos",
            "https://homes.cs.washington.edu/~ranjay/visualgenome/api.html", "", "see docs/gavie.md",
        ),
    ),
)  # fmt: skip
#: Where Visual Genome keeps its photos, under the folder a user downloads.
IMAGE_PLACES = ("", "VG_100K", "VG_100K_2")


class GavieDataError(ValueError):
    """GAVIE's instructions or region descriptions are missing or malformed; the message names the file."""


def _read_json(path: Path, what: str) -> Any:
    try:
        return loads_json(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise GavieDataError(f"GAVIE {what} not found at {path}") from error
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise GavieDataError(f"{path} is not a JSON file of GAVIE {what}: {error}") from error


def resolve_instructions(data: Path | None) -> Path:
    """``data`` itself, or ``evaluation_set.json`` in the folder ``data``; else ``$HALLUSCOPE_GAVIE``, else the
    official file downloaded into the cache (machines with internet only)."""
    if data is None:
        env = os.environ.get("HALLUSCOPE_GAVIE")
        if env:
            return resolve_instructions(Path(env))
        return ensure_data(GAVIE_DATA, error=GavieDataError, hint="pass --data") / FILE_NAME
    path = Path(data)
    if path.is_dir():
        path = path / FILE_NAME
    if not path.is_file():
        raise GavieDataError(f"GAVIE instructions not found at {path}")
    return path


def _region(raw: Any) -> Region | None:
    """One region in either layout; None when it is not one (a phrase and four whole numbers)."""
    if not isinstance(raw, dict):
        return None
    phrase = raw.get("phrase", raw.get("caption"))
    box = raw.get("bbox")
    numbers = box if isinstance(box, list) else [raw.get(k) for k in ("x", "y", "width", "height")]
    if (
        not isinstance(phrase, str)
        or len(numbers) != 4
        or not all(isinstance(n, int | float) for n in numbers)
    ):
        return None
    x, y, width, height = (int(n) for n in numbers if isinstance(n, int | float))
    return Region(phrase, x, y, width, height)


def read_regions(path: Path) -> dict[str, list[Region]]:
    """Each image's region descriptions, keyed by image id as text, from Visual Genome's ``region_descriptions.json``
    or the official ``vg_annotation.json``; entries that are not regions are skipped."""
    raw = _read_json(path, "region descriptions")
    if isinstance(raw, dict):
        entries = [(key, value) for key, value in raw.items() if isinstance(value, list)]
    elif isinstance(raw, list):
        entries = [
            (str(image.get("id", image.get("image_id"))), image.get("regions") or [])
            for image in raw
            if isinstance(image, dict)
        ]
    else:
        entries = []
    regions = {str(key): [r for r in map(_region, value) if r is not None] for key, value in entries}
    if not any(regions.values()):
        raise GavieDataError(
            f"{path}: no region descriptions read; expected Visual Genome's region_descriptions.json "
            "or the official vg_annotation.json"
        )
    return regions


class Gavie(Benchmark):
    """GAVIE: the mean 0–10 relevancy and accuracy an LLM judge gives the answers (the paper's R- and A-score)."""

    name: ClassVar[str] = "gavie"
    title: ClassVar[str] = "GAVIE"
    data_sets: ClassVar[tuple[DataSet, ...]] = (GAVIE_DATA,)
    options: ClassVar[tuple[BenchmarkOption, ...]] = (
        BenchmarkOption(
            "regions", "path", "Visual Genome's region_descriptions.json (or the official vg_annotation.json): "
            "what the judge reads instead of the image",
        ),
        IMAGES_OPTION,
        MISSING_IMAGES_OPTION,
    )  # fmt: skip
    default_extractor: ClassVar[str | None] = None
    default_judge: ClassVar[str | None] = "gavie-llm"
    judge_kind: ClassVar[str] = "gavie"

    def __init__(
        self,
        data: Path | None = None,
        *,
        regions: Path | None = None,
        images: Path | None = None,
        missing_images: str = "refuse",
    ) -> None:
        self.path = resolve_instructions(data)
        self.regions_path = Path(regions) if regions is not None else None
        if self.regions_path is not None and not self.regions_path.is_file():
            raise GavieDataError(
                f"the GAVIE benchmark: region descriptions file {self.regions_path} does not exist"
            )
        self.images = images_folder("GAVIE", images, error=GavieDataError)
        self.missing_images = check_missing_policy(missing_images)

    @cached_property
    def records(self) -> list[Any]:
        raw = _read_json(self.path, "instructions")
        if not isinstance(raw, list):
            raise GavieDataError(
                f"{self.path}: expected a JSON list of instructions, got {type(raw).__name__}"
            )
        return raw

    @cached_property
    def regions(self) -> dict[str, list[Region]]:
        return read_regions(self.regions_path) if self.regions_path is not None else {}

    def _sample(self, position: int, record: Any) -> Sample:
        instruction = record.get("question", record.get("instruction")) if isinstance(record, dict) else None
        image_id = record.get("image_id") if isinstance(record, dict) else None
        metadata: dict[str, Any] = {"position": position}
        if not isinstance(instruction, str) or not instruction.strip() or image_id is None:
            metadata["problem"] = f"GAVIE item {position}: not an object with an image_id and a question"
        photo = locate_image(self.images, [f"{image_id}.jpg"], IMAGE_PLACES)
        metadata.update(photo.metadata)
        metadata.update(photo_missing(photo))
        return Sample(
            id=str(position),
            benchmark=self.name,
            prompt=str(instruction or ""),
            image_id=str(image_id) if image_id is not None else None,
            image_path=photo.path,
            metadata=metadata,
        )

    def samples(self) -> Iterator[Sample]:
        for position, record in enumerate(self.records):
            yield self._sample(position, record)

    def spec(self, samples: Sequence[Sample] | None = None) -> dict[str, Any]:
        samples = self._counted(samples)
        return {
            "benchmark": self.name,
            "data": str(self.path),
            "regions": str(self.regions_path) if self.regions_path else None,
            **image_spec(self.images, samples, self.missing_images),
        }

    # -- scoring ----------------------------------------------------------------------------------------

    def _item(self, sample: Sample, response: Response | None, judge: Any) -> GavieItem | str:
        """What the judge is asked for this answer, or why it cannot be asked."""
        if sample.metadata.get("problem"):
            return str(sample.metadata["problem"])
        if response is None:
            return unanswered_failure(f"GAVIE item {sample.id}", sample)
        if not isinstance(judge, GavieJudge):
            return f"judge {getattr(judge, 'name', None)!r} cannot score GAVIE answers; use --judge gavie-llm"
        if self.regions_path is None:
            return (
                f"GAVIE item {sample.id}: no region descriptions to judge by; give --bench-opt regions=FILE"
            )
        regions = self.regions.get(str(sample.image_id))
        if not regions:
            where = self.regions_path.name
            return f"GAVIE item {sample.id}: image {sample.image_id} has no region descriptions in {where}"
        return GavieItem(sample.id, sample.prompt, regions, response.response)

    async def score_many(
        self, pairs: Sequence[tuple[Sample, Response | None]], ctx: ScoringContext
    ) -> list[SampleRecord]:
        asked: list[GavieItem] = []
        outcomes: dict[str, GavieGrade | Failure | str] = {}
        for sample, response in pairs:
            item = self._item(sample, response, ctx.judge)
            if isinstance(item, str):
                outcomes[sample.id] = item
            elif not item.answer.strip():
                outcomes[sample.id] = GavieGrade(
                    0, 0, unjudged_reason=None, explanation="empty answer: scored 0"
                )
            else:
                asked.append(item)
        if asked and isinstance(ctx.judge, GavieJudge):
            for item, grade in zip(asked, await ctx.judge.grade_many(asked), strict=True):
                outcomes[item.sample_id] = grade
        return [self._record(sample, response, outcomes[sample.id]) for sample, response in pairs]

    def _record(
        self, sample: Sample, response: Response | None, outcome: GavieGrade | Failure | str
    ) -> SampleRecord:
        extras: dict[str, Any] = {"relevancy": None, "accuracy": None}
        failure, stage = None, None
        if isinstance(outcome, str):
            failure, stage = outcome, ("judge" if outcome.startswith("judge ") else None)
        elif isinstance(outcome, Failure):
            failure, stage = f"GAVIE item {sample.id}: {outcome.reason}", "judge"
        else:
            extras.update(outcome.record_fields())
            if outcome.unjudged_reason:  # a judge failure: not cached, asked again on resume
                failure, stage = f"GAVIE item {sample.id}: unjudged: {outcome.unjudged_reason}", "judge"
        return SampleRecord(
            id=sample.id,
            prompt=sample.prompt,
            response=response.response if response else None,
            failure=failure,
            failed_stage=stage,
            image_id=sample.image_id,
            image_path=sample.image_path,
            model=response.model if response else None,
            **extras,
        )

    # -- metrics: declared once; metrics.json, its intervals and paired tests are made from them ---------

    def metric_declarations(self) -> Sequence[MetricDeclaration]:
        def mean(name: str, component: str, description: str) -> MetricDeclaration:
            return MetricDeclaration(
                name=name, statistic="ratio", components=(component, "scored"), scale=1.0, unit="image",
                description=description,
            )  # fmt: skip

        return (
            mean(
                "accuracy_score", "accuracy", "mean 0-10 accuracy of the scored answers (the paper's A-score)"
            ),
            mean(
                "relevancy_score",
                "relevancy",
                "mean 0-10 relevancy of the scored answers (the paper's R-score)",
            ),
        )

    def metric_tables(self, records: Sequence[SampleRecord]) -> dict[str, MetricTable]:
        """One row per scored answer (failures and unjudged answers left out), clustered by image."""
        ids: list[str] = []
        clusters: list[str] = []
        columns: dict[str, list[float]] = {"accuracy": [], "relevancy": [], "scored": []}
        for record in records:
            fields = record.model_extra or {}
            accuracy, relevancy = fields.get("accuracy"), fields.get("relevancy")
            if record.failure or not isinstance(accuracy, int) or not isinstance(relevancy, int):
                continue
            ids.append(record.id)
            clusters.append(record.image_id or record.id)
            columns["accuracy"].append(float(accuracy))
            columns["relevancy"].append(float(relevancy))
            columns["scored"].append(1.0)
        return {"items": MetricTable(ids=ids, components=columns, clusters=clusters)}
