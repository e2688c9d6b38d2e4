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
