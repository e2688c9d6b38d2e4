"""The LLM client's errors, in a module of their own so that code which only catches them (the CLI's run
command) does not import the client and httpx with it."""

from __future__ import annotations

__all__ = [
    "FATAL_ERRORS",
    "LLMAuthError",
    "LLMBadRequestError",
    "LLMConnectionError",
    "LLMError",
    "LLMRateLimitError",
    "LLMResponseError",
    "LLMRetriesExhaustedError",
    "LLMServerError",
    "LLMTimeoutError",
]


class LLMError(Exception):
    """Any failure to get a chat completion. Messages name the endpoint and never contain the API key."""

    #: The HTTP status, when the failure came with one.
    status: int | None = None

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class LLMAuthError(LLMError):
    """HTTP 401/403: the key is missing, wrong, or not allowed to use this model. Never retried."""


class LLMBadRequestError(LLMError):
    """HTTP 400/404/422 and other client errors (unknown model, bad parameters, prompt too long).

    Never retried: the same request would fail the same way.
    """


class LLMTimeoutError(LLMError):
    """No complete answer within the client's timeout. Retried."""


class LLMConnectionError(LLMError):
    """The endpoint could not be reached or dropped the connection. Retried."""


class LLMRateLimitError(LLMError):
    """HTTP 429. Retried after the server's ``Retry-After`` or the backoff."""

    retry_after_s: float | None = None


class LLMServerError(LLMError):
    """HTTP 5xx. Retried."""


class LLMRetriesExhaustedError(LLMError):
    """Every attempt failed with a retryable error; ``last_error`` is the last one."""

    def __init__(self, message: str, last_error: LLMError) -> None:
        super().__init__(message, status=last_error.status)
        self.last_error = last_error


class LLMResponseError(LLMError):
    """HTTP 200, but the body is not an OpenAI chat completion (an HTML page, a proxy's error, other JSON)."""


#: Errors that stop a run instead of failing one item: the same request, or any other, would fail alike
#: (a wrong key, an unknown model name, a prompt longer than the model's context).
FATAL_ERRORS: tuple[type[LLMError], ...] = (LLMAuthError, LLMBadRequestError)
