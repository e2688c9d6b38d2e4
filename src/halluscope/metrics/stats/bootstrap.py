"""The cluster bootstrap: an interval for any metric whose items depend on each other in groups.

Why clusters: POPE asks six questions about each image, HallusionBench groups questions by figure and
question set, CHAIR counts objects within captions. Items that share an image succeed or fail together, so
resampling items as if they were independent makes an interval too narrow — it claims a precision the
data does not have. Resampling whole units (images, question sets, captions) keeps that dependence; with
one item per unit it is the ordinary bootstrap.

Why sums: every metric here is a smooth function of a few totals — a hallucination rate is hallucinated /
mentioned, F1 is 2·tp / (2·tp + fp + fn), a mean is total / count. Each unit is reduced once to its
per-unit sums of those components; a resample draws units with replacement, and the resampled totals of
thousands of resamples are one array gather and sum. The metric is a vectorised function of the totals
(see :func:`ratio` and :func:`f1`), so no resample runs a Python loop.

Resamples in which the metric is undefined (say, no predicted positives for a precision) are dropped and
the interval records how many remained. Percentile intervals are the default; BCa (bias-corrected and
accelerated, with the jackknife over units) corrects for skew and bias, at the cost of leaning on more
resamples in the tails.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from halluscope.metrics.stats.interval import (
    DEFAULT_LEVEL,
    Interval,
    check_level,
    normal_cdf,
    normal_quantile,
)

__all__ = [
    "DEFAULT_RESAMPLES",
    "BootstrapMethod",
    "ClusteredSums",
    "Statistic",
    "apply_statistic",
    "bootstrap_bounds",
    "bootstrap_many",
    "bootstrap_replicates",
    "bootstrap_shared",
    "cluster_bootstrap",
    "f1",
    "ratio",
    "resampled_totals",
]

#: Resamples drawn when none is given: enough for stable 95 % percentile bounds (the 2.5 % tail holds 50).
DEFAULT_RESAMPLES = 4000
#: The fewest resampling units a bootstrap interval is given for.
MIN_UNITS = 2
#: Cells of the (resamples x units) array of drawn units held at once, so memory stays flat on large benchmarks
#: and a block's gathers stay in the processor's cache (the draws do not depend on the block size).
_CHUNK_CELLS = 250_000
#: Bits of an int64 that packed components may use (the sign bit is left alone).
_PACK_BITS = 63

BootstrapMethod = Literal["percentile", "bca"]
#: A metric as a function of resampled totals: component name -> array of totals, one per resample.
Statistic = Callable[[Mapping[str, NDArray[np.float64]]], NDArray[np.float64]]


@dataclass(frozen=True)
class ClusteredSums:
    """Per-unit sums of a metric's components: ``sums[u, j]`` is the total of component ``names[j]`` over the
    items of unit ``cluster_ids[u]``. ``n`` counts the items, ``unit`` names what a unit is."""

    names: tuple[str, ...]
    sums: NDArray[np.float64]
    cluster_ids: tuple[Hashable, ...]
    n: int
    unit: str

    @classmethod
    def from_items(
        cls,
        components: Mapping[str, ArrayLike],
        clusters: Sequence[Hashable] | None = None,
        *,
        unit: str | None = None,
        item_ids: Sequence[Hashable] | None = None,
    ) -> ClusteredSums:
        """Reduce per-item components (equal-length arrays, one value per item) to per-unit sums.

        ``clusters`` gives each item's unit id (the image, figure, question set or caption it belongs to);
        None makes every item its own unit. ``unit`` names the unit in the interval ("image"); it defaults to
        "item" without clusters and "cluster" with them. ``item_ids`` (optional) name the items in errors.
        """
        if not components:
            raise ValueError("a metric needs at least one per-item component (e.g. 'hits' and 'items')")
        names = tuple(components)
        columns = [np.asarray(components[name], dtype=float).reshape(-1) for name in names]
        n = columns[0].size
        for name, column in zip(names, columns, strict=True):
            if column.size != n:
                raise ValueError(f"component {name!r} has {column.size} values for {n} items")
            bad = np.flatnonzero(~np.isfinite(column))
            if bad.size:
                first = int(bad[0])
                label = repr(item_ids[first]) if item_ids is not None and first < len(item_ids) else first
                raise ValueError(
                    f"item {label} has a non-finite {name!r} value ({column[first]}); "
                    "leave unscored items out before computing an interval"
                )
        if clusters is None:
            index = np.arange(n)
            ids: tuple[Hashable, ...] = tuple(range(n))
        else:
            if len(clusters) != n:
                raise ValueError(f"{len(clusters)} cluster ids for {n} items; give one id per item")
            positions: dict[Hashable, int] = {}
            index = np.fromiter((positions.setdefault(c, len(positions)) for c in clusters), int, count=n)
            ids = tuple(positions)
        sums = np.zeros((len(ids), len(names)))
        for j, column in enumerate(columns):
            sums[:, j] = np.bincount(index, weights=column, minlength=len(ids))
        default_unit = "item" if clusters is None else "cluster"
        return cls(names=names, sums=sums, cluster_ids=ids, n=n, unit=unit or default_unit)

    @property
    def units(self) -> int:
        return len(self.cluster_ids)

    def totals(self) -> dict[str, NDArray[np.float64]]:
        """Component name -> its total over all the data (as a one-element array, the shape a statistic takes)."""
        stacked = self.sums.sum(axis=0, keepdims=True)
        return {name: stacked[:, j] for j, name in enumerate(self.names)}

    def evaluate(self, statistic: Statistic) -> float | None:
        """The metric on all the data (the point estimate); None where it is undefined."""
        value = apply_statistic(statistic, self.totals(), 1)[0]
        return float(value) if np.isfinite(value) else None


def ratio(numerator: str, denominator: str, *, scale: float = 1.0) -> Statistic:
    """``scale · Σ numerator / Σ denominator`` — a rate, an accuracy, CHAIRi, a mean (total / count)."""

    def statistic(totals: Mapping[str, NDArray[np.float64]]) -> NDArray[np.float64]:
        return scale * totals[numerator] / totals[denominator]

    return statistic


def f1(tp: str = "tp", fp: str = "fp", fn: str = "fn", *, scale: float = 1.0) -> Statistic:
    """F1 from totals of true positives, false positives and false negatives; undefined (dropped) in a resample
    with no predicted or no actual positives, as precision or recall is there."""

    def statistic(totals: Mapping[str, NDArray[np.float64]]) -> NDArray[np.float64]:
        t, p, n = totals[tp], totals[fp], totals[fn]
        value = scale * 2.0 * t / (2.0 * t + p + n)
        return np.where((t + p > 0) & (t + n > 0), value, np.nan)

    return statistic


def apply_statistic(
    statistic: Statistic, totals: Mapping[str, NDArray[np.float64]], rows: int
) -> NDArray[np.float64]:
    """Run a statistic on totals, with 0/0 giving NaN quietly, and insist on one value per row."""
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.asarray(statistic(totals), dtype=float)
    if values.shape != (rows,):
        raise ValueError(
            f"the statistic returned shape {values.shape} for {rows} resamples; "
            "it must be vectorised: one value per entry of its input arrays"
        )
    return values


def resampled_totals(
    sums: NDArray[np.float64], resamples: int, rng: np.random.Generator
) -> NDArray[np.float64]:
    """Totals of per-unit ``sums`` (units x components) over ``resamples`` bootstrap resamples of the units
    (resamples x components).

    A resample draws as many units as there are, with replacement; its totals are the sums of the drawn
    units' rows, gathered for a whole block of resamples at once. Blocks keep memory flat on large
    benchmarks. A paired comparison passes both runs' sums side by side, so both meet the same resamples.
    """
    units = sums.shape[0]
    if units < 1:
        raise ValueError("a bootstrap needs at least one resampling unit")
    if resamples < 1:
        raise ValueError(f"the number of bootstrap resamples must be positive, not {resamples}")
    chunk = max(1, min(resamples, _CHUNK_CELLS // units))
    packed = _packed_columns(sums)
    blocks = []
    for start in range(0, resamples, chunk):
        drawn = rng.integers(0, units, size=(min(chunk, resamples - start), units))
        if packed is None:
            # Component by component: gathering one column is several times faster than gathering whole rows.
            blocks.append(np.stack([sums[:, j][drawn].sum(axis=1) for j in range(sums.shape[1])], axis=1))
        else:
            blocks.append(_unpacked_totals(packed, drawn, sums.shape[1]))
    return np.concatenate(blocks)


@dataclass(frozen=True)
class _Packed:
    """Components that are counts, several to an int64 column: ``columns[g]`` holds components
    ``groups[g]``, component ``groups[g][p]`` in bits ``p·bits`` to ``(p+1)·bits``."""

    columns: tuple[NDArray[np.int64], ...]
    groups: tuple[tuple[int, ...], ...]
    bits: int


def _packed_columns(sums: NDArray[np.float64]) -> _Packed | None:
    """The per-unit sums packed for one gather per few components, or None where they cannot be.

    Why: most headline components are counts (answered, wrong, tp, ...), and a resample's totals of several
    count columns are the fields of one integer total when each column has bits enough for its largest possible
    total (every unit drawn at its maximum). One gather then does the work of two or three. Integer totals are
    exact in both ways, so the totals are the same numbers the column-by-column gather gives. Anything else (a
    fraction, a negative value, a total too large to pack twice) keeps the column-by-column gather.
    """
    if sums.size == 0 or sums.shape[1] < 2 or not np.all(np.isfinite(sums)):
        return None
    if sums.min() < 0 or not np.array_equal(sums, np.floor(sums)):
        return None
    largest = float(sums.max()) * sums.shape[0]
    bits = max(1, int(largest).bit_length())
    per = _PACK_BITS // bits
    if per < 2 or largest >= 2.0**52:
        return None
    ints = sums.astype(np.int64)
    groups = tuple(
        tuple(range(first, min(sums.shape[1], first + per))) for first in range(0, sums.shape[1], per)
    )
    columns = tuple(
        np.bitwise_or.reduce([ints[:, j] << (bits * p) for p, j in enumerate(group)]) for group in groups
    )
    return _Packed(columns=columns, groups=groups, bits=bits)


def _unpacked_totals(packed: _Packed, drawn: NDArray[np.int64], components: int) -> NDArray[np.float64]:
    """Each resample's (row of ``drawn``) totals of every component, from one gather per packed column."""
    out = np.empty((drawn.shape[0], components))
    mask = (1 << packed.bits) - 1
    for column, group in zip(packed.columns, packed.groups, strict=True):
        totals = column[drawn].sum(axis=1)
        for p, j in enumerate(group):
            out[:, j] = (totals >> (packed.bits * p)) & mask
    return out


def bootstrap_bounds(
    replicates: NDArray[np.float64],
    estimate: float,
    level: float,
    method: BootstrapMethod,
    jackknife: NDArray[np.float64] | None = None,
) -> tuple[float, float, str]:
    """Bounds from the defined bootstrap replicates, and the method actually used.

    BCa needs the jackknife values (leave one unit out) for its acceleration; where its bias correction is
    undefined (every replicate on one side of the estimate) it falls back to the percentile interval and says
    so in the returned method.
    """
    alpha = 1.0 - check_level(level)
    quantiles = [alpha / 2.0, 1.0 - alpha / 2.0]
    used = "percentile"
    if method == "bca":
        below = (
            np.count_nonzero(replicates < estimate) + 0.5 * np.count_nonzero(replicates == estimate)
        ) / len(replicates)
        if 0.0 < below < 1.0 and jackknife is not None:
            z0 = normal_quantile(below)
            acceleration = _acceleration(jackknife)
            quantiles = []
            for tail in (alpha / 2.0, 1.0 - alpha / 2.0):
                z = z0 + normal_quantile(tail)
                quantiles.append(normal_cdf(z0 + z / (1.0 - acceleration * z)))
            used = "bca"
    low, high = np.quantile(replicates, quantiles)
    return float(low), float(high), used


def _acceleration(jackknife: NDArray[np.float64]) -> float:
    values = jackknife[np.isfinite(jackknife)]
    if values.size < 2:
        return 0.0
    deviations = values.mean() - values
    spread = float((deviations**2).sum())
    return float((deviations**3).sum()) / (6.0 * spread**1.5) if spread > 0 else 0.0


def _jackknife(data: ClusteredSums, statistic: Statistic) -> NDArray[np.float64]:
    """The statistic with each unit left out in turn: the totals minus that unit's sums, all at once."""
    leave_one_out = data.sums.sum(axis=0) - data.sums
    totals = {name: leave_one_out[:, j] for j, name in enumerate(data.names)}
    return apply_statistic(statistic, totals, data.units)


def bootstrap_replicates(
    data: ClusteredSums, statistic: Statistic, *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> NDArray[np.float64]:
    """The statistic on each of ``resamples`` cluster-bootstrap resamples (NaN where undefined): the draw
    :func:`cluster_bootstrap` with the same seed makes, for estimators built on top of it (the judge
    correction of :mod:`.judge_error`)."""
    resampled = resampled_totals(data.sums, resamples, np.random.default_rng(seed))
    totals = {name: resampled[:, j] for j, name in enumerate(data.names)}
    return apply_statistic(statistic, totals, resamples)


def cluster_bootstrap(
    data: ClusteredSums,
    statistic: Statistic,
    *,
    level: float = DEFAULT_LEVEL,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    method: BootstrapMethod = "percentile",
) -> Interval | None:
    """A seeded bootstrap interval for ``statistic`` that resamples whole units of ``data``.

    None when the metric is undefined on the data itself or in every resample: there is nothing to bound.
    The same seed and data give the same interval.
    """
    return bootstrap_many(data, {"metric": statistic}, level=level, resamples=resamples, seed=seed, method=method)[
        "metric"
    ]


def bootstrap_many(
    data: ClusteredSums,
    statistics: Mapping[str, Statistic],
    *,
    level: float = DEFAULT_LEVEL,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    method: BootstrapMethod = "percentile",
) -> dict[str, Interval | None]:
    """:func:`cluster_bootstrap` of several statistics of the same units, all on one draw of resamples.

    Why one draw: a benchmark's headlines (accuracy, precision, recall, F1, yes-ratio) are functions of the
    same per-unit sums; drawing the units once and evaluating every statistic on the resampled totals costs
    one gather instead of one per metric, and each interval is exactly what its own bootstrap with that seed
    would give.
    """
    (out,) = bootstrap_shared(
        [(data, statistics)], level=level, resamples=resamples, seed=seed, method=method
    )
    return out


def bootstrap_shared(
    items: Sequence[tuple[ClusteredSums, Mapping[str, Statistic]]],
    *,
    level: float = DEFAULT_LEVEL,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    method: BootstrapMethod = "percentile",
) -> list[dict[str, Interval | None]]:
    """:func:`bootstrap_many` of each ``(data, statistics)`` item, items with as many units sharing one draw.

    Why: the draw of a bootstrap depends only on the number of units, the resamples and the seed, so tables
    with as many units (Reefknot's yes/no answers and yes/no pairs, both over the same images) would draw the
    very same indices each; drawing them once and gathering every item's sums side by side gives each item
    the totals its own draw gives. The totals are the same numbers either way: whole-number sums are added
    exactly whether packed or column by column, and any other column is summed column by column in both.
    """
    level = check_level(level)
    results: list[dict[str, Interval | None]] = []
    # Items to draw for, by number of units: (position in results, data, statistics, estimates).
    drawn: dict[int, list[tuple[int, ClusteredSums, Mapping[str, Statistic], dict[str, float | None]]]] = {}
    for position, (data, statistics) in enumerate(items):
        estimates = {name: data.evaluate(statistic) for name, statistic in statistics.items()}
        results.append(dict.fromkeys(statistics))
        if all(value is None for value in estimates.values()) or data.units < MIN_UNITS:
            # One unit resampled is always itself: its "interval" has no width and would claim a certainty
            # that the data, a single image or question set, cannot give. No interval is the honest answer.
            continue
        drawn.setdefault(data.units, []).append((position, data, statistics, estimates))
    stacked = [
        same[0][1].sums if len(same) == 1 else np.hstack([data.sums for _, data, _, _ in same])
        for same in drawn.values()
    ]
    for same, resampled in zip(drawn.values(), _resampled_each(stacked, resamples, seed), strict=True):
        first = 0
        for position, data, statistics, estimates in same:
            columns = resampled[:, first : first + len(data.names)]
            first += len(data.names)
            totals = {name: columns[:, j] for j, name in enumerate(data.names)}
            out = results[position]
            for name, statistic in statistics.items():
                estimate = estimates[name]
                if estimate is None:
                    continue
                replicates = apply_statistic(statistic, totals, resamples)
                replicates = replicates[np.isfinite(replicates)]
                if replicates.size == 0:
                    continue
                jackknife = _jackknife(data, statistic) if method == "bca" else None
                low, high, used = bootstrap_bounds(replicates, estimate, level, method, jackknife)
                out[name] = Interval(
                    low=low, high=high, level=level, method=f"bootstrap-{used}", unit=data.unit, n=data.n,
                    units=data.units, seed=seed, resamples=int(replicates.size),
                )  # fmt: skip
    return results


def _resampled_each(
    stacked: Sequence[NDArray[np.float64]], resamples: int, seed: int
) -> list[NDArray[np.float64]]:
    """:func:`resampled_totals` of each matrix of sums, each on its own generator seeded ``seed``; with more
    than one and more than one processor, in threads (numpy draws and gathers without holding the
    interpreter: Reefknot's three draws take two thirds of the time on two cores). Each draw has its own
    generator, so the totals are the same whichever thread makes them, in whatever order."""
    workers = min(len(stacked), os.cpu_count() or 1)
    if workers < 2:
        return [resampled_totals(sums, resamples, np.random.default_rng(seed)) for sums in stacked]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="halluscope-bootstrap") as pool:
        return list(
            pool.map(lambda sums: resampled_totals(sums, resamples, np.random.default_rng(seed)), stacked)
        )
