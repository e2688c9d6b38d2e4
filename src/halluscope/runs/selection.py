"""Which samples a run asks and scores: the first ``--limit`` N, those a responses file answers, or the items
a responses file defines. Every selection is made here, by the orchestrator, and held as a
:class:`Selection` (the chosen samples in order, and what ``spec.json`` says about the choice); a benchmark
is never copied or changed to select.

``--limit N`` (:func:`first_samples`): the first N samples in the benchmark's own order (the order of its
files, e.g. POPE's sets one after another, Reefknot's yes/no before multiple choice before VQA). Both the
model (``--model``) and the scoring use that one selection, so a run with ``--limit 3`` asks 3 questions and
scores 3 samples on every benchmark; ``spec.json`` records it (``benchmark.limit`` and
``benchmark.selected_samples``). With ``--only-answered``, the limit is taken first and the unanswered among
those N are then left out.

``--only-answered`` (:meth:`Selection.answered`): a user who answered 32 of Tri-HE's 1,226 questions wants 32
records, not 1,226 of which 1,194 are "no response" placeholders that swell ``samples.jsonl``, the counts
and the HTML report. The rates do not change either way (unanswered samples are left out of them); what
changes is that the run says what it scored, and ``spec.json`` records the selection
(``benchmark.only_answered``), so a later run without the option is not mixed into the same directory.

Python use: ``run_benchmark(bench, answers, ctx, out, selection=first_samples(bench, 10).answered(answers))``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import islice
from types import MappingProxyType
from typing import Any

from halluscope.spelling import Given, Message, PhrasedError, phrase
from halluscope.stages import BenchmarkInterface
from halluscope.types import Sample

__all__ = [
    "LimitOption",
    "LimitOptionError",
    "Selection",
    "every_sample",
    "first_samples",
    "items_from_responses",
    "limit_from_options",
]


@dataclass(frozen=True)
class Selection:
    """The samples a run asks and scores, in order, and what ``spec.json`` records about how they were chosen.

    Why a value and not a narrowed copy of the benchmark: the benchmark stays the one the user configured,
    and everything that depends on the choice (the questions asked, the samples scored, the benchmark's
    ``spec`` and the stages it uses) is handed the chosen samples explicitly.
    """

    items: tuple[Sample, ...]
    #: What the benchmark's section of ``spec.json`` adds, in order (``limit``, ``only_answered``, ...).
    notes: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def samples(self) -> Iterator[Sample]:
        """The chosen samples, in the run's order."""
        return iter(self.items)

    def ids(self) -> list[str]:
        """The chosen sample ids, in the run's order."""
        return [sample.id for sample in self.items]

    def __len__(self) -> int:
        return len(self.items)

    def spec(self, benchmark: BenchmarkInterface) -> dict[str, Any]:
        """The benchmark's section of ``spec.json`` for this selection: its own spec over the chosen samples
        (image counts, items with a problem), then how they were chosen."""
        return {**benchmark.spec(self.items), **self.notes}

    def uses_stage(self, benchmark: BenchmarkInterface, stage: str) -> bool:
        """Whether scoring the chosen samples calls ``stage`` (a Reefknot run without VQA uses no judge)."""
        return benchmark.uses_stage(stage, self.items)

    def first(self, limit: int | None) -> Selection:
        """The first ``limit`` of these (all of them when ``limit`` is None); ``spec.json`` adds ``limit`` and
        ``selected_samples`` (fewer than ``limit`` when there are fewer)."""
        if limit is None:
            return self
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        chosen = tuple(islice(self.items, limit))
        return self._with(chosen, limit=limit, selected_samples=len(chosen))

    def answered(self, responses: Collection[str]) -> Selection:
        """Those with an id in ``responses`` (ids, or a mapping by id); ``spec.json`` adds ``only_answered``."""
        ids = frozenset(responses)
        return self._with(tuple(s for s in self.items if s.id in ids), only_answered=True)

    def _with(self, items: tuple[Sample, ...], **notes: Any) -> Selection:
        return replace(self, items=items, notes=MappingProxyType({**self.notes, **notes}))


def every_sample(benchmark: BenchmarkInterface) -> Selection:
    """Every sample of ``benchmark``, in its own order: the selection of a run with no ``--limit``."""
    return Selection(benchmark.every_sample())


def first_samples(benchmark: BenchmarkInterface, limit: int | None) -> Selection:
    """The first ``limit`` samples of ``benchmark`` (all of them when ``limit`` is None).

    Why one function: the model is asked and the answers are scored on this same selection, so a run never
    asks questions it does not score or scores samples it never asked. Only the first ``limit`` samples are
    read from the benchmark.
    """
    if limit is None:
        return every_sample(benchmark)
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    chosen = tuple(islice(benchmark.samples(), limit))
    return Selection(chosen, MappingProxyType({"limit": limit, "selected_samples": len(chosen)}))


def items_from_responses(items: Sequence[Sample], note: str | None = None) -> Selection:
    """The items a responses file defined itself, as the run's selection.

    Why: some files cannot be tied to the benchmark's own items (VLMEvalKit's POPE sheet names no COCO
    image), yet carry their own labels; scoring them on those labels is honest only when the run says so,
    so ``spec.json`` records it (``benchmark.items_from_responses``). The benchmark's own scoring and
    metrics are used on them.
    """
    chosen = tuple(items)
    labels = note or "the responses file's own labels"
    return Selection(chosen, MappingProxyType({"items_from_responses": {"count": len(chosen), "labels": labels}}))


@dataclass(frozen=True)
class LimitOption:
    """The run's limit once ``--bench-opt limit=N`` (the old spelling) is taken out of the benchmark options."""

    bench_options: dict[str, Any]
    limit: int | None
    #: What to write instead, when the old spelling was used (None otherwise); ``str()`` is the command
    #: line's phrasing.
    note: Message | None = None


class LimitOptionError(PhrasedError, ValueError):
    """``--bench-opt limit=N`` that is no number of samples, or contradicts ``--limit`` (named per surface)."""


def limit_from_options(bench_options: Mapping[str, Any], limit: int | None) -> LimitOption:
    """Take ``limit`` out of the benchmark options: it is the run's ``--limit``, under another name.

    Why: benchmarks used to apply a ``limit`` option themselves, each its own way (POPE per question file,
    AMBER per type, Reefknot split over tasks), so ``--limit 3`` could ask 3 questions and score 27. The
    option still works and means what ``--limit`` means: the first N samples of the run. Raises
    :class:`LimitOptionError` (one line) when it is not a whole number of at least 1 or contradicts
    ``limit``. The note and the errors name the options, phrased for the surface that shows them.
    """
    options = dict(bench_options)
    if "limit" not in options:
        return LimitOption(options, limit)
    raw = options.pop("limit")
    given, any_limit = Given("bench_options", raw, key="limit"), Given("limit", "N", literal=True)
    try:
        alias = int(str(raw).strip())
    except ValueError:
        not_whole = phrase("{given}: not a whole number; give {n} instead", given=given, n=any_limit)
        raise LimitOptionError(not_whole) from None
    if alias < 1:
        raise LimitOptionError(phrase("{given}: must be at least 1; give {n} instead", given=given, n=any_limit))
    if limit is not None and limit != alias:
        raise LimitOptionError(
            phrase(
                "{given} and {limit} disagree; give the number of samples once, as {n}",
                given=given,
                limit=Given("limit", limit),
                n=any_limit,
            )
        )
    note = phrase(
        "{given} is the run's {limit} now (the first {alias} samples of the run); write {limit}",
        given=given, limit=Given("limit", alias), alias=alias,
    )  # fmt: skip
    return LimitOption(options, alias, note)
