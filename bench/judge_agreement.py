"""Measure a Tri-HE claim judge's sensitivity and specificity on hand-labelled real claims, and package it.

The labelled set (``halluscope/calibration/data/real.json``) holds real-language answers to Tri-HE questions
with hand-made claims, each labelled by looking at the image (true, false, or unseen). This script judges
the claims of the **held-out** part (never looked at while the judging rules were tuned) with the named
judge against Tri-HE's scene graphs and counts, for each reading of "hallucinated" (``paper``: the
judge's verdict; ``default``: contradicted by the scene graph), how many false claims the judge flagged
(sensitivity) and how many true claims it passed (specificity). Unseen claims and claims the judge left
unjudged are not counted. The result is written to ``halluscope/judges/data/agreement.json``, from which a
run with the same judge configuration carries the measurement and the corrected rates.

    python bench/judge_agreement.py [--judge similarity] [--tri-he DIR] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from halluscope.benchmarks.tri_he import TriHE
from halluscope.cache import Cache
from halluscope.calibration.real import load_real_set, score_real
from halluscope.judges import JUDGES
from halluscope.types import Support, VerdictLabel

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HALLUSCOPE_SHARED", REPO.parent / "shared"))
PACKAGED = REPO / "src" / "halluscope" / "judges" / "data" / "agreement.json"


def measure(judge_name: str, tri_he: Path) -> dict[str, Any]:
    import asyncio

    answers = [a for a in load_real_set() if a.split == "heldout"]
    bench = TriHE(data=tri_he)
    with tempfile.TemporaryDirectory() as tmp:
        cache = Cache(Path(tmp) / "cache.sqlite")
        judge = JUDGES.create(judge_name, cache=cache)
        records = asyncio.run(
            score_real(answers, lambda image: bench.scenes.get(image), judge=judge, cache=cache, claims_from="hand")
        )
        identity = judge.identity()
    counts = {reading: {"found": 0, "positives": 0, "passed": 0, "negatives": 0} for reading in ("paper", "default")}
    for answer, record in zip(answers, records, strict=True):
        for truth, judged in zip(answer.claims, record.claims, strict=False):
            if truth.label == "unseen" or judged.verdict == VerdictLabel.UNJUDGED:
                continue
            flagged = {
                "paper": judged.verdict == VerdictLabel.HALLUCINATED,
                "default": judged.support == Support.CONTRADICTED
                if judged.support is not None
                else judged.verdict == VerdictLabel.HALLUCINATED,
            }
            for reading, flag in flagged.items():
                if truth.label == "false":
                    counts[reading]["positives"] += 1
                    counts[reading]["found"] += flag
                else:
                    counts[reading]["negatives"] += 1
                    counts[reading]["passed"] += not flag
    return {
        "judge": identity,
        "unit": "claim",
        "measured_on": (
            f"hand-made claims of {len(answers)} held-out real answers to Tri-HE questions, each labelled by "
            "looking at the image (claims labelled unseen left out)"
        ),
        "readings": counts,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--judge", default="similarity")
    parser.add_argument("--tri-he", type=Path, default=SHARED / "data" / "tri-he")
    parser.add_argument("--write", action="store_true", help=f"add the measurement to {PACKAGED.name}")
    args = parser.parse_args()
    measured = measure(args.judge, args.tri_he)
    for reading, c in measured["readings"].items():
        print(
            f"{reading}: sensitivity {c['found']}/{c['positives']} = {c['found'] / max(1, c['positives']):.3f}, "
            f"specificity {c['passed']}/{c['negatives']} = {c['passed'] / max(1, c['negatives']):.3f}"
        )
    if args.write:
        write_packaged(measured)


def write_packaged(measured: dict[str, Any]) -> None:
    """Add (or replace) one judge configuration's measurement in the packaged ``agreement.json``."""
    existing = json.loads(PACKAGED.read_text()) if PACKAGED.exists() else []
    kept = [m for m in existing if m["judge"] != measured["judge"]]
    PACKAGED.parent.mkdir(parents=True, exist_ok=True)
    PACKAGED.write_text(json.dumps([*kept, measured], indent=1) + "\n")
    print(f"written to {PACKAGED}")


if __name__ == "__main__":
    main()
