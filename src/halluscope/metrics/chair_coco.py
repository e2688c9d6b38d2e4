"""CHAIR on COCO, counted as Rohrbach et al.'s evaluator (``chair.py``, OPERA's and its standalone ports) counts.

Rohrbach et al., "Object Hallucination in Image Captioning" (EMNLP 2018). A caption's words (base forms, see
:mod:`halluscope.claims.chair_words`) go through the evaluator's rules, in its order:

1. two-word names are joined, left to right, a pair at a time ("hot dog", "teddy bear", "motor cycle"); some
   pairs become another word ("baby bird" / "adult bird" → bird, so "baby" does not count as a person;
   "passenger jet" → jet; "bow tie" → tie; "toilet seat" → toilet; "wine glas" → "wine glass");
2. if the caption has both "toilet" and "seat", every "seat" is dropped (a toilet seat is not a chair);
3. every remaining word that is a COCO object word (a class name or one of its synonyms) is a mention of its
   class; a mention whose class is not among the image's ground-truth objects is hallucinated.

The ground truth of an image is the union of its COCO instance classes and the classes mentioned in its five
reference captions (read through the same rules), for all 123,287 COCO 2014 train+val images.

Per caption the evaluator reports the joined words, the mentions (word and class), the hallucinated ones and
their positions (``hallucination_idxs``: with the toilet-seat rule these positions are taken from the list
before "seat" was dropped, a chair.py quirk kept here so its output can be compared line by line).

Overall (fractions in chair.py, ×100 here as the papers print them):

- CHAIRs: captions with at least one hallucinated mention / captions;
- CHAIRi: hallucinated mentions / mentions (every repeat counts);
- Recall: ground-truth classes a caption mentions / ground-truth classes, summed over captions;
- Len: chair.py's "Len" is 0.01 × the mean number of joined words per caption, punctuation tokens included,
  so the ×100 figure it prints (and halluscope reports) is that mean word count, not a percentage.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from halluscope.metrics.chair import ChairTally

__all__ = [
    "CaptionObjects",
    "ChairVocabulary",
    "chair_coco_metrics",
    "find_objects",
    "judge_caption",
    "special_pairs",
]

#: Words that, after "baby" or "adult", name the animal and not a person (the evaluator's list).
_YOUNG_OR_GROWN = ("bird", "cat", "dog", "horse", "sheep", "cow", "elephant", "bear", "zebra", "giraffe",
                   "animal", "cub")
#: Objects that, after "passenger", name the vehicle and not a person.
_CARRIERS = ("jet", "train")
#: Pairs that are not COCO objects but must be read as one word so that their parts do not count
#: ("home plate" is not a plate, "train track" is not a train).
EXTRA_PAIRS = ("home plate", "train track")


def special_pairs() -> dict[str, str]:
    """The pairs read as another word: "baby"/"adult" + animal, "passenger" + vehicle, and three fixes."""
    pairs: dict[str, str] = {}
    for animal in _YOUNG_OR_GROWN:
        pairs[f"baby {animal}"] = animal
        pairs[f"adult {animal}"] = animal
    for vehicle in _CARRIERS:
        pairs[f"passenger {vehicle}"] = vehicle
    pairs.update({"bow tie": "tie", "toilet seat": "toilet", "wine glas": "wine glass"})
    return pairs


@dataclass(frozen=True)
class ChairVocabulary:
    """The evaluator's tables: object words, each word's COCO class, and the two-word rules."""

    objects: frozenset[str]
    word_class: Mapping[str, str]
    pairs: Mapping[str, str]
    #: Where the tables came from ("chair.py ground truth file", "synonyms_refine.txt", ...).
    source: str = ""

    @classmethod
    def from_evaluator(cls, data: Mapping[str, Any], source: str = "") -> ChairVocabulary:
        """The tables as a pickled evaluator holds them (``mscoco_objects``, ``inverse_synonym_dict``,
        ``double_word_dict``), quirks included: chair.py splits its synonym lines on ", " without stripping,
        so " motor bike" and " cheesecake" (with their leading space) are never matched."""
        try:
            objects = frozenset(str(w) for w in data["mscoco_objects"])
            word_class = {str(k): str(v) for k, v in data["inverse_synonym_dict"].items()}
            pairs = {str(k): str(v) for k, v in data["double_word_dict"].items()}
        except (KeyError, AttributeError, TypeError) as error:
            raise ValueError(f"not a CHAIR evaluator's tables ({source or 'data'}): {error}") from error
        missing = sorted(w for w in objects if w not in word_class)
        if missing:
            raise ValueError(f"CHAIR tables ({source}): object words without a class: {missing[:5]}")
        return cls(objects, word_class, pairs, source)

    @classmethod
    def from_synonyms(cls, text: str, source: str = "") -> ChairVocabulary:
        """Tables from a synonym file (one class a line: the COCO name, then its synonyms, comma-separated),
        built as Object HalBench builds them from ``synonyms_refine.txt``: entries stripped, every multi-word
        entry (and "home plate", "train track") read as one word, plus :func:`special_pairs`."""
        objects: set[str] = set()
        word_class: dict[str, str] = {}
        for number, line in enumerate(text.splitlines(), 1):
            entries = [e.strip() for e in line.strip().split(", ")]
            if not entries or not entries[0]:
                continue
            if any(not e for e in entries):
                raise ValueError(f"{source or 'synonyms'} line {number}: an empty entry")
            objects.update(entries)
            for entry in entries:
                word_class[entry] = entries[0]
        if not objects:
            raise ValueError(f"{source or 'synonyms'}: no synonym lines")
        pairs = {w: w for w in word_class if len(w.split(" ")) >= 2}
        pairs.update({w: w for w in EXTRA_PAIRS})
        pairs.update(special_pairs())
        return cls(frozenset(objects), word_class, pairs, source)


@dataclass
class CaptionObjects:
    """What the evaluator finds in one caption (field names follow chair.py's output where it has one)."""

    #: The caption's words after two-word names are joined (chair.py's ``words``).
    words: list[str]
    #: The COCO object words found, as written after joining ("puppy", "dining table").
    mentions: list[str]
    #: Their COCO classes, in order (chair.py's ``mscoco_generated_words``).
    classes: list[str]
    #: Their positions (chair.py's ``idxs``; see the module docstring for the toilet-seat quirk).
    positions: list[int]
    #: Where each mention is among the base forms: (first token, number of tokens: 2 for a joined pair),
    #: without the quirk; what the report marks in the caption. No figure reads it.
    tokens: list[tuple[int, int]] = field(default_factory=list)


def find_objects(base_forms: Sequence[str], vocabulary: ChairVocabulary) -> CaptionObjects:
    """Rules 1–3 of the module docstring over one caption's base forms."""
    pairs = vocabulary.pairs
    joined: list[str] = []
    starts: list[int] = []
    widths: list[int] = []
    i = 0
    while i < len(base_forms):
        starts.append(i)
        pair = " ".join(base_forms[i : i + 2])
        if pair in pairs:
            joined.append(pairs[pair])
            widths.append(2)
            i += 2
        else:
            joined.append(base_forms[i])
            widths.append(1)
            i += 1
    drop_seat = "toilet" in joined and "seat" in joined
    kept = [w for w in joined if w != "seat"] if drop_seat else joined
    objects = vocabulary.objects
    positions = [starts[k] for k, word in enumerate(kept) if word in objects]
    mentions = [word for word in kept if word in objects]
    tokens = [
        (starts[k], widths[k])
        for k, word in enumerate(joined)
        if word in objects and not (drop_seat and word == "seat")
    ]
    return CaptionObjects(
        words=joined,
        mentions=mentions,
        classes=[vocabulary.word_class[w] for w in mentions],
        positions=positions,
        tokens=tokens,
    )


@dataclass
class CaptionVerdict:
    """One caption against its image's ground truth."""

    hallucinated: list[tuple[str, str]] = field(default_factory=list)
    hallucinated_positions: list[int] = field(default_factory=list)
    recalled: list[str] = field(default_factory=list)


def judge_caption(found: CaptionObjects, truth: Iterable[str]) -> CaptionVerdict:
    """Which mentions are hallucinated (class not in ``truth``), and which truth classes were mentioned."""
    allowed = set(truth)
    verdict = CaptionVerdict()
    recalled: set[str] = set()
    for word, cls, position in zip(found.mentions, found.classes, found.positions, strict=True):
        if cls in allowed:
            recalled.add(cls)
        else:
            verdict.hallucinated.append((word, cls))
            verdict.hallucinated_positions.append(position)
    verdict.recalled = sorted(recalled)
    return verdict


def chair_coco_metrics(rows: Iterable[tuple[int, int, int, int, int]]) -> dict[str, Any]:
    """CHAIRs, CHAIRi, Recall, Len (×100) and chair.py's raw fractions from per-caption counts:
    ``(mentions, hallucinated mentions, truth classes mentioned, truth classes, joined words)``."""
    tally = ChairTally()
    recalled = truth = words = 0
    for mentions, hallucinated, hit, known, length in rows:
        tally.add(mentions, hallucinated)
        recalled += hit
        truth += known
        words += length
    recall = 100.0 * recalled / truth if truth else None
    mean_words = words / tally.captions if tally.captions else None
    metrics = {"CHAIRs": tally.chair_s(), "CHAIRi": tally.chair_i(), "Recall": recall, "Len": mean_words}
    raw = {k: (None if v is None else v / 100.0) for k, v in metrics.items()}
    counts = {
        "captions": tally.captions,
        "hallucinated_captions": tally.hallucinated_captions,
        "mentions": tally.mentions,
        "hallucinated_mentions": tally.hallucinated,
        "truth_objects": truth,
        "truth_objects_mentioned": recalled,
        "words": words,
    }
    return {"metrics": metrics, "raw": raw, "counts": counts}
