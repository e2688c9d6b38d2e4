"""The LLM client's errors, in a module of their own so that code which only catches them (the CLI's run
command) does not import the client and httpx with it."""

from __future__ import annotations

__all__ = [
    "FATAL_ERRORS",
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
    "endpoint_unusable",
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


class LLMEmptyReplyError(LLMResponseError):
    """HTTP 200 and a chat completion, but without a word in it (``content`` null or blank).

    A model under test that answers nothing has not been measured: the sample fails (and is asked again on
    the next run) instead of counting as an empty answer. Not retried at once: at the same settings the
    same request mostly gets the same reply.
    """


#: Errors that stop a run instead of failing one item: the same request, or any other, would fail alike
#: (a wrong key, an unknown model name, a prompt longer than the model's context).
FATAL_ERRORS: tuple[type[LLMError], ...] = (LLMAuthError, LLMBadRequestError)


def endpoint_unusable(error: BaseException) -> LLMError | None:
    """The LLM error in ``error``'s chain when it says the endpoint itself cannot serve this model, else None.

    Such a failure would repeat for every other request, so a collector stops at once instead of failing
    sample after sample: the endpoint could not be reached after every retry, refused the key (HTTP
    401/403), does not know the model or the path (HTTP 404), or is not an http(s) URL. A request rejected
    for its own content (HTTP 400/422: one unreadable image, one prompt too long) fails that sample only,
    and so do time-outs and server errors, which may be the sample's own doing.
    """
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, LLMError):
            cause = current.last_error if isinstance(current, LLMRetriesExhaustedError) else current
            if isinstance(cause, LLMAuthError | LLMConnectionError):
                return current
            if isinstance(cause, LLMBadRequestError) and cause.status in (None, 404):
                return current
            return None
        current = current.__cause__ or current.__context__
    return None
