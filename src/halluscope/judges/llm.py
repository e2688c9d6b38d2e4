"""Tri-HE's LLM judge on any OpenAI-compatible endpoint: does the image's scene graph support a claim?

Following Tri-HE (Wu et al., "Unified Triplet-Level Hallucination Evaluation for Large Vision-Language
Models"), the judge sees the image's reference triplets and its object list, and decides whether a claim is
stated by a reference triplet or can be logically inferred from several of them plus the object list
(common associations allowed; hedged claims allow broader inference; objects of the same kind count as
equal, e.g. man/woman → person). If not, it names the unsupported part: object1 or object2 (an object
hallucination) or the relation (a relation hallucination). The prompts are halluscope's own wording.

Two modes:

- ``per-claim`` (default, the paper's protocol): one call per claim, answered with fixed phrases
  (``Verdict: supported`` / ``Verdict: unsupported`` + ``Unsupported part: object1|object2|relation``).
  The instructions and the image's facts come first and the claim last, so servers that reuse a prompt
  prefix (llama.cpp, vLLM, OpenAI prompt caching) process each image's facts once.
- ``batched``: all claims of one answer in one call with a JSON reply
  ``{"verdicts": [{"index", "supported", "unsupported_part", "reason"}]}`` — several times fewer calls and
  tokens, at the price of a small departure from the paper's protocol.

Replies are parsed strictly, and never turned into a guessed verdict. A reply that is not one of the fixed
phrases or well-formed JSON with every claim's verdict, like a call that fails after its retries (endpoint
down, timeouts), fails the whole answer: a :class:`~halluscope.stages.Failure` naming the reply, so the
record is marked failed, counts against the run's failure share, and is retried on the next run (replies
that were read are cached; the others are not, so they are asked again). An authentication failure or a bad request
(unknown model, prompt too long) stops the run instead, since every other call would fail the same way.

``evidence`` lists the reference triplets that mention a content word of the claim's subject or object: the
facts a reader should look at to check the verdict. The judge itself saw all reference triplets and objects.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

from halluscope.cache import Cache
from halluscope.llm.client import FATAL_ERRORS, ChatResult, LLMError
from halluscope.llm.replies import json_object, unreadable_reply
from halluscope.llm.stage import LLMStageOptions, llm_stage_client
from halluscope.scene.direction import reference_text
from halluscope.scene.graph import SceneGraph
from halluscope.stages import Failure, Judge, JudgeItem
from halluscope.types import Claim, ErrorType, Verdict, VerdictLabel

SYSTEM_PROMPT = "You check claims about an image against the facts annotated for that image."

CONTEXT_PROMPT = """\
You are given what is known about one image: reference triples ("object1", "relation", "object2") taken \
from its scene graph, and the list of objects annotated in it. Decide whether a claim made about the image, \
also written as a triple, is supported by them.

A claim is supported when:
1. a reference triple states it, or
2. it can be logically inferred from one or more reference triples, using the object list as further \
evidence. Ordinary common-sense associations count (a lit lamp suggests the room is lit), and a hedged claim \
("may be", "could", "suggests") can be inferred more loosely than a firm one.
Objects of the same kind count as the same object: "man", "woman" and "boy" are all a "person", and a \
"puppy" is a "dog".
Judge only from these facts, not from your own ideas of what the image shows.

When a claim is not supported, name the part that lacks support:
- object1: the claim's first element is not in the image;
- object2: the claim's last element is not in the image or not true of it;
- relation: both are in the image, but the facts do not support the relation (the middle element).

Reference triples:
{references}

Objects in the image: {objects}
"""

PER_CLAIM_PROMPT = """
Answer with exactly one line, "Verdict: supported" or "Verdict: unsupported". After "Verdict: unsupported", \
add a second line: "Unsupported part: object1", "Unsupported part: object2" or "Unsupported part: relation".

Claim: {claim}
"""

BATCHED_PROMPT = """
Claims:
{claims}

Judge each claim on its own. Reply with one JSON object and nothing else, in this form:
{{"verdicts": [{{"index": 0, "supported": false, "unsupported_part": "object1", "reason": "a few words"}}]}}
Give one entry per claim, with the claim's number as "index". "supported" is true or false; \
"unsupported_part" is "object1", "object2" or "relation" when "supported" is false, and null when it is true.
"""

#: Identifies the prompt wording in cache keys and run specs.
PROMPT_VERSION = hashlib.sha256(
    (SYSTEM_PROMPT + CONTEXT_PROMPT + PER_CLAIM_PROMPT + BATCHED_PROMPT).encode("utf-8")
).hexdigest()[:12]

#: The per-claim reply's two forms, as a llama.cpp grammar: sent to the packaged local model only
#: (:attr:`~halluscope.llm.client.ChatClient.takes_grammar`), whose reply then ends with the verdict, within
#: a dozen tokens, instead of running on to ``max_tokens`` after it. The form is the one the prompt asks for,
#: so a model that follows the prompt gives the same verdict with it as without.
PER_CLAIM_GRAMMAR = (
    'root ::= "Verdict: supported" | "Verdict: unsupported\\nUnsupported part: " part\n'
    'part ::= "object1" | "object2" | "relation"\n'
)

MODES = ("per-claim", "batched")

#: Default reply budgets: the per-claim answer is two short lines; a batched answer grows with the claims.
PER_CLAIM_MAX_TOKENS = 100
BATCHED_BASE_TOKENS = 100
BATCHED_TOKENS_PER_CLAIM = 60

_PART_ERRORS = {
    "object1": ErrorType.OBJECT,
    "object 1": ErrorType.OBJECT,
    "subject": ErrorType.OBJECT,
    "object2": ErrorType.OBJECT,
    "object 2": ErrorType.OBJECT,
    "object": ErrorType.OBJECT,
    "relation": ErrorType.RELATION,
    "predicate": ErrorType.RELATION,
}
_VERDICT_LINE = re.compile(r"verdict\s*:\s*(supported|unsupported|not supported)\s*[.!]?", re.IGNORECASE)
_PART_LINE = re.compile(
    r"unsupported part\s*:\s*(object\s*1|object\s*2|subject|object|relation|predicate)\s*[.!]?", re.IGNORECASE
)
_NOISE = re.compile(r"[*`\"']")
_STOPWORDS = frozenset(
    {
        "a", "an", "the", "of", "in", "on", "at", "to", "is", "are", "was", "were", "be", "been", "and", "or",
        "with", "for", "by", "from", "its", "it", "this", "that", "these", "those", "there", "their", "his",
        "her", "some", "any", "one", "two", "very",
    }
)  # fmt: skip


# -- prompts ---------------------------------------------------------------------------------------------


def reference_lines(scene: SceneGraph) -> list[str]:
    """The image's reference facts as the judge sees them: the source's own strings when it has them."""
    if scene.reference_texts:
        return list(scene.reference_texts)
    return [f"({c.subject}, {c.relation}, {c.object})" for c in scene.reference_claims]


def render_claim(claim: Claim) -> str:
    return "(" + ", ".join(json.dumps(p, ensure_ascii=False) for p in claim.as_tuple()) + ")"


def context_prompt(scene: SceneGraph) -> str:
    references = "\n".join(reference_lines(scene)) or "(none)"
    objects = ", ".join(dict.fromkeys(n.strip() for n in scene.object_names if n.strip())) or "(none listed)"
    return CONTEXT_PROMPT.format(references=references, objects=objects)


# -- parsing ---------------------------------------------------------------------------------------------


def _clean_line(line: str) -> str:
    return " ".join(_NOISE.sub("", line).strip().lstrip("-#>").split())


def parse_per_claim_reply(reply: str) -> Verdict:
    """A verdict from a per-claim reply in the fixed phrases; ``unjudged`` for anything else.

    Markdown emphasis and quotes around the phrases are ignored; two different verdicts in one reply, or no
    verdict line, leave the claim unjudged. The error type follows Tri-HE's rule: an unsupported claim is an
    object hallucination when the judge names object1 or object2, and a relation hallucination otherwise
    (including when it names no readable part).
    """
    explanation = reply.strip()[:500]
    verdicts: set[str] = set()
    parts: set[str] = set()
    for raw in reply.splitlines():
        line = _clean_line(raw)
        if m := _VERDICT_LINE.fullmatch(line):
            verdicts.add("supported" if m.group(1).lower() == "supported" else "unsupported")
        elif m := _PART_LINE.fullmatch(line):
            parts.add(" ".join(m.group(1).lower().split()))
    if len(verdicts) != 1:
        why = "no verdict line" if not verdicts else "conflicting verdict lines"
        return Verdict.unjudged(f"unparseable judge reply ({why}): {reply.strip()[:200]!r}")
    if verdicts == {"supported"}:
        return Verdict(label=VerdictLabel.SUPPORTED, explanation=explanation)
    return Verdict(label=VerdictLabel.HALLUCINATED, error=_tri_he_error(parts), explanation=explanation)


def _tri_he_error(parts: set[str]) -> ErrorType:
    """Tri-HE's typing: any mention of an object part makes it an object error, anything else relation."""
    named = {_PART_ERRORS.get(p) for p in parts}
    return ErrorType.OBJECT if ErrorType.OBJECT in named else ErrorType.RELATION


def _entry_verdict(entry: dict[str, Any]) -> Verdict:
    supported = entry.get("supported")
    reason = entry.get("reason")
    explanation = reason.strip()[:500] if isinstance(reason, str) and reason.strip() else None
    if not isinstance(supported, bool):
        return Verdict.unjudged(f"judge gave 'supported' = {supported!r}, not true or false")
    if supported:
        return Verdict(label=VerdictLabel.SUPPORTED, explanation=explanation)
    part = entry.get("unsupported_part")
    parts = {" ".join(part.strip().lower().split())} if isinstance(part, str) else set()
    return Verdict(label=VerdictLabel.HALLUCINATED, error=_tri_he_error(parts), explanation=explanation)


def parse_batched_reply(reply: str, n_claims: int) -> list[Verdict]:
    """One verdict per claim from a batched JSON reply; ``unjudged`` wherever the reply does not say.

    Each entry must carry an integer ``index`` of a claim and a boolean ``supported``; claims without an
    entry, with conflicting entries, or with a malformed one are unjudged.
    """
    try:
        data = json_object(reply)
    except ValueError:
        reason = f"judge reply is not JSON: {reply.strip()[:200]!r}"
        return [Verdict.unjudged(reason) for _ in range(n_claims)]
    entries = data.get("verdicts") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        reason = f"judge reply has no 'verdicts' list: {reply.strip()[:200]!r}"
        return [Verdict.unjudged(reason) for _ in range(n_claims)]
    found: dict[int, list[Verdict]] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        index = entry.get("index")
        if isinstance(index, int) and not isinstance(index, bool) and 0 <= index < n_claims:
            found.setdefault(index, []).append(_entry_verdict(entry))
    verdicts: list[Verdict] = []
    for i in range(n_claims):
        candidates = found.get(i, [])
        distinct = {(v.label, v.error) for v in candidates}
        if not candidates:
            verdicts.append(Verdict.unjudged(f"judge reply has no verdict for claim {i}"))
        elif len(distinct) > 1:
            verdicts.append(Verdict.unjudged(f"judge reply has conflicting verdicts for claim {i}"))
        else:
            verdicts.append(candidates[0])
    return verdicts


# -- evidence --------------------------------------------------------------------------------------------


def _content_words(text: str) -> set[str]:
    words = set()
    for token in re.findall(r"[a-z0-9]+", text.lower()):
        if token in _STOPWORDS or len(token) < 2:
            continue
        plural = len(token) > 3 and token.endswith("s") and not token.endswith("ss")
        words.add(token[:-1] if plural else token)
    return words


def evidence_for(claim: Claim, references: Sequence[str]) -> list[str]:
    """Reference facts sharing a content word with the claim's subject or object (plural 's' ignored)."""
    wanted = _content_words(f"{claim.subject} {claim.object}")
    return [ref for ref in references if wanted & _content_words(ref)]


# -- the judge -------------------------------------------------------------------------------------------


class LLMJudge(Judge):
    """Tri-HE's LLM judge. Options: those of every LLM stage (:class:`~halluscope.llm.stage.LLMStageOptions`;
    ``timeout_s`` 120 by default, ``max_tokens`` per call depending on the mode), ``mode`` ("per-claim" or
    "batched"), ``json_mode`` (batched: ask for a JSON object; default true), ``cache``.
    """

    name = "llm"

    def __init__(
        self,
        *,
        model: str | None = None,
        base_url: str | None = None,
        api_key_env: str | None = None,
        mode: str = "per-claim",
        json_mode: bool = True,
        cache: Cache | None = None,
        **options: Any,
    ) -> None:
        given = {"model": model, "base_url": base_url, "api_key_env": api_key_env, **options}
        self.options, _ = LLMStageOptions.split("judge 'llm'", given, ("mode", "json_mode"), timeout_s=120.0)
        if mode not in MODES:
            raise ValueError(f"judge 'llm': mode must be one of {', '.join(MODES)}, got {mode!r}")
        self.mode = mode
        self.max_tokens = self.options.max_tokens
        #: Batched mode asks the server for a JSON object (``response_format``) unless this is off: for servers
        #: that reject the parameter, or are slow with it (llama-cpp-python's grammar over a 150k vocabulary).
        self.json_mode = json_mode
        self.client = llm_stage_client("judge 'llm'", self.options, cache=cache)

    def identity(self) -> dict[str, Any]:
        return {
            "judge": self.name,
            **self.client.identity(),
            "mode": self.mode,
            "prompt": PROMPT_VERSION,
            "max_tokens": self.max_tokens,
            **({"json_mode": self.json_mode} if self.mode == "batched" else {}),
            # The packaged local model's per-claim replies are held to the verdict's form (PER_CLAIM_GRAMMAR).
            **({"reply_grammar": True} if self.mode == "per-claim" and self.client.takes_grammar else {}),
        }

    # -- messages ----------------------------------------------------------------------------------

    def per_claim_messages(self, scene: SceneGraph, claim: Claim) -> list[dict[str, Any]]:
        user = context_prompt(scene) + PER_CLAIM_PROMPT.format(claim=render_claim(claim))
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]

    def batched_messages(self, scene: SceneGraph, claims: Sequence[Claim]) -> list[dict[str, Any]]:
        listed = "\n".join(f"{i}. {render_claim(c)}" for i, c in enumerate(claims))
        user = context_prompt(scene) + BATCHED_PROMPT.format(claims=listed)
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]

    # -- judging -----------------------------------------------------------------------------------

    async def _judge_claim(self, scene: SceneGraph, claim: Claim) -> tuple[Verdict, str | None]:
        """One claim's verdict (``unjudged`` when the reply cannot be read) and the reply's finish reason;
        raises :class:`LLMError` when the call fails. A reply that cannot be read is not cached."""
        result = await self.client.chat(
            self.per_claim_messages(scene, claim),
            temperature=0.0,
            max_tokens=self.max_tokens or PER_CLAIM_MAX_TOKENS,
            grammar=PER_CLAIM_GRAMMAR,
            keep=lambda reply: parse_per_claim_reply(reply.text).label != VerdictLabel.UNJUDGED,
        )
        return parse_per_claim_reply(result.text), result.finish_reason

    async def _judge_batch(self, scene: SceneGraph, claims: Sequence[Claim]) -> list[Verdict] | Failure:
        """All claims' verdicts in one call, a Failure when the reply does not give each of them; raises
        :class:`LLMError` when the call fails. A reply that does not give every verdict is not cached."""
        budget = self.max_tokens or BATCHED_BASE_TOKENS + BATCHED_TOKENS_PER_CLAIM * len(claims)

        def complete(reply: ChatResult) -> bool:
            return all(v.label != VerdictLabel.UNJUDGED for v in parse_batched_reply(reply.text, len(claims)))

        result = await self.client.chat(
            self.batched_messages(scene, claims),
            temperature=0.0,
            max_tokens=budget,
            json_mode=self.json_mode,
            keep=complete,
        )
        verdicts = parse_batched_reply(result.text, len(claims))
        unread = [v for v in verdicts if v.label == VerdictLabel.UNJUDGED]
        if unread:
            count = f"the verdicts of {len(unread)} of {len(claims)} claims in its reply" if len(claims) > 1 else ""
            return Failure(
                unreadable_reply(
                    "judge 'llm'", str(unread[0].explanation), finish_reason=result.finish_reason, count=count
                )
            )
        return verdicts

    async def judge_item(self, item: JudgeItem) -> list[Verdict] | Failure:
        """Verdicts for one answer's claims, in order; a Failure when a judge call failed or a reply could
        not be read (the record is failed, so it counts against the failure share and is redone)."""
        try:
            verdicts = await self._verdicts(item)
        except FATAL_ERRORS:
            raise
        except LLMError as error:
            return Failure(f"judge call failed: {error}")
        if isinstance(verdicts, Failure):
            return verdicts
        references = reference_lines(item.scene)
        return [
            v.model_copy(update={"evidence": [reference_text(item.scene, r) for r in evidence_for(c, references)]})
            if v.label != VerdictLabel.UNJUDGED
            else v
            for c, v in zip(item.claims, verdicts, strict=True)
        ]

    async def _verdicts(self, item: JudgeItem) -> list[Verdict] | Failure:
        if not item.claims:
            return []
        references = reference_lines(item.scene)
        if not references and not item.scene.object_names:
            reason = f"image {item.scene.image_id!r} has no reference triplets or objects to judge against"
            return [Verdict.unjudged(reason) for _ in item.claims]
        if self.mode == "batched":
            return await self._judge_batch(item.scene, item.claims)
        # Every call runs to the end (successes are cached for the retry); a fatal error wins over others.
        results = await asyncio.gather(
            *(self._judge_claim(item.scene, c) for c in item.claims), return_exceptions=True
        )
        errors = [r for r in results if isinstance(r, BaseException)]
        for error in errors:
            if isinstance(error, FATAL_ERRORS) or not isinstance(error, LLMError):
                raise error
        if errors:
            raise errors[-1]
        answered = [r for r in results if not isinstance(r, BaseException)]
        unread = [(v, finish) for v, finish in answered if v.label == VerdictLabel.UNJUDGED]
        if unread:
            first, finish = unread[0]
            count = f"{len(unread)} of {len(answered)} replies" if len(answered) > 1 else ""
            return Failure(
                unreadable_reply("judge 'llm'", str(first.explanation), finish_reason=finish, count=count)
            )
        return [v for v, _ in answered]

    async def judge_many(self, items: Sequence[JudgeItem]) -> list[list[Verdict] | Failure]:
        results = await asyncio.gather(*(self.judge_item(item) for item in items), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result  # an auth failure or bad request (every call would fail alike) or a bug: stop
        return [r for r in results if not isinstance(r, BaseException)]

    async def aclose(self) -> None:
        await self.client.aclose()
