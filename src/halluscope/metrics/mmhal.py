"""MMHal-Bench's measures from rated records: the average 0–6 rating and the hallucination rate, per type.

Each record holds one rated answer: ``rating`` (0–6, None when unjudged) and its question type in
``metadata["question_type"]``. The measures, as the benchmark's summary reports them:

- ``average_score``: the mean rating over the judged answers (0–6, higher is better);
- ``hallucination_rate``: the share of judged answers rated below 3, **in percent** (0–100; the official
  summary prints a fraction);
- per question type (``attribute``, ``adversarial``, ``comparison``, ``counting``, ``relation``,
  ``environment``, ``holistic``, ``other``: the order of the questions, type of item i being i % 8):
  ``score_<type>`` (its average rating) and ``hallucination_rate_<type>``, also in ``groups``.

Unjudged answers (an empty answer, a judge reply without exactly one rating) and failed samples are left
out of every figure and counted (``counts``: ``judged``, ``unjudged``, ``failed``). The official summary
counts an unparseable judge reply as a rating of 0; ``official_average_score`` /
``official_hallucination_rate`` give that reading too (every non-judged item counted as 0), so a figure
printed by the official script can be checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import fmean
from typing import Any

from halluscope.stages import MetricTable
from halluscope.types import MetricsReport, SampleRecord

#: The question types in the order of the benchmark's items (item i has type TYPES[i % 8]).
TYPES = ("attribute", "adversarial", "comparison", "counting", "relation", "environment", "holistic", "other")
HALLUCINATION_BELOW = 3


def _rating(record: SampleRecord) -> int | None:
    value = (record.model_extra or {}).get("rating")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def judged_rating(record: SampleRecord) -> int | None:
    """The record's rating when it counts in halluscope's figures (rated, not failed); None otherwise.

    One rule for :func:`mmhal_metrics` and :func:`mmhal_table`, so the declared figures are the reported ones.
    """
    rating = _rating(record)
    return rating if rating is not None and record.failure is None else None


def mmhal_table(records: Sequence[SampleRecord], *, official: bool = False, kind: str | None = None) -> MetricTable:
    """One row per answer: ``rating``, ``rated`` (1) and ``low`` (1 when rated below 3), clustered by photo.

    Without ``official`` the rows are the judged answers (the unjudged and failed are left out, as in
    ``average_score``); with it every record is a row and one not judged counts as a 0, as the official script
    reads it. ``kind`` keeps the answers of that question type only. The photo is the resampling unit: the
    questions asked of one photo share it (MMHal-Bench's 96 questions each have their own, so there it is the
    question itself).
    """
    ids: list[str] = []
    clusters: list[str] = []
    columns: dict[str, list[float]] = {"rating": [], "rated": [], "low": []}
    for record in records:
        if kind is not None and record_type(record) != kind:
            continue
        rating = judged_rating(record)
        if rating is None:
            if not official:
                continue
            rating = 0
        columns["rating"].append(float(rating))
        columns["rated"].append(1.0)
        columns["low"].append(float(rating < HALLUCINATION_BELOW))
        ids.append(record.id)
        clusters.append(record.image_id or record.id)
    return MetricTable(ids=ids, components=columns, clusters=clusters)


def record_type(record: SampleRecord) -> str:
    kind = record.metadata.get("question_type") or (record.model_extra or {}).get("question_type")
    return str(kind) if kind else "unknown"


def _summary(ratings: Sequence[int]) -> tuple[float | None, float | None]:
    if not ratings:
        return None, None
    return fmean(ratings), 100.0 * sum(r < HALLUCINATION_BELOW for r in ratings) / len(ratings)


def mmhal_metrics(records: Sequence[SampleRecord], *, benchmark: str = "mmhal") -> MetricsReport:
    """Average rating and hallucination rate, overall and per question type (see the module docstring)."""
    counts = {"samples": len(records), "judged": 0, "unjudged": 0, "failed": 0}
    by_type: dict[str, dict[str, Any]] = {}
    ratings: list[int] = []
    official: list[int] = []
    reasons: dict[str, int] = {}
    for record in records:
        bucket = by_type.setdefault(record_type(record), {"ratings": [], "unjudged": 0, "failed": 0})
        rating = judged_rating(record)
        if rating is not None:
            counts["judged"] += 1
            ratings.append(rating)
            official.append(rating)
            bucket["ratings"].append(rating)
            continue
        official.append(0)
        unjudged = (record.model_extra or {}).get("unjudged_reason")
        if unjudged:
            counts["unjudged"] += 1
            bucket["unjudged"] += 1
            key = "unjudged: " + str(unjudged).split(":")[0][:80]
        else:
            counts["failed"] += 1
            bucket["failed"] += 1
            key = (record.failure or "no rating").split(": ", 1)[-1][:80]
        reasons[key] = reasons.get(key, 0) + 1
    average, rate = _summary(ratings)
    metrics: dict[str, float | None] = {"average_score": average, "hallucination_rate": rate}
    groups: dict[str, dict[str, float | None]] = {}
    ordered = [t for t in TYPES if t in by_type] + sorted(t for t in by_type if t not in TYPES)
    for kind in ordered:
        bucket = by_type[kind]
        type_average, type_rate = _summary(bucket["ratings"])
        metrics[f"score_{kind}"] = type_average
        metrics[f"hallucination_rate_{kind}"] = type_rate
        groups[kind] = {
            "average_score": type_average,
            "hallucination_rate": type_rate,
            "judged": float(len(bucket["ratings"])),
            "unjudged": float(bucket["unjudged"]),
            "failed": float(bucket["failed"]),
        }
    official_average, official_rate = _summary(official)
    metrics["official_average_score"] = official_average
    metrics["official_hallucination_rate"] = official_rate
    distribution = {str(r): ratings.count(r) for r in range(7)}
    return MetricsReport(
        benchmark=benchmark,
        metrics=metrics,
        groups=groups,
        counts=counts,
        details={"rating_distribution": distribution, "not_rated_reasons": reasons},
    )
