"""Response tuples for PROVE: a free-form answer → Davidsonian-scene-graph tuples g(Â).

PROVE extracts tuples from each response with an LLM prompted with DSG-style examples (Cho et al.,
"Davidsonian Scene Graph"). Two extractors here, one interface (:class:`TupleExtractor`):

- ``llm``: any OpenAI-compatible endpoint, with a few-shot prompt in halluscope's own words; the model writes
  one tuple per line in the released format (``entity - whole (dog)``, ``attribute - color (dog, brown)``,
  ``relation - spatial (dog, sofa, on)``, ``other - count (dogs, ==2)``). Lines that are not tuples are
  skipped (numbering and bullets are tolerated). Chat results are cached by content, so a re-run costs
  nothing.
- ``rules``: offline, built on the ``rules`` claim extractor (spaCy + SceneGraphParser): its
  (subject, relation, object) claims become entity, attribute and relation tuples
  (:func:`~halluscope.scene.tuples.claims_to_tuples`), plus count tuples from number words on nouns ("four
  puppies" → ``other - count (puppies, ==4)``) and entity tuples for nouns no claim mentions.

``bench/prove_tuple_agreement.py`` measures how far the two agree.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from halluscope.cache import Cache
from halluscope.llm.client import FATAL_ERRORS, LLMError
from halluscope.llm.stage import LLMStage
from halluscope.registry import Registry
from halluscope.scene.tuples import SceneTuple, TupleParseError, claims_to_tuples, parse_tuple
from halluscope.stages import Failure
from halluscope.text import NUMBER_WORDS, number_value


class TupleExtractor(ABC):
    """Turns free-form answers into DSG tuples."""

    name: ClassVar[str]

    def identity(self) -> dict[str, Any]:
        return {"tuple_extractor": self.name}

    @abstractmethod
    async def extract_many(self, texts: Sequence[str]) -> list[list[SceneTuple] | Failure]:
        """Tuples for each text, in order; a :class:`Failure` where extraction failed."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release clients or models."""


# -- LLM ------------------------------------------------------------------------------------------------

SYSTEM_PROMPT = "You rewrite descriptions of images as lists of atomic facts. You never add facts of your own."

TUPLE_PROMPT = """\
Rewrite the text below as a list of atomic facts about the image, one per line, in this notation:

entity - whole (NAME)                  a thing the text mentions
entity - part (NAME)                   a part of a thing ("dog's tail")
attribute - KIND (NAME, VALUE)         a property; KIND is color, size, shape, material, texture, type, \
state or text rendering
relation - KIND (SUBJECT, OBJECT, PREDICATE)   KIND is spatial (where things are) or action (what they do)
other - count (NAME, ==NUMBER)         how many there are

Rules:
- Write down what the text says, true or not; add nothing it does not say.
- First list every entity, then its attributes, counts and relations.
- Split "and" lists into separate facts. Skip statements that say nothing concrete about the image.
- Use the text's own words, kept short. End with a line holding only ###.

Text: Three white ducks swim on a small pond next to a wooden bench.
Facts:
entity - whole (ducks)
entity - whole (pond)
entity - whole (bench)
other - count (ducks, ==3)
attribute - color (ducks, white)
attribute - size (pond, small)
attribute - material (bench, wooden)
relation - action (ducks, pond, swim on)
relation - spatial (pond, bench, next to)
###

Text: A man in a red jacket is holding an umbrella. The umbrella's handle is curved. It seems to be raining.
Facts:
entity - whole (man)
entity - whole (jacket)
entity - whole (umbrella)
entity - part (umbrella's handle)
attribute - color (jacket, red)
attribute - shape (umbrella's handle, curved)
relation - spatial (man, jacket, in)
relation - action (man, umbrella, holding)
###

Text: {text}
Facts:
"""

#: Identifies the prompt wording in cache keys and run specs.
PROMPT_VERSION = hashlib.sha256((SYSTEM_PROMPT + TUPLE_PROMPT).encode("utf-8")).hexdigest()[:12]
_LEAD = re.compile(r"^\s*(?:[-*•]\s*|\d+\s*[.)|:]\s*)")


def parse_tuple_lines(reply: str) -> list[SceneTuple]:
    """The tuples in an LLM reply: up to the first ``###``, one per line; other lines are skipped."""
    out: list[SceneTuple] = []
    for line in reply.split("###", 1)[0].splitlines():
        text = _LEAD.sub("", line).strip()
        if not text:
            continue
        try:
            out.append(parse_tuple(text))
        except TupleParseError:
            continue
    return list(dict.fromkeys(out))


class LLMTupleExtractor(LLMStage, TupleExtractor):
    """Answer → DSG tuples with an LLM. Options: those of every LLM stage
    (:class:`~halluscope.llm.stage.LLMStageOptions`; ``timeout_s`` 120 and ``max_tokens`` 512 by default),
    ``cache``."""

    name: ClassVar[str] = "llm"
    component = "tuple extractor 'llm'"
    option_defaults: ClassVar[Mapping[str, Any]] = {"timeout_s": 120.0, "max_tokens": 512}
    reply_tokens = 512

    def identity(self) -> dict[str, Any]:
        return {
            "tuple_extractor": self.name, **self.client.identity(), "prompt": PROMPT_VERSION,
            "max_tokens": self.max_tokens,
        }

    def messages(self, text: str) -> list[dict[str, Any]]:
        return [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": TUPLE_PROMPT.format(text=" ".join(text.split()))},
        ]

    async def extract(self, text: str) -> list[SceneTuple]:
        if not text.strip():
            return []
        result = await self.client.chat(
            self.messages(text), temperature=0.0, max_tokens=self.max_tokens, stop=["###"]
        )
        return parse_tuple_lines(result.text)

    async def extract_many(self, texts: Sequence[str]) -> list[list[SceneTuple] | Failure]:
        async def one(text: str) -> list[SceneTuple] | Failure:
            try:
                return await self.extract(text)
            except FATAL_ERRORS:
                raise
            except LLMError as error:
                return Failure(f"tuple extraction failed: {error}")

        return list(await asyncio.gather(*(one(t) for t in texts)))


# -- rules ----------------------------------------------------------------------------------------------



#: Nouns that name a place relative to something ("the left of", "the front of"), not a thing.
_PLACE_WORDS = frozenset({"left", "right", "front", "top", "side", "back", "bottom", "middle", "center", "centre"})
_COPULAS = frozenset({"be", "look", "appear", "seem"})


def _name(token: Any) -> str:
    compounds = [t.text.lower() for t in token.children if t.dep_ == "compound" and t.i < token.i]
    return " ".join([*compounds, token.text.lower()])


def _subject(verb: Any) -> Any | None:
    subject = next((c for c in verb.children if c.dep_ in {"nsubj", "nsubjpass"}), None)
    if subject is None or subject.pos_ not in {"NOUN", "PROPN"}:
        return None
    return subject


def _negated(token: Any) -> bool:
    return any(c.dep_ == "neg" for c in token.children)


def _visual_adjective(token: Any) -> bool:
    from halluscope.claims.rules import NON_VISUAL_ADJECTIVES

    return bool(token.pos_ == "ADJ" and token.is_alpha and token.lower_ not in NON_VISUAL_ADJECTIVES
                and _count(token.text) is None)


def _placeholder(item: SceneTuple) -> bool:
    """A relation whose object is a place word ("table, left, to"): a misparse of "to the left of"."""
    return item.kind == "relation" and (item.object or "") in _PLACE_WORDS


def _names(item: SceneTuple) -> list[str]:
    if item.kind == "relation":
        return [item.args[0], item.args[1]]
    return [item.args[0]] if item.kind in ("attribute", "count") else []


def _count(word: str) -> int | None:
    return number_value(word)


class RulesTupleExtractor(TupleExtractor):
    """Offline: the ``rules`` claim extractor's claims as tuples, plus counts and unclaimed entities.
    Options are the rules extractor's (``spacy_model``, ``max_chars``, ``batch_size``)."""

    name: ClassVar[str] = "rules"

    def __init__(self, *, cache: Cache | None = None, **options: Any) -> None:
        from halluscope.claims.rules import RulesExtractor

        self.claims = RulesExtractor(**options)

    def identity(self) -> dict[str, Any]:
        return {"tuple_extractor": self.name, "version": 1, "claims": self.claims.identity()}

    def extract_many_sync(self, texts: Sequence[str]) -> list[list[SceneTuple] | Failure]:
        claim_lists = self.claims.extract_many_sync(texts)
        out: list[list[SceneTuple] | Failure] = []
        todo = [i for i, c in enumerate(claim_lists) if not isinstance(c, Failure) and texts[i].strip()]
        extras: dict[int, tuple[list[SceneTuple], list[SceneTuple]]] = {}
        if todo:
            nlp = self.claims._load()[0]
            docs = nlp.pipe([texts[i].strip()[: self.claims.max_chars] for i in todo])
            for index, doc in zip(todo, docs, strict=True):
                extras[index] = self._from_doc(doc)
        for index, claims in enumerate(claim_lists):
            if isinstance(claims, Failure):
                out.append(claims)
                continue
            entities, parsed = extras.get(index, ([], []))
            tuples = claims_to_tuples(claims)
            facts = [t for t in [*parsed, *tuples] if t.kind != "entity" and not _placeholder(t)]
            named = [t for t in tuples if t.kind == "entity" and t.args[0] not in _PLACE_WORDS]
            named += [t for t in entities if t not in named]
            named += [SceneTuple.entity(n) for t in facts for n in _names(t) if SceneTuple.entity(n) not in named]
            out.append(list(dict.fromkeys([*dict.fromkeys(named), *facts])))
        return out

    def _from_doc(self, doc: Any) -> tuple[list[SceneTuple], list[SceneTuple]]:
        """What the claim rules miss, read off the dependency parse: entity tuples for plain noun phrases,
        counts ("four puppies"), adjectives ("a blue rug", "the ring is large and blue") and multi-word
        spatial relations ("to the left of", "in front of", "on top of")."""
        entities: list[SceneTuple] = []
        facts: list[SceneTuple] = []
        for chunk in doc.noun_chunks:
            root = chunk.root
            if root.pos_ not in {"NOUN", "PROPN"} or root.lower_ in _PLACE_WORDS:
                continue
            if any(t.dep_ == "det" and t.lower_ in {"no", "neither"} for t in root.children):
                continue
            name = _name(root)
            entities.append(SceneTuple.entity(name))
            for child in root.children:
                number = _count(child.text) if child.dep_ in {"nummod", "det", "amod"} else None
                if number is not None and (child.dep_ == "nummod" or child.lower_ in NUMBER_WORDS):
                    facts.append(SceneTuple.count(name, number))
                elif child.dep_ == "amod" and _visual_adjective(child):
                    facts.append(SceneTuple.attribute(name, child.lower_))
        for token in doc:
            if token.dep_ == "acomp" and token.head.lemma_ in _COPULAS and not _negated(token.head):
                subject = _subject(token.head)
                if subject is not None:
                    for adjective in [token, *token.conjuncts]:
                        if _visual_adjective(adjective):
                            facts.append(SceneTuple.attribute(_name(subject), adjective.lower_))
            elif token.dep_ == "prep" and token.lower_ in {"to", "in", "on", "at"}:
                place = next((c for c in token.children if c.dep_ == "pobj" and c.lower_ in _PLACE_WORDS), None)
                of = next((c for c in place.children if c.dep_ == "prep" and c.lower_ == "of"), None) if place else None
                target = next((c for c in of.children if c.dep_ == "pobj"), None) if of is not None else None
                subject = token.head if token.head.pos_ in {"NOUN", "PROPN"} else _subject(token.head)
                if place is None or of is None or target is None or subject is None or _negated(token.head):
                    continue
                predicate = doc[token.i : of.i + 1].text.lower()
                for obj in [target, *target.conjuncts]:
                    facts.append(SceneTuple.relation(_name(subject), predicate, _name(obj), "spatial"))
        return entities, facts

    async def extract_many(self, texts: Sequence[str]) -> list[list[SceneTuple] | Failure]:
        return await asyncio.to_thread(self.extract_many_sync, texts)


TUPLE_EXTRACTORS: Registry[TupleExtractor] = Registry(
    "tuple extractor",
    {
        "llm": "halluscope.claims.dsg:LLMTupleExtractor",
        "rules": "halluscope.claims.dsg:RulesTupleExtractor",
    },
    {
        "llm": "DSG-style tuples from an LLM on any OpenAI-compatible endpoint (PROVE's way)",
        "rules": "offline: rules claims as tuples, plus counts and entities (spaCy)",
    },
)

__all__ = [
    "PROMPT_VERSION",
    "TUPLE_EXTRACTORS",
    "LLMTupleExtractor",
    "RulesTupleExtractor",
    "TupleExtractor",
    "parse_tuple_lines",
]
