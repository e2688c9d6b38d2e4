"""What ``halluscope report`` shows in the terminal, on LLaVA's real POPE answers: the per-set table LLaVA's
eval_pope printed, the run's own reading only (the other readings on request), who read the answers, the model
named by its file, and a word when runs side by side scored different items."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from halluscope.cli.main import app
from tests.test_declared_metrics import LLAVA_POPE, _pope_run

pytestmark = pytest.mark.full_data
WIDE = {"COLUMNS": "220"}


def _said(output: str) -> str:
    return " ".join(output.split())


def test_report_shows_the_per_set_table_eval_pope_printed(tmp_path: Path) -> None:
    _pope_run(tmp_path / "llava", LLAVA_POPE / "llava-v1.5-7b.jsonl")
    result = CliRunner().invoke(app, ["report", str(tmp_path / "llava")], env=WIDE)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    # POPE_results.txt: adversarial 0.842 (F1), 0.851 (accuracy), 0.899, 0.791, 0.440; random 0.872, 0.881, ...
    adversarial = next(line for line in lines if "coco/adversarial" in line)
    for figure in ("85.13 [", "89.92 [", "79.13 [", "84.18 [", "44.00 ["):
        assert figure in adversarial, adversarial
    random_set = next(line for line in lines if "coco/random" in line)
    assert "87.24 [" in random_set and "88.09 [" in random_set
    said = _said(result.output)
    assert "llava-v1.5-7b.jsonl" in said and str(LLAVA_POPE) not in said  # the file, not where it lies
    assert "none (yes/no read by the pope-paper rule)" in said
    assert "│ paper_f1" not in said and "│ robust_f1" not in said  # no row of another reading
    assert "10 figures under other readings not shown" in said and "--all shows them" in said
    every = CliRunner().invoke(app, ["report", str(tmp_path / "llava"), "--all"], env=WIDE)
    assert every.exit_code == 0 and "│ paper_f1" in every.output and "│ robust_f1" in every.output


def test_runs_over_different_items_are_said_to_be(tmp_path: Path) -> None:
    answers = LLAVA_POPE / "llava-v1.5-7b.jsonl"
    part = tmp_path / "part.jsonl"
    part.write_text("\n".join(answers.read_text().splitlines()[:3000]) + "\n")
    _pope_run(tmp_path / "all", answers)
    _pope_run(tmp_path / "part", part)
    result = CliRunner().invoke(app, ["report", str(tmp_path / "all"), str(tmp_path / "part")], env=WIDE)
    assert result.exit_code == 0, result.output
    said = _said(result.output)
    assert "pope: these runs scored different items (all 5,712, part 3,000; 3,000 shared)" in said
    same = CliRunner().invoke(app, ["report", str(tmp_path / "all"), str(tmp_path / "all")], env=WIDE)
    assert "scored different items" not in _said(same.output)


def _eval_pope_rows(output: str) -> dict[str, str]:
    return {
        s: next(line for line in output.splitlines() if s in line)
        for s in ("coco/adversarial", "coco/random")
    }


def test_run_leads_with_its_choices_then_the_table_eval_pope_printed(tmp_path: Path) -> None:
    args = [
        "run", "-b", "pope", "--data", str(LLAVA_POPE / "pope-labels-e3e3926"),
        "--responses", str(LLAVA_POPE / "llava-v1.5-7b.jsonl"), "--bench-opt", "sources=coco",
        "--bench-opt", "mode=paper", "--bench-opt", f"questions={LLAVA_POPE / 'llava_pope_test.jsonl'}",
        "--only-answered", "--out", str(tmp_path / "llava"), "--no-cache", "-q",
    ]  # fmt: skip
    result = CliRunner().invoke(app, args, env=WIDE)
    assert result.exit_code == 0, result.output
    out = result.output
    view, pooled = out.index("POPE per set, as LLaVA's eval_pope prints it"), out.index("pope — ")
    choices = [
        out.index(line)
        for line in (
            "reading: paper",
            "judge: none (yes/no read by the pope-paper rule)",
            "only answered: the 5,712 samples the responses file answers",
        )
    ]
    assert max(choices) < view < pooled  # what the run chose, then eval_pope's table, then the pooled figures
    header = next(line for line in out.splitlines() if "Accuracy" in line)
    assert [header.index(c) for c in ("Accuracy", "Precision", "Recall", "F1", "Yes-ratio")] == sorted(
        header.index(c) for c in ("Accuracy", "Precision", "Recall", "F1", "Yes-ratio")
    )
    rows = _eval_pope_rows(out[view:pooled])
    # POPE_results.txt, in eval_pope's order: Accuracy, Precision, Recall, F1 score, Yes ratio
    assert [c.split(" [")[0].strip() for c in rows["coco/adversarial"].split("│")[2:7]] == [
        "85.13", "89.92", "79.13", "84.18", "44.00"
    ]  # fmt: skip
    assert [c.split(" [")[0].strip() for c in rows["coco/random"].split("│")[2:7]] == [
        "88.09", "97.44", "78.97", "87.24", "41.78"
    ]  # fmt: skip
    assert "│ paper_f1" not in out  # another reading's copies are not rows of the run's table


def test_report_markdown_and_csv_carry_the_per_set_table(tmp_path: Path) -> None:
    _pope_run(tmp_path / "llava", LLAVA_POPE / "llava-v1.5-7b.jsonl")
    md, table = tmp_path / "runs.md", tmp_path / "runs.csv"
    result = CliRunner().invoke(
        app, ["report", str(tmp_path / "llava"), "--md", str(md), "--csv", str(table)], env=WIDE
    )
    assert result.exit_code == 0, result.output
    text = md.read_text()
    assert "| set | Accuracy | Precision | Recall | F1 | Yes-ratio |" in text
    assert "| coco/adversarial | 85.13 [" in text and "| 84.18 [" in text
    import csv

    row = next(csv.DictReader(table.open()))
    assert round(float(row["coco/adversarial:f1"]), 2) == 84.18
    assert round(float(row["coco/random:yes_ratio"]), 2) == 41.78
    assert list(row)[4:9] == ["accuracy", "accuracy_low", "accuracy_high", "precision", "precision_low"]


def test_a_chair_run_says_its_stand_in_tagger_and_its_limit_before_chair_py_s_columns(tmp_path: Path) -> None:
    from tests.paths import FULL_DATA

    chair = FULL_DATA / "chair-coco"
    captions = tmp_path / "captions.jsonl"
    lines = (chair / "opera-released-captions" / "llava-1.5" / "greedy.jsonl").read_text().splitlines()
    captions.write_text("\n".join(lines[:12]) + "\n")
    args = ["run", "-b", "chair", "--data", str(chair), "-r", str(captions), "--bench-opt", f"ids={captions}",
            "--bench-opt", "tagger=perceptron", "--limit", "8", "--out", str(tmp_path / "chair"), "--no-cache", "-q"]
    result = CliRunner().invoke(app, args, env=WIDE)
    assert result.exit_code == 0, result.output
    out = result.output
    table = out.index("CHAIR, as chair.py prints it")
    assert out.index("tagger: perceptron (textblob-aptagger's averaged perceptron, standing in for NLTK's") < table
    assert out.index("limit: the first 8 samples only (--limit 8)") < table
    header = next(line for line in out[table:].splitlines() if "CHAIRs" in line)
    assert [header.index(c) for c in ("CHAIRs", "CHAIRi", "Recall", "Len")] == sorted(
        header.index(c) for c in ("CHAIRs", "CHAIRi", "Recall", "Len")
    )
    # and `report` says the same before its table
    shown = CliRunner().invoke(app, ["report", str(tmp_path / "chair")], env=WIDE)
    assert shown.exit_code == 0, shown.output
    assert shown.output.index("chair: tagger: perceptron") < shown.output.index("halluscope runs")
