"""Parallel-forms reliability on Reefknot's real parallel form, with and without negation-blind models.

Simulated models (true rates uniform in [0.05, 0.45]) answer the first --items Reefknot yes/no questions and
the same pairs in the parallel form built by `halluscope build parallel` (negated, labels flipped). In the
"blind" population the better half of the models reads "Is the cup not on the table?" as if the "not" were
absent. Prints the parallel-forms correlation of Halr for both populations and the yes/no table of a blind
model, through the real pipeline and `halluscope.quality.assess`.

    python bench/hqm_parallel_forms_demo.py --data ../shared/data/reefknot
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/reefknot")
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--models", type=int, default=20)
    args = parser.parse_args()

    from halluscope.benchmarks.reefknot import Reefknot
    from halluscope.builders.parallel import build_parallel
    from halluscope.cache import Cache
    from halluscope.calibration.simulate import run_population
    from halluscope.quality.assess import assess
    from halluscope.runs.selection import first_samples
    from halluscope.stages import ScoringContext

    rng = random.Random(0)
    rates = {f"sim-{i:02d}": rng.uniform(0.05, 0.45) for i in range(args.models)}
    median = sorted(rates.values())[len(rates) // 2]
    blind = frozenset(n for n, r in rates.items() if r < median)
    ctx = ScoringContext(cache=Cache(None))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        asyncio.run(build_parallel("reefknot", args.data, root / "parallel-data", tasks=["yesno"]))
        for label, data, who in (("original", args.data, frozenset()), ("honest", root / "parallel-data", frozenset()),
                                 ("blind", root / "parallel-data", blind)):
            bench = Reefknot(data, tasks=["yesno"])
            chosen = first_samples(bench, args.items)
            # The parallel form keeps the line numbers, hence the ids: another sampling seed keeps its answers
            # independent of the original's (else the two would share their noise).
            seed = 1 if label == "original" else 2
            asyncio.run(run_population(bench, rates, seed, root / label, ctx, negation_blind=who, selection=chosen))
        for label in ("honest", "blind"):
            report = assess([str(root / "original")], "halr_yesno", parallel=[str(root / label)])
            c = report.correlations[0].correlation
            assert c is not None
            print(f"{label:>6} population: parallel-forms r = {c.pearson.value:.3f} "
                  f"[{c.pearson.ci_low:.3f}, {c.pearson.ci_high:.3f}], n = {c.n}")
            if label == "blind":
                row = next(r for r in report.response_bias if r.model in blind)
                assert row.original is not None and row.parallel is not None
                print(f"a blind model ({row.model}, true rate {rates[row.model]:.2f}): accuracy "
                      f"{row.original.accuracy:.3f} original, {row.parallel.accuracy:.3f} parallel; yes-ratio "
                      f"{row.original.yes_ratio:.3f} / {row.parallel.yes_ratio:.3f} (labels 0.5 / 0.5)")


if __name__ == "__main__":
    main()
