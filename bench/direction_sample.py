"""Do built Reefknot-style items make sense? Draw a fixed sample to label by reading, and re-measure it.

A person reads each sampled item (question and labelled answer) and marks it sensible or not; the labels
live in ``tests/data/direction_labels.jsonl`` (one line per item: ``sample``, ``id``, ``task``, ``text``,
``sensible``, ``reason``). This script does the mechanical parts:

- ``draw``: build-independent sampling. From a folder written by ``halluscope build reefknot`` it takes,
  with ``random.Random(sample_seed)``, 35 yes/no questions, 30 multiple-choice items and 35 VQA items
  (100), and prints them as label lines with ``sensible`` left empty, ready to be read and filled in.
- ``measure`` (default): the sensible share of each labelled sample, overall and by task. With ``--build``
  it also checks that the build folder still yields exactly the labelled items (same ids, same text), so
  the figure is known to describe that build.

    halluscope build reefknot --scene-graphs ../shared/data/tri-he/tri-he.json --format tri-he --out /tmp/rk
    python bench/direction_sample.py draw --build /tmp/rk --sample after --sample-seed 2
    python bench/direction_sample.py measure [--build /tmp/rk --sample after]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
LABELS = REPO / "tests" / "data" / "direction_labels.jsonl"
#: Items drawn per task (sum 100).
PER_TASK = {"yesno": 35, "mcq": 30, "vqa": 35}
FILES = {"yesno": "YESNO.jsonl", "mcq": "Multichoice.jsonl", "vqa": "VQA.jsonl"}


def item_text(task: str, row: dict[str, Any]) -> str:
    """What a reader sees: the question (without the answer-format boilerplate) and the labelled answer."""
    prompt = str(row["query_prompt"])
    if task == "yesno":
        question = prompt.split(" in this image?")[0] + "?"
        return f"{question} -> {row['label']}"
    if task == "mcq":
        options = row.get("options", {})
        question = prompt.split(" in this image?")[0] + "?"
        listed = "; ".join(f"{k}. {v}" for k, v in options.items())
        return f"{question} [{listed}] -> {row['label']}. {options.get(row['label'], '?')}"
    return f"{prompt.split(' in this image?')[0]}? -> {row['label']}"


def draw(build: Path, sample_seed: int) -> list[dict[str, Any]]:
    """The sampled items of one build, in a fixed order (task, then line)."""
    rng = random.Random(sample_seed)
    items: list[dict[str, Any]] = []
    for task, count in PER_TASK.items():
        path = build / FILES[task]
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        for line in sorted(rng.sample(range(len(rows)), min(count, len(rows)))):
            row = rows[line]
            items.append(
                {
                    "id": f"{task}-{line}",
                    "task": task,
                    "image_id": row["image_id"],
                    "triplet": row.get("triplet"),
                    "text": item_text(task, row),
                }
            )
    return items


def measure(labels: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    by_sample: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for label in labels:
        by_sample[label["sample"]].append(label)
    for sample, rows in by_sample.items():
        judged = [r for r in rows if isinstance(r.get("sensible"), bool)]
        per_task: Counter[str] = Counter()
        sensible_task: Counter[str] = Counter()
        for r in judged:
            per_task[r["task"]] += 1
            sensible_task[r["task"]] += bool(r["sensible"])
        out[sample] = {
            "labelled": len(judged),
            "sensible": sum(bool(r["sensible"]) for r in judged),
            "by_task": {t: f"{sensible_task[t]}/{n}" for t, n in sorted(per_task.items())},
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", nargs="?", choices=["draw", "measure"], default="measure")
    parser.add_argument("--build", type=Path, help="A folder written by `halluscope build reefknot`.")
    parser.add_argument("--sample", default="after", help="Sample name (before / after).")
    parser.add_argument("--sample-seed", type=int, default=2, help="Seed of the draw (before: 1, after: 2).")
    parser.add_argument("--labels", type=Path, default=LABELS)
    args = parser.parse_args()

    if args.action == "draw":
        if args.build is None:
            parser.error("draw needs --build")
        for item in draw(args.build, args.sample_seed):
            print(json.dumps({"sample": args.sample, **item, "sensible": None, "reason": ""}))
        return

    labels = [json.loads(line) for line in args.labels.read_text(encoding="utf-8").splitlines() if line.strip()]
    if args.build is not None:
        mine = [label for label in labels if label["sample"] == args.sample]
        seed = next((label.get("sample_seed") for label in mine if "sample_seed" in label), args.sample_seed)
        drawn = {i["id"]: i["text"] for i in draw(args.build, int(seed))}
        stored = {label["id"]: label["text"] for label in mine}
        if drawn != stored:
            changed = sorted(set(drawn.items()) ^ set(stored.items()))[:5]
            print(f"the build at {args.build} no longer yields the labelled '{args.sample}' items: {changed}")
            sys.exit(1)
        print(f"the build at {args.build} yields exactly the {len(stored)} labelled '{args.sample}' items")
    for sample, figures in measure(labels).items():
        share = figures["sensible"] / figures["labelled"] if figures["labelled"] else 0.0
        print(
            f"{sample:<8} sensible {figures['sensible']}/{figures['labelled']} = {share:.0%}   "
            f"by task: {figures['by_task']}"
        )


if __name__ == "__main__":
    main()
