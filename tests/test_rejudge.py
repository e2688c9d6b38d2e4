"""Re-judging a finished run: the same answers, another judge, never the model again; then the two runs compared
item by item, so the difference is the judge's alone."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import halluscope
from halluscope.api import EvaluationError
from halluscope.benchmarks import BENCHMARKS
from halluscope.benchmarks.tri_he import ground_truth_responses
from halluscope.cli.main import app
from halluscope.runs.selection import first_samples
from tests.layouts import tri_he_layout
from tests.scripted_server import ScriptedServer, completion

N = 12


def _records(run: Path) -> dict[str, str | None]:
    return {r["id"]: r["response"] for r in map(json.loads, (run / "samples.jsonl").read_text().splitlines())}


def _answers_file(tmp_path: Path) -> tuple[Path, Path]:
    data = tri_he_layout()
    bench = first_samples(BENCHMARKS.create("tri-he", data=data), N)
    right = ground_truth_responses(bench)
    wrong = ground_truth_responses(bench, mismatched=True)
    pairs = enumerate(zip(right, wrong, strict=True))
    rows = [{"id": r.id, "response": (r if i % 2 else w).response} for i, (r, w) in pairs]
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return data, path


def test_rejudge_scores_the_same_answers_with_another_judge_and_report_pairs_them(tmp_path: Path) -> None:
    data, answers = _answers_file(tmp_path)
    first = halluscope.evaluate("tri-he", data=data, responses=answers, limit=N, cache=False, out=tmp_path / "a")
    second = halluscope.rejudge(tmp_path / "a", judge="similarity", out=tmp_path / "b", cache=False)
    assert _records(tmp_path / "a") == _records(tmp_path / "b")
    spec = second.spec
    assert spec["judge"]["judge"] == "similarity" and first.spec["judge"]["judge"] == "typed"
    assert spec["run"]["rejudged_from"] == str(tmp_path / "a") and spec["run"]["limit"] == N
    result = CliRunner().invoke(app, ["report", str(tmp_path / "a"), str(tmp_path / "b")], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    # the items both runs scored: questions with a judged claim under both judges
    assert re.search(r"b vs a \(tri-he\): \d+ items in common", " ".join(result.output.split())), result.output


def test_rejudging_a_model_run_reads_its_saved_answers_and_never_asks_again(tmp_path: Path) -> None:
    data = tri_he_layout()
    with ScriptedServer([completion("A laptop is on the table.")] * N) as server:
        model = f"openai/vlm?base_url={server.base_url}"
        halluscope.evaluate("tri-he", data=data, model=model, limit=3, cache=False, out=tmp_path / "asked")
        asked = len(server.chat_requests())
        assert asked == 3
        CliRunner().invoke(app, ["rejudge", str(tmp_path / "asked"), "--judge", "typed", "--out",
                                 str(tmp_path / "again"), "--no-cache", "-q"])  # fmt: skip
        assert len(server.chat_requests()) == asked, "re-judging asked the model again"
    assert _records(tmp_path / "asked") == _records(tmp_path / "again")


def test_rejudge_refuses_in_one_line_what_it_cannot_do(tmp_path: Path) -> None:
    data, answers = _answers_file(tmp_path)
    halluscope.evaluate("tri-he", data=data, responses=answers, limit=N, cache=False, out=tmp_path / "a")
    with pytest.raises(EvaluationError, match="other than the run being re-judged"):
        halluscope.rejudge(tmp_path / "a", judge="typed", out=tmp_path / "a")
    answers.unlink()
    result = CliRunner().invoke(app, ["rejudge", str(tmp_path / "a"), "--out", str(tmp_path / "b")])
    assert result.exit_code != 0 and "not there any more" in result.output and "Traceback" not in result.output
    result = CliRunner().invoke(app, ["rejudge", str(tmp_path / "nothing"), "--out", str(tmp_path / "c")])
    assert result.exit_code != 0 and "not a halluscope run directory" in result.output
