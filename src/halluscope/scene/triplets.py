"""Parsing Tri-HE's reference triplet strings, such as ``"(laptop, is, black)"``.

The rule, which loses none of the 5,729 strings in the official file:

1. Strip the outer parentheses and whitespace.
2. If the string holds another ``"("`` it is two triplets typed into one string (two such strings exist,
   e.g. ``"(snow on the ground, covers, mountains, (people, wearing, winter clothing)"``): split before
   the inner ``"("`` (dropping a stray ``",;"``) and parse each half by rule 3.
3. Split on commas (whatever the spacing: ``"(bus, is,stopped)"`` and ``"(People, riding ,elephant)"``
   exist). The first part is the subject, the second the relation, and everything after the second
   comma is the object, commas included — so ``"(Woman, reason for attention, Curiosity/Distraction,
   photographer)"`` keeps ``"Curiosity/Distraction, photographer"`` as its object rather than losing a
   part. Subjects and relations in the file never contain commas; objects sometimes do.
4. A string with fewer than three non-empty parts is malformed: :class:`TripletParseError` names it.
"""

from __future__ import annotations

import re

from halluscope.types import Claim


class TripletParseError(ValueError):
    """A reference triplet string that cannot be read as (subject, relation, object)."""


_INNER_OPEN = re.compile(r"[,;\s]*\(")


def _parse_single(text: str, original: str) -> Claim:
    body = text.strip().strip("()").strip().rstrip(",;").strip()
    parts = body.split(",", 2)
    if len(parts) < 3 or not all(p.strip() for p in parts):
        raise TripletParseError(f"not a (subject, relation, object) triplet: {original!r}")
    subject, relation, obj = (p.strip() for p in parts)
    return Claim(subject=subject, relation=relation, object=obj)


def parse_triplet_string(text: str) -> list[Claim]:
    """Parse one reference string into its triplet(s); see the module docstring for the rule."""
    stripped = text.strip()
    if stripped.startswith("("):
        stripped = stripped[1:]
    if stripped.endswith(")"):
        stripped = stripped[:-1]
    pieces = [piece for piece in _INNER_OPEN.split(stripped) if piece.strip()]
    if not pieces:
        raise TripletParseError(f"not a (subject, relation, object) triplet: {text!r}")
    return [_parse_single(piece, text) for piece in pieces]


def reference_sentence(text: str) -> str:
    """The reference string as the official similarity judge embeds it.

    Tri-HE's script removes ``(``, ``)`` and ``,`` from the raw string and appends a full stop; the exact
    characters matter for reproducing its verdicts, so this works on the raw string, not on parsed parts.
    """
    return text.replace("(", "").replace(")", "").replace(",", "") + "."
