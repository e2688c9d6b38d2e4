"""Tri-HE's training-free mitigation ("eyes closed"), and its general-description ablation, as model wrappers.

Tri-HE found that models hallucinate relations more when they answer while looking: the image invites
plausible-but-absent details. The mitigation splits answering in two:

1. *describe*, with the image: name the objects certainly present that matter for the question, and how
   they relate (``eyes-closed``); or simply describe the image with the question in mind
   (``general-description``, the paper's ablation, which isolates the value of the focused description);
2. *answer*, with the image withheld: answer the question from that description alone.

Both steps go through the wrapped model (any chat backend), each cached by the backend as usual, and both
are kept in the result's metadata (``metadata["mitigation"]``) so the run log shows what was described and
what was answered.
"""

from __future__ import annotations

import hashlib
from typing import Any, ClassVar, Literal

from halluscope.models.base import ChatTurn, GenerateRequest, GenerateResult, Model

Mode = Literal["triplet", "general"]

DESCRIBE_TRIPLET_PROMPT = """\
Someone will ask this question about the image: {question}

Do not answer it yet. First list the objects that you are certain appear in the image and that matter \
for this question, and say how these objects relate to one another (positions, actions, attributes). \
Leave out anything you are not sure you can see."""

DESCRIBE_GENERAL_PROMPT = """\
Someone will ask this question about the image: {question}

Do not answer it yet. Describe the image."""

ANSWER_PROMPT = """\
Notes written by someone who looked at an image:

{notes}

Treat these notes as the only information about the image. Answer the question below without adding \
objects, attributes or relations that the notes do not support.

Question: {question}"""

_DESCRIBE = {"triplet": DESCRIBE_TRIPLET_PROMPT, "general": DESCRIBE_GENERAL_PROMPT}
_NAMES = {"triplet": "eyes-closed", "general": "general-description"}


class EyesClosedModel(Model):
    """Describe with the image, then answer from the description with the image withheld."""

    provider: ClassVar[str] = "eyes-closed"

    def __init__(
        self,
        inner: Model,
        *,
        mode: Mode = "triplet",
        describe_max_tokens: int | None = None,
        describe_temperature: float | None = None,
    ) -> None:
        if mode not in _DESCRIBE:
            raise ValueError(f"unknown eyes-closed mode {mode!r}; choose triplet or general")
        self.inner = inner
        self.mode: Mode = mode
        self.describe_max_tokens = describe_max_tokens
        self.describe_temperature = describe_temperature

    @property
    def name(self) -> str:
        return _NAMES[self.mode]

    def identity(self) -> dict[str, Any]:
        prompts = _DESCRIBE[self.mode] + ANSWER_PROMPT
        return {
            "provider": self.name,
            "prompt_version": hashlib.sha256(prompts.encode()).hexdigest()[:12],
            "describe_max_tokens": self.describe_max_tokens,
            "describe_temperature": self.describe_temperature,
            "inner": self.inner.identity(),
        }

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        turns = list(request.messages)
        last_user = max((i for i, t in enumerate(turns) if t.role == "user"), default=None)
        if last_user is None:
            raise ValueError(f"{self.name}: the request has no user turn to answer")
        question = turns[last_user].text.strip()
        images = [p for t in turns for p in t.images]

        # Step 1: the description, with the images of the conversation.
        describe_text = _DESCRIBE[self.mode].format(question=question)
        describe_turns = [
            *turns[:last_user],
            ChatTurn(role="user", text=describe_text, images=turns[last_user].images),
        ]
        describe_request = request.model_copy(
            update={
                "messages": describe_turns,
                "max_tokens": self.describe_max_tokens or request.max_tokens,
                "temperature": (
                    request.temperature if self.describe_temperature is None else self.describe_temperature
                ),
                "top_logprobs": None,
                "answer_options": None,
            }
        )
        described = await self.inner.generate(describe_request)
        notes = described.text.strip()

        # Step 2: the answer, every image withheld.
        answer_text = ANSWER_PROMPT.format(notes=notes or "(no notes)", question=question)
        answer_turns = [ChatTurn(role=t.role, text=t.text) for t in turns[:last_user]]
        answer_turns.append(ChatTurn(role="user", text=answer_text))
        answered = await self.inner.generate(request.model_copy(update={"messages": answer_turns}))

        usage: dict[str, int] = {}
        for part in (described.usage, answered.usage):
            for key, value in part.items():
                usage[key] = usage.get(key, 0) + value
        transcript = {
            "name": self.name,
            "steps": [
                {
                    "step": "describe",
                    "prompt": describe_text,
                    "images": list(turns[last_user].images),
                    "response": described.text,
                    "cached": described.cached,
                    "usage": described.usage,
                    # a text-only stand-in backend records the images it could not send
                    **_not_sent(described),
                },
                {
                    "step": "answer",
                    "prompt": answer_text,
                    "images": [],
                    "response": answered.text,
                    "cached": answered.cached,
                    "usage": answered.usage,
                },
            ],
            "images_withheld": images,
        }
        return GenerateResult(
            text=answered.text,
            logprobs=answered.logprobs,
            option_probs=answered.option_probs,
            usage=usage,
            latency_s=described.latency_s + answered.latency_s,
            cached=described.cached and answered.cached,
            metadata={**answered.metadata, "mitigation": transcript},
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


def _not_sent(result: GenerateResult) -> dict[str, Any]:
    dropped = result.metadata.get("images_not_sent")
    return {"images_not_sent": dropped} if dropped else {}


def eyes_closed(
    inner: Model, *, describe_max_tokens: int | None = None, describe_temperature: float | None = None
) -> EyesClosedModel:
    """Tri-HE's mitigation: describe the question's objects and relations with the image, then answer
    from that description alone."""
    return EyesClosedModel(
        inner,
        mode="triplet",
        describe_max_tokens=describe_max_tokens,
        describe_temperature=describe_temperature,
    )


def general_description(
    inner: Model, *, describe_max_tokens: int | None = None, describe_temperature: float | None = None
) -> EyesClosedModel:
    """The ablation: a general description of the image, then the answer without it."""
    return EyesClosedModel(
        inner,
        mode="general",
        describe_max_tokens=describe_max_tokens,
        describe_temperature=describe_temperature,
    )
