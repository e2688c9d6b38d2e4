"""Does `halluscope quality` recover the test-retest reliability that classical test theory predicts?

A population of simulated models with known true hallucination rates (uniform between --low and --high)
answers the first N yes/no items of Reefknot twice, with two sampling seeds, through the real pipeline
(responses → runner → Reefknot scoring → run directories). `halluscope quality`'s assessment then
correlates their Halr across the two runs. Classical test theory predicts

    reliability = var(true) / (var(true) + mean(p(1 - p)) / N)

(halluscope.calibration.simulate.predicted_reliability). For each N, over --replicates populations, this
prints the mean measured Pearson r, the mean prediction, their difference, the standard error of that mean
over the populations, and how often the reported 95% bootstrap interval holds the prediction. The stated
tolerance: |difference| <= max(--tolerance, 2 standard errors) for every N (a sample correlation over 40
models scatters, more so at low reliability); it exits non-zero otherwise.

    python bench/hqm_simulated_reliability.py --data ../shared/data/reefknot
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from statistics import fmean, stdev


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/reefknot")
    parser.add_argument("--items", default="10,20,50,100,200,400", help="Comma-separated N (even numbers).")
    parser.add_argument("--models", type=int, default=40)
    parser.add_argument("--replicates", type=int, default=10)
    parser.add_argument("--low", type=float, default=0.05)
    parser.add_argument("--high", type=float, default=0.45)
    parser.add_argument("--tolerance", type=float, default=0.05)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--json", type=Path, help="Write the table as JSON here.")
    args = parser.parse_args()

    from halluscope.benchmarks.reefknot import Reefknot
    from halluscope.cache import Cache
    from halluscope.calibration.simulate import predicted_reliability, run_population
    from halluscope.quality.assess import assess
    from halluscope.runs.selection import first_samples
    from halluscope.stages import ScoringContext

    ctx = ScoringContext(cache=Cache(None))
    rows = []
    failed = False
    print(f"{args.models} simulated models, true rates uniform in [{args.low}, {args.high}], "
          f"{args.replicates} populations per N, Reefknot yes/no items")
    print(f"{'N':>5} {'measured r':>11} {'predicted':>10} {'diff':>7} {'s.e.':>6} {'CI holds':>9} "
          f"{'mean CI width':>14}")
    for n_items in [int(x) for x in args.items.split(",")]:
        bench = Reefknot(args.data, tasks=["yesno"])
        chosen = first_samples(bench, n_items)
        measured, predicted, covered, widths = [], [], 0, []
        started = time.perf_counter()
        for replicate in range(args.replicates):
            rng = random.Random(1000 * n_items + replicate)
            rates = {f"sim-{i:03d}": rng.uniform(args.low, args.high) for i in range(args.models)}
            with tempfile.TemporaryDirectory() as tmp:
                for seed in (1, 2):
                    asyncio.run(run_population(bench, rates, 100 * replicate + seed, Path(tmp) / f"seed{seed}", ctx,
                                               selection=chosen))
                report = assess([str(Path(tmp) / "seed1")], "halr_yesno", retest=[str(Path(tmp) / "seed2")],
                                resamples=args.resamples, seed=replicate)
            correlation = report.correlations[0].correlation
            assert correlation is not None and correlation.pearson.value is not None
            truth = predicted_reliability(list(rates.values()), n_items)
            measured.append(correlation.pearson.value)
            predicted.append(truth)
            low, high = correlation.pearson.ci_low, correlation.pearson.ci_high
            assert low is not None and high is not None
            covered += low <= truth <= high
            widths.append(high - low)
        diff = fmean(measured) - fmean(predicted)
        error = stdev(measured) / len(measured) ** 0.5 if len(measured) > 1 else 0.0
        failed |= abs(diff) > max(args.tolerance, 2 * error)
        rows.append({"items": n_items, "measured": fmean(measured), "predicted": fmean(predicted),
                     "diff": diff, "se": error,
                     "ci_holds": covered / args.replicates, "ci_width": fmean(widths),
                     "seconds": round(time.perf_counter() - started, 1)})
        print(f"{n_items:>5} {fmean(measured):>11.3f} {fmean(predicted):>10.3f} {diff:>+7.3f} {error:>6.3f} "
              f"{covered:>4}/{args.replicates:<4} {fmean(widths):>14.3f}", flush=True)
    verdict = "NOT met for some N" if failed else "met for every N"
    print(f"tolerance |diff| <= max({args.tolerance}, 2 s.e.): {verdict}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
