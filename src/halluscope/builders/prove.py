"""PROVE-style benchmarks from any scene graphs: LLM-written QA pairs, kept only when a program confirms them.

Prabhu et al., "Trust but Verify: Programmatic VLM Evaluation in the Wild" (PROVE), Sec. 3.1. For each
image an LLM sees the scene graph and the graph API and writes question–answer pairs, each with a Python
function ``verify(g)`` that computes the answer from the graph. Then, as in the paper's funnel:

1. **programmatic filter**: the function runs in :mod:`halluscope.sandbox` (never in this process); a pair
   whose program fails is dropped (``program_failed``), and so is one whose program's answer disagrees
   with the stated answer (``wrong_answer``, see :func:`answers_agree`);
2. **text filters**: an LLM check for trivial, incomplete/ambiguous or unnatural pairs, a taboo-word list,
   and semantic duplicates within the image by embeddings (``filtered``);
3. what is left is ``kept``, and written in the released PROVE layout (image, caption, question, answer,
   ``image_tuples``, ``qa_diff_tuples``) that ``halluscope run -b prove`` reads.

The tuples are :mod:`halluscope.scene.tuples`' own: ``image_tuples`` the graph's
(:func:`~halluscope.scene.tuples.graph_to_tuples`), ``qa_diff_tuples`` the answer's minus the question's
(see :func:`qa_diff_tuples` and :func:`answer_tuples`).

Not done here: the paper's visual-entailment filter (no image–text entailment model installs offline); the
image tuples are the graph's own facts, not tuples parsed from a dense caption.

Every image's outcome is saved as it finishes (``images/<id>.json``), so a stopped build resumes where it
stopped, and LLM calls go through the content-addressed cache.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from halluscope.jsonio import write_json_atomic
from halluscope.scene.graph import SceneGraph
from halluscope.scene.tuples import SceneTuple, graph_to_tuples, subtract_tuples
from halluscope.stages import Failure
from halluscope.text import NO_WORDS, is_negation, numbers_in

if TYPE_CHECKING:
    from halluscope.claims.dsg import TupleExtractor

#: Version of the prompts and the checks; part of each image's saved-state key.
BUILD_VERSION = 2

GENERATE_SYSTEM = (
    "You write question-answer pairs that test whether someone really looked at an image, and for each pair "
    "a short Python function that computes the answer from the image's scene graph. You follow the output "
    "format exactly."
)

#: The API the programs see (the sandbox rebuilds it from SceneGraph.to_dict()).
API_DOC = """\
The function receives `g`, the scene graph of the image, with these methods (names match case-insensitively):
  g.entities()                 -> list of entity names, e.g. ["man", "laptop", "desk"]
  g.has_entity(name)           -> True or False
  g.attributes(entity)         -> list of attribute words, e.g. ["black", "open"]
  g.outgoing(entity)           -> relations where the entity is the subject
  g.incoming(entity)           -> relations where the entity is the object
  g.relations()                -> every relation
  g.relations_between(a, b)    -> list of predicates linking a to b, e.g. ["on"]
A relation r has r.subject, r.predicate and r.object (strings).
You may import math, re, collections, itertools, statistics, string; nothing else. No files, no printing,
no names starting with an underscore."""

EXAMPLE = """\
Scene graph:
Objects: cup, table, chair, window.
The cup is red, ceramic.
The cup on the table.
The chair next to the table.
The window behind the chair.

Q: What color is the cup sitting on the table?
A: The cup on the table is red.
```python
def verify(g):
    colours = ["red", "blue", "green", "white", "black", "yellow", "brown", "gray", "orange", "pink"]
    for rel in g.incoming("table"):
        if rel.predicate == "on":
            for value in g.attributes(rel.subject):
                if value in colours:
                    return value
    return "unknown"
```

Q: Is there anything behind the chair?
A: Yes, there is a window behind the chair.
```python
def verify(g):
    return any(rel.predicate == "behind" for rel in g.incoming("chair"))
```

Q: What is the chair placed next to?
A: The chair is next to the table.
```python
def verify(g):
    return [rel.object for rel in g.outgoing("chair") if rel.predicate == "next to"]
```"""

GENERATE_USER = """\
{api}

Here is an example of the format, for a different image:

{example}

Now the image to write about.

Scene graph:
{graph}

Write {n} question-answer pairs about this image. Guidelines:
- Ask what a person curious about the photo would ask, in a conversational tone, and vary the question \
types (what, where, which, how many, is/are, how, who).
- Each answer is one natural sentence that answers the question completely.
- A question must not give away its answer, must not be answerable by common sense alone, and must point \
to one thing unambiguously.
- Never mention the scene graph, entities, attributes, relations or tuples in a question or answer.
- Each function must be named verify, take g, compute the answer from g without hard-coding it, and \
return the key of the answer: a string, a number, True/False for yes/no questions, or a list of strings.
Use exactly the format of the example: "Q:", "A:", then the function in a ```python block."""

FILTER_SYSTEM = "You review question-answer pairs about an image for a benchmark and flag the bad ones."

FILTER_USER = """\
Flag each pair that has one of these problems:
- trivial: the question gives away the answer, or common sense answers it without looking \
(e.g. "What colour are the green trees?" / "The trees are green.");
- incomplete: the answer does not fully answer the question, or is vague or off-topic \
(e.g. "What is on the table?" / "Something is there.");
- unnatural: awkward, ungrammatical or ambiguous wording (e.g. "What state is the sign experiencing?").

Pairs:
{pairs}

Answer with one line per pair, in order, exactly "<number>: ok" or "<number>: trivial", \
"<number>: incomplete", "<number>: unnatural". No other text."""

#: Words that, in our experience, mark low-quality or leaking questions (the graph's machinery showing
#: through, or questions about the description rather than the image). Matched as whole words, any case.
TABOO_WORDS: tuple[str, ...] = (
    "scene graph", "graph", "entity", "entities", "attribute", "attributes", "relation", "relations",
    "relationship", "tuple", "tuples", "node", "edge", "caption", "mentioned", "described", "listed",
    "dataset", "program", "function", "verify",
)  # fmt: skip

_FILTER_VERDICTS = ("ok", "trivial", "incomplete", "unnatural")


class ProveBuildError(ValueError):
    """Bad input to the builder (a QA file line, a missing scene graph), naming the item."""


class BuildOptions(BaseModel):
    """What shapes the build (part of each image's saved-state key, so changing one re-does the image)."""

    pairs: int = Field(12, ge=1, le=30, description="QA pairs asked for per image (the paper: 10–15)")
    answer_threshold: float = Field(
        0.75, description="cosine above which a program answer equals the stated one"
    )
    duplicate_threshold: float = Field(
        0.9, description="question cosine above which a later pair is a duplicate"
    )
    llm_filter: bool = True
    #: Repair relations written object-first (Tri-HE's GQA-derived triplets), as ``build reefknot`` does.
    orient: bool = False
    taboo: tuple[str, ...] = TABOO_WORDS
    max_tokens: int = 2400
    seed: int = 0


class QAPair(BaseModel):
    """One generated pair and how far it got through the funnel."""

    index: int
    question: str
    answer: str
    program: str
    #: program_failed | wrong_answer | filtered | kept
    stage: str = "generated"
    #: The sandbox outcome (ok, error, timeout, denied, ...), or for filtered pairs the filter's reason.
    reason: str | None = None
    detail: str | None = None
    program_answer: Any = None
    similarity: float | None = None
    #: Why the LLM filter could not check this pair (its call failed, or its reply had no verdict for the
    #: pair); None when it was checked or not asked for. Such a pair is kept, flagged ``unfiltered``.
    unfiltered: str | None = None


class ImageResult(BaseModel):
    image_id: str
    key: str
    pairs: list[QAPair] = Field(default_factory=list)
    #: Why the image gave nothing (LLM error, unparseable output), if it did not.
    error: str | None = None
    seconds: float = 0.0
    llm_filter_unchecked: int = 0


# -- parsing the LLM's pairs ----------------------------------------------------------------------------

#: "Q:", "**Q3:**", "Question 3:" at the start of a line (code is indented or fenced, so not matched).
_Q_LINE = re.compile(r"^[*#>\- ]{0,3}Q(?:uestion)?\s*\d*\**\s*:\s*\**\s*(?P<text>.*)$", re.IGNORECASE)
_A_LINE = re.compile(r"^[*#>\- ]{0,3}A(?:nswer)?\s*\d*\**\s*:\s*\**\s*(?P<text>.*)$", re.IGNORECASE)
_FENCE = re.compile(r"```[a-zA-Z]*\s*\n(?P<code>.*?)```", re.DOTALL)


def _clean(text: str) -> str:
    return " ".join(text.strip().strip("*").split())


def parse_pairs(text: str) -> list[tuple[str, str, str]]:
    """(question, answer, program) triples from the generator's output, in order.

    The reply is cut into blocks at each "Q:" line; a block's answer is its first "A:" line and its program
    the first fenced block (or, unfenced, the lines from ``def``). A block with a question and an answer but
    no program comes back with program "" (it counts as a failed program); one without an answer is skipped.
    """
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if _Q_LINE.match(line)]
    found: list[tuple[str, str, str]] = []
    for n, start in enumerate(starts):
        block = lines[start : starts[n + 1] if n + 1 < len(starts) else len(lines)]
        question_match = _Q_LINE.match(block[0])
        question = _clean(question_match["text"]) if question_match else ""
        answer = ""
        for line in block[1:]:
            answer_match = _A_LINE.match(line)
            if answer_match:
                answer = _clean(answer_match["text"])
                break
        if not question or not answer:
            continue
        body = "\n".join(block)
        fenced = _FENCE.search(body)
        code = fenced["code"] if fenced else ""
        if not fenced:
            defs = [i for i, line in enumerate(block) if line.lstrip().startswith("def ")]
            code = "\n".join(block[defs[0] :]) if defs else ""
        code = code.strip("\n")
        found.append((question, answer, code + "\n" if "def " in code else ""))
    return found


def parse_filter_verdicts(text: str, n: int) -> dict[int, str]:
    """Pair number (1-based) → verdict, for the lines that parse; others are left out (unchecked)."""
    verdicts: dict[int, str] = {}
    for line in text.splitlines():
        match = re.match(r"\s*\**\s*(\d+)\s*\**\s*[:.)-]\s*\**\s*([a-zA-Z]+)", line)
        if not match:
            continue
        number, word = int(match[1]), match[2].lower()
        if 1 <= number <= n and word in _FILTER_VERDICTS:
            verdicts.setdefault(number, word)
    return verdicts


# -- comparing a program's answer with the stated one ---------------------------------------------------


def value_text(value: Any) -> str:
    """A program's answer as text: lists joined with commas, True/False as yes/no."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(value_text(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {value_text(v)}" for k, v in value.items())
    return "" if value is None else str(value)


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _numbers_in(text: str) -> set[float]:
    """Digits (decimals too) and number words ("no" counting as zero: "no dogs" states a count of 0)."""
    found = {float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", text.lower())}
    return found | {float(n) for n in numbers_in(text, no_is_zero=True)}


def _says_no(answer: str) -> bool:
    """A no word or a negation anywhere in the answer ("No.", "there is nothing", "it isn't")."""
    return any(w in NO_WORDS or is_negation(w) for w in re.findall(r"[a-z']+", answer.lower().replace("’", "'")))


def answers_agree(
    value: Any, answer: str, similarity: Callable[[str, str], float], threshold: float
) -> tuple[bool, float | None, str]:
    """Whether a program's answer states what the written answer states, the similarity used, and why.

    - yes/no (a bool): the written answer says no (a no word or any negation: "no", "not", "none", "nothing",
      "never", "isn't") exactly when it is False;
    - a number: the written answer must contain that number (digits or a number word of
      :data:`halluscope.text.NUMBER_WORDS`);
    - text or a list: every word of the program's answer appears in the written answer, or the two are
      semantically equal by embedding cosine ≥ ``threshold``.
    Embeddings alone would let "three" pass for "four" and "red" for "blue"; the checks above come first.
    """
    words = _words(answer)
    if isinstance(value, bool):
        says_no = _says_no(answer)
        agree = value is not says_no
        return agree, None, "yes/no" if agree else f"program says {value_text(value)}"
    if isinstance(value, (int, float)):
        agree = float(value) in _numbers_in(answer)
        return agree, None, "number" if agree else f"program counts {value}"
    text = value_text(value).strip()
    if not text:
        agree = _says_no(answer)
        return agree, None, "empty" if agree else "program found nothing"
    value_words = _words(text)
    answer_words = set(words)
    if value_words and all(w in answer_words for w in value_words):
        return True, 1.0, "contained"
    score = similarity(text, answer)
    return score >= threshold, score, f"cosine {score:.2f}"


# -- the answer's tuples, g(A) − g(Q) ---------------------------------------------------------------------
#
# PROVE's ``qa_diff_tuples`` are the tuples a tuple extractor finds in the answer minus those it finds in the
# question (the question's "premise" is not something a response must recover). Two ways here: any tuple
# extractor of :mod:`halluscope.claims.dsg` run on both texts (``llm``: PROVE's own recipe; ``rules``), or,
# offline and without a parser, the graph's own tuples that each text states (``graph``, the default). All
# of them go through :mod:`halluscope.scene.tuples` and end in :func:`~halluscope.scene.tuples.subtract_tuples`.

#: Words a tuple argument may contain that a text need not repeat for the tuple to count as stated.
_FILLER = frozenset({"the", "a", "an", "of", "is", "are", "s"})
#: Word → its noun dictionary form, filled as words are met (WordNet look-ups are slow).
_LEMMAS: dict[str, str] = {}


def _lemma(word: str) -> str:
    """A word's noun dictionary form on the packaged WordNet ("men" → "man", "kids" → "child")."""
    if word not in _LEMMAS:
        from halluscope.scene.names import NameMatcher

        _LEMMAS[word] = NameMatcher.singular(word)
    return _LEMMAS[word]


def _content(phrase: str) -> list[str]:
    """A phrase's content words (filler dropped), in their dictionary forms."""
    return [_lemma(w) for w in _words(phrase) if w not in _FILLER]


def _positions(text: str) -> dict[str, list[int]]:
    """Each word of the text (noun plurals folded: "hands" → "hand") → where it occurs."""
    found: dict[str, list[int]] = {}
    for index, word in enumerate(_words(text)):
        found.setdefault(_lemma(word), []).append(index)
    return found


def _places(phrase: str, positions: Mapping[str, list[int]]) -> list[int] | None:
    """Where a phrase can stand in the text (positions of its last content word, its head), or None when
    one of its content words is missing. A phrase of filler words only stands anywhere ([])."""
    words = _content(phrase)
    if not all(w in positions for w in words):
        return None
    return list(positions[words[-1]]) if words else []


def states(item: SceneTuple, positions: Mapping[str, list[int]], numbers: set[float]) -> bool:
    """Whether a text (its word positions and numbers) states a tuple.

    Every content word of every argument must occur (noun plurals folded); a count's number must occur as
    digits or a word; a relation's subject must come before its predicate and the predicate before its
    object ("The child is watching the man" states child–watching–man, not man–watching–man).
    """
    if item.kind == "relation":
        subject, obj, predicate = item.args[0], item.args[1], item.args[2]
        s, o, p = _places(subject, positions), _places(obj, positions), _places(predicate, positions)
        if s is None or o is None or p is None:
            return False
        pred_words = _content(predicate)
        firsts = positions[pred_words[0]] if pred_words else [None]
        for first in firsts:
            for i in s:
                for k in o:
                    if i < k and (first is None or i < first < k):
                        return True
        return False
    if item.kind == "count":
        parsed = item.number
        return parsed is not None and _places(item.args[0], positions) is not None and parsed[1] in numbers
    return all(_places(arg, positions) is not None for arg in item.args)


def _spans(name: str, lemmas: Sequence[str]) -> set[int]:
    """The word positions where the name stands in the text as a run of its words ("water spray")."""
    words = _content(name)
    covered: set[int] = set()
    for start in range(len(lemmas) - len(words) + 1):
        if words and list(lemmas[start : start + len(words)]) == words:
            covered.update(range(start, start + len(words)))
    return covered


def stated_tuples(tuples: Sequence[SceneTuple], text: str) -> list[SceneTuple]:
    """The tuples of ``tuples`` that ``text`` states (:func:`states`), in order.

    An entity whose name occurs only inside the name of a longer entity the text states ("water" in "the
    water spray", "bat" in "a baseball bat") is not stated on its own.
    """
    positions, numbers = _positions(text), _numbers_in(text)
    stated = [t for t in tuples if states(t, positions, numbers)]
    lemmas = [_lemma(w) for w in _words(text)]
    names = [t.args[0] for t in stated if t.kind == "entity"]

    def only_inside_longer(name: str) -> bool:
        words = _content(name)
        inside: set[int] = set()
        for other in names:
            if len(_content(other)) > len(words) and set(words) <= set(_content(other)):
                inside |= _spans(other, lemmas)
        return bool(words) and bool(inside) and set(positions[words[-1]]) <= inside

    return [t for t in stated if t.kind != "entity" or not only_inside_longer(t.args[0])]


def qa_diff_tuples(image_tuples: Sequence[SceneTuple], question: str, answer: str) -> list[SceneTuple]:
    """g(A) − g(Q) offline, grounded in the graph: the image tuples the answer states minus those the
    question states. The answer's facts were confirmed by the pair's program, so they are graph facts; what
    the answer says in words the graph does not use is missed (the LLM extractor finds it)."""
    return subtract_tuples(stated_tuples(image_tuples, answer), stated_tuples(image_tuples, question))


async def extracted_qa_diffs(
    pairs: Sequence[tuple[str, str]], extractor: TupleExtractor
) -> list[list[SceneTuple] | Failure]:
    """g(A) − g(Q) for each (question, answer) with a tuple extractor run on both texts, as PROVE made its
    ``qa_diff_tuples``; a :class:`Failure` where either extraction failed."""
    results = await extractor.extract_many([a for _, a in pairs] + [q for q, _ in pairs])
    out: list[list[SceneTuple] | Failure] = []
    for answer, question in zip(results[: len(pairs)], results[len(pairs) :], strict=True):
        if isinstance(answer, Failure):
            out.append(answer)
        elif isinstance(question, Failure):
            out.append(question)
        else:
            out.append(subtract_tuples(answer, question))
    return out


# -- the builder ----------------------------------------------------------------------------------------


def image_key(graph: SceneGraph, options: BuildOptions, llm_identity: Mapping[str, Any]) -> str:
    """What an image's saved result depends on: graph content, options, LLM, prompt version."""
    payload = json.dumps(
        [BUILD_VERSION, graph.fingerprint(), options.model_dump(mode="json"), dict(llm_identity)],
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


def prepare_graphs(graphs: Mapping[str, SceneGraph], orient: bool) -> dict[str, SceneGraph]:
    """The graphs the LLM and the programs see: with ``orient``, relations written object-first are
    repaired the way ``build reefknot`` does ("(laptop, using, man)" → man using laptop). ``--verify``
    must see the same graphs as the build did."""
    if not orient:
        return dict(graphs)
    from halluscope.builders.reefknot import _oriented_graph

    dropped: Counter[str] = Counter()  # relations whose direction cannot be told are left out, as in build reefknot
    return {image_id: _oriented_graph(graph, True, dropped) for image_id, graph in graphs.items()}


def embedding_similarity(embedder: Any) -> Callable[[str, str], float]:
    """The cosine of two texts' embeddings (the embedder returns unit vectors), as :func:`answers_agree`
    takes it, for the build and for ``--verify``."""

    def similarity(a: str, b: str) -> float:
        vectors = embedder.encode([a, b])
        return float(vectors[0] @ vectors[1])

    return similarity


def _safe_name(image_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", image_id)[:100] or "image"


class ProveBuilder:
    """Builds one image at a time; needs a chat client, an embedder and a sandbox."""

    def __init__(self, client: Any, embedder: Any, sandbox: Any, options: BuildOptions) -> None:
        self.client = client
        self.embedder = embedder
        self.sandbox = sandbox
        self.options = options

    def similarity(self, a: str, b: str) -> float:
        return embedding_similarity(self.embedder)(a, b)

    async def build_image(self, graph: SceneGraph) -> ImageResult:
        image_id = str(graph.image_id)
        started = time.perf_counter()
        result = ImageResult(image_id=image_id, key=image_key(graph, self.options, self.client.identity()))
        prompt = GENERATE_USER.format(
            api=API_DOC, example=EXAMPLE, graph=graph.describe(), n=self.options.pairs
        )
        from halluscope.llm.client import LLMError

        try:
            reply = await self.client.chat(
                [{"role": "system", "content": GENERATE_SYSTEM}, {"role": "user", "content": prompt}],
                max_tokens=self.options.max_tokens,
                seed=self.options.seed,
            )
        except LLMError as error:
            result.error = f"the generator LLM failed: {error}"
            result.seconds = time.perf_counter() - started
            return result
        parsed = parse_pairs(reply.text)
        if not parsed:
            result.error = f"no Q:/A: pair could be read from the generator's output: {reply.text[:200]!r}"
        result.pairs = [
            QAPair(index=i, question=q, answer=a, program=p) for i, (q, a, p) in enumerate(parsed)
        ]
        for pair in result.pairs:
            if not pair.program:
                pair.stage, pair.reason, pair.detail = (
                    "program_failed",
                    "no_program",
                    "the pair came without a program",
                )
        runnable = [p for p in result.pairs if p.program]

        # 1. programmatic filter, in the sandbox (off the event loop: it blocks on the worker)
        outcomes = await asyncio.to_thread(self.sandbox.run, graph.to_dict(), [p.program for p in runnable])
        for pair, outcome in zip(runnable, outcomes, strict=True):
            if not outcome.ok:
                pair.stage, pair.reason, pair.detail = "program_failed", outcome.status, outcome.error
                continue
            pair.program_answer = outcome.value
            agree, score, why = answers_agree(
                outcome.value, pair.answer, self.similarity, self.options.answer_threshold
            )
            pair.similarity = score
            if not agree:
                pair.stage, pair.reason, pair.detail = "wrong_answer", "disagrees", why
            else:
                pair.detail = why
        survivors = [p for p in result.pairs if p.stage == "generated"]

        # 2. text filters: taboo words, LLM check, semantic duplicates
        for pair in survivors:
            hit = self._taboo(pair.question + " " + pair.answer)
            if hit:
                pair.stage, pair.reason, pair.detail = "filtered", "taboo", f"uses {hit!r}"
        survivors = [p for p in survivors if p.stage == "generated"]
        if self.options.llm_filter and survivors:
            result.llm_filter_unchecked = await self._llm_filter(survivors)
        survivors = [p for p in survivors if p.stage == "generated"]
        self._dedupe(survivors)
        for pair in survivors:
            if pair.stage == "generated":
                pair.stage = "kept"
        result.seconds = time.perf_counter() - started
        return result

    def _taboo(self, text: str) -> str | None:
        lowered = text.lower()
        for word in self.options.taboo:
            if re.search(rf"\b{re.escape(word.lower())}\b", lowered):
                return word
        return None

    async def _llm_filter(self, pairs: list[QAPair]) -> int:
        """Mark pairs the LLM calls trivial/incomplete/unnatural; returns how many it could not check.

        A pair it could not check (the call failed, or the reply gives no verdict for it) goes on, marked
        ``unfiltered`` with the reason: counted, flagged in the output, never passed off as checked.
        """
        from halluscope.llm.client import LLMError

        listing = "\n".join(
            f"{n}. Question: {p.question}\n   Answer: {p.answer}" for n, p in enumerate(pairs, 1)
        )
        try:
            reply = await self.client.chat(
                [
                    {"role": "system", "content": FILTER_SYSTEM},
                    {"role": "user", "content": FILTER_USER.format(pairs=listing)},
                ],
                max_tokens=12 * len(pairs) + 20,
                seed=self.options.seed,
            )
        except LLMError as error:
            for pair in pairs:
                pair.unfiltered = f"the LLM filter failed: {error}"
            return len(pairs)
        verdicts = parse_filter_verdicts(reply.text, len(pairs))
        for number, pair in enumerate(pairs, 1):
            verdict = verdicts.get(number)
            if verdict is None:
                pair.unfiltered = "the LLM filter's reply gave no verdict for this pair"
            elif verdict != "ok":
                pair.stage, pair.reason, pair.detail = "filtered", f"llm_{verdict}", "judged " + verdict
        return sum(1 for pair in pairs if pair.unfiltered)

    def _dedupe(self, pairs: list[QAPair]) -> None:
        if len(pairs) < 2:
            return
        vectors = self.embedder.encode([p.question for p in pairs])
        for i, pair in enumerate(pairs):
            for j in range(i):
                if (
                    pairs[j].stage == "generated"
                    and float(vectors[i] @ vectors[j]) >= self.options.duplicate_threshold
                ):
                    pair.stage, pair.reason, pair.detail = (
                        "filtered",
                        "duplicate",
                        f"repeats pair {pairs[j].index}",
                    )
                    break


# -- the whole build --------------------------------------------------------------------------------------

FUNNEL_STAGES = ("program_failed", "wrong_answer", "filtered", "kept")


def funnel(results: Sequence[ImageResult]) -> dict[str, Any]:
    """The paper's funnel: generated → program failed / wrong answer / filtered / kept, with reasons."""
    pairs = [p for r in results for p in r.pairs]
    stages = Counter(p.stage for p in pairs)
    reasons: dict[str, Counter[str]] = {s: Counter() for s in FUNNEL_STAGES if s != "kept"}
    for pair in pairs:
        if pair.stage in reasons and pair.reason:
            reasons[pair.stage][pair.reason] += 1
    total = len(pairs)
    return {
        "images": len(results),
        "images_without_pairs": sum(1 for r in results if r.error),
        "generated": total,
        **{stage: stages.get(stage, 0) for stage in FUNNEL_STAGES},
        "percent": {
            stage: round(100 * stages.get(stage, 0) / total, 1) if total else 0.0 for stage in FUNNEL_STAGES
        },
        "reasons": {stage: dict(counter.most_common()) for stage, counter in reasons.items()},
        # Small models repeat themselves: pairs identical to an earlier pair of the same image (each still
        # goes through the funnel; most end as duplicates or share the first one's fate).
        "repeated_verbatim": sum(
            len(r.pairs) - len({(p.question.lower(), p.answer.lower()) for p in r.pairs}) for r in results
        ),
        "llm_filter_unchecked": sum(r.llm_filter_unchecked for r in results),
        # Kept pairs the LLM filter never checked (marked "unfiltered" in prove.json).
        "kept_unfiltered": sum(1 for p in pairs if p.stage == "kept" and p.unfiltered),
        "seconds": round(sum(r.seconds for r in results), 1),
    }


def released_rows(
    results: Sequence[ImageResult],
    graphs: Mapping[str, SceneGraph],
    images: Path | None,
    qa_diffs: Mapping[str, Sequence[SceneTuple]] | None = None,
) -> list[dict[str, Any]]:
    """Kept pairs in PROVE's released layout (plus halluscope's own id, image_id and program fields).

    ``image_tuples`` are the graph's tuples (:func:`~halluscope.scene.tuples.graph_to_tuples`) written as
    released strings; ``qa_diff_tuples`` come from ``qa_diffs`` (by pair id) where given, else from the
    graph (:func:`qa_diff_tuples`).
    """
    rows: list[dict[str, Any]] = []
    for result in results:
        graph = graphs[result.image_id]
        tuples = graph_to_tuples(graph)
        image = str(images / f"{result.image_id}.jpg") if images else f"{result.image_id}.jpg"
        kept = [p for p in result.pairs if p.stage == "kept"]
        for pair in kept:
            pair_id = f"{result.image_id}-{pair.index}"
            diff = (qa_diffs or {}).get(pair_id)
            if diff is None:
                diff = qa_diff_tuples(tuples, pair.question, pair.answer)
            rows.append(
                {
                    "id": pair_id,
                    "image_id": result.image_id,
                    "image": image,
                    "caption": graph.caption or graph.describe(),
                    "question": pair.question,
                    "answer": pair.answer,
                    "image_tuples": [t.text() for t in tuples],
                    "qa_diff_tuples": [t.text() for t in diff],
                    "program": pair.program,
                    "program_answer": pair.program_answer,
                    **({"unfiltered": pair.unfiltered} if pair.unfiltered else {}),
                }
            )
    return rows


async def answer_tuples(
    results: Sequence[ImageResult], extractor: TupleExtractor | None
) -> tuple[dict[str, list[SceneTuple]], dict[str, Any]]:
    """The kept pairs' g(A) − g(Q) by ``extractor`` (pair id → tuples), and what to record of it in
    ``build.json``. Without an extractor nothing is extracted (the graph's tuples are used); a pair whose
    extraction failed falls back to them too, and is named with the reason."""
    if extractor is None:
        return {}, {"method": "graph"}
    kept = [(f"{r.image_id}-{p.index}", p) for r in results for p in r.pairs if p.stage == "kept"]
    found = await extracted_qa_diffs([(p.question, p.answer) for _, p in kept], extractor) if kept else []
    diffs: dict[str, list[SceneTuple]] = {}
    fallback: dict[str, str] = {}
    for (pair_id, _), got in zip(kept, found, strict=True):
        if isinstance(got, Failure):
            fallback[pair_id] = f"{got.reason}; used the graph's tuples instead"
        else:
            diffs[pair_id] = got
    return diffs, {"method": extractor.name, **extractor.identity(), "fallback": fallback}


async def build_prove_async(
    graphs: Mapping[str, SceneGraph],
    out: Path,
    builder: ProveBuilder,
    *,
    images: Path | None = None,
    progress: Callable[[str, ImageResult, bool], None] | None = None,
    extractor: TupleExtractor | None = None,
) -> dict[str, Any]:
    """Build every image (reusing saved ones whose key matches), then write the benchmark files.

    Files in ``out``: ``images/<id>.json`` (every pair and its fate), ``prove.json`` (kept pairs, released
    layout), ``qa.jsonl`` (kept pairs as {image_id, question, answer, program}, for ``--verify``), and
    ``build.json`` (options, funnel, timing, how the answer tuples were made). ``extractor`` makes the
    kept answers' ``qa_diff_tuples`` from their text (see :func:`answer_tuples`); it is not part of an
    image's saved-state key, since it runs on the kept pairs after every image is done.
    """
    out.mkdir(parents=True, exist_ok=True)
    per_image = out / "images"
    per_image.mkdir(exist_ok=True)
    started = time.perf_counter()
    results: list[ImageResult] = []
    reused = 0
    graphs = prepare_graphs(graphs, builder.options.orient)
    for image_id, graph in graphs.items():
        path = per_image / f"{_safe_name(image_id)}.json"
        key = image_key(graph, builder.options, builder.client.identity())
        saved: ImageResult | None = None
        if path.exists():
            try:
                saved = ImageResult.model_validate_json(path.read_text(encoding="utf-8"))
            except ValueError:
                saved = None
        # An image whose pairs the LLM filter could not all check is built again (its LLM calls are cached).
        if (
            saved is not None and saved.key == key and saved.image_id == image_id and not saved.error
            and not saved.llm_filter_unchecked
        ):
            results.append(saved)
            reused += 1
            if progress:
                progress(image_id, saved, True)
            continue
        result = await builder.build_image(graph)
        write_json_atomic(path, result.model_dump(mode="json"))
        results.append(result)
        if progress:
            progress(image_id, result, False)
    diffs, how = await answer_tuples(results, extractor)
    rows = released_rows(results, graphs, images, diffs)
    write_json_atomic(out / "prove.json", rows)
    from halluscope.jsonio import write_jsonl_atomic

    write_jsonl_atomic(
        out / "qa.jsonl",
        [{k: r[k] for k in ("id", "image_id", "question", "answer", "program")} for r in rows],
    )
    summary = {
        "builder": "prove",
        "version": BUILD_VERSION,
        "options": builder.options.model_dump(mode="json"),
        "llm": builder.client.identity(),
        "embedder": builder.embedder.identity(),
        "funnel": funnel(results),
        "images_reused": reused,
        "answer_tuples": how,
        "wall_seconds": round(time.perf_counter() - started, 1),
        "errors": {r.image_id: r.error for r in results if r.error},
    }
    write_json_atomic(out / "build.json", summary)
    return summary


# -- re-checking a published QA file ---------------------------------------------------------------------


class VerifyRow(BaseModel):
    line: int
    id: str | None = None
    image_id: str
    question: str
    answer: str
    #: ok (program confirms the answer) | wrong_answer | missing_graph | bad_line | a sandbox outcome
    outcome: str
    detail: str | None = None
    program_answer: Any = None


def read_qa_file(path: Path) -> list[tuple[int, dict[str, Any] | None, str | None]]:
    """(line number, record or None, problem) for each non-blank line of a QA JSONL file."""
    from halluscope.jsonio import iter_jsonl

    rows: list[tuple[int, dict[str, Any] | None, str | None]] = []
    for line in iter_jsonl(path):
        if not line.ok:
            rows.append((line.number, None, line.error or "not valid JSON"))
            continue
        record = line.value
        if not isinstance(record, dict):
            rows.append((line.number, None, "not a JSON object"))
            continue
        missing = [
            k
            for k in ("image_id", "question", "answer", "program")
            if not isinstance(record.get(k), str) or not record.get(k)
        ]
        if missing:
            rows.append((line.number, None, f"missing or empty field(s): {', '.join(missing)}"))
            continue
        rows.append((line.number, record, None))
    return rows


def verify_qa_file(
    path: Path,
    graphs: Mapping[str, SceneGraph],
    sandbox: Any,
    similarity: Callable[[str, str], float],
    threshold: float = 0.75,
) -> list[VerifyRow]:
    """Re-run every program of a QA file against its image's graph (no LLM) and name each outcome."""
    out: list[VerifyRow] = []
    by_image: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for number, record, problem in read_qa_file(path):
        if record is None:
            out.append(
                VerifyRow(
                    line=number,
                    image_id="",
                    question="",
                    answer="",
                    outcome="bad_line",
                    detail=f"{path}:{number}: {problem}",
                )
            )
            continue
        by_image.setdefault(str(record["image_id"]), []).append((number, record))
    for image_id, items in by_image.items():
        graph = graphs.get(image_id)
        if graph is None:
            for number, record in items:
                out.append(
                    VerifyRow(
                        line=number, id=record.get("id"), image_id=image_id, question=record["question"],
                        answer=record["answer"], outcome="missing_graph",
                        detail=f"{path}:{number}: no scene graph for image id {image_id!r}",
                    )
                )  # fmt: skip
            continue
        results = sandbox.run(graph.to_dict(), [r["program"] for _, r in items])
        for (number, record), outcome in zip(items, results, strict=True):
            row = VerifyRow(
                line=number, id=record.get("id"), image_id=image_id, question=record["question"],
                answer=record["answer"], outcome=outcome.status, detail=outcome.error,
            )  # fmt: skip
            if outcome.ok:
                row.program_answer = outcome.value
                agree, _, why = answers_agree(outcome.value, record["answer"], similarity, threshold)
                row.outcome, row.detail = ("ok", why) if agree else ("wrong_answer", why)
            out.append(row)
    out.sort(key=lambda r: r.line)
    return out
