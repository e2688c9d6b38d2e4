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

from halluscope.stages import Benchmark
from halluscope.types import Sample

__all__ = [
    "LimitOption",
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

    def spec(self, benchmark: Benchmark) -> dict[str, Any]:
        """The benchmark's section of ``spec.json`` for this selection: its own spec over the chosen samples
        (image counts, items with a problem), then how they were chosen."""
        return {**benchmark.spec(self.items), **self.notes}

    def uses_stage(self, benchmark: Benchmark, stage: str) -> bool:
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


def every_sample(benchmark: Benchmark) -> Selection:
    """Every sample of ``benchmark``, in its own order: the selection of a run with no ``--limit``."""
    return Selection(benchmark.every_sample())


def first_samples(benchmark: Benchmark, limit: int | None) -> Selection:
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
