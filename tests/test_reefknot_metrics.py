"""Reefknot measures and the confidence analysis, on hand-built records with known answers."""

from __future__ import annotations

import math
from typing import Any

import pytest

from halluscope.metrics.confidence import (
    answer_probabilities,
    confidence_report,
    detector_scores,
    entropy_bins,
    entropy_bits,
)
from halluscope.metrics.reefknot import reefknot_metrics
from halluscope.types import SampleRecord


def record(
    sample_id: str,
    task: str,
    relation_type: str,
    label: str,
    prediction: str | None,
    correct: bool | None,
    paper_correct: bool | None = None,
    **extra: Any,
) -> SampleRecord:
    return SampleRecord(
        id=sample_id,
        prompt="q",
        response="r",
        task=task,
        relation_type=relation_type,
        label=label,
        prediction=prediction,
        correct=correct,
        robust_correct=correct,
        paper_correct=correct if paper_correct is None else paper_correct,
        **extra,
    )


def yes_sayer_records() -> list[SampleRecord]:
    """Four yes/no twin pairs answered "yes" every time, plus one refusal on a fifth pair."""
    records = []
    for pair in range(4):
        kind = "perception" if pair < 2 else "cognitive"
        records.append(record(f"yesno-{2 * pair}", "yesno", kind, "yes", "yes", True, pair=pair))
        records.append(record(f"yesno-{2 * pair + 1}", "yesno", kind, "no", "yes", False, pair=pair))
    records.append(record("yesno-8", "yesno", "cognitive", "yes", "yes", True, pair=4))
    records.append(record("yesno-9", "yesno", "cognitive", "no", None, None, paper_correct=True, pair=4))
    return records


def test_yes_ratio_comes_from_predictions_and_pairs_need_both_twins() -> None:
    report = reefknot_metrics(yes_sayer_records())
    # Labels are half yes, but the model said yes to every answered question.
    assert report.metrics["yes_ratio"] == pytest.approx(100.0)
    assert report.metrics["yesno_precision"] == pytest.approx(100 * 5 / 9)
    assert report.metrics["yesno_recall"] == pytest.approx(100.0)
    p, r = 100 * 5 / 9, 100.0
    assert report.metrics["yesno_f1"] == pytest.approx(2 * p * r / (p + r))
    assert report.metrics["yesno_pair_accuracy"] == pytest.approx(0.0)
    assert report.counts["yesno_pairs"] == 5 and report.counts["yesno_pairs_scored"] == 4
    # The refusal is counted but is neither right nor wrong: Halr over 9 answered items.
    assert report.counts["unanswered"] == 1 and report.counts["unanswered_yesno"] == 1
    assert report.metrics["halr_yesno"] == pytest.approx(100 - 100 * 5 / 9)
    assert report.groups["yesno/perception"]["halr"] == pytest.approx(50.0)
    assert report.groups["yesno/cognitive"]["halr"] == pytest.approx(100 - 100 * 3 / 5)
    # Paper mode read the refusal as a (right) "no": the two modes disagree on exactly that item.
    assert report.counts["mode_disagreements"] == 1


def test_halr_per_task_and_type_and_r_score() -> None:
    records = [
        record("mcq-0", "mcq", "perception", "A", "A", True),
        record("mcq-1", "mcq", "perception", "B", "D", False),
        record("mcq-2", "mcq", "cognitive", "C", "D", False),
        record("mcq-3", "mcq", "cognitive", "D", "D", True),
        record("vqa-0", "vqa", "perception", "bag is on ground.", "bag is on ground.", True),
        record("vqa-1", "vqa", "cognitive", "man is holding cup.", "man is near cup.", False),
        record("vqa-2", "vqa", "cognitive", "dog is chasing cat.", "dog is chasing cat.", True),
        record("yesno-0", "yesno", "perception", "yes", "yes", True, pair=0),
        record("yesno-1", "yesno", "perception", "no", "no", True, pair=0),
    ]
    report = reefknot_metrics(records)
    assert report.groups["mcq/perception"]["halr"] == pytest.approx(50.0)
    assert report.groups["mcq/cognitive"]["halr"] == pytest.approx(50.0)
    assert report.groups["vqa/cognitive"]["halr"] == pytest.approx(50.0)
    assert report.groups["vqa/perception"]["halr"] == pytest.approx(0.0)
    assert report.metrics["halr_vqa"] == pytest.approx(100 / 3)
    # R = mean over tasks of (100 - Halr) = (50 + 66.67 + 100) / 3
    assert report.metrics["r_score"] == pytest.approx((50 + 200 / 3 + 100) / 3)
    assert report.metrics["yesno_pair_accuracy"] == pytest.approx(100.0)
    assert report.details["mcq_letters"]["chosen"] == {"A": 1, "B": 0, "C": 0, "D": 3, "other": 0}
    assert report.details["mcq_letters"]["labels"] == {"A": 1, "B": 1, "C": 1, "D": 1}
    assert report.metrics["mcq_most_chosen_share"] == pytest.approx(75.0)


def test_missing_and_failed_items_are_counted_apart_and_left_out() -> None:
    records = [
        record("mcq-0", "mcq", "perception", "A", "A", True),
        SampleRecord(
            id="mcq-1",
            prompt="q",
            response=None,
            failure="no response for this sample",
            task="mcq",
            relation_type="perception",
            label="B",
            correct=None,
        ),
        SampleRecord(
            id="vqa-0",
            prompt="q",
            response="x",
            failure="VQA entailment judge unavailable",
            task="vqa",
            relation_type="perception",
            label="y",
            correct=None,
        ),
    ]
    report = reefknot_metrics(records)
    assert report.counts["missing_response"] == 1 and report.counts["failed"] == 1
    assert report.metrics["halr_mcq"] == pytest.approx(0.0)
    assert "halr_vqa" not in report.metrics  # no VQA item was scored at all
    assert report.metrics["r_score"] == pytest.approx(100.0)


def test_entropy_follows_the_official_convention() -> None:
    assert entropy_bits([0.5, 0.5]) == pytest.approx(1.0)
    assert entropy_bits([1.0, 0.0]) == pytest.approx(0.0)
    # Probabilities from the full vocabulary are used as given (not renormalised), as the official code does.
    assert entropy_bits([0.4, 0.4]) == pytest.approx(-2 * 0.4 * math.log2(0.4))
    assert entropy_bits([0.4, 0.4], normalise=True) == pytest.approx(1.0)
    assert entropy_bits([0.25] * 4) == pytest.approx(2.0)


def test_answer_probabilities_from_the_shapes_responses_carry() -> None:
    assert answer_probabilities({"yes_prob": 0.8, "no_prob": 0.1}, "yesno") == {"yes": 0.8, "no": 0.1}
    assert answer_probabilities({"option_probs": {"Yes": 0.6, "No": 0.4}}, "yesno") == {"yes": 0.6, "no": 0.4}
    letters = {"a": 0.1, "B": 0.2, "c": 0.3, "D": 0.4}
    assert answer_probabilities({"option_probs": letters}, "mcq") == {"A": 0.1, "B": 0.2, "C": 0.3, "D": 0.4}
    assert answer_probabilities({"yes_prob": 0.8}, "yesno") is None  # incomplete
    assert answer_probabilities({"yes_prob": 1.7, "no_prob": 0.1}, "yesno") is None  # not a probability
    assert answer_probabilities({"yes_prob": 0.5, "no_prob": 0.5}, "vqa") is None


def test_entropy_bins_and_the_threshold_detector() -> None:
    items = [
        (0.05, False),
        (0.1, False),
        (0.2, False),
        (0.3, True),
        (0.95, True),
        (0.97, True),
        (0.99, False),
    ]
    bins = entropy_bins(items, bins=2, max_entropy=1.0)
    assert [b["n"] for b in bins] == [4, 3]
    assert bins[0]["hallucination_rate"] == pytest.approx(25.0)
    assert bins[1]["hallucination_rate"] == pytest.approx(200 / 3)
    scores = detector_scores(items, threshold=0.9)
    at = scores["at_threshold"]
    assert at["flagged"] == 3
    assert at["precision"] == pytest.approx(200 / 3)
    assert at["recall"] == pytest.approx(200 / 3)
    # Flagging from 0.3 up catches all three hallucinations with one false alarm: the best F1 (85.7).
    assert scores["best"]["threshold"] == pytest.approx(0.3)
    assert scores["best"]["f1"] == pytest.approx(2 * 75 * 100 / 175)
    # 3 hallucinated vs 4 correct answers: 9 of 12 pairs ranked right.
    assert scores["auroc"] == pytest.approx(9 / 12)


def test_confidence_report_in_the_metrics_when_records_carry_probabilities() -> None:
    records = [
        record(
            "yesno-0",
            "yesno",
            "perception",
            "yes",
            "yes",
            True,
            pair=0,
            answer_probs={"yes": 0.97, "no": 0.02},
        ),
        record(
            "yesno-1",
            "yesno",
            "perception",
            "no",
            "yes",
            False,
            pair=0,
            answer_probs={"yes": 0.55, "no": 0.45},
        ),
        record(
            "yesno-2", "yesno", "cognitive", "yes", "no", False, pair=1, answer_probs={"yes": 0.4, "no": 0.6}
        ),
        record(
            "yesno-3", "yesno", "cognitive", "no", "no", True, pair=1, answer_probs={"yes": 0.05, "no": 0.9}
        ),
    ]
    report = reefknot_metrics(records, entropy_threshold=0.9)
    assert report.counts["with_answer_probs"] == 4
    task = report.details["confidence"]["tasks"]["yesno"]
    assert task["mean_answer_prob_hallucinated"] == pytest.approx((0.55 + 0.6) / 2)
    assert task["mean_answer_prob_correct"] == pytest.approx((0.97 + 0.9) / 2)
    assert report.metrics["entropy_detector_precision_yesno"] == pytest.approx(100.0)
    assert report.metrics["entropy_detector_recall_yesno"] == pytest.approx(100.0)
    assert report.metrics["entropy_detector_auroc_yesno"] == pytest.approx(1.0)


def test_confidence_threshold_scales_for_four_options() -> None:
    report = confidence_report([("mcq", {"A": 0.25, "B": 0.25, "C": 0.25, "D": 0.25}, True)], threshold=0.9)
    assert report["tasks"]["mcq"]["threshold"] == pytest.approx(1.8)
    assert report["tasks"]["mcq"]["detector"]["at_threshold"]["flagged"] == 1
