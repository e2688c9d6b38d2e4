"""Nothing fails silently: a dead judge endpoint, a bad request and a corrupt run log are all noticed.

Issue 15, A1 and A2. Each test runs the real ``halluscope run`` command (in process) on real Tri-HE data.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from halluscope.benchmarks.tri_he import TriHE, ground_truth_responses
from halluscope.cache import Cache
from halluscope.responses import write_responses
from halluscope.runs.runner import run_benchmark
from halluscope.stages import Extractor, Failure, ScoringContext
from halluscope.types import Claim
from tests.layouts import tri_he_layout
from tests.scripted_server import Reply, ScriptedServer, completion, error

N = 3


def dead_port() -> int:
    """A loopback port nothing listens on (bound once to pick it, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def responses_file(tmp_path: Path, *, with_claims: bool = True) -> Path:
    bench = TriHE(tri_he_layout(), limit=N)
    return write_responses(tmp_path / "answers.jsonl", ground_truth_responses(bench, with_claims=with_claims))


def run(out: Path, responses: Path, cache: Path, *extra: str) -> Any:
    from halluscope.cli.main import app

    args = [
        "run", "-b", "tri-he", "--data", str(tri_he_layout()), "-r", str(responses), "--limit", str(N),
        "--out", str(out), "--cache", str(cache), "--quiet", *extra,
    ]  # fmt: skip
    return CliRunner().invoke(app, args, terminal_width=200)


def records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]


def test_a_dead_judge_endpoint_fails_the_run_and_the_rerun_retries(tmp_path: Path) -> None:
    port = dead_port()
    responses = responses_file(tmp_path)
    out, cache = tmp_path / "run", tmp_path / "cache.sqlite"
    judge = ["--judge", "llm", "--judge-model", "m", "--base-url", f"http://127.0.0.1:{port}/v1"]
    judge += ["--judge-opt", "max_retries=0"]

    first = run(out, responses, cache, *judge)
    assert first.exit_code == 1, first.output
    message = " ".join(first.output.split())
    assert f"the judge failed on {N} of {N} samples" in message
    assert "could not reach" in message and str(port) in message  # the last error, with its cause
    logged = records(out)
    assert all(r["failed_stage"] == "judge" and "judge failed" in r["failure"] for r in logged)
    assert all(c["verdict"] == "unjudged" for r in logged for c in r["claims"])
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["counts"]["stage_failures"] == N and metrics["metrics"]["hallu_q"] is None

    # The same endpoint comes up: the same command sends the judge's requests again and finishes green.
    with ScriptedServer(responder=lambda body: completion("Verdict: supported"), port=port) as server:
        second = run(out, responses, cache, *judge)
    assert second.exit_code == 0, second.output
    claims = sum(len(r["claims"]) for r in records(out))
    assert claims > 0 and len(server.chat_requests()) == claims
    assert all(r["failure"] is None for r in records(out))
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["metrics"]["hallu_q"] == 0.0 and metrics["counts"]["stage_failures"] == 0


def test_a_few_judge_failures_are_allowed_up_to_the_stated_share(tmp_path: Path) -> None:
    bench = TriHE(tri_he_layout(), limit=N)
    answers = ground_truth_responses(bench, with_claims=True)
    # One answer of three carries a claim whose every judge call fails.
    answers[0] = answers[0].model_copy(update={"claims": [Claim.of(("zebra", "on", "moon"))]})
    responses = write_responses(tmp_path / "answers.jsonl", answers)
    out, cache = tmp_path / "run", tmp_path / "cache.sqlite"

    def flaky(body: Any) -> Reply:
        failing = '"zebra"' in str(body["messages"][-1]["content"])
        return error(503, "overloaded") if failing else completion("Verdict: supported")

    with ScriptedServer(responder=flaky) as server:
        judge = ["--judge", "llm", "--judge-model", "m", "--base-url", server.base_url]
        judge += ["--judge-opt", "max_retries=0"]
        strict = run(out, responses, cache, *judge)
        said = " ".join(strict.output.split())
        assert strict.exit_code == 1 and f"the judge failed on 1 of {N} samples" in said
        assert "more than the allowed 10%" in said and "HTTP 503" in said
        assert [r["failed_stage"] for r in records(out)] == ["judge", None, None]
        sent = len(server.chat_requests())
        lenient = run(out, responses, cache, *judge, "--max-failure-share", "0.5")
        assert len(server.chat_requests()) == sent + 1  # only the failed claim is asked again
    assert lenient.exit_code == 0, lenient.output
    assert [r["failed_stage"] for r in records(out)] == [None, None, "judge"]  # retried, failed again


def test_a_bad_request_stops_the_run(tmp_path: Path) -> None:
    responses = responses_file(tmp_path)
    out = tmp_path / "run"
    with ScriptedServer(responder=lambda body: error(404, "model 'gpt-9' not found")) as server:
        result = run(
            out, responses, tmp_path / "cache.sqlite",
            "--judge", "llm", "--judge-model", "gpt-9", "--base-url", server.base_url,
        )  # fmt: skip
    said = " ".join(result.output.split())
    assert result.exit_code == 2
    assert "LLMBadRequestError" in said and "model 'gpt-9' not found" in said
    assert not (out / "metrics.json").exists()


class DownExtractor(Extractor):
    """An extractor whose backend is down: every answer fails."""

    name = "down"

    async def extract_many(self, texts: Any) -> list[list[Claim] | Failure]:
        return [Failure("extractor backend unreachable") for _ in texts]


def test_an_extractor_failure_marks_the_record_failed_and_is_retried(tmp_path: Path) -> None:
    bench = TriHE(tri_he_layout(), limit=N)
    answers = {r.id: r for r in ground_truth_responses(bench)}
    ctx = ScoringContext(cache=Cache(None), extractor=DownExtractor())
    from halluscope.runs.runner import StageFailureError

    try:
        run_benchmark(bench, answers, ctx, tmp_path / "run", show_progress=False)
    except StageFailureError as failure:
        assert failure.stage == "extractor" and failure.failed == N
        assert "extractor backend unreachable" in str(failure)
    else:
        raise AssertionError("a run whose extractor failed on every sample must not pass")
    logged = records(tmp_path / "run")
    assert [r["failed_stage"] for r in logged] == ["extractor"] * N


def judge_by_claim(body: Any) -> Reply:
    """A deterministic LLM judge: claims whose text has an even length are supported, the others not."""
    claim = str(body["messages"][-1]["content"]).rsplit("Claim:", 1)[-1].strip()
    if len(claim) % 2 == 0:
        return completion("Verdict: supported")
    return completion("Verdict: unsupported\nUnsupported part: relation")


def test_corrupt_log_lines_are_counted_reported_and_redone(tmp_path: Path) -> None:
    responses = responses_file(tmp_path)
    out = tmp_path / "run"
    with ScriptedServer(responder=judge_by_claim) as server:
        judge = ["--judge", "llm", "--judge-model", "m", "--base-url", server.base_url]
        first = run(out, responses, tmp_path / "cache.sqlite", *judge)
        assert first.exit_code == 0, first.output
        full = json.loads((out / "metrics.json").read_text())
        assert 0 < full["metrics"]["hallu_q"] < 100

        lines = (out / "samples.jsonl").read_text().splitlines()
        damaged_id = json.loads(lines[1])["id"]
        lines[0] = lines[0][: len(lines[0]) // 2]  # cut in the middle: not JSON any more
        lines[1] = json.dumps({**json.loads(lines[1]), "claims": "garbled"})  # JSON, but not a record
        (out / "samples.jsonl").write_text("\n".join(lines) + "\n")

        # A fresh cache: redoing the two samples must really judge them again.
        second = run(out, responses, tmp_path / "cache2.sqlite", *judge)
        redone = {json.loads(line)["id"] for line in (out / "samples.jsonl").read_text().splitlines()[-2:]}
    assert second.exit_code == 0, second.output
    said = " ".join(second.output.split())
    assert "2 corrupt line(s) in samples.jsonl" in said and "line 1:" in said
    assert f"line 2 (sample {damaged_id})" in said
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["counts"]["corrupt_log_lines"] == 2
    assert [d["line"] for d in metrics["details"]["corrupt_log_lines"]] == [1, 2]
    # Both samples were scored again: the metrics are those of the intact run.
    assert damaged_id in redone and len(records(out)) == N
    assert metrics["metrics"] == full["metrics"] and metrics["counts"]["samples"] == N


def test_a_torn_last_line_is_redone_but_not_called_corrupt(tmp_path: Path) -> None:
    responses = responses_file(tmp_path)
    out, cache = tmp_path / "run", tmp_path / "cache.sqlite"
    with ScriptedServer(responder=judge_by_claim) as server:
        judge = ["--judge", "llm", "--judge-model", "m", "--base-url", server.base_url]
        assert run(out, responses, cache, *judge).exit_code == 0
        text = (out / "samples.jsonl").read_text()
        (out / "samples.jsonl").write_text(text[:-10])  # the last write was interrupted
        again = run(out, responses, cache, *judge)
    assert again.exit_code == 0 and "corrupt line" not in again.output
    assert json.loads((out / "metrics.json").read_text())["counts"]["corrupt_log_lines"] == 0
    assert len(records(out)) == N
