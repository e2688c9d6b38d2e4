"""Which samples a run asks and scores: the first ``--limit`` N, those a responses file answers, or the items
a responses file defines. Every selection is made here, by the orchestrator, never by a benchmark's loader.

``--limit N`` (:func:`first_samples`): the first N samples in the benchmark's own order (the order of its
files, e.g. POPE's sets one after another, Reefknot's yes/no before multiple choice before VQA). Both the
model (``--model``) and the scoring use that one selection, so a run with ``--limit 3`` asks 3 questions and
scores 3 samples on every benchmark; ``spec.json`` records it (``benchmark.limit`` and
``benchmark.selected_samples``). With ``--only-answered``, the limit is taken first and the unanswered among
those N are then left out.

``--only-answered`` (:func:`answered_only`): a user who answered 32 of Tri-HE's 1,226 questions wants 32
records, not 1,226 of which 1,194 are "no response" placeholders that swell ``samples.jsonl``, the counts
and the HTML report. The rates do not change either way (unanswered samples are left out of them); what
changes is that the run says what it scored, and ``spec.json`` records the selection
(``benchmark.only_answered``), so a later run without the option is not mixed into the same directory.

Python use: ``run_benchmark(answered_only(first_samples(bench, 10), answers), answers, ctx, out)``.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, TypeVar

from halluscope.stages import Benchmark
from halluscope.types import Sample

__all__ = ["LimitOption", "answered_only", "first_samples", "items_from_responses", "limit_from_options"]

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


def first_samples(benchmark: B, limit: int | None) -> B:
    """A copy of ``benchmark`` whose samples are its first ``limit`` (all of them when ``limit`` is None).

    Why one function: the model is asked and the answers are scored on this same selection, so a run never
    asks questions it does not score or scores samples it never asked. The copy keeps the benchmark's own
    class, as :func:`answered_only` does; its ``spec()`` adds ``limit`` and ``selected_samples`` (how many
    there are, fewer than ``limit`` when the benchmark is smaller).
    """
    if limit is None:
        return benchmark
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    chosen = list(islice(benchmark.samples(), limit))
    base: type[Benchmark] = type(benchmark)

    def samples(self: Benchmark) -> Iterator[Sample]:
        return iter(chosen)

    def spec(self: Benchmark) -> dict[str, Any]:
        return {**base.spec(self), "limit": limit, "selected_samples": len(chosen)}

    limited = copy.copy(benchmark)
    limited.__class__ = type(
        f"First{base.__name__}",
        (base,),
        {"samples": samples, "spec": spec, "__module__": base.__module__, "__doc__": base.__doc__},
    )
    return limited


@dataclass(frozen=True)
class LimitOption:
    """The run's limit once ``--bench-opt limit=N`` (the old spelling) is taken out of the benchmark options."""

    bench_options: dict[str, Any]
    limit: int | None
    #: What to write instead, when the old spelling was used (None otherwise).
    note: str | None = None


def limit_from_options(
    bench_options: Mapping[str, Any], limit: int | None, surface: str = "cli"
) -> LimitOption:
    """Take ``limit`` out of the benchmark options: it is the run's ``--limit``, under another name.

    Why: benchmarks used to apply a ``limit`` option themselves, each its own way (POPE per question file,
    AMBER per type, Reefknot split over tasks), so ``--limit 3`` could ask 3 questions and score 27. The
    option still works and means what ``--limit`` means: the first N samples of the run. Raises
    :class:`ValueError` (one line) when it is not a whole number of at least 1 or contradicts ``limit``.
    ``surface`` ("cli" or "api") says how the messages spell the options.
    """
    options = dict(bench_options)
    if "limit" not in options:
        return LimitOption(options, limit)
    raw = options.pop("limit")
    api = surface == "api"
    given = f"bench_options['limit']={raw!r}" if api else f"--bench-opt limit={raw}"

    def run_limit(n: Any) -> str:
        return f"limit={n}" if api else f"--limit {n}"

    try:
        alias = int(str(raw).strip())
    except ValueError:
        raise ValueError(f"{given}: not a whole number; give {run_limit('N')} instead") from None
    if alias < 1:
        raise ValueError(f"{given}: must be at least 1; give {run_limit('N')} instead")
    if limit is not None and limit != alias:
        once = run_limit("N")
        raise ValueError(f"{given} and {run_limit(limit)} disagree; give the number of samples once, as {once}")
    note = f"{given} is the run's {run_limit(alias)} now (the first {alias} samples of the run)"
    note += f"; write {run_limit(alias)}"
    return LimitOption(options, alias, note)
