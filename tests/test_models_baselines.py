"""The blind and scene-oracle baselines: what they send (never an image; the scene graph for the oracle), and
how they behave on real Tri-HE samples through a scripted server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from halluscope.benchmarks import BENCHMARKS
from halluscope.models.base import ChatTurn, GenerateRequest
from halluscope.models.baselines import SceneMissingError
from halluscope.models.spec import create_model
from halluscope.runs.cache import Cache
from halluscope.runs.respond import build_request, collect_responses
from tests.paths import TRI_HE_JSON
from tests.scripted_server import Reply, ScriptedServer, completion


def _echo(seen: list[Any]) -> Any:
    def responder(body: Any) -> Reply:
        seen.append(body)
        return completion("There is a man at a desk.")

    return responder


async def test_blind_sends_only_text_and_the_question() -> None:
    bench = BENCHMARKS.create("tri-he", data=TRI_HE_JSON, limit=1)
    sample = next(bench.samples())
    seen: list[Any] = []
    with ScriptedServer(responder=_echo(seen)) as server:
        model = create_model(f"blind/openai/llm?base_url={server.base_url}", cache=Cache(None))
        result = await model.generate(build_request(bench, sample, max_tokens=30))
    content = seen[0]["messages"][0]["content"]
    assert isinstance(content, str)  # no image parts at all
    assert sample.prompt in content
    assert "laptop" not in content.lower()  # nothing of the scene leaks into the blind prompt
    assert seen[0]["max_tokens"] == 30
    assert result.metadata["baseline"] == "blind"


async def test_scene_oracle_sends_the_scene_graph_as_text() -> None:
    bench = BENCHMARKS.create("tri-he", data=TRI_HE_JSON, limit=1)
    sample = next(bench.samples())
    scene = bench.scene(sample)
    assert scene is not None
    seen: list[Any] = []
    with ScriptedServer(responder=_echo(seen)) as server:
        model = create_model(f"scene-oracle/openai/llm?base_url={server.base_url}", cache=Cache(None))
        await model.generate(build_request(bench, sample))
    content = seen[0]["messages"][0]["content"]
    assert isinstance(content, str)
    assert sample.prompt in content
    for line in scene.describe().splitlines():
        assert line in content
    assert "The laptop is black." in content


async def test_scene_oracle_without_scene_is_a_per_sample_failure(tmp_path: Path) -> None:
    with ScriptedServer([completion("unused")]) as server:
        model = create_model(f"scene-oracle/openai/llm?base_url={server.base_url}", cache=Cache(None))
        request = GenerateRequest(messages=[ChatTurn(text="What is here?")], sample_id="x-0")
        with pytest.raises(SceneMissingError, match="sample 'x-0' has none"):
            await model.generate(request)
        assert server.chat_requests() == []


async def test_baselines_share_the_cache_per_prompt(tmp_path: Path) -> None:
    bench = BENCHMARKS.create("tri-he", data=TRI_HE_JSON, limit=3)
    cache = Cache(tmp_path / "cache.sqlite")
    seen: list[Any] = []
    with ScriptedServer(responder=_echo(seen)) as server:
        for name in ("blind", "scene-oracle"):
            model = create_model(f"{name}/openai/llm?base_url={server.base_url}", cache=cache)
            await collect_responses(bench, model, tmp_path / name, show_progress=False)
        assert len(seen) == 6  # different prompts: nothing shared between the two baselines
        again = create_model(f"scene-oracle/openai/llm?base_url={server.base_url}", cache=cache)
        answers = await collect_responses(bench, again, tmp_path / "oracle-again", show_progress=False)
    assert len(seen) == 6
    assert all(r.metadata["cached"] for r in answers.values())
