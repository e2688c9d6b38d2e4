"""Small measures a user compares across models: F1 of an always-wrong model, the yes/no response bias of a
model that skips items, PROVE's scored count."""

from __future__ import annotations

import pytest

from halluscope.metrics.binary import binary_metrics, f1_score
from halluscope.metrics.prove import prove_metrics
from halluscope.quality.measures import yes_no_stats
from halluscope.types import SampleRecord


def test_an_always_wrong_model_scores_f1_zero_not_none() -> None:
    # Says yes exactly where the label is no, and no where it is yes: precision 0, recall 0.
    metrics = binary_metrics(["yes", "no", "yes", "no"], ["no", "yes", "no", "yes"])
    assert metrics["precision"] == 0.0 and metrics["recall"] == 0.0
    assert metrics["f1"] == 0.0
    # An undefined precision (never says yes) still leaves F1 undefined, as before.
    assert binary_metrics(["no", "no"], ["yes", "no"])["f1"] is None
    assert f1_score(50.0, 100.0) == pytest.approx(200 / 3)


def _record(i: int, prediction: str | None, label: str) -> SampleRecord:
    return SampleRecord(id=str(i), prompt="?", response="x", prediction=prediction, label=label)


def test_response_bias_divides_predictions_and_labels_over_the_same_answered_items() -> None:
    # The model answers "yes" to both yes items it answers and skips every "no" item: its answers agree with
    # the labels of what it answered, so it is not yes-biased on them.
    records = [_record(0, "yes", "yes"), _record(1, "yes", "yes"), _record(2, None, "no"), _record(3, None, "no")]
    stats = yes_no_stats(records)
    assert stats is not None
    assert stats.answered == 2 and stats.yes_ratio == 1.0
    assert stats.label_yes_ratio == 1.0  # over the answered items (was 0.5 over all four)
    assert stats.bias == 0.0


def test_prove_scored_counts_answers_with_any_score() -> None:
    def record(i: int, h: float | None, t: float | None) -> SampleRecord:
        return SampleRecord(id=str(i), prompt="What is it?", response="x", metadata={"hscore": h, "tscore": t})

    report = prove_metrics([record(0, 0.5, 0.5), record(1, 0.0, None), record(2, None, 0.9), record(3, None, None)])
    assert report.counts["scored"] == 3  # any score
    assert report.counts["scored_both"] == 1  # what `average` is over
    assert report.counts["hscore_undefined"] == 2 and report.counts["tscore_undefined"] == 2
