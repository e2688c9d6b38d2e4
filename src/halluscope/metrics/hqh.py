"""HQH's hallucination rates in 0–100 (like every other benchmark here), from scored records.

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

Beside each rate (per type as ``<column>_coverage`` / ``_low`` / ``_high``, overall as ``coverage``,
``hallucination_rate_low`` / ``_high``):

- **coverage**: judged answers / answers the judge was asked about (judged + unjudged), in 0–100;
- **bounds**: the rate if every unjudged answer were correct (``_low``: incorrect / asked) and if every one
  were incorrect (``_high``: (incorrect + unjudged) / asked). A judge that leaves the hard cases unjudged
  can report a low rate on a bad model; the bounds show how far the truth may lie from it.

Unjudged answers and failed samples (no response, no image information, a judge call that failed) are left
out of every rate and counted in ``counts`` (``unjudged``, ``unjudged_<type>``, ``failed``). An empty answer
is not unjudged: the judges score it incorrect, as HQH's official grader does.
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
    return 100 * sum(values) / len(values) if values else None


def _coverage(judged: Sequence[bool], unjudged: int) -> dict[str, float | None]:
    """Coverage and the rate's bounds over the answers a judge was asked about (see the module docstring)."""
    asked = len(judged) + unjudged
    if not asked:
        return {"coverage": None, "low": None, "high": None}
    incorrect = sum(judged)
    return {
        "coverage": 100 * len(judged) / asked,
        "low": 100 * incorrect / asked,
        "high": 100 * (incorrect + unjudged) / asked,
    }


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
        spread = _coverage(bucket["main"], bucket["unjudged"])
        metrics[f"{column}_coverage"] = spread["coverage"]
        metrics[f"{column}_low"] = spread["low"]
        metrics[f"{column}_high"] = spread["high"]
        groups[kind] = {
            "hallucination_rate": _rate(bucket["main"]),
            "coverage": spread["coverage"],
            "hallucination_rate_low": spread["low"],
            "hallucination_rate_high": spread["high"],
            "overall_hallucination_rate": _rate(bucket["overall"]),
            "judged": float(len(bucket["main"])),
            "unjudged": float(bucket["unjudged"]),
            "failed": float(bucket["failed"]),
        }
        counts[f"unjudged_{column}"] = bucket["unjudged"]
    metrics["hallucination_rate"] = _rate(main)
    spread = _coverage(main, counts["unjudged"])
    metrics["coverage"] = spread["coverage"]
    metrics["hallucination_rate_low"] = spread["low"]
    metrics["hallucination_rate_high"] = spread["high"]
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
