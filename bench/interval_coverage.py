"""How often the intervals a run writes cover the truth, per benchmark family, on simulated runs of known truth.

The simulations are those of ``tests/test_coverage_families.py`` (yes/no accuracy over images, CHAIRi over
captions, Tri-HE's Hallu-Q over questions clustered by image), each without and with dependence inside a unit;
the intervals are made from each benchmark's own declarations, as a run makes them. The test checks 400 runs
per case; this script runs more and prints the coverage of the declared interval and of a naive one (every
answer, mention or claim counted as independent).

    python bench/interval_coverage.py [--runs 1000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.test_coverage_families import FAMILIES, coverage


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(f"{'family':18} {'dependence':11} {'declared 95 %':>14} {'naive 95 %':>11} {'seconds':>8}")
    for family in FAMILIES:
        for clustered in (False, True):
            start = time.perf_counter()
            covered, naive = coverage(family, clustered, runs=args.runs, seed=args.seed)
            seconds = time.perf_counter() - start
            label = "per unit" if clustered else "none"
            print(f"{family:18} {label:11} {100 * covered:13.1f}% {100 * naive:10.1f}% {seconds:8.1f}")


if __name__ == "__main__":
    main()
