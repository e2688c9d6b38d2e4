"""Comparing two runs on the same items, correcting across metrics, and the smallest difference worth reading.

What a user relies on: when two models are equally good, a comparison calls them different about 5 % of the
time at the 5 % level — not more, also when questions come six to an image — and when one is better it says
so; the p-values agree with SciPy on the same counts; Holm's correction is the textbook procedure; the
minimum detectable difference is the difference a test of that size actually detects 80 % of the time.

Tolerance of the false-positive checks: over S = 400 simulated pairs of equal runs, a test at the 5 % level
rejects Binomial(400, 0.05) times; its 99.9 % range is 7 to 34, i.e. 1.75 % to 8.5 %, the band used below.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from halluscope.metrics.stats import (
    ClusteredSums,
    PairedComparison,
    design_effect,
    discordance_rate,
    f1,
    holm_adjust,
    intraclass_correlation,
    mcnemar_exact,
    minimum_detectable_difference,
    paired_bootstrap,
    paired_mean_comparison,
    paired_minimum_detectable_difference,
    paired_proportion_comparison,
    ratio,
    sign_flip_test,
    with_holm,
)

FALSE_POSITIVE_BAND = (0.0175, 0.085)


@pytest.mark.parametrize(
    ("b", "c"), [(0, 0), (0, 1), (1, 0), (5, 5), (3, 12), (12, 3), (40, 61), (0, 25), (700, 650)]
)
def test_mcnemar_exact_matches_scipy_binomial_test_on_the_discordant_pairs(b: int, c: int) -> None:
    expected = 1.0 if b + c == 0 else scipy_stats.binomtest(b, b + c, 0.5).pvalue
    assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-9, abs=1e-15)


def _equal_runs(rng: np.random.Generator, images: int = 60, per_image: int = 5, image_advantage: float = 0.0):
    """Two runs that are equally good on average. Each image has a difficulty both runs share; with
    ``image_advantage`` each image also favours one run or the other (normal, mean 0), as two models do when
    each is better at different kinds of image — items of one image then lean the same way."""
    difficulty = rng.beta(3.0, 1.5, size=images)
    advantage = rng.normal(0.0, image_advantage, size=images)
    rate_a = np.repeat(np.clip(difficulty + advantage, 0, 1), per_image)
    rate_b = np.repeat(np.clip(difficulty - advantage, 0, 1), per_image)
    ids = np.repeat(np.arange(images), per_image).tolist()
    return (
        (rng.random(rate_a.size) < rate_a).astype(float),
        (rng.random(rate_b.size) < rate_b).astype(float),
        ids,
    )


def _rejection_rates(
    image_advantage: float, seed: int, shift: float = 0.0, datasets: int = 400
) -> dict[str, float]:
    """Share of ``datasets`` simulated pairs of runs each test calls different at the 5 % level."""
    rng = np.random.default_rng(seed)
    rejected = {"bootstrap": 0, "mcnemar": 0, "sign-flip": 0}
    for dataset in range(datasets):
        a, b, images = _equal_runs(rng, image_advantage=image_advantage)
        if shift:
            b = np.maximum(b, (rng.random(b.size) < shift).astype(float))
        ones = np.ones(a.size)
        base = ClusteredSums.from_items({"correct": a, "items": ones}, images, unit="image")
        cand = ClusteredSums.from_items({"correct": b, "items": ones}, images, unit="image")
        comparison = paired_bootstrap(base, cand, ratio("correct", "items"), resamples=500, seed=dataset)
        assert comparison is not None
        rejected["bootstrap"] += comparison.p_value < 0.05
        only_a, only_b = int(np.sum((a == 1) & (b == 0))), int(np.sum((a == 0) & (b == 1)))
        rejected["mcnemar"] += mcnemar_exact(only_a, only_b) < 0.05
        rejected["sign-flip"] += sign_flip_test(base, cand, "correct", resamples=500, seed=dataset) < 0.05
    return {name: count / datasets for name, count in rejected.items()}


def test_equal_runs_are_called_different_about_five_percent_of_the_time() -> None:
    """Independent-looking items (no per-image advantage): all three tests hold their 5 % level."""
    rates = _rejection_rates(image_advantage=0.0, seed=1)
    for name, rate in rates.items():
        assert FALSE_POSITIVE_BAND[0] <= rate <= FALSE_POSITIVE_BAND[1], (name, rate)


def test_clustered_comparisons_need_the_cluster_tests() -> None:
    """When images favour one run or the other, McNemar — which treats the six questions of an image as six
    independent pieces of evidence — calls equal runs different far more than 5 % of the time (about 17 %);
    the paired cluster bootstrap and the sign-flip test over images stay at 5 %."""
    rates = _rejection_rates(image_advantage=0.2, seed=2)
    assert rates["mcnemar"] > 0.11, rates
    assert FALSE_POSITIVE_BAND[0] <= rates["bootstrap"] <= FALSE_POSITIVE_BAND[1], rates
    assert FALSE_POSITIVE_BAND[0] <= rates["sign-flip"] <= FALSE_POSITIVE_BAND[1], rates


def test_a_real_difference_is_found() -> None:
    """The tests are not merely shy: a candidate that also gets right 40 % of what it got wrong (about 13
    points) is called better in over 85 % of 100 simulated benchmarks (each test finds it in about 95 %)."""
    rates = _rejection_rates(image_advantage=0.0, seed=3, shift=0.4, datasets=100)
    assert min(rates.values()) > 0.85, rates


def test_accuracy_comparison_uses_mcnemar_for_independent_items_and_the_bootstrap_for_clustered() -> None:
    baseline = np.r_[np.ones(60), np.zeros(40), np.ones(100)]
    candidate = np.r_[np.ones(60), np.ones(25), np.zeros(15), np.ones(100)]
    independent = paired_proportion_comparison(baseline, candidate)
    assert independent is not None and independent.test == "mcnemar-exact"
    assert independent.difference == pytest.approx((185 - 160) / 200)
    assert independent.p_value == pytest.approx(scipy_stats.binomtest(0, 25, 0.5).pvalue)
    assert independent.interval is not None and independent.interval.contains(independent.difference)
    assert independent.interval.method == "paired-bootstrap-percentile"
    points = independent.scaled(100)
    assert (points.baseline, points.candidate, points.difference) == pytest.approx((80.0, 92.5, 12.5))
    assert points.interval is not None and points.interval.low == pytest.approx(
        100 * independent.interval.low
    )
    clustered = paired_proportion_comparison(baseline, candidate, [i // 4 for i in range(200)], unit="image")
    assert clustered is not None and clustered.test == "paired-bootstrap"
    assert clustered.units == 50 and clustered.unit == "image" and clustered.n == 200
    with pytest.raises(ValueError, match="must be 0/1"):
        paired_proportion_comparison([0.5, 1.0], [1.0, 1.0])


def test_identical_runs_differ_by_nothing() -> None:
    rng = np.random.default_rng(4)
    tp, fp, fn = (rng.random(100) < 0.3 for _ in range(3))
    run = ClusteredSums.from_items({"tp": tp, "fp": fp, "fn": fn}, [i // 5 for i in range(100)])
    comparison = paired_bootstrap(run, run, f1(scale=100.0))
    assert comparison is not None and comparison.difference == 0.0 and comparison.p_value == 1.0
    assert comparison.interval is not None
    assert (comparison.interval.low, comparison.interval.high) == (0.0, 0.0)


def test_paired_runs_must_cover_the_same_items_but_not_in_the_same_order() -> None:
    values = np.arange(12, dtype=float)
    ones = np.ones(12)
    base = ClusteredSums.from_items({"v": values, "n": ones}, [i // 3 for i in range(12)])
    shuffled = ClusteredSums.from_items({"v": values[::-1], "n": ones}, [(11 - i) // 3 for i in range(12)])
    same = paired_bootstrap(base, shuffled, ratio("v", "n"))
    assert same is not None and same.difference == 0.0 and same.p_value == 1.0
    fewer = ClusteredSums.from_items({"v": values[:9], "n": ones[:9]}, [i // 3 for i in range(9)])
    with pytest.raises(ValueError, match=r"different items \(12 vs 9 items; 1 units only in the baseline"):
        paired_bootstrap(base, fewer, ratio("v", "n"))


def test_sign_flip_enumerates_small_cases_exactly() -> None:
    """Unit differences 1, 2, 3 (total 6). Of the 2^3 = 8 sign patterns only +++ and --- reach |total| >= 6,
    so p = 2/8 = 0.25. With differences 1, 2, 4 (total 7): again only +++ and --- reach 7: p = 0.25; with
    1, 1 (total 2): ++ and -- of 4 patterns: p = 0.5."""
    for differences, expected in [([1, 2, 3], 0.25), ([1, 2, 4], 0.25), ([1, 1], 0.5)]:
        units = len(differences)
        zeros = ClusteredSums.from_items({"v": np.zeros(units), "n": np.ones(units)})
        shifted = ClusteredSums.from_items({"v": np.array(differences, float), "n": np.ones(units)})
        assert sign_flip_test(zeros, shifted, "v") == pytest.approx(expected)
    with pytest.raises(ValueError, match="no component 'total' to test; the runs have v, n"):
        sign_flip_test(zeros, zeros, "total")


def test_paired_mean_comparison_reports_a_sign_flip_p_value() -> None:
    rng = np.random.default_rng(8)
    baseline = rng.normal(0.5, 0.2, size=300)
    candidate = baseline + 0.05 + rng.normal(0, 0.1, size=300)
    comparison = paired_mean_comparison(baseline, candidate, [i // 6 for i in range(300)], unit="image")
    assert comparison is not None and comparison.test == "sign-flip"
    assert comparison.difference == pytest.approx(float(np.mean(candidate - baseline)))
    assert comparison.p_value < 0.01
    assert comparison.interval is not None and comparison.interval.low > 0
    ones, images = np.ones(300), [i // 6 for i in range(300)]
    bca = paired_bootstrap(
        ClusteredSums.from_items({"v": baseline, "n": ones}, images),
        ClusteredSums.from_items({"v": candidate, "n": ones}, images),
        ratio("v", "n"),
        method="bca",
    )
    assert bca is not None and bca.interval is not None and bca.interval.method == "paired-bootstrap-bca"
    assert bca.interval.contains(bca.difference)
    assert bca.interval.width == pytest.approx(comparison.interval.width, rel=0.15)


def test_holm_by_hand() -> None:
    """Four metrics compared, p = 0.010, 0.040, 0.030, 0.005 (m = 4). Sorted ascending and multiplied by
    m, m-1, m-2, m-1-2...:
        0.005 x 4 = 0.020
        0.010 x 3 = 0.030
        0.030 x 2 = 0.060
        0.040 x 1 = 0.040 -> raised to 0.060, the largest before it (step-down keeps the order)
    Back in the given order: 0.030, 0.060, 0.060, 0.020. At alpha = 0.05 the first and last metrics are
    called different; a plain Bonferroni (x 4) would have kept only the last."""
    assert holm_adjust([0.010, 0.040, 0.030, 0.005]) == pytest.approx([0.030, 0.060, 0.060, 0.020])
    assert holm_adjust([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert holm_adjust([]) == []
    with pytest.raises(ValueError, match=r"p-value 1 is 1\.5"):
        holm_adjust([0.1, 1.5])


def test_holm_adjusted_p_values_reject_exactly_what_the_step_down_procedure_rejects() -> None:
    """Holm's procedure as first stated: compare the i-th smallest p with alpha / (m - i + 1), reject while it
    is below, stop at the first that is not. The adjusted p-values must reject the same set at every alpha."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        p_values = list(rng.random(rng.integers(1, 9)) ** 3)
        adjusted = holm_adjust(p_values)
        for alpha in (0.01, 0.05, 0.1):
            step_down: set[int] = set()
            for rank, index in enumerate(np.argsort(p_values, kind="stable")):
                if p_values[index] > alpha / (len(p_values) - rank):
                    break
                step_down.add(int(index))
            assert {i for i, p in enumerate(adjusted) if p <= alpha} == step_down


def test_with_holm_fills_in_the_adjusted_p_value_of_each_metric() -> None:
    def comparison(p: float) -> PairedComparison:
        return PairedComparison(
            baseline=0.5, candidate=0.6, difference=0.1, interval=None, p_value=p, test="mcnemar-exact",
            n=100, units=100, unit="item",
        )  # fmt: skip

    adjusted = with_holm(
        {"accuracy": comparison(0.01), "f1": comparison(0.04), "yes_ratio": comparison(0.03)}
    )
    assert {name: c.p_adjusted for name, c in adjusted.items()} == pytest.approx(
        {"accuracy": 0.03, "f1": 0.06, "yes_ratio": 0.06}
    )


def test_minimum_detectable_difference_by_hand_and_by_simulation() -> None:
    """n = 1000 items per run at a 50 % rate, 5 % two-sided, 80 % power:
    (z_0.975 + z_0.80) · sqrt(2 · 0.5 · 0.5 / 1000) = (1.959964 + 0.841621) · 0.0223607 = 0.062645.
    Two simulated runs at 50 % and 50 % + that difference are told apart by a two-proportion z-test in about
    80 % of 4000 simulated benchmarks (77-83 %: 4.7 deviations of 0.63 points)."""
    mdd = minimum_detectable_difference(1000, 0.5)
    assert mdd.difference == pytest.approx(0.062645, abs=5e-6)
    z = scipy_stats.norm.ppf
    assert mdd.difference == pytest.approx((z(0.975) + z(0.8)) * np.sqrt(2 * 0.25 / 1000), rel=1e-9)
    rng = np.random.default_rng(6)
    a = rng.binomial(1000, 0.5, size=4000) / 1000
    b = rng.binomial(1000, 0.5 + mdd.difference, size=4000) / 1000
    pooled = (a + b) / 2
    z_scores = (b - a) / np.sqrt(2 * pooled * (1 - pooled) / 1000)
    assert 0.77 <= float(np.mean(np.abs(z_scores) > z(0.975))) <= 0.83

    clustered = minimum_detectable_difference(1000, 0.5, design_effect=design_effect(6, 0.2))
    assert clustered.design_effect == pytest.approx(2.0) and clustered.effective_n == pytest.approx(500)
    assert clustered.difference == pytest.approx(mdd.difference * np.sqrt(2.0))


def test_paired_minimum_detectable_difference_is_what_mcnemar_detects_80_percent_of_the_time() -> None:
    """500 items on which the runs disagree 20 % of the time. Connor's formula gives d; 2000 simulated pairs
    with discordant shares (0.2 + d)/2 and (0.2 - d)/2 are called different by McNemar's exact test in about
    80 % of them (exact McNemar is a little conservative: 74-84 %)."""
    mdd = paired_minimum_detectable_difference(500, 0.2)
    assert mdd.difference is not None
    d = mdd.difference
    z = scipy_stats.norm.ppf
    # Connor's equation holds at the solution: d·sqrt(n) = z_a·sqrt(psi) + z_b·sqrt(psi - d²).
    assert d * np.sqrt(500) == pytest.approx(
        z(0.975) * np.sqrt(0.2) + z(0.8) * np.sqrt(0.2 - d * d), rel=1e-9
    )
    rng = np.random.default_rng(10)
    counts = rng.multinomial(500, [(0.2 + d) / 2, (0.2 - d) / 2, 0.8], size=2000)
    power = np.mean([mcnemar_exact(int(c), int(b)) < 0.05 for b, c, _ in counts])
    assert 0.74 <= power <= 0.84, power
    # Runs that disagree more need a larger difference; a tiny benchmark detects nothing possible.
    assert (paired_minimum_detectable_difference(500, 0.4).difference or 0) > d
    assert paired_minimum_detectable_difference(5, 0.1).difference is None


def test_intraclass_correlation_and_discordance_from_data() -> None:
    """The ANOVA estimate recovers the ICC of simulated clustered answers (0.3, within 0.05 over 2000 images);
    answers with no clustering give about 0."""
    rng = np.random.default_rng(13)
    strength = 1 / 0.3 - 1
    rates = np.repeat(rng.beta(0.6 * strength, 0.4 * strength, size=2000), 6)
    answers = (rng.random(rates.size) < rates).astype(float)
    images = [i // 6 for i in range(rates.size)]
    assert intraclass_correlation(answers, images) == pytest.approx(0.3, abs=0.05)
    independent = (rng.random(rates.size) < 0.6).astype(float)
    assert (intraclass_correlation(independent, images) or 0.0) < 0.03
    assert intraclass_correlation([1.0, 0.0], ["a", "b"]) is None
    assert discordance_rate([1, 1, 0, 0], [1, 0, 1, 0]) == 0.5
