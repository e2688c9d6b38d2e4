"""How long scoring POPE's 27,000 and AMBER's 15,220 items from a responses file takes (no LLM judge).

Writes a responses file with one answer per item (a mix of clean and awkward yes/no answers; for AMBER's
1,004 generative items a short description naming some truth objects and one absent object), then times
reading it, scoring every item (both rule sets) and computing the metrics — what ``halluscope run`` does
minus writing the run directory.

    python bench/closed_scoring_speed.py [--data-root ../shared/data]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path

from halluscope.benchmarks import ScoringContext
from halluscope.benchmarks.amber import Amber
from halluscope.benchmarks.pope import Pope
from halluscope.cache import Cache

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HALLUSCOPE_SHARED", REPO.parent / "shared"))
ANSWERS = ["Yes", "No", "Yes, there is.", "No, there is no such object.", "I cannot tell.", "yes."]


def _time(bench: object, path: Path) -> tuple[float, float, float, int]:
    start = time.perf_counter()
    responses = bench.read_responses(path).responses  # type: ignore[attr-defined]
    read = time.perf_counter() - start
    samples = list(bench.samples())  # type: ignore[attr-defined]
    pairs = [(s, responses.get(s.id)) for s in samples]
    start = time.perf_counter()
    records = asyncio.run(bench.score_many(pairs, ScoringContext(cache=Cache(None))))  # type: ignore[attr-defined]
    scored = time.perf_counter() - start
    start = time.perf_counter()
    bench.metrics(records)  # type: ignore[attr-defined]
    return read, scored, time.perf_counter() - start, len(records)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-root", type=Path, default=SHARED / "data")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp())

    pope = Pope(args.data_root / "pope")
    with (tmp / "pope.jsonl").open("w") as handle:
        for i, s in enumerate(pope.samples()):
            handle.write(json.dumps({"id": s.id, "response": ANSWERS[i % len(ANSWERS)]}) + "\n")
    amber = Amber(args.data_root / "amber")
    with (tmp / "amber.jsonl").open("w") as handle:
        for i, s in enumerate(amber.samples()):
            if s.metadata["type"] == "generative":
                objects = s.metadata["truth"][:3] + s.metadata["hallu"][:1]
                text = "The picture shows " + ", ".join(f"a {o}" for o in objects) + " under a bright sky."
            else:
                text = ANSWERS[i % len(ANSWERS)]
            handle.write(json.dumps({"id": s.id, "response": text}) + "\n")

    for name, bench, path in (("pope", pope, tmp / "pope.jsonl"), ("amber", amber, tmp / "amber.jsonl")):
        read, scored, metrics, n = _time(bench, path)
        print(f"{name:<6} {n:>6} items: read {read:.2f} s, score {scored:.2f} s, metrics {metrics:.2f} s, "
              f"total {read + scored + metrics:.2f} s")
    amber_disc = Amber(args.data_root / "amber", types=["existence", "attribute", "relation"])
    read, scored, metrics, n = _time(amber_disc, tmp / "amber.jsonl")
    print(f"amber discriminative only {n} items: total {read + scored + metrics:.2f} s")


if __name__ == "__main__":
    main()
