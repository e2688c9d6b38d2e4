"""hqh-llm against a scripted OpenAI-compatible server: prompts, strict parsing, retries, timeouts, garbage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from halluscope.cli.main import app
from halluscope.judges.hqh import (
    HQHItem,
    HQHJudgement,
    HQHLLMJudge,
    parse_batched_reply,
    parse_per_answer_reply,
)
from halluscope.llm.client import LLMAuthError
from halluscope.scene.graph import SceneGraph
from halluscope.stages import Failure
from tests.paths import HQH_DIR
from tests.scripted_server import Reply, ScriptedServer, completion, error

GOOD = "Evidence: the regions show two dogs.\nVerdict: incorrect\nContradicting claims: 1"


def user_text(body: Any) -> str:
    return str(body["messages"][-1]["content"])


@pytest.fixture
def scene() -> SceneGraph:
    graph = SceneGraph("42")
    graph.caption = "Two dogs on the grass."
    graph.add_region("a brown dog running", (10, 20, 30, 30))
    graph.add_region("green grass", (0, 0, 100, 100))
    return graph


def item(scene: SceneGraph, answer: str, kind: str = "count", sample_id: str = "1") -> HQHItem:
    return HQHItem(sample_id, kind, "How many dogs are there?", "Two.", answer, scene)


def fast(judge: HQHLLMJudge) -> HQHLLMJudge:
    judge.client.max_retries, judge.client.backoff_s = 1, 0.01
    return judge


def test_per_answer_replies_are_parsed_strictly() -> None:
    ok = parse_per_answer_reply("**Verdict:** Correct\nContradicting claims: 0\nEvidence: matches.")
    assert (ok.hallucinated, ok.extra_claims, ok.evidence) == (False, 0, ["matches."])
    bad = parse_per_answer_reply(GOOD)
    assert (bad.hallucinated, bad.extra_claims) == (True, 1)
    for reply in (
        "The answer looks right to me.",
        "Verdict: correct\nVerdict: incorrect\nContradicting claims: 0",
        "Verdict: correct",  # no count
        "Verdict: probably correct\nContradicting claims: 0",
        "Verdict: correct\nContradicting claims: some",
    ):
        judgement = parse_per_answer_reply(reply)
        assert judgement.hallucinated is None and judgement.unjudged_reason, reply


def test_batched_replies_are_parsed_strictly() -> None:
    reply = json.dumps(
        {
            "grades": [
                {"index": 0, "verdict": "correct", "contradicting_claims": 0, "evidence": "ok"},
                {"index": 1, "verdict": "maybe", "contradicting_claims": 0},
                {"index": 2, "verdict": "incorrect", "contradicting_claims": -1},
            ]
        }
    )
    first, second, third, fourth = parse_batched_reply("```json\n" + reply + "\n```", 4)
    assert (first.hallucinated, first.extra_claims) == (False, 0)
    assert second.hallucinated is None and "maybe" in (second.unjudged_reason or "")
    assert third.hallucinated is None
    assert fourth.hallucinated is None and "no grade for answer 3" in (fourth.unjudged_reason or "")
    assert all(j.hallucinated is None for j in parse_batched_reply('{"verdicts": []}', 2))
    assert all(j.hallucinated is None for j in parse_batched_reply("I think all are fine", 2))


async def test_per_answer_prompt_carries_facts_reference_and_answer(
    scripted_server: ScriptedServer, scene: SceneGraph
) -> None:
    scripted_server.push(completion(GOOD), completion(GOOD))
    judge = HQHLLMJudge(model="m", base_url=scripted_server.base_url, concurrency=1)
    results = await judge.grade_many(
        [item(scene, "Three dogs."), HQHItem("2", "existence", "List the main instances.", "dogs", "a cat", scene)]
    )
    await judge.aclose()
    assert all(isinstance(r, HQHJudgement) and r.hallucinated for r in results)
    count_prompt, existence_prompt = (user_text(r.body) for r in scripted_server.chat_requests())
    assert "Caption: Two dogs on the grass." in count_prompt
    assert "- a brown dog running (x=10, y=20, width=30)" in count_prompt and "Height" not in count_prompt
    assert "Reference answer: Two." in count_prompt
    assert count_prompt.rstrip().endswith("Contradicting claims: <a whole number>")
    assert "Model's answer: Three dogs." in count_prompt
    assert "Reference answer" not in existence_prompt  # as in the paper: the image details decide
    assert judge.stats.calls == 2 and judge.stats.prompt_tokens == 20


async def test_batched_mode_judges_answers_about_one_image_in_one_call(
    scripted_server: ScriptedServer, scene: SceneGraph
) -> None:
    other = SceneGraph("43")
    other.add_region("a red bus", (1, 2, 3, 3))
    reply = {
        "grades": [
            {"index": 0, "verdict": "correct", "contradicting_claims": 0, "evidence": "two dogs"},
            {"index": 1, "verdict": "incorrect", "contradicting_claims": 2, "evidence": "not three"},
        ]
    }
    scripted_server.push(completion(json.dumps(reply)), completion("no json here"))
    judge = HQHLLMJudge(model="m", base_url=scripted_server.base_url, mode="batched", concurrency=1)
    results = await judge.grade_many(
        [item(scene, "Two."), item(other, "A bus.", sample_id="9"), item(scene, "Three.", sample_id="1")]
    )
    await judge.aclose()
    requests = scripted_server.chat_requests()
    assert len(requests) == 2
    assert requests[0].body["response_format"] == {"type": "json_object"}
    assert "Answer 1:" in user_text(requests[0].body) and "Model's answer: Three." in user_text(requests[0].body)
    first, bus, third = results
    assert isinstance(first, HQHJudgement) and first.hallucinated is False
    assert isinstance(third, HQHJudgement) and (third.hallucinated, third.extra_claims) == (True, 2)
    assert isinstance(bus, Failure) and "not JSON" in bus.reason and "could not be read" in bus.reason


async def test_retries_then_failures_stay_with_their_answer(
    scripted_server: ScriptedServer, scene: SceneGraph
) -> None:
    def respond(body: Any) -> Reply:
        text = user_text(body)
        if "rate limited" in text:
            return error(429, "slow down", headers={"Retry-After": "0"})
        if "server down" in text:
            return error(503, "overloaded")
        if "slow" in text:
            return completion(GOOD, delay_s=1.0)
        if "garbage" in text:
            return Reply(200, "<html>proxy login page</html>")
        if "wrong format" in text:
            return Reply(200, {"choices": [{"text": "Verdict: correct"}]})
        return completion("Sure! The answer is fine.")

    scripted_server.responder = respond
    judge = fast(HQHLLMJudge(model="m", base_url=scripted_server.base_url, timeout_s=0.2, concurrency=2))
    answers = ["rate limited", "server down", "slow", "garbage", "wrong format", "chatty"]
    results = await judge.grade_many([item(scene, a, sample_id=str(i)) for i, a in enumerate(answers)])
    await judge.aclose()
    limited, down, slow, garbage, wrong, chatty = results
    assert isinstance(limited, Failure) and "429" in limited.reason and "2 attempts" in limited.reason
    assert isinstance(down, Failure) and "503" in down.reason
    assert isinstance(slow, Failure) and "within 0.2 s" in slow.reason
    assert isinstance(garbage, Failure) and isinstance(wrong, Failure)
    assert isinstance(chatty, Failure) and "no verdict line" in chatty.reason  # out of form: never a guess
    assert judge.client.requests_sent == 2 + 2 + 2 + 1 + 1 + 1  # bounded: never retry-forever


async def test_auth_failure_stops(scripted_server: ScriptedServer, scene: SceneGraph) -> None:
    scripted_server.responder = lambda body: error(401, "invalid key")
    judge = HQHLLMJudge(model="m", base_url=scripted_server.base_url)
    with pytest.raises(LLMAuthError, match="HTTP 401"):
        await judge.grade_many([item(scene, "Two.")])
    await judge.aclose()


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="unknown option"):
        HQHLLMJudge(model="m", base_url="http://127.0.0.1:9/v1", temperature=1)
    with pytest.raises(ValueError, match="mode must be one of"):
        HQHLLMJudge(model="m", base_url="http://127.0.0.1:9/v1", mode="all")


@pytest.mark.full_data
def test_cli_run_with_hqh_llm_records_failures_and_resumes(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    """A judge call that keeps failing (HTTP 500) on one answer: that item is a failure, the rest is scored,
    and a re-run redoes only it."""
    answers = tmp_path / "answers.json"
    items = json.loads((HQH_DIR / "HQH.json").read_text())
    from halluscope.benchmarks.hqh import HQH

    usable = [s.id for s in HQH(HQH_DIR, types=["OCR"]).samples() if not s.metadata.get("problem")][:3]
    chosen = [dict(x, answer=f"answer {i}") for i, x in enumerate(x for x in items if str(x["id"]) in usable)]
    answers.write_text(json.dumps(chosen))
    state = {"failing": True}

    def respond(body: Any) -> Reply:
        if "answer 1" in user_text(body) and state["failing"]:
            return error(500, "boom")
        return completion("Evidence: differs.\nVerdict: incorrect\nContradicting claims: 0")

    scripted_server.responder = respond
    out = tmp_path / "run"
    args = ["run", "-b", "hqh", "--data", str(HQH_DIR), "--bench-opt", "types=OCR", "--limit", "40",
            "-r", str(answers), "--judge", "hqh-llm", "--judge-model", "m", "--base-url", scripted_server.base_url,
            "--judge-opt", "timeout_s=5", "--out", str(out), "--no-cache", "-q"]  # fmt: skip
    first = CliRunner().invoke(app, args, terminal_width=300)
    # One judge failure in three judged answers is over the default share: the run says so (exit 1).
    assert first.exit_code == 1, first.output
    assert "the judge failed on 1 of 3 samples" in " ".join(first.output.split())
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["counts"]["judged"] == 2 and metrics["metrics"]["ocr"] == 100.0
    records = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    failed = [r for r in records if r["response"] == "answer 1"]
    assert failed and "judge call failed" in failed[0]["failure"]
    state["failing"] = False
    second = CliRunner().invoke(app, args)
    assert second.exit_code == 0, second.output
    assert json.loads((out / "metrics.json").read_text())["counts"]["judged"] == 3


@pytest.mark.full_data
def test_evaluate_with_an_unreachable_hqh_llm_judge_raises(tmp_path: Path) -> None:
    """Every judge call fails: the run does not return a result of empty metrics, it fails naming the cause."""
    import socket

    from halluscope.api import EvaluationError, evaluate
    from halluscope.benchmarks.hqh import HQH

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    items = json.loads((HQH_DIR / "HQH.json").read_text())
    usable = [s.id for s in HQH(HQH_DIR, types=["OCR"]).samples() if not s.metadata.get("problem")][:3]
    chosen = [x for x in items if str(x["id"]) in usable]
    answers = [{"id": str(x["id"]), "response": f"answer {i}"} for i, x in enumerate(chosen)]
    with pytest.raises(EvaluationError, match=r"the judge failed on 3 of 3 samples .*could not reach"):
        evaluate(
            "hqh", data=HQH_DIR, responses=answers, judge="hqh-llm", out=tmp_path / "run", cache=False,
            bench_options={"types": "OCR"}, only_answered=True,
            judge_options={"model": "m", "base_url": f"http://127.0.0.1:{port}/v1"},
        )  # fmt: skip
    records = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert [r["failed_stage"] for r in records] == ["judge"] * 3
