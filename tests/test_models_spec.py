"""Model specs: the ``--model`` grammar, wrappers, options, and building the model they name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from halluscope.cache import Cache
from halluscope.mitigation.eyes_closed import EyesClosedModel
from halluscope.models.baselines import BlindModel, SceneOracleModel
from halluscope.models.openai import OpenAIModel
from halluscope.models.replay import ReplayModel
from halluscope.models.spec import (
    ModelSpecError,
    create_model,
    parse_model_spec,
    parse_value,
    spec_with_mitigations,
)


def test_plain_spec_with_options_and_types() -> None:
    spec = parse_model_spec(
        "openai/gpt-4o?base_url=http://127.0.0.1:8080/v1&max_side=512&text_only=true&t=0.5"
    )
    assert (spec.provider, spec.name, spec.wrappers) == ("openai", "gpt-4o", [])
    assert spec.options == {
        "base_url": "http://127.0.0.1:8080/v1",
        "max_side": 512,
        "text_only": True,
        "t": 0.5,
    }


def test_names_keep_slashes_and_colons() -> None:
    assert parse_model_spec("hf/llava-hf/llava-1.5-7b-hf").name == "llava-hf/llava-1.5-7b-hf"
    ollama = parse_model_spec("openai/qwen2.5vl:7b?base_url=http://localhost:11434/v1")
    assert (ollama.provider, ollama.name, ollama.wrappers) == ("openai", "qwen2.5vl:7b", [])
    inner = parse_model_spec("blind/openai/qwen?base_url=http://x/v1")
    assert (inner.provider, inner.name) == ("blind", "openai/qwen")


def test_wrappers_with_options_and_canonical_form() -> None:
    spec = parse_model_spec("general-description[describe_max_tokens=64]:eyes-closed:openai/gpt-4o")
    assert [w.name for w in spec.wrappers] == ["general-description", "eyes-closed"]
    assert spec.wrappers[0].options == {"describe_max_tokens": 64}
    assert str(spec) == "general-description[describe_max_tokens=64]:eyes-closed:openai/gpt-4o"
    # --mitigation puts the wrapper outermost; same result as writing the prefix
    wrapped = spec_with_mitigations("openai/gpt-4o", ["eyes-closed"])
    assert wrapped == parse_model_spec("eyes-closed:openai/gpt-4o")


def test_secret_options_are_redacted_when_rendered() -> None:
    spec = parse_model_spec("openai/x?api_key=sk-123&api_key_env=MY_KEY")
    assert "sk-123" not in str(spec)
    assert "api_key_env=MY_KEY" in str(spec)
    assert "sk-123" in spec.render(redact=False)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("gpt-4o", "needs a provider and a name"),
        ("eyes-shut:openai/gpt-4o", "unknown mitigation 'eyes-shut'"),
        ("openai/x?max_side", "must be written key=value"),
        ("openai/x?a=1&a=2", "given twice"),
        ("", "empty model spec"),
    ],
)
def test_bad_specs_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ModelSpecError, match=message):
        parse_model_spec(text)


def test_parse_value() -> None:
    assert parse_value("false") is False
    assert parse_value("12") == 12
    assert parse_value("1e-3") == pytest.approx(0.001)
    assert parse_value("llava-1.5") == "llava-1.5"


def test_create_model_builds_wrappers_innermost_first(tmp_path: Path) -> None:
    cache = Cache(None)
    spec = "eyes-closed[describe_max_tokens=32]:openai/qwen?base_url=http://127.0.0.1:9/v1"
    model = create_model(spec, cache=cache)
    assert isinstance(model, EyesClosedModel)
    assert model.describe_max_tokens == 32
    assert isinstance(model.inner, OpenAIModel)
    assert model.inner.client.base_url == "http://127.0.0.1:9/v1"
    assert model.inner.client.cache is cache

    blind = create_model("blind/openai/qwen", cache=cache, base_url="http://127.0.0.1:9/v1", max_side=256)
    assert isinstance(blind, BlindModel)
    assert isinstance(blind.inner, OpenAIModel) and blind.inner.max_side == 256
    oracle = create_model("scene-oracle/openai/qwen?base_url=http://127.0.0.1:9/v1", cache=cache)
    assert isinstance(oracle, SceneOracleModel)

    answers = tmp_path / "a.jsonl"
    answers.write_text(json.dumps({"id": "x", "response": "y"}) + "\n")
    assert isinstance(create_model(f"replay/{answers}", cache=cache), ReplayModel)


def test_create_model_rejects_unknown_and_conflicting_options() -> None:
    with pytest.raises(ModelSpecError, match=r"does not take option.*max_sides"):
        create_model("openai/x?max_sides=3", cache=Cache(None))
    with pytest.raises(ModelSpecError, match=r"does not take option.*foo"):
        create_model("eyes-closed[foo=1]:openai/x", cache=Cache(None))
    with pytest.raises(ModelSpecError, match="set both in the model spec"):
        create_model("openai/x?max_side=256", cache=Cache(None), max_side=512)
    with pytest.raises(ModelSpecError, match="unknown model provider 'gemini'"):
        create_model("gemini/pro", cache=Cache(None))
    # the inner model of a baseline validates its own options
    with pytest.raises(ModelSpecError, match=r"does not take option.*colour"):
        create_model("blind/openai/x?colour=red", cache=Cache(None))
