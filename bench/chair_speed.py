"""How long CHAIR (``-b chair``) takes on 500 captions, and where the time goes.

Scores LLaVA-1.5-7B's 500 DeCo captions (OPERA's ``{image_id, caption}`` layout) three ways:

- the whole command, ``halluscope run -b chair ... --responses deco.jsonl``, in a fresh process (wall time,
  median of ``--repeat`` runs), for each build;
- in one process, the parts: reading the ground truth (all 123,287 images), loading the tokenizer, tagger
  and WordNet, and scoring the 500 captions once the models are loaded.

    python bench/chair_speed.py [--repeat 3] [--data DIR] [--captions FILE]

Say the machine load beside any figure (``uptime``): the machine is shared.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HALLUSCOPE_SHARED", REPO.parent / "shared"))


def whole_command(data: Path, captions: Path, build: str, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as out:
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "halluscope.cli.main", "run", "-b", "chair", "--data", str(data),
                 "--responses", str(captions), "--bench-opt", f"ids={captions}", "--bench-opt", f"build={build}",
                 "--out", out, "--quiet"],
                check=True, capture_output=True,
            )
            times.append(time.perf_counter() - start)
    return times


def parts(data: Path, captions: Path, build: str) -> dict[str, float]:
    from halluscope.benchmarks import ScoringContext
    from halluscope.benchmarks.chair import Chair
    from halluscope.cache import Cache

    out: dict[str, float] = {}
    start = time.perf_counter()
    bench = Chair(data, ids=captions, build=build)
    _ = bench.truth.objects, bench.vocabulary
    out["ground truth"] = time.perf_counter() - start
    answers = bench.read_responses(captions).responses
    samples = list(bench.samples())
    start = time.perf_counter()
    bench.words().words("A man rides a horse.")
    out["tokenizer, tagger, WordNet"] = time.perf_counter() - start
    ctx = ScoringContext(cache=Cache(None))
    start = time.perf_counter()
    records = asyncio.run(bench.score_many([(s, answers.get(s.id)) for s in samples], ctx))
    bench.metrics(records)
    out[f"scoring {len(samples)} captions"] = time.perf_counter() - start
    print(f"  ({build}: {bench.words().identity()})")
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=SHARED / "data" / "chair-coco")
    parser.add_argument("--captions", type=Path,
                        default=SHARED / "data" / "peer-outputs" / "chair-deco-llava-1.5-7b" / "deco.jsonl")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} on {os.cpu_count()} cores")
    for build in ("wordnet", "singularize"):
        times = whole_command(args.data, args.captions, build, args.repeat)
        print(f"{build}: halluscope run, 500 captions: median {statistics.median(times):.2f} s "
              f"(runs: {', '.join(f'{t:.2f}' for t in times)})")
        for name, seconds in parts(args.data, args.captions, build).items():
            print(f"  {name:<28} {seconds:6.2f} s")


if __name__ == "__main__":
    main()
