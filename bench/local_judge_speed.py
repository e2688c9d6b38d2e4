"""The packaged local LLM judges, each way they have been asked, on one fixed sample in one run: seconds per
item and how many verdicts differ from the way before.

MMHal-Bench's judge: ``reasons`` (reasons first and a ``Rating: N`` line at the end, up to 200 tokens: what
``--judge-model local`` did at first), ``rating`` (the rating line first, then one short sentence, up to 24
tokens: the configuration measured against hand labels), ``grammar`` (the same prompt, the reply held to
the rating line by a llama.cpp grammar: today's default on the packaged model) and ``prefill`` (tried, not
used: the reply's ``Rating: `` written for the model as the start of its reply, and only the digit decoded,
held to 0-6 by a grammar). Tri-HE's per-claim judge:
``free`` (the reply runs on to 100 tokens after its verdict line) and ``grammar`` (held to the two verdict
forms its prompt asks for: today's default). Every way: one llama.cpp server (the packaged Qwen2.5-Coder-1.5B
GGUF, started as ``--judge-model local`` starts it), one request at a time, so consecutive prompts share their
cached prefix (the fixed instructions come first in every prompt), and no halluscope cache (every call is made).

The sample: the first ``--mmhal`` of LLaVA-7B's 96 released MMHal-Bench answers, and the first ``--claims``
claims of the hand-labelled real Tri-HE answers (``halluscope.calibration.real``), in their order.

    python bench/local_judge_speed.py [--mmhal 8] [--claims 24] [--only mmhal,tri-he] [--ways grammar,prefill]
                                      [--slots 1] [--out FILE.json]

``--slots N`` starts the server with N parallel slots (each with the context one slot has) and sends N requests
at a time: whether decoding several requests at once pays on this machine (on two cores it does not: prompt
reading is the work, and it is bound by the processor either way).

Printed: the load average before and after, then for each judge and way the items, seconds per item, replies
without a verdict, and the items whose verdict differs from the way before it (listed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.paths import MMHAL_DIR, TRI_HE_JSON  # noqa: E402

from halluscope.cache import Cache  # noqa: E402
from halluscope.stages import Failure, JudgeItem  # noqa: E402
from halluscope.types import VerdictLabel  # noqa: E402


def mmhal_items(count: int) -> list[Any]:
    from halluscope.benchmarks import BENCHMARKS
    from halluscope.judges.mmhal import MMHalItem

    bench = BENCHMARKS.create("mmhal", data=MMHAL_DIR)
    answers = bench.read_responses(MMHAL_DIR / "responses" / "llava_7b.json").responses
    items = []
    for sample in bench.every_sample():
        answer = answers.get(sample.id)
        if answer is None or not answer.response.strip():
            continue
        items.append(MMHalItem(
            sample_id=sample.id, question_type=str(sample.metadata["question_type"]), question=sample.prompt,
            reference=sample.reference or "", image_content=list(sample.metadata.get("image_content") or []),
            answer=answer.response,
        ))  # fmt: skip
    return items[:count]


def tri_he_items(count: int) -> list[JudgeItem]:
    from halluscope.benchmarks.tri_he import TriHE
    from halluscope.calibration.real import load_real_set

    bench = TriHE(data=TRI_HE_JSON)
    samples = {(s.image_id, int(s.metadata["question_index"])): s for s in bench.every_sample()}
    items, total = [], 0
    for real in load_real_set():
        sample = samples.get((real.image_id, real.question_index))
        scene = bench.scene(sample) if sample is not None else None
        if sample is None or scene is None or total >= count:
            continue
        claims = [c.claim() for c in real.claims][: count - total]
        total += len(claims)
        items.append(JudgeItem(sample.id, claims, scene, question=sample.prompt, response=real.answer))
    return items


async def judge_mmhal(items: list[Any], common: dict[str, Any], way: str) -> list[Any]:
    from halluscope.judges.mmhal import MMHalLLMJudge

    judge = MMHalLLMJudge(**common, rating_first=way != "reasons")
    if way != "grammar":
        judge.grammar = None
    try:
        if way == "prefill":
            return await prefilled_ratings(judge, items)
        return [None if isinstance(r, Failure) else r.rating for r in await judge.grade_many(items)]
    finally:
        await judge.aclose()


async def prefilled_ratings(judge: Any, items: list[Any]) -> list[Any]:
    """The rating-first prompt with ``Rating: `` sent as the start of the model's reply (llama.cpp's server
    continues a last assistant message), the digit held to 0-6; sent as the judge sends its requests (its
    client keeps ``--slots`` of them in flight)."""
    from halluscope.judges.mmhal import parse_rating

    start = "Rating: "
    results = await asyncio.gather(*(
        judge.client.chat([*judge.messages(item), {"role": "assistant", "content": start}], temperature=0.0,
                          max_tokens=1, grammar="root ::= [0-6]\n")
        for item in items
    ))  # fmt: skip
    return [parse_rating(start + result.text).rating for result in results]


async def judge_tri_he(items: list[JudgeItem], common: dict[str, Any], way: str) -> list[Any]:
    import halluscope.judges.llm as llm

    grammar = llm.PER_CLAIM_GRAMMAR
    llm.PER_CLAIM_GRAMMAR = grammar if way == "grammar" else None  # type: ignore[assignment]  # free: none
    judge = llm.LLMJudge(mode="per-claim", **common)
    out: list[Any] = []
    try:
        for item in items:
            verdicts = await judge.judge_item(item)
            if isinstance(verdicts, Failure):
                out += [None] * len(item.claims)
            else:
                out += [None if v.label == VerdictLabel.UNJUDGED else v.label.value for v in verdicts]
    finally:
        llm.PER_CLAIM_GRAMMAR = grammar  # type: ignore[assignment]
        await judge.aclose()
    return out


def compare(name: str, unit: str, count: int, runs: dict[str, tuple[list[Any], float]]) -> dict[str, Any]:
    row: dict[str, Any] = {"judge": name, "unit": unit, "items": count, "ways": {}}
    before: list[Any] | None = None
    for way, (verdicts, seconds) in runs.items():
        differ = (
            []
            if before is None
            else [i for i, (a, b) in enumerate(zip(before, verdicts, strict=True)) if a != b]
        )
        row["ways"][way] = {
            "s_per_item": round(seconds / count, 2), "unjudged": verdicts.count(None), "verdicts": verdicts,
            "differ_from_way_before": len(differ),
            "differences": [(i, before[i], verdicts[i]) for i in differ] if before is not None else [],
        }  # fmt: skip
        shown = (
            ""
            if before is None
            else f"; differing from the way before: {len(differ)} {row['ways'][way]['differences']}"
        )
        print(f"{name} {way}: {count} {unit}s, {row['ways'][way]['s_per_item']} s/{unit}, "
              f"unjudged {verdicts.count(None)}{shown}", flush=True)  # fmt: skip
        before = verdicts
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mmhal", type=int, default=8, help="MMHal-Bench answers")
    parser.add_argument("--claims", type=int, default=24, help="Tri-HE claims")
    parser.add_argument("--only", default="tri-he,mmhal")
    parser.add_argument("--ways", help="ways to time, in order (default: every way of each judge)")
    parser.add_argument("--slots", type=int, default=1,
                        help="requests the server decodes at once, and as many sent at a time")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    from halluscope.llm.local import LocalLLM

    print(f"load average {os.getloadavg()}", flush=True)
    rows = []
    with LocalLLM(slots=args.slots) as local:
        server = local.server()  # started before the clock: both ways share it
        common = {"model": server.model, "base_url": server.base_url, "concurrency": args.slots, "timeout_s": 900.0,
                  "cache": Cache(None)}  # fmt: skip
        cases = {"mmhal": (mmhal_items(args.mmhal), judge_mmhal, "answer", ("reasons", "rating", "grammar", "prefill")),
                 "tri-he": (tri_he_items(args.claims), judge_tri_he, "claim", ("free", "grammar"))}  # fmt: skip
        for name in args.only.split(","):
            items, judge, unit, every_way = cases[name]
            ways = [w for w in (args.ways.split(",") if args.ways else every_way) if w in every_way]
            count = len(items) if unit == "answer" else sum(len(i.claims) for i in items)
            runs = {}
            for way in ways:
                began = time.perf_counter()
                verdicts = asyncio.run(judge(items, common, way))
                runs[way] = (verdicts, time.perf_counter() - began)
            rows.append(compare(name, unit, count, runs))
    print(f"load average {os.getloadavg()}", flush=True)
    if args.out:
        args.out.write_text(json.dumps({"load_after": os.getloadavg(), "judges": rows}, indent=1))


if __name__ == "__main__":
    main()
