"""Where each sample's photo is: the ``images`` benchmark option, shared by every benchmark with pictures.

A model under test must see the image its question is about; scoring never needs it. So a benchmark
resolves each sample's ``image_path`` when it loads (from the folder given with ``--bench-opt images=DIR``),
and its ``spec()`` records the folder and how many of the selected samples' images were found. Whether a
run may go on without them is decided once, for every benchmark, where the model is asked
(:mod:`halluscope.runs.images`).

A few questions are text-only by design (HallusionBench's ``visual_input`` 0, asked without a figure): such
a sample carries ``metadata[TEXT_ONLY] = True`` and no image is ever required for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from halluscope.types import Sample

__all__ = [
    "MISSING_IMAGES",
    "TEXT_ONLY",
    "check_missing_policy",
    "find_image",
    "image_spec",
    "missing_images",
    "needs_image",
]

#: Sample metadata key: True on a question asked without an image by the benchmark's design.
TEXT_ONLY = "text_only"
#: What a run asking a model does with selected samples whose image is missing: ``refuse`` to start (the
#: default), or ``fail`` them (recorded as failures, never asked) and go on with the rest.
MISSING_IMAGES = ("refuse", "fail")


def check_missing_policy(value: Any) -> str:
    """The ``missing_images`` option, checked."""
    text = str(value).strip().lower()
    if text not in MISSING_IMAGES:
        raise ValueError(f"missing_images={value!r}; choose refuse (the default) or fail")
    return text


def find_image(folder: Path | None, names: Sequence[str], subfolders: Iterable[str] = ()) -> str | None:
    """The first of ``names`` that exists in ``folder`` or one of its ``subfolders``.

    None when no folder is given; when nothing is found, the first place looked at (so that a report of
    missing images names where the image was expected).
    """
    if folder is None or not names:
        return None
    places = [folder, *(folder / sub for sub in subfolders)]
    for place in places:
        for name in names:
            candidate = place / name
            if candidate.is_file():
                return str(candidate)
    return str(folder / names[0])


def needs_image(sample: Sample) -> bool:
    """Whether asking a model this sample needs its image (every sample but the text-only ones)."""
    return not sample.metadata.get(TEXT_ONLY)


def missing_images(samples: Iterable[Sample]) -> dict[str, str]:
    """Sample id → why its image is missing (the path looked for, or that no images folder was given), over
    the samples that need one; each distinct path is looked up once."""
    missing: dict[str, str] = {}
    exists: dict[str, bool] = {}
    for sample in samples:
        if not needs_image(sample):
            continue
        path = sample.image_path
        if path is None:
            missing[sample.id] = "no image path (no images folder given)"
            continue
        if path not in exists:
            exists[path] = Path(path).is_file()
        if not exists[path]:
            missing[sample.id] = f"image not found: {path}"
    return missing


def image_spec(folder: Path | None, samples: Iterable[Sample], policy: str = "refuse") -> dict[str, Any]:
    """What spec.json records about images: the folder, and how many needed images were found.

    Only written when a folder is given, so a responses-file run (no images needed) keeps its spec.
    ``policy`` is the benchmark's ``missing_images`` option, recorded when not the default.
    """
    if folder is None:
        return {}
    selected = list(samples)
    needed = sum(1 for s in selected if needs_image(s))
    text_only = len(selected) - needed
    found = needed - len(missing_images(selected))
    spec: dict[str, Any] = {"images": str(folder), "images_found": found, "images_needed": needed}
    if text_only:
        spec["text_only_samples"] = text_only
    if policy != "refuse":
        spec["missing_images"] = policy
    return spec
