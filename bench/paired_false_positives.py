"""How often a paired comparison calls two equally good models different (its false-positive rate).

Simulated pairs of runs over the same 300 yes/no questions (50 images of six questions, half the questions
"yes"), both models with the same chance of saying yes to each kind of question, compared as ``halluscope
report A B`` compares them from POPE's declarations: accuracy (McNemar's exact test, or the paired cluster
bootstrap where images cluster the answers) and F1 (the paired cluster bootstrap). At the 5 % level a test
that keeps its level calls about 5 % of the pairs different.

    python bench/paired_false_positives.py [--runs 1000]
"""

from __future__ import annotations

import argparse

import numpy as np

from halluscope.benchmarks.yes_no import yes_no_declarations
from halluscope.metrics.declared import compare_declared
from halluscope.stages import MetricTable


def table(said_yes: np.ndarray, truth: np.ndarray) -> dict[str, MetricTable]:
    ids = [str(i) for i in range(len(truth))]
    columns = {
        "correct": said_yes == truth, "answered": np.ones(len(truth), bool), "tp": said_yes & truth,
        "fp": said_yes & ~truth, "fn": ~said_yes & truth, "said_positive": said_yes, "truly_positive": truth,
    }  # fmt: skip
    components = {name: list(values.astype(float)) for name, values in columns.items()}
    return {"items": MetricTable(ids=ids, components=components, clusters=[str(i // 6) for i in range(len(truth))])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args()
    rng = np.random.default_rng(11)
    declarations = [d for d in yes_no_declarations("image") if d.name in ("accuracy", "f1")]
    calls = dict.fromkeys(("accuracy", "f1"), 0)
    tests: dict[str, set[str]] = {"accuracy": set(), "f1": set()}
    for run in range(args.runs):
        truth = rng.random(300) < 0.5
        a = rng.random(300) < np.where(truth, 0.85, 0.25)
        b = rng.random(300) < np.where(truth, 0.85, 0.25)
        result = compare_declared(declarations, table(a, truth), table(b, truth), resamples=500, seed=run)
        for name in calls:
            found = result[name]
            assert found is not None
            calls[name] += found.p_value < 0.05
            tests[name].add(found.test)
    for name, count in calls.items():
        print(f"{name}: p < 0.05 in {count} of {args.runs} pairs of equal models ({100 * count / args.runs:.1f} %), "
              f"test {', '.join(sorted(tests[name]))}")


if __name__ == "__main__":
    main()
