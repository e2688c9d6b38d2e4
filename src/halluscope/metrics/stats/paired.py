"""Comparing two runs on the same items: the difference, its interval, a p-value, and Holm's correction.

Why paired: two models answering the same questions share every hard and every easy item, so most of the
variation between items cancels in the difference. Comparing two separate intervals throws that away (two
overlapping intervals can hide a clear paired difference). Every comparison here is over the items both runs
scored, resamples the same units for both runs, and reports ``candidate - baseline``.

The p-value comes from the test that fits the data:

- correct / incorrect per independent item: McNemar's exact test — only the items the two runs disagree on
  carry information, and under "no difference" each such item is a fair coin;
- a mean of per-item values: a sign-flip permutation test over units (under "no difference" the two runs'
  values within a unit could be swapped);
- any other metric (F1, a ratio) or clustered items: the paired cluster bootstrap, whose two-sided p-value
  is the smallest ``1 - level`` at which its percentile interval would exclude 0.

Several metrics compared at once give several chances of a false alarm; :func:`holm_adjust` keeps the chance
of any false alarm at the level, without assuming the metrics are independent.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray
from pydantic import BaseModel, ConfigDict

from halluscope.metrics.stats.bootstrap import (
    DEFAULT_RESAMPLES,
    BootstrapMethod,
    ClusteredSums,
    Statistic,
    apply_statistic,
    bootstrap_bounds,
    ratio,
    resampled_totals,
)
from halluscope.metrics.stats.interval import DEFAULT_LEVEL, Interval, check_level
from halluscope.metrics.stats.proportion import binomial_tail

__all__ = [
    "PairedComparison",
    "holm_adjust",
    "mcnemar_exact",
    "paired_bootstrap",
    "paired_mean_comparison",
    "paired_proportion_comparison",
    "sign_flip_test",
    "with_holm",
]

#: Up to this many units the sign-flip test enumerates every sign pattern (2^12 = 4096) instead of sampling.
_EXACT_SIGN_FLIP_UNITS = 12


class PairedComparison(BaseModel):
    """``candidate - baseline`` on the items both runs scored, with its interval and two-sided p-value.

    ``test`` names how ``p_value`` was computed; ``p_adjusted`` is the Holm-adjusted p-value once the
    comparison has been adjusted together with the other metrics of the same two runs (:func:`with_holm`).
    """

    model_config = ConfigDict(frozen=True)

    baseline: float
    candidate: float
    difference: float
    interval: Interval | None
    p_value: float
    test: str
    n: int
    units: int
    unit: str
    p_adjusted: float | None = None

    def scaled(self, factor: float) -> PairedComparison:
        """The same comparison with the metric values multiplied by ``factor`` (100 for percentage points)."""
        return self.model_copy(
            update={
                "baseline": self.baseline * factor,
                "candidate": self.candidate * factor,
                "difference": self.difference * factor,
                "interval": None if self.interval is None else self.interval.scaled(factor),
            }
        )


def mcnemar_exact(only_baseline_correct: int, only_candidate_correct: int) -> float:
    """McNemar's exact two-sided p-value from the two discordant counts.

    Under "no difference" each of the ``b + c`` items the runs disagree on is equally likely to favour either
    run, so ``b ~ Binomial(b + c, 1/2)``; the p-value doubles the smaller tail (capped at 1). No disagreement
    at all is no evidence of a difference: p = 1.
    """
    b, c = only_baseline_correct, only_candidate_correct
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts cannot be negative, got {b} and {c}")
    if b + c == 0:
        return 1.0
    return min(1.0, 2.0 * binomial_tail(min(b, c), b + c, 0.5, upper=False))


def _aligned(baseline: ClusteredSums, candidate: ClusteredSums) -> NDArray[np.float64]:
    """The candidate's per-unit sums in the baseline's unit order, after checking both runs cover the same
    items grouped the same way (a paired comparison over different items would compare nothing)."""
    if baseline.names != candidate.names:
        raise ValueError(f"the runs have different components: {baseline.names} vs {candidate.names}")
    only_baseline = set(baseline.cluster_ids) - set(candidate.cluster_ids)
    only_candidate = set(candidate.cluster_ids) - set(baseline.cluster_ids)
    if baseline.n != candidate.n or only_baseline or only_candidate:
        raise ValueError(
            f"the runs cover different items ({baseline.n} vs {candidate.n} items; "
            f"{len(only_baseline)} units only in the baseline, {len(only_candidate)} only in the candidate); "
            "compare them on the items both scored"
        )
    order = {cluster: row for row, cluster in enumerate(candidate.cluster_ids)}
    return candidate.sums[[order[cluster] for cluster in baseline.cluster_ids]]


def _differences(
    statistic: Statistic, names: tuple[str, ...], stacked: NDArray[np.float64]
) -> NDArray[np.float64]:
    """candidate - baseline for each row of side-by-side totals (baseline components, then candidate's)."""
    width = len(names)
    rows = stacked.shape[0]
    base = apply_statistic(statistic, {n: stacked[:, j] for j, n in enumerate(names)}, rows)
    cand = apply_statistic(statistic, {n: stacked[:, width + j] for j, n in enumerate(names)}, rows)
    return cand - base


def paired_bootstrap(
    baseline: ClusteredSums,
    candidate: ClusteredSums,
    statistic: Statistic,
    *,
    level: float = DEFAULT_LEVEL,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    method: BootstrapMethod = "percentile",
) -> PairedComparison | None:
    """The paired cluster bootstrap of ``statistic(candidate) - statistic(baseline)``.

    Both runs are resampled with the same draw of units, so what the items share cancels. The p-value is
    two-sided: twice the smaller share of resampled differences at or beyond 0 (with the usual +1 so it is
    never 0). None when the metric is undefined for either run on the data.
    """
    level = check_level(level)
    candidate_sums = _aligned(baseline, candidate)
    base_value, cand_value = baseline.evaluate(statistic), candidate.evaluate(statistic)
    if base_value is None or cand_value is None:
        return None
    stacked = np.hstack([baseline.sums, candidate_sums])
    replicates = _differences(
        statistic, baseline.names, resampled_totals(stacked, resamples, np.random.default_rng(seed))
    )
    replicates = replicates[np.isfinite(replicates)]
    difference = cand_value - base_value
    interval = None
    p_value = 1.0
    if replicates.size:
        jackknife = None
        if method == "bca":
            jackknife = _differences(statistic, baseline.names, stacked.sum(axis=0) - stacked)
        low, high, used = bootstrap_bounds(replicates, difference, level, method, jackknife)
        interval = Interval(
            low=low, high=high, level=level, method=f"paired-bootstrap-{used}", unit=baseline.unit,
            n=baseline.n, units=baseline.units, seed=seed, resamples=int(replicates.size),
        )  # fmt: skip
        total = replicates.size + 1
        at_or_below = (np.count_nonzero(replicates <= 0) + 1) / total
        at_or_above = (np.count_nonzero(replicates >= 0) + 1) / total
        p_value = min(1.0, 2.0 * min(at_or_below, at_or_above))
    return PairedComparison(
        baseline=base_value, candidate=cand_value, difference=difference, interval=interval, p_value=p_value,
        test="paired-bootstrap", n=baseline.n, units=baseline.units, unit=baseline.unit,
    )  # fmt: skip


def _paired_outcomes(
    baseline: ArrayLike, candidate: ArrayLike, clusters: Sequence[Hashable] | None, unit: str | None
) -> tuple[NDArray[np.float64], NDArray[np.float64], ClusteredSums, ClusteredSums]:
    base = np.asarray(baseline, dtype=float).reshape(-1)
    cand = np.asarray(candidate, dtype=float).reshape(-1)
    if base.size != cand.size:
        raise ValueError(f"{base.size} baseline values for {cand.size} candidate values; pair them by item")
    ones = np.ones(base.size)
    base_sums = ClusteredSums.from_items({"total": base, "count": ones}, clusters, unit=unit)
    cand_sums = ClusteredSums.from_items({"total": cand, "count": ones}, clusters, unit=unit)
    return base, cand, base_sums, cand_sums


def paired_proportion_comparison(
    baseline_correct: ArrayLike,
    candidate_correct: ArrayLike,
    clusters: Sequence[Hashable] | None = None,
    *,
    unit: str | None = None,
    level: float = DEFAULT_LEVEL,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> PairedComparison | None:
    """Accuracy (share correct) of the candidate minus the baseline's, item by item.

    The interval is the paired (cluster) bootstrap. The p-value is McNemar's exact test when every item is
    its own unit; when items share units, McNemar would treat dependent items as independent and be too
    eager, so the paired cluster bootstrap gives the p-value too.
    """
    base, cand, base_sums, cand_sums = _paired_outcomes(baseline_correct, candidate_correct, clusters, unit)
    if not np.all(np.isin(base, (0.0, 1.0)) & np.isin(cand, (0.0, 1.0))):
        raise ValueError("correct/incorrect outcomes must be 0/1 or False/True for every item")
    comparison = paired_bootstrap(
        base_sums, cand_sums, ratio("total", "count"), level=level, resamples=resamples, seed=seed
    )
    if comparison is None or base_sums.units < base_sums.n:
        return comparison
    only_baseline = int(np.count_nonzero((base == 1) & (cand == 0)))
    only_candidate = int(np.count_nonzero((base == 0) & (cand == 1)))
    return comparison.model_copy(
        update={"p_value": mcnemar_exact(only_baseline, only_candidate), "test": "mcnemar-exact"}
    )


def sign_flip_test(
    baseline: ClusteredSums, candidate: ClusteredSums, total: str, *, resamples: int = 10_000, seed: int = 0
) -> float:
    """Two-sided p-value of a paired sign-flip permutation test of the mean difference, over units.

    Under "no difference" the two runs' sums within a unit are exchangeable, so each unit's difference is as
    likely to carry either sign. With both runs scored on the same items the denominator of the mean is fixed,
    so the test statistic is the absolute total difference. Small numbers of units are enumerated exactly;
    otherwise ``resamples`` random sign patterns are drawn (with the +1 that keeps p above 0).
    """
    candidate_sums = _aligned(baseline, candidate)
    if total not in baseline.names:
        raise ValueError(f"no component {total!r} to test; the runs have {', '.join(baseline.names)}")
    column = baseline.names.index(total)
    differences = candidate_sums[:, column] - baseline.sums[:, column]
    observed = abs(float(differences.sum()))
    # A tolerance so that sign patterns equal to the observed total up to rounding count as "as extreme".
    tolerance = 1e-9 * max(1.0, float(np.abs(differences).sum()))
    units = differences.size
    if units <= _EXACT_SIGN_FLIP_UNITS:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=units)))
        return float(np.mean(np.abs(signs @ differences) >= observed - tolerance))
    rng = np.random.default_rng(seed)
    extreme = 0
    block = max(1, 2_000_000 // units)
    for start in range(0, resamples, block):
        rows = min(block, resamples - start)
        signs = rng.choice((-1.0, 1.0), size=(rows, units))
        extreme += int(np.count_nonzero(np.abs(signs @ differences) >= observed - tolerance))
    return (extreme + 1) / (resamples + 1)


def paired_mean_comparison(
    baseline_values: ArrayLike,
    candidate_values: ArrayLike,
    clusters: Sequence[Hashable] | None = None,
    *,
    unit: str | None = None,
    level: float = DEFAULT_LEVEL,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> PairedComparison | None:
    """Mean per-item value of the candidate minus the baseline's (a score, a per-answer rate), item by item:
    the interval from the paired cluster bootstrap, the p-value from the sign-flip test over units."""
    _, _, base_sums, cand_sums = _paired_outcomes(baseline_values, candidate_values, clusters, unit)
    comparison = paired_bootstrap(
        base_sums, cand_sums, ratio("total", "count"), level=level, resamples=resamples, seed=seed
    )
    if comparison is None:
        return None
    p_value = sign_flip_test(base_sums, cand_sums, "total", resamples=resamples, seed=seed)
    return comparison.model_copy(update={"p_value": p_value, "test": "sign-flip"})


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given.

    Sort the m p-values ascending; the i-th smallest (i from 1) is multiplied by m - i + 1, capped at 1, and
    each adjusted value is raised to the largest before it so the order is kept. Rejecting every metric whose
    adjusted p is below alpha keeps the chance of any false rejection at most alpha.
    """
    values = [float(p) for p in p_values]
    for position, value in enumerate(values):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"p-value {position} is {value}; p-values lie between 0 and 1")
    m = len(values)
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(sorted(range(m), key=values.__getitem__)):
        running = max(running, min(1.0, (m - rank) * values[index]))
        adjusted[index] = running
    return adjusted


def with_holm(comparisons: Mapping[str, PairedComparison]) -> dict[str, PairedComparison]:
    """The same comparisons (metric name -> comparison of the same two runs) with ``p_adjusted`` filled in."""
    names = list(comparisons)
    adjusted = holm_adjust([comparisons[name].p_value for name in names])
    return {
        name: comparisons[name].model_copy(update={"p_adjusted": value})
        for name, value in zip(names, adjusted, strict=True)
    }
