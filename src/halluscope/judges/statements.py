"""Question-aware yes/no reading: does an answer state the question's claim, or deny it, without a yes or no?

Models often answer "Are the colours on tiles A and B the same?" with "The colours on tiles A and B appear
to be the same." — a yes that holds no yes word. Offline, the question is turned into the statement it asks
about ("the colours on tiles A and B the same": auxiliary verb, instructions such as "Please answer yes or
no." and context openers such as "According to the table," removed) and compared with an answer sentence:

- **restated** (yes): the sentence holds every content word of the statement, in the statement's order, with
  as many negations (an even/odd count) as the statement;
- **denied** (no): the same, with the opposite parity of negations ("... are not the same");
- **compared** (no): the question compares ("shorter", "different", "the same") and the sentence names the
  same things but says the opposite kind of comparison ("of equal length" to "Is the vertical line
  shorter ...?", "different colours" to "... the same colour?").

Order matters because a reordered list is a different claim ("China, followed by the USA and Russia" does
not state "the USA, followed by China and Russia"). Anything else is left undecided, never guessed.
:func:`conclusion_against_question` reads an answer's concluding sentence ("So, ...", "Therefore, ...") the
same way, so that the yes/no reader can tell an answer that contradicts itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from halluscope.text import NO_WORDS, OPPOSITE_COMPARATIVES, YES_WORDS, comparison_words, is_negation

__all__ = ["StatementReading", "conclusion_against_question", "question_statement", "read_against_question"]


@dataclass(frozen=True)
class StatementReading:
    """A yes or no read from a statement, and the rule: ``restated``, ``denied``, ``compared``, ``concluded``."""

    value: str
    how: str


_INSTRUCTIONS = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\s*(?:please\s+)?(?:answer|reply|respond)(?:\s+(?:with|in|using|by))?\s+(?:a\s+|one\s+)?"
        r"(?:(?:yes|no)\s+or\s+(?:yes|no)|(?:one\s+|a\s+single\s+)?(?:word|sentence))\s*[.!?]*\s*$",
        r"\s*\(?\b(?:yes|no)\s*(?:or|/)\s*(?:yes|no)\b\)?\s*[.!?]*\s*$",
    )
]
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'])")
_CONTEXT = re.compile(
    r"^(?:according to|accroding to|based on|judging (?:by|from)|looking at|for|from|in|as shown in|as per|per)\b"
    r"[^,?]{0,80},\s*",
    re.IGNORECASE,
)
_AUXILIARY = re.compile(
    r"^(?:is|are|was|were|does|do|did|can|could|has|have|had|will|would|should|whether)\s+(?:there\s+)?",
    re.IGNORECASE,
)
_CONCLUSION = re.compile(
    r"^(?:so|therefore|thus|hence|overall|in conclusion|in summary|to summarize|to conclude)\b\s*,?\s*",
    re.IGNORECASE,
)
_FRAME = re.compile(
    r"\b(?:in|on|of|from)\s+(?:the|this|these)\s+(?:given\s+|provided\s+)?"
    r"(?:image|images|figure|photo|picture|chart|graph|sequence of (?:the )?images)\b",
    re.IGNORECASE,
)
#: Words that carry no part of the claim: articles, auxiliaries and light verbs, frame words, hedges.
_STOP = frozenset(
    {
        "a", "an", "the", "this", "that", "these", "those", "is", "are", "was", "were", "be", "been", "being",
        "do", "does", "did", "has", "have", "had", "there", "it", "its", "they", "them", "their", "of", "any",
        "image", "images", "figure", "photo", "picture", "shown", "shows", "show", "depicted", "appear",
        "appears", "appeared", "seem", "seems", "look", "looks", "to", "actually", "indeed", "really", "both",
        "all", "also", "and", "state", "metal", "metals", "medal", "medals", "s",
    }
)  # fmt: skip
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_SPELLING = {"colour": "color", "colours": "colors", "grey": "gray", "centre": "center", "metre": "meter"}


def _stem(word: str) -> str:
    word = _SPELLING.get(word, word)
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3 and not word.endswith("'s"):
        return word[:-1]
    return word


_SYMBOLS = {"<": " less than ", ">": " greater than ", "≤": " at most ", "≥": " at least "}


def _words(text: str) -> list[str]:
    text = text.lower().replace("’", "'")
    for symbol, words in _SYMBOLS.items():
        text = text.replace(symbol, words)
    return _WORD.findall(_FRAME.sub(" ", text))


def _content(words: list[str]) -> list[str]:
    return [_stem(w) for w in words if w not in _STOP and not is_negation(w)]


def _negations(words: list[str]) -> int:
    return sum(1 for w in words if is_negation(w) or w == "no")


@lru_cache(maxsize=8192)
def question_statement(question: str) -> str | None:
    """The claim a yes/no question asks about, as words in the question's order; None if not a yes/no question.

    "According to the table, does Germany have the highest GDP in 2021? Please answer yes or no." →
    "Germany have the highest GDP in 2021".
    """
    text = " ".join(question.split())
    for pattern in _INSTRUCTIONS:
        text = pattern.sub("", text)
    sentences = [s for s in _SENTENCE.split(text) if s.strip()]
    asked = [s for s in sentences if s.rstrip().endswith("?")]
    sentence = (asked or sentences or [""])[-1].strip().rstrip("?").strip()
    sentence = _CONTEXT.sub("", sentence)
    match = _AUXILIARY.match(sentence)
    if not match:
        return None
    statement = sentence[match.end() :].strip(" ,")
    return statement or None


def _match_end(wanted: list[str], have: list[tuple[int, str]]) -> int | None:
    """The word index of the last wanted word when all occur in ``have`` in order (others between); else None."""
    position, end = 0, -1
    stems = [stem for _, stem in have]
    for word in wanted:
        try:
            position = stems.index(word, position) + 1
        except ValueError:
            return None
        end = have[position - 1][0]
    return end


def _read_sentence(sentence: str, statement: str) -> StatementReading | None:
    sentence = _CONTEXT.sub("", sentence.strip())
    q_words, a_words = _words(statement), _words(sentence)
    a_content = [(i, _stem(w)) for i, w in enumerate(a_words) if w not in _STOP and not is_negation(w)]
    q_compare, a_compare = comparison_words(statement), comparison_words(sentence)
    q_content = _content(q_words)
    q_plain = [w for w in q_content if w not in OPPOSITE_COMPARATIVES and w not in _COMPARISON_STEMS]
    if not q_plain:
        return None
    end = _match_end(q_content, a_content)
    if end is not None:
        # Negations up to the last word of the claim count ("... are not the same", "There is no dog");
        # one after it is about something else ("on the sofa, not the floor").
        same_parity = _negations(q_words) % 2 == _negations(a_words[: end + 1]) % 2
        return StatementReading("yes", "restated") if same_parity else StatementReading("no", "denied")
    if not q_compare or _match_end(q_plain, a_content) is None or _negations(a_words):
        return None
    asks = q_compare - {"same", "different"}
    if (asks or "different" in q_compare) and "same" in a_compare and not (a_compare & asks):
        return StatementReading("no", "compared")  # "of equal length" to "Is A shorter than B?"
    if "same" in q_compare and ("different" in a_compare or a_compare - {"same"}) and "same" not in a_compare:
        return StatementReading("no", "compared")  # "different colours" / "longer" to "Are they the same?"
    return None


_COMPARISON_STEMS = frozenset({"same", "equal", "identical", "different", "alike", "similar", "than"})


def read_against_question(answer: str, question: str) -> StatementReading | None:
    """The yes or no an answer's first sentence gives by stating or denying the question's claim; else None."""
    statement = question_statement(question)
    if statement is None or not answer.strip():
        return None
    first = _SENTENCE.split(answer.strip())[0]
    return _read_sentence(first, statement)


def conclusion_against_question(answer: str, question: str) -> StatementReading | None:
    """The yes or no of an answer's last concluding sentence ("So, ...", "Therefore, ..."), when it gives one.

    A conclusion that opens with a yes or no word gives that; otherwise it is read against the question's
    statement as :func:`read_against_question` reads a first sentence. The first sentence itself is never
    a conclusion.
    """
    sentences = _SENTENCE.split(answer.strip())[1:]
    for sentence in reversed(sentences):
        match = _CONCLUSION.match(sentence)
        if not match:
            continue
        rest = sentence[match.end() :].strip()
        first = (_WORD.findall(rest.lower()) or [""])[0]
        if first in YES_WORDS:
            return StatementReading("yes", "concluded")
        if first in NO_WORDS:
            return StatementReading("no", "concluded")
        statement = question_statement(question)
        return _read_sentence(rest, statement) if statement else None
    return None
