"""``hqh-rules``: an offline HQH judge (no LLM, no key) that decides only where a rule can, and says so.

Each HQH type gets the check that its answers allow, and anything the rule cannot settle stays
``unjudged`` with the reason (counted by the metrics), never a guess:

- **count**: the numbers in the answer (digits, number words, "no"/"none" as zero, "there is a ..." as one)
  against the reference's number. One stated number: correct if equal, incorrect if not. Several different
  numbers ("two men and three women"), or none: unjudged.
- **existence**: a yes/no question is compared with a yes/no reference. HQH's own existence items ask to
  "list the main instances": the answer is split into a list of short noun phrases, each head noun must be a
  noun some region description, the caption or the reference names (WordNet-aware, the same matcher as the
  typed judge: "puppy" / dog, "person" / man). Every listed object found: correct; an object found nowhere:
  incorrect, naming it. A long or unsplittable answer: unjudged.
- **OCR**: normalised text (case, punctuation, spacing) — the reference text inside the answer is correct;
  a quoted text that differs, or a short answer without the reference text, is incorrect; else unjudged.
- **attribute**: the reference's colour / material / size / shape / pattern words against the answer's words
  of the same vocabulary: all the reference's words present is correct, none of them present (but another
  word of that vocabulary) is incorrect, a partial overlap or no such word is unjudged.
- **action, relation, comparison, environment**: first, an answer that contradicts the reference is incorrect — it
  denies a reference word ("The man is not walking a dog." to "Walking a dog."), puts the thing under where the
  reference puts it on (opposite spatial prepositions, which are content words, not stop words), or compares the
  other way ("smaller" to "bigger", "different" to "the same"); then the reference's content words (WordNet lemmas
  and synonyms) all present in the answer is correct; otherwise the answer's own nouns are looked up in the image
  information, and a noun that no region, caption or reference mentions (a "restaurant" in an office scene) is an
  incorrect answer. Otherwise unjudged: a wrong relation or action between things that are there cannot be told from
  the region texts without reading them.

Negation is read in every type: a number, colour, text or phrase the answer denies ("It is not red.") is not
stated, and denying the reference's is incorrect. An empty answer is incorrect, as HQH's official grader
scores it. The word lists (numbers, negations, comparisons, opposite prepositions) are :mod:`halluscope.text`.

Extra contradicting claims are not counted (``extra_claims`` is None), so with this judge
``overall_hallucination_rate`` is None; ``hallucination_rate`` and the per-type rates are computed.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from halluscope.judges.answers import parse_yes_no
from halluscope.judges.hqh import HQHItem, HQHJudge, HQHJudgement
from halluscope.options import check_options
from halluscope.scene.names import COLOURS, FRAME_WORDS, REGION_WORDS, default_matcher, tokens, wordnet
from halluscope.stages import Failure
from halluscope.text import (
    OPPOSITE_COMPARATIVES,
    OPPOSITE_PREPOSITIONS,
    comparison_words,
    is_negation,
    numbers_in,
)

__all__ = ["HQHRulesJudge", "empty_answer", "judge_answer", "parse_numbers"]

_NONE_PHRASES = re.compile(r"\b(?:there (?:are|is) no|there's no|i (?:can )?see no|no one|nobody|not any)\b")
_SINGULAR = re.compile(
    r"\b(?:there is|there's|i (?:can )?see|shows?|has|contains?)\s+(?:only |just )?(?:a|an)\s+"
    r"(?!few\b|couple\b|lot\b|group\b|number\b|pair\b|bunch\b)"
)

#: Attribute vocabularies: each word maps to its canonical form; the first vocabulary with a reference word
#: decides what the question is about.
_VOCABULARIES: dict[str, dict[str, str]] = {
    "colour": {
        c: {"grey": "gray", "golden": "gold"}.get(c, c)
        for c in COLOURS - {"dark", "light", "bright", "pale", "colorful", "multicolored"}
    }
    | {w: "multicolored" for w in ("colorful", "colourful", "multicolored", "multicolor", "multicoloured")},
    "material": {
        "wood": "wood", "wooden": "wood", "metal": "metal", "metallic": "metal", "steel": "metal", "iron": "metal",
        "aluminum": "metal", "plastic": "plastic", "glass": "glass", "brick": "brick", "stone": "stone",
        "concrete": "concrete", "cement": "concrete", "leather": "leather", "cotton": "cotton", "paper": "paper",
        "cardboard": "cardboard", "ceramic": "ceramic", "porcelain": "ceramic", "marble": "marble",
        "wicker": "wicker", "denim": "denim", "fabric": "fabric", "cloth": "fabric", "rubber": "rubber",
        "tile": "tile", "tiled": "tile", "straw": "straw", "wool": "wool", "woolen": "wool", "granite": "stone",
    },
    "size": {
        "big": "large", "large": "large", "huge": "large", "giant": "large", "enormous": "large",
        "small": "small", "little": "small", "tiny": "small", "tall": "tall", "short": "short", "long": "long",
    },
    "shape": {
        "round": "round", "circular": "round", "square": "square", "rectangular": "rectangular",
        "oval": "oval", "triangular": "triangular",
    },
    "pattern": {
        "striped": "striped", "stripes": "striped", "plaid": "plaid", "checkered": "checkered",
        "spotted": "spotted", "floral": "floral", "polka": "polka dot",
    },
}  # fmt: skip
_STOP = frozenset(
    {
        "a", "an", "the", "this", "that", "these", "those", "is", "are", "was", "were", "be", "been", "being",
        "it", "its", "they", "them", "their", "there", "here", "of", "to", "with", "and", "or",
        "for", "from", "by", "as", "some", "any", "very", "picture", "image", "photo", "photograph", "scene",
        "shown", "seen", "appears", "appear", "looks", "look", "seems", "seem", "can", "could", "may", "might",
        "would", "will", "do", "does", "did", "has", "have", "having", "which", "who", "what", "where", "while",
        "also", "just", "only", "one",
    }
)  # fmt: skip
_LEAD_IN = re.compile(
    r"^(?:here (?:are|is)|the main (?:instances|objects|things|elements)|main instances|in (?:the|this) "
    r"(?:image|picture|photo)|the (?:image|picture|photo) (?:shows|contains|features|depicts)|i (?:can )?see)"
    r"[^:]*?(?::|\bare\b|\binclude\b|\bincludes\b)\s*",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"[\"“”‘’]([^\"“”‘’]{1,120})[\"“”‘’]|(?<!\w)'([^']{1,120})'(?!\w)")
_YES_NO_Q = re.compile(r"^\s*(?:is|are|was|were|does|do|did|can|could|has|have)\b", re.IGNORECASE)


# -- small text helpers ---------------------------------------------------------------------------------------


def parse_numbers(text: str) -> set[int]:
    """The numbers a text states: digits, number words, and zero for "no one", "there are no", "none"."""
    lowered = text.lower()
    found = numbers_in(lowered)
    if _NONE_PHRASES.search(lowered) or re.fullmatch(r"\s*(?:no|none|zero)\W*", lowered):
        found.add(0)
    return found


def _norm_text(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


@lru_cache(maxsize=65536)
def _lemma(word: str) -> str:
    """A word's WordNet base form, trying noun then verb then adjective ("dogs" → dog, "walking" → walk)."""
    reader = wordnet()
    for pos in ("n", "v", "a"):
        forms = reader._morphy(word, pos)
        if forms:
            return str(forms[0])
    return word


@lru_cache(maxsize=65536)
def _synonyms(lemma: str) -> frozenset[str]:
    reader = wordnet()
    names = {lemma}
    for pos in ("n", "v", "a"):
        for synset in reader.synsets(lemma, pos)[:3]:
            names.update(str(name).lower() for name in synset.lemma_names())
    return frozenset(names)


def _content(text: str) -> list[str]:
    return [_lemma(t) for t in tokens(text) if t not in _STOP and t != "'s" and not t.isdigit()]


def _covers(reference: list[str], answer: list[str]) -> bool:
    """Every reference content word is in the answer, as itself or a WordNet synonym."""
    answer_set = set(answer)
    return bool(reference) and all(r in answer_set or _synonyms(r) & answer_set for r in reference)


def _image_nouns(item: HQHItem) -> set[str]:
    """Every noun lemma the caption, the region descriptions and the reference answer use."""
    matcher = default_matcher()
    texts = [r.description for r in item.scene.regions] + [item.scene.caption or "", item.ground_truth]
    nouns = set()
    for text in texts:
        for token in tokens(text):
            if token in _STOP or token == "'s" or not matcher.is_noun(token):
                continue
            nouns.add(matcher.singular(token))
    return nouns


def _grounded(noun: str, image_nouns: set[str]) -> bool:
    """Named by the image information: the noun itself, a WordNet match, or (a compound) its last word."""
    matcher = default_matcher()
    if noun in image_nouns or any(matcher.match_heads(noun, known) is not None for known in image_nouns):
        return True
    last = noun.split()[-1] if " " in noun else None
    return last is not None and _grounded(matcher.singular(last), image_nouns)


def _regions_mentioning(item: HQHItem, words: set[str], limit: int = 3) -> list[str]:
    found = []
    for region in item.scene.regions:
        if words & {_lemma(t) for t in tokens(region.description)}:
            found.append(region.description)
            if len(found) >= limit:
                break
    return found


# -- the rules ----------------------------------------------------------------------------------------------------


def _count(item: HQHItem) -> HQHJudgement:
    gold = parse_numbers(item.ground_truth)
    if len(gold) != 1:
        return HQHJudgement.unjudged(f"reference {item.ground_truth!r} states no single number", "count")
    (expected,) = gold
    denied = numbers_in(" ".join(_negated(item.answer)))
    if expected in denied:
        return HQHJudgement(
            hallucinated=True, explanation=f"the answer denies {expected}, the reference's number", method="count"
        )
    said = parse_numbers(item.answer) - denied
    if not said and _SINGULAR.search(item.answer.lower()):
        said = {1}
    if len(said) == 1:
        (value,) = said
        return HQHJudgement(
            hallucinated=value != expected,
            explanation=f"answer states {value}, reference {expected}",
            method="count",
        )
    if not said:
        return HQHJudgement.unjudged("the answer states no number", "count")
    return HQHJudgement.unjudged(f"the answer states several numbers {sorted(said)}", "count")


def _yes_no(text: str, question: str | None = None) -> str | None:
    """The yes or no an answer gives, read as the yes/no benchmarks read it (None when it gives neither)."""
    return parse_yes_no(text, question=question).value


#: Words that end a negation's reach: "not red, but blue" denies red only.
_SCOPE_END = frozenset({"but", "and", "while", "although", "though", "instead", "rather", "yet"})
_CLAUSE = re.compile(r"[^,.;:!?]+")


def _negated(text: str, reach: int = 5) -> set[str]:
    """Lemmas a negation denies: up to ``reach`` words after "not", "no", "n't", "never", "without" in a clause.

    "It is not red." → {red}; "No, it is red." → {} (the "no" answers, then the comma ends its reach).
    """
    denied: set[str] = set()
    for clause in _CLAUSE.findall(text.lower().replace("’", "'")):
        words = tokens(clause)
        for i, word in enumerate(words):
            if not (is_negation(word) or word == "without"):
                continue
            for after in words[i + 1 : i + 1 + reach]:
                if after in _SCOPE_END:
                    break
                denied.add(_lemma(after))
                denied.add(after)
    return denied


def _contradiction(reference: str, answer: str) -> str | None:
    """Why the answer says the opposite of the reference, by negation, preposition or comparison; else None.

    - negation: a reference word the answer denies ("It is not red." to "Red.");
    - preposition: the answer puts it under where the reference puts it on ("under the pole" to "On a pole."),
      left for right, behind for in front — and never says the reference's own preposition;
    - comparison: the opposite comparative ("smaller" to "larger") or "different" to "the same", without the
      reference's own.
    """
    ref_tokens, ans_tokens = set(tokens(reference)), set(tokens(answer))
    ref_content = [w for w in _content(reference) if w not in ("no", "not")]
    if not _negated(reference):
        denied = _negated(answer)
        hit = [w for w in ref_content if w in denied]
        if hit:
            return f"the answer denies {', '.join(dict.fromkeys(hit))!s}"
    for prep in ref_tokens & set(OPPOSITE_PREPOSITIONS):
        if prep in ans_tokens:
            continue
        contrary = sorted(OPPOSITE_PREPOSITIONS[prep] & ans_tokens)
        if contrary:
            return f"the answer says {contrary[0]!r} where the reference says {prep!r}"
    ref_cmp, ans_cmp = comparison_words(reference), comparison_words(answer)
    for word in ref_cmp - {"same", "different"}:
        opposite = OPPOSITE_COMPARATIVES.get(word)
        if opposite and opposite in ans_cmp and word not in ans_cmp:
            return f"the answer says {opposite!r} where the reference says {word!r}"
    for one, other in (("same", "different"), ("different", "same")):
        if one in ref_cmp and other in ans_cmp and one not in ans_cmp:
            return f"the answer says {other!r} where the reference says {one!r}"
    return None


def _list_items(answer: str) -> list[str] | None:
    """The answer as a list of short phrases, or None when it is prose rather than a list."""
    text = _LEAD_IN.sub("", answer.strip())
    parts = re.split(r"\n+|;|,|\s+\d+[.)]\s+|^\d+[.)]\s+|\band\b|\.\s", text)
    phrases = [p.strip(" .-*:\t") for p in parts]
    phrases = [p for p in phrases if p]
    if not phrases or any(len(tokens(p)) > 5 for p in phrases):
        return None
    return phrases


def _existence(item: HQHItem) -> HQHJudgement:
    if _YES_NO_Q.match(item.instruction) and _yes_no(item.ground_truth):
        said = _yes_no(item.answer, item.instruction)
        if said is None:
            return HQHJudgement.unjudged("the answer does not start with yes or no", "existence-yes-no")
        return HQHJudgement(
            hallucinated=said != _yes_no(item.ground_truth),
            explanation=f"answer {said}, reference {_yes_no(item.ground_truth)}",
            method="existence-yes-no",
        )
    phrases = _list_items(item.answer)
    if phrases is None:
        return HQHJudgement.unjudged("the answer is not a list of short noun phrases", "existence-list")
    matcher = default_matcher()
    heads = [h for h in (matcher.head_noun(p) for p in phrases) if h and h not in FRAME_WORDS | REGION_WORDS]
    if not heads:
        return HQHJudgement.unjudged("no object named in the answer", "existence-list")
    image_nouns = _image_nouns(item)
    missing = [h for h in dict.fromkeys(heads) if not _grounded(h, image_nouns)]
    unknown = [h for h in missing if not matcher.is_noun(h)]
    if unknown:
        return HQHJudgement.unjudged(f"not a known noun: {', '.join(unknown)}", "existence-list")
    if missing:
        return HQHJudgement(
            hallucinated=True,
            evidence=[f"no region, caption or reference mentions: {', '.join(missing)}"],
            explanation=f"listed objects not in the image information: {', '.join(missing)}",
            method="existence-list",
        )
    return HQHJudgement(
        hallucinated=False,
        explanation=f"every listed object is in the image information: {', '.join(dict.fromkeys(heads))}",
        method="existence-list",
    )


_OCR_LEAD = re.compile(
    r"^(?:the )?(?:text|sign|words?|writing|it|label)?.*?\b(?:says|reads|is written|written|shows|displays)\b\s*:?\s*",
    re.IGNORECASE,
)


def _ocr(item: HQHItem) -> HQHJudgement:
    gold = _norm_text(item.ground_truth)
    answer = _norm_text(item.answer)
    if not gold:
        return HQHJudgement.unjudged("the reference has no text", "ocr")
    if f" {gold} " in f" {answer} ":
        before = answer[: f" {answer} ".index(f" {gold} ")].split()[-4:]
        if any(is_negation(w) or w == "t" for w in before) and not _negated(item.ground_truth):
            return HQHJudgement(
                hallucinated=True, explanation="the answer denies the reference text", method="ocr"
            )
        return HQHJudgement(hallucinated=False, explanation="the reference text is in the answer", method="ocr")
    gold_words = gold.split()
    answer_words = set(answer.split())
    if len(gold_words) >= 3 and sum(w in answer_words for w in gold_words) / len(gold_words) >= 0.8:
        return HQHJudgement(
            hallucinated=False, explanation="at least 80% of the reference's words are in the answer", method="ocr"
        )
    quoted = [_norm_text(a or b) for a, b in _QUOTED.findall(item.answer)]
    quoted = [q for q in quoted if q]
    if quoted:
        return HQHJudgement(
            hallucinated=True,
            explanation=f"the answer quotes {quoted[0]!r}, the reference is {gold!r}",
            method="ocr",
        )
    core = _norm_text(_OCR_LEAD.sub("", item.answer.strip()))
    if len(core.split()) <= len(gold_words) + 3:
        return HQHJudgement(
            hallucinated=True, explanation=f"the answer reads {core!r}, the reference {gold!r}", method="ocr"
        )
    return HQHJudgement.unjudged("a long answer without the reference text", "ocr")


def _vocabulary_words(text: str, vocabulary: dict[str, str], *, affirmed: bool = False) -> set[str]:
    """The text's words of one vocabulary, canonical; ``affirmed``: leaving out words a negation denies."""
    denied = _negated(text) if affirmed else set()
    return {vocabulary[t] for t in tokens(text) if t in vocabulary and t not in denied}


def _attribute(item: HQHItem) -> HQHJudgement:
    for name, vocabulary in _VOCABULARIES.items():
        gold = _vocabulary_words(item.ground_truth, vocabulary)
        if not gold:
            continue
        denied = _vocabulary_words(" ".join(_negated(item.answer)), vocabulary) & gold
        if denied:
            return HQHJudgement(
                hallucinated=True,
                evidence=_regions_mentioning(item, set(gold)),
                explanation=f"{name}: the answer denies {sorted(denied)}, the reference's {name}",
                method=f"attribute-{name}",
            )
        said = _vocabulary_words(item.answer, vocabulary, affirmed=True)
        if not said:
            return HQHJudgement.unjudged(f"the answer names no {name}", f"attribute-{name}")
        evidence = _regions_mentioning(item, set(gold) | set(said))
        if gold <= said:
            return HQHJudgement(
                hallucinated=False,
                evidence=evidence,
                explanation=f"{name}: answer {sorted(said)}, reference {sorted(gold)}",
                method=f"attribute-{name}",
            )
        if not gold & said:
            return HQHJudgement(
                hallucinated=True,
                evidence=evidence,
                explanation=f"{name}: answer {sorted(said)}, reference {sorted(gold)}",
                method=f"attribute-{name}",
            )
        return HQHJudgement.unjudged(
            f"{name}: answer {sorted(said)} overlaps the reference {sorted(gold)} only in part", f"attribute-{name}"
        )
    return _open(item)


def _open(item: HQHItem) -> HQHJudgement:
    """Action, relation, comparison, environment (and attribute references outside the vocabularies)."""
    method = f"open-{item.type}"
    contradiction = _contradiction(item.ground_truth, item.answer)
    if contradiction is not None:
        return HQHJudgement(
            hallucinated=True,
            evidence=_regions_mentioning(item, set(_content(item.ground_truth))),
            explanation=contradiction,
            method=method,
        )
    reference = _content(item.ground_truth)
    answer = _content(item.answer)
    if _covers(reference, answer):
        return HQHJudgement(
            hallucinated=False,
            evidence=_regions_mentioning(item, set(reference)),
            explanation=f"the answer says every content word of the reference ({', '.join(reference)})",
            method=method,
        )
    matcher = default_matcher()
    question = {_lemma(t) for t in tokens(item.instruction)}
    image_nouns = _image_nouns(item)
    candidates = []
    for token in tokens(item.answer):
        if token in _STOP or token in FRAME_WORDS or token in REGION_WORDS or token == "'s":
            continue
        if token in COLOURS or not matcher.is_noun(token) or matcher.adjective_like(token):
            continue
        noun = matcher.singular(token)
        if noun in question or _lemma(token) in question:
            continue
        candidates.append(noun)
    missing = [n for n in dict.fromkeys(candidates) if not _grounded(n, image_nouns)]
    if missing:
        return HQHJudgement(
            hallucinated=True,
            evidence=[f"no region, caption or reference mentions: {', '.join(missing)}"],
            explanation=f"the answer names what the image information never mentions: {', '.join(missing)}",
            method=method,
        )
    return HQHJudgement.unjudged(
        "the answer differs from the reference but names only things the image holds", method
    )


def empty_answer() -> HQHJudgement:
    """An empty answer is incorrect, as HQH's official grader scores it (it answers nothing that is true)."""
    return HQHJudgement(hallucinated=True, explanation="empty answer (scored incorrect, as HQH's grader does)",
                        method="empty")  # fmt: skip


_RULES = {"count": _count, "existence": _existence, "OCR": _ocr, "attribute": _attribute}


def judge_answer(item: HQHItem) -> HQHJudgement:
    """The offline judgement of one answer (see the module docstring for the rule of each type)."""
    if not item.answer.strip():
        return empty_answer()
    return _RULES.get(item.type, _open)(item)


class HQHRulesJudge(HQHJudge):
    """``hqh-rules``: the offline HQH judge. Takes no options (``cache`` is accepted and unused)."""

    name = "hqh-rules"
    VERSION = 2

    def __init__(self, cache: Any = None, **unknown: Any) -> None:
        check_options("judge 'hqh-rules'", unknown, ["cache"])

    def identity(self) -> dict[str, Any]:
        return {"judge": self.name, "version": self.VERSION, **default_matcher().identity()}

    async def grade_many(self, items: Sequence[HQHItem]) -> list[HQHJudgement | Failure]:
        def run() -> list[HQHJudgement | Failure]:
            out: list[HQHJudgement | Failure] = []
            for item in items:
                try:
                    out.append(judge_answer(item))
                except Exception as error:  # one odd answer must not stop the run
                    out.append(HQHJudgement.unjudged(f"offline judge error: {type(error).__name__}: {error}"))
            return out

        return await asyncio.to_thread(run)
