"""What a run says about its judge's own error, beside the headlines a judge decides.

A rate read by a judge inherits the judge's mistakes; the headline intervals cover only the sampling of
questions. For each declared headline that counts a judge's calls (``MetricDeclaration.judged``), the run
records the judge's measured sensitivity and specificity (``judges.agreement``, measured on labelled real
answers) and the rate corrected for them, with an interval that carries both errors
(``metrics.declared.corrected_for_judge``); where the judge in the slot has no measurement, it says so in
words, so that a number from an unmeasured judge never looks as certain as one from a measured one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from halluscope.stages import MetricDeclaration, MetricTable

__all__ = ["NOT_MEASURED", "READER_NOT_MEASURED", "judge_error_section", "reader_section"]

NOT_MEASURED = (
    "judge error not measured: the intervals cover the sampling of questions, not the judge's own mistakes"
)

READER_NOT_MEASURED = "not measured on labelled answers: its misreadings are not in the intervals"


def reader_section(reader: str) -> dict[str, Any]:
    """``metrics.json``'s ``judge_error.reader``: how the rule that read the yes/no answers was measured to read
    real answers (held-out, labelled by a person), or that it never was. Not folded into the intervals: the
    measured reader misreads too rarely to move them, and an unmeasured one is said to be unmeasured."""
    from halluscope.judges.agreement import measured_reader

    measured = measured_reader(reader)
    if measured is None:
        return {"name": reader, "measured": None, "note": READER_NOT_MEASURED}
    counts = ("items", "decided", "answered", "agreed", "exact_count", "unclear", "unclear_unanswered")
    return {"name": reader, "on": measured.get("measured_on", ""), "measured": {k: int(measured[k]) for k in counts}}


def _judge_name(identity: Mapping[str, Any]) -> str:
    name = str(identity.get("judge") or identity.get("name") or "?")
    model = identity.get("model")
    return f"{name} ({model})" if model else name


def judge_error_section(
    judge: Any, declarations: Sequence[MetricDeclaration], tables: Mapping[str, MetricTable], level: float
) -> dict[str, Any]:
    """``metrics.json``'s ``judge_error``: empty when no headline is judged or no judge is in the slot."""
    from halluscope.judges.agreement import measured_agreement
    from halluscope.metrics.declared import corrected_for_judge, declared_value

    judged = [d for d in declarations if d.judged]
    if not judged or judge is None:
        return {}
    identity = dict(judge.identity())
    measured_by_reading: dict[str, Any] = {}
    corrected_by_metric: dict[str, Any] = {}
    for declaration in judged:
        assert declaration.judged is not None
        if declared_value(declaration, tables) is None:
            continue  # a rate this run does not define (a two-way judge's three-way rate): nothing to correct
        reading = declaration.judged
        measured = measured_agreement(identity, reading)
        if measured is None:
            continue
        counts = measured.counts
        measured_by_reading[reading] = {
            "on": measured.measured_on, "unit": measured.unit,
            "sensitivity": counts.sensitivity, "flagged": counts.found, "hallucinated": counts.positives,
            "specificity": counts.specificity, "passed": counts.passed, "faithful": counts.negatives,
        }  # fmt: skip
        corrected = corrected_for_judge(declaration, tables, counts, level=level)
        corrected_by_metric[declaration.name] = (
            None
            if corrected is None
            else {"reading": reading, "estimate": corrected[0], **corrected[1].to_json(digits=6)}
        )
    if not measured_by_reading:
        return {"judge": _judge_name(identity), "measured": None, "note": NOT_MEASURED}
    return {"judge": _judge_name(identity), "measured": measured_by_reading, "corrected": corrected_by_metric}
