"""Judges' measured agreement with careful readers, packaged with halluscope.

``data/agreement.json`` holds, per judge configuration (its full ``identity()``), the counts measured on
labelled real answers by ``bench/judge_agreement.py``: of the statements labelled hallucinated, how many the
judge flagged; of those labelled faithful, how many it passed; per reading of "hallucinated". A run whose
judge has exactly that identity carries the measurement and the corrected rates; any other configuration
(another model, other thresholds) has no measurement, and the run says so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from halluscope.metrics.stats.judge_error import Agreement

__all__ = ["MeasuredAgreement", "measured_agreement", "measured_reader"]


@dataclass(frozen=True)
class MeasuredAgreement:
    """A judge's calibration counts for one reading, and on what they were measured."""

    counts: Agreement
    unit: str
    measured_on: str


def _packaged(name: str = "agreement.json") -> list[dict[str, Any]]:
    path = resources.files("halluscope.judges") / "data" / name
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return data if isinstance(data, list) else []


def measured_agreement(identity: Mapping[str, Any], reading: str) -> MeasuredAgreement | None:
    """The packaged measurement of the judge with exactly this identity, for ``reading``; None if unmeasured."""
    for entry in _packaged():
        if entry.get("judge") != dict(identity):
            continue
        counts = (entry.get("readings") or {}).get(reading)
        if not isinstance(counts, dict):
            return None
        return MeasuredAgreement(
            counts=Agreement(**{k: int(counts[k]) for k in ("found", "positives", "passed", "negatives")}),
            unit=str(entry.get("unit", "claim")),
            measured_on=str(entry.get("measured_on", "")),
        )
    return None


def measured_reader(reader: str) -> dict[str, Any] | None:
    """The packaged measurement of the yes/no answer reader ``reader`` (``bench/yesno_reader_agreement.py``
    on its held-out labelled answers): how many answers a person reads as yes or no it read, how many of those
    alike, and how many of the unclear ones it left unanswered; None where that rule was never measured."""
    for entry in _packaged("reader_agreement.json"):
        if entry.get("reader") == reader:
            return dict(entry)
    return None
