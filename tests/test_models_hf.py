"""The ``hf`` backend on tiny, randomly initialised VLMs of three families, loaded from disk like a model.

The models are built from configs in ``tests/tiny_vlms.py`` (no hub access) and loaded through the real
``HFModel.from_spec(path)``. What a user would notice is checked: text comes back for an image question,
the image actually reaches the model, the answer-option probabilities are the model's own (a manual forward
pass agrees), and batching does not change greedy answers.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from halluscope.cache import Cache
from halluscope.models import MODELS, ChatTurn, GenerateRequest, GenerateResult
from halluscope.models.hf import HFModel, HFModelError, answer_token_ids, option_probabilities
from halluscope.stages import Failure
from tests import tiny_vlms

YES_NO = ["yes", "no"]
ABCD = ["A", "B", "C", "D"]


@dataclass
class Tiny:
    family: str
    path: Path
    options: dict[str, Any]  # extra from_spec options (Qwen2-VL's image-only processor)

    def load(self, **options: Any) -> HFModel:
        return HFModel.from_spec(str(self.path), **self.options, **options)


BUILDERS: dict[str, Callable[[Path], Path]] = {
    "llava": tiny_vlms.build_tiny_llava,
    "llava-next": tiny_vlms.build_tiny_llava_next,
    "qwen2-vl": tiny_vlms.build_tiny_qwen2vl,
}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hf")


@pytest.fixture(scope="module")
def images(workdir: Path) -> dict[str, str]:
    return {
        "drawn": str(tiny_vlms.draw_image(workdir / "drawn.png", size=48, seed=1)),
        "other": str(tiny_vlms.draw_image(workdir / "other.png", size=40, seed=2)),
        "photo": str(tiny_vlms.photo_image(workdir / "astronaut.jpg", size=56)),
    }


@pytest.fixture(scope="module")
def built(workdir: Path) -> dict[str, Path]:
    return {family: build(workdir / family) for family, build in BUILDERS.items()}


@pytest.fixture(scope="module", params=list(BUILDERS))
def tiny(request: pytest.FixtureRequest, built: dict[str, Path]) -> Tiny:
    family: str = request.param
    path = built[family]
    options = {"processor": tiny_vlms.qwen2vl_image_processor(path)} if family == "qwen2-vl" else {}
    return Tiny(family, path, options)


@pytest.fixture(scope="module")
def model(tiny: Tiny) -> HFModel:
    return tiny.load(batch_size=4)


def ask(text: str, image: str | None = None, **options: Any) -> GenerateRequest:
    images = [image] if image else []
    return GenerateRequest(messages=[ChatTurn(text=text, images=images)], **{"max_tokens": 6, **options})


def manual_last_logits(model: HFModel, request: GenerateRequest) -> Any:
    """The next-token logits after the prompt, from a plain forward pass built without the backend."""
    import torch
    from PIL import Image

    turn = request.messages[0]
    content: list[dict[str, Any]] = [{"type": "image"} for _ in turn.images]
    content.append({"type": "text", "text": turn.text})
    prompt = model.processor.apply_chat_template(
        [{"role": "user", "content": content}], add_generation_prompt=True, tokenize=False
    )
    pictures = [Image.open(path).convert("RGB") for path in turn.images]
    inputs = model.processor(text=[prompt], images=pictures or None, return_tensors="pt")
    with torch.no_grad():
        return model.model(**inputs).logits[0, -1].float()


async def test_answers_an_image_question(model: HFModel, images: dict[str, str]) -> None:
    request = ask(
        "Is the man riding a horse? Please answer yes or no.", images["photo"], answer_options=YES_NO
    )
    result = await model.generate(request)
    assert isinstance(result, GenerateResult)
    assert isinstance(result.text, str)
    assert 1 <= result.usage["completion_tokens"] <= 6
    assert result.metadata["finish_reason"] in {"stop", "length"}
    # the prompt holds the image's placeholder tokens besides the question's words
    question_only = len(model.tokenizer.encode(request.messages[0].text, add_special_tokens=False))
    assert result.usage["prompt_tokens"] > question_only + 4
    assert result.option_probs is not None and set(result.option_probs) == set(YES_NO)
    assert all(0.0 < p < 1.0 for p in result.option_probs.values())


async def test_the_image_reaches_the_model(model: HFModel, images: dict[str, str]) -> None:
    question = "Is the cat on the mat? Please answer yes or no."
    first = await model.generate(ask(question, images["drawn"], answer_options=YES_NO))
    second = await model.generate(ask(question, images["photo"], answer_options=YES_NO))
    assert first.option_probs is not None and second.option_probs is not None
    assert first.option_probs["yes"] != pytest.approx(second.option_probs["yes"], rel=1e-4)


@pytest.mark.parametrize("options", [YES_NO, ABCD])
async def test_option_probabilities_match_a_manual_forward_pass(
    model: HFModel, images: dict[str, str], options: list[str]
) -> None:
    request = ask(
        "What is the relation? A. on B. under C. near D. behind", images["photo"], answer_options=options
    )
    result = await model.generate(request)
    import torch

    probs = torch.softmax(manual_last_logits(model, request), dim=-1)
    ids = answer_token_ids(model.tokenizer, options)
    expected = {option: float(probs[ids[option]].sum()) for option in options}
    assert result.option_probs is not None
    assert result.option_probs == pytest.approx(expected, rel=1e-4, abs=1e-9)


async def test_batched_greedy_answers_equal_one_at_a_time(model: HFModel, images: dict[str, str]) -> None:
    requests = [
        ask("Is the cat on the mat? Please answer yes or no.", images["drawn"], answer_options=YES_NO),
        ask("Describe the image in one sentence.", images["photo"]),
        ask("Is there a red bus?", images["other"], answer_options=YES_NO),
        ask(
            "What is the relation between the dog and the ball? A. on B. under C. behind D. near",
            images["photo"],
        ),
        ask("A question without any image, about a table.", None),
    ]
    single = HFModel(
        model.name, model.model, model.processor, device=model.device, dtype=model.dtype, batch_size=1
    )
    batched = await model.generate_many(requests)
    alone = await single.generate_many(requests)
    assert [r.metadata["batch_size"] for r in batched if isinstance(r, GenerateResult)] == [4, 4, 4, 4, 1]
    for one, other in zip(batched, alone, strict=True):
        assert isinstance(one, GenerateResult) and isinstance(other, GenerateResult)
        assert one.text == other.text
        assert one.usage == other.usage
        if one.option_probs is not None:
            assert one.option_probs == pytest.approx(other.option_probs, rel=1e-3, abs=1e-9)


async def test_top_logprobs_describe_each_greedy_step(model: HFModel, images: dict[str, str]) -> None:
    result = await model.generate(ask("Describe the image in one sentence.", images["drawn"], top_logprobs=3))
    assert result.logprobs is not None
    assert len(result.logprobs) == result.usage["completion_tokens"]
    for step in result.logprobs:
        assert step.logprob <= 0.0
        assert 1 <= len(step.top) <= 3
        # greedy picks the most likely token, so the chosen token's log-prob is the best alternative's
        assert step.logprob == pytest.approx(max(step.top.values()), abs=1e-5)
        assert list(step.top.values()) == sorted(step.top.values(), reverse=True)


async def test_layer_summary_and_hidden_states_agree_with_the_output(
    tiny: Tiny, images: dict[str, str]
) -> None:
    model = tiny.load(hidden_states=True)
    request = ask("Is the cat on the mat? Please answer yes or no.", images["drawn"], answer_options=YES_NO)
    result = await model.generate(request)
    layers, _, _ = model.text_stack()
    summary = result.metadata["layers"]
    assert [entry["layer"] for entry in summary] == list(range(len(layers) + 1))
    assert result.option_probs is not None
    # the last layer seen through the LM head is the model's own output
    assert summary[-1]["option_probs"] == pytest.approx(result.option_probs, rel=1e-4, abs=1e-9)
    assert summary[0]["option_probs"] != pytest.approx(result.option_probs, rel=1e-3)

    vectors = model.hidden_states(request)
    assert tuple(vectors.shape) == (len(layers) + 1, model.model.config.get_text_config().hidden_size)
    ids = list(model.option_token_ids(YES_NO).values())
    final = option_probabilities(model.logit_lens(vectors[-1], apply_norm=False), ids).tolist()
    assert final == pytest.approx([result.option_probs[o] for o in YES_NO], rel=1e-4, abs=1e-9)
    assert vectors[1].norm().item() == pytest.approx(summary[1]["norm"], rel=1e-4)


async def test_answers_are_cached_by_content(tiny: Tiny, images: dict[str, str], tmp_path: Path) -> None:
    model = tiny.load(cache=Cache(None))
    request = ask("Is the cat on the mat? Please answer yes or no.", images["drawn"], answer_options=YES_NO)
    first = await model.generate(request)
    # the same image under another path is the same question
    copy = tmp_path / "copy.png"
    copy.write_bytes(Path(images["drawn"]).read_bytes())
    again = await model.generate(ask(request.messages[0].text, str(copy), answer_options=YES_NO))
    assert not first.cached and again.cached
    assert again.text == first.text and again.option_probs == first.option_probs
    other = await model.generate(ask(request.messages[0].text, images["photo"], answer_options=YES_NO))
    assert not other.cached
    unseeded = ask("Describe the image.", images["drawn"], temperature=1.0)
    await model.generate(unseeded)
    assert not (await model.generate(unseeded)).cached


async def test_seeded_sampling_repeats(model: HFModel, images: dict[str, str]) -> None:
    request = ask(
        "Describe the image in one sentence.", images["photo"], temperature=1.0, seed=7, max_tokens=8
    )
    first = await model.generate(request)
    second = await model.generate(request)
    assert first.text == second.text


async def test_a_bad_image_fails_only_its_item(
    model: HFModel, images: dict[str, str], tmp_path: Path
) -> None:
    broken = tmp_path / "broken.jpg"
    broken.write_text("not an image")
    requests = [
        ask("Is the cat on the mat?", images["drawn"], sample_id="good-1"),
        ask("Is the cat on the mat?", str(tmp_path / "missing.jpg"), sample_id="missing-1"),
        ask("Is the cat on the mat?", str(broken), sample_id="broken-1"),
        ask("Is the cat on the mat?", images["photo"], sample_id="good-2"),
    ]
    results = await model.generate_many(requests)
    assert isinstance(results[0], GenerateResult) and isinstance(results[3], GenerateResult)
    assert isinstance(results[1], Failure) and "missing-1" in results[1].reason
    assert "missing.jpg" in results[1].reason
    assert isinstance(results[2], Failure) and "broken-1" in results[2].reason


async def test_registry_creates_the_backend_and_rejects_unknown_options(tiny: Tiny) -> None:
    model = MODELS.create("hf", spec=str(tiny.path), batch_size=2, dtype="float32", **tiny.options)
    assert isinstance(model, HFModel) and model.batch_size == 2
    assert model.identity()["model"] == str(tiny.path) and model.identity()["dtype"] == "float32"
    with pytest.raises(TypeError, match="colour"):
        MODELS.create("hf", spec=str(tiny.path), colour="red")
    with pytest.raises(HFModelError, match="unknown dtype 'float8'"):
        tiny.load(dtype="float8")
    with pytest.raises(HFModelError, match="batch_size"):
        tiny.load(batch_size=0)


def test_a_model_spec_string_loads_the_backend(built: dict[str, Path]) -> None:
    from halluscope.models.spec import ModelSpecError, create_model

    cache = Cache(None)
    model = create_model(f"hf/{built['llava']}?batch_size=2&dtype=float32", cache=cache)
    assert isinstance(model, HFModel) and model.batch_size == 2 and model.cache is cache
    with pytest.raises(ModelSpecError, match=r"colour.*it takes: batch_size"):
        create_model(f"hf/{built['llava']}?colour=red")
    with pytest.raises(HFModelError, match="cannot load the processor of hf/"):
        create_model(f"hf/{built['llava'].parent / 'nothing-here'}")


def test_answer_tokens_come_from_the_tokenizer(model: HFModel) -> None:
    tokenizer = model.tokenizer
    ids = answer_token_ids(tokenizer, YES_NO)
    # the whole-word tokens with and without a leading space are found, whatever their ids are
    vocab = tokenizer.get_vocab()
    assert vocab["yes"] in ids["yes"] and vocab["Ġyes"] in ids["yes"] and vocab["ĠYes"] in ids["yes"]
    assert vocab["Ġno"] in ids["no"] and vocab["ĠNo"] in ids["no"]
    for option, tokens in ids.items():
        for token in tokens:
            assert option.startswith(tokenizer.decode([token]).strip().lower())
    letters = answer_token_ids(tokenizer, ABCD)
    assert all({vocab[letter], vocab["Ġ" + letter]} <= set(letters[letter]) for letter in ABCD)
    with pytest.raises(HFModelError, match="start with the same token"):
        answer_token_ids(tokenizer, ["yes", "Yes"])
