"""The OpenAI-compatible LLM client shared by every LLM-backed stage, and the offline local server.

``from halluscope.llm import ChatClient`` is the async client (retries, timeouts, concurrency limit, cache);
:mod:`halluscope.llm.offline` assembles the packaged Qwen2.5 GGUF and runs a llama.cpp server on loopback.
"""

from halluscope.llm.client import (
    ChatClient,
    ChatResult,
    LLMAuthError,
    LLMBadRequestError,
    LLMConnectionError,
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
    "LLMError",
    "LLMRateLimitError",
    "LLMResponseError",
    "LLMRetriesExhaustedError",
    "LLMServerError",
    "LLMTimeoutError",
    "TokenLogprob",
]
