"""HQH: free-form questions over eight hallucination types, judged against Visual Genome region descriptions.

Yan et al., "Evaluating the Quality of Hallucination Benchmarks for Large Vision-Language Models" (the HQM
framework and its HQH benchmark). Official data: https://github.com/HQHBench/HQHBench (``HQH.json``,
``image_data.json``; Visual Genome images, not shipped).

``HQH.json`` is a list of 4,000 items ``{id, image_id, image, instruction, ground_truth, type}``, 500 for each
type: attribute, action, count, environment, comparison, relation, OCR, existence. **Sample ids are the
item's ``id``** (as a string). ``image_data.json`` maps each image id to ``{caption, image_information}``,
the latter being Visual Genome region descriptions, one per line, each followed by
``X:.. Y:.. Width:.. Height:..``. In the released file ``Height`` always repeats ``Width`` (a construction
bug of the file): the boxes are kept exactly as written in :class:`~halluscope.scene.graph.Region`, and the
judges' prompts give a region's position and width only.

The image information becomes the image's :class:`~halluscope.scene.graph.SceneGraph` (``caption`` and
``regions``). An item whose image has no entry in ``image_data.json`` (the older partial release covers 925
images) is still a sample: its record carries a failure naming the item and the image, it is counted, and it
is left out of the rates. An item missing a required field is treated the same way.

Every record carries the item's hallucination type in ``metadata["type"]`` (and at the top level as
``type``), so tools that tabulate coverage of hallucination types read it from there.

Benchmark options (``--bench-opt key=value``) are declared once, in :attr:`HQH.options` (``halluscope list``,
docs/hqh.md).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
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
    locate_image,
)
from halluscope.download import ByHand, DataSet, github_files
from halluscope.jsonio import loads_json
from halluscope.judges.hqh import HQHItem, HQHJudge, HQHJudgement
from halluscope.judges.hqh_rules import empty_answer, parse_numbers
from halluscope.metrics.hqh import TYPE_COLUMNS, record_type
from halluscope.options import BenchmarkOption
from halluscope.responses import ResponsesError, ResponsesFile, load_responses
from halluscope.scene.graph import SceneGraph
from halluscope.stages import Failure, MetricDeclaration, MetricTable, ProfileFigure, SampleSource
from halluscope.types import Response, Sample, SampleRecord

__all__ = [
    "HQH",
    "HQH_DATA",
    "TYPES",
    "HQHDataError",
    "ImageData",
    "download_hqh",
    "hqh_declarations",
    "hqh_table",
    "is_hqh_layout",
    "load_hqh_answers",
    "parse_image_information",
    "read_hqh_items",
    "read_image_data",
]

#: The hallucination types, in the order of the paper's Table 10 (``count`` is its "Counting").
TYPES = ("attribute", "action", "count", "environment", "comparison", "relation", "OCR", "existence")
_TYPE_OF = {t.lower(): t for t in TYPES} | {"counting": "count", "ocr": "OCR"}
_REQUIRED = ("image_id", "instruction", "ground_truth", "type")
#: Fields of an HQH.json item that are not part of a model's answer.
_OFFICIAL_FIELDS = {"id", "image_id", "image", "instruction", "ground_truth", "type"}
#: HQH's files from the repository's default branch (main, else master; no commit is recorded). HQH.json's
#: size and sha256 are those of the shared copy; image_data.json is not checked (the only copy at hand is an
#: older, partial release).
HQH_DATA = DataSet(
    name="hqh",
    title="HQH",
    files=github_files(
        "HQHBench/HQHBench",
        ("main", "master"),
        "",
        {
            "HQH.json": (834809, "3175a7be1905bce197ae35dfe7d8cf8523ac68057d312f22bb4ad3c29dc908ba"),
            "image_data.json": (None, None),
        },
    ),
    by_hand=(
        ByHand(
            "the Visual Genome photos (VG_100K, VG_100K_2)",
            "https://homes.cs.washington.edu/~ranjay/visualgenome/api.html", "images", "--bench-opt images=FOLDER",
        ),
    ),
)  # fmt: skip
OFFICIAL_FILES = tuple(f.path for f in HQH_DATA.files)
_REGION = re.compile(
    r"(?P<text>.*?)\s*X:\s*(?P<x>-?\d+)\s+Y:\s*(?P<y>-?\d+)\s+Width:\s*(?P<w>-?\d+)\s+Height:\s*(?P<h>-?\d+)",
    re.DOTALL,
)


class HQHDataError(ValueError):
    """The HQH files are missing or malformed; the message names the file and the item."""


# -- data files ----------------------------------------------------------------------------------------------


def download_hqh() -> Path:
    """``HQH.json`` and ``image_data.json`` in the user cache, fetched first if missing (machines with internet
    only)."""
    hint = "pass --data with a folder holding HQH.json and image_data.json"
    return ensure_data(HQH_DATA, error=HQHDataError, hint=hint)


def resolve_data(data: Path | None, image_data: Path | None = None) -> tuple[Path, Path | None]:
    """``HQH.json`` and the image-information file (None when there is none next to it).

    ``data`` is ``HQH.json`` itself or its folder. The image information is ``image_data`` when given, else
    ``image_data.json`` in the same folder, else another ``image_data*.json`` there (such as the older
    ``image_data.partial.json``).
    """
    if data is None:
        env = os.environ.get("HALLUSCOPE_HQH")
        data = Path(env) if env else download_hqh()
    path = Path(data)
    if path.is_dir():
        path = path / "HQH.json"
    if not path.is_file():
        raise HQHDataError(f"HQH data not found at {path}")
    if image_data is not None:
        if not Path(image_data).is_file():
            raise HQHDataError(f"HQH image information not found at {image_data}")
        return path, Path(image_data)
    folder = path.parent
    exact = folder / "image_data.json"
    if exact.is_file():
        return path, exact
    others = sorted(folder.glob("image_data*.json"))
    return path, others[0] if others else None


def _read_json(path: Path) -> Any:
    try:
        return loads_json(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise HQHDataError(f"{path} is not valid JSON: {error}") from error
    except UnicodeDecodeError as error:
        raise HQHDataError(f"{path} is not UTF-8 text: {error}") from error


def read_hqh_items(path: Path) -> list[Any]:
    """The items of ``HQH.json``, unchecked one by one (each item is checked when it becomes a sample)."""
    raw = _read_json(path)
    if not isinstance(raw, list):
        raise HQHDataError(f"{path}: expected a JSON list of HQH items, got {type(raw).__name__}")
    return raw


def parse_image_information(text: str) -> list[tuple[str, tuple[int, int, int, int]]]:
    """Region descriptions with their boxes from one image's ``image_information`` string.

    Each description is followed by ``X:.. Y:.. Width:.. Height:..``; a description may contain a line break
    (some do in the released file). Text after the last box is ignored.
    """
    regions = []
    for match in _REGION.finditer(text):
        description = " ".join(match.group("text").split())
        box = (int(match.group("x")), int(match.group("y")), int(match.group("w")), int(match.group("h")))
        if description:
            regions.append((description, box))
    return regions


@dataclass(frozen=True)
class ImageInfo:
    """One image's entry of ``image_data.json``: its scene, or why it cannot be used."""

    scene: SceneGraph | None
    problem: str | None = None


class ImageData(Mapping[str, ImageInfo]):
    """Image id → its scene (caption + regions), each entry parsed the first time it is asked for.

    Why lazy: ``image_data.json`` describes 925 images in 27,000 region descriptions, and parsing them all
    took most of a re-run's time, though a run reads only the images of its samples (a ``--limit 120`` run
    about a hundred). An entry reads the same whenever it is parsed, so the order of the asking changes
    nothing.
    """

    def __init__(self, path: Path, raw: dict[str, Any]) -> None:
        self._path = Path(path)
        self._raw = {str(image_id): entry for image_id, entry in raw.items()}
        self._parsed: dict[str, ImageInfo] = {}

    def __getitem__(self, image_id: str) -> ImageInfo:
        info = self._parsed.get(image_id)
        if info is None:
            info = self._parsed[image_id] = _image_info(self._path, image_id, self._raw[image_id])
        return info

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


def _image_info(path: Path, image_id: str, entry: Any) -> ImageInfo:
    """One entry of ``image_data.json`` as a scene, or why it cannot be used."""
    where = f"{path.name}: image {image_id}"
    if not isinstance(entry, dict):
        return ImageInfo(None, f"{where}: expected an object")
    info, caption = entry.get("image_information"), entry.get("caption")
    if not isinstance(info, str) or not isinstance(caption, str | None):
        return ImageInfo(None, f"{where}: 'image_information' (and 'caption') must be strings")
    scene = SceneGraph(image_id=image_id)
    scene.caption = caption.strip() if isinstance(caption, str) and caption.strip() else None
    for description, box in parse_image_information(info):
        scene.add_region(description, box)
    if not scene.regions and scene.caption is None:
        return ImageInfo(None, f"{where}: no caption and no region description")
    return ImageInfo(scene)


def read_image_data(path: Path) -> ImageData:
    """Image id → its scene (caption + regions); a malformed entry keeps the reason instead of a scene.
    Entries are parsed when first asked for (:class:`ImageData`)."""
    raw = _read_json(path)
    if not isinstance(raw, dict):
        raise HQHDataError(f"{path}: expected a JSON object keyed by image id, got {type(raw).__name__}")
    return ImageData(path, raw)


def normalise_type(value: Any) -> str | None:
    """The HQH type name for ``value`` ("Counting", "ocr" are read too), None when unknown."""
    return _TYPE_OF.get(str(value).strip().lower()) if isinstance(value, str) else None


#: Where a Visual Genome image ``<id>.jpg`` is looked for under the ``images`` folder.
VG_PLACES = ("VG_100K", "VG_100K_2", "images", "")


# -- answers in HQH's own layout -----------------------------------------------------------------------------


def is_hqh_layout(path: Path) -> bool:
    """A JSON list whose items have ``instruction`` and ``ground_truth``: HQH.json with answers added."""
    path = Path(path)
    try:
        with path.open(encoding="utf-8") as handle:
            head = handle.read(4096).lstrip()
    except (OSError, UnicodeDecodeError):
        return False
    return head.startswith("[") and '"instruction"' in head and '"ground_truth"' in head


def load_hqh_answers(
    path: Path, *, key: str | None = None, benchmark_ids: set[str] | None = None
) -> ResponsesFile:
    """Answers in the official layout: ``HQH.json`` items with the model's answer under ``answer`` (or ``key``).

    Items without an answer, without an ``id``, with an id the benchmark does not have, or repeated, are
    listed as problems; the others are read. Extra fields of an item go to ``Response.metadata``.
    """
    field_name = key or "answer"
    try:
        raw = read_hqh_items(path)
    except HQHDataError as error:
        raise ResponsesError(str(error)) from error
    result = ResponsesFile(layout="hqh")
    for position, item in enumerate(raw):
        where = f"{Path(path).name} item {position}"
        if not isinstance(item, dict) or not isinstance(item.get("id"), int | str) or isinstance(item.get("id"), bool):
            result.problems.append(f"{where}: no usable 'id'")
            continue
        sample_id = str(item["id"])
        where = f"{where} (id {sample_id})"
        value = item.get(field_name)
        if not isinstance(value, str):
            result.problems.append(f"{where}: no answer in {field_name!r}")
            continue
        if sample_id in result.responses:
            result.problems.append(f"{where}: a second answer for id {sample_id}; the first one is used")
            continue
        if benchmark_ids is not None and sample_id not in benchmark_ids:
            result.problems.append(f"{where}: unknown id {sample_id}: no such item in the benchmark")
            continue
        metadata = {k: v for k, v in item.items() if k not in _OFFICIAL_FIELDS and k != field_name}
        model = metadata.pop("model", None)
        result.responses[sample_id] = Response(
            id=sample_id, response=value, model=model if isinstance(model, str) else None, metadata=metadata
        )
    if not result.responses:
        raise ResponsesError(
            f"{path}: no HQH item has an answer in {field_name!r} (is this the unanswered HQH.json?)"
            + (f"; first problem: {result.problems[0]}" if result.problems else "")
        )
    return result


# -- the benchmark ---------------------------------------------------------------------------------------------


class HQH(Benchmark):
    """The HQH benchmark: one judged verdict per answer, hallucination rates per type and overall."""

    name: ClassVar[str] = "hqh"
    profile: ClassVar[tuple[ProfileFigure, ...]] = (
        ProfileFigure("object", "generative", "existence/hallucination_rate"),
        ProfileFigure("attribute", "generative", "attribute/hallucination_rate"),
        ProfileFigure("relation", "generative", "relation/hallucination_rate"),
    )
    title: ClassVar[str] = "HQH"
    data_sets: ClassVar[tuple[DataSet, ...]] = (HQH_DATA,)
    options: ClassVar[tuple[BenchmarkOption, ...]] = (
        replace(IMAGES_OPTION, help="a Visual Genome folder holding VG_100K / VG_100K_2 or the images themselves, "
                "shown to the model in --model runs"),
        BenchmarkOption(
            "image_data", "path", "the image-information file (region descriptions)",
            default_text="image_data.json beside HQH.json",
        ),
        BenchmarkOption(
            "types", "csv", "which hallucination types (counting is read as count, ocr as OCR)",
            choices=TYPES, default_text="all",
        ),
        MISSING_IMAGES_OPTION,
    )
    default_extractor: ClassVar[str | None] = None
    #: Offline by default, like every halluscope default; ``--judge hqh-llm`` is the paper's protocol.
    default_judge: ClassVar[str | None] = "hqh-rules"
    judge_kind: ClassVar[str] = "hqh"

    def __init__(
        self,
        data: Path | None = None,
        *,
        images: Path | None = None,
        image_data: Path | None = None,
        types: Sequence[str] | None = None,
        missing_images: str = "refuse",
    ) -> None:
        self.path, self.image_data_path = resolve_data(data, image_data)
        self.missing_images = check_missing_policy(missing_images)
        self.images = Path(images) if images else None
        chosen: list[str] = []
        for value in types or []:
            kind = normalise_type(value)
            if kind is None:
                raise ValueError(f"the HQH benchmark: unknown type {value!r}; choose from {', '.join(TYPES)}")
            chosen.append(kind)
        self.types = sorted(set(chosen), key=TYPES.index) if chosen else None

    # -- data -------------------------------------------------------------------------------------------

    @cached_property
    def items(self) -> list[Any]:
        return read_hqh_items(self.path)

    @cached_property
    def image_info(self) -> Mapping[str, ImageInfo]:
        return read_image_data(self.image_data_path) if self.image_data_path else {}

    def _problem(self, item: Mapping[str, Any]) -> str | None:
        """Why an item cannot be judged (a missing field, no image information), or None."""
        missing = [k for k in _REQUIRED if not isinstance(item.get(k), str | int) or isinstance(item.get(k), bool)]
        if missing:
            return f"HQH item {item.get('id')}: missing or invalid field(s) {', '.join(missing)}"
        if normalise_type(item["type"]) is None:
            return f"HQH item {item['id']}: unknown type {item['type']!r}"
        image_id = str(item["image_id"])
        if self.image_data_path is None:
            return (
                f"HQH item {item['id']}: no image information file (image_data.json) next to {self.path.name}; "
                "pass --bench-opt image_data=PATH"
            )
        info = self.image_info.get(image_id)
        if info is None:
            return (
                f"HQH item {item['id']}: image {image_id} has no entry in {self.image_data_path.name}, "
                "so there is no caption or region description to judge the answer against"
            )
        return info.problem and f"HQH item {item['id']}: {info.problem}"

    def _sample(self, position: int, item: Mapping[str, Any]) -> Sample:
        problem = self._problem(item)
        image_id = str(item.get("image_id")) if item.get("image_id") is not None else None
        photo = ImageLookup(None)
        if image_id and self.images is not None:
            # Where it was looked for when it is not there: a run asking a model names the missing files.
            photo = locate_image(self.images, [f"{image_id}.jpg"], VG_PLACES)
        elif image_id:
            # The release's own layout, next to HQH.json: its ``image`` field (``./images/<id>.jpg``).
            official = item.get("image")
            relative = official if isinstance(official, str) else f"images/{image_id}.jpg"
            photo = locate_image(self.path.parent, [relative])
        kind = normalise_type(item.get("type"))
        metadata: dict[str, Any] = {"type": kind or str(item.get("type")), "position": position, **photo.metadata}
        if problem:
            metadata["problem"] = problem
        return Sample(
            id=str(item["id"]),
            benchmark=self.name,
            prompt=str(item.get("instruction") or ""),
            image_id=image_id,
            image_path=photo.path,
            reference=str(item["ground_truth"]) if item.get("ground_truth") is not None else None,
            metadata=metadata,
        )

    def _selected(self) -> Iterator[tuple[int, Mapping[str, Any]]]:
        seen: set[str] = set()
        for position, item in enumerate(self.items):
            if not isinstance(item, dict):
                continue
            raw_id = item.get("id")
            if not isinstance(raw_id, int | str) or isinstance(raw_id, bool) or str(raw_id) in seen:
                continue
            seen.add(str(raw_id))
            if self.types is not None and normalise_type(item.get("type")) not in self.types:
                continue
            yield position, item

    def unusable_items(self) -> list[str]:
        """Items that cannot even be samples (not an object, no usable or a repeated ``id``), by position."""
        problems, seen = [], set()
        for position, item in enumerate(self.items):
            raw_id = item.get("id") if isinstance(item, dict) else None
            if not isinstance(raw_id, int | str) or isinstance(raw_id, bool):
                problems.append(f"{self.path.name} item {position}: not an object with a usable 'id'; skipped")
            elif str(raw_id) in seen:
                problems.append(f"{self.path.name} item {position}: repeated id {raw_id}; skipped")
            else:
                seen.add(str(raw_id))
        return problems

    def samples(self) -> Iterator[Sample]:
        for position, item in self._selected():
            yield self._sample(position, item)

    def sample_ids(self) -> list[str]:
        """The ids without the samples: a sample checks its image's regions, its id does not need them."""
        return [str(item["id"]) for _, item in self._selected()]

    def scene(self, sample: Sample) -> SceneGraph | None:
        info = self.image_info.get(sample.image_id or "")
        return info.scene if info is not None else None

    def spec(self, samples: Sequence[Sample] | None = None) -> dict[str, Any]:
        samples = self._counted(samples)
        problems = [s.metadata["problem"] for s in samples if s.metadata.get("problem")]
        return {
            "benchmark": self.name,
            "data": str(self.path),
            "image_data": str(self.image_data_path) if self.image_data_path else None,
            "images": str(self.images) if self.images else None,
            **image_spec(self.images, samples, self.missing_images),
            "types": self.types,
            "items_without_image_information": len(problems),
            "unusable_items": len(self.unusable_items()),
        }

    def read_responses(
        self, path: Path, *, benchmark_ids: set[str] | None = None, key: str | None = None
    ) -> ResponsesFile:
        """halluscope JSONL, or HQH's own layout (HQH.json with ``answer``; told apart by content)."""
        if is_hqh_layout(Path(path)):
            return load_hqh_answers(Path(path), key=key, benchmark_ids=benchmark_ids)
        return load_responses(Path(path), benchmark_ids=benchmark_ids)

    # -- scoring ----------------------------------------------------------------------------------------

    async def score_many(
        self, pairs: Sequence[tuple[Sample, Response | None]], ctx: ScoringContext
    ) -> list[SampleRecord]:
        judge = ctx.judge
        failures: dict[str, str] = {}
        stages: dict[str, str] = {}  # sample id → the stage that failed it, when not its inputs
        empty: dict[str, HQHJudgement] = {}
        items: list[HQHItem] = []
        for sample, response in pairs:
            if sample.metadata.get("problem"):
                failures[sample.id] = str(sample.metadata["problem"])
            elif response is None:
                failures[sample.id] = f"HQH item {sample.id}: no response for this item"
            elif not isinstance(judge, HQHJudge):
                name = getattr(judge, "name", None)
                failures[sample.id] = (
                    f"judge {name!r} cannot judge HQH answers; use --judge hqh-rules (offline), hqh-llm or vlm"
                )
                stages[sample.id] = "judge"
            elif not response.response.strip():
                empty[sample.id] = empty_answer()  # incorrect, as HQH's official grader scores it
            else:
                scene = self.scene(sample)
                assert scene is not None  # samples without image information carry a problem
                items.append(
                    HQHItem(
                        sample_id=sample.id,
                        type=str(sample.metadata["type"]),
                        instruction=sample.prompt,
                        ground_truth=sample.reference or "",
                        answer=response.response,
                        scene=scene,
                        image_path=sample.image_path,
                    )
                )
        results: dict[str, HQHJudgement | Failure] = dict(empty)
        if items and isinstance(judge, HQHJudge):
            for item, result in zip(items, await judge.grade_many(items), strict=True):
                results[item.sample_id] = result
        records = []
        for sample, response in pairs:
            extras: dict[str, Any] = {
                "type": sample.metadata.get("type"),
                "hallucinated": None,
                "extra_claims": None,
                "verdict": None,
            }
            failure = failures.get(sample.id)
            outcome = results.get(sample.id)
            if isinstance(outcome, Failure):
                failure = f"HQH item {sample.id}: {outcome.reason}"
                stages[sample.id] = "judge"
            elif isinstance(outcome, HQHJudgement):
                extras.update(outcome.record_fields())
            records.append(
                SampleRecord(
                    id=sample.id,
                    prompt=sample.prompt,
                    response=response.response if response else None,
                    failure=failure,
                    failed_stage=stages.get(sample.id, "input") if failure else None,
                    image_id=sample.image_id,
                    image_path=sample.image_path,
                    reference=sample.reference,
                    model=response.model if response else None,
                    metadata={"type": sample.metadata.get("type")},
                    **extras,
                )
            )
        return records

    def metric_declarations(self) -> Sequence[MetricDeclaration]:
        # Coverage and the rate's low / high bounds are left undeclared: they describe the judge's abstentions
        # (what the rate would be were every unjudged answer right or wrong), not the model's hallucination.
        return hqh_declarations(self.types or TYPES)

    def metric_tables(self, records: Sequence[SampleRecord]) -> dict[str, MetricTable]:
        return {"items": hqh_table(records)}

    def metrics(self, records: Sequence[SampleRecord]) -> MetricsReport:
        from halluscope.metrics.hqh import hqh_metrics

        return hqh_metrics(records, benchmark=self.name)


def hqh_declarations(types: Sequence[str]) -> tuple[MetricDeclaration, ...]:
    """HQH's headline over :func:`hqh_table`: the rate of each selected type (Table 10's columns), the overall
    rate ("Main Hal%"), the official "Overall Hal%" and "Extra #Hal" (a count per answer, so scale 1).

    The unit is the image: HQH asks up to seven questions of one Visual Genome image (3,153 images for its
    4,000 items), and answers about one picture stand or fall together.
    """

    def declare(name: str, components: tuple[str, str], description: str, scale: float = 100.0) -> MetricDeclaration:
        return MetricDeclaration(
            name=name, statistic="ratio", components=components, scale=scale, higher_is_better=False,
            unit="image", description=description, judged="verdict" if scale == 100.0 else None,
        )  # fmt: skip

    per_type = [
        declare(TYPE_COLUMNS[t], (f"{t}_hallucinated", f"{t}_judged"), f"judged {t} answers that are incorrect")
        for t in types
    ]
    overall = "answers incorrect or with an extra claim the image contradicts"
    extra = "extra claims the image contradicts, per answer"
    return (
        *per_type,
        declare("hallucination_rate", ("hallucinated", "judged"), "judged answers that are incorrect"),
        declare("overall_hallucination_rate", ("hallucinated_or_extra", "extra_counted"), overall),
        declare("extra_claims_per_answer", ("extra_claims", "extra_counted"), extra, scale=1.0),
    )


def hqh_table(records: Sequence[SampleRecord]) -> MetricTable:
    """One row per judged answer, as ``hqh_metrics`` counts them (failed and unjudged answers are in no rate),
    clustered by image: its verdict, overall and under its type, and its extra claims when they were counted."""
    ids: list[str] = []
    clusters: list[str] = []
    columns: dict[str, list[float]] = {
        k: [] for k in ("hallucinated", "judged", "hallucinated_or_extra", "extra_counted", "extra_claims")
    }
    columns.update({f"{t}_{k}": [] for t in TYPES for k in ("hallucinated", "judged")})
    for record in records:
        hallucinated = record.field("hallucinated")
        if record.failure is not None or not isinstance(hallucinated, bool):
            continue
        extra = record.field("extra_claims")
        counted = isinstance(extra, int) and not isinstance(extra, bool)
        extra_claims = extra if counted else 0
        kind = record_type(record)
        row = {
            "hallucinated": float(hallucinated),
            "judged": 1.0,
            "hallucinated_or_extra": float(counted and (hallucinated or extra_claims > 0)),
            "extra_counted": float(counted),
            "extra_claims": float(extra_claims),
        }
        row.update({f"{t}_{k}": 0.0 for t in TYPES for k in ("hallucinated", "judged")})
        if kind in TYPES:
            row[f"{kind}_hallucinated"], row[f"{kind}_judged"] = float(hallucinated), 1.0
        for name, value in row.items():
            columns[name].append(value)
        ids.append(record.id)
        clusters.append(record.image_id or record.id)
    return MetricTable(ids=ids, components=columns, clusters=clusters)


def ground_truth_responses(bench: SampleSource, *, mismatched: bool = False) -> list[Response]:
    """Reference answers as responses, for checking the judges; ``mismatched`` makes deliberately wrong ones.

    A mismatched answer is the reference answer of the next item of the same type whose reference differs
    (ignoring case and punctuation), so both classes exist for every type: a working judge calls the
    matched answers correct and most mismatched ones incorrect. Items with a problem get no response.
    """
    samples = [s for s in bench.samples() if not s.metadata.get("problem")]
    by_type: dict[str, list[Sample]] = {}
    for sample in samples:
        by_type.setdefault(str(sample.metadata["type"]), []).append(sample)

    def key(sample: Sample) -> object:
        if sample.metadata["type"] == "count":  # "Two." and "2." are the same answer
            return frozenset(parse_numbers(sample.reference or ""))
        return " ".join(re.sub(r"[^a-z0-9]+", " ", (sample.reference or "").lower()).split())

    responses = []
    for group in by_type.values():
        for position, sample in enumerate(group):
            text = sample.reference or ""
            if mismatched:
                donors = group[position + 1 :] + group[:position]
                donor = next((d for d in donors if key(d) != key(sample)), None)
                if donor is None:
                    continue
                text = donor.reference or ""
            responses.append(
                Response(
                    id=sample.id, response=text, model="mismatched-ground-truth" if mismatched else "ground-truth"
                )
            )
    return responses
