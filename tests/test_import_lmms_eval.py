"""lmms-eval --log_samples files of every version: with ``doc``, without it (doc_id + input), 0.7's flat layout.

No log written by lmms-eval itself is in the shared data, so these files are built from real data in the
layouts each version writes: the official HallusionBench questions (and VILA-1.5-8B's real answers from
VLMEvalKit's sheet), POPE's question files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from halluscope.api import evaluate
from halluscope.benchmarks.hallusionbench import HallusionBench, hallusion_fields_from_index, hallusion_id
from halluscope.benchmarks.pope import Pope
from halluscope.importers import detect_external
from halluscope.importers.vlmevalkit import read_table
from tests.paths import HALLUSIONBENCH_DIR, HALLUSIONBENCH_EXCERPT, PEER_OUTPUTS, POPE_EXCERPT

POPE_SUFFIX = "\nAnswer the question using a single word or phrase."


def _docless(doc_id: int, question: str, target: str, answer: str) -> dict[str, Any]:
    """A line as the lmms-eval 0.5 fork writes it: no ``doc``, the prompt under ``input``."""
    return {"doc_id": doc_id, "target": target, "filtered_resps": [answer], "doc_hash": "0" * 64,
            "bypass": None, "input": question}


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _figure_questions(path: Path) -> list[dict[str, Any]]:
    return [r for r in json.loads(path.read_text(encoding="utf-8")) if str(r["visual_input"]) != "0"]


@pytest.mark.full_data
def test_docless_hallusion_log_with_real_answers_scores_as_vlmevalkit_did(tmp_path: Path) -> None:
    """VILA-8B's real answers written as an lmms-eval 0.5-fork hallusion_bench_image log: every doc_id maps to
    the right question, and the run gives VLMEvalKit's numbers for the same answers."""
    answers = {}
    for _, row in read_table(PEER_OUTPUTS / "vlmevalkit-vila-1.5-8b" / "vila_8b_HallusionBench.xlsx"):
        fields = hallusion_fields_from_index(row["index"])
        assert fields is not None
        answers[hallusion_id(fields)] = str(row["prediction"])
    docs = _figure_questions(HALLUSIONBENCH_DIR / "HallusionBench.json")
    assert len(docs) == 951 == len(answers)
    log = _write(tmp_path / "samples_hallusion_bench_image.jsonl", [
        _docless(i, d["question"], d["gt_answer_details"], answers[hallusion_id(d)]) for i, d in enumerate(docs)
    ])  # fmt: skip
    assert detect_external(log) == "lmms-eval"
    result = evaluate("hallusionbench", data=HALLUSIONBENCH_DIR, responses=log, judge="vlmevalkit",
                      only_answered=True, cache=False, out=tmp_path / "run")
    assert result.spec["responses_file"]["problems"] == 0 and result.spec["responses_file"]["answers"] == 951
    assert "visual_input != 0" in result.spec["responses_file"]["lmms_eval_doc_order"]["order"]
    assert result.metrics["aAcc"] == pytest.approx(52.261, abs=0.05)
    assert result.metrics["fAcc"] == pytest.approx(22.254, abs=0.05)
    assert result.metrics["qAcc"] == pytest.approx(20.659, abs=0.05)


def test_docless_lines_whose_input_is_another_question_are_named(tmp_path: Path) -> None:
    docs = _figure_questions(HALLUSIONBENCH_EXCERPT / "HallusionBench.json")
    rows = [_docless(i, d["question"], d["gt_answer_details"], "Yes") for i, d in enumerate(docs)]
    rows[5]["doc_id"] = 6  # a log of another dataset version: the position names another question
    log = _write(tmp_path / "samples_hallusion_bench_image.jsonl", rows)
    bench = HallusionBench(HALLUSIONBENCH_EXCERPT)
    result = bench.read_responses(log, benchmark_ids={s.id for s in bench.samples()})
    assert len(result.responses) == len(docs) - 1
    (problem,) = [p for p in result.problems if "line 6" in p]
    assert f"not the question of {hallusion_id(docs[6])}" in problem and "doc_id 6" in problem
    assert len(result.problems) == 1  # line 7 (doc_id 6 again) is the right answer to question 6


def _pope_docs(setting: str) -> list[dict[str, Any]]:
    lines = (POPE_EXCERPT / "coco" / f"coco_pope_{setting}.json").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.parametrize("order", [("adversarial", "popular", "random"), ("random", "adversarial", "popular")])
def test_docless_pope_log_finds_the_order_of_the_three_sets(tmp_path: Path, order: tuple[str, ...]) -> None:
    docs = [(setting, d) for setting in order for d in _pope_docs(setting)]
    rows = [_docless(i, d["text"] + POPE_SUFFIX, d["label"], d["label"].capitalize())
            for i, (_, d) in enumerate(docs)]
    log = _write(tmp_path / "samples_pope.jsonl", rows)
    bench = Pope(POPE_EXCERPT, sources=["coco"])
    result = bench.read_responses(log, benchmark_ids={s.id for s in bench.samples()})
    assert not result.problems and len(result.responses) == len(docs)
    assert ", ".join(order) in result.notes["lmms_eval_doc_order"]["order"]
    setting, doc = docs[70]
    assert result.responses[f"coco-{setting}-{doc['question_id']}"].metadata["source_row"].endswith("line 71")


def test_docless_pope_adv_task_reads_the_adversarial_set_only(tmp_path: Path) -> None:
    rows = [_docless(i, d["text"] + POPE_SUFFIX, d["label"], "No") for i, d in enumerate(_pope_docs("adversarial"))]
    log = _write(tmp_path / "llava_pope_adv.jsonl", rows)
    bench = Pope(POPE_EXCERPT, sources=["coco"])
    result = bench.read_responses(log, benchmark_ids={s.id for s in bench.samples()})
    assert sorted(result.responses) == sorted(f"coco-adversarial-{i}" for i in range(1, 61))
    assert result.notes["lmms_eval_doc_order"]["task"] == "pope_adv"


def test_log_with_doc_up_to_0_6(tmp_path: Path) -> None:
    docs = _pope_docs("popular")[:3]
    rows = [{"doc_id": i, "doc": {"id": str(3000 + i), "question_id": str(d["question_id"]), "question": d["text"],
                                  "answer": d["label"], "image_source": d["image"][:-4], "category": "popular"},
             "target": d["label"], "arguments": [], "resps": [["Yes"]], "filtered_resps": ["Yes"]}
            for i, d in enumerate(docs)]
    rows[2]["doc"]["question"] = "Is there a unicorn in the image?"
    bench = Pope(POPE_EXCERPT, sources=["coco"])
    result = bench.read_responses(_write(tmp_path / "pope.jsonl", rows), benchmark_ids={s.id for s in bench.samples()})
    assert sorted(result.responses) == ["coco-popular-1", "coco-popular-2"]
    assert len(result.problems) == 1 and "unicorn" in result.problems[0] and "coco-popular-3" in result.problems[0]


def test_0_7_flat_layout_with_resps_dropped(tmp_path: Path) -> None:
    docs = _figure_questions(HALLUSIONBENCH_EXCERPT / "HallusionBench.json")[:3]
    rows: list[dict[str, Any]] = [
        {"doc_id": 0, "doc": docs[0], "target": docs[0]["gt_answer_details"], "filtered_resps": ["Yes, it is."]},
        {"doc_id": 1, "doc": docs[1], "target": "", "resps": ["No."], "filtered_resps": ["No"]},
        {"doc_id": 2, "doc": docs[2], "target": "", "filtered_resps": []},
    ]
    bench = HallusionBench(HALLUSIONBENCH_EXCERPT)
    result = bench.read_responses(_write(tmp_path / "hb.jsonl", rows), benchmark_ids={s.id for s in bench.samples()})
    assert result.responses[hallusion_id(docs[0])].response == "Yes, it is."
    assert result.responses[hallusion_id(docs[1])].response == "No"
    assert len(result.problems) == 1 and "line 3" in result.problems[0] and "no model output" in result.problems[0]
