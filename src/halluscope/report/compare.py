"""Paired comparison of finished runs: is a difference between two runs on the same items real?

Two runs of one benchmark (two models, or a decoding method against greedy decoding) are compared on the items
both scored, metric by declared metric, from the ``metric_tables.json`` each run saved: the difference, its
paired interval, a p-value (McNemar's exact test for a share of independent items, the paired cluster bootstrap
otherwise) and Holm's adjustment across the metrics and candidates compared. Runs of different benchmarks, or
with no item in common, are refused: a comparison of different items would compare nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from halluscope.metrics.declared import compare_declared, declared_intervals
from halluscope.metrics.stats import DEFAULT_LEVEL, Interval, PairedComparison, holm_adjust
from halluscope.metrics.stats.interval import two_sided_z
from halluscope.runs.store import RunDirError, read_metric_tables, read_metrics
from halluscope.stages import MetricDeclaration, MetricTable

__all__ = [
    "ComparisonError",
    "MetricComparison",
    "RunComparison",
    "compare_runs",
    "detectable_difference",
    "run_intervals",
    "scored_item_ids",
]


def scored_item_ids(run_dir: Path) -> set[str] | None:
    """The ids of the items a run's declared figures count (every table's rows); None where it saved no
    tables (a benchmark that declares no headline)."""
    try:
        _, tables = read_metric_tables(run_dir)
    except RunDirError:
        return None
    return {item for table in tables.values() for item in table.ids}


class ComparisonError(ValueError):
    """Two runs cannot be compared (different benchmarks, no shared items, no saved tables)."""


class MetricComparison(BaseModel):
    """One metric of a candidate run against the baseline."""

    model_config = ConfigDict(frozen=True)

    metric: str
    higher_is_better: bool | None
    comparison: PairedComparison | None
    #: The smallest difference this pair of runs would detect at 80 % power and a 5 % level (paired).
    detectable: float | None = None


class RunComparison(BaseModel):
    """A candidate run against the baseline, metric by metric, on the items both scored."""

    baseline: str
    candidate: str
    benchmark: str
    #: Items each run scored, and those both did (per table of items: the comparison uses only these).
    baseline_items: int
    candidate_items: int
    shared_items: int
    metrics: list[MetricComparison]


def _load(run_dir: Path) -> tuple[str, list[MetricDeclaration], dict[str, MetricTable]]:
    benchmark = read_metrics(run_dir).benchmark
    declarations, tables = read_metric_tables(run_dir)
    return benchmark, declarations, tables


def detectable_difference(
    interval: Interval | None, *, paired: bool, alpha: float = 0.05, power: float = 0.8
) -> float | None:
    """The smallest true difference a two-sided test at ``alpha`` finds with ``power``, from an interval's own
    standard error (half its width over z): ``(z_{1-alpha/2} + z_power) · SE``, with the SE of a difference of
    two independent runs of this size (√2 · SE) unless the interval is already that of a paired difference."""
    if interval is None:
        return None
    standard_error = interval.width / (2.0 * two_sided_z(interval.level))
    if not paired:
        standard_error *= math.sqrt(2.0)
    return (two_sided_z(1.0 - alpha) + two_sided_z(2.0 * power - 1.0)) * standard_error


def run_intervals(
    run_dir: Path, *, level: float = DEFAULT_LEVEL
) -> tuple[list[MetricDeclaration], dict[str, Interval | None]]:
    """Each declared headline's interval of a finished run at ``level``, recomputed from its saved tables."""
    _, declarations, tables = _load(Path(run_dir))
    return declarations, declared_intervals(declarations, tables, level=level)


def _rows(tables: dict[str, MetricTable], declarations: Sequence[MetricDeclaration]) -> set[str]:
    main = declarations[0].table if declarations else "items"
    return set(tables[main].ids) if main in tables else set()


def compare_runs(
    baseline: Path, candidates: Sequence[Path], *, level: float = DEFAULT_LEVEL
) -> list[RunComparison]:
    """Each candidate against ``baseline``, Holm-adjusted across every metric and candidate shown together."""
    try:
        base_name, declarations, base_tables = _load(Path(baseline))
    except RunDirError as error:
        raise ComparisonError(str(error)) from error
    results: list[RunComparison] = []
    for candidate in candidates:
        try:
            name, _, cand_tables = _load(Path(candidate))
        except RunDirError as error:
            raise ComparisonError(str(error)) from error
        if name != base_name:
            raise ComparisonError(f"{candidate} is a {name} run and {baseline} a {base_name} run: nothing to pair")
        base_rows, cand_rows = _rows(base_tables, declarations), _rows(cand_tables, declarations)
        shared = base_rows & cand_rows
        if not shared:
            raise ComparisonError(
                f"{baseline} and {candidate} scored no item in common ({len(base_rows)} and {len(cand_rows)} "
                "items): a paired comparison needs the same items"
            )
        compared = compare_declared(declarations, base_tables, cand_tables, level=level)
        metrics = [_metric(d, compared[d.name]) for d in declarations]
        comparison = RunComparison(
            baseline=Path(baseline).name, candidate=Path(candidate).name, benchmark=name,
            baseline_items=len(base_rows), candidate_items=len(cand_rows), shared_items=len(shared),
            metrics=metrics,
        )  # fmt: skip
        results.append(comparison)
    return _holm_across(results)


def _metric(declaration: MetricDeclaration, comparison: PairedComparison | None) -> MetricComparison:
    interval = None if comparison is None else comparison.interval
    return MetricComparison(
        metric=declaration.name, higher_is_better=declaration.higher_is_better, comparison=comparison,
        detectable=detectable_difference(interval, paired=True),
    )  # fmt: skip


def _holm_across(results: list[RunComparison]) -> list[RunComparison]:
    """Holm's adjustment over every p-value shown together (all metrics of all candidates)."""
    shown = [(i, j, m.comparison) for i, r in enumerate(results) for j, m in enumerate(r.metrics) if m.comparison]
    adjusted = holm_adjust([comparison.p_value for _, _, comparison in shown])
    for (i, j, comparison), p in zip(shown, adjusted, strict=True):
        metric = results[i].metrics[j]
        adjusted_comparison = comparison.model_copy(update={"p_adjusted": p})
        results[i].metrics[j] = metric.model_copy(update={"comparison": adjusted_comparison})
    return results
