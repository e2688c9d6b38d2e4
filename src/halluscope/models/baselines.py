"""Two baselines that need no image model, for calibrating a benchmark.

- ``blind``: a text-only LLM answers the question without the image. What it says comes from language
  priors alone ("a kitchen has a fridge"), so its hallucination rate shows how far a benchmark can be passed
  by guessing what such photos usually contain.
- ``scene-oracle``: a text-only LLM answers from the image's scene graph rendered as text (PROVE's oracle
  idea). It sees exactly the facts the judge checks against, so it marks what a model that perceives
  perfectly, and only reasons in words, would score.

Both wrap any text backend named by an inner spec: ``blind/openai/qwen?base_url=http://127.0.0.1:8080/v1``
runs the blind baseline through ``openai/qwen`` (the options go to the inner backend).
"""

from __future__ import annotations

import hashlib
from typing import Any, ClassVar

from halluscope.cache import Cache
from halluscope.models.base import ChatTurn, GenerateRequest, GenerateResult, Model

BLIND_PROMPT = """\
Here is a question someone asked about a photograph. The photograph is not available to you, so answer \
the way a person would who can only guess what such a photo usually shows. Do not say that you cannot \
see it; give a direct answer in one or two sentences.

Question: {question}"""

SCENE_ORACLE_PROMPT = """\
The facts below list everything in a photograph: its objects, what they look like and how they relate \
to each other.

{scene}

Answer the question about this photograph in one or two sentences, using only these facts. Do not \
mention any object or relation the facts do not state.

Question: {question}"""


class SceneMissingError(ValueError):
    """scene-oracle was asked about a sample whose benchmark gives no scene graph."""


def _prompt_version(template: str) -> str:
    return hashlib.sha256(template.encode()).hexdigest()[:12]


class _TextBaseline(Model):
    """Replace the last user turn with a text-only prompt and ask the inner backend; never send images."""

    template: ClassVar[str]

    def __init__(self, inner: Model) -> None:
        self.inner = inner

    @classmethod
    def from_spec(cls, spec: str, *, cache: Cache | None = None, **options: Any) -> _TextBaseline:
        """``spec`` names the inner text backend (``openai/<name>``, ``hf/<repo>``, ...)."""
        from halluscope.models.spec import create_model

        if not spec or "/" not in spec:
            raise ValueError(
                f"{cls.provider} needs an inner text model, written {cls.provider}/<provider>/<name> "
                f"(e.g. {cls.provider}/openai/qwen2.5?base_url=http://127.0.0.1:8080/v1)"
            )
        return cls(create_model(spec, cache=cache, **options))

    def identity(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "prompt_version": _prompt_version(self.template),
            "inner": self.inner.identity(),
        }

    def sees_images(self) -> bool:
        return False  # never sends the image, whatever the inner model could see

    def render(self, question: str, request: GenerateRequest) -> str:
        return self.template.format(question=question.strip())

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        turns = [ChatTurn(role=t.role, text=t.text) for t in request.messages]  # images dropped
        last_user = max((i for i, t in enumerate(turns) if t.role == "user"), default=None)
        if last_user is None:
            raise ValueError(f"{self.provider}: the request has no user turn to answer")
        turns[last_user] = ChatTurn(role="user", text=self.render(turns[last_user].text, request))
        inner_request = request.model_copy(update={"messages": turns})
        result = await self.inner.generate(inner_request)
        metadata = {**result.metadata, "baseline": self.provider}
        return result.model_copy(update={"metadata": metadata})

    async def aclose(self) -> None:
        await self.inner.aclose()


class BlindModel(_TextBaseline):
    """Answers without the image: the language-prior baseline."""

    provider: ClassVar[str] = "blind"
    template: ClassVar[str] = BLIND_PROMPT


class SceneOracleModel(_TextBaseline):
    """Answers from the image's scene graph rendered as text: the perfect-perception baseline."""

    provider: ClassVar[str] = "scene-oracle"
    template: ClassVar[str] = SCENE_ORACLE_PROMPT

    def render(self, question: str, request: GenerateRequest) -> str:
        if request.scene is None:
            raise SceneMissingError(
                f"scene-oracle needs the image's scene graph, and sample {request.sample_id!r} has none "
                "(use a benchmark that provides scene graphs, such as tri-he)"
            )
        facts = request.scene.describe().strip()
        if not facts:
            raise SceneMissingError(f"the scene graph of sample {request.sample_id!r} is empty")
        return self.template.format(scene=facts, question=question.strip())
