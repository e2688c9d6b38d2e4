"""The ``openai`` backend: any OpenAI-compatible chat endpoint (OpenAI, vLLM, SGLang, Ollama, llama.cpp).

Images go inline as base64 ``data:`` URLs (remote servers cannot read local paths), as the benchmark holds
them: the file's own bytes, unless ``max_side`` asks for smaller images or ``image_format`` for another
format (see :mod:`halluscope.models.images`).
Requests go through the shared :class:`~halluscope.llm.ChatClient`, so concurrency limits, bounded
retries and the content-addressed cache are the same as for every other LLM call in halluscope.

A reply without text (``content`` null or blank) raises :class:`~halluscope.llm.LLMEmptyReplyError`: the
sample fails in the ``model`` stage and is asked again on the next run, instead of being recorded (and cached)
as an empty answer that every metric would then skip.

Spec: ``openai/<model name>?base_url=...&api_key_env=...&max_side=...&text_only=...``.
"""

from __future__ import annotations

import math
import os
from typing import Any, ClassVar

from halluscope.cache import Cache
from halluscope.llm import ChatClient, ChatResult, LLMBadRequestError, LLMEmptyReplyError
from halluscope.models.base import ChatTurn, GenerateRequest, GenerateResult, Model, TokenStep
from halluscope.models.images import AUTO, check_image_format, image_part, sending_mode


class OpenAIModel(Model):
    """A model served behind an OpenAI-compatible ``/v1/chat/completions`` endpoint.

    ``text_only`` drops images instead of sending them: for text-only stand-in models (a local llama.cpp
    server running a plain LLM) whose servers reject image parts. Dropped images are recorded in the result's
    metadata so a run log shows that the model never saw them.
    """

    provider: ClassVar[str] = "openai"

    def __init__(
        self,
        name: str,
        *,
        client: ChatClient,
        max_side: int | None = None,
        image_format: str = AUTO,
        text_only: bool = False,
        system_prompt: str | None = None,
    ) -> None:
        self.name = name
        self.client = client
        self.max_side = max_side if max_side and max_side > 0 else None
        self.image_format = image_format.lower()
        check_image_format(self.image_format)
        self.text_only = text_only
        self.system_prompt = system_prompt
        #: Set when the server refused log-probabilities asked for only to read answer options.
        self._no_logprobs = False

    @classmethod
    def from_spec(
        cls,
        spec: str,
        *,
        cache: Cache | None = None,
        base_url: str | None = None,
        api_key_env: str | None = None,
        concurrency: int = 4,
        timeout_s: float = 120.0,
        max_retries: int = 4,
        max_side: int | None = None,
        image_format: str = AUTO,
        text_only: bool = False,
        system_prompt: str | None = None,
    ) -> OpenAIModel:
        """``spec`` is the served model's name. The key is read from ``api_key_env`` when given (an error if
        that variable is unset), else from ``HALLUSCOPE_API_KEY`` / ``OPENAI_API_KEY``; none is fine for local
        servers. Keys are never accepted in the spec itself, so they never reach logs or ``spec.json``."""
        if not spec:
            raise ValueError("openai backend needs a model name: openai/<name>")
        api_key: str | None = None
        if api_key_env:
            api_key = os.environ.get(api_key_env)
            if not api_key:
                raise ValueError(f"environment variable {api_key_env!r} (api_key_env) is not set")
        client = ChatClient(
            spec,
            base_url=base_url,
            api_key=api_key,
            concurrency=int(concurrency),
            timeout_s=float(timeout_s),
            max_retries=int(max_retries),
            cache=cache,
        )
        return cls(
            spec,
            client=client,
            max_side=int(max_side) if max_side else None,
            image_format=image_format,
            text_only=bool(text_only),
            system_prompt=system_prompt,
        )

    def identity(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            **self.client.identity(),
            **sending_mode(self.max_side, self.image_format),
            "text_only": self.text_only,
            "system_prompt": self.system_prompt,
        }

    def sees_images(self) -> bool:
        return not self.text_only  # text_only: a text stand-in model, chosen explicitly

    # -- building the request --------------------------------------------------------------------------

    def _content(self, turn: ChatTurn) -> str | list[dict[str, Any]]:
        if not turn.images or self.text_only:
            return turn.text
        parts = [image_part(p, max_side=self.max_side, image_format=self.image_format) for p in turn.images]
        parts.append({"type": "text", "text": turn.text})
        return parts

    def to_messages(self, request: GenerateRequest) -> list[dict[str, Any]]:
        """The request in OpenAI chat format (images first in a turn, then its text, as most VLMs expect)."""
        messages: list[dict[str, Any]] = []
        if self.system_prompt:
            messages.append({"role": "system", "content": self.system_prompt})
        messages.extend({"role": turn.role, "content": self._content(turn)} for turn in request.messages)
        return messages

    # -- generating ------------------------------------------------------------------------------------

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        messages = self.to_messages(request)
        top = request.top_logprobs
        implicit = request.answer_options is not None and top is None and not self._no_logprobs
        if implicit:
            top = 5  # option probabilities need the alternatives at the answering step
        try:
            result = await self._chat(request, messages, top)
        except LLMBadRequestError:
            if not implicit:
                raise
            # Some servers refuse log-probabilities; the answer matters more than its option probabilities.
            self._no_logprobs = True
            result = await self._chat(request, messages, None)
        if not has_text(result):
            raise LLMEmptyReplyError(self._no_text(result), status=200)
        return self._to_result(request, result)

    async def _chat(
        self, request: GenerateRequest, messages: list[dict[str, Any]], top: int | None
    ) -> ChatResult:
        # A reply without text is not cached: the next run asks again instead of reading "nothing" back.
        return await self.client.chat(
            messages,
            temperature=request.temperature,
            max_tokens=request.max_tokens,
            seed=request.seed,
            top_logprobs=top,
            keep=has_text,
        )

    def _no_text(self, result: ChatResult) -> str:
        """Why an empty reply is a failure, and what may cause it."""
        why = "its reply has no text (message content null or empty)"
        if result.finish_reason == "length":
            why += "; it stopped at the token limit before writing any, so raise --max-tokens"
        elif result.finish_reason and result.finish_reason != "stop":
            why += f"; finish_reason {result.finish_reason!r}"
        return f"model {self.name!r} on {self.client.endpoints_label}: {why}. Not cached; re-run to ask again"

    def _to_result(self, request: GenerateRequest, result: ChatResult) -> GenerateResult:
        steps = (
            [TokenStep(token=s.token, logprob=s.logprob, top=dict(s.top)) for s in result.logprobs]
            if result.logprobs is not None
            else None
        )
        metadata: dict[str, Any] = {}
        if result.finish_reason:
            metadata["finish_reason"] = result.finish_reason
        dropped = [p for t in request.messages for p in t.images] if self.text_only else []
        if dropped:
            metadata["images_not_sent"] = dropped
        option_probs = option_probabilities(steps, request.answer_options) if request.answer_options else None
        return GenerateResult(
            text=result.text,
            logprobs=steps if request.top_logprobs is not None else None,
            option_probs=option_probs,
            usage=dict(result.usage),
            latency_s=result.latency_s,
            cached=result.cached,
            metadata=metadata,
        )

    async def aclose(self) -> None:
        await self.client.aclose()


def has_text(result: ChatResult) -> bool:
    """Whether a reply holds an answer at all: a model that says nothing has not been measured."""
    return bool(result.text.strip())


def _norm_token(token: str) -> str:
    return token.strip().strip(".,:;!\"'()").lower()


def option_probabilities(steps: list[TokenStep] | None, options: list[str]) -> dict[str, float] | None:
    """Probabilities of the answer options at the first step whose alternatives name any of them.

    Servers return only the top-k alternatives per step, so an option outside them gets 0; tokens that
    differ only in case, spacing or punctuation ("Yes", " yes", "yes.") are summed, since each is the
    model choosing that option. None when no step mentions any option (the model answered otherwise).
    """
    if not steps:
        return None
    wanted = {_norm_token(o): o for o in options}
    for step in steps:
        candidates = dict(step.top)
        candidates.setdefault(step.token, step.logprob)
        found: dict[str, float] = {}
        for token, logprob in candidates.items():
            option = wanted.get(_norm_token(token))
            if option is not None and math.isfinite(logprob):
                found[option] = found.get(option, 0.0) + math.exp(logprob)
        if found:
            return {o: round(found.get(o, 0.0), 6) for o in options}
    return None
