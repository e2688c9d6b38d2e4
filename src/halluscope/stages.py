"""The interfaces of the pipeline's pluggable stages: claim extractors and claim judges.

Both work on batches, because the fast implementations (sentence embeddings, spaCy) gain from seeing many
inputs at once, while LLM-backed ones fan a batch out into concurrent requests. Both report a failure per
item instead of raising, so one bad answer never stops a run. Caching of stage results is done by the
runner around these calls, keyed on :meth:`identity`, so implementations stay simple.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from halluscope.scene.graph import SceneGraph
from halluscope.types import Claim, Verdict


@dataclass(frozen=True)
class Failure:
    """A stage could not produce a result for one item; ``reason`` says why, in words a user can act on."""

    reason: str


@dataclass
class JudgeItem:
    """Everything a judge may look at for one answer: its claims and the image's ground truth."""

    sample_id: str
    claims: list[Claim]
    scene: SceneGraph
    question: str | None = None
    response: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Extractor(ABC):
    """Turns a free-form answer into (subject, relation, object) claims."""

    name: ClassVar[str]

    def identity(self) -> dict[str, Any]:
        """Everything that changes this extractor's output; part of cache keys and of ``spec.json``."""
        return {"extractor": self.name}

    @abstractmethod
    async def extract_many(self, texts: Sequence[str]) -> list[list[Claim] | Failure]:
        """Claims for each text, in order; a :class:`Failure` where extraction failed."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release clients or models."""


class Judge(ABC):
    """Decides, for each claim, whether the image's ground truth supports it."""

    name: ClassVar[str]

    def identity(self) -> dict[str, Any]:
        """Everything that changes this judge's verdicts; part of cache keys and of ``spec.json``."""
        return {"judge": self.name}

    @abstractmethod
    async def judge_many(self, items: Sequence[JudgeItem]) -> list[list[Verdict] | Failure]:
        """One verdict per claim for each item, in order; a :class:`Failure` where the whole item failed.

        A judge that fails on a single claim returns ``Verdict.unjudged(reason)`` for it instead.
        """

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release clients or models."""
