"""The packaged local model's judges hold their replies to the verdict's form (issue 33): a llama.cpp grammar is
sent to the packaged server only (other endpoints refuse fields they do not know, and their requests and cache
keys stay as they were), MMHal-Bench's judge asks for the rating first there (the judge measured against
hand labels), and the grammar is one the real llama.cpp parses, whose replies the judge reads."""

from __future__ import annotations

import asyncio
from typing import Any

from halluscope.cache import Cache
from halluscope.judges.agreement import measured_agreement
from halluscope.judges.llm import PER_CLAIM_GRAMMAR, LLMJudge, parse_per_claim_reply
from halluscope.judges.mmhal import RATING_GRAMMAR, MMHalItem, MMHalLLMJudge, parse_rating
from halluscope.llm.client import named_endpoint
from halluscope.llm.local import LOCAL_ENDPOINT
from halluscope.llm.offline import PACKAGED_MODEL_NAME
from halluscope.scene.graph import SceneGraph
from halluscope.stages import JudgeItem
from halluscope.types import Claim, VerdictLabel
from tests.scripted_server import ScriptedServer, completion

ITEM = MMHalItem("0", "attribute", "What color is the car?", "The car is red.", ["Car"], "The car is blue.")


def _scene() -> SceneGraph:
    scene = SceneGraph(image_id="1")
    scene.reference_texts = ["(man, rides, horse)"]
    scene.object_names = ["man", "horse"]
    return scene


def _judge_claim(base_url: str) -> tuple[list[Any], dict[str, Any]]:
    judge = LLMJudge(mode="per-claim", model="m", base_url=base_url, cache=Cache(None))
    item = JudgeItem("1", [Claim(subject="man", relation="rides", object="horse")], _scene())
    return asyncio.run(judge.judge_item(item)), judge.identity()  # type: ignore[return-value]


def test_the_grammar_goes_to_the_packaged_server_only(scripted_server: ScriptedServer) -> None:
    scripted_server.responder = lambda body: completion("Verdict: supported")
    _, remote = _judge_claim(scripted_server.base_url)
    assert "grammar" not in scripted_server.chat_requests()[-1].body and "reply_grammar" not in remote
    with named_endpoint(scripted_server.base_url, LOCAL_ENDPOINT):
        verdicts, local = _judge_claim(scripted_server.base_url)
    assert local["reply_grammar"] is True
    assert scripted_server.chat_requests()[-1].body["grammar"] == PER_CLAIM_GRAMMAR
    assert verdicts[0].label == VerdictLabel.SUPPORTED


def test_mmhal_rates_first_on_the_packaged_server_unless_told(scripted_server: ScriptedServer) -> None:
    scripted_server.responder = lambda body: completion("Rating: 2\nThe car is red, not blue.")
    remote = MMHalLLMJudge(model="m", base_url=scripted_server.base_url, cache=Cache(None))
    assert not remote.rating_first and remote.max_tokens == 200
    with named_endpoint(scripted_server.base_url, LOCAL_ENDPOINT):
        local = MMHalLLMJudge(model=PACKAGED_MODEL_NAME, base_url=scripted_server.base_url, cache=Cache(None))
        told = MMHalLLMJudge(model="m", base_url=scripted_server.base_url, rating_first="false", cache=Cache(None))
        ratings = asyncio.run(local.grade_many([ITEM]))
        # The judge as measured against hand labels (judges/data/agreement.json): the same identity.
        assert measured_agreement(local.identity(), "rating") is not None
    assert local.rating_first and local.max_tokens == 24 and local.identity()["rating_first"] is True
    assert local.identity()["reply_grammar"] is True and "reply_grammar" not in remote.identity()
    assert not told.rating_first and told.grammar is None
    body = scripted_server.chat_requests()[-1].body
    # Rating first, and the reply held to the rating line it asks for.
    assert body["grammar"] == RATING_GRAMMAR and "Rating: N\nfirst" in body["messages"][-1]["content"]
    assert ratings[0].rating == 2  # type: ignore[union-attr]
    asyncio.run(remote.grade_many([ITEM]))
    assert "grammar" not in scripted_server.chat_requests()[-1].body


def test_the_forms_the_grammars_allow_are_read_as_verdicts() -> None:
    assert parse_per_claim_reply("Verdict: supported").label == VerdictLabel.SUPPORTED
    for part in ("object1", "object2", "relation"):
        verdict = parse_per_claim_reply(f"Verdict: unsupported\nUnsupported part: {part}")
        assert verdict.label == VerdictLabel.HALLUCINATED and verdict.error is not None


def test_the_real_llama_cpp_server_holds_the_reply_to_the_grammar(llama_server: str) -> None:
    """The packaged model on the real llama.cpp server, asked with the grammar, replies in one of its forms."""
    import httpx

    body = {
        "model": PACKAGED_MODEL_NAME, "temperature": 0, "max_tokens": 24, "grammar": PER_CLAIM_GRAMMAR,
        "messages": [{"role": "user", "content": "Is the claim (cup, on, table) supported? Answer with a verdict."}],
    }  # fmt: skip
    reply = httpx.post(f"{llama_server}/chat/completions", json=body, timeout=600).json()
    text = reply["choices"][0]["message"]["content"]
    assert text.startswith("Verdict: "), text
    assert parse_per_claim_reply(text).label in (VerdictLabel.SUPPORTED, VerdictLabel.HALLUCINATED), text

    body["grammar"] = RATING_GRAMMAR
    body["messages"] = [{"role": "user", "content": "Rate the answer 'a red car' to 'What is shown?' from 0 to 6."}]
    text = httpx.post(f"{llama_server}/chat/completions", json=body, timeout=600).json()["choices"][0]["message"]
    assert parse_rating(text["content"]).rating is not None, text
