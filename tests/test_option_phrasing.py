"""A refusal names the options the way the user wrote them: ``--out`` on the command line, ``out=`` in Python.

Each case is refused by ``halluscope run`` and by :func:`halluscope.evaluate` alike, before anything is
written; the whole message is compared, so a message that loses a surface's spelling (or keeps the other
surface's) fails here.
"""

from __future__ import annotations

import errno
import json
import warnings
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

import halluscope
from halluscope.api import EvaluationError
from halluscope.cli.main import app
from halluscope.spelling import Given, phrase, spell
from tests.layouts import reefknot_layout
from tests.paths import TRI_HE_JSON


def _cli(*args: str) -> str:
    result = CliRunner().invoke(app, ["run", *args, "--no-cache", "-q"])
    assert result.exit_code == 2, result.output
    return " ".join(result.output.split()).removeprefix("error: ")


def _api(benchmark: str, **options: Any) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(EvaluationError) as refused:
            halluscope.evaluate(benchmark, cache=False, **options)
    return str(refused.value)


def _answers(path: Path, ids: list[str], text: str, **extra: Any) -> Path:
    path.write_text("".join(json.dumps({"id": i, "response": text, **extra}) + "\n" for i in ids), "utf-8")
    return path


def test_a_run_folder_holding_other_answers_is_named_per_surface(tmp_path: Path) -> None:
    ids = [f"yesno-{i}" for i in range(5)]
    first, second = _answers(tmp_path / "a.jsonl", ids, "Yes."), _answers(tmp_path / "b.jsonl", ids, "No.")
    flags = ["-b", "reefknot", "--data", str(reefknot_layout()), "--bench-opt", "tasks=yesno", "--limit", "5"]
    options: dict[str, Any] = {"data": reefknot_layout(), "bench_options": {"tasks": "yesno"}, "limit": 5}
    assert CliRunner().invoke(app, ["run", *flags, "-r", str(first), "--out", str(tmp_path / "cli"), "-q",
                                    "--no-cache"]).exit_code == 0  # fmt: skip
    halluscope.evaluate("reefknot", responses=first, out=tmp_path / "api", cache=False, **options)
    held = "holds a run with other responses (a.jsonl there, b.jsonl now)"
    assert _cli(*flags, "-r", str(second), "--out", str(tmp_path / "cli")) == (
        f"{tmp_path / 'cli'} {held}; choose another --out, or pass --overwrite to replace it"
    )
    assert _api("reefknot", responses=second, out=tmp_path / "api", **options) == (
        f"{tmp_path / 'api'} {held}; choose another out=, or pass overwrite=True to replace it"
    )


def test_a_judge_given_the_old_and_the_new_way_is_named_per_surface(tmp_path: Path) -> None:
    answers = _answers(tmp_path / "a.jsonl", ["x"], "Yes.")
    twice = "the hallusionbench judge is given twice: by"
    cli = _cli("-b", "hallusionbench", "--bench-opt", "judge=llm", "--bench-opt", "llm_model=m", "--judge", "parser",
               "-r", str(answers), "--out", str(tmp_path / "cli"))  # fmt: skip
    assert cli == (
        f"{twice} --bench-opt judge, llm_model (the old spelling) and by --judge/--judge-model/--judge-opt; "
        "keep the --judge ones only"
    )
    api = _api("hallusionbench", bench_options={"judge": "llm", "llm_model": "m"}, judge="parser",
               responses=answers, out=tmp_path / "api")  # fmt: skip
    assert api == (
        f"{twice} bench_options['judge'], bench_options['llm_model'] (the old spelling) and by "
        "judge=/judge_options=; keep the judge= ones only"
    )
    assert not (tmp_path / "cli").exists() and not (tmp_path / "api").exists()


def test_the_old_limit_option_is_named_per_surface(tmp_path: Path) -> None:
    answers = _answers(tmp_path / "a.jsonl", ["x"], "Yes.")
    cli = _cli("-b", "pope", "--bench-opt", "limit=5", "--limit", "3", "-r", str(answers), "--out", str(tmp_path))
    assert cli == "--bench-opt limit=5 and --limit 3 disagree; give the number of samples once, as --limit N"
    api = _api("pope", bench_options={"limit": 5}, limit=3, responses=answers, out=tmp_path)
    assert api == "bench_options['limit']=5 and limit=3 disagree; give the number of samples once, as limit=N"
    cli = _cli("-b", "pope", "--bench-opt", "limit=x", "-r", str(answers), "--out", str(tmp_path))
    assert cli == "--bench-opt limit=x: not a whole number; give --limit N instead"
    api = _api("pope", bench_options={"limit": "x"}, responses=answers, out=tmp_path)
    assert api == "bench_options['limit']='x': not a whole number; give limit=N instead"


def test_base_url_beside_the_local_model_is_named_per_surface(tmp_path: Path) -> None:
    image_id = next(iter(json.loads(TRI_HE_JSON.read_text(encoding="utf-8"))))
    answers = _answers(tmp_path / "a.jsonl", [f"{image_id}-0"], "A cat.", claims=[["cat", "on", "mat"]])
    url = "http://127.0.0.1:9/v1"
    said = (
        "model 'local' starts the packaged model on a server of its own for the judge, and {0} names another "
        "endpoint for the same stage; give one of the two (for a server you run yourself, `halluscope serve` "
        "prints a {0} and a model name to use instead of 'local')"
    )
    cli = _cli("-b", "tri-he", "--data", str(TRI_HE_JSON), "-r", str(answers), "--only-answered", "--out",
               str(tmp_path / "cli"), "--judge", "llm", "--judge-model", "local", "--base-url", url)  # fmt: skip
    assert cli == said.format("--base-url")
    api = _api("tri-he", data=TRI_HE_JSON, responses=answers, only_answered=True, out=tmp_path / "api",
               judge="llm", judge_options={"model": "local"}, base_url=url)  # fmt: skip
    assert api == said.format("base_url=")


def test_an_unwritable_run_folder_is_named_per_surface(tmp_path: Path) -> None:
    from halluscope.runs.lock import RunDirWriteError, run_dir_writes

    with pytest.raises(RunDirWriteError) as refused, run_dir_writes(tmp_path):
        raise OSError(errno.EROFS, "read-only", str(tmp_path / "spec.json"))
    cli, api = refused.value.phrase("cli"), refused.value.phrase("api")
    assert str(refused.value) == cli and "choose an --out on a writable disk" in cli
    assert "choose an out= on a writable disk" in api and "--out" not in api


def test_every_option_a_message_can_name_is_a_flag_of_run_and_a_keyword_of_evaluate() -> None:
    """The spelling rule, checked against the two surfaces themselves: each run option it spells on the
    command line is a flag ``halluscope run`` has, and in Python a keyword :func:`halluscope.evaluate` takes."""
    import inspect

    from halluscope.api import _OPTIONS
    from halluscope.runs.config import RunConfig

    command = typer.main.get_command(app).commands["run"]  # type: ignore[attr-defined]
    flags = {opt for param in command.params for opt in param.opts}
    keywords = set(inspect.signature(halluscope.evaluate).parameters) | set(_OPTIONS)
    # No option of their own (use_cache and progress are --no-cache and --quiet, the other way round).
    internal = {"benchmark", "use_cache", "rejudged_from", "surface", "progress"}
    options = [*(set(RunConfig.model_fields) - internal), "extractor_model", "judge_model"]
    for option in options:
        assert spell(option, "cli").split()[0] in flags, option
        head = spell(option, "api").split("=")[0].split("[")[0]
        assert head in keywords or f"{head}_options" in keywords, option


def test_a_message_spells_options_and_leaves_values_alone() -> None:
    message = phrase("{path}: {given}; give {flag:max_tokens}", path="/a/{b}", given=Given("judge", "typed"))
    assert message.phrase("cli") == str(message) == "/a/{b}: --judge typed; give --max-tokens"
    assert message.phrase("api") == "/a/{b}: judge='typed'; give max_tokens="
    assert Given("judge_options", 3, key="retries").phrase("cli") == "--judge-opt retries=3"
    assert Given("judge_options", 3, key="retries").phrase("api") == "judge_options['retries']=3"
