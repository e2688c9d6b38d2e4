"""Readers for GQA and Visual Genome scene-graph files, into :class:`~halluscope.scene.graph.SceneGraph`.

Shapes read (as the official downloads ship them):

- GQA ``train_sceneGraphs.json`` / ``val_sceneGraphs.json``: an object keyed by image id; each image has
  ``objects`` keyed by object id, each object ``{"name", "attributes": [...], "relations": [{"name",
  "object": <object id>}]}`` — the relation is stated on its subject.
- Visual Genome ``relationships.json``: a list of ``{"image_id", "relationships": [{"predicate",
  "subject": {"object_id", "name" | "names"}, "object": {...}}]}``; optionally with ``objects.json``
  (``{"image_id", "objects": [{"object_id", "names"}]}``) for objects outside any relation and
  ``attributes.json`` (``{"image_id", "attributes": [{"object_id", "names", "attributes"}]}``).
- Visual Genome ``scene_graphs.json``: a list of ``{"image_id", "objects": [...], "relationships":
  [{"predicate", "subject_id", "object_id"}]}`` (objects may carry ``attributes``).

Every object instance is listed in ``SceneGraph.object_names`` (so two "man" objects show as two names —
builders use this to avoid questions whose subject is ambiguous); relations and attributes become graph
edges and node attributes, and each one is also kept as a reference claim. Predicates are lower-cased and
single-spaced (VG has "ON" and "on", "next  to"). Whole files are read into memory: Visual Genome's
``relationships.json`` needs a few GB; pass ``image_ids`` or ``limit`` to keep only some images.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from halluscope.jsonio import loads_json
from halluscope.scene.graph import SceneGraph
from halluscope.types import Claim

__all__ = [
    "SceneGraphFormatError",
    "load_gqa_scene_graphs",
    "load_vg_scene_graphs",
    "scene_from_gqa",
]


class SceneGraphFormatError(ValueError):
    """A scene-graph file does not have the expected shape; the message names the file and the image."""


def _clean(text: Any) -> str:
    return " ".join(str(text).split())


def _predicate(text: Any) -> str:
    return _clean(text).lower()


def _name(obj: Mapping[str, Any]) -> str | None:
    """An object's name: ``name``, else the first of ``names``."""
    if isinstance(obj.get("name"), str) and obj["name"].strip():
        return _clean(obj["name"])
    names = obj.get("names")
    if isinstance(names, list) and names and isinstance(names[0], str) and names[0].strip():
        return _clean(names[0])
    return None


def _add_relation(graph: SceneGraph, subject: str, predicate: str, obj: str) -> None:
    graph.add_relation(subject, predicate, obj)
    graph.reference_claims.append(Claim(subject=subject, relation=predicate, object=obj))
    graph.reference_texts.append(f"({subject}, {predicate}, {obj})")


def _add_attribute(graph: SceneGraph, entity: str, attribute: str) -> None:
    graph.add_attribute(entity, attribute)
    graph.reference_claims.append(Claim(subject=entity, relation="is", object=attribute))
    graph.reference_texts.append(f"({entity}, is, {attribute})")


def _read_json(path: Path) -> Any:
    try:
        with Path(path).open(encoding="utf-8") as handle:
            return loads_json(handle.read())
    except FileNotFoundError as error:
        raise SceneGraphFormatError(f"scene-graph file not found: {path}") from error
    except json.JSONDecodeError as error:
        raise SceneGraphFormatError(f"{path} is not valid JSON: {error}") from error


def _wanted(image_ids: Iterable[str] | None) -> set[str] | None:
    return None if image_ids is None else {str(i) for i in image_ids}


# -- GQA -----------------------------------------------------------------------------------------------------


def scene_from_gqa(image_id: str, entry: Mapping[str, Any], *, where: str = "") -> SceneGraph:
    """One GQA image entry → SceneGraph."""
    objects = entry.get("objects")
    if not isinstance(objects, Mapping):
        raise SceneGraphFormatError(
            f"{where}image {image_id}: 'objects' must be an object keyed by object id"
        )
    graph = SceneGraph(image_id=str(image_id))
    names: dict[str, str] = {}
    for object_id, obj in objects.items():
        if not isinstance(obj, Mapping):
            raise SceneGraphFormatError(f"{where}image {image_id} object {object_id}: expected an object")
        name = _name(obj)
        if name is None:
            raise SceneGraphFormatError(f"{where}image {image_id} object {object_id}: no 'name'")
        names[str(object_id)] = name
        graph.object_names.append(name)
        graph.add_entity(name)
    for object_id, obj in objects.items():
        subject = names[str(object_id)]
        for attribute in obj.get("attributes", []) or []:
            if isinstance(attribute, str) and attribute.strip():
                _add_attribute(graph, subject, _clean(attribute))
        for relation in obj.get("relations", []) or []:
            if not isinstance(relation, Mapping):
                continue
            target = names.get(str(relation.get("object")))
            predicate = _predicate(relation.get("name", ""))
            if target is None:
                raise SceneGraphFormatError(
                    f"{where}image {image_id} object {object_id}: relation {predicate!r} points to unknown "
                    f"object {relation.get('object')!r}"
                )
            if predicate:
                _add_relation(graph, subject, predicate, target)
    return graph


def load_gqa_scene_graphs(
    path: Path, *, image_ids: Iterable[str] | None = None, limit: int | None = None
) -> dict[str, SceneGraph]:
    """Image id → SceneGraph from a GQA ``*_sceneGraphs.json`` file."""
    raw = _read_json(path)
    if not isinstance(raw, Mapping):
        raise SceneGraphFormatError(f"{path}: a GQA scene-graph file is an object keyed by image id")
    wanted = _wanted(image_ids)
    graphs: dict[str, SceneGraph] = {}
    for image_id, entry in raw.items():
        if wanted is not None and str(image_id) not in wanted:
            continue
        if limit is not None and len(graphs) >= limit:
            break
        if not isinstance(entry, Mapping):
            raise SceneGraphFormatError(f"{path.name}: image {image_id}: expected an object")
        graphs[str(image_id)] = scene_from_gqa(str(image_id), entry, where=f"{path.name}: ")
    return graphs


# -- Visual Genome -------------------------------------------------------------------------------------------


def _by_image(raw: Any, path: Path, wanted: set[str] | None) -> dict[str, Mapping[str, Any]]:
    if not isinstance(raw, list):
        raise SceneGraphFormatError(f"{path}: a Visual Genome file is a list of per-image entries")
    out: dict[str, Mapping[str, Any]] = {}
    for position, entry in enumerate(raw):
        if not isinstance(entry, Mapping) or "image_id" not in entry:
            raise SceneGraphFormatError(f"{path.name} entry {position}: expected an object with 'image_id'")
        image_id = str(entry["image_id"])
        if wanted is None or image_id in wanted:
            out[image_id] = entry
    return out


class _VGImage:
    """Collects one image's objects (by id), then its attributes and relations."""

    def __init__(self, image_id: str) -> None:
        self.graph = SceneGraph(image_id=image_id)
        self.names: dict[str, str] = {}

    def object(self, obj: Mapping[str, Any], where: str) -> str | None:
        name = _name(obj)
        object_id = obj.get("object_id", obj.get("id"))
        if name is None:
            return None
        key = str(object_id) if object_id is not None else f"anon:{name}:{len(self.names)}"
        if key not in self.names:
            self.names[key] = name
            self.graph.object_names.append(name)
            self.graph.add_entity(name)
        return self.names[key]


def load_vg_scene_graphs(
    path: Path,
    *,
    objects: Path | None = None,
    attributes: Path | None = None,
    image_ids: Iterable[str] | None = None,
    limit: int | None = None,
) -> dict[str, SceneGraph]:
    """Image id → SceneGraph from Visual Genome files.

    ``path`` is ``relationships.json``, ``scene_graphs.json``, or a folder holding them (``objects.json`` and
    ``attributes.json`` next to ``relationships.json`` are picked up from the same folder).
    """
    path = Path(path)
    if path.is_dir():
        folder = path
        if (folder / "relationships.json").exists():
            path = folder / "relationships.json"
        elif (folder / "scene_graphs.json").exists():
            path = folder / "scene_graphs.json"
        else:
            raise SceneGraphFormatError(f"{folder} holds neither relationships.json nor scene_graphs.json")
        if objects is None and (folder / "objects.json").exists():
            objects = folder / "objects.json"
        if attributes is None and (folder / "attributes.json").exists():
            attributes = folder / "attributes.json"
    wanted = _wanted(image_ids)
    entries = _by_image(_read_json(path), path, wanted)
    if limit is not None:
        entries = dict(list(entries.items())[:limit])
    images = {image_id: _VGImage(image_id) for image_id in entries}

    def each(extra: Path | None) -> Iterable[tuple[_VGImage, Mapping[str, Any]]]:
        if extra is None:
            return []
        rows = _by_image(_read_json(extra), extra, set(images))
        return [(images[i], rows[i]) for i in images if i in rows]

    # Objects first, so isolated objects and duplicate names are recorded in the source's order.
    for image, entry in each(objects):
        for obj in entry.get("objects", []) or []:
            if isinstance(obj, Mapping):
                image.object(obj, objects.name if objects else "")
    for image_id, entry in entries.items():
        image = images[image_id]
        where = f"{path.name}: image {image_id}"
        scene_objects = entry.get("objects")
        by_id: dict[str, Mapping[str, Any]] = {}
        if isinstance(scene_objects, list):  # scene_graphs.json
            for obj in scene_objects:
                if isinstance(obj, Mapping):
                    image.object(obj, where)
                    by_id[str(obj.get("object_id", obj.get("id")))] = obj
                    name = _name(obj)
                    for attribute in obj.get("attributes", []) or []:
                        if name and isinstance(attribute, str) and attribute.strip():
                            _add_attribute(image.graph, name, _clean(attribute))
        relationships = entry.get("relationships")
        if not isinstance(relationships, list):
            raise SceneGraphFormatError(f"{where}: 'relationships' must be a list")
        for relation in relationships:
            if not isinstance(relation, Mapping):
                continue
            predicate = _predicate(relation.get("predicate", ""))
            if isinstance(relation.get("subject"), Mapping):
                subject = image.object(relation["subject"], where)
                target = (
                    image.object(relation["object"], where)
                    if isinstance(relation.get("object"), Mapping)
                    else None
                )
            else:
                subject_obj = by_id.get(str(relation.get("subject_id")))
                object_obj = by_id.get(str(relation.get("object_id")))
                subject = image.object(subject_obj, where) if subject_obj else None
                target = image.object(object_obj, where) if object_obj else None
            if subject and target and predicate:
                _add_relation(image.graph, subject, predicate, target)
    for image, entry in each(attributes):
        for obj in entry.get("attributes", []) or []:
            if not isinstance(obj, Mapping):
                continue
            name = image.object(obj, attributes.name if attributes else "")
            for attribute in obj.get("attributes", []) or []:
                if name and isinstance(attribute, str) and attribute.strip():
                    _add_attribute(image.graph, name, _clean(attribute))
    return {image_id: image.graph for image_id, image in images.items()}
