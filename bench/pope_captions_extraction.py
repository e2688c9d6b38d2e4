"""Real model language through claim extraction: POPE's 20,000 captions written by five VLMs.

POPE ships ``caption_data/Instruction{1,2}_<model>.json``: captions by InstructBLIP, LLaVA, MiniGPT-4,
mPLUG-Owl and MultiModal-GPT (2,000 per file; pretty-printed JSON objects one after another, no image ids).
This script runs every caption through the offline ``rules`` extractor (spaCy + SceneGraphParser + the
dependency fallback) and reports the time, crashes (extractor failures), and the share of captions with no
claim at all — per model, because the models write differently.

    python bench/pope_captions_extraction.py [--data ../shared/data/pope/caption_data] [--limit N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from collections import defaultdict
from pathlib import Path

from halluscope.claims.rules import RulesExtractor
from halluscope.stages import Failure

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HALLUSCOPE_SHARED", REPO.parent / "shared"))


def read_concatenated_json(path: Path) -> list[dict[str, object]]:
    """JSON objects written one after another (not a list, not one per line)."""
    text, decoder, objects, index = path.read_text(encoding="utf-8"), json.JSONDecoder(), [], 0
    while True:
        while index < len(text) and text[index].isspace():
            index += 1
        if index >= len(text):
            return objects
        value, index = decoder.raw_decode(text, index)
        objects.append(value)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=SHARED / "data" / "pope" / "caption_data")
    parser.add_argument("--limit", type=int, default=None, help="captions per file")
    args = parser.parse_args()

    captions: list[tuple[str, str]] = []
    for path in sorted(args.data.glob("Instruction*.json")):
        model = path.stem.split("_", 1)[1]
        rows = read_concatenated_json(path)[: args.limit]
        captions += [(model, str(row.get("text", ""))) for row in rows]
    extractor = RulesExtractor(cache=None)
    start = time.perf_counter()
    results = asyncio.run(extractor.extract_many([text for _, text in captions]))
    elapsed = time.perf_counter() - start
    per_model: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # captions, empty, failed, claims
    for (model, _), result in zip(captions, results, strict=True):
        stats = per_model[model]
        stats[0] += 1
        if isinstance(result, Failure):
            stats[2] += 1
        else:
            stats[1] += not result
            stats[3] += len(result)
    total = [sum(s[i] for s in per_model.values()) for i in range(4)]
    print(f"{total[0]} captions in {elapsed:.1f} s ({1000 * elapsed / max(total[0], 1):.1f} ms each)")
    print(f"{'model':<14} {'captions':>8} {'no claim':>9} {'failed':>7} {'claims/caption':>15}")
    rows = [(model, tuple(stats)) for model, stats in sorted(per_model.items())] + [("all", tuple(total))]
    for model, (n, empty, failed, claims) in rows:
        print(f"{model:<14} {n:>8} {100 * empty / n:>8.1f}% {failed:>7} {claims / n:>15.2f}")


if __name__ == "__main__":
    main()
