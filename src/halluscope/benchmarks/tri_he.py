"""Tri-HE: triplet-level evaluation of object and relation hallucination.

Wu et al., "Unified Triplet-Level Hallucination Evaluation for Large Vision-Language Models" (Tri-HE).
Official data: https://github.com/wujunjie1998/Tri-HE (``data/tri-he.json``, GQA images).

Sample ids are ``<image_id>-<question index>``, the question index being the 0-based position in the
image's ``instance`` list of the official file. Each image's ``triplets`` (GQA scene graph plus the
question-specific triplets) and ``all_object`` form its :class:`~halluscope.scene.graph.SceneGraph`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from halluscope.benchmarks.base import Benchmark, MetricsReport, ScoringContext
from halluscope.benchmarks.images import (
    IMAGES_OPTION,
    MISSING_IMAGES_OPTION,
    check_missing_policy,
    image_spec,
    locate_image,
)
from halluscope.benchmarks.triplets import score_open_answers, triplet_declarations, triplet_tables
from halluscope.cache import default_cache_dir
from halluscope.download import fetch_first
from halluscope.jsonio import loads_json
from halluscope.metrics.triplets import triplet_metrics
from halluscope.options import BenchmarkOption
from halluscope.scene.graph import SceneGraph
from halluscope.scene.triplets import TripletParseError, parse_triplet_string
from halluscope.stages import MetricDeclaration, MetricTable, ProfileFigure, SampleSource
from halluscope.types import Response, Sample, SampleRecord

OFFICIAL_URL = "https://raw.githubusercontent.com/wujunjie1998/Tri-HE/main/data/tri-he.json"


class TriHEDataError(ValueError):
    """The Tri-HE file is missing, malformed, or has an image entry without the required fields."""


def download_tri_he(target_dir: Path | None = None) -> Path:
    """Fetch the official ``tri-he.json`` into the user cache (machines with internet only)."""
    target_dir = target_dir or default_cache_dir() / "data" / "tri-he"
    target = target_dir / "tri-he.json"
    if target.exists():
        return target
    errors = fetch_first(target, [OFFICIAL_URL])
    if errors:
        raise TriHEDataError(
            f"could not download Tri-HE ({'; '.join(errors)}); pass --data with a local tri-he.json"
        )
    return target


def resolve_data_path(data: Path | None) -> Path:
    """Accept the JSON file or its folder; download when nothing is given."""
    if data is None:
        env = os.environ.get("HALLUSCOPE_TRI_HE")
        return Path(env) if env else download_tri_he()
    path = Path(data)
    if path.is_dir():
        path = path / "tri-he.json"
    if not path.exists():
        raise TriHEDataError(f"Tri-HE data not found at {path}")
    return path


def load_tri_he(path: Path) -> dict[str, dict[str, Any]]:
    """Read and check the official file; errors name the image and the missing field."""
    try:
        raw = loads_json(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise TriHEDataError(f"{path} is not valid JSON: {error}") from error
    if not isinstance(raw, dict):
        raise TriHEDataError(f"{path}: expected an object keyed by image id, got {type(raw).__name__}")
    for image_id, entry in raw.items():
        if not isinstance(entry, dict):
            raise TriHEDataError(f"{path}: image {image_id}: expected an object")
        for key in ("instance", "triplets"):
            if not isinstance(entry.get(key), list):
                raise TriHEDataError(f"{path}: image {image_id}: missing or non-list field {key!r}")
        for index, instance in enumerate(entry["instance"]):
            if not isinstance(instance, dict) or not isinstance(instance.get("question"), str):
                raise TriHEDataError(f"{path}: image {image_id} question {index}: missing 'question'")
    return raw


def scene_from_entry(image_id: str, entry: dict[str, Any]) -> SceneGraph:
    """The scene graph of one image entry: its objects, then every reference triplet."""
    graph = SceneGraph(image_id=image_id)
    for name in entry.get("all_object", []):
        graph.object_names.append(name)
        graph.add_entity(name)
    for text in entry["triplets"]:
        try:
            claims = parse_triplet_string(text)
        except TripletParseError as error:
            raise TriHEDataError(f"image {image_id}: {error}") from error
        graph.reference_texts.append(text)
        for claim in claims:
            graph.add_fact(claim)
    # The reference answers name things the object list misses ("the lamp", "the books"): the typed judge
    # does not call a thing they mention an absent object. Kept out of the fingerprint and the facts.
    graph.graph.graph["reference_answers"] = [
        i["answer"] for i in entry["instance"] if isinstance(i.get("answer"), str) and i["answer"].strip()
    ]
    return graph


def load_scene_graphs(path: Path) -> dict[str, SceneGraph]:
    """Image id → scene graph for every image of a Tri-HE file."""
    return {image_id: scene_from_entry(image_id, entry) for image_id, entry in load_tri_he(path).items()}


class TriHE(Benchmark):
    """The Tri-HE benchmark: open questions, answers judged claim by claim against the scene graph."""

    name: ClassVar[str] = "tri-he"
    profile: ClassVar[tuple[ProfileFigure, ...]] = (
        ProfileFigure("object", "generative", "object_hallu_i"),
        ProfileFigure("attribute", "generative", "attribute_hallu_i"),
        ProfileFigure("relation", "generative", "relation_hallu_i"),
    )
    title: ClassVar[str] = "Tri-HE"
    options: ClassVar[tuple[BenchmarkOption, ...]] = (
        replace(IMAGES_OPTION, default_text="images/ beside the data file"),
        MISSING_IMAGES_OPTION,
    )
    default_extractor: ClassVar[str | None] = "rules"
    #: The best offline configuration on hand-labelled real answers (docs/calibration.md): rules + typed,
    #: read by its contradicted rate. ``--judge similarity`` is Tri-HE's paper protocol (NLI-style judge).
    default_judge: ClassVar[str | None] = "typed"

    def __init__(
        self,
        data: Path | None = None,
        images: Path | None = None,
        missing_images: str = "refuse",
    ) -> None:
        self.path = resolve_data_path(data)
        self.images_dir = Path(images) if images else self.path.parent / "images"
        self.missing_images = check_missing_policy(missing_images)

    @cached_property
    def raw(self) -> dict[str, dict[str, Any]]:
        return load_tri_he(self.path)

    @cached_property
    def scenes(self) -> dict[str, SceneGraph]:
        return {image_id: scene_from_entry(image_id, entry) for image_id, entry in self.raw.items()}

    def spec(self, samples: Sequence[Sample] | None = None) -> dict[str, Any]:
        return {
            "benchmark": self.name,
            "data": str(self.path),
            "images": str(self.images_dir),
            **image_spec(self.images_dir, self._counted(samples), self.missing_images),
        }

    def samples(self) -> Iterator[Sample]:
        for image_id, entry in self.raw.items():
            for index, instance in enumerate(entry["instance"]):
                photo = locate_image(self.images_dir, [f"{image_id}.jpg"])
                yield Sample(
                    id=f"{image_id}-{index}",
                    benchmark=self.name,
                    prompt=instance["question"],
                    image_id=image_id,
                    image_path=photo.path,
                    reference=instance.get("answer"),
                    metadata={
                        "question_index": index,
                        "gt_triplets": list(instance.get("triplet", [])),
                        **photo.metadata,
                    },
                )

    def scene(self, sample: Sample) -> SceneGraph | None:
        return self.scenes.get(sample.image_id or "")

    async def score_many(
        self, pairs: Sequence[tuple[Sample, Response | None]], ctx: ScoringContext
    ) -> list[SampleRecord]:
        return await score_open_answers(pairs, self.scene, ctx)

    def metric_declarations(self) -> Sequence[MetricDeclaration]:
        # Every rate of ``triplet_metrics``; a judge that does not type or does not read claims three ways
        # leaves those rates undefined, and their intervals None, from the records themselves.
        return triplet_declarations()

    def metric_tables(self, records: Sequence[SampleRecord]) -> dict[str, MetricTable]:
        return triplet_tables(records)

    def metrics(self, records: Sequence[SampleRecord]) -> MetricsReport:
        return triplet_metrics(records, benchmark=self.name)


def ground_truth_responses(
    bench: SampleSource, *, with_claims: bool = False, mismatched: bool = False
) -> list[Response]:
    """Reference answers as responses: a sanity check of the instrument.

    With ``mismatched``, every question gets the reference answer of a question about a *different* image
    (the images' answer lists are rotated by one image), so nearly everything it says is unsupported by the
    scene graph: a working judge must rate these far worse than the matched ones. With ``with_claims``,
    the question's supporting triplets are supplied as pre-extracted claims (judging without extraction).
    """
    samples = list(bench.samples())
    by_image: dict[str, list[Sample]] = {}
    for sample in samples:
        by_image.setdefault(sample.image_id or "", []).append(sample)
    images = list(by_image)
    donor_of = {image: images[(i + 1) % len(images)] for i, image in enumerate(images)}
    responses: list[Response] = []
    for sample in samples:
        source = sample
        if mismatched:
            donors = by_image[donor_of[sample.image_id or ""]]
            source = donors[int(sample.metadata["question_index"]) % len(donors)]
        claims = None
        if with_claims:
            claims = [c for text in source.metadata["gt_triplets"] for c in parse_triplet_string(text)]
        responses.append(
            Response(
                id=sample.id,
                response=source.reference or "",
                claims=claims,
                model="mismatched-ground-truth" if mismatched else "ground-truth",
            )
        )
    return responses
