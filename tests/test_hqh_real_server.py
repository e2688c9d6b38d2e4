"""hqh-llm against a real llama.cpp server with the packaged Qwen2.5 1.5B: the whole path, on real HQH items.

Two short calls on one real item (its region lines capped, so the prompt stays small on a busy CPU): the
prompt reaches the server, the model's reply is read by the strict parsers, and the result is a judgement
(not a failure), in both modes. The judge's accuracy is measured in bench/hqh_judges.py, not here.
"""

from __future__ import annotations

import pytest

from halluscope.benchmarks.hqh import HQH
from halluscope.judges.hqh import HQHItem, HQHJudgement, HQHLLMJudge
from halluscope.llm.offline import PACKAGED_MODEL_NAME
from halluscope.stages import Failure
from tests.paths import HQH_DIR

pytestmark = pytest.mark.slow

TIMEOUT_S = 600.0  # llama.cpp keeps working on a request whose client gave up: no retries on a busy machine


def count_items() -> list[HQHItem]:
    bench = HQH(HQH_DIR, types=["count"])
    sample = next(s for s in bench.samples() if not s.metadata.get("problem"))
    scene = bench.scene(sample)
    assert scene is not None
    return [
        HQHItem(sample.id, "count", sample.prompt, sample.reference or "", answer, scene)
        for answer in (sample.reference or "", "Forty-seven.")
    ]


@pytest.mark.full_data
async def test_hqh_llm_per_answer_and_batched_on_a_real_server(llama_server: str) -> None:
    items = count_items()
    options = dict(model=PACKAGED_MODEL_NAME, base_url=llama_server, concurrency=1, timeout_s=TIMEOUT_S, max_regions=4)
    per_answer = HQHLLMJudge(mode="per-answer", **options)  # type: ignore[arg-type]
    (judgement,) = await per_answer.grade_many(items[:1])
    await per_answer.aclose()
    assert isinstance(judgement, HQHJudgement), judgement
    assert judgement.verdict in ("correct", "incorrect"), judgement.unjudged_reason
    assert isinstance(judgement.extra_claims, int)
    assert per_answer.stats.calls == 1 and per_answer.stats.prompt_tokens > 100

    batched = HQHLLMJudge(mode="batched", json_mode=False, **options)  # type: ignore[arg-type]
    results = await batched.grade_many(items)
    await batched.aclose()
    assert batched.stats.calls == 1  # both answers about one image in one call
    # The small model's one reply is read answer by answer: each answer gets its grade, or a failure naming
    # the answer the reply left without one (re-asked on the next run, never guessed).
    graded = [r for r in results if isinstance(r, HQHJudgement)]
    assert graded, results
    for index, result in enumerate(results):
        if not isinstance(result, HQHJudgement):
            assert isinstance(result, Failure) and f"no grade for answer {index}" in str(result), result
    assert {r.verdict for r in graded} <= {"correct", "incorrect", "unjudged"}
