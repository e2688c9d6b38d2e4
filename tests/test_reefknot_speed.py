"""The Reefknot scoring fast path (samples built once, the cyclic collector paused in the bulk steps) gives
the same samples and records as the plain path, and leaves the collector as it found it."""

from __future__ import annotations

import asyncio
import gc
import random

import pytest

from halluscope.benchmarks import ScoringContext
from halluscope.benchmarks.reefknot import Reefknot
from halluscope.cache import Cache
from halluscope.gcpause import gc_paused
from halluscope.types import Response, Sample
from tests.paths import REEFKNOT_DIR

TEXTS = ["Yes.", "no", "No, there is not.", "I cannot tell.", " B", "The answer is C.", "(A)", "maybe D"]


def _pairs(samples: list[Sample]) -> list[tuple[Sample, Response | None]]:
    rng = random.Random(7)
    pairs: list[tuple[Sample, Response | None]] = []
    for sample in samples:
        if rng.random() < 0.05:
            pairs.append((sample, None))
            continue
        p_yes = rng.random()
        probs = {"yes_prob": p_yes, "no_prob": 1 - p_yes}
        pairs.append((sample, Response(id=sample.id, response=rng.choice(TEXTS), metadata=probs)))
    return pairs


@pytest.mark.full_data
def test_fast_path_gives_identical_samples_and_records() -> None:
    bench = Reefknot(data=REEFKNOT_DIR, tasks=["yesno", "mcq"])
    built = list(bench._build_samples())  # the plain generator, no caching, collector running
    assert list(bench.samples()) == built and list(bench.samples()) == built  # cached, same on every call
    built = built[:3000]  # what a run's --limit 3000 scores

    pairs = _pairs(built)
    ctx = ScoringContext(cache=Cache(None))
    fast = asyncio.run(bench.score_many(pairs, ctx))
    # Plain path: one item at a time, through the same scoring steps but with the collector left running.
    plain = []
    for pair in pairs:
        states, vqa = bench._score_closed_items([pair])
        assert not vqa
        plain.extend(bench._records(states))
    assert [r.model_dump() for r in fast] == [r.model_dump() for r in plain]
    assert {r.failure for r in fast} == {None, "no response for this sample"}
    assert bench.metrics(fast) == bench.metrics(plain)


def test_collector_state_is_restored() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # a caller that had it off keeps it off
    finally:
        gc.enable()
