"""One judge slot for every benchmark: HallusionBench's grader and PROVE's visual entailment are chosen with
``--judge``/``--judge-model``/``--judge-opt`` as every other judge; the old benchmark options still work,
with a note saying what to write instead; LLM stages share one set of options, checked the same way."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from halluscope.benchmarks.hallusionbench import HallusionBench
from halluscope.runs.selection import first_samples
from tests.paths import HALLUSIONBENCH_EXCERPT
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


def answers_file(tmp_path: Path) -> Path:
    """Four VS answers: "Yes" to the first two, "No" to the others."""
    samples = list(first_samples(HallusionBench(HALLUSIONBENCH_EXCERPT, categories=["VS"]), 4).samples())
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(
        json.dumps({"id": s.id, "response": "Yes." if i < 2 else "No."}) + "\n" for i, s in enumerate(samples)
    ))
    return path


def grader(body: Any) -> Any:
    """A grader that calls every "Yes." correct and every "No." incorrect."""
    prompt = str(body["messages"][-1]["content"])
    return completion("correct" if "Predicted answer: Yes." in prompt else "incorrect")


def hallusion_run(answers: Path, out: Path, *extra: str) -> Any:
    return invoke(
        "run", "-b", "hallusionbench", "--data", str(HALLUSIONBENCH_EXCERPT), "--bench-opt", "categories=VS",
        "--limit", "4", "-r", str(answers), "--out", str(out), "--no-cache", "-q", *extra,
    )  # fmt: skip


def test_hallusionbench_llm_grader_in_the_judge_slot_and_its_old_spelling_agree(tmp_path: Path) -> None:
    answers = answers_file(tmp_path)
    with ScriptedServer(responder=grader) as server:
        new = hallusion_run(answers, tmp_path / "new", "--judge", "llm", "--judge-model", "grader",
                            "--base-url", server.base_url)
        assert new.exit_code == 0, new.output
        asked = len(server.chat_requests())
        assert asked == 4
        old = hallusion_run(answers, tmp_path / "old", "--bench-opt", "judge=llm", "--bench-opt",
                            "llm_model=grader", "--bench-opt", f"llm_base_url={server.base_url}")
        assert old.exit_code == 0, old.output
        assert "old spelling" in said(old) and "write --judge llm --judge-model grader" in said(old)
        # the same run: a run started with the new spelling resumes with the old one, asking nothing again
        asked = len(server.chat_requests())
        again = hallusion_run(answers, tmp_path / "new", "--bench-opt", "judge=llm", "--bench-opt",
                              "llm_model=grader", "--bench-opt", f"llm_base_url={server.base_url}")
        assert again.exit_code == 0, again.output
        assert len(server.chat_requests()) == asked
    metrics = [json.loads((tmp_path / d / "metrics.json").read_text()) for d in ("new", "old")]
    assert metrics[0] == metrics[1]
    assert metrics[0]["counts"]["scored"] == 4
    specs = [json.loads((tmp_path / d / "spec.json").read_text()) for d in ("new", "old")]
    assert specs[0]["judge"] == specs[1]["judge"]
    assert specs[0]["judge"]["judge"] == "llm" and specs[0]["judge"]["model"] == "grader"
    assert "judge" not in specs[0]["benchmark"]


def test_a_plain_hallusionbench_run_records_the_parser_and_other_judges_are_named(tmp_path: Path) -> None:
    answers = answers_file(tmp_path)
    plain = hallusion_run(answers, tmp_path / "plain")
    assert plain.exit_code == 0, plain.output
    assert json.loads((tmp_path / "plain" / "spec.json").read_text())["judge"] == {"judge": "parser"}
    wrong = hallusion_run(answers, tmp_path / "wrong", "--judge", "typed")
    assert wrong.exit_code != 0
    assert ("judge 'typed' belongs to --benchmark tri-he or --benchmark synthetic; the hallusionbench benchmark "
            "takes llm, parser, vlmevalkit") in said(wrong)
    twice = hallusion_run(answers, tmp_path / "twice", "--bench-opt", "judge=llm", "--judge", "parser")
    assert twice.exit_code != 0 and "given twice" in said(twice)


def test_unknown_llm_stage_option_is_refused_naming_it_and_the_known_ones(tmp_path: Path) -> None:
    answers = answers_file(tmp_path)
    result = hallusion_run(answers, tmp_path / "x", "--judge", "llm", "--judge-model", "grader",
                           "--base-url", "http://127.0.0.1:9/v1", "--judge-opt", "retries=3")
    assert result.exit_code != 0
    message = said(result)
    assert "unknown option(s) retries" in message
    for known in ("max_retries", "timeout_s", "concurrency", "max_tokens", "api_key_env"):
        assert known in message


def test_llm_stage_options_parse_numbers_and_refuse_bad_values() -> None:
    from halluscope.llm.stage import LLMStageOptions

    options = LLMStageOptions.parse("judge 'x'", {"concurrency": "2", "timeout_s": "5", "model": "m"})
    assert (options.concurrency, options.timeout_s, options.model) == (2, 5.0, "m")
    with pytest.raises(ValueError, match="judge 'x': concurrency must be at least 1"):
        LLMStageOptions.parse("judge 'x'", {"concurrency": 0})
    with pytest.raises(ValueError, match="max_tokens must be a number"):
        LLMStageOptions.parse("judge 'x'", {"max_tokens": "many"})
    options, extra = LLMStageOptions.split("judge 'y'", {"max_side": 512}, ["max_side"], timeout_s=120.0)
    assert options.timeout_s == 120.0 and extra == {"max_side": 512}


def test_python_api_takes_the_judge_slot_and_warns_on_the_old_spelling(tmp_path: Path) -> None:
    from halluscope import evaluate

    answers = answers_file(tmp_path)
    common: dict[str, Any] = {"data": HALLUSIONBENCH_EXCERPT, "responses": answers, "cache": False}
    new = evaluate("hallusionbench", judge="vlmevalkit", bench_options={"categories": "VS"}, limit=4,
                   out=tmp_path / "new", **common)
    with pytest.warns(FutureWarning, match="write --judge vlmevalkit"):
        old = evaluate("hallusionbench", bench_options={"categories": "VS", "judge": "vlmevalkit"}, limit=4,
                       out=tmp_path / "old", **common)
    assert new.metrics == old.metrics and new.report.details.get("judge") == "vlmevalkit"
    assert new.spec["judge"] == {"judge": "vlmevalkit"}


def test_prove_visual_entailment_in_the_judge_slot_with_the_old_spelling_as_an_alias() -> None:
    from halluscope.benchmarks.judge_aliases import move_judge_aliases

    moved = move_judge_aliases(
        "prove", {"entailment": "vlm", "entailment_model": "m", "images": "imgs"}, judge_given=False
    )
    assert moved is not None
    assert (moved.judge, moved.judge_options, moved.bench_options) == ("vlm", {"model": "m"}, {"images": "imgs"})
    assert "write --judge vlm --judge-model m" in moved.note
    itm = move_judge_aliases("prove", {"entailment": "itm", "device": "cuda"}, judge_given=False)
    assert itm is not None and itm.judge_options == {"device": "cuda"} and itm.bench_options == {"device": "cuda"}
    assert move_judge_aliases("prove", {"images": "imgs"}, judge_given=False) is None
    assert move_judge_aliases("pope", {"judge": "x"}, judge_given=False) is None


def test_list_shows_the_judges_of_every_slot() -> None:
    result = invoke("list")
    assert result.exit_code == 0
    rows = [" ".join(line.split()) for line in result.output.splitlines()]
    for kind, names in (("judge (hallusionbench)", ("parser", "vlmevalkit", "llm")),
                        ("judge (prove)", ("none", "vlm", "itm")), ("judge (hqh)", ("hqh-rules", "hqh-llm", "vlm")),
                        ("judge (mmhal)", ("mmhal-llm",)), ("judge (tri-he, synthetic)", ("typed", "vlm"))):
        for name in names:
            assert any(kind in row and f" {name} " in row for row in rows), (kind, name)


def test_a_claim_benchmark_given_an_answer_judge_names_where_it_belongs() -> None:
    import asyncio

    from halluscope.judges.hallusionbench import ParserGrader

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        failure = ParserGrader().not_claims()
    assert "grades whole HallusionBench answers, not claims" in failure.reason
    assert "--benchmark hallusionbench" in failure.reason
    assert asyncio.run(ParserGrader().grade_many([])) == []


def test_every_llm_judge_of_every_slot_is_reached_by_base_url_and_model_local() -> None:
    """``--base-url`` and ``--judge-model local`` reach a judge whose factory takes a ``base_url``: exactly the
    judges that ask an LLM, in every slot (a new LLM judge whose factory forgot ``base_url`` fails here)."""
    from halluscope.judges import JUDGE_KINDS
    from halluscope.runs.setup import takes_endpoint

    asks_an_llm = {
        "claims": {"llm", "vlm"},
        "entailment": {"llm"},
        "answers": {"llm"},
        "visual-entailment": {"vlm"},
        "hqh": {"hqh-llm", "vlm"},
        "mmhal": {"mmhal-llm"},
        "gavie": {"gavie-llm"},
    }
    assert set(JUDGE_KINDS) == set(asks_an_llm)
    for kind, registry in JUDGE_KINDS.items():
        assert {name for name in registry.names() if takes_endpoint(registry, name)} == asks_an_llm[kind], kind


def test_a_run_directory_written_before_the_judge_slot_still_resumes(tmp_path: Path) -> None:
    """Earlier versions kept HallusionBench's grader in the benchmark's spec (``benchmark.judge``) and wrote
    ``judge: null``; such a run directory resumes (nothing scored again) instead of being refused."""
    answers, out = answers_file(tmp_path), tmp_path / "run"
    assert hallusion_run(answers, out).exit_code == 0
    spec = json.loads((out / "spec.json").read_text())
    old = {**spec, "benchmark": {**spec["benchmark"], "judge": spec["judge"]}, "judge": None}
    old.pop("run")
    (out / "spec.json").write_text(json.dumps(old))
    before = (out / "samples.jsonl").read_text()

    again = hallusion_run(answers, out)
    assert again.exit_code == 0, said(again)
    assert (out / "samples.jsonl").read_text() == before
    assert json.loads((out / "spec.json").read_text())["judge"] == {"judge": "parser"}

    # Another grader than the stored one is still another run.
    (out / "spec.json").write_text(json.dumps(old))
    other = hallusion_run(answers, out, "--judge", "vlmevalkit")
    assert other.exit_code == 2 and "holds a run with another judge" in said(other)


def test_a_judge_of_another_benchmark_is_refused_before_anything_is_asked(tmp_path: Path) -> None:
    """Each benchmark's slot offers its own judges: HQH's judge on HallusionBench (or Tri-HE's on HQH) is
    refused at set-up, naming the benchmark it belongs to and the judges this one takes."""
    answers = answers_file(tmp_path)
    result = hallusion_run(answers, tmp_path / "run", "--judge", "hqh-rules")
    assert result.exit_code == 2
    assert ("--judge hqh-rules: judge 'hqh-rules' belongs to --benchmark hqh; the hallusionbench benchmark takes "
            "llm, parser, vlmevalkit") in said(result)
    assert not (tmp_path / "run").exists()
    unknown = hallusion_run(answers, tmp_path / "run", "--judge", "nonsense")
    assert unknown.exit_code == 2 and "--judge nonsense: unknown; the hallusionbench benchmark takes" in said(unknown)

    import halluscope
    from halluscope.api import EvaluationError

    with pytest.raises(EvaluationError, match="judge='typed': judge 'typed' belongs to --benchmark tri-he"):
        halluscope.evaluate("hallusionbench", data=HALLUSIONBENCH_EXCERPT, responses=answers, judge="typed",
                            bench_options={"categories": "VS"}, limit=4, out=tmp_path / "api", cache=False)
