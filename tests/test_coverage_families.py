"""Do the intervals every run writes cover the truth? Simulated runs of known truth for each benchmark family.

The three families whose headlines halluscope bounds: **yes/no** answers (POPE, AMBER-d, HallusionBench,
Reefknot: a share of correct answers, several questions per image), **CHAIR-like counts** (CHAIRi: object
mentions that the image lacks over all mentions, several mentions per caption) and **claim-level rates**
(Tri-HE's Hallu-Q: the mean over questions of each question's share of hallucinated claims, several questions
per image). Each is simulated twice: with no dependence inside a unit (every answer, mention or claim its own
coin) and with it built in (each image or caption has its own rate, drawn around the truth, as a model that
misreads a scene makes several mistakes about it). The intervals are made exactly as a run makes them, from
the benchmark's own declarations (``metrics.declared``).

Tolerance: over S = 400 simulated runs a correct 95 % interval's coverage has a binomial standard deviation
of 1.1 points, so 92-97.5 % is about 2.5 deviations either side of 95 % (a bootstrap of a ratio over a few
hundred units runs a little under its level, hence the lower bound's extra room); the figures over 1,000 runs
per case are in ``bench/interval_coverage.py``. The naive interval (every item independent) on the clustered
simulations is shown to under-cover: the reason a run resamples images and captions.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from halluscope.benchmarks.chair import chair_declarations
from halluscope.benchmarks.triplets import triplet_declarations
from halluscope.benchmarks.yes_no import yes_no_declarations
from halluscope.metrics.declared import declared_intervals
from halluscope.metrics.stats import proportion_interval
from halluscope.stages import MetricDeclaration, MetricTable

RUNS = 400
RESAMPLES = 1000


def _unit_rates(rng: np.random.Generator, units: int, truth: float, clustered: bool) -> np.ndarray:
    """Each unit's own rate: the truth itself, or a Beta draw of mean ``truth`` (intra-unit correlation 1/3)."""
    if not clustered:
        return np.full(units, truth)
    return rng.beta(2 * truth, 2 * (1 - truth), size=units)


def yes_no_run(rng: np.random.Generator, truth: float, clustered: bool) -> MetricTable:
    """POPE-like: 100 images, six questions each; ``correct`` with the image's rate."""
    images, per_image = 100, 6
    rates = _unit_rates(rng, images, truth, clustered)
    correct = (rng.random((images, per_image)) < rates[:, None]).astype(float).ravel()
    ids = [f"{i}-{j}" for i in range(images) for j in range(per_image)]
    clusters = [str(i) for i in range(images) for _ in range(per_image)]
    components = {"correct": list(correct), "answered": [1.0] * len(ids)}
    return MetricTable(ids=ids, components=components, clusters=clusters)


def chair_run(rng: np.random.Generator, truth: float, clustered: bool) -> MetricTable:
    """CHAIR-like: 300 captions naming 1 + Poisson(3) COCO objects each; a mention is hallucinated with the
    caption's rate. CHAIRi's truth is ``truth`` (the rate does not depend on how many objects are named)."""
    captions = 300
    rates = _unit_rates(rng, captions, truth, clustered)
    mentions = 1 + rng.poisson(3, size=captions)
    hallucinated = rng.binomial(mentions, rates)
    components = {"mentions": list(mentions.astype(float)), "hallucinated_mentions": list(hallucinated.astype(float))}
    return MetricTable(ids=[str(i) for i in range(captions)], components=components)


def claims_run(rng: np.random.Generator, truth: float, clustered: bool) -> MetricTable:
    """Tri-HE-like: 80 images, five questions each, 1 + Poisson(2) claims per answer, each hallucinated with the
    image's rate; a question's row holds its share of hallucinated claims, whose mean's truth is ``truth``."""
    images, per_image = 80, 5
    rates = np.repeat(_unit_rates(rng, images, truth, clustered), per_image)
    claims = 1 + rng.poisson(2, size=images * per_image)
    share = rng.binomial(claims, rates) / claims
    ids = [f"{i}-{j}" for i in range(images) for j in range(per_image)]
    clusters = [str(i) for i in range(images) for _ in range(per_image)]
    return MetricTable(ids=ids, components={"all": list(share), "all_questions": [1.0] * len(ids)}, clusters=clusters)


def _declaration(declarations: tuple[MetricDeclaration, ...], name: str) -> MetricDeclaration:
    return next(d for d in declarations if d.name == name)


FAMILIES: dict[str, tuple[MetricDeclaration, str, Callable[..., MetricTable], float]] = {
    "yes/no accuracy": (_declaration(yes_no_declarations("image"), "accuracy"), "items", yes_no_run, 0.85),
    "CHAIRi": (_declaration(chair_declarations(), "CHAIRi"), "items", chair_run, 0.12),
    "Hallu-Q": (_declaration(triplet_declarations(), "hallu_q"), "questions", claims_run, 0.3),
}


def coverage(family: str, clustered: bool, runs: int = RUNS, seed: int = 0) -> tuple[float, float]:
    """Share of simulated runs whose declared 95 % interval covers the truth, and the naive interval's share
    (a Wilson interval over every answer, mention or claim as if independent; for Hallu-Q over questions)."""
    declaration, table_name, simulate, truth = FAMILIES[family]
    numerator, denominator = declaration.components
    rng = np.random.default_rng(seed)
    covered = naive_covered = 0
    for run in range(runs):
        table = simulate(rng, truth, clustered)
        interval = declared_intervals([declaration], {table_name: table}, resamples=RESAMPLES, seed=run)
        found = interval[declaration.name]
        assert found is not None
        covered += found.contains(declaration.scale * truth)
        hits, n = sum(table.components[numerator]), sum(table.components[denominator])
        naive = proportion_interval(round(hits), round(n))
        assert naive is not None
        naive_covered += naive.contains(truth)
    return covered / runs, naive_covered / runs


@pytest.mark.parametrize("family", list(FAMILIES))
def test_independent_units_are_covered_at_the_level(family: str) -> None:
    covered, _ = coverage(family, clustered=False)
    assert 0.92 <= covered <= 0.975, covered


@pytest.mark.parametrize("family", list(FAMILIES))
def test_clustered_units_are_covered_at_the_level_where_a_naive_interval_is_not(family: str) -> None:
    covered, naive = coverage(family, clustered=True)
    assert 0.92 <= covered <= 0.975, covered
    assert naive < 0.85, naive  # every answer counted as independent: far too narrow
