"""What halluscope knows about English words, in one place: number words, yes/no, negation, comparison.

The bottom layer: judges, builders, claim extractors and metrics read these tables instead of keeping their
own copies, so "a dozen", "a pair" or "absolutely not" mean the same thing everywhere. Nothing here
imports from the rest of halluscope.
"""

from halluscope.text.numbers import NUMBER_WORDS, number_value, numbers_in
from halluscope.text.words import (
    AFFIRMATIONS,
    DIFFERENT_WORDS,
    EMPHATIC_WORDS,
    EQUAL_WORDS,
    NO_WORDS,
    OPPOSITE_COMPARATIVES,
    OPPOSITE_PREPOSITIONS,
    PHRASE_NEGATORS,
    SENTENCE_NEGATIONS,
    YES_WORDS,
    comparison_words,
    is_negation,
)

__all__ = [
    "AFFIRMATIONS",
    "DIFFERENT_WORDS",
    "EMPHATIC_WORDS",
    "EQUAL_WORDS",
    "NO_WORDS",
    "NUMBER_WORDS",
    "OPPOSITE_COMPARATIVES",
    "OPPOSITE_PREPOSITIONS",
    "PHRASE_NEGATORS",
    "SENTENCE_NEGATIONS",
    "YES_WORDS",
    "comparison_words",
    "is_negation",
    "number_value",
    "numbers_in",
]
