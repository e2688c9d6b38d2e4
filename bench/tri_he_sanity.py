"""Does the instrument see hallucination? Tri-HE with the offline defaults (rules extractor, similarity judge).

Scores the ground-truth answers as responses, then the same answers given to questions about *other*
images (mismatched): a working pipeline rates the second far worse. Also times a first run against a
re-run of the same command (everything cached), the resume path users hit after a crash.

    python bench/tri_he_sanity.py [--data ../shared/data/tri-he/tri-he.json] [--limit N]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from halluscope.benchmarks import ScoringContext
from halluscope.benchmarks.tri_he import TriHE, ground_truth_responses
from halluscope.cache import Cache
from halluscope.claims import EXTRACTORS
from halluscope.judges import JUDGES
from halluscope.runs.runner import run_benchmark
from halluscope.runs.selection import first_samples

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HALLUSCOPE_SHARED", REPO.parent / "shared"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=SHARED / "data" / "tri-he" / "tri-he.json")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--extractor", default="rules")
    parser.add_argument("--judge", default="similarity")
    args = parser.parse_args()

    bench = TriHE(args.data)
    chosen = first_samples(bench, args.limit)
    with tempfile.TemporaryDirectory() as tmp:
        cache = Cache(Path(tmp) / "cache.sqlite")
        ctx = ScoringContext(
            cache=cache,
            extractor=EXTRACTORS.create(args.extractor, cache=cache),
            judge=JUDGES.create(args.judge, cache=cache),
        )
        rows = []
        for label, mismatched in (("ground-truth answers", False), ("mismatched answers", True)):
            answers = {r.id: r for r in ground_truth_responses(chosen, mismatched=mismatched)}
            out = Path(tmp) / label.replace(" ", "-")
            start = time.perf_counter()
            report = run_benchmark(bench, answers, ctx, out, show_progress=False, selection=chosen)
            first = time.perf_counter() - start
            start = time.perf_counter()
            again = run_benchmark(bench, answers, ctx, out, show_progress=False, selection=chosen)
            rerun = time.perf_counter() - start
            assert again.metrics == report.metrics
            rows.append((label, report, first, rerun))

    print(f"Tri-HE, {len(list(chosen.samples()))} questions, extractor={args.extractor}, judge={args.judge}")
    print(
        f"{'responses':<22}{'Hallu-Q':>9}{'Hallu-I':>9}{'claims':>8}{'0-claim':>9}{'first s':>9}{'rerun s':>9}"
    )
    for label, report, first, rerun in rows:
        m, c = report.metrics, report.counts
        print(
            f"{label:<22}{m['hallu_q']:>9.2f}{m['hallu_i']:>9.2f}{c['claims']:>8}"
            f"{c['zero_claim_questions']:>9}{first:>9.1f}{rerun:>9.2f}"
        )


if __name__ == "__main__":
    main()
