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

from halluscope.benchmarks._download import ensure_data
from halluscope.benchmarks.base import Benchmark, MetricsReport, ScoringContext
from halluscope.benchmarks.images import (
    IMAGES_OPTION,
    MISSING_IMAGES_OPTION,
    check_missing_policy,
    image_spec,
    locate_image,
)
from halluscope.benchmarks.triplets import score_open_answers, triplet_declarations, triplet_tables
from halluscope.download import ByHand, DataSet, github_files
from halluscope.gcpause import gc_paused
from halluscope.jsonio import loads_json
from halluscope.metrics.triplets import triplet_metrics
from halluscope.options import BenchmarkOption
from halluscope.responses import (
    ResponsesError,
    ResponsesFile,
    is_single_json_object,
    nothing_usable,
    read_json_file,
)
from halluscope.scene.graph import SceneGraph
from halluscope.scene.triplets import TripletParseError, parse_triplet_string
from halluscope.stages import MetricDeclaration, MetricTable, ProfileFigure, SampleSource
from halluscope.types import Claim, Response, Sample, SampleRecord

#: The question file from the repository's main branch (no commit is recorded for the shared copy, whose
#: bytes the size and sha256 are: a changed upstream file is refused rather than silently scored).
TRI_HE_DATA = DataSet(
    name="tri-he",
    title="Tri-HE",
    files=github_files(
        "wujunjie1998/Tri-HE",
        ("main",),
        "data/",
        {"tri-he.json": (553050, "9742e23933a1463ad487ab4e557b962b5d453500ef4ceee88a8ace9378b4a82b")},
    ),
    by_hand=(
        ByHand(
            "the 300 GQA photos as images/<image_id>.jpg beside tri-he.json (the repository's data/images)",
            "https://github.com/wujunjie1998/Tri-HE", "images",
        ),
    ),
)  # fmt: skip


class TriHEDataError(ValueError):
    """The Tri-HE file is missing, malformed, or has an image entry without the required fields."""


def download_tri_he() -> Path:
    """The official ``tri-he.json`` in the user cache, fetched first if missing (machines with internet only)."""
    hint = "pass --data with a local tri-he.json"
    return ensure_data(TRI_HE_DATA, error=TriHEDataError, hint=hint) / "tri-he.json"


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


# -- answers in Tri-HE's official layout --------------------------------------------------------------------------

#: Fields of an official Tri-HE question; any other field holds something a user added (an answer).
TRI_HE_OFFICIAL_FIELDS = frozenset({"question", "answer", "triplet"})


def _parse_triplets(value: Any, where: str) -> list[Claim]:
    """Pre-extracted triplets as ``[s, r, o]`` lists or Tri-HE's ``"(s, r, o)"`` strings."""
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
    raw = read_json_file(path)
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
        raise nothing_usable(path, result.problems)
    return result


def is_tri_he_layout(path: Path) -> bool:
    """A ``.json`` file holding one JSON object (Tri-HE's layout is keyed by image id)."""
    path = Path(path)
    if path.suffix != ".json" or not path.is_file():
        return False
    with path.open(encoding="utf-8") as handle:
        head = handle.read(256).lstrip()
    return head.startswith("{")




class TriHELayout(Benchmark):
    """A benchmark whose questions are Tri-HE's (Tri-HE itself, the synthetic set that writes a ``tri-he.json``):
    it reads answers in Tri-HE's layout too, besides the default layouts."""

    def read_responses(
        self,
        path: Path,
        *,
        benchmark_ids: set[str] | None = None,
        key: str | None = None,
        claims_key: str | None = None,
    ) -> ResponsesFile:
        """Tri-HE's layout (``tri-he.json`` with answers under ``key``, triplets under ``claims_key``) when the
        file is one (a JSON object, not another tool's output), else the default layouts. A JSON object that is
        not Tri-HE's layout is refused with the Tri-HE reader's reason."""
        from halluscope.importers import detect_external

        path = Path(path)
        if is_tri_he_layout(path) and detect_external(path) is None:
            try:
                return load_tri_he_answers(path, key, claims_key, benchmark_ids=benchmark_ids)
            except ResponsesError:
                if is_single_json_object(path):
                    raise
        return super().read_responses(path, benchmark_ids=benchmark_ids, key=key)


class TriHE(TriHELayout):
    """The Tri-HE benchmark: open questions, answers judged claim by claim against the scene graph."""

    name: ClassVar[str] = "tri-he"
    profile: ClassVar[tuple[ProfileFigure, ...]] = (
        ProfileFigure("object", "generative", "object_hallu_i"),
        ProfileFigure("attribute", "generative", "attribute_hallu_i"),
        ProfileFigure("relation", "generative", "relation_hallu_i"),
    )
    title: ClassVar[str] = "Tri-HE"
    data_sets: ClassVar[tuple[DataSet, ...]] = (TRI_HE_DATA,)
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
