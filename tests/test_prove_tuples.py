"""DSG tuples: every released form parses and prints back unchanged; graphs and tuples convert both ways."""

from __future__ import annotations

import pytest

from halluscope.scene.graph import SceneGraph
from halluscope.scene.tuples import (
    SceneTuple,
    TupleParseError,
    claims_to_tuples,
    graph_to_tuples,
    parse_tuple,
    parse_tuples,
    subtract_tuples,
    tuples_to_graph,
)
from halluscope.types import Claim

#: One string of each form in PROVE's released tuples (and DSG's other categories).
RELEASED_FORMS = [
    "entity - whole (dog)",
    "entity - part (dog's fur)",
    "entity - whole (salt and pepper shakers)",
    "attribute - color (dog's fur, white and black)",
    "attribute - size (rug, large)",
    "attribute - material (table, wooden)",
    "attribute - shape (window, arched)",
    "attribute - texture (wall, rough)",
    "attribute - state (door, open)",
    "attribute - type (car, sedan)",
    "attribute - text rendering (sign, \"STOP\")",
    "attribute - color (flag, red, white and blue)",
    "relation - spatial (dog, rug, on)",
    "relation - action (man, horse, riding)",
    "relation - spatial (cup, plate, in front of)",
    "relation - part (wheel, car, part of)",
    "other - count (puppies, ==4)",
    "other - count (trees, >=2)",
    "other - text (sign, STOP, GO)",
    "global - (black and white photo)",
]


@pytest.mark.parametrize("text", RELEASED_FORMS)
def test_every_released_form_round_trips_exactly(text: str) -> None:
    parsed = parse_tuple(text)
    assert parsed.text() == text
    assert parse_tuple(parsed.text()) == parsed


def test_fields_are_read_by_kind() -> None:
    rel = parse_tuple("relation - spatial (dog, rug, on)")
    assert (rel.kind, rel.subject, rel.object, rel.predicate) == ("relation", "dog", "rug", "on")
    assert rel.phrase() == "dog on rug"
    attr = parse_tuple("attribute - color (flag, red, white and blue)")
    assert (attr.kind, attr.subject, attr.value) == ("attribute", "flag", "red, white and blue")
    count = parse_tuple("other - count (puppies, ==4)")
    assert count.kind == "count" and count.number == ("==", 4) and count.phrase() == "4 puppies"
    assert parse_tuple("relation - spatial (a, b, c, d)").args == ("a", "b, c", "d")
    assert parse_tuple("entity - whole (dog)").kind == "entity"
    assert parse_tuple("global - (photo)").kind == "other"


def test_other_spacing_is_read_and_written_canonically() -> None:
    assert parse_tuple("  relation-spatial(dog,rug ,on) ").text() == "relation - spatial (dog, rug, on)"


@pytest.mark.parametrize(
    "bad",
    ["dog on rug", "entity - whole dog", "attribute - color (dog)", "relation - spatial (dog, on)",
     "other - count (puppies)", "entity - whole ()", "- whole (dog)"],
)
def test_malformed_strings_are_named(bad: str) -> None:
    with pytest.raises(TupleParseError) as error:
        parse_tuple(bad)
    assert repr(bad) in str(error.value)


def test_a_bad_tuple_in_a_list_names_item_and_position() -> None:
    with pytest.raises(TupleParseError, match=r"img7-2: tuple 1: .*'dog on rug'"):
        parse_tuples(["entity - whole (dog)", "dog on rug"], where="img7-2")
    with pytest.raises(TupleParseError, match="must be a string"):
        parse_tuple(["entity - whole (dog)"])  # type: ignore[arg-type]


def test_tuples_to_graph_and_back_keep_every_tuple() -> None:
    tuples = [t for t in RELEASED_FORMS]
    graph = tuples_to_graph(tuples, image_id="test_001", caption="Four puppies on a rug.")
    assert graph.has_entity("dog") and "white and black" in graph.attributes("dog's fur")
    assert graph.relations_between("dog", "rug") == ["on"]
    assert graph.caption == "Four puppies on a rug."
    back = {t.text() for t in graph_to_tuples(graph)}
    # every tuple comes back; entities named only inside attributes/relations/counts gain an entity tuple
    assert set(tuples) <= back
    assert back - set(tuples) <= {f"entity - whole ({n})" for n in graph.entities()}
    again = {t.text() for t in graph_to_tuples(tuples_to_graph(sorted(back)))}
    assert again == back


def test_any_scene_graph_becomes_tuples_with_inferred_kinds() -> None:
    graph = SceneGraph.from_triplets(
        [("ball", "is", "red"), ("ball", "is", "small"), ("ball", "on", "box"), ("man", "riding", "horse")],
        objects=["ball", "box", "man", "horse"],
    )
    texts = {t.text() for t in graph_to_tuples(graph)}
    assert {"entity - whole (ball)", "attribute - color (ball, red)", "attribute - size (ball, small)",
            "relation - spatial (ball, box, on)", "relation - action (man, horse, riding)"} <= texts


def test_objects_listed_more_than_once_become_counts() -> None:
    objects = ["man", "Man", "bat", "letter"] + ["letter"] * 10
    graph = SceneGraph.from_triplets([("man", "holding", "bat")], objects=objects)
    texts = [t.text() for t in graph_to_tuples(graph)]
    assert "other - count (man, ==2)" in texts and "other - count (letter, ==11)" in texts
    assert not any(t.startswith("other - count (bat") for t in texts)
    # a count the tuples themselves give is kept as given, not recounted
    back = graph_to_tuples(tuples_to_graph(["entity - whole (dog)", "other - count (dog, >=3)"]))
    assert [t.text() for t in back] == ["entity - whole (dog)", "other - count (dog, >=3)"]


def test_answer_minus_question_drops_the_facts_the_question_states() -> None:
    answer = parse_tuples(["entity - whole (The dog)", "entity - whole (rug)", "relation - spatial (dog, rug, on)",
                           "other - count (dog, ==1)", "entity - whole (rug)"])
    question = parse_tuples(["entity - whole (dog)", "relation - action (dog, the rug, on)"])
    # same fact despite case, a leading article and another subcategory; repeats dropped, wording kept
    assert [t.text() for t in subtract_tuples(answer, question)] == [
        "entity - whole (rug)", "other - count (dog, ==1)",
    ]


def test_claims_become_tuples() -> None:
    tuples = claims_to_tuples([Claim.of(("dog", "is", "brown")), Claim.of(("dog", "lying on", "sofa"))])
    assert [t.text() for t in tuples] == [
        "entity - whole (dog)", "entity - whole (sofa)", "attribute - color (dog, brown)",
        "relation - action (dog, sofa, lying on)",
    ]
    assert SceneTuple.count("dogs", 2).text() == "other - count (dogs, ==2)"
