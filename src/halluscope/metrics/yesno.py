"""Metrics of the yes/no benchmarks (POPE, AMBER discriminative): both rule sets, overall and per group.

Records are those written through :func:`halluscope.benchmarks.yes_no.yes_no_record`: extra fields
``label``, ``paper_prediction``, ``robust_prediction``, ``prediction`` (the run's mode) and the grouping
fields. The headline numbers follow the run's mode; the other mode's headline numbers are kept under
``paper_*`` / ``robust_*`` so one run shows both, and ``mode_disagreements`` counts the items the two rules
read differently (a refusal read as "yes" by the paper rule counts too).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from halluscope.metrics.binary import binary_metrics
from halluscope.types import MetricsReport, SampleRecord

__all__ = ["UNANSWERED_REASONS", "unanswered_reasons", "yes_no_report"]


#: The robust reader's reasons for leaving an answer unanswered, each counted as ``unanswered_<reason>``.
UNANSWERED_REASONS = ("refusal", "contradictory", "ambiguous", "unparsed", "empty")


def unanswered_reasons(records: Sequence[SampleRecord]) -> dict[str, int]:
    """How many answers the robust reader left unanswered, per reason (``robust_parse`` of each record)."""
    counts = dict.fromkeys((f"unanswered_{reason}" for reason in UNANSWERED_REASONS), 0)
    for record in records:
        if record.field("robust_prediction") is None:
            key = f"unanswered_{record.field('robust_parse')}"
            if key in counts:
                counts[key] += 1
    return counts


def yes_no_report(
    records: Sequence[SampleRecord],
    *,
    benchmark: str,
    mode: str,
    group_by: Sequence[str],
    positive: str = "yes",
    scale: float = 1.0,
) -> MetricsReport:
    """Binary metrics of the scored records; ``group_by`` fields form the group keys (joined with "/").

    ``scale`` multiplies the 0–100 rates (AMBER's paper reports them ×1, POPE's ×1 too: both in percent).
    """
    scored = [r for r in records if r.failure is None and r.field("label") is not None]
    metrics: dict[str, float | None] = {}
    for rule in ("paper", "robust"):
        preds = [r.field(f"{rule}_prediction") for r in scored]
        labels = [str(r.field("label")) for r in scored]
        values = binary_metrics(preds, labels, positive=positive)
        for key, value in values.items():
            if key in ("answered", "unanswered"):
                continue
            metrics[f"{rule}_{key}"] = None if value is None else value * scale
        if rule == mode:
            for key in ("accuracy", "precision", "recall", "f1", "yes_ratio"):
                metrics[key] = metrics[f"{rule}_{key}"]
    groups: dict[str, dict[str, float | None]] = {}
    buckets: dict[str, list[SampleRecord]] = defaultdict(list)
    for record in scored:
        key = "/".join(str(record.field(field)) for field in group_by)
        buckets[key].append(record)
    for key in sorted(buckets):
        members = buckets[key]
        values = binary_metrics(
            [r.field("prediction") for r in members],
            [str(r.field("label")) for r in members],
            positive=positive,
        )
        groups[key] = {k: (v if k in ("answered", "unanswered") or v is None else v * scale) for k, v in values.items()}
    disagreements = sum(
        1 for r in scored if r.field("paper_prediction") != r.field("robust_prediction")
    )
    counts = {
        "samples": len(records),
        "scored": len(scored),
        "no_response": sum(1 for r in records if r.response is None),
        "failed": sum(1 for r in records if r.failure is not None and r.response is not None),
        "unanswered": sum(1 for r in scored if r.field("prediction") is None),
        "mode_disagreements": disagreements,
        # why the robust reader left answers unanswered: refusals, self-contradictions, "yes and no", unread
        **unanswered_reasons(scored),
    }
    return MetricsReport(
        benchmark=benchmark,
        metrics=metrics,
        groups=groups,
        counts=counts,
        details={"mode": mode, "positive_class": positive, "group_by": list(group_by)},
    )
