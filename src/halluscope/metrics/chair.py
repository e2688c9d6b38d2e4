"""CHAIR: how many of the objects a caption mentions are not in the image.

Rohrbach et al., "Object Hallucination in Image Captioning" (EMNLP 2018). Two numbers over a set of captions:

- CHAIR_i (instance) = hallucinated object mentions / all object mentions;
- CHAIR_s (sentence) = captions with at least one hallucinated mention / captions.

A *mention* is a word of the caption that names an object class; each class has synonyms, so "man", "kid" and
"people" all mention ``person``. A mention is hallucinated when its class is not among the image's annotated
objects. This module is the reusable core: AMBER's generative CHAIR is the instance ratio over its own
vocabulary (:mod:`halluscope.metrics.amber`), COCO CHAIR as Rohrbach et al.'s evaluator computes it is
:mod:`halluscope.metrics.chair_coco` (the ``chair`` benchmark); all three count with :class:`ChairTally`.
:class:`CocoObjects` is a lighter stand-in that needs only COCO instance annotations
(``instances_val2014.json``), with a synonym table in halluscope's own words covering the 80 COCO classes
(extend it with ``extra_synonyms``); it is not the published CHAIR (see docs/chair.md).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from halluscope.jsonio import loads_json

__all__ = [
    "COCO_SYNONYMS", "ChairResult", "ChairTally", "CocoObjects", "chair_ratio", "chair_scores", "find_mentions",
]

#: COCO class → words that name it (the class name itself is always included).
COCO_SYNONYMS: dict[str, tuple[str, ...]] = {
    "person": ("man", "woman", "men", "women", "people", "boy", "girl", "child", "children", "kid", "guy",
               "lady", "player", "skier", "surfer", "rider", "persons", "adult", "baby", "toddler"),
    "bicycle": ("bike", "cycle"), "car": ("automobile", "sedan", "taxi"), "motorcycle": ("motorbike", "scooter"),
    "airplane": ("plane", "jet", "aircraft", "airliner"), "bus": ("coach",), "train": ("locomotive",),
    "truck": ("pickup", "lorry"), "boat": ("ship", "canoe", "kayak", "sailboat"),
    "traffic light": ("stoplight", "traffic signal"), "fire hydrant": ("hydrant",), "stop sign": (),
    "parking meter": ("meter",), "bench": (), "bird": ("pigeon", "seagull", "duck", "parrot"), "cat": ("kitten",),
    "dog": ("puppy",), "horse": ("pony",), "sheep": ("lamb",), "cow": ("cattle", "calf", "bull"),
    "elephant": (), "bear": (), "zebra": (), "giraffe": (), "backpack": (), "umbrella": ("parasol",),
    "handbag": ("purse",), "tie": ("necktie",), "suitcase": ("luggage",), "frisbee": (), "skis": ("ski",),
    "snowboard": (), "sports ball": ("ball", "football", "soccer ball", "baseball", "basketball"),
    "kite": (), "baseball bat": ("bat",), "baseball glove": ("glove", "mitt"), "skateboard": (),
    "surfboard": ("board",), "tennis racket": ("racket", "racquet"), "bottle": (), "wine glass": ("glass",),
    "cup": ("mug",), "fork": (), "knife": (), "spoon": (), "bowl": (), "banana": (), "apple": (),
    "sandwich": ("burger", "sub"), "orange": (), "broccoli": (), "carrot": (), "hot dog": ("hotdog",),
    "pizza": (), "donut": ("doughnut",), "cake": ("cupcake",), "chair": ("stool",), "couch": ("sofa",),
    "potted plant": ("plant", "houseplant"), "bed": (), "dining table": ("table", "desk"), "toilet": (),
    "tv": ("television", "monitor"), "laptop": ("computer", "notebook"), "mouse": (), "remote": ("controller",),
    "keyboard": (), "cell phone": ("phone", "cellphone", "smartphone"), "microwave": (), "oven": ("stove",),
    "toaster": (), "sink": (), "refrigerator": ("fridge",), "book": (), "clock": (), "vase": (),
    "scissors": (), "teddy bear": ("teddy",), "hair drier": ("hair dryer", "hairdryer"), "toothbrush": (),
}


def _word_index(synonyms: Mapping[str, Iterable[str]]) -> dict[str, str]:
    index: dict[str, str] = {}
    for cls, words in synonyms.items():
        for word in (cls, *words):
            index.setdefault(word.lower(), cls)
    return index


def find_mentions(text: str, synonyms: Mapping[str, Iterable[str]] = COCO_SYNONYMS) -> list[str]:
    """Object classes mentioned in ``text``, one entry per mention, longest phrase first ("hot dog" wins
    over "dog"). Words are matched lower-cased, with a plural "s"/"es" allowed."""
    index = _word_index(synonyms)
    longest = max((len(w.split()) for w in index), default=1)
    tokens = ["".join(ch for ch in t.lower() if ch.isalnum() or ch == "-") for t in text.split()]
    mentions, i = [], 0
    while i < len(tokens):
        for size in range(min(longest, len(tokens) - i), 0, -1):
            phrase = " ".join(tokens[i : i + size])
            candidates = (
                phrase,
                phrase[:-1] if phrase.endswith("s") else "",
                phrase[:-2] if phrase.endswith("es") else "",
                phrase[:-3] + "y" if phrase.endswith("ies") else "",
            )
            cls = next((index[c] for c in candidates if c and c in index), None)
            if cls is not None:
                mentions.append(cls)
                i += size
                break
        else:
            i += 1
    return mentions


def chair_ratio(hallucinated: float, mentions: float, *, start: float = 0.0) -> float | None:
    """The instance ratio ×100; ``start`` is added to the denominator (AMBER's counters start at 0.001)."""
    denominator = mentions + start
    return 100.0 * hallucinated / denominator if denominator else None


@dataclass
class ChairTally:
    """CHAIR's counting, shared by every CHAIR halluscope computes (COCO's ``-b chair``, AMBER's generative
    CHAIR, :func:`chair_scores`): each caption adds its object mentions and how many were hallucinated.

    CHAIR_i = hallucinated mentions / mentions; CHAIR_s = captions with a hallucinated mention / captions;
    both ×100. A mention repeated in a caption counts each time, as in chair.py.
    """

    captions: int = 0
    hallucinated_captions: int = 0
    mentions: int = 0
    hallucinated: int = 0

    def add(self, mentions: int, hallucinated: int) -> None:
        self.captions += 1
        self.mentions += mentions
        self.hallucinated += hallucinated
        self.hallucinated_captions += hallucinated > 0

    def chair_i(self, *, start: float = 0.0) -> float | None:
        return chair_ratio(self.hallucinated, self.mentions, start=start)

    def chair_s(self) -> float | None:
        return chair_ratio(self.hallucinated_captions, self.captions)


@dataclass
class ChairResult:
    chair_i: float | None
    chair_s: float | None
    mentions: int
    hallucinated: int
    captions: int
    per_caption: list[list[str]] = field(default_factory=list)


def chair_scores(mentions: Sequence[Sequence[str]], present: Sequence[Iterable[str]]) -> ChairResult:
    """CHAIR_i and CHAIR_s (0–100) of captions given their mentioned classes and each image's objects."""
    if len(mentions) != len(present):
        raise ValueError(f"{len(mentions)} captions but {len(present)} object sets")
    tally = ChairTally()
    per_caption: list[list[str]] = []
    for found, objects in zip(mentions, present, strict=True):
        allowed = set(objects)
        wrong = [m for m in found if m not in allowed]
        per_caption.append(wrong)
        tally.add(len(found), len(wrong))
    return ChairResult(
        chair_i=tally.chair_i(),
        chair_s=tally.chair_s(),
        mentions=tally.mentions,
        hallucinated=tally.hallucinated,
        captions=tally.captions,
        per_caption=per_caption,
    )


class CocoObjects:
    """The object classes annotated in each image of a COCO ``instances_*.json`` file."""

    def __init__(self, objects: Mapping[int, set[str]], synonyms: Mapping[str, Iterable[str]]) -> None:
        self.objects = dict(objects)
        self.synonyms = dict(synonyms)

    @classmethod
    def from_annotations(
        cls, path: Path, extra_synonyms: Mapping[str, Iterable[str]] | None = None
    ) -> CocoObjects:
        try:
            data = loads_json(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as error:
            raise ValueError(f"cannot read COCO annotations {path}: {error}") from error
        for key in ("categories", "annotations"):
            if key not in data:
                raise ValueError(f"{path} is not a COCO instances file: no {key!r}")
        names = {c["id"]: c["name"] for c in data["categories"]}
        objects: dict[int, set[str]] = {int(img["id"]): set() for img in data.get("images", [])}
        for index, note in enumerate(data["annotations"]):
            if note.get("category_id") not in names or "image_id" not in note:
                raise ValueError(f"{path} annotation {index}: unknown category_id or no image_id")
            objects.setdefault(int(note["image_id"]), set()).add(names[note["category_id"]])
        synonyms = {**{n: COCO_SYNONYMS.get(n, ()) for n in names.values()}, **(extra_synonyms or {})}
        return cls(objects, synonyms)

    def score(self, captions: Mapping[int, str]) -> ChairResult:
        """CHAIR of ``{image_id: caption}``; an image id missing from the annotations is an error naming it."""
        missing = [i for i in captions if i not in self.objects]
        if missing:
            raise ValueError(f"no COCO annotations for image id(s) {missing[:10]}")
        ids = list(captions)
        return chair_scores([find_mentions(captions[i], self.synonyms) for i in ids],
                            [self.objects[i] for i in ids])
