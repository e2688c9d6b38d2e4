"""The OpenAI-compatible client against a scripted server on loopback: retries, errors, cache, key hygiene."""

from __future__ import annotations

import asyncio
import base64
import socket
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import pytest

from halluscope.cache import Cache
from halluscope.llm.client import (
    DEFAULT_BASE_URL,
    ChatClient,
    LLMAuthError,
    LLMBadRequestError,
    LLMConnectionError,
    LLMRateLimitError,
    LLMResponseError,
    LLMRetriesExhaustedError,
    LLMServerError,
    LLMTimeoutError,
    _parse_retry_after,
)
from tests.scripted_server import Reply, ScriptedServer, completion, error

SECRET = "sk-test-0123456789SECRET"
HELLO = [{"role": "user", "content": "Say hello."}]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HALLUSCOPE_API_KEY", "OPENAI_API_KEY", "HALLUSCOPE_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def fast_client(server: ScriptedServer, **options: object) -> ChatClient:
    settings: dict[str, object] = {"backoff_s": 0.01, "max_retries": 2, "timeout_s": 5.0}
    settings.update(options)
    return ChatClient("test-model", server.base_url, **settings)  # type: ignore[arg-type]


async def test_completion_is_parsed_and_request_is_openai_shaped(scripted_server: ScriptedServer) -> None:
    logprobs = [
        {
            "token": "Hel",
            "logprob": -0.1,
            "top_logprobs": [{"token": "Hel", "logprob": -0.1}, {"token": "Hi", "logprob": -2.5}],
        },
        {"token": "lo", "logprob": -0.01, "top_logprobs": []},
    ]
    usage = {"prompt_tokens": 7, "completion_tokens": 2}
    scripted_server.push(completion("Hello", logprobs=logprobs, usage=usage))
    client = fast_client(scripted_server, api_key=SECRET)
    result = await client.chat(
        HELLO, temperature=0.3, max_tokens=20, seed=7, top_logprobs=2, json_mode=True, stop=["###"]
    )
    await client.aclose()

    assert result.text == "Hello"
    assert result.finish_reason == "stop"
    assert result.usage == {"prompt_tokens": 7, "completion_tokens": 2}
    assert result.cached is False and result.latency_s > 0
    assert result.logprobs is not None
    assert [step.token for step in result.logprobs] == ["Hel", "lo"]
    assert result.logprobs[0].top == {"Hel": -0.1, "Hi": -2.5}

    (request,) = scripted_server.chat_requests()
    assert request.path == "/v1/chat/completions"
    assert request.headers["Authorization"] == f"Bearer {SECRET}"
    body = request.body
    assert body["model"] == "test-model" and body["messages"] == HELLO
    assert body["temperature"] == 0.3 and body["max_tokens"] == 20 and body["seed"] == 7
    assert body["logprobs"] is True and body["top_logprobs"] == 2
    assert body["response_format"] == {"type": "json_object"}
    assert body["stop"] == ["###"]


async def test_timeout_is_retried_then_gives_up_naming_the_cause(scripted_server: ScriptedServer) -> None:
    scripted_server.push(*[completion("late", delay_s=1.5)] * 3)
    client = fast_client(scripted_server, timeout_s=0.2, max_retries=2)
    with pytest.raises(LLMRetriesExhaustedError) as caught:
        await client.chat(HELLO)
    await client.aclose()
    assert client.requests_sent == 3
    assert len(scripted_server.chat_requests()) == 3
    assert isinstance(caught.value.last_error, LLMTimeoutError)
    assert "3 attempts" in str(caught.value) and "within 0.2 s" in str(caught.value)


async def test_rate_limit_then_success_honours_retry_after(scripted_server: ScriptedServer) -> None:
    scripted_server.push(error(429, "slow down", headers={"Retry-After": "1"}), completion("ok"))
    client = fast_client(scripted_server)
    started = time.perf_counter()
    result = await client.chat(HELLO)
    elapsed = time.perf_counter() - started
    await client.aclose()
    assert result.text == "ok"
    assert client.requests_sent == 2
    assert elapsed >= 0.9, "the client must wait as long as Retry-After asks, not its own 10 ms backoff"


async def test_server_error_then_success(scripted_server: ScriptedServer) -> None:
    scripted_server.push(error(500, "boom"), error(503, "overloaded"), completion("fine"))
    client = fast_client(scripted_server)
    result = await client.chat(HELLO)
    await client.aclose()
    assert result.text == "fine"
    assert client.requests_sent == 3


async def test_persistent_server_error_names_the_last_status(scripted_server: ScriptedServer) -> None:
    scripted_server.push(*[error(502, "bad gateway")] * 2)
    client = fast_client(scripted_server, max_retries=1)
    with pytest.raises(LLMRetriesExhaustedError) as caught:
        await client.chat(HELLO)
    await client.aclose()
    assert isinstance(caught.value.last_error, LLMServerError)
    assert "HTTP 502" in str(caught.value) and "bad gateway" in str(caught.value)


async def test_auth_error_fails_at_once_without_leaking_the_key(scripted_server: ScriptedServer) -> None:
    # Some servers echo the key they were given; the error must still not show it.
    scripted_server.push(error(401, f"Incorrect API key provided: {SECRET}"), completion("never sent"))
    client = fast_client(scripted_server, api_key=SECRET, max_retries=4)
    with pytest.raises(LLMAuthError) as caught:
        await client.chat(HELLO)
    await client.aclose()
    assert client.requests_sent == 1
    assert len(scripted_server.chat_requests()) == 1
    message = str(caught.value)
    assert SECRET not in message
    assert "HTTP 401" in message and "HALLUSCOPE_API_KEY" in message


@pytest.mark.parametrize("status", [400, 404, 422])
async def test_bad_request_is_not_retried(scripted_server: ScriptedServer, status: int) -> None:
    scripted_server.push(error(status, "model 'nope' does not exist"), completion("never sent"))
    client = fast_client(scripted_server, max_retries=4)
    with pytest.raises(LLMBadRequestError, match="does not exist"):
        await client.chat(HELLO)
    await client.aclose()
    assert client.requests_sent == 1


@pytest.mark.parametrize(
    "body",
    ["<html><body>Gateway page</body></html>", {"object": "list", "data": []}, {"choices": []}],
    ids=["html", "other-json", "no-choices"],
)
async def test_a_200_that_is_not_a_completion_is_a_response_error(
    scripted_server: ScriptedServer, body: object
) -> None:
    scripted_server.push(Reply(200, body), completion("never sent"))
    client = fast_client(scripted_server, max_retries=4)
    with pytest.raises(LLMResponseError, match="HTTP 200"):
        await client.chat(HELLO)
    await client.aclose()
    assert client.requests_sent == 1


async def test_unreachable_endpoint_is_retried_then_reported() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again before the client connects: nothing listens there
    client = ChatClient("m", f"http://127.0.0.1:{port}/v1", max_retries=1, backoff_s=0.01)
    with pytest.raises(LLMRetriesExhaustedError) as caught:
        await client.chat(HELLO)
    await client.aclose()
    assert client.requests_sent == 2
    assert isinstance(caught.value.last_error, LLMConnectionError)
    assert f"127.0.0.1:{port}" in str(caught.value)


async def test_concurrency_limit_bounds_requests_in_flight(scripted_server: ScriptedServer) -> None:
    scripted_server.responder = lambda body: completion(body["messages"][0]["content"], delay_s=0.3)
    client = fast_client(scripted_server, concurrency=2)
    prompts = [f"prompt {i}" for i in range(6)]
    results = await asyncio.gather(*(client.chat([{"role": "user", "content": p}]) for p in prompts))
    await client.aclose()
    assert [r.text for r in results] == prompts
    assert scripted_server.max_in_flight == 2


def _image_message(data: bytes) -> list[dict[str, object]]:
    url = "data:image/png;base64," + base64.b64encode(data).decode()
    parts = [{"type": "text", "text": "What is this?"}, {"type": "image_url", "image_url": {"url": url}}]
    return [{"role": "user", "content": parts}]


async def test_cache_hit_sends_no_request(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    scripted_server.responder = lambda body: completion(f"answer {len(scripted_server.requests)}")
    cache = Cache(tmp_path / "cache.sqlite")
    client = fast_client(scripted_server, cache=cache)

    first = await client.chat(HELLO, max_tokens=30)
    again = await client.chat(HELLO, max_tokens=30)
    assert client.requests_sent == 1
    assert again.cached is True and first.cached is False
    assert again.text == first.text and again.usage == first.usage

    other = await client.chat(HELLO, max_tokens=31)  # any parameter is part of the key
    assert client.requests_sent == 2 and other.cached is False

    cat, dog = _image_message(b"cat-pixels" * 100), _image_message(b"dog-pixels" * 100)
    await client.chat(cat)
    await client.chat(dog)
    assert client.requests_sent == 4, "different image data must not share a cache entry"
    assert (await client.chat(cat)).cached is True
    assert client.requests_sent == 4

    # A new client (a re-run) on the same cache file answers from it as well.
    rerun = fast_client(scripted_server, cache=Cache(tmp_path / "cache.sqlite"))
    assert (await rerun.chat(HELLO, max_tokens=30)).cached is True
    assert rerun.requests_sent == 0
    await client.aclose()
    await rerun.aclose()


async def test_failures_are_not_cached(scripted_server: ScriptedServer) -> None:
    scripted_server.push(error(400, "bad"), completion("good"))
    client = fast_client(scripted_server, cache=Cache(None))
    with pytest.raises(LLMBadRequestError):
        await client.chat(HELLO)
    assert (await client.chat(HELLO)).text == "good"
    await client.aclose()


async def test_api_key_is_used_but_never_shown_or_stored(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HALLUSCOPE_API_KEY", SECRET)
    scripted_server.push(completion("ok"))
    cache = Cache(tmp_path / "cache.sqlite")
    client = ChatClient("m", scripted_server.base_url, cache=cache)
    await client.chat(HELLO)
    await client.chat(HELLO)  # from the cache
    await client.aclose()
    cache.close()

    assert scripted_server.chat_requests()[0].headers["Authorization"] == f"Bearer {SECRET}"
    for shown in (repr(client), str(client.identity()), repr(vars(client))):
        assert SECRET not in shown
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert stored, "the cache file should hold the cached result"
    assert SECRET.encode() not in stored


def test_endpoint_and_key_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert ChatClient("m").base_url == DEFAULT_BASE_URL
    assert ChatClient("m").has_api_key is False
    monkeypatch.setenv("OPENAI_BASE_URL", "http://openai-env/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "k-openai")
    assert ChatClient("m").base_url == "http://openai-env/v1"
    monkeypatch.setenv("HALLUSCOPE_BASE_URL", "http://halluscope-env/v1/")
    assert ChatClient("m").base_url == "http://halluscope-env/v1"
    assert ChatClient("m", "http://explicit/v1").base_url == "http://explicit/v1"
    assert ChatClient("m").identity() == {"model": "m", "base_url": "http://halluscope-env/v1"}
    assert ChatClient("m").has_api_key is True


def test_one_client_serves_successive_event_loops(scripted_server: ScriptedServer) -> None:
    """Pipelines may call ``asyncio.run`` per stage; the client must not stay bound to a closed loop."""
    scripted_server.push(completion("one"), completion("two"))
    client = fast_client(scripted_server)
    assert asyncio.run(client.chat(HELLO)).text == "one"
    assert asyncio.run(client.chat(HELLO)).text == "two"


def test_retry_after_accepts_seconds_and_http_dates() -> None:
    assert _parse_retry_after("3") == 3.0
    assert _parse_retry_after(None) is None and _parse_retry_after("soon") is None
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    wait = _parse_retry_after(later)
    assert wait is not None and 25 <= wait <= 31
    assert isinstance(LLMRateLimitError("x"), Exception)
