"""How many Tri-HE reference answers does the offline ``rules`` extractor read claims from, and does it still
separate right answers from wrong ones?

Over all Tri-HE reference answers: how many give no claim at all (those questions are skipped by Tri-HE's
metrics) and the mean claims per answer; then Hallu-Q of the reference answers against the same answers given
to questions about other images (mismatched), with the ``typed`` and the ``similarity`` judge. More claims
are only worth having if the mismatched rate stays far above the reference rate.

    python bench/rules_extractor_recall.py [--data ../shared/data/tri-he/tri-he.json] [--limit N]
        [--judges typed,similarity]
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
from halluscope.claims.rules import RulesExtractor
from halluscope.judges import JUDGES
from halluscope.runs.runner import run_benchmark
from halluscope.runs.selection import first_samples

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HALLUSCOPE_SHARED", REPO.parent / "shared"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=SHARED / "data" / "tri-he" / "tri-he.json")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--judges", default="typed,similarity")
    args = parser.parse_args()

    bench = TriHE(args.data)
    chosen = first_samples(bench, args.limit)
    answers = [s.reference or "" for s in chosen.samples()]
    extractor = EXTRACTORS.create("rules")
    assert isinstance(extractor, RulesExtractor)
    start = time.perf_counter()
    results = extractor.extract_many_sync(answers)
    elapsed = time.perf_counter() - start
    counts = [len(r) if isinstance(r, list) else 0 for r in results]
    failed = sum(1 for r in results if not isinstance(r, list))
    print(f"Tri-HE reference answers: {len(answers)}, rules extractor {elapsed:.1f} s (incl. loading)")
    print(
        f"zero-claim answers: {counts.count(0)} ({100 * counts.count(0) / max(len(answers), 1):.1f} %), "
        f"mean claims per answer: {sum(counts) / max(len(answers), 1):.2f}, failures: {failed}"
    )

    print(f"{'judge':<12}{'responses':<14}{'Hallu-Q':>9}{'Hallu-I':>9}{'claims':>8}{'0-claim':>9}")
    for judge in [j.strip() for j in args.judges.split(",") if j.strip()]:
        with tempfile.TemporaryDirectory() as tmp:
            cache = Cache(Path(tmp) / "cache.sqlite")
            ctx = ScoringContext(
                cache=cache,
                extractor=EXTRACTORS.create("rules", cache=cache),
                judge=JUDGES.create(judge, cache=cache),
            )
            for label, mismatched in (("reference", False), ("mismatched", True)):
                responses = {r.id: r for r in ground_truth_responses(chosen, mismatched=mismatched)}
                report = run_benchmark(bench, responses, ctx, Path(tmp) / label, show_progress=False, selection=chosen)
                m, c = report.metrics, report.counts
                print(
                    f"{judge:<12}{label:<14}{m['hallu_q']:>9.2f}{m['hallu_i']:>9.2f}{c['claims']:>8}"
                    f"{c['zero_claim_questions']:>9}"
                )


if __name__ == "__main__":
    main()
