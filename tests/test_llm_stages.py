"""The Tri-HE llm extractor and llm judge against a scripted server: prompts, strict parsing, failures."""

from __future__ import annotations

import json
from typing import Any

import pytest

from halluscope.benchmarks.tri_he import load_tri_he, scene_from_entry
from halluscope.claims import EXTRACTORS
from halluscope.claims.llm import LLMExtractor, parse_triples
from halluscope.judges import JUDGES
from halluscope.judges.llm import LLMJudge, parse_batched_reply, parse_per_claim_reply
from halluscope.llm.client import LLMAuthError, LLMBadRequestError
from halluscope.scene.direction import reference_text
from halluscope.scene.graph import SceneGraph
from halluscope.stages import Failure, JudgeItem
from halluscope.types import Claim, ErrorType, VerdictLabel
from tests.paths import TRI_HE_JSON
from tests.scripted_server import Reply, ScriptedServer, completion, error

RELATION = ErrorType.RELATION
IMAGE_ID = "2374892"  # a man at a desk with a laptop, pen, lamp and books


@pytest.fixture(scope="module")
def scene() -> SceneGraph:
    return scene_from_entry(IMAGE_ID, load_tri_he(TRI_HE_JSON)[IMAGE_ID])


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HALLUSCOPE_API_KEY", "OPENAI_API_KEY", "HALLUSCOPE_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def user_text(body: Any) -> str:
    return str(body["messages"][-1]["content"])


# -- extraction: parsing ---------------------------------------------------------------------------------


def test_triples_are_parsed_the_tri_he_way() -> None:
    reply = """("man", "sitting at", "desk")
("laptop", "is", "black")
('man', 'holding', 'pen')
("man", "sitting at", "desk")
("lamp", "", "on")
("a", "b", "c", "d")
(man, using, laptop)
("woman's bag", "on", "chair") and ('man', "wearing", 'man's shirt')
### Text:
("ignored", "after", "marker")
"""
    claims = [c.as_tuple() for c in parse_triples(reply)]
    assert claims == [
        ("man", "sitting at", "desk"),
        ("laptop", "is", "black"),
        ("man", "holding", "pen"),
        ("woman's bag", "on", "chair"),
        ("man", "wearing", "man's shirt"),
    ]


def test_no_triples_in_a_reply_gives_no_claims() -> None:
    assert parse_triples("The text states no facts.") == []
    assert parse_triples("###\n(\"man\", \"at\", \"desk\")") == []


# -- extraction: the stage -------------------------------------------------------------------------------


async def test_extractor_sends_only_the_answer_and_reads_triples(scripted_server: ScriptedServer) -> None:
    scripted_server.push(completion('("man", "using", "laptop")\n("laptop", "is", "black")\n###'))
    extractor = EXTRACTORS.create("llm", model="judge-model", base_url=scripted_server.base_url)
    assert isinstance(extractor, LLMExtractor)
    (claims,) = await extractor.extract_many(["A man is using a black laptop."])
    await extractor.aclose()
    assert claims == [Claim.of(("man", "using", "laptop")), Claim.of(("laptop", "is", "black"))]
    (request,) = scripted_server.chat_requests()
    assert request.body["model"] == "judge-model"
    assert request.body["temperature"] == 0.0
    assert "A man is using a black laptop." in user_text(request.body)
    assert user_text(request.body).rstrip().endswith("### Triples:")


async def test_extractor_failures_stay_with_their_answer(scripted_server: ScriptedServer) -> None:
    def respond(body: Any) -> Reply:
        text = user_text(body)
        if "garbage" in text:
            return Reply(200, "<html>proxy login page</html>")
        if "slow" in text:
            return completion('("x", "y", "z")', delay_s=1.0)
        return completion('("dog", "on", "sofa")')

    scripted_server.responder = respond
    extractor = LLMExtractor(base_url=scripted_server.base_url, model="m", timeout_s=0.2)
    extractor.client.max_retries, extractor.client.backoff_s = 1, 0.01
    results = await extractor.extract_many(["A dog on a sofa.", "garbage answer", "slow answer", "  "])
    await extractor.aclose()
    ok, garbage, slow, empty = results
    assert ok == [Claim.of(("dog", "on", "sofa"))]
    assert isinstance(garbage, Failure) and "not JSON" in garbage.reason
    assert isinstance(slow, Failure) and "2 attempts" in slow.reason and "within 0.2 s" in slow.reason
    assert empty == []
    assert extractor.client.requests_sent == 1 + 1 + 2  # no request for the empty answer


async def test_extractor_stops_on_auth_failure(scripted_server: ScriptedServer) -> None:
    scripted_server.push(error(401, "invalid key"), error(401, "invalid key"))
    extractor = LLMExtractor(base_url=scripted_server.base_url, model="m")
    with pytest.raises(LLMAuthError, match="HTTP 401"):
        await extractor.extract_many(["A cat.", "A dog."])
    await extractor.aclose()


def test_extractor_options_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match=r"unknown option.*temprature"):
        LLMExtractor(temprature=0.5)
    with pytest.raises(ValueError, match="MY_LLM_KEY"):
        LLMExtractor(api_key_env="MY_LLM_KEY")
    monkeypatch.setenv("MY_LLM_KEY", "sk-from-env")
    extractor = LLMExtractor(api_key_env="MY_LLM_KEY", model="m", base_url="http://127.0.0.1:9/v1")
    identity = extractor.identity()
    assert identity["extractor"] == "llm" and identity["model"] == "m" and identity["prompt"]
    assert "sk-from-env" not in json.dumps(identity) and extractor.client.has_api_key


async def test_extractor_key_from_named_env_var_is_sent(
    scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_LLM_KEY", "sk-from-env")
    scripted_server.push(completion('("a", "b", "c")'))
    extractor = LLMExtractor(api_key_env="MY_LLM_KEY", model="m", base_url=scripted_server.base_url)
    await extractor.extract_many(["a b c"])
    await extractor.aclose()
    assert scripted_server.chat_requests()[0].headers["Authorization"] == "Bearer sk-from-env"


# -- judging: parsing ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "label", "error"),
    [
        ("Verdict: supported", VerdictLabel.SUPPORTED, None),
        ("Verdict: unsupported\nUnsupported part: object1", VerdictLabel.HALLUCINATED, ErrorType.OBJECT),
        ("Verdict: unsupported\nUnsupported part: object2", VerdictLabel.HALLUCINATED, ErrorType.OBJECT),
        ("Verdict: Unsupported.\nUnsupported part: relation", VerdictLabel.HALLUCINATED, ErrorType.RELATION),
        ("**Verdict:** unsupported\n**Unsupported part:** 'relation'", VerdictLabel.HALLUCINATED, RELATION),
        # Tri-HE: an unsupported claim with no object part named counts as a relation hallucination.
        ("Verdict: unsupported", VerdictLabel.HALLUCINATED, ErrorType.RELATION),
        ("Verdict: supported\nUnsupported part: object1", VerdictLabel.SUPPORTED, None),
        ("Yes, the man is using the laptop.", VerdictLabel.UNJUDGED, None),
        ("Verdict: supported\nVerdict: unsupported", VerdictLabel.UNJUDGED, None),
        ("Verdict: probably supported", VerdictLabel.UNJUDGED, None),
        ("", VerdictLabel.UNJUDGED, None),
    ],
)
def test_per_claim_replies_are_parsed_strictly(
    reply: str, label: VerdictLabel, error: ErrorType | None
) -> None:
    verdict = parse_per_claim_reply(reply)
    assert verdict.label == label
    assert verdict.error == error
    if label == VerdictLabel.UNJUDGED:
        assert verdict.explanation and "unparseable" in verdict.explanation


def test_batched_replies_are_parsed_strictly() -> None:
    good = {
        "verdicts": [
            {"index": 1, "supported": False, "unsupported_part": "relation", "reason": "not using"},
            {"index": 0, "supported": True, "unsupported_part": None, "reason": "stated"},
            {"index": 2, "supported": False, "unsupported_part": "object1", "reason": "no elephant"},
        ]
    }
    verdicts = parse_batched_reply("```json\n" + json.dumps(good) + "\n```", 3)
    assert [(v.label, v.error) for v in verdicts] == [
        (VerdictLabel.SUPPORTED, None),
        (VerdictLabel.HALLUCINATED, ErrorType.RELATION),
        (VerdictLabel.HALLUCINATED, ErrorType.OBJECT),
    ]
    assert verdicts[2].explanation == "no elephant"

    for broken in ["Claim 0 is supported.", '{"verdicts": "all fine"}', '["supported"]', '{"verdicts": [}']:
        assert all(v.label == VerdictLabel.UNJUDGED for v in parse_batched_reply(broken, 2)), broken

    partial = {
        "verdicts": [
            {"index": 0, "supported": "yes"},  # not a boolean
            {"supported": True},  # no index
            {"index": 2, "supported": True},
            {"index": 2, "supported": False, "unsupported_part": "object2"},  # conflicts with the one above
            {"index": 3, "supported": False, "unsupported_part": "colour"},  # unknown part: label kept
            {"index": 9, "supported": True},  # no such claim
        ]
    }
    labels = [v.label for v in parse_batched_reply(json.dumps(partial), 5)]
    assert labels == [
        VerdictLabel.UNJUDGED,
        VerdictLabel.UNJUDGED,
        VerdictLabel.UNJUDGED,
        VerdictLabel.HALLUCINATED,
        VerdictLabel.UNJUDGED,
    ]


# -- judging: the stage ----------------------------------------------------------------------------------

CLAIMS = [
    Claim.of(("man", "using", "laptop")),
    Claim.of(("man", "throwing", "pen")),
    Claim.of(("elephant", "flying over", "laptop")),
    Claim.of(("lamp", "is", "on")),
]


@pytest.mark.full_data
async def test_per_claim_judge_sends_facts_and_one_claim_per_call(
    scripted_server: ScriptedServer, scene: SceneGraph
) -> None:
    def respond(body: Any) -> Reply:
        claim_line = user_text(body).rstrip().splitlines()[-1]
        if '"elephant"' in claim_line:
            return completion("Verdict: unsupported\nUnsupported part: object1")
        if '"throwing"' in claim_line:
            return completion("Verdict: unsupported\nUnsupported part: relation")
        if '"using"' in claim_line:
            return completion("Verdict: supported")
        return completion("The lamp is probably on, I think.")

    scripted_server.responder = respond
    judge = JUDGES.create("llm", model="m", base_url=scripted_server.base_url)
    assert isinstance(judge, LLMJudge)
    items = [JudgeItem("2374892-0", CLAIMS[:3], scene), JudgeItem("2374892-1", CLAIMS, scene)]
    verdicts, unread = await judge.judge_many(items)
    await judge.aclose()

    assert not isinstance(verdicts, Failure)
    assert [(v.label, v.error) for v in verdicts] == [
        (VerdictLabel.SUPPORTED, None),
        (VerdictLabel.HALLUCINATED, ErrorType.RELATION),
        (VerdictLabel.HALLUCINATED, ErrorType.OBJECT),
    ]
    # A reply out of form fails its answer, never a guessed verdict nor a claim quietly left unjudged.
    assert isinstance(unread, Failure) and "1 of 4 replies" in unread.reason and "probably" in unread.reason
    assert len(scripted_server.chat_requests()) == 3 + len(CLAIMS)
    prompt = user_text(scripted_server.chat_requests()[0].body)
    for reference in scene.reference_texts:
        assert reference in prompt
    assert "computer mouse" in prompt and prompt.count("wall, ") == 1, "objects listed once each"
    assert "(man, using, laptop)" in verdicts[0].evidence  # stored "(laptop, using, man)", shown subject first
    assert "(laptop, is, black)" in verdicts[0].evidence
    assert verdicts[2].evidence == [reference_text(scene, r) for r in scene.reference_texts if "laptop" in r]


@pytest.mark.full_data
async def test_batched_judge_makes_one_json_call_per_answer(
    scripted_server: ScriptedServer, scene: SceneGraph
) -> None:
    reply = {
        "verdicts": [
            {"index": 0, "supported": True, "unsupported_part": None, "reason": "stated"},
            {"index": 1, "supported": False, "unsupported_part": "relation", "reason": "holds, not throws"},
            {"index": 2, "supported": False, "unsupported_part": "object1", "reason": "no elephant"},
            {"index": 3, "supported": True, "unsupported_part": None, "reason": "lamp turned on"},
        ]
    }
    scripted_server.push(completion(json.dumps(reply)), completion("Sorry, I cannot help with that."))
    judge = LLMJudge(model="m", base_url=scripted_server.base_url, mode="batched", concurrency=1)
    first, second = await judge.judge_many(
        [JudgeItem("a", CLAIMS, scene), JudgeItem("b", CLAIMS[:2], scene)]
    )
    await judge.aclose()

    assert len(scripted_server.chat_requests()) == 2
    body = scripted_server.chat_requests()[0].body
    assert body["response_format"] == {"type": "json_object"}
    assert '2. ("elephant", "flying over", "laptop")' in user_text(body)
    assert not isinstance(first, Failure)
    assert [v.label for v in first] == [
        VerdictLabel.SUPPORTED,
        VerdictLabel.HALLUCINATED,
        VerdictLabel.HALLUCINATED,
        VerdictLabel.SUPPORTED,
    ]
    assert first[2].error == ErrorType.OBJECT and first[1].error == ErrorType.RELATION
    assert isinstance(second, Failure) and "not JSON" in second.reason, "wrong JSON must never become a verdict"


@pytest.mark.full_data
async def test_a_failed_judge_call_fails_the_answer_and_a_bad_request_stops_the_run(
    scripted_server: ScriptedServer, scene: SceneGraph
) -> None:
    # A body that is no chat completion fails the answer (its record is retried on the next run), never
    # a claim quietly left unjudged in a finished record; so does a reply that cannot be read.
    scripted_server.push(Reply(200, "not json at all"), completion("Verdict: maybe"))
    judge = LLMJudge(model="m", base_url=scripted_server.base_url, concurrency=1)
    (failed,) = await judge.judge_many([JudgeItem("a", CLAIMS[:2], scene)])
    assert isinstance(failed, Failure) and "not JSON" in failed.reason

    scripted_server.push(completion("Verdict: maybe"))
    (unread,) = await judge.judge_many([JudgeItem("b", CLAIMS[:1], scene)])
    assert isinstance(unread, Failure) and "'Verdict: maybe'" in unread.reason

    scripted_server.push(error(400, "prompt too long"))
    with pytest.raises(LLMBadRequestError, match="prompt too long"):
        await judge.judge_many([JudgeItem("c", CLAIMS[2:3], scene)])
    await judge.aclose()


@pytest.mark.full_data
async def test_judge_stops_on_auth_failure(scripted_server: ScriptedServer, scene: SceneGraph) -> None:
    scripted_server.responder = lambda body: error(403, "forbidden")
    judge = LLMJudge(model="m", base_url=scripted_server.base_url, mode="batched")
    with pytest.raises(LLMAuthError, match="HTTP 403"):
        await judge.judge_many([JudgeItem("a", CLAIMS, scene)])
    await judge.aclose()


async def test_judge_needs_no_call_without_claims_and_refuses_to_guess_without_facts(
    scripted_server: ScriptedServer,
) -> None:
    judge = LLMJudge(model="m", base_url=scripted_server.base_url)
    empty_scene = SceneGraph(image_id="blank")
    results = await judge.judge_many(
        [JudgeItem("a", [], empty_scene), JudgeItem("b", CLAIMS[:1], empty_scene)]
    )
    await judge.aclose()
    assert results[0] == []
    assert not isinstance(results[1], Failure)
    assert results[1][0].label == VerdictLabel.UNJUDGED and "blank" in (results[1][0].explanation or "")
    assert scripted_server.chat_requests() == []


def test_judge_options_are_checked() -> None:
    with pytest.raises(ValueError, match="mode"):
        LLMJudge(mode="all-at-once")
    with pytest.raises(ValueError, match=r"unknown option.*threshold"):
        LLMJudge(threshold=0.5)
    per_claim = LLMJudge(model="m", base_url="http://127.0.0.1:9/v1").identity()
    batched = LLMJudge(model="m", base_url="http://127.0.0.1:9/v1", mode="batched").identity()
    assert per_claim != batched and per_claim["judge"] == "llm" and per_claim["prompt"]
    plain = LLMJudge(model="m", base_url="http://127.0.0.1:9/v1", mode="batched", json_mode=False).identity()
    assert plain != batched


@pytest.mark.full_data
async def test_batched_judge_can_do_without_response_format(
    scripted_server: ScriptedServer, scene: SceneGraph
) -> None:
    reply = {"verdicts": [{"index": 0, "supported": True, "unsupported_part": None, "reason": "stated"}]}
    scripted_server.push(completion("```json\n" + json.dumps(reply) + "\n```"))
    judge = LLMJudge(model="m", base_url=scripted_server.base_url, mode="batched", json_mode=False)
    (verdicts,) = await judge.judge_many([JudgeItem("a", CLAIMS[:1], scene)])
    await judge.aclose()
    assert "response_format" not in scripted_server.chat_requests()[0].body
    assert not isinstance(verdicts, Failure) and verdicts[0].label == VerdictLabel.SUPPORTED
