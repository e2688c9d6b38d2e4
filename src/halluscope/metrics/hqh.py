"""HQH's hallucination rates, as fractions like the paper, from scored records.

Each record holds one judged answer: ``hallucinated`` (the main verdict: True when the answer is incorrect;
None when unjudged), ``extra_claims`` (other claims contradicting the image information; None when the
judge does not count them) and its type in ``metadata["type"]``. The measures:

- per type (``attribute``, ``action``, ``counting``, ``environment``, ``comparison``, ``relation``, ``ocr``,
  ``existence``: the columns of the paper's Table 10): the share of judged answers that are incorrect;
- ``hallucination_rate``: the same over every judged answer. With HQH's 500 items per type this is the
  mean of the per-type rates, which is what Table 10's "Overall" column holds (the official script calls it
  "Main Hal%");
- ``overall_hallucination_rate``: incorrect, or at least one extra contradicting claim (the official
  script's "Overall Hal%"), over the answers whose extra claims were counted; None when no judge counted
  them (the offline judge does not);
- ``extra_claims_per_answer``: the mean number of extra contradicting claims ("Extra #Hal").

Unjudged answers and failed samples (no response, no image information, a judge call that failed) are left
out of every rate and counted in ``counts`` (``unjudged``, ``unjudged_<type>``, ``failed``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from halluscope.types import MetricsReport, SampleRecord

#: HQH's type names and the metric names of their rates (Table 10's columns, lower-case).
TYPE_COLUMNS = {
    "attribute": "attribute",
    "action": "action",
    "count": "counting",
    "environment": "environment",
    "comparison": "comparison",
    "relation": "relation",
    "OCR": "ocr",
    "existence": "existence",
}


def record_type(record: SampleRecord) -> str:
    """The record's hallucination type (``metadata["type"]``), ``unknown`` when absent."""
    kind = record.field("type")
    return str(kind) if kind else "unknown"


def _rate(values: Sequence[bool]) -> float | None:
    return sum(values) / len(values) if values else None


def hqh_metrics(records: Sequence[SampleRecord], *, benchmark: str = "hqh") -> MetricsReport:
    """Per-type and overall hallucination rates of HQH records (see the module docstring)."""
    main: list[bool] = []
    overall: list[bool] = []
    extras: list[int] = []
    by_type: dict[str, dict[str, Any]] = {}
    counts = {"samples": len(records), "judged": 0, "unjudged": 0, "failed": 0, "extra_claims_counted": 0}
    for record in records:
        kind = record_type(record)
        bucket = by_type.setdefault(kind, {"main": [], "overall": [], "unjudged": 0, "failed": 0})
        if record.failure is not None:
            counts["failed"] += 1
            bucket["failed"] += 1
            continue
        hallucinated = record.field("hallucinated")
        if not isinstance(hallucinated, bool):
            counts["unjudged"] += 1
            bucket["unjudged"] += 1
            continue
        counts["judged"] += 1
        main.append(hallucinated)
        bucket["main"].append(hallucinated)
        extra = record.field("extra_claims")
        if isinstance(extra, int) and not isinstance(extra, bool):
            counts["extra_claims_counted"] += 1
            extras.append(extra)
            flag = hallucinated or extra > 0
            overall.append(flag)
            bucket["overall"].append(flag)

    metrics: dict[str, float | None] = {}
    groups: dict[str, dict[str, float | None]] = {}
    ordered = [k for k in TYPE_COLUMNS if k in by_type] + sorted(k for k in by_type if k not in TYPE_COLUMNS)
    for kind in ordered:
        bucket = by_type[kind]
        column = TYPE_COLUMNS.get(kind, kind.lower())
        metrics[column] = _rate(bucket["main"])
        groups[kind] = {
            "hallucination_rate": _rate(bucket["main"]),
            "overall_hallucination_rate": _rate(bucket["overall"]),
            "judged": float(len(bucket["main"])),
            "unjudged": float(bucket["unjudged"]),
            "failed": float(bucket["failed"]),
        }
        counts[f"unjudged_{column}"] = bucket["unjudged"]
    metrics["hallucination_rate"] = _rate(main)
    metrics["overall_hallucination_rate"] = _rate(overall)
    metrics["extra_claims_per_answer"] = sum(extras) / len(extras) if extras else None
    failures: dict[str, int] = {}
    for record in records:
        if record.failure is not None:
            reason = record.failure.split(": ", 1)[-1] if record.failure.startswith("HQH item") else record.failure
            key = "no image information" if "no entry in" in reason else reason.split(";")[0][:80]
            failures[key] = failures.get(key, 0) + 1
    counts["no_image_information"] = failures.get("no image information", 0)
    return MetricsReport(
        benchmark=benchmark,
        metrics=metrics,
        groups=groups,
        counts=counts,
        details={"failure_reasons": failures},
    )
