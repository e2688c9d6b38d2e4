"""HQH's judges: is a free-form answer a hallucination, given the reference answer and the image's regions?

HQH (Yan et al., the HQM paper's benchmark) judges a whole answer, not claim by claim: the judge sees the
instruction, the reference answer, the image's caption and its Visual Genome region descriptions, and
decides whether the answer is **correct** (it means what the reference says and contradicts nothing) or
**incorrect** (the main hallucination), and counts the **extra claims** in it that contradict the image
information (reasoning and opinions excluded). For existence questions ("list the main instances") the paper
gives the judge no reference answer: the image information decides.

:class:`HQHJudge` is the interface both HQH judges share (``grade_many``); this module also holds
``hqh-llm``, :class:`HQHLLMJudge`, on any OpenAI-compatible endpoint through the shared client (bounded
retries; never the official loop's retry-forever). The offline ``hqh-rules`` judge is in
:mod:`halluscope.judges.hqh_rules`.

Two modes of ``hqh-llm``:

- ``per-answer`` (default): one call per answer, answered in three fixed lines (``Evidence: ...`` first, so
  the verdict follows the comparison, then ``Verdict: correct|incorrect`` and ``Contradicting claims: N``).
  The image's facts come first and the answer last, so servers that reuse a prompt prefix process each
  image's facts once.
- ``batched``: the official code's habit of judging many answers in one call, here every answer about the
  same image (several models' answers to one item, or answers to several items of that image), up to
  ``batch_size`` per call, with a JSON reply. Agreement with ``per-answer`` and the token cost of both are
  measured by ``bench/hqh_judges.py`` (docs/hqh.md).

Replies are parsed strictly, never guessed: a reply (or a batched reply's entry) that cannot be read is a
per-item failure naming it, like a call that fails after the client's bounded retries, so it counts against
the run's failure share and is redone on resume; such a reply is not cached, so the next run asks again. An
authentication failure stops the run, since every call would fail alike.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from halluscope.cache import Cache
from halluscope.llm.client import ChatResult, LLMAuthError, LLMError
from halluscope.llm.replies import json_object, unreadable_reply
from halluscope.llm.stage import LLMStageOptions, llm_stage_client
from halluscope.scene.graph import SceneGraph
from halluscope.stages import AnswerJudge, Failure

__all__ = [
    "HQHItem",
    "HQHJudge",
    "HQHJudgement",
    "HQHLLMJudge",
    "parse_batched_reply",
    "parse_per_answer_reply",
    "render_facts",
]

#: The type whose judge prompt carries no reference answer (the paper: the image details decide).
EXISTENCE = "existence"


@dataclass
class HQHItem:
    """One answer to judge, with everything the judge may read."""

    sample_id: str
    type: str
    instruction: str
    ground_truth: str
    answer: str
    scene: SceneGraph
    #: The photo, for judges that look at it (``vlm``); None when the benchmark has no image for the item.
    image_path: str | None = None

    @property
    def image_id(self) -> str | None:
        return self.scene.image_id


@dataclass
class HQHJudgement:
    """A judge's decision on one answer.

    ``hallucinated`` is the main verdict (True: incorrect), None when the judge could not decide
    (``unjudged_reason`` says why). ``extra_claims`` counts the other claims that contradict the image
    information; None when the judge does not count them (the offline judge) or could not.
    """

    hallucinated: bool | None
    extra_claims: int | None = None
    evidence: list[str] | None = None
    explanation: str | None = None
    unjudged_reason: str | None = None
    #: Which rule decided (offline judge) or which mode (LLM judge).
    method: str | None = None

    @classmethod
    def unjudged(cls, reason: str, method: str | None = None) -> HQHJudgement:
        return cls(hallucinated=None, unjudged_reason=reason, method=method)

    @property
    def verdict(self) -> str:
        if self.hallucinated is None:
            return "unjudged"
        return "incorrect" if self.hallucinated else "correct"

    def record_fields(self) -> dict[str, Any]:
        """The fields this judgement adds to a ``samples.jsonl`` record."""
        return {
            "verdict": self.verdict,
            "hallucinated": self.hallucinated,
            "extra_claims": self.extra_claims,
            "evidence": list(self.evidence or []),
            "explanation": self.explanation,
            "unjudged_reason": self.unjudged_reason,
            "judge_method": self.method,
        }


class HQHJudge(AnswerJudge[HQHItem, HQHJudgement]):
    """A judge of whole HQH answers: one judgement per answer (:meth:`grade_many`)."""

    answers_of = "HQH"
    benchmark_option = "hqh"

    @abstractmethod
    async def grade_many(self, items: Sequence[HQHItem]) -> list[HQHJudgement | Failure]:
        """One judgement per answer, in order; a :class:`Failure` where judging failed (redone on resume)."""


# -- prompts ---------------------------------------------------------------------------------------------------

SYSTEM_PROMPT = (
    "You grade what a vision-language model said about an image, using only the written facts about that image."
)

FACTS_PROMPT = """\
A vision-language model answered a question about an image that you cannot see. You are given what is \
known about the image: a caption and descriptions of regions of it, each with the position (x, y) and width \
of its box in pixels. These facts are reliable but not complete: something they do not mention is not \
wrong for that reason alone.

Caption: {caption}
Regions:
{regions}
"""

_CRITERIA = """\
How to grade:
- Verdict: "correct" when the answer says what the reference answer says (other wording, more detail or \
reasoning are fine) and nothing in it contradicts the facts; "incorrect" when its answer to the question is \
different from the reference answer, or is contradicted by the facts.
- Contradicting claims: apart from the main answer, count the other statements of fact in the answer that \
the facts contradict (a wrong colour, count, object, action or position). Reasoning, guesses and opinions \
do not count. Write 0 when there are none.
"""

_EXISTENCE_CRITERIA = """\
How to grade (the question asks what the image contains; there is no reference answer):
- Verdict: "correct" when every object the answer names is one the facts mention or clearly imply, and \
nothing in it contradicts the facts; "incorrect" when it names an object that is not in the facts, or \
describes one in a way the facts contradict.
- Contradicting claims: count the statements of fact in the answer, other than the objects it lists, that \
the facts contradict. Write 0 when there are none.
"""

PER_ANSWER_PROMPT = """
{criteria}
Question: {instruction}
{reference}Model's answer: {answer}

Reply with exactly three lines, in this order:
Evidence: <one sentence comparing the answer with the reference answer and the facts>
Verdict: correct   (or: Verdict: incorrect)
Contradicting claims: <a whole number>
"""

BATCHED_PROMPT = """
{criteria}
Grade each of these answers on its own:

{answers}

Reply with one JSON object and nothing else, in this form:
{{"grades": [{{"index": 0, "evidence": "one sentence", "verdict": "correct", "contradicting_claims": 0}}]}}
Give one entry per answer, with the answer's number as "index"; "verdict" is "correct" or "incorrect".
"""

#: Identifies the prompt wording in cache keys and run specs.
PROMPT_VERSION = hashlib.sha256(
    (SYSTEM_PROMPT + FACTS_PROMPT + _CRITERIA + _EXISTENCE_CRITERIA + PER_ANSWER_PROMPT + BATCHED_PROMPT).encode()
).hexdigest()[:12]

MODES = ("per-answer", "batched")
PER_ANSWER_MAX_TOKENS = 160
#: Longest answer text put in a prompt; a longer one is cut there (and the cut is said in the prompt).
MAX_ANSWER_CHARS = 6000
BATCHED_BASE_TOKENS = 60
BATCHED_TOKENS_PER_ANSWER = 110


def render_facts(scene: SceneGraph, max_regions: int | None = None) -> str:
    """The image information as the judge reads it (the released height is left out: it repeats the width)."""
    regions = scene.regions if max_regions is None else scene.regions[:max_regions]
    lines = []
    for region in regions:
        if region.box is None:
            lines.append(f"- {region.description}")
        else:
            x, y, w, _ = region.box
            lines.append(f"- {region.description} (x={x}, y={y}, width={w})")
    return FACTS_PROMPT.format(caption=scene.caption or "(none)", regions="\n".join(lines) or "(none)")


def _criteria(kind: str) -> str:
    return _EXISTENCE_CRITERIA if kind == EXISTENCE else _CRITERIA


def _answer_text(item: HQHItem) -> str:
    if len(item.answer) <= MAX_ANSWER_CHARS:
        return item.answer
    return item.answer[:MAX_ANSWER_CHARS] + f" [... cut: the answer has {len(item.answer)} characters]"


def _reference_line(item: HQHItem) -> str:
    return "" if item.type == EXISTENCE else f"Reference answer: {item.ground_truth}\n"


# -- parsing ---------------------------------------------------------------------------------------------------

_NOISE = re.compile(r"[*`_#>\"]")
_VERDICT = re.compile(r"verdict\s*:\s*(correct|incorrect)\s*[.!]?", re.IGNORECASE)
_COUNT = re.compile(r"contradicting claims\s*:\s*(\d+)\s*[.!]?", re.IGNORECASE)
_EVIDENCE = re.compile(r"evidence\s*:\s*(.+)", re.IGNORECASE)


def _clean(line: str) -> str:
    return " ".join(_NOISE.sub("", line).strip().lstrip("-").split())


def parse_per_answer_reply(reply: str) -> HQHJudgement:
    """A judgement from the three fixed lines; unjudged when the verdict or the count is missing or conflicting."""
    verdicts: set[str] = set()
    counts: set[int] = set()
    evidence: list[str] = []
    for raw in reply.splitlines():
        line = _clean(raw)
        if m := _VERDICT.fullmatch(line):
            verdicts.add(m.group(1).lower())
        elif m := _COUNT.fullmatch(line):
            counts.add(int(m.group(1)))
        elif m := _EVIDENCE.fullmatch(line):
            evidence.append(m.group(1).strip())
    snippet = reply.strip()[:200]
    if len(verdicts) != 1:
        why = "no verdict line" if not verdicts else "conflicting verdict lines"
        return HQHJudgement.unjudged(f"unparseable judge reply ({why}): {snippet!r}", "per-answer")
    if len(counts) != 1:
        why = "no 'Contradicting claims' line" if not counts else "conflicting counts"
        return HQHJudgement.unjudged(f"unparseable judge reply ({why}): {snippet!r}", "per-answer")
    return HQHJudgement(
        hallucinated=verdicts.pop() == "incorrect",
        extra_claims=counts.pop(),
        evidence=evidence[:1],
        explanation=reply.strip()[:500],
        method="per-answer",
    )


def _entry(entry: dict[str, Any]) -> HQHJudgement:
    verdict = entry.get("verdict")
    count = entry.get("contradicting_claims")
    if not isinstance(verdict, str) or verdict.strip().lower() not in ("correct", "incorrect"):
        return HQHJudgement.unjudged(f"judge gave verdict {verdict!r}, not correct or incorrect", "batched")
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        return HQHJudgement.unjudged(f"judge gave contradicting_claims {count!r}, not a whole number", "batched")
    evidence = entry.get("evidence")
    return HQHJudgement(
        hallucinated=verdict.strip().lower() == "incorrect",
        extra_claims=count,
        evidence=[evidence.strip()[:500]] if isinstance(evidence, str) and evidence.strip() else [],
        method="batched",
    )


def parse_batched_reply(reply: str, n_answers: int) -> list[HQHJudgement]:
    """One judgement per answer from a batched JSON reply; unjudged wherever the reply does not say clearly."""
    snippet = reply.strip()[:200]
    try:
        data = json_object(reply)
    except ValueError:
        return [HQHJudgement.unjudged(f"judge reply is not JSON: {snippet!r}", "batched") for _ in range(n_answers)]
    entries = data.get("grades") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        reason = f"judge reply has no 'grades' list: {snippet!r}"
        return [HQHJudgement.unjudged(reason, "batched") for _ in range(n_answers)]
    found: dict[int, list[HQHJudgement]] = {}
    for entry in entries:
        if isinstance(entry, dict):
            index = entry.get("index")
            if isinstance(index, int) and not isinstance(index, bool) and 0 <= index < n_answers:
                found.setdefault(index, []).append(_entry(entry))
    out = []
    for i in range(n_answers):
        candidates = found.get(i, [])
        if not candidates:
            out.append(HQHJudgement.unjudged(f"judge reply has no grade for answer {i}", "batched"))
        elif len({(c.hallucinated, c.extra_claims) for c in candidates}) > 1:
            out.append(HQHJudgement.unjudged(f"judge reply has conflicting grades for answer {i}", "batched"))
        else:
            out.append(candidates[0])
    return out


# -- the LLM judge ---------------------------------------------------------------------------------------------


@dataclass
class CallStats:
    """What the judge's calls cost: requests answered (cache hits included) and tokens reported by the server."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, usage: dict[str, int]) -> None:
        self.calls += 1
        self.prompt_tokens += int(usage.get("prompt_tokens", 0))
        self.completion_tokens += int(usage.get("completion_tokens", 0))


class HQHLLMJudge(HQHJudge):
    """``hqh-llm``. Options: those of every LLM stage (:class:`~halluscope.llm.stage.LLMStageOptions`;
    ``timeout_s`` 120 by default), ``mode`` (``per-answer`` | ``batched``), ``batch_size`` (batched: answers
    per call, default 8), ``json_mode`` (batched: ask for a JSON object; default true), ``max_regions``
    (cap on the region lines shown, for small context windows; default all), ``cache``.
    """

    name = "hqh-llm"

    def __init__(
        self,
        *,
        model: str | None = None,
        base_url: str | None = None,
        api_key_env: str | None = None,
        mode: str = "per-answer",
        batch_size: int = 8,
        json_mode: bool | str = True,
        max_regions: int | None = None,
        cache: Cache | None = None,
        **options: Any,
    ) -> None:
        given = {"model": model, "base_url": base_url, "api_key_env": api_key_env, **options}
        self.options, _ = LLMStageOptions.split(
            "judge 'hqh-llm'", given, ("mode", "batch_size", "json_mode", "max_regions"), timeout_s=120.0
        )
        if mode not in MODES:
            raise ValueError(f"judge 'hqh-llm': mode must be one of {', '.join(MODES)}, got {mode!r}")
        batch_size = int(batch_size)
        if batch_size < 1:
            raise ValueError(f"judge 'hqh-llm': batch_size must be at least 1, got {batch_size}")
        if max_regions is not None and int(max_regions) < 1:
            raise ValueError(f"judge 'hqh-llm': max_regions must be positive, got {max_regions}")
        self.mode = mode
        self.batch_size = batch_size
        self.max_tokens = self.options.max_tokens
        self.json_mode = json_mode if isinstance(json_mode, bool) else str(json_mode).lower() in ("1", "true", "yes")
        self.max_regions = int(max_regions) if max_regions is not None else None
        self.stats = CallStats()
        self.client = llm_stage_client("judge 'hqh-llm'", self.options, cache=cache)

    def identity(self) -> dict[str, Any]:
        return {
            "judge": self.name,
            **self.client.identity(),
            "mode": self.mode,
            "prompt": PROMPT_VERSION,
            "max_tokens": self.max_tokens,
            "max_regions": self.max_regions,
            **({"batch_size": self.batch_size, "json_mode": self.json_mode} if self.mode == "batched" else {}),
        }

    # -- messages ----------------------------------------------------------------------------------------

    def per_answer_messages(self, item: HQHItem) -> list[dict[str, Any]]:
        user = render_facts(item.scene, self.max_regions) + PER_ANSWER_PROMPT.format(
            criteria=_criteria(item.type),
            instruction=item.instruction,
            reference=_reference_line(item),
            answer=_answer_text(item),
        )
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]

    def batched_messages(self, items: Sequence[HQHItem]) -> list[dict[str, Any]]:
        kinds = {item.type == EXISTENCE for item in items}
        criteria = _criteria(EXISTENCE) if kinds == {True} else _CRITERIA
        if kinds == {True, False}:
            criteria += "For a question that asks what the image contains, there is no reference answer: " \
                "grade it by whether the objects it names are in the facts.\n"
        blocks = []
        for i, item in enumerate(items):
            blocks.append(
                f"Answer {i}:\nQuestion: {item.instruction}\n{_reference_line(item)}"
                f"Model's answer: {_answer_text(item)}"
            )
        user = render_facts(items[0].scene, self.max_regions) + BATCHED_PROMPT.format(
            criteria=criteria, answers="\n\n".join(blocks)
        )
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]

    # -- judging -----------------------------------------------------------------------------------------

    async def _one(self, item: HQHItem) -> HQHJudgement | Failure:
        try:
            result = await self.client.chat(
                self.per_answer_messages(item), temperature=0.0, max_tokens=self.max_tokens or PER_ANSWER_MAX_TOKENS,
                keep=lambda reply: parse_per_answer_reply(reply.text).hallucinated is not None,
            )  # fmt: skip
        except LLMAuthError:
            raise
        except LLMError as error:
            return Failure(f"judge call failed: {error}")
        self.stats.add(result.usage)
        judgement = parse_per_answer_reply(result.text)
        if judgement.hallucinated is None:
            why = str(judgement.unjudged_reason)
            return Failure(unreadable_reply("judge 'hqh-llm'", why, finish_reason=result.finish_reason))
        return judgement

    async def _group(self, items: Sequence[HQHItem]) -> list[HQHJudgement | Failure]:
        budget = self.max_tokens or BATCHED_BASE_TOKENS + BATCHED_TOKENS_PER_ANSWER * len(items)

        def complete(reply: ChatResult) -> bool:
            return all(j.hallucinated is not None for j in parse_batched_reply(reply.text, len(items)))

        try:
            result = await self.client.chat(
                self.batched_messages(items), temperature=0.0, max_tokens=budget, json_mode=self.json_mode,
                keep=complete,
            )  # fmt: skip
        except LLMAuthError:
            raise
        except LLMError as error:
            return [Failure(f"judge call failed: {error}") for _ in items]
        self.stats.add(result.usage)
        return [
            j if j.hallucinated is not None else Failure(
                unreadable_reply("judge 'hqh-llm'", str(j.unjudged_reason), finish_reason=result.finish_reason)
            )
            for j in parse_batched_reply(result.text, len(items))
        ]  # fmt: skip

    async def grade_many(self, items: Sequence[HQHItem]) -> list[HQHJudgement | Failure]:
        if self.mode == "per-answer":
            results = await asyncio.gather(*(self._one(item) for item in items), return_exceptions=True)
            for result in results:
                if isinstance(result, BaseException):
                    raise result
            return [r for r in results if not isinstance(r, BaseException)]
        groups: dict[str, list[int]] = {}
        for position, item in enumerate(items):
            groups.setdefault(item.scene.fingerprint(), []).append(position)
        chunks = [
            positions[start : start + self.batch_size]
            for positions in groups.values()
            for start in range(0, len(positions), self.batch_size)
        ]
        answers = await asyncio.gather(
            *(self._group([items[p] for p in chunk]) for chunk in chunks), return_exceptions=True
        )
        out: list[HQHJudgement | Failure | None] = [None] * len(items)
        for chunk, answer in zip(chunks, answers, strict=True):
            if isinstance(answer, BaseException):
                raise answer
            for position, judgement in zip(chunk, answer, strict=True):
                out[position] = judgement
        return [r if r is not None else Failure("internal: answer not judged") for r in out]

    async def aclose(self) -> None:
        await self.client.aclose()
