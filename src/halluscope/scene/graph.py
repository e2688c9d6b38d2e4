"""SceneGraph: what is true of one image — its objects, their attributes, and relations between them.

It wraps a ``networkx.DiGraph`` (entities are nodes, relations are edges) behind a small, PROVE-style API
(entities, attributes of an entity, outgoing and incoming relations, subgraph, plain-text description),
so judges, builders and simulators all query ground truth the same way, whatever format it came from.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from halluscope.scene.basics import Relation, normalise_name
from halluscope.types import Claim

if TYPE_CHECKING:
    import networkx as nx

#: Relations that state a property of the subject rather than link two entities, when their object is not
#: itself an entity of the image ("laptop is black", "bus is stopped").
ATTRIBUTE_RELATIONS = frozenset({"is", "are", "is a", "was", "looks", "appears", "has color", "colored"})


@dataclass(frozen=True)
class Region:
    """A described region of the image: free text about one area, with its box when the source gives one.

    HQH hands its judge Visual Genome region descriptions ("a red car parked by the curb") rather than
    triplets; they are ground truth of a different grain, kept beside the graph instead of forced into it.
    ``box`` is (x, y, width, height) in pixels, as the source wrote it (HQH's released file repeats the
    width as the height; the numbers are kept as given).
    """

    description: str
    box: tuple[int, int, int, int] | None = None


class SceneGraph:
    """The ground truth of one image.

    Nodes are normalised entity names; each node keeps its display ``name``, a list of ``attributes``
    and whether it is a detected ``object`` of the image (as opposed to an entity that appears only as the
    object of a reference triplet, such as "illuminating room"). Edges hold a list of predicates, since two
    entities can stand in several relations at once.
    """

    def __init__(self, image_id: str | None = None) -> None:
        self.image_id = image_id
        self._graph: nx.DiGraph | None = None
        #: Object names as the source lists them, duplicates kept (GQA's ``all_object``).
        self.object_names: list[str] = []
        #: Reference facts as the source wrote them (Tri-HE's raw triplet strings), in order.
        self.reference_texts: list[str] = []
        #: Every reference fact as a (subject, relation, object) claim, in order.
        self.reference_claims: list[Claim] = []
        #: A caption of the whole image, when the source has one (HQH, PROVE).
        self.caption: str | None = None
        #: Region descriptions, when the source has them (HQH / Visual Genome).
        self.regions: list[Region] = []

    @property
    def graph(self) -> nx.DiGraph:
        """The entities and relations, made on first use.

        Why not in ``__init__``: networkx takes 0.15-0.4 s to import, and many scenes never hold an entity
        (HQH's are a caption and region descriptions), so a run that only reads those, or re-runs a finished
        run, need not import it at all.
        """
        if self._graph is None:
            import networkx

            self._graph = networkx.DiGraph()
        return self._graph

    @graph.setter
    def graph(self, value: nx.DiGraph) -> None:
        self._graph = value

    # -- building -------------------------------------------------------------------------------------

    def add_entity(self, name: str, *, is_object: bool = True) -> str:
        key = normalise_name(name)
        if not key:
            raise ValueError("an entity needs a non-empty name")
        if key in self.graph:
            if is_object:
                self.graph.nodes[key]["is_object"] = True
        else:
            self.graph.add_node(key, name=name.strip(), attributes=[], is_object=is_object)
        return key

    def add_attribute(self, entity: str, attribute: str) -> None:
        key = self.add_entity(entity)
        attrs: list[str] = self.graph.nodes[key]["attributes"]
        if attribute not in attrs:
            attrs.append(attribute)

    def add_relation(self, subject: str, predicate: str, obj: str, *, object_is_entity: bool = True) -> None:
        s = self.add_entity(subject)
        o = self.add_entity(obj, is_object=object_is_entity)
        if self.graph.has_edge(s, o):
            preds: list[str] = self.graph.edges[s, o]["predicates"]
            if predicate not in preds:
                preds.append(predicate)
        else:
            self.graph.add_edge(s, o, predicates=[predicate])

    def add_region(self, description: str, box: Sequence[int] | None = None) -> None:
        """Add one region description (blank ones are ignored; a box must have four numbers)."""
        text = " ".join(description.split())
        if not text:
            return
        if box is not None and len(box) != 4:
            raise ValueError(f"a region box needs 4 numbers (x, y, width, height), got {list(box)!r}")
        self.regions.append(Region(text, None if box is None else (int(box[0]), int(box[1]), int(box[2]), int(box[3]))))

    def add_fact(self, claim: Claim, raw_text: str | None = None) -> None:
        """Add one reference triplet: as an attribute if it states a property, else as a relation."""
        self.reference_claims.append(claim)
        if raw_text is not None and raw_text not in self.reference_texts:
            self.reference_texts.append(raw_text)
        obj_key = normalise_name(claim.object)
        known_object = obj_key in self.graph and self.graph.nodes[obj_key].get("is_object", False)
        if claim.relation.lower() in ATTRIBUTE_RELATIONS and not known_object:
            self.add_attribute(claim.subject, claim.object)
        else:
            self.add_relation(claim.subject, claim.relation, claim.object, object_is_entity=known_object)

    @classmethod
    def from_triplets(
        cls,
        triplets: Iterable[Claim | tuple[str, str, str]],
        objects: Iterable[str] = (),
        image_id: str | None = None,
    ) -> SceneGraph:
        """Build a graph from object names and (subject, relation, object) facts."""
        graph = cls(image_id=image_id)
        for name in objects:
            graph.object_names.append(name)
            graph.add_entity(name)
        for fact in triplets:
            claim = fact if isinstance(fact, Claim) else Claim.of(fact)
            graph.add_fact(claim, raw_text=f"({claim.subject}, {claim.relation}, {claim.object})")
        return graph

    # -- querying (PROVE-style API) --------------------------------------------------------------------

    def entities(self, *, objects_only: bool = False) -> list[str]:
        """Display names of the entities, in insertion order."""
        return [
            data["name"]
            for _, data in self.graph.nodes(data=True)
            if not objects_only or data.get("is_object", False)
        ]

    def has_entity(self, name: str) -> bool:
        return normalise_name(name) in self.graph

    def attributes(self, entity: str) -> list[str]:
        key = normalise_name(entity)
        if key not in self.graph:
            return []
        return list(self.graph.nodes[key]["attributes"])

    def outgoing(self, entity: str) -> list[Relation]:
        key = normalise_name(entity)
        if key not in self.graph:
            return []
        return [self._relation(key, o, p) for o in self.graph.successors(key) for p in self._preds(key, o)]

    def incoming(self, entity: str) -> list[Relation]:
        key = normalise_name(entity)
        if key not in self.graph:
            return []
        return [self._relation(s, key, p) for s in self.graph.predecessors(key) for p in self._preds(s, key)]

    def relations(self) -> list[Relation]:
        return [self._relation(s, o, p) for s, o in self.graph.edges for p in self._preds(s, o)]

    def relations_between(self, subject: str, obj: str) -> list[str]:
        s, o = normalise_name(subject), normalise_name(obj)
        if not self.graph.has_edge(s, o):
            return []
        return self._preds(s, o)

    def subgraph(self, entities: Sequence[str]) -> SceneGraph:
        """The graph restricted to the given entities and the relations among them."""
        keys = {normalise_name(e) for e in entities} & set(self.graph.nodes)
        sub = SceneGraph(image_id=self.image_id)
        sub.graph = self.graph.subgraph(keys).copy()
        sub.object_names = [n for n in self.object_names if normalise_name(n) in keys]
        sub.caption = self.caption
        sub.reference_claims = [
            c
            for c in self.reference_claims
            if normalise_name(c.subject) in keys
            and (normalise_name(c.object) in keys or c.object in self.attributes(c.subject))
        ]
        return sub

    def read_relations(self) -> list[Relation]:
        """The relations in reading order, subject first ("(shirt, wearing, man)" → man wearing shirt).

        Sources such as Tri-HE store some triplets object-first; :mod:`halluscope.scene.direction` decides
        which end is the subject from the relation's meaning, animacy, part–whole and size priors and the
        image's own majority direction. Relations that make sense neither way ("jeans between bucket") are
        left out; use this wherever a relation becomes text.
        """
        from halluscope.scene.direction import reading_relations

        return reading_relations(self)

    def describe(self) -> str:
        """A plain-text rendering, one fact per line, for prompts to text-only models and for reports.

        Relations are written in reading order (:meth:`read_relations`): "The man is wearing the shirt."
        """
        from halluscope.scene.direction import relation_sentence

        lines: list[str] = []
        if self.caption:
            lines.append(f"Caption: {self.caption}")
        objects = sorted({n for n in self.entities(objects_only=True)}, key=str.lower)
        if objects:
            lines.append("Objects: " + ", ".join(objects) + ".")
        by_subject: dict[str, list[Relation]] = {}
        for relation in self.read_relations():
            by_subject.setdefault(normalise_name(relation.subject), []).append(relation)
        for key, data in self.graph.nodes(data=True):
            if data["attributes"]:
                lines.append(f"The {data['name']} is {', '.join(data['attributes'])}.")
            for relation in by_subject.get(key, []):
                node = self.graph.nodes[normalise_name(relation.object)]
                lines.append(
                    relation_sentence(
                        relation.subject,
                        relation.predicate,
                        relation.object,
                        object_is_thing=not self.object_names or bool(node.get("is_object", True)),
                    )
                )
        if self.regions:
            lines.append("Regions:")
            lines.extend(f"- {region.description}" for region in self.regions)
        return "\n".join(lines)

    def fingerprint(self) -> str:
        """A content hash, so cached judgements are reused only against the same ground truth."""
        payload = json.dumps(
            {
                "objects": sorted(self.object_names),
                "facts": sorted(c.as_tuple() for c in self.reference_claims),
                "texts": sorted(self.reference_texts),
                # Added only when present, so fingerprints (and cached verdicts) of graphs without a
                # caption or regions stay what they were.
                **({"caption": self.caption} if self.caption else {}),
                **({"regions": [[r.description, r.box] for r in self.regions]} if self.regions else {}),
            },
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:20]

    def to_dict(self) -> dict[str, object]:
        """A JSON-friendly form (for reports and for handing to sandboxed programs)."""
        return {
            "image_id": self.image_id,
            "objects": self.entities(objects_only=True),
            "attributes": {
                d["name"]: list(d["attributes"]) for _, d in self.graph.nodes(data=True) if d["attributes"]
            },
            "relations": [[r.subject, r.predicate, r.object] for r in self.relations()],
            "caption": self.caption,
            "regions": [{"description": r.description, "box": r.box} for r in self.regions],
        }

    # -- helpers --------------------------------------------------------------------------------------

    def _preds(self, s: str, o: str) -> list[str]:
        return list(self.graph.edges[s, o]["predicates"])

    def _relation(self, s: str, o: str, predicate: str) -> Relation:
        return Relation(self.graph.nodes[s]["name"], predicate, self.graph.nodes[o]["name"])

    def __len__(self) -> int:
        return self.graph.number_of_nodes()

    def __repr__(self) -> str:
        return (
            f"SceneGraph(image_id={self.image_id!r}, entities={self.graph.number_of_nodes()}, "
            f"relations={self.graph.number_of_edges()})"
        )
