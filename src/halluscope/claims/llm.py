"""Tri-HE-style claim extraction with an LLM on any OpenAI-compatible endpoint.

Following Tri-HE (Wu et al., "Unified Triplet-Level Hallucination Evaluation for Large Vision-Language
Models"), the LLM sees only the answer (not the question), and writes one ``("subject", "predicate",
"object")`` triple per line, splitting "and"/"or" into separate triples and skipping sentences that say
nothing concrete. The prompt below is halluscope's own wording of those instructions, with two worked examples
of our own. The reply is read exactly as the official extractor reads it: everything from the first ``###``
on is dropped, quoted triples are matched line by line, only triples of three non-empty parts are kept, and
duplicates are removed keeping the first occurrence.

A network or server failure gives a :class:`~halluscope.stages.Failure` for that answer only (the record
is failed and retried on the next run); an authentication failure or a bad request (unknown model, prompt
too long) stops the run, since every other answer would fail the same way.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from halluscope.llm.client import FATAL_ERRORS, LLMError
from halluscope.llm.stage import LLMStage
from halluscope.stages import Extractor, Failure
from halluscope.types import Claim

SYSTEM_PROMPT = "You turn descriptions of images into lists of facts. You never add facts of your own."

EXTRACTION_PROMPT = """\
Below is a text that someone wrote about an image. List every fact the text states as a triple \
("subject", "predicate", "object"), one triple per line, each part in double quotes.

Rules:
- Extract what the text says, whether or not it is true; do not add anything it does not say.
- When a sentence links several things with "and" or "or", write a separate triple for each of them.
- Leave out sentences that state nothing concrete about the image, such as "It is hard to say." or \
"More context would be needed."
- Keep each part short, in the text's own words.
- After the last triple, write a line with only ###.

### Text:
A brown dog is lying on a red sofa next to a sleeping cat. There might be a window or a door behind them. \
It is impossible to tell what time it is.

### Triples:
("dog", "is", "brown")
("dog", "lying on", "sofa")
("sofa", "is", "red")
("dog", "next to", "cat")
("cat", "is", "sleeping")
("window", "might be behind", "dog")
("door", "might be behind", "dog")
###

### Text:
Two men in helmets ride bicycles along a wet street, and a bus waits at the traffic light.

### Triples:
("men", "wearing", "helmets")
("men", "riding", "bicycles")
("men", "riding along", "street")
("street", "is", "wet")
("bus", "waiting at", "traffic light")
###

### Text:
{text}

### Triples:
"""

#: Identifies the prompt wording in cache keys and run specs: changing the prompt invalidates old results.
PROMPT_VERSION = hashlib.sha256((SYSTEM_PROMPT + EXTRACTION_PROMPT).encode("utf-8")).hexdigest()[:12]

# One quoted part: double-quoted, or single-quoted where an apostrophe followed by a letter ("man's") does
# not end the part.
_PART = r"""(?:"([^"\n]*)"|'((?:[^'\n]|'(?=[A-Za-z]))*)')"""
_TRIPLE = re.compile(rf"\(\s*{_PART}\s*,\s*{_PART}\s*,\s*{_PART}\s*\)")


def parse_triples(reply: str) -> list[Claim]:
    """The claims in an LLM reply, read the way Tri-HE's extractor reads them.

    Cut at the first ``###``; find ``("a", "b", "c")`` triples (parts in double or single quotes); keep those
    whose three parts are non-empty after stripping; drop repeats, keeping the first. Unquoted or 2- and
    4-part tuples are ignored.
    """
    text = reply.split("###", 1)[0]
    seen: set[tuple[str, str, str]] = set()
    claims: list[Claim] = []
    for match in _TRIPLE.finditer(text):
        groups = match.groups()
        parts = tuple(
            (double if double is not None else single or "").strip()
            for double, single in zip(groups[0::2], groups[1::2], strict=True)
        )
        triple = (parts[0], parts[1], parts[2])
        if not all(triple) or triple in seen:
            continue
        seen.add(triple)
        claims.append(Claim.of(triple))
    return claims




class LLMExtractor(LLMStage, Extractor):
    """Answer → triples with an LLM, Tri-HE style. Options: those of every LLM stage
    (:class:`~halluscope.llm.stage.LLMStageOptions`; ``timeout_s`` 120 and ``max_tokens`` per answer 512 by
    default), ``cache`` (chat results cached by content).
    """

    name = "llm"
    component = "extractor 'llm'"
    option_defaults: ClassVar[Mapping[str, Any]] = {"timeout_s": 120.0, "max_tokens": 512}
    reply_tokens = 512

    def identity(self) -> dict[str, Any]:
        return {
            "extractor": self.name,
            **self.client.identity(),
            "prompt": PROMPT_VERSION,
            "max_tokens": self.max_tokens,
        }

    def messages(self, text: str) -> list[dict[str, Any]]:
        """The chat messages sent for one answer."""
        return [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": EXTRACTION_PROMPT.format(text=text.strip())},
        ]

    async def extract(self, text: str) -> list[Claim]:
        """Claims of one answer; raises :class:`~halluscope.llm.client.LLMError` on failure."""
        if not text.strip():
            return []
        result = await self.client.chat(
            self.messages(text), temperature=0.0, max_tokens=self.max_tokens, stop=["###"]
        )
        return parse_triples(result.text)

    async def extract_many(self, texts: Sequence[str]) -> list[list[Claim] | Failure]:
        async def one(text: str) -> list[Claim] | Failure:
            try:
                return await self.extract(text)
            except FATAL_ERRORS:
                raise
            except LLMError as error:
                return Failure(f"llm extraction failed: {error}")

        results = await asyncio.gather(*(one(t) for t in texts), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result  # an auth failure or bad request (every answer would fail alike) or a bug
        return [r for r in results if not isinstance(r, BaseException)]
