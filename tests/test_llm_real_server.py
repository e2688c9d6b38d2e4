"""The llm extractor and judge against a real OpenAI-compatible server: llama.cpp with the packaged Qwen2.5 1.5B.

A 1.5B model on two CPU cores answers at ~15 tokens/s, so this stays at a handful of short calls. It checks
what must hold whatever the model's quality: the whole path (prompt → server → parsing) works, extracted
claims are triples built from the answer's words, a blatantly false claim is judged hallucinated, and every
verdict is a valid label. The judge's accuracy is not measured here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from halluscope.benchmarks.tri_he import load_tri_he, scene_from_entry
from halluscope.cache import Cache
from halluscope.claims.llm import LLMExtractor
from halluscope.judges.llm import LLMJudge
from halluscope.llm.offline import (
    PACKAGED_GGUF_BYTES,
    PACKAGED_MODEL_NAME,
    LocalServerError,
    packaged_gguf,
    packaged_gguf_parts,
)
from halluscope.llm.offline import (
    llama_server as serve_gguf,
)
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
        assert len(set(claims)) == len(claims), "duplicates must be removed"


@pytest.mark.full_data
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


def test_packaged_model_is_assembled_once_and_whole() -> None:
    parts = packaged_gguf_parts()
    assert [p.name for p in parts] == [f"part{n:02d}.bin" for n in range(1, 23)]
    path = packaged_gguf()
    assert path.stat().st_size == PACKAGED_GGUF_BYTES
    with path.open("rb") as model:
        assert model.read(4) == b"GGUF"
    before = path.stat().st_mtime_ns
    assert packaged_gguf() == path and path.stat().st_mtime_ns == before, "assembled only once"


def test_a_server_that_dies_is_reported_with_its_log(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"this is not a model" * 100)
    with pytest.raises(LocalServerError, match="exited with code") as caught, serve_gguf(broken):
        pass
    assert str(broken) in str(caught.value)
    assert "last lines" in str(caught.value) and len(str(caught.value).splitlines()) > 2
