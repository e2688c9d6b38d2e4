"""Collecting answers: streamed to responses.jsonl, never asked twice (resume in the same directory, cache in
another), safe to kill mid-run, failures retried; the ``respond`` and ``models`` commands."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from halluscope.benchmarks import BENCHMARKS
from halluscope.cache import Cache
from halluscope.cli.main import app
from halluscope.models.openai import OpenAIModel
from halluscope.models.spec import create_model
from halluscope.runs.respond import (
    RESPOND_ERRORS_FILE,
    RESPONSES_FILE,
    RespondError,
    collect_responses,
    repair_torn_tail,
)
from halluscope.runs.selection import first_samples
from tests.layouts import tri_he_layout
from tests.paths import REPO_ROOT
from tests.scripted_server import Reply, ScriptedServer, completion, error


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _answer_by_question(body: Any) -> Reply:
    question = body["messages"][-1]["content"]
    text = question if isinstance(question, str) else question[-1]["text"]
    return completion(f"Answer to: {text}")


async def test_streams_answers_then_resumes_and_caches(tmp_path: Path) -> None:
    bench = BENCHMARKS.create("tri-he", data=tri_he_layout())
    chosen = first_samples(bench, 5)
    samples = list(chosen.samples())
    cache = Cache(tmp_path / "cache.sqlite")
    with ScriptedServer(responder=_answer_by_question) as server:
        spec = f"openai/vlm?base_url={server.base_url}&max_side=256"
        answers = await collect_responses(
            bench, create_model(spec, cache=cache), tmp_path / "a", show_progress=False, selection=chosen
        )
        assert len(server.chat_requests()) == 5
        rows = _lines(tmp_path / "a" / RESPONSES_FILE)
        assert sorted(r["id"] for r in rows) == sorted(s.id for s in samples)
        assert answers[samples[2].id].response == f"Answer to: {samples[2].prompt}"
        assert rows[0]["metadata"]["usage"]["completion_tokens"] == 5
        assert rows[0]["metadata"]["cached"] is False
        assert rows[0]["model"] == "openai/vlm"
        meta = json.loads((tmp_path / "a" / "respond.json").read_text())
        counts = {"samples": 5, "answered": 5, "answered_now": 5, "cached_now": 0, "failed": 0}
        assert meta["counts"] == counts

        # same directory: resumed, nothing asked
        again = create_model(spec, cache=Cache(None))
        assert len(await collect_responses(bench, again, tmp_path / "a", show_progress=False, selection=chosen)) == 5
        # another directory, same cache: every answer from the cache, zero requests
        third = create_model(spec, cache=cache)
        cached = await collect_responses(bench, third, tmp_path / "b", show_progress=False, selection=chosen)
        assert isinstance(third, OpenAIModel) and third.client.requests_sent == 0
        assert all(r.metadata["cached"] for r in cached.values())
        assert len(server.chat_requests()) == 5
    assert len(_lines(tmp_path / "a" / RESPONSES_FILE)) == 5  # no duplicate lines


async def test_failed_samples_are_listed_and_retried_alone(tmp_path: Path) -> None:
    bench = BENCHMARKS.create("tri-he", data=tri_he_layout())
    chosen = first_samples(bench, 4)
    samples = list(chosen.samples())
    broken = samples[1].prompt

    def flaky(body: Any) -> Reply:
        if broken in json.dumps(body):
            return error(400, "this prompt is refused")
        return _answer_by_question(body)

    with ScriptedServer(responder=flaky) as server:
        spec = f"openai/vlm?base_url={server.base_url}&text_only=true"
        answers = await collect_responses(
            bench, create_model(spec, cache=Cache(None)), tmp_path, show_progress=False, selection=chosen
        )
        assert set(answers) == {s.id for s in samples} - {samples[1].id}
        errors = _lines(tmp_path / RESPOND_ERRORS_FILE)
        assert errors[0]["id"] == samples[1].id
        assert "this prompt is refused" in errors[0]["error"]
        server.responder = _answer_by_question
        before = len(server.chat_requests())
        answers = await collect_responses(
            bench, create_model(spec, cache=Cache(None)), tmp_path, show_progress=False, selection=chosen
        )
        assert len(server.chat_requests()) - before == 1
    assert len(answers) == 4
    assert not (tmp_path / RESPOND_ERRORS_FILE).exists()


async def test_a_directory_of_another_model_is_refused(tmp_path: Path) -> None:
    bench = BENCHMARKS.create("tri-he", data=tri_he_layout())
    chosen = first_samples(bench, 1)
    with ScriptedServer(responder=_answer_by_question) as server:
        model = create_model(f"openai/model-a?base_url={server.base_url}", cache=Cache(None))
        await collect_responses(bench, model, tmp_path, show_progress=False, selection=chosen)
        other = create_model(f"openai/model-b?base_url={server.base_url}", cache=Cache(None))
        with pytest.raises(RespondError, match=r"another model \(openai/model-a there, openai/model-b now\)"):
            await collect_responses(bench, other, tmp_path, show_progress=False, selection=chosen)
        with pytest.raises(RespondError, match=r"another generation config \(max_tokens: 512 there, 7 now\)"):
            await collect_responses(bench, model, tmp_path, show_progress=False, max_tokens=7, selection=chosen)


async def test_a_torn_last_line_is_cut_and_its_sample_asked_again(tmp_path: Path) -> None:
    bench = BENCHMARKS.create("tri-he", data=tri_he_layout())
    chosen = first_samples(bench, 3)
    samples = list(chosen.samples())
    with ScriptedServer(responder=_answer_by_question) as server:
        model = create_model(f"openai/vlm?base_url={server.base_url}&text_only=true", cache=Cache(None))
        await collect_responses(bench, model, tmp_path, show_progress=False, selection=chosen.first(2))
        path = tmp_path / RESPONSES_FILE
        with path.open("a") as handle:  # what a kill in the middle of a write leaves
            handle.write(json.dumps({"id": samples[2].id, "response": "half an ans"})[:25])
        answers = await collect_responses(bench, model, tmp_path, show_progress=False, selection=chosen)
        assert len(server.chat_requests()) == 3
    ids = [r["id"] for r in _lines(path)]
    # The first two answers arrive concurrently, in either order; the torn third is asked again, once.
    assert sorted(ids[:2]) == sorted(s.id for s in samples[:2])
    assert ids[2:] == [samples[2].id]
    assert answers[samples[2].id].response.startswith("Answer to:")
    assert repair_torn_tail(path) == 0


def _respond_command(out: Path, base_url: str, limit: int) -> list[str]:
    return [
        sys.executable, "-m", "halluscope.cli.main", "respond",
        "--benchmark", "tri-he", "--data", str(tri_he_layout()), "--limit", str(limit),
        "--model", f"openai/vlm?base_url={base_url}&text_only=true",
        "--out", str(out), "--no-cache", "--concurrency", "1", "--quiet",
    ]  # fmt: skip


def test_respond_killed_midway_resumes_without_duplicates(tmp_path: Path) -> None:
    limit = 8

    def slow(body: Any) -> Reply:
        reply = _answer_by_question(body)
        reply.delay_s = 0.25
        return reply

    with ScriptedServer(responder=slow) as server:
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
        process = subprocess.Popen(_respond_command(tmp_path, server.base_url, limit), env=env)
        path = tmp_path / RESPONSES_FILE
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if path.exists() and len(path.read_text().splitlines()) >= 3:
                break
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        written = len([line for line in path.read_text().splitlines() if line.endswith("}")])
        assert 3 <= written < limit, "the run was not killed midway"
        asked_before = len(server.chat_requests())

        finished = subprocess.run(_respond_command(tmp_path, server.base_url, limit), env=env, timeout=120)
        assert finished.returncode == 0
        asked_after = len(server.chat_requests()) - asked_before
    rows = _lines(path)
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)) == limit
    assert asked_after == limit - written  # only what was not yet written is asked again


def test_cli_respond_with_replay_and_models_listing(tmp_path: Path) -> None:
    bench = BENCHMARKS.create("tri-he", data=tri_he_layout())
    chosen = first_samples(bench, 3)
    answers = tmp_path / "answers.jsonl"
    rows = [{"id": s.id, "response": f"r{s.id}"} for s in chosen.samples()]
    answers.write_text("".join(json.dumps(r) + "\n" for r in rows))
    runner = CliRunner()
    out = tmp_path / "out"
    args = ["respond", "-b", "tri-he", "--data", str(tri_he_layout()), "--limit", "3",
            "-m", f"replay/{answers}", "--out", str(out), "--no-cache", "-q"]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "3 of 3 answered" in result.output
    assert [r["response"] for r in _lines(out / RESPONSES_FILE)] == [f"r{s.id}" for s in chosen.samples()]

    wrong = runner.invoke(app, [*args[:-4], "--out", str(tmp_path / "x"), "--base-url", "http://x/v1", "-q"])
    assert wrong.exit_code == 2
    assert "--base-url does not apply to model provider 'replay'" in wrong.output

    listing = runner.invoke(app, ["models", "-v"])
    assert listing.exit_code == 0
    for name in ("openai", "replay", "blind", "scene-oracle", "eyes-closed", "general-description"):
        assert name in listing.output
    assert "max_side" in listing.output


def test_respond_stops_when_the_key_is_refused_and_keeps_what_was_answered(tmp_path: Path) -> None:
    """The first answer arrives, then the endpoint refuses the key: ``respond`` stops (exit 2) naming the
    cause, the remaining questions are not sent, and the answer received is kept for the next run."""
    replies = iter([completion("A dog on a rug."), error(401, "key revoked")])
    out = tmp_path / "out"
    with ScriptedServer(responder=lambda body: next(replies)) as server:
        args = ["respond", "-b", "tri-he", "--data", str(tri_he_layout()), "--limit", "3", "--concurrency", "1",
                "-m", f"openai/vlm?base_url={server.base_url}", "--out", str(out), "--no-cache", "-q"]  # fmt: skip
        result = CliRunner().invoke(app, args, terminal_width=300)
        sent = len(server.chat_requests())
    said = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert "cannot answer" in said and "authentication failed" in said and "key revoked" in said
    assert sent == 2  # the third question was never sent
    assert [r["response"] for r in _lines(out / RESPONSES_FILE)] == ["A dog on a rug."]
    assert "LLMAuthError" in json.loads((out / "respond.json").read_text())["stopped"]
