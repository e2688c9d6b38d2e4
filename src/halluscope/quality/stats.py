"""Correlations across models, each with its number of models and a bootstrap confidence interval.

HQM's reliability and validity figures are correlations between two score lists, one score per model. With
the handful of models a lab usually has, such a correlation is very uncertain, so every figure here carries
``n`` and a 95% bootstrap interval, and a plain warning when ``n`` is small. The statistics are scipy's
(:func:`scipy.stats.pearsonr`, :func:`scipy.stats.spearmanr`, :func:`scipy.stats.bootstrap`, paired
resampling of models, percentile intervals); scipy is imported inside the functions so ``halluscope --help``
stays instant.

A bootstrap resample can draw the same model several times and leave a score list constant, for which no
correlation exists; such resamples are dropped (scipy's percentile interval would otherwise be undefined)
and their share is reported as ``degenerate_resamples``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping

from pydantic import BaseModel

#: Fewest models for which a correlation is computed at all.
MIN_MODELS = 3
#: Below this many models the output says plainly that the correlation says little.
FEW_MODELS = 10
DEFAULT_RESAMPLES = 2000
CONFIDENCE = 0.95


class TooFewModelsError(ValueError):
    """A correlation was asked for over fewer than :data:`MIN_MODELS` models."""


class Coefficient(BaseModel):
    """One correlation coefficient with its bootstrap interval."""

    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None


class Correlation(BaseModel):
    """Pearson and Spearman correlation of two score lists over the same models."""

    n: int
    models: list[str]
    pearson: Coefficient
    spearman: Coefficient
    confidence: float = CONFIDENCE
    resamples: int = DEFAULT_RESAMPLES
    degenerate_resamples: float = 0.0
    #: A plain-words caveat (few models, a wide interval, constant scores); None when there is nothing to say.
    warning: str | None = None


def _finite(value: float) -> float | None:
    return None if value is None or not math.isfinite(float(value)) else float(value)


def _coefficient(x: list[float], y: list[float], kind: str, resamples: int, seed: int,
                 confidence: float) -> tuple[Coefficient, float]:
    import numpy as np
    from scipy import stats

    def statistic(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        """Vectorised over resamples; a constant resample gives NaN (no correlation exists)."""
        if kind == "spearman":
            a, b = stats.rankdata(a, axis=axis), stats.rankdata(b, axis=axis)
        constant = (np.ptp(a, axis=axis) == 0) | (np.ptp(b, axis=axis) == 0)
        value = np.asarray(stats.pearsonr(a, b, axis=axis).statistic, dtype=float)
        return np.where(constant, np.nan, value)

    function = stats.pearsonr if kind == "pearson" else stats.spearmanr
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant inputs: handled as NaN above
        whole = float(statistic(xs, ys))
        if math.isnan(whole):
            return Coefficient(value=None), 0.0
        p_value = float(function(xs, ys).pvalue)
        result = stats.bootstrap(
            (xs, ys), statistic, paired=True, vectorized=True,
            n_resamples=resamples, confidence_level=confidence, method="percentile",
            random_state=np.random.default_rng(seed),
        )
    distribution = np.asarray(result.bootstrap_distribution, dtype=float)
    finite = distribution[np.isfinite(distribution)]
    degenerate = 1.0 - len(finite) / len(distribution) if len(distribution) else 1.0
    low, high = result.confidence_interval.low, result.confidence_interval.high
    if not (math.isfinite(low) and math.isfinite(high)) and len(finite):
        tail = 100 * (1 - confidence) / 2
        low, high = np.percentile(finite, [tail, 100 - tail])
    return Coefficient(value=whole, ci_low=_finite(low), ci_high=_finite(high), p_value=_finite(p_value)), degenerate


def correlate(
    x: Mapping[str, float],
    y: Mapping[str, float],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> Correlation:
    """Correlate two {model: score} maps over the models both hold (raises below :data:`MIN_MODELS`)."""
    models = sorted(set(x) & set(y))
    if len(models) < MIN_MODELS:
        raise TooFewModelsError(
            f"a correlation needs at least {MIN_MODELS} models scored on both sides; got {len(models)}"
            + (f" ({', '.join(models)})" if models else "")
        )
    xs = [float(x[m]) for m in models]
    ys = [float(y[m]) for m in models]
    pearson, degenerate = _coefficient(xs, ys, "pearson", resamples, seed, confidence)
    spearman, _ = _coefficient(xs, ys, "spearman", resamples, seed, confidence)
    notes = []
    if pearson.value is None:
        notes.append("one side gives every model the same score, so no correlation exists")
    if len(models) < FEW_MODELS:
        notes.append(f"only {len(models)} models: a correlation over so few says little")
    if pearson.ci_low is not None and pearson.ci_high is not None and pearson.ci_high - pearson.ci_low > 0.5:
        notes.append(
            f"the {round(100 * confidence)}% interval runs from {pearson.ci_low:.2f} to {pearson.ci_high:.2f}"
        )
    if degenerate > 0.05:
        notes.append(f"{100 * degenerate:.0f}% of bootstrap resamples had constant scores and were dropped")
    return Correlation(
        n=len(models), models=models, pearson=pearson, spearman=spearman, confidence=confidence,
        resamples=resamples, degenerate_resamples=round(degenerate, 4),
        warning="; ".join(notes) if notes else None,
    )
