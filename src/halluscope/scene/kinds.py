"""What the things named in a scene graph are, as far as reading a relation's direction needs.

Animacy (people and animals, from a lexicon and WordNet's first physical sense: "batter" is a person,
"blinds" a covering, "mouse" near a laptop a device), coarse size classes from WordNet hypernyms (land and
roads, buildings, vehicles, furniture and people, animals, clothing and devices, small things), a few kinds
that relations care about (garments, body parts, the ground, coverings, marks on surfaces, reflectors,
things that hang, plants), and part–whole pairs (WordNet part holonyms plus a short list: "window" /
building). :mod:`halluscope.scene.direction` scores triplet readings with them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from halluscope.scene.basics import normalise_name
from halluscope.scene.names import PLURALIA_TANTUM, default_matcher, wordnet

__all__ = ["ANIMALS", "PEOPLE", "Thing", "is_animate", "part_of", "thing"]

# fmt: off

#: People and animals named by words WordNet files elsewhere ("people" is a group, "batter" a food).
PEOPLE: frozenset[str] = frozenset({
    "adult", "adults", "athlete", "audience", "baby", "baseball player", "batter", "biker", "boy", "boys",
    "bride", "catcher", "chef", "child", "children", "cook", "couple", "crowd", "customer", "customers",
    "cyclist", "dad", "daughter", "doctor", "driver", "family", "fan", "fans", "father", "girl", "girls",
    "groom", "guy", "guys", "he", "individual", "infant", "kid", "kids", "ladies", "lady", "man", "men",
    "mom", "mother", "officer", "passenger", "passengers", "pedestrian", "pedestrians", "people", "person",
    "pitcher", "player", "players", "police officer", "policeman", "rider", "riders", "she",
    "skateboarder", "skater", "skier", "skiers", "snowboarder", "soccer player", "soldier", "soldiers",
    "someone", "son", "spectator", "spectators", "student", "students", "surfer", "surfers", "teacher",
    "teen", "teenager", "tennis player", "toddler", "tourist", "tourists", "umpire", "vendor", "woman",
    "women", "worker", "team", "onlookers", "hiker", "jockey", "fielder", "referee",
})
ANIMALS: frozenset[str] = frozenset({
    "animal", "animals", "bear", "bears", "bird", "birds", "bull", "calf", "cat", "cats", "chicken", "cow",
    "cows", "deer", "dog", "dogs", "duck", "ducks", "elephant", "elephants", "geese", "giraffe", "giraffes",
    "goat", "goats", "goose", "gull", "horse", "horses", "kitten", "lamb", "monkey", "parrot", "pig",
    "pigeon", "pigeons", "polar bear", "puppy", "seagull", "sheep", "swan", "zebra", "zebras", "herd",
    "flock", "cattle", "pony", "foal",
})
#: Head words that are never people or animals in a scene graph, whatever WordNet's first sense says.
INANIMATE: frozenset[str] = frozenset({
    "mouse", "computer mouse", "blind", "blinds", "crane", "bat", "kite", "seal", "jack", "tie", "bow",
    "glasses", "speaker", "monitor", "trunk", "figure", "statue", "doll", "teddy bear", "stuffed animal",
    "toy", "mannequin", "model", "poster", "picture", "painting", "drawing", "photo", "photograph", "shadow",
    "reflection", "image", "cow statue", "horse statue",
})
#: Things that wear clothes without being animate.
WEARERS: frozenset[str] = frozenset({
    "statue", "mannequin", "doll", "teddy bear", "stuffed animal", "snowman", "figure", "bear",
})
#: Land, water, roads and the surfaces of rooms: the ground that things stand on; never on anything.
GROUND_WORDS: frozenset[str] = frozenset({
    "ground", "floor", "street", "road", "sidewalk", "pavement", "field", "grass", "lawn", "sky", "beach",
    "sand", "water", "ocean", "sea", "lake", "river", "snow", "dirt", "hill", "mountain", "mountains", "hillside",
    "ceiling", "wall", "walls", "roof", "yard", "park", "runway", "track", "tracks", "platform", "court",
    "tennis court", "shore", "pond", "path", "trail", "parking lot", "lot", "area", "air", "train tracks",
    "railroad", "highway", "crosswalk", "walkway", "driveway", "pasture", "slope", "waves", "wave", "ice",
    "deck", "dock", "pier", "land", "countryside", "meadow", "forest", "woods", "background", "city",
    "intersection", "bridge", "building", "buildings", "house", "tower", "church", "stadium", "station",
})
#: Substances and coverings: what covers, fills or is piled on things.
COVER_WORDS: frozenset[str] = frozenset({
    "snow", "water", "sand", "dirt", "mud", "grass", "ice", "dust", "frosting", "icing", "sauce", "cheese",
    "toppings", "topping", "blanket", "sheet", "sheets", "towel", "cloth", "tablecloth", "tarp", "lid",
    "cover", "roof", "umbrella", "canopy", "awning", "curtain", "curtains", "blinds", "shade", "mask",
    "paint", "graffiti", "leaves", "moss", "clouds", "cloud", "fog", "tape", "paper", "wrapper", "foil",
    "plastic", "stickers", "sticker", "magnets", "magnet", "frost", "rust",
})
#: Marks made on surfaces.
SYMBOL_WORDS: frozenset[str] = frozenset({
    "letter", "letters", "logo", "word", "words", "writing", "text", "number", "numbers",
    "design", "pattern", "picture", "pictures", "drawing", "image", "graffiti", "sticker", "stickers",
    "label", "arrow", "arrows", "stripe", "stripes", "name", "symbol", "print", "decal", "emblem", "poster",
    "flower design", "painting", "advertisement", "ad", "banner", "mural", "photo",
})
#: What reflects: the object of "reflected in".
REFLECTORS: frozenset[str] = frozenset({
    "mirror", "water", "window", "windows", "glass", "puddle", "screen", "lake", "river", "pond", "ocean",
    "sea", "surface", "reflection", "windshield", "television", "tv", "monitor",
})
#: Things that typically hang.
HANGERS: frozenset[str] = frozenset({
    "lamp", "light", "lights", "chandelier", "sign", "clock", "picture", "painting", "poster", "flag",
    "curtain", "curtains", "banner", "towel", "coat", "jacket", "shirt", "clothes", "bag", "purse", "rope",
    "wire", "wires", "cable", "cord", "leaves", "branch", "branches", "fruit", "bananas", "ornament",
    "decoration", "mirror", "television", "tv", "kite", "umbrella", "net", "basket", "plant",
    "lantern", "bell", "string", "chain", "strap", "key", "keys", "traffic light", "street light",
})
#: Words WordNet sizes badly: head word → coarse size class.
SIZE_OVERRIDES: dict[str, int] = {
    "plate": 2, "post": 4, "pole": 4, "light": 2, "lid": 1, "tag": 1, "logo": 1, "letter": 1, "sign": 3,
    "kite": 2, "mirror": 3, "picture": 2, "shelf": 3, "cabinet": 4, "counter": 4, "table": 4, "window": 4,
    "door": 4, "wall": 6, "fence": 5, "bridge": 6, "tree": 5, "trees": 5, "snow": 7, "water": 7,
    "grass": 7, "sky": 8, "skateboard": 2, "surfboard": 3, "snowboard": 2, "skis": 2, "ski": 2, "bat": 1,
    "racket": 2, "frisbee": 1, "ball": 1, "umbrella": 3, "blanket": 3, "towel": 2, "leaves": 1, "branch": 3,
    "branches": 3, "bush": 4, "bushes": 4, "plant": 3, "flower": 1, "flowers": 1, "bag": 2, "luggage": 3,
    "suitcase": 3, "cart": 4, "stroller": 4, "carriage": 5, "wagon": 5, "trailer": 5, "train": 6,
    "building": 6, "house": 6, "tower": 6, "lamp": 2, "clock": 2, "mountain": 8, "hill": 8, "pizza": 2,
    "cake": 2, "sandwich": 1, "food": 1, "shirt": 2, "jacket": 2, "coat": 2, "hat": 2, "helmet": 2,
    "bench": 4, "chair": 4, "couch": 4, "bed": 4, "desk": 4, "sink": 3, "toilet": 3, "bowl": 2, "cup": 1,
    "mug": 1, "glass": 1, "bottle": 1, "phone": 1, "cell phone": 1, "remote": 1, "laptop": 2, "keyboard": 2,
    "screen": 3, "monitor": 3, "television": 3, "tv": 3, "pillow": 2, "vase": 2, "book": 1, "books": 2,
    "box": 2, "basket": 2, "tray": 2, "blinds": 3, "curtain": 3, "curtains": 3, "poster": 2, "rope": 2,
    "magnet": 1, "magnets": 1, "refrigerator": 4, "fridge": 4, "oven": 4, "stove": 4, "boat": 5, "car": 5,
    "bus": 6, "truck": 6, "bike": 4, "bicycle": 4, "motorcycle": 4, "scooter": 4, "airplane": 6, "plane": 6,
    "elephant": 5, "elephants": 5, "giraffe": 5, "horse": 4, "cow": 4, "dog": 3, "cat": 3, "bird": 2,
    "person": 4, "people": 4, "man": 4, "woman": 4, "child": 3, "boy": 3, "girl": 3, "baby": 2,
}
#: Ordered WordNet classes → (coarse size, tag). The first class in a thing's hypernyms wins.
CLASSES: tuple[tuple[str, int | None, str], ...] = (
    ("person.n.01", 4, "person"),
    ("elephant.n.01", 5, "animal"), ("giraffe.n.01", 5, "animal"), ("equine.n.01", 4, "animal"),
    ("bovid.n.01", 4, "animal"), ("bear.n.01", 4, "animal"), ("bird.n.01", 2, "animal"),
    ("animal.n.01", 3, "animal"),
    ("aircraft.n.01", 6, "vehicle"), ("train.n.01", 6, "vehicle"), ("vessel.n.02", 5, "vehicle"),
    ("bicycle.n.01", 4, "vehicle"), ("motorcycle.n.01", 4, "vehicle"), ("self-propelled_vehicle.n.01", 5,
                                                                          "vehicle"),
    ("wheeled_vehicle.n.01", 4, "vehicle"), ("vehicle.n.01", 5, "vehicle"), ("conveyance.n.03", 5, "vehicle"),
    ("geological_formation.n.01", 8, "ground"), ("body_of_water.n.01", 8, "ground"), ("land.n.04", 8, "ground"),
    ("land.n.01", 8, "ground"), ("thoroughfare.n.01", 7, "ground"), ("way.n.06", 7, "ground"),
    ("tract.n.01", 7, "ground"), ("sky.n.01", 8, "ground"), ("surface.n.01", 6, "ground"),
    ("building.n.01", 6, "fixed"), ("room.n.01", 6, "fixed"),
    ("woody_plant.n.01", 5, "plant"), ("plant_part.n.01", 1, "plant"), ("plant.n.02", 3, "plant"),
    ("body_part.n.01", 2, "body"),
    ("clothing.n.01", 2, "garment"), ("headdress.n.01", 2, "garment"), ("footwear.n.01", 2, "garment"),
    ("footwear.n.02", 2, "garment"), ("jewelry.n.01", 1, "garment"), ("spectacles.n.01", 1, "garment"),
    ("protective_garment.n.01", 2, "garment"), ("glove.n.02", 1, "garment"), ("bag.n.04", 2, "garment"),
    ("backpack.n.01", 2, "garment"), ("watch.n.01", 1, "garment"), ("helmet.n.02", 2, "garment"),
    ("helmet.n.01", 2, "garment"),
    ("structure.n.01", 5, "structure"), ("furniture.n.01", 4, "furniture"), ("home_appliance.n.01", 4, ""),
    ("food.n.01", 1, "food"), ("food.n.02", 1, "food"),
    ("covering.n.02", 3, "cover"),
    ("utensil.n.01", 1, ""), ("tableware.n.01", 2, ""), ("container.n.01", 2, "container"),
    ("implement.n.01", 2, ""), ("device.n.01", 2, ""), ("equipment.n.01", 2, ""),
)
# fmt: on

_PHYSICAL = "physical_entity.n.01"
_CLASS_NAMES = {name for name, _, _ in CLASSES}


@dataclass(frozen=True)
class Thing:
    """What a scene-graph name denotes, as far as direction needs: its kind, coarse size and WordNet senses."""

    name: str
    head: str
    animate: bool
    tags: frozenset[str]
    size: int | None
    senses: tuple[str, ...]
    group: bool

    def has(self, tag: str) -> bool:
        return tag in self.tags


def _physical_sense(head: str) -> object | None:
    wn = wordnet()
    synsets = wn.synsets(head.replace(" ", "_"), "n")[:4]
    for synset in synsets:
        if any(_PHYSICAL in {s.name() for s in path} for path in synset.hypernym_paths()):
            return synset
    return None


@lru_cache(maxsize=65536)
def _closure(synset_name: str) -> frozenset[str]:
    synset = wordnet().synset(synset_name)
    return frozenset(s.name() for path in synset.hypernym_paths() for s in path)


@lru_cache(maxsize=65536)
def thing(name: str) -> Thing:
    """The kind, size class and senses of the thing a scene-graph name denotes ("young man" → a person)."""
    text = normalise_name(name)
    matcher = default_matcher()
    head = matcher.head_noun(text) or (text.split()[-1] if text else "")
    words = {text, head, text.split()[-1] if text else ""}
    last = text.split()[-1] if text else ""
    group = bool(
        " and " in f" {text} "
        or (last and last not in PLURALIA_TANTUM and matcher.singular(last) != last)
        or last in {"people", "crowd", "herd", "flock", "group", "family", "team", "audience", "pair"}
    )
    tags: set[str] = set()
    size: int | None = None
    senses: tuple[str, ...] = ()
    synset = _physical_sense(head) if head else None
    if synset is not None:
        senses = (synset.name(),)  # type: ignore[attr-defined]
        closure = _closure(synset.name())  # type: ignore[attr-defined]
        for cls, cls_size, tag in CLASSES:
            if cls in closure:
                if size is None:
                    size = cls_size
                if tag:
                    tags.add(tag)
                if tag in {"person", "animal", "vehicle", "ground", "garment", "body", "plant", "food"}:
                    break
    if words & PEOPLE:
        tags = (tags - {"animal"}) | {"person"}
        size = size or 4
    elif words & ANIMALS:
        tags.add("animal")
        size = size or 3
    if words & INANIMATE:
        tags -= {"person", "animal"}
    if words & GROUND_WORDS:
        tags.add("ground" if not words & {"building", "buildings", "house", "tower", "church", "stadium",
                                          "station", "bridge", "wall", "walls", "roof", "ceiling"} else "fixed")
    if words & COVER_WORDS:
        tags.add("cover")
    if words & SYMBOL_WORDS:
        tags.add("symbol")
    if words & REFLECTORS:
        tags.add("reflector")
    if words & HANGERS:
        tags.add("hanger")
    if words & WEARERS:
        tags.add("wearer")
    for word in (head, text):
        if word in SIZE_OVERRIDES:
            size = SIZE_OVERRIDES[word]
    animate = bool(tags & {"person", "animal"})
    return Thing(text, head, animate, frozenset(tags), size, senses, group)


def is_animate(name: str) -> bool:
    """A person or an animal (lexicon first, then WordNet's first physical sense)."""
    return thing(name).animate


#: Common part–whole pairs WordNet does not link: part head → whole heads.
_PARTS: dict[str, frozenset[str]] = {
    part: frozenset(wholes)
    for parts, wholes in (
        (("window", "door", "roof", "wall", "balcony", "chimney", "brick", "sign", "clock", "awning", "ledge",
          "column", "pillar", "steps", "stairs", "porch", "doorway", "entrance", "arch", "tower"),
         ("building", "house", "church", "tower", "store", "shop", "restaurant", "station")),
        (("wheel", "tire", "window", "door", "windshield", "headlight", "light", "mirror", "bumper", "seat",
          "roof", "engine", "license plate", "logo", "handle", "trunk", "hood", "grill", "wing", "tail",
          "propeller", "cockpit", "letters", "number", "sign", "stripe"),
         ("car", "bus", "truck", "train", "van", "vehicle", "taxi", "suv", "jeep", "trolley", "tram",
          "airplane", "plane", "jet", "boat", "ship", "motorcycle", "bike", "bicycle", "scooter")),
        (("leaf", "leaves", "branch", "branches", "trunk", "bark"), ("tree", "trees", "plant", "bush")),
        (("leg", "legs", "seat", "back", "arm", "cushion"), ("table", "chair", "bench", "desk", "bed", "couch",
                                                             "sofa", "stool")),
        (("hand", "hands", "face", "numbers", "number"), ("clock",)),
        (("crust", "cheese", "topping", "toppings", "slice"), ("pizza",)),
        (("keyboard", "screen", "key", "keys"), ("laptop", "computer")),
        (("logo", "letters", "design", "pocket", "collar", "sleeve", "button", "buttons", "stripe", "stripes",
          "zipper", "hood", "number", "writing", "word", "words", "brim", "strap"),
         ("shirt", "jacket", "hat", "cap", "jersey", "coat", "helmet", "shoe", "shoes", "bag", "sweater",
          "uniform", "dress", "wetsuit", "shorts", "pants", "jeans", "backpack")),
        (("shelf", "shelves", "drawer", "door", "handle"), ("cabinet", "refrigerator", "fridge", "closet",
                                                             "bookshelf", "oven", "dresser")),
        (("sail", "mast", "deck"), ("boat", "ship")),
        (("string", "tail"), ("kite",)),
    )
    for part in parts
}


@lru_cache(maxsize=65536)
def part_of(part: str, whole: str) -> bool:
    """Whether ``part`` names a usual part of ``whole`` ("window" / building; WordNet part holonyms too)."""
    p, w = thing(part), thing(whole)
    if p.head in _PARTS and (w.head in _PARTS[p.head] or w.name in _PARTS[p.head]):
        return True
    if p.has("body") and (w.animate or w.has("body")):
        return p.head != w.head
    if not p.senses or not w.senses:
        return False
    wn = wordnet()
    whole_closure = _closure(w.senses[0])
    for synset in wn.synsets(p.head.replace(" ", "_"), "n")[:2]:
        holonyms = {h.name() for h in synset.part_holonyms()}
        if holonyms & whole_closure:
            return True
    return False
