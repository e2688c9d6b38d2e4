"""Tri-HE's ``llm`` judge, per-claim against batched mode: tokens spent and verdict agreement.

    python bench/llm_judge_tokens.py --data ../shared/data/tri-he/tri-he.json --answers 200 \
        [--base-url http://127.0.0.1:8000/v1 --model NAME] [--out llm_judge_tokens.json]

The answers, up to ``--answers`` in this order:

1. the 59 hand-labelled answers to Tri-HE questions (``halluscope.calibration.real``: reference, edited, mismatched
   and our own multi-sentence answers, 5.1 claims each) with their hand-made claims, so each mode's verdicts
   are also scored against the hand labels (true / false; "unseen" claims left out);
2. then, from the release, for questions spread evenly over the 1,226, the question's reference answer (mostly
   supported by the scene graph) and the reference answer of a question about another image (mostly not;
   ``tri_he.ground_truth_responses(mismatched=True)``), with claims from the offline ``rules`` extractor.
   These are one sentence each (about one claim), where batching has nothing to save.

Both modes judge the same claims, so the comparison is the judge's alone. Each answer is judged per claim
(one call per claim, the paper's protocol) and then batched (one JSON call for all its claims), one call at a
time, so the server's cached prompt prefix (the image's facts come first in both prompts) helps both modes
alike.

Printed and written (``--out``) after every answer: calls, prompt and completion tokens per mode as the server
reports them (cache hits report the original usage, so a resumed run adds up to the same figures), the share
batched/per-claim, and verdict agreement on the claims both modes decided (supported vs hallucinated), plus
how many claims each mode left unjudged. Without ``--base-url`` the packaged Qwen GGUF is started on llama.cpp
(as ``--judge-model local``).
Every call is cached in the user cache (``HALLUSCOPE_CACHE_DIR``): an interrupted run resumes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from halluscope.benchmarks.tri_he import TriHE, ground_truth_responses
from halluscope.cache import Cache, default_cache_dir
from halluscope.calibration.real import load_real_set
from halluscope.claims.rules import RulesExtractor
from halluscope.judges.hqh import CallStats
from halluscope.judges.llm import LLMJudge
from halluscope.stages import Failure, JudgeItem
from halluscope.types import Claim, Verdict, VerdictLabel


class TokenCounter:
    """Adds up the usage of every chat call made through one judge's client (``hqh.CallStats``'s tally)."""

    def __init__(self, judge: LLMJudge) -> None:
        self.stats = CallStats()
        inner = judge.client.chat

        async def counted(*args: Any, **kwargs: Any) -> Any:
            result = await inner(*args, **kwargs)
            self.stats.add(result.usage)
            return result

        judge.client.chat = counted  # type: ignore[method-assign]

    def figures(self) -> dict[str, int]:
        s = self.stats
        return {"calls": s.calls, "prompt_tokens": s.prompt_tokens, "completion_tokens": s.completion_tokens,
                "total_tokens": s.prompt_tokens + s.completion_tokens}  # fmt: skip


@contextlib.contextmanager
def endpoint(base_url: str | None, model: str | None, n_ctx: int) -> Iterator[tuple[str, str]]:
    if base_url:
        yield base_url, model or "default"
        return
    from halluscope.llm.local import LocalLLM

    # The run's own server, named by its model file rather than its port, so a resumed run finds its cache,
    # and stopped with this process however it ends.
    with LocalLLM(n_ctx=n_ctx) as local:
        server = local.server()
        yield server.base_url, server.model


@dataclass
class Answer:
    sample_id: str
    kind: str
    text: str
    claims: list[Claim]
    #: Hand labels of the claims (True = hallucinated, None = not labelled / unseen); empty when unlabelled.
    labels: list[bool | None]


def pick_answers(bench: TriHE, count: int) -> list[Answer]:
    """The labelled real answers first, then reference and mismatched answers of evenly spread questions."""
    ids = {(s.image_id, int(s.metadata["question_index"])): s.id for s in bench.samples()}
    out: list[Answer] = []
    for real in load_real_set():
        sample_id = ids.get((real.image_id, real.question_index))
        if sample_id is None:
            continue
        labels = [None if c.label == "unseen" else c.label == "false" for c in real.claims]
        out.append(Answer(sample_id, f"real-{real.source}", real.answer, [c.claim() for c in real.claims], labels))
    release = max(0, count - len(out))
    right = ground_truth_responses(bench)
    wrong = ground_truth_responses(bench, mismatched=True)
    half = release // 2
    stride = max(1, len(right) // max(1, half))
    texts: list[tuple[str, str, str]] = []
    for i in list(range(0, len(right), stride))[:half]:
        texts.append((right[i].id, "release-reference", right[i].response))
        texts.append((wrong[i].id, "release-mismatched", wrong[i].response))
    extracted = RulesExtractor().extract_many_sync([text for _, _, text in texts])
    for (sample_id, kind, text), claims in zip(texts, extracted, strict=True):
        found = [] if isinstance(claims, Failure) else list(claims)
        out.append(Answer(sample_id, kind, text, found, []))
    return out[:count]


def decided(verdict: Verdict) -> bool | None:
    """True for hallucinated, False for supported, None when the judge did not decide."""
    if verdict.label == VerdictLabel.UNJUDGED:
        return None
    return verdict.label == VerdictLabel.HALLUCINATED


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/data/tri-he/tri-he.json"))
    parser.add_argument("--answers", type=int, default=200)
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--model", default=None)
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--timeout-s", type=float, default=900.0)
    parser.add_argument("--json-mode", action="store_true", help="batched: ask for a JSON object (grammar)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    bench = TriHE(data=args.data)
    samples = {s.id: s for s in bench.samples()}
    answers = pick_answers(bench, args.answers)
    cache = Cache(default_cache_dir() / "cache.sqlite")
    rows: list[dict[str, Any]] = []
    began = time.perf_counter()
    with endpoint(args.base_url, args.model, args.n_ctx) as (base_url, model):
        common: dict[str, Any] = dict(
            model=model, base_url=base_url, concurrency=1, timeout_s=args.timeout_s, cache=cache
        )
        per_claim = LLMJudge(mode="per-claim", **common)
        batched = LLMJudge(mode="batched", json_mode=args.json_mode, **common)
        counters = {"per_claim": TokenCounter(per_claim), "batched": TokenCounter(batched)}
        for n, answer in enumerate(answers, 1):
            if not answer.claims:
                rows.append({"id": answer.sample_id, "kind": answer.kind, "claims": 0})
                continue
            sample = samples[answer.sample_id]
            scene = bench.scene(sample)
            assert scene is not None
            item = JudgeItem(answer.sample_id, answer.claims, scene, question=sample.prompt, response=answer.text)
            one = asyncio.run(per_claim.judge_item(item))
            many = asyncio.run(batched.judge_item(item))
            rows.append({
                "id": answer.sample_id, "kind": answer.kind, "claims": len(answer.claims), "labels": answer.labels,
                "per_claim": [decided(v) for v in one] if not isinstance(one, Failure) else str(one),
                "batched": [decided(v) for v in many] if not isinstance(many, Failure) else str(many),
            })  # fmt: skip
            summary = summarise(rows, counters, time.perf_counter() - began)
            if args.out:
                args.out.write_text(json.dumps({"summary": summary, "answers": rows}, indent=1))
            print(f"answer {n}/{len(answers)}: {json.dumps(summary)}", flush=True)
    cache.close()
    print(json.dumps(summarise(rows, counters, time.perf_counter() - began), indent=1))


def summarise(rows: list[dict[str, Any]], counters: dict[str, TokenCounter], seconds: float) -> dict[str, Any]:
    """The figures over the answers judged so far."""
    both = agree = 0
    unjudged = {"per_claim": 0, "batched": 0}
    failed = {"per_claim": 0, "batched": 0}
    by_kind: dict[str, dict[str, int]] = {}
    against_labels = {"n": 0, "per_claim_right": 0, "batched_right": 0}
    for row in rows:
        one, many = row.get("per_claim"), row.get("batched")
        for mode, verdicts in (("per_claim", one), ("batched", many)):
            if isinstance(verdicts, str):
                failed[mode] += 1
            elif verdicts is not None:
                unjudged[mode] += sum(v is None for v in verdicts)
        if not isinstance(one, list) or not isinstance(many, list):
            continue
        kind = by_kind.setdefault(row["kind"], {"n": 0, "agree": 0, "per_claim_halluc": 0, "batched_halluc": 0})
        for j, (a, b) in enumerate(zip(one, many, strict=True)):
            label = row["labels"][j] if row.get("labels") else None
            if label is not None and a is not None and b is not None:
                against_labels["n"] += 1
                against_labels["per_claim_right"] += a == label
                against_labels["batched_right"] += b == label
            if a is None or b is None:
                continue
            both += 1
            agree += a == b
            kind["n"] += 1
            kind["agree"] += a == b
            kind["per_claim_halluc"] += bool(a)
            kind["batched_halluc"] += bool(b)
    per = counters["per_claim"].figures()
    bat = counters["batched"].figures()
    return {
        "answers": len(rows),
        "claims": sum(r["claims"] for r in rows),
        "per_claim": per,
        "batched": bat,
        "batched_share_of_tokens": round(bat["total_tokens"] / per["total_tokens"], 3) if per["total_tokens"] else None,
        "claims_both_decided": both,
        "agreement": round(agree / both, 3) if both else None,
        "unjudged_claims": unjudged,
        "failed_answers": failed,
        "by_kind": by_kind,
        "against_hand_labels": against_labels,
        "seconds": round(seconds),
    }


if __name__ == "__main__":
    main()
