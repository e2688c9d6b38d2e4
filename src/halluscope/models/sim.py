"""Simulated answerers: calibration tools for the instrument, not vision-language models.

A simulator reads the image's scene graph (``request.scene``), picks the facts that answer the question,
and states them in plain template sentences. ``sim/oracle`` states only true facts;
``sim/hallucinate?object=0.2&relation=0.3&attribute=0.1&seed=0`` falsifies each stated fact with the given
probabilities, in one of three ways:

- **object**: the subject or the object is replaced by a thing absent from the image ("the vase is on the
  box");
- **relation**: the relation is replaced by one that does not hold (on synthetic scenes, one of the
  scene's clearly false relations; elsewhere the opposite relation or another spatial one the graph does
  not hold for the pair);
- **attribute**: an attribute is replaced by a wrong one of the same kind (another colour, the other size).

Rates are per fact and exclusive: a relation fact is falsified with probability ``object + relation``, an
attribute fact with ``object + attribute`` (each sum at most 1). ``rate=r`` is shorthand for
``object = relation = attribute = r/2``, so every fact is falsified with probability ``r``.

Each answer records in ``GenerateResult.metadata``: ``claims`` (the stated facts as [s, r, o], which the
responses collector turns into pre-extracted claims, so no extractor stands between the truth and the
judge) and ``sim`` (for each claim whether it was falsified, how, and the true fact it replaced). That is
what makes the truth known: a judge's verdicts can be scored claim by claim.

Answers are deterministic: the random stream of a request depends on the seed, the sample id, the question
and the scene, but not on the rates, so raising a rate only adds falsified facts (a fact falsified at 0.1
is also falsified at 0.2), which makes calibration curves smooth.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, Field, model_validator

from halluscope.cache import Cache, content_key
from halluscope.models.base import GenerateRequest, GenerateResult, Model
from halluscope.scene.direction import is_plural, orient_fact, oriented, relation_sentence
from halluscope.scene.graph import ATTRIBUTE_RELATIONS, SceneGraph, normalise_name
from halluscope.types import Claim, ErrorType

SIM_VERSION = 1

#: Things a hallucinating simulator may mention although they are not in the image.
ABSENT_OBJECTS = (
    "ball", "box", "triangle", "star", "cup", "ring", "bowl", "table",
    "vase", "book", "apple", "lamp", "bottle", "chair", "clock", "umbrella", "plant", "hat", "shoe",
    "banana", "kite", "guitar", "teddy bear", "laptop", "candle", "basket",
)
COLOUR_WORDS = (
    "red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "black", "white", "gray", "grey",
)
SIZE_OPPOSITES = {
    "small": "large", "large": "small", "big": "small", "little": "large", "tiny": "huge", "huge": "tiny",
    "tall": "short", "short": "tall",
}
SPATIAL_RELATIONS = (
    "to the left of", "to the right of", "above", "below", "on", "next to", "in front of", "behind",
    "under", "inside",
)
OPPOSITE_RELATION = {
    "to the left of": "to the right of", "to the right of": "to the left of", "left of": "right of",
    "right of": "left of", "above": "below", "below": "above", "on": "under", "on top of": "under",
    "under": "on", "beneath": "on", "in front of": "behind", "behind": "in front of", "inside": "outside",
    "in": "outside", "next to": "far from", "near": "far from", "holding": "dropping", "wearing": "holding",
}
#: Relations that say nearly the same thing; a falsification must not swap one for its near-synonym.
SYNONYMS = (
    {"on", "on top of", "atop", "above", "resting on", "sitting on", "standing on", "lying on"},
    {"under", "below", "beneath", "underneath"},
    {"next to", "beside", "near", "by", "close to"},
    {"in front of", "before"},
    {"behind", "in back of"},
    {"in", "inside", "within"},
    {"to the left of", "left of"},
    {"to the right of", "right of"},
)


class SimError(ValueError):
    """A simulator cannot answer: no scene graph, or bad rates."""


class ErrorRates(BaseModel):
    """Per-fact probabilities of each kind of falsification."""

    object: float = 0.0
    relation: float = 0.0
    attribute: float = 0.0

    @model_validator(mode="after")
    def _check(self) -> ErrorRates:
        for name in ("object", "relation", "attribute"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"rate {name}={value} must be between 0 and 1")
        if self.object + self.relation > 1.0 + 1e-9 or self.object + self.attribute > 1.0 + 1e-9:
            raise ValueError(
                "rates are exclusive per fact: object + relation and object + attribute must each be <= 1 "
                f"(got object={self.object}, relation={self.relation}, attribute={self.attribute})"
            )
        return self

    @classmethod
    def uniform(cls, rate: float) -> ErrorRates:
        """Every fact falsified with probability ``rate``, half by object and half by its own kind."""
        return cls(object=rate / 2, relation=rate / 2, attribute=rate / 2)


class StatedClaim(BaseModel):
    """One fact as the simulator stated it, and whether it was made false."""

    subject: str
    relation: str
    object: str
    falsified: bool = False
    error: ErrorType | None = None
    #: The true fact the falsified claim replaced.
    original: list[str] | None = None

    def claim(self) -> Claim:
        return Claim(subject=self.subject, relation=self.relation, object=self.object)


class SimAnswer(BaseModel):
    """What a simulator records about one answer (``GenerateResult.metadata["sim"]``)."""

    model: str
    calibration_tool: bool = True
    rates: ErrorRates
    seed: int
    claims: list[StatedClaim] = Field(default_factory=list)

    @property
    def falsified(self) -> int:
        return sum(c.falsified for c in self.claims)


# -- what the scene says --------------------------------------------------------------------------------


def _is_object_entity(scene: SceneGraph, name: str) -> bool:
    key = normalise_name(name)
    return key in scene.graph and bool(scene.graph.nodes[key].get("is_object", False))


def is_attribute_claim(scene: SceneGraph, claim: Claim) -> bool:
    """A fact stating a property of one entity ("ball is red") rather than linking two."""
    if claim.object in scene.attributes(claim.subject):
        return True
    return claim.relation.lower() in ATTRIBUTE_RELATIONS and not _is_object_entity(scene, claim.object)


def _entity_facts(scene: SceneGraph, name: str) -> list[Claim]:
    facts = [Claim(subject=scene.graph.nodes[normalise_name(name)]["name"], relation="is", object=a)
             for a in scene.attributes(name)]
    facts += [Claim(subject=r.subject, relation=r.predicate, object=r.object) for r in scene.outgoing(name)]
    return facts


def _mentioned(scene: SceneGraph, text: str) -> list[str]:
    """Entities named in the text, longest names first so "coffee table" wins over "table"."""
    lowered = f" {normalise_name(re.sub(r'[^A-Za-z0-9 ]', ' ', text))} "
    found: list[tuple[int, str]] = []
    for name in sorted(scene.entities(objects_only=True), key=len, reverse=True):
        key = normalise_name(name)
        for form in (key, key + "s", key + "es"):
            position = lowered.find(f" {form} ")
            if position >= 0 and not any(key in other for _, other in found):
                found.append((position, key))
                break
    return [name for _, name in sorted(found)]


_WHAT_IS = re.compile(r"^what (?:is|are) (?P<rel>.+) the (?P<obj>.+?)\?*$", re.IGNORECASE)
_COLOUR_OF = re.compile(
    r"^what colou?r is the (?:object|thing) (?P<rel>.+) the (?P<obj>.+?)\?*$", re.IGNORECASE
)
_WHERE = re.compile(
    r"^where is the (?P<subj>.+?) (?:relative|in relation) to the (?P<obj>.+?)\?*$", re.IGNORECASE
)
_LOOKS = re.compile(r"^what does the (?P<subj>.+?) look like\?*$", re.IGNORECASE)


def _relation_subjects(scene: SceneGraph, relation: str, obj: str) -> list[str]:
    return [r.subject for r in scene.incoming(obj) if r.predicate.lower() == relation.lower()]


def facts_for_question(scene: SceneGraph, question: str, max_facts: int = 6) -> list[Claim]:
    """The true facts that answer ``question``, read from the scene graph.

    Recognises the synthetic benchmark's question forms (which are also ordinary English questions);
    otherwise states what the scene says about the entities the question names, or, if it names none,
    describes the scene. Never invents: every returned fact is in the graph.
    """
    text = " ".join(question.strip().split())
    match = _COLOUR_OF.match(text)
    if match and scene.has_entity(match["obj"]):
        facts: list[Claim] = []
        for subject in _relation_subjects(scene, match["rel"], match["obj"]):
            facts.append(Claim(subject=subject, relation=match["rel"], object=match["obj"]))
            facts += [Claim(subject=subject, relation="is", object=a) for a in scene.attributes(subject)
                      if a.lower() in COLOUR_WORDS]
        if facts:
            return facts
    match = _WHAT_IS.match(text)
    if match and scene.has_entity(match["obj"]):
        subjects = _relation_subjects(scene, match["rel"], match["obj"])
        if subjects:
            return [Claim(subject=s, relation=match["rel"], object=match["obj"]) for s in subjects]
    match = _WHERE.match(text)
    if match and scene.has_entity(match["subj"]) and scene.has_entity(match["obj"]):
        relations = scene.relations_between(match["subj"], match["obj"])
        if relations:
            return [Claim(subject=match["subj"], relation=r, object=match["obj"]) for r in relations]
    match = _LOOKS.match(text)
    if match and scene.attributes(match["subj"]):
        subject = match["subj"]
        return [Claim(subject=subject, relation="is", object=a) for a in scene.attributes(subject)]

    mentioned = _mentioned(scene, text)
    facts = []
    if mentioned:
        for name in mentioned:
            facts += [f for f in _entity_facts(scene, name) if f not in facts]
        # facts linking the mentioned entities first
        linking = [f for f in facts if normalise_name(f.object) in mentioned]
        facts = linking + [f for f in facts if f not in linking]
        return facts[:max_facts]
    return describe_facts(scene, max(max_facts, 12))


#: Relations a description prefers, so it says "the cup is on the box" rather than "the box is below the cup".
_DESCRIBE_ORDER = ("on", "in front of", "above", "next to", "to the left of")


def describe_facts(scene: SceneGraph, limit: int = 12) -> list[Claim]:
    """A description: each object's attributes, then one relation per pair of objects (preferred first)."""
    facts: list[Claim] = []
    for name in scene.entities(objects_only=True):
        facts += [Claim(subject=name, relation="is", object=a) for a in scene.attributes(name)]
    def rank(predicate: str) -> int:
        return _DESCRIBE_ORDER.index(predicate) if predicate in _DESCRIBE_ORDER else len(_DESCRIBE_ORDER)

    relations = sorted(scene.relations(), key=lambda r: rank(r.predicate))
    described: set[frozenset[str]] = set()
    for r in relations:
        pair = frozenset((normalise_name(r.subject), normalise_name(r.object)))
        if pair not in described:
            described.add(pair)
            facts.append(Claim(subject=r.subject, relation=r.predicate, object=r.object))
    if not facts:
        facts = list(scene.reference_claims)
    return facts[:limit]


def _in_reading_order(scene: SceneGraph, fact: Claim) -> Claim:
    """A supplied fact with its subject first (the graph's reading when it records the fact)."""
    if is_attribute_claim(scene, fact):
        return fact
    subject, obj = orient_fact(scene, fact.subject, fact.relation, fact.object)
    return fact if subject == fact.subject else Claim(subject=subject, relation=fact.relation, object=obj)


def _parse_supplied(value: Any) -> list[Claim] | None:
    """Facts handed over in the request's metadata: [[s, r, o], ...] or Tri-HE strings "(s, r, o)"."""
    if not isinstance(value, list) or not value:
        return None
    from halluscope.scene.triplets import parse_triplet_string

    claims: list[Claim] = []
    for item in value:
        if isinstance(item, str):
            claims += parse_triplet_string(item)
        else:
            claims.append(Claim.of(item))
    return claims


# -- falsifying ----------------------------------------------------------------------------------------------


def _present(scene: SceneGraph, candidate: str) -> bool:
    words = set(candidate.split())
    for name in scene.entities():
        key = normalise_name(name)
        forms = {key, key + "s", key + "es", key.removesuffix("s"), key.removesuffix("es")}
        if candidate in forms or words & set(key.split()) or candidate in key:
            return True
    return False


def absent_object(scene: SceneGraph, rng: random.Random, avoid: Sequence[str] = ()) -> str:
    """A thing that is not in the image (nor named like anything in it)."""
    options = [c for c in ABSENT_OBJECTS if c not in avoid and not _present(scene, c)]
    if not options:
        raise SimError(f"no absent object left for scene {scene.image_id!r}")
    return rng.choice(options)


def _synonym_set(relation: str) -> set[str]:
    lowered = relation.lower()
    for group in SYNONYMS:
        if lowered in group:
            return set(group)
    return {lowered}


def false_relation(scene: SceneGraph, claim: Claim, rng: random.Random) -> str | None:
    """A relation that does not hold between the claim's subject and object, or None if none is known."""
    known_false = scene.graph.graph.get("false_relations")
    if known_false is not None:
        s, o = normalise_name(claim.subject), normalise_name(claim.object)
        options = sorted(
            {r for fs, r, fo in known_false if normalise_name(fs) == s and normalise_name(fo) == o}
        )
        return rng.choice(options) if options else None
    held = {p.lower() for p in scene.relations_between(claim.subject, claim.object)}
    blocked = set().union(*(_synonym_set(p) for p in held | {claim.relation}))
    opposite = OPPOSITE_RELATION.get(claim.relation.lower())
    if opposite and opposite not in blocked:
        return opposite
    options = [r for r in SPATIAL_RELATIONS if r not in blocked]
    return rng.choice(options) if options else None


def false_attribute(scene: SceneGraph, claim: Claim, rng: random.Random) -> str:
    """A wrong attribute of the same kind: another colour, the opposite size; else a colour it lacks."""
    held = {a.lower() for a in scene.attributes(claim.subject)}
    value = claim.object.lower()
    if value in SIZE_OPPOSITES and SIZE_OPPOSITES[value] not in held:
        return SIZE_OPPOSITES[value]
    colours = [c for c in COLOUR_WORDS[:8] if c not in held and c != value]
    return rng.choice(colours)


def falsify(scene: SceneGraph, claim: Claim, error: ErrorType, rng: random.Random) -> Claim | None:
    """The claim made false in the given way, or None where that is impossible for this claim."""
    attribute = is_attribute_claim(scene, claim)
    if error == ErrorType.OBJECT:
        avoid = [normalise_name(claim.subject), normalise_name(claim.object)]
        stranger = absent_object(scene, rng, avoid=avoid)
        if attribute or not _is_object_entity(scene, claim.object) or rng.random() < 0.5:
            return Claim(subject=stranger, relation=claim.relation, object=claim.object)
        return Claim(subject=claim.subject, relation=claim.relation, object=stranger)
    if error == ErrorType.RELATION:
        if attribute:
            return None
        relation = false_relation(scene, claim, rng)
        return Claim(subject=claim.subject, relation=relation, object=claim.object) if relation else None
    if not attribute:
        return None
    return Claim(subject=claim.subject, relation=claim.relation, object=false_attribute(scene, claim, rng))


# -- sentences ---------------------------------------------------------------------------------------------


def _the(name: str) -> str:
    if name[:1].isupper() and name[1:2].islower():
        name = name[0].lower() + name[1:]
    determiners = {"the", "a", "an", "his", "her", "their", "its"}
    return name if name.split()[0].lower() in determiners else f"the {name}"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def render_answer(claims: Sequence[StatedClaim], scene: SceneGraph) -> str:
    """Plain sentences stating each claim: attributes of one subject together, then one per relation."""
    sentences: list[str] = []
    subjects: list[str] = []
    attributes: dict[str, list[str]] = {}
    relations: dict[str, list[StatedClaim]] = {}
    for stated in claims:
        claim = stated.claim()
        if stated.subject not in subjects:
            subjects.append(stated.subject)
        if is_attribute_claim(scene, claim) or (stated.error == ErrorType.ATTRIBUTE):
            attributes.setdefault(stated.subject, []).append(stated.object)
        else:
            relations.setdefault(stated.subject, []).append(stated)
    for subject in subjects:
        values = attributes.get(subject, [])
        if values:
            listed = values[0] if len(values) == 1 else ", ".join(values[:-1]) + " and " + values[-1]
            copula = "are" if is_plural(subject) else "is"
            sentences.append(_capital(f"{_the(subject)} {copula} {listed}."))
        for stated in relations.get(subject, []):
            sentences.append(
                relation_sentence(
                    stated.subject,
                    stated.relation,
                    stated.object,
                    object_is_thing=_is_object_entity(scene, stated.object) or not scene.has_entity(stated.object),
                )
            )
    return " ".join(sentences) if sentences else "I cannot tell from this image."


# -- the model ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Variant:
    name: str
    description: str


VARIANTS = {
    "oracle": _Variant("oracle", "states only true facts from the scene graph"),
    "hallucinate": _Variant("hallucinate", "falsifies facts at the given rates"),
}


class SimModel(Model):
    """A scene-graph simulator with known errors, for calibrating judges and metrics (not a VLM)."""

    provider: ClassVar[str] = "sim"

    def __init__(self, variant: str = "oracle", rates: ErrorRates | None = None, seed: int = 0,
                 max_facts: int = 6) -> None:
        if variant not in VARIANTS:
            choices = ", ".join(f"sim/{v}" for v in VARIANTS)
            raise SimError(f"unknown simulator {variant!r}; choose one of: {choices}")
        self.variant = variant
        self.rates = rates or ErrorRates()
        if variant == "oracle" and (self.rates.object or self.rates.relation or self.rates.attribute):
            raise SimError(
                "sim/oracle states only true facts; use sim/hallucinate?object=...&relation=... for errors"
            )
        self.seed = seed
        self.max_facts = max_facts

    @classmethod
    def from_spec(
        cls,
        spec: str,
        *,
        cache: Cache | None = None,
        object: float | None = None,
        relation: float | None = None,
        attribute: float | None = None,
        rate: float | None = None,
        seed: int = 0,
        max_facts: int = 6,
    ) -> SimModel:
        """``oracle`` or ``hallucinate``; rates as options (``sim/hallucinate?object=0.2&relation=0.3``).

        A spec that still holds its ``?options`` (when called directly rather than through the model-spec
        parser) is read too.
        """
        variant, _, query = spec.partition("?")
        options: dict[str, Any] = {}
        for part in filter(None, query.split("&")):
            key, _, value = part.partition("=")
            options[key.strip()] = value.strip()
        given = {"object": object, "relation": relation, "attribute": attribute, "rate": rate}
        for key, value in options.items():
            if key not in {*given, "seed", "max_facts"}:
                raise SimError(
                    f"sim does not take option {key!r}; "
                    "it takes: object, relation, attribute, rate, seed, max_facts"
                )
            if key == "seed":
                seed = int(value)
            elif key == "max_facts":
                max_facts = int(value)
            else:
                given[key] = float(value)
        if given["rate"] is not None:
            if any(given[k] is not None for k in ("object", "relation", "attribute")):
                raise SimError("give either rate=r or object/relation/attribute rates, not both")
            rates = ErrorRates.uniform(float(given["rate"]))
        else:
            rates = ErrorRates(**{k: float(v) for k, v in given.items() if k != "rate" and v is not None})
        return cls(variant.strip() or "oracle", rates, seed=int(seed), max_facts=int(max_facts))

    def name(self) -> str:
        """The spec that recreates this simulator, e.g. ``sim/hallucinate?object=0.2&relation=0.3&seed=0``."""
        if self.variant == "oracle":
            return "sim/oracle" if self.seed == 0 else f"sim/oracle?seed={self.seed}"
        parts = [f"{k}={v:g}" for k, v in self.rates.model_dump().items() if v]
        return f"sim/hallucinate?{'&'.join([*parts, f'seed={self.seed}'])}"

    def identity(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "name": self.name().removeprefix("sim/"),
            "rates": self.rates.model_dump(),
            "seed": self.seed,
            "max_facts": self.max_facts,
            "version": SIM_VERSION,
            "calibration_tool": True,
        }

    def answer(self, scene: SceneGraph, question: str, *, sample_id: str | None = None,
               facts: Sequence[Claim] | None = None) -> SimAnswer:
        """The stated claims for one question (the text follows from them with :func:`render_answer`).

        Facts are stated in reading order (:mod:`halluscope.scene.direction`): Tri-HE's "(shirt, wearing,
        man)" becomes "the man is wearing the shirt", never "the shirt is wearing the man".
        """
        base = content_key("halluscope-sim", self.seed, sample_id, question, scene.fingerprint())
        original = scene
        scene = oriented(scene)
        if facts:
            chosen = list(dict.fromkeys(_in_reading_order(original, f) for f in facts))
        else:
            chosen = facts_for_question(scene, question, self.max_facts)
        decide = random.Random(int(base[:16], 16))
        rates = self.rates
        stated: list[StatedClaim] = []
        for index, fact in enumerate(chosen):
            u = decide.random()  # drawn for every fact, so the stream never depends on the rates
            attribute = is_attribute_claim(scene, fact)
            own_kind = ErrorType.ATTRIBUTE if attribute else ErrorType.RELATION
            own_rate = rates.attribute if attribute else rates.relation
            error: ErrorType | None = None
            if u < rates.object:
                error = ErrorType.OBJECT
            elif u < rates.object + own_rate:
                error = own_kind
            replaced = None
            if error is not None:
                replaced = falsify(scene, fact, error, random.Random(f"{base}:{index}"))
            if replaced is None or replaced in chosen:
                stated.append(StatedClaim(subject=fact.subject, relation=fact.relation, object=fact.object))
            else:
                stated.append(StatedClaim(subject=replaced.subject, relation=replaced.relation,
                                          object=replaced.object, falsified=True, error=error,
                                          original=list(fact.as_tuple())))
        unique: dict[tuple[str, str, str], StatedClaim] = {}
        for item in stated:
            unique.setdefault(item.claim().as_tuple(), item)
        return SimAnswer(model=self.name(), rates=rates, seed=self.seed, claims=list(unique.values()))

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        if request.scene is None:
            raise SimError(
                f"simulators answer from the image's scene graph, and sample {request.sample_id!r} has none "
                "(use a benchmark with scene graphs: synthetic, tri-he)"
            )
        question = next((t.text for t in reversed(request.messages) if t.role == "user"), "")
        supplied = _parse_supplied(request.metadata.get("triplets") or request.metadata.get("gt_triplets"))
        answer = self.answer(request.scene, question, sample_id=request.sample_id, facts=supplied)
        text = render_answer(answer.claims, oriented(request.scene))
        return GenerateResult(
            text=text,
            metadata={
                "claims": [list(c.claim().as_tuple()) for c in answer.claims],
                "sim": answer.model_dump(mode="json"),
            },
        )
