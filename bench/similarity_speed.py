"""How much faster the batched, cached similarity judge is than Tri-HE's official per-claim loop.

Claims are the ground-truth supporting triplets of every Tri-HE question (1,226 questions), judged against
their own image's reference triplets. Four ways of computing the same verdicts are timed, model load
excluded from all (the model is loaded once and warmed up first):

  (a) official   the loop of NLI_judge.py: per image, encode the references; per claim, encode the claim,
                 all references joined (unused, as in the script), the top-3 string and the filtered string
  (b) ideal      every distinct string encoded exactly once (two batched calls; a joined string equal to a
                 reference is not encoded again), no cache
  (c) cold       SimilarityJudge with an empty embedding cache (SQLite file in a temporary folder)
  (d) warm       SimilarityJudge in a fresh process state, reference embeddings cached by an earlier run
  (e) re-run     SimilarityJudge in a fresh process state, everything cached by an earlier identical run
  (f) chunked    SimilarityJudge, empty cache, fed --chunk questions per call (the runner uses 256)

With --mismatched, every question's claims are also judged against the next image's references (mostly
hallucinated, often with nothing above the filter), so the verdict comparison covers both outcomes.

Verdicts of (a), (b) and (c) are compared claim by claim. Usage:

    .venv/bin/python bench/similarity_speed.py [--data PATH] [--images N] [--repeat R] [--model NAME] [--threads T]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from halluscope.benchmarks.tri_he import load_scene_graphs, load_tri_he
from halluscope.cache import Cache
from halluscope.embeddings import Embedder, load_embedder
from halluscope.judges.similarity import SimilarityJudge
from halluscope.scene.triplets import parse_triplet_string, reference_sentence
from halluscope.stages import JudgeItem

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HALLUSCOPE_SHARED", REPO.parent / "shared"))


def official_loop(model: Any, items: Sequence[JudgeItem]) -> list[float]:
    """NLI_judge.py's loop (filter 0.5, top-3), transcribed; one score per claim, in item order.

    Items come grouped by image, as the official script walks them: the references of an image are encoded
    once, when its first question comes up.
    """
    from sklearn.metrics.pairwise import cosine_similarity

    scores: list[float] = []
    scene = None
    triplets: list[str] = []
    embeddings: Any = None
    for item in items:
        if item.scene is not scene:
            scene = item.scene
            triplets = [
                t.replace("(", "").replace(")", "").replace(",", "") + "." for t in scene.reference_texts
            ]
            embeddings = model.encode(triplets)
        for claim in item.claims:
            src = model.encode([" ".join(claim.as_tuple())])
            res = cosine_similarity(src, embeddings)
            filtered = [" ".join([triplets[idx] for idx in np.nonzero(res > 0.5)[1]])]
            model.encode([" ".join(triplets)])  # computed and never used by the official script
            topk = (-res).argsort()[0, :3]
            top = model.encode([" ".join([triplets[i] for i in topk])])
            value = cosine_similarity(src, top)[0][0]
            if filtered != [""]:
                value = max(cosine_similarity(src, model.encode(filtered))[0][0], value)
            scores.append(float(value))
    return scores


def ideal_batched(model: Any, items: Sequence[JudgeItem], batch_size: int) -> list[float]:
    """The least work the algorithm allows: every distinct string encoded once, two model calls, no cache."""

    def encode(texts: list[str]) -> np.ndarray:
        return np.asarray(model.encode(texts, batch_size=batch_size, normalize_embeddings=True))

    refs = [[reference_sentence(r) for r in item.scene.reference_texts] for item in items]
    claims = [[c.text() for c in item.claims] for item in items]
    first = list(dict.fromkeys([t for group in (*refs, *claims) for t in group]))
    row = {t: i for i, t in enumerate(first)}
    vecs = encode(first)
    plans: list[tuple[np.ndarray, str, str | None]] = []
    for item_refs, item_claims in zip(refs, claims, strict=True):
        r = vecs[[row[t] for t in item_refs]]
        for text in item_claims:
            c = vecs[row[text]]
            sims = r @ c
            best = np.argsort(-sims, kind="stable")[:3]
            passing = np.flatnonzero(sims > 0.5)
            filtered = " ".join(item_refs[i] for i in passing) if passing.size else None
            plans.append((c, " ".join(item_refs[i] for i in best), filtered))
    # A joined string of a single reference is that reference, already encoded in the first call.
    second = list(dict.fromkeys(t for _, top_text, f in plans for t in (top_text, f) if t and t not in row))
    vecs2 = encode(second) if second else vecs[:0]
    vector = {**{t: vecs[i] for i, t in enumerate(first)}, **{t: vecs2[i] for i, t in enumerate(second)}}
    out = []
    for c, top, filtered in plans:
        score = float(vector[top] @ c)
        if filtered is not None:
            score = max(score, float(vector[filtered] @ c))
        out.append(score)
    return out


def judge_scores(judge: SimilarityJudge, items: Sequence[JudgeItem]) -> list[float]:
    results = judge.judge_many_sync(items)
    scores: list[float] = []
    for result in results:
        assert isinstance(result, list), result
        scores.extend(float(v.score) for v in result if v.score is not None)
    return scores


def timed(fn: Callable[[], list[float]], repeat: int) -> tuple[float, list[float]]:
    best, out = float("inf"), []
    for _ in range(repeat):
        started = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - started)
    return best, out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=SHARED / "data" / "tri-he" / "tri-he.json")
    parser.add_argument("--images", type=int, default=None, help="only the first N images (default: all 300)")
    parser.add_argument("--repeat", type=int, default=1, help="best of R timings for (b)–(f) (default 1)")
    parser.add_argument(
        "--mismatched", action="store_true", help="also judge each question's claims against the next image"
    )
    parser.add_argument("--model", default=None, help="embedding model (default: packaged all-MiniLM-L6-v2)")
    parser.add_argument(
        "--chunk", type=int, nargs="+", default=[256], help="questions per call for (f) (default: 256, as the runner)"
    )
    parser.add_argument("--skip-official", action="store_true", help="skip (a), the slow official loop")
    parser.add_argument(
        "--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)"
    )
    args = parser.parse_args(argv)
    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)

    raw = load_tri_he(args.data)
    scenes = load_scene_graphs(args.data)
    image_ids = list(raw)[: args.images]
    items = [
        JudgeItem(
            sample_id=f"{image_id}-{index}{suffix}",
            claims=[c for text in instance["triplet"] for c in parse_triplet_string(text)],
            scene=scene,
        )
        for position, image_id in enumerate(image_ids)
        for index, instance in enumerate(raw[image_id]["instance"])
        for suffix, scene in [
            ("", scenes[image_id]),
            *([("-other", scenes[image_ids[(position + 1) % len(image_ids)]])] if args.mismatched else []),
        ]
    ]
    # Grouped by scene, the order in which the official script walks them.
    items.sort(key=lambda item: item.sample_id.endswith("-other"))
    n_claims = sum(len(item.claims) for item in items)
    print(
        f"{len(image_ids)} images, {len(items)} questions, {n_claims} claims; load average {os.getloadavg()}"
    )

    loaded = load_embedder(args.model)
    model = loaded.model
    model.encode([f"warm-up sentence number {i}" for i in range(64)], batch_size=64)
    batch = loaded.batch_size

    rows: list[tuple[str, float, list[float] | None]] = []
    official: list[float] | None = None
    if not args.skip_official:
        seconds, official = timed(lambda: official_loop(model, items), 1)
        rows.append(("(a) official per-claim loop", seconds, official))
    seconds, ideal = timed(lambda: ideal_batched(model, items, batch), args.repeat)
    rows.append(("(b) ideal batched, no cache", seconds, ideal))

    with tempfile.TemporaryDirectory() as tmp:

        def fresh_judge(db: str) -> SimilarityJudge:
            return SimilarityJudge(
                model=args.model, embedder=Embedder(model, loaded.identity(), cache=Cache(Path(tmp) / db))
            )

        counter = iter(range(1_000_000))
        seconds, cold = timed(
            lambda: judge_scores(fresh_judge(f"cold-{next(counter)}.sqlite"), items), args.repeat
        )
        rows.append(("(c) SimilarityJudge, empty cache", seconds, cold))

        all_refs = list(
            dict.fromkeys(reference_sentence(r) for k in image_ids for r in scenes[k].reference_texts)
        )
        Embedder(model, loaded.identity(), cache=Cache(Path(tmp) / "refs.sqlite")).encode(all_refs)
        seconds, warm = timed(lambda: judge_scores(fresh_judge("refs.sqlite"), items), args.repeat)
        rows.append(("(d) SimilarityJudge, references cached", seconds, warm))

        seconds, rerun = timed(lambda: judge_scores(fresh_judge("cold-0.sqlite"), items), args.repeat)
        rows.append(("(e) SimilarityJudge, identical re-run", seconds, rerun))

        for size in args.chunk:

            def chunked(size: int = size) -> list[float]:
                judge = fresh_judge(f"chunked-{next(counter)}.sqlite")
                return [
                    s
                    for start in range(0, len(items), size)
                    for s in judge_scores(judge, items[start : start + size])
                ]

            seconds, in_chunks = timed(chunked, args.repeat)
            rows.append((f"(f) SimilarityJudge, empty cache, chunks of {size}", seconds, in_chunks))

    base = rows[0][1]
    ideal_seconds = rows[1 if official is not None else 0][1]
    print(
        f"\nmodel {loaded.identity()}, batch size {batch}, torch threads {_threads()}, best of {args.repeat}"
    )
    print(f"{'method':46} {'seconds':>9} {'vs (a)':>8} {'vs (b)':>8}")
    for label, seconds, _ in rows:
        speedup = f"{base / seconds:7.2f}x" if official is not None else "      -"
        print(f"{label:46} {seconds:9.2f} {speedup} {seconds / ideal_seconds:7.2f}x")

    reference = official if official is not None else ideal
    print()
    for label, _, scores in rows:
        assert scores is not None and len(scores) == n_claims
        same = sum((a > 0.6) == (b > 0.6) for a, b in zip(reference, scores, strict=True))
        diff = max(abs(a - b) for a, b in zip(reference, scores, strict=True))
        print(
            f"{label:46} verdicts equal to {'(a)' if official is not None else '(b)'}: {same}/{n_claims}, "
            f"max score difference {diff:.2e}"
        )
    supported = sum(s > 0.6 for s in reference)
    print(f"\nsupported {supported}/{n_claims}; load average {os.getloadavg()}")
    agree = all(
        (a > 0.6) == (b > 0.6) for _, _, scores in rows for a, b in zip(reference, scores or [], strict=True)
    )
    return 0 if agree else 1


def _threads() -> int:
    import torch

    return int(torch.get_num_threads())


if __name__ == "__main__":
    sys.exit(main())
