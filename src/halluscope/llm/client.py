"""One small async client for OpenAI-compatible chat completion endpoints.

Every LLM-backed stage (claim extractors, judges, the OpenAI-compatible model backend, question builders) goes
through :class:`ChatClient`, so retries, timeouts, concurrency limits, caching and the handling of the API key
are decided once. The rules, and why:

- ``timeout_s`` is the time for one complete answer: connecting, the headers and the whole body, under
  one deadline per request (waiting for a free slot of the concurrency limit does not count). A server
  that sends its reply a byte at a time runs into it like one that sends nothing.
- Only failures that can pass by themselves are retried: rate limits (429), timeouts, dropped connections and
  server errors (5xx), with exponential backoff plus jitter, honouring ``Retry-After``. Retrying an auth error
  or a malformed request only hides the problem, so those raise at once with the server's own message.
- Retries are bounded; after the last one :class:`LLMRetriesExhaustedError` names the last cause, instead of
  looping forever (a failure mode of several official evaluation scripts).
- The API key lives only in memory: it is sent in the ``Authorization`` header and appears in no message,
  ``repr``, identity, cache key or cached row.
- With a :class:`~halluscope.cache.Cache`, results are stored by content (model, endpoint, messages with
  inline image data replaced by its hash, every sampling parameter), so re-running a job sends no request for
  what was already answered.
- A client may hold several endpoints (replicas of one model: ``--base-url`` given more than once, or a
  comma-separated ``$HALLUSCOPE_BASE_URL``). Each request goes to the endpoint with the fewest requests in
  flight; an endpoint that drops connections or answers 5xx is taken out for ``cooldown_s`` and the request
  is retried on another one, within the same retry budget. The cache key names the whole set of endpoints,
  never the one that answered, so a result is found again whichever replica produced it.
- An endpoint whose address changes from run to run (the packaged local server on a random port) is named
  in identities and cache keys by a stable name given with :func:`named_endpoint`, not by its address.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import hashlib
import json
import logging
import os
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
from pydantic import BaseModel, Field

from halluscope.cache import Cache, content_key
from halluscope.llm.errors import (
    FATAL_ERRORS,
    LLMAuthError,
    LLMBadRequestError,
    LLMConnectionError,
    LLMEmptyReplyError,
    LLMError,
    LLMRateLimitError,
    LLMResponseError,
    LLMRetriesExhaustedError,
    LLMServerError,
    LLMTimeoutError,
)
from halluscope.options import check_options
from halluscope.redact import mask_text, mask_url

__all__ = [
    "DEFAULT_BASE_URL",
    "FATAL_ERRORS",
    "ChatClient",
    "ChatResult",
    "LLMAuthError",
    "LLMBadRequestError",
    "LLMConnectionError",
    "LLMEmptyReplyError",
    "LLMError",
    "LLMRateLimitError",
    "LLMResponseError",
    "LLMRetriesExhaustedError",
    "LLMServerError",
    "LLMTimeoutError",
    "TokenLogprob",
    "check_options",
    "named_endpoint",
    "resolve_api_key",
    "resolve_base_url",
    "resolve_base_urls",
    "served_model",
    "stage_client",
]

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: Environment variables read, in order of precedence.
BASE_URL_ENV = ("HALLUSCOPE_BASE_URL", "OPENAI_BASE_URL")
API_KEY_ENV = ("HALLUSCOPE_API_KEY", "OPENAI_API_KEY")
#: The longest single wait between retries, whatever the backoff or ``Retry-After`` asks for.
MAX_WAIT_S = 60.0
#: Cache namespace of chat results.
CACHE_NAMESPACE = "chat"
#: Seconds an endpoint of a fleet stays out after a connection error or a 5xx answer.
DEFAULT_COOLDOWN_S = 30.0


# -- records ---------------------------------------------------------------------------------------------


class TokenLogprob(BaseModel):
    """One generated token, its log-probability, and the most likely alternatives at that step."""

    token: str
    logprob: float
    top: dict[str, float] = Field(default_factory=dict)


class ChatResult(BaseModel):
    """A chat completion as halluscope keeps it."""

    text: str
    logprobs: list[TokenLogprob] | None = None
    usage: dict[str, int] = Field(default_factory=dict)
    #: Seconds the request took; for a cache hit, the time the original request took.
    latency_s: float
    finish_reason: str | None = None
    #: True when the result came from the cache and no request was sent.
    cached: bool = False


# -- errors (the classes live in halluscope.llm.errors) --------------------------------------------------

_RETRYABLE = (LLMTimeoutError, LLMConnectionError, LLMRateLimitError, LLMServerError)


# -- configuration ---------------------------------------------------------------------------------------

#: Stable names of endpoints whose address is not part of what they serve (see :func:`named_endpoint`).
_ENDPOINT_NAMES: dict[str, str] = {}


@contextlib.contextmanager
def named_endpoint(url: str, name: str) -> Iterator[None]:
    """While the block runs, clients name the endpoint ``url`` as ``name`` in identities and cache keys.

    For a server started for one run on a free port (:mod:`halluscope.llm.local`): keyed by its address, its
    answers would never be found again, and a run directory could not be resumed, because the port changes.
    The name must stand for what answers (the model file), as the address does for a named endpoint.
    Requests still go to ``url``; every other endpoint keeps its address as its key.
    """
    url = url.strip().rstrip("/")
    previous = _ENDPOINT_NAMES.get(url)
    _ENDPOINT_NAMES[url] = name
    try:
        yield
    finally:
        if previous is None:
            _ENDPOINT_NAMES.pop(url, None)
        else:
            _ENDPOINT_NAMES[url] = previous



def _split_urls(value: str | Sequence[str] | None) -> list[str]:
    """Endpoints from a string (comma-separated) or a list of them, trailing slashes and repeats dropped."""
    parts = [value] if isinstance(value, str) else list(value or [])
    urls: list[str] = []
    for part in parts:
        for url in str(part).split(","):
            url = url.strip().rstrip("/")
            if url and url not in urls:
                urls.append(url)
    return urls


def resolve_base_urls(base_url: str | Sequence[str] | None = None) -> list[str]:
    """The endpoints: the argument (a URL, comma-separated URLs, or a list), else ``$HALLUSCOPE_BASE_URL``,
    else ``$OPENAI_BASE_URL`` (each may be a comma-separated list), else OpenAI's."""
    urls = _split_urls(base_url)
    if not urls:
        env = next((os.environ[n] for n in BASE_URL_ENV if os.environ.get(n)), None)
        urls = _split_urls(env) or [DEFAULT_BASE_URL]
    return urls


def resolve_base_url(base_url: str | Sequence[str] | None = None) -> str:
    """The endpoint as one string: the argument, else ``$HALLUSCOPE_BASE_URL``, else ``$OPENAI_BASE_URL``,
    else OpenAI's; several endpoints come back comma-separated."""
    return ",".join(resolve_base_urls(base_url))


def resolve_api_key(api_key: str | None = None) -> str | None:
    """The key: the argument, else ``$HALLUSCOPE_API_KEY``, else ``$OPENAI_API_KEY``, else none.

    No key is fine for local servers (llama.cpp, vLLM, Ollama) that do not check one.
    """
    if api_key:
        return api_key
    return next((os.environ[n] for n in API_KEY_ENV if os.environ.get(n)), None)


class _Secret:
    """Holds the API key so that no ``repr``, ``vars()`` dump or log line can show it."""

    __slots__ = ("_value",)

    def __init__(self, value: str | None) -> None:
        self._value = value

    def get(self) -> str | None:
        return self._value

    def __repr__(self) -> str:
        return "<hidden>" if self._value else "<none>"

    __str__ = __repr__


def _hash_inline_data(value: Any) -> Any:
    """A copy of the messages with every inline ``data:`` URL (base64 images) replaced by its SHA-256.

    Cache keys then depend on the image's content without storing megabytes of base64 in the key material.
    """
    if isinstance(value, str):
        if value.startswith("data:"):
            return "sha256:" + hashlib.sha256(value.encode("utf-8")).hexdigest()
        return value
    if isinstance(value, dict):
        return {k: _hash_inline_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_hash_inline_data(v) for v in value]
    return value


def _parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


# -- the client ------------------------------------------------------------------------------------------


@dataclass
class _Endpoint:
    """One endpoint of a client, with what the balancer needs to know about it."""

    url: str
    in_flight: int = 0
    sent: int = 0
    #: ``time.monotonic()`` until which the endpoint is out (after a connection error or a 5xx).
    down_until: float = 0.0


class ChatClient:
    """Async chat completions against one model on one or several OpenAI-compatible endpoints.

    ``base_url`` is one URL, comma-separated URLs or a list of them (replicas serving the same model).
    ``concurrency`` bounds the requests in flight from this client, over all its endpoints; ``max_retries``
    is the number of retries after the first attempt, wherever they go; ``cooldown_s`` is how long an
    endpoint that failed with a connection error or a 5xx gets no requests while others are up.
    Use ``async with ChatClient(...)`` or call :meth:`aclose` when done.
    """

    def __init__(
        self,
        model: str,
        base_url: str | Sequence[str] | None = None,
        api_key: str | None = None,
        *,
        concurrency: int = 4,
        timeout_s: float = 120.0,
        max_retries: int = 4,
        backoff_s: float = 0.5,
        cache: Cache | None = None,
        cooldown_s: float = DEFAULT_COOLDOWN_S,
    ) -> None:
        if not model:
            raise ValueError("ChatClient needs a model name")
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be 0 or more, got {max_retries}")
        if cooldown_s < 0:
            raise ValueError(f"cooldown_s must be 0 or more, got {cooldown_s}")
        self.model = model
        self.base_urls = resolve_base_urls(base_url)
        #: The first endpoint (the only one, for a single-endpoint client).
        self.base_url = self.base_urls[0]
        self._endpoints = [_Endpoint(url) for url in self.base_urls]
        self.cooldown_s = cooldown_s
        self._key = _Secret(resolve_api_key(api_key))
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.cache = cache
        #: HTTP requests actually sent (retries included, cache hits not).
        self.requests_sent = 0
        # An httpx client and a semaphore are bound to the event loop they are first used on; keep one pair
        # per loop so that a client survives being used from successive ``asyncio.run`` calls.
        self._loop: asyncio.AbstractEventLoop | None = None
        self._http: httpx.AsyncClient | None = None
        self._semaphore: asyncio.Semaphore | None = None

    # -- identity ------------------------------------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        """What determines the answers (for cache keys and ``spec.json``); never the key.

        One endpoint: ``base_url`` is its URL, exactly as before fleets existed, so existing caches stay
        valid. Several: ``base_url`` is the sorted list of them, so the key depends on the set of replicas and
        not on which one answered (nor on the order they were given in). The field keeps its name so that
        whatever treats the endpoint as an address rather than a setting (resuming a run elsewhere) still
        does. An endpoint given a stable name with :func:`named_endpoint` appears as that name.
        """
        keyed = [_ENDPOINT_NAMES.get(url, url) for url in self.base_urls]
        if len(keyed) == 1:
            return {"model": self.model, "base_url": keyed[0]}
        return {"model": self.model, "base_url": sorted(keyed)}

    @property
    def takes_grammar(self) -> bool:
        """Whether every endpoint is the packaged llama.cpp server (named ``local:...``), which reads a
        ``grammar`` field."""
        return bool(self.base_urls) and all(_ENDPOINT_NAMES.get(u, "").startswith("local:") for u in self.base_urls)

    @property
    def endpoints_label(self) -> str:
        """The endpoints for messages: the URL, or ``N endpoints (a, b, ...)``."""
        if len(self.base_urls) == 1:
            return mask_url(self.base_url)
        return f"{len(self.base_urls)} endpoints ({', '.join(map(mask_url, self.base_urls))})"

    def requests_by_endpoint(self) -> dict[str, int]:
        """HTTP requests sent to each endpoint so far."""
        return {e.url: e.sent for e in self._endpoints}

    def __repr__(self) -> str:
        shown = mask_url(self.base_url) if len(self.base_urls) == 1 else [mask_url(u) for u in self.base_urls]
        return f"ChatClient(model={self.model!r}, base_url={shown!r})"

    @property
    def has_api_key(self) -> bool:
        return self._key.get() is not None

    # -- lifecycle -----------------------------------------------------------------------------------

    def _state(self) -> tuple[httpx.AsyncClient, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        if self._http is None or self._semaphore is None or self._loop is not loop:
            # A client left over from an earlier (now closed) loop cannot be closed from this one; drop it.
            headers = {"Content-Type": "application/json"}
            key = self._key.get()
            if key:
                headers["Authorization"] = f"Bearer {key}"
            self._http = httpx.AsyncClient(
                headers=headers,
                timeout=httpx.Timeout(self.timeout_s),
                limits=httpx.Limits(
                    max_connections=self.concurrency, max_keepalive_connections=self.concurrency
                ),
            )
            self._semaphore = asyncio.Semaphore(self.concurrency)
            self._loop = loop
        return self._http, self._semaphore

    async def aclose(self) -> None:
        """Close the HTTP connections (the cache belongs to the caller and stays open)."""
        if self._http is not None:
            try:
                if self._loop is asyncio.get_running_loop():
                    await self._http.aclose()
            finally:
                self._http = None
                self._semaphore = None
                self._loop = None

    async def __aenter__(self) -> ChatClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- requests ------------------------------------------------------------------------------------

    async def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        temperature: float = 0.0,
        max_tokens: int = 512,
        seed: int | None = None,
        top_logprobs: int | None = None,
        json_mode: bool = False,
        stop: list[str] | None = None,
        grammar: str | None = None,
        keep: Callable[[ChatResult], bool] | None = None,
    ) -> ChatResult:
        """One chat completion; ``messages`` are OpenAI-format (content: a string or text/image_url parts).

        ``top_logprobs`` asks for per-token log-probabilities with that many alternatives (0: only the chosen
        token's); ``json_mode`` asks the server for a JSON object (``response_format``). ``keep`` says
        whether a reply is worth caching (a judge's reply that does not parse is not: the next run asks
        again instead of reading the same useless reply back); a cached reply it refuses is asked again.
        ``grammar`` (a llama.cpp GBNF grammar) holds the reply to the form a stage reads; it is sent only to
        the packaged llama.cpp server (:attr:`takes_grammar`), since other endpoints refuse fields they do
        not know, and a request without it is the request made before grammars existed (same cache key).
        Raises an :class:`LLMError` subclass on failure.
        """
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "stream": False,
        }
        if seed is not None:
            payload["seed"] = seed
        if top_logprobs is not None:
            payload["logprobs"] = True
            payload["top_logprobs"] = top_logprobs
        if json_mode:
            payload["response_format"] = {"type": "json_object"}
        if stop:
            payload["stop"] = list(stop)
        if grammar and self.takes_grammar:
            payload["grammar"] = grammar

        key: str | None = None
        if self.cache is not None:
            params = {k: v for k, v in payload.items() if k not in ("messages", "model")}
            key = content_key(self.identity(), _hash_inline_data(messages), params)
            hit = self.cache.get(CACHE_NAMESPACE, key)
            if hit is not None:
                try:
                    cached = ChatResult.model_validate({**hit, "cached": True})
                except ValueError:
                    log.warning("ignoring an unreadable cached chat result")
                else:
                    if keep is None or keep(cached):
                        return cached

        result = await self._with_retries(payload)
        if self.cache is not None and key is not None and (keep is None or keep(result)):
            self.cache.put(CACHE_NAMESPACE, key, result.model_dump(mode="json", exclude={"cached"}))
        return result

    async def _with_retries(self, payload: dict[str, Any]) -> ChatResult:
        attempt = 0
        while True:
            try:
                return await self._send(payload)
            except _RETRYABLE as error:
                if attempt >= self.max_retries:
                    attempts = attempt + 1
                    raise LLMRetriesExhaustedError(
                        f"gave up on {self.endpoints_label} (model {self.model!r}) after {attempts} "
                        f"attempt{'s' if attempts != 1 else ''}; last error: {error}",
                        error,
                    ) from error
                delay = min(MAX_WAIT_S, self.backoff_s * (2**attempt))
                delay *= 1.0 + random.uniform(0.0, 0.25)
                if isinstance(error, LLMRateLimitError) and error.retry_after_s is not None:
                    delay = min(MAX_WAIT_S, error.retry_after_s)
                elif isinstance(error, LLMConnectionError | LLMServerError) and self._any_up():
                    # The failing endpoint is out now; another replica can take the request at once.
                    delay = 0.0
                log.info("retrying on %s in %.2f s after: %s", self.endpoints_label, delay, error)
                await asyncio.sleep(delay)
                attempt += 1

    def _any_up(self) -> bool:
        """Whether another endpoint can take a failed request now: the failed one is cooling down and some
        other is not. False for a single endpoint, or with no cool-down (then the backoff applies)."""
        if len(self._endpoints) == 1 or self.cooldown_s == 0:
            return False
        now = time.monotonic()
        return any(e.down_until <= now for e in self._endpoints)

    def _pick(self) -> _Endpoint:
        """The endpoint for the next request: among those up, the fewest in flight (then the fewest sent);
        when all are cooling down, the one that comes back first, so a request is never refused outright."""
        now = time.monotonic()
        up = [e for e in self._endpoints if e.down_until <= now]
        if up:
            return min(up, key=lambda e: (e.in_flight, e.sent))
        return min(self._endpoints, key=lambda e: e.down_until)

    def _take_out(self, endpoint: _Endpoint, error: LLMError) -> None:
        if len(self._endpoints) == 1 or self.cooldown_s == 0:
            return
        endpoint.down_until = time.monotonic() + self.cooldown_s
        log.warning("taking %s out for %g s after: %s", mask_url(endpoint.url), self.cooldown_s, error)

    def _scrub(self, text: str) -> str:
        key = self._key.get()
        return mask_text(text.replace(key, "<api key>") if key else text)

    async def _send(self, payload: dict[str, Any]) -> ChatResult:
        http, semaphore = self._state()
        async with semaphore:
            # Chosen once a slot is free, so "in flight" counts requests really on the wire.
            endpoint = self._pick()
            url = f"{endpoint.url}/chat/completions"
            started = time.perf_counter()
            self.requests_sent += 1
            endpoint.sent += 1
            endpoint.in_flight += 1
            try:
                try:
                    # One deadline for the whole reply: connecting, the headers and every byte of the body.
                    # httpx's own timeout bounds each read only, so a server that sends a byte now and then
                    # would hold the request (and the run) for ever.
                    async with asyncio.timeout(self.timeout_s):
                        response = await http.post(url, json=payload)
                except (TimeoutError, httpx.TimeoutException) as error:
                    raise LLMTimeoutError(
                        f"no complete answer from {mask_url(url)} within {self.timeout_s:g} s (timeout_s)"
                    ) from error
                except httpx.UnsupportedProtocol as error:
                    shown = mask_url(endpoint.url)
                    raise LLMBadRequestError(f"base URL {shown!r} is not an http(s) URL") from error
                except httpx.TransportError as error:
                    detail = self._scrub(str(error)) or type(error).__name__
                    raise LLMConnectionError(f"could not reach {mask_url(url)}: {detail}") from error
                latency = time.perf_counter() - started
                return self._parse(response, mask_url(url), latency)
            except (LLMConnectionError, LLMServerError) as error:
                self._take_out(endpoint, error)
                raise
            finally:
                endpoint.in_flight -= 1

    def _server_message(self, response: httpx.Response) -> str:
        """The server's error text, shortened; OpenAI-style ``{"error": {"message": ...}}`` preferred."""
        text = response.text
        try:
            body = response.json()
        except ValueError:
            body = None
        if isinstance(body, dict):
            err = body.get("error", body.get("detail", body.get("message")))
            if isinstance(err, dict):
                err = err.get("message", err)
            if err is not None:
                text = str(err)
        text = " ".join(text.split())
        if len(text) > 300:
            text = text[:300] + "…"
        return self._scrub(text)

    def _parse(self, response: httpx.Response, url: str, latency: float) -> ChatResult:
        status = response.status_code
        if status != 200:
            where = f"HTTP {status} from {url} (model {self.model!r})"
            message = self._server_message(response)
            detail = f"{where}: {message}" if message else where
            if status in (401, 403):
                hint = (
                    "; set HALLUSCOPE_API_KEY (or OPENAI_API_KEY) to a valid key"
                    if not self.has_api_key
                    else "; check that the key (HALLUSCOPE_API_KEY/OPENAI_API_KEY) is valid for this endpoint"
                )
                raise LLMAuthError(f"authentication failed, {detail}{hint}", status=status)
            if status == 429:
                error = LLMRateLimitError(f"rate limited, {detail}", status=status)
                error.retry_after_s = _parse_retry_after(response.headers.get("retry-after"))
                raise error
            if status == 408:
                raise LLMTimeoutError(f"request timed out on the server, {detail}", status=status)
            if status >= 500:
                raise LLMServerError(f"server error, {detail}", status=status)
            raise LLMBadRequestError(f"request rejected, {detail}", status=status)

        try:
            body = response.json()
        except ValueError:
            snippet = self._scrub(" ".join(response.text.split())[:200])
            raise LLMResponseError(
                f"HTTP 200 from {url} but the body is not JSON (is the base URL an OpenAI-compatible /v1 "
                f"endpoint?): {snippet!r}",
                status=status,
            ) from None
        return self._parse_body(body, url, latency)

    def _parse_body(self, body: Any, url: str, latency: float) -> ChatResult:
        def bad(why: str) -> LLMResponseError:
            return LLMResponseError(f"HTTP 200 from {url} but not a chat completion: {why}", status=200)

        if not isinstance(body, dict):
            raise bad(f"expected a JSON object, got {type(body).__name__}")
        if "error" in body and "choices" not in body:
            raise bad(f"the server reported an error: {self._scrub(str(body['error']))[:300]}")
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise bad("no 'choices'")
        choice = choices[0]
        message = choice.get("message")
        if not isinstance(message, dict):
            raise bad("'choices[0]' has no 'message'")
        content = message.get("content")
        if content is None:
            text = ""
        elif isinstance(content, str):
            text = content
        elif isinstance(content, list):
            text = "".join(
                str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"
            )
        else:
            raise bad(f"'message.content' is a {type(content).__name__}")
        finish = choice.get("finish_reason")
        usage_raw = body.get("usage")
        usage = (
            {k: v for k, v in usage_raw.items() if isinstance(v, int) and not isinstance(v, bool)}
            if isinstance(usage_raw, dict)
            else {}
        )
        return ChatResult(
            text=text,
            logprobs=_parse_logprobs(choice.get("logprobs")),
            usage=usage,
            latency_s=latency,
            finish_reason=finish if isinstance(finish, str) else None,
        )


def _parse_logprobs(raw: Any) -> list[TokenLogprob] | None:
    """Per-token log-probabilities, in the chat format (``content: [...]``) or the legacy completions one."""
    if not isinstance(raw, dict):
        return None
    try:
        content = raw.get("content")
        if isinstance(content, list):
            steps = []
            for entry in content:
                top = {
                    str(alt["token"]): float(alt["logprob"])
                    for alt in entry.get("top_logprobs") or []
                    if isinstance(alt, dict)
                }
                steps.append(
                    TokenLogprob(token=str(entry["token"]), logprob=float(entry["logprob"]), top=top)
                )
            return steps
        tokens, token_logprobs = raw.get("tokens"), raw.get("token_logprobs")
        if isinstance(tokens, list) and isinstance(token_logprobs, list):
            tops = raw.get("top_logprobs") or [None] * len(tokens)
            return [
                TokenLogprob(
                    token=str(t),
                    logprob=float(lp),
                    top={str(k): float(v) for k, v in (top or {}).items()},
                )
                for t, lp, top in zip(tokens, token_logprobs, tops, strict=False)
                if lp is not None
            ]
    except (KeyError, TypeError, ValueError):
        log.warning("ignoring logprobs in an unexpected format")
    return None


# -- helpers for the LLM-backed stages -------------------------------------------------------------------

#: Where LLM stages read a model name when none is given as an option.
STAGE_MODEL_ENV = "HALLUSCOPE_LLM_MODEL"


def _get_json_within(url: str, headers: dict[str, str], timeout_s: float) -> Any:
    """``GET url`` as JSON, the whole reply within ``timeout_s`` (httpx's timeout bounds each read only).

    Raises ``httpx.HTTPError`` (an HTTP error status, or ``httpx.ReadTimeout`` past the deadline) or
    ``ValueError`` (not JSON).
    """
    deadline = time.monotonic() + timeout_s
    with httpx.stream("GET", url, headers=headers, timeout=timeout_s) as response:
        response.raise_for_status()
        chunks = []
        for chunk in response.iter_bytes():
            chunks.append(chunk)
            if time.monotonic() > deadline:
                raise httpx.ReadTimeout(f"no complete answer within {timeout_s:g} s", request=response.request)
    return json.loads(b"".join(chunks))


def served_model(
    base_url: str | Sequence[str] | None = None, api_key: str | None = None, *, timeout_s: float = 10.0
) -> str:
    """The one model an endpoint serves, as its ``/models`` route reports it.

    A stage that was given no model name records and sends this name, never a default of our own: a local
    server (llama.cpp, vLLM, Ollama) answers with whatever it loaded, whatever name a request carries, so a
    name we made up would end up in ``spec.json`` and in cache keys while a different model answered.
    Raises ``ValueError`` when the endpoint cannot be asked or serves no single model (OpenAI lists many).
    Of several endpoints (replicas), the first one that answers is asked.
    """
    headers = {}
    key = resolve_api_key(api_key)
    if key:
        headers["Authorization"] = f"Bearer {key}"
    hint = f"name the model (an option `model`, --judge-model / --extractor-model, or ${STAGE_MODEL_ENV})"
    urls = [f"{u}/models" for u in resolve_base_urls(base_url)]
    body: Any = None
    for index, url in enumerate(urls):
        try:
            body = _get_json_within(url, headers, timeout_s)
            break
        except (httpx.HTTPError, ValueError) as error:
            if index + 1 < len(urls):
                continue
            detail = mask_text(str(error).replace(key, "<api key>") if key else str(error))
            raise ValueError(
                f"no model named, and {mask_url(url)} could not say which model it serves ({detail}); {hint}"
            ) from None
    entries = body.get("data") if isinstance(body, dict) else None
    ids = [str(e["id"]) for e in entries or [] if isinstance(e, dict) and e.get("id")]
    if len(ids) != 1:
        listed = ", ".join(ids[:5]) + (", …" if len(ids) > 5 else "") if ids else "none"
        raise ValueError(f"no model named, and {mask_url(url)} serves {len(ids)} models ({listed}); {hint}")
    return ids[0]


def stage_client(
    component: str,
    *,
    model: str | None,
    base_url: str | Sequence[str] | None,
    api_key_env: str | None,
    concurrency: int,
    timeout_s: float,
    cache: Cache | None,
    max_retries: int = 4,
) -> ChatClient:
    """The :class:`ChatClient` of an LLM-backed stage, from the stage's options.

    ``api_key_env`` names the environment variable that holds the key (e.g. ``TOGETHER_API_KEY``), so that a
    key never has to appear in a command line or a saved run spec; it must be set when given. The model is
    the ``model`` option, else ``$HALLUSCOPE_LLM_MODEL``, else the one model the endpoint reports serving
    (:func:`served_model`); never a made-up default.
    """
    api_key: str | None = None
    if api_key_env:
        api_key = os.environ.get(api_key_env)
        if not api_key:
            raise ValueError(f"{component}: api_key_env={api_key_env!r}, but that variable is not set")
    name = model or os.environ.get(STAGE_MODEL_ENV)
    if not name:
        try:
            name = served_model(base_url, api_key)
        except ValueError as error:
            raise ValueError(f"{component}: {error}") from None
    return ChatClient(
        name,
        base_url,
        api_key,
        concurrency=concurrency,
        timeout_s=timeout_s,
        max_retries=max_retries,
        cache=cache,
    )
