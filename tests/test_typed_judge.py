"""The ``typed`` judge, its relation/attribute rules and the known-truth perturbations, on real data and models.

The perturbation evaluation judges, on 30 Tri-HE images, every ground-truth supporting triplet (true) and
a copy of each with the object or the relation swapped (false, with a known error type), and prints the
balanced accuracy and the typing accuracy.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from halluscope.benchmarks.tri_he import load_scene_graphs, load_tri_he
from halluscope.calibration.perturb import Perturbation, perturb_claims
from halluscope.embeddings import Embedder, load_embedder
from halluscope.judges import JUDGES
from halluscope.judges.typed import TypedJudge
from halluscope.scene.graph import SceneGraph
from halluscope.scene.names import default_matcher
from halluscope.scene.relations import compare_attributes, compare_relations, relations_equivalent
from halluscope.scene.triplets import parse_triplet_string
from halluscope.stages import Failure, JudgeItem
from halluscope.types import Claim, ErrorType, Support, Verdict, VerdictLabel
from tests.paths import TRI_HE_JSON

N_IMAGES = 30


class CountingEmbedder:
    """The real embedder, counting how often the judge calls it (batching is part of the contract)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.calls = 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        return self.inner.encode(texts)

    def identity(self) -> str:
        return self.inner.identity()


@pytest.fixture(scope="module")
def embedder() -> CountingEmbedder:
    start = time.perf_counter()
    inner = load_embedder(None)
    inner.encode(["warm up"])
    print(f"\nembedding model load: {time.perf_counter() - start:.2f} s")
    return CountingEmbedder(inner)


@pytest.fixture(scope="module")
def judge(embedder: CountingEmbedder) -> TypedJudge:
    made = JUDGES.create("typed", embedder=embedder)
    assert isinstance(made, TypedJudge)
    return made


@pytest.fixture(scope="module")
def tri_he() -> tuple[dict[str, Any], dict[str, SceneGraph]]:
    return load_tri_he(TRI_HE_JSON), load_scene_graphs(TRI_HE_JSON)


def desk_scene() -> SceneGraph:
    """GQA-style facts (stored reversed, as in Tri-HE) plus question facts in natural order."""
    return SceneGraph.from_triplets(
        [
            ("laptop", "is", "black"),
            ("shirt", "is", "white"),
            ("pen", "holding", "man"),
            ("shirt", "wearing", "man"),
            ("desk", "sitting at", "man"),
            ("Books", "piled", "on desk"),
            ("man", "is", "standing"),
        ],
        objects=["laptop", "pen", "shirt", "man", "desk", "books", "lamp", "hat"],
        image_id="desk",
    )


def judge_one(judge: TypedJudge, claim: tuple[str, str, str], scene: SceneGraph | None = None) -> Verdict:
    (result,) = judge.judge_many_sync([JudgeItem("s", [Claim.of(claim)], scene or desk_scene())])
    assert not isinstance(result, Failure), result
    return result[0]


# -- the rules, claim by claim -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "claim",
    [
        ("man", "holding", "pen"),  # stored reversed: (pen, holding, man)
        ("person", "holds", "a pen"),  # a person: the man; holds ~ holding
        ("the man", "is wearing", "a white shirt"),
        ("man", "has", "shirt"),  # "has" is implied by wearing
        ("man", "sitting at", "desk"),
        ("books", "on", "desk"),  # (Books, piled, on desk)
        ("laptop", "is", "black"),
        ("laptop", "appears", "black color"),
        ("man", "is", "standing"),
        ("man", "is", "visible"),
        ("lamp", "in", "the image"),
        ("image", "shows", "a lamp"),
        ("man", "not wearing", "helmet"),  # no helmet in the image, as the claim says
    ],
)
def test_supported(judge: TypedJudge, claim: tuple[str, str, str]) -> None:
    verdict = judge_one(judge, claim)
    assert verdict.label == VerdictLabel.SUPPORTED, verdict.explanation
    assert verdict.score is not None and verdict.score > 0


@pytest.mark.parametrize(
    ("claim", "error"),
    [
        (("zebra", "on", "desk"), ErrorType.OBJECT),  # subject not in the image
        (("man", "holding", "umbrella"), ErrorType.OBJECT),  # object not in the image
        (("cat", "on", "desk"), ErrorType.OBJECT),
        (("woman", "holding", "pen"), ErrorType.OBJECT),  # the image has a man, not a woman
        (("man", "eating", "pen"), ErrorType.RELATION),
        (("man", "under", "desk"), ErrorType.RELATION),  # recorded: sitting at
        (("man", "holding", "lamp"), ErrorType.RELATION),  # nothing recorded between man and lamp
        (("man", "not holding", "pen"), ErrorType.RELATION),  # the scene says he is
        (("laptop", "is", "white"), ErrorType.ATTRIBUTE),  # colours disagree
        (("shirt", "is", "striped"), ErrorType.ATTRIBUTE),
        (("pen", "is", "red"), ErrorType.ATTRIBUTE),  # no attribute of the pen is recorded
    ],
)
def test_hallucinated_with_type(judge: TypedJudge, claim: tuple[str, str, str], error: ErrorType) -> None:
    verdict = judge_one(judge, claim)
    assert verdict.label == VerdictLabel.HALLUCINATED, verdict.explanation
    assert verdict.error == error, verdict.explanation


def test_evidence_names_the_facts_used(judge: TypedJudge) -> None:
    relation = judge_one(judge, ("man", "eating", "pen"))
    assert relation.evidence == ["(man, holding, pen)"]  # stored "(pen, holding, man)", shown subject first
    missing = judge_one(judge, ("zebra", "on", "desk"))
    assert missing.evidence and "laptop" in missing.evidence[0]
    attribute = judge_one(judge, ("laptop", "is", "white"))
    assert attribute.evidence == ["(laptop, is, black)"]
    supported = judge_one(judge, ("man", "holding", "pen"))
    assert supported.evidence == ["(man, holding, pen)"] and supported.explanation


def test_unjudged_parts(judge: TypedJudge) -> None:
    assert judge_one(judge, ("it", "on", "desk")).label == VerdictLabel.UNJUDGED
    assert judge_one(judge, ("man", "in", "the background")).label == VerdictLabel.UNJUDGED


def test_directed_option_uses_stored_direction(embedder: CountingEmbedder) -> None:
    directed = TypedJudge(directed=True, embedder=embedder)
    verdict = judge_one(directed, ("man", "holding", "pen"))
    assert verdict.label == VerdictLabel.HALLUCINATED and verdict.error == ErrorType.RELATION


def test_embeddings_decide_what_the_rules_cannot(judge: TypedJudge) -> None:
    scene = SceneGraph.from_triplets([("man", "taking a picture of", "dog")], objects=["man", "dog"])
    claim = ("man", "photographing", "dog")
    assert compare_relations("photographing", "taking a picture of") is None  # undecided by the rules
    assert judge_one(judge, claim, scene).label == VerdictLabel.SUPPORTED
    lexical = TypedJudge(model="none")
    verdict = judge_one(lexical, claim, scene)
    assert verdict.label == VerdictLabel.HALLUCINATED and verdict.error == ErrorType.RELATION
    assert lexical.identity()["model"] is None


def test_one_embedding_call_for_a_whole_batch(judge: TypedJudge, embedder: CountingEmbedder) -> None:
    scene = SceneGraph.from_triplets(
        [("man", "taking a picture of", "dog"), ("dog", "is", "wooden")], objects=["man", "dog"]
    )
    items = [
        JudgeItem(str(i), [Claim.of(("man", verb, "dog")), Claim.of(("dog", "is", attr))], scene)
        for i, (verb, attr) in enumerate(
            [("photographing", "wood"), ("filming", "plastic"), ("kicking", "old")]
        )
    ]
    before = embedder.calls
    results = judge.judge_many_sync(items)
    assert embedder.calls - before == 1
    assert all(isinstance(r, list) and len(r) == 2 for r in results)


async def test_failures_stay_with_their_item(judge: TypedJudge) -> None:
    good = JudgeItem("good", [Claim.of(("man", "holding", "pen"))], desk_scene())
    bad = JudgeItem("bad", [Claim.of(("man", "holding", "pen"))], None)  # type: ignore[arg-type]
    empty = JudgeItem("empty", [], desk_scene())
    results = await judge.judge_many([good, bad, empty])
    assert isinstance(results[0], list) and results[0][0].label == VerdictLabel.SUPPORTED
    assert isinstance(results[1], Failure) and "'bad'" in results[1].reason
    assert results[2] == []


def test_options_and_identity(embedder: CountingEmbedder) -> None:
    with pytest.raises(ValueError, match="unknown option"):
        TypedJudge(threshold=0.5)
    with pytest.raises(ValueError, match="relation_threshold"):
        TypedJudge(relation_threshold=2)
    with pytest.raises(ValueError, match="max_depth"):
        TypedJudge(max_depth=-1)
    identity = TypedJudge(relation_threshold=0.7, embedder=embedder).identity()
    assert identity["judge"] == "typed" and identity["relation_threshold"] == 0.7
    assert "MiniLM" in str(identity["model"])
    assert TypedJudge().identity() == TypedJudge().identity()  # stable without loading the model


# -- the lexical rules -------------------------------------------------------------------------------------

SAME_RELATION = [
    ("sitting on", "on"),
    ("wearing", "dressed in"),
    ("wearing", "has on"),
    ("next to", "beside"),
    ("near", "close to"),
    ("holding", "carrying"),
    ("standing on", "on"),
    ("riding", "on"),
    ("on top of", "on"),
    ("looking at", "watching"),
    ("in", "inside"),
    ("under", "below"),
    ("has", "with"),
    ("covered in", "covered with"),
    ("lying on", "laying on"),
    ("holding", "grasping"),
    ("parked on", "on"),
    ("eating", "biting"),
    ("behind", "in back of"),
    ("sitting at", "at"),
    ("wearing", "in"),
    ("standing in", "in"),
    ("above", "over"),
    ("placed on", "located on"),
    ("photographing", "taking a picture of"),
    ("smiling at", "grinning at"),
    ("talking to", "speaking with"),
    ("hugging", "embracing"),
]
DIFFERENT_RELATION = [
    ("eating", "wearing"),
    ("under", "on"),
    ("behind", "in front of"),
    ("holding", "throwing"),
    ("riding", "pushing"),
    ("sitting on", "under"),
    ("looking at", "kicking"),
    ("next to", "inside"),
    ("above", "below"),
    ("carrying", "sleeping on"),
    ("on", "flying over"),
    ("watching", "cutting"),
    ("in", "on top of"),
    ("holding", "pulling"),
    ("standing on", "hanging from"),
    ("using", "chasing"),
    ("parked on", "jumping over"),
    ("near", "inside"),
    ("reading", "riding"),
    ("drinking", "wearing"),
    ("sitting at", "lying under"),
    ("not wearing", "wearing"),
    ("catching", "throwing"),
    ("feeding", "eating"),
    ("hugging", "hitting"),
    ("cooking", "eating"),
    ("opening", "closing"),
]


def test_relation_pairs_through_the_judge(judge: TypedJudge) -> None:
    """Hand-labelled relation pairs: rules first, embeddings for the rest; accuracy printed and bounded."""
    pairs = [(a, b, True) for a, b in SAME_RELATION] + [(a, b, False) for a, b in DIFFERENT_RELATION]
    items = [
        JudgeItem(f"{a}|{b}", [Claim.of(("man", a, "dog"))], SceneGraph.from_triplets([("man", b, "dog")]))
        for a, b, _ in pairs
    ]
    results = judge.judge_many_sync(items)
    correct = 0
    for (_, _, same), result in zip(pairs, results, strict=True):
        assert isinstance(result, list)
        correct += (result[0].label == VerdictLabel.SUPPORTED) == same
    accuracy = correct / len(pairs)
    print(f"\nrelation pairs: {correct}/{len(pairs)} = {accuracy:.3f}")
    assert accuracy >= 0.9
    for a, b in DIFFERENT_RELATION:  # the rules never call two different relations the same
        assert not relations_equivalent(a, b), (a, b)


@pytest.mark.parametrize(
    ("claimed", "recorded", "expected"),
    [
        ("red", "red color", 1.0),
        ("white", "red and white", 0.9),
        ("red", "white", 0.0),
        ("green", "green and lush", 0.9),
        ("light blue", "blue", 0.9),
        ("open", "closed", 0.0),
        ("large", "big", 0.9),
        ("smiling", "smile", 1.0),
        ("wet", "dry", 0.0),
        ("not red", "red", 0.0),
    ],
)
def test_attribute_rules(claimed: str, recorded: str, expected: float) -> None:
    assert compare_attributes(claimed, recorded) == expected


# -- known-truth perturbations on Tri-HE -------------------------------------------------------------------


def _ground_truth(raw: dict[str, Any], image_id: str) -> list[Claim]:
    claims = [
        c for inst in raw[image_id]["instance"] for t in inst["triplet"] for c in parse_triplet_string(t)
    ]
    return list(dict.fromkeys(claims))


@pytest.mark.full_data
def test_perturbations_are_false_by_construction(
    tri_he: tuple[dict[str, Any], dict[str, SceneGraph]],
) -> None:
    raw, scenes = tri_he
    matcher = default_matcher()
    image_id = "2374892"
    truth = _ground_truth(raw, image_id)
    scene = scenes[image_id]
    objects = perturb_claims(scene, truth, "object", random.Random(0))
    relations = perturb_claims(scene, truth, "relation", random.Random(0))
    assert len(objects) == len(truth) == len(relations)  # aligned with the input, None where impossible
    for p in objects:
        assert p is not None
        claim, error = p  # unpacks as (claim, expected_error)
        assert error == ErrorType.OBJECT
        swapped = claim.subject if p.part == "subject" else claim.object
        assert matcher.find_in_scene(swapped, scene) is None, swapped
    for p in relations:
        if p is None:
            continue
        assert p.expected_error == ErrorType.RELATION and p.claim.relation != p.original.relation
        assert not relations_equivalent(p.claim.relation, p.original.relation)
    again = perturb_claims(scene, truth, "object", random.Random(0))
    assert [p.claim for p in again if p] == [p.claim for p in objects if p]  # reproducible for a seed
    with pytest.raises(ValueError, match="kind"):
        perturb_claims(scene, truth, "attribute", random.Random(0))  # type: ignore[arg-type]


def _recall(false: list[tuple[Verdict, ErrorType]], kind: ErrorType) -> float:
    found = [float(v.label == VerdictLabel.HALLUCINATED) for v, e in false if e == kind]
    return round(statistics.mean(found), 3)


@pytest.mark.full_data
def test_separates_perturbed_from_original_claims_on_tri_he(
    judge: TypedJudge, tri_he: tuple[dict[str, Any], dict[str, SceneGraph]]
) -> None:
    raw, scenes = tri_he
    chosen = random.Random(0).sample(sorted(raw), N_IMAGES)
    items: list[JudgeItem] = []
    expected: list[ErrorType | None] = []
    for image_id in chosen:
        scene = scenes[image_id]
        truth = _ground_truth(raw, image_id)
        perturbed: list[Perturbation | None] = [
            *perturb_claims(scene, truth, "object", random.Random(1)),
            *perturb_claims(scene, truth, "relation", random.Random(2)),
        ]
        for claim in truth:
            items.append(JudgeItem(image_id, [claim], scene))
            expected.append(None)
        for p in perturbed:
            if p is not None:
                items.append(JudgeItem(image_id, [p.claim], scene))
                expected.append(p.expected_error)
    start = time.perf_counter()
    results = judge.judge_many_sync(items)
    elapsed = time.perf_counter() - start
    verdicts = [r[0] for r in results if isinstance(r, list)]
    assert len(verdicts) == len(items)
    originals = [v for v, e in zip(verdicts, expected, strict=True) if e is None]
    false: list[tuple[Verdict, ErrorType]] = [
        (v, e) for v, e in zip(verdicts, expected, strict=True) if e is not None
    ]
    specificity = statistics.mean(float(v.label == VerdictLabel.SUPPORTED) for v in originals)
    recall = statistics.mean(float(v.label == VerdictLabel.HALLUCINATED) for v, _ in false)
    caught = [(v, e) for v, e in false if v.label == VerdictLabel.HALLUCINATED]
    typing = statistics.mean(float(v.error == e) for v, e in caught)
    balanced = (specificity + recall) / 2
    by_kind = {kind.value: _recall(false, kind) for kind in (ErrorType.OBJECT, ErrorType.RELATION)}
    print(
        f"\ntyped judge on {N_IMAGES} Tri-HE images: {len(originals)} true claims, {len(false)} perturbed "
        f"({by_kind}); specificity {specificity:.3f}, recall {recall:.3f}, balanced accuracy {balanced:.3f}, "
        f"object/relation typing {typing:.3f}; judged in {elapsed:.1f} s"
    )
    assert balanced >= 0.95
    assert typing >= 0.95
    assert min(by_kind.values()) >= 0.9


@pytest.mark.full_data
def test_rules_and_typed_tell_right_answers_from_answers_about_another_image(
    judge: TypedJudge, tri_he: tuple[dict[str, Any], dict[str, SceneGraph]]
) -> None:
    """End to end, offline: Tri-HE's reference answers vs each question answered with another image's answer."""
    from halluscope.claims.rules import RulesExtractor

    raw, scenes = tri_he
    chosen = random.Random(0).sample(sorted(raw), N_IMAGES)
    questions = [(image_id, inst["answer"]) for image_id in chosen for inst in raw[image_id]["instance"]]
    others = [image_id for image_id in sorted(raw) if image_id not in chosen]
    elsewhere = [inst["answer"] for image_id in others for inst in raw[image_id]["instance"]]
    rng = random.Random(5)
    swapped = [(image_id, rng.choice(elsewhere)) for image_id, _ in questions]
    extracted = RulesExtractor().extract_many_sync([answer for _, answer in questions + swapped])
    items = [
        JudgeItem(str(i), claims, scenes[image_id])
        for i, ((image_id, _), claims) in enumerate(zip(questions + swapped, extracted, strict=True))
        if isinstance(claims, list)
    ]
    assert len(items) == 2 * len(questions)
    results = judge.judge_many_sync(items)

    def hallu_q(part: list[list[Verdict] | Failure], default: bool = False) -> float:
        rates = [
            statistics.mean(
                float(v.support == Support.CONTRADICTED if default else v.label == VerdictLabel.HALLUCINATED)
                for v in judged
            )
            for verdicts in part
            if isinstance(verdicts, list)
            and (judged := [v for v in verdicts if v.label != VerdictLabel.UNJUDGED])
        ]
        return 100 * statistics.mean(rates)

    right, wrong = hallu_q(results[: len(questions)]), hallu_q(results[len(questions) :])
    right_c, wrong_c = (hallu_q(results[: len(questions)], True), hallu_q(results[len(questions) :], True))
    print(
        f"\nrules + typed, {len(questions)} questions: Hallu-Q {right:.1f} (reference answers) vs {wrong:.1f} "
        f"(answers about another image); contradicted {right_c:.1f} vs {wrong_c:.1f}"
    )
    # Tri-HE's reading (anything unsupported is hallucinated) and the default one (contradicted or absent)
    # both rate answers about another image far worse than the right answers.
    assert wrong > 75
    assert right < wrong - 20
    assert wrong_c > right_c + 15


@pytest.mark.parametrize(
    ("claim", "label"),
    [
        (("shirt", "is not", "white"), VerdictLabel.HALLUCINATED),  # recorded: white
        (("laptop", "is not", "white"), VerdictLabel.SUPPORTED),  # recorded: black
        (("no zebra", "on", "desk"), VerdictLabel.SUPPORTED),
        (("image", "shows", "no lamp"), VerdictLabel.HALLUCINATED),
    ],
)
def test_negative_claims(judge: TypedJudge, claim: tuple[str, str, str], label: VerdictLabel) -> None:
    assert judge_one(judge, claim).label == label


def test_opposite_spatial_directions_and_colour_against_size_do_not_support_each_other() -> None:
    from halluscope.scene.relations import compare_attributes, compare_relations

    assert compare_relations("to the right of", "to the left of") == 0.0
    assert compare_relations("above", "below") == 0.0
    assert compare_relations("in front of", "behind") == 0.0
    assert compare_attributes("purple", "large") is None  # a colour neither supports nor refutes a size
    assert compare_attributes("large", "small") == 0.0


def test_a_reversed_spatial_relation_is_not_support() -> None:
    import asyncio

    from halluscope.judges.typed import TypedJudge
    from halluscope.scene.graph import SceneGraph
    from halluscope.stages import JudgeItem
    from halluscope.types import Claim, ErrorType, VerdictLabel

    scene = SceneGraph.from_triplets(
        [("star", "to the right of", "triangle"), ("shirt", "wearing", "man")],
        objects=["star", "triangle", "man", "shirt"],
    )
    claims = [
        Claim.of(("triangle", "to the right of", "star")),  # reversed spatial: false
        Claim.of(("star", "to the right of", "triangle")),  # as recorded: true
        Claim.of(("man", "wearing", "shirt")),  # GQA stores this object-first: still supported
    ]
    judge = TypedJudge(model="none")
    (verdicts,) = asyncio.run(judge.judge_many([JudgeItem(sample_id="x", claims=claims, scene=scene)]))
    assert not isinstance(verdicts, Exception)
    assert [v.label for v in verdicts] == [
        VerdictLabel.HALLUCINATED,
        VerdictLabel.SUPPORTED,
        VerdictLabel.SUPPORTED,
    ]
    assert verdicts[0].error == ErrorType.RELATION
