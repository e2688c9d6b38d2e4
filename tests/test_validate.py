"""Known-truth judge validation: the scoring of a judge against planted errors, the calibration curve,
threshold calibration for the similarity judge, Tri-HE perturbations, and the validate-judge command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from halluscope.builders.synthetic import build_synthetic
from halluscope.cache import Cache
from halluscope.calibration.validate import (
    TruthClaim,
    ValidationQuestion,
    ValidationSet,
    calibrate_similarity,
    calibration_curve,
    detection,
    evaluate,
    save_calibration,
    synthetic_validation_set,
    tri_he_validation_set,
    typing,
    validate_judge,
)
from halluscope.scene.graph import SceneGraph
from halluscope.stages import Judge
from halluscope.types import ErrorType, Sample, Verdict, VerdictLabel
from tests.paths import TRI_HE_JSON


@pytest.fixture(scope="module")
def synthetic_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("validate") / "set"
    build_synthetic(out, n=12, seed=2)
    return out


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HALLUSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "200")  # rich tables unwrapped, so the output can be searched


def _key(sample: str, s: str, r: str, o: str) -> tuple[str, str, str, str]:
    return (sample, s, r, o)


def test_detection_and_typing_counts_on_a_hand_made_case() -> None:
    truth = {
        _key("q", "a", "on", "b"): TruthClaim(subject="a", relation="on", object="b"),
        _key("q", "a", "under", "b"): TruthClaim(
            subject="a", relation="under", object="b", error=ErrorType.RELATION
        ),
        _key("q", "c", "on", "b"): TruthClaim(subject="c", relation="on", object="b", error=ErrorType.OBJECT),
        _key("q", "a", "is", "red"): TruthClaim(subject="a", relation="is", object="red"),
        _key("q", "a", "is", "blue"): TruthClaim(
            subject="a", relation="is", object="blue", error=ErrorType.ATTRIBUTE
        ),
        _key("q", "x", "y", "z"): TruthClaim(subject="x", relation="y", object="z"),
    }
    hall = VerdictLabel.HALLUCINATED
    verdicts = {
        _key("q", "a", "on", "b"): Verdict(label=VerdictLabel.SUPPORTED),
        _key("q", "a", "under", "b"): Verdict(label=hall, error=ErrorType.OBJECT),  # caught, mistyped
        _key("q", "c", "on", "b"): Verdict(label=hall, error=ErrorType.OBJECT),  # caught, typed right
        _key("q", "a", "is", "red"): Verdict(label=hall, error=ErrorType.ATTRIBUTE),  # false alarm
        _key("q", "a", "is", "blue"): Verdict(label=VerdictLabel.SUPPORTED),  # missed
        _key("q", "x", "y", "z"): Verdict.unjudged("judge failed"),
    }
    found = detection(truth, verdicts)
    assert (found["tp"], found["fp"], found["fn"], found["tn"], found["unjudged"]) == (2, 1, 1, 1, 1)
    assert found["precision"] == pytest.approx(2 / 3) and found["recall"] == pytest.approx(2 / 3)
    assert found["balanced_accuracy"] == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert found["recall_by_error"] == {"attribute": 0.0, "object": 1.0, "relation": 1.0}
    typed = typing(truth, verdicts)
    assert typed["accuracy"] == pytest.approx(0.5) and typed["coverage"] == 1.0
    assert typed["confusion"] == {"object": {"object": 1}, "relation": {"object": 1}}


def test_curve_compares_injected_and_measured_on_the_same_questions() -> None:
    scene = SceneGraph.from_triplets([("a", "on", "b")], objects=["a", "b"], image_id="i")
    claims_true = [TruthClaim(subject="a", relation="on", object="b")]
    claims_half = [
        *claims_true,
        TruthClaim(subject="a", relation="under", object="b", error=ErrorType.RELATION),
    ]
    vset = ValidationSet(
        benchmark="t",
        data="-",
        rates=[0.0, 0.5],
        samples={"q": Sample(id="q", benchmark="t", prompt="?", image_id="i")},
        scenes={"q": scene},
        questions=[
            ValidationQuestion(sample_id="q", image_id="i", rate=0.0, claims=claims_true),
            ValidationQuestion(sample_id="q", image_id="i", rate=0.5, claims=claims_half),
        ],
    )
    verdicts = {
        _key("q", "a", "on", "b"): Verdict(label=VerdictLabel.SUPPORTED),
        _key("q", "a", "under", "b"): Verdict(label=VerdictLabel.SUPPORTED),  # the judge misses it
    }
    low, high = calibration_curve(vset, verdicts)
    assert (low.injected_hallu_q, low.measured_hallu_q) == (0.0, 0.0)
    assert (high.injected_hallu_q, high.measured_hallu_q) == (50.0, 0.0)


@pytest.fixture(scope="module")
def typed() -> Judge:
    from halluscope.judges import JUDGES

    return JUDGES.create("typed", cache=Cache(None))


def test_synthetic_validation_with_the_typed_judge(synthetic_dir: Path, typed: Judge) -> None:
    from halluscope.benchmarks.synthetic import SyntheticBenchmark

    vset = synthetic_validation_set(SyntheticBenchmark(synthetic_dir), rates=(0.0, 0.2, 0.5), seed=1)
    assert {q.rate for q in vset.questions} == {0.0, 0.2, 0.5}
    report = validate_judge(vset, typed, Cache(None))
    assert report.questions == 48 and report.hallucinated_claims > 30
    assert report.unjudged_claims == 0
    injected = [p.injected_hallu_q for p in report.curve]
    assert injected[0] == 0.0 and injected[0] < injected[1] < injected[2]
    assert report.curve[0].measured_hallu_q == 0.0, "the oracle's answers are all supported"
    assert report.precision == 1.0 and report.specificity == 1.0
    assert report.recall_by_error["object"] >= 0.9
    assert report.typing_accuracy is not None and report.typing_accuracy >= 0.9
    assert report.balanced_accuracy is not None and report.balanced_accuracy >= 0.8


def test_calibration_beats_the_paper_thresholds_and_saves_a_profile(synthetic_dir: Path) -> None:
    from halluscope.benchmarks.synthetic import SyntheticBenchmark
    from halluscope.judges.similarity import SimilarityJudge

    vset = synthetic_validation_set(SyntheticBenchmark(synthetic_dir), rates=(0.0, 0.5), seed=1)
    cache = Cache(None)
    result = calibrate_similarity(vset, cache=cache, filter_grid=(0.5, 0.7, 0.8))
    assert result.paper_balanced_accuracy is not None
    assert result.balanced_accuracy >= result.paper_balanced_accuracy + 0.1
    assert result.heldout_balanced_accuracy is not None and result.heldout_balanced_accuracy > 0.7
    path = save_calibration("test-profile", result)
    saved = json.loads(path.read_text())
    assert saved["filter_threshold"] == result.filter_threshold and saved["model"] == "all-MiniLM-L6-v2"

    judge = SimilarityJudge(profile="test-profile", cache=cache)
    assert (judge.filter_threshold, judge.verdict_threshold) == (
        result.filter_threshold,
        result.verdict_threshold,
    )
    report = evaluate(vset, {}, judge)  # no verdicts: everything unjudged, nothing invented
    assert report.unjudged_claims == report.claims and report.balanced_accuracy is None
    calibrated = validate_judge(vset, judge, cache)
    assert calibrated.balanced_accuracy == pytest.approx(result.balanced_accuracy)


@pytest.mark.full_data
def test_tri_he_perturbations(typed: Judge) -> None:
    from halluscope.benchmarks.tri_he import TriHE

    vset = tri_he_validation_set(TriHE(data=TRI_HE_JSON), rates=(0.0, 0.3, 0.5), seed=0, limit=40)
    truth = vset.distinct_claims()
    planted = [c for c in truth.values() if c.error is not None]
    assert {c.error for c in planted} == {ErrorType.OBJECT, ErrorType.RELATION}
    for claim in planted:
        assert claim.original is not None and list(claim.claim().as_tuple()) != claim.original
    at_zero = [q for q in vset.questions if q.rate == 0.0]
    assert at_zero and all(c.error is None for q in at_zero for c in q.claims)
    report = validate_judge(vset, typed, Cache(None))
    assert report.curve[0].injected_hallu_q == 0.0
    assert report.recall is not None and report.recall > 0.5
    assert report.typing_accuracy is not None and report.typing_accuracy > 0.5


def test_validate_judge_command(synthetic_dir: Path, tmp_path: Path) -> None:
    from halluscope.cli.main import app

    out = tmp_path / "validation.json"
    result = CliRunner().invoke(
        app,
        [
            "validate-judge",
            "--judge",
            "typed",
            "--benchmark",
            "synthetic",
            "--data",
            str(synthetic_dir),
            "--limit",
            "16",
            "--rates",
            "0,0.3",
            "--out",
            str(out),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "calibration curve" in result.output and "balanced" in result.output
    payload = json.loads(out.read_text())
    [report] = payload["reports"]
    assert report["label"] == "typed" and [p["rate"] for p in report["curve"]] == [0.0, 0.3]

    bad = CliRunner().invoke(app, ["validate-judge", "--judge", "typed", "--calibrate", "--profile", "x"])
    assert bad.exit_code != 0 and "similarity" in bad.output
    bad = CliRunner().invoke(app, ["validate-judge", "--judge", "typed", "--benchmark", "hqh"])
    assert bad.exit_code != 0 and "synthetic or tri-he" in bad.output


def test_validate_judge_refuses_a_judge_of_whole_answers_naming_its_benchmark() -> None:
    from typer.testing import CliRunner

    from halluscope.cli.main import app

    result = CliRunner().invoke(app, ["validate-judge", "--judge", "hqh-rules"], terminal_width=200)
    assert result.exit_code == 2
    said = " ".join(result.output.split())
    assert "judge 'hqh-rules' belongs to --benchmark hqh" in said and "judges of claims" in said
