"""VLMEvalKit's real prediction sheets (VILA-1.5-8B): read, matched, and scored to its own *_score.csv."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from halluscope.api import evaluate
from halluscope.benchmarks.hallusionbench import HallusionBench
from halluscope.benchmarks.pope import Pope
from halluscope.importers.vlmevalkit import read_table
from halluscope.metrics.vlmevalkit import vlmevalkit_yes_no
from tests.paths import (
    HALLUSIONBENCH_DIR,
    HALLUSIONBENCH_EXCERPT,
    PEER_OUTPUTS,
    PEER_OUTPUTS_EXCERPT,
    POPE_DIR,
    POPE_EXCERPT,
)

SHEETS = PEER_OUTPUTS / "vlmevalkit-vila-1.5-8b"
EXCERPT = PEER_OUTPUTS_EXCERPT / "vlmevalkit-vila-1.5-8b"


def score_csv(path: Path) -> dict[str, dict[str, float]]:
    """VLMEvalKit's score table: split → column → value."""
    with path.open(encoding="utf-8", newline="") as handle:
        return {row["split"]: {k: float(v) for k, v in row.items() if k != "split"} for row in csv.DictReader(handle)}


@pytest.mark.full_data
def test_pope_sheet_reproduces_vlmevalkit_score_csv(tmp_path: Path) -> None:
    printed = score_csv(SHEETS / "vila_8b_POPE_score.csv")
    with pytest.warns(UserWarning, match="labels are the responses file's own 'answer' column"):
        result = evaluate("pope", data=POPE_DIR, responses=SHEETS / "vila_8b_POPE.xlsx",
                          bench_options={"mode": "vlmevalkit"}, cache=False, out=tmp_path / "run")
    names = {"Overall": "f1", "acc": "accuracy", "precision": "precision", "recall": "recall"}
    for split, values in printed.items():
        ours = result.metrics if split == "Overall" else result.groups[f"coco/{split}"]
        for column, key in names.items():
            assert ours[key] == pytest.approx(values[column], abs=0.05), (split, column)
    # VILA's figures carry their intervals, overall and per set, around VLMEvalKit's own numbers
    f1 = result.intervals["f1"]
    assert f1 is not None and f1["low"] < result.metrics["f1"] < f1["high"]
    # The sheet names no image: nothing says which questions share one, and the interval says what it resampled
    assert (f1["unit"], f1["units"], f1["n"]) == ("question", 9000, 9000)
    assert f1["estimate"] == pytest.approx(printed["Overall"]["Overall"], abs=0.05)
    adversarial = result.report.group_intervals["coco/adversarial"]["accuracy"]
    assert adversarial is not None and adversarial["n"] == 3000
    assert adversarial["estimate"] == pytest.approx(printed["adversarial"]["acc"], abs=0.05)
    # every (row, setting) pair is an item: 5,127 rows, 3,000 per setting, as VLMEvalKit counts them
    assert result.counts["samples"] == 9000
    assert {g: v["answered"] for g, v in result.groups.items()} == {
        "coco/adversarial": 3000, "coco/popular": 3000, "coco/random": 3000}
    assert "answer" in result.spec["responses_file"]["labels"]
    assert result.spec["benchmark"]["items_from_responses"]["count"] == 9000
    from halluscope.report.rundir import load_run

    notes = load_run(tmp_path / "run").notes  # what the HTML report lists under the run
    assert any(n.startswith("labels: the responses file's own 'answer' column") for n in notes)


@pytest.mark.full_data
def test_hallusionbench_sheet_reproduces_vlmevalkit_score_csv(tmp_path: Path) -> None:
    printed = score_csv(SHEETS / "vila_8b_HallusionBench_score.csv")
    with pytest.warns(FutureWarning, match="write --judge vlmevalkit"):  # the old spelling, still taken
        result = evaluate("hallusionbench", data=HALLUSIONBENCH_DIR, responses=SHEETS / "vila_8b_HallusionBench.xlsx",
                          bench_options={"judge": "vlmevalkit"}, only_answered=True, cache=False, out=tmp_path / "run")
    assert result.spec["responses_file"]["answers"] == 951 and result.spec["responses_file"]["problems"] == 0
    assert len(printed) == 12
    for split, values in printed.items():
        ours = result.metrics if split == "Overall" else result.groups[split]
        for key in ("aAcc", "fAcc", "qAcc"):
            assert ours[key] == pytest.approx(values[key], abs=0.05), (split, key)


@pytest.mark.full_data
@pytest.mark.parametrize("name", ["POPE", "HallusionBench"])
def test_the_reading_is_vlmevalkits_on_every_row(name: str) -> None:
    rows = [row for _, row in read_table(SHEETS / f"vila_8b_{name}_auxmatch.xlsx")]
    assert rows
    assert [vlmevalkit_yes_no(str(r["prediction"])) for r in rows] == [r["extracted"] for r in rows]


@pytest.mark.parametrize("name", ["POPE", "HallusionBench"])
def test_the_reading_is_vlmevalkits_on_the_excerpt(name: str) -> None:
    rows = [row for _, row in read_table(EXCERPT / f"vila_8b_{name}_auxmatch.tsv")]
    assert len(rows) > 90
    assert [vlmevalkit_yes_no(r["prediction"]) for r in rows] == [r["extracted"] for r in rows]


@pytest.mark.parametrize(
    ("answer", "reading"),
    [("Yes.", "Yes"), ("No, there is no car.", "No"), ("yes-no", "Unknown"), ("Nope", "Unknown"),
     ("I can't say yes or no.", "Unknown"), ("(no)", "No")],
)
def test_vlmevalkit_reading_of_tricky_answers(answer: str, reading: str) -> None:
    assert vlmevalkit_yes_no(answer) == reading


def test_hallusionbench_ids_come_from_index_and_questions_are_checked(tmp_path: Path) -> None:
    bench = HallusionBench(HALLUSIONBENCH_EXCERPT)
    ids = {s.id for s in bench.samples()}
    result = bench.read_responses(EXCERPT / "vila_8b_HallusionBench_auxmatch.tsv", benchmark_ids=ids)
    rows = [row for _, row in read_table(EXCERPT / "vila_8b_HallusionBench_auxmatch.tsv")]
    assert not result.problems and len(result.responses) == len(rows)
    assert result.responses["VD-illusion-0-0-1"].response == rows[1]["prediction"]  # VD_illusion_1_0_0_1
    text = (EXCERPT / "vila_8b_HallusionBench_auxmatch.tsv").read_text(encoding="utf-8")
    changed = tmp_path / "M_HallusionBench.tsv"
    changed.write_text(text.replace("Is the right orange circle larger than", "Is the blue square larger than", 1))
    result = bench.read_responses(changed, benchmark_ids=ids)
    assert len(result.problems) == 1 and "row 3" in result.problems[0]
    assert "not the question of VD-illusion-0-0-1" in result.problems[0]


def test_pope_sheet_without_coco_images_is_scored_on_its_own_labels() -> None:
    bench = Pope(POPE_EXCERPT, sources=["coco"])
    result = bench.read_responses(EXCERPT / "vila_8b_POPE_auxmatch.tsv", benchmark_ids={s.id for s in bench.samples()})
    rows = [row for _, row in read_table(EXCERPT / "vila_8b_POPE_auxmatch.tsv")]
    assert len(result.items) == sum(len(r["category"].split(",")) for r in rows)
    merged = next(r for r in rows if r["category"] == "adversarial,popular")
    for setting in ("adversarial", "popular"):
        item = next(i for i in result.items if i.id == f"coco-{setting}-vlmevalkit{merged['index']}")
        assert item.metadata["label"] == merged["answer"].lower()
        assert result.responses[item.id].response == merged["prediction"]
    assert "own 'answer' column" in result.notes["labels"]
