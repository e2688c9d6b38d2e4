"""``--judge vlm``: the photo, the claim (or answer) and the scene graph go to a VLM endpoint; its reply is read
strictly. The endpoint is the scripted loopback server, which checks the image bytes it receives."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from typer.testing import CliRunner

from halluscope.judges import JUDGES
from halluscope.judges.hqh import HQHItem
from halluscope.judges.vlm import VLMJudge, parse_answer_reply, parse_claim_reply
from halluscope.models.images import decode_data_url, image_data_url
from halluscope.runs.selection import first_samples
from halluscope.scene.graph import SceneGraph
from halluscope.stages import Failure, JudgeItem
from halluscope.types import Claim, ErrorType, Support, VerdictLabel
from tests.paths import REPO_ROOT, TRI_HE_IMAGES, TRI_HE_JSON
from tests.scripted_server import Reply, ScriptedServer, completion

PHOTO = REPO_ROOT / "tests" / "data" / "excerpts" / "tri-he" / "images" / "2374892.jpg"
OTHER_PHOTO = REPO_ROOT / "tests" / "data" / "excerpts" / "tri-he" / "images" / "2397582.jpg"

#: What the scripted VLM answers, by the claim's subject.
CLAIM_REPLIES = {
    "man": "Verdict: supported",
    "cat": "**Verdict: contradicted**\nWrong part: object",
    "shirt": "Verdict: contradicted\nWrong part: attribute",
    "sky": "Verdict: cannot tell",
    "tree": "I think it is probably fine.",
}


def _parts(body: dict[str, Any]) -> tuple[bytes, str]:
    """The image bytes and the text of the user message of one request."""
    user = next(m for m in body["messages"] if m["role"] == "user")
    image = next(p for p in user["content"] if p["type"] == "image_url")
    text = next(p for p in user["content"] if p["type"] == "text")["text"]
    mime, data = decode_data_url(image["image_url"]["url"])
    assert mime == "image/jpeg"
    return data, text


def _photo_checker(expected: Path, replies: dict[str, str]) -> Any:
    """A responder that refuses any request whose image is not ``expected`` (shrunk as the judge shrinks it)."""
    want = decode_data_url(image_data_url(expected, max_side=256))[1]

    def respond(body: dict[str, Any]) -> Reply:
        data, text = _parts(body)
        if data != want:
            return completion("Verdict: supported")  # a wrong photo would be answered, and the test fails
        Image.open(io.BytesIO(data)).verify()  # a real JPEG
        for word, reply in replies.items():
            if f'("{word}"' in text or f"Model's answer: {word}" in text:
                return completion(reply)
        return completion("no idea")

    return respond


def _scene() -> SceneGraph:
    return SceneGraph.from_triplets([("man", "wearing", "shirt"), ("shirt", "is", "blue")], ["man", "shirt"], "2374892")


def test_each_claim_goes_with_the_photo_and_the_scene_graph_and_reads_three_ways() -> None:
    claims = [Claim.of((s, "is", "here")) for s in CLAIM_REPLIES if s != "tree"]
    with ScriptedServer(responder=_photo_checker(PHOTO, CLAIM_REPLIES)) as server:
        judge = VLMJudge(model="scripted-vlm", base_url=server.base_url, max_side=256, max_retries=0)
        item = JudgeItem("2374892-0", claims, _scene(), extra={"image_path": str(PHOTO)})
        unread = JudgeItem("2374892-1", [Claim.of(("tree", "is", "here"))], _scene(), extra={"image_path": str(PHOTO)})
        verdicts, tree = asyncio.run(judge.judge_many([item, unread]))
        asyncio.run(judge.aclose())
        requests = server.chat_requests()
    assert not isinstance(verdicts, Failure)
    assert len(requests) == len(claims) + 1  # one call per claim, each with the photo
    texts = [_parts(r.body)[1] for r in requests]
    assert all("(man, wearing, shirt)" in t and "Objects in the image: man, shirt" in t for t in texts)
    by_subject = dict(zip([s for s in CLAIM_REPLIES if s != "tree"], verdicts, strict=True))
    assert by_subject["man"].label == VerdictLabel.SUPPORTED and by_subject["man"].support == Support.SUPPORTED
    cat = by_subject["cat"]
    assert (cat.label, cat.support, cat.error) == (VerdictLabel.HALLUCINATED, Support.CONTRADICTED, ErrorType.OBJECT)
    assert by_subject["shirt"].error == ErrorType.ATTRIBUTE
    sky = by_subject["sky"]
    assert (sky.label, sky.support, sky.error) == (VerdictLabel.HALLUCINATED, Support.UNVERIFIABLE, None)
    # Never guessed: a reply out of form fails its sample (counted against the run, asked again next run).
    assert isinstance(tree, Failure) and "unparseable" in tree.reason and "probably fine" in tree.reason


def test_the_wrong_photo_is_caught_by_the_server_check() -> None:
    # The check itself can fail: sending another image gets every claim "supported", which the test above
    # would reject for the cat.
    with ScriptedServer(responder=_photo_checker(PHOTO, CLAIM_REPLIES)) as server:
        judge = VLMJudge(model="m", base_url=server.base_url, max_side=256, max_retries=0)
        item = JudgeItem("x", [Claim.of(("cat", "is", "here"))], _scene(), extra={"image_path": str(OTHER_PHOTO)})
        (verdicts,) = asyncio.run(judge.judge_many([item]))
        asyncio.run(judge.aclose())
    assert not isinstance(verdicts, Failure) and verdicts[0].label == VerdictLabel.SUPPORTED


def test_a_sample_without_a_readable_photo_fails_naming_it(tmp_path: Path) -> None:
    with ScriptedServer([]) as server:
        judge = VLMJudge(model="m", base_url=server.base_url, max_retries=0)
        claims = [Claim.of(("man", "is", "here"))]
        missing, nameless = asyncio.run(judge.judge_many([
            JudgeItem("a", claims, _scene(), extra={"image_path": str(tmp_path / "gone.jpg")}),
            JudgeItem("b", claims, _scene()),
        ]))  # fmt: skip
        asyncio.run(judge.aclose())
        assert not server.chat_requests()  # nothing sent without the photo
    assert isinstance(missing, Failure) and "gone.jpg" in missing.reason
    assert isinstance(nameless, Failure) and "'b'" in nameless.reason


def test_hqh_answers_are_graded_with_the_photo() -> None:
    scene = SceneGraph(image_id="2374892")
    scene.caption = "A man in a blue shirt."
    replies = {"Red.": "Grade: incorrect", "Blue.": "Grade: correct", "Green.": "Grade: cannot tell", "Pink.": "?"}

    def item(answer: str) -> HQHItem:
        return HQHItem("1", "attribute", "What colour is the shirt?", "Blue.", answer, scene, str(PHOTO))

    with ScriptedServer(responder=_photo_checker(PHOTO, replies)) as server:
        judge = JUDGES.create("vlm", model="m", base_url=server.base_url, max_side=256, max_retries=0)
        assert isinstance(judge, VLMJudge)
        results = asyncio.run(judge.grade_many([item(a) for a in replies]))
        asyncio.run(judge.aclose())
        text = _parts(server.chat_requests()[0].body)[1]
    assert "Reference answer: Blue." in text and "caption: A man in a blue shirt." in text
    red, blue, green, pink = results
    assert getattr(red, "hallucinated", None) is True and getattr(blue, "hallucinated", None) is False
    assert getattr(green, "verdict", None) == "unjudged"  # the photo does not tell: a reading, not a failure
    assert isinstance(pink, Failure) and "unparseable" in pink.reason  # a reply out of form: a failure


def test_reply_parsing_is_strict() -> None:
    assert parse_claim_reply("Verdict: supported\nVerdict: contradicted").label == VerdictLabel.UNJUDGED
    assert parse_claim_reply("verdict: CONTRADICTED").error == ErrorType.RELATION  # no part named: relation
    assert parse_claim_reply("The claim is supported.").label == VerdictLabel.UNJUDGED
    assert parse_answer_reply("Grade: correct").correct is True
    assert parse_answer_reply("correct").correct is None


@pytest.mark.full_data
def test_cli_run_on_tri_he_sends_each_sample_its_own_photo(tmp_path: Path) -> None:
    from halluscope.benchmarks.tri_he import TriHE
    from halluscope.cli.main import app

    samples = list(first_samples(TriHE(data=TRI_HE_JSON, images=TRI_HE_IMAGES), 2).samples())
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(
        json.dumps({"id": s.id, "response": "x", "claims": [["man", "is", "here"], ["cat", "is", "here"]]}) + "\n"
        for s in samples
    ))  # fmt: skip
    photos = {decode_data_url(image_data_url(s.image_path or "", max_side=128))[1]: s.image_id for s in samples}
    seen: list[str | None] = []

    def respond(body: dict[str, Any]) -> Reply:
        data, text = _parts(body)
        seen.append(photos.get(data))
        return completion("Verdict: contradicted\nWrong part: object" if '"cat"' in text else "Verdict: supported")

    out = tmp_path / "run"
    with ScriptedServer(responder=respond) as server:
        result = CliRunner().invoke(app, [
            "run", "-b", "tri-he", "--data", str(TRI_HE_JSON), "--limit", "2", "-r", str(answers),
            "--judge", "vlm", "--judge-model", "scripted-vlm", "--base-url", server.base_url,
            "--judge-opt", "max_side=128", "--out", str(out), "-q", "--no-cache",
        ])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert sorted(s for s in seen if s) == sorted([s.image_id for s in samples for _ in range(2)])  # type: ignore[misc]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["details"]["headline"] == "contradicted_hallu_q"
    assert metrics["metrics"]["contradicted_hallu_q"] == pytest.approx(50.0)


@pytest.mark.full_data
def test_validate_judge_on_the_real_set_sends_the_photos(tmp_path: Path) -> None:
    from halluscope.cli.main import app

    sent: list[bytes] = []

    def respond(body: dict[str, Any]) -> Reply:
        sent.append(_parts(body)[0])
        return completion("Verdict: cannot tell")

    with ScriptedServer(responder=respond) as server:
        result = CliRunner().invoke(app, [
            "validate-judge", "--set", "real", "--data", str(TRI_HE_JSON), "--limit", "2", "--judge", "vlm",
            "--judge-opt", f"base_url={server.base_url}", "--judge-opt", "model=scripted-vlm",
            "--judge-opt", "max_side=64", "--out", str(tmp_path / "real.json"), "-q", "--no-cache",
        ])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert sent and all(Image.open(io.BytesIO(b)).size[0] <= 64 for b in sent)  # every call carried a photo
    report = json.loads((tmp_path / "real.json").read_text())
    assert "vlm" in json.dumps(report)
