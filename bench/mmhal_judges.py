"""MMHal-Bench's judges measured against real ratings: GPT-4o's and hand labels made by looking at the photos.

    python bench/mmhal_judges.py gpt4o  --data DIR [--judge local | --base-url URL --model M] [--limit N]
    python bench/mmhal_judges.py labels --data DIR [--split heldout|tune|all] [--judge local ...]
    python bench/mmhal_judges.py models --data DIR [--judge local ...] [--files a.json,b.json]
    python bench/mmhal_judges.py labels --data DIR --judge similarity   # the embedding baseline
    python bench/mmhal_judges.py labels --data DIR --rating-first --write-agreement   # package the measurement

``DIR`` is the MMHal-Bench folder: ``response_template.json``, ``responses/`` (the official example
response files) and, for ``gpt4o`` and ``models``, ``third-party-gpt4o-review/`` (the raw GPT-4o replies
on ``blip2_2.7b.json`` and a table of GPT-4o averages of six files). ``gpt4o`` compares the judge's rating
of each BLIP-2 answer with GPT-4o's; ``labels`` compares it with the packaged hand labels
(``halluscope/calibration/data/mmhal_real.json``); ``models`` compares per-model averages with the published
GPT-4o averages. Replies are cached (``$HALLUSCOPE_CACHE_DIR``), so a re-run costs nothing. Prints one JSON
object; ``--out`` also writes it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from statistics import fmean
from typing import Any

from halluscope.benchmarks.mmhal import MMHal
from halluscope.cache import Cache
from halluscope.calibration.mmhal_real import agreement, load_labels, model_agreement
from halluscope.judges.mmhal import MMHalItem, MMHalLLMJudge, MMHalRating, parse_rating

#: results.md's row names → the response files they score.
PUBLISHED_MODELS = {
    "Idefics 80b": "idefics_80b",
    "InstructBLIP 13b": "instructblip_13b",
    "LLaVa 7b": "llava_7b",
    "LLaVa 13b": "llava_13b",
    "LLaVa OneV 0.5B": "llava_onevision_0.5b",
    "BLIP-2": "blip2_2.7b",
}


def gpt4o_ratings(data: Path) -> dict[str, int | None]:
    rows = json.loads((data / "third-party-gpt4o-review" / "blip2_mmhal_eval.json").read_text(encoding="utf-8"))
    return {str(i): parse_rating(str(r["choices"][0]["message"]["content"])).rating for i, r in enumerate(rows)}


def published_averages(data: Path) -> dict[str, float]:
    out = {}
    for line in (data / "third-party-gpt4o-review" / "results.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] in PUBLISHED_MODELS:
            out[PUBLISHED_MODELS[cells[0]]] = float(cells[1])
    return out


def items_for(bench: MMHal, model: str, ids: list[str] | None = None) -> list[MMHalItem]:
    path = bench.path.parent / "responses" / f"{model}.json"
    answers = bench.read_responses(path).responses
    samples = {s.id: s for s in bench.samples()}
    chosen = ids if ids is not None else list(samples)
    return [
        MMHalItem(
            sample_id=sid,
            question_type=str(samples[sid].metadata["question_type"]),
            question=samples[sid].prompt,
            reference=samples[sid].reference or "",
            image_content=list(samples[sid].metadata["image_content"]),
            answer=answers[sid].response,
        )
        for sid in chosen
        if sid in answers and answers[sid].response.strip()
    ]


class Rater:
    """The judge under test, with its time per uncached call."""

    def __init__(self, args: argparse.Namespace, cache: Cache) -> None:
        self.args, self.cache = args, cache
        self.seconds: list[float] = []

    async def rate(self, judge: MMHalLLMJudge, items: list[MMHalItem]) -> dict[str, int | None]:
        out: dict[str, int | None] = {}
        for n, item in enumerate(items):
            start = time.perf_counter()
            cached = judge.stats.cached
            (result,) = await judge.grade_many([item])
            if judge.stats.cached == cached:
                self.seconds.append(time.perf_counter() - start)
            out[item.sample_id] = result.rating if isinstance(result, MMHalRating) else None
            if self.args.show:
                print(f"[{item.sample_id}] {result!r}", file=sys.stderr, flush=True)
            if (n + 1) % 10 == 0:
                print(f"  {n + 1}/{len(items)} rated", file=sys.stderr, flush=True)
        return out


def similarity_scores(bench: MMHal, keys: list[tuple[str, str]]) -> dict[str, float]:
    """Cosine similarity of each answer with the reference answer (the packaged MiniLM), by ``model/id``."""
    from halluscope.embeddings import load_embedder

    embedder = load_embedder()
    samples = {s.id: s for s in bench.samples()}
    answers = {m: bench.read_responses(bench.path.parent / "responses" / f"{m}.json").responses for m, _ in keys}
    pairs = [(f"{m}/{i}", answers[m][i].response, samples[i].reference or "") for m, i in keys
             if i in answers[m] and answers[m][i].response.strip()]
    a = embedder.encode([p[1] for p in pairs])
    b = embedder.encode([p[2] for p in pairs])
    return {key: float((a[n] * b[n]).sum()) for n, (key, _, _) in enumerate(pairs)}


def similarity_agreement(reference: Mapping[str, int | None], scores: dict[str, float],
                         threshold: float) -> dict[str, Any]:
    """Hallucinated-or-not agreement (similarity below ``threshold``) and rank correlation with ratings."""
    from scipy import stats

    keys = [k for k in scores if reference.get(k) is not None]
    rated = [int(reference[k]) for k in keys]  # type: ignore[arg-type]
    sims = [scores[k] for k in keys]
    flagged = [s < threshold for s in sims]
    truth = [r < 3 for r in rated]
    agree = sum(f == t for f, t in zip(flagged, truth, strict=True)) / len(keys)
    return {"n": len(keys), "threshold": threshold, "hallucinated_agreement": agree,
            "spearman": float(stats.spearmanr(sims, rated).statistic),
            "pearson": float(stats.pearsonr(sims, rated).statistic),
            "hal_rate_reference": 100 * sum(truth) / len(keys), "hal_rate_judged": 100 * sum(flagged) / len(keys)}


def best_threshold(reference: Mapping[str, int | None], scores: dict[str, float]) -> float:
    """The similarity threshold that best separates hallucinated answers (on the tune split)."""
    candidates = sorted(set(round(v, 3) for v in scores.values()))
    def agreement_at(t: float) -> float:
        return sum((scores[k] < t) == (int(r) < 3) for k, r in reference.items() if r is not None and k in scores)
    return max(candidates, key=agreement_at)


async def similarity_mode(args: argparse.Namespace, bench: MMHal) -> dict[str, Any]:
    labels = load_labels(args.labels)
    scores = similarity_scores(bench, [(x.model, x.id) for x in labels])
    tune = {f"{x.model}/{x.id}": x.rating for x in labels if x.split == "tune"}
    held = {f"{x.model}/{x.id}": x.rating for x in labels if x.split == "heldout"}
    threshold = best_threshold(tune, scores)
    result: dict[str, Any] = {"mode": "similarity", "judge": "answer-reference cosine (all-MiniLM-L6-v2)",
                              "threshold_from_tune": threshold,
                              "tune": similarity_agreement(tune, scores, threshold),
                              "heldout": similarity_agreement(held, scores, threshold)}
    blip = gpt4o_ratings(args.data)
    blip_scores = similarity_scores(bench, [("blip2_2.7b", k) for k in blip])
    result["gpt4o_blip2"] = similarity_agreement({f"blip2_2.7b/{k}": v for k, v in blip.items()}, blip_scores,
                                                 threshold)
    return result


def hallucinated_counts(reference: Mapping[str, int | None], judged: Mapping[str, int | None]) -> dict[str, int]:
    """The judge's calls of hallucinated (a rating below 3) against the labels', over the answers both rated:
    of those labelled hallucinated, how many it flagged; of the others, how many it passed."""
    counts = {"found": 0, "positives": 0, "passed": 0, "negatives": 0}
    for key, rating in judged.items():
        truth = reference.get(key)
        if rating is None or truth is None:
            continue
        if truth < 3:
            counts["positives"] += 1
            counts["found"] += rating < 3
        else:
            counts["negatives"] += 1
            counts["passed"] += rating >= 3
    return counts


def agreement_entry(result: dict[str, Any], labels: int) -> dict[str, Any]:
    """The packaged-agreement record of a ``labels`` run on the held-out split (``judges/data/agreement.json``)."""
    counts = result["agreement_counts"]
    return {
        "judge": result["judge"],
        "unit": "answer",
        "measured_on": (
            f"{counts['positives'] + counts['negatives']} of {labels} held-out real answers to MMHal-Bench questions "
            "(LLaVA 7B and 13B, IDEFICS 80B, InstructBLIP 13B), each labelled by looking at the photo; "
            "answers the judge gave no rating left out"
        ),
        "readings": {"rating": counts},
    }


def judge_for(args: argparse.Namespace, cache: Cache, local: Any) -> MMHalLLMJudge:
    if args.judge == "local":
        options = local.stage_options("judge 'mmhal-llm'", {"model": "local"})
        judge = MMHalLLMJudge(cache=cache, rating_first=args.rating_first, **options)
    else:
        judge = MMHalLLMJudge(model=args.model, base_url=args.base_url, concurrency=1, timeout_s=600, cache=cache,
                              rating_first=args.rating_first)
    if args.no_grammar:
        judge.grammar = None  # the judge before its reply was held to the rating line
    return judge


async def main_async(args: argparse.Namespace, local: Any) -> dict[str, Any]:
    bench = MMHal(args.data)
    if args.judge == "similarity":
        return await similarity_mode(args, bench)
    cache = Cache(Path(args.cache)) if args.cache else Cache.default()
    judge = judge_for(args, cache, local)
    rater = Rater(args, cache)
    result: dict[str, Any] = {"mode": args.mode, "judge": judge.identity()}
    try:
        if args.mode == "gpt4o":
            reference = gpt4o_ratings(args.data)
            items = items_for(bench, "blip2_2.7b")[: args.limit]
            got = await rater.rate(judge, items)
            result["agreement"] = agreement({k: reference[k] for k in got}, got)
            result["unparseable"] = sum(1 for v in got.values() if v is None)
            result["ratings"] = {"gpt4o": {k: reference[k] for k in got}, "judge": got}
        elif args.mode == "labels":
            labels = load_labels(args.labels, args.split)
            by_model: dict[str, list[str]] = {}
            for label in labels:
                by_model.setdefault(label.model, []).append(label.id)
            got = {}
            for model, ids in sorted(by_model.items()):
                for sid, rating in (await rater.rate(judge, items_for(bench, model, ids))).items():
                    got[f"{model}/{sid}"] = rating
            reference = {f"{x.model}/{x.id}": x.rating for x in labels}
            result["split"] = args.split
            result["ratings"] = got
            result["agreement"] = agreement(reference, got)
            per_model = {}
            for model in sorted(by_model):
                keys = [k for k in reference if k.startswith(model + "/") and got.get(k) is not None]
                per_model[model] = {
                    "labels": fmean(reference[k] for k in keys) if keys else None,  # type: ignore[misc]
                    "judge": fmean(got[k] for k in keys) if keys else None,  # type: ignore[misc]
                    "n": len(keys),
                }
            result["per_model"] = per_model
            result["models"] = model_agreement(
                {m: v["labels"] for m, v in per_model.items() if v["labels"] is not None},
                {m: v["judge"] for m, v in per_model.items() if v["judge"] is not None},
            )
            result["published_gpt4o_averages"] = published_averages(args.data)
            result["unparseable"] = sum(1 for v in got.values() if v is None)
            result["agreement_counts"] = hallucinated_counts(reference, got)
        else:
            published = published_averages(args.data)
            models = args.files.split(",") if args.files else sorted(published)
            averages = {}
            for model in models:
                got = await rater.rate(judge, items_for(bench, model)[: args.limit])
                rated = [v for v in got.values() if v is not None]
                averages[model] = fmean(rated) if rated else float("nan")
            result["judge_averages"] = averages
            result["published_gpt4o_averages"] = published
            result["models"] = model_agreement(published, averages)
    finally:
        await judge.aclose()
    result["seconds_per_uncached_call"] = fmean(rater.seconds) if rater.seconds else None
    result["uncached_calls"] = len(rater.seconds)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("gpt4o", "labels", "models"))
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--judge", default="local", help="local (the packaged GGUF), endpoint (--base-url) or "
                        "similarity (answer-reference cosine; threshold tuned on the tune split, all modes at once)")
    parser.add_argument("--base-url")
    parser.add_argument("--model")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--rating-first", action="store_true", help="the judge's rating_first option")
    parser.add_argument("--show", action="store_true", help="print each reply (stderr)")
    parser.add_argument("--no-grammar", action="store_true",
                        help="do not hold the packaged model's reply to the rating line (the judge before it was)")
    parser.add_argument("--split", default="heldout")
    parser.add_argument("--labels", type=Path)
    parser.add_argument("--files")
    parser.add_argument("--cache")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--write-agreement", action="store_true",
                        help="package the judge's held-out sensitivity and specificity (judges/data/agreement.json)")
    args = parser.parse_args()
    if args.write_agreement and (args.mode != "labels" or args.split != "heldout" or args.judge == "similarity"):
        parser.error("--write-agreement packages an LLM judge's measurement on the held-out labels only")
    from halluscope.llm.local import LocalLLM

    with LocalLLM() as local:
        result = asyncio.run(main_async(args, local))
    if args.write_agreement:
        from judge_agreement import write_packaged

        write_packaged(agreement_entry(result, len(load_labels(args.labels, args.split))))
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "ratings"}, indent=2))


if __name__ == "__main__":
    main()
