"""The llm extractor and judge against a real OpenAI-compatible server: llama.cpp with the packaged Qwen2.5 1.5B.

A 1.5B model on two CPU cores answers at ~15 tokens/s, so this stays at a handful of short calls. It checks
what must hold whatever the model's quality: the whole path (prompt → server → parsing) works, extracted
claims are triples built from the answer's words, a blatantly false claim is judged hallucinated, and every
verdict is a valid label. The judge's accuracy is not measured here.
"""

from __future__ import annotations

import re

import pytest

from halluscope.benchmarks.tri_he import load_tri_he, scene_from_entry
from halluscope.claims.llm import LLMExtractor
from halluscope.judges.llm import LLMJudge
from halluscope.llm.offline import PACKAGED_MODEL_NAME
from halluscope.runs.cache import Cache
from halluscope.stages import Failure, JudgeItem
from halluscope.types import Claim, VerdictLabel
from tests.paths import TRI_HE_JSON

pytestmark = pytest.mark.slow

#: llama.cpp keeps working on a request whose client gave up, so a retry after a timeout only queues behind it;
#: on a busy CI machine a generous timeout is faster than retries.
TIMEOUT_S = 600.0
IMAGE_ID = "2374892"  # a man at a desk with a laptop, pen, lamp and books
ANSWERS = [
    "A man in a white shirt is using a black laptop.",
    "A lamp is on the desk, and books are piled next to it.",
]
CLAIMS = [
    Claim.of(("man", "using", "laptop")),
    Claim.of(("elephant", "flying over", "laptop")),
    Claim.of(("man", "wearing", "shirt")),
]


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


async def test_llm_extractor_on_a_real_server(llama_server: str) -> None:
    extractor = LLMExtractor(
        model=PACKAGED_MODEL_NAME, base_url=llama_server, max_tokens=80, concurrency=1, timeout_s=TIMEOUT_S
    )
    results = await extractor.extract_many(ANSWERS)
    await extractor.aclose()
    for answer, claims in zip(ANSWERS, results, strict=True):
        assert not isinstance(claims, Failure), claims
        assert claims, f"no claims extracted from {answer!r}"
        for claim in claims:
            assert all(claim.as_tuple()), claim
            # Subject and object come from the answer's own words.
            assert words(claim.subject) & words(answer), (claim, answer)
            assert words(claim.object) & words(answer), (claim, answer)
    assert len(set(results[0])) == len(results[0]), "duplicates must be removed"


@pytest.mark.parametrize("mode", ["per-claim", "batched"])
async def test_llm_judge_on_a_real_server(llama_server: str, mode: str) -> None:
    scene = scene_from_entry(IMAGE_ID, load_tri_he(TRI_HE_JSON)[IMAGE_ID])
    cache = Cache(None)
    judge = LLMJudge(
        model=PACKAGED_MODEL_NAME,
        base_url=llama_server,
        mode=mode,
        concurrency=1,
        timeout_s=TIMEOUT_S,
        cache=cache,
    )
    (verdicts,) = await judge.judge_many([JudgeItem(f"{IMAGE_ID}-x", CLAIMS, scene)])
    calls = judge.client.requests_sent
    assert calls == (len(CLAIMS) if mode == "per-claim" else 1)

    assert not isinstance(verdicts, Failure)
    assert len(verdicts) == len(CLAIMS)
    assert all(v.label in set(VerdictLabel) for v in verdicts)
    elephant = verdicts[1]
    assert elephant.label == VerdictLabel.HALLUCINATED, elephant
    for verdict in verdicts:
        assert verdict.explanation  # the judge's own words, or why it stayed unjudged

    # Judging the same claims again is answered from the cache, without a request.
    (again,) = await judge.judge_many([JudgeItem(f"{IMAGE_ID}-x", CLAIMS, scene)])
    assert judge.client.requests_sent == calls
    assert again == verdicts
    await judge.aclose()
