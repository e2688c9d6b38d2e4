"""What relation words mean, as far as building relation questions needs: their category, their near
synonyms, what they imply, and which facts are too obvious to ask about.

- **Category** (Reefknot's split): *perception* for where things are relative to each other — spatial and
  prepositional relations ("on", "behind", "in front of", "next to"); *cognitive* for an action or state
  that links two things ("holding", "eating", "watching", "sitting on"). A curated lexicon decides; a word
  it does not know goes to an LLM (optional, cached by content); with no LLM it stays unclassified and is
  not used.
- **Near synonyms and implications**: a negative question ("Is the cup *under* the table?") must be false
  and a multiple-choice item must have exactly one true option, so a relation may not stand in for another
  that the graph makes true: synonyms ("beside" / "next to"), forms of one verb ("holds" / "holding"), a
  verb phrase and its bare preposition ("sitting on" implies "on"), verb implications ("riding" implies
  "on"), and inverses read from the other side ("A on B" when the graph says "B under A").
- **Self-evident facts** (the paper's filter): body parts ("cow has eyes"), basic clothing on people
  ("person wearing shirt"), and parts of wholes ("window on building") are not asked about.

Everything here is plain data and pure functions, except :class:`RelationClassifier`, whose LLM fallback
is async and cached.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from halluscope.cache import Cache, content_key
from halluscope.jsonio import loads_json
from halluscope.scene.graph import SceneGraph, normalise_name
from halluscope.scene.kinds import ANIMALS, PEOPLE
from halluscope.scene.kinds import is_animate as _is_animate

__all__ = [
    "COGNITIVE",
    "PERCEPTION",
    "RelationClassifier",
    "base_verb",
    "is_animate",
    "is_finite_verb",
    "is_self_evident",
    "lexicon_category",
    "normalise_relation",
    "related",
    "relation_holds",
    "spatial_core",
]

PERCEPTION = "perception"
COGNITIVE = "cognitive"

# -- lexicon -------------------------------------------------------------------------------------------------
# fmt: off

#: Spatial and prepositional relations (perception). Multi-word phrases are matched as whole phrases.
SPATIAL: frozenset[str] = frozenset({
    "about", "above", "across", "across from", "adjacent to", "after", "against", "along", "alongside",
    "amid", "among", "amongst", "around", "at", "at the bottom of", "at the edge of", "at the top of",
    "atop", "before", "behind", "below", "beneath", "beside", "beside of", "besides", "between", "beyond",
    "by", "close to", "down", "far from", "for", "from", "in", "in back of", "in center of", "in front of",
    "in middle of", "in the center of", "in the middle of", "inside", "inside of", "into", "left of", "near",
    "near to", "nearby", "next", "next to", "of", "off", "off of", "on", "on back of", "on bottom of",
    "on edge of", "on front of", "on left of", "on right of", "on side of", "on the back of",
    "on the bottom of", "on the edge of", "on the front of", "on the left of", "on the left side of",
    "on the right of", "on the right side of", "on the side of", "on the top of", "on top of", "onto",
    "opposite", "out", "out of", "outside", "outside of", "over", "part of", "past", "right of", "round",
    "through", "throughout", "to", "to the left of", "to the right of", "toward", "towards", "under",
    "underneath", "underneath of", "up", "up against", "upon", "with", "within", "without",
})

#: Verb-like words that are not "-ing" forms but still make a relation an action or state (cognitive).
VERBS: frozenset[str] = frozenset({
    "attached", "built", "carried", "carries", "carry", "catch", "catches", "connected", "contain",
    "contains", "cover", "covered", "covers", "decorated", "displayed", "dressed", "drive", "drives", "eat",
    "eats", "equipped", "face", "faces", "filled", "flies", "fly", "full", "grow", "grows", "hang", "hangs",
    "has", "have", "held", "hit", "hits", "hold", "holds", "hung", "lean", "leans", "lie", "lies", "lined",
    "made", "mounted", "painted", "parked", "perched", "piled", "placed", "play", "plays", "plugged",
    "printed", "pull", "pulled", "pulls", "push", "pushes", "read", "reads", "reflected", "ride", "rides",
    "seen", "sit", "sits", "sliced", "stacked", "stand", "stands", "stuck", "support", "supports",
    "surround", "surrounded", "surrounds", "throw", "throws", "tied", "topped", "touch", "touches", "use",
    "uses", "walk", "walks", "watch", "watches", "wear", "wears", "worn", "wrapped", "written",
})

#: Words that only say where something is placed: "located in" is as spatial as "in".
PLACEMENT_WORDS: frozenset[str] = frozenset({"located", "positioned", "situated", "placed", "set", "found"})

#: Relations that state a property, an existence or an inference rather than link two things; never asked.
NON_RELATIONS: frozenset[str] = frozenset({
    "and", "appear", "appears", "are", "are a", "as", "be", "colored", "different from", "has color",
    "indicates", "indicating", "indicative of", "is", "is a", "kind of", "like", "located", "looks",
    "looks like", "made of", "or", "positioned", "present", "same as", "seem", "seems", "showing", "shows",
    "similar to", "suggesting", "suggests", "than", "type of", "used for", "visible", "was", "were",
})

#: Groups of near-synonyms; two relations in one group may not stand in for each other.
SYNONYM_GROUPS: tuple[frozenset[str], ...] = tuple(frozenset(g) for g in (
    {"atop", "on", "on the top of", "on top of", "onto", "upon"},
    {"at", "in", "in center of", "in middle of", "in the center of", "in the middle of", "inside",
     "inside of", "into", "within"},
    {"below", "beneath", "under", "underneath", "underneath of"},
    {"above", "over"},
    {"adjacent to", "against", "along", "alongside", "at", "beside", "beside of", "besides", "by",
     "close to", "near", "near to", "nearby", "next", "next to", "up against"},
    {"before", "facing", "in front of"},
    {"after", "behind", "in back of"},
    {"left of", "on left of", "on the left of", "on the left side of", "to the left of"},
    {"on right of", "on the right of", "on the right side of", "right of", "to the right of"},
    {"around", "encircling", "round", "surrounding", "surrounds"},
    {"across", "across from", "facing", "opposite"},
    {"amid", "among", "amongst", "between"},
    {"off", "off of"},
    {"out", "out of", "outside", "outside of"},
    {"carrying", "contain", "containing", "contains", "filled with", "full of", "has", "has a", "have",
     "having", "holding", "with"},
    {"belonging to", "of", "on", "part of"},
    {"dressed in", "has on", "in", "wearing", "wears", "with"},
    {"carries", "carrying", "clutching", "grabbing", "grasping", "gripping", "holding", "holds"},
    {"facing", "looking", "looking at", "looking into", "looking toward", "looking towards", "observing",
     "staring at", "viewing", "watching"},
    {"biting", "chewing", "eating", "licking"},
    {"covering", "covers", "on", "on top of", "over"},
    {"atop", "on", "riding", "riding on", "sitting on"},
    {"attached to", "hanging from", "hanging on", "mounted on", "on"},
    {"walking", "walking across", "walking along", "walking down", "walking in", "walking on"},
    {"playing", "playing with"},
))

#: Verbs that make another relation true: "A riding B" makes "A on B" true.
IMPLIES: dict[str, frozenset[str]] = {
    "ride": frozenset({"atop", "on", "sitting on", "upon", "with"}),
    "swing": frozenset({"holding", "using"}),
    "catch": frozenset({"holding", "touching"}),
    "throw": frozenset({"holding", "touching"}),
    "eat": frozenset({"biting", "holding"}),
    "drink": frozenset({"holding"}),
    "read": frozenset({"holding", "looking at"}),
    "use": frozenset({"holding", "touching"}),
    "talk": frozenset({"holding", "using"}),
    "fly": frozenset({"holding"}),
    "hit": frozenset({"swinging", "touching", "using"}),
    "pull": frozenset({"holding", "touching"}),
    "push": frozenset({"holding", "touching"}),
    "feed": frozenset({"holding", "touching"}),
    "watch": frozenset({"looking at"}),
    "look": frozenset({"watching"}),
    "wear": frozenset({"has", "has on", "have", "in", "on", "with"}),
    "hold": frozenset({"carrying", "has", "have", "touching", "with"}),
    "carry": frozenset({"has", "have", "holding", "touching", "with"}),
    "sit": frozenset({"at", "by", "near", "with"}),
    "stand": frozenset({"at", "by", "near"}),
    "lie": frozenset({"by", "near"}),
    "cover": frozenset({"above", "on", "on top of", "over", "touching"}),
    "contain": frozenset({"has", "have", "holding", "with"}),
    "surround": frozenset({"around", "by", "near"}),
    "lean": frozenset({"against", "near", "next to", "on", "touching"}),
}

#: Spatial phrases that make simpler spatial relations true: "on the side of" the road is also "by" it.
SPATIAL_IMPLIES: dict[str, frozenset[str]] = {
    "on top of": frozenset({"above", "on", "over"}),
    "on the top of": frozenset({"above", "on", "over"}),
    "on the back of": frozenset({"on"}),
    "on back of": frozenset({"on"}),
    "on the front of": frozenset({"on"}),
    "on front of": frozenset({"on"}),
    "on the side of": frozenset({"along", "alongside", "at", "beside", "by", "near", "next to", "on"}),
    "on side of": frozenset({"along", "alongside", "at", "beside", "by", "near", "next to", "on"}),
    "on the edge of": frozenset({"at", "by", "near", "on"}),
    "on edge of": frozenset({"at", "by", "near", "on"}),
    "at the edge of": frozenset({"at", "by", "near"}),
    "on the bottom of": frozenset({"below", "on", "under"}),
    "on bottom of": frozenset({"below", "on", "under"}),
    "at the bottom of": frozenset({"at", "below", "near", "under"}),
    "at the top of": frozenset({"above", "at", "on"}),
    "in the middle of": frozenset({"among", "between", "in"}),
    "in middle of": frozenset({"among", "between", "in"}),
    "in center of": frozenset({"in"}),
    "in the center of": frozenset({"in"}),
    "in front of": frozenset({"by", "near"}),
    "behind": frozenset({"by", "near"}),
    "next to": frozenset({"beside", "by", "near"}),
    "against": frozenset({"by", "near", "next to", "touching"}),
    "up against": frozenset({"by", "near", "next to", "touching"}),
    "inside": frozenset({"in"}),
    "inside of": frozenset({"in"}),
    "within": frozenset({"in"}),
    "into": frozenset({"in"}),
    "onto": frozenset({"on"}),
    "atop": frozenset({"above", "on"}),
}

#: Inverse relations: "A on B" is the same fact as "B under A".
INVERSES: tuple[tuple[str, str], ...] = (
    ("on", "under"), ("on top of", "under"), ("on", "below"), ("on", "beneath"), ("above", "below"),
    ("above", "under"), ("over", "under"), ("in front of", "behind"), ("left of", "right of"),
    ("to the left of", "to the right of"), ("on left of", "on right of"), ("in", "containing"),
    ("inside", "containing"), ("in", "contains"), ("in", "has"), ("in", "holding"), ("on", "has"),
    ("on", "holding"), ("on", "supporting"), ("on", "carrying"), ("in", "with"), ("on", "with"),
    ("wearing", "worn by"), ("wearing", "on"),
)
SYMMETRIC: frozenset[str] = frozenset({
    "across from", "adjacent to", "against", "alongside", "among", "beside", "besides", "between", "by",
    "close to", "facing", "near", "nearby", "next to", "opposite", "touching", "with",
})

#: Body parts: "X has <part>", "<part> of X", "<part> on X" are self-evident.
BODY_PARTS: frozenset[str] = frozenset({
    "ankle", "arm", "arms", "beak", "beard", "belly", "body", "cheek", "cheeks", "chest", "chin", "ear",
    "ears", "elbow", "elbows", "eye", "eyebrow", "eyebrows", "eyelashes", "eyes", "face", "feathers", "feet",
    "finger", "fingers", "foot", "forehead", "fur", "hair", "hand", "hands", "head", "hip", "hoof", "hooves",
    "horn", "horns", "knee", "knees", "leg", "legs", "lip", "lips", "mane", "moustache", "mouth", "mustache",
    "neck", "nose", "nostril", "nostrils", "paw", "paws", "shoulder", "shoulders", "skin", "snout", "spots",
    "stomach", "stripes", "tail", "teeth", "thumb", "toe", "toes", "tooth", "torso", "trunk", "tusk",
    "tusks", "waist", "whiskers", "wing", "wings", "wrist",
})
#: Clothing every person wears: "person wearing shirt" is self-evident (hats, glasses, helmets are not).
BASIC_CLOTHING: frozenset[str] = frozenset({
    "clothes", "clothing", "dress", "jeans", "outfit", "pants", "shirt", "shirts", "shoe", "shoes", "shorts",
    "skirt", "sock", "socks", "t shirt", "t-shirt", "top", "trousers", "tshirt",
})
#: Wholes and their usual parts: "window on building", "wheel of car" are self-evident.
PARTS_OF: dict[str, frozenset[str]] = {
    whole: frozenset(parts)
    for wholes, parts in (
        (("building", "house", "church", "tower", "store", "shop", "restaurant"),
         ("window", "windows", "door", "doors", "roof", "wall", "walls", "balcony", "chimney", "brick",
          "bricks")),
        (("car", "bus", "truck", "train", "van", "vehicle", "taxi", "suv", "jeep", "trolley", "tram"),
         ("wheel", "wheels", "tire", "tires", "window", "windows", "door", "doors", "windshield", "headlight",
          "headlights", "light", "lights", "mirror", "bumper", "seat", "roof", "engine", "license plate")),
        (("bike", "bicycle", "motorcycle", "motorbike", "scooter"),
         ("wheel", "wheels", "tire", "tires", "seat", "handlebar", "handlebars", "headlight", "pedal")),
        (("plane", "airplane", "jet", "aircraft"),
         ("wing", "wings", "engine", "tail", "window", "windows", "wheel", "wheels", "door")),
        (("tree", "trees", "plant", "bush"), ("leaf", "leaves", "branch", "branches", "trunk", "bark")),
        (("table", "chair", "bench", "desk", "bed", "couch", "sofa", "stool"), ("leg", "legs")),
        (("clock",), ("hand", "hands", "face", "numbers", "number")),
        (("boat", "ship"), ("sail", "mast", "window", "windows", "deck")),
        (("kite",), ("tail", "string")),
        (("pizza",), ("crust", "cheese")),
        (("laptop", "computer"), ("keyboard", "screen")),
    )
    for whole in wholes
}
_PART_RELATIONS = frozenset({
    "attached to", "belonging to", "has", "has a", "have", "having", "in", "of", "on", "on back of",
    "on front of", "on side of", "on the back of", "on the front of", "on the side of", "part of", "with",
})

# fmt: on


# -- normalisation and categories ----------------------------------------------------------------------------

_LEADING_COPULA = re.compile(r"^(?:is|are|was|were|be|being)\s+(?=\S)")


@lru_cache(maxsize=65536)
def normalise_relation(relation: str) -> str:
    """Lower-case, single-spaced, without a leading copula ("is wearing" → "wearing") or end punctuation."""
    text = " ".join(relation.lower().replace("_", " ").split()).strip(" .,;:!?\"'")
    if text not in NON_RELATIONS:
        text = _LEADING_COPULA.sub("", text)
    return text


@lru_cache(maxsize=65536)
def spatial_core(relation: str) -> str | None:
    """The longest trailing spatial phrase of a relation ("standing in front of" → "in front of")."""
    tokens = normalise_relation(relation).split()
    for start in range(len(tokens)):
        tail = " ".join(tokens[start:])
        if tail in SPATIAL:
            return tail
    return None


@lru_cache(maxsize=65536)
def _verb_forms(token: str) -> frozenset[str]:
    """Crude stems under which "holds", "holding" and "held"-style forms of one verb meet."""
    forms = {token}
    if token.endswith("ing") and len(token) > 4:
        stem = token[:-3]
        forms |= {stem, stem + "e"}
        if len(stem) > 2 and stem[-1] == stem[-2]:
            forms.add(stem[:-1])
        if stem.endswith("y"):
            forms.add(stem[:-1] + "ie")
    if token.endswith("ies") and len(token) > 4:
        forms.add(token[:-3] + "y")
    elif token.endswith("es") and len(token) > 3:
        forms |= {token[:-2], token[:-1]}
    elif token.endswith("s") and len(token) > 2 and not token.endswith("ss"):
        forms.add(token[:-1])
    if token.endswith("ed") and len(token) > 4:
        stem = token[:-2]
        forms |= {stem, stem + "e", token[:-1]}
        if len(stem) > 2 and stem[-1] == stem[-2]:
            forms.add(stem[:-1])
    irregular = {
        "held": "hold",
        "worn": "wear",
        "ridden": "ride",
        "eaten": "eat",
        "hung": "hang",
        "sat": "sit",
        "stood": "stand",
        "lying": "lie",
        "lies": "lie",
        "has": "have",
        "having": "have",
        "seen": "see",
        "built": "build",
        "made": "make",
        "written": "write",
        "flown": "fly",
        "flies": "fly",
        "flying": "fly",
    }
    if token in irregular:
        forms.add(irregular[token])
    return frozenset(f for f in forms if len(f) >= 2)


def _is_verb(token: str) -> bool:
    return token in VERBS or (
        token.endswith("ing") and len(token) > 4 and token not in {"during", "morning", "evening", "ceiling"}
    )


def lexicon_category(relation: str) -> str | None:
    """perception / cognitive from the lexicon, or None when the lexicon does not know the relation."""
    text = normalise_relation(relation)
    if not text or text in NON_RELATIONS:
        return None
    if text in SPATIAL:
        return PERCEPTION
    tokens = text.split()
    if tokens[0] in {"not", "no", "never"}:
        return None  # a negated relation is not a fact to ask about
    rest = " ".join(tokens[1:])
    if tokens[0] in PLACEMENT_WORDS and rest in SPATIAL:
        return PERCEPTION  # "located in", "positioned next to": where, not what
    if _is_verb(tokens[0]) or (tokens[0].endswith("ed") and len(tokens[0]) > 4 and rest in SPATIAL):
        return COGNITIVE  # "holding", "parked on", "docked at"
    return None


def is_finite_verb(relation: str) -> bool:
    """Whether a relation opens with a finite verb ("has", "holds"), so questions use "does" and no copula."""
    first = normalise_relation(relation).split()[0] if normalise_relation(relation) else ""
    return (
        first in VERBS
        and not first.endswith(("ed", "en"))
        and first not in {"full", "hung", "held", "worn", "made", "built", "seen", "written", "stuck"}
        and (first.endswith("s") or first == "has")
    )


def base_verb(relation: str) -> str:
    """The relation with its finite verb in the base form: "has" → "have", "holds" → "hold"."""
    tokens = normalise_relation(relation).split()
    if not tokens:
        return relation
    first = tokens[0]
    if first == "has":
        first = "have"
    elif first.endswith("ies"):
        first = first[:-3] + "y"
    elif first.endswith(("ches", "shes", "sses", "xes", "zes", "oes")):
        first = first[:-2]
    elif first.endswith("s"):
        first = first[:-1]
    return " ".join([first, *tokens[1:]])


@lru_cache(maxsize=65536)
def _verb_lemmas(relation: str) -> frozenset[str]:
    tokens = normalise_relation(relation).split()
    return _verb_forms(tokens[0]) if tokens and _is_verb(tokens[0]) else frozenset()


# -- relatedness ---------------------------------------------------------------------------------------------


def _same_group(a: str, b: str) -> bool:
    return any(a in group and b in group for group in SYNONYM_GROUPS)


def _same_words(a: str, b: str) -> bool:
    ta, tb = a.split(), b.split()
    return len(ta) == len(tb) and all(_verb_forms(x) & _verb_forms(y) for x, y in zip(ta, tb, strict=True))


@lru_cache(maxsize=65536)
def _implied(truth: str) -> frozenset[str]:
    """The relations that ``truth`` makes true directly: its spatial core and what the core and verb imply."""
    implied: set[str] = set()
    core = spatial_core(truth)
    if core is not None:
        implied.add(core)  # "sitting on" → "on"
        implied |= SPATIAL_IMPLIES.get(core, frozenset())  # "on the side of" → "by"
    for lemma in _verb_lemmas(truth):
        implied |= IMPLIES.get(lemma, frozenset())  # "riding" → "on"
    implied.discard(truth)
    return frozenset(implied)


def _implies(truth: str, other: str) -> bool:
    """Whether ``truth`` holding makes ``other`` hold (for the same subject and object)."""
    lemmas = _verb_lemmas(other)
    return any(other == word or _same_group(word, other) or bool(lemmas & _verb_forms(word.split()[0]))
               for word in _implied(truth))


@lru_cache(maxsize=65536)
def related(a: str, b: str) -> bool:
    """Near synonyms, forms of one verb, or one implying the other: not to be used as each other's foil."""
    a, b = normalise_relation(a), normalise_relation(b)
    if a == b or _same_words(a, b) or _same_group(a, b):
        return True
    lemmas_a, lemmas_b = _verb_lemmas(a), _verb_lemmas(b)
    if lemmas_a & lemmas_b:
        return True  # "walking on" / "walking in": one action
    return _implies(a, b) or _implies(b, a)


def _inverse_holds(graph: SceneGraph, subject: str, relation: str, obj: str) -> bool:
    """Whether the graph states, from the object's side, a fact equivalent to (subject, relation, object)."""
    reverse = [normalise_relation(p) for p in graph.relations_between(obj, subject)]
    if not reverse:
        return False
    if relation in SYMMETRIC and any(related(relation, p) for p in reverse):
        return True
    for left, right in INVERSES:
        if related(relation, left) and any(related(right, p) for p in reverse):
            return True
        if related(relation, right) and any(related(left, p) for p in reverse):
            return True
    # Passive forms: "A pulled by B" is "B pulling A".
    match = re.match(r"^(\w+) by$", relation)
    if match and any(_verb_forms(match.group(1)) & _verb_lemmas(p) for p in reverse):
        return True
    return any(
        re.match(r"^(\w+) by$", p) and _verb_forms(p.split()[0]) & _verb_lemmas(relation) for p in reverse
    )


def relation_holds(graph: SceneGraph, subject: str, relation: str, obj: str) -> bool:
    """Whether the graph makes (subject, relation, object) true, allowing for synonyms, implied relations and
    inverse statements. Builders use it to keep negatives false and to keep one true option per question."""
    relation = normalise_relation(relation)
    forward = [normalise_relation(p) for p in graph.relations_between(subject, obj)]
    if any(relation == p or related(relation, p) for p in forward):
        return True
    return _inverse_holds(graph, subject, relation, obj)


# -- entity knowledge ----------------------------------------------------------------------------------------


def _head(name: str) -> str:
    """The head noun of an entity name ("young man" → "man", "tennis player" kept whole when listed)."""
    text = normalise_name(name)
    if text in PEOPLE or text in ANIMALS:
        return text
    return text.split()[-1] if text else text


def is_animate(name: str) -> bool:
    """A person or an animal (:func:`halluscope.scene.direction.is_animate`: lexicon, then WordNet)."""
    return _is_animate(name)


def is_self_evident(subject: str, relation: str, obj: str) -> bool:
    """Facts too obvious to test: body parts, basic clothing on people, parts of wholes, self-relations."""
    s, o, r = normalise_name(subject), normalise_name(obj), normalise_relation(relation)
    if not s or not o or s == o:
        return True
    hs, ho = _head(s), _head(o)
    possessive = r in {"has", "have", "having", "with", "has a", "has on"}
    located = r in _PART_RELATIONS
    if (possessive or located) and (
        ho in BODY_PARTS or (hs in BODY_PARTS and r in {"of", "on", "in", "part of", "belonging to"})
    ):
        return True
    if _verb_forms(r.split()[0]) & {"wear"} and ho in BASIC_CLOTHING and is_animate(s):
        return True
    if located or possessive:
        if ho in PARTS_OF and hs in PARTS_OF[ho]:
            return True  # "window on building"
        if hs in PARTS_OF and ho in PARTS_OF[hs]:
            return True  # "building has window", "car with wheels"
    return False


# -- classification with an optional LLM fallback ------------------------------------------------------------

RELATION_TYPE_SYSTEM = "You sort relation phrases from image scene graphs into two kinds."
#: Our wording; one relation per request, JSON reply.
RELATION_TYPE_PROMPT = """Relation phrase: "{relation}" (as in "{{subject}} {relation} {{object}}").

Answer "perception" if the phrase only says where one thing is relative to another (a spatial or
prepositional relation, such as "on", "behind", "next to", "on the side of").
Answer "cognitive" if it describes an action, activity or state that links the two things (such as
"holding", "eating", "watching", "sitting on", "parked on").
Answer "neither" if it does not relate two things (a property such as "is red", or an inference such as
"indicating").
Reply with JSON only: {{"type": "perception"}}, {{"type": "cognitive"}} or {{"type": "neither"}}."""
_PROMPT_VERSION = "relation-type-v1"
CACHE_NAMESPACE = "relation-type"


def _parse_type_reply(text: str) -> str | None:
    match = re.search(r"\{.*?\}", text, re.DOTALL)
    if match:
        try:
            value = loads_json(match.group(0))
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict) and isinstance(value.get("type"), str):
            text = value["type"]
    word = text.strip().lower().strip("\"'. ")
    for label in (PERCEPTION, COGNITIVE, "neither"):
        if word.startswith(label) or word.startswith(label[:8]):
            return label
    return None


class RelationClassifier:
    """perception / cognitive for relation phrases: the lexicon first, then (optionally) an LLM, cached.

    ``client`` is a :class:`halluscope.llm.client.ChatClient` (or anything with its ``chat`` coroutine and
    ``identity``). Without one, relations the lexicon does not know stay unclassified (None).
    """

    def __init__(self, client: Any = None, cache: Cache | None = None) -> None:
        self.client = client
        self.cache = cache
        self.asked: dict[str, str | None] = {}

    def identity(self) -> dict[str, Any]:
        ident = getattr(self.client, "identity", None)
        return {
            "lexicon": "halluscope-relations-v1",
            "llm": ident() if callable(ident) else (None if self.client is None else repr(self.client)),
        }

    async def _ask(self, relation: str) -> str | None:
        key = content_key(_PROMPT_VERSION, self.identity()["llm"], relation)
        if self.cache is not None:
            hit = self.cache.get(CACHE_NAMESPACE, key)
            if isinstance(hit, str):
                return None if hit == "neither" else hit
        messages = [
            {"role": "system", "content": RELATION_TYPE_SYSTEM},
            {"role": "user", "content": RELATION_TYPE_PROMPT.format(relation=relation)},
        ]
        try:
            result = await self.client.chat(messages, temperature=0.0, max_tokens=24, json_mode=True)
        except Exception:  # an API failure leaves the relation unclassified (and unused), not guessed
            return None
        label = _parse_type_reply(result.text)
        if label is not None and self.cache is not None:
            self.cache.put(CACHE_NAMESPACE, key, label)
        self.asked[relation] = label
        return None if label in (None, "neither") else label

    async def classify_many(self, relations: Iterable[str]) -> dict[str, str | None]:
        """Normalised relation → category (None: not a usable relation, or unknown without an LLM)."""
        unique = list(dict.fromkeys(normalise_relation(r) for r in relations))
        out: dict[str, str | None] = {}
        unknown: list[str] = []
        for relation in unique:
            category = lexicon_category(relation)
            if category is None and relation and relation not in NON_RELATIONS and self.client is not None:
                unknown.append(relation)
            out[relation] = category
        if unknown:
            answers = await asyncio.gather(*(self._ask(r) for r in unknown))
            out.update(dict(zip(unknown, answers, strict=True)))
        return out
