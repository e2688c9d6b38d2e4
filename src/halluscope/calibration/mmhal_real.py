"""MMHal-Bench's judges against real ratings: hand labels made by looking at the photos, and GPT-4o's.

The packaged set ``halluscope/calibration/data/mmhal_real.json`` holds real answers of real VLMs (the official
example responses shipped with MMHal-Bench) to MMHal-Bench questions, each labelled by a person who looked
at the photo and read the question, the reference answer and the answer: ``hallucinated`` (the answer
states something false about the photo) and a ``rating`` on the benchmark's 0–6 scale. Labels were made
before any judge's output on these answers was seen. The set is split **by photo** into ``tune`` and
``heldout``; judges are reported on ``heldout``, which was not looked at again once labelled.

:func:`agreement` compares two ratings per answer (a judge against the labels, or against GPT-4o): exact
agreement, agreement within one point, agreement on hallucinated-or-not (rating below 3) with Cohen's
kappa, and the Spearman and Pearson correlations of the ratings. :func:`model_agreement` compares the
per-model averages (rank correlation over models).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from statistics import fmean
from typing import Any, Literal

from pydantic import BaseModel

from halluscope.jsonio import loads_json

__all__ = ["MMHalLabel", "agreement", "default_labels_path", "load_labels", "model_agreement"]

HALLUCINATION_BELOW = 3


class MMHalLabel(BaseModel):
    """One labelled answer: which model's answer to which item, and the labels."""

    #: The response file's stem (``llava_7b``: ``responses/llava_7b.json`` of the dataset).
    model: str
    #: The sample id: the item's 0-based position in the template.
    id: str
    #: The photo's file name (the split is by photo).
    image: str
    split: Literal["tune", "heldout"]
    hallucinated: bool
    rating: int
    #: Why, in a few words (what is wrong, or what the photo shows).
    note: str = ""


def default_labels_path() -> Path:
    return Path(str(resources.files("halluscope.calibration") / "data" / "mmhal_real.json"))


def load_labels(path: Path | None = None, split: str | None = None) -> list[MMHalLabel]:
    """The labelled answers (one split, or all); the rating must agree with the hallucinated flag."""
    raw = loads_json((path or default_labels_path()).read_text(encoding="utf-8"))
    labels = [MMHalLabel.model_validate(entry) for entry in raw["answers"]]
    for label in labels:
        if not 0 <= label.rating <= 6 or (label.rating < HALLUCINATION_BELOW) != label.hallucinated:
            raise ValueError(f"label {label.model}/{label.id}: rating {label.rating} and hallucinated "
                             f"{label.hallucinated} disagree")
    return [x for x in labels if split in (None, "all") or x.split == split]


def _kappa(a: Sequence[bool], b: Sequence[bool]) -> float | None:
    n = len(a)
    if not n:
        return None
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    pa, pb = sum(a) / n, sum(b) / n
    expected = pa * pb + (1 - pa) * (1 - pb)
    return None if expected == 1 else (observed - expected) / (1 - expected)


def _correlations(x: Sequence[float], y: Sequence[float]) -> tuple[float | None, float | None]:
    if len(x) < 3 or len(set(x)) < 2 or len(set(y)) < 2:
        return None, None
    from scipy import stats

    spearman = float(stats.spearmanr(x, y).statistic)
    pearson = float(stats.pearsonr(x, y).statistic)
    return (spearman if math.isfinite(spearman) else None), (pearson if math.isfinite(pearson) else None)


def agreement(reference: Mapping[str, int | None], judged: Mapping[str, int | None]) -> dict[str, Any]:
    """Per-answer agreement of ``judged`` ratings with ``reference`` ratings, over the keys both rated."""
    keys = [k for k in reference if reference[k] is not None and judged.get(k) is not None]
    ref = [int(reference[k]) for k in keys]  # type: ignore[arg-type]
    got = [int(judged[k]) for k in keys]  # type: ignore[arg-type]
    n = len(keys)
    ref_h = [r < HALLUCINATION_BELOW for r in ref]
    got_h = [g < HALLUCINATION_BELOW for g in got]
    spearman, pearson = _correlations(ref, got)
    tp = sum(a and b for a, b in zip(ref_h, got_h, strict=True))
    return {
        "n": n,
        "not_rated": sum(1 for k in reference if reference[k] is not None and judged.get(k) is None),
        "exact": sum(a == b for a, b in zip(ref, got, strict=True)) / n if n else None,
        "within_1": sum(abs(a - b) <= 1 for a, b in zip(ref, got, strict=True)) / n if n else None,
        "hallucinated_agreement": sum(a == b for a, b in zip(ref_h, got_h, strict=True)) / n if n else None,
        "kappa": _kappa(ref_h, got_h),
        "hallucination_precision": tp / sum(got_h) if sum(got_h) else None,
        "hallucination_recall": tp / sum(ref_h) if sum(ref_h) else None,
        "spearman": spearman,
        "pearson": pearson,
        "mean_reference": fmean(ref) if ref else None,
        "mean_judged": fmean(got) if got else None,
        "hal_rate_reference": 100 * sum(ref_h) / n if n else None,
        "hal_rate_judged": 100 * sum(got_h) / n if n else None,
    }


def model_agreement(reference: Mapping[str, float], judged: Mapping[str, float]) -> dict[str, Any]:
    """Rank and linear correlation of per-model averages over the models both scored."""
    models = sorted(set(reference) & set(judged))
    spearman, pearson = _correlations([reference[m] for m in models], [judged[m] for m in models])
    return {"models": models, "n": len(models), "spearman": spearman, "pearson": pearson}
