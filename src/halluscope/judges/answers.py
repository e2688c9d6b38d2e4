"""Reading a closed-form answer (yes/no, a multiple-choice letter, a templated relation) out of free text.

Two rule sets live here side by side, because halluscope reports both:

- ``paper``: the official Reefknot scripts, reproduced exactly. Yes/no is "yes" when the substring ``yes``
  occurs anywhere in the lower-cased answer, else "no"; a multiple-choice answer is its first character.
  These rules are cheap and comparable with published numbers, but they misread common answers:
  ``"No, the cow's eyes are closed."`` contains "yes" (in "eyes") and counts as yes; ``"I cannot tell."``
  counts as a "no"; ``" A"``, ``"(B)"`` and ``"The answer is C."`` are read as " ", "(" and "T".
- ``robust``: what a careful reader would take the answer to be. Leading filler ("Sure!", "Answer:",
  "Based on the image,") is skipped; emphasis takes the polarity of what follows ("Absolutely not." no,
  "Certainly!" yes); a leading yes/no word decides; refusals ("I can't tell from this image") are
  *unanswered* — counted, but neither right nor wrong; negations ("There is no dog") read as no; given the
  question, an answer that states or denies its claim is read against it and one that contradicts itself is
  unanswered (:mod:`halluscope.judges.statements`); a multiple-choice answer may be a letter in any usual
  shape or the text of one option. docs/reading.md has the rules and their agreement with a person's reading
  of real answers.

Every parser returns a :class:`ParsedAnswer` that says how it decided, so a report can show which rule
fired and a user can audit disagreements between the two modes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from halluscope.judges.statements import conclusion_against_question, read_against_question
from halluscope.text import AFFIRMATIONS, EMPHATIC_WORDS, NO_WORDS, YES_WORDS

#: Emphasis that is a yes even with more text after it ("Absolutely, the dog is there"); "sure" and "of
#: course" open many answers that then say something else, so they are a yes only alone.
STRONG_EMPHATIC = frozenset({"absolutely", "definitely", "certainly", "indeed", "undoubtedly"})

__all__ = [
    "LETTERS",
    "ParsedAnswer",
    "is_refusal",
    "normalise_vqa_answer",
    "parse_choice",
    "parse_choice_paper",
    "parse_mcq_options",
    "parse_yes_no",
    "parse_yes_no_paper",
]

LETTERS = ("A", "B", "C", "D")


@dataclass(frozen=True)
class ParsedAnswer:
    """The answer read from a response, or None when the response gives none.

    ``how`` names the rule that decided: ``paper``, ``leading`` (first word), ``emphatic``, ``short``,
    ``keyword`` (a yes/no word later on), ``negation``, ``restated`` / ``denied`` / ``compared`` (read against
    the question), ``letter``, ``option-text``, ``template``; or, for None, ``empty``, ``refusal``,
    ``ambiguous``, ``contradictory``, ``unparsed``.
    """

    value: str | None
    how: str

    @property
    def answered(self) -> bool:
        return self.value is not None


# -- shared text clean-up ------------------------------------------------------------------------------------

_MARKUP = re.compile(r"[*_`#>\"]+")
_QUOTES = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"'})
_SPACES = re.compile(r"\s+")
#: Openers that carry no answer; removed repeatedly from the start of a response.
_FILLERS = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"^(?:assistant|gpt|model)\s*:\s*",
        r"^(?:sure|okay|ok|well|hmm+|so|certainly|of course|alright|great question)\s*[,.!:]*\s+",
        r"^(?:based on|according to|looking at|judging from|from|in)\s+(?:the|this|that)\s+"
        r"(?:image|photo|photograph|picture|scene)[^,.:;]*[,.:;]\s*",
        r"^(?:the\s+)?(?:correct\s+|final\s+|best\s+)?(?:answer|response|choice|option)\s*"
        r"(?:is|would be|:|-)\s*:?\s*",
        r"^(?:i\s+(?:would|will|'d)\s+(?:say|choose|pick|go with)|i\s+(?:think|believe|choose|pick))\s*:?\s*",
        r"^my\s+answer\s+is\s*:?\s*",
    )
]

_REFUSALS = re.compile(
    r"\b(?:"
    r"(?:can ?not|can't|cannot|unable to|not able to|impossible to|not possible to|difficult to|hard to)\s+"
    r"(?:be\s+)?(?:determine|determined|tell|say|answer|confirm|verify|be sure|know|identify|judge|see the "
    r"(?:image|photo|picture))"
    r"|not (?:entirely |completely |quite )?(?:sure|certain|clear)"
    r"|(?:i'm|i am) sorry|sorry, (?:but )?i"
    r"|as an ai|i (?:do not|don't) know|no (?:image|photo|picture) (?:is |was )?(?:provided|attached|shown)"
    r"|(?:insufficient|not enough) (?:information|detail|context)"
    r"|unclear|uncertain|ambiguous"
    r"|(?:i|we) (?:do not|don't) have (?:\w+[ -]){0,3}?(?:access|data|information|projections|figures|statistics|"
    r"values|details|knowledge)"
    r"|as of my (?:last|latest) (?:update|training)|my (?:training|knowledge) cut-?off"
    r"|(?:can ?not|can't|unable to) provide (?:an? )?(?:\w+ )?(?:answer|information|data)"
    r"|without (?:the |more |further )?(?:\w+ )?(?:data|information|context|chart)"
    r"|(?:would|will|might) need to (?:consult|refer to|check)"
    r")\b",
    re.IGNORECASE,
)


def _clean(text: str) -> str:
    text = _MARKUP.sub(" ", text.translate(_QUOTES))
    return _SPACES.sub(" ", text).strip()


def _strip_fillers(text: str) -> str:
    changed = True
    while changed and text:
        changed = False
        for pattern in _FILLERS:
            stripped = pattern.sub("", text, count=1)
            if stripped != text:
                text, changed = stripped.lstrip(" ,.:;-!"), True
    return text


@lru_cache(maxsize=16384)
def _cleaned_body(response: str) -> tuple[str, str]:
    """The response cleaned, and cleaned with its fillers stripped.

    Cached: a model's closed-form answers repeat ("Yes.", "No, there is not.", "B") thousands of times over
    a benchmark, and the filler patterns are most of what reading one costs.
    """
    text = _clean(response)
    return text, _strip_fillers(text) if text else text


def is_refusal(text: str) -> bool:
    """Whether the response declines to answer (cannot tell, not sure, no image), in any position."""
    return bool(_REFUSALS.search(_clean(text)))


# -- yes / no ------------------------------------------------------------------------------------------------


def parse_yes_no_paper(response: str) -> ParsedAnswer:
    """The official rule: "yes" if the substring ``yes`` is anywhere in the lower-cased text, else "no"."""
    return ParsedAnswer("yes" if "yes" in response.strip().lower() else "no", "paper")


def _alternation(words: Iterable[str]) -> str:
    return "|".join(sorted((re.escape(w).replace(r"\ ", r"\s+") for w in words), key=len, reverse=True))


_LEADING_YES = re.compile(
    rf"^(?:{_alternation(YES_WORDS | AFFIRMATIONS | STRONG_EMPHATIC)})\b(?!\s*,?\s*not\b)(?!\s+(?:really|at all)\b)"
)
_LEADING_NO = re.compile(rf"^(?:{_alternation(NO_WORDS | {'incorrect', 'false', 'not really', 'not at all'})})\b")
#: "Absolutely not.", "Indeed not", "Of course not", "Certainly not!": emphasis on a no.
_EMPHATIC_NO = re.compile(rf"^(?:{_alternation(EMPHATIC_WORDS)})\s*,?\s*not\b")
#: "Certainly!", "Sure.", "Of course": emphasis alone is a yes.
_EMPHATIC_ALONE = re.compile(rf"^(?:{_alternation(EMPHATIC_WORDS)})\s*[.!]*$")
_STRONG_EMPHATIC = re.compile(rf"^(?:{_alternation(STRONG_EMPHATIC)})\b")
#: A bare short affirmation after fillers: "Sure, there is.", "It does!", "They are."
_SHORT_YES = re.compile(
    r"^(?:there\s+(?:is|are)|there's|it\s+(?:is|does|has|was)|it's|they\s+(?:are|do|have|were)|"
    r"he\s+(?:is|does)|she\s+(?:is|does)|i\s+do|that's\s+(?:right|correct|true)|that\s+is\s+(?:right|correct|true))"
    r"(?:\s+(?:one|some|indeed))?\s*[.!]*$"
)
_YES_WORD = re.compile(rf"\b(?:{_alternation(YES_WORDS - {'affirmative'})})\b")
_NO_WORD = re.compile(r"\b(?:no|nope)\b")
_NEGATION = re.compile(r"\b(?:not|never|none|nobody|nothing|neither|nor|no)\b|n't\b|\bcannot\b")
_QUESTION_STATEMENT = re.compile(
    r"^(?:is|are|does|do|was|were)\s+(?:there\s+)?(?:the\s+|a\s+|an\s+)?(?P<statement>.+?)\s+"
    r"in (?:this|the) (?:photo|image|picture)\b",
    re.IGNORECASE,
)
_STOPWORDS = frozenset({"the", "a", "an", "is", "are", "does", "do", "of"})
_WORD = re.compile(r"[a-z0-9]+")


def _content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS]


def parse_yes_no(response: str, question: str | None = None) -> ParsedAnswer:
    """Read yes / no / unanswered the way a careful person would (see the module docstring).

    ``question`` adds the question-aware readings of :mod:`halluscope.judges.statements`: an answer that
    states the question's claim without a yes or no ("The colours of A and B are the same." to "Are the
    colours of A and B the same?") is a yes, one that denies it ("... are not the same", "... are of equal
    length" to "Is the vertical line shorter?") a no; an answer whose conclusion ("So, ...") says the
    opposite of its opening yes or no contradicts itself and is unanswered (``contradictory``). A statement
    that repeats only part of the question ("The man is near the bench." to "Is the man on the bench?") is
    not guessed.
    """
    parsed = _parse_yes_no_text(response)
    if not question:
        return parsed
    if parsed.how == "negation":
        # "The cup is not on the table." to "Is the cup not on the table?" restates a negated question.
        stated = read_against_question(_cleaned_body(response)[1], question)
        if stated is not None:
            return ParsedAnswer(stated.value, stated.how)
    elif parsed.how == "unparsed":
        match = _QUESTION_STATEMENT.search(_clean(question))
        if match:
            wanted = set(_content_words(match.group("statement")))
            if wanted and wanted <= set(_content_words(_cleaned_body(response)[1].lower())):
                return ParsedAnswer("yes", "restated")
        stated = read_against_question(_cleaned_body(response)[1], question)
        if stated is not None:
            return ParsedAnswer(stated.value, stated.how)
    elif parsed.how in ("leading", "keyword") and parsed.value is not None:
        conclusion = conclusion_against_question(_cleaned_body(response)[1], question)
        if conclusion is not None and conclusion.value != parsed.value:
            return ParsedAnswer(None, "contradictory")
    return parsed


@lru_cache(maxsize=16384)
def _parse_yes_no_text(response: str) -> ParsedAnswer:
    """:func:`parse_yes_no` from the response alone (cached: see :func:`_cleaned_body`)."""
    text, body = _cleaned_body(response)
    if not text:
        return ParsedAnswer(None, "empty")
    opening = _strip_prefixes(text.lower())
    if _EMPHATIC_NO.match(opening):
        return ParsedAnswer("no", "emphatic")
    if _EMPHATIC_ALONE.match(opening):
        return ParsedAnswer("yes", "emphatic")
    body = body.lower()
    if not body:
        return ParsedAnswer(None, "empty")
    if re.match(r"^(?:yes|no)\s*(?:and|or|/)\s*(?:yes|no)\b", body):
        return ParsedAnswer(None, "ambiguous")
    if _LEADING_YES.match(body):
        return ParsedAnswer("yes", "leading")
    if _LEADING_NO.match(body):
        return ParsedAnswer("no", "leading")
    if _SHORT_YES.match(body):
        return ParsedAnswer("yes", "short")
    if _REFUSALS.search(body):
        return ParsedAnswer(None, "refusal")
    has_yes, has_no = bool(_YES_WORD.search(body)), bool(_NO_WORD.search(body))
    if has_yes and has_no:
        return ParsedAnswer(None, "ambiguous")
    if has_yes:
        return ParsedAnswer("yes", "keyword")
    if has_no or _NEGATION.search(body):
        return ParsedAnswer("no", "negation")
    if _STRONG_EMPHATIC.match(opening):
        return ParsedAnswer("yes", "emphatic")  # "Certainly, the dog is there." with nothing else deciding
    return ParsedAnswer(None, "unparsed")


def _strip_prefixes(text: str) -> str:
    """The text without speaker tags and markup-only openers (emphasis is kept: it is the answer)."""
    return re.sub(r"^(?:assistant|gpt|model)\s*:\s*", "", text).strip()


# -- multiple choice -----------------------------------------------------------------------------------------

_OPTIONS = re.compile(
    r"\bA\.\s*(?P<A>.+?)\s+B\.\s*(?P<B>.+?)\s+C\.\s*(?P<C>.+?)\s+D\.\s*(?P<D>.+?)"
    r"(?:\s*,\s*please choose\.?|\s*\.?\s+(?:Reply|Answer|Respond|Please)\b.*|\s*[.?]?)\s*$",
    re.DOTALL,
)


def parse_mcq_options(prompt: str) -> dict[str, str]:
    """The four options ``{"A": ..., "D": ...}`` of a Reefknot-style prompt, or ``{}`` if there are none.

    Reads both the official layout (``"... A. behind B. onto C. on D. into, please choose."``) and the one
    halluscope's builder writes (options followed by a reply instruction).
    """
    match = _OPTIONS.search(prompt.strip())
    if not match:
        return {}
    return {letter: match.group(letter).strip().rstrip(",;") for letter in LETTERS}


def parse_choice_paper(response: str) -> ParsedAnswer:
    """The official rule: the response's first character, upper-cased (no stripping); empty → None."""
    if not response:
        return ParsedAnswer(None, "empty")
    return ParsedAnswer(response[0].upper(), "paper")


_LETTER_PHRASES = [
    re.compile(r"\b(?i:answer|option|choice)\s*(?i:is|would be|:)?\s*[(\[]?([A-Da-d])\b(?![-'])"),
    re.compile(r"[(\[]([A-Da-d])[)\]]"),
    re.compile(r"(?:^|\s)([A-D])[.):](?=\s|$)"),
]


#: A capital option letter standing alone later in an answer ("B or C"): the leading letter is then ambiguous.
_OTHER_LETTER = re.compile(r"(?<![A-Za-z'])([B-D])(?![A-Za-z'])|(?<![A-Za-z'])(A)(?=[.):])")


def _leading_letter(body: str, options: Mapping[str, str]) -> tuple[str, str] | None:
    """The option letter an answer opens with, and the text after it; None when it opens otherwise."""
    match = re.match(r"^[(\[]?([A-Da-d])(?P<rest>[).:\],]?)(?P<after>.*)$", body, re.DOTALL)
    if not match:
        return None
    letter, rest, after = match.group(1).upper(), match.group("rest"), match.group("after")
    if rest or not after.strip():
        return letter, after  # "B", "B.", "(B)", "b)", "C: on"
    if not after.startswith(" "):
        return None  # "Above", "Behind": a word, not a letter
    tail = after.strip().lower()
    option = options.get(letter, "").lower()
    if option and (tail == option or tail.startswith(option + " ") or tail.startswith(option + ".")):
        return letter, after  # "C on"
    if letter == "A" or match.group(1).islower():
        return None  # "A man is ...": the article, not option A
    return letter, after  # "D is correct"


def _word_spans(haystack: str, needle: str) -> list[tuple[int, int]]:
    """Where ``needle`` occurs in ``haystack`` not inside a longer word (both lower-cased by the caller).

    Plain string search rather than a regex per option: option and entity texts are nearly all different,
    so per-item patterns would defeat the regex cache and dominate scoring time.
    """
    spans: list[tuple[int, int]] = []
    start = haystack.find(needle)
    while start != -1:
        end = start + len(needle)
        before_ok = start == 0 or not haystack[start - 1].isalpha()
        after_ok = end == len(haystack) or not haystack[end].isalpha()
        if before_ok and after_ok:
            spans.append((start, end))
        start = haystack.find(needle, start + 1)
    return spans


def _option_text_matches(text: str, options: Mapping[str, str]) -> list[str]:
    lowered = text.lower()
    spans: dict[str, list[tuple[int, int]]] = {}
    for letter, option in options.items():
        option = option.strip().lower()
        if not option:
            continue
        found = _word_spans(lowered, option)
        if found:
            spans[letter] = found
    # An option found only inside a longer option's match ("on" inside "on top of") does not count.
    kept = []
    for letter, own in spans.items():
        covered = all(
            any(
                s <= a and b <= e and (s, e) != (a, b)
                for other, theirs in spans.items()
                if other != letter
                for s, e in theirs
            )
            for a, b in own
        )
        if not covered:
            kept.append(letter)
    return sorted(kept)


def parse_choice(
    response: str, options: Mapping[str, str] | None = None, *, mask: Sequence[str] = ()
) -> ParsedAnswer:
    """Read the chosen option letter: a letter in any usual shape, else the text of exactly one option.

    ``mask`` lists strings to ignore when matching option text (the subject and object names of the
    question, so an option word inside an entity name — "on" in "onion" is already safe, but "in" in
    "man in hat" is not — is not taken as a choice).
    """
    options = dict(options or {})
    text, body = _cleaned_body(response)
    if not text:
        return ParsedAnswer(None, "empty")
    if not body:
        return ParsedAnswer(None, "empty")
    leading = _leading_letter(body, options)
    if leading is not None:
        letter, after = leading
        others = {a or b for a, b in _OTHER_LETTER.findall(after)} - {letter}
        return ParsedAnswer(None, "ambiguous") if others else ParsedAnswer(letter, "letter")
    letters = {m.group(1).upper() for pattern in _LETTER_PHRASES for m in pattern.finditer(body)}
    if len(letters) == 1:
        return ParsedAnswer(letters.pop(), "letter")
    if len(letters) > 1:
        return ParsedAnswer(None, "ambiguous")
    if _REFUSALS.search(body):
        return ParsedAnswer(None, "refusal")
    masked = body.lower()
    for name in sorted((m.lower() for m in mask if m), key=len, reverse=True):
        for start, end in reversed(_word_spans(masked, name)):
            masked = masked[:start] + " " * (end - start) + masked[end:]
    matched = _option_text_matches(masked, options)
    if len(matched) == 1:
        return ParsedAnswer(matched[0], "option-text")
    if len(matched) > 1:
        return ParsedAnswer(None, "ambiguous")
    return ParsedAnswer(None, "unparsed")


# -- templated VQA answers -----------------------------------------------------------------------------------


def normalise_vqa_answer(
    response: str, subject: str | None, obj: str | None, copula: str = "is"
) -> ParsedAnswer:
    """The response as a full statement to compare with the label, or None when it gives no answer.

    A bare relation ("On.", "holding") is put into the question's template ("bag is on ground.") so that it
    can entail the label; an answer that echoes the template's ``<relation>`` placeholder, refuses, or is
    empty is unanswered. Anything else is kept as the model wrote it (fillers removed).
    """
    if "<relation" in response.lower():
        return ParsedAnswer(None, "unparsed")
    text, body = _cleaned_body(response)
    if not text:
        return ParsedAnswer(None, "empty")
    body = body.strip()
    if not body:
        return ParsedAnswer(None, "empty")
    if _REFUSALS.search(body):
        return ParsedAnswer(None, "refusal")
    lowered = body.lower()
    if subject and obj and subject.lower() not in lowered and len(body.split()) <= 4:
        relation = body.rstrip(" .!").lower()
        return ParsedAnswer(" ".join(p for p in (subject, copula, relation, obj) if p) + ".", "template")
    return ParsedAnswer(body, "as-written")
