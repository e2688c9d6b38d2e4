"""PROVE's pluggable parts on real components: the DSG tuple extractor on the packaged Qwen GGUF (llama.cpp),
the transformers image–text-matching entailment on a tiny random BLIP, and the CLI end to end."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest

from halluscope.benchmarks.prove import Prove
from halluscope.cache import Cache
from halluscope.claims.dsg import LLMTupleExtractor, RulesTupleExtractor, parse_tuple_lines
from halluscope.judges import VISUAL_ENTAILMENT_JUDGES as JUDGES_OF_PROVE
from halluscope.llm.client import LLMBadRequestError
from halluscope.stages import Failure, ScoringContext
from halluscope.types import Response
from tests.paths import REPO_ROOT
from tests.scripted_server import ScriptedServer, completion, error

DATA = REPO_ROOT / "tests" / "data" / "prove" / "prove.json"


def test_reply_parsing_skips_chatter_and_numbering() -> None:
    reply = ("Here are the facts:\n1. entity - whole (cats)\n- attribute - color (cats, black)\n"
             "2) relation - spatial (cats, sofa, on)\nnot a tuple\nother - count (cats, ==2)\n###\n"
             "entity - whole (after the end)")
    assert [t.text() for t in parse_tuple_lines(reply)] == [
        "entity - whole (cats)", "attribute - color (cats, black)", "relation - spatial (cats, sofa, on)",
        "other - count (cats, ==2)"]


def test_llm_extractor_results_are_cached_and_failures_named() -> None:
    cache = Cache(None)
    with ScriptedServer([completion("entity - whole (dog)\n###")]) as server:
        extractor = LLMTupleExtractor(model="m", base_url=server.base_url, cache=cache)
        first = asyncio.run(extractor.extract_many(["A dog."]))
        second = asyncio.run(extractor.extract_many(["A dog."]))
        assert len(server.chat_requests()) == 1
    assert first == second and [t.text() for t in first[0]] == ["entity - whole (dog)"]  # type: ignore[union-attr]
    with ScriptedServer([completion("x")]) as server:
        # a server that goes away mid-run: the answer fails alone, with the reason
        extractor = LLMTupleExtractor(model="m", base_url=server.base_url, timeout_s=2)
    result = asyncio.run(extractor.extract_many(["A cat."]))
    assert isinstance(result[0], Failure) and "tuple extraction failed" in result[0].reason


def test_llm_extractor_stops_on_a_bad_request() -> None:
    # An unknown model or a prompt the endpoint refuses fails every answer alike: stop, do not record failures.
    with ScriptedServer([error(400, "model 'm' does not exist")]) as server:
        extractor = LLMTupleExtractor(model="m", base_url=server.base_url)
        with pytest.raises(LLMBadRequestError, match="does not exist"):
            asyncio.run(extractor.extract_many(["A dog."]))


def test_llm_extractor_on_the_packaged_qwen(llama_server: str) -> None:
    extractor = LLMTupleExtractor(model="qwen", base_url=llama_server, concurrency=1, timeout_s=900, max_tokens=160)
    texts = ["Two black cats are sleeping on a red sofa.", ""]
    result = asyncio.run(extractor.extract_many(texts))
    tuples = result[0]
    assert not isinstance(tuples, Failure), tuples
    words = " ".join(t.text() for t in tuples)
    assert tuples and "cat" in words and "sofa" in words, words
    assert result[1] == []  # an empty text needs no call and has no tuples


def test_rules_extractor_reads_counts_attributes_and_spatial_phrases() -> None:
    got = RulesTupleExtractor().extract_many_sync(
        ["There are four puppies lying on a blue rug.", "The ring is to the right of the table.",
         "The dog is not brown."]
    )
    texts = [[t.text() for t in tuples] for tuples in got]  # type: ignore[union-attr]
    assert {"other - count (puppies, ==4)", "attribute - color (rug, blue)"} <= set(texts[0])
    assert "relation - spatial (ring, table, to the right of)" in texts[1]
    assert texts[2] == ["entity - whole (dog)"]  # a denied attribute is not a fact


def build_tiny_blip(folder: Path) -> Path:
    """A randomly initialised BLIP image–text matching model, small enough to build in a second."""
    from transformers import (
        BertTokenizerFast,
        BlipConfig,
        BlipForImageTextRetrieval,
        BlipImageProcessor,
        BlipProcessor,
    )

    folder.mkdir(parents=True, exist_ok=True)
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "dog", "on", "rug", "red", "ball", "puppies", "4",
             "blue", "light", "green", "motorcycle", "door"]
    (folder / "vocab.txt").write_text("\n".join(words) + "\n")
    processor = BlipProcessor(image_processor=BlipImageProcessor(size={"height": 32, "width": 32}),
                              tokenizer=BertTokenizerFast(vocab_file=str(folder / "vocab.txt")))
    text = dict(vocab_size=len(words), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                intermediate_size=37, max_position_embeddings=64, bos_token_id=2, sep_token_id=3, pad_token_id=0)
    vision = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=37,
                  image_size=32, patch_size=8)
    config = BlipConfig(text_config=text, vision_config=vision, projection_dim=16, image_text_hidden_size=32)
    BlipForImageTextRetrieval(config).save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def test_itm_entailment_on_a_tiny_random_blip(tmp_path: Path) -> None:
    from PIL import Image

    model = build_tiny_blip(tmp_path / "blip")
    images = tmp_path / "images"
    images.mkdir()
    Image.new("RGB", (48, 32), (200, 30, 30)).save(images / "test_00001.jpg")  # test_00002.jpg is missing
    bench = Prove(data=DATA, images=images)
    cache = Cache(None)
    itm = JUDGES_OF_PROVE.create("itm", cache=cache, model=str(model))  # --judge itm --judge-model MODEL
    samples = list(bench.samples())
    answers = {"test_00001-2": "The puppies lie on a rug next to a red ball.",
               "test_00002-0": "A green motorcycle is parked."}
    pairs = [(s, Response(id=s.id, response=answers[s.id])) for s in samples if s.id in answers]
    records = {r.id: r for r in asyncio.run(bench.score_many(pairs, ScoringContext(cache=cache, judge=itm)))}
    ball = records["test_00001-2"]
    matches = ball.metadata["response_matches"]
    asked = [m for m in matches if m["entailment"] is not None]
    assert asked and all(0.0 <= m["entailment"] <= 1.0 for m in asked)
    assert ball.metadata["tscore"] == pytest.approx(
        np.mean([max(m["similarity"], m["entailment"] or 0.0) for m in matches]))
    # the other image is not on disk: tscore undefined, named; hscore stands
    missing = records["test_00002-0"]
    assert missing.metadata["tscore"] is None and "image not found" in missing.metadata["tscore_error"]
    assert missing.metadata["hscore"] is not None


def test_cli_run_writes_scores_per_question_type(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from halluscope.cli.main import app

    responses = tmp_path / "answers.jsonl"
    responses.write_text("".join(json.dumps({"id": i, "response": r}) + "\n" for i, r in {
        "test_00001-0": "Four puppies.", "test_00001-1": "The rug is light blue.",
        "test_00002-0": "A red bicycle.", "test_00001-2": "", "test_00002-1": "Green."}.items()))
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", "-b", "prove", "--data", str(DATA), "-r", str(responses),
                                      "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics["metrics"]) == {"hscore", "tscore", "average"}
    assert "question_type=what color" in metrics["groups"]
    assert metrics["counts"]["failed"] == 1  # the empty answer, recorded and named
    lines = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    assert any("empty response" in (x.get("failure") or "") for x in lines)


def test_oracle_and_hallucinating_runs_land_in_the_report_scatter(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from halluscope.builders.synthetic import build_synthetic
    from halluscope.cli.main import app

    data = tmp_path / "synthetic"
    build_synthetic(data, n=4, seed=5)
    runner = CliRunner()
    runs = []
    for name, spec in (("oracle", "sim/oracle"), ("liar", "sim/hallucinate?rate=0.8")):
        out = tmp_path / name
        result = runner.invoke(app, ["run", "-b", "prove", "--data", str(data), "--model", spec,
                                     "--out", str(out), "--quiet"])
        assert result.exit_code == 0, result.output
        runs.append(json.loads((out / "metrics.json").read_text())["metrics"])
        assert runs[-1]["hscore"] is not None and runs[-1]["tscore"] is not None
    assert runs[0]["hscore"] > runs[1]["hscore"] and runs[0]["tscore"] > runs[1]["tscore"]
    page = tmp_path / "report.html"
    result = runner.invoke(app, ["report", str(tmp_path / "oracle"), str(tmp_path / "liar"), "--html", str(page)])
    assert result.exit_code == 0, result.output
    html = page.read_text()
    scatter = html[html.index('<svg id="scatter"'):]
    assert scatter[: scatter.index("</svg>")].count("<circle") == 2
