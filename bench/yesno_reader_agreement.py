"""How the yes/no readers agree with a person's reading of real model answers.

Reads ``tests/data/reading/yesno_labels.jsonl`` (370 distinct real answers to yes/no questions, from
VILA-1.5-8B on POPE and HallusionBench and HallusionBench's own result sample, each labelled yes / no /
unclear by reading it against its question; see that folder's NOTICE.md) and prints, for the ``robust``
reader (the default for POPE, AMBER and HallusionBench) and the ``paper`` rule:

- **coverage**: of the answers a person reads as yes or no, the share the reader gives a yes or no;
- **agreement**: of those it gives, the share that match the person's reading;
- **exact**: over all answers, the share where the reader's output (yes, no, or none) is the person's label
  (``unclear`` matching none) — an answer that contradicts itself is right only when left unanswered;
- **unclear kept unanswered**: of the answers a person reads as unclear, how many the reader left unanswered.

The reader's rules were tuned on the ``tune`` split only; report ``heldout``. ``--show`` lists the
disagreements and is refused on the held-out split, so that looking at them cannot leak into the rules.

    python bench/yesno_reader_agreement.py --split heldout
    python bench/yesno_reader_agreement.py --split tune --show
    python bench/yesno_reader_agreement.py --split heldout --write   # package the held-out figures

``--write`` stores the held-out counts of each reader in ``halluscope/judges/data/reader_agreement.json``,
from which every run read by that rule states them beside its numbers.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from halluscope.judges.answers import ParsedAnswer, parse_yes_no, parse_yes_no_paper

REPO = Path(__file__).resolve().parent.parent
LABELS = REPO / "tests" / "data" / "reading" / "yesno_labels.jsonl"
PACKAGED = REPO / "src" / "halluscope" / "judges" / "data" / "reader_agreement.json"

READERS: dict[str, Callable[[str, str], ParsedAnswer]] = {
    "robust": lambda answer, question: parse_yes_no(answer, question=question),
    "paper": lambda answer, question: parse_yes_no_paper(answer),
}
#: The name a run gives each reader (``Benchmark.answer_reader``): ``paper`` here is the substring rule.
RUN_NAMES = {"robust": "robust", "paper": "substring-yes"}


def load(path: Path, split: str) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if split == "all" or r["split"] == split]


def score(rows: list[dict[str, Any]], read: Callable[[str, str], ParsedAnswer]) -> dict[str, Any]:
    """Coverage, agreement and exact match of one reader over labelled rows (see the module docstring)."""
    decided = [r for r in rows if r["label"] in ("yes", "no")]
    unclear = [r for r in rows if r["label"] == "unclear"]
    values = {id(r): read(r["answer"], r["question"]).value for r in rows}
    answered = [r for r in decided if values[id(r)] is not None]
    agree = [r for r in answered if values[id(r)] == r["label"]]
    exact = sum((values[id(r)] or "unclear") == r["label"] for r in rows)
    # Counts beside the shares, so that a run can state them with their n.
    return {
        "items": len(rows),
        "decided": len(decided),
        "answered": len(answered),
        "agreed": len(agree),
        "exact_count": exact,
        "coverage": len(answered) / len(decided) if decided else None,
        "agreement": len(agree) / len(answered) if answered else None,
        "exact": exact / len(rows) if rows else None,
        "unclear": len(unclear),
        "unclear_unanswered": sum(values[id(r)] is None for r in unclear),
    }


def write_packaged(rows: list[dict[str, Any]], results: dict[str, dict[str, Any]]) -> None:
    sources = sorted({str(r.get("source", "")) for r in rows} - {""})
    measured_on = (
        f"{len(rows)} held-out real answers to yes/no questions ({', '.join(sources)}), each read by a person "
        "against its question as yes, no or unclear"
    )
    counts = ("items", "decided", "answered", "agreed", "exact_count", "unclear", "unclear_unanswered")
    entries = [
        {"reader": RUN_NAMES[name], "measured_on": measured_on, **{k: r[k] for k in counts}}
        for name, r in results.items()
    ]
    PACKAGED.write_text(json.dumps(entries, indent=1) + "\n", encoding="utf-8")
    print(f"written to {PACKAGED}")


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--split", choices=("heldout", "tune", "all"), default="heldout")
    parser.add_argument("--show", action="store_true", help="list disagreements (tune split only)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--write", action="store_true", help=f"package the held-out counts ({PACKAGED.name})")
    args = parser.parse_args(argv)
    if args.show and args.split != "tune":
        parser.error("--show lists disagreements only on --split tune (the held-out part stays unseen)")
    rows = load(args.labels, args.split)
    results = {name: score(rows, read) for name, read in READERS.items()}
    if args.json:
        print(json.dumps({"split": args.split, **results}, indent=2))
    else:
        print(f"split {args.split}: {len(rows)} answers")
        print(f"{'reader':8} {'coverage':>9} {'agreement':>10} {'exact':>7} {'unclear left':>13}")
        for name, r in results.items():
            print(
                f"{name:8} {_pct(r['coverage']):>9} {_pct(r['agreement']):>10} {_pct(r['exact']):>7}"
                f" {r['unclear_unanswered']:>6} of {r['unclear']:<4}"
            )
    if args.write:
        if args.split != "heldout":
            parser.error("--write packages the held-out figures only (--split heldout)")
        write_packaged(rows, results)
    if args.show:
        for r in rows:
            parsed = parse_yes_no(r["answer"], question=r["question"])
            if (parsed.value or "unclear") != r["label"]:
                print(f"\n[{r['label']} / read {parsed.value} by {parsed.how}] Q: {r['question']}\n  A: {r['answer']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
