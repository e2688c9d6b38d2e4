"""Building Reefknot-style benchmarks from scene graphs: the Tri-HE build and its guarantees, the relation
lexicon, the GQA / Visual Genome readers on small files, and the ``halluscope build reefknot`` command."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from halluscope.benchmarks.reefknot import Reefknot
from halluscope.benchmarks.tri_he import load_scene_graphs
from halluscope.builders.reefknot import (
    BuildOptions,
    BuiltReefknot,
    build_reefknot,
    verify_build,
    yes_no_question,
)
from halluscope.builders.relations import (
    COGNITIVE,
    PERCEPTION,
    RelationClassifier,
    is_self_evident,
    lexicon_category,
    normalise_relation,
    related,
    relation_holds,
)
from halluscope.cache import Cache
from halluscope.cli.build import register
from halluscope.judges.answers import parse_mcq_options
from halluscope.scene.graph import SceneGraph, normalise_name
from halluscope.scene.vg import SceneGraphFormatError, load_gqa_scene_graphs, load_vg_scene_graphs
from tests.paths import TRI_HE_JSON


@pytest.fixture(scope="module")
def tri_he_build() -> BuiltReefknot:
    graphs = load_scene_graphs(TRI_HE_JSON)
    return build_reefknot(graphs, BuildOptions(orient=True, seed=0))


@pytest.mark.full_data
def test_tri_he_build_counts_and_balance(tri_he_build: BuiltReefknot) -> None:
    counts = tri_he_build.counts()
    assert set(counts) == {f"{t}/{c}" for t in ("yesno", "mcq", "vqa") for c in (PERCEPTION, COGNITIVE)}
    assert counts["yesno/perception"] + counts["yesno/cognitive"] >= 1000
    assert counts["yesno/perception"] >= 100 and counts["mcq/perception"] >= 50
    yes_no = tri_he_build.rows["yesno"]
    assert Counter(r["label"] for r in yes_no) == {"yes": len(yes_no) // 2, "no": len(yes_no) // 2}
    letters = Counter(r["label"] for r in tri_he_build.rows["mcq"])
    assert max(letters.values()) - min(letters.values()) <= 1
    per_relation = Counter(r["triplet"][1] for r in tri_he_build.rows["vqa"])
    assert max(per_relation.values()) <= 20  # no relation dominates
    assert (
        tri_he_build.stats["dropped_self_evident"] > 0 and tri_he_build.stats["dropped_repeated_subject"] > 0
    )


@pytest.mark.full_data
def test_tri_he_build_negatives_are_false_and_mcq_has_one_true_option(tri_he_build: BuiltReefknot) -> None:
    assert verify_build(tri_he_build) == []
    graphs = tri_he_build.graphs
    rows = tri_he_build.rows["yesno"]
    for positive, negative in zip(rows[0::2], rows[1::2], strict=True):
        graph = graphs[negative["image_id"]]
        subject, relation, obj = negative["triplet"]
        asked = negative["asked_relation"]
        # Independent of the builder's own check: the asked relation is none of the graph's relations between
        # the two objects, in either direction, nor related to any of them.
        stated = graph.relations_between(subject, obj) + graph.relations_between(obj, subject)
        assert asked not in [normalise_relation(s) for s in stated]
        assert not any(related(asked, s) for s in graph.relations_between(subject, obj))
        forward = [normalise_relation(s) for s in graph.relations_between(subject, obj)]
        assert positive["triplet"] == negative["triplet"] and relation in forward
    for row in tri_he_build.rows["mcq"]:
        graph = graphs[row["image_id"]]
        subject, relation, obj = row["triplet"]
        true = [k for k, v in row["options"].items() if relation_holds(graph, subject, v, obj)]
        assert true == [row["label"]] and row["options"][row["label"]] == relation
        assert parse_mcq_options(row["query_prompt"]) == row["options"]


@pytest.mark.full_data
def test_tri_he_build_loads_as_a_reefknot_benchmark(tri_he_build: BuiltReefknot, tmp_path: Path) -> None:
    images = TRI_HE_JSON.parent / "images"
    tri_he_build.write(tmp_path, images=images, source={"format": "tri-he"})
    written = [json.loads(line) for line in (tmp_path / "samples.jsonl").read_text().splitlines()]
    loaded = list(Reefknot(data=tmp_path, images=images).samples())
    assert [s["id"] for s in written] == [s.id for s in loaded]
    assert all(s.image_path and Path(s.image_path).exists() for s in loaded)
    info = json.loads((tmp_path / "build.json").read_text())
    assert info["verification"]["n_problems"] == 0 and info["counts"] == tri_he_build.counts()
    first = loaded[0]
    assert (
        first.metadata["pair"] == 0 and first.metadata["triplet"] == tri_he_build.rows["yesno"][0]["triplet"]
    )


def test_relation_categories_synonyms_and_obvious_facts() -> None:
    assert lexicon_category("on") == PERCEPTION and lexicon_category("in front of") == PERCEPTION
    assert lexicon_category("is holding") == COGNITIVE and lexicon_category("parked on") == COGNITIVE
    assert lexicon_category("located in") == PERCEPTION
    assert lexicon_category("is") is None and lexicon_category("indicating") is None
    assert lexicon_category("not wearing") is None
    assert related("beside", "next to") and related("holds", "holding") and related("sitting on", "on")
    assert related("riding", "on") and related("on the side of", "by")
    assert not related("on", "under") and not related("in", "in front of")
    assert not related("holding", "sleeping on")
    assert related("swinging", "holding")  # swinging a bat means holding it: not a usable "no"
    assert is_self_evident("cow", "has", "eyes") and is_self_evident("person", "wearing", "shirt")
    assert is_self_evident("window", "on", "building") and is_self_evident("man", "next to", "man")
    assert not is_self_evident("man", "wearing", "helmet") and not is_self_evident("cat", "on", "table")


def test_relation_holds_reads_inverses_and_implications() -> None:
    graph = SceneGraph.from_triplets(
        [("table", "under", "cup"), ("man", "riding", "horse"), ("dog", "pulled by", "boy")]
    )
    assert relation_holds(graph, "cup", "on", "table")  # inverse of "table under cup"
    assert relation_holds(graph, "man", "on", "horse")  # implied by riding
    assert relation_holds(graph, "boy", "pulling", "dog")  # the passive read the other way
    assert not relation_holds(graph, "cup", "under", "table")
    assert not relation_holds(graph, "man", "feeding", "horse")


def test_questions_are_grammatical_for_verbs_and_plurals() -> None:
    assert yes_no_question("man", "has", "hat").startswith("Does the man have the hat in this image?")
    assert yes_no_question("trees", "on the side of", "road").startswith(
        "Are the trees on the side of the road"
    )
    assert yes_no_question("dog", "holds", "frisbee").startswith("Does the dog hold the frisbee")


def test_reversed_triplets_are_repaired_when_orienting() -> None:
    reversed_image = SceneGraph.from_triplets(
        [("jacket", "wearing", "woman"), ("bench", "sitting on", "man")],
        objects=["jacket", "woman", "bench", "man"],
        image_id="1",
    )
    things = SceneGraph.from_triplets(
        [("laptop", "sitting on", "table")], objects=["laptop", "table"], image_id="2"
    )
    garbled = SceneGraph.from_triplets([("sweater", "carrying", "bag")], objects=["sweater", "bag"], image_id="3")
    graphs = {"1": reversed_image, "2": things, "3": garbled}
    built = build_reefknot(graphs, BuildOptions(orient=True, tasks=("vqa",)))
    triplets = sorted(tuple(r["triplet"]) for r in built.rows["vqa"])
    assert ("man", "sitting on", "bench") in triplets
    assert ("woman", "wearing", "jacket") in triplets
    assert ("laptop", "sitting on", "table") in triplets  # things sit on things too: kept as written
    assert not any("sweater" in t for t in triplets)  # a garment carrying a bag, or the reverse: dropped
    assert built.stats["dropped_unclear_direction"] == 1


class _ScriptedLLM:
    """A stand-in chat client: answers from a table, counts calls."""

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers
        self.calls = 0

    def identity(self) -> dict[str, Any]:
        return {"model": "scripted"}

    async def chat(self, messages: list[dict[str, Any]], **_: Any) -> Any:
        self.calls += 1
        prompt = messages[-1]["content"]
        text = next((v for k, v in self.answers.items() if f'"{k}"' in prompt), "no idea")

        class Result:
            pass

        result = Result()
        result.text = text  # type: ignore[attr-defined]
        return result


def test_unknown_relations_go_to_the_llm_once_and_are_cached() -> None:
    cache = Cache(None)
    llm = _ScriptedLLM(
        {"astride": '{"type": "perception"}', "admires": '{"type": "cognitive"}', "vibes with": "hmm"}
    )
    classifier = RelationClassifier(llm, cache)
    first = asyncio.run(classifier.classify_many(["on", "astride", "admires", "vibes with", "is", "hugging"]))
    assert first == {
        "on": PERCEPTION,
        "astride": PERCEPTION,
        "admires": COGNITIVE,
        "vibes with": None,
        "is": None,
        "hugging": COGNITIVE,
    }
    assert llm.calls == 3  # "on" and "hugging" from the lexicon, "is" never asked
    again = RelationClassifier(_ScriptedLLM({}), cache)
    assert asyncio.run(again.classify_many(["astride", "admires"])) == {
        "astride": PERCEPTION,
        "admires": COGNITIVE,
    }
    assert RelationClassifier().identity()["llm"] is None
    assert asyncio.run(RelationClassifier().classify_many(["astride"])) == {"astride": None}


# -- GQA and Visual Genome files -----------------------------------------------------------------------------

GQA = {
    "2370799": {
        "width": 500,
        "height": 333,
        "objects": {
            "1": {
                "name": "man",
                "attributes": ["standing"],
                "relations": [{"name": "holding", "object": "2"}, {"name": "to the left of", "object": "3"}],
            },
            "2": {
                "name": "umbrella",
                "attributes": ["black"],
                "relations": [{"name": "above", "object": "1"}],
            },
            "3": {"name": "dog", "attributes": [], "relations": [{"name": "sitting on", "object": "4"}]},
            "4": {"name": "bench", "attributes": ["wooden"], "relations": []},
            "5": {"name": "tree", "attributes": [], "relations": []},
            "6": {"name": "tree", "attributes": [], "relations": [{"name": "behind", "object": "4"}]},
        },
    },
}

VG_RELATIONSHIPS = [
    {
        "image_id": 1,
        "relationships": [
            {
                "relationship_id": 10,
                "predicate": "ON",
                "synsets": ["along.r.01"],
                "subject": {"object_id": 100, "name": "cup", "x": 1, "y": 1, "w": 5, "h": 5},
                "object": {"object_id": 101, "names": ["table"], "x": 0, "y": 5, "w": 50, "h": 20},
            },
            {
                "relationship_id": 11,
                "predicate": "next  to",
                "subject": {"object_id": 102, "name": "chair"},
                "object": {"object_id": 101, "names": ["table"]},
            },
            {
                "relationship_id": 12,
                "predicate": "wears",
                "subject": {"object_id": 103, "name": "woman"},
                "object": {"object_id": 104, "name": "hat"},
            },
        ],
    },
    {"image_id": 2, "relationships": []},
]
VG_OBJECTS = [
    {"image_id": 1, "objects": [{"object_id": 105, "names": ["lamp"]}, {"object_id": 100, "names": ["cup"]}]}
]
VG_ATTRIBUTES = [{"image_id": 1, "attributes": [{"object_id": 104, "names": ["hat"], "attributes": ["red"]}]}]


def test_gqa_reader(tmp_path: Path) -> None:
    path = tmp_path / "val_sceneGraphs.json"
    path.write_text(json.dumps(GQA))
    graph = load_gqa_scene_graphs(path)["2370799"]
    assert sorted(graph.object_names) == ["bench", "dog", "man", "tree", "tree", "umbrella"]
    assert graph.relations_between("man", "umbrella") == ["holding"]
    assert graph.relations_between("man", "dog") == ["to the left of"]
    assert graph.attributes("bench") == ["wooden"]
    assert ("man", "holding", "umbrella") in [c.as_tuple() for c in graph.reference_claims]
    broken = dict(GQA)
    broken["2370799"] = {"objects": {"1": {"name": "man", "relations": [{"name": "on", "object": "9"}]}}}
    path.write_text(json.dumps(broken))
    with pytest.raises(SceneGraphFormatError, match="unknown object '9'"):
        load_gqa_scene_graphs(path)


def test_visual_genome_reader_with_objects_and_attributes(tmp_path: Path) -> None:
    (tmp_path / "relationships.json").write_text(json.dumps(VG_RELATIONSHIPS))
    (tmp_path / "objects.json").write_text(json.dumps(VG_OBJECTS))
    (tmp_path / "attributes.json").write_text(json.dumps(VG_ATTRIBUTES))
    graphs = load_vg_scene_graphs(tmp_path)
    assert set(graphs) == {"1", "2"}
    graph = graphs["1"]
    assert graph.relations_between("cup", "table") == ["on"]  # upper case predicates lower-cased
    assert graph.relations_between("chair", "table") == ["next to"]  # spacing normalised
    assert graph.attributes("hat") == ["red"]
    assert sorted(graph.object_names) == ["chair", "cup", "hat", "lamp", "table", "woman"]  # cup counted once
    only = load_vg_scene_graphs(tmp_path / "relationships.json", image_ids=["2"])
    assert set(only) == {"2"} and len(only["2"]) == 0


def test_visual_genome_scene_graphs_json(tmp_path: Path) -> None:
    scene = [
        {
            "image_id": 7,
            "objects": [
                {"object_id": 1, "names": ["horse"], "attributes": ["brown"]},
                {"object_id": 2, "names": ["man"]},
            ],
            "relationships": [{"predicate": "riding", "subject_id": 2, "object_id": 1}],
        }
    ]
    (tmp_path / "scene_graphs.json").write_text(json.dumps(scene))
    graph = load_vg_scene_graphs(tmp_path)["7"]
    assert graph.relations_between("man", "horse") == ["riding"] and graph.attributes("horse") == ["brown"]
    with pytest.raises(SceneGraphFormatError, match="not found"):
        load_vg_scene_graphs(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SceneGraphFormatError, match="neither"):
        load_vg_scene_graphs(tmp_path / "empty")


def test_build_from_gqa_keeps_repeated_subjects_out(tmp_path: Path) -> None:
    path = tmp_path / "val_sceneGraphs.json"
    path.write_text(json.dumps(GQA))
    built = build_reefknot(load_gqa_scene_graphs(path), BuildOptions(max_per_relation=None))
    triplets = {tuple(r["triplet"]) for rows in built.rows.values() for r in rows}
    assert ("man", "holding", "umbrella") in triplets and ("dog", "sitting on", "bench") in triplets
    assert not any(t[0] == "tree" for t in triplets)  # two trees: "the tree" would be ambiguous
    assert verify_build(built) == []
    for row in built.rows.get("yesno", [])[1::2]:
        graph = built.graphs["2370799"]
        assert normalise_name(row["asked_relation"]) not in graph.relations_between(*row["triplet"][::2])


def test_build_command(tmp_path: Path) -> None:
    graphs = tmp_path / "sceneGraphs.json"
    graphs.write_text(json.dumps(GQA))
    app = typer.Typer()
    register(app)
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "build",
            "reefknot",
            "--scene-graphs",
            str(graphs),
            "--format",
            "gqa",
            "--out",
            str(tmp_path / "out"),
            "--tasks",
            "yesno,vqa",
        ],
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "YESNO.jsonl").exists() and (tmp_path / "out" / "VQA.jsonl").exists()
    assert not (tmp_path / "out" / "Multichoice.jsonl").exists()
    assert "verified" in result.output
    bad = runner.invoke(
        app,
        [
            "build",
            "reefknot",
            "--scene-graphs",
            str(tmp_path / "nope.json"),
            "--format",
            "gqa",
            "--out",
            str(tmp_path / "out2"),
        ],
    )
    assert bad.exit_code == 2 and "not found" in bad.output
