"""The Python API: ``halluscope.evaluate`` gives what ``halluscope run`` gives, in and out of an event loop,
and the README's Python example runs as written."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import halluscope
from halluscope.api import EvaluationError
from halluscope.cli.main import app
from halluscope.types import Response, SampleRecord
from tests.layouts import reefknot_layout
from tests.paths import REPO_ROOT, SHARED

ANSWERS = ["Yes.", "No, it is not.", "yes", "I cannot tell.", "No", "Sure! Yes, it is."]
N = 30


def _answers() -> list[Response]:
    return [
        Response(id=f"yesno-{i}", response=ANSWERS[i % len(ANSWERS)], metadata={"yes_prob": (i % 10) / 10})
        for i in range(N - 3)  # the last three samples have no answer: recorded as failures, as with the CLI
    ]


def _metrics(run_dir: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    return loaded


def test_evaluate_writes_the_same_metrics_as_the_cli(tmp_path: Path) -> None:
    answers_file = tmp_path / "answers.jsonl"
    answers_file.write_text("".join(r.model_dump_json() + "\n" for r in _answers()), encoding="utf-8")
    cli_out = tmp_path / "cli"
    result = CliRunner().invoke(
        app,
        ["run", "-b", "reefknot", "--data", str(reefknot_layout()), "--bench-opt", "tasks=yesno", "--limit", str(N),
         "-r", str(answers_file), "--out", str(cli_out), "--no-cache", "-q"],
    )
    assert result.exit_code == 0, result.output

    from_file = halluscope.evaluate(
        "reefknot", data=reefknot_layout(), responses=answers_file, out=tmp_path / "api-file",
        bench_options={"tasks": "yesno"}, limit=N, cache=False,
    )
    in_memory = halluscope.evaluate(
        "reefknot", data=reefknot_layout(), responses=_answers(), out=tmp_path / "api-memory",
        bench_options={"tasks": "yesno"}, limit=N, cache=False,
    )
    as_dicts = halluscope.evaluate(
        "reefknot", data=str(reefknot_layout()), responses=[r.model_dump() for r in _answers()],
        bench_options={"tasks": "yesno"}, limit=N, cache=False,
    )
    expected = _metrics(cli_out)
    assert expected["counts"]["missing_response"] == 3  # type: ignore[index]
    for run in (from_file, in_memory, as_dicts):
        assert _metrics(run.run_dir) == expected
        assert run.metrics == expected["metrics"] and run.counts == expected["counts"]
        assert run.groups == expected["groups"]
    assert (from_file.run_dir / "samples.jsonl").read_text() == (cli_out / "samples.jsonl").read_text()

    records = in_memory.records
    assert len(records) == N and all(isinstance(r, SampleRecord) for r in records)
    assert {r.id for r in records if r.failure} == {f"yesno-{i}" for i in range(N - 3, N)}
    frame = in_memory.to_pandas()
    assert list(frame["id"]) == [r.id for r in records]
    assert frame.loc[frame["id"] == "yesno-0", "response"].item() == "Yes."

    reopened = halluscope.load_run(cli_out)
    assert reopened.metrics == expected["metrics"] and reopened.run_dir == cli_out
    assert [r.id for r in reopened.records] == [r.id for r in records]


def test_evaluate_inside_a_running_event_loop(tmp_path: Path) -> None:
    """Jupyter runs a loop already; evaluate() must not trip over asyncio.run there."""

    async def notebook_cell() -> halluscope.EvaluationResult:
        asyncio.get_running_loop()
        return halluscope.evaluate(
            "reefknot", data=reefknot_layout(), responses=_answers()[:4], out=tmp_path / "in-loop",
            bench_options={"tasks": "yesno"}, limit=4, cache=False,
        )

    result = asyncio.run(notebook_cell())
    outside = halluscope.evaluate(
        "reefknot", data=reefknot_layout(), responses=_answers()[:4], out=tmp_path / "outside",
        bench_options={"tasks": "yesno"}, limit=4, cache=False,
    )
    assert result.counts["samples"] == 4 and result.counts["scored"] == 3  # "I cannot tell." is unanswered
    assert result.metrics == outside.metrics


def test_evaluate_reports_bad_set_ups_clearly(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="judge_opts"):
        halluscope.evaluate("reefknot", data=reefknot_layout(), responses=[], judge_opts={})
    with pytest.raises(EvaluationError, match="exactly one of"):
        halluscope.evaluate("reefknot", data=reefknot_layout())
    with pytest.raises(EvaluationError, match="no-such-bench"):
        halluscope.evaluate("no-such-bench", responses=[])
    with pytest.raises(EvaluationError, match=r"responses\[1\]"):
        halluscope.evaluate("reefknot", data=reefknot_layout(), responses=[{"id": "yesno-0", "response": "y"}, 3])
    # Yes/no items use no judge: a judge given for them is refused, as `halluscope run` refuses it.
    with pytest.raises(EvaluationError, match="uses no judge"):
        halluscope.evaluate(
            "reefknot", data=reefknot_layout(), responses=_answers()[:2], judge="nope",
            bench_options={"tasks": "yesno"}, limit=2, out=tmp_path / "bad-judge", cache=False,
        )
    with pytest.raises(EvaluationError, match="not a halluscope run directory"):
        halluscope.load_run(tmp_path / "bad-judge")


def test_cli_and_api_refuse_the_same_options_each_in_its_own_spelling(tmp_path: Path) -> None:
    """One orchestrator: an option that would change nothing is refused by both, named as the user wrote it."""
    answers_file = tmp_path / "answers.jsonl"
    answers_file.write_text("".join(r.model_dump_json() + "\n" for r in _answers()), encoding="utf-8")
    common = ["run", "-b", "reefknot", "--data", str(reefknot_layout()), "--bench-opt", "tasks=yesno", "-r",
              str(answers_file), "--no-cache", "-q"]
    cases = [  # (CLI flags, API options, what both must name)
        (["--max-tokens", "64"], {"max_tokens": 64}, ("--max-tokens only applies with --model",
                                                      "max_tokens= only applies with model=")),
        (["--base-url", "http://127.0.0.1:9/v1"], {"base_url": "http://127.0.0.1:9/v1"},
         ("--base-url is the endpoint", "base_url= is the endpoint")),
        (["--judge", "nli"], {"judge": "nli"}, ("--judge: the reefknot benchmark uses no judge",
                                                "judge=: the reefknot benchmark uses no judge")),
    ]
    for number, (flags, options, (cli_words, api_words)) in enumerate(cases):
        out = tmp_path / f"case-{number}"
        result = CliRunner().invoke(app, [*common, "--out", str(out / "cli"), *flags])
        assert result.exit_code == 2 and cli_words in " ".join(result.output.split()), result.output
        with pytest.raises(EvaluationError, match=re.escape(api_words)):
            halluscope.evaluate(
                "reefknot", data=reefknot_layout(), responses=answers_file, out=out / "api",
                bench_options={"tasks": "yesno"}, cache=False, **options,
            )
        assert not (out / "cli").exists() and not (out / "api").exists()  # refused before anything is written


def test_spec_keeps_the_run_config_as_given_without_secrets(tmp_path: Path) -> None:
    result = halluscope.evaluate(
        "reefknot", data=reefknot_layout(), responses=_answers()[:4], out=tmp_path / "run",
        bench_options={"tasks": "yesno"}, limit=4, cache=False, chunk_size=2,
    )
    run = result.spec["run"]
    assert run["benchmark"] == "reefknot" and run["bench_options"] == {"tasks": "yesno"} and run["limit"] == 4
    assert run["responses"] == str(tmp_path / "run" / "responses.jsonl") and run["chunk_size"] == 2
    assert run["use_cache"] is False and run["model"] is None

    from halluscope.runs.config import RunConfig, StageChoice

    config = RunConfig(
        benchmark="tri-he", out=tmp_path, model="openai/m", model_options={"api_key": "sk-123", "api_key_env": "K"},
        judge=StageChoice(name="llm", options={"model": "m", "api_key": "sk-456", "max_tokens": 64}),
    )
    recorded = json.dumps(config.recorded())
    assert "sk-123" not in recorded and "sk-456" not in recorded and '"api_key_env": "K"' in recorded
    assert config.recorded()["judge"]["options"]["max_tokens"] == 64  # a token limit is no secret


@pytest.mark.full_data
def test_readme_python_example_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Python\n", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None, "README's Python section has no python code block"
    code = match.group(1)
    assert len(code.strip().splitlines()) <= 5
    # The example reads data/ relative to where it runs; give it the shared data there.
    (tmp_path / "data").symlink_to(SHARED / "data", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "README.md", "exec"), {})
    r_score, scored, run_dir = printed.getvalue().split()
    assert float(r_score) == 50.0  # one pair, both answered "yes": one right, one wrong
    assert scored == "2" and (Path(run_dir) / "metrics.json").exists()


def test_only_answered_is_said_on_the_command_line_and_not_warned_about_in_python(tmp_path: Path) -> None:
    """Leaving out the unanswered samples is what the user asked for: the CLI says how many, Python does not
    raise a warning for it (a missing answer without ``only_answered`` is warned about)."""
    answers_file = tmp_path / "answers.jsonl"
    answers_file.write_text("".join(r.model_dump_json() + "\n" for r in _answers()[:4]), encoding="utf-8")
    common = {"data": reefknot_layout(), "responses": answers_file, "bench_options": {"tasks": "yesno"}, "limit": 6,
              "cache": False}
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        halluscope.evaluate("reefknot", out=tmp_path / "api", only_answered=True, **common)
    with pytest.warns(UserWarning, match="2 of 6 samples have no response"):
        halluscope.evaluate("reefknot", out=tmp_path / "api-all", **common)
    result = CliRunner().invoke(
        app, ["run", "-b", "reefknot", "--data", str(reefknot_layout()), "--bench-opt", "tasks=yesno", "--limit", "6",
              "-r", str(answers_file), "--out", str(tmp_path / "cli"), "--no-cache", "-q", "--only-answered"],
    )
    assert result.exit_code == 0 and "scoring the 4 answered samples; 2 without an answer left out" in result.output
