"""Claims as the report shows them: a colour class per verdict, and where the response states each claim.

Kept apart from the page so the two heuristics the report relies on can be read and tested on their own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

#: Verdict categories of a claim, most severe first; the response colours overlapping claims by the first.
CATEGORIES = ("object", "relation", "attribute", "hallucinated", "unjudged", "supported")

_TOKEN = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)?")
_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)|\n+")
#: Words that carry no claim content; a claim is placed by its other words.
_STOPWORDS = frozenset(
    re.findall(
        r"\w+",
        "a an the is are was were be been being of and or to it its this that these those there some any "
        "very has have had do does did can could may might will would",
    )
)


def _stem(word: str) -> str:
    word = word.lower()
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _same_word(a: str, b: str) -> bool:
    return a == b or (min(len(a), len(b)) >= 4 and (a.startswith(b) or b.startswith(a)))


def locate_claim(response: str, subject: str, relation: str, obj: str) -> tuple[int, int] | None:
    """Where in ``response`` a (subject, relation, object) claim is stated, as character offsets.

    Extractors paraphrase, so this is a heuristic: it picks the sentence sharing most content words with
    the claim (half of them at least) and returns the shortest stretch of it holding those words. None
    when the claim cannot be placed; the report then lists the claim without marking the text.
    """
    wanted = []
    for word in _TOKEN.findall(f"{subject} {relation} {obj}"):
        if word.lower() not in _STOPWORDS:
            stem = _stem(word)
            if stem not in wanted:
                wanted.append(stem)
    if not wanted:
        return None
    best: tuple[int, int, int] | None = None  # (matched count, start, end)
    sentence_start = 0
    bounds = [m.end() for m in _SENTENCE_END.finditer(response)] + [len(response)]
    for sentence_end in bounds:
        if sentence_end <= sentence_start:
            continue
        tokens = [
            (m.start() + sentence_start, m.end() + sentence_start, _stem(m.group()))
            for m in _TOKEN.finditer(response[sentence_start:sentence_end])
        ]
        hits = [
            (start, end, {i for i, w in enumerate(wanted) if _same_word(w, stem)})
            for start, end, stem in tokens
        ]
        hits = [h for h in hits if h[2]]
        found = set().union(*(h[2] for h in hits)) if hits else set()
        if found and (best is None or len(found) > best[0]):
            window = _shortest_window(hits, found)
            if window is not None:
                best = (len(found), window[0], window[1])
        sentence_start = sentence_end
    if best is None or best[0] * 2 < len(wanted):
        return None
    return best[1], best[2]


def _shortest_window(hits: list[tuple[int, int, set[int]]], needed: set[int]) -> tuple[int, int] | None:
    """The shortest run of hits (by characters) that together match every index in ``needed``."""
    best: tuple[int, int] | None = None
    counts: dict[int, int] = {}
    left = 0
    for _, end, matched in hits:
        for index in matched:
            counts[index] = counts.get(index, 0) + 1
        while len(counts) == len(needed):
            start = hits[left][0]
            if best is None or end - start < best[1] - best[0]:
                best = (start, end)
            for index in hits[left][2]:
                counts[index] -= 1
                if counts[index] == 0:
                    del counts[index]
            left += 1
    return best


def claim_category(claim: Mapping[str, Any]) -> str:
    """The report's colour class of a claim: supported, object/relation/attribute, hallucinated, unjudged."""
    verdict = str(claim.get("verdict") or "unjudged")
    if verdict == "supported":
        return "supported"
    if verdict == "hallucinated":
        error = claim.get("error")
        return str(error) if error in ("object", "relation", "attribute") else "hallucinated"
    return "unjudged"


def verdict_counts(records: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    counts = dict.fromkeys(CATEGORIES, 0)
    for record in records:
        for claim in record.get("claims") or []:
            if isinstance(claim, dict):
                counts[claim_category(claim)] += 1
    return counts
