"""The one check that a model under test will see the images its questions are about.

A vision model asked "Is there a dog in the image?" without the image still answers, and a run made of such
answers measures nothing while looking complete. So before any model is asked, every selected sample that
needs an image (all but the text-only ones, see :mod:`halluscope.benchmarks.images`) must have one on disk.
When some do not, the run refuses to start, naming how many and the first paths, unless the benchmark's
``missing_images=fail`` option says to record those samples as failures (never asked) and go on.

An item whose image path leads outside the images folder (``../x.png``, an absolute path, a link out of it)
is bad input, not a gap to fill: it is always recorded as a failure of its own (never asked, its file never
opened) with one line naming the item and the path, and the rest of the run goes on.

Models that are shown no image (the ``blind`` and ``scene-oracle`` baselines, ``sim``, ``replay``, an
``openai`` model with ``text_only``) are never refused: a blind baseline is an explicit choice.
"""

from __future__ import annotations

from collections.abc import Sequence

from halluscope.benchmarks.images import IMAGE_OUTSIDE, missing_images, needs_image, outside_images
from halluscope.models.base import Model
from halluscope.stages import BenchmarkInterface
from halluscope.types import Sample, SampleRecord

__all__ = ["MissingImagesError", "check_images", "missing_images", "name_refused_images"]

#: How many missing paths an error message names.
SHOWN = 5


class MissingImagesError(RuntimeError):
    """Selected samples lack the image the model must see; the message says how many and which."""


def check_images(benchmark: BenchmarkInterface, model: Model, samples: Sequence[Sample]) -> dict[str, str]:
    """The samples to record as failed for a missing or refused image (id → reason); raises when the run
    must not start.

    Empty when the model is shown no images, or every needed image is there.
    """
    if not model.sees_images():
        return {}
    needed = sum(1 for s in samples if needs_image(s))
    refused = outside_images(samples)
    if refused and len(refused) == needed:  # nothing would be measured: a wrong folder or broken data
        raise MissingImagesError(
            f"the image of every one of the {needed} selected {benchmark.name} samples that need one leads "
            f"outside the images folder, so nothing would be measured; first: {next(iter(refused.values()))}"
        )
    missing = {i: why for i, why in missing_images(samples).items() if i not in refused}
    if not missing:
        return refused
    if benchmark.missing_images == "fail":
        return {**refused, **missing}
    paths = list(dict.fromkeys(s.image_path for s in samples if s.id in missing and s.image_path))
    if paths:
        shown = ", ".join(paths[:SHOWN]) + (f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else "")
        where = f"not found: {shown}"
    else:
        where = f"no images folder was given (first samples: {', '.join(list(missing)[:SHOWN])})"
    raise MissingImagesError(
        f"{len(missing)} of the {needed} selected {benchmark.name} samples that need an image have none, so "
        f"the model would answer without seeing it; {where}. Pass --bench-opt images=DIR (the folder of the "
        "benchmark's photos), or --bench-opt missing_images=fail to record those samples as failures and go "
        "on, or ask a blind/... baseline on purpose"
    )


def name_refused_images(records: Sequence[SampleRecord], samples: Sequence[Sample]) -> None:
    """Give each unanswered record whose image path leads outside the images folder that reason as its
    failure, in place of the benchmark's "no response": the user reads what to fix in the data."""
    refused = {s.id: s for s in samples if s.metadata.get(IMAGE_OUTSIDE)}
    if not refused:
        return
    for record in records:
        sample = refused.get(record.id)
        if sample is not None and record.response is None:
            record.failure = f"item {sample.id}: {sample.metadata[IMAGE_OUTSIDE]}"
