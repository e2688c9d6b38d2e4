"""Intervals and paired comparisons for every benchmark, made once from its metric declarations.

A benchmark declares its headline metrics (:class:`halluscope.stages.MetricDeclaration`: which components,
ratio or F1, over which resampling unit) and gives the per-item components in tables
(:meth:`halluscope.stages.BenchmarkInterface.metric_tables`). Everything here works on those two alone, so POPE's
F1 over images, HallusionBench's figure accuracy and CHAIRi over captions all get their interval, their
paired test and their detectable difference from the same code.

Which interval: a share of independent items (a ratio of 0/1 hits over 1s, each row its own unit) gets
Wilson's score interval, exact enough at any size and never outside [0, 100]; everything else (F1, a ratio
of counts, rows that share an image) gets the seeded cluster bootstrap over the declared unit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from halluscope.metrics.stats import (
    DEFAULT_LEVEL,
    DEFAULT_RESAMPLES,
    ClusteredSums,
    Interval,
    PairedComparison,
    Statistic,
    f1,
    mcnemar_exact,
    paired_bootstrap,
    proportion_interval,
    ratio,
    with_holm,
)
from halluscope.metrics.stats.bootstrap import bootstrap_replicates, bootstrap_shared
from halluscope.metrics.stats.interval import check_level
from halluscope.metrics.stats.judge_error import Agreement, corrected_interval
from halluscope.stages import MetricDeclaration, MetricTable

__all__ = [
    "DEFAULT_SEED",
    "DeclaredValue",
    "compare_declared",
    "corrected_for_judge",
    "declared_group_intervals",
    "declared_intervals",
    "declared_sums",
    "declared_value",
    "statistic_of",
]

#: The bootstrap seed when none is given: the same run always gets the same interval.
DEFAULT_SEED = 0


def statistic_of(declaration: MetricDeclaration) -> Statistic:
    """The vectorised statistic a declaration names, on the declared scale."""
    if declaration.statistic == "ratio":
        numerator, denominator = declaration.components
        return ratio(numerator, denominator, scale=declaration.scale)
    tp, fp, fn = declaration.components
    return f1(tp, fp, fn, scale=declaration.scale)


def _table(declaration: MetricDeclaration, tables: Mapping[str, MetricTable]) -> MetricTable:
    table = tables.get(declaration.table)
    if table is None:
        raise ValueError(
            f"metric {declaration.name!r} reads table {declaration.table!r}, which the benchmark does not give "
            f"(it gives {', '.join(sorted(tables)) or 'none'})"
        )
    missing = [c for c in declaration.components if c not in table.components]
    if missing:
        raise ValueError(f"metric {declaration.name!r}: table {declaration.table!r} lacks {', '.join(missing)}")
    return table


def _rows_sums(
    table: MetricTable, names: Sequence[str], unit: str, rows: NDArray[np.intp] | None
) -> ClusteredSums | None:
    """The components ``names`` of ``table`` summed per unit, over ``rows`` (all when None); vectorised, since
    a table holds one row per question (27,000 for POPE) and intervals are made per group too."""
    count = len(table.ids) if rows is None else rows.size
    if count == 0:
        return None
    columns = [np.asarray(table.components[name], dtype=float) for name in names]
    if rows is not None:
        columns = [column[rows] for column in columns]
    for name, column in zip(names, columns, strict=True):
        bad = np.flatnonzero(~np.isfinite(column))
        if bad.size:
            row = int(bad[0]) if rows is None else int(rows[bad[0]])
            raise ValueError(f"item {table.ids[row]!r} has a non-finite {name!r} value ({column[bad[0]]})")
    if table.clusters is None:
        sums = np.stack(columns, axis=1)
        ids: tuple[str, ...] = tuple(table.ids if rows is None else (table.ids[i] for i in rows))
    else:
        clusters = np.asarray(table.clusters, dtype=object)
        if rows is not None:
            clusters = clusters[rows]
        unique, index = np.unique(clusters.astype(str), return_inverse=True)
        sums = np.stack([np.bincount(index, weights=c, minlength=unique.size) for c in columns], axis=1)
        ids = tuple(unique.tolist())
    return ClusteredSums(names=tuple(names), sums=sums, cluster_ids=ids, n=count, unit=unit)


def _selected_rows(table: MetricTable, ids: set[str] | None) -> NDArray[np.intp] | None:
    if ids is None:
        return None
    return np.fromiter((i for i, row_id in enumerate(table.ids) if row_id in ids), dtype=np.intp)


def declared_sums(
    declaration: MetricDeclaration, tables: Mapping[str, MetricTable], *, ids: set[str] | None = None
) -> ClusteredSums | None:
    """The declaration's components summed per resampling unit; only rows whose id is in ``ids`` when given
    (the items two runs share). None when no row is left."""
    table = _table(declaration, tables)
    return _rows_sums(table, declaration.components, table.unit or declaration.unit, _selected_rows(table, ids))


def declared_value(declaration: MetricDeclaration, tables: Mapping[str, MetricTable]) -> float | None:
    """The metric's point estimate from its declaration: equal to the benchmark's own figure."""
    sums = declared_sums(declaration, tables)
    return None if sums is None else sums.evaluate(statistic_of(declaration))


def _is_share_of_independent_items(declaration: MetricDeclaration, sums: ClusteredSums) -> bool:
    """A ratio of 0/1 hits over rows that each count once, every row its own unit: a plain proportion."""
    if declaration.statistic != "ratio" or sums.units != sums.n:
        return False
    hits, items = (sums.sums[:, sums.names.index(name)] for name in declaration.components)
    return bool(np.all(np.isin(items, (0.0, 1.0))) and np.all(np.isin(hits, (0.0, 1.0))) and np.all(hits <= items))


def _wilson(declaration: MetricDeclaration, sums: ClusteredSums, level: float) -> Interval | None:
    hits, items = (round(float(sums.sums[:, sums.names.index(name)].sum())) for name in declaration.components)
    interval = proportion_interval(hits, items, level=level, unit=sums.unit)
    return None if interval is None else interval.scaled(declaration.scale)


def _intervals_over_rows(
    declarations: Sequence[MetricDeclaration],
    table: MetricTable,
    rows: NDArray[np.intp] | None,
    level: float,
    resamples: int,
    seed: int,
) -> dict[str, tuple[float | None, Interval | None]]:
    """Value and interval of each declaration (all of one table and unit) over ``rows``, the bootstrap ones
    sharing one draw of units."""
    return _intervals_of_tables([(declarations, table, rows)], level, resamples, seed)


def _intervals_of_tables(
    parts: Sequence[tuple[Sequence[MetricDeclaration], MetricTable, NDArray[np.intp] | None]],
    level: float,
    resamples: int,
    seed: int,
) -> dict[str, tuple[float | None, Interval | None]]:
    """:func:`_intervals_over_rows` of each part (declarations of one table and unit, over rows), the
    bootstrapped ones of parts with as many units sharing one draw (:func:`bootstrap_shared`: the same
    intervals as a draw each)."""
    out: dict[str, tuple[float | None, Interval | None]] = {}
    bootstrapped: list[tuple[ClusteredSums, dict[str, Statistic]]] = []
    for declarations, table, rows in parts:
        names = list(dict.fromkeys(c for d in declarations for c in d.components))
        sums = _rows_sums(table, names, table.unit or declarations[0].unit, rows)
        if sums is None:
            continue
        statistics: dict[str, Statistic] = {}
        for declaration in declarations:
            value = sums.evaluate(statistic_of(declaration))
            if _is_share_of_independent_items(declaration, sums):
                out[declaration.name] = (value, _wilson(declaration, sums, level))
            else:
                out[declaration.name] = (value, None)
                statistics[declaration.name] = statistic_of(declaration)
        if statistics:
            bootstrapped.append((sums, statistics))
    for intervals in bootstrap_shared(bootstrapped, level=level, resamples=resamples, seed=seed):
        for name, interval in intervals.items():
            out[name] = (out[name][0], interval)
    return out


def _by_table(declarations: Sequence[MetricDeclaration]) -> dict[tuple[str, str], list[MetricDeclaration]]:
    groups: dict[tuple[str, str], list[MetricDeclaration]] = {}
    for declaration in declarations:
        groups.setdefault((declaration.table, declaration.unit), []).append(declaration)
    return groups


def declared_intervals(
    declarations: Sequence[MetricDeclaration],
    tables: Mapping[str, MetricTable],
    *,
    level: float = DEFAULT_LEVEL,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> dict[str, Interval | None]:
    """Each declared metric's interval at ``level``; None where the metric is undefined on these records."""
    level = check_level(level)
    parts: list[tuple[Sequence[MetricDeclaration], MetricTable, NDArray[np.intp] | None]] = []
    for same in _by_table(declarations).values():
        table = _table(same[0], tables)
        for declaration in same:
            _table(declaration, tables)  # every component is there
        parts.append((same, table, None))
    found = _intervals_of_tables(parts, level, resamples, seed)
    return {d.name: found.get(d.name, (None, None))[1] for d in declarations}


def declared_group_intervals(
    declarations: Sequence[MetricDeclaration],
    tables: Mapping[str, MetricTable],
    *,
    level: float = DEFAULT_LEVEL,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> dict[str, dict[str, tuple[float | None, Interval | None]]]:
    """Per group of rows (tables that give ``groups``), each declared metric's point estimate and interval."""
    level = check_level(level)
    out: dict[str, dict[str, tuple[float | None, Interval | None]]] = {}
    for same in _by_table(declarations).values():
        table = _table(same[0], tables)
        if table.groups is None:
            continue
        labels = np.asarray(table.groups, dtype=str)
        for group in sorted(set(table.groups)):
            rows = np.flatnonzero(labels == group)
            found = _intervals_over_rows(same, table, rows, level, resamples, seed)
            out.setdefault(group, {}).update(found)
    return out


def corrected_for_judge(
    declaration: MetricDeclaration,
    tables: Mapping[str, MetricTable],
    agreement: Agreement,
    *,
    level: float = DEFAULT_LEVEL,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> tuple[float, Interval] | None:
    """A judged rate corrected for the judge's measured sensitivity and specificity (Rogan-Gladen), on the
    metric's scale, with an interval drawing the run's cluster bootstrap and the calibration counts together.
    None when the rate is undefined or the judge no better than chance on its calibration set."""
    sums = declared_sums(declaration, tables)
    if sums is None:
        return None
    share = ratio(*declaration.components) if declaration.statistic == "ratio" else statistic_of(declaration)
    observed = sums.evaluate(share)
    if observed is None:
        return None
    replicates = bootstrap_replicates(sums, share, resamples=resamples, seed=seed)
    result = corrected_interval(
        observed, replicates, agreement, level=level, seed=seed, unit=sums.unit, n=sums.n, units=sums.units
    )
    if result is None:
        return None
    estimate, interval = result
    return declaration.scale * estimate, interval.scaled(declaration.scale)


@dataclass(frozen=True)
class DeclaredValue:
    """A metric's value with its interval, as shown to users."""

    declaration: MetricDeclaration
    value: float | None
    interval: Interval | None


def _mcnemar_counts(baseline: ClusteredSums, candidate: ClusteredSums) -> tuple[int, int] | None:
    """The discordant counts when both runs' metric is a share of the same independent 0/1 items."""
    order = {cluster: row for row, cluster in enumerate(candidate.cluster_ids)}
    cand = candidate.sums[[order[c] for c in baseline.cluster_ids]]
    base = baseline.sums
    if not np.array_equal(base[:, 1], cand[:, 1]):
        return None
    only_baseline = int(np.count_nonzero((base[:, 0] == 1) & (cand[:, 0] == 0)))
    only_candidate = int(np.count_nonzero((base[:, 0] == 0) & (cand[:, 0] == 1)))
    return only_baseline, only_candidate


def compare_declared(
    declarations: Sequence[MetricDeclaration],
    baseline: Mapping[str, MetricTable],
    candidate: Mapping[str, MetricTable],
    *,
    level: float = DEFAULT_LEVEL,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> dict[str, PairedComparison | None]:
    """Candidate minus baseline for each declared metric, on the rows both runs scored, Holm-adjusted across
    the metrics compared.

    The interval is the paired cluster bootstrap; the p-value McNemar's exact test where the metric is a
    share of independent 0/1 items (the same items in both runs), the paired bootstrap otherwise. None for a
    metric with no shared rows or undefined in either run.
    """
    results: dict[str, PairedComparison | None] = {}
    for declaration in declarations:
        shared = set(_table(declaration, baseline).ids) & set(_table(declaration, candidate).ids)
        base_sums = declared_sums(declaration, baseline, ids=shared)
        cand_sums = declared_sums(declaration, candidate, ids=shared)
        if base_sums is None or cand_sums is None:
            results[declaration.name] = None
            continue
        comparison = paired_bootstrap(
            base_sums, cand_sums, statistic_of(declaration), level=level, resamples=resamples, seed=seed
        )
        if (
            comparison is not None
            and _is_share_of_independent_items(declaration, base_sums)
            and _is_share_of_independent_items(declaration, cand_sums)
        ):
            counts = _mcnemar_counts(base_sums, cand_sums)
            if counts is not None:
                comparison = comparison.model_copy(update={"p_value": mcnemar_exact(*counts), "test": "mcnemar-exact"})
        results[declaration.name] = comparison
    adjusted = with_holm({name: c for name, c in results.items() if c is not None})
    return {name: adjusted.get(name) for name in results}
