"""Known-truth perturbations of true claims, for measuring how well a judge finds hallucinations.

Given claims that the scene graph supports (Tri-HE's ground-truth supporting triplets, or a simulator's
true statements), :func:`perturb_claims` makes false copies whose error type is known:

* ``kind="object"``: the subject or the object is replaced by the name of a thing that is *not in the
  image*: not among its objects or entities, not a WordNet synonym or kind of any of them ("animal" is not
  used when the image holds a dog, nor "puppy"), and not a word of any of its reference facts. The end
  replaced is chosen at random among those that name a thing: an object that is a property ("black",
  "standing") or a region of the frame ("background") is never replaced. Expected error: ``object``.
* ``kind="relation"``: the relation is replaced by one the scene does not record between the two ends
  (in either direction), that the lexical rules of :mod:`halluscope.scene.relations` do not consider
  equivalent to any recorded one ("on" / "sitting on", "holding" / "carrying", "has" / "wearing" are all
  avoided), and that is not a copula. Claims whose relation is a copula ("is", "appears") state
  attributes and are skipped, as are negative claims and claims about the picture or a region of it
  ("in the background", "in the image"), whose relation is not one between two things. Expected error:
  ``relation``.

The result is aligned with the input: one :class:`Perturbation` per claim, or None where the claim
cannot be perturbed (no eligible part, or no eligible replacement). Replacements come from ``pool``
(default: a built-in list of common object names or relations), drawn with ``rng`` so the result is
reproducible for a seed.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from halluscope.scene.graph import SceneGraph, normalise_name
from halluscope.scene.names import FRAME_WORDS, REGION_WORDS, NameMatcher, default_matcher, is_negated, tokens
from halluscope.scene.relations import is_copula, parse_relation, relations_equivalent
from halluscope.types import Claim, ErrorType

#: Object names used for object swaps when no pool is given (common photographed things).
DEFAULT_OBJECT_POOL: tuple[str, ...] = (
    "giraffe", "zebra", "elephant", "umbrella", "suitcase", "frisbee", "skis", "kite", "toaster", "microwave",
    "refrigerator", "scissors", "toothbrush", "teddy bear", "fire hydrant", "parking meter", "surfboard",
    "skateboard", "tennis racket", "wine glass", "broccoli", "carrot", "doughnut", "cake", "pizza",
    "sandwich",
    "banana", "apple", "bowl", "spoon", "knife", "fork", "cup", "bottle", "vase", "clock", "book", "laptop",
    "keyboard", "remote control", "cell phone", "television", "couch", "bed", "toilet", "sink", "oven",
    "chair", "table", "bench", "boat", "airplane", "train", "truck", "bus", "motorcycle", "bicycle", "car",
    "traffic light", "stop sign", "bird", "cat", "dog", "horse", "sheep", "cow", "bear", "backpack",
    "handbag", "tie", "baseball bat", "baseball glove", "lamp", "pillow", "guitar", "piano", "candle",
    "balloon", "ladder", "bucket", "tent", "flag", "snowman", "pumpkin", "trophy", "violin", "drum",
)
#: Relations used for relation swaps when no pool is given.
DEFAULT_RELATION_POOL: tuple[str, ...] = (
    "wearing", "holding", "riding", "eating", "carrying", "sitting on", "standing on", "lying on",
    "walking on", "looking at", "throwing", "pulling", "pushing", "kicking", "hitting", "drinking", "cutting",
    "reading", "using", "playing with", "hanging on", "parked on", "flying over", "jumping over",
    "leaning on",
    "covering", "under", "behind", "in front of", "above", "inside", "next to", "on top of", "attached to",
    "touching", "chasing", "feeding", "painting", "climbing", "sleeping on", "biting", "licking", "driving",
    "washing", "opening", "selling", "repairing", "cooking", "swimming in", "hiding behind",
)

PerturbationKind = Literal["object", "relation"]


@dataclass(frozen=True)
class Perturbation:
    """A false claim made from a true one; unpacks as ``(claim, expected_error)``."""

    claim: Claim
    expected_error: ErrorType
    original: Claim
    #: Which part was replaced: "subject", "object" or "relation".
    part: str

    def __iter__(self) -> Iterator[Claim | ErrorType]:
        yield self.claim
        yield self.expected_error


def perturb_claims(
    scene: SceneGraph,
    claims: Sequence[Claim],
    kind: PerturbationKind,
    rng: random.Random,
    *,
    pool: Sequence[str] | None = None,
    matcher: NameMatcher | None = None,
) -> list[Perturbation | None]:
    """One false copy per claim, None where it cannot be perturbed (see the module docstring)."""
    if kind not in ("object", "relation"):
        raise ValueError(f"perturbation kind must be 'object' or 'relation', got {kind!r}")
    matcher = matcher or default_matcher()
    if kind == "object":
        candidates = _absent_objects(scene, pool or DEFAULT_OBJECT_POOL, matcher)
        out: list[Perturbation | None] = []
        for claim in claims:
            negative = is_negated(claim.subject) or is_negated(claim.object)
            if not candidates or negative or parse_relation(claim.relation).negative:
                out.append(None)
                continue
            ends = ["subject"]
            if (
                not is_copula(claim.relation)
                and matcher.is_noun_phrase(claim.object)
                and not set(tokens(claim.object)[-1:]) & REGION_WORDS
            ):
                ends.append("object")
            part = rng.choice(ends)
            name = rng.choice(candidates)
            if part == "subject":
                new = Claim(subject=name, relation=claim.relation, object=claim.object)
            else:
                new = Claim(subject=claim.subject, relation=claim.relation, object=name)
            out.append(Perturbation(new, ErrorType.OBJECT, claim, part))
        return out

    relations = list(dict.fromkeys(r.strip() for r in (pool or DEFAULT_RELATION_POOL) if r.strip()))
    relations = [r for r in relations if not is_copula(r) and not parse_relation(r).negative]
    out = []
    for claim in claims:
        object_words = set(tokens(claim.object))
        if (
            is_copula(claim.relation)
            or parse_relation(claim.relation).negative
            or is_negated(claim.object)
            or is_negated(claim.subject)
            or object_words & (FRAME_WORDS | REGION_WORDS)
        ):
            out.append(None)
            continue
        held = _held_relations(scene, claim, matcher)
        choices = [
            r
            for r in relations
            if normalise_name(r) not in {normalise_name(h) for h in held}
            and not any(relations_equivalent(r, h) or relations_equivalent(h, r) for h in held)
        ]
        if not choices:
            out.append(None)
            continue
        new = Claim(subject=claim.subject, relation=rng.choice(choices), object=claim.object)
        out.append(Perturbation(new, ErrorType.RELATION, claim, "relation"))
    return out


def _absent_objects(scene: SceneGraph, pool: Sequence[str], matcher: NameMatcher) -> list[str]:
    """Pool names that the image holds nothing like (see the module docstring)."""
    scene_words = {w for text in scene.reference_texts for w in tokens(text)}
    scene_words |= {w for name in scene.object_names for w in tokens(name)}
    scene_words |= {w for c in scene.reference_claims for p in (c.subject, c.object) for w in tokens(p)}
    scene_names = list(dict.fromkeys([*scene.object_names, *scene.entities()]))
    absent: list[str] = []
    for name in dict.fromkeys(p.strip() for p in pool if p.strip()):
        heads = matcher.head_nouns(name)
        if not heads:
            continue
        words = set(tokens(name)) | {w for h in heads for w in h.split()}
        if words & scene_words:
            continue
        if matcher.find_in_scene(name, scene) is not None:
            continue
        if any(matcher.same_kind(name, other) for other in scene_names):
            continue
        absent.append(name)
    return absent


def _held_relations(scene: SceneGraph, claim: Claim, matcher: NameMatcher) -> list[str]:
    """The claim's own relation and every relation recorded between its two ends, either direction."""
    held = [claim.relation]
    subjects = {m.key for m in matcher.find_all_in_scene(claim.subject, scene)}
    objects = {m.key for m in matcher.find_all_in_scene(claim.object, scene)}
    for s in subjects:
        for o in objects:
            held += scene.relations_between(s, o) + scene.relations_between(o, s)
    return list(dict.fromkeys(held))


__all__ = [
    "DEFAULT_OBJECT_POOL",
    "DEFAULT_RELATION_POOL",
    "Perturbation",
    "PerturbationKind",
    "perturb_claims",
]
