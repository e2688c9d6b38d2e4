"""The judge correction (Rogan-Gladen) and its interval, tested on simulated runs of known truth: a judge of
known sensitivity and specificity, measured on a finite calibration set, reads a sample of known rate."""

from __future__ import annotations

import numpy as np
import pytest

from halluscope.metrics.stats import ClusteredSums, proportion_interval, ratio
from halluscope.metrics.stats.bootstrap import bootstrap_replicates
from halluscope.metrics.stats.judge_error import Agreement, corrected_interval, rogan_gladen


def test_rogan_gladen_inverts_what_the_judge_does_to_a_rate() -> None:
    truth, sensitivity, specificity = 0.2, 0.75, 0.9
    observed = sensitivity * truth + (1 - specificity) * (1 - truth)
    assert observed == pytest.approx(0.23)
    assert rogan_gladen(observed, sensitivity, specificity) == pytest.approx(truth)
    assert rogan_gladen(0.01, sensitivity, specificity) == 0.0  # below what the judge's false alarms give: clipped
    assert rogan_gladen(0.4, 0.5, 0.5) is None  # a coin: nothing to invert


def test_impossible_or_one_sided_calibration_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="impossible"):
        Agreement(found=12, positives=10, passed=5, negatives=10)
    with pytest.raises(ValueError, match="labelled hallucinations"):
        Agreement(found=0, positives=0, passed=5, negatives=10)


def _one_run(rng: np.random.Generator, truth: float, se: float, sp: float, items: int, seed: int) -> tuple:
    calibration = Agreement(
        found=int(rng.binomial(120, se)), positives=120, passed=int(rng.binomial(240, sp)), negatives=240
    )
    hallucinated = rng.random(items) < truth
    called = np.where(hallucinated, rng.random(items) < se, rng.random(items) < 1 - sp).astype(float)
    data = ClusteredSums.from_items({"called": called, "items": np.ones(items)})
    statistic = ratio("called", "items")
    observed = data.evaluate(statistic)
    assert observed is not None
    replicates = bootstrap_replicates(data, statistic, resamples=1000, seed=seed)
    result = corrected_interval(observed, replicates, calibration, seed=seed, n=items, units=items)
    naive = proportion_interval(int(called.sum()), items)
    return result, naive


def test_the_corrected_interval_covers_the_true_rate_and_the_judges_reading_does_not() -> None:
    rng = np.random.default_rng(2)
    truth, covered, naive_covered, runs = 0.2, 0, 0, 200
    for run in range(runs):
        result, naive = _one_run(rng, truth, se=0.75, sp=0.9, items=400, seed=run)
        assert result is not None and naive is not None
        covered += result[1].contains(truth)
        naive_covered += naive.contains(truth)
    assert 0.92 <= covered / runs <= 0.995, covered / runs
    # The judge's own reading is biased (23 % seen for 20 % true): its sampling interval misses the truth often.
    assert naive_covered / runs < 0.8, naive_covered / runs


def test_the_calibration_sets_size_widens_the_interval() -> None:
    rng = np.random.default_rng(4)
    called = (rng.random(2000) < 0.3).astype(float)
    data = ClusteredSums.from_items({"called": called, "items": np.ones(2000)})
    replicates = bootstrap_replicates(data, ratio("called", "items"), resamples=2000, seed=0)
    observed = float(called.mean())
    small = corrected_interval(observed, replicates, Agreement(found=16, positives=20, passed=36, negatives=40))
    large = corrected_interval(observed, replicates, Agreement(found=800, positives=1000, passed=1800, negatives=2000))
    assert small is not None and large is not None
    assert small[0] == pytest.approx(large[0])  # same sensitivity and specificity: the same estimate
    assert small[1].width > 2 * large[1].width


def test_a_judge_no_better_than_chance_gets_no_corrected_rate() -> None:
    replicates = np.full(100, 0.4)
    assert corrected_interval(0.4, replicates, Agreement(found=5, positives=10, passed=5, negatives=10)) is None
