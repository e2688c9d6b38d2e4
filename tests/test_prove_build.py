"""``halluscope build prove``: the funnel on scripted LLM replies, resuming, ``--verify``, and the real server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from halluscope.build.prove import (
    BuildOptions,
    ProveBuilder,
    answers_agree,
    build_prove_async,
    parse_filter_verdicts,
    parse_pairs,
    verify_qa_file,
)
from halluscope.cache import Cache
from halluscope.cli.main import app
from halluscope.embeddings import Embedder, load_embedder
from halluscope.llm.client import ChatClient
from halluscope.sandbox import Sandbox
from halluscope.scene.graph import SceneGraph
from tests.paths import TRI_HE_JSON
from tests.scripted_server import ScriptedServer, completion


def _graph() -> SceneGraph:
    return SceneGraph.from_triplets(
        [
            ("dog", "is", "white"),
            ("dog", "lying on", "rug"),
            ("cat", "next to", "dog"),
            ("rug", "is", "blue"),
        ],
        objects=["dog", "rug", "cat", "cat"],
        image_id="img-1",
    )


def _block(question: str, answer: str, body: str) -> str:
    return f"Q: {question}\nA: {answer}\n```python\ndef verify(g):\n{body}\n```\n"


# One image's generator reply: each pair is meant for one branch of the funnel.
GENERATION = "\n".join(
    [
        _block(
            "What is the dog lying on?",
            "The dog is lying on a rug.",  # kept
            "    return [r.object for r in g.outgoing('dog') if r.predicate == 'lying on']",
        ),
        _block(
            "What colour is the rug?",
            "The rug is blue.",  # program raises -> program_failed
            "    return g.attributes('rug')[5]",
        ),
        _block(
            "What is next to the dog?",
            "A horse is next to the dog.",  # disagrees -> wrong_answer
            "    return [r.subject for r in g.incoming('dog')]",
        ),
        _block(
            "Which attribute does the dog have?",
            "The dog is white.",  # taboo word -> filtered
            "    return g.attributes('dog')",
        ),
        _block(
            "Is the dog white?",
            "Yes, the dog is white.",  # LLM filter: trivial -> filtered
            "    return 'white' in g.attributes('dog')",
        ),
        _block(
            "What's the dog lying on?",
            "The dog lies on the rug.",  # duplicate of the first -> filtered
            "    return [r.object for r in g.outgoing('dog') if r.predicate == 'lying on']",
        ),
        _block(
            "What is written in the corner?",
            "Nothing is written.",  # hostile -> program_failed
            "    return open('/etc/passwd').read()",
        ),
        _block(
            "Is there a cat beside the dog?",
            "Yes, a cat is next to the dog.",  # yes/no -> kept
            "    return any(r.subject == 'cat' for r in g.incoming('dog'))",
        ),
        "Q: What is the cat doing?\nA: The cat sits next to the dog.\n",  # no program -> program_failed
        _block(
            "How many cats are there?",
            "There are two cats.",  # count -> kept
            "    return sum(1 for n in ['dog', 'rug', 'cat', 'cat'] if n == 'cat')",
        ),
    ]
)
# The filter sees the 5 pairs left after the programs and the taboo list, in order.
FILTER_REPLY = "1: ok\n2: trivial\n3: ok\n4: ok\n5: ok"


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return load_embedder(None)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox() as box:
        yield box


def test_parse_pairs_reads_blocks_and_skips_incomplete_ones() -> None:
    text = GENERATION + "\nQ: A question with no answer or program?\n"
    pairs = parse_pairs(text)
    assert len(pairs) == 10
    assert pairs[8] == ("What is the cat doing?", "The cat sits next to the dog.", "")
    assert pairs[0][0] == "What is the dog lying on?"
    assert pairs[0][2].startswith("def verify(g):")
    assert parse_filter_verdicts("1: ok\n2. Trivial\n**3**: unnatural\nblah\n9: ok", 4) == {
        1: "ok",
        2: "trivial",
        3: "unnatural",
    }


def test_answers_agree_checks_numbers_and_yes_no_before_embeddings(embedder: Embedder) -> None:
    def sim(a: str, b: str) -> float:
        v = embedder.encode([a, b])
        return float(v[0] @ v[1])

    assert answers_agree(2, "There are two cats.", sim, 0.75)[0]
    assert not answers_agree(3, "There are two cats.", sim, 0.75)[0]  # embeddings alone would pass this
    assert answers_agree(True, "Yes, it is.", sim, 0.75)[0]
    assert not answers_agree(True, "No, there is none.", sim, 0.75)[0]
    assert answers_agree(False, "No, the dog is not black.", sim, 0.75)[0]
    assert answers_agree(["rug"], "The dog lies on a rug.", sim, 0.75)[0]
    assert not answers_agree("horse", "The dog lies on a rug.", sim, 0.75)[0]


def _run_build(
    server: ScriptedServer, out: Path, embedder: Embedder, sandbox: Sandbox, cache: Cache
) -> dict[str, Any]:
    client = ChatClient("scripted", server.base_url, cache=cache, max_retries=0)
    builder = ProveBuilder(client, embedder, sandbox, BuildOptions(pairs=10))

    async def go() -> dict[str, Any]:
        try:
            return await build_prove_async({"img-1": _graph()}, out, builder)
        finally:
            await client.aclose()

    return asyncio.run(go())


def test_funnel_on_scripted_replies_and_resume(
    scripted_server: ScriptedServer, tmp_path: Path, embedder: Embedder, sandbox: Sandbox
) -> None:
    scripted_server.push(completion(GENERATION), completion(FILTER_REPLY))
    out = tmp_path / "built"
    summary = _run_build(scripted_server, out, embedder, sandbox, Cache(None))
    funnel = summary["funnel"]
    assert (
        funnel["generated"],
        funnel["program_failed"],
        funnel["wrong_answer"],
        funnel["filtered"],
        funnel["kept"],
    ) == (10, 3, 1, 3, 3)
    assert funnel["reasons"]["program_failed"] == {"error": 1, "denied": 1, "no_program": 1}
    assert funnel["reasons"]["filtered"] == {"taboo": 1, "llm_trivial": 1, "duplicate": 1}

    rows = json.loads((out / "prove.json").read_text())
    assert [r["question"] for r in rows] == [
        "What is the dog lying on?", "Is there a cat beside the dog?", "How many cats are there?",
    ]  # fmt: skip
    for field in ("image", "caption", "question", "answer", "image_tuples", "qa_diff_tuples"):
        assert all(field in r for r in rows), field
    assert "relation - action (dog, rug, lying on)" in rows[0]["image_tuples"] or any(
        t.endswith("(dog, rug, lying on)") for t in rows[0]["image_tuples"]
    )
    assert any("rug" in t for t in rows[0]["qa_diff_tuples"])
    assert [json.loads(line)["image_id"] for line in (out / "qa.jsonl").read_text().splitlines()] == [
        "img-1"
    ] * 3
    saved = json.loads((out / "images" / "img-1.json").read_text())
    assert saved["pairs"][6]["reason"] == "denied"

    # A second run reuses the saved image: no request reaches the server.
    before = len(scripted_server.chat_requests())
    again = _run_build(scripted_server, out, embedder, sandbox, Cache(None))
    assert len(scripted_server.chat_requests()) == before
    assert again["images_reused"] == 1 and again["funnel"]["kept"] == 3


def test_unreadable_generator_output_is_named_and_the_build_goes_on(
    scripted_server: ScriptedServer, tmp_path: Path, embedder: Embedder, sandbox: Sandbox
) -> None:
    scripted_server.push(completion("I cannot help with that."))
    summary = _run_build(scripted_server, tmp_path / "b", embedder, sandbox, Cache(None))
    assert "img-1" in summary["errors"] and "could be read" in summary["errors"]["img-1"]
    assert json.loads((tmp_path / "b" / "prove.json").read_text()) == []


def test_verify_names_each_programs_outcome(tmp_path: Path, embedder: Embedder, sandbox: Sandbox) -> None:
    qa = tmp_path / "qa.jsonl"
    lines = [
        {"image_id": "img-1", "question": "What is the dog on?", "answer": "The dog is lying on a rug.",
         "program": "def verify(g):\n    return [r.object for r in g.outgoing('dog')]\n"},
        {"image_id": "img-1", "question": "What colour is the dog?", "answer": "The dog is black.",
         "program": "def verify(g):\n    return g.attributes('dog')\n"},
        {"image_id": "img-1", "question": "Q?", "answer": "A.", "program": "def verify(g):\n    return g\n"},
        {"image_id": "img-404", "question": "Q?", "answer": "A.", "program": "def verify(g):\n    return 1\n"},
        {"image_id": "img-1", "question": "Q?", "answer": ""},
    ]  # fmt: skip
    qa.write_text("\n".join(json.dumps(x) for x in lines) + "\n{not json\n")

    def sim(a: str, b: str) -> float:
        v = embedder.encode([a, b])
        return float(v[0] @ v[1])

    rows = verify_qa_file(qa, {"img-1": _graph()}, sandbox, sim)
    assert [r.outcome for r in rows] == [
        "ok",
        "wrong_answer",
        "bad_type",
        "missing_graph",
        "bad_line",
        "bad_line",
    ]
    assert "img-404" in (rows[3].detail or "") and ":4:" in (rows[3].detail or "")
    assert "answer" in (rows[4].detail or "") and "program" in (rows[4].detail or "")
    assert "Graph" in (rows[2].detail or "")


@pytest.mark.full_data
def test_verify_command_on_tri_he_graphs(tmp_path: Path) -> None:
    qa = tmp_path / "qa.jsonl"
    lines = [
        {"image_id": "2374892", "question": "What colour is the laptop?", "answer": "The laptop is black.",
         "program": "def verify(g):\n    return g.attributes('laptop')\n"},
        {"image_id": "2374892", "question": "Who is using the laptop?", "answer": "The man is using it.",
         "program": "def verify(g):\n    return [r.subject for r in g.incoming('laptop') if r.predicate == 'using']\n"},
        {"image_id": "no-such-image", "question": "Q?", "answer": "A.", "program": "def verify(g):\n    return 1\n"},
    ]  # fmt: skip
    qa.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    report = tmp_path / "report.json"
    result = CliRunner().invoke(
        app,
        ["build", "prove", "-g", str(TRI_HE_JSON), "--verify", str(qa), "--out", str(report), "--no-cache"],
    )
    assert result.exit_code == 1, result.output  # one program cannot be checked
    assert "missing_graph" in result.output and "no-such-image" in result.output
    data = json.loads(report.read_text())
    # the second program only confirms its answer because tri-he relations are oriented ("man using laptop")
    assert [r["outcome"] for r in data["rows"]] == ["ok", "ok", "missing_graph"]


@pytest.mark.full_data
def test_build_with_the_real_packaged_llm(
    llama_server: str, tmp_path: Path, embedder: Embedder, sandbox: Sandbox
) -> None:
    """One image, a few pairs, on the real Qwen2.5-Coder: the reply parses and every pair gets a fate."""
    from halluscope.benchmarks.tri_he import load_scene_graphs

    graphs = dict(list(load_scene_graphs(TRI_HE_JSON).items())[:1])
    client = ChatClient("qwen2.5-coder-1.5b-instruct", llama_server, timeout_s=900)
    builder = ProveBuilder(client, embedder, sandbox, BuildOptions(pairs=3, max_tokens=700, orient=True))

    async def go() -> dict[str, Any]:
        try:
            return await build_prove_async(graphs, tmp_path / "real", builder)
        finally:
            await client.aclose()

    summary = asyncio.run(go())
    funnel = summary["funnel"]
    assert not summary["errors"], summary["errors"]
    assert funnel["generated"] >= 2
    assert (
        funnel["program_failed"] + funnel["wrong_answer"] + funnel["filtered"] + funnel["kept"]
        == funnel["generated"]
    )
    saved = json.loads((tmp_path / "real" / "images" / f"{next(iter(graphs))}.json").read_text())
    assert all(p["stage"] in ("program_failed", "wrong_answer", "filtered", "kept") for p in saved["pairs"])


@pytest.mark.full_data
def test_unknown_image_id_is_named(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["build", "prove", "-g", str(TRI_HE_JSON), "--image-ids", "2374892,nope", "--out", str(tmp_path), "--no-cache"],
    )
    assert result.exit_code == 2
    assert "'nope'" in result.output
