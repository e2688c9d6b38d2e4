"""How far PROVE's two response-tuple extractors agree: ``rules`` (offline, spaCy) vs ``llm`` (DSG prompt).

Texts: the reference answers of a small synthetic build (every template: looks, colour-of, where, what-is,
describe) plus the hand-made responses of ``tests/data/prove``. For each text both extractors write tuples;
reported:

- tuples per text, by kind, for each extractor;
- exact agreement: tuples equal after lower-casing (Jaccard over each text's two sets, averaged);
- soft agreement, PROVE's own way: Eq. 1 run in both directions with the same embedding model (mean over
  one extractor's tuples of the best cosine to the other's), ×100;
- what the choice does to the scores: hscore and tscore (×100, entailment none) of the synthetic set when
  every response copies the reference answer, with each extractor, and the mean absolute per-question gap.

Usage (starts the packaged Qwen2.5-1.5B GGUF on llama.cpp unless --base-url is given)::

    python bench/prove_tuple_agreement.py --n-images 6 --max-texts 30
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import tempfile
import time
from collections import Counter
from pathlib import Path
from statistics import fmean
from typing import Any

from halluscope.benchmarks.prove import Prove
from halluscope.builders.synthetic import build_synthetic
from halluscope.cache import Cache
from halluscope.claims.dsg import LLMTupleExtractor, RulesTupleExtractor
from halluscope.embeddings import load_embedder
from halluscope.scene.tuples import SceneTuple
from halluscope.stages import Failure, ScoringContext
from halluscope.types import Response

ROOT = Path(__file__).resolve().parents[1]


def soft(a: list[SceneTuple], b: list[SceneTuple], embedder: Any) -> float | None:
    if not a or not b:
        return None
    va = embedder.encode([t.phrase() for t in a])
    vb = embedder.encode([t.phrase() for t in b])
    return float((va @ vb.T).max(axis=1).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n-images", type=int, default=6)
    parser.add_argument("--max-texts", type=int, default=30)
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--model", default=None)
    parser.add_argument("--out", type=Path, default=None, help="write per-text tuples here (JSON)")
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="prove-agree-"))
    build_synthetic(folder, n=args.n_images, seed=11)
    synthetic = Prove(data=folder)
    texts = [s.reference or "" for s in synthetic.samples()][: max(0, args.max_texts - 5)]
    hand = Prove(data=ROOT / "tests" / "data" / "prove" / "prove.json")
    texts += [s.reference or "" for s in hand.samples()]
    cache = Cache(None)

    with contextlib.ExitStack() as stack:
        base_url, model = args.base_url, args.model
        if base_url is None:
            from halluscope.llm.offline import llama_server

            server = stack.enter_context(llama_server(n_ctx=4096))
            base_url, model = server.base_url, server.model
        rules = RulesTupleExtractor()
        llm = LLMTupleExtractor(model=model, base_url=base_url, cache=cache, concurrency=1, timeout_s=600)
        start = time.perf_counter()
        by_rules = rules.extract_many_sync(texts)
        rules_s = time.perf_counter() - start
        start = time.perf_counter()
        by_llm = asyncio.run(llm.extract_many(texts))
        llm_s = time.perf_counter() - start

        embedder = load_embedder(None)
        pairs = [(r, g) for r, g in zip(by_rules, by_llm, strict=True)
                 if not isinstance(r, Failure) and not isinstance(g, Failure)]
        failed = len(texts) - len(pairs)
        jaccard, rules_in_llm, llm_in_rules = [], [], []
        kinds: dict[str, Counter[str]] = {"rules": Counter(), "llm": Counter()}
        for r, g in pairs:
            kinds["rules"].update(t.kind for t in r)
            kinds["llm"].update(t.kind for t in g)
            a, b = {t.text().lower() for t in r}, {t.text().lower() for t in g}
            if a | b:
                jaccard.append(len(a & b) / len(a | b))
            for target, x, y in ((rules_in_llm, r, g), (llm_in_rules, g, r)):
                value = soft(x, y, embedder)
                if value is not None:
                    target.append(value)

        # What the extractor choice does to the scores: every response copies its reference answer.
        scores: dict[str, dict[str, float | None]] = {}
        per_question: dict[str, dict[str, float | None]] = {}
        for name, options in (("rules", {}), ("llm", {"tuple_model": model, "tuple_base_url": base_url})):
            bench = Prove(data=folder, tuples=name, **options)  # type: ignore[arg-type]
            samples = list(bench.samples())
            copies = {s.id: Response(id=s.id, response=s.reference or "") for s in samples}
            records = asyncio.run(bench.score_many([(s, copies[s.id]) for s in samples],
                                                   ScoringContext(cache=cache)))
            report = bench.metrics(records)
            scores[name] = {k: report.metrics[k] for k in ("hscore", "tscore", "average")}
            per_question[name] = {r.id: r.metadata.get("hscore") for r in records}
        gaps = [abs(float(per_question["rules"][k]) - float(v)) * 100  # type: ignore[arg-type]
                for k, v in per_question["llm"].items() if v is not None and per_question["rules"].get(k) is not None]

    n = len(pairs)
    print(f"texts: {len(texts)} ({failed} failed extraction); rules {rules_s:.1f} s, llm {llm_s:.1f} s")
    for name in ("rules", "llm"):
        total = sum(kinds[name].values())
        print(f"  {name:5s}: {total / max(n, 1):.1f} tuples/text  " + ", ".join(
            f"{k} {v / max(n, 1):.1f}" for k, v in sorted(kinds[name].items())))
    print(f"exact agreement (mean Jaccard): {100 * fmean(jaccard):.1f}" if jaccard else "exact agreement: n/a")
    print(f"soft agreement, rules tuples found in llm's (Eq.1 style): {100 * fmean(rules_in_llm):.1f}")
    print(f"soft agreement, llm tuples found in rules' (Eq.1 style): {100 * fmean(llm_in_rules):.1f}")
    for name, values in scores.items():
        print(f"copy-the-reference on synthetic, tuples={name}: " + ", ".join(
            f"{k} {v:.2f}" if v is not None else f"{k} n/a" for k, v in values.items()))
    if gaps:
        print(f"mean |hscore(rules) - hscore(llm)| per question: {fmean(gaps):.2f} (max {max(gaps):.2f})")
    if args.out:
        args.out.write_text(json.dumps([
            {"text": t, "rules": [x.text() for x in r] if not isinstance(r, Failure) else r.reason,
             "llm": [x.text() for x in g] if not isinstance(g, Failure) else g.reason}
            for t, r, g in zip(texts, by_rules, by_llm, strict=True)
        ], indent=1))


if __name__ == "__main__":
    main()
