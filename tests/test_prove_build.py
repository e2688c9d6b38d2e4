"""``halluscope build prove``: the funnel on scripted LLM replies, resuming, ``--verify``, and the real server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from halluscope.benchmarks.prove import Prove
from halluscope.builders.prove import (
    FILTER_SYSTEM,
    GENERATE_SYSTEM,
    BuildOptions,
    ProveBuilder,
    answers_agree,
    build_prove_async,
    embedding_similarity,
    parse_filter_verdicts,
    parse_pairs,
    qa_diff_tuples,
    verify_qa_file,
)
from halluscope.cache import Cache
from halluscope.claims.dsg import RulesTupleExtractor, TupleExtractor
from halluscope.cli.main import app
from halluscope.embeddings import Embedder, load_embedder
from halluscope.llm.client import ChatClient
from halluscope.sandbox import Sandbox
from halluscope.scene.graph import SceneGraph
from halluscope.scene.tuples import graph_to_tuples, parse_tuple, parse_tuples
from tests.paths import TRI_HE_JSON
from tests.scripted_server import Reply, ScriptedServer, completion


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
    sim = embedding_similarity(embedder)
    assert answers_agree(2, "There are two cats.", sim, 0.75)[0]
    assert not answers_agree(3, "There are two cats.", sim, 0.75)[0]  # embeddings alone would pass this
    assert answers_agree(True, "Yes, it is.", sim, 0.75)[0]
    assert not answers_agree(True, "No, there is none.", sim, 0.75)[0]
    assert answers_agree(False, "No, the dog is not black.", sim, 0.75)[0]
    assert answers_agree(["rug"], "The dog lies on a rug.", sim, 0.75)[0]
    assert not answers_agree("horse", "The dog lies on a rug.", sim, 0.75)[0]


def _run_build(
    server: ScriptedServer,
    out: Path,
    embedder: Embedder,
    sandbox: Sandbox,
    cache: Cache,
    extractor: TupleExtractor | None = None,
) -> dict[str, Any]:
    client = ChatClient("scripted", server.base_url, cache=cache, max_retries=0)
    builder = ProveBuilder(client, embedder, sandbox, BuildOptions(pairs=10))

    async def go() -> dict[str, Any]:
        try:
            return await build_prove_async({"img-1": _graph()}, out, builder, extractor=extractor)
        finally:
            await client.aclose()

    return asyncio.run(go())


def _scripted_build(
    server: ScriptedServer, tmp_path: Path, embedder: Embedder, sandbox: Sandbox
) -> tuple[Path, dict[str, Any]]:
    """The build of ``_graph()`` on the scripted GENERATION and FILTER_REPLY: its folder and summary."""
    server.push(completion(GENERATION), completion(FILTER_REPLY))
    out = tmp_path / "built"
    return out, _run_build(server, out, embedder, sandbox, Cache(None))


def test_funnel_on_scripted_replies_and_resume(
    scripted_server: ScriptedServer, tmp_path: Path, embedder: Embedder, sandbox: Sandbox
) -> None:
    out, summary = _scripted_build(scripted_server, tmp_path, embedder, sandbox)
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


def test_build_output_loads_in_the_benchmark_and_its_tuples_parse(
    scripted_server: ScriptedServer, tmp_path: Path, embedder: Embedder, sandbox: Sandbox
) -> None:
    out = _scripted_build(scripted_server, tmp_path, embedder, sandbox)[0]
    rows = json.loads((out / "prove.json").read_text())
    image_tuples = rows[0]["image_tuples"]
    # the one tuple writer: the graph's tuples, each string printed back unchanged by the parser
    assert image_tuples == [t.text() for t in graph_to_tuples(_graph())]
    assert [parse_tuple(t).text() for t in image_tuples] == image_tuples
    assert {"attribute - color (rug, blue)", "relation - action (dog, rug, lying on)",
            "relation - spatial (cat, dog, next to)", "other - count (cat, ==2)"} <= set(image_tuples)  # fmt: skip
    # qa_diff_tuples: what the answer states and the question does not (nouns folded, numbers as words)
    assert {r["question"]: r["qa_diff_tuples"] for r in rows} == {
        "What is the dog lying on?": ["entity - whole (rug)", "relation - action (dog, rug, lying on)"],
        "Is there a cat beside the dog?": ["relation - spatial (cat, dog, next to)"],
        "How many cats are there?": ["other - count (cat, ==2)"],
    }
    assert json.loads((out / "build.json").read_text())["answer_tuples"] == {"method": "graph"}

    # `halluscope run -b prove` reads the folder: same ids, the graph back from the tuples, tuples parse
    bench = Prove(data=out)
    samples = list(bench.samples())
    assert [s.id for s in samples] == [r["id"] for r in rows] == ["img-1-0", "img-1-7", "img-1-9"]
    scene = bench.scene(samples[0])
    assert scene is not None
    assert sorted(scene.entities()) == sorted(_graph().entities())
    assert scene.attributes("rug") == ["blue"] and scene.relations_between("dog", "rug") == ["lying on"]
    for sample in samples:
        assert "load_error" not in sample.metadata
        parse_tuples(sample.metadata["qa_diff_tuples"], where=sample.id)


def test_qa_diff_keeps_relation_order_and_drops_the_premise() -> None:
    graph = SceneGraph.from_triplets(
        [("child", "watching", "man"), ("man", "watching", "man"), ("man", "holding", "pen"), ("hand", "is", "small"),
         ("person", "facing", "water spray")],
        objects=["child", "man", "man", "pen", "hand", "hand", "person", "water", "water spray"],
    )  # fmt: skip
    tuples = graph_to_tuples(graph)
    diff = [t.text() for t in qa_diff_tuples(tuples, "What is the child watching?", "The child is watching the man.")]
    # word overlap alone also let in "man watching man": every word of it occurs in the answer
    assert diff == ["entity - whole (man)", "relation - action (child, man, watching)"]
    diff = [t.text() for t in qa_diff_tuples(tuples, "How many men are there?", "There are two men.")]
    assert diff == ["other - count (man, ==2)"]
    answer = "He holds a pen in two small hands."
    diff = [t.text() for t in qa_diff_tuples(tuples, "What is in the man's hands?", answer)]
    assert diff == ["entity - whole (pen)", "attribute - size (hand, small)", "other - count (hand, ==2)"]
    assert qa_diff_tuples(tuples, "Is the man holding a pen?", "Yes, the man is holding a pen.") == []
    # "water" is named only inside "water spray": not a fact of the answer on its own
    diff = [t.text() for t in qa_diff_tuples(tuples, "What is the person facing?", "The person faces the water spray.")]
    assert diff == ["entity - whole (water spray)"]
    diff = [t.text() for t in qa_diff_tuples(tuples, "What is the person facing?", "Water, from the water spray.")]
    assert diff == ["entity - whole (water)", "entity - whole (water spray)"]


def test_answer_tuples_from_the_rules_extractor_reuse_the_saved_images(
    scripted_server: ScriptedServer, tmp_path: Path, embedder: Embedder, sandbox: Sandbox
) -> None:
    out = _scripted_build(scripted_server, tmp_path, embedder, sandbox)[0]
    before = len(scripted_server.chat_requests())
    summary = _run_build(scripted_server, out, embedder, sandbox, Cache(None), RulesTupleExtractor())
    # the extractor runs on the kept pairs after the images: switching it re-generates nothing
    assert len(scripted_server.chat_requests()) == before and summary["images_reused"] == 1
    assert summary["answer_tuples"]["method"] == "rules" and summary["answer_tuples"]["fallback"] == {}
    rows = json.loads((out / "prove.json").read_text())
    # the answer's own words, as PROVE's extractor gives them, minus what the question states
    assert {r["question"]: r["qa_diff_tuples"] for r in rows} == {
        "What is the dog lying on?": ["entity - whole (rug)", "relation - action (dog, rug, lying on)"],
        "Is there a cat beside the dog?": ["relation - spatial (cat, dog, next to)"],
        "How many cats are there?": ["other - count (cats, ==2)"],
    }


@pytest.mark.full_data
def test_llm_answer_tuples_on_the_command_line_with_a_named_fallback(tmp_path: Path) -> None:
    """--answer-tuples llm: the DSG prompt on the build's model; a failed extraction falls back to the graph."""
    generation = _block(
        "What is the man holding?", "The man is holding the pen.",
        "    return [r.object for r in g.outgoing('man') if r.predicate == 'holding']",
    ) + _block("What colour is the laptop?", "The laptop is black.", "    return g.attributes('laptop')")  # fmt: skip
    tuples = {
        "The man is holding the pen.": "entity - whole (man)\nentity - whole (pen)\n"
        "relation - action (man, pen, holding)",
        "What is the man holding?": "entity - whole (man)\n###",
        "What colour is the laptop?": "1. entity - whole (laptop)",
    }  # fmt: skip

    def respond(body: Any) -> Reply:
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        if system == GENERATE_SYSTEM:
            return completion(generation)
        if system == FILTER_SYSTEM:
            return completion("1: ok\n2: ok")
        text = user.rsplit("Text: ", 1)[1].split("\nFacts:")[0]
        # A reply that is no chat completion fails this one extraction (a 400 would stop the whole build).
        return completion(tuples[text]) if text in tuples else Reply(200, "scripted garbage")

    out = tmp_path / "out"
    with ScriptedServer(responder=respond) as server:
        result = CliRunner().invoke(app, [
            "build", "prove", "-g", str(TRI_HE_JSON), "--image-ids", "2374892", "--pairs", "2", "--no-cache",
            "--llm", "scripted", "--base-url", server.base_url, "--answer-tuples", "llm", "--out", str(out),
        ])  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = {r["id"]: r for r in json.loads((out / "prove.json").read_text())}
    assert rows["2374892-0"]["qa_diff_tuples"] == ["entity - whole (pen)", "relation - action (man, pen, holding)"]
    assert rows["2374892-1"]["qa_diff_tuples"] == ["attribute - color (laptop, black)"]  # from the graph
    how = json.loads((out / "build.json").read_text())["answer_tuples"]
    assert how["method"] == "llm" and how["model"] == "scripted"
    assert list(how["fallback"]) == ["2374892-1"] and "not JSON" in how["fallback"]["2374892-1"]
    bad = CliRunner().invoke(app, ["build", "prove", "-g", str(TRI_HE_JSON), "--answer-tuples", "spacy",
                                   "--out", str(tmp_path / "x"), "--no-cache"])  # fmt: skip
    assert bad.exit_code != 0 and "graph, rules, llm" in bad.output


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

    rows = verify_qa_file(qa, {"img-1": _graph()}, sandbox, embedding_similarity(embedder))
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


def test_pairs_the_llm_filter_could_not_check_are_kept_marked_unfiltered(
    scripted_server: ScriptedServer, tmp_path: Path, embedder: Embedder, sandbox: Sandbox
) -> None:
    from tests.scripted_server import error

    cache = Cache(tmp_path / "cache.sqlite")
    scripted_server.push(completion(GENERATION), error(503, "filter model overloaded"))
    out = tmp_path / "built"
    summary = _run_build(scripted_server, out, embedder, sandbox, cache)
    funnel = summary["funnel"]
    # The 5 pairs that reached the filter went unchecked; the trivial one is kept now, never called checked.
    assert funnel["llm_filter_unchecked"] == 5 and funnel["kept"] == 4 and funnel["kept_unfiltered"] == 4
    rows = json.loads((out / "prove.json").read_text())
    assert len(rows) == 4
    assert all("LLM filter failed" in r["unfiltered"] and "503" in r["unfiltered"] for r in rows)

    # The filter comes back: the next run checks those pairs (the generation comes from the cache).
    scripted_server.push(completion(FILTER_REPLY))
    again = _run_build(scripted_server, out, embedder, sandbox, cache)
    assert again["images_reused"] == 0 and again["funnel"]["kept"] == 3
    assert again["funnel"]["kept_unfiltered"] == 0
    assert not any("unfiltered" in r for r in json.loads((out / "prove.json").read_text()))
