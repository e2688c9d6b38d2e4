"""HallusionBench's correctness judge: an LLM reads question, reference answer and prediction and says
correct, incorrect or unclear — the paper's way, with halluscope's own prompt wording.

Differences from the official loop, on purpose: retries are bounded (the official loop retries forever on
any exception), and a call that still fails leaves the item *unjudged* (recorded with the reason, redone on
the next run) instead of stopping the run or being filled in. The reply is mapped exactly as the official
code maps it: "incorrect" anywhere → 0, else "correct" anywhere → 1, else "unclear" → 2. One difference: a
reply that says none of the three words (empty, cut off by the token limit, or a reasoning model's
``<think>`` block without an answer after it) is *unjudged*, not 2 — the official code would call it
unclear, which counts as correct for visual-supplement questions asked without their figure. Such a reply
is not cached, so the next run asks again. ``<think>…</think>`` blocks are removed before reading.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from halluscope.cache import Cache
from halluscope.llm.client import ChatResult, LLMAuthError, LLMBadRequestError, LLMError, stage_client

__all__ = ["CORRECT", "INCORRECT", "UNCLEAR", "HallusionJudge", "correctness_from_reply"]

INCORRECT, CORRECT, UNCLEAR = 0, 1, 2

GRADER_PROMPT = """You are grading an answer to a question about a figure, chart, table or photo.
Compare the predicted answer with the reference answer. Decide only whether the prediction agrees with the
reference on what the question asks; wording, length and extra detail do not matter.

Reply with exactly one word:
- correct: the prediction does not conflict with the reference answer;
- incorrect: the prediction conflicts with the reference answer;
- unclear: the prediction gives no clear answer to the question.

Example. Question: Is the left line longer than the right one? Reference: The two lines have the same
length. Prediction: No, they look equally long. Reply: correct

Question: {question}
Reference answer: {reference}
Predicted answer: {prediction}
Reply:"""


#: Room for the one-word reply and a reasoning model's thoughts before it: a reply cut off by the limit
#: is unjudged, so the limit must not be what decides.
REPLY_TOKENS = 1024

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


def correctness_from_reply(text: str) -> int | None:
    """The official mapping of a grader's reply to 0 (incorrect), 1 (correct) or 2 (unclear); None when
    the reply says none of them (empty, or still inside an unclosed ``<think>`` block)."""
    lowered = _THINK.sub(" ", text).lower()
    if "<think>" in lowered:  # the reasoning never ended: whatever follows is thought, not the verdict
        return None
    if "incorrect" in lowered:
        return INCORRECT
    if "correct" in lowered:
        return CORRECT
    if "unclear" in lowered:
        return UNCLEAR
    return None


def _usable(result: ChatResult) -> bool:
    """A reply worth keeping: complete (not cut off by the token limit) and naming a verdict."""
    return result.finish_reason != "length" and correctness_from_reply(result.text) is not None


@dataclass(frozen=True)
class JudgeFailure:
    reason: str


class HallusionJudge:
    """Grades predictions with an LLM on any OpenAI-compatible endpoint."""

    def __init__(
        self,
        *,
        model: str | None = None,
        base_url: str | None = None,
        api_key_env: str | None = None,
        concurrency: int = 4,
        timeout_s: float = 60.0,
        cache: Cache | None = None,
    ) -> None:
        self.client = stage_client(
            "the HallusionBench judge",
            model=model,
            base_url=base_url,
            api_key_env=api_key_env,
            concurrency=concurrency,
            timeout_s=timeout_s,
            cache=cache,
        )

    def identity(self) -> dict[str, Any]:
        return {"judge": "hallusionbench-llm", **self.client.identity()}

    async def grade_many(self, items: Sequence[tuple[str, str, str]]) -> list[int | JudgeFailure]:
        """``(question, reference, prediction)`` → 0/1/2, or a failure naming the cause.

        Auth errors and bad requests raise: every other item would fail the same way.
        """

        async def one(question: str, reference: str, prediction: str) -> int | JudgeFailure:
            prompt = GRADER_PROMPT.format(question=question, reference=reference, prediction=prediction)
            try:
                result = await self.client.chat(
                    [{"role": "user", "content": prompt}], max_tokens=REPLY_TOKENS, keep=_usable
                )
            except (LLMAuthError, LLMBadRequestError):
                raise
            except LLMError as error:
                return JudgeFailure(f"HallusionBench judge failed: {error}")
            verdict = correctness_from_reply(result.text)
            if result.finish_reason == "length" or verdict is None:
                why = "cut off at the token limit" if result.finish_reason == "length" else "no verdict in it"
                return JudgeFailure(f"HallusionBench judge reply unusable ({why}): {result.text[:120]!r}")
            return verdict

        return list(await asyncio.gather(*(one(*item) for item in items)))

    async def aclose(self) -> None:
        await self.client.aclose()
