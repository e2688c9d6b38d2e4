"""Paraphrases of open prompts for parallel forms: an offline template set, and an LLM paraphraser.

**Templates** (offline, deterministic). A prompt is rewritten by the first rule that matches it:

1. ``Describe the image.`` / ``Describe this image in detail.`` → ``Provide a description of the image.``
   (``… in detail`` keeps ``in detail``);
2. ``What color is X?`` → ``What is the color of X?``;
3. ``What is X doing?`` → ``Describe what X is doing.``;
4. ``How many X are there …?`` → ``What is the number of X …?`` (``there`` kept when present);
5. otherwise one of four neutral frames, picked by a stable hash of the item id:
   ``Looking at the image: Q`` · ``Q Answer based on what the image shows.`` ·
   ``Based on the image, q`` (first letter lowered) · ``Please answer this question about the image. Q``.

Every rule keeps every word of the original question (the frames add words only), which is what
:func:`keeps_content` checks.

**LLM** (:class:`LLMParaphraser`): any OpenAI-compatible endpoint through the shared client (bounded
retries, cache). A reply is accepted only if it is one line, not the original, at most three times as long,
and keeps the question's content words (at least 60% of them, every number); otherwise the item falls
back to the template paraphrase and the reason is counted.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from halluscope.scene.names import tokens

#: Words that carry no content for the keeps-content check.
_STOP = frozenset(
    [
        "a", "an", "the", "this", "that", "these", "those", "is", "are", "was", "were", "be", "been", "of",
        "in", "on", "at", "to", "for", "with", "and", "or", "what", "which", "who", "whom", "whose", "how",
        "why", "where", "when", "does", "do", "did", "can", "could", "would", "should", "there", "here", "it",
        "its", "image", "picture", "photo", "please", "answer", "question", "about", "based", "looking",
        "shows", "describe", "provide", "description", "many", "number",
    ]
)

_FRAMES = (
    "Looking at the image: {q}",
    "{q} Answer based on what the image shows.",
    "Based on the image, {lower}",
    "Please answer this question about the image. {q}",
)
_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^describe (?:the|this) (image|picture|photo)(?P<tail> in detail)?\s*[.?]?$", re.I),
     "Provide a description of the image{tail}."),
    (re.compile(r"^what colou?r (?:is|are) (?P<x>.+?)\s*\?$", re.I), "What is the color of {x}?"),
    (re.compile(r"^what (?P<verb>is|are) (?P<x>.+?) doing\s*\?$", re.I), "Describe what {x} {verb} doing."),
    (re.compile(r"^how many (?P<x>.+?) are (?P<there>there\s*)?(?P<rest>.*?)\?$", re.I),
     "What is the number of {x} {there}{rest}?"),
)


def content_words(text: str) -> list[str]:
    return [t for t in tokens(text) if t not in _STOP and t != "'s"]


def template_paraphrase(prompt: str, item_id: str) -> str:
    """The offline paraphrase of ``prompt`` (see the module docstring)."""
    text = " ".join(prompt.split())
    for pattern, replacement in _RULES:
        match = pattern.match(text)
        if match:
            groups = {k: (v or "") for k, v in match.groupdict().items()}
            return re.sub(r"\s+", " ", replacement.format(**groups)).replace(" ?", "?").strip()
    digest = int(hashlib.sha256(item_id.encode()).hexdigest()[:8], 16)
    frame = _FRAMES[digest % len(_FRAMES)]
    lower = text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text
    return frame.format(q=text, lower=lower)


def keeps_content(original: str, paraphrase: str, *, share: float = 1.0) -> str | None:
    """None when ``paraphrase`` keeps the content words of ``original``; else what it lost."""
    before = content_words(original)
    after = set(content_words(paraphrase))
    numbers = [w for w in before if w.isdigit()]
    lost = [w for w in before if w not in after and not (w in ("color", "colour") and {"color", "colour"} & after)]
    if any(n not in after for n in numbers):
        return f"lost the number(s) {', '.join(n for n in numbers if n not in after)}"
    if before and (len(before) - len(lost)) / len(before) < share - 1e-9:
        return f"lost content words: {', '.join(dict.fromkeys(lost))}"
    return None


PARAPHRASE_SYSTEM = "You rewrite questions about images in other words, keeping their meaning exactly."
PARAPHRASE_PROMPT = """Rewrite the following request about an image so that it asks for exactly the same \
information in different words. Keep every object, attribute, number and name it mentions. Reply with the \
rewritten request only, on one line.

Request: {prompt}"""


@dataclass
class LLMParaphraser:
    """Paraphrases through an OpenAI-compatible endpoint; rejected replies fall back to the templates."""

    client: Any  # halluscope.llm.client.ChatClient
    min_share: float = 0.6

    def identity(self) -> dict[str, Any]:
        return {"paraphraser": "llm", **self.client.identity(), "prompt": "paraphrase-v1"}

    async def paraphrase(self, prompt: str, item_id: str) -> tuple[str, str | None]:
        """(paraphrase, None) from the LLM, or (template paraphrase, why the LLM's was not used)."""
        from halluscope.llm.client import LLMError

        try:
            result = await self.client.chat(
                [{"role": "system", "content": PARAPHRASE_SYSTEM},
                 {"role": "user", "content": PARAPHRASE_PROMPT.format(prompt=prompt)}],
                temperature=0.0, max_tokens=min(400, 40 + 3 * len(prompt.split()) * 2),
            )
        except LLMError as error:
            return template_paraphrase(prompt, item_id), f"endpoint failed ({type(error).__name__})"
        text = (result.text or "").strip().strip('"').strip()
        text = re.sub(r"^(?:rewritten request|request|rewritten)\s*:\s*", "", text, flags=re.I).strip()
        why = None
        if not text:
            why = "empty reply"
        elif "\n" in text:
            why = "reply spans several lines"
        elif text.lower() == prompt.strip().lower():
            why = "reply repeats the prompt"
        elif len(text) > 3 * len(prompt) + 20:
            why = "reply too long"
        else:
            why = keeps_content(prompt, text, share=self.min_share)
        if why is not None:
            return template_paraphrase(prompt, item_id), why
        return text, None


def verify_paraphrase(sid: str, new_text: str, old_text: str, *, share: float) -> list[str]:
    """Problems with one written paraphrase of ``old_text``: unchanged, or content lost (:func:`keeps_content`)."""
    if new_text.strip() == old_text.strip():
        return [f"{sid}: the paraphrase is the original"]
    why = keeps_content(old_text, new_text, share=share)
    return [f"{sid}: {why}"] if why else []
