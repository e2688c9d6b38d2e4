"""Options that do nothing are errors, and spec.json records only what ran (issue 15, A4).

Reefknot's VQA entailment judge comes through the run's judge slot (``--judge nli|llm``), like every other
benchmark's judge; yes/no and multiple choice use no judge, so ``--judge`` there is refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from halluscope.benchmarks.reefknot import Reefknot
from halluscope.responses import write_responses
from halluscope.runs.selection import first_samples
from halluscope.types import Response
from tests.layouts import reefknot_layout, tri_he_layout
from tests.scripted_server import ScriptedServer, completion


@pytest.fixture(autouse=True)
def no_endpoint_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HALLUSCOPE_LLM_MODEL", "HALLUSCOPE_BASE_URL", "OPENAI_BASE_URL", "HALLUSCOPE_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def invoke(*args: str) -> Any:
    from halluscope.cli.main import app

    return CliRunner().invoke(app, list(args), terminal_width=200)


def said(result: Any) -> str:
    return " ".join(result.output.split())


def reefknot_answers(tmp_path: Path, tasks: str) -> Path:
    """Every selected sample answered with its label: right answers in all three forms."""
    bench = first_samples(Reefknot(data=reefknot_layout(), tasks=tasks.split(",")), 6)
    answers = [Response(id=s.id, response=str(s.reference)) for s in bench.samples()]
    return write_responses(tmp_path / "answers.jsonl", answers)


def run_reefknot(tmp_path: Path, tasks: str, *extra: str) -> Any:
    return invoke(
        "run", "-b", "reefknot", "--data", str(reefknot_layout()), "--bench-opt", f"tasks={tasks}", "--limit", "6",
        "-r", str(reefknot_answers(tmp_path, tasks)), "--out", str(tmp_path / "run"),
        "--cache", str(tmp_path / "cache.sqlite"), "--quiet", *extra,
    )  # fmt: skip


def test_a_judge_for_reefknot_without_vqa_is_an_error(tmp_path: Path) -> None:
    result = run_reefknot(tmp_path, "yesno,mcq", "--judge", "llm")
    assert result.exit_code == 2
    assert "--judge: the reefknot benchmark uses no judge for the selected samples" in said(result)
    assert not (tmp_path / "run" / "spec.json").exists()

    extractor = run_reefknot(tmp_path, "yesno,mcq,vqa", "--extractor", "rules")
    assert extractor.exit_code == 2 and "uses no extractor" in said(extractor)

    # --limit 6 selects the first 6 questions, all yes/no: the VQA questions that would need a judge are not
    # among them, so a judge is refused there too.
    limited = run_reefknot(tmp_path, "yesno,mcq,vqa", "--judge", "llm")
    assert limited.exit_code == 2
    assert "--judge: the reefknot benchmark uses no judge for the selected samples" in said(limited)

    plain = run_reefknot(tmp_path, "yesno,mcq")
    assert plain.exit_code == 0, plain.output
    spec = json.loads((tmp_path / "run" / "spec.json").read_text())
    assert spec["judge"] is None and spec["extractor"] is None  # nothing judged, nothing recorded
    assert "vqa_judge" not in spec["benchmark"]


def test_reefknot_vqa_entailment_comes_through_the_judge_slot(tmp_path: Path) -> None:
    with ScriptedServer(responder=lambda body: completion('{"entails": true}')) as server:
        result = run_reefknot(
            tmp_path, "vqa", "--judge", "llm", "--judge-model", "m", "--base-url", server.base_url
        )
        sent = server.chat_requests()
    assert result.exit_code == 0, result.output
    # Two directions for each VQA answer, in both modes (paper and robust), all to the chosen endpoint.
    assert sent and all(r.body["model"] == "m" for r in sent)
    assert any("First statement:" in r.body["messages"][-1]["content"] for r in sent)
    spec = json.loads((tmp_path / "run" / "spec.json").read_text())
    assert spec["judge"]["judge"] == "llm" and spec["judge"]["entailment"] is True
    assert spec["judge"]["model"] == "m" and spec["judge"]["base_url"] == server.base_url
    assert "vqa_judge" not in spec["benchmark"]
    records = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    vqa = [r for r in records if r["task"] == "vqa"]
    assert vqa and all(r["correct"] is True and r["failure"] is None for r in vqa)


def test_an_unloadable_default_nli_judge_fails_the_run_and_names_it(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-nli-model"
    result = run_reefknot(tmp_path, "vqa", "--judge-model", str(missing))
    assert result.exit_code == 1
    assert "the judge failed on" in said(result) and "cannot load the NLI model" in said(result)
    spec = json.loads((tmp_path / "run" / "spec.json").read_text())
    assert spec["judge"]["judge"] == "nli" and spec["judge"]["model"] == str(missing)


def test_the_old_vqa_judge_options_say_where_they_went(tmp_path: Path) -> None:
    result = run_reefknot(tmp_path, "vqa", "--bench-opt", "vqa_judge=llm", "--bench-opt", "llm_model=m")
    assert result.exit_code == 2
    assert "instead of --bench-opt llm_model, use --judge llm --judge-model NAME" in said(result)


def test_options_of_the_path_not_taken_are_errors(tmp_path: Path) -> None:
    base = ["run", "-b", "tri-he", "--data", str(tri_he_layout()), "--limit", "2", "--out", str(tmp_path / "r")]
    answers = write_responses(tmp_path / "a.jsonl", [Response(id="x", response="y")])
    result = invoke(*base, "-r", str(answers), "--max-tokens", "64", "--model-opt", "k=v")
    assert result.exit_code == 2
    assert "--model-opt, --max-tokens only apply with --model" in said(result)
    result = invoke(*base, "-r", str(answers), "--judge", "similarity", "--base-url", "http://127.0.0.1:9/v1")
    assert result.exit_code == 2 and "--base-url" in said(result) and "neither is used" in said(result)


@pytest.mark.parametrize("command", ["run", "respond"])
def test_two_models_are_refused_not_narrowed_to_the_last(tmp_path: Path, command: str) -> None:
    result = invoke(
        command, "-b", "tri-he", "--data", str(tri_he_layout()), "--limit", "2", "--out", str(tmp_path / "r"),
        "-m", "sim/oracle", "-m", "sim/blind",
    )  # fmt: skip
    assert result.exit_code == 2
    assert "--model sim/oracle --model sim/blind" in said(result) and "once per model" in said(result)
    assert not (tmp_path / "r").exists()


def test_an_error_prints_square_brackets_as_written(tmp_path: Path) -> None:
    """An error line is plain text: ``pope[import]`` (like an install hint's ``halluscope[import]``) is printed
    whole, not read as a style tag and dropped."""
    answers = tmp_path / "answers.jsonl"
    answers.write_text("{}\n")
    result = invoke("run", "-b", "pope[import]", "--data", str(tmp_path), "-r", str(answers), "-o", str(tmp_path / "o"))
    assert result.exit_code == 2
    assert "unknown benchmark 'pope[import]'" in result.output
