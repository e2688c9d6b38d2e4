"""Is one object word "the same" as another? AMBER's generative scorer asks this for every noun.

The official scorer uses spaCy ``en_core_web_lg`` word vectors, similarity > 0.8. That pipeline is not
installable offline, so halluscope offers three choices, named in spec.json:

- ``spacy-lg``: the official one, when ``en_core_web_lg`` is installed;
- ``embedding`` (offline default): cosine of the packaged MiniLM sentence embeddings of the two words,
  above ``threshold`` (0.8 by default, as the official cut-off; the two scales differ — see docs/amber.md
  for the measured effect);
- ``exact``: no similarity at all, only exact matches (a lower bound on matching, an upper bound on CHAIR).

Every word pair is decided once per process; vectors of the vocabulary are computed once, in one batch.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from halluscope.cache import Cache

__all__ = ["WORD_SIMILARITIES", "WordSimilarity"]

WORD_SIMILARITIES = ("embedding", "exact", "spacy-lg")


class WordSimilarity:
    def __init__(
        self,
        method: str = "embedding",
        *,
        threshold: float = 0.8,
        model: str | None = None,
        cache: Cache | None = None,
    ) -> None:
        if method not in WORD_SIMILARITIES:
            raise ValueError(f"unknown word similarity {method!r}; choose {', '.join(WORD_SIMILARITIES)}")
        if not 0.0 <= float(threshold) <= 1.0:
            raise ValueError(f"word similarity threshold must be between 0 and 1, got {threshold!r}")
        self.method = method
        self.threshold = float(threshold)
        self.model_name = model
        self.cache = cache
        self._vectors: dict[str, np.ndarray] = {}
        self._embedder: Any = None
        self._nlp: Any = None
        self._pairs: dict[tuple[str, str], bool] = {}

    def identity(self) -> dict[str, Any]:
        out: dict[str, Any] = {"word_similarity": self.method}
        if self.method != "exact":
            out["threshold"] = self.threshold
        if self.method == "embedding":
            out["model"] = self.model_name or "all-MiniLM-L6-v2"
        return out

    def prepare(self, words: Iterable[str]) -> None:
        """Compute the vectors of ``words`` in one batch (call with the whole vocabulary up front)."""
        missing = sorted({w for w in words if w not in self._vectors})
        if not missing or self.method == "exact":
            return
        if self.method == "embedding":
            if self._embedder is None:
                from halluscope.embeddings import load_embedder

                self._embedder = load_embedder(self.model_name, cache=self.cache)
            for word, vector in zip(missing, self._embedder.encode(missing), strict=True):
                self._vectors[word] = vector
        else:
            if self._nlp is None:
                import spacy

                try:
                    self._nlp = spacy.load("en_core_web_lg")
                except OSError as error:
                    raise ValueError(
                        "word similarity spacy-lg needs the en_core_web_lg pipeline "
                        "(python -m spacy download en_core_web_lg); use embedding or exact offline"
                    ) from error
            for word in missing:
                vector = np.asarray(self._nlp(word).vector, dtype=np.float32)
                norm = float(np.linalg.norm(vector))
                self._vectors[word] = vector / norm if norm else vector

    def similar(self, a: str, b: str) -> bool:
        """``similarity(a, b) > threshold`` (strictly, as the official code); exact mode: never."""
        if self.method == "exact":
            return False
        key = (a, b) if a <= b else (b, a)
        hit = self._pairs.get(key)
        if hit is None:
            self.prepare((a, b))
            va, vb = self._vectors[a], self._vectors[b]
            hit = bool(float(np.dot(va, vb)) > self.threshold) if va.any() and vb.any() else False
            self._pairs[key] = hit
        return hit
