"""What the word-similarity fallback changes in AMBER's generative scores, on real model language.

The official scorer matches nouns to objects by spaCy ``en_core_web_lg`` vectors (similarity > 0.8), which
cannot be installed offline. This script scores real VLM captions (POPE's caption_data, written by LLaVA for
COCO images) against AMBER's generative items, with ``exact`` matching, and with the packaged MiniLM at
several thresholds, and prints CHAIR / Cover / Hal / Cog and how many noun verdicts differ from ``exact``.
The captions describe other images than AMBER's, so the absolute numbers are not AMBER results; what the
script measures is how much the matcher moves the metrics on nouns that real models write.

    python bench/amber_word_similarity.py [--captions FILE] [--thresholds 0.9,0.8,0.7]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from halluscope.benchmarks.amber import Amber, judge_description
from halluscope.claims.nouns import NounExtractor
from halluscope.judges.word_similarity import WordSimilarity
from halluscope.metrics.amber import amber_generative
from halluscope.types import SampleRecord

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HALLUSCOPE_SHARED", REPO.parent / "shared"))
sys.path.insert(0, str(REPO / "bench"))
from pope_captions_extraction import read_concatenated_json  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--captions", type=Path,
                        default=SHARED / "data" / "pope" / "caption_data" / "Instruction1_llava.json")
    parser.add_argument("--thresholds", default="0.9,0.8,0.7")
    args = parser.parse_args()
    bench = Amber(SHARED / "data" / "amber", types=["generative"])
    samples = list(bench.samples())
    captions = [str(row.get("text", "")) for row in read_concatenated_json(args.captions)][: len(samples)]
    nouns = NounExtractor().extract_many(captions)
    runs: dict[str, list[dict[str, list[str]]]] = {}
    methods = [("exact", WordSimilarity("exact"))] + [
        (f"embedding>{t}", WordSimilarity("embedding", threshold=float(t))) for t in args.thresholds.split(",")
    ]
    for name, sim in methods:
        sim.prepare(bench.vocabulary)
        runs[name] = [
            judge_description(found, s.metadata["truth"], s.metadata["hallu"], vocabulary=bench.vocabulary,
                              association=bench.association, safe_words=bench.safe_words, similar=sim.similar)
            for s, found in zip(samples, nouns, strict=False)
        ]
    exact = runs["exact"]
    print(f"{len(exact)} captions; {sum(len(v['object_nouns']) for v in exact)} object nouns kept")
    print(f"{'matcher':<16} {'CHAIR':>6} {'Cover':>6} {'Hal':>6} {'Cog':>6} {'nouns flipped':>14}")
    for name, verdicts in runs.items():
        records = [
            SampleRecord(id=s.id, prompt="", response="x", **{**v, "truth": s.metadata["truth"],
                                                               "hallu": s.metadata["hallu"]})
            for s, v in zip(samples, verdicts, strict=False)
        ]
        scores = amber_generative(records)
        flipped = sum(len(set(a["hallucinated_nouns"]) ^ set(b["hallucinated_nouns"]))
                      for a, b in zip(verdicts, exact, strict=True))
        print(f"{name:<16} {scores['CHAIR']:>6} {scores['Cover']:>6} {scores['Hal']:>6} {scores['Cog']:>6} "
              f"{flipped:>14}")


if __name__ == "__main__":
    main()
