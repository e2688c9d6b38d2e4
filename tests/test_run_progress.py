"""Progress when output is not a terminal: a run writing to a file or a pipe says how far it is in plain lines,
every N items or M seconds, with how many failed, instead of printing nothing for minutes."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from halluscope.runs.progress import LineProgress
from tests.paths import FULL_DATA

LLAVA_POPE = FULL_DATA / "peer-outputs" / "pope-llava-1.5-7b-partial"


@pytest.mark.full_data
def test_a_run_whose_output_is_a_pipe_prints_progress_lines(tmp_path: Path) -> None:
    args = [
        "run", "-b", "pope", "--data", str(LLAVA_POPE / "pope-labels-e3e3926"),
        "--responses", str(LLAVA_POPE / "llava-v1.5-7b.jsonl"), "--bench-opt", "sources=coco",
        "--bench-opt", "settings=random", "--bench-opt", "mode=paper",
        "--bench-opt", f"questions={LLAVA_POPE / 'llava_pope_test.jsonl'}", "--out", str(tmp_path / "run"),
        "--no-cache",
    ]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HALLUSCOPE_PROGRESS_ITEMS": "1000"}
    done = subprocess.run(
        [sys.executable, "-m", "halluscope.cli.main", *args], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("scoring pope: ")]
    # 2,910 random questions, 2,712 answered: a line per 1,000 or so, then the last with the 198 unanswered
    assert len(lines) >= 3, done.stderr
    assert lines[-1].startswith("scoring pope: 2910/2910, 198 failed ("), lines
    counts = [int(line.split(": ")[1].split("/")[0]) for line in lines]
    assert counts == sorted(counts) and counts[0] >= 1000
    assert "━" not in done.stderr  # no bar drawn into the pipe


def test_lines_come_every_so_many_seconds_and_a_last_one_at_the_end() -> None:
    now = [0.0]
    out = io.StringIO()
    progress = LineProgress(every_seconds=30, stream=out, clock=lambda: now[0])
    progress.start("answering tri-he with sim/truthful", total=300)
    for index in range(48):
        now[0] += 0.5
        progress.advance(1, failed=1 if index == 5 else 0)
    assert out.getvalue() == ""  # 24 s: not yet
    for _ in range(12):
        now[0] += 0.5
        progress.advance(1)
    assert out.getvalue() == "answering tri-he with sim/truthful: 60/300, 1 failed (30 s)\n"
    progress.advance(240)
    progress.close()
    assert out.getvalue().splitlines()[-1] == "answering tri-he with sim/truthful: 300/300, 1 failed (30 s)"


def test_a_quick_job_writes_no_line() -> None:
    out = io.StringIO()
    progress = LineProgress(every_seconds=30, stream=out)
    progress.start("scoring pope", total=10)
    progress.advance(10)
    progress.close()
    assert out.getvalue() == ""
