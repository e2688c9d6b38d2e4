"""Yes/no, negation and comparison words: the vocabulary the answer readers and rule judges share.

Kept as plain sets so each reader builds what it needs (a regex, a token test) from the same words; a word
added here is read the same way by the yes/no reader, the HQH rules, the PROVE builder and the scene-graph
relation parser.
"""

from __future__ import annotations

import re

__all__ = [
    "AFFIRMATIONS",
    "DIFFERENT_WORDS",
    "EMPHATIC_WORDS",
    "EQUAL_WORDS",
    "NO_WORDS",
    "OPPOSITE_COMPARATIVES",
    "OPPOSITE_PREPOSITIONS",
    "PHRASE_NEGATORS",
    "SENTENCE_NEGATIONS",
    "YES_WORDS",
    "comparison_words",
    "is_negation",
    "negates_phrase",
]

#: A word that answers yes on its own.
YES_WORDS = frozenset({"yes", "yeah", "yep", "yup", "yea", "affirmative"})
#: A word that answers no on its own.
NO_WORDS = frozenset({"no", "nope", "nah", "negative"})
#: Words that agree with a question's claim when they open an answer ("Correct, it is red").
AFFIRMATIONS = frozenset({"correct", "true", "exactly"})
#: Emphasis that takes the polarity of what follows: "Absolutely." / "Certainly!" is yes, "Absolutely not." /
#: "Indeed not" / "Of course not" is no.
EMPHATIC_WORDS = frozenset(
    {"absolutely", "definitely", "certainly", "indeed", "surely", "sure", "of course", "undoubtedly", "totally"}
)
#: Words that deny what a phrase names: "no helmet", "without a leash", "not present".
PHRASE_NEGATORS = frozenset({"no", "not", "without", "none", "neither", "nor", "never", "lacking", "absent"})
#: Negation words in running text (a sentence, not a phrase): negators plus "nothing", "nobody", "cannot".
SENTENCE_NEGATIONS = PHRASE_NEGATORS | {
    "nothing", "nobody", "cannot", "isn't", "aren't", "doesn't", "don't", "didn't", "wasn't",
}  # fmt: skip

#: Words that say two things are the same (a comparison question answered "they are equal").
EQUAL_WORDS = frozenset({"same", "equal", "equally", "identical", "alike", "similar"})
#: Words that say two things differ.
DIFFERENT_WORDS = frozenset({"different", "differ", "differs", "unequal"})
#: Comparatives and their opposites; "more"/"less" and "-er than" are found by :func:`comparison_words`.
_OPPOSITE_COMPARATIVES = {
    "longer": "shorter", "taller": "shorter", "larger": "smaller", "bigger": "smaller", "higher": "lower",
    "greater": "less", "more": "less", "wider": "narrower", "thicker": "thinner", "heavier": "lighter",
    "older": "younger", "darker": "lighter", "brighter": "darker", "faster": "slower", "closer": "farther",
    "above": "below", "before": "after",
}  # fmt: skip
OPPOSITE_COMPARATIVES = {**_OPPOSITE_COMPARATIVES, **{b: a for a, b in _OPPOSITE_COMPARATIVES.items()}}

#: Spatial prepositions that exclude each other: "under the pole" is not "on a pole".
_OPPOSITES = {
    "on": {"under", "beneath", "below", "underneath"},
    "above": {"under", "below", "beneath", "underneath"},
    "over": {"under", "below", "beneath", "underneath"},
    "inside": {"outside"},
    "behind": {"front"},
    "left": {"right"},
    "top": {"bottom", "under", "beneath", "underneath"},
}
OPPOSITE_PREPOSITIONS: dict[str, frozenset[str]] = {}
for _word, _others in _OPPOSITES.items():
    OPPOSITE_PREPOSITIONS.setdefault(_word, frozenset())
    OPPOSITE_PREPOSITIONS[_word] |= frozenset(_others)
    for _other in _others:
        OPPOSITE_PREPOSITIONS[_other] = OPPOSITE_PREPOSITIONS.get(_other, frozenset()) | {_word}

_COMPARATIVE = re.compile(r"\b([a-z]+er)\s+than\b|\b(more|less|fewer)\b")


def negates_phrase(word: str) -> bool:
    """Whether one word (lower-case) makes a phrase deny what it names: a phrase negator or a "-n't" form."""
    return word in PHRASE_NEGATORS or word.endswith("n't")


def is_negation(word: str) -> bool:
    """Whether one word (lower-case) negates: a negation word or any "-n't" contraction."""
    return word in SENTENCE_NEGATIONS or word.endswith("n't")


def comparison_words(text: str) -> set[str]:
    """The comparison a text makes: its comparatives ("longer", "more"), "same", or "different".

    Equality words are returned as ``"same"``, difference words as ``"different"``; comparatives as written
    ("shorter", "more"), so a caller can test them against :data:`OPPOSITE_COMPARATIVES`.
    """
    lowered = text.lower()
    words = set(re.findall(r"[a-z]+", lowered))
    found = {m.group(1) or m.group(2) for m in _COMPARATIVE.finditer(lowered)}
    found |= words & set(OPPOSITE_COMPARATIVES)
    if words & EQUAL_WORDS:
        found.add("same")
    if words & DIFFERENT_WORDS:
        found.add("different")
    return found
