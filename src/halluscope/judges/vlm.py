"""``vlm``: a judge that looks at the photo, on any OpenAI-compatible vision-language endpoint.

A scene graph is sparse: most of what a model says about an image is neither stated nor refuted by it, so a
judge that reads only the graph either calls that silence a hallucination (``hallu_q``) or lets it pass
(the contradicted rate). A VLM judge sees the image itself, with the scene graph as context, and answers
three ways:

- **Tri-HE claims** (``judge_many``): the photo, the image's reference facts and objects, and one claim →
  ``supported`` / ``contradicted`` / ``cannot tell``, and for a contradicted claim the wrong part (object,
  relation, attribute). Mapped to halluscope's verdicts the way the typed judge maps its three-way reading:
  supported → supported; contradicted → hallucinated (``support = contradicted``, typed by the part);
  cannot tell → hallucinated with ``support = unverifiable`` (so ``hallu_q`` keeps the paper's meaning and the
  headline ``contradicted_hallu_q`` counts only what the judge saw to be wrong).
- **HQH answers** (``grade_many``, with ``--benchmark hqh``): the photo, the question, the reference answer
  and the image's caption → ``correct`` / ``incorrect`` / ``cannot tell``; cannot tell stays unjudged.
- **Other benchmarks' whole answers** (the hook for MMHal-Bench and the like): :meth:`VLMJudge.grade_answer`
  takes an image path, a question, a reference answer and optional context and returns an
  :class:`AnswerGrade`; a benchmark module calls it from its own scoring.

The image is really sent: read, shrunk to ``max_side`` and inlined as a data URL
(:func:`halluscope.models.images.image_data_url`), through the project's LLM client (retries, concurrency,
content cache keyed on the messages, so on the image bytes too). A reply that is not one of the fixed phrases
is never turned into a guessed verdict: it fails the sample (a :class:`~halluscope.stages.Failure` naming
the reply, counted against the run's failure share and redone on the next run) and is not cached, so the
next run asks again. A sample without a readable image is a failure naming the image. The prompts are
halluscope's own wording.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from halluscope.cache import Cache
from halluscope.judges.hqh import HQHItem, HQHJudge, HQHJudgement
from halluscope.judges.llm import context_prompt, evidence_for, reference_lines, render_claim
from halluscope.llm.client import FATAL_ERRORS, ChatResult, LLMError
from halluscope.llm.replies import unreadable_reply
from halluscope.llm.stage import LLMStageOptions, llm_stage_client
from halluscope.scene.direction import reference_text
from halluscope.stages import Failure, Judge, JudgeItem
from halluscope.types import Claim, ErrorType, Support, Verdict, VerdictLabel

__all__ = ["AnswerGrade", "VLMJudge", "parse_answer_reply", "parse_claim_reply"]

SYSTEM_PROMPT = "You look at a photo and check statements about it. You answer in the fixed words you are given."

CLAIM_PROMPT = """\
Look at the photo. Below are notes someone wrote about it (they are correct but far from complete), then a \
claim about the photo written as a triple (subject, relation, object).

{context}
Decide from the photo itself, using the notes only as help:
- supported: the photo shows that the claim is true;
- contradicted: the photo shows that the claim is false (something named is not there, or the relation or \
property is wrong);
- cannot tell: the photo does not let you decide.

Answer with one line, "Verdict: supported", "Verdict: contradicted" or "Verdict: cannot tell". After \
"Verdict: contradicted" add a second line naming what is wrong: "Wrong part: object", "Wrong part: relation" \
or "Wrong part: attribute".

Claim: {claim}
"""

ANSWER_PROMPT = """\
Look at the photo. A model was asked a question about it; grade its answer. A reference answer and notes \
about the photo are given as help (both are correct; the notes are not complete).

Question: {question}
Reference answer: {reference}
{context}
Model's answer: {answer}

Is the model's answer a correct answer to the question about this photo? Something the reference does not \
say is not wrong for that reason; an answer that says something the photo shows to be false is incorrect.
Answer with exactly one line: "Grade: correct", "Grade: incorrect" or "Grade: cannot tell".
"""

#: Identifies the prompt wording in cache keys and run specs.
PROMPT_VERSION = hashlib.sha256((SYSTEM_PROMPT + CLAIM_PROMPT + ANSWER_PROMPT).encode("utf-8")).hexdigest()[:12]

_VERDICT = re.compile(r"verdict\s*:\s*(supported|contradicted|cannot tell|can't tell|unknown)\s*[.!]?", re.I)
_PART = re.compile(r"wrong part\s*:\s*(object|subject|relation|attribute|property)\s*[.!]?", re.I)
_GRADE = re.compile(r"grade\s*:\s*(correct|incorrect|cannot tell|can't tell)\s*[.!]?", re.I)
_NOISE = re.compile(r"[*`\"'_]")
_PARTS = {
    "object": ErrorType.OBJECT,
    "subject": ErrorType.OBJECT,
    "relation": ErrorType.RELATION,
    "attribute": ErrorType.ATTRIBUTE,
    "property": ErrorType.ATTRIBUTE,
}


def _lines(reply: str) -> list[str]:
    return [" ".join(_NOISE.sub("", line).strip().lstrip("-#>").split()) for line in reply.splitlines()]


def parse_claim_reply(reply: str) -> Verdict:
    """A three-way verdict from a claim reply in the fixed phrases; ``unjudged`` for anything else.

    Two different verdict lines, or none, leave the claim unjudged. A contradicted claim without a readable
    "Wrong part" line is typed as a relation error, as Tri-HE types an unsupported claim whose part it
    cannot name.
    """
    verdicts: set[str] = set()
    parts: set[ErrorType] = set()
    for line in _lines(reply):
        if m := _VERDICT.fullmatch(line):
            word = m.group(1).lower()
            verdicts.add("cannot tell" if word in ("can't tell", "unknown") else word)
        elif m := _PART.fullmatch(line):
            parts.add(_PARTS[m.group(1).lower()])
    explanation = reply.strip()[:500]
    if len(verdicts) != 1:
        why = "no verdict line" if not verdicts else "conflicting verdict lines"
        return Verdict.unjudged(f"unparseable VLM judge reply ({why}): {reply.strip()[:200]!r}")
    (verdict,) = verdicts
    if verdict == "supported":
        return Verdict(label=VerdictLabel.SUPPORTED, support=Support.SUPPORTED, explanation=explanation)
    if verdict == "contradicted":
        error = next(iter(parts)) if len(parts) == 1 else ErrorType.RELATION
        return Verdict(
            label=VerdictLabel.HALLUCINATED, error=error, support=Support.CONTRADICTED, explanation=explanation
        )
    return Verdict(label=VerdictLabel.HALLUCINATED, support=Support.UNVERIFIABLE, explanation=explanation)


@dataclass(frozen=True)
class AnswerGrade:
    """A VLM's grade of one whole answer: ``correct`` True / False, or None (cannot tell or unparseable)."""

    correct: bool | None
    explanation: str
    #: Why the answer stayed ungraded, when ``correct`` is None.
    reason: str | None = None
    #: True when the reply was not in the fixed words (``correct`` is None then): a failure of the judge,
    #: unlike "cannot tell", which is a reading of the photo.
    unreadable: bool = False


def parse_answer_reply(reply: str) -> AnswerGrade:
    """``Grade: correct | incorrect | cannot tell`` from a reply; anything else is ungraded with the reason."""
    grades = {m.group(1).lower() for line in _lines(reply) if (m := _GRADE.fullmatch(line))}
    explanation = reply.strip()[:500]
    if len(grades) != 1:
        why = "no grade line" if not grades else "conflicting grade lines"
        reason = f"unparseable VLM judge reply ({why}): {reply.strip()[:200]!r}"
        return AnswerGrade(None, explanation, reason, unreadable=True)
    (grade,) = grades
    if grade in ("cannot tell", "can't tell"):
        return AnswerGrade(None, explanation, "the VLM judge could not tell from the photo")
    return AnswerGrade(grade == "correct", explanation)


def _claim_readable(reply: ChatResult) -> bool:
    return parse_claim_reply(reply.text).label != VerdictLabel.UNJUDGED


def _answer_readable(reply: ChatResult) -> bool:
    return not parse_answer_reply(reply.text).unreadable


class VLMJudge(HQHJudge, Judge):
    """``vlm``: a VLM on an OpenAI-compatible endpoint that sees the photo. Options: those of every LLM
    stage but ``max_tokens`` (:class:`~halluscope.llm.stage.LLMStageOptions`; ``timeout_s`` 120 by default),
    ``max_side`` (longest image side sent, pixels; default 768), ``cache``.

    A claim judge for Tri-HE and an answer judge for HQH (it is an :class:`HQHJudge`, so ``-b hqh`` accepts
    it); :meth:`grade_answer` serves any other benchmark of whole answers.
    """

    name = "vlm"

    def __init__(
        self,
        *,
        model: str | None = None,
        base_url: str | None = None,
        api_key_env: str | None = None,
        max_side: int = 768,
        cache: Cache | None = None,
        **options: Any,
    ) -> None:
        given = {"model": model, "base_url": base_url, "api_key_env": api_key_env, **options}
        # Its replies are a verdict line or two, of a fixed length: no max_tokens option.
        self.options, _ = LLMStageOptions.split(
            "judge 'vlm'", given, ("max_side",), unused=("max_tokens",), timeout_s=120.0
        )
        if int(max_side) < 32:
            raise ValueError(f"judge 'vlm': max_side must be at least 32 pixels, got {max_side}")
        self.max_side = int(max_side)
        self.client = llm_stage_client("judge 'vlm'", self.options, cache=cache)

    def identity(self) -> dict[str, Any]:
        return {"judge": self.name, **self.client.identity(), "prompt": PROMPT_VERSION, "max_side": self.max_side}

    # -- messages ----------------------------------------------------------------------------------

    def _image_part(self, image_path: str) -> dict[str, Any]:
        """The photo as an OpenAI ``image_url`` part; raises ValueError (naming the file) if unreadable."""
        from halluscope.models.images import image_part

        return image_part(image_path, max_side=self.max_side)

    def claim_messages(self, image_path: str, item: JudgeItem, claim: Claim) -> list[dict[str, Any]]:
        text = CLAIM_PROMPT.format(context=context_prompt(item.scene), claim=render_claim(claim))
        return [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": [self._image_part(image_path), {"type": "text", "text": text}]},
        ]

    def answer_messages(
        self, image_path: str, question: str, reference: str, answer: str, context: str = ""
    ) -> list[dict[str, Any]]:
        text = ANSWER_PROMPT.format(
            question=question.strip(),
            reference=reference.strip() or "(none)",
            context=f"Notes: {context.strip()}\n" if context.strip() else "",
            answer=answer.strip(),
        )
        return [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": [self._image_part(image_path), {"type": "text", "text": text}]},
        ]

    # -- Tri-HE claims -----------------------------------------------------------------------------

    async def judge_many(self, items: Sequence[JudgeItem]) -> list[list[Verdict] | Failure]:
        results = await asyncio.gather(*(self._judge_item(item) for item in items), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result  # an auth failure or bad request (every call would fail alike) or a bug: stop
        return [r for r in results if not isinstance(r, BaseException)]

    async def _judge_item(self, item: JudgeItem) -> list[Verdict] | Failure:
        if not item.claims:
            return []
        image_path = item.extra.get("image_path")
        if not image_path:
            return Failure(f"judge 'vlm' needs the photo, and sample {item.sample_id!r} names no image")
        try:
            messages = [self.claim_messages(str(image_path), item, c) for c in item.claims]
        except ValueError as error:  # a missing or unreadable image, named by the image loader
            return Failure(f"judge 'vlm': {error}")
        replies = await asyncio.gather(
            *(self.client.chat(m, temperature=0.0, max_tokens=40, keep=_claim_readable) for m in messages),
            return_exceptions=True,
        )
        errors = [r for r in replies if isinstance(r, BaseException)]
        for failed in errors:
            if isinstance(failed, FATAL_ERRORS) or not isinstance(failed, LLMError):
                raise failed
        if errors:
            return Failure(f"judge call failed: {errors[-1]}")
        answered = [r for r in replies if not isinstance(r, BaseException)]
        parsed = [parse_claim_reply(reply.text) for reply in answered]
        unread = [(v, reply) for v, reply in zip(parsed, answered, strict=True) if v.label == VerdictLabel.UNJUDGED]
        if unread:
            first, reply = unread[0]
            count = f"{len(unread)} of {len(answered)} replies" if len(answered) > 1 else ""
            why = str(first.explanation)
            return Failure(unreadable_reply("judge 'vlm'", why, finish_reason=reply.finish_reason, count=count))
        references = reference_lines(item.scene)
        return [
            v.model_copy(update={"evidence": [reference_text(item.scene, r) for r in evidence_for(c, references)]})
            for c, v in zip(item.claims, parsed, strict=True)
        ]

    # -- whole answers (HQH; the hook for other benchmarks) ----------------------------------------

    async def grade_answer(
        self, image_path: str | None, question: str, reference: str, answer: str, context: str = ""
    ) -> AnswerGrade | Failure:
        """Grade one whole answer against the photo; a :class:`Failure` when the image or the call fails, or
        when the reply is not in the fixed words (such a reply is not cached: the next run asks again).

        This is the hook for benchmarks of whole answers (MMHal-Bench and the like): their scoring calls it
        with the sample's image, question, reference answer and any text context, and maps the grade to
        their own score. Authentication failures and bad requests are raised (every call would fail alike).
        """
        if not image_path:
            return Failure("judge 'vlm' needs the photo, and this sample names no image")
        try:
            messages = self.answer_messages(image_path, question, reference, answer, context)
        except ValueError as error:
            return Failure(f"judge 'vlm': {error}")
        try:
            result = await self.client.chat(messages, temperature=0.0, max_tokens=20, keep=_answer_readable)
        except FATAL_ERRORS:
            raise
        except LLMError as error:
            return Failure(f"judge call failed: {error}")
        grade = parse_answer_reply(result.text)
        if grade.unreadable:
            return Failure(unreadable_reply("judge 'vlm'", str(grade.reason), finish_reason=result.finish_reason))
        return grade

    async def grade_many(self, items: Sequence[HQHItem]) -> list[HQHJudgement | Failure]:
        async def one(item: HQHItem) -> HQHJudgement | Failure:
            caption = item.scene.caption or ""
            grade = await self.grade_answer(
                item.image_path, item.instruction, item.ground_truth, item.answer,
                f"caption: {caption}" if caption else "",
            )  # fmt: skip
            if isinstance(grade, Failure):
                return grade
            if grade.correct is None:
                return HQHJudgement.unjudged(grade.reason or "ungraded", "vlm")
            return HQHJudgement(hallucinated=not grade.correct, explanation=grade.explanation, method="vlm")

        results = await asyncio.gather(*(one(item) for item in items), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return [r for r in results if not isinstance(r, BaseException)]

    async def aclose(self) -> None:
        await self.client.aclose()
