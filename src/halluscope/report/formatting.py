"""How values and metric names read on the page, shared by the summary table and the plots."""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from typing import Any

from halluscope.report.rundir import ReportRun

_PRETTY_METRICS = {
    "contradicted_hallu_q": "Contradicted Hallu-Q",
    "contradicted_hallu_i": "Contradicted Hallu-I",
    "unverifiable_share_q": "Unverifiable share (Q)",
    "unverifiable_share_i": "Unverifiable share (I)",
    "hallu_q": "Hallu-Q",
    "hallu_i": "Hallu-I",
    "object_hallu_q": "Object Hallu-Q",
    "object_hallu_i": "Object Hallu-I",
    "relation_hallu_q": "Relation Hallu-Q",
    "relation_hallu_i": "Relation Hallu-I",
    "attribute_hallu_q": "Attribute Hallu-Q",
    "attribute_hallu_i": "Attribute Hallu-I",
    "hallu_q_with_empty": "Hallu-Q (empty=0)",
    "hallu_i_with_empty": "Hallu-I (empty=0)",
    "hscore": "hScore (helpfulness)",
    "tscore": "tScore (truthfulness)",
    "average": "average of hScore and tScore",
}


def esc(value: Any) -> str:
    """Text from a run, safe in HTML text and in attribute values."""
    return html.escape(str(value), quote=True)


def fmt(value: float | None, scale: float | None = None) -> str:
    """Two decimals for scores in 0–1, one for percentages (as the papers print them).

    ``scale`` is the largest value of the column, so a column of percentages reads 9.2 and 10.8 alike.
    """
    if value is None:
        return "—"
    top = abs(value) if scale is None else scale
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.2f}" if top <= 1 else f"{value:.1f}"


def column_scale(values: Iterable[float | None]) -> float:
    return max((abs(v) for v in values if v is not None), default=0.0)


def tick(value: float) -> str:
    return f"{value:g}"


def metric_keys_of(runs: Sequence[ReportRun]) -> list[str]:
    """Every metric some run reports, in the report's fixed order."""
    seen: list[str] = []
    for run in runs:
        for key in run.metric_values():
            if key not in seen:
                seen.append(key)
    from halluscope.report.headline import view_for
    from halluscope.report.order import order_metrics

    views = [view_for(run.benchmark) for run in runs]
    declared = [key for view in views if view is not None for key in view.keys]
    # The headline views' figures first (eval_pope's order for POPE), then the fixed order, each Hallu-Q before
    # its Hallu-I.
    return order_metrics(seen, declared)


def nice_max(value: float) -> float:
    """A round upper bound for an axis (10, 20, 25, 50, 100, ...)."""
    if value <= 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * magnitude:
            return float(step * magnitude)
    return float(10 * magnitude)


def pretty(key: str) -> str:
    """A metric key as a column or axis title: the papers' names where they exist, else plain words."""
    if key in _PRETTY_METRICS:
        return _PRETTY_METRICS[key]
    for prefix, word in (("injected_", "Injected"), ("judge_", "Judge")):
        if key.startswith(prefix):
            return f"{word} {pretty(key.removeprefix(prefix))}"
    return key.replace("_", " ")

