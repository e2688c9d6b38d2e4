"""HQH judges on known answers: offline ``hqh-rules`` vs ``hqh-llm``, and ``hqh-llm`` per-answer vs batched.

For the first ``--per-type`` items of each type that have image information, two answers are judged: the
item's reference answer (should be correct) and the reference answer of another item of the same type
(deliberately wrong; see ``halluscope.benchmarks.hqh.ground_truth_responses``). Printed, per type:

- how often each judge calls the reference answers correct and the wrong ones incorrect (accuracy against
  the known class), and how many it left unjudged;
- the agreement of ``hqh-rules`` with ``hqh-llm`` (per-answer) on the answers both decided;
- the agreement of ``hqh-llm`` batched (both answers of an item in one call) with per-answer, and the calls
  and tokens each mode spent (tokens as the server reports them; cache hits report the original usage).

Without ``--base-url`` the packaged Qwen GGUF is started on llama.cpp. LLM calls are cached in the user
cache (``HALLUSCOPE_CACHE_DIR``), so a re-run with the same settings costs nothing and an interrupted one
resumes. Results are also written as JSON (``--out``).

    python bench/hqh_judges.py --data ../shared/data/hqh --per-type 2 --max-regions 12
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from halluscope.benchmarks.hqh import HQH, TYPES, ground_truth_responses
from halluscope.cache import Cache, default_cache_dir
from halluscope.judges.hqh import HQHItem, HQHJudgement, HQHLLMJudge
from halluscope.judges.hqh_rules import HQHRulesJudge
from halluscope.stages import Failure


def build_items(bench: HQH, per_type: int) -> list[tuple[HQHItem, bool]]:
    """(item, is_wrong) pairs: the reference answer and a wrong one for the first items of each type."""
    right = {r.id: r.response for r in ground_truth_responses(bench)}
    wrong = {r.id: r.response for r in ground_truth_responses(bench, mismatched=True)}
    taken = dict.fromkeys(TYPES, 0)
    out: list[tuple[HQHItem, bool]] = []
    for sample in bench.samples():
        kind = str(sample.metadata["type"])
        if sample.metadata.get("problem") or sample.id not in wrong or taken[kind] >= per_type:
            continue
        taken[kind] += 1
        scene = bench.scene(sample)
        assert scene is not None
        for answer, is_wrong in ((right[sample.id], False), (wrong[sample.id], True)):
            out.append(
                (HQHItem(sample.id, kind, sample.prompt, sample.reference or "", answer, scene), is_wrong)
            )
    return out


@contextlib.contextmanager
def endpoint(base_url: str | None, model: str | None) -> Iterator[tuple[str, str]]:
    if base_url:
        yield base_url, model or "default"
        return
    from halluscope.llm.offline import llama_server

    with llama_server(n_ctx=8192) as server:
        yield server.base_url, server.model


def verdict(result: HQHJudgement | Failure) -> bool | None:
    return result.hallucinated if isinstance(result, HQHJudgement) else None


async def judge_in_order(judge: HQHLLMJudge, items: list[HQHItem], per_call: int) -> list[HQHJudgement | Failure]:
    """Judge item by item (per_call=1) or item-group by group, so each finished call is cached at once."""
    out: list[HQHJudgement | Failure] = []
    for start in range(0, len(items), per_call):
        out.extend(await judge.grade_many(items[start : start + per_call]))
    return out


def run_llm(
    args: argparse.Namespace, items: list[HQHItem], report: Callable[[list[Any], list[Any]], None]
) -> tuple[list[HQHJudgement | Failure], list[HQHJudgement | Failure]]:
    """hqh-llm item by item: both answers per answer, then both in one batched call (which reuses the server's
    cached prompt prefix: the image facts and the grading rule come first in both prompts). ``report`` is
    called after every item, so an interrupted run has written its figures so far."""
    cache = Cache(default_cache_dir() / "cache.sqlite")
    per_answer: list[HQHJudgement | Failure] = []
    batched: list[HQHJudgement | Failure] = []
    with endpoint(args.base_url, args.model) as (base_url, model):
        options: dict[str, Any] = dict(
            model=model, base_url=base_url, concurrency=1, timeout_s=args.timeout_s,
            max_regions=args.max_regions, cache=cache,
        )  # fmt: skip
        one = HQHLLMJudge(mode="per-answer", **options)
        many = HQHLLMJudge(mode="batched", batch_size=8, json_mode=False, **options)
        timing = {"per_answer_s": 0.0, "batched_s": 0.0}
        for start in range(0, len(items), 2):
            pair = items[start : start + 2]
            began = time.perf_counter()
            for answer in pair:
                per_answer.extend(asyncio.run(one.grade_many([answer])))
            timing["per_answer_s"] += time.perf_counter() - began
            if not args.skip_batched:
                began = time.perf_counter()
                batched.extend(asyncio.run(many.grade_many(pair)))
                timing["batched_s"] += time.perf_counter() - began
            report(per_answer, batched)
            print(f"item {start // 2 + 1}: per-answer {vars(one.stats)}, batched {vars(many.stats)}, "
                  f"{ {k: round(v) for k, v in timing.items()} }", flush=True)  # fmt: skip
    cache.close()
    return per_answer, batched


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/data/hqh"))
    parser.add_argument("--per-type", type=int, default=2)
    parser.add_argument("--max-regions", type=int, default=None, help="cap the region lines (small contexts)")
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--model", default=None)
    parser.add_argument("--timeout-s", type=float, default=900.0)
    parser.add_argument("--skip-batched", action="store_true")
    parser.add_argument("--no-llm", action="store_true", help="only the offline judge against the known classes")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    bench = HQH(args.data)
    pairs = build_items(bench, args.per_type)
    items = [item for item, _ in pairs]
    wrong = [is_wrong for _, is_wrong in pairs]
    rules = asyncio.run(HQHRulesJudge().grade_many(items))
    def report(per_answer: list[Any], batched: list[Any], final: bool = False) -> None:
        """The table over the answers judged so far (all of them for the offline judge alone)."""
        done = len(per_answer) if not args.no_llm else len(items)
        results: dict[str, Any] = {"items": done // 2, "answers": done, "per_type": args.per_type}
        table: dict[str, dict[str, Any]] = {}
        for kind in [*TYPES, "all"]:
            idx = [i for i in range(done) if kind in ("all", items[i].type)]
            if not idx:
                continue
            row: dict[str, Any] = {"answers": len(idx)}
            for name, res in (("rules", rules), ("llm", per_answer), ("batched", batched)):
                if len(res) < done or not res:
                    continue
                decided = [i for i in idx if verdict(res[i]) is not None]
                row[f"{name}_decided"] = len(decided)
                row[f"{name}_accuracy"] = (
                    round(sum(verdict(res[i]) == wrong[i] for i in decided) / len(decided), 3) if decided else None
                )
            for name, res in (("rules_vs_llm", rules), ("batched_vs_llm", batched)):
                if len(res) < done or not per_answer:
                    continue
                both = [i for i in idx if verdict(res[i]) is not None and verdict(per_answer[i]) is not None]
                row[f"{name}_n"] = len(both)
                row[f"{name}_agree"] = (
                    round(sum(verdict(res[i]) == verdict(per_answer[i]) for i in both) / len(both), 3)
                    if both
                    else None
                )
            table[kind] = row
        results["table"] = table
        results["answers_detail"] = [
            {
                "id": items[i].sample_id, "type": items[i].type, "answer": items[i].answer, "wrong": wrong[i],
                "rules": verdict(rules[i]),
                "llm": verdict(per_answer[i]) if i < len(per_answer) else None,
                "batched": verdict(batched[i]) if i < len(batched) else None,
                "llm_reply": getattr(per_answer[i], "explanation", None) if i < len(per_answer) else None,
            }
            for i in range(done)
        ]  # fmt: skip
        if args.out:
            args.out.write_text(json.dumps(results, indent=1))
        if not final:
            return
        columns = [
            "answers", "rules_decided", "rules_accuracy", "llm_decided", "llm_accuracy", "rules_vs_llm_n",
            "rules_vs_llm_agree", "batched_decided", "batched_accuracy", "batched_vs_llm_n", "batched_vs_llm_agree",
        ]  # fmt: skip
        columns = [c for c in columns if any(c in row for row in table.values())]
        print("type".ljust(12) + " ".join(c.rjust(len(c)) for c in columns))
        for kind, row in table.items():
            print(kind.ljust(12) + " ".join(str(row.get(c, "-")).rjust(len(c)) for c in columns))

    per_answer: list[HQHJudgement | Failure] = []
    batched: list[HQHJudgement | Failure] = []
    if not args.no_llm:
        per_answer, batched = run_llm(args, items, report)
    report(per_answer, batched, final=True)


if __name__ == "__main__":
    main()
