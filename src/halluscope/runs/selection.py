"""Scoring only the samples a responses file answers (``halluscope run --only-answered``).

Why: a user who answered 32 of Tri-HE's 1,226 questions wants 32 records, not 1,226 of which 1,194 are
"no response" placeholders that swell ``samples.jsonl``, the counts and the HTML report. The rates do not
change either way (unanswered samples are left out of them); what changes is that the run says what it
scored, and ``spec.json`` records the selection (``benchmark.only_answered``), so a later run without
the option is not mixed into the same directory.

Python use: ``run_benchmark(answered_only(bench, answers), answers, ctx, out)``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from halluscope.responses import ResponsesFile
from halluscope.scene.graph import SceneGraph
from halluscope.stages import Benchmark, ScoringContext
from halluscope.types import MetricsReport, Response, Sample, SampleRecord

__all__ = ["AnsweredOnly", "answered_only"]


class AnsweredOnly(Benchmark):
    """``inner`` restricted to the samples whose id is in ``ids``; everything else is ``inner``'s own."""

    name: ClassVar[str] = "answered-only"

    def __init__(self, inner: Benchmark, ids: Collection[str]) -> None:
        self.inner = inner
        self.ids = frozenset(ids)
        # The run is still the inner benchmark's run: its name, default stages and metrics.
        object.__setattr__(self, "name", inner.name)
        object.__setattr__(self, "default_extractor", inner.default_extractor)
        object.__setattr__(self, "default_judge", inner.default_judge)

    def __getattr__(self, attribute: str) -> Any:
        # Anything a caller reads off a particular benchmark (its data folder, official rows, options).
        return getattr(self.inner, attribute)

    def samples(self) -> Iterator[Sample]:
        return (sample for sample in self.inner.samples() if sample.id in self.ids)

    def scene(self, sample: Sample) -> SceneGraph | None:
        return self.inner.scene(sample)

    def spec(self) -> dict[str, Any]:
        return {**self.inner.spec(), "only_answered": True}

    def read_responses(
        self, path: Path, *, benchmark_ids: set[str] | None = None, key: str | None = None
    ) -> ResponsesFile:
        return self.inner.read_responses(path, benchmark_ids=benchmark_ids, key=key)

    async def score_many(
        self, pairs: Sequence[tuple[Sample, Response | None]], ctx: ScoringContext
    ) -> list[SampleRecord]:
        return await self.inner.score_many(pairs, ctx)

    def metrics(self, records: Sequence[SampleRecord]) -> MetricsReport:
        return self.inner.metrics(records)


def answered_only(benchmark: Benchmark, responses: Collection[str]) -> AnsweredOnly:
    """``benchmark`` limited to the ids of ``responses`` (a mapping of id → Response, or the ids)."""
    return AnsweredOnly(benchmark, responses)
