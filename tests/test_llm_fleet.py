"""Several endpoints behind one ChatClient: balancing by requests in flight, failover with a cool-down, a bounded
retry budget, fatal errors still fatal, and cache keys that do not depend on the endpoint that answered.

Two scripted servers on loopback stand in for replicas; the real two-llama.cpp test is in
``test_llm_fleet_real_server.py``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from halluscope.cache import Cache, content_key
from halluscope.cli.main import app
from halluscope.llm.client import (
    CACHE_NAMESPACE,
    ChatClient,
    LLMAuthError,
    LLMRetriesExhaustedError,
    resolve_base_urls,
)
from halluscope.runs.respond import RESPOND_META_FILE, RESPONSES_FILE
from tests.layouts import tri_he_layout
from tests.scripted_server import Reply, ScriptedServer, completion, error

MESSAGES = [{"role": "user", "content": "Is there a cat?"}]


def _echo(delay_s: float = 0.0) -> Any:
    def respond(body: Any) -> Reply:
        return completion(f"answer: {body['messages'][-1]['content']}", delay_s=delay_s)

    return respond


def _ask(i: int) -> list[dict[str, Any]]:
    return [{"role": "user", "content": f"question {i}"}]


def test_urls_from_repeated_values_comma_lists_and_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_base_urls(["http://a/v1/", "http://b/v1,http://a/v1"]) == ["http://a/v1", "http://b/v1"]
    monkeypatch.setenv("HALLUSCOPE_BASE_URL", "http://a/v1, http://b/v1/")
    client = ChatClient("m")
    assert client.base_urls == ["http://a/v1", "http://b/v1"]
    assert client.identity() == {"model": "m", "base_url": ["http://a/v1", "http://b/v1"]}
    assert "http://b/v1" in repr(client)


def test_a_single_url_keeps_todays_cache_key(tmp_path: Path) -> None:
    """A cache written before fleets existed is still hit: the single-endpoint key material is unchanged."""
    client = ChatClient("m", "http://127.0.0.1:9/v1/", cache=Cache(tmp_path / "c.sqlite"), max_retries=0)
    assert client.identity() == {"model": "m", "base_url": "http://127.0.0.1:9/v1"}
    params = {"temperature": 0.0, "max_tokens": 512, "stream": False}
    old_key = content_key({"model": "m", "base_url": "http://127.0.0.1:9/v1"}, MESSAGES, params)
    assert client.cache is not None
    client.cache.put(CACHE_NAMESPACE, old_key, {"text": "from the old cache", "latency_s": 1.0})
    # Nothing listens on port 9: only a cache hit can answer.
    result = asyncio.run(client.chat(MESSAGES))
    assert result.cached and result.text == "from the old cache"
    assert client.requests_sent == 0


async def test_the_cache_key_does_not_depend_on_the_endpoint_that_answered(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "c.sqlite")
    with ScriptedServer(responder=_echo()) as a, ScriptedServer(responder=_echo()) as b:
        async with ChatClient("m", [a.base_url, b.base_url], cache=cache, concurrency=1) as first:
            answers = [await first.chat(_ask(i)) for i in range(4)]
        assert len(a.chat_requests()) == 2 and len(b.chat_requests()) == 2
        # The same replicas given in the other order find every answer, whichever replica gave it.
        async with ChatClient("m", f"{b.base_url},{a.base_url}", cache=cache) as again:
            replayed = [await again.chat(_ask(i)) for i in range(4)]
            assert again.requests_sent == 0
    assert [r.text for r in replayed] == [r.text for r in answers]
    assert all(r.cached for r in replayed)


async def test_requests_go_to_the_endpoint_with_the_fewest_in_flight() -> None:
    with ScriptedServer(responder=_echo(0.2)) as a, ScriptedServer(responder=_echo(0.2)) as b:
        async with ChatClient("m", [a.base_url, b.base_url], concurrency=4) as client:
            results = await asyncio.gather(*(client.chat(_ask(i)) for i in range(8)))
            by_endpoint = client.requests_by_endpoint()
    assert [r.text for r in results] == [f"answer: question {i}" for i in range(8)]
    assert by_endpoint == {a.base_url: 4, b.base_url: 4}
    # Four slots over two replicas: each had two requests at a time, never four.
    assert a.max_in_flight == 2 and b.max_in_flight == 2


@pytest.mark.parametrize("failure", ["503", "stopped"])
async def test_a_failing_endpoint_is_taken_out_and_its_requests_go_elsewhere(failure: str) -> None:
    bad = ScriptedServer(responder=lambda body: error(503, "overloaded")).start()
    bad_url = bad.base_url
    if failure == "stopped":
        bad.stop()  # nothing listens there any more: connections are refused
    try:
        with ScriptedServer(responder=_echo(0.05)) as good:
            async with ChatClient(
                "m", [bad_url, good.base_url], concurrency=2, max_retries=2, backoff_s=0.01, cooldown_s=60
            ) as client:
                results = await asyncio.gather(*(client.chat(_ask(i)) for i in range(10)))
                sent_to_bad = client.requests_by_endpoint()[bad_url]
            assert len(good.chat_requests()) == 10
    finally:
        if failure == "503":
            bad.stop()
    assert [r.text for r in results] == [f"answer: question {i}" for i in range(10)]
    # Only the requests already on their way when the first failure came back went to the bad endpoint.
    assert 1 <= sent_to_bad <= 2
    if failure == "503":
        assert len(bad.chat_requests()) == sent_to_bad


async def test_an_endpoint_comes_back_after_its_cool_down() -> None:
    replies = iter([error(503, "restarting")])

    def flaky(body: Any) -> Reply:
        return next(replies, None) or completion("back")

    with ScriptedServer(responder=flaky) as a, ScriptedServer(responder=_echo()) as b:
        async with ChatClient("m", [a.base_url, b.base_url], concurrency=1, cooldown_s=0.3) as client:
            await client.chat(_ask(0))  # a: 503, retried on b at once
            assert client.requests_by_endpoint() == {a.base_url: 1, b.base_url: 1}
            await client.chat(_ask(1))  # a is out: b again
            assert client.requests_by_endpoint() == {a.base_url: 1, b.base_url: 2}
            await asyncio.sleep(0.35)
            result = await client.chat(_ask(2))  # a is back and has sent the fewest
    assert result.text == "back"
    assert len(a.chat_requests()) == 2


async def test_the_retry_budget_is_shared_by_all_endpoints() -> None:
    with (
        ScriptedServer(responder=lambda body: error(503, "down a")) as a,
        ScriptedServer(responder=lambda body: error(502, "down b")) as b,
    ):
        async with ChatClient(
            "m", [a.base_url, b.base_url], concurrency=1, max_retries=3, backoff_s=0.01
        ) as client:
            with pytest.raises(LLMRetriesExhaustedError) as raised:
                await client.chat(MESSAGES)
        total = len(a.chat_requests()) + len(b.chat_requests())
    assert total == 4  # the first attempt and three retries, not 4 per endpoint
    assert "2 endpoints" in str(raised.value) and "after 4 attempts" in str(raised.value)


async def test_an_auth_error_still_fails_at_once() -> None:
    with (
        ScriptedServer(responder=lambda body: error(401, "bad key")) as a,
        ScriptedServer(responder=_echo()) as b,
    ):
        async with ChatClient("m", [a.base_url, b.base_url], concurrency=1) as client:
            with pytest.raises(LLMAuthError):
                await client.chat(MESSAGES)
        assert len(a.chat_requests()) == 1 and not b.chat_requests()


def test_respond_takes_base_url_more_than_once_and_records_the_list(tmp_path: Path) -> None:
    with ScriptedServer(responder=_echo()) as a, ScriptedServer(responder=_echo()) as b:
        out = tmp_path / "out"
        result = CliRunner().invoke(app, [
            "respond", "-b", "tri-he", "--data", str(tri_he_layout()), "--limit", "4",
            "-m", "openai/vlm?text_only=true", "--base-url", a.base_url, "--base-url", b.base_url,
            "--concurrency", "1", "--out", str(out), "--no-cache", "-q",
        ])  # fmt: skip
        assert result.exit_code == 0, result.output
        assert len(a.chat_requests()) == 2 and len(b.chat_requests()) == 2
    rows = [json.loads(line) for line in (out / RESPONSES_FILE).read_text().splitlines()]
    assert len({r["id"] for r in rows}) == 4
    meta = (out / RESPOND_META_FILE).read_text()
    assert a.base_url in meta and b.base_url in meta
