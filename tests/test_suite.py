"""``halluscope eval``: several benchmarks for several models, against a scripted VLM on loopback.

What a user notices: every benchmark runs for every model into its own run folder; running the same command
again asks the model nothing; a benchmark whose data is missing fails in one line while the others finish,
and the command exits non-zero; two models give one leaderboard, each headline with its figure (no interval
over one photo) and the second model's difference from the first.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.layouts import synthetic_layouts
from tests.paths import POPE_EXCERPT
from tests.scripted_server import ScriptedServer, completion

LIMIT = 4  # the first four questions of POPE's excerpt, and of the Tri-HE set, are each about one photo


@pytest.fixture(autouse=True)
def no_endpoint_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HALLUSCOPE_LLM_MODEL", "HALLUSCOPE_BASE_URL", "OPENAI_BASE_URL", "HALLUSCOPE_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def invoke(*args: str) -> Any:
    from halluscope.cli.main import app

    return CliRunner().invoke(app, list(args), terminal_width=240)


def said(result: Any) -> str:
    return " ".join(result.output.split())


@pytest.fixture
def data_root(tmp_path: Path) -> Path:
    """A data root in the usual layout: POPE's excerpt under pope/, a Tri-HE-layout set under tri-he/."""
    root = tmp_path / "data"
    root.mkdir()
    (root / "pope").symlink_to(POPE_EXCERPT, target_is_directory=True)
    (root / "tri-he").symlink_to(synthetic_layouts(), target_is_directory=True)
    return root


def answering(yes_no: str, statement: str) -> Any:
    """A scripted VLM: ``yes_no`` to POPE's "Is there ...?" questions, ``statement`` to open questions."""

    def respond(body: Any) -> Any:
        asked = str(body["messages"][-1]["content"])
        return completion(yes_no if "Is there" in asked else statement)

    return respond


def leaderboard_rows(out: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO((out / "leaderboard.csv").read_text(encoding="utf-8"))))


def test_two_models_on_two_benchmarks_run_to_the_end_resume_and_give_one_leaderboard(
    data_root: Path, tmp_path: Path
) -> None:
    out = tmp_path / "suite"
    with (
        ScriptedServer(responder=answering("Yes, there is.", "The cup is on the box.")) as yes,
        ScriptedServer(responder=answering("No, there is not.", "A green dog sleeps under the red table.")) as no,
    ):
        command = [
            "eval", "-b", "pope,tri-he", "--model", f"yes=blind/openai/vlm?base_url={yes.base_url}",
            "--model", f"no=blind/openai/vlm?base_url={no.base_url}", "--data-root", str(data_root),
            "--limit", str(LIMIT), "--out", str(out), "--no-cache", "-q",
        ]  # fmt: skip
        first = invoke(*command)
        asked_first = (len(yes.chat_requests()), len(no.chat_requests()))
        again = invoke(*command)
        asked_again = (len(yes.chat_requests()), len(no.chat_requests()))
    assert first.exit_code == 0, first.output
    # every benchmark for every model, each in its own run folder, LIMIT questions each
    assert asked_first == (2 * LIMIT, 2 * LIMIT)
    for model in ("yes", "no"):
        for benchmark in ("pope", "tri-he"):
            metrics = json.loads((out / model / benchmark / "metrics.json").read_text())
            assert metrics["benchmark"] == benchmark and metrics["counts"]["samples"] == LIMIT
            assert f"ok {model} · {benchmark}" in said(first)
    # the same command again asks nothing and ends the same way
    assert again.exit_code == 0, again.output
    assert asked_again == asked_first
    # one leaderboard: both models on both benchmarks, each headline with its figure, "no" against "yes"
    rows = leaderboard_rows(out)
    assert sorted((r["benchmark"], r["model"]) for r in rows) == [
        ("pope", "no"), ("pope", "yes"), ("tri-he", "no"), ("tri-he", "yes")
    ]
    for row in rows:
        # Each run's four questions are about one photo: a figure, and no interval rather than one of zero width
        # (the leaderboard's intervals over several photos are checked in test_leaderboard_profile.py).
        assert row["value"] and not row["low"] and not row["high"], row
    pope = {r["model"]: r for r in rows if r["benchmark"] == "pope"}
    assert pope["yes"]["is_baseline"] == "True" and pope["yes"]["difference"] == ""
    assert pope["no"]["versus_baseline"] in ("better", "worse", "no clear difference")
    assert float(pope["no"]["difference"]) == pytest.approx(float(pope["no"]["value"]) - float(pope["yes"]["value"]))
    assert {r["rank"] for r in pope.values()} <= {"1", "2"}
    markdown = (out / "leaderboard.md").read_text(encoding="utf-8")
    assert "## pope" in markdown and "## tri-he" in markdown and "baseline" in markdown
    html = (out / "leaderboard.html").read_text(encoding="utf-8")
    assert "<table>" in html and "<script" not in html
    record = json.loads((out / "suite.json").read_text())
    assert [r["status"] for r in record["runs"]] == ["ok"] * 4


def test_a_benchmark_without_data_fails_in_one_line_and_the_others_finish(data_root: Path, tmp_path: Path) -> None:
    out = tmp_path / "suite"
    with ScriptedServer(responder=lambda body: completion("Yes.")) as vlm:
        result = invoke(
            "eval", "-b", "pope,hqh,tri-he", "--model", f"blind/openai/vlm?base_url={vlm.base_url}",
            "--data-root", str(data_root), "--limit", "2", "--out", str(out), "--no-cache", "-q",
        )  # fmt: skip
        asked = len(vlm.chat_requests())
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if "hqh" in line and "failed" in line]
    assert len(lines) == 1 and f"no hqh data under {data_root}" in lines[0], result.output
    assert asked == 4  # pope and tri-he were asked; hqh was not
    for benchmark in ("pope", "tri-he"):
        assert (out / "blind-openai-vlm" / benchmark / "metrics.json").is_file()
    assert "1 of 3 run(s) measured nothing or failed" in said(result)


def test_a_run_that_measures_nothing_makes_the_suite_fail(data_root: Path, tmp_path: Path) -> None:
    """A model whose every request is refused gives a run with no figure: the suite says so and exits 1."""
    from tests.scripted_server import error

    with ScriptedServer(responder=lambda body: error(400, "bad request")) as vlm:
        result = invoke(
            "eval", "-b", "pope", "--model", f"blind/openai/vlm?base_url={vlm.base_url}",
            "--data-root", str(data_root), "--limit", "2", "--out", str(tmp_path / "suite"), "--no-cache", "-q",
        )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "ok blind-openai-vlm" not in said(result)
    assert "1 of 1 run(s) measured nothing or failed" in said(result)


def test_a_model_that_sees_images_gets_each_question_with_its_photo(data_root: Path, tmp_path: Path) -> None:
    with ScriptedServer(responder=lambda body: completion("A red cube is left of a ball.")) as vlm:
        result = invoke(
            "eval", "-b", "tri-he", "--model", f"openai/vlm?base_url={vlm.base_url}", "--data-root", str(data_root),
            "--limit", "3", "--out", str(tmp_path / "suite"), "--no-cache", "-q",
        )  # fmt: skip
        sent = vlm.images_sent()
    assert result.exit_code == 0, result.output
    assert len(sent) == 3 and all(len(images) == 1 and images[0][1] for images in sent)


def test_two_models_with_one_label_are_refused_before_anything_is_asked(data_root: Path, tmp_path: Path) -> None:
    result = invoke(
        "eval", "-b", "pope", "--model", "openai/vlm?base_url=http://127.0.0.1:9/v1",
        "--model", "openai/vlm?base_url=http://127.0.0.1:8/v1", "--data-root", str(data_root),
        "--out", str(tmp_path / "suite"),
    )  # fmt: skip
    assert result.exit_code == 2
    assert "LABEL=SPEC" in said(result)
    assert not (tmp_path / "suite").exists()


def test_a_suite_file_gives_each_benchmark_its_data_and_each_model_its_label(tmp_path: Path) -> None:
    import halluscope

    suite = tmp_path / "suite.toml"
    (tmp_path / "pope-files").symlink_to(POPE_EXCERPT, target_is_directory=True)
    with ScriptedServer(responder=lambda body: completion("No.")) as vlm:
        suite.write_text(
            "limit = 3\n"
            "[benchmarks.pope]\n"
            'data = "pope-files"\n'
            'options = { sources = "gqa", prompt = "yesno" }\n'
            "[models.scripted]\n"
            f'spec = "blind/openai/vlm?base_url={vlm.base_url}"\n',
            encoding="utf-8",
        )
        result = halluscope.evaluate_suite(suite=suite, out=tmp_path / "out", cache=False)
        prompts = [r.body["messages"][-1]["content"] for r in vlm.chat_requests()]
    assert result.ok, [r.message for r in result.runs]
    (run,) = result.runs
    assert run.run_dir == tmp_path / "out" / "scripted" / "pope"
    spec = json.loads((run.run_dir / "spec.json").read_text())
    assert spec["run"]["bench_options"] == {"sources": "gqa", "prompt": "yesno"} and spec["run"]["limit"] == 3
    assert len(prompts) == 3 and all("Please answer yes or no." in str(p) for p in prompts)
    assert [r.model for r in result.leaderboard.rows] == ["scripted"]


def test_a_suite_broken_off_halfway_asks_only_what_is_missing_when_run_again(data_root: Path, tmp_path: Path) -> None:
    """The endpoint dies after POPE's questions (Tri-HE's are refused): POPE's run is kept, Tri-HE's fails in
    one line and the suite exits 1. The same command again, with the endpoint back, asks only Tri-HE's
    questions and finishes."""
    from tests.scripted_server import error

    out = tmp_path / "suite"

    def dying(body: Any) -> Any:
        asked = str(body["messages"][-1]["content"])
        return completion("Yes.") if "Is there" in asked else error(400, "the server went away")

    with ScriptedServer(responder=dying) as broken:
        command = [
            "eval", "-b", "pope,tri-he", "--model", f"m=blind/openai/vlm?base_url={broken.base_url}",
            "--data-root", str(data_root), "--limit", str(LIMIT), "--out", str(out), "--no-cache", "-q",
        ]  # fmt: skip
        first = invoke(*command)
    assert first.exit_code == 1, first.output
    assert (out / "m" / "pope" / "metrics.json").exists()
    with ScriptedServer(responder=answering("Yes.", "The cup is on the box.")) as back:
        command[4] = f"m=blind/openai/vlm?base_url={back.base_url}"
        again = invoke(*command)
        asked = [str(r.body["messages"][-1]["content"]) for r in back.chat_requests()]
    assert again.exit_code == 0, again.output
    assert len(asked) == LIMIT and not any("Is there" in a for a in asked), asked  # Tri-HE's only
    assert json.loads((out / "m" / "tri-he" / "metrics.json").read_text())["counts"]["samples"] == LIMIT
