"""How large a difference a benchmark of a given size can detect, and how much clustering shrinks it.

Why: before reading "model B beats model A by 1.5 points", a user should know whether the benchmark could
tell 1.5 points from noise at all. The minimum detectable difference (MDD) is the smallest true difference
that a two-sided test at level ``alpha`` finds with probability ``power`` (80 % at 5 % by convention).

Items in clusters (six questions per image) carry less information than as many independent items: the
variance of a clustered mean is the independent one times the design effect ``1 + (m - 1)·ICC``, with ``m``
the mean cluster size and ICC the intra-cluster correlation (how alike the items of one cluster are). The
formulas below use the effective number of items ``n / design effect``.

The formulas are the usual normal approximations: fine for the hundreds to thousands of items of a
benchmark, rough below a few dozen.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from pydantic import BaseModel, ConfigDict

from halluscope.metrics.stats.interval import normal_quantile

__all__ = [
    "DetectableDifference",
    "design_effect",
    "discordance_rate",
    "intraclass_correlation",
    "minimum_detectable_difference",
    "paired_minimum_detectable_difference",
]


class DetectableDifference(BaseModel):
    """The smallest true difference in a proportion (as a share) the comparison detects with ``power``."""

    model_config = ConfigDict(frozen=True)

    difference: float | None
    comparison: Literal["unpaired", "paired"]
    n: int
    effective_n: float
    design_effect: float
    alpha: float
    power: float


def _z_sum(alpha: float, power: float) -> tuple[float, float]:
    if not 0.0 < alpha < 1.0 or not 0.0 < power < 1.0:
        raise ValueError(f"alpha ({alpha}) and power ({power}) must lie strictly between 0 and 1")
    return normal_quantile(1.0 - alpha / 2.0), normal_quantile(power)


def design_effect(mean_cluster_size: float, icc: float) -> float:
    """``1 + (m - 1)·ICC``: how many times the variance of a clustered mean exceeds the independent one."""
    if mean_cluster_size < 1:
        raise ValueError(f"a mean cluster size is at least 1, not {mean_cluster_size}")
    if not -1.0 <= icc <= 1.0:
        raise ValueError(f"an intra-cluster correlation lies between -1 and 1, not {icc}")
    return 1.0 + (mean_cluster_size - 1.0) * icc


def intraclass_correlation(values: ArrayLike, clusters: Sequence[Hashable]) -> float | None:
    """The one-way ANOVA estimate of the intra-cluster correlation of per-item values (0/1 or scores).

    ``(MSB - MSW) / (MSB + (m0 - 1)·MSW)``, with ``m0`` the cluster size adjusted for unequal sizes. A negative
    estimate (clusters less alike than chance) is reported as 0, since a design effect below 1 would promise
    precision that sampling noise produced. None when it cannot be estimated: fewer than two clusters, no
    cluster with two items, or no variation at all.
    """
    y = np.asarray(values, dtype=float).reshape(-1)
    if len(clusters) != y.size:
        raise ValueError(f"{len(clusters)} cluster ids for {y.size} values; give one id per item")
    positions: dict[Hashable, int] = {}
    index = np.fromiter((positions.setdefault(c, len(positions)) for c in clusters), int, count=y.size)
    k, n = len(positions), y.size
    if k < 2 or n <= k:
        return None
    sizes = np.bincount(index, minlength=k).astype(float)
    means = np.bincount(index, weights=y, minlength=k) / sizes
    between = float((sizes * (means - y.mean()) ** 2).sum()) / (k - 1)
    within = float(((y - means[index]) ** 2).sum()) / (n - k)
    m0 = (n - float((sizes**2).sum()) / n) / (k - 1)
    denominator = between + (m0 - 1.0) * within
    if denominator <= 0:
        return None
    return max(0.0, (between - within) / denominator)


def minimum_detectable_difference(
    n: int,
    rate: float,
    *,
    design_effect: float = 1.0,
    alpha: float = 0.05,
    power: float = 0.8,
) -> DetectableDifference:
    """MDD between two independent runs of ``n`` items each, around a proportion ``rate`` (a share).

    ``(z_{1-alpha/2} + z_power) · sqrt(2 · rate·(1 - rate) · design_effect / n)``: each run's proportion has
    variance ``rate·(1 - rate)/n_eff`` and the difference of two independent ones twice that.
    """
    if n < 1:
        raise ValueError(f"a detectable difference needs at least one item, not {n}")
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"a proportion lies between 0 and 1, not {rate}; give percentages as shares")
    if design_effect < 0 or not math.isfinite(design_effect):
        raise ValueError(f"a design effect is a positive number, not {design_effect}")
    z_alpha, z_power = _z_sum(alpha, power)
    effective_n = n / design_effect
    difference = (z_alpha + z_power) * math.sqrt(2.0 * rate * (1.0 - rate) / effective_n)
    return DetectableDifference(
        difference=difference, comparison="unpaired", n=n, effective_n=effective_n,
        design_effect=design_effect, alpha=alpha, power=power,
    )  # fmt: skip


def discordance_rate(baseline_correct: ArrayLike, candidate_correct: ArrayLike) -> float:
    """Share of items on which exactly one of the two runs is correct: all a paired test learns from."""
    base = np.asarray(baseline_correct, dtype=bool).reshape(-1)
    cand = np.asarray(candidate_correct, dtype=bool).reshape(-1)
    if base.size != cand.size or base.size == 0:
        raise ValueError(
            f"discordance needs the same non-zero number of items, got {base.size} and {cand.size}"
        )
    return float(np.mean(base != cand))


def paired_minimum_detectable_difference(
    n: int,
    discordance: float,
    *,
    design_effect: float = 1.0,
    alpha: float = 0.05,
    power: float = 0.8,
) -> DetectableDifference:
    """MDD in accuracy between two runs on the same ``n`` items, given the share of items they disagree on.

    Solves Connor's normal approximation for McNemar's test, ``d·sqrt(n_eff) = z_{1-alpha/2}·sqrt(psi) +
    z_power·sqrt(psi - d²)`` with ``psi`` the discordance, for ``d``. Runs that rarely disagree can detect small
    differences; ``difference`` is None when no difference within ``psi`` (the largest possible) is detectable.
    """
    if n < 1:
        raise ValueError(f"a detectable difference needs at least one item, not {n}")
    if not 0.0 < discordance <= 1.0:
        raise ValueError(f"a discordance rate lies in (0, 1], not {discordance}")
    z_alpha, z_power = _z_sum(alpha, power)
    effective_n = n / design_effect

    def gap(d: float) -> float:
        """Increasing in d; its root is the MDD."""
        return (
            d * math.sqrt(effective_n)
            - z_alpha * math.sqrt(discordance)
            - z_power * math.sqrt(max(0.0, discordance - d * d))
        )

    difference: float | None = None
    if gap(discordance) >= 0:
        low, high = 0.0, discordance
        for _ in range(200):
            middle = (low + high) / 2.0
            if gap(middle) < 0:
                low = middle
            else:
                high = middle
        difference = high
    return DetectableDifference(
        difference=difference, comparison="paired", n=n, effective_n=effective_n,
        design_effect=design_effect, alpha=alpha, power=power,
    )  # fmt: skip
