"""Build a Reefknot-style relation benchmark from any scene graphs.

The recipe follows the paper's construction (section 2 and the appendix's filtering rules), with halluscope's
own question wording:

1. **Triplets**: every relation of every graph whose two ends are objects of the image. Dropped, and counted
   by reason: relations that state a property or an inference ("is", "indicating"), self-evident facts
   ("cow has eyes", "person wearing shirt", "window on building"), subjects that occur more than once in
   the image (the question would not say which one), and relations the lexicon (or the optional LLM)
   cannot place in a category.
2. **Category**: perception (spatial/prepositional) or cognitive (action/state); see
   :mod:`halluscope.builders.relations`.
3. **Balance**: at most ``max_per_relation`` triplets per relation, spread over images, so that frequent
   relations ("on", "holding") do not dominate the score.
4. **Questions** from each kept triplet (s, r, o):

   - yes/no twins: "Is the s r the o …?" (label yes) and the same with r swapped for a relation r' of the
     same category that the graph does not make true for (s, o) — not a synonym, form, implication or
     inverse of anything the graph states (label no). Both are written consecutively, yes first.
   - multiple choice: r and three distractors of the same category, none true under the graph and none
     related to another option; the position of the right answer cycles evenly over A-D.
   - VQA: "What is the relation between the s and the o …? Answer in this form: s is <relation> o."
     with the label "s is r o.".

Distractors and negatives are drawn first from relations seen with the same object elsewhere in the
collection (so they are plausible), then with the same subject, then from the whole collection.

Output (:meth:`BuiltReefknot.write`): ``YESNO.jsonl``, ``Multichoice.jsonl`` and ``VQA.jsonl`` in Reefknot's
own layout (plus a ``triplet`` field and, for multiple choice, ``options``), which ``--benchmark reefknot
--data DIR`` reads like the official files; ``samples.jsonl`` (halluscope Sample records with the same ids);
and ``build.json`` (settings, counts, and the verification result).
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from halluscope.builders.relations import (
    COGNITIVE,
    NON_RELATIONS,
    PERCEPTION,
    SYMMETRIC,
    RelationClassifier,
    base_verb,
    is_animate,
    is_finite_verb,
    is_self_evident,
    lexicon_category,
    normalise_relation,
    related,
    relation_holds,
    spatial_core,
)
from halluscope.jsonio import write_jsonl_atomic
from halluscope.scene.direction import (
    STRONG,
    Reading,
    fit,
    frame,
    graph_readings,
    oriented,
    thing,
    triplet_reading,
)
from halluscope.scene.graph import SceneGraph, normalise_name

__all__ = [
    "BuildOptions",
    "BuiltReefknot",
    "Triplet",
    "build_reefknot",
    "build_reefknot_async",
    "verify_build",
]

LETTERS = (
    "A", "B", "C", "D",
)
TYPES = {"yesno": "Yes/No", "mcq": "Multichoice", "vqa": "VQA"}
FILES = {"yesno": "YESNO.jsonl", "mcq": "Multichoice.jsonl", "vqa": "VQA.jsonl"}

#: Our question wording (the official forms' content, not their text).
YES_NO_TEMPLATE = "{aux} {subject} {relation} {object} in this image? Please reply with yes or no."
MCQ_TEMPLATE = (
    "Which relation holds between {subject} and {object} in this image? A. {A} B. {B} C. {C} D. {D}. "
    "Reply with the letter of the correct option."
)
VQA_TEMPLATE = (
    "What is the relation between {subject} and {object} in this image? Answer in this form: {form}"
)

#: Spatial relations that make natural "no" twins for a spatial fact (tried before any other candidate).
CONTRASTS: dict[str, tuple[str, ...]] = {
    "on": ("under", "beside", "behind", "inside"),
    "on top of": ("under", "beside", "behind"),
    "in": ("outside", "on top of", "behind", "under"),
    "inside": ("outside", "on top of", "behind"),
    "under": ("on top of", "above", "beside"),
    "below": ("above", "on top of", "beside"),
    "beneath": ("above", "on top of", "beside"),
    "above": ("below", "under", "beside"),
    "over": ("under", "below", "beside"),
    "behind": ("in front of", "above", "under"),
    "in front of": ("behind", "above", "under"),
    "near": ("on top of", "under", "inside", "behind"),
    "next to": ("on top of", "under", "inside", "behind"),
    "beside": ("on top of", "under", "inside", "behind"),
    "by": ("on top of", "under", "inside", "behind"),
    "at": ("under", "on top of", "behind"),
    "left of": ("right of", "above", "under"),
    "right of": ("left of", "above", "under"),
    "to the left of": ("to the right of", "above", "under"),
    "to the right of": ("to the left of", "above", "under"),
    "around": ("inside", "under", "on top of"),
    "along": ("across", "under", "inside"),
    "across": ("along", "under", "inside"),
    "off": ("on", "under", "inside"),
    "outside": ("inside", "on top of", "under"),
    "with": ("without", "behind", "under"),
}
#: Proximity: true next to almost any other spatial fact ("on the table" is also "near" it).
PROXIMITY = frozenset({
    "adjacent to", "against", "alongside", "at", "beside", "besides", "by", "close to", "near", "near to",
    "nearby", "next to", "with",
})
#: Relations too often true alongside the stated one to serve as a negative or a distractor.
WEAK_FOILS = PROXIMITY | frozenset({"looking at", "watching", "facing", "touching", "looking", "of", "has",
                                    "have", "having", "in front of", "behind"})

@dataclass(frozen=True)
class Triplet:
    """One relation fact of one image, with its category."""

    image_id: str
    subject: str
    relation: str
    object: str
    category: str

    def key(self) -> tuple[str, str, str, str]:
        return (self.image_id, normalise_name(self.subject), self.relation, normalise_name(self.object))


@dataclass
class BuildOptions:
    """How to build. ``orient`` repairs triplets written object-first (Tri-HE's GQA-derived triplets)."""

    seed: int = 0
    tasks: tuple[str, ...] = ("yesno", "mcq", "vqa")
    max_per_relation: int | None = 20
    allow_repeated_subjects: bool = False
    orient: bool = False
    require_objects: bool = True

    def as_dict(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "tasks": list(self.tasks),
            "max_per_relation": self.max_per_relation,
            "allow_repeated_subjects": self.allow_repeated_subjects,
            "orient": self.orient,
            "require_objects": self.require_objects,
        }


@dataclass
class BuiltReefknot:
    """The built questions in Reefknot's layout (rows per task), the graphs they rest on, and counts."""

    rows: dict[str, list[dict[str, Any]]]
    graphs: dict[str, SceneGraph]
    stats: dict[str, Any] = field(default_factory=dict)
    options: BuildOptions = field(default_factory=BuildOptions)

    def counts(self) -> dict[str, int]:
        """``<task>/<relation_type>`` → number of questions (yes/no counts both twins)."""
        out: Counter[str] = Counter()
        for task, rows in self.rows.items():
            for row in rows:
                out[f"{task}/{row['relation_type']}"] += 1
        return dict(sorted(out.items()))

    def write(
        self, out_dir: Path, *, images: Path | None = None, source: Mapping[str, Any] | None = None
    ) -> Path:
        """Write the Reefknot-layout files, ``samples.jsonl`` and ``build.json`` into ``out_dir``."""
        from halluscope.benchmarks.reefknot import Reefknot

        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        for task, rows in self.rows.items():
            if task not in self.options.tasks:
                continue
            write_jsonl_atomic(out_dir / FILES[task], rows)
        benchmark = Reefknot(
            data=out_dir, images=images, tasks=[t for t in self.options.tasks if self.rows.get(t)]
        )
        write_jsonl_atomic(out_dir / "samples.jsonl", (s.model_dump(mode="json") for s in benchmark.samples()))
        problems = verify_build(self)
        info = {
            "builder": "halluscope.builders.reefknot",
            "source": dict(source or {}),
            "options": self.options.as_dict(),
            "counts": self.counts(),
            "stats": self.stats,
            "verification": {"problems": problems[:50], "n_problems": len(problems)},
        }
        (out_dir / "build.json").write_text(
            json.dumps(info, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        return out_dir


# -- wording -------------------------------------------------------------------------------------------------

_PLURALS = frozenset({
    "children", "clothes", "feet", "geese", "glasses", "jeans", "men", "mice", "pants", "people", "police",
    "scissors", "sheep", "shorts", "sunglasses", "teeth", "trousers", "women",
})


def _is_plural(name: str) -> bool:
    last = normalise_name(name).split()[-1] if name.strip() else ""
    if last in _PLURALS:
        return True
    return last.endswith("s") and not last.endswith(("ss", "us", "is", "ous"))


def _the(name: str) -> str:
    return name if name.lower().startswith(("the ", "a ", "an ")) else f"the {name}"


def _copula(subject: str, relation: str) -> str:
    if is_finite_verb(relation):
        return ""
    return "are" if _is_plural(subject) else "is"


def yes_no_question(subject: str, relation: str, obj: str) -> str:
    plural = _is_plural(subject)
    if is_finite_verb(relation):
        aux, relation = ("Do" if plural else "Does"), base_verb(relation)
    else:
        aux = "Are" if plural else "Is"
    return YES_NO_TEMPLATE.format(aux=aux, subject=_the(subject), relation=relation, object=_the(obj))


def mcq_question(subject: str, obj: str, options: Mapping[str, str]) -> str:
    return MCQ_TEMPLATE.format(subject=_the(subject), object=_the(obj), **options)


def vqa_question_and_label(subject: str, relation: str, obj: str) -> tuple[str, str]:
    copula = _copula(subject, relation)
    form = " ".join(p for p in (subject, copula, "<relation>", obj) if p) + "."
    label = " ".join(p for p in (subject, copula, relation, obj) if p) + "."
    return VQA_TEMPLATE.format(subject=_the(subject), object=_the(obj), form=form), label


# -- collecting triplets -------------------------------------------------------------------------------------


def _oriented_graph(graph: SceneGraph, orient: bool, stats: Counter[str]) -> SceneGraph:
    """The graph with every relation in reading order (when ``orient``), attributes kept.

    :mod:`halluscope.scene.direction` decides each relation's direction; relations whose direction cannot
    be told, or that make sense neither way ("jeans between bucket"), are left out and counted.
    """
    if not orient:
        return graph
    for reading in graph_readings(graph).values():
        if reading is Reading.UNCLEAR:
            stats["dropped_unclear_direction"] += 1
        elif reading is Reading.NONSENSE:
            stats["dropped_nonsense"] += 1
        elif reading is Reading.REVERSED:
            stats["turned_around"] += 1
    return oriented(graph, drop_unclear=True)


#: Verbs of self-propelled motion: only people, animals and vehicles (and kites, flying) do them.
MOTION = frozenset({"fly", "run", "walk", "swim", "jump", "ride", "drive", "jog", "climb", "skate", "ski", "surf",
                    "cross", "board", "chase", "crawl", "dive", "wade", "march", "race", "travel", "sail"})
#: Actions two things often do to each other at once.
MUTUAL = frozenset({"watch", "look", "face", "talk", "touch", "hug", "kiss", "play", "photograph", "greet",
                    "chase", "follow", "sniff", "stare", "smile", "interact"})


def both_directions_hold(graph: SceneGraph, subject: str, relation: str, obj: str) -> bool:
    """Whether the graph makes an asymmetric relation true both ways ("horse pulled by carriage" and
    "carriage pulled by horse"): the graph contradicts itself, so no question may rest on either."""
    core, meaning = spatial_core(relation), frame(relation)
    spatially_symmetric = not meaning.passive and core is not None and core in SYMMETRIC  # "sitting beside"
    if relation in SYMMETRIC or meaning.kind == "neutral" or spatially_symmetric:
        return False
    if frame(relation).verb in MUTUAL:
        return False  # two people may well watch, face or talk to each other
    stated_back = [normalise_relation(p) for p in graph.relations_between(obj, subject)]
    voice = frame(relation).passive
    # Only the same relation in the same voice counts: "covering" / "covered by" stated back is one fact.
    return relation_holds(graph, subject, relation, obj) and any(
        p == relation or (related(relation, p) and frame(p).passive == voice and frame(p).kind == frame(relation).kind)
        for p in stated_back
    )


#: Verbs that take no direct object: "sleeping bench" and "looking magazine" lack their preposition.
INTRANSITIVE = frozenset({"sit", "sleep", "look", "run", "lie", "stand", "rest", "lean", "wait", "stare", "smile",
                          "talk", "jump", "perch", "kneel", "crouch", "squat", "float", "swim", "nap", "lay"})


def _grammatical(relation: str) -> bool:
    """Whether "<subject> is <relation> <object>" is a sentence: not an intransitive verb without its
    preposition ("sleeping"), nor a bare base-form verb ("contain")."""
    words = relation.split()
    if len(words) != 1 or spatial_core(relation) is not None:
        return True
    meaning = frame(relation)
    if words[0].endswith("ing"):
        return meaning.verb not in INTRANSITIVE
    return not (meaning.verb == words[0] and meaning.kind not in {"none", "neutral", "support", "group", "of"})


def _candidates(
    graphs: Mapping[str, SceneGraph], options: BuildOptions, stats: Counter[str]
) -> list[tuple[str, str, str, str]]:
    """(image id, subject, relation, object) facts that may become questions, before categorising."""
    found: dict[tuple[str, str, str, str], tuple[str, str, str, str]] = {}
    for image_id in sorted(graphs):
        graph = graphs[image_id]
        objects = Counter(normalise_name(n) for n in graph.object_names)
        for relation in graph.relations():
            stats["relations_seen"] += 1
            predicate = normalise_relation(relation.predicate)
            subject, obj = relation.subject, relation.object
            if not predicate or predicate in NON_RELATIONS or predicate.split()[0] in {"not", "no", "never"}:
                stats["dropped_not_a_relation"] += 1
                continue
            s_key, o_key = normalise_name(subject), normalise_name(obj)
            if options.require_objects and objects and (s_key not in objects or o_key not in objects):
                stats["dropped_not_an_object"] += 1
                continue
            if is_self_evident(subject, predicate, obj):
                stats["dropped_self_evident"] += 1
                continue
            if not options.allow_repeated_subjects and objects.get(s_key, 1) > 1:
                stats["dropped_repeated_subject"] += 1
                continue
            if not _grammatical(predicate):
                stats["dropped_ungrammatical"] += 1  # "cat sleeping bench", "bottle contain wine"
                continue
            if options.orient and fit(subject, predicate, obj) <= -2:
                stats["dropped_nonsense"] += 1  # "face wearing scarf": wrong roles whichever way round
                continue
            if both_directions_hold(graph, subject, predicate, obj):
                stats["dropped_both_directions"] += 1
                continue
            key = (image_id, s_key, predicate, o_key)
            if key in found:
                stats["dropped_duplicate"] += 1
                continue
            found[key] = (image_id, subject, predicate, obj)
    return list(found.values())


def _balance(triplets: list[Triplet], cap: int | None, rng: random.Random) -> list[Triplet]:
    """At most ``cap`` triplets per relation, taken round-robin over images so no image dominates."""
    by_relation: dict[str, list[Triplet]] = defaultdict(list)
    for triplet in triplets:
        by_relation[triplet.relation].append(triplet)
    kept: list[Triplet] = []
    for relation in sorted(by_relation):
        items = by_relation[relation]
        rng.shuffle(items)
        if cap is None or len(items) <= cap:
            kept.extend(items)
            continue
        by_image: dict[str, list[Triplet]] = defaultdict(list)
        for item in items:
            by_image[item.image_id].append(item)
        queues = list(by_image.values())
        chosen: list[Triplet] = []
        while len(chosen) < cap:
            for queue in queues:
                if queue and len(chosen) < cap:
                    chosen.append(queue.pop())
        kept.extend(chosen)
    return sorted(kept, key=lambda t: (t.image_id, t.subject.lower(), t.relation, t.object.lower()))


# -- choosing negatives and distractors ----------------------------------------------------------------------


class _Pools:
    """Relations of each category, overall and by the objects/subjects they were seen with."""

    def __init__(self, triplets: Sequence[Triplet]) -> None:
        self.overall: dict[str, Counter[str]] = defaultdict(Counter)
        self.by_object: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
        self.by_subject: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
        #: Relation → whether it was seen with an animate subject / an inanimate one.
        self.subject_kinds: dict[str, set[bool]] = defaultdict(set)
        for t in triplets:
            self.overall[t.category][t.relation] += 1
            self.by_object[(t.category, normalise_name(t.object))][t.relation] += 1
            self.by_subject[(t.category, normalise_name(t.subject))][t.relation] += 1
            self.subject_kinds[t.relation].add(is_animate(t.subject))
        for spatial in sorted({r for rs in CONTRASTS.values() for r in rs} | set(CONTRASTS)):  # same order every run
            if lexicon_category(spatial) == PERCEPTION:
                self.overall[PERCEPTION][spatial] += 0

    def ordered(self, triplet: Triplet, rng: random.Random) -> list[str]:
        """Candidate foils for a triplet, most plausible first (each tier shuffled, frequent first)."""
        tiers: list[list[str]] = []
        if triplet.category == PERCEPTION:
            core = spatial_core(triplet.relation) or triplet.relation
            tiers.append(list(CONTRASTS.get(core, ())))
        for table in (
            self.by_object.get((triplet.category, normalise_name(triplet.object))),
            self.by_subject.get((triplet.category, normalise_name(triplet.subject))),
            self.overall.get(triplet.category),
        ):
            if table:
                names = list(table)
                rng.shuffle(names)
                names.sort(key=lambda n: -min(table[n], 5))
                tiers.append(names)
        seen: set[str] = set()
        out: list[str] = []
        for tier in tiers:
            for name in tier:
                if name not in seen and name != triplet.relation:
                    seen.add(name)
                    out.append(name)
        return out


def _usable_foil(graph: SceneGraph, triplet: Triplet, candidate: str, taken: Sequence[str]) -> bool:
    if any(related(candidate, other) for other in (triplet.relation, *taken)):
        return False
    if relation_holds(graph, triplet.subject, candidate, triplet.object):
        return False
    # The raw graph in either direction must not carry the candidate word itself.
    return all(
        normalise_relation(p) != candidate
        for p in (
            *graph.relations_between(triplet.subject, triplet.object),
            *graph.relations_between(triplet.object, triplet.subject),
        )
    )


def _weak_foil(candidate: str) -> bool:
    """Relations that often hold alongside any other (nearness, looking at): unreliable "no" answers."""
    core = spatial_core(candidate)
    return candidate in WEAK_FOILS or (core is not None and core in PROXIMITY)


def _reads_sensibly(subject: str, relation: str, obj: str) -> bool:
    """Whether "subject relation object" makes sense as written: its roles fit, and not clearly better the
    other way round."""
    reading, diff = triplet_reading(subject, relation, obj)
    if reading is Reading.NONSENSE or fit(subject, relation, obj) <= -2:
        return False
    meaning, doer = frame(relation), thing(subject)
    if meaning.kind in {"agent", "posture", "park", "cover", "hang"} and (doer.has("ground") or doer.has("fixed")):
        return False  # "Are the mountains hitting the snow?", "Is the ground standing in the snow?"
    if meaning.verb in MOTION and not (doer.animate or doer.has("vehicle") or doer.name in {"kite", "kites"}):
        return False  # "Is the rope flying in the chair?"
    if meaning.kind == "park" and not doer.has("vehicle"):
        return False  # "Is the scarf parked on the neck?"
    if meaning.kind == "grow" and not doer.has("plant"):
        return False  # "Is the vehicle growing in the parking lot?"
    active_verb = relation.split()[0].endswith("ing") and meaning.kind not in {"cover", "surround", "contain"}
    if (doer.has("ground") or doer.has("fixed")) and active_verb:
        return False  # "Is the ground jumping above the snow?"
    ground = thing(obj)
    located = meaning.kind in {"posture", "support", "hang"} and meaning.preposition not in {None, *PROXIMITY}
    if located and doer.size is not None and ground.size is not None and doer.size - ground.size >= 2:
        return False  # "Is the man standing in the finger?"
    return not (reading is Reading.REVERSED and -diff >= STRONG)


def _foils(graph: SceneGraph, triplet: Triplet, pools: _Pools, rng: random.Random, count: int) -> list[str]:
    chosen: list[str] = []
    animate = is_animate(triplet.subject)
    for candidate in pools.ordered(triplet, rng):
        if candidate not in pools.overall[triplet.category]:
            continue  # foils stay in the fact's category
        if _weak_foil(candidate):
            continue
        kinds = pools.subject_kinds.get(candidate)
        if triplet.category == COGNITIVE and kinds is not None and animate not in kinds:
            continue  # "people parked on the road": an action this kind of subject is never seen doing
        if not _reads_sensibly(triplet.subject, candidate, triplet.object):
            continue  # "Is the ground standing in the snow?", "Is the shirt holding the man?"
        if _usable_foil(graph, triplet, candidate, chosen):
            chosen.append(candidate)
            if len(chosen) == count:
                break
    return chosen


# -- the build -----------------------------------------------------------------------------------------------


def _row(task: str, triplet: Triplet, prompt: str, label: str, **extra: Any) -> dict[str, Any]:
    return {
        "image_id": triplet.image_id,
        "query_prompt": prompt,
        "label": label,
        "type": TYPES[task],
        "mllm_name": "",
        "response": "",
        "relation_type": triplet.category,
        "triplet": [triplet.subject, triplet.relation, triplet.object],
        **extra,
    }


async def build_reefknot_async(
    graphs: Mapping[str, SceneGraph],
    options: BuildOptions | None = None,
    *,
    classifier: RelationClassifier | None = None,
) -> BuiltReefknot:
    """Build the three question sets from ``graphs`` (image id → SceneGraph); see the module docstring."""
    options = options or BuildOptions()
    unknown_tasks = [t for t in options.tasks if t not in TYPES]
    if unknown_tasks:
        raise ValueError(f"unknown task(s) {unknown_tasks}; choose from yesno, mcq, vqa")
    rng = random.Random(options.seed)
    classifier = classifier or RelationClassifier()
    stats: Counter[str] = Counter()
    used_graphs = {image_id: _oriented_graph(g, options.orient, stats) for image_id, g in graphs.items()}
    raw = _candidates(used_graphs, options, stats)
    categories = await classifier.classify_many(r for _, _, r, _ in raw)
    triplets: list[Triplet] = []
    for image_id, subject, relation, obj in raw:
        category = categories.get(relation)
        if category not in (PERCEPTION, COGNITIVE):
            stats["dropped_unclassified"] += 1
            continue
        triplets.append(Triplet(image_id, subject, relation, obj, category))
    stats["candidates"] = len(triplets)
    kept = _balance(triplets, options.max_per_relation, rng)
    stats["dropped_by_balance"] = len(triplets) - len(kept)
    pools = _Pools(triplets)

    rows: dict[str, list[dict[str, Any]]] = {task: [] for task in TYPES}
    mcq_items: list[tuple[Triplet, list[str]]] = []
    for triplet in kept:
        graph = used_graphs[triplet.image_id]
        if "yesno" in options.tasks:
            negative = _foils(graph, triplet, pools, rng, 1)
            if negative:
                rows["yesno"].append(
                    _row(
                        "yesno",
                        triplet,
                        yes_no_question(triplet.subject, triplet.relation, triplet.object),
                        "yes",
                    )
                )
                rows["yesno"].append(
                    _row(
                        "yesno",
                        triplet,
                        yes_no_question(triplet.subject, negative[0], triplet.object),
                        "no",
                        asked_relation=negative[0],
                    )
                )
            else:
                stats["yesno_no_negative"] += 1
        if "mcq" in options.tasks:
            distractors = _foils(graph, triplet, pools, rng, 3)
            if len(distractors) == 3:
                mcq_items.append((triplet, distractors))
            else:
                stats["mcq_too_few_distractors"] += 1
        if "vqa" in options.tasks:
            prompt, label = vqa_question_and_label(triplet.subject, triplet.relation, triplet.object)
            rows["vqa"].append(_row("vqa", triplet, prompt, label))

    positions = [LETTERS[i % 4] for i in range(len(mcq_items))]
    rng.shuffle(positions)
    for (triplet, distractors), letter in zip(mcq_items, positions, strict=True):
        others = list(distractors)
        rng.shuffle(others)
        slots = [letter_ for letter_ in LETTERS if letter_ != letter]
        option_map = {letter: triplet.relation, **dict(zip(slots, others, strict=True))}
        option_map = {k: option_map[k] for k in LETTERS}
        rows["mcq"].append(
            _row(
                "mcq",
                triplet,
                mcq_question(triplet.subject, triplet.object, option_map),
                letter,
                options=option_map,
            )
        )

    relation_counts = Counter((t.category, t.relation) for t in kept)
    stats_out: dict[str, Any] = dict(sorted(stats.items()))
    stats_out["images"] = len(graphs)
    stats_out["images_used"] = len({t.image_id for t in kept})
    stats_out["triplets_kept"] = len(kept)
    stats_out["relations"] = {
        category: dict(
            sorted(
                ((r, n) for (c, r), n in relation_counts.items() if c == category),
                key=lambda x: (-x[1], x[0]),
            )
        )
        for category in (PERCEPTION, COGNITIVE)
    }
    stats_out["relation_words"] = {c: len(v) for c, v in stats_out["relations"].items()}
    stats_out["mcq_letters"] = dict(sorted(Counter(r["label"] for r in rows["mcq"]).items()))
    stats_out["yesno_labels"] = dict(Counter(r["label"] for r in rows["yesno"]))
    stats_out["classifier"] = classifier.identity()
    return BuiltReefknot(
        rows={t: rows[t] for t in options.tasks}, graphs=used_graphs, stats=stats_out, options=options
    )


def build_reefknot(
    graphs: Mapping[str, SceneGraph],
    options: BuildOptions | None = None,
    *,
    classifier: RelationClassifier | None = None,
) -> BuiltReefknot:
    """Synchronous :func:`build_reefknot_async` (not for use inside a running event loop)."""
    return asyncio.run(build_reefknot_async(graphs, options, classifier=classifier))


# -- verification --------------------------------------------------------------------------------------------


def verify_build(built: BuiltReefknot) -> list[str]:
    """Every rule the builder promises, checked again on its output; returns the problems (empty when sound).

    Every triplet reads the right way round (:mod:`halluscope.scene.direction`) and does not hold in both
    directions; yes/no twins alternate yes/no on one image and triplet; every positive holds under its graph and every
    negative does not (synonyms, implications and inverses included); every multiple-choice item has
    exactly one option that holds, and it is the labelled one; MCQ options are pairwise unrelated.
    """
    problems: list[str] = []
    seen: set[tuple[str, str, str, str]] = set()
    for task, rows in built.rows.items():
        for line, row in enumerate(rows):
            subject, relation, obj = row["triplet"]
            key = (row["image_id"], subject, relation, obj)
            if key in seen:
                continue
            seen.add(key)
            reading, diff = triplet_reading(subject, relation, obj)
            if reading is Reading.NONSENSE or (reading is Reading.REVERSED and -diff >= STRONG):
                problems.append(f"{task} line {line}: ({subject}, {relation}, {obj}) reads backwards or makes no sense")
            if both_directions_hold(built.graphs[row["image_id"]], subject, relation, obj):
                problems.append(f"{task} line {line}: ({subject}, {relation}, {obj}) holds in both directions")
    yes_no = built.rows.get("yesno", [])
    if len(yes_no) % 2:
        problems.append(f"yes/no: odd number of questions ({len(yes_no)})")
    for line in range(0, len(yes_no) - 1, 2):
        positive, negative = yes_no[line], yes_no[line + 1]
        if (positive["label"], negative["label"]) != ("yes", "no") or positive["triplet"] != negative[
            "triplet"
        ]:
            problems.append(f"yes/no lines {line}-{line + 1}: not a yes/no twin pair of one triplet")
            continue
        graph = built.graphs[positive["image_id"]]
        subject, relation, obj = positive["triplet"]
        if not relation_holds(graph, subject, relation, obj):
            problems.append(f"yes/no line {line}: positive ({subject}, {relation}, {obj}) does not hold")
        asked = negative.get("asked_relation", "")
        if not asked or relation_holds(graph, subject, asked, obj):
            problems.append(
                f"yes/no line {line + 1}: negative ({subject}, {asked}, {obj}) holds under the graph"
            )
    for line, row in enumerate(built.rows.get("mcq", [])):
        graph = built.graphs[row["image_id"]]
        subject, _, obj = row["triplet"]
        options = row.get("options", {})
        true = [letter for letter in LETTERS if relation_holds(graph, subject, options.get(letter, ""), obj)]
        if true != [row["label"]]:
            problems.append(f"mcq line {line}: options that hold {true}, label {row['label']}")
        values = [options.get(letter, "") for letter in LETTERS]
        for i in range(4):
            for j in range(i + 1, 4):
                if related(values[i], values[j]):
                    problems.append(
                        f"mcq line {line}: options {values[i]!r} and {values[j]!r} are near-synonyms"
                    )
    return problems
