"""Scoring only the samples a responses file answers (``halluscope run --only-answered``).

Why: a user who answered 32 of Tri-HE's 1,226 questions wants 32 records, not 1,226 of which 1,194 are
"no response" placeholders that swell ``samples.jsonl``, the counts and the HTML report. The rates do not
change either way (unanswered samples are left out of them); what changes is that the run says what it
scored, and ``spec.json`` records the selection (``benchmark.only_answered``), so a later run without
the option is not mixed into the same directory.

Python use: ``run_benchmark(answered_only(bench, answers), answers, ctx, out)``.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Iterator, Sequence
from typing import Any, TypeVar

from halluscope.stages import Benchmark
from halluscope.types import Sample

__all__ = ["answered_only", "items_from_responses"]

B = TypeVar("B", bound=Benchmark)


def answered_only(benchmark: B, responses: Collection[str]) -> B:
    """A copy of ``benchmark`` whose samples are only those with an id in ``responses`` (ids, or a mapping).

    The copy is still an instance of the benchmark's own class (a subclass made on the fly that changes
    only :meth:`~Benchmark.samples` and :meth:`~Benchmark.spec`), so every other method, option and default
    stage is the benchmark's own, including ones added to the interface later. ``benchmark`` itself is
    left as it was.
    """
    ids = frozenset(responses)
    base: type[Benchmark] = type(benchmark)

    def samples(self: Benchmark) -> Iterator[Sample]:
        return (sample for sample in base.samples(self) if sample.id in ids)

    def spec(self: Benchmark) -> dict[str, Any]:
        return {**base.spec(self), "only_answered": True}

    restricted = copy.copy(benchmark)
    restricted.__class__ = type(
        f"AnsweredOnly{base.__name__}",
        (base,),
        {"samples": samples, "spec": spec, "__module__": base.__module__, "__doc__": base.__doc__},
    )
    return restricted


def items_from_responses(benchmark: B, items: Sequence[Sample], note: str | None = None) -> B:
    """A copy of ``benchmark`` whose samples are ``items``: those a responses file defined itself.

    Why: some files cannot be tied to the benchmark's own items (VLMEvalKit's POPE sheet names no COCO
    image), yet carry their own labels; scoring them on those labels is honest only when the run says so,
    so ``spec.json`` records it (``benchmark.items_from_responses``). As with :func:`answered_only`, the copy
    keeps the benchmark's own class, scoring and metrics.
    """
    chosen = list(items)
    base: type[Benchmark] = type(benchmark)

    def samples(self: Benchmark) -> Iterator[Sample]:
        return iter(chosen)

    def spec(self: Benchmark) -> dict[str, Any]:
        return {
            **base.spec(self),
            "items_from_responses": {"count": len(chosen), "labels": note or "the responses file's own labels"},
        }

    copied = copy.copy(benchmark)
    copied.__class__ = type(
        f"FromResponses{base.__name__}",
        (base,),
        {"samples": samples, "spec": spec, "__module__": base.__module__, "__doc__": base.__doc__},
    )
    return copied
