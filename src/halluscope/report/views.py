"""Per-sample views that fit the benchmark: what its users read for one item, from the record's own fields.

Why not claim cards for everything: Tri-HE's (subject, relation, object) claims are its own evidence; a CHAIR
caption is read word by word (which COCO object words it names, which the image lacks), a yes/no item by its
question, answer, the reading of that answer and the true label, an HQH / MMHal-Bench / PROVE answer by its
reference, the judge's verdict or rating and its reasoning. The kind is told by the fields a record holds
(runs copied from elsewhere carry no benchmark object), so a run of any version renders:

- ``caption``: CHAIR (``coco_words``, ``truth_objects``) and AMBER's generative items (``object_nouns``);
- ``yesno``: records with a ``label`` and a reading (``prediction``; HallusionBench's ``correctness``):
  POPE, AMBER discriminative, HallusionBench, RePOPE, Reefknot yes/no and multiple choice;
- ``answer``: HQH (``judge_method`` with ``verdict``), MMHal-Bench (``rating``), PROVE (``hscore``);
- none: the claim cards (Tri-HE and the claim benchmarks).

Every text goes to the page as data the script sets with ``textContent``, cut like every other text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["find_words", "sample_view"]

#: How a reader came to its reading, in words (the ``parse`` / ``*_parse`` fields of yes/no records).
PARSE_WORDS = {
    "leading": "first word",
    "paper": "the paper's rule",
    "negation": "a negation in the answer",
    "refusal": "a refusal",
    "contradictory": "both yes and no",
    "ambiguous": "neither clearly",
    "unparsed": "no yes/no found",
    "empty": "empty answer",
    "letter": "option letter",
    "option": "option text",
}


def sample_view(record: Mapping[str, Any], shown: Callable[[Any], Any]) -> dict[str, Any] | None:
    """The view of one record (a small JSON document for the page's script), or None for claim cards.

    ``shown`` cuts a text as the page shows it (``samples.shown_text``)."""
    if isinstance(record.get("coco_words"), list) and "truth_objects" in record:
        return _chair_view(record)
    if record.get("type") == "generative" and isinstance(record.get("object_nouns"), list):
        return _amber_caption_view(record)
    if "label" in record and ("prediction" in record or "correctness" in record):
        return _yes_no_view(record)
    if "judge_method" in record or "rating" in record:
        return _judged_answer_view(record, shown)
    metadata = record.get("metadata")
    if isinstance(metadata, Mapping) and "hscore" in metadata and "tscore" in metadata:
        return _prove_view(metadata, shown)
    return None


# -- captions --------------------------------------------------------------------------------------------------


_WORD = re.compile(r"[A-Za-z]+")


def find_words(text: str, words: Sequence[str]) -> list[list[int] | None]:
    """Where each of ``words`` (in the order a reader found them) is in ``text``: the next word at or after the
    previous one that starts like it ("seat" finds "seated", "bottle" finds "bottles"); a two-word name
    ("dining table") is matched word by word. For runs written before records carried the offsets."""
    lowered = text.lower()
    cursor = 0
    spans: list[list[int] | None] = []
    for word in words:
        parts = [p for p in _WORD.findall(str(word).lower()) if p]
        if not parts:
            spans.append(None)
            continue
        pattern = r"\b" + r"\W+".join(re.escape(p[: max(3, len(p) - 1)]) + r"[a-z]*" for p in parts)
        match = re.compile(pattern).search(lowered, cursor)
        if match is None:
            spans.append(None)
            continue
        spans.append([match.start(), match.end()])
        cursor = match.end()
    return spans


def _strings(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _chair_view(record: Mapping[str, Any]) -> dict[str, Any]:
    words = _strings(record.get("coco_words"))
    classes = _strings(record.get("coco_objects"))
    truth = _strings(record.get("truth_objects"))
    response = record.get("response") if isinstance(record.get("response"), str) else ""
    spans = record.get("coco_spans")
    if not (isinstance(spans, list) and len(spans) == len(words)):
        spans = find_words(response or "", words)
    allowed = set(truth)
    marks = [
        {"sp": span if _valid_span(span, response or "") else None, "w": word, "o": cls, "h": cls not in allowed}
        for word, cls, span in zip(words, classes, spans, strict=False)
    ]
    hallucinated = [
        [str(x) for x in pair] for pair in record.get("hallucinated_objects") or [] if isinstance(pair, list)
    ]
    return {
        "k": "caption",
        "b": "chair",
        "marks": marks,
        "truth": truth,
        "recalled": _strings(record.get("recalled_objects")),
        # chair.py's output for the caption, under its own names
        "printed": [
            ["mscoco_generated_words", classes],
            ["mscoco_hallucinated_words", hallucinated],
            ["mscoco_gt_words", truth],
            ["hallucination_idxs", record.get("hallucination_positions") or []],
        ],
        "words": record.get("word_count"),
    }


def _amber_caption_view(record: Mapping[str, Any]) -> dict[str, Any]:
    nouns = _strings(record.get("object_nouns"))
    hallucinated = set(_strings(record.get("hallucinated_nouns")))
    response = record.get("response") if isinstance(record.get("response"), str) else ""
    spans = find_words(response or "", nouns)
    marks = [
        {"sp": span, "w": noun, "o": noun, "h": noun in hallucinated}
        for noun, span in zip(nouns, spans, strict=True)
    ]
    return {
        "k": "caption",
        "b": "amber",
        "marks": marks,
        "truth": _strings(record.get("truth")),
        "recalled": _strings(record.get("truth_covered")),
        "printed": [
            ["object nouns", nouns],
            ["hallucinated nouns", sorted(hallucinated)],
            ["annotated hallucination-prone objects", _strings(record.get("hallu"))],
            ["of those, named", _strings(record.get("hallu_covered"))],
        ],
        "words": None,
    }


def _valid_span(span: Any, text: str) -> bool:
    return (
        isinstance(span, list)
        and len(span) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in span)
        and 0 <= span[0] < span[1] <= len(text)
    )


# -- yes/no and multiple choice ------------------------------------------------------------------------------


def _reading(prediction: Any, how: Any) -> dict[str, Any]:
    how_text = PARSE_WORDS.get(str(how), str(how)) if how else None
    return {"v": None if prediction is None else str(prediction), "how": how_text}


def _yes_no_view(record: Mapping[str, Any]) -> dict[str, Any]:
    correct = record.get("correct")
    if not isinstance(correct, bool):
        correctness = record.get("correctness")
        correct = bool(correctness) if correctness in (0, 1) and not isinstance(correctness, bool) else None
        if isinstance(correctness, bool):
            correct = correctness
    view: dict[str, Any] = {
        "k": "yesno",
        "label": None if record.get("label") is None else str(record.get("label")),
        "read": _reading(record.get("prediction"), record.get("parse")),
        "ok": correct,
        "mode": record.get("mode"),
    }
    # the same answer under the other reading, when it differs (folded on the page)
    others = []
    for rule in ("paper", "robust"):
        if f"{rule}_prediction" in record and rule != record.get("mode"):
            other = record.get(f"{rule}_prediction")
            if other != record.get("prediction"):
                others.append({"rule": rule, **_reading(other, record.get(f"{rule}_parse"))})
    view["others"] = others
    metadata = record.get("metadata")
    options = metadata.get("options") if isinstance(metadata, Mapping) else None
    if isinstance(options, Mapping):
        view["options"] = [[str(k), str(v)] for k, v in options.items()]
    return view


# -- judged answers ------------------------------------------------------------------------------------------


def _judged_answer_view(record: Mapping[str, Any], shown: Callable[[Any], Any]) -> dict[str, Any]:
    fields: list[list[Any]] = []
    verdict = record.get("verdict")
    if verdict is not None:
        fields.append(["verdict", str(verdict)])
    if record.get("rating") is not None:
        fields.append(["rating", f"{record.get('rating')} of 6"])
    hallucinated = record.get("hallucinated")
    if isinstance(hallucinated, bool):
        fields.append(["hallucinated", "yes" if hallucinated else "no"])
    if record.get("extra_claims") is not None:
        fields.append(["claims beyond the reference", str(record.get("extra_claims"))])
    if record.get("judge_method"):
        fields.append(["judged by", str(record.get("judge_method"))])
    if record.get("unjudged_reason"):
        fields.append(["unjudged because", shown(record.get("unjudged_reason"))])
    return {
        "k": "answer",
        "bad": hallucinated if isinstance(hallucinated, bool) else None,
        "fields": fields,
        "why": None if record.get("explanation") is None else shown(record.get("explanation")),
        "ev": [shown(str(e)) for e in evidence] if isinstance(evidence := record.get("evidence"), list) else [],
        "tuples": [],
    }


def _prove_view(metadata: Mapping[str, Any], shown: Callable[[Any], Any]) -> dict[str, Any]:
    def score(value: Any) -> str:
        return f"{value:.3f}" if isinstance(value, int | float) and not isinstance(value, bool) else "—"

    tuples: list[list[str]] = []
    for match in metadata.get("response_matches") or []:
        if isinstance(match, Mapping):
            tuples.append(["response", shown(str(match.get("tuple"))), shown(str(match.get("match"))),
                           score(match.get("score"))])
    for match in metadata.get("answer_matches") or []:
        if isinstance(match, Mapping):
            tuples.append(["reference", shown(str(match.get("tuple"))), shown(str(match.get("match"))),
                           score(match.get("similarity"))])
    return {
        "k": "answer",
        "bad": None,
        "fields": [
            ["hScore (helpfulness)", score(metadata.get("hscore"))],
            ["tScore (truthfulness)", score(metadata.get("tscore"))],
        ],
        "why": None,
        "ev": [],
        "tuples": tuples,
    }
