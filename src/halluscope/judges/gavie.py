"""GAVIE's judge: two 0–10 scores of an answer to a visual instruction, read against the image's region descriptions.

GAVIE (Liu et al., "Mitigating Hallucination in Large Multi-Modal Models via Robust Instruction Tuning", the
LRV-Instruction paper) has a text-only LLM judge read an image's Visual Genome region descriptions (each a
phrase with its box), the instruction and the answer, and score it twice from 0 to 10: **relevancy** (does
the answer do what the instruction asks) and **accuracy** (is what it says true of the image). The official
input asks for several answers at once, one per model, so each score is relative to the others it was given;
here each answer is scored on its own, so a model's scores do not depend on which others were evaluated with
it. The rubric is written in halluscope's own words.

The fixed rubric is the system message and comes first, the same for every answer, so a server that keeps a
prompt prefix (llama.cpp) reads it once; the item (regions, instruction, answer) follows.

Parsing is strict: a reply counts only when it holds exactly one relevancy and one accuracy score, each a whole
number from 0 to 10 (``Relevancy: N`` / ``Accuracy: N``, any case, Markdown emphasis ignored, the same value
written twice is one). Anything else is **unjudged** with the reason, never read as a 0; unjudged replies are
not cached, so a resumed run asks again.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from halluscope.llm.client import LLMAuthError, LLMError
from halluscope.llm.stage import LLMStage
from halluscope.stages import AnswerJudge, Failure

__all__ = ["MAX_SCORE", "GavieGrade", "GavieItem", "GavieJudge", "GavieLLMJudge", "Region", "parse_scores"]

MAX_SCORE = 10


@dataclass(frozen=True)
class Region:
    """One region description of the image: a phrase and its box (left, top, width, height in pixels)."""

    phrase: str
    x: int
    y: int
    width: int
    height: int

    def line(self) -> str:
        return f"{self.phrase.strip()} X:{self.x} Y:{self.y} Width:{self.width} Height:{self.height}"


@dataclass
class GavieItem:
    """One answer to score, with everything the judge may read."""

    sample_id: str
    instruction: str
    regions: list[Region]
    answer: str


@dataclass
class GavieGrade:
    """The judge's two scores of one answer; both None when the reply did not hold them (``unjudged_reason``)."""

    relevancy: int | None
    accuracy: int | None
    explanation: str | None = None
    unjudged_reason: str | None = None

    def record_fields(self) -> dict[str, Any]:
        """The fields this grade adds to a ``samples.jsonl`` record."""
        return {
            "relevancy": self.relevancy,
            "accuracy": self.accuracy,
            "explanation": self.explanation,
            "unjudged_reason": self.unjudged_reason,
        }


class GavieJudge(AnswerJudge[GavieItem, GavieGrade]):
    """A judge of GAVIE answers: one :class:`GavieGrade` per item, in order."""

    answers_of = "GAVIE"
    benchmark_option = "gavie"

    @abstractmethod
    async def grade_many(self, items: Sequence[GavieItem]) -> list[GavieGrade | Failure]:
        """One grade per answer; a :class:`Failure` where the call failed (redone on resume)."""


# -- parsing ---------------------------------------------------------------------------------------------------

_NOISE = re.compile(r"[*_`#]")


def _score_pattern(word: str) -> re.Pattern[str]:
    return re.compile(
        rf"\b{word}(?:\s+score)?\s*(?::|=|\bis\b|\bof\b)\s*(-?\d+(?:\.\d+)?)(?!\s*%)", re.IGNORECASE
    )


_PATTERNS = {"relevancy": _score_pattern("relevan(?:cy|ce)"), "accuracy": _score_pattern("accuracy")}


def _one_score(name: str, text: str) -> tuple[int | None, str | None]:
    values = list(dict.fromkeys(m.group(1) for m in _PATTERNS[name].finditer(text)))
    if not values:
        return None, f"no '{name.title()}: N' in the judge's reply"
    numbers = {float(v) for v in values}
    if len(numbers) > 1:
        return None, f"several different {name} scores ({', '.join(values)}) in the judge's reply"
    number = numbers.pop()
    if number != int(number) or not 0 <= number <= MAX_SCORE:
        return None, f"{name} score {values[0]} is not a whole number from 0 to {MAX_SCORE}"
    return int(number), None


def parse_scores(reply: str) -> GavieGrade:
    """The relevancy and accuracy scores in ``reply``; unjudged (with the reason) unless both are there once."""
    text = _NOISE.sub("", reply)
    explanation = reply.strip()[:1000] or None
    relevancy, why_not_relevancy = _one_score("relevancy", text)
    accuracy, why_not_accuracy = _one_score("accuracy", text)
    problem = why_not_relevancy or why_not_accuracy
    if problem:
        return GavieGrade(None, None, explanation, f"{problem}: {reply.strip()[:200]!r}")
    return GavieGrade(relevancy, accuracy, explanation)


# -- prompt ----------------------------------------------------------------------------------------------------

RUBRIC = """\
You score answers that a vision-language model gave to instructions about an image you cannot see. \
Instead of the image you get its region descriptions: short phrases, each with the box of the region it \
describes (X and Y: the box's top-left corner, Width and Height: its size, in pixels). Boxes that overlap \
a lot may describe the same object.

Give each answer two scores, whole numbers from 0 (worst) to 10 (best):
- Relevancy: how directly the answer does what the instruction asks. An answer that rightly says the \
instruction asks about something the image does not show is relevant.
- Accuracy: how far what the answer says agrees with the image as the region descriptions describe it. \
Objects, attributes, counts, positions or relations that the descriptions contradict, or that nothing in \
them supports and that are unlikely to be there, lower it. An instruction can itself be misleading: an \
answer that goes along with a false premise is not accurate.

First write one sentence saying what the region descriptions show about what the answer says. Then end \
with two lines, each with your score, a whole number from 0 to 10, in place of N:
Relevancy: N
Accuracy: N"""

#: Identifies the prompt wording in cache keys and run specs.
PROMPT_VERSION = hashlib.sha256(RUBRIC.encode()).hexdigest()[:12]
#: The longest answer put in a prompt, and the most region lines; past them the prompt says what was cut.
MAX_ANSWER_CHARS = 6000
MAX_REGIONS = 120
DEFAULT_MAX_TOKENS = 120


def render_item(item: GavieItem) -> str:
    """The user message for one answer: the regions, the instruction and the answer."""
    lines = [region.line() for region in item.regions[:MAX_REGIONS]]
    if len(item.regions) > MAX_REGIONS:
        lines.append(f"[... {len(item.regions) - MAX_REGIONS} more regions left out]")
    answer = item.answer
    if len(answer) > MAX_ANSWER_CHARS:
        answer = answer[:MAX_ANSWER_CHARS] + f" [... cut: the answer has {len(item.answer)} characters]"
    regions = "\n".join(lines) or "(no region descriptions)"
    return f"Region descriptions:\n{regions}\n\nInstruction: {item.instruction}\n\nAnswer: {answer}"


class GavieLLMJudge(LLMStage, GavieJudge):
    """``gavie-llm``: the two scores asked of any OpenAI-compatible endpoint, or of the packaged local model
    with ``--judge-model local``. Options: those of every LLM stage
    (:class:`~halluscope.llm.stage.LLMStageOptions`; ``timeout_s`` 120, ``max_tokens`` 120), ``cache``."""

    name = "gavie-llm"
    component = "judge 'gavie-llm'"
    reply_tokens = DEFAULT_MAX_TOKENS

    def identity(self) -> dict[str, Any]:
        return {
            "judge": self.name,
            **self.client.identity(),
            "prompt": PROMPT_VERSION,
            "max_tokens": self.max_tokens,
        }

    def messages(self, item: GavieItem) -> list[dict[str, Any]]:
        return [{"role": "system", "content": RUBRIC}, {"role": "user", "content": render_item(item)}]

    async def _one(self, item: GavieItem) -> GavieGrade | Failure:
        try:
            result = await self.client.chat(
                self.messages(item), temperature=0.0, max_tokens=self.max_tokens,
                keep=lambda reply: parse_scores(reply.text).unjudged_reason is None,
            )  # fmt: skip
        except LLMAuthError:
            raise
        except LLMError as error:
            return Failure(f"judge call failed: {error}")
        return parse_scores(result.text)

    async def grade_many(self, items: Sequence[GavieItem]) -> list[GavieGrade | Failure]:
        return list(await asyncio.gather(*(self._one(item) for item in items)))
