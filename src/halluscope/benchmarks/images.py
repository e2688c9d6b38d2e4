"""Where each sample's photo is: the ``images`` benchmark option, shared by every benchmark with pictures.

A model under test must see the image its question is about; scoring never needs it. So a benchmark
resolves each sample's ``image_path`` when it loads (from the folder given with ``--bench-opt images=DIR``),
and its ``spec()`` records the folder and how many of the selected samples' images were found. Whether a
run may go on without them is decided once, for every benchmark, where the model is asked
(:mod:`halluscope.runs.images`).

A few questions are text-only by design (HallusionBench's ``visual_input`` 0, asked without a figure): such
a sample carries ``metadata[TEXT_ONLY] = True`` and no image is ever required for it.

Benchmark files are data from elsewhere, and an item's image name is joined to a folder the user chose. A
name such as ``../secret/photo.png``, an absolute path, or a link inside the folder that leads out of it
would make halluscope open, send to a remote endpoint and embed in a report a file the user never offered.
So every loader finds its images through :func:`locate_image`, which resolves the candidate (links too) and
keeps only files inside the folder. An item whose image leads outside gets no ``image_path`` and carries
the one-line reason in ``metadata[IMAGE_OUTSIDE]``: it is never opened, counted as found, or asked.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from halluscope.options import BenchmarkOption
from halluscope.types import Sample

__all__ = [
    "IMAGES_OPTION",
    "IMAGE_MISSING",
    "IMAGE_OUTSIDE",
    "MISSING_IMAGES",
    "MISSING_IMAGES_OPTION",
    "TEXT_ONLY",
    "ImageLookup",
    "check_missing_policy",
    "image_spec",
    "images_folder",
    "locate_image",
    "missing_images",
    "needs_image",
    "outside_images",
    "photo_missing",
    "unanswered_failure",
]

#: Sample metadata key: True on a question asked without an image by the benchmark's design.
TEXT_ONLY = "text_only"
#: Sample metadata key: why the item's image is refused (its path leads outside the images folder).
IMAGE_OUTSIDE = "image_outside"
#: Sample metadata key: the path where the item's photo was looked for and is not (:func:`photo_missing`).
IMAGE_MISSING = "image_missing"
#: What a run asking a model does with selected samples whose image is missing: ``refuse`` to start (the
#: default), or ``fail`` them (recorded as failures, never asked) and go on with the rest.
MISSING_IMAGES = ("refuse", "fail")

#: The two image options, declared once for every benchmark with pictures.
IMAGES_OPTION = BenchmarkOption(
    "images", "path", "the folder of the benchmark's images, shown to the model in --model runs; scoring never needs it"
)
MISSING_IMAGES_OPTION = BenchmarkOption(
    "missing_images", "choice", "fail: a --model run records the samples whose image is missing as failures and "
    "asks the rest; refuse: it does not start", default="refuse", choices=MISSING_IMAGES,
)


def images_folder(
    benchmark: str,
    images: Path | str | None,
    *,
    beside: Path | None = None,
    error: type[ValueError] = ValueError,
) -> Path | None:
    """The ``images`` option of ``benchmark``, checked: the folder given, else ``beside`` when that is a folder
    (a dataset that ships its photos next to its file), else None.

    A folder given that is not there is refused at once (as ``error``, the benchmark's own data error),
    naming the benchmark, instead of every photo being reported missing at the first ``--model`` run.
    """
    if images is not None and not Path(images).is_dir():
        raise error(f"the {benchmark} benchmark: images folder {images} does not exist")
    if images:
        return Path(images)
    return beside if beside is not None and beside.is_dir() else None


def photo_missing(photo: ImageLookup) -> dict[str, str]:
    """Sample metadata naming where the photo was looked for when it is not there (nothing when it is, when
    no folder was given, or when its path is refused): what :func:`unanswered_failure` names."""
    if photo.path is None or Path(photo.path).is_file():
        return {}
    return {IMAGE_MISSING: photo.path}


def unanswered_failure(item: str, sample: Sample) -> str:
    """The failure of ``item`` (``"GAVIE item 3"``) when the answers hold none for it, naming its photo when
    the images folder lacks it: the likely reason a ``--model`` run could not ask it."""
    missing = sample.metadata.get(IMAGE_MISSING)
    why = f" (its photo {Path(missing).name} is not in the images folder)" if missing else ""
    return f"{item}: no response for this item{why}"


def check_missing_policy(value: Any) -> str:
    """The ``missing_images`` option, checked."""
    text = str(value).strip().lower()
    if text not in MISSING_IMAGES:
        raise ValueError(f"missing_images={value!r}; choose refuse (the default) or fail")
    return text


@dataclass(frozen=True)
class ImageLookup:
    """Where an item's image is: ``path`` (the file, or where it was expected when it is not there), or
    ``outside`` (why the item's image name is refused; ``path`` is then None)."""

    path: str | None
    outside: str | None = None

    @property
    def found(self) -> bool:
        return self.path is not None and Path(self.path).is_file()

    @property
    def metadata(self) -> dict[str, str]:
        """What the sample's metadata carries about a refused image (nothing when all is well)."""
        return {IMAGE_OUTSIDE: self.outside} if self.outside else {}


def locate_image(folder: Path | None, names: Sequence[str], places: Sequence[str] = ("",)) -> ImageLookup:
    """The first of ``names`` that is a file inside ``folder``, looked for in each of ``places`` in turn
    (sub-folders of ``folder``; ``""`` is the folder itself).

    A candidate is kept only if, with links and ``..`` resolved, it stays inside ``folder``. When no file
    is found and some candidate led outside, the lookup says so (an item naming ``../x.png`` is refused,
    not reported missing); otherwise the path is the first name directly in the folder (so that a report of
    missing images names where the image was expected). No folder, or no name: no path.
    """
    if folder is None or not names:
        return ImageLookup(None)
    root = _real_dir(str(folder))
    outside: str | None = None
    for place in places:
        for name in names:
            candidate = (folder / place / name) if place else folder / name
            verdict, real = _check(candidate, name, root)
            if verdict == "file":
                return ImageLookup(str(candidate))
            if verdict == "outside":
                outside = outside or _outside_message(name, folder, real)
    expected = folder / names[0]
    if outside is None and "" not in places and _check(expected, names[0], root)[0] == "outside":
        outside = _outside_message(names[0], folder, None)
    return ImageLookup(None, outside) if outside else ImageLookup(str(expected))


def _outside_message(name: str, folder: Path, real: Path | None) -> str:
    to = f" (to {real})" if real is not None else ""
    return (
        f"its image {name!r} leads outside the images folder {folder}{to}; it is not opened or sent: "
        "correct the item's image path, or put the photo inside the folder"
    )


@functools.lru_cache(maxsize=4096)
def _real_dir(path: str) -> Path | None:
    """A folder with its links resolved, memoised: a benchmark looks in the same few folders for every item
    (resolving each of 20,000 paths in full would cost a minute on a slow disk)."""
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError):  # a link loop: nothing in it can be trusted
        return None


def _check(candidate: Path, name: str, root: Path | None) -> tuple[str, Path | None]:
    """``file`` (a file inside ``root``), ``missing`` (no such file; nothing to open) or ``outside``, with
    the resolved path where it was worked out.

    A plain name is only resolved when the file is there (its folder from the memo, the file itself when it
    is a link); a name with ``..`` or an absolute one is always resolved, so it is told apart from a missing
    photo.
    """
    pure = PurePath(name)
    suspicious = pure.is_absolute() or ".." in pure.parts
    if not suspicious and not candidate.is_file():
        return "missing", None
    if root is None:
        return "outside", None
    real: Path | None
    if suspicious or candidate.is_symlink():
        try:
            real = candidate.resolve()
        except (OSError, RuntimeError):
            return "outside", None
    else:
        parent = _real_dir(str(candidate.parent))
        real = parent / candidate.name if parent is not None else None
    if real is None or not real.is_relative_to(root):
        return "outside", real
    return ("file" if candidate.is_file() else "missing"), real


def needs_image(sample: Sample) -> bool:
    """Whether asking a model this sample needs its image (every sample but the text-only ones)."""
    return not sample.metadata.get(TEXT_ONLY)


def outside_images(samples: Iterable[Sample]) -> dict[str, str]:
    """Sample id → the one line saying which image path leads outside the images folder, over the samples
    that need an image."""
    return {
        s.id: f"item {s.id}: {s.metadata[IMAGE_OUTSIDE]}"
        for s in samples
        if needs_image(s) and s.metadata.get(IMAGE_OUTSIDE)
    }


def missing_images(samples: Iterable[Sample]) -> dict[str, str]:
    """Sample id → why its image is missing (the path looked for, that no images folder was given, or that
    its path leads outside the folder), over the samples that need one; each distinct path is looked up
    once."""
    missing: dict[str, str] = {}
    exists: dict[str, bool] = {}
    for sample in samples:
        if not needs_image(sample):
            continue
        if sample.metadata.get(IMAGE_OUTSIDE):
            missing[sample.id] = f"item {sample.id}: {sample.metadata[IMAGE_OUTSIDE]}"
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
    """What spec.json records about images: the folder, and how many needed images were found (an image
    whose path leads outside the folder is not; ``images_outside`` counts those).

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
    outside = len(outside_images(selected))
    if outside:
        spec["images_outside"] = outside
    if text_only:
        spec["text_only_samples"] = text_only
    if policy != "refuse":
        spec["missing_images"] = policy
    return spec
