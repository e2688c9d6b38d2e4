"""A judged rate corrected for the judge's own measured error, with an interval that carries both errors.

A hallucination rate read by a judge is the rate *the judge sees*: a judge that misses a quarter of the
hallucinations (sensitivity 0.75) and flags one faithful statement in ten (specificity 0.9) turns a true rate
of 20 % into an observed 0.75·20 + 0.1·80 = 23 %. When the judge's sensitivity and specificity have been
measured on labelled real answers, the Rogan-Gladen estimator inverts that:

    corrected = (observed + specificity - 1) / (sensitivity + specificity - 1)

(clipped to [0, 1]). Its uncertainty has two sources: the sample of questions (the run's own bootstrap) and
the finite calibration set the judge was measured on. The interval here draws both together: each bootstrap
replicate of the observed rate is paired with a sensitivity and a specificity drawn from their Jeffreys
posteriors (Beta(k + ½, n - k + ½)) given the calibration counts, and corrected. A judge no better than chance
on its calibration set (sensitivity + specificity ≤ 1) has no corrected estimate: its reading carries no
information to invert.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from halluscope.metrics.stats.interval import DEFAULT_LEVEL, Interval, check_level

__all__ = ["MIN_INFORMATIVENESS", "Agreement", "corrected_interval", "rogan_gladen"]

#: Youden's J (sensitivity + specificity - 1) below which a drawn judge counts as uninformative: dividing
#: by a near-zero J would give replicates at ±infinity, clipped to 0 or 1, that say nothing about the rate.
MIN_INFORMATIVENESS = 0.05


@dataclass(frozen=True)
class Agreement:
    """Calibration counts: of ``positives`` labelled hallucinated, ``found`` were called so by the judge; of
    ``negatives`` labelled faithful, ``passed`` were called faithful."""

    found: int
    positives: int
    passed: int
    negatives: int

    def __post_init__(self) -> None:
        if not (0 <= self.found <= self.positives and 0 <= self.passed <= self.negatives):
            raise ValueError(f"calibration counts {self} are impossible: each count lies within its total")
        if self.positives == 0 or self.negatives == 0:
            raise ValueError("a judge's agreement needs labelled hallucinations and labelled faithful statements")

    @property
    def sensitivity(self) -> float:
        return self.found / self.positives

    @property
    def specificity(self) -> float:
        return self.passed / self.negatives


def rogan_gladen(observed: float, sensitivity: float, specificity: float) -> float | None:
    """The true rate that a judge of this sensitivity and specificity reads as ``observed`` (shares in [0, 1]),
    clipped to [0, 1]; None for a judge no better than chance."""
    informativeness = sensitivity + specificity - 1.0
    if informativeness < MIN_INFORMATIVENESS:
        return None
    return float(min(1.0, max(0.0, (observed + specificity - 1.0) / informativeness)))


def corrected_interval(
    observed: float,
    observed_replicates: NDArray[np.float64],
    agreement: Agreement,
    *,
    level: float = DEFAULT_LEVEL,
    seed: int = 0,
    unit: str = "item",
    n: int = 0,
    units: int = 0,
) -> tuple[float, Interval] | None:
    """The corrected rate and its interval, from the observed rate (a share), its bootstrap replicates (the
    run's sampling error) and the calibration counts (the judge's measurement error). None when the judge
    is no better than chance on its calibration set."""
    level = check_level(level)
    estimate = rogan_gladen(observed, agreement.sensitivity, agreement.specificity)
    if estimate is None:
        return None
    draws = observed_replicates[np.isfinite(observed_replicates)]
    if draws.size == 0:
        return None
    rng = np.random.default_rng(seed)
    sensitivity = rng.beta(agreement.found + 0.5, agreement.positives - agreement.found + 0.5, size=draws.size)
    specificity = rng.beta(agreement.passed + 0.5, agreement.negatives - agreement.passed + 0.5, size=draws.size)
    informativeness = sensitivity + specificity - 1.0
    usable = informativeness >= MIN_INFORMATIVENESS
    corrected = np.clip((draws[usable] + specificity[usable] - 1.0) / informativeness[usable], 0.0, 1.0)
    if corrected.size == 0:
        return None
    alpha = 1.0 - level
    low, high = np.quantile(corrected, [alpha / 2.0, 1.0 - alpha / 2.0])
    interval = Interval(
        low=float(low), high=float(high), level=level, method="rogan-gladen-bootstrap", unit=unit, n=max(n, units),
        units=units, seed=seed, resamples=int(corrected.size),
    )  # fmt: skip
    return estimate, interval
