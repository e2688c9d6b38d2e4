"""``hqh-rules`` coverage and accuracy per type, on known-correct and on mismatched answers, with rate bounds.

For every HQH item with image information (the first ``--per-type`` of each type), two answers are judged
offline: the item's reference answer (correct by construction) and the reference answer of another item of
the same type whose reference differs (``ground_truth_responses(mismatched=True)``; wrong for nearly every
item). Printed per type and set:

- **coverage**: the share of answers the judge decides (the rest stay unjudged);
- **accuracy**: of the decided answers, the share put in the known class;
- a third set, **negated**, is each known answer denied ("Red." → "It is not red."; wrong by construction),
  which only a judge that reads negation gets right (not for existence, whose references are "Yes." or lists);
- for the mismatched set, the **measured rate** (incorrect / decided, what metrics.json reports) and its
  **bounds** (unjudged counted as correct / as incorrect) — the true rate of that set is about 100.

    python bench/hqh_rules_coverage.py --data ../shared/data/hqh --per-type 500
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from halluscope.benchmarks.hqh import HQH, TYPES, ground_truth_responses
from halluscope.judges.hqh import HQHItem, HQHJudgement
from halluscope.judges.hqh_rules import HQHRulesJudge


def negate(answer: str) -> str:
    """The reference answer denied: "Red." → "It is not red."."""
    text = answer.strip().rstrip(".")
    return f"It is not {text[:1].lower()}{text[1:]}." if text else answer


def build(bench: HQH, per_type: int) -> tuple[list[HQHItem], list[HQHItem]]:
    """(known, mismatched) items, the same items in the same order."""
    right = {r.id: r.response for r in ground_truth_responses(bench)}
    wrong = {r.id: r.response for r in ground_truth_responses(bench, mismatched=True)}
    taken = dict.fromkeys(TYPES, 0)
    known: list[HQHItem] = []
    mismatched: list[HQHItem] = []
    for sample in bench.samples():
        kind = str(sample.metadata.get("type"))
        if sample.metadata.get("problem") or sample.id not in wrong or taken.get(kind, 0) >= per_type:
            continue
        scene = bench.scene(sample)
        if scene is None:
            continue
        taken[kind] = taken.get(kind, 0) + 1
        for answers, out in ((right, known), (wrong, mismatched)):
            out.append(HQHItem(sample.id, kind, sample.prompt, sample.reference or "", answers[sample.id], scene))
    return known, mismatched


def table(items: list[HQHItem], results: list[Any], wrong: bool) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for kind in [*TYPES, "all"]:
        idx = [i for i, item in enumerate(items) if kind in ("all", item.type)]
        if not idx:
            continue
        verdicts = [r.hallucinated if isinstance(r, HQHJudgement) else None for r in (results[i] for i in idx)]
        decided = [v for v in verdicts if v is not None]
        incorrect = sum(1 for v in decided if v)
        n = len(idx)
        rows[kind] = {
            "answers": n,
            "coverage": round(100 * len(decided) / n, 1),
            "accuracy": round(100 * sum(v == wrong for v in decided) / len(decided), 1) if decided else None,
            "rate": round(100 * incorrect / len(decided), 1) if decided else None,
            "rate_low": round(100 * incorrect / n, 1),
            "rate_high": round(100 * (incorrect + n - len(decided)) / n, 1),
        }
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/data/hqh"))
    parser.add_argument("--per-type", type=int, default=500)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    known, mismatched = build(HQH(args.data), args.per_type)
    judge = HQHRulesJudge()
    negated = [
        HQHItem(i.sample_id, i.type, i.instruction, i.ground_truth, negate(i.answer), i.scene)
        for i in known
        if i.type != "existence"  # "It is not yes." / "It is not dog, cat, tree." are not answers
    ]
    results = {
        "known": table(known, asyncio.run(judge.grade_many(known)), wrong=False),
        "mismatched": table(mismatched, asyncio.run(judge.grade_many(mismatched)), wrong=True),
        "negated": table(negated, asyncio.run(judge.grade_many(negated)), wrong=True),
    }
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))
    print(f"{'type':12} | known: {'n':>4} {'cover':>6} {'acc':>6} | mismatched: {'cover':>6} {'acc':>6} "
          f"{'rate':>6} {'bounds':>13} | negated: {'cover':>6} {'acc':>6}")  # fmt: skip
    for kind, k in results["known"].items():
        m = results["mismatched"][kind]
        g = results["negated"].get(kind, {"coverage": "-", "accuracy": "-"})
        print(f"{kind:12} |        {k['answers']:>4} {k['coverage']:>6} {k['accuracy']!s:>6} |             "
              f"{m['coverage']:>6} {m['accuracy']!s:>6} {m['rate']!s:>6} {m['rate_low']:>6}–{m['rate_high']:<6} |"
              f"          {g['coverage']:>6} {g['accuracy']!s:>6}")  # fmt: skip


if __name__ == "__main__":
    main()
