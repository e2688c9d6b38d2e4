import pytest

from halluscope.metrics.triplets import triplet_metrics
from halluscope.types import ErrorType, JudgedClaim, SampleRecord, VerdictLabel

S, H, U = VerdictLabel.SUPPORTED, VerdictLabel.HALLUCINATED, VerdictLabel.UNJUDGED


def record(sample_id, image_id, verdicts, failure=None):
    claims = [JudgedClaim(subject="a", relation="b", object="c", verdict=v, error=e) for v, e in verdicts]
    return SampleRecord(
        id=sample_id, prompt="q", response="r", image_id=image_id, claims=claims, failure=failure
    )


def test_hallu_q_and_hallu_i_follow_the_reference_rules():
    records = [
        record("1-0", "1", [(S, None), (H, ErrorType.OBJECT)]),  # h = 0.5, object 0.5
        record("1-1", "1", [(H, ErrorType.RELATION)]),  # h = 1.0, relation 1.0
        record("1-2", "1", []),  # zero claims: skipped
        record("2-0", "2", [(S, None), (S, None), (U, None), (H, ErrorType.RELATION)]),  # h = 1/3
        record("3-0", "3", [], failure="missing response"),
    ]
    report = triplet_metrics(records)
    m = report.metrics
    assert m["hallu_q"] == pytest.approx(100 * (0.5 + 1.0 + 1 / 3) / 3)
    assert m["hallu_i"] == pytest.approx(100 * ((0.5 + 1.0) / 2 + 1 / 3) / 2)
    assert m["object_hallu_q"] == pytest.approx(100 * 0.5 / 3)
    assert m["relation_hallu_q"] == pytest.approx(100 * (1.0 + 1 / 3) / 3)
    assert m["relation_hallu_i"] == pytest.approx(100 * ((0 + 1.0) / 2 + 1 / 3) / 2)
    assert m["hallu_q_with_empty"] == pytest.approx(100 * (0.5 + 1.0 + 0 + 1 / 3) / 4)
    c = report.counts
    assert c["zero_claim_questions"] == 1
    assert c["unjudged_claims"] == 1
    assert c["failed_samples"] == 1
    assert c["scored_questions"] == 3


def test_typed_rates_are_none_when_the_judge_does_not_type_errors():
    report = triplet_metrics([record("1-0", "1", [(H, None), (S, None)])])
    assert report.metrics["hallu_q"] == pytest.approx(50.0)
    assert report.metrics["object_hallu_q"] is None
    assert report.counts["untyped_hallucinated_claims"] == 1


def test_all_unjudged_question_is_not_counted_as_zero():
    report = triplet_metrics([record("1-0", "1", [(U, None)]), record("1-1", "1", [(H, ErrorType.OBJECT)])])
    assert report.metrics["hallu_q"] == pytest.approx(100.0)
    assert report.counts["all_unjudged_questions"] == 1
