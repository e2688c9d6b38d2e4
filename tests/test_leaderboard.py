"""The leaderboard: ranks on the headline, each value inside its interval, and a significant difference from the
baseline marked as such (a model right on every question against one that always says yes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from halluscope.api import evaluate
from halluscope.benchmarks.pope import Pope
from halluscope.report.leaderboard import build_leaderboard, write_leaderboard
from tests.paths import POPE_EXCERPT

OPTIONS = {"sources": "coco", "settings": "random"}


def _run(tmp_path: Path, name: str, answer: str | None) -> Path:
    samples = list(Pope(POPE_EXCERPT, sources=["coco"], settings=["random"]).samples())
    answers = [{"id": s.id, "response": answer or f"{s.metadata['label'].capitalize()}."} for s in samples]
    return evaluate("pope", data=POPE_EXCERPT, responses=answers, bench_options=OPTIONS, cache=False,
                    out=tmp_path / name).run_dir  # fmt: skip


def test_a_clearly_worse_model_ranks_second_and_is_marked_significantly_worse(tmp_path: Path) -> None:
    right, always_yes = _run(tmp_path, "right", None), _run(tmp_path, "yes", "Yes.")
    board = build_leaderboard([("yes-sayer", always_yes), ("oracle", right)], baseline="oracle")
    assert [(r.model, r.rank) for r in board.rows] == [("oracle", 1), ("yes-sayer", 2)]
    oracle, yes_sayer = board.rows
    assert oracle.metric == yes_sayer.metric == "accuracy" and oracle.value == 100.0
    for row in board.rows:
        assert row.low is not None and row.high is not None and row.low <= row.value <= row.high  # type: ignore[operator]
    assert oracle.is_baseline and oracle.versus_baseline is None
    assert yes_sayer.versus_baseline == "worse" and yes_sayer.p_adjusted is not None and yes_sayer.p_adjusted < 0.05
    assert yes_sayer.difference == pytest.approx(yes_sayer.value - oracle.value)  # type: ignore[operator]
    files = write_leaderboard(board, tmp_path / "board")
    markdown = files["markdown"].read_text(encoding="utf-8")
    assert "| 2 | yes-sayer |" in markdown and ": worse *" in markdown
    assert "class='worse'" in files["html"].read_text(encoding="utf-8")
    assert files["csv"].read_text(encoding="utf-8").count("\n") == 3


def test_a_run_without_metrics_is_left_out_with_a_note(tmp_path: Path) -> None:
    right = _run(tmp_path, "right", None)
    (tmp_path / "empty").mkdir()
    board = build_leaderboard([("oracle", right), ("crashed", tmp_path / "empty")])
    assert [r.model for r in board.rows] == ["oracle"]
    assert len(board.notes) == 1 and board.notes[0].startswith("crashed:")
