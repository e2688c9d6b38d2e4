"""Two-class measures over yes/no predictions, shared by POPE, AMBER's discriminative part and the rest.

Why one module: every yes/no benchmark reports accuracy, precision, recall and F1, and the harnesses users
compare against get two things wrong in different places — a yes-ratio computed from the labels instead of
the predictions, and unanswered items silently folded into one class. Here the yes-ratio is always the share
of *predictions* that are yes, and an unanswered item (``None``) is counted and left out of every rate.
Rates are 0–100 (the papers report percentages); a rate with an empty denominator is ``None``, never 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["BinaryCounts", "binary_counts", "binary_metrics", "f1_score"]


@dataclass(frozen=True)
class BinaryCounts:
    """Confusion counts for one positive class, plus how many items had no answer."""

    tp: int
    fp: int
    tn: int
    fn: int
    unanswered: int
    yes: int

    @property
    def answered(self) -> int:
        return self.tp + self.fp + self.tn + self.fn


def binary_counts(
    predictions: Sequence[str | None], labels: Sequence[str], *, positive: str = "yes"
) -> BinaryCounts:
    """Count predictions (``"yes"`` / ``"no"`` / None) against labels (``"yes"`` / ``"no"``)."""
    if len(predictions) != len(labels):
        raise ValueError(f"{len(predictions)} predictions for {len(labels)} labels")
    tp = fp = tn = fn = unanswered = yes = 0
    for prediction, label in zip(predictions, labels, strict=True):
        if prediction is None:
            unanswered += 1
            continue
        yes += prediction == "yes"
        if prediction == positive:
            if label == positive:
                tp += 1
            else:
                fp += 1
        elif label == positive:
            fn += 1
        else:
            tn += 1
    return BinaryCounts(tp, fp, tn, fn, unanswered, yes)


def f1_score(precision: float | None, recall: float | None) -> float | None:
    """The harmonic mean of precision and recall; 0 when both are 0 (a model that is always wrong scores 0 and
    stays in every F1 comparison); None only when either is undefined (an empty denominator)."""
    if precision is None or recall is None:
        return None
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def _ratio(numerator: float, denominator: float) -> float | None:
    return 100.0 * numerator / denominator if denominator else None


def binary_metrics(
    predictions: Sequence[str | None], labels: Sequence[str], *, positive: str = "yes"
) -> dict[str, float | None]:
    """accuracy, precision, recall, f1 (``positive`` is the positive class), yes_ratio, answered counts."""
    c = binary_counts(predictions, labels, positive=positive)
    precision = _ratio(c.tp, c.tp + c.fp)
    recall = _ratio(c.tp, c.tp + c.fn)
    f1 = f1_score(precision, recall)
    return {
        "accuracy": _ratio(c.tp + c.tn, c.answered),
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "yes_ratio": _ratio(c.yes, c.answered),
        "answered": float(c.answered),
        "unanswered": float(c.unanswered),
    }
