"""The eyes-closed mitigation and its general-description ablation: describe with the image, answer without
it, both steps logged from the model's result through responses.jsonl into the run's samples.jsonl."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from halluscope.benchmarks import BENCHMARKS
from halluscope.cache import Cache
from halluscope.mitigation.eyes_closed import EyesClosedModel
from halluscope.models.spec import create_model
from halluscope.runs.respond import RESPONSES_FILE, build_request, collect_responses
from halluscope.runs.selection import first_samples
from tests.layouts import tri_he_layout
from tests.scripted_server import Reply, ScriptedServer, completion


def _two_step_server(seen: list[Any]) -> ScriptedServer:
    def responder(body: Any) -> Reply:
        seen.append(body)
        content = body["messages"][-1]["content"]
        if isinstance(content, list):  # the describe step carries the image
            return completion("A man sits at a desk with a laptop and a lamp.")
        return completion("The lamp is switched on.")

    return ScriptedServer(responder=responder)


async def test_describe_with_image_then_answer_without() -> None:
    bench = BENCHMARKS.create("tri-he", data=tri_he_layout())
    chosen = first_samples(bench, 1)
    sample = next(chosen.samples())
    seen: list[Any] = []
    with _two_step_server(seen) as server:
        spec = f"eyes-closed[describe_max_tokens=64]:openai/vlm?base_url={server.base_url}&max_side=128"
        model = create_model(spec, cache=Cache(None))
        result = await model.generate(build_request(bench, sample, max_tokens=32))

    assert len(seen) == 2
    describe, answer = seen
    parts = describe["messages"][0]["content"]
    assert [p["type"] for p in parts] == ["image_url", "text"]
    assert sample.prompt in parts[1]["text"] and "certain" in parts[1]["text"]
    assert describe["max_tokens"] == 64
    assert isinstance(answer["messages"][0]["content"], str)  # image withheld
    assert "A man sits at a desk with a laptop and a lamp." in answer["messages"][0]["content"]
    assert sample.prompt in answer["messages"][0]["content"]
    assert answer["max_tokens"] == 32

    assert result.text == "The lamp is switched on."
    transcript = result.metadata["mitigation"]
    assert transcript["name"] == "eyes-closed"
    assert [s["step"] for s in transcript["steps"]] == ["describe", "answer"]
    assert transcript["steps"][0]["images"] == [sample.image_path]
    assert transcript["steps"][1]["images"] == []
    assert transcript["steps"][0]["response"].startswith("A man sits")
    assert result.usage["completion_tokens"] == 10  # both steps counted


async def test_general_description_asks_for_a_plain_description() -> None:
    bench = BENCHMARKS.create("tri-he", data=tri_he_layout())
    chosen = first_samples(bench, 1)
    seen: list[Any] = []
    with _two_step_server(seen) as server:
        model = create_model(f"general-description:openai/vlm?base_url={server.base_url}", cache=Cache(None))
        assert isinstance(model, EyesClosedModel) and model.mode == "general"
        result = await model.generate(build_request(bench, next(chosen.samples())))
    describe_text = seen[0]["messages"][0]["content"][1]["text"]
    assert "Describe the image." in describe_text and "certain" not in describe_text
    assert result.metadata["mitigation"]["name"] == "general-description"


async def test_mitigation_flag_and_cache(tmp_path: Path) -> None:
    bench = BENCHMARKS.create("tri-he", data=tri_he_layout())
    chosen = first_samples(bench, 2)
    cache = Cache(tmp_path / "cache.sqlite")
    seen: list[Any] = []
    with _two_step_server(seen) as server:
        from halluscope.models.spec import spec_with_mitigations

        spec = spec_with_mitigations(f"openai/vlm?base_url={server.base_url}", ["eyes-closed"])
        await collect_responses(
            bench, create_model(spec, cache=cache), tmp_path / "a", show_progress=False, selection=chosen
        )
        assert len(seen) == 4
        again = await collect_responses(
            bench, create_model(spec, cache=cache), tmp_path / "b", show_progress=False, selection=chosen
        )
        assert len(seen) == 4
    assert all(r.metadata["cached"] for r in again.values())
    rows = [json.loads(x) for x in (tmp_path / "b" / RESPONSES_FILE).read_text().splitlines()]
    assert all(len(r["metadata"]["mitigation"]["steps"]) == 2 for r in rows)


@pytest.mark.slow
async def test_eyes_closed_end_to_end_on_llama_server(llama_server: str, tmp_path: Path) -> None:
    """A text-only stand-in model behind llama.cpp: the images are not sent (text_only), both steps run, and
    the transcript reaches the run's samples.jsonl."""
    from halluscope.benchmarks import ScoringContext
    from halluscope.claims import EXTRACTORS
    from halluscope.judges import JUDGES
    from halluscope.runs.runner import run_benchmark_async

    bench = BENCHMARKS.create("tri-he", data=tri_he_layout())
    chosen = first_samples(bench, 2)
    cache = Cache(tmp_path / "cache.sqlite")
    model = create_model(
        f"eyes-closed[describe_max_tokens=40]:openai/qwen?base_url={llama_server}&text_only=true", cache=cache
    )
    answers = await collect_responses(bench, model, tmp_path, max_tokens=32, show_progress=False, selection=chosen)
    await model.aclose()
    assert len(answers) == 2
    for response in answers.values():
        steps = response.metadata["mitigation"]["steps"]
        assert steps[0]["response"].strip() and steps[1]["response"].strip()
        assert response.response == steps[1]["response"]
        assert steps[0]["images_not_sent"] == steps[0]["images"]  # the text model never saw the image

    ctx = ScoringContext(
        cache=cache,
        extractor=EXTRACTORS.create("rules", cache=cache),
        judge=JUDGES.create("similarity", cache=cache),
    )
    report = await run_benchmark_async(bench, answers, ctx, tmp_path / "run", selection=chosen)
    records = [json.loads(x) for x in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert len(records) == 2
    for record in records:
        transcript = record["metadata"]["response_metadata"]["mitigation"]
        assert [s["step"] for s in transcript["steps"]] == ["describe", "answer"]
        assert transcript["steps"][0]["images"] and transcript["images_withheld"]
    assert report.counts
