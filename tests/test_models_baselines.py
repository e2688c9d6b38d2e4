"""The blind and scene-oracle baselines: what they send (never an image; the scene graph for the oracle), and
how they behave on real Tri-HE samples through a scripted server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from halluscope.benchmarks import BENCHMARKS
from halluscope.cache import Cache
from halluscope.models.base import ChatTurn, GenerateRequest
from halluscope.models.baselines import SceneMissingError
from halluscope.models.openai import OpenAIModel
from halluscope.models.spec import create_model
from halluscope.runs.respond import build_request, collect_responses
from halluscope.runs.selection import first_samples
from tests.layouts import tri_he_layout
from tests.paths import TRI_HE_JSON
from tests.scripted_server import Reply, ScriptedServer, completion


def _echo(seen: list[Any]) -> Any:
    def responder(body: Any) -> Reply:
        seen.append(body)
        return completion("There is a man at a desk.")

    return responder


async def test_blind_sends_only_text_and_the_question() -> None:
    bench = BENCHMARKS.create("tri-he", data=tri_he_layout())
    sample = next(first_samples(bench, 1).samples())
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


@pytest.mark.full_data
async def test_scene_oracle_sends_the_scene_graph_as_text() -> None:
    bench = BENCHMARKS.create("tri-he", data=TRI_HE_JSON)
    sample = next(first_samples(bench, 1).samples())
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
    bench = BENCHMARKS.create("tri-he", data=tri_he_layout())
    chosen = first_samples(bench, 3)
    cache = Cache(tmp_path / "cache.sqlite")
    seen: list[Any] = []
    with ScriptedServer(responder=_echo(seen)) as server:
        for name in ("blind", "scene-oracle"):
            model = create_model(f"{name}/openai/llm?base_url={server.base_url}", cache=cache)
            await collect_responses(bench, model, tmp_path / name, show_progress=False, selection=chosen)
        assert len(seen) == 6  # different prompts: nothing shared between the two baselines
        again = create_model(f"scene-oracle/openai/llm?base_url={server.base_url}", cache=cache)
        answers = await collect_responses(
            bench, again, tmp_path / "oracle-again", show_progress=False, selection=chosen
        )
    assert len(seen) == 6
    assert all(r.metadata["cached"] for r in answers.values())


@pytest.mark.slow
async def test_scene_oracle_hallucinates_less_than_blind_on_llama_server(
    llama_server: str, tmp_path: Path
) -> None:
    """The calibration the baselines exist for, on the four questions of Tri-HE's first image, judged with
    the offline pipeline (bench/blind_vs_oracle.py runs the same on 30 questions)."""
    from halluscope.benchmarks import ScoringContext
    from halluscope.claims import EXTRACTORS
    from halluscope.judges import JUDGES
    from halluscope.runs.runner import run_benchmark_async

    bench = BENCHMARKS.create("tri-he", data=tri_he_layout())
    chosen = first_samples(bench, 4)
    cache = Cache(tmp_path / "cache.sqlite")
    ctx = ScoringContext(
        cache=cache,
        extractor=EXTRACTORS.create("rules", cache=cache),
        judge=JUDGES.create("similarity", cache=cache),
    )
    rates = {}
    for name in ("blind", "scene-oracle"):
        model = create_model(f"{name}/openai/qwen?base_url={llama_server}", cache=cache)
        answers = await collect_responses(
            bench, model, tmp_path / name, concurrency=1, max_tokens=64, show_progress=False, selection=chosen
        )
        await model.aclose()
        assert len(answers) == 4 and all(r.response.strip() for r in answers.values())
        # The same respond again, into another directory: every answer comes from the cache.
        again = create_model(f"{name}/openai/qwen?base_url={llama_server}", cache=cache)
        repeat = await collect_responses(
            bench, again, tmp_path / f"{name}-again", concurrency=1, max_tokens=64, show_progress=False,
            selection=chosen,
        )
        inner = getattr(again, "inner", None)
        assert isinstance(inner, OpenAIModel) and inner.client.requests_sent == 0
        assert {i: r.response for i, r in repeat.items()} == {i: r.response for i, r in answers.items()}
        report = await run_benchmark_async(bench, answers, ctx, tmp_path / name, selection=chosen)
        assert report.counts["claims"] > 0
        rates[name] = report.metrics["hallu_q"]
    assert rates["scene-oracle"] is not None and rates["blind"] is not None
    assert rates["scene-oracle"] < rates["blind"], rates
