"""LLaVA's answer layout (model_vqa_loader), read with LLaVA's question file, against what eval_pope printed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from halluscope.api import evaluate
from halluscope.benchmarks.pope import Pope
from halluscope.importers import detect_external
from halluscope.responses import ResponsesError
from tests.paths import PEER_OUTPUTS, PEER_OUTPUTS_EXCERPT, POPE_DIR

RUN = PEER_OUTPUTS / "pope-llava-1.5-7b-partial"
EXCERPT = PEER_OUTPUTS_EXCERPT / "pope-llava-1.5-7b"


def printed_by_eval_pope(path: Path) -> dict[str, dict[str, float]]:
    """What LLaVA's eval_pope.py printed, per category, in percent (read from its output, not retyped)."""
    out: dict[str, dict[str, float]] = {}
    block: dict[str, float] = {}
    names = {"Accuracy": "accuracy", "Precision": "precision", "Recall": "recall", "F1 score": "f1",
             "Yes ratio": "yes_ratio"}
    for line in path.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^(Accuracy|Precision|Recall|F1 score|Yes ratio): ([0-9.]+)$", line)
        if match:
            block[names[match.group(1)]] = 100 * float(match.group(2))
        category = re.match(r"^Category: (\w+), # samples: (\d+)$", line)
        if category:
            if block:
                out[category.group(1)] = {**block, "samples": float(category.group(2))}
            block = {}
    return out


def _llava_line(question: dict[str, object], answer: str) -> dict[str, object]:
    """One line as LLaVA's model_vqa_loader writes it."""
    return {"question_id": question["question_id"], "prompt": question["text"], "text": answer,
            "answer_id": "x" * 22, "model_id": "llava-v1.5-7b", "metadata": {}}


@pytest.mark.full_data
def test_reproduces_what_eval_pope_printed_for_the_interrupted_llava_run(tmp_path: Path) -> None:
    printed = printed_by_eval_pope(RUN / "POPE_results.txt")
    assert set(printed) == {"adversarial", "random"}  # popular: 0 samples, nothing printed
    result = evaluate(
        "pope", data=RUN / "pope-labels-e3e3926", responses=RUN / "llava-v1.5-7b.jsonl",
        bench_options={"sources": "coco", "mode": "paper", "questions": str(RUN / "llava_pope_test.jsonl")},
        only_answered=True, cache=False, out=tmp_path / "run",
    )  # fmt: skip
    for setting, numbers in printed.items():
        group = result.groups[f"coco/{setting}"]
        assert group["answered"] == numbers["samples"]
        for key in ("accuracy", "precision", "recall", "f1", "yes_ratio"):
            assert group[key] == pytest.approx(numbers[key], abs=0.05), (setting, key)
    imported = result.spec["responses_file"]
    assert imported["layout"] == "llava" and imported["answers"] == 5712 and imported["problems"] == 0


@pytest.mark.full_data
def test_against_pope_head_the_questions_it_no_longer_has_are_named(tmp_path: Path) -> None:
    """POPE's later files reworded some questions ("in the imange?"): those answers match no item and are
    reported by line, none paired with another question."""
    bench = Pope(POPE_DIR, sources=["coco"], questions=RUN / "llava_pope_test.jsonl")
    result = bench.read_responses(RUN / "llava-v1.5-7b.jsonl", benchmark_ids={s.id for s in bench.samples()})
    assert len(result.responses) + len(result.problems) == 5712
    assert result.problems and all("matches no sample" in p for p in result.problems)
    assert all("imange" in p for p in result.problems)
    prompts = {s.id: s.prompt for s in bench.samples()}
    asked = {json.loads(line)["question_id"]: json.loads(line)["prompt"].split("\n")[0]
             for line in (RUN / "llava-v1.5-7b.jsonl").read_text(encoding="utf-8").splitlines()}
    for sample_id, response in result.responses.items():
        line = int(response.metadata["source_row"].rsplit(" ", 1)[1])
        assert prompts[sample_id] == list(asked.values())[line - 1]


def _excerpt_answers(tmp_path: Path) -> tuple[Path, list[dict[str, object]]]:
    questions = [json.loads(line) for line in (EXCERPT / "llava_pope_test.jsonl").read_text().splitlines()]
    labels = {
        setting: [json.loads(line)["label"] for line in
                  (EXCERPT / "pope-labels-e3e3926" / "coco" / f"coco_pope_{setting}.json").read_text().splitlines()]
        for setting in ("adversarial", "random", "popular")
    }  # fmt: skip
    lines = []
    for question in questions:
        position = int(question["question_id"]) % 10_000_000 - 1
        label = labels[str(question["category"])][position]
        lines.append(_llava_line(question, "Yes" if label == "yes" else "No"))
    path = tmp_path / "llava-v1.5-7b.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path, lines


def test_llava_layout_is_matched_through_its_question_file(tmp_path: Path) -> None:
    path, lines = _excerpt_answers(tmp_path)
    assert detect_external(path) == "llava"
    bench = Pope(EXCERPT / "pope-labels-e3e3926", sources=["coco"], mode="paper",
                 questions=EXCERPT / "llava_pope_test.jsonl")
    result = bench.read_responses(path, benchmark_ids={s.id for s in bench.samples()})
    assert not result.problems and len(result.responses) == len(lines) == 180
    # LLaVA's random question 10000007 is POPE's random question 7 (same image, same question)
    assert result.responses["coco-random-7"].metadata["source_row"] == f"{path.name} line 67"
    samples = {s.id: s for s in bench.samples()}
    assert all(samples[i].metadata["label"] == r.response.lower() for i, r in result.responses.items())


def test_llava_lines_that_disagree_with_the_question_file_are_named(tmp_path: Path) -> None:
    path, lines = _excerpt_answers(tmp_path)
    lines[1]["prompt"] = "Is there a giraffe in the image?\nAnswer the question using a single word or phrase."
    lines[2]["question_id"] = 99
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    bench = Pope(EXCERPT / "pope-labels-e3e3926", sources=["coco"], questions=EXCERPT / "llava_pope_test.jsonl")
    result = bench.read_responses(path, benchmark_ids={s.id for s in bench.samples()})
    assert len(result.responses) == 178
    assert any("line 2" in p and "giraffe" in p and "not question 2" in p for p in result.problems)
    assert any("line 3" in p and "question_id 99 is not in the question file" in p for p in result.problems)


def test_without_the_question_file_the_error_says_to_give_it(tmp_path: Path) -> None:
    path, _ = _excerpt_answers(tmp_path)
    bench = Pope(EXCERPT / "pope-labels-e3e3926", sources=["coco"])
    with pytest.raises(ResponsesError, match=r"--bench-opt questions=FILE"):
        bench.read_responses(path, benchmark_ids={s.id for s in bench.samples()})
