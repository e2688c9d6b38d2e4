"""The benchmark interface: where samples come from, how a response is scored, and which metrics follow.

Each benchmark scores in its own way (Tri-HE extracts claims and judges them against a scene graph;
Reefknot parses a yes/no or a letter; HQH asks a judge), so scoring lives with the benchmark, while the
run machinery (responses, resume, caching, logs) is shared by all of them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from halluscope.responses import ResponsesFile, read_any_responses
from halluscope.runs.cache import Cache
from halluscope.scene.graph import SceneGraph
from halluscope.stages import Extractor, Judge
from halluscope.types import Response, Sample, SampleRecord


class MetricsReport(BaseModel):
    """The content of a run's ``metrics.json``."""

    benchmark: str
    metrics: dict[str, float | None]
    groups: dict[str, dict[str, float | None]] = Field(default_factory=dict)
    counts: dict[str, int] = Field(default_factory=dict)
    #: Anything else worth keeping that is not a single number (distributions, curves).
    details: dict[str, Any] = Field(default_factory=dict)


@dataclass
class ScoringContext:
    """What a benchmark may use to score: the chosen extractor and judge, and the shared cache."""

    cache: Cache
    extractor: Extractor | None = None
    judge: Judge | None = None
    options: dict[str, Any] = field(default_factory=dict)


class Benchmark(ABC):
    """One benchmark's data, scoring and metrics."""

    name: ClassVar[str]
    #: The extractor and judge used when the user names none (None where the benchmark needs none).
    default_extractor: ClassVar[str | None] = None
    default_judge: ClassVar[str | None] = None

    @abstractmethod
    def samples(self) -> Iterator[Sample]:
        """Every sample, in the benchmark's own order, with stable ids."""

    def scene(self, sample: Sample) -> SceneGraph | None:
        """The scene graph of the sample's image, when the benchmark has one."""
        return None

    def spec(self) -> dict[str, Any]:
        """What identifies this benchmark's data in ``spec.json`` (paths, options, selection)."""
        return {"benchmark": self.name}

    def read_responses(
        self, path: Path, *, benchmark_ids: set[str] | None = None, key: str | None = None
    ) -> ResponsesFile:
        """Read a responses file; benchmarks override this to accept their official answer layouts too."""
        return read_any_responses(path, benchmark_ids=benchmark_ids, key=key)

    @abstractmethod
    async def score_many(
        self, pairs: Sequence[tuple[Sample, Response | None]], ctx: ScoringContext
    ) -> list[SampleRecord]:
        """Score each (sample, response) pair; a missing response gives a record with a ``failure``."""

    @abstractmethod
    def metrics(self, records: Sequence[SampleRecord]) -> MetricsReport:
        """Pure function of the scored records: never calls a model."""
