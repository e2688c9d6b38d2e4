"""Comparing two relation phrases ("sitting on" / "on", "wearing" / "dressed in", "under" / "on top of").

Sentence embeddings of short relation phrases separate paraphrases from different relations poorly
(with all-MiniLM-L6-v2, "above" / "below" score 0.95 in context, higher than "wearing" / "dressed in").
So the typed judge first compares relations *lexically*, and leaves only the cases the rules cannot decide
to the embedding model:

* **Polarity.** "not wearing" never matches "wearing", and the other way round.
* **Spatial prepositions** are sorted into groups (on, above, under, in, near, behind, in front of, ...).
  Two relations whose spatial prepositions fall in different groups disagree, whatever their verbs
  ("sitting on" / "sitting under"); in the same group they agree when their verbs do or when one side has
  no verb ("sitting on" / "on", "next to" / "beside").
* **Verbs** agree when they have the same lemma ("wears" / "wearing"), belong to one of the small
  paraphrase groups of :data:`VERB_GROUPS` ("holding" / "carrying"), or share a WordNet verb synset among
  their first senses.
* **Possession.** "has" and "with" are implied by any possessive relation (wearing, holding, carrying,
  having); a claim "the man has a hat" is supported by "(man, wearing, hat)".

Anything else — two different verbs outside the lexicon — is *undecided*: :func:`compare_relations` returns
None and the caller falls back on embedding similarity.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from halluscope.scene.names import (
    PREPOSITIONS,
    colour_words,
    content_words,
    is_negated,
    tokens,
    wordnet,
)
from halluscope.text.words import negates_phrase

#: Spatial preposition groups; members of one group say the same thing.
PREPOSITION_GROUPS: dict[str, str] = {
    **dict.fromkeys(["on", "onto", "upon", "atop", "on top of", "on the top of"], "on"),
    **dict.fromkeys(["above", "over"], "above"),
    **dict.fromkeys(["under", "below", "beneath", "underneath"], "under"),
    **dict.fromkeys(
        ["in", "inside", "inside of", "within", "into", "in the middle of", "among", "amid"], "in"
    ),
    **dict.fromkeys(
        [
            "near", "next to", "beside", "besides", "by", "close to", "alongside", "adjacent to",
            "on the side of", "along", "against",
        ],
        "near",
    ),
    **dict.fromkeys(["behind", "in back of", "on the back of"], "behind"),
    **dict.fromkeys(["in front of", "on the front of"], "front"),
    **dict.fromkeys(["around"], "around"),
    **dict.fromkeys(["between"], "between"),
    **dict.fromkeys(["across", "across from", "through"], "across"),
    **dict.fromkeys(["out of", "outside", "away from", "beyond"], "out"),
    **dict.fromkeys(["at"], "at"),
    **dict.fromkeys(["with"], "with"),
    **dict.fromkeys(["of"], "of"),
    **dict.fromkeys(["to", "toward", "towards"], "to"),
    **dict.fromkeys(["from"], "from"),
    **dict.fromkeys(["for"], "for"),
}
#: Groups that state where something is; two different ones contradict each other.
SPATIAL_GROUPS = frozenset({"on", "above", "under", "in", "near", "behind", "front", "between", "out"})
#: "at" is vague: it agrees with being on, in or near something.
_COMPATIBLE = {frozenset({"at", "near"}), frozenset({"at", "in"}), frozenset({"at", "on"})}

#: Verb paraphrase groups (lemmas) that WordNet does not connect.
VERB_GROUPS: tuple[frozenset[str], ...] = (
    frozenset({"wear", "dress", "don", "sport", "clothe"}),
    frozenset({"hold", "carry", "grasp", "grip", "clutch", "hold_onto", "clasp", "bear"}),
    frozenset({"look", "watch", "observe", "stare", "gaze", "view", "see", "eye", "regard"}),
    frozenset({"sit", "seat", "perch"}),
    frozenset({"lie", "lay", "rest", "recline"}),
    frozenset({"eat", "bite", "chew", "munch", "consume", "nibble"}),
    frozenset({"drink", "sip"}),
    frozenset({"throw", "toss", "pitch", "fling", "hurl"}),
    frozenset({"hit", "strike", "swing"}),
    frozenset({"cover", "coat", "blanket"}),
    frozenset({"hang", "suspend", "dangle"}),
    frozenset({"pull", "drag", "tow", "haul"}),
    frozenset({"push", "shove"}),
    frozenset({"walk", "stroll", "step", "wander"}),
    frozenset({"run", "jog", "sprint"}),
    frozenset({"use", "operate", "handle", "work", "utilize", "utilise"}),
    frozenset({"cut", "slice", "chop"}),
    frozenset({"stand", "stay"}),
    frozenset({"park", "stop"}),
    frozenset({"ride", "mount"}),
    frozenset({"contain", "hold", "include"}),
    frozenset({"fill", "contain"}),
    frozenset({"show", "display", "feature", "depict", "present"}),
    frozenset({"surround", "encircle", "enclose"}),
    frozenset({"lean", "rest"}),
    frozenset({"place", "locate", "position", "situate", "set", "put"}),
)
#: Spatial groups a bare verb implies: "riding" a horse is being on it, "wearing" a shirt is being in it.
VERB_IMPLIES: dict[str, frozenset[str]] = {
    "ride": frozenset({"on"}),
    "sit": frozenset({"on", "in", "at"}),
    "stand": frozenset({"on", "in", "at"}),
    "lie": frozenset({"on", "in"}),
    "lay": frozenset({"on", "in"}),
    "park": frozenset({"on", "in", "near"}),
    "hang": frozenset({"on", "under"}),
    "wear": frozenset({"in"}),
    "dress": frozenset({"in"}),
    "lean": frozenset({"on", "near"}),
    "rest": frozenset({"on"}),
    "perch": frozenset({"on"}),
    "cover": frozenset({"on"}),
    "top": frozenset({"on"}),
    "fill": frozenset({"in"}),
    "contain": frozenset({"in"}),
    "hold": frozenset({"in"}),
    "walk": frozenset({"on", "in"}),
    "grow": frozenset({"on", "in"}),
    "float": frozenset({"in", "on"}),
    "swim": frozenset({"in"}),
    "fly": frozenset({"above", "in"}),
}
#: Whole phrases that mean a simpler relation.
RELATION_ALIASES = {
    "has on": "wearing", "have on": "wearing", "having on": "wearing", "dressed in": "wearing",
    "clothed in": "wearing", "decked out in": "wearing", "on top of": "on", "sitting atop": "sitting on",
}
#: Relations that only say "has": implied by any possessive relation.
POSSESSIVE = frozenset({"have", "with", "own", "possess", "feature", "include", "contain"})
#: Relations that imply possession.
_IMPLIES_POSSESSION = POSSESSIVE | {"wear", "hold", "carry", "bear", "sport", "don", "grasp", "grip"}
#: Auxiliaries and adverbs that carry no relation meaning.
_FILLER = frozenset(
    {
        "is", "are", "was", "were", "be", "being", "been", "am", "'s", "does", "do", "did", "currently",
        "also", "possibly", "probably", "likely", "seemingly", "apparently", "just", "still", "the", "a",
        "an",
        "can", "could", "may", "might", "will", "would", "should", "to",
    }
)
#: Relations that state a property of the subject rather than link two things.
COPULAS = frozenset(
    {
        "is", "are", "was", "were", "be", "am", "is a", "is an", "are a", "appears", "appear",
        "appears to be", "looks", "look", "looks like", "seems", "seem", "seems to be", "becomes",
        "remains", "stays",
        "colored", "coloured", "has color", "has colour", "color", "colour", "is colored", "are colored",
        "is made of", "made of", "made from", "is made from",
    }
)


def is_copula(relation: str) -> bool:
    """True for "is", "are", "appears", "looks like", "is made of": the object is a property."""
    return " ".join(tokens(relation)) in COPULAS


@dataclass(frozen=True)
class RelationParts:
    """A relation phrase taken apart: polarity, verb lemmas, spatial preposition group, other words."""

    negative: bool
    verbs: frozenset[str]
    prepositions: frozenset[str]
    words: frozenset[str]
    text: str


@lru_cache(maxsize=65536)
def parse_relation(relation: str) -> RelationParts:
    """Split a relation phrase into the parts :func:`compare_relations` reasons with."""
    words = tokens(relation)
    negative = any(negates_phrase(w) for w in words)
    words = [w for w in words if not negates_phrase(w)]
    text = " ".join(words)
    core = " ".join(w for w in words if w not in _FILLER)
    if core in RELATION_ALIASES:
        words = tokens(RELATION_ALIASES[core])
    groups: set[str] = set()
    rest: list[str] = []
    i = 0
    while i < len(words):
        for prep in PREPOSITIONS:
            parts = prep.split()
            if words[i : i + len(parts)] == parts and prep in PREPOSITION_GROUPS:
                groups.add(PREPOSITION_GROUPS[prep])
                i += len(parts)
                break
        else:
            rest.append(words[i])
            i += 1
    content = [w for w in rest if w not in _FILLER] or [w for w in rest if w in {"is", "are", "be"}]
    wn = wordnet()
    verbs: set[str] = set()
    others: set[str] = set()
    for word in content:
        lemma = wn.morphy(word, "v")
        if word in {"has", "have", "having", "had"}:
            verbs.add("have")
        elif lemma is not None and (word.endswith(("ing", "ed", "s")) or wn.synsets(word, "v")):
            verbs.add(lemma)
        else:
            others.add(word)
    return RelationParts(negative, frozenset(verbs), frozenset(groups), frozenset(others), text)


@lru_cache(maxsize=65536)
def verbs_agree(a: str, b: str) -> bool:
    """Same lemma, one paraphrase group, or a shared WordNet synset among each verb's first three senses."""
    if a == b:
        return True
    if any(a in group and b in group for group in VERB_GROUPS):
        return True
    wn = wordnet()
    senses_a = {s.name() for s in wn.synsets(a, "v")[:3]}
    return bool(senses_a & {s.name() for s in wn.synsets(b, "v")[:3]})


def _preps_agree(a: frozenset[str], b: frozenset[str]) -> bool | None:
    """True / False when both name spatial groups that (dis)agree; None when it says nothing."""
    spatial_a, spatial_b = a & SPATIAL_GROUPS | (a & {"at"}), b & SPATIAL_GROUPS | (b & {"at"})
    if not spatial_a or not spatial_b:
        return None
    if spatial_a & spatial_b:
        return True
    return any(frozenset({x, y}) in _COMPATIBLE for x in spatial_a for y in spatial_b)


#: Spatial directions whose opposite is a different, contradicting relation ("left of" vs "right of").
OPPOSITE_DIRECTIONS = (
    (frozenset({"left"}), frozenset({"right"})),
    (frozenset({"above", "over", "atop"}), frozenset({"below", "under", "beneath", "underneath"})),
    (frozenset({"front"}), frozenset({"behind", "back"})),
)


def direction_words(relation: str) -> frozenset[str]:
    """The spatial-direction words of a relation ("to the left of" → {"left"})."""
    words = set(tokens(relation))
    return frozenset(w for pair in OPPOSITE_DIRECTIONS for side in pair for w in side if w in words)


def opposite_directions(a: str, b: str) -> bool:
    """Whether two relations point in opposite spatial directions (so one contradicts the other)."""
    wa, wb = direction_words(a), direction_words(b)
    return any((wa & x and wb & y) or (wa & y and wb & x) for x, y in OPPOSITE_DIRECTIONS)


def compare_relations(claimed: str, reference: str) -> float | None:
    """How well a reference relation supports a claimed one.

    1.0 (same), 0.9 (agree), 0.0 (disagree) or None (undecided: leave it to embeddings).

    See the module docstring for the rules.
    """
    a, b = parse_relation(claimed), parse_relation(reference)
    if a.negative != b.negative:
        return 0.0
    if opposite_directions(claimed, reference):
        return 0.0
    if a.text == b.text:
        return 1.0
    preps = _preps_agree(a.prepositions, b.prepositions)
    if preps is False:
        return 0.0
    # "has" / "with": implied by any possessive relation on the other side.
    a_possessive = (a.verbs | a.prepositions) <= (POSSESSIVE | {"with"}) and bool(a.verbs | a.prepositions)
    if a_possessive and (b.verbs & _IMPLIES_POSSESSION or "with" in b.prepositions) and not a.words:
        return 0.9
    b_possessive = (b.verbs | b.prepositions) <= (POSSESSIVE | {"with"}) and bool(b.verbs | b.prepositions)
    if b_possessive and (a.verbs & _IMPLIES_POSSESSION or "with" in a.prepositions) and not b.words:
        return 0.9
    if a.verbs and b.verbs:
        agree = any(verbs_agree(x, y) for x in a.verbs for y in b.verbs)
        if agree:  # prepositions, when both sides have spatial ones, agree (checked above)
            return 1.0 if a.verbs == b.verbs and a.prepositions == b.prepositions else 0.9
        return None
    if preps and not (a.words and b.words and not a.words & b.words):
        # One side is a bare preposition ("on") and the other adds a verb ("sitting on"), or both bare.
        return 0.9
    # A bare verb against a bare preposition it implies: "riding" / "on", "wearing" / "in".
    for x, y in ((a, b), (b, a)):
        if x.verbs and not x.prepositions and y.prepositions and not y.verbs:
            implied = set().union(*(VERB_IMPLIES.get(v, frozenset()) for v in x.verbs))
            if implied & y.prepositions:
                return 0.9
    return None


def relations_equivalent(a: str, b: str) -> bool:
    """Whether the lexical rules say two relations mean the same (used to build *false* relations)."""
    score = compare_relations(a, b)
    return score is not None and score > 0.5


# -- attributes --------------------------------------------------------------------------------------------

#: Words that only say "this is a colour / property" ("red color", "colored blue").
_ATTRIBUTE_FILLER = frozenset(
    {"color", "colour", "colored", "coloured", "in", "is", "are", "looks", "appears"}
)


def _attribute_words(text: str) -> frozenset[str]:
    return frozenset(content_words(text, drop=_ATTRIBUTE_FILLER | {"and", "or", "very", "quite", "slightly"}))


@lru_cache(maxsize=65536)
def _adjective_senses(word: str) -> frozenset[str]:
    wn = wordnet()
    senses = {s.name() for pos in ("a", "s") for s in wn.synsets(word, pos)[:3]}
    for synset in [s for pos in ("a", "s") for s in wn.synsets(word, pos)[:3]]:
        senses.update(t.name() for t in synset.similar_tos())
    return frozenset(senses)


@lru_cache(maxsize=65536)
def _antonyms(word: str) -> frozenset[str]:
    wn = wordnet()
    found: set[str] = set()
    for pos in ("a", "s", "v", "n"):
        for synset in wn.synsets(word, pos)[:3]:
            for lemma in synset.lemmas():
                if lemma.name() == word:
                    found.update(a.name() for a in lemma.antonyms())
    return frozenset(found)


def _lemma(word: str) -> str:
    wn = wordnet()
    for pos in ("v", "a", "n"):
        base = wn.morphy(word, pos)
        if base:
            return str(base)
    return word


def compare_attributes(claimed: str, reference: str) -> float | None:
    """How well a recorded attribute supports a claimed one: 1.0 / 0.9 agree, 0.0 disagrees, None undecided.

    Same words (colour fillers dropped: "red color" = "red"); two colour sets that share no colour disagree
    ("red" / "white"), that share one agree ("white" / "red and white"); one word set inside the other agrees
    ("green" / "green and lush"); same lemma ("smiling" / "smile"); WordNet antonyms disagree ("open" /
    "closed"); shared or similar adjective synsets agree ("big" / "large"). Anything else is undecided.
    """
    if is_negated(claimed) != is_negated(reference):
        return 0.0
    a, b = _attribute_words(claimed), _attribute_words(reference)
    if not a or not b:
        return 1.0 if " ".join(tokens(claimed)) == " ".join(tokens(reference)) else None
    if a == b:
        return 1.0
    colours_a, colours_b = colour_words(claimed), colour_words(reference)
    if colours_a and colours_b:
        return 0.9 if colours_a & colours_b else 0.0
    if bool(colours_a) != bool(colours_b) and (a == colours_a or b == colours_b):
        # A bare colour against a non-colour property ("purple" / "large"): different kinds of attribute,
        # neither supports nor contradicts the other (WordNet's rare senses would otherwise link them).
        return None
    if a <= b or b <= a:
        return 0.9
    lemmas_a, lemmas_b = {_lemma(w) for w in a}, {_lemma(w) for w in b}
    if lemmas_a == lemmas_b:
        return 1.0
    if any(y in _antonyms(x) or x in _antonyms(y) for x in a for y in b):
        return 0.0
    if len(a) == 1 and len(b) == 1:
        (x,), (y,) = tuple(a), tuple(b)
        if _adjective_senses(x) & _adjective_senses(y):
            return 0.9
    return None


def relation_core(relation: str) -> str:
    """The relation without auxiliaries, modals and hedges ("is possibly holding" → "holding")."""
    words = tokens(relation)
    core = [w for w in words if w not in _FILLER]
    return " ".join(core) if core else " ".join(words)
