"""The openai backend against a scripted OpenAI-compatible server: the payload it sends (images as resized
base64 data URLs), what it makes of the reply (text, log-probabilities, option probabilities), and caching."""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from halluscope.cache import Cache
from halluscope.llm import LLMBadRequestError
from halluscope.models.base import ChatTurn, GenerateRequest
from halluscope.models.images import ImageError, decode_data_url, image_data_url, resize_to_max_side
from halluscope.models.openai import OpenAIModel, option_probabilities
from halluscope.models.spec import create_model
from tests.paths import TRI_HE_IMAGES_EXCERPT
from tests.scripted_server import Reply, ScriptedServer, completion, error

IMAGE = TRI_HE_IMAGES_EXCERPT / "2374892.jpg"  # a Visual Genome photo (CC BY 4.0), committed


def test_resize_keeps_aspect_and_never_enlarges() -> None:
    original = Image.open(IMAGE)
    small = resize_to_max_side(original, 200)
    assert max(small.size) == 200
    assert small.size[0] / small.size[1] == pytest.approx(original.size[0] / original.size[1], rel=0.02)
    assert resize_to_max_side(small, 4000).size == small.size


def test_data_url_round_trip_and_errors(tmp_path: Path) -> None:
    mime, data = decode_data_url(image_data_url(IMAGE, max_side=128))
    assert mime == "image/jpeg"
    assert max(Image.open(io.BytesIO(data)).size) == 128
    png = decode_data_url(image_data_url(IMAGE, max_side=64, image_format="png"))
    assert png[0] == "image/png"
    with pytest.raises(ImageError, match=r"image not found: .*nope\.jpg"):
        image_data_url(tmp_path / "nope.jpg")
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"not an image")
    with pytest.raises(ImageError, match=r"cannot decode image .*broken\.jpg"):
        image_data_url(broken)


def _request(
    text: str = "What is on the desk?", images: list[str] | None = None, **kw: Any
) -> GenerateRequest:
    return GenerateRequest(messages=[ChatTurn(text=text, images=images or [])], sample_id="s1", **kw)


async def test_images_sent_as_resized_base64_data_urls() -> None:
    seen: list[Any] = []

    def responder(body: Any) -> Reply:
        seen.append(body)
        return completion("A laptop and a pen.")

    with ScriptedServer(responder=responder) as server:
        model = create_model(f"openai/vlm?base_url={server.base_url}&max_side=320", cache=Cache(None))
        result = await model.generate(_request(images=[str(IMAGE)], max_tokens=40, seed=7))
        await model.aclose()

    assert result.text == "A laptop and a pen."
    assert result.usage["completion_tokens"] == 5
    body = seen[0]
    assert body["model"] == "vlm" and body["max_tokens"] == 40 and body["seed"] == 7
    assert body["temperature"] == 0.0
    content = body["messages"][0]["content"]
    assert [part["type"] for part in content] == ["image_url", "text"]
    assert content[1]["text"] == "What is on the desk?"
    mime, data = decode_data_url(content[0]["image_url"]["url"])
    assert mime == "image/jpeg"
    sent = Image.open(io.BytesIO(data))
    original = Image.open(IMAGE)
    assert max(sent.size) == 320 < max(original.size)
    assert "logprobs" not in body


async def test_text_only_drops_images_and_says_so() -> None:
    with ScriptedServer([completion("ok")]) as server:
        model = create_model(f"openai/llm?base_url={server.base_url}&text_only=true", cache=Cache(None))
        result = await model.generate(_request(images=[str(IMAGE)]))
        body = server.chat_requests()[0].body
    assert body["messages"][0]["content"] == "What is on the desk?"
    assert result.metadata["images_not_sent"] == [str(IMAGE)]


async def test_missing_image_fails_before_any_request(tmp_path: Path) -> None:
    with ScriptedServer([completion("never")]) as server:
        model = create_model(f"openai/vlm?base_url={server.base_url}", cache=Cache(None))
        with pytest.raises(ImageError, match=r"missing\.jpg"):
            await model.generate(_request(images=[str(tmp_path / "missing.jpg")]))
        assert server.chat_requests() == []


async def test_logprobs_and_option_probabilities() -> None:
    steps = [
        {"token": "Yes", "logprob": math.log(0.7), "top_logprobs": [
            {"token": "Yes", "logprob": math.log(0.7)}, {"token": "No", "logprob": math.log(0.2)},
            {"token": " yes", "logprob": math.log(0.05)}]},
        {"token": ".", "logprob": -0.01, "top_logprobs": [{"token": ".", "logprob": -0.01}]},
    ]  # fmt: skip
    with ScriptedServer([completion("Yes.", logprobs=steps), completion("Yes.", logprobs=steps)]) as server:
        model = create_model(f"openai/vlm?base_url={server.base_url}", cache=Cache(None))
        with_steps = await model.generate(_request(top_logprobs=3, answer_options=["yes", "no"]))
        only_options = await model.generate(_request("Again?", answer_options=["yes", "no"]))
        bodies = [r.body for r in server.chat_requests()]
    assert bodies[0]["logprobs"] is True and bodies[0]["top_logprobs"] == 3
    assert bodies[1]["top_logprobs"] == 5  # asked for implicitly to read the options' probabilities
    assert with_steps.logprobs is not None and [s.token for s in with_steps.logprobs] == ["Yes", "."]
    assert with_steps.option_probs == {"yes": pytest.approx(0.75), "no": pytest.approx(0.2)}
    assert only_options.logprobs is None  # not asked for, so not kept
    assert only_options.option_probs == with_steps.option_probs


def test_option_probabilities_none_when_no_option_appears() -> None:
    from halluscope.models.base import TokenStep

    steps = [TokenStep(token="Maybe", logprob=-0.1, top={"Perhaps": -2.0})]
    assert option_probabilities(steps, ["yes", "no"]) is None
    assert option_probabilities(None, ["A", "B"]) is None


async def test_cache_second_identical_request_sends_nothing(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache.sqlite")
    with ScriptedServer([completion("A lamp.")]) as server:
        first = create_model(f"openai/vlm?base_url={server.base_url}", cache=cache)
        a = await first.generate(_request(images=[str(IMAGE)]))
        second = create_model(f"openai/vlm?base_url={server.base_url}", cache=cache)
        b = await second.generate(_request(images=[str(IMAGE)]))
        assert isinstance(second, OpenAIModel)
        assert second.client.requests_sent == 0
        # a different image size is a different request
        third = create_model(f"openai/vlm?base_url={server.base_url}&max_side=100&max_retries=0", cache=cache)
        with pytest.raises(Exception, match="no reply left"):
            await third.generate(_request(images=[str(IMAGE)]))
    assert (a.cached, b.cached, b.text) == (False, True, "A lamp.")
    assert len(server.chat_requests()) == 2


def test_api_key_env_must_exist(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HALLUSCOPE_TEST_KEY", raising=False)
    with pytest.raises(ValueError, match="HALLUSCOPE_TEST_KEY"):
        create_model("openai/x?api_key_env=HALLUSCOPE_TEST_KEY", cache=Cache(None))


async def test_api_key_from_named_env_is_sent_but_not_in_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HALLUSCOPE_TEST_KEY", "sk-secret-1")
    with ScriptedServer([completion("ok")]) as server:
        spec = f"openai/x?base_url={server.base_url}&api_key_env=HALLUSCOPE_TEST_KEY"
        model = create_model(spec, cache=Cache(None))
        await model.generate(_request())
        headers = server.chat_requests()[0].headers
    assert headers.get("Authorization") == "Bearer sk-secret-1"
    assert "sk-secret-1" not in str(model.identity())


async def test_server_refusing_logprobs_still_answers_option_questions() -> None:
    def responder(body: Any) -> Reply:
        if body.get("logprobs"):
            return error(400, "logprobs are not supported")
        return completion("Yes.")

    with ScriptedServer(responder=responder) as server:
        model = create_model(f"openai/vlm?base_url={server.base_url}", cache=Cache(None))
        first = await model.generate(_request(answer_options=["yes", "no"]))
        second = await model.generate(_request("Again?", answer_options=["yes", "no"]))
        with pytest.raises(LLMBadRequestError):  # asked for explicitly: the refusal is the user's to see
            await model.generate(_request("Explicit?", top_logprobs=2))
        sent = [bool(r.body.get("logprobs")) for r in server.chat_requests()]
    assert (first.text, first.option_probs, second.text) == ("Yes.", None, "Yes.")
    assert sent == [True, False, False, True]  # learnt after the first refusal
