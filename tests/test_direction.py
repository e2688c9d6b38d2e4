"""Triplet direction: which end of a relation is its subject, and every place a triplet becomes text.

The examples are the ones a user met in built Reefknot items and simulator answers (issue 15, C6)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from bench.direction_sample import LABELS, draw

from halluscope.benchmarks.tri_he import load_scene_graphs
from halluscope.builders.reefknot import BuildOptions, BuiltReefknot, build_reefknot, verify_build
from halluscope.models.base import ChatTurn, GenerateRequest
from halluscope.models.sim import SimModel
from halluscope.scene.direction import (
    Reading,
    graph_readings,
    orient_triplet,
    reference_text,
    relation_sentence,
    triplet_reading,
)
from halluscope.scene.graph import SceneGraph
from tests.paths import TRI_HE_JSON


@pytest.fixture(scope="module")
def tri_he() -> dict[str, SceneGraph]:
    return load_scene_graphs(TRI_HE_JSON)


@pytest.mark.parametrize(
    ("stored", "reads"),
    [
        (("street", "parked near", "car"), "The car is parked near the street."),
        (("bench", "hanging over", "branches"), "The branches are hanging over the bench."),
        (("ceiling", "hanging from", "sign"), "The sign is hanging from the ceiling."),
        (("horse", "pulled by", "carriage"), "The carriage is pulled by the horse."),
        (("carriage", "pulled by", "horse"), "The carriage is pulled by the horse."),
        (("man", "pushed by", "luggage"), "The luggage is pushed by the man."),
        (("shirt", "wearing", "man"), "The man is wearing the shirt."),
        (("snow", "covered by", "ground"), "The ground is covered by the snow."),
        (("neck", "wrapped around", "scarf"), "The scarf is wrapped around the neck."),
        (("blinds", "covered by", "window"), "The window is covered by the blinds."),
        (("road", "parked on", "ambulance"), "The ambulance is parked on the road."),
        (("horse", "riding", "woman"), "The woman is riding the horse."),
        (("building", "on", "window"), "The window is on the building."),
        (("sidewalk", "growing in", "tree"), "The tree is growing in the sidewalk."),
        (("cup", "on", "table"), "The cup is on the table."),
        (("man", "holding", "phone"), "The man is holding the phone."),
        (("picture", "reflected in", "mirror"), "The picture is reflected in the mirror."),
    ],
)
def test_triplets_read_the_sensible_way_round(stored: tuple[str, str, str], reads: str) -> None:
    ordered = orient_triplet(*stored)
    assert ordered is not None
    assert relation_sentence(ordered[0], stored[1], ordered[1]) == reads


def test_between_needs_a_group_and_unknown_direction_is_said() -> None:
    assert triplet_reading("jeans", "between", "bucket")[0] is Reading.NONSENSE
    assert orient_triplet("jeans", "between", "bucket") is None
    assert triplet_reading("bench", "between", "trees")[0] is not Reading.NONSENSE
    # Two people pushing: nothing tells which one pushes.
    assert orient_triplet("woman", "pushing", "man") is None
    # Order-free relations keep their order.
    assert orient_triplet("trees", "by", "tent") == ("trees", "tent")


def test_an_image_reads_its_unclear_triplets_in_its_own_direction() -> None:
    # Stored object-first throughout, as in a third of Tri-HE's images: the clear triplets (wearing,
    # holding) decide the unclear one ("table at chair" is readable either way on its own).
    graph = SceneGraph.from_triplets(
        [("shirt", "wearing", "man"), ("cup", "holding", "man"), ("table", "at", "chair")],
        objects=["shirt", "man", "cup", "table", "chair"],
    )
    readings = graph_readings(graph)
    assert readings[("table", "at", "chair")] is Reading.REVERSED
    assert [(r.subject, r.object) for r in graph.read_relations()] == [
        ("man", "shirt"), ("man", "cup"), ("chair", "table")
    ]
    # A graph that declares its direction (synthetic scenes) is read as stored.
    graph.graph.graph["directed"] = True
    assert next((r.subject, r.object) for r in graph.read_relations()) == ("shirt", "man")


@pytest.mark.full_data
def test_tri_he_descriptions_and_evidence_read_subject_first(tri_he: dict[str, SceneGraph]) -> None:
    graph = tri_he["2374892"]  # "(shirt, wearing, man)", "(pen, holding, man)", "(desk, sitting at, man)"
    text = graph.describe()
    assert "The man is wearing the shirt." in text
    assert "The man is sitting at the desk." in text
    assert "The shirt is wearing the man." not in text and "The shirt wearing the man." not in text
    assert "The laptop is black." in text
    assert reference_text(graph, "(pen, holding, man)") == "(man, holding, pen)"
    assert reference_text(graph, "(Books, piled, on desk)") == "(Books, piled, on desk)"


@pytest.mark.full_data
def test_sim_oracle_writes_the_man_is_wearing_the_shirt(tri_he: dict[str, SceneGraph]) -> None:
    scene = tri_he["2374892"]
    request = GenerateRequest(messages=[ChatTurn(text="Describe the image.")], sample_id="x", scene=scene)
    result = asyncio.run(SimModel("oracle").generate(request))
    assert "The man is wearing the shirt." in result.text
    assert "The shirt is wearing the man." not in result.text
    assert ["man", "wearing", "shirt"] in result.metadata["claims"]
    # Supplied facts stored object-first are stated subject-first too.
    supplied = GenerateRequest(
        messages=[ChatTurn(text="What is he wearing?")],
        sample_id="y",
        scene=scene,
        metadata={"gt_triplets": ["(shirt, wearing, man)"]},
    )
    assert asyncio.run(SimModel("oracle").generate(supplied)).text == "The man is wearing the shirt."


def test_builder_refuses_a_pair_true_both_ways() -> None:
    # Without orientation (graphs trusted as stored): "pulled by" both ways contradicts itself.
    contradictory = SceneGraph.from_triplets(
        [("horse", "pulled by", "carriage"), ("carriage", "pulled by", "horse"), ("man", "holding", "cup")],
        objects=["horse", "carriage", "man", "cup"],
        image_id="1",
    )
    built = build_reefknot({"1": contradictory}, BuildOptions(orient=False, tasks=("vqa",)))
    triplets = [tuple(r["triplet"]) for r in built.rows["vqa"]]
    assert ("man", "holding", "cup") in triplets
    assert not any("horse" in t for t in triplets)
    assert built.stats["dropped_both_directions"] == 2
    # With orientation, an image read subject-first keeps "standing behind" both ways as stated: refused.
    behind = SceneGraph.from_triplets(
        [("man", "wearing", "hat"), ("man", "standing behind", "woman"), ("woman", "standing behind", "man")],
        objects=["man", "hat", "woman"],
        image_id="2",
    )
    built = build_reefknot({"2": behind}, BuildOptions(orient=True, tasks=("vqa",)))
    assert built.stats["dropped_both_directions"] == 2
    assert [tuple(r["triplet"]) for r in built.rows["vqa"]] == [("man", "wearing", "hat")]


@pytest.fixture(scope="module")
def tri_he_build(tri_he: dict[str, SceneGraph]) -> BuiltReefknot:
    return build_reefknot(tri_he, BuildOptions(orient=True, seed=0))


@pytest.mark.full_data
def test_the_labelled_sample_is_what_the_builder_builds(tri_he_build: BuiltReefknot, tmp_path: Path) -> None:
    # docs/reefknot.md reports the sensible share of 100 items read by a person; if the builder changes,
    # the items change and the figure no longer describes it: re-draw and re-label (bench/direction_sample.py).
    tri_he_build.write(tmp_path / "rk")
    labels = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line.strip()]
    after = {label["id"]: label["text"] for label in labels if label["sample"] == "after"}
    assert len(after) == 100
    assert {item["id"]: item["text"] for item in draw(tmp_path / "rk", 3)} == after
    assert sum(label["sensible"] for label in labels if label["sample"] == "after") >= 95


@pytest.mark.full_data
def test_tri_he_build_reads_subject_first_and_verifies_clean(tri_he_build: BuiltReefknot) -> None:
    built = BuiltReefknot(
        rows={task: list(rows) for task, rows in tri_he_build.rows.items()},
        graphs=tri_he_build.graphs,
        stats=tri_he_build.stats,
        options=tri_he_build.options,
    )
    assert verify_build(built) == []
    labels = {row["label"] for row in built.rows["vqa"]}
    for nonsense in ("street is parked near car.", "shirt is wearing man.", "horse is riding woman."):
        assert nonsense not in labels
    assert built.stats["turned_around"] > 500
    # Verification now also catches a backwards triplet.
    row = dict(built.rows["vqa"][0])
    row["triplet"] = ["shirt", "wearing", "man"]
    built.rows["vqa"][0] = row
    assert any("reads backwards" in p for p in verify_build(built))
