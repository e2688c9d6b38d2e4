"""Do the two calibration baselines bracket a benchmark? blind vs scene-oracle on Tri-HE, fully offline.

A text-only LLM (the packaged Qwen2.5-Coder-1.5B behind a llama.cpp server on loopback, unless --base-url
names another endpoint) answers Tri-HE questions twice: ``blind`` (no image, no scene: language priors
only) and ``scene-oracle`` (the image's scene graph written out as text). Both are judged with the offline
pipeline (rules extractor, similarity judge). An instrument that measures grounding must rate the oracle's
answers as hallucinating less than the blind ones.

    python bench/blind_vs_oracle.py [--questions 30] [--max-tokens 64] [--base-url URL] [--out DIR]

Answers and judgements are cached (``--cache``, default a file in ``--out``), so a re-run only recomputes
the table.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from halluscope.benchmarks import BENCHMARKS, ScoringContext
from halluscope.cache import Cache
from halluscope.claims import EXTRACTORS
from halluscope.judges import JUDGES
from halluscope.models.spec import create_model
from halluscope.runs.respond import collect_responses
from halluscope.runs.runner import run_benchmark_async
from halluscope.runs.selection import first_samples

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HALLUSCOPE_SHARED", REPO.parent / "shared"))
BASELINES = ("blind", "scene-oracle")


@contextlib.contextmanager
def endpoint(base_url: str | None, model: str | None) -> Iterator[tuple[str, str]]:
    """The given endpoint, or a llama.cpp server on the packaged GGUF for the duration of the block."""
    if base_url:
        yield base_url, model or "default"
        return
    from halluscope.llm.offline import llama_server

    with llama_server(n_ctx=4096) as server:
        yield server.base_url, server.model


async def collect(args: argparse.Namespace, base_url: str, model_name: str) -> dict[str, dict[str, Any]]:
    """Phase 1: both baselines answer (resumable and cached; nothing is asked twice)."""
    bench = BENCHMARKS.create("tri-he", data=args.data)
    chosen = first_samples(bench, args.questions)
    cache = Cache(args.cache or args.out / "cache.sqlite")
    collected: dict[str, dict[str, Any]] = {}
    for baseline in BASELINES:
        model = create_model(f"{baseline}/openai/{model_name}?base_url={base_url}", cache=cache)
        start = time.perf_counter()
        answers = await collect_responses(
            bench,
            model,
            args.out / baseline,
            concurrency=args.concurrency,
            max_tokens=args.max_tokens,
            show_progress=False, selection=chosen,
        )
        collected[baseline] = {
            "answers": answers,
            "identity": model.identity(),
            "answer_s": round(time.perf_counter() - start, 1),
        }
        await model.aclose()
    return collected


async def judge(args: argparse.Namespace, collected: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Phase 2: the offline pipeline scores each baseline's answers into its run directory."""
    bench = BENCHMARKS.create("tri-he", data=args.data)
    chosen = first_samples(bench, args.questions)
    cache = Cache(args.cache or args.out / "cache.sqlite")
    ctx = ScoringContext(
        cache=cache,
        extractor=EXTRACTORS.create(args.extractor, cache=cache),
        judge=JUDGES.create(args.judge, cache=cache),
    )
    rows = []
    for baseline, got in collected.items():
        answers = got["answers"]
        start = time.perf_counter()
        report = await run_benchmark_async(
            bench, answers, ctx, args.out / baseline, spec_extra={"model": got["identity"]}, selection=chosen
        )
        words = [len(r.response.split()) for r in answers.values()]
        rows.append(
            {
                "baseline": baseline,
                "metrics": report.metrics,
                "counts": report.counts,
                "answered": len(answers),
                "mean_words": sum(words) / max(1, len(words)),
                "cached_answers": sum(1 for r in answers.values() if r.metadata.get("cached")),
                "answer_s": got["answer_s"],
                "judge_s": round(time.perf_counter() - start, 1),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=SHARED / "data" / "tri-he" / "tri-he.json")
    parser.add_argument("--questions", type=int, default=30)
    parser.add_argument("--max-tokens", type=int, default=64)
    # llama.cpp serves one request at a time and reuses the previous prompt's prefix (the scene text of the
    # same image), so one request in flight is fastest there.
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--base-url", default=None, help="an OpenAI-compatible endpoint instead of llama.cpp")
    parser.add_argument("--model", default=None, help="model name at --base-url")
    parser.add_argument("--extractor", default="rules")
    parser.add_argument("--judge", default="similarity")
    parser.add_argument("--out", type=Path, default=None, help="keep answers and runs here (default: temp)")
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--answer-only", action="store_true", help="collect the answers, do not judge them")
    args = parser.parse_args()

    with contextlib.ExitStack() as stack:
        if args.out is None:
            args.out = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        args.out.mkdir(parents=True, exist_ok=True)
        with endpoint(args.base_url, args.model) as (base_url, model_name):
            collected = asyncio.run(collect(args, base_url, model_name))
        if args.answer_only:
            print(f"answers collected under {args.out}")
            return
        rows = asyncio.run(judge(args, collected))
        (args.out / "summary.json").write_text(json.dumps(rows, indent=2))

    print(
        f"Tri-HE, first {args.questions} questions, {model_name} (max_tokens={args.max_tokens}), "
        f"extractor={args.extractor}, judge={args.judge}"
    )
    header = (
        f"{'baseline':<14}{'Hallu-Q':>9}{'Hallu-I':>9}{'claims':>8}{'0-claim':>9}{'words':>7}{'answer s':>10}"
    )
    print(header + f"{'judge s':>9}")
    for row in rows:
        m, c = row["metrics"], row["counts"]
        print(
            f"{row['baseline']:<14}{m['hallu_q']:>9.2f}{m['hallu_i']:>9.2f}{c.get('claims', 0):>8}"
            f"{c.get('zero_claim_questions', 0):>9}{row['mean_words']:>7.1f}"
            f"{row['answer_s']:>10.1f}{row['judge_s']:>9.1f}"
        )
    blind, oracle = (r["metrics"]["hallu_q"] for r in rows)
    verdict = "scene-oracle hallucinates less" if oracle < blind else "NOT separated: check the pipeline"
    print(f"blind − oracle Hallu-Q: {blind - oracle:+.2f} points ({verdict})")


if __name__ == "__main__":
    main()
