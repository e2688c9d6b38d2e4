"""HallusionBench's graders: each reads a whole answer to a yes/no question and codes it as the official code
does (1 correct, 0 incorrect, 2 unclear). They fill the run's judge slot (kind "answers",
``judges.ANSWER_JUDGES``): ``--judge parser`` (default, offline), ``--judge vlmevalkit`` or ``--judge llm``.

- ``parser``: the shared yes/no parser (:func:`halluscope.judges.answers.parse_yes_no`) reads the
  prediction; agreeing with the label is 1, disagreeing 0, no readable yes/no (refusal, hedge) 2.
- ``vlmevalkit``: VLMEvalKit's exact-matching reading (no "unclear"), to reproduce its score sheet.
- ``llm``: an LLM reads question, reference answer and prediction and says correct, incorrect or unclear —
  the paper's way, with halluscope's own prompt wording.

Differences of the LLM grader from the official loop, on purpose: retries are bounded (the official loop
retries forever on any exception), and a call that still fails leaves the item *unjudged* (recorded with the
reason, redone on the next run) instead of stopping the run or being filled in. The reply is mapped exactly
as the official code maps it: "incorrect" anywhere → 0, else "correct" anywhere → 1, else "unclear" → 2. One
difference: a reply that says none of the three words (empty, cut off by the token limit, or a reasoning
model's ``<think>`` block without an answer after it) is *unjudged*, not 2 — the official code would call it
unclear, which counts as correct for visual-supplement questions asked without their figure. Such a reply
is not cached, so the next run asks again. ``<think>…</think>`` blocks are removed before reading.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from halluscope.cache import Cache
from halluscope.judges.answers import parse_yes_no
from halluscope.llm.client import ChatResult, LLMAuthError, LLMBadRequestError, LLMError
from halluscope.llm.stage import LLMStage
from halluscope.options import check_options
from halluscope.stages import AnswerJudge, Failure

__all__ = [
    "CORRECT",
    "INCORRECT",
    "UNCLEAR",
    "HallusionGrade",
    "HallusionGrader",
    "HallusionItem",
    "LLMGrader",
    "ParserGrader",
    "VLMEvalKitGrader",
    "correctness_from_reply",
]

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
class HallusionItem:
    """One answer to grade: the question as asked, the reference answer (``gt_answer_details`` or the label),
    the yes/no label and the model's answer."""

    question: str
    reference: str
    label: str
    prediction: str


@dataclass(frozen=True)
class HallusionGrade:
    """The official correctness code (1 correct, 0 incorrect, 2 unclear) and any fields the grader adds to
    the sample's record (VLMEvalKit's reading)."""

    correctness: int
    fields: dict[str, Any] = field(default_factory=dict)


class HallusionGrader(AnswerJudge[HallusionItem, HallusionGrade]):
    """A grader of HallusionBench answers: what ``-b hallusionbench`` takes in its judge slot."""

    answers_of: ClassVar[str] = "HallusionBench"
    benchmark_option: ClassVar[str] = "hallusionbench"


class ParserGrader(HallusionGrader):
    """``parser`` (default, offline): halluscope's yes/no reader against the label; no reading is unclear."""

    name: ClassVar[str] = "parser"

    def __init__(self, *, cache: Cache | None = None, **unknown: Any) -> None:
        check_options("judge 'parser' (HallusionBench)", unknown, [])

    async def grade_many(self, items: Sequence[HallusionItem]) -> list[HallusionGrade | Failure]:
        out: list[HallusionGrade | Failure] = []
        for item in items:
            reading = parse_yes_no(item.prediction, question=item.question)
            out.append(HallusionGrade(2 if reading.value is None else int(reading.value == item.label)))
        return out


class VLMEvalKitGrader(HallusionGrader):
    """``vlmevalkit`` (offline): VLMEvalKit's exact-matching reading; its rating then heads the metrics."""

    name: ClassVar[str] = "vlmevalkit"

    def __init__(self, *, cache: Cache | None = None, **unknown: Any) -> None:
        check_options("judge 'vlmevalkit' (HallusionBench)", unknown, [])

    async def grade_many(self, items: Sequence[HallusionItem]) -> list[HallusionGrade | Failure]:
        from halluscope.metrics.vlmevalkit import vlmevalkit_yes_no

        out: list[HallusionGrade | Failure] = []
        for item in items:
            reading = vlmevalkit_yes_no(item.prediction)
            out.append(HallusionGrade(int(reading.lower() == item.label), {"vlmevalkit_reading": reading}))
        return out


class LLMGrader(LLMStage, HallusionGrader):
    """``llm``: grades predictions with an LLM on any OpenAI-compatible endpoint. Options: those of every
    LLM stage (:class:`~halluscope.llm.stage.LLMStageOptions`: ``model``, ``base_url``, ``api_key_env``,
    ``concurrency``, ``timeout_s``, ``max_retries``, ``max_tokens``)."""

    name: ClassVar[str] = "llm"
    component = "the HallusionBench grader"
    option_defaults: ClassVar[Mapping[str, Any]] = {"timeout_s": 60.0, "max_tokens": REPLY_TOKENS}
    reply_tokens = REPLY_TOKENS

    def identity(self) -> dict[str, Any]:
        return {"judge": self.name, "grades": self.answers_of, **self.client.identity()}

    async def grade_many(self, items: Sequence[HallusionItem]) -> list[HallusionGrade | Failure]:
        """Auth errors and bad requests raise: every other item would fail the same way."""
        grades = await self.grade_texts([(i.question, i.reference, i.prediction) for i in items])
        return [g if isinstance(g, Failure) else HallusionGrade(g) for g in grades]

    async def grade_texts(self, items: Sequence[tuple[str, str, str]]) -> list[int | Failure]:
        """``(question, reference, prediction)`` → 0/1/2, or a failure naming the cause."""

        async def one(question: str, reference: str, prediction: str) -> int | Failure:
            prompt = GRADER_PROMPT.format(question=question, reference=reference, prediction=prediction)
            try:
                result = await self.client.chat(
                    [{"role": "user", "content": prompt}], max_tokens=self.max_tokens, keep=_usable
                )
            except (LLMAuthError, LLMBadRequestError):
                raise
            except LLMError as error:
                return Failure(f"HallusionBench judge failed: {error}")
            verdict = correctness_from_reply(result.text)
            if result.finish_reason == "length" or verdict is None:
                why = "cut off at the token limit" if result.finish_reason == "length" else "no verdict in it"
                return Failure(f"HallusionBench judge reply unusable ({why}): {result.text[:120]!r}")
            return verdict

        return list(await asyncio.gather(*(one(*item) for item in items)))
