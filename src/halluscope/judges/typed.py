"""The ``typed`` judge: checks a claim's objects first, then its relation, and says which part is wrong.

Tri-HE's LLM judge tells object hallucinations (something that is not in the image) from relation
hallucinations (things that are there, wrongly related); its similarity judge cannot. This judge does it
offline, with rules over the scene graph, WordNet and — only where the rules cannot decide — sentence
embeddings. For a claim (subject, relation, object), in order:

1. **Stated fact.** A claim equal to a reference fact (case and spacing aside) is supported.
2. **Subject.** The subject must name something in the image: an object of the image or an entity of its
   reference facts, matched with :class:`~halluscope.scene.names.NameMatcher` (head nouns, plurals,
   synonyms, WordNet kinds: "person" / man, "puppy" / dog, never "cat" / dog). If not: hallucinated, error
   ``object``. A pronoun subject ("it") is unjudged. A subject naming the picture itself ("the image
   shows a dog") turns the claim into an existence claim about its object.
3. **Object.** If it names a thing ("a red hat", "on the desk"), it must exist too, else error ``object``.
   If it is a property ("red", "standing") — or the relation is a copula ("is", "appears", "looks") — the
   claim is an **attribute claim**: the property is compared with the attributes the scene records for
   the subject (colours must agree, antonyms disagree, synonyms and contained words agree, then
   embedding similarity ≥ ``attribute_threshold``); if none supports it: error ``attribute``. Tri-HE
   itself has only object and relation errors; the metrics count attribute errors separately.
4. **Relation.** With both ends found, the claimed relation is compared with every relation the scene
   records between the matched entities, in both directions (Tri-HE's GQA triplets are stored reversed,
   e.g. "(shirt, wearing, man)"; ``directed=True`` uses stored direction only). Lexical rules decide first
   (:func:`~halluscope.scene.relations.compare_relations`: polarity, spatial preposition groups, verb
   paraphrases, "has" implied by wearing/holding); undecided pairs are compared by embedding the two
   relation phrases alone and accepted at cosine ≥ ``relation_threshold`` (embedding them inside the
   claim's sentence lets the shared nouns dominate: "candles on cake" / "candles throwing cake" scores
   0.91). No supporting relation — or none recorded at all — is error
   ``relation``.
5. **Negative claims** ("not wearing a helmet", "no helmet"): supported when the object is absent from the
   image or the positive relation is not recorded; hallucinated (``relation``) when it is.

Every verdict carries its evidence: the reference facts it rests on (or the object list when an object
is missing) and an explanation naming the rule. Embeddings are computed for all claims of a
``judge_many`` batch at once, each distinct string once, through the caching
:class:`~halluscope.embeddings.Embedder`. ``model="none"`` judges with the lexical rules alone
(undecided relations and attributes then count as unsupported).
"""

from __future__ import annotations

import asyncio
import re
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from halluscope.cache import Cache
from halluscope.options import check_options
from halluscope.scene.direction import fact_text
from halluscope.scene.graph import SceneGraph, normalise_name
from halluscope.scene.names import (
    FRAME_WORDS,
    PRONOUNS,
    REGION_WORDS,
    EntityMatch,
    NameMatcher,
    is_negated,
    split_leading_preposition,
    tokens,
)
from halluscope.scene.relations import (
    compare_attributes,
    compare_relations,
    direction_words,
    is_copula,
    opposite_directions,
    parse_relation,
    relation_core,
)
from halluscope.stages import Failure, Judge, JudgeItem
from halluscope.types import Claim, ErrorType, Support, Verdict, VerdictLabel

#: Cosine between two relation phrases (embedded alone) at or above which a pair the rules leave undecided
#: counts as the same relation. Chosen on hand-labelled pairs with all-MiniLM-L6-v2 (docs/offline-judging.md):
#: it accepts only near-synonyms ("photographing" / "taking a picture of").
DEFAULT_RELATION_THRESHOLD = 0.75
#: Cosine between two attribute phrases at or above which an undecided pair agrees ("wooden" / "wood").
DEFAULT_ATTRIBUTE_THRESHOLD = 0.62
#: Lexical scores at or above this count as support.
_AGREE = 0.5
#: Object names listed in the evidence of an object hallucination.
_MAX_LISTED_OBJECTS = 40
_NO_EMBEDDINGS = frozenset({"none", "off", "lexical", ""})


@dataclass
class _Comparison:
    """One claimed relation or attribute against one recorded one."""

    claimed: str
    recorded: str
    fact: str
    lexical: float | None
    #: Texts embedded when the rules cannot decide.
    claimed_text: str = ""
    recorded_text: str = ""


@dataclass
class _Pending:
    """A claim whose verdict waits for the best of several comparisons (some needing embeddings)."""

    kind: ErrorType  # RELATION or ATTRIBUTE: the error if nothing supports the claim
    comparisons: list[_Comparison]
    threshold: float
    what: str  # e.g. "relation 'holding' between man and shirt"
    extra_evidence: list[str] = field(default_factory=list)
    negative: bool = False  # a negative claim: supported when no comparison agrees


class TypedJudge(Judge):
    """Object → attribute → relation checks against the scene graph; see the module docstring."""

    name: ClassVar[str] = "typed"

    def __init__(
        self,
        *,
        model: str | None = None,
        relation_threshold: float = DEFAULT_RELATION_THRESHOLD,
        attribute_threshold: float = DEFAULT_ATTRIBUTE_THRESHOLD,
        directed: bool = False,
        max_depth: int = 8,
        specific_depth: int = 3,
        cache: Cache | None = None,
        device: str = "cpu",
        embedder: Any = None,
        **unknown: Any,
    ) -> None:
        check_options(
            "the typed judge",
            unknown,
            [
                "model", "relation_threshold", "attribute_threshold", "directed", "max_depth",
                "specific_depth", "cache", "device", "embedder",
            ],
        )
        self.relation_threshold = _check_cosine("relation_threshold", relation_threshold)
        self.attribute_threshold = _check_cosine("attribute_threshold", attribute_threshold)
        if not isinstance(directed, bool):
            raise ValueError(f"typed judge option directed must be true or false, got {directed!r}")
        self.directed = directed
        for option, value in (("max_depth", max_depth), ("specific_depth", specific_depth)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"typed judge option {option} must be a non-negative integer, got {value!r}")
        self.lexical_only = isinstance(model, str) and model.strip().lower() in _NO_EMBEDDINGS
        self.model = None if self.lexical_only else model
        self.matcher = NameMatcher(max_depth=max_depth, specific_depth=specific_depth)
        self.cache = cache
        self.device = device
        self._embedder = embedder

    # -- identity and model ----------------------------------------------------------------------------

    @property
    def embedder(self) -> Any:
        """The sentence-embedding model (an :class:`~halluscope.embeddings.Embedder`), loaded on first use."""
        if self._embedder is None:
            from halluscope.embeddings import load_embedder

            self._embedder = load_embedder(self.model, cache=self.cache, device=self.device)
        return self._embedder

    def identity(self) -> dict[str, Any]:
        if self.lexical_only:
            model_id: str | None = None
        elif self._embedder is not None:
            model_id = str(self._embedder.identity())
        else:
            from halluscope.embeddings import resolve_model

            model_id = resolve_model(self.model).identity
        return {
            "judge": self.name,
            "version": 2,  # 2: three-way support; unlisted places, parts, clothing not absent objects
            "model": model_id,
            "relation_threshold": self.relation_threshold,
            "attribute_threshold": self.attribute_threshold,
            "directed": self.directed,
            **{k: v for k, v in self.matcher.identity().items() if k != "v"},
        }

    # -- judging ---------------------------------------------------------------------------------------

    async def judge_many(self, items: Sequence[JudgeItem]) -> list[list[Verdict] | Failure]:
        """Verdicts for many answers at once (embeddings are batched over all of them)."""
        return await asyncio.to_thread(self.judge_many_sync, items)

    def judge_many_sync(self, items: Sequence[JudgeItem]) -> list[list[Verdict] | Failure]:
        """The blocking form of :meth:`judge_many`."""
        results: list[list[Verdict | _Pending] | Failure] = []
        for item in items:
            try:
                results.append([_with_support(self._plan(claim, item.scene)) for claim in item.claims])
            except Exception as exc:
                reason = f"typed judge: sample {item.sample_id!r}: {type(exc).__name__}: {exc}"
                results.append(Failure(reason))
        pending = [p for r in results if not isinstance(r, Failure) for p in r if isinstance(p, _Pending)]
        similarities: dict[tuple[str, str], float] = {}
        embed_error: str | None = None
        if pending and not self.lexical_only:
            pairs = list(
                dict.fromkeys(
                    (c.claimed_text, c.recorded_text)
                    for p in pending
                    for c in p.comparisons
                    if c.lexical is None and c.claimed_text
                )
            )
            if pairs:
                try:
                    similarities = self._similarities(pairs)
                except Exception as exc:  # the model failed: those claims stay unjudged, the rest stand
                    embed_error = f"embedding model failed: {type(exc).__name__}: {exc}"
        out: list[list[Verdict] | Failure] = []
        for result in results:
            if isinstance(result, Failure):
                out.append(result)
                continue
            out.append(
                [
                    _filled(self._decide(p, similarities, embed_error)) if isinstance(p, _Pending) else p
                    for p in result
                ]
            )
        return out

    def _similarities(self, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], float]:
        # numpy only when there is something to compare: a re-run of a finished run builds this judge (its
        # identity is in spec.json) and scores nothing, and importing numpy was a fifth of a second of it.
        import numpy as np

        texts = list(dict.fromkeys(t for pair in pairs for t in pair))
        vectors = np.asarray(self.embedder.encode(texts), dtype=np.float64)
        row = {t: i for i, t in enumerate(texts)}
        return {(a, b): float(vectors[row[a]] @ vectors[row[b]]) for a, b in pairs}

    def _decide(
        self, pending: _Pending, similarities: dict[tuple[str, str], float], embed_error: str | None
    ) -> Verdict:
        best: _Comparison | None = None
        best_key = (False, -1.0)  # (agrees, score): an agreeing comparison beats any that does not
        undecided_failed = False
        for comparison in pending.comparisons:
            if comparison.lexical is not None:
                key = (comparison.lexical >= _AGREE, comparison.lexical)
            elif self.lexical_only:
                key = (False, 0.0)
            elif embed_error is not None:
                undecided_failed = True
                continue
            else:
                cosine = similarities.get((comparison.claimed_text, comparison.recorded_text), 0.0)
                key = (cosine >= pending.threshold, cosine)
            if key > best_key:
                best, best_key = comparison, key
        agrees, best_score = best_key
        if not agrees and undecided_failed:
            return Verdict.unjudged(f"{pending.what}: {embed_error}")
        if pending.negative:
            if agrees:
                assert best is not None
                return Verdict(
                    label=VerdictLabel.HALLUCINATED,
                    error=pending.kind,
                    score=0.0,
                    evidence=[best.fact],
                    explanation=f"{pending.what}: the scene records the opposite: {best.fact}",
                    support=Support.CONTRADICTED,
                )
            return Verdict(
                label=VerdictLabel.SUPPORTED,
                score=1.0,
                evidence=[c.fact for c in pending.comparisons][:5],
                explanation=f"{pending.what}: not recorded, as the claim says",
            )
        if agrees:
            assert best is not None
            how = "embedding" if best.lexical is None else "rules"
            return Verdict(
                label=VerdictLabel.SUPPORTED,
                score=round(best_score, 4),
                evidence=[best.fact],
                explanation=f"{pending.what}: supported by {best.fact} ({how}, {best_score:.2f})",
            )
        recorded = [c.fact for c in pending.comparisons]
        # Silence is not evidence: the claim is contradicted only when a recorded fact says otherwise (another
        # colour, an antonym, the opposite direction or polarity); else the scene cannot verify it.
        against = [c for c in pending.comparisons if _contradicts(pending.kind, c)]
        return Verdict(
            label=VerdictLabel.HALLUCINATED,
            error=pending.kind,
            score=round(max(best_score, 0.0), 4),
            evidence=list(dict.fromkeys([c.fact for c in against] + recorded + pending.extra_evidence))[:8],
            explanation=(
                f"{pending.what}: "
                + (f"the scene records otherwise: {against[0].fact}" if against else
                   f"no recorded {pending.kind.value} supports it")
                + (f" (best {best_score:.2f} < {pending.threshold:g})" if best is not None and not against else "")
            ),
            support=Support.CONTRADICTED if against else Support.UNVERIFIABLE,
        )

    # -- the rules ---------------------------------------------------------------------------------------

    def _plan(self, claim: Claim, scene: SceneGraph) -> Verdict | _Pending:
        subject, relation, obj = claim.subject.strip(), claim.relation.strip(), claim.object.strip()
        if not subject or not relation or not obj:
            return Verdict.unjudged("the claim has an empty part")
        if _stated(claim, scene):
            fact = _fact_text(claim.subject, claim.relation, claim.object)
            return Verdict(
                label=VerdictLabel.SUPPORTED,
                score=1.0,
                evidence=[fact],
                explanation="stated by a reference fact",
            )
        subject_words = tokens(subject)
        if subject_words and all(w in PRONOUNS for w in subject_words):
            return Verdict.unjudged(f"the subject {subject!r} is a pronoun; its referent is unknown")

        # "The image shows a dog": an existence claim about the object.
        if _names_frame(subject):
            return self._existence(obj, scene)

        # "No roof over the court": true when there is no roof, else checked as a negative relation.
        negative_subject = is_negated(subject)
        if negative_subject:
            subject = _strip_negation(subject)
            if not subject:
                return Verdict.unjudged("the subject is only a negation")

        subjects = self.matcher.find_all_in_scene(subject, scene)
        if not subjects:
            if not self.matcher.head_nouns(subject):
                return Verdict.unjudged(f"the subject {subject!r} names no thing")
            if negative_subject:
                return Verdict(
                    label=VerdictLabel.SUPPORTED,
                    score=1.0,
                    evidence=[_object_list(scene)],
                    explanation=f"no {subject!r} in the image, as the claim says",
                )
            return self._missing(subject, scene, "subject")

        # Negation may sit on the relation ("not wearing") or on the object ("no helmet"). A negative claim
        # is checked as its positive form, then inverted (see _decide).
        negative = negative_subject or parse_relation(relation).negative or is_negated(obj)
        if parse_relation(relation).negative:
            relation = _strip_negation(relation)
            if not relation:
                return Verdict.unjudged("the relation is only a negation")
        if is_negated(obj):
            obj = _strip_negation(obj)
            if not obj:
                return Verdict.unjudged("the object is only a negation")

        if _names_frame(obj) and not is_copula(relation):
            if not _locative(relation):
                return Verdict.unjudged(f"a relation {relation!r} to the picture itself cannot be checked")
            # "The dog is in the picture": only says the dog exists.
            return Verdict(
                label=VerdictLabel.SUPPORTED,
                score=1.0,
                evidence=[f"objects in the image include {subjects[0].entity}"],
                explanation=f"{subject!r} exists in the image ({subjects[0].entity})",
            )

        copula = is_copula(relation)
        if copula and set(tokens(obj)) <= _PRESENCE_WORDS and not negative:
            # "The cars are visible": says only that they are there.
            return Verdict(
                label=VerdictLabel.SUPPORTED,
                score=1.0,
                evidence=[f"objects in the image include {subjects[0].entity}"],
                explanation=f"{subject!r} exists in the image ({subjects[0].entity})",
            )
        objects = self.matcher.find_all_in_scene(obj, scene)
        if objects:
            # "The person is a catcher": the object names the subject's own entity, at least as precisely.
            if copula and {m.key for m in objects if not m.narrower} & {m.key for m in subjects}:
                return Verdict(
                    label=VerdictLabel.SUPPORTED,
                    score=1.0,
                    evidence=[f"{subjects[0].entity} is a kind of {obj}"],
                    explanation=f"{subject!r} and {obj!r} name the same entity",
                )
            if copula:
                return self._attribute(subject, relation, obj, subjects, scene, negative)
            return self._relation(subject, relation, obj, subjects, objects, scene, negative)

        if negative and not copula and self.matcher.is_noun_phrase(obj):
            return Verdict(
                label=VerdictLabel.SUPPORTED,
                score=1.0,
                evidence=[_object_list(scene)],
                explanation=f"no {obj!r} in the image, as the negative claim says",
            )
        object_words = tokens(obj)
        if any(w in REGION_WORDS for w in object_words[-1:]):
            return Verdict.unjudged(f"the scene records no position in the frame ({obj!r})")
        if copula or not self.matcher.is_noun_phrase(obj):
            return self._attribute(subject, relation, obj, subjects, scene, negative)
        return self._missing(obj, scene, "object")

    def _existence(self, obj: str, scene: SceneGraph) -> Verdict:
        if is_negated(obj):
            stripped = _strip_negation(obj)
            found = self.matcher.find_in_scene(stripped, scene) if stripped else None
            if found is None:
                return Verdict(
                    label=VerdictLabel.SUPPORTED,
                    score=1.0,
                    evidence=[_object_list(scene)],
                    explanation=f"no {stripped!r} in the image, as the claim says",
                )
            return Verdict(
                label=VerdictLabel.HALLUCINATED,
                error=ErrorType.OBJECT,
                score=0.0,
                evidence=[f"objects in the image include {found.entity}"],
                explanation=f"the claim denies {stripped!r}, but the image holds {found.entity!r}",
                support=Support.CONTRADICTED,
            )
        found = self.matcher.find_in_scene(obj, scene)
        if found is None:
            if not self.matcher.head_nouns(obj):
                return Verdict.unjudged(f"{obj!r} names no thing whose presence could be checked")
            return self._missing(obj, scene, "object")
        return Verdict(
            label=VerdictLabel.SUPPORTED,
            score=1.0,
            evidence=[f"objects in the image include {found.entity}"],
            explanation=f"{obj!r} exists in the image ({found.entity})",
        )

    def _missing(self, name: str, scene: SceneGraph, part: str) -> Verdict:
        """A name that matches nothing in the scene: an absent object, or something no scene graph lists.

        Only a visual, countable thing (an artefact, an animal, a plant, a person where the image has none,
        named nowhere in the image's reference answers) counts as *absent* (contradicted). Names of ideas,
        times and meta words ("meal", "time", "image") are not claims about objects at all (unjudged);
        places, parts, clothing, food and stuff, and things the reference answers mention, are often
        present but unlisted, so the scene graph cannot verify them (hallucinated in Tri-HE's reading,
        ``support`` unverifiable).
        """
        kind = absence_kind(self.matcher, name, scene)
        if kind == "nonvisual":
            return Verdict(
                label=VerdictLabel.UNJUDGED,
                explanation=f"the {part} {name!r} names no visual object; nothing to check",
                support=Support.UNVERIFIABLE,
            )
        unlisted = kind != "absent"
        return Verdict(
            label=VerdictLabel.HALLUCINATED,
            error=ErrorType.OBJECT,
            score=0.0,
            evidence=[_object_list(scene)],
            explanation=(
                f"the {part} {name!r}: nothing of its kind among the image's objects and entities"
                + (f" ({kind}: scene graphs often leave such things out, so this is unverifiable)" if unlisted else "")
            ),
            support=Support.UNVERIFIABLE if unlisted else Support.CONTRADICTED,
        )

    def _attribute(
        self,
        subject: str,
        relation: str,
        obj: str,
        subjects: list[EntityMatch],
        scene: SceneGraph,
        negative: bool,
    ) -> Verdict | _Pending:
        comparisons: list[_Comparison] = []
        seen: set[str] = set()
        # A non-copula relation to a recorded non-entity object ("quantity few"): compare relations.
        if not is_copula(relation):
            wanted = " ".join(tokens(obj))
            for match in subjects:
                for rel in self._relations_of(match.key, scene):
                    if " ".join(tokens(rel[2])) == wanted:
                        fact = _fact_text(*rel)
                        if fact in seen:
                            continue
                        seen.add(fact)
                        comparisons.append(
                            _Comparison(
                                claimed=relation,
                                recorded=rel[1],
                                fact=fact,
                                lexical=compare_relations(relation, rel[1]),
                                claimed_text=relation_core(relation),
                                recorded_text=relation_core(rel[1]),
                            )
                        )
            if comparisons:
                return _Pending(
                    kind=ErrorType.RELATION,
                    comparisons=comparisons,
                    threshold=self.relation_threshold,
                    what=f"relation {relation!r} of {subject!r} to {obj!r}",
                    negative=negative,
                )
        for match in subjects:
            for attribute in scene.attributes(match.key):
                fact = _fact_text(scene.graph.nodes[match.key]["name"], "is", attribute)
                if fact in seen:
                    continue
                seen.add(fact)
                comparisons.append(
                    _Comparison(
                        claimed=obj,
                        recorded=attribute,
                        fact=fact,
                        lexical=compare_attributes(obj, attribute),
                        claimed_text=" ".join(tokens(obj)),
                        recorded_text=" ".join(tokens(attribute)),
                    )
                )
        # "green" of the entity "green leaves"; "sitting" of someone recorded as "sitting on" something.
        wanted_words = set(tokens(obj))
        posture = parse_relation(obj)
        for match in subjects:
            display = scene.graph.nodes[match.key]["name"] if match.key in scene.graph else match.entity
            if wanted_words and wanted_words < set(tokens(display)):
                comparisons.append(_Comparison(obj, display, f"(entity named {display!r})", 1.0))
            if posture.verbs and not posture.words and not posture.prepositions:
                for rel in self._relations_of(match.key, scene):
                    score = compare_relations(obj, rel[1])
                    if score is not None and score >= _AGREE:
                        comparisons.append(_Comparison(obj, rel[1], _fact_text(*rel), score))
        what = f"attribute {obj!r} of {subject!r}"
        if not comparisons:
            if negative:
                return Verdict(
                    label=VerdictLabel.SUPPORTED,
                    score=1.0,
                    explanation=f"{what}: not recorded, as the negative claim says",
                )
            return Verdict(
                label=VerdictLabel.HALLUCINATED,
                error=ErrorType.ATTRIBUTE,
                score=0.0,
                evidence=[],
                explanation=f"{what}: the scene records no attribute of {subjects[0].entity!r}",
            )
        return _Pending(
            kind=ErrorType.ATTRIBUTE,
            comparisons=comparisons,
            threshold=self.attribute_threshold,
            what=what,
            negative=negative,
        )

    def _relation(
        self,
        subject: str,
        relation: str,
        obj: str,
        subjects: list[EntityMatch],
        objects: list[EntityMatch],
        scene: SceneGraph,
        negative: bool,
    ) -> Verdict | _Pending:
        claim_prep, _ = split_leading_preposition(obj)
        claimed = f"{relation} {claim_prep}".strip() if claim_prep else relation
        object_keys = {m.key for m in objects}
        comparisons: list[_Comparison] = []
        seen: set[str] = set()
        for match in subjects:
            for s_name, predicate, o_name, o_key, reversed_ in self._edges_of(match.key, scene):
                if o_key not in object_keys:
                    continue
                ends = (o_name, s_name) if reversed_ else (s_name, o_name)
                fact = _fact_text(ends[0], predicate, ends[1])
                if fact in seen:
                    continue
                seen.add(fact)
                # "(books, piled, on desk)": the preposition stored in the object belongs to the relation.
                ref_prep, _ = split_leading_preposition(o_name)
                recorded = f"{predicate} {ref_prep}".strip() if ref_prep and not claim_prep else predicate
                claimed_here = relation if ref_prep and claim_prep else claimed
                comparisons.append(
                    _Comparison(
                        claimed=claimed_here,
                        recorded=recorded,
                        fact=fact,
                        lexical=compare_relations(claimed_here, recorded),
                        claimed_text=relation_core(claimed_here),
                        recorded_text=relation_core(recorded),
                    )
                )
        what = f"relation {relation!r} between {subject!r} and {obj!r}"
        if not comparisons:
            if negative:
                return Verdict(
                    label=VerdictLabel.SUPPORTED,
                    score=1.0,
                    explanation=f"{what}: no such relation is recorded, as the negative claim says",
                )
            context = [_fact_text(*r) for m in subjects[:2] for r in self._relations_of(m.key, scene)][:5]
            return Verdict(
                label=VerdictLabel.HALLUCINATED,
                error=ErrorType.RELATION,
                score=0.0,
                evidence=context,
                explanation=(
                    f"{what}: the scene records no relation between {subjects[0].entity!r} "
                    f"and {objects[0].entity!r}"
                ),
            )
        return _Pending(
            kind=ErrorType.RELATION,
            comparisons=comparisons,
            threshold=self.relation_threshold,
            what=what,
            negative=negative,
        )

    def _edges_of(self, key: str, scene: SceneGraph) -> list[tuple[str, str, str, str, bool]]:
        """(subject name, predicate, other name, other key, reversed) for the entity's recorded relations."""
        graph = scene.graph
        if key not in graph:
            return []
        name = graph.nodes[key]["name"]
        out = [
            (name, p, graph.nodes[o]["name"], o, False)
            for o in graph.successors(key)
            for p in graph.edges[key, o]["predicates"]
        ]
        # Tri-HE's GQA-derived triplets are often stored object-first ("(shirt, wearing, man)"), so by default a
        # relation may be read in either direction -- except spatial directions, whose reverse means the
        # opposite ("left of"), and scene graphs that declare their edges directed (synthetic scenes).
        if not (self.directed or graph.graph.get("directed", False)):
            out += [
                (name, p, graph.nodes[s]["name"], s, True)
                for s in graph.predecessors(key)
                for p in graph.edges[s, key]["predicates"]
                if not direction_words(p)
            ]
        return out

    def _relations_of(self, key: str, scene: SceneGraph) -> list[tuple[str, str, str]]:
        return [
            (o, p, s) if reversed_ else (s, p, o) for s, p, o, _, reversed_ in self._edges_of(key, scene)
        ]


# -- helpers ------------------------------------------------------------------------------------------------


def _check_cosine(name: str, value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"typed judge option {name} must be a number, got {value!r}") from None
    if not -1.0 <= number <= 1.0:
        raise ValueError(f"typed judge option {name} must lie in [-1, 1] (a cosine), got {number}")
    return number


def _fact_text(subject: str, relation: str, obj: str) -> str:
    # Evidence in reading order: Tri-HE's stored "(shirt, wearing, man)" is shown as "(man, wearing, shirt)".
    return fact_text(None, subject, relation, obj)


def _names_frame(phrase: str) -> bool:
    words = [w for w in tokens(phrase) if w not in {"the", "this", "a", "an", "that"}]
    return len(words) == 1 and words[0] in FRAME_WORDS


#: Attributes that only say a thing is there.
_PRESENCE_WORDS = frozenset({"present", "visible", "there", "seen", "shown", "pictured", "depicted", "in view"})
#: Words of relations that place something in the picture ("visible in", "shown in", "appears in").
_EXISTENCE_WORDS = frozenset(
    {
        "exist", "existing", "exists", "visible", "present", "presenting", "shown", "seen", "pictured",
        "depicted", "featured", "appear", "appears", "appearing", "captured", "show", "shows", "showing",
        "is", "are",
    }
)


def _locative(relation: str) -> bool:
    """Whether a relation to the picture only places the subject in it ("in", "visible in", "shown in")."""
    parts = parse_relation(relation)
    if parts.prepositions & {"in", "on", "at", "within", "from"}:
        return True
    words = set(tokens(relation))
    return bool(words) and words <= _EXISTENCE_WORDS | {"in", "on", "at", "the", "this"}


def _strip_negation(phrase: str) -> str:
    return " ".join(w for w in tokens(phrase) if w not in {"no", "not", "without", "none", "never", "n't"})


def _object_list(scene: SceneGraph) -> str:
    names = sorted({n.strip().lower() for n in scene.object_names} or set(scene.entities(objects_only=True)))
    listed = ", ".join(names[:_MAX_LISTED_OBJECTS]) + (" …" if len(names) > _MAX_LISTED_OBJECTS else "")
    return f"objects in the image: {listed}" if names else "the image has no recorded objects"


def _with_support(verdict: Verdict | _Pending) -> Verdict | _Pending:
    """Fill the three-way ``support`` where a rule left it out: supported, or unverifiable by default."""
    return verdict if isinstance(verdict, _Pending) else _filled(verdict)


def _filled(verdict: Verdict) -> Verdict:
    if verdict.support is not None:
        return verdict
    if verdict.label == VerdictLabel.SUPPORTED:
        return verdict.model_copy(update={"support": Support.SUPPORTED})
    if verdict.label == VerdictLabel.HALLUCINATED:
        return verdict.model_copy(update={"support": Support.UNVERIFIABLE})
    return verdict


def _contradicts(kind: ErrorType, comparison: _Comparison) -> bool:
    """Whether a recorded fact says the opposite of the claim (not merely something else)."""
    if comparison.lexical is None or comparison.lexical > 0.0:
        return False
    if kind == ErrorType.ATTRIBUTE:
        return True  # another colour, an antonym, the opposite polarity
    claimed, recorded = parse_relation(comparison.claimed), parse_relation(comparison.recorded)
    return claimed.negative != recorded.negative or opposite_directions(comparison.claimed, comparison.recorded)


#: Head nouns that name no visual object: times, meta words, conditions, the occasion of a picture.
NON_VISUAL_NOUNS = frozenset(
    {
        "meal", "ingredient", "image", "picture", "photo", "photograph", "time", "day", "night", "weather",
        "climate", "setting", "atmosphere", "destination", "occasion", "event", "activity", "season",
        "lighting", "light", "daylight", "sunlight", "sunshine", "environment", "area", "location", "place",
        "distance", "condition", "temperature", "surroundings", "surrounding", "mood", "scene", "view",
        "background", "foreground", "context", "presence", "moment", "situation", "type", "kind", "sort",
        "variety", "style", "attire", "outfit", "color", "colour", "size", "shape", "way",
        "side", "part", "front", "back", "bottom", "middle", "center", "edge", "corner", "level",
        "amount", "number", "group", "lot", "pair", "couple", "piece", "bunch", "row", "set", "host", "air",
    }
)
#: First-sense WordNet classes of things that are often in a picture but missing from its object list.
_UNLISTED_CLASSES = {
    "location.n.01": "a place or region",
    "way.n.06": "a way or passage",
    "room.n.01": "a room",
    "area.n.05": "an area",
    "facility.n.01": "a facility",
    "establishment.n.04": "an establishment",
    "body_part.n.01": "a body part",
    "part.n.02": "a part",
    "part.n.03": "a part",
    "clothing.n.01": "clothing",
    "covering.n.02": "a covering",
    "food.n.01": "food or drink",
    "food.n.02": "food",
    "substance.n.01": "a substance",
    "substance.n.07": "stuff",
    "material.n.01": "a material",
    "phenomenon.n.01": "a phenomenon",
    "geological_formation.n.01": "a landform",
    "body_of_water.n.01": "water",
    "natural_object.n.01": "a natural object",
}


def absence_kind(matcher: NameMatcher, name: str, scene: SceneGraph) -> str:
    """``absent``, ``nonvisual`` or why an unmatched name may be present but unlisted (see ``_missing``)."""
    from halluscope.scene.names import wordnet

    head = matcher.head_noun(name)
    if head is None or head in NON_VISUAL_NOUNS or head in FRAME_WORDS:
        return "nonvisual"
    synsets = wordnet().synsets(head.replace(" ", "_"), "n")[:1]
    ancestors = {s.name() for synset in synsets for path in synset.hypernym_paths() for s in path}
    # A drawn shape ("a triangle", "a star") is visible, though WordNet files shapes under abstraction.
    if matcher.is_abstract(name) and not ancestors & {"shape.n.02", "plane_figure.n.01", "solid.n.03"}:
        return "a word WordNet reads as abstract first"  # ("ring": a sound first): not reported absent
    if _mentioned(head, scene):
        return "mentioned by a reference answer"
    for key, what in _UNLISTED_CLASSES.items():
        if key in ancestors:
            return what
    if "person.n.01" in ancestors and matcher.find_in_scene("person", scene) is not None:
        return "a person's role, and the image has people"
    related = _kin_in_scene(head, scene, matcher)
    if related is not None:
        return related
    return "absent"


def _kin_in_scene(head: str, scene: SceneGraph, matcher: NameMatcher) -> str | None:
    """A listed thing the name is a kind of, or a more general name for ("vulture" / bird, "board" /
    surfboard): the name matcher accepts only near kinds, but such a name is not an *absent* object."""
    from halluscope.scene.names import wordnet

    wn = wordnet()

    def lemmas(word: str, up: bool) -> set[str]:
        out: set[str] = set()
        for synset in wn.synsets(word.replace(" ", "_"), "n")[:1]:  # first senses: a dog is no person
            for path in synset.hypernym_paths():
                for s in path if up else [synset]:
                    out.update(name.replace("_", " ") for name in s.lemma_names())
        return out

    above = lemmas(head, True) - {"entity", "object", "whole", "physical entity", "artifact", "artefact"}
    for name in dict.fromkeys([*scene.object_names, *scene.entities(objects_only=True)]):
        listed = matcher.head_noun(name)
        if not listed or listed == head:
            continue
        if listed in above:
            return f"a kind of {listed}, which the image has"
        if head in lemmas(listed, True) - {"entity", "object", "whole", "artifact"} or (
            len(head) > 3 and listed.endswith(head)
        ):
            return f"a more general name for {listed}, which the image has"
    return None


def _mentioned(head: str, scene: SceneGraph) -> bool:
    """Whether the image's reference answers (Tri-HE's ``answer`` texts) use the word or its plural."""
    texts = scene.graph.graph.get("reference_answers") or []
    if not texts:
        return False
    forms = "|".join(re.escape(f) for f in (head, head + "s", head + "es"))
    for text in texts:
        for found in re.finditer(rf"\b({forms})\b", text.lower()):
            before = text.lower()[: found.start()].split()[-4:]
            if not {"no", "not", "without", "absence", "lack", "neither", "nor"} & set(before):
                return True  # "no signs of spectators" does not mention spectators as present
    return False


_STATED: weakref.WeakKeyDictionary[SceneGraph, tuple[int, frozenset[tuple[str, ...]]]] = weakref.WeakKeyDictionary()


def _stated(claim: Claim, scene: SceneGraph) -> bool:
    """Whether the claim is one of the scene's reference facts (normalised; the set is cached per scene)."""
    cached = _STATED.get(scene)
    if cached is None or cached[0] != len(scene.reference_claims):
        facts = frozenset(tuple(normalise_name(p) for p in ref.as_tuple()) for ref in scene.reference_claims)
        cached = (len(scene.reference_claims), facts)
        _STATED[scene] = cached
    return tuple(normalise_name(p) for p in claim.as_tuple()) in cached[1]


__all__ = ["DEFAULT_ATTRIBUTE_THRESHOLD", "DEFAULT_RELATION_THRESHOLD", "TypedJudge"]
