"""POPE with RePOPE's corrected labels (``--bench-opt labels=repope``): what changes is counted as RePOPE's
files say, and the same answers are reported under both label sets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from halluscope.api import evaluate
from halluscope.benchmarks.pope import Pope
from tests.paths import POPE_DIR, POPE_EXCERPT, REPOPE_DIR

SETTINGS = ("random", "popular", "adversarial")


def _jsonl(path: Path) -> dict[int, dict[str, str]]:
    return {row["question_id"]: row for row in map(json.loads, path.read_text(encoding="utf-8").splitlines())}


@pytest.mark.full_data
def test_label_changes_and_dropped_items_are_counted_as_repopes_files_say() -> None:
    bench = Pope(POPE_DIR, sources=["coco"], labels="repope", repope_data=REPOPE_DIR)
    samples = list(bench.samples())
    counts = bench.spec()["repope"]
    for setting in SETTINGS:
        original = _jsonl(REPOPE_DIR / "annotations" / f"coco_pope_{setting}.json")
        relabelled = _jsonl(REPOPE_DIR / "annotations" / f"coco_repope_{setting}.json")
        changed = sum(1 for qid, row in relabelled.items() if row["label"] != original[qid]["label"])
        mine = [s for s in samples if s.metadata["setting"] == setting]
        assert counts[f"coco-{setting}"] == {
            "pope": len(original), "kept": len(relabelled), "dropped": len(original) - len(relabelled),
            "relabelled": changed,
            "yes": sum(r["label"] == "yes" for r in relabelled.values()),
            "no": sum(r["label"] == "no" for r in relabelled.values()),
        }
        assert {s.metadata["question_id"] for s in mine} == set(relabelled)
        assert all(s.metadata["label"] == relabelled[s.metadata["question_id"]]["label"] for s in mine)
    assert counts["coco-random"]["kept"] == 2774 and counts["coco-adversarial"]["kept"] == 2684


@pytest.mark.full_data
def test_the_same_answers_under_both_label_sets(tmp_path: Path) -> None:
    """A model that always agrees with POPE's labels is perfect under POPE and wrong exactly where RePOPE
    corrected a label; RePOPE's dropped items are not scored."""
    pope = Pope(POPE_DIR, sources=["coco"])
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"id": s.id, "response": s.metadata["label"].capitalize()}) + "\n"
                               for s in pope.samples()), encoding="utf-8")
    under_pope = evaluate("pope", data=POPE_DIR, responses=answers, bench_options={"sources": "coco"},
                          cache=False, out=tmp_path / "pope")
    with pytest.warns(UserWarning, match="RePOPE dropped as ambiguous"):
        under_repope = evaluate("pope", data=POPE_DIR, responses=answers, out=tmp_path / "repope", cache=False,
                                bench_options={"labels": "repope", "repope_data": str(REPOPE_DIR)})
    assert under_pope.metrics["accuracy"] == 100.0
    repope = under_repope.spec["benchmark"]["repope"]
    kept = sum(c["kept"] for c in repope.values())
    relabelled = sum(c["relabelled"] for c in repope.values())
    assert under_repope.counts["samples"] == kept
    assert under_repope.counts["repope_dropped"] == 9000 - kept
    assert under_repope.counts["repope_relabelled"] == relabelled > 0
    assert under_repope.metrics["accuracy"] == pytest.approx(100 * (kept - relabelled) / kept)
    assert under_repope.spec["benchmark"]["labels"] == "repope"
    imported = under_repope.spec["responses_file"]
    assert imported["answers_to_repope_dropped_items"] == 9000 - kept
    assert imported["problems"] == 1 and "RePOPE dropped as ambiguous" in imported["first_problems"][0]


def test_repope_relabels_only_the_coco_sets() -> None:
    with pytest.raises(ValueError, match="only POPE's COCO sets"):
        Pope.from_options(POPE_EXCERPT, labels="repope", sources="coco,gqa")
    assert Pope.from_options(POPE_EXCERPT, labels="repope", repope_data=str(POPE_EXCERPT)).files.keys() == {
        ("coco", s) for s in SETTINGS}
