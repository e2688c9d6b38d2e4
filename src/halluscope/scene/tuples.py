"""Davidsonian-scene-graph (DSG) tuples, the unit PROVE scores with, and their place in the one scene model.

PROVE (Prabhu et al., "Trust but Verify: Programmatic VLM Evaluation in the Wild") writes what an image, a
reference answer or a model's response says as DSG tuples (Cho et al., "Davidsonian Scene Graph"), one
string each, in the form ``<category> - <subcategory> (<arguments>)``:

========================================  ============================================================
``entity - whole (dog)``                  an entity (``whole``; ``part`` for parts: "dog's fur")
``attribute - color (dog's fur, white)``  an attribute of an entity: (entity, value); subcategories
                                          color, size, shape, material, texture, type, state, ...
``relation - spatial (dog, rug, on)``     a relation: (subject, object, predicate) — object before
                                          predicate, as DSG writes it; spatial, action, part, ...
``other - count (puppies, ==4)``          a count: (entity, comparison and number)
``other - text (sign, "STOP")``           anything else, kept as written (text rendering, global
``global - (black and white photo)``      properties of the whole image, ...)
========================================  ============================================================

Parsing is lossless: :func:`parse_tuple` followed by :meth:`SceneTuple.text` gives back the string, for
every form above, in the released spacing (``", "`` between arguments, one space around the dash). Other
spacing is read too and written back canonically. Arguments may themselves contain commas — the value of
an attribute takes everything after the entity (``attribute - color (flag, red, white and blue)``), the
object of a relation everything between the subject and the last argument.

:func:`tuples_to_graph` and :func:`graph_to_tuples` convert to and from
:class:`~halluscope.scene.graph.SceneGraph`, so PROVE's image tuples become the same scene graph every judge
and builder queries, and any scene graph (Tri-HE/GQA, Visual Genome, synthetic) can be written as tuples.
The tuple kinds ride along as graph data (node ``entity_kind``, ``attribute_kinds`` and ``counts``; edge
``relation_kinds``; graph ``other_tuples``) so a round trip keeps every tuple.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

from halluscope.scene.graph import ATTRIBUTE_RELATIONS, SceneGraph, normalise_name
from halluscope.types import Claim

TupleKind = Literal["entity", "attribute", "relation", "count", "other"]


class TupleParseError(ValueError):
    """A tuple string that is not ``<category> - <subcategory> (<arguments>)``; the message quotes it."""


_TUPLE = re.compile(r"^\s*(?P<category>[A-Za-z][A-Za-z _]*?)\s*-\s*(?P<sub>[^()]*?)\s*\((?P<args>.*)\)\s*$", re.S)
_COUNT_VALUE = re.compile(r"^\s*(?P<op>==|!=|>=|<=|>|<|=)?\s*(?P<number>\d+)\s*$")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Words that make an attribute a colour, a size, a shape or a material when a graph gives no kind.
_COLOURS = _words(
    "red orange yellow green blue purple pink brown black white gray grey silver gold golden beige tan "
    "maroon navy teal turquoise cyan magenta violet cream ivory olive khaki crimson"
)
_SIZES = _words("small large big little tiny huge tall short long wide narrow thin thick giant")
_SHAPES = _words("round square rectangular circular triangular oval curved straight flat")
_MATERIALS = _words("wooden metal metallic plastic glass stone brick concrete leather paper")
_SPATIAL_WORDS = _words(
    "on in at under below above behind beside near next inside outside over beneath underneath between "
    "left right front top bottom atop against along across around among onto into by"
)


class SceneTuple(BaseModel):
    """One DSG tuple: ``category - subcategory (args...)``, with typed accessors for each kind.

    ``args`` hold the arguments as they are split for the kind: entity (name,), attribute (entity, value),
    relation (subject, object, predicate), count (entity, value); other categories split at every comma.
    """

    model_config = ConfigDict(frozen=True)

    category: str
    subcategory: str = ""
    args: tuple[str, ...]

    @field_validator("category", "subcategory")
    @classmethod
    def _spaces(cls, value: str) -> str:
        return " ".join(value.split())

    # -- constructors ------------------------------------------------------------------------------------

    @classmethod
    def entity(cls, name: str, part: bool = False) -> SceneTuple:
        return cls(category="entity", subcategory="part" if part else "whole", args=(name,))

    @classmethod
    def attribute(cls, entity: str, value: str, kind: str | None = None) -> SceneTuple:
        return cls(category="attribute", subcategory=kind or attribute_kind(value), args=(entity, value))

    @classmethod
    def relation(cls, subject: str, predicate: str, obj: str, kind: str | None = None) -> SceneTuple:
        return cls(category="relation", subcategory=kind or relation_kind(predicate), args=(subject, obj, predicate))

    @classmethod
    def count(cls, entity: str, number: int | str, op: str = "==") -> SceneTuple:
        return cls(category="other", subcategory="count", args=(entity, f"{op}{number}"))

    # -- reading ---------------------------------------------------------------------------------------

    @property
    def kind(self) -> TupleKind:
        if self.category == "entity":
            return "entity"
        if self.category == "attribute":
            return "attribute"
        if self.category == "relation":
            return "relation"
        if self.subcategory == "count":
            return "count"
        return "other"

    @property
    def subject(self) -> str:
        """The entity the tuple is about (the subject of a relation; the whole text of an ``other``)."""
        return self.args[0]

    @property
    def value(self) -> str | None:
        """An attribute's value or a count's comparison ("==4"); None for other kinds."""
        return self.args[1] if self.kind in ("attribute", "count") and len(self.args) > 1 else None

    @property
    def predicate(self) -> str | None:
        return self.args[2] if self.kind == "relation" else None

    @property
    def object(self) -> str | None:
        return self.args[1] if self.kind == "relation" else None

    @property
    def number(self) -> tuple[str, int] | None:
        """A count's (comparison, number), e.g. ("==", 4); None if the tuple is not a readable count."""
        if self.kind != "count" or self.value is None:
            return None
        match = _COUNT_VALUE.match(self.value)
        if not match:
            return None
        return (match["op"] or "==", int(match["number"]))

    def text(self) -> str:
        """The tuple as PROVE writes it: ``category - subcategory (a, b, c)``."""
        head = f"{self.category} - {self.subcategory}" if self.subcategory else f"{self.category} -"
        return f"{head} ({', '.join(self.args)})"

    def phrase(self) -> str:
        """The tuple as plain words, the form halluscope embeds by default ("dog on rug", "4 puppies")."""
        if self.kind == "relation":
            return f"{self.args[0]} {self.args[2]} {self.args[1]}"
        if self.kind == "count":
            parsed = self.number
            if parsed is not None and parsed[0] == "==":
                return f"{parsed[1]} {self.args[0]}"
            return f"{self.args[0]} {' '.join(self.args[1:])}"
        return " ".join(self.args)

    def claim(self) -> Claim | None:
        """The tuple as a (subject, relation, object) claim; None for bare entities and other tuples."""
        if self.kind == "attribute":
            return Claim(subject=self.args[0], relation="is", object=self.args[1])
        if self.kind == "relation":
            return Claim(subject=self.args[0], relation=self.args[2], object=self.args[1])
        if self.kind == "count":
            return Claim(subject=self.args[0], relation="count", object=self.args[1])
        return None

    def __str__(self) -> str:
        return self.text()


def _split_args(category: str, subcategory: str, body: str, original: str) -> tuple[str, ...]:
    parts = [p.strip() for p in body.split(",")]
    if category == "entity":
        name = ", ".join(parts)
        if not name:
            raise TupleParseError(f"entity tuple with no name: {original!r}")
        return (name,)
    if category == "attribute" or (category == "other" and subcategory == "count"):
        if len(parts) < 2 or not parts[0] or not ", ".join(parts[1:]):
            what = "count" if category == "other" else "attribute"
            raise TupleParseError(f"{what} tuple needs (entity, value): {original!r}")
        return (parts[0], ", ".join(parts[1:]))
    if category == "relation":
        if len(parts) < 3 or not parts[0] or not parts[-1] or not ", ".join(parts[1:-1]):
            raise TupleParseError(f"relation tuple needs (subject, object, predicate): {original!r}")
        return (parts[0], ", ".join(parts[1:-1]), parts[-1])
    if not body.strip():
        raise TupleParseError(f"tuple with no arguments: {original!r}")
    return tuple(parts)


def parse_tuple(text: str) -> SceneTuple:
    """Read one tuple string; :class:`TupleParseError` names the string when it is malformed."""
    if not isinstance(text, str):
        raise TupleParseError(f"a tuple must be a string, got {type(text).__name__}: {text!r}")
    match = _TUPLE.match(text)
    if not match:
        raise TupleParseError(
            f"not a DSG tuple ('<category> - <subcategory> (<arguments>)'): {text!r}"
        )
    category = " ".join(match["category"].lower().split())
    subcategory = " ".join(match["sub"].split())
    args = _split_args(category, subcategory, match["args"], text)
    return SceneTuple(category=category, subcategory=subcategory, args=args)


def parse_tuples(texts: Iterable[str], *, where: str = "") -> list[SceneTuple]:
    """Read many tuple strings; the error names the position (and ``where``, e.g. an item id) of a bad one."""
    out: list[SceneTuple] = []
    for index, text in enumerate(texts):
        try:
            out.append(parse_tuple(text))
        except TupleParseError as error:
            prefix = f"{where}: " if where else ""
            raise TupleParseError(f"{prefix}tuple {index}: {error}") from None
    return out


def attribute_kind(value: str) -> str:
    """The DSG attribute subcategory of a value when no source gave one (colour, size, ...; else state)."""
    words = set(value.lower().replace("-", " ").split())
    for kind, lexicon in (("color", _COLOURS), ("size", _SIZES), ("shape", _SHAPES), ("material", _MATERIALS)):
        if words & lexicon:
            return kind
    return "state"


def relation_kind(predicate: str) -> str:
    """``spatial`` for prepositional relations ("on", "next to", "in front of"), else ``action``."""
    words = predicate.lower().split()
    if words and words[0] in {"is", "are"}:
        words = words[1:]
    if words[:2] == ["to", "the"]:  # "to the left of"
        words = words[2:]
    return "spatial" if words and words[0] in _SPATIAL_WORDS else "action"


# -- SceneGraph <-> tuples ---------------------------------------------------------------------------------


def tuples_to_graph(
    tuples: Sequence[SceneTuple | str], *, image_id: str | None = None, caption: str | None = None
) -> SceneGraph:
    """A scene graph holding every tuple: entities as nodes, attributes and counts on them, relations as edges.

    The graph's ``reference_texts`` are the tuple strings (in order) and its ``reference_claims`` the
    attribute, relation and count tuples as claims, so claim-level judges can use a PROVE graph too.
    """
    parsed = [t if isinstance(t, SceneTuple) else parse_tuple(t) for t in tuples]
    graph = SceneGraph(image_id=image_id)
    graph.caption = caption
    other: list[str] = []
    for item in parsed:
        graph.reference_texts.append(item.text())
        claim = item.claim()
        if claim is not None:
            graph.reference_claims.append(claim)
        if item.kind == "entity":
            key = graph.add_entity(item.args[0])
            graph.graph.nodes[key]["entity_kind"] = item.subcategory
        elif item.kind == "attribute":
            graph.add_attribute(item.args[0], item.args[1])
            kinds = graph.graph.nodes[normalise_name(item.args[0])].setdefault("attribute_kinds", {})
            kinds[item.args[1]] = item.subcategory
        elif item.kind == "relation":
            graph.add_relation(item.args[0], item.args[2], item.args[1])
            edge = graph.graph.edges[normalise_name(item.args[0]), normalise_name(item.args[1])]
            edge.setdefault("relation_kinds", {})[item.args[2]] = item.subcategory
        elif item.kind == "count":
            key = graph.add_entity(item.args[0])
            counts: list[str] = graph.graph.nodes[key].setdefault("counts", [])
            if item.args[1] not in counts:
                counts.append(item.args[1])
        else:
            if item.text() not in other:
                other.append(item.text())
    graph.graph.graph["other_tuples"] = other
    graph.graph.graph["source"] = "dsg-tuples"
    return graph


def graph_to_tuples(graph: SceneGraph) -> list[SceneTuple]:
    """Every fact of a scene graph as tuples: per entity its entity, attribute and count tuples, then relations.

    Kinds recorded by :func:`tuples_to_graph` are used; for graphs from other sources they are inferred
    (:func:`attribute_kind`, :func:`relation_kind`; every node is a ``whole`` entity). Counts recorded by
    :func:`tuples_to_graph` are used; otherwise a name the source lists more than once among its objects
    (GQA's ``all_object``: "man", "man") gets ``other - count (man, ==2)``.
    """
    out: list[SceneTuple] = []
    g = graph.graph
    listed = Counter(normalise_name(n) for n in graph.object_names)
    for key, data in g.nodes(data=True):
        name = data["name"]
        out.append(SceneTuple(category="entity", subcategory=data.get("entity_kind", "whole"), args=(name,)))
        kinds = data.get("attribute_kinds", {})
        for value in data["attributes"]:
            out.append(SceneTuple.attribute(name, value, kinds.get(value)))
        for value in data.get("counts", []):
            out.append(SceneTuple(category="other", subcategory="count", args=(name, value)))
        if "counts" not in data and listed[key] > 1:
            out.append(SceneTuple.count(name, listed[key]))
    for s, o, data in g.edges(data=True):
        kinds = data.get("relation_kinds", {})
        for predicate in data["predicates"]:
            out.append(SceneTuple.relation(g.nodes[s]["name"], predicate, g.nodes[o]["name"], kinds.get(predicate)))
    out.extend(parse_tuple(t) for t in g.graph.get("other_tuples", []))
    return list(dict.fromkeys(out))


_ARTICLES = frozenset({"the", "a", "an"})


def fact_key(item: SceneTuple) -> tuple[str, tuple[str, ...]]:
    """What a tuple states, without its wording's accidents: the kind and the arguments lower-cased, single
    spaced, leading articles dropped. The subcategory is left out ("relation - spatial (cat, dog, beside)"
    and "relation - action (cat, dog, beside)" state the same fact), so two extractions of the same fact
    compare equal even when the extractor labels them differently."""

    def norm(text: str) -> str:
        words = text.lower().split()
        while len(words) > 1 and words[0] in _ARTICLES:
            words = words[1:]
        return " ".join(words)

    return item.kind, tuple(norm(a) for a in item.args)


def subtract_tuples(answer: Iterable[SceneTuple], question: Iterable[SceneTuple]) -> list[SceneTuple]:
    """PROVE's g(A) − g(Q): the answer's tuples whose fact (:func:`fact_key`) the question does not already
    state — the "premise" tuples a question gives away are not something a response must recover. Order
    and the answer's own wording are kept; repeats are dropped."""
    asked = {fact_key(t) for t in question}
    out: list[SceneTuple] = []
    seen: set[tuple[str, tuple[str, ...]]] = set()
    for item in answer:
        key = fact_key(item)
        if key not in asked and key not in seen:
            seen.add(key)
            out.append(item)
    return out


def claims_to_tuples(claims: Iterable[Claim], graph: SceneGraph | None = None) -> list[SceneTuple]:
    """(subject, relation, object) claims as tuples: entity tuples for what they name, then the facts.

    A claim is an attribute when its relation states a property ("is", "has color") and its object is not
    an entity of ``graph`` (when one is given); otherwise a relation.
    """
    out: list[SceneTuple] = []
    for claim in claims:
        out.append(SceneTuple.entity(claim.subject))
        is_entity = graph is not None and graph.has_entity(claim.object)
        if claim.relation.lower() in ATTRIBUTE_RELATIONS and not is_entity:
            out.append(SceneTuple.attribute(claim.subject, claim.object))
        else:
            out.append(SceneTuple.entity(claim.object))
            out.append(SceneTuple.relation(claim.subject, claim.relation, claim.object))
    # Entities first, as DSG lists them, each once.
    entities = [t for t in out if t.kind == "entity"]
    return list(dict.fromkeys([*entities, *(t for t in out if t.kind != "entity")]))


__all__ = [
    "SceneTuple",
    "TupleKind",
    "TupleParseError",
    "attribute_kind",
    "claims_to_tuples",
    "fact_key",
    "graph_to_tuples",
    "parse_tuple",
    "parse_tuples",
    "relation_kind",
    "subtract_tuples",
    "tuples_to_graph",
]
