"""PROVE's scores where the truth is known: synthetic scenes with exact scene graphs, answered by the scene
oracle, by simulators that falsify facts at growing rates, and by copying the reference answer.

Each answerer is scored twice: from the facts the simulator states (its pre-extracted claims, so no
extractor stands between the truth and the scores) and from the answer text through the offline ``rules``
tuple extractor (what a real model's answers go through). Entailment ``none``, packaged MiniLM.

    python bench/prove_known_truth.py --n 30
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from halluscope.benchmarks.prove import Prove
from halluscope.builders.synthetic import build_synthetic
from halluscope.cache import Cache
from halluscope.models.sim import SimModel
from halluscope.runs.respond import build_request, to_response
from halluscope.stages import ScoringContext
from halluscope.types import Response


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=30, help="synthetic images")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="prove-known-"))
    build_synthetic(folder, n=args.n, seed=args.seed)
    bench = Prove(data=folder)
    samples = list(bench.samples())
    ctx = ScoringContext(cache=Cache(None))
    print(f"{len(samples)} questions on {args.n} synthetic images")
    print(f"{'answerer':36s} {'scored from':14s} {'hscore':>7s} {'tscore':>7s} {'average':>7s}")
    answerers = ["oracle", "hallucinate?rate=0.2", "hallucinate?rate=0.5", "hallucinate?rate=0.8", "copy"]
    for spec in answerers:
        if spec == "copy":
            responses = {s.id: Response(id=s.id, response=s.reference or "") for s in samples}
        else:
            model = SimModel.from_spec(spec)
            responses = {
                s.id: to_response(s.id, asyncio.run(model.generate(build_request(bench, s))), model.name())
                for s in samples
            }
        for source in ("stated facts", "answer text"):
            if spec == "copy" and source == "stated facts":
                continue
            given = responses if source == "stated facts" else {
                k: Response(id=k, response=r.response) for k, r in responses.items()
            }
            start = time.perf_counter()
            records = asyncio.run(bench.score_many([(s, given[s.id]) for s in samples], ctx))
            elapsed = time.perf_counter() - start
            m = bench.metrics(records).metrics
            label = "sim/" + spec if spec != "copy" else "copy the reference answer"
            print(f"{label:36s} {source:14s} {m['hscore'] or 0:7.2f} {m['tscore'] or 0:7.2f} "
                  f"{m['average'] or 0:7.2f}   ({elapsed:.1f} s)")


if __name__ == "__main__":
    main()
