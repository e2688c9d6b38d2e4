"""The OpenAI-compatible LLM client shared by every LLM-backed stage, and the offline local server.

``from halluscope.llm import ChatClient`` is the async client (retries, timeouts, concurrency limit, cache);
:mod:`halluscope.llm.offline` assembles the packaged Qwen2.5 GGUF and runs a llama.cpp server on loopback.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from halluscope.llm.client import (
        ChatClient,
        ChatResult,
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
        TokenLogprob,
    )

__all__ = [
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
]


def __getattr__(name: str) -> Any:
    """The client's names, imported on first use: httpx (under the client) is slow to import, and the
    commands that never call an LLM should not pay for it."""
    if name in __all__:
        from halluscope.llm import client

        return getattr(client, name)
    raise AttributeError(f"module 'halluscope.llm' has no attribute {name!r}")
