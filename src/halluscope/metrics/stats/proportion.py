"""Intervals for one proportion over independent items: Wilson score and Clopper-Pearson exact.

Why these two and not the textbook ``p ± 1.96·sqrt(p(1-p)/n)``: that (Wald) interval collapses to a point
when no item or every item is a hit and covers the truth far less often than it claims near 0 and 1 — just
where hallucination rates and accuracies live. Wilson's score interval stays close to its nominal level
for all ``p`` and is the default; Clopper-Pearson inverts the binomial test exactly and never covers less
than its level, at the price of being wider. Both are closed-form (no seed) and numpy-only; they match
``scipy.stats.binomtest(k, n).proportion_ci(method="wilson" / "exact")``.

Use them only when the items are independent (one question per image, say). When several items share an
image, a question set or a caption, use :func:`halluscope.metrics.stats.cluster_bootstrap` instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from halluscope.metrics.stats.interval import DEFAULT_LEVEL, Interval, check_level, two_sided_z

__all__ = [
    "ProportionMethod",
    "binomial_tail",
    "clopper_pearson_bounds",
    "proportion_interval",
    "wilson_bounds",
]

ProportionMethod = Literal["wilson", "clopper-pearson"]


def _check_counts(k: int, n: int) -> None:
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"a proportion needs 0 <= hits <= items, got {k} hits of {n} items")


def wilson_bounds(
    k: ArrayLike, n: ArrayLike, level: float = DEFAULT_LEVEL
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Wilson score bounds for arrays of counts (vectorised, so a coverage study is one call).

    The bounds are the two ``p`` at which the score test of ``p`` sits exactly at the level's z; ``k = 0``
    gives a lower bound of 0 and ``k = n`` an upper bound of 1, with a non-zero width in both cases.
    """
    z = two_sided_z(level)
    hits = np.asarray(k, dtype=float)
    items = np.asarray(n, dtype=float)
    share = hits / items
    denominator = 1.0 + z * z / items
    centre = (share + z * z / (2.0 * items)) / denominator
    half = z * np.sqrt(share * (1.0 - share) / items + z * z / (4.0 * items * items)) / denominator
    # At k = 0 and k = n the bound is exactly 0 or 1; rounding would otherwise leave 1e-17 there.
    low = np.where(hits == 0, 0.0, np.clip(centre - half, 0.0, 1.0))
    high = np.where(hits == items, 1.0, np.clip(centre + half, 0.0, 1.0))
    return low, high


def _log_choose(n: int) -> NDArray[np.float64]:
    """log C(n, k) for k = 0..n, from cumulative sums of logs (numpy has no gamma function)."""
    ks = np.arange(1, n + 1, dtype=float)
    return np.concatenate(([0.0], np.cumsum(np.log(n - ks + 1.0) - np.log(ks))))


def _tail(log_choose: NDArray[np.float64], k: int, p: float, upper: bool) -> float:
    n = log_choose.size - 1
    if p <= 0.0:
        return 1.0 if (not upper or k <= 0) else 0.0
    if p >= 1.0:
        return 1.0 if (upper or k >= n) else 0.0
    ks = np.arange(max(k, 0), n + 1) if upper else np.arange(0, min(k, n) + 1)
    if ks.size == 0:
        return 0.0
    log_pmf = log_choose[ks] + ks * math.log(p) + (n - ks) * math.log1p(-p)
    peak = float(log_pmf.max())
    return float(min(1.0, math.exp(peak) * float(np.exp(log_pmf - peak).sum())))


def binomial_tail(k: int, n: int, p: float, *, upper: bool) -> float:
    """P(X >= k) when ``upper``, else P(X <= k), for X ~ Binomial(n, p); summed in log space so large ``n``
    neither underflows nor needs scipy."""
    return _tail(_log_choose(n), k, p, upper)


def _solve(tail_at: Callable[[float], float], target: float, increasing: bool) -> float:
    """The p in [0, 1] where a monotone binomial tail equals ``target``, by bisection (2^-64 of precision)."""
    low, high = 0.0, 1.0
    for _ in range(64):
        middle = (low + high) / 2.0
        if (tail_at(middle) < target) == increasing:
            low = middle
        else:
            high = middle
    return (low + high) / 2.0


def clopper_pearson_bounds(k: int, n: int, level: float = DEFAULT_LEVEL) -> tuple[float, float]:
    """Clopper-Pearson bounds: the lower bound is the p at which ``k`` or more hits have probability
    (1 - level)/2, the upper the p at which ``k`` or fewer do; 0 for ``k = 0`` and 1 for ``k = n``."""
    _check_counts(k, n)
    if n == 0:
        raise ValueError("no interval exists for a proportion over 0 items")
    tail = (1.0 - check_level(level)) / 2.0
    log_choose = _log_choose(n)
    low = 0.0 if k == 0 else _solve(lambda p: _tail(log_choose, k, p, upper=True), tail, increasing=True)
    high = 1.0 if k == n else _solve(lambda p: _tail(log_choose, k, p, upper=False), tail, increasing=False)
    return low, high


def proportion_interval(
    k: int,
    n: int,
    *,
    level: float = DEFAULT_LEVEL,
    method: ProportionMethod = "wilson",
    unit: str = "item",
) -> Interval | None:
    """The interval for ``k`` hits out of ``n`` independent items, as a share in [0, 1].

    None when ``n`` is 0: with no items there is no number to bound, and a made-up [0, 1] would read as a
    measurement. Counts that cannot be (negative, or more hits than items) are an error.
    """
    _check_counts(k, n)
    level = check_level(level)
    if n == 0:
        return None
    if method == "wilson":
        lows, highs = wilson_bounds(k, n, level)
        low, high = float(lows), float(highs)
    elif method == "clopper-pearson":
        low, high = clopper_pearson_bounds(k, n, level)
    else:
        raise ValueError(f"unknown proportion interval {method!r}; use 'wilson' or 'clopper-pearson'")
    return Interval(low=low, high=high, level=level, method=method, unit=unit, n=n, units=n)
