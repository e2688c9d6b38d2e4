"""The hand-labelled real-answer set, the three-way reading of the typed judge, and ``validate-judge --set real``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from halluscope.cache import Cache
from halluscope.calibration.real import MEASURED_ON_REAL, answer_rate, load_real_set, run_real, self_agreement
from halluscope.claims.rules import RulesExtractor, strip_meta
from halluscope.judges.typed import TypedJudge
from halluscope.metrics.triplets import triplet_metrics
from halluscope.scene.graph import SceneGraph
from halluscope.stages import JudgeItem
from halluscope.types import Claim, ErrorType, JudgedClaim, SampleRecord, Support, VerdictLabel
from tests.paths import SHARED

TRI_HE = SHARED / "data" / "tri-he" / "tri-he.json"


@pytest.fixture(scope="module")
def scenes() -> dict[str, SceneGraph]:
    from halluscope.benchmarks.tri_he import TriHE

    return TriHE(data=TRI_HE).scenes


@pytest.fixture(scope="module")
def judge() -> TypedJudge:
    return TypedJudge(model="off")


@pytest.mark.full_data
def test_the_packaged_set_is_what_the_docs_say() -> None:
    answers = load_real_set()
    assert 40 <= len(answers) <= 80
    assert len({a.image_id for a in answers}) >= 20
    assert {a.source for a in answers} == {"reference", "mismatched", "edited", "own"}
    assert {a.split for a in answers} == {"dev", "heldout"}
    assert not {a.image_id for a in answers if a.split == "dev"} & {
        a.image_id for a in answers if a.split == "heldout"
    }, "the held-out part is split by image"
    images = json.loads(TRI_HE.read_text(encoding="utf-8"))
    for answer in answers:
        assert answer.image_id in images, answer.id
        assert images[answer.image_id]["instance"][answer.question_index]["question"] == answer.question
        assert answer.claims and all(c.label2 is not None for c in answer.claims)
    agreement = self_agreement(answers)
    assert agreement["answers_relabelled"] == len(answers)
    assert agreement["score_pearson"] is not None and agreement["score_pearson"] > 0.8


def test_a_malformed_set_names_the_entry(tmp_path: Path) -> None:
    bad = tmp_path / "set.json"
    bad.write_text(json.dumps([{"id": "x1", "image_id": "1", "score": 9}]), encoding="utf-8")
    with pytest.raises(ValueError, match=r"entry 0 \('x1'\)"):
        load_real_set(bad)


def test_meta_statements_doubts_and_questions_are_stripped() -> None:
    assert strip_meta(
        "The image shows a woman eating. It is difficult to determine the exact time of day, but the "
        "daylight suggests morning. The woman in the image wears sunglasses. Is it cold? "
        "It is not clear from the image whether there is a dishwasher."
    ) == "There is a woman eating. The daylight suggests morning. The woman wears sunglasses."
    assert strip_meta("It is hard to tell.") == ""
    claims = RulesExtractor().extract_many_sync(
        ["It is difficult to determine whether the skillet is hot. The person in the image holds a pan."]
    )[0]
    assert isinstance(claims, list)
    assert all("image" not in c.as_tuple() and c.object != "difficult" for c in claims)
    assert Claim(subject="person", relation="holds", object="pan") in claims


def _verdict(judge: TypedJudge, scene: SceneGraph, *parts: str) -> Any:
    result = judge.judge_many_sync([JudgeItem("q", [Claim.of(parts)], scene)])[0]
    assert isinstance(result, list)
    return result[0]


@pytest.mark.full_data
def test_three_way_support_separates_contradiction_from_silence(
    judge: TypedJudge, scenes: dict[str, SceneGraph]
) -> None:
    bus = scenes["2389148"]  # a red double-decker bus; GQA records its colour
    green = _verdict(judge, bus, "bus", "is", "green")
    assert (green.label, green.support) == (VerdictLabel.HALLUCINATED, Support.CONTRADICTED)
    bench = scenes["2410392"]  # a man on a park bench with a dog; no cup anywhere
    cup = _verdict(judge, bench, "man", "holding", "cup")
    assert (cup.label, cup.error, cup.support) == (VerdictLabel.HALLUCINATED, ErrorType.OBJECT, Support.CONTRADICTED)
    park = _verdict(judge, bench, "man", "sitting in", "park")  # a place: not listed, but not absent either
    assert (park.label, park.support) == (VerdictLabel.HALLUCINATED, Support.UNVERIFIABLE)
    for noun in ("meal", "ingredients", "time", "day", "weather"):
        verdict = _verdict(judge, bench, noun, "is", "good")
        assert verdict.error != ErrorType.OBJECT, noun  # never an absent object
    assert _verdict(judge, bench, "man", "in", "image").support == Support.SUPPORTED  # only says he is there
    supported = _verdict(judge, bench, "man", "sitting on", "bench")
    assert supported.support == Support.SUPPORTED


def test_metrics_lead_with_the_contradicted_rate() -> None:
    def claim(support: Support) -> JudgedClaim:
        label = VerdictLabel.SUPPORTED if support == Support.SUPPORTED else VerdictLabel.HALLUCINATED
        return JudgedClaim(subject="a", relation="b", object="c", verdict=label, support=support)

    record = SampleRecord(
        id="q", prompt="?", response="...", image_id="i",
        claims=[claim(Support.SUPPORTED), claim(Support.CONTRADICTED), claim(Support.UNVERIFIABLE),
                claim(Support.UNVERIFIABLE)],
    )  # fmt: skip
    report = triplet_metrics([record])
    assert list(report.metrics)[:2] == ["contradicted_hallu_q", "contradicted_hallu_i"]
    assert report.metrics["contradicted_hallu_q"] == 25.0
    assert report.metrics["unverifiable_share_q"] == 50.0
    assert report.metrics["hallu_q"] == 75.0  # Tri-HE's reading, unchanged
    old = record.model_copy(update={"claims": [c.model_copy(update={"support": None}) for c in record.claims]})
    assert triplet_metrics([old]).metrics["contradicted_hallu_q"] is None  # older logs, other judges
    assert answer_rate(record) == 25.0 and answer_rate(record, "paper") == 75.0


@pytest.mark.full_data
def test_the_default_offline_configuration_tracks_the_labels(
    judge: TypedJudge, scenes: dict[str, SceneGraph], tmp_path: Path
) -> None:
    """rules + typed on the real answers: the default rate orders answers like the labels, its mean is near
    the labelled mean, and Tri-HE's reading of the same verdicts roughly triples it."""
    answers = load_real_set()
    cache = Cache(tmp_path / "cache.sqlite")
    default, records = run_real(
        answers, scenes.get, judge=judge, cache=cache, extractor=RulesExtractor(), claims_from="answer",
        rate="default", label="rules + typed",
    )  # fmt: skip
    paper, _ = run_real(
        answers, scenes.get, judge=judge, cache=cache, extractor=RulesExtractor(), claims_from="answer",
        rate="paper", label="rules + typed",
    )  # fmt: skip
    print(f"\nreal set: default r={default.all.pearson:.2f} mean {default.all.mean_rate:.1f}; "
          f"paper r={paper.all.pearson:.2f} mean {paper.all.mean_rate:.1f}; "
          f"labelled {default.all.labelled_mean_rate:.1f}")  # fmt: skip
    assert all(r.failure is None for r in records)
    assert default.all.pearson is not None and paper.all.pearson is not None
    assert default.all.pearson > 0.4 and default.all.pearson > paper.all.pearson + 0.1
    assert abs(default.all.mean_rate - default.all.labelled_mean_rate) < 10
    # What the demo and docs/calibration.md print is what this measures (lexical-only typed judge here).
    documented = MEASURED_ON_REAL["default"]
    assert abs(default.all.pearson - documented["pearson"]) < 0.03
    assert abs(default.all.mean_rate - documented["mean_rate"]) < 1.5
    assert paper.all.mean_rate > 2 * default.all.mean_rate
    hand, _ = run_real(
        answers, scenes.get, judge=judge, cache=cache, extractor=None, claims_from="hand", rate="default",
        label="hand",
    )  # fmt: skip
    assert hand.all.precision is not None and hand.all.precision > 0.5
    assert hand.all.recall is not None and hand.all.recall > 0.5


@pytest.mark.full_data
def test_validate_judge_set_real_prints_and_writes(tmp_path: Path) -> None:
    from halluscope.cli.main import app

    out = tmp_path / "real.json"
    result = CliRunner().invoke(
        app,
        [
            "validate-judge", "--set", "real", "--data", str(TRI_HE), "--judge", "typed",
            "--judge-opt", "model=off", "--limit", "12", "--quiet", "--cache", str(tmp_path / "c.sqlite"),
            "--out", str(out),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "hand-labelled real answers" in " ".join(result.output.split())
    payload = json.loads(out.read_text(encoding="utf-8"))
    assert payload["answers"] == 12
    labels = [r["label"] for r in payload["reports"]]
    assert any("hand claims" in label and "default rate" in label for label in labels)
    assert any("graph completed" in label for label in labels)
    missing = CliRunner().invoke(
        app, ["validate-judge", "--set", str(tmp_path / "nope.json"), "--judge", "typed", "--data", str(TRI_HE)]
    )
    assert missing.exit_code != 0 and "nope.json" in missing.output
