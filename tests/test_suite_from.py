"""``halluscope eval --from DIR``: a folder of answers other tools wrote, each file scored as that tool read it.

VLMEvalKit's real sheets for VILA-1.5-8B give the figures VLMEvalKit printed in its score.csv; lmms-eval logs
are found by task name and LLaVA's answer files with their question file; every other file is listed with why.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.paths import (
    FULL_DATA,
    HALLUSIONBENCH_EXCERPT,
    PEER_OUTPUTS,
    PEER_OUTPUTS_EXCERPT,
    POPE_EXCERPT,
)

SHEETS = PEER_OUTPUTS / "vlmevalkit-vila-1.5-8b"
EXCERPT = PEER_OUTPUTS_EXCERPT / "vlmevalkit-vila-1.5-8b"
LLAVA_EXCERPT = PEER_OUTPUTS_EXCERPT / "pope-llava-1.5-7b"


def invoke(*args: str) -> Any:
    from halluscope.cli.main import app

    return CliRunner().invoke(app, list(args), terminal_width=240)


def said(result: Any) -> str:
    return " ".join(result.output.split())


def metrics(run: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
    return loaded


def score_csv(path: Path) -> dict[str, dict[str, float]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return {row["split"]: {k: float(v) for k, v in row.items() if k != "split"} for row in csv.DictReader(handle)}


@pytest.mark.full_data
def test_vlmevalkit_folder_reproduces_its_score_csv_and_lists_the_other_files(tmp_path: Path) -> None:
    out = tmp_path / "suite"
    result = invoke("eval", "--from", str(SHEETS), "--data-root", str(FULL_DATA), "--out", str(out), "--no-cache", "-q")
    assert result.exit_code == 0, result.output
    pope, hallusion = metrics(out / "vila_8b" / "pope"), metrics(out / "vila_8b" / "hallusionbench")
    printed = score_csv(SHEETS / "vila_8b_POPE_score.csv")
    names = {"Overall": "f1", "acc": "accuracy", "precision": "precision", "recall": "recall"}
    for split, values in printed.items():
        ours = pope["metrics"] if split == "Overall" else pope["groups"][f"coco/{split}"]
        for column, key in names.items():
            assert ours[key] == pytest.approx(values[column], abs=0.005), (split, column)
    for split, values in score_csv(SHEETS / "vila_8b_HallusionBench_score.csv").items():
        ours = hallusion["metrics"] if split == "Overall" else hallusion["groups"][split]
        for key in ("aAcc", "fAcc", "qAcc"):
            assert ours[key] == pytest.approx(values[key], abs=0.005), (split, key)
    text = said(result)
    assert "ok vila_8b · pope" in text and "ok vila_8b · hallusionbench" in text
    assert "5 file(s) not scored" in text
    for name in ("vila_8b_POPE_auxmatch.xlsx", "vila_8b_HallusionBench_auxmatch.xlsx"):
        assert f"{name}: VLMEvalKit's intermediate sheet" in text
    for name in ("vila_8b_POPE_score.csv", "vila_8b_HallusionBench_score.csv"):
        assert f"{name}: VLMEvalKit's score table" in text
    assert "SOURCES.md: not an answer file" in text


def _hallusion_log(path: Path) -> Path:
    """An lmms-eval 0.7 ``hallusion_bench_image`` log over the excerpt's figure questions."""
    every = json.loads((HALLUSIONBENCH_EXCERPT / "HallusionBench.json").read_text(encoding="utf-8"))
    docs = [d for d in every if str(d["visual_input"]) != "0"]
    rows = [
        {"doc_id": i, "doc": d, "target": d["gt_answer_details"], "filtered_resps": ["Yes."]}
        for i, d in enumerate(docs)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_folder_of_three_tools_files_is_scored_file_by_file_and_the_rest_listed(tmp_path: Path) -> None:
    answers = tmp_path / "answers"
    answers.mkdir()
    for name in ("POPE", "HallusionBench"):  # the excerpt's sheets carry the predictions
        shutil.copy(EXCERPT / f"vila_8b_{name}_auxmatch.tsv", answers / f"vila_8b_{name}.tsv")
    _hallusion_log(answers / "llava-onevision" / "samples_hallusion_bench_image.jsonl")
    (answers / "llava-onevision" / "samples_mme.jsonl").write_text(
        json.dumps({"doc_id": 0, "filtered_resps": ["Yes"]}) + "\n", encoding="utf-8"
    )
    (answers / "m_MME.tsv").write_text("index\tprediction\n0\tYes\n", encoding="utf-8")
    (answers / "notes.txt").write_text("how these were made\n", encoding="utf-8")
    root = tmp_path / "data"
    root.mkdir()
    (root / "pope").symlink_to(POPE_EXCERPT, target_is_directory=True)
    (root / "hallusionbench").symlink_to(HALLUSIONBENCH_EXCERPT, target_is_directory=True)
    out = tmp_path / "suite"
    result = invoke("eval", "--from", str(answers), "--data-root", str(root), "--out", str(out), "--no-cache", "-q")
    assert result.exit_code == 0, result.output
    text = said(result)
    for model, benchmark in (("vila_8b", "pope"), ("vila_8b", "hallusionbench"), ("llava-onevision", "hallusionbench")):
        assert f"ok {model} · {benchmark}" in text
    # VLMEvalKit's reading: POPE's accuracy is the share of its own extracted answers equal to the label, each
    # row counted once per setting it lists
    rows = list(csv.DictReader((answers / "vila_8b_POPE.tsv").open(encoding="utf-8"), delimiter="\t"))
    weights = [len(r["category"].split(",")) for r in rows]
    right = sum(w for r, w in zip(rows, weights, strict=True) if r["extracted"] == r["answer"])
    assert metrics(out / "vila_8b" / "pope")["metrics"]["accuracy"] == pytest.approx(100 * right / sum(weights))
    spec = json.loads((out / "vila_8b" / "hallusionbench" / "spec.json").read_text())
    assert spec["run"]["judge"]["name"] == "vlmevalkit" and spec["run"]["only_answered"] is True
    lmms = json.loads((out / "llava-onevision" / "hallusionbench" / "spec.json").read_text())
    assert lmms["responses_file"]["problems"] == 0
    assert "samples_mme.jsonl: lmms-eval task 'mme' is not one halluscope scores" in text
    assert "m_MME.tsv: a table named for no dataset halluscope scores from VLMEvalKit" in text
    assert "notes.txt: not an answer file (.txt)" in text
    # one leaderboard over the files' models
    board = (out / "leaderboard.md").read_text(encoding="utf-8")
    assert "vila_8b" in board and "llava-onevision" in board


def test_a_llava_answer_file_is_read_with_the_question_file_beside_it_and_pope_official_rule(tmp_path: Path) -> None:
    folder = tmp_path / "pope" / "answers"
    folder.mkdir(parents=True)
    shutil.copy(LLAVA_EXCERPT / "llava_pope_test.jsonl", folder / "llava_pope_test.jsonl")
    questions = [json.loads(line) for line in (folder / "llava_pope_test.jsonl").read_text().splitlines()[:5]]
    (folder / "llava-v1.5-7b.jsonl").write_text("".join(
        json.dumps({"question_id": q["question_id"], "prompt": q["text"], "text": "Yes", "answer_id": "a",
                    "model_id": "llava-v1.5-7b", "metadata": {}}) + "\n" for q in questions
    ), encoding="utf-8")  # fmt: skip
    root = tmp_path / "data"
    root.mkdir()
    (root / "pope").symlink_to(LLAVA_EXCERPT / "pope-labels-e3e3926", target_is_directory=True)
    out = tmp_path / "suite"
    result = invoke(
        "eval", "--from", str(tmp_path / "pope"), "--data-root", str(root), "--out", str(out), "--no-cache", "-q"
    )
    assert result.exit_code == 0, result.output
    run = out / "llava-v1.5-7b" / "pope"
    spec = json.loads((run / "spec.json").read_text())
    assert spec["run"]["bench_options"]["mode"] == "paper"
    assert spec["run"]["bench_options"]["questions"].endswith("llava_pope_test.jsonl")
    assert metrics(run)["counts"]["samples"] == 5
    assert "llava_pope_test.jsonl: LLaVA's question file" in said(result)


def test_a_folder_with_nothing_to_score_exits_non_zero_naming_each_file(tmp_path: Path) -> None:
    answers = tmp_path / "answers"
    answers.mkdir()
    (answers / "readme.md").write_text("nothing here\n", encoding="utf-8")
    result = invoke("eval", "--from", str(answers), "--out", str(tmp_path / "suite"), "-q")
    assert result.exit_code == 1
    assert "readme.md: not an answer file (.md)" in said(result)
