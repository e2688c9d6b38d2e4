"""Number words: the one table every reader of counts uses ("two dogs", "a dozen eggs", "a pair of skis").

Before this table there were three, and they disagreed: the HQH judge read "dozen" but not "pair", the
PROVE builder read "no" as zero and stopped at twelve, the tuple extractor read "pair" and "couple" but not
"zero". Now every count reader knows the same words. "no" is not in the table: whether "no dogs" states a
count of zero depends on the reader ("No, there are three" does not), so :func:`numbers_in` takes it as an
option.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["NUMBER_WORDS", "number_value", "numbers_in"]

#: Every word halluscope reads as a number. Quantity nouns count what they name: "a pair of skis" is two,
#: "both" two, "a dozen" twelve; "a couple of" is read as two, as people mostly mean it.
NUMBER_WORDS: Mapping[str, int] = MappingProxyType(
    {
        "zero": 0, "none": 0, "one": 1, "single": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
        "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
        "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
        "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
        "ninety": 90, "hundred": 100,
        "pair": 2, "couple": 2, "both": 2, "dozen": 12,
    }
)  # fmt: skip

_WORD = re.compile(r"[a-z]+")
_DIGITS = re.compile(r"(?<![\w.])(\d{1,4})(?![\w.]\d)")


def number_value(word: str) -> int | None:
    """The number one word states: digits or a word of :data:`NUMBER_WORDS`; None otherwise."""
    lowered = word.strip().lower()
    if lowered.isdigit():
        return int(lowered)
    return NUMBER_WORDS.get(lowered)


def numbers_in(text: str, *, no_is_zero: bool = False) -> set[int]:
    """Every number a text states, as digits (up to four, not inside a decimal) or number words.

    ``no_is_zero``: the word "no" ("no dogs") counts as zero too.
    """
    lowered = text.lower()
    found = {int(d) for d in _DIGITS.findall(lowered)}
    words = _WORD.findall(lowered)
    found |= {NUMBER_WORDS[w] for w in words if w in NUMBER_WORDS}
    if no_is_zero and "no" in words:
        found.add(0)
    return found
