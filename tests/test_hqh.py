"""HQH: the loader on the real files, the offline judge, the metrics, and `halluscope run -b hqh` end to end."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from halluscope.benchmarks import BENCHMARKS
from halluscope.benchmarks.hqh import (
    HQH,
    HQHDataError,
    ground_truth_responses,
    load_hqh_answers,
    parse_image_information,
)
from halluscope.cache import Cache
from halluscope.cli.main import app
from halluscope.judges.hqh import HQHItem
from halluscope.judges.hqh_rules import HQHRulesJudge, judge_answer, parse_numbers
from halluscope.metrics.hqh import hqh_metrics
from halluscope.responses import ResponsesError
from halluscope.runs.selection import first_samples
from halluscope.scene.graph import SceneGraph
from halluscope.stages import ScoringContext
from halluscope.types import Response, SampleRecord
from tests.paths import HQH_DIR


@pytest.fixture(scope="module")
def bench() -> HQH:
    return HQH(HQH_DIR)


@pytest.mark.full_data
def test_loader_reads_real_files_and_reports_items_without_image_information(bench: HQH) -> None:
    samples = list(bench.samples())
    assert len(samples) == 4000
    assert samples[0].id == "1" and samples[0].metadata["type"] == "OCR"
    assert samples[0].reference == "E. Howe St."
    missing = [s for s in samples if s.metadata.get("problem")]
    # image_data.partial.json covers 751 of HQH's images: 1,381 items have image information.
    assert len(samples) - len(missing) == 1381
    assert "has no entry in image_data.partial.json" in missing[0].metadata["problem"]
    assert f"HQH item {missing[0].id}" in missing[0].metadata["problem"]
    assert bench.spec()["items_without_image_information"] == len(missing)


@pytest.mark.full_data
def test_scene_keeps_caption_regions_and_boxes_as_released(bench: HQH) -> None:
    sample = next(s for s in bench.samples() if not s.metadata.get("problem"))
    scene = bench.scene(sample)
    assert scene is not None and scene.caption and len(scene.regions) > 5
    box = scene.regions[0].box
    assert box is not None and box[2] == box[3]  # the released file repeats the width as the height


def test_region_parser_handles_line_breaks_inside_a_description() -> None:
    text = "older man X:196 Y:223 Width:149 Height:149\nUnopened wine bottles\n X:184 Y:16 Width:43 Height:43\n"
    assert parse_image_information(text) == [
        ("older man", (196, 223, 149, 149)),
        ("Unopened wine bottles", (184, 16, 43, 43)),
    ]


@pytest.mark.full_data
def test_selection_by_type_and_limit() -> None:
    bench = first_samples(BENCHMARKS.create("hqh", data=HQH_DIR, types="counting,ocr"), 5)
    samples = list(bench.samples())
    assert len(samples) == 5 and {s.metadata["type"] for s in samples} <= {"count", "OCR"}
    with pytest.raises(ValueError, match="unknown type 'colour'"):
        BENCHMARKS.create("hqh", data=HQH_DIR, types="colour")


@pytest.mark.full_data
def test_malformed_files_name_the_problem(tmp_path: Path) -> None:
    (tmp_path / "HQH.json").write_text("{not json")
    with pytest.raises(HQHDataError, match=r"HQH\.json is not valid JSON"):
        list(HQH(tmp_path).samples())
    (tmp_path / "HQH.json").write_text(
        json.dumps([{"id": 7, "image_id": 1, "instruction": "How many?", "type": "count"}, "junk"])
    )
    regions = {"1": {"caption": "x", "image_information": "a X:1 Y:2 Width:3 Height:3"}}
    (tmp_path / "image_data.json").write_text(json.dumps(regions))
    bench = HQH(tmp_path)
    (sample,) = list(bench.samples())
    assert "HQH item 7: missing or invalid field(s) ground_truth" in sample.metadata["problem"]
    assert "item 1: not an object with a usable 'id'" in bench.unusable_items()[0]


@pytest.mark.full_data
def test_official_answer_layout_is_read(tmp_path: Path) -> None:
    items = json.loads((HQH_DIR / "HQH.json").read_text())[:3]
    items[0]["answer"] = "Stop."
    items[1]["answer"] = "Hot dogs."
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(items))
    loaded = HQH(HQH_DIR).read_responses(path, benchmark_ids={"1", "2", "3"})
    assert {k: v.response for k, v in loaded.responses.items()} == {"1": "Stop.", "2": "Hot dogs."}
    assert loaded.problems == ["answers.json item 2 (id 3): no answer in 'answer'"]
    with pytest.raises(ResponsesError, match=r"unanswered HQH\.json"):
        load_hqh_answers(HQH_DIR / "HQH.json")


def _item(kind: str, ground_truth: str, answer: str, instruction: str = "?") -> HQHItem:
    scene = SceneGraph("1")
    scene.caption = "Two dogs play with a red frisbee on the grass."
    for text in ("a brown dog running", "a white dog", "red frisbee in the air", "green grass", "a wooden fence"):
        scene.add_region(text, (0, 0, 10, 10))
    return HQHItem("1", kind, instruction, ground_truth, answer, scene)


@pytest.mark.parametrize(
    ("kind", "truth", "answer", "expected"),
    [
        ("count", "Two.", "There are 2 dogs.", False),
        ("count", "Two.", "Three dogs are playing.", True),
        ("count", "One.", "There is a dog on the grass.", False),
        ("count", "Two.", "Two dogs and three frisbees.", None),
        ("OCR", "STOP.", "The sign says stop", False),
        ("OCR", "STOP.", 'The sign reads "Go slow".', True),
        ("attribute", "Red.", "The frisbee is red.", False),
        ("attribute", "Red.", "It is blue.", True),
        ("attribute", "Wooden.", "The fence is made of metal.", True),
        ("attribute", "Red.", "I cannot tell.", None),
        ("existence", "two dogs, a frisbee", "dogs, a frisbee, grass", False),
        ("existence", "two dogs, a frisbee", "a cat, a frisbee", True),
        ("existence", "yes", "No, there is none.", True),
        ("environment", "A park.", "A restaurant.", True),
        ("action", "Playing.", "The dogs are playing with a frisbee.", False),
        # negation: the reference's words said only to be denied
        ("attribute", "Red.", "It is not red.", True),
        ("attribute", "Red.", "It is not blue, it is red.", False),
        ("action", "Walking a dog.", "The man is not walking a dog.", True),
        ("action", "Walking a dog.", "No, the man is walking a dog.", False),
        ("count", "Two.", "There are not two dogs.", True),
        ("OCR", "STOP.", "The sign does not say stop.", True),
        # prepositions are not stop words, and opposite ones contradict
        ("relation", "On a pole.", "The sign is under the pole.", True),
        ("relation", "On a pole.", "The sign is mounted on a pole.", False),
        ("relation", "To the left of the car.", "It is to the right of the car.", True),
        # comparison words
        ("comparison", "The left dog is bigger.", "The left dog is smaller.", True),
        ("comparison", "They are the same size.", "They are different sizes.", True),
        ("comparison", "The left dog is bigger.", "The left dog is bigger than the right one.", False),
        # an empty answer is incorrect, as HQH's official grader scores it
        ("action", "Playing.", "   ", True),
    ],
)
def test_offline_rules(kind: str, truth: str, answer: str, expected: bool | None) -> None:
    instruction = "Is there a dog?" if truth == "yes" else "?"
    assert judge_answer(_item(kind, truth, answer, instruction)).hallucinated is expected


def test_numbers() -> None:
    assert parse_numbers("Two.") == {2}
    assert parse_numbers("There are no people.") == {0}
    assert parse_numbers("12 birds") == {12}


@pytest.mark.full_data
def test_offline_judge_separates_reference_from_wrong_answers(bench: HQH) -> None:
    """On the real data, reference answers are rarely incorrect and wrong ones rarely correct."""
    ids = [s.id for s in bench.samples() if not s.metadata.get("problem")][:240]
    samples = {s.id: s for s in bench.samples()}
    judge = HQHRulesJudge()
    for mismatched, lo, hi in ((False, 0.0, 0.1), (True, 0.85, 1.0)):
        responses = {r.id: r for r in ground_truth_responses(bench, mismatched=mismatched) if r.id in ids}
        items = [
            HQHItem(i, samples[i].metadata["type"], samples[i].prompt, samples[i].reference or "",
                    responses[i].response, bench.scene(samples[i]))  # type: ignore[arg-type]
            for i in ids if i in responses
        ]  # fmt: skip
        results = asyncio.run(judge.grade_many(items))
        decided = [r.hallucinated for r in results if getattr(r, "hallucinated", None) is not None]
        assert len(decided) > 0.6 * len(items)  # the rest stays unjudged, by design
        assert lo <= sum(decided) / len(decided) <= hi


def test_metrics_per_type_overall_and_unjudged() -> None:
    def record(
        i: int, kind: str, hallucinated: bool | None, extra: int | None, failure: str | None = None
    ) -> SampleRecord:
        return SampleRecord(
            id=str(i), prompt="?", response="x", failure=failure, metadata={"type": kind},
            hallucinated=hallucinated, extra_claims=extra,
        )  # fmt: skip

    records = [
        record(1, "count", True, 0),
        record(2, "count", False, 1),
        record(3, "count", False, 0),
        record(4, "OCR", False, 0),
        record(5, "OCR", None, None),
        record(6, "OCR", None, None, failure="HQH item 6: image 9 has no entry in image_data.json"),
    ]
    report = hqh_metrics(records)
    # 0-100 like every other benchmark
    assert report.metrics["counting"] == pytest.approx(100 / 3)
    assert report.metrics["ocr"] == 0.0
    assert report.metrics["hallucination_rate"] == pytest.approx(25.0)
    assert report.metrics["overall_hallucination_rate"] == pytest.approx(50.0)
    assert report.metrics["extra_claims_per_answer"] == pytest.approx(1 / 4)  # a count, not a rate
    # coverage and bounds beside each rate: OCR judged 1 of 2 asked (the failure was never asked)
    assert report.metrics["ocr_coverage"] == pytest.approx(50.0)
    assert (report.metrics["ocr_low"], report.metrics["ocr_high"]) == (0.0, 50.0)
    assert report.metrics["counting_coverage"] == 100.0
    assert report.metrics["counting_low"] == report.metrics["counting_high"] == pytest.approx(100 / 3)
    assert report.metrics["coverage"] == pytest.approx(80.0)
    assert report.metrics["hallucination_rate_low"] == pytest.approx(20.0)
    assert report.metrics["hallucination_rate_high"] == pytest.approx(40.0)
    assert report.groups["OCR"]["coverage"] == pytest.approx(50.0)
    assert report.counts["unjudged"] == 1 and report.counts["unjudged_ocr"] == 1
    assert report.counts["failed"] == 1 and report.counts["no_image_information"] == 1


@pytest.mark.full_data
def test_wrong_judge_and_empty_answer_are_recorded_not_raised(bench: HQH, tmp_path: Path) -> None:
    sample = next(s for s in bench.samples() if not s.metadata.get("problem"))
    ctx = ScoringContext(cache=Cache(None), judge=HQHRulesJudge())
    (empty,) = asyncio.run(bench.score_many([(sample, Response(id=sample.id, response="  "))], ctx))
    # HQH's official grader scores an empty answer incorrect; so does halluscope, whatever the judge.
    assert empty.failure is None and (empty.model_extra or {})["verdict"] == "incorrect"
    assert (empty.model_extra or {})["hallucinated"] is True
    assert empty.metadata["type"] == sample.metadata["type"]
    from halluscope.judges.similarity import SimilarityJudge

    ctx = ScoringContext(cache=Cache(None), judge=SimilarityJudge.__new__(SimilarityJudge))
    (wrong,) = asyncio.run(bench.score_many([(sample, Response(id=sample.id, response="x"))], ctx))
    assert wrong.failure is not None and "cannot judge HQH answers" in wrong.failure


@pytest.mark.full_data
def test_cli_run_gives_per_type_and_overall_rates(tmp_path: Path) -> None:
    bench = HQH(HQH_DIR, types=["count", "OCR", "attribute"])
    answers = tmp_path / "answers.jsonl"
    rows = [{"id": r.id, "response": r.response} for r in ground_truth_responses(bench, mismatched=True)]
    answers.write_text("\n".join(json.dumps(r) for r in rows[:150]) + "\n")
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        ["run", "-b", "hqh", "--data", str(HQH_DIR), "--bench-opt", "types=count,OCR,attribute",
         "-r", str(answers), "--out", str(out), "-q"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics["groups"]) == {"count", "OCR", "attribute"}
    assert metrics["metrics"]["hallucination_rate"] > 80
    assert metrics["counts"]["no_image_information"] > 0
    assert metrics["counts"]["judged"] + metrics["counts"]["unjudged"] + metrics["counts"]["failed"] == 1500
    first = json.loads((out / "samples.jsonl").read_text().splitlines()[0])
    assert first["metadata"]["type"] in {"count", "OCR", "attribute"}
    assert "counting" in result.output and "hallucination_rate" in result.output
