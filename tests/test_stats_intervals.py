"""Intervals for one number: Wilson and Clopper-Pearson for a proportion, the cluster bootstrap for any metric.

What a user relies on: a 95 % interval covers the true value about 95 % of the time (checked on simulated data
of known truth), it agrees with SciPy where SciPy has the same interval, and when items share an image the
interval resamples images — resampling items instead would claim a precision the data does not have.

Tolerances of the coverage checks: a correct 95 % interval's coverage over S simulated datasets is a binomial
share with standard deviation sqrt(0.95·0.05/S). Every band below spans at least 3.2 such deviations either
side of what the interval should give, so a correct interval fails it with probability under 0.2 % for any
seed (and never for the fixed seeds used here), while the failures it is meant to catch fall well outside.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats as scipy_stats

from halluscope.metrics.binary import binary_counts, f1_score
from halluscope.metrics.stats import (
    ClusteredSums,
    Interval,
    clopper_pearson_bounds,
    cluster_bootstrap,
    f1,
    proportion_interval,
    ratio,
    wilson_bounds,
)

COUNTS = [(0, 1), (1, 1), (0, 10), (10, 10), (3, 10), (1, 30), (37, 200), (199, 200), (5000, 9000), (0, 5000)]


@pytest.mark.parametrize(("k", "n"), COUNTS)
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_wilson_and_clopper_pearson_match_scipy(k: int, n: int, level: float) -> None:
    result = scipy_stats.binomtest(k, n)
    wilson = proportion_interval(k, n, level=level, method="wilson")
    exact = proportion_interval(k, n, level=level, method="clopper-pearson")
    assert wilson is not None and exact is not None
    reference = result.proportion_ci(confidence_level=level, method="wilson")
    assert (wilson.low, wilson.high) == pytest.approx((reference.low, reference.high), abs=1e-12)
    reference = result.proportion_ci(confidence_level=level, method="exact")
    assert (exact.low, exact.high) == pytest.approx((reference.low, reference.high), abs=1e-10)
    assert exact.method == "clopper-pearson" and exact.seed is None and exact.n == exact.units == n


def test_degenerate_counts() -> None:
    """No items: no interval at all (a [0, 1] would read as a measurement). All or none: a bound at exactly 0
    or 1 with a real width on the other side."""
    assert proportion_interval(0, 0) is None
    none_right = proportion_interval(0, 20)
    all_right = proportion_interval(20, 20, method="clopper-pearson")
    assert none_right is not None and all_right is not None
    assert none_right.low == 0.0 and 0.1 < none_right.high < 0.2
    assert all_right.high == 1.0 and 0.8 < all_right.low < 0.9
    with pytest.raises(ValueError, match="0 <= hits <= items, got 5 hits of 3 items"):
        proportion_interval(5, 3)
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        proportion_interval(5, 10, level=95)


def test_wilson_covers_the_true_proportion_at_its_level() -> None:
    """2000 simulated benchmarks of 200 independent items with a true rate of 30 %: the 95 % Wilson interval
    covers 0.30 in 93-97 % of them (±2 points is 4 binomial deviations of 0.49 points at S = 2000). The Wald
    interval ``p ± 1.96·sqrt(p(1-p)/n)`` on 40 items at 5 % falls far outside that band — the band can fail."""
    rng = np.random.default_rng(11)
    hits = rng.binomial(200, 0.30, size=2000)
    low, high = wilson_bounds(hits, 200, 0.95)
    coverage = float(np.mean((low <= 0.30) & (high >= 0.30)))
    assert 0.93 <= coverage <= 0.97, coverage

    rare = rng.binomial(40, 0.05, size=2000) / 40
    half = 1.96 * np.sqrt(rare * (1 - rare) / 40)
    wald_coverage = float(np.mean((rare - half <= 0.05) & (rare + half >= 0.05)))
    assert wald_coverage < 0.90, wald_coverage


def test_clopper_pearson_never_covers_less_than_its_level() -> None:
    """The exact interval is conservative: its coverage of a rare rate (2 % over 150 items) stays at or above
    95 % up to simulation noise (one point below is 2.9 deviations at S = 800)."""
    rng = np.random.default_rng(12)
    hits = rng.binomial(150, 0.02, size=800)
    bounds = {int(k): clopper_pearson_bounds(int(k), 150) for k in np.unique(hits)}
    covered = [bounds[int(k)][0] <= 0.02 <= bounds[int(k)][1] for k in hits]
    assert float(np.mean(covered)) >= 0.94


def _clustered_proportion(rng: np.random.Generator, clusters: int = 60, icc: float = 0.3, mean: float = 0.7):
    """Items in images of 4-8 questions; each image has its own success rate drawn from a Beta with mean
    ``mean`` and intra-cluster correlation ``icc`` (a + b = 1/icc - 1), so items of an image succeed together."""
    strength = 1.0 / icc - 1.0
    sizes = rng.integers(4, 9, size=clusters)
    rates = rng.beta(mean * strength, (1 - mean) * strength, size=clusters)
    hits = rng.binomial(sizes, rates)
    ids = np.repeat(np.arange(clusters), sizes)
    position = np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    correct = (position < np.repeat(hits, sizes)).astype(float)
    return correct, ids.tolist()


def test_cluster_bootstrap_covers_a_clustered_proportion_where_the_item_bootstrap_does_not() -> None:
    """400 simulated benchmarks of 60 images, ICC 0.3, true accuracy 70 %. Resampling images covers 0.70 in
    91-98.5 % of them (the percentile bootstrap runs a little under 95 % with 60 units; 0.91 is 3 deviations
    below 0.945). Resampling items, as if the six questions about one image were independent, covers it far
    less often: the interval is about 1/sqrt(design effect 1 + 5·0.3 = 2.5) as wide as it should be."""
    rng = np.random.default_rng(7)
    by_image = by_item = 0
    for dataset in range(400):
        correct, images = _clustered_proportion(rng)
        components = {"correct": correct, "items": np.ones(correct.size)}
        accuracy = ratio("correct", "items")
        clustered = cluster_bootstrap(
            ClusteredSums.from_items(components, images, unit="image"), accuracy, resamples=500, seed=dataset
        )
        naive = cluster_bootstrap(ClusteredSums.from_items(components), accuracy, resamples=500, seed=dataset)
        assert clustered is not None and naive is not None
        assert clustered.unit == "image" and clustered.units == 60 and clustered.n == correct.size
        by_image += clustered.contains(0.7)
        by_item += naive.contains(0.7)
    assert 0.91 <= by_image / 400 <= 0.985, by_image / 400
    assert by_item / 400 < 0.88, by_item / 400


def test_f1_bootstrap_equals_recomputing_f1_on_resampled_images() -> None:
    """The vectorised bootstrap over per-image tp/fp/fn sums gives exactly the F1 values one gets by drawing the
    same images and recounting their answers with the metrics module's own F1."""
    rng = np.random.default_rng(3)
    images = np.repeat(np.arange(40), 6)
    labels = np.where(rng.random(images.size) < 0.5, "yes", "no")
    predictions = np.where(rng.random(images.size) < 0.8, labels, np.where(labels == "yes", "no", "yes"))
    tp = (predictions == "yes") & (labels == "yes")
    fp = (predictions == "yes") & (labels == "no")
    fn = (predictions == "no") & (labels == "yes")
    data = ClusteredSums.from_items({"tp": tp, "fp": fp, "fn": fn}, images.tolist(), unit="image")
    interval = cluster_bootstrap(data, f1(scale=100.0), resamples=300, seed=5)
    assert interval is not None

    drawn = np.random.default_rng(5).integers(0, 40, size=(300, 40))
    reference = []
    for resample in drawn:
        rows = np.concatenate([np.flatnonzero(images == image) for image in resample])
        counts = binary_counts(list(predictions[rows]), list(labels[rows]))
        precision = 100 * counts.tp / (counts.tp + counts.fp)
        recall = 100 * counts.tp / (counts.tp + counts.fn)
        reference.append(f1_score(precision, recall))
    low, high = np.quantile(reference, [0.025, 0.975])
    assert (interval.low, interval.high) == pytest.approx((low, high), abs=1e-9)
    estimate = data.evaluate(f1(scale=100.0))
    assert estimate is not None and interval.contains(estimate)


def test_one_item_per_cluster_is_the_plain_bootstrap_and_matches_wilson() -> None:
    correct = np.r_[np.ones(620), np.zeros(380)]
    components = {"correct": correct, "items": np.ones(1000)}
    plain = cluster_bootstrap(ClusteredSums.from_items(components), ratio("correct", "items"), seed=1)
    singletons = cluster_bootstrap(
        ClusteredSums.from_items(components, [f"q{i}" for i in range(1000)]),
        ratio("correct", "items"),
        seed=1,
    )
    wilson = proportion_interval(620, 1000)
    assert plain is not None and singletons is not None and wilson is not None
    assert (plain.low, plain.high) == (singletons.low, singletons.high)
    assert plain.units == plain.n == 1000 and plain.unit == "item"
    assert (plain.low, plain.high) == pytest.approx((wilson.low, wilson.high), abs=0.005)


def test_bootstrap_is_repeatable_by_seed() -> None:
    rng = np.random.default_rng(0)
    data = ClusteredSums.from_items({"h": rng.random(300), "n": np.ones(300)}, list(np.arange(300) // 3))
    first = cluster_bootstrap(data, ratio("h", "n"), seed=42)
    again = cluster_bootstrap(data, ratio("h", "n"), seed=42)
    other = cluster_bootstrap(data, ratio("h", "n"), seed=43)
    assert first == again and first is not None and other is not None
    assert (first.low, first.high) != (other.low, other.high)
    assert first.seed == 42 and first.resamples == 4000


def test_bca_agrees_with_scipy_on_a_skewed_mean() -> None:
    """On skewed data (exponential waiting times) BCa shifts the interval towards the long tail, as SciPy's
    BCa does; the bounds agree with SciPy's within Monte Carlo error (3 % of the width at 20000 resamples)."""
    values = np.random.default_rng(9).exponential(size=60)
    data = ClusteredSums.from_items({"total": values, "count": np.ones(60)})
    ours = cluster_bootstrap(data, ratio("total", "count"), method="bca", resamples=20000, seed=2)
    percentile = cluster_bootstrap(data, ratio("total", "count"), resamples=20000, seed=2)
    reference = scipy_stats.bootstrap(
        (values,), np.mean, method="BCa", n_resamples=20000, random_state=np.random.default_rng(2)
    ).confidence_interval
    assert ours is not None and percentile is not None and ours.method == "bootstrap-bca"
    tolerance = 0.03 * (reference.high - reference.low)
    assert ours.low == pytest.approx(reference.low, abs=tolerance)
    assert ours.high == pytest.approx(reference.high, abs=tolerance)
    assert ours.high > percentile.high and ours.low > percentile.low


def test_undefined_metric_gives_no_interval_and_undefined_resamples_are_counted() -> None:
    """F1 without any positive anywhere is undefined: no interval. With a single positive image, resamples
    that miss it have no F1; they are dropped and the interval says how many it rests on."""
    nothing = ClusteredSums.from_items({"tp": np.zeros(10), "fp": np.zeros(10), "fn": np.zeros(10)})
    assert cluster_bootstrap(nothing, f1()) is None
    tp = np.zeros(30)
    tp[0] = 1
    sparse = ClusteredSums.from_items({"tp": tp, "fp": np.zeros(30), "fn": np.zeros(30)})
    interval = cluster_bootstrap(sparse, f1(), resamples=2000)
    assert interval is not None and 0 < (interval.resamples or 0) < 2000
    # A resample keeps the single positive with probability 1 - (29/30)^30, about 64 %.
    assert (interval.resamples or 0) / 2000 == pytest.approx(1 - (29 / 30) ** 30, abs=0.04)


def test_bad_items_are_named() -> None:
    with pytest.raises(ValueError, match=r"item 2 has a non-finite 'hits' value \(nan\)"):
        ClusteredSums.from_items({"hits": [1.0, 0.0, float("nan")], "items": [1, 1, 1]})
    with pytest.raises(ValueError, match=r"item 'coco-random-7' has a non-finite 'hits' value \(inf\)"):
        ClusteredSums.from_items({"hits": [1.0, float("inf")]}, item_ids=["coco-random-6", "coco-random-7"])
    with pytest.raises(ValueError, match="2 cluster ids for 3 items"):
        ClusteredSums.from_items({"hits": [1, 0, 1]}, ["a", "b"])
    with pytest.raises(ValueError, match="component 'items' has 2 values for 3 items"):
        ClusteredSums.from_items({"hits": [1, 0, 1], "items": [1, 1]})
    data = ClusteredSums.from_items({"hits": [1, 0, 1], "items": [1, 1, 1]})
    with pytest.raises(ValueError, match="must be vectorised"):
        cluster_bootstrap(data, lambda totals: np.array([0.5]))


def test_interval_record_is_json_ready_and_scales_to_percent() -> None:
    interval = proportion_interval(37, 200)
    assert interval is not None
    percent = interval.scaled(100).to_json(digits=2)
    assert json.loads(json.dumps(percent)) == {
        "low": round(100 * interval.low, 2), "high": round(100 * interval.high, 2), "level": 0.95,
        "method": "wilson", "unit": "item", "n": 200, "units": 200, "seed": None, "resamples": None,
    }  # fmt: skip
    assert Interval.model_validate(interval.to_json()) == interval
    with pytest.raises(ValueError, match=r"low 0\.6 is above high 0\.4"):
        Interval(low=0.6, high=0.4, level=0.95, method="wilson", unit="item", n=10, units=10)


def test_one_unit_gets_no_interval_rather_than_one_of_zero_width() -> None:
    """Twelve answers about one image: the bootstrap can only redraw that image, so its interval would have
    no width; there is none. Two images give a real one."""
    scores = {"score": np.arange(12, dtype=float), "scored": np.ones(12)}
    one_image = ClusteredSums.from_items(scores, ["img"] * 12, unit="image")
    assert one_image.evaluate(ratio("score", "scored", scale=1.0)) == pytest.approx(5.5)
    assert cluster_bootstrap(one_image, ratio("score", "scored", scale=1.0), seed=0) is None
    two_images = ClusteredSums.from_items(scores, ["a"] * 6 + ["b"] * 6, unit="image")
    interval = cluster_bootstrap(two_images, ratio("score", "scored", scale=1.0), seed=0)
    assert interval is not None and interval.low < 5.5 < interval.high


def _sums(values: np.ndarray, names: tuple[str, ...]) -> ClusteredSums:
    units = values.shape[0]
    return ClusteredSums(names=names, sums=values, cluster_ids=tuple(range(units)), n=units, unit="image")


def test_shared_draw_gives_each_table_its_own_intervals_exactly() -> None:
    """Tables with as many units share one draw (bootstrap_shared): every interval equals, bit for bit, the one
    its own bootstrap_many gives; whole-number tables beside a fractional one and a table of other size too."""
    from halluscope.metrics.stats.bootstrap import bootstrap_many, bootstrap_shared

    rng = np.random.default_rng(7)
    counts = _sums(rng.integers(0, 4, size=(300, 3)).astype(float), ("hits", "items", "tp"))
    pairs = _sums(rng.integers(0, 2, size=(300, 2)).astype(float), ("both", "pairs"))
    fractions = _sums(rng.random((300, 2)) * 3.0, ("score", "weight"))
    other = _sums(rng.integers(0, 3, size=(211, 2)).astype(float), ("hits", "items"))
    items = [
        (counts, {"accuracy": ratio("hits", "items"), "f1": f1("tp", "hits", "items")}),
        (pairs, {"pair_accuracy": ratio("both", "pairs")}),
        (fractions, {"mean": ratio("score", "weight", scale=1.0)}),
        (other, {"accuracy": ratio("hits", "items")}),
    ]
    shared = bootstrap_shared(items, resamples=500, seed=3)
    alone = [bootstrap_many(data, statistics, resamples=500, seed=3) for data, statistics in items]
    assert shared == alone
    assert all(interval is not None for result in shared for interval in result.values())
