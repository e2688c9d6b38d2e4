"""How far CHAIR's wordnet build moves when NLTK's tagger data is missing: each stand-in against chair.py.

OPERA's chair.py tags captions with NLTK's averaged perceptron (``averaged_perceptron_tagger_eng``), whose
data no PyPI package ships. This script scores LLaVA-1.5-7B's 500 DeCo captions with each tagger halluscope
can use here and compares, caption by caption, with chair.py's own output for them (``deco_chair.jsonl``):
the word forms, the COCO words found, the hallucinated words, and the overall CHAIRs / CHAIRi / Recall.

    python bench/chair_taggers.py [--taggers perceptron,spacy]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path

from halluscope.benchmarks import ScoringContext
from halluscope.benchmarks.chair import Chair
from halluscope.cache import Cache

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HALLUSCOPE_SHARED", REPO.parent / "shared"))
DECO = SHARED / "data" / "peer-outputs" / "chair-deco-llava-1.5-7b"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--taggers", default="perceptron,spacy")
    args = parser.parse_args()
    reference = json.loads((DECO / "deco_chair.jsonl").read_text(encoding="utf-8"))
    by_id = {str(s["image_id"]): s for s in reference["sentences"]}
    overall = reference["overall_metrics"]
    print(f"chair.py: CHAIRs {100 * overall['CHAIRs']:.2f}  CHAIRi {100 * overall['CHAIRi']:.2f}  "
          f"Recall {100 * overall['Recall']:.2f}  ({len(by_id)} captions)")
    for tagger in args.taggers.split(","):
        bench = Chair(SHARED / "data" / "chair-coco", ids=DECO / "deco.jsonl", tagger=tagger)
        answers = bench.read_responses(DECO / "deco.jsonl").responses
        records = asyncio.run(bench.score_many([(s, answers.get(s.id)) for s in bench.samples()],
                                               ScoringContext(cache=Cache(None))))
        metrics = bench.metrics(records).metrics
        extra = {r.id: r.model_extra or {} for r in records}
        forms = sum(extra[i]["words"] != s["words"] for i, s in by_id.items())
        found = sum(extra[i]["coco_objects"] != s["mscoco_generated_words"] for i, s in by_id.items())
        wrong = [i for i, s in by_id.items() if extra[i]["hallucinated_objects"] != s["mscoco_hallucinated_words"]]
        print(f"{tagger:<11} CHAIRs {metrics['CHAIRs']:.2f}  CHAIRi {metrics['CHAIRi']:.2f}  "
              f"Recall {metrics['Recall']:.2f}  | captions differing: word forms {forms}, COCO words {found}, "
              f"hallucinated words {len(wrong)} {wrong[:5]}")


if __name__ == "__main__":
    main()
