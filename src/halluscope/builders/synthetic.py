"""Synthetic scenes whose every fact is known: the ground truth for calibrating the instrument itself.

Real benchmarks rest on human-annotated scene graphs, which miss facts and hold a few wrong ones, so a
judge's error cannot be told from an annotation gap. Here every image is drawn from its scene graph: a few
flat objects (ball, box, triangle, star, cup, ring, bowl, table), each with a colour and a size, placed so
that the spatial relations between them are true *by construction*. The layout puts objects into groups
(a single object; one object resting on another; one floating above another; one partly hiding another)
and lines the groups up left to right with either a small or a wide gap. Relations are then read back
from the geometry by strict rules (:func:`relation_truth`), each giving one of three answers:

- true — the relation holds with a clear margin (stored in the scene graph);
- false — it clearly does not hold (stored as ``false_relations``: the simulators and the Reefknot-kind
  negatives draw their falsehoods from these, so no "false" statement is arguably true);
- undecided — borderline (e.g. whether two objects far apart on different heights are "next to" each
  other); such statements are never asked about and never used as errors.

Output folder (``halluscope build synthetic --out DIR``)::

    DIR/images/<image_id>.jpg        rendered images (JPEG, quality 95, no chroma subsampling)
    DIR/scenes.json                  per image: objects with kind, colour, size, box, drawing layer and
                                     visible fraction; true relations; clearly false relations
    DIR/questions.json               open questions (Tri-HE kind) with their answers and the triplets
                                     each answer rests on
    DIR/tri-he.json                  the same questions in the official Tri-HE layout (so Tri-HE tools,
                                     halluscope's ``tri-he`` benchmark included, read the folder as is)
    DIR/reefknot/YESNO.jsonl         Reefknot-kind items in the official Reefknot layout: yes/no twins
    DIR/reefknot/Multichoice.jsonl   (a true relation, then the same pair with a clearly false one),
    DIR/reefknot/VQA.jsonl           4-way multiple choice (letters balanced), templated VQA

Image ids are ``syn<index>`` (``syn00000``, ...); question ids ``<image_id>-<question index>`` as in
Tri-HE. Every image is drawn from its own random stream derived from (seed, index), so the same seed gives
the same bytes, and the first k images of a build with ``--n 100`` equal a build with ``--n k``.
"""

from __future__ import annotations

import itertools
import json
import random
import shutil
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from halluscope.builders.render import COLOURS, Shape, object_mask, render_image
from halluscope.jsonio import loads_json
from halluscope.scene.graph import SceneGraph

FORMAT = "halluscope-synthetic"
FORMAT_VERSION = 1

WIDTH = 512
HEIGHT = 384
HORIZON = 150

#: The spatial relations the builder decides, in the words the scene graph and the questions use.
RELATIONS = (
    "to the left of",
    "to the right of",
    "above",
    "below",
    "on",
    "next to",
    "in front of",
    "behind",
)
SIZES = ("small", "large")
SIZE_RANGES = {"small": (40, 52), "large": (84, 100)}


@dataclass(frozen=True)
class Kind:
    """An object kind: its height/width ratio and the roles its shape allows."""

    name: str
    aspect: float
    #: Has a flat top that another object can rest on.
    support: bool = False
    #: May be drawn hanging in the air (everything but furniture).
    floats: bool = True
    #: May take part in an occlusion pair (not the table: its legs leave holes).
    overlaps: bool = True
    #: May be the front of an occlusion pair (not the ring: its hole shows what is behind).
    front: bool = True


KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Kind("ball", 1.0),
        Kind("box", 0.92, support=True),
        Kind("triangle", 0.86),
        Kind("star", 0.95),
        Kind("cup", 0.82),
        Kind("ring", 1.0, front=False),
        Kind("bowl", 0.5),
        Kind("table", 0.62, support=True, floats=False, overlaps=False),
    )
}


class SyntheticDataError(ValueError):
    """A synthetic folder is missing, incomplete or not one this version can read."""


class SceneObject(BaseModel):
    """One drawn object. ``box`` is ``[x0, y0, x1, y1]`` in pixels (x1, y1 exclusive), y growing downwards."""

    name: str
    kind: str
    colour: str
    size: str
    box: tuple[int, int, int, int]
    #: Drawing order: an object covers every object with a lower layer that it overlaps.
    layer: int
    #: The layout group it was placed in (objects of one group may touch or overlap; groups never do).
    group: int
    #: Fraction of its own pixels left visible after later objects were drawn over it.
    visible: float = 1.0

    @property
    def cx(self) -> float:
        return (self.box[0] + self.box[2]) / 2

    @property
    def cy(self) -> float:
        return (self.box[1] + self.box[3]) / 2

    @property
    def width(self) -> int:
        return self.box[2] - self.box[0]

    @property
    def height(self) -> int:
        return self.box[3] - self.box[1]

    def shape(self) -> Shape:
        return Shape(kind=self.kind, colour=self.colour, box=self.box)


Triple = tuple[str, str, str]


class SyntheticScene(BaseModel):
    """One image's complete ground truth."""

    image_id: str
    image: str
    width: int = WIDTH
    height: int = HEIGHT
    horizon: int = HORIZON
    objects: list[SceneObject]
    #: Every relation among :data:`RELATIONS` that holds, for every ordered pair of objects.
    relations: list[Triple] = Field(default_factory=list)
    #: Relations that clearly do not hold (never a borderline case).
    false_relations: list[Triple] = Field(default_factory=list)

    def object(self, name: str) -> SceneObject:
        for obj in self.objects:
            if obj.name == name:
                return obj
        raise KeyError(f"{self.image_id} has no object {name!r}")

    def attribute_triples(self) -> list[Triple]:
        return [t for o in self.objects for t in ((o.name, "is", o.colour), (o.name, "is", o.size))]

    def graph(self) -> SceneGraph:
        """The scene graph the judges check against; clearly false relations ride along as graph data."""
        graph = SceneGraph.from_triplets(
            [*self.attribute_triples(), *self.relations],
            objects=[o.name for o in self.objects],
            image_id=self.image_id,
        )
        graph.graph.graph["false_relations"] = [list(t) for t in self.false_relations]
        graph.graph.graph["source"] = FORMAT
        # Every relation is stored in its true direction (and its converse stored too), unlike GQA-derived
        # graphs whose triplets are sometimes reversed: a judge may rely on direction here.
        graph.graph.graph["directed"] = True
        return graph


class SyntheticQuestion(BaseModel):
    """An open question whose reference answer rests exactly on ``triplets``."""

    id: str
    image_id: str
    index: int
    template: str
    question: str
    answer: str
    triplets: list[Triple]


# -- geometry: when does a relation hold? --------------------------------------------------------------

#: Pixel margins of the rules below. Layouts keep clear of them, so the rules never sit on a knife edge.
GAP = 8
CONTACT = 2
NEAR = 40
FAR = 120


def _h_overlap(a: SceneObject, b: SceneObject) -> int:
    return min(a.box[2], b.box[2]) - max(a.box[0], b.box[0])


def _v_overlap(a: SceneObject, b: SceneObject) -> int:
    return min(a.box[3], b.box[3]) - max(a.box[1], b.box[1])


def _x_gap(a: SceneObject, b: SceneObject) -> int:
    """Horizontal empty space between the two boxes (negative when they overlap in x)."""
    return max(b.box[0] - a.box[2], a.box[0] - b.box[2])


def _intersection_area(a: SceneObject, b: SceneObject) -> int:
    return max(0, _h_overlap(a, b)) * max(0, _v_overlap(a, b))


def relation_truth(relation: str, a: SceneObject, b: SceneObject) -> bool | None:
    """Whether ``a <relation> b`` holds (True), clearly does not (False), or is borderline (None).

    The rules, on bounding boxes (y grows downwards) and drawing layers:

    - *to the left of*: true if ``a`` ends at least 8 px before ``b`` starts; false if ``b`` ends 8 px
      before ``a`` starts. *to the right of* mirrors it.
    - *above*: true if ``a``'s bottom is at or over ``b``'s top (2 px tolerance for contact) and they
      overlap horizontally by half the narrower width; false if ``a``'s bottom is 8 px lower than
      ``b``'s bottom or ``a`` lies wholly under ``b``. *below* mirrors it.
    - *on*: true if ``a``'s bottom touches ``b``'s flat top (box, table) within 2 px, with ``a``'s centre
      over ``b``; false if the boxes are 8 px apart sideways, ``a``'s bottom is not above ``b``'s bottom,
      or ``a`` hangs 12 px or more above ``b``.
    - *next to*: true if 4–40 px apart sideways with a vertical overlap of half the lower height; false if
      120 px or more apart sideways.
    - *in front of*: true if the boxes overlap by 5 % of the smaller area, ``a`` is drawn over ``b`` and
      stands at least 8 px lower (nearer the viewer); false if the same holds the other way. *behind*
      mirrors it.
    """
    if relation == "to the left of":
        if b.box[0] - a.box[2] >= GAP:
            return True
        return False if a.box[0] - b.box[2] >= GAP else None
    if relation == "to the right of":
        return relation_truth("to the left of", b, a)
    if relation == "above":
        if a.box[3] <= b.box[1] + CONTACT and _h_overlap(a, b) >= 0.5 * min(a.width, b.width):
            return True
        return False if a.box[3] >= b.box[3] + GAP or a.box[1] >= b.box[3] - CONTACT else None
    if relation == "below":
        if b.box[3] <= a.box[1] + CONTACT and _h_overlap(a, b) >= 0.5 * min(a.width, b.width):
            return True
        return False if a.box[1] <= b.box[1] - GAP or a.box[3] <= b.box[1] + CONTACT else None
    if relation == "on":
        if (KINDS[b.kind].support and abs(a.box[3] - b.box[1]) <= CONTACT and b.box[0] <= a.cx <= b.box[2]
                and a.layer > b.layer):
            return True
        floating = a.box[3] <= b.box[1] - 12 and _h_overlap(a, b) > 0
        return False if _x_gap(a, b) >= GAP or a.box[3] >= b.box[3] - CONTACT or floating else None
    if relation == "next to":
        gap = _x_gap(a, b)
        if 4 <= gap <= NEAR and _v_overlap(a, b) >= 0.5 * min(a.height, b.height):
            return True
        return False if gap >= FAR else None
    if relation in ("in front of", "behind"):
        front, back = (a, b) if relation == "in front of" else (b, a)
        overlapping = _intersection_area(a, b) >= 0.05 * min(a.width * a.height, b.width * b.height)
        if overlapping and front.layer > back.layer and front.box[3] >= back.box[3] + GAP:
            return True
        if overlapping and back.layer > front.layer and back.box[3] >= front.box[3] + GAP:
            return False
        return None
    raise ValueError(f"unknown synthetic relation {relation!r}; choose one of: {', '.join(RELATIONS)}")


def decide_relations(objects: Sequence[SceneObject]) -> tuple[list[Triple], list[Triple]]:
    """All true and all clearly false relations among the objects, in a stable order."""
    true: list[Triple] = []
    false: list[Triple] = []
    for a in objects:
        for b in objects:
            if a is b:
                continue
            for relation in RELATIONS:
                verdict = relation_truth(relation, a, b)
                if verdict is True:
                    true.append((a.name, relation, b.name))
                elif verdict is False:
                    false.append((a.name, relation, b.name))
    return true, false


# -- layout ---------------------------------------------------------------------------------------------

GroupType = Literal["single", "stack", "float", "overlap"]


class _NoFit(Exception):
    """The drawn groups are too wide for the canvas; the caller lays the scene out again."""


@dataclass
class _Placed:
    kind: str
    colour: str
    size: str
    x0: int
    y0: int
    w: int
    h: int
    layer: int


def _dims(kind: str, size: str, rng: random.Random) -> tuple[int, int]:
    low, high = SIZE_RANGES[size]
    w = rng.randint(low, high)
    if kind == "table":
        w = round(w * 1.25)
    return w, max(12, round(w * KINDS[kind].aspect))


def _plan_groups(rng: random.Random, n: int) -> list[GroupType]:
    groups: list[GroupType] = []
    remaining = n
    while remaining > 0:
        must_pair = len(groups) + remaining > 4
        if remaining >= 2 and (must_pair or rng.random() < 0.55):
            groups.append(rng.choice(["stack", "float", "overlap"]))
            remaining -= 2
        else:
            groups.append("single")
            remaining -= 1
    rng.shuffle(groups)
    return groups


def _pick_kind(rng: random.Random, free: list[str], allowed: Any) -> str | None:
    options = [k for k in free if allowed(KINDS[k])]
    if not options:
        return None
    choice = rng.choice(options)
    free.remove(choice)
    return choice


def _assign_kinds(rng: random.Random, plan: list[GroupType]) -> list[tuple[GroupType, list[str]]]:
    """Kinds for each group's members (first member drawn first), honouring what each shape allows."""
    free = sorted(KINDS)
    rng.shuffle(free)
    order = sorted(range(len(plan)), key=lambda i: ["stack", "overlap", "float", "single"].index(plan[i]))
    members: dict[int, tuple[GroupType, list[str]]] = {}
    for i in order:
        kind = plan[i]
        if kind == "stack":
            base = _pick_kind(rng, free, lambda k: k.support)
            top = _pick_kind(rng, free, lambda k: k.floats) if base else None
            if base and top:
                members[i] = ("stack", [base, top])
                continue
            for leftover in (base, top):
                if leftover:
                    free.append(leftover)
        elif kind == "overlap":
            back = _pick_kind(rng, free, lambda k: k.overlaps)
            front = _pick_kind(rng, free, lambda k: k.overlaps and k.front) if back else None
            if back and front:
                members[i] = ("overlap", [back, front])
                continue
            for leftover in (back, front):
                if leftover:
                    free.append(leftover)
        elif kind == "float":
            bottom = _pick_kind(rng, free, lambda k: True)
            top = _pick_kind(rng, free, lambda k: k.floats) if bottom else None
            if bottom and top:
                members[i] = ("float", [bottom, top])
                continue
            for leftover in (bottom, top):
                if leftover:
                    free.append(leftover)
        single = _pick_kind(rng, free, lambda k: True)
        if single is None:
            raise RuntimeError("ran out of object kinds while laying out a synthetic scene")
        members[i] = ("single", [single])
    return [members[i] for i in range(len(plan))]


def _colours(rng: random.Random, count: int) -> list[str]:
    """Colours for one group's members; members of a group never share a colour (occlusion must show)."""
    names = sorted(COLOURS)
    first = rng.choice(names)
    chosen = [first]
    while len(chosen) < count:
        chosen.append(rng.choice([c for c in names if c not in chosen]))
    return chosen


def _build_group(rng: random.Random, group: GroupType, kinds: list[str]) -> list[_Placed]:
    """Members placed relative to the group's ground line (y = 0 is the lowest base), x from 0."""
    colours = _colours(rng, len(kinds))
    if group == "single":
        size = rng.choice(SIZES)
        w, h = _dims(kinds[0], size, rng)
        return [_Placed(kinds[0], colours[0], size, 0, -h, w, h, 0)]
    if group == "stack":
        base_w, base_h = _dims(kinds[0], "large", rng)
        top_w, top_h = _dims(kinds[1], "small", rng)
        slack = (base_w - top_w) // 2
        offset = rng.randint(-int(slack * 0.6), int(slack * 0.6)) if slack > 0 else 0
        top_x = (base_w - top_w) // 2 + offset
        return [
            _Placed(kinds[0], colours[0], "large", 0, -base_h, base_w, base_h, 0),
            _Placed(kinds[1], colours[1], "small", top_x, -base_h - top_h, top_w, top_h, 1),
        ]
    if group == "float":
        bottom_size, top_size = rng.choice(SIZES), rng.choice(SIZES)
        bw, bh = _dims(kinds[0], bottom_size, rng)
        tw, th = _dims(kinds[1], top_size, rng)
        shift = rng.randint(-int(0.2 * min(bw, tw)), int(0.2 * min(bw, tw)))
        top_x = (bw - tw) // 2 + shift
        gap = rng.randint(28, 56)
        placed = [
            _Placed(kinds[0], colours[0], bottom_size, 0, -bh, bw, bh, 0),
            _Placed(kinds[1], colours[1], top_size, top_x, -bh - gap - th, tw, th, 1),
        ]
        return _normalise_x(placed)
    # overlap: the back object is large; the front one stands lower and covers part of it
    back_w, back_h = _dims(kinds[0], "large", rng)
    front_size = rng.choice(SIZES)
    fw, fh = _dims(kinds[1], front_size, rng)
    depth = rng.randint(10, max(10, min(36, int(0.45 * fh))))
    u = rng.uniform(0.4, 0.6)
    front_x = round(u * back_w) if rng.random() < 0.5 else round(back_w - u * back_w) - fw
    placed = [
        _Placed(kinds[0], colours[0], "large", 0, -back_h - depth, back_w, back_h, 0),
        _Placed(kinds[1], colours[1], front_size, front_x, -fh, fw, fh, 1),
    ]
    return _normalise_x(placed)


def _normalise_x(placed: list[_Placed]) -> list[_Placed]:
    left = min(p.x0 for p in placed)
    for p in placed:
        p.x0 -= left
    return placed


def _layout(rng: random.Random, n_objects: int) -> list[SceneObject]:
    plan = _plan_groups(rng, n_objects)
    groups = [_build_group(rng, kind, kinds) for kind, kinds in _assign_kinds(rng, plan)]
    widths = [max(p.x0 + p.w for p in g) for g in groups]
    margin = 14
    available = WIDTH - 2 * margin
    near = [rng.random() < 0.45 for _ in range(len(groups) - 1)]
    gaps = [rng.randint(12, 30) if is_near else rng.randint(FAR + 14, FAR + 80) for is_near in near]
    excess = sum(widths) + sum(gaps) - available
    if excess > 0:  # shrink wide gaps first (they may become undecided for "next to", never wrong)
        for i in sorted(range(len(gaps)), key=lambda j: -gaps[j]):
            if excess <= 0:
                break
            cut = min(excess, max(0, gaps[i] - 12))
            gaps[i] -= cut
            excess -= cut
    if excess > 0:
        raise _NoFit
    x = margin + rng.randint(0, available - (sum(widths) + sum(gaps)))

    objects: list[SceneObject] = []
    ground_prev: int | None = None
    layer = 0
    for index, (group, width) in enumerate(zip(groups, widths, strict=True)):
        below = max(p.y0 + p.h for p in group)  # how far the group reaches under its ground line
        above = -min(p.y0 for p in group)
        low = max(HORIZON + 40, above + 10)
        high = HEIGHT - 8 - below
        if ground_prev is not None and near[index - 1]:
            ground = min(high, max(low, ground_prev + rng.randint(-8, 8)))
        else:
            ground = rng.randint(low, max(low, high))
        ground_prev = ground
        for p in group:
            box = (x + p.x0, ground + p.y0, x + p.x0 + p.w, ground + p.y0 + p.h)
            objects.append(SceneObject(name=p.kind, kind=p.kind, colour=p.colour, size=p.size, box=box,
                                       layer=layer + p.layer, group=index))
        layer += 2
        if index < len(gaps):
            x += width + gaps[index]
    return objects


def _visibility(objects: list[SceneObject]) -> None:
    """Record how much of each object stays visible once everything drawn later is on top of it."""
    import numpy as np

    for obj in objects:
        hiders = [o for o in objects if o.layer > obj.layer and _intersection_area(obj, o) > 0]
        if not hiders:
            obj.visible = 1.0
            continue
        own = np.asarray(object_mask(obj.shape(), WIDTH, HEIGHT), dtype=bool)
        left = own.copy()
        for other in hiders:
            left &= ~np.asarray(object_mask(other.shape(), WIDTH, HEIGHT), dtype=bool)
        total = int(own.sum())
        obj.visible = round(int(left.sum()) / total, 3) if total else 0.0


def make_scene(seed: int, index: int, *, min_objects: int = 2, max_objects: int = 4) -> SyntheticScene:
    """The scene of image ``index`` for ``seed``: the same arguments always give the same scene."""
    if not 2 <= min_objects <= max_objects <= 5:
        raise ValueError("need 2 <= min_objects <= max_objects <= 5")
    rng = random.Random(f"halluscope-synthetic:{seed}:{index}")
    image_id = f"syn{index:05d}"
    for _attempt in range(50):
        try:
            objects = _layout(rng, rng.randint(min_objects, max_objects))
        except _NoFit:
            continue
        _visibility(objects)
        if all(o.visible >= 0.3 for o in objects):
            break
    else:  # pragma: no cover - the layout rules keep every object well visible
        raise RuntimeError(f"could not lay out {image_id} with every object visible")
    objects.sort(key=lambda o: o.layer)
    true, false = decide_relations(objects)
    return SyntheticScene(image_id=image_id, image=f"images/{image_id}.jpg", objects=objects,
                          relations=true, false_relations=false)


# -- questions ------------------------------------------------------------------------------------------

_WHAT_IS = {
    "to the left of": "What is to the left of the {o}?",
    "to the right of": "What is to the right of the {o}?",
    "above": "What is above the {o}?",
    "below": "What is below the {o}?",
    "on": "What is on the {o}?",
    "next to": "What is next to the {o}?",
    "in front of": "What is in front of the {o}?",
    "behind": "What is behind the {o}?",
}


def _listing(names: Sequence[str], article: str = "the") -> str:
    items = [f"{article} {n}" for n in names]
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " and " + items[-1]


def _sentence(text: str) -> str:
    return text[0].upper() + text[1:]


def _question_candidates(scene: SyntheticScene) -> dict[str, list[tuple[str, str, list[Triple]]]]:
    """Every question the scene supports, by template: (question, answer, supporting triplets)."""
    true = set(scene.relations)
    by_relation_object: dict[tuple[str, str], list[str]] = defaultdict(list)
    for s, r, o in scene.relations:
        by_relation_object[(r, o)].append(s)
    out: dict[str, list[tuple[str, str, list[Triple]]]] = defaultdict(list)

    for (relation, target), subjects in sorted(by_relation_object.items()):
        verb = "is" if len(subjects) == 1 else "are"
        out["what-is"].append((
            _WHAT_IS[relation].format(o=target),
            _sentence(f"{_listing(subjects)} {verb} {relation} the {target}."),
            [(s, relation, target) for s in subjects],
        ))
        if len(subjects) == 1:
            subject = scene.object(subjects[0])
            out["colour-of"].append((
                f"What colour is the object {relation} the {target}?",
                f"The object {relation} the {target} is the {subject.colour} {subject.name}.",
                [(subject.name, relation, target), (subject.name, "is", subject.colour)],
            ))

    pairs: dict[tuple[str, str], list[str]] = defaultdict(list)
    for s, r, o in scene.relations:
        pairs[(s, o)].append(r)
    for (s, o), held in sorted(pairs.items()):
        out["where"].append((
            f"Where is the {s} relative to the {o}?",
            f"The {s} is {' and '.join(held)} the {o}.",
            [(s, r, o) for r in held],
        ))

    for obj in scene.objects:
        out["looks"].append((
            f"What does the {obj.name} look like?",
            f"The {obj.name} is {obj.size} and {obj.colour}.",
            [(obj.name, "is", obj.size), (obj.name, "is", obj.colour)],
        ))

    # The whole scene: every object's looks, each group's inner relation, and the left-to-right order.
    triplets: list[Triple] = list(scene.attribute_triples())
    groups: dict[int, list[SceneObject]] = defaultdict(list)
    for obj in scene.objects:
        groups[obj.group].append(obj)
    anchors = []
    for group in sorted(groups):
        members = sorted(groups[group], key=lambda o: o.layer)
        anchors.append(members[0])
        if len(members) == 2:
            first, second = members
            for relation in ("on", "above", "in front of"):
                if (second.name, relation, first.name) in true:
                    triplets.append((second.name, relation, first.name))
                    break
    for left, right in itertools.pairwise(anchors):
        triplets.append((left.name, "to the left of", right.name))
        if (left.name, "next to", right.name) in true:
            triplets.append((left.name, "next to", right.name))
    objects = _listing([f"{o.size} {o.colour} {o.name}" for o in scene.objects], article="a")
    arrangement = " ".join(f"The {s} is {r} the {o}." for s, r, o in triplets if r != "is")
    out["describe"].append((
        "Describe the objects in this picture and how they are arranged.",
        f"The picture shows {objects}. {arrangement}".strip(),
        triplets,
    ))
    for template, items in out.items():
        for _, _, support in items:
            for fact in support:
                if fact[1] != "is" and fact not in true:  # pragma: no cover - guards the templates
                    raise AssertionError(f"template {template} would rest on a false fact {fact}")
    return out


def make_questions(scene: SyntheticScene, rng: random.Random, per_image: int) -> list[SyntheticQuestion]:
    """Up to ``per_image`` questions, templates taken in turn so each image gets a varied set."""
    candidates = _question_candidates(scene)
    templates = sorted(candidates)
    rng.shuffle(templates)
    for items in candidates.values():
        rng.shuffle(items)
    chosen: list[tuple[str, tuple[str, str, list[Triple]]]] = []
    seen: set[str] = set()
    while len(chosen) < per_image and any(candidates[t] for t in templates):
        for template in templates:
            if len(chosen) >= per_image:
                break
            while candidates[template]:
                item = candidates[template].pop()
                if item[0] not in seen:
                    seen.add(item[0])
                    chosen.append((template, item))
                    break
    return [
        SyntheticQuestion(id=f"{scene.image_id}-{i}", image_id=scene.image_id, index=i, template=template,
                          question=question, answer=answer, triplets=triplets)
        for i, (template, (question, answer, triplets)) in enumerate(chosen)
    ]


# -- Reefknot-kind items ----------------------------------------------------------------------------------

LETTERS = "ABCD"


def _reefknot_row(image_id: str, prompt: str, label: str, kind: str) -> dict[str, str]:
    return {"image_id": image_id, "query_prompt": prompt, "label": label, "type": kind, "mllm_name": "",
            "response": "", "relation_type": "perception"}


def make_reefknot(scene: SyntheticScene, rng: random.Random, per_image: int, mcq_before: int = 0
                  ) -> dict[str, list[dict[str, str]]]:
    """Yes/no twins, 4-way MCQ and VQA items for up to ``per_image`` true relations of the scene.

    Relations are taken in turn by kind (so "on" and "in front of" are asked as often as the scene
    allows, not drowned by left/right), one per object pair. Negatives and distractors are always among
    the pair's clearly false relations; an MCQ is made only where three such distractors exist, and the
    correct letter cycles A–D over the build (``mcq_before`` = MCQs made for earlier images), so every
    letter is right equally often.
    """
    false_of: dict[tuple[str, str], list[str]] = defaultdict(list)
    for s, r, o in scene.false_relations:
        false_of[(s, o)].append(r)
    by_relation: dict[str, list[Triple]] = defaultdict(list)
    for s, r, o in scene.relations:
        if false_of[(s, o)]:
            by_relation[r].append((s, r, o))
    relations = sorted(by_relation)
    rng.shuffle(relations)
    for items in by_relation.values():
        rng.shuffle(items)
    picked: list[Triple] = []
    used_pairs: set[frozenset[str]] = set()
    while len(picked) < per_image and any(by_relation[r] for r in relations):
        for relation in relations:
            if len(picked) >= per_image:
                break
            while by_relation[relation]:
                s, r, o = by_relation[relation].pop()
                if frozenset((s, o)) not in used_pairs:
                    used_pairs.add(frozenset((s, o)))
                    picked.append((s, r, o))
                    break

    out: dict[str, list[dict[str, str]]] = {"yesno": [], "mcq": [], "vqa": []}
    image_id = scene.image_id
    for s, r, o in picked:
        wrong = sorted(false_of[(s, o)])
        out["yesno"].append(_reefknot_row(
            image_id, f"Is the {s} {r} the {o} in this photo? Please answer yes or no.", "yes", "Yes/No"))
        out["yesno"].append(_reefknot_row(
            image_id, f"Is the {s} {rng.choice(wrong)} the {o} in this photo? Please answer yes or no.", "no",
            "Yes/No"))
        if len(wrong) >= 3:
            options = rng.sample(wrong, 3)
            position = (mcq_before + len(out["mcq"])) % 4
            options.insert(position, r)
            listed = " ".join(f"{LETTERS[k]}. {option}" for k, option in enumerate(options))
            out["mcq"].append(_reefknot_row(
                image_id, f"What is the relation with {s} and {o} in this photo? {listed}, please choose.",
                LETTERS[position], "Multichoice"))
        out["vqa"].append(_reefknot_row(
            image_id,
            f"What is the relation with {s} and {o} in this photo? Please answer in the following "
            f"format:{s} is <relation> {o}.",
            f"{s} is {r} {o}.", "VQA"))
    return out


# -- building a folder ------------------------------------------------------------------------------------

REEFKNOT_FILES = {"yesno": "YESNO.jsonl", "mcq": "Multichoice.jsonl", "vqa": "VQA.jsonl"}


class BuildSummary(BaseModel):
    """What a build wrote, for the CLI to print and for tests."""

    out: str
    seed: int
    images: int
    objects: int
    relations: int
    questions: int
    reefknot: dict[str, int]
    relation_counts: dict[str, int]


def _triplet_string(triple: Sequence[str]) -> str:
    return f"({triple[0]}, {triple[1]}, {triple[2]})"


def _dump(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _prepare_out(out: Path) -> None:
    if out.exists() and any(out.iterdir()) and not (out / "scenes.json").exists():
        raise SyntheticDataError(
            f"{out} is not empty and holds no synthetic build; choose an empty or new folder"
        )
    for name in ("images", "reefknot"):
        if (out / name).exists():
            shutil.rmtree(out / name)
    (out / "images").mkdir(parents=True)
    (out / "reefknot").mkdir()


def build_synthetic(
    out: Path,
    n: int,
    seed: int = 0,
    *,
    questions_per_image: int = 4,
    reefknot_per_image: int = 3,
    min_objects: int = 2,
    max_objects: int = 4,
) -> BuildSummary:
    """Render ``n`` scenes into ``out`` with their scene graphs, questions and Reefknot-kind items.

    ``out`` must be new, empty, or an earlier synthetic build (which is replaced).
    """
    if n < 1:
        raise ValueError("--n must be at least 1")
    out = Path(out)
    _prepare_out(out)
    scenes: dict[str, Any] = {}
    questions: list[dict[str, Any]] = []
    tri_he: dict[str, Any] = {}
    reefknot: dict[str, list[dict[str, str]]] = {"yesno": [], "mcq": [], "vqa": []}
    relation_counts: dict[str, int] = dict.fromkeys(RELATIONS, 0)
    for index in range(n):
        scene = make_scene(seed, index, min_objects=min_objects, max_objects=max_objects)
        image = render_image([o.shape() for o in scene.objects], scene.width, scene.height, scene.horizon)
        image.save(out / scene.image, format="JPEG", quality=95, subsampling=0)
        rng = random.Random(f"halluscope-synthetic-questions:{seed}:{index}")
        scene_questions = make_questions(scene, rng, questions_per_image)
        items = make_reefknot(scene, rng, reefknot_per_image, mcq_before=len(reefknot["mcq"]))
        for key, rows in items.items():
            reefknot[key].extend(rows)
        for _, relation, _ in scene.relations:
            relation_counts[relation] += 1
        scenes[scene.image_id] = scene.model_dump(mode="json", exclude={"image_id"})
        questions.extend(q.model_dump(mode="json") for q in scene_questions)
        facts = [*scene.attribute_triples(), *scene.relations]
        tri_he[scene.image_id] = {
            "instance": [
                {"question": q.question, "answer": q.answer,
                 "triplet": [_triplet_string(t) for t in q.triplets]}
                for q in scene_questions
            ],
            "triplets": [_triplet_string(t) for t in facts],
            "all_object": [o.name for o in scene.objects],
            "object": [o.name for o in scene.objects],
        }
    _dump(out / "scenes.json", {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "seed": seed,
        "n": n,
        "relations": list(RELATIONS),
        "kinds": sorted(KINDS),
        "colours": sorted(COLOURS),
        "sizes": list(SIZES),
        "images": scenes,
    })
    _dump(out / "questions.json", questions)
    _dump(out / "tri-he.json", tri_he)
    for key, filename in REEFKNOT_FILES.items():
        with (out / "reefknot" / filename).open("w", encoding="utf-8") as handle:
            for row in reefknot[key]:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return BuildSummary(
        out=str(out),
        seed=seed,
        images=n,
        objects=sum(len(s["objects"]) for s in scenes.values()),
        relations=sum(relation_counts.values()),
        questions=len(questions),
        reefknot={REEFKNOT_FILES[k]: len(v) for k, v in reefknot.items()},
        relation_counts=relation_counts,
    )


# -- reading a folder back --------------------------------------------------------------------------------


def load_scenes(folder: Path) -> dict[str, SyntheticScene]:
    """Image id → scene of a built folder; clear errors for a folder that is not one."""
    path = Path(folder) / "scenes.json"
    if not path.exists():
        raise SyntheticDataError(
            f"{folder} has no scenes.json; build one with `halluscope build synthetic --out {folder}`"
        )
    try:
        raw = loads_json(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise SyntheticDataError(f"{path} is not valid JSON: {error}") from error
    if raw.get("format") != FORMAT or raw.get("version") != FORMAT_VERSION:
        raise SyntheticDataError(
            f"{path} is not a {FORMAT} v{FORMAT_VERSION} file (format={raw.get('format')!r}, "
            f"version={raw.get('version')!r}); rebuild it with this version of halluscope"
        )
    scenes: dict[str, SyntheticScene] = {}
    for image_id, entry in raw["images"].items():
        try:
            scenes[image_id] = SyntheticScene.model_validate({**entry, "image_id": image_id})
        except ValueError as error:
            raise SyntheticDataError(f"{path}: image {image_id}: {error}") from error
    return scenes


def load_questions(folder: Path) -> list[SyntheticQuestion]:
    path = Path(folder) / "questions.json"
    if not path.exists():
        raise SyntheticDataError(f"{folder} has no questions.json; is it a synthetic build?")
    try:
        rows = loads_json(path.read_text(encoding="utf-8"))
        return [SyntheticQuestion.model_validate(row) for row in rows]
    except ValueError as error:
        raise SyntheticDataError(f"{path}: {error}") from error
