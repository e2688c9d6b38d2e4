"""Rough edges a user meets in the first hour: ``--version``, ``--only-answered``, ``report`` in an 80-column
terminal, and Reefknot's ``tasks`` given as one string."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from halluscope import __version__
from halluscope.benchmarks import BENCHMARKS
from halluscope.benchmarks.reefknot import Reefknot
from halluscope.cli.main import app
from halluscope.jsonio import iter_jsonl
from halluscope.report.html import write_html_report
from halluscope.report.table import format_value, metric_columns, summarise_run
from tests.layouts import reefknot_layout
from tests.paths import REEFKNOT_DIR
from tests.test_html_report import RATES_A, RATES_B, tri_he_items, write_run


def test_version() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.output == f"halluscope {__version__}\n"


def _reefknot_answers(path: Path, lines: list[int]) -> None:
    rows = (reefknot_layout() / "Multichoice.jsonl").read_text(encoding="utf-8").splitlines()
    answered = []
    for line in lines:
        row = json.loads(rows[line])
        row["response"] = "B"
        answered.append(json.dumps(row))
    path.write_text("\n".join(answered) + "\n", encoding="utf-8")


def test_only_answered_scores_just_the_answered_samples(tmp_path: Path) -> None:
    answers = tmp_path / "answers.jsonl"
    _reefknot_answers(answers, [0, 1, 7])
    out = tmp_path / "run"
    common = ["run", "-b", "reefknot", "--data", str(reefknot_layout()), "--bench-opt", "tasks=mcq"]
    result = CliRunner().invoke(app, [*common, "--responses", str(answers), "--out", str(out), "--only-answered"])
    assert result.exit_code == 0, result.output
    ids = [line.value["id"] for line in iter_jsonl(out / "samples.jsonl")]
    assert sorted(ids) == ["mcq-0", "mcq-1", "mcq-7"]
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["counts"]["samples"] == 3 and metrics["counts"]["missing_response"] == 0
    assert json.loads((out / "spec.json").read_text(encoding="utf-8"))["benchmark"]["only_answered"] is True
    page = write_html_report([out], tmp_path / "report.html").read_text(encoding="utf-8")
    assert "1 run(s), 3 samples" in page
    # A run without the option is not mixed into the same directory, and the option needs a responses file.
    again = CliRunner().invoke(app, [*common, "--responses", str(answers), "--out", str(out)])
    assert again.exit_code != 0 and "another benchmark config (only_answered" in again.output
    wrong = CliRunner().invoke(app, [*common, "--model", f"replay/{answers}", "--out", str(out), "--only-answered"])
    assert wrong.exit_code != 0 and "--only-answered goes with --responses" in wrong.output


@pytest.mark.full_data
def test_report_table_is_readable_in_80_columns(tmp_path: Path) -> None:
    items = tri_he_items(limit=10)
    extra = {
        "attribute_hallu_i": 3.25,
        "attribute_hallu_q": 4.5,
        "hallu_i_with_empty": 20.75,
        "hallu_q_with_empty": 21.5,
    }
    folders = []
    for index, (name, rates) in enumerate(
        [("llava-1.5-7b-hf", RATES_A), ("gpt-4o-mini-2024-07-18", RATES_B), ("qwen2-vl-7b", RATES_A)]
    ):
        folder = tmp_path / f"run-{name}"
        spec = {
            "benchmark": {"benchmark": "tri-he", "data": "tri-he.json"},
            "model": {"provider": "openai", "model": name},
            "judge": {"judge": "similarity", "model": "sentence-transformers/all-MiniLM-L6-v2"},
        }
        write_run(folder, model=name, items=items, seed=index, rates=rates, extra_metrics=extra, spec=spec)
        folders.append(folder)
    result = CliRunner().invoke(app, ["report", *map(str, folders)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    text = result.output
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 80
    summaries = [summarise_run(f) for f in folders]
    for key in metric_columns(summaries):
        assert key in text
    for summary in summaries:
        assert summary.run in text
        for value in summary.metrics.values():
            assert format_value(value) in text
    # Fixed, paired order: each Hallu-Q right before its Hallu-I, whatever order the metrics came in.
    columns = metric_columns(summaries)
    assert columns.index("attribute_hallu_q") + 1 == columns.index("attribute_hallu_i")
    assert columns.index("hallu_q_with_empty") + 1 == columns.index("hallu_i_with_empty")
    assert text.index("attribute_hallu_q") < text.index("attribute_hallu_i")


@pytest.mark.full_data
@pytest.mark.parametrize("tasks", ["mcq", "mcq,vqa", ["mcq"]])
def test_reefknot_tasks_as_a_string_are_a_comma_list(tasks: str | list[str]) -> None:
    bench = Reefknot(data=REEFKNOT_DIR, tasks=tasks, relation_types="cognitive")
    chosen = list(bench.samples())
    expected = {"mcq"} if tasks != "mcq,vqa" else {"mcq", "vqa"}
    assert {s.metadata["task"] for s in chosen} == expected
    assert {s.metadata["relation_type"] for s in chosen} == {"cognitive"}
    through_registry = BENCHMARKS.create("reefknot", data=REEFKNOT_DIR, tasks=tasks)
    assert {s.metadata["task"] for s in through_registry.samples()} == expected
