"""Simulated model populations with known truth, for checking HQM's reliability against theory.

Each simulated model has a true hallucination rate ``p``; on every item it answers wrongly with probability
``p``, drawn from a random stream seeded by (model, sampling seed, item id), so a second run with another
sampling seed is an independent retest of the same model. The answers go through the real pipeline: a
responses map, :func:`halluscope.runs.runner.run_benchmark_async`, the benchmark's own scoring and
metrics, a run directory. The items are any benchmark whose samples have a yes/no or A–D letter reference
(Reefknot yes/no and multiple choice).

Classical test theory predicts the test-retest correlation of the observed rate over ``N`` items: the
observed rate of a model is its true rate plus binomial noise of variance ``p(1 - p)/N``, independent
between the two runs, so

    reliability = var(p) / (var(p) + mean(p(1 - p)) / N)

over the population's true rates (:func:`predicted_reliability`). It shrinks as ``N`` shrinks.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from halluscope.stages import BenchmarkInterface, SampleSource, ScoringContext
from halluscope.types import Response, Sample

if TYPE_CHECKING:
    from halluscope.runs.selection import Selection

LETTERS = ("A", "B", "C", "D")


def predicted_reliability(true_rates: Sequence[float], n_items: int) -> float:
    """Classical-test-theory reliability of the observed rate over ``n_items`` items (population moments)."""
    if n_items < 1 or len(true_rates) < 2:
        raise ValueError("need at least one item and two models")
    mean = sum(true_rates) / len(true_rates)
    true_variance = sum((p - mean) ** 2 for p in true_rates) / len(true_rates)
    error_variance = sum(p * (1 - p) for p in true_rates) / len(true_rates) / n_items
    return true_variance / (true_variance + error_variance)


def _answer(sample: Sample, wrong: bool, rng: random.Random) -> str:
    reference = (sample.reference or "").strip()
    if reference.lower() in ("yes", "no"):
        right = reference.lower()
        said = ({"yes": "no", "no": "yes"}[right]) if wrong else right
        return f"{said.capitalize()}."
    if reference.upper() in LETTERS:
        said = rng.choice([x for x in LETTERS if x != reference.upper()]) if wrong else reference.upper()
        return f"{said}"
    raise ValueError(
        f"sample {sample.id}: the simulator answers yes/no or A–D items only (reference {reference!r})"
    )


_NEGATED = re.compile(r"\bnot\b", re.I)


def simulated_responses(benchmark: SampleSource, name: str, rate: float, seed: int, *,
                        negation_blind: bool = False) -> dict[str, Response]:
    """One simulated model's answers: each item wrong with probability ``rate``, independently.

    A ``negation_blind`` model reads a negated yes/no question ("Is the cup not on the table?") as if the
    ``not`` were absent — the failure the parallel form's negations expose: on such items it is wrong
    exactly when it would have been right.
    """
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"true rate {rate} must be between 0 and 1")
    out = {}
    for sample in benchmark.samples():
        rng = random.Random(f"{name}|{seed}|{sample.id}")
        wrong = rng.random() < rate
        if negation_blind and (sample.reference or "").lower() in ("yes", "no") and _NEGATED.search(sample.prompt):
            wrong = not wrong
        out[sample.id] = Response(id=sample.id, response=_answer(sample, wrong, rng), model=name)
    return out


async def run_population(
    benchmark: BenchmarkInterface,
    true_rates: dict[str, float],
    seed: int,
    out_root: Path,
    ctx: ScoringContext,
    *,
    negation_blind: frozenset[str] = frozenset(),
    selection: Selection | None = None,
) -> list[Path]:
    """Run every simulated model once with sampling seed ``seed`` into ``out_root/<name>``, on ``selection``
    (every sample of ``benchmark`` when None).

    Models named in ``negation_blind`` ignore the ``not`` of negated yes/no questions.
    """
    from halluscope.runs.runner import RunSettings, run_benchmark_async

    asked: SampleSource = benchmark if selection is None else selection
    paths = []
    for name, rate in true_rates.items():
        out_dir = Path(out_root) / name
        await run_benchmark_async(
            benchmark, simulated_responses(asked, name, rate, seed, negation_blind=name in negation_blind),
            ctx, out_dir,
            spec_extra={"model": {"provider": "sim-rate", "name": name, "rate": rate, "seed": seed,
                                  "negation_blind": name in negation_blind},
                        "responses": None},
            settings=RunSettings(overwrite=True),
            selection=selection,
        )
        paths.append(out_dir)
    return paths
