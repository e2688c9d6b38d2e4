"""Which end of a relation is its subject: the reading direction of scene-graph triplets.

Tri-HE's GQA-derived triplets are stored object-first in about a third of its images: "(shirt, wearing,
man)", "(street, parked near, car)", "(ceiling, hanging from, sign)". Rendered as written they are nonsense
("The shirt is wearing the man."), and questions built from them ask nonsense. This module decides, for each
recorded relation, whether it reads subject-first (:attr:`Reading.FORWARD`), object-first
(:attr:`Reading.REVERSED`), cannot be told (:attr:`Reading.UNCLEAR`), or makes no sense either way
(:attr:`Reading.NONSENSE`: "jeans between bucket"). Every place that turns a triplet into text — the
Reefknot builder, the simulators, :meth:`SceneGraph.describe`, judges' evidence — asks it.

**One triplet.** The relation's meaning gives each end a role (:func:`frame`), and each reading is scored by
how well the two things fit those roles (:func:`fit`):

- *wearing*: the wearer is a person or an animal, the worn thing clothing;
- *actions* (holding, riding, watching, pushing, eating, ...): the doer is a person or an animal (a vehicle
  may pull or carry, a container may hold);
- *postures and motion* (sitting on, standing in, lying on, walking across): the one in that posture is
  animate or at least smaller than, and never the ground under, the other;
- *parked*: only vehicles park; *hanging*: what hangs is smaller than what it hangs from, and floors,
  walls, ceilings, streets never hang; *covering*: snow, blankets, roofs and clothes cover, the ground does
  not; *printed / painted on*: letters, logos and pictures are printed on things; *reflected in*: the
  mirror, window or water is the object; *growing*: plants grow;
- *passives* ("pulled by", "covered with", "worn by") are the active verb read backwards; "filled with"
  and "full of" put the container first, "worn on" the worn thing;
- *spatial support* (on, in, at, on the side of, along): a part is on its whole (WordNet part holonyms and
  a few common pairs: "window on building", never "building on window"), the smaller thing on the larger
  (coarse size classes from WordNet hypernyms: land and roads, buildings, vehicles, furniture and people,
  animals, clothing and devices, small things), and the ground is never on anything;
- *between / among* need a group as their object: "between the bucket" is nonsense either way.

What the things are (animate, garment, ground, size class, part of what) comes from
:mod:`halluscope.scene.kinds`. The score difference between the two readings decides when it is large
enough (``STRONG``).

**One image.** A source that reverses triplets does so for a whole image (in Tri-HE all GQA triplets of an
image are stored one way: 164 images subject-first, 83 object-first, 2 mixed, counted on the "wearing /
holding / riding ..." triplets with exactly one animate end). So the clear triplets of an image vote, and
the image's direction decides the triplets that cannot decide for themselves ("(chair, at, table)"),
including symmetric or spatial ones whose truth, not sense, depends on direction ("behind"). Only
relations between two listed objects of the image vote or follow the vote: Tri-HE's question-level
triplets ("(lamp, turned on, illuminating room)") are written subject-first.

Graphs that declare their direction trustworthy (``graph.graph.graph["directed"]``: synthetic scenes) are
read as stored.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import TYPE_CHECKING

from halluscope.scene.basics import Relation, normalise_name
from halluscope.scene.kinds import Thing, is_animate, part_of, thing
from halluscope.scene.names import PLURALIA_TANTUM, tokens, wordnet

if TYPE_CHECKING:
    # Only a type here: the graph calls this module (its reading order), so importing it back would close a
    # circle. ``oriented`` builds its copy from the graph's own class.
    from halluscope.scene.graph import SceneGraph

__all__ = [
    "Reading",
    "Thing",
    "fact_text",
    "fit",
    "frame",
    "graph_readings",
    "is_animate",
    "is_plural",
    "orient_fact",
    "orient_triplet",
    "oriented",
    "read_relation",
    "reading_relations",
    "reference_text",
    "relation_sentence",
    "thing",
    "triplet_reading",
]

#: A score difference at least this large decides a triplet on its own.
STRONG = 2.0


class Reading(StrEnum):
    """How a stored triplet (a, r, b) reads."""

    FORWARD = "forward"  # "a r b"
    REVERSED = "reversed"  # "b r a"
    UNCLEAR = "unclear"  # cannot be told; read as stored
    NONSENSE = "nonsense"  # neither way makes sense


# -- what relations mean -------------------------------------------------------------------------------------

#: Verb lemma → frame. Frames name the roles the relation gives its two ends.
_FRAMES: dict[str, str] = {
    **dict.fromkeys(["wear", "dress", "don", "sport"], "wear"),
    **dict.fromkeys(
        [
            "hold", "carry", "use", "eat", "drink", "watch", "look", "ride", "throw", "catch", "swing", "hit",
            "play", "read", "feed", "pet", "push", "pull", "kick", "grab", "reach", "talk", "fly", "drive",
            "lead", "chase", "brush", "cut", "serve", "touch", "hug", "kiss", "lick", "bite", "chew", "wait",
            "smile", "follow", "greet", "sniff", "herd", "photograph", "adjust", "type", "wash", "drag", "tow",
            "point", "board", "cross", "climb", "enter", "sell", "buy", "prepare", "cook", "pour", "open",
            "close", "wield", "operate", "fix", "check", "take", "teach", "help", "stare", "observe", "view",
            "examine", "grasp", "grip", "clutch", "hold_onto", "handle", "steer", "pedal", "paddle", "row",
            "guide", "control", "milk", "groom", "bathe", "slice", "bake", "stir", "shake", "tie", "lift",
            "toss", "pitch", "bat", "serve", "block", "return", "balance", "tow", "haul", "approach", "face",
            "inspect", "admire", "pick", "squeeze", "exit", "leave", "protect", "guard", "hunt", "walk",
        ],
        "agent",
    ),
    **dict.fromkeys(
        [
            "sit", "stand", "lie", "lay", "rest", "lean", "perch", "sleep", "kneel", "crouch", "squat", "float",
            "swim", "skate", "ski", "surf", "run", "jog", "wade", "jump", "stride", "step", "travel", "move",
            "land", "dive", "graze", "nap", "lounge", "pose", "stop", "sail",
            "hide", "stay", "crawl", "roll", "settle", "stack", "pile", "sit_down", "dock",
        ],
        "posture",
    ),
    **dict.fromkeys(["park"], "park"),
    **dict.fromkeys(["hang", "dangle", "suspend", "drape"], "hang"),
    **dict.fromkeys(["cover", "blanket", "coat", "shade", "shelter", "overshadow"], "cover"),
    **dict.fromkeys(
        ["attach", "mount", "fasten", "stick", "pin", "glue", "plug", "connect", "hook", "clip", "chain",
         "bolt", "nail", "tape", "strap", "affix", "install", "fix"],
        "attach",
    ),
    **dict.fromkeys(["print", "paint", "write", "draw", "display", "stamp", "engrave", "carve", "etch"],
                    "print"),
    **dict.fromkeys(["reflect", "mirror"], "reflect"),
    **dict.fromkeys(["grow", "sprout", "bloom"], "grow"),
    **dict.fromkeys(["wrap", "wind", "coil", "loop"], "wrap"),
    **dict.fromkeys(["contain", "include", "have", "own", "possess", "fill", "top", "decorate", "line",
                     "garnish", "stuff", "load"], "contain"),
    **dict.fromkeys(["surround", "encircle", "enclose", "border", "frame", "circle"], "surround"),
    **dict.fromkeys(["support", "hold_up", "bear"], "support"),
}
#: Verbs whose active use is an agent acting on the object even when followed by a preposition
#: ("looking at", "reaching for", "talking on"); with other prepositions a posture verb locates its subject.
_AGENT_WITH_PREP = frozenset({
    "look", "reach", "talk", "wait", "smile", "point", "stare", "play", "hold", "pull", "push", "throw", "swing",
    "lean", "feed", "drink", "eat", "cut", "watch", "grab",
})
#: Spatial phrases that locate a figure on, in or at a larger ground.
SUPPORT = frozenset({
    "on", "onto", "upon", "atop", "on top of", "on the top of", "in", "inside", "inside of", "within", "into",
    "at", "along", "alongside", "across", "through", "on the side of", "on side of", "on the front of",
    "on front of", "on the back of", "on back of", "on the edge of", "on edge of", "at the edge of",
    "on the bottom of", "at the bottom of", "at the top of", "in the middle of", "in middle of",
    "in the center of", "in center of", "throughout", "down", "up", "against", "up against", "off", "off of",
    "out of", "from", "in front of", "behind", "beside", "near", "next to", "by",
})
#: Spatial phrases that say nothing about which end is the figure ("behind" reads fine both ways).
NEUTRAL = frozenset({
    "near", "next to", "beside", "besides", "by", "close to", "adjacent to", "behind", "in front of",
    "in back of", "left of", "right of", "to the left of", "to the right of", "on the left of",
    "on the right of", "across from", "opposite", "facing", "above", "over", "below", "under", "beneath",
    "underneath", "against", "touching", "with", "and", "from", "off", "off of", "out of", "far from",
    "alongside", "past", "toward", "towards", "around", "round",
})
#: Relations that name a group as their object.
GROUP_OBJECT = frozenset({"between", "among", "amongst", "amid", "in between"})
_IRREGULAR = {
    "worn": "wear", "held": "hold", "hung": "hang", "sat": "sit", "stood": "stand", "lying": "lie",
    "ridden": "ride", "driven": "drive", "eaten": "eat", "led": "lead", "fed": "feed", "drawn": "draw",
    "written": "write", "seen": "see", "shown": "show", "flown": "fly", "thrown": "throw", "caught": "catch",
    "bitten": "bite", "built": "build", "made": "make", "stuck": "stick", "left": "leave", "laid": "lay",
    "has": "have", "had": "have", "having": "have", "full": "fill", "topped": "top", "lined": "line",
    "taken": "take", "hit": "hit", "cut": "cut", "put": "put", "set": "set", "spread": "spread",
}
_PASSIVE_PREPS = ("by", "with", "in")
_COPULA = re.compile(r"^(?:is|are|was|were|be|being|been)\s+")


@lru_cache(maxsize=65536)
def _lemma(word: str) -> str | None:
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    wn = wordnet()
    base = wn.morphy(word, "v")
    if base is None and word.endswith("ing") and len(word) > 4:
        base = wn.morphy(word[:-3], "v") or wn.morphy(word[:-3] + "e", "v")
    return base


@dataclass(frozen=True)
class Frame:
    """What a relation says about its two ends: ``kind`` (wear, agent, posture, ..., support, neutral, group,
    none), ``passive`` when the object is the doer ("pulled by"), and the spatial phrase after the verb."""

    kind: str
    passive: bool
    preposition: str | None
    verb: str | None = None


@lru_cache(maxsize=65536)
def frame(relation: str) -> Frame:
    """The frame of a relation phrase ("pulled by" → agent, passive; "parked near" → park; "on" → support)."""
    text = _COPULA.sub("", " ".join(tokens(relation.replace("_", " "))))
    words = text.split()
    if not words:
        return Frame("none", False, None)
    if text in GROUP_OBJECT or (words[-1] in GROUP_OBJECT and len(words) <= 3):
        return Frame("group", False, words[-1])
    if text == "full of":
        return Frame("contain", False, "of")
    if text in {"has", "have", "with", "having", "has a", "containing", "contains", "holding"}:
        return Frame("contain" if text != "holding" else "agent", False, None)
    if text in {"of", "part of", "belonging to", "from"}:
        return Frame("of", False, text)
    if text in {"worn on", "worn around", "worn over"}:
        return Frame("worn_on", False, "on", "wear")  # "ring worn on finger": the worn thing first
    if text in {"wrapped around", "around", "round", "encircling"}:
        return Frame("around", False, "around")
    lemma = _lemma(words[0])
    rest = " ".join(words[1:])
    kind = _FRAMES.get(lemma or "", "")
    if kind:
        participle = words[0].endswith(("ed", "en")) or (words[0] in _IRREGULAR and words[0] not in {
            "has", "having", "hit", "cut", "put", "set", "lying"
        })
        transitive = kind in {"wear", "agent", "cover", "surround", "contain", "wrap", "support", "print"}
        if participle and kind == "wear" and rest in {"on", "by", ""}:
            return Frame("wear", True, None, lemma)  # "worn by", "worn on"
        if participle and transitive and not rest and kind != "print":
            return Frame(kind, True, None, lemma)  # "covered" (with)
        if participle and rest in _PASSIVE_PREPS and transitive and not (kind == "print" and rest == "in"):
            if kind == "contain" and rest in {"with", "by"}:
                return Frame("contain", False, None, lemma)  # "filled with", "topped with": container first
            if kind == "wear" and rest in {"in", "with"}:
                return Frame("wear", False, None, lemma)  # "dressed in"
            return Frame(kind, True, None, lemma)
        if rest and kind == "agent" and lemma not in _AGENT_WITH_PREP and rest in SUPPORT | NEUTRAL:
            return Frame("posture", False, rest, lemma)  # "riding on", "walking across", "driving down"
        return Frame(kind, False, rest or None, lemma)
    if text in NEUTRAL:
        return Frame("neutral", False, text)
    if text in SUPPORT or words[0] in {"on", "in", "at", "inside", "atop", "within", "into", "along",
                                       "across", "through"}:
        return Frame("support", False, text)
    return Frame("none", False, None)


def _size_fit(a: Thing, b: Thing, weight: float = 1.0) -> float:
    """Positive when the figure ``a`` is smaller than the ground ``b``."""
    if a.size is None or b.size is None:
        return 0.0
    diff = b.size - a.size
    if diff == 0:
        return 0.0
    step = {1: 0.5, 2: 1.0}.get(abs(diff), 2.0)
    return weight * (step if diff > 0 else -step)


#: Things people do to animals far more often than animals to people.
_TENDING = frozenset({"ride", "feed", "lead", "walk", "pet", "groom", "milk", "herd", "brush", "wash", "bathe",
                      "hunt", "guide", "train", "mount"})
_ON = frozenset({"on", "upon", "atop", "on top of", "on the back of", "on back of"})


def _fit_active(
    kind: str, preposition: str | None, a: Thing, b: Thing, a_name: str, b_name: str, verb: str | None = None
) -> float:
    """How well subject ``a`` and object ``b`` fill the roles of an active relation of this kind."""
    score = 0.0
    if kind == "wear":
        score += 3 if a.animate or a.has("wearer") else 0
        score -= 3 if b.animate and not a.animate else 0
        score += 1 if b.has("garment") or b.has("cover") else 0
        score -= 2 if a.has("garment") and not a.animate else 0
        score -= 3 if a.has("body") else 0  # "face wearing scarf": the person wears it
        score -= 3 if b.has("ground") or b.has("fixed") else 0  # nobody wears the beach
        return score
    if kind == "worn_on":
        score += 2 if a.has("garment") or a.has("cover") else 0
        score += 2 if b.has("body") or b.animate else 0
        score -= 3 if a.has("body") or a.animate else 0
        score -= 2 if b.has("garment") and not (a.has("garment") or a.has("cover")) else 0
        return score
    if kind == "agent":
        if a.animate:
            score += 2
        elif b.animate:
            score -= 2
        if not a.animate and not b.animate:
            if a.has("vehicle") and not b.has("ground"):
                score += 1
            if a.has("ground") or a.has("fixed"):
                score -= 1
            score += _size_fit(b, a, 0.5)  # a tray holds a cup
        if a.animate and b.animate and a.has("person") and b.has("animal") and verb in _TENDING:
            score += 2  # a person rides, leads, feeds the animal
        return score
    if kind in {"posture", "park", "hang", "attach", "print", "grow", "support"}:
        if kind == "support" and preposition is None:  # "supporting": the support is the subject
            return _fit_active("support", "on", b, a, b_name, a_name, verb)
        if a.has("ground") or a.has("fixed"):
            score -= 3 if not (b.has("ground") and kind in {"support", "posture"}) else 1
        if b.has("ground") or b.has("fixed"):
            score += 1
        if kind == "park":
            score += 3 if a.has("vehicle") else 0
            score -= 3 if b.has("vehicle") and not a.has("vehicle") else 0
            return score
        if kind == "print":
            score += 2 if a.has("symbol") else 0
            score -= 2 if b.has("symbol") and not a.has("symbol") else 0
            return score + _size_fit(a, b, 0.5)
        if kind == "grow":
            score += 2 if a.has("plant") else 0
            score -= 2 if b.has("plant") and not a.has("plant") else 0
            score -= 2 if b.animate else 0  # nothing grows on people here
            return score
        if kind == "hang":
            score += 1 if a.has("hanger") else 0
            score -= 1 if b.has("hanger") and not a.has("hanger") else 0
            score -= 1 if a.has("furniture") or a.has("vehicle") else 0
            return score + _size_fit(a, b)
        if part_of(a_name, b_name):
            score += 2
        elif part_of(b_name, a_name):
            score -= 2
        if kind == "posture":
            if a.animate:
                score += 2
            elif b.animate:
                score -= 2
            if a.has("person") and b.has("animal") and (verb in {"ride", "mount"} or preposition in _ON):
                score += 2  # a man riding on an elephant, sitting on a horse
            return score + _size_fit(a, b, 0.5)
        if kind == "support" and b.animate and not a.animate:
            small = a.has("garment") or (a.size or 9) <= 2
            score += 1 if small and preposition in _ON else -1  # a hat on a man; not a bench, nor a plate at him
        if kind == "support" and a.animate and not b.animate:
            score += 1  # people on, in and at things
        return score + _size_fit(a, b)
    if kind == "cover":
        score += 2 if a.has("cover") or a.has("garment") else 0
        score -= 2 if (a.has("ground") and not a.has("cover")) or a.has("fixed") or a.has("body") else 0
        score -= 2 if a.animate else 0  # people are covered, they do not cover
        score += 1 if b.has("ground") or b.has("body") or b.has("fixed") else 0
        score -= 1 if b.has("cover") and not a.has("cover") else 0
        return score
    if kind == "reflect":
        score += 2 if b.has("reflector") else 0
        score -= 2 if a.has("reflector") and not b.has("reflector") else 0
        return score
    if kind in {"wrap", "around"}:
        score += 1 if a.has("garment") or a.has("cover") else 0
        score -= 2 if a.has("body") else 0
        score += 1 if b.has("body") or b.animate else 0
        score -= 2 if a.animate and not b.animate else 0
        return score
    if kind == "contain":
        if part_of(b_name, a_name):
            score += 2
        elif part_of(a_name, b_name):
            score -= 2
        score -= 2 if b.animate and not a.animate else 0
        score += 1 if b.has("food") and not a.has("food") else 0  # a skillet filled with food
        score -= 1 if a.has("food") and not b.has("food") else 0
        return score + _size_fit(b, a)
    if kind == "surround":
        score -= 2 if a.has("body") else 0
        return score
    if kind == "of":
        if part_of(a_name, b_name):
            score += 2
        elif part_of(b_name, a_name):
            score -= 2
        return score
    if kind == "group":
        return 0.0 if b.group else -3.0
    return 0.0


@lru_cache(maxsize=65536)
def fit(subject: str, relation: str, obj: str) -> float:
    """How sensible "subject relation object" reads (higher is better; 0 when nothing is known)."""
    f = frame(relation)
    a, b = thing(subject), thing(obj)
    if f.passive:
        return _fit_active(f.kind, f.preposition, b, a, obj, subject, f.verb)
    return _fit_active(f.kind, f.preposition, a, b, subject, obj, f.verb)


@lru_cache(maxsize=65536)
def triplet_reading(subject: str, relation: str, obj: str) -> tuple[Reading, float]:
    """The reading of one triplet on its own, and the score difference (forward minus reversed)."""
    forward, backward = fit(subject, relation, obj), fit(obj, relation, subject)
    if forward <= -3 and backward <= -3:
        return Reading.NONSENSE, 0.0
    diff = forward - backward
    if diff > 0:
        return Reading.FORWARD, diff
    if diff < 0:
        return Reading.REVERSED, diff
    return Reading.UNCLEAR, 0.0


def orient_triplet(subject: str, relation: str, obj: str) -> tuple[str, str] | None:
    """(subject, object) in reading order for a triplet on its own, or None when the order cannot be told
    or neither order makes sense. A triplet whose order does not matter ("near") keeps its order."""
    reading, diff = triplet_reading(subject, relation, obj)
    if reading is Reading.NONSENSE:
        return None
    if abs(diff) >= STRONG or (reading is not Reading.UNCLEAR and frame(relation).kind != "neutral"):
        return (obj, subject) if reading is Reading.REVERSED else (subject, obj)
    if frame(relation).kind in {"neutral", "none"}:
        return subject, obj
    return None


# -- whole graphs --------------------------------------------------------------------------------------------

_Key = tuple[str, str, str]
_cache: weakref.WeakKeyDictionary[SceneGraph, tuple[str, dict[_Key, Reading]]] = weakref.WeakKeyDictionary()


def _voting(graph: SceneGraph, relation: Relation) -> bool:
    """Whether a relation joins two listed objects of the image (only those follow the image's direction)."""
    if not graph.object_names:
        return True
    listed = {normalise_name(n) for n in graph.object_names}
    return normalise_name(relation.subject) in listed and normalise_name(relation.object) in listed


def image_direction(graph: SceneGraph) -> Reading:
    """FORWARD / REVERSED when the image's clear triplets agree on a direction (majority), else UNCLEAR."""
    votes = {Reading.FORWARD: 0, Reading.REVERSED: 0}
    for relation in graph.relations():
        if not _voting(graph, relation):
            continue
        reading, diff = triplet_reading(relation.subject, relation.predicate, relation.object)
        if abs(diff) >= STRONG and reading in votes:
            votes[reading] += 1
    if votes[Reading.FORWARD] > votes[Reading.REVERSED]:
        return Reading.FORWARD
    if votes[Reading.REVERSED] > votes[Reading.FORWARD]:
        return Reading.REVERSED
    return Reading.UNCLEAR


def graph_readings(graph: SceneGraph) -> dict[_Key, Reading]:
    """(subject key, predicate, object key) → reading, for every relation of the graph (cached per graph)."""
    trusted = bool(graph.graph.graph.get("directed", False))
    fingerprint = f"{graph.fingerprint()}:{len(graph.relations())}:{trusted}"
    cached = _cache.get(graph)
    if cached is not None and cached[0] == fingerprint:
        return cached[1]
    readings: dict[_Key, Reading] = {}
    direction = Reading.UNCLEAR if trusted else image_direction(graph)
    for relation in graph.relations():
        key = (normalise_name(relation.subject), relation.predicate, normalise_name(relation.object))
        if trusted:
            readings[key] = Reading.FORWARD
            continue
        reading, diff = triplet_reading(relation.subject, relation.predicate, relation.object)
        kind = frame(relation.predicate).kind
        if reading is Reading.NONSENSE or abs(diff) >= STRONG:
            readings[key] = reading
        elif direction is not Reading.UNCLEAR and _voting(graph, relation):
            readings[key] = direction
        elif reading is not Reading.UNCLEAR and kind != "neutral":
            readings[key] = reading
        elif kind in {"neutral", "none"}:
            readings[key] = Reading.FORWARD  # order does not change the sense; read as stored
        else:
            readings[key] = Reading.UNCLEAR
    _cache[graph] = (fingerprint, readings)
    return readings


def read_relation(graph: SceneGraph, relation: Relation) -> Relation | None:
    """The relation in reading order; as stored when unclear; None when it makes no sense either way."""
    key = (normalise_name(relation.subject), relation.predicate, normalise_name(relation.object))
    reading = graph_readings(graph).get(key, Reading.FORWARD)
    if reading is Reading.NONSENSE:
        return None
    if reading is Reading.REVERSED:
        return Relation(relation.object, relation.predicate, relation.subject)
    return relation


def reading_relations(graph: SceneGraph, relations: Iterable[Relation] | None = None) -> list[Relation]:
    """The graph's relations (or the given ones) in reading order, nonsense left out."""
    out: list[Relation] = []
    for relation in graph.relations() if relations is None else relations:
        read = read_relation(graph, relation)
        if read is not None:
            out.append(read)
    return out


def oriented(graph: SceneGraph, *, drop_unclear: bool = False) -> SceneGraph:
    """A copy of the graph with every relation in reading order (the graph itself when nothing changes).

    Relations that make sense neither way are left out; unclear ones are kept as stored, or left out with
    ``drop_unclear`` (builders, which must not ask about a fact whose direction is unknown). Objects,
    attributes, reference facts, caption, regions and graph-level data (synthetic scenes' false relations)
    are kept, so the copy's fingerprint is the original's.
    """
    readings = graph_readings(graph)
    changes = any(r is not Reading.FORWARD for r in readings.values())
    if not changes:
        return graph
    fixed = type(graph)(image_id=graph.image_id)
    fixed.graph.graph.update(graph.graph.graph)
    fixed.object_names = list(graph.object_names)
    for _, data in graph.graph.nodes(data=True):
        fixed.add_entity(data["name"], is_object=data.get("is_object", True))
        for attribute in data.get("attributes", []):
            fixed.add_attribute(data["name"], attribute)
    for relation in graph.relations():
        key = (normalise_name(relation.subject), relation.predicate, normalise_name(relation.object))
        reading = readings.get(key, Reading.FORWARD)
        if reading is Reading.NONSENSE or (drop_unclear and reading is Reading.UNCLEAR):
            continue
        subject, obj = (
            (relation.object, relation.subject) if reading is Reading.REVERSED else (relation.subject, relation.object)
        )
        node = graph.graph.nodes[normalise_name(obj)]
        fixed.add_relation(subject, relation.predicate, obj, object_is_entity=bool(node.get("is_object", True)))
    fixed.reference_claims = list(graph.reference_claims)
    fixed.reference_texts = list(graph.reference_texts)
    fixed.caption = graph.caption
    fixed.regions = list(graph.regions)
    return fixed


def orient_fact(graph: SceneGraph | None, subject: str, relation: str, obj: str) -> tuple[str, str]:
    """(subject, object) of one fact in reading order: the graph's decision when the graph records it, else
    the triplet's own when it is clear; as given otherwise."""
    if graph is not None:
        key = (normalise_name(subject), relation, normalise_name(obj))
        reading = graph_readings(graph).get(key)
        if reading is not None:
            return (obj, subject) if reading is Reading.REVERSED else (subject, obj)
    reading, diff = triplet_reading(subject, relation, obj)
    if reading is Reading.REVERSED and -diff >= STRONG:
        return obj, subject
    return subject, obj


def fact_text(graph: SceneGraph | None, subject: str, relation: str, obj: str) -> str:
    """A reference fact as evidence text, "(man, wearing, shirt)", in reading order."""
    first, second = orient_fact(graph, subject, relation, obj)
    return f"({first}, {relation}, {second})"


_TRIPLET_TEXT = re.compile(r"^\(\s*(?P<s>[^,()]+?)\s*,\s*(?P<r>[^,()]+?)\s*,\s*(?P<o>[^()]+?)\s*\)$")


def reference_text(graph: SceneGraph | None, text: str) -> str:
    """A source's raw triplet string ("(shirt, wearing, man)") in reading order; other text unchanged."""
    match = _TRIPLET_TEXT.match(text.strip())
    if match is None:
        return text
    return fact_text(graph, match["s"], match["r"], match["o"])


def is_plural(name: str) -> bool:
    """Whether a name takes "are": plurals, groups and plural-only nouns ("shorts", "people", "cups")."""
    words = name.split()
    return bool(words) and (thing(name).group or words[-1].lower() in PLURALIA_TANTUM)


def relation_sentence(subject: str, relation: str, obj: str, *, object_is_thing: bool = True) -> str:
    """A plain sentence: "The man is wearing the shirt.", "The cup is on the table.", "The man has a hat."

    A copula goes before "-ing" forms, participles and prepositions; a finite verb ("has", "holds") stands
    alone.
    """
    words = relation.split()
    first = words[0].lower() if words else ""
    if not words or first in {"is", "are", "was", "were", "am"} or first in _FINITE or (
        first.endswith("s") and not first.endswith("ss") and _lemma(first) not in {None, first}
        and not first.endswith(("ed", "ing"))
    ):
        verb = relation
    else:
        verb = f"{'are' if is_plural(subject) else 'is'} {relation}"
    subject_text = _the(subject)
    first_word = obj.split()[0].lower() if obj.split() else ""
    gerund = first_word.endswith("ing") and not wordnet().synsets(first_word, "n")  # not "ceiling"
    bare = not object_is_thing or first_word in _PREPOSITION_STARTS or gerund
    return f"{subject_text[:1].upper()}{subject_text[1:]} {verb} {obj.strip() if bare else _the(obj)}."


_PREPOSITION_STARTS = frozenset({
    "on", "in", "at", "by", "near", "under", "below", "above", "behind", "beside", "inside", "with", "of",
    "over", "beneath", "underneath", "outside", "within", "against", "along", "across", "around", "among",
    "between", "to", "next", "atop", "onto", "into", "from", "through", "toward", "towards",
})


_FINITE = frozenset({"has", "have", "had"})


def _the(name: str) -> str:
    text = name.strip()
    if text[:1].isupper() and text[1:2].islower():
        text = text[0].lower() + text[1:]
    first = text.split()[0].lower() if text.split() else ""
    return text if first in {"the", "a", "an", "his", "her", "their", "its"} else f"the {text}"
