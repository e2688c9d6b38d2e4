"""The model interface: every backend (OpenAI-compatible, transformers, replay, simulators, mitigation
wrappers) answers a :class:`GenerateRequest` with a :class:`GenerateResult` through one async method.

Requests carry the sample's scene graph as an in-memory extra so that scene-based backends (simulators,
the scene-oracle baseline) can answer; it is never serialised or sent to a remote model.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from halluscope.scene.graph import SceneGraph
from halluscope.stages import Failure


class TokenStep(BaseModel):
    """One generated token with its log-probability and the top alternatives at that step."""

    token: str
    logprob: float
    top: dict[str, float] = Field(default_factory=dict)


class ChatTurn(BaseModel):
    """One message: text plus images given by path (backends load and encode them)."""

    role: str = "user"
    text: str
    images: list[str] = Field(default_factory=list)


class GenerateRequest(BaseModel):
    """What to ask a model, and how."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    messages: list[ChatTurn]
    temperature: float = 0.0
    max_tokens: int = 256
    seed: int | None = None
    #: Ask for per-step log-probabilities with this many alternatives (None: none).
    top_logprobs: int | None = None
    #: Answer options whose probabilities matter (["yes", "no"], ["A", "B", "C", "D"]), when the task has them.
    answer_options: list[str] | None = None
    sample_id: str | None = None
    #: Ground truth for scene-based backends only; excluded from serialisation and cache keys.
    scene: SceneGraph | None = Field(default=None, exclude=True)
    metadata: dict[str, Any] = Field(default_factory=dict)


class GenerateResult(BaseModel):
    """A model's answer, with what was measured while producing it."""

    text: str
    logprobs: list[TokenStep] | None = None
    #: Probabilities of the request's answer options at the answering step, when computed.
    option_probs: dict[str, float] | None = None
    usage: dict[str, int] = Field(default_factory=dict)
    latency_s: float = 0.0
    cached: bool = False
    #: Backend extras: transcripts of multi-step mitigations, calibration flags, hidden-state summaries.
    metadata: dict[str, Any] = Field(default_factory=dict)


class Model(ABC):
    """A model under test, registered by ``provider/name``."""

    provider: ClassVar[str]

    def identity(self) -> dict[str, Any]:
        """Everything that changes this model's answers; part of cache keys and of ``spec.json``."""
        return {"provider": self.provider}

    def sees_images(self) -> bool:
        """Whether this model is shown the request's images: a run asking it refuses to start while the
        selected samples' images are missing (:mod:`halluscope.runs.images`).

        Backends that send images to a vision model say True; answering from text, a scene graph or a file
        needs none. A wrapper (a mitigation) sees what the model inside it sees.
        """
        inner = getattr(self, "inner", None)
        return inner.sees_images() if isinstance(inner, Model) else False

    @abstractmethod
    async def generate(self, request: GenerateRequest) -> GenerateResult:
        """Answer one request; raise on failure (``generate_many`` turns errors into per-item failures)."""

    async def generate_many(
        self, requests: Sequence[GenerateRequest], concurrency: int = 4
    ) -> list[GenerateResult | Failure]:
        """Answer many requests concurrently; a failing request gives a :class:`Failure`, not an exception."""
        semaphore = asyncio.Semaphore(max(1, concurrency))

        async def one(request: GenerateRequest) -> GenerateResult | Failure:
            async with semaphore:
                try:
                    return await self.generate(request)
                except Exception as error:  # one bad item must not stop the batch
                    return Failure(f"{type(error).__name__}: {error}")

        return list(await asyncio.gather(*(one(r) for r in requests)))

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release clients, servers or GPU memory."""
