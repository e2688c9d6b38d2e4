"""PROVE's scorer: a response's tuples against the reference answer's (helpfulness, Eq. 1) and against the
image's scene graph or the image itself (truthfulness, Eq. 2).

Prabhu et al., "Trust but Verify: Programmatic VLM Evaluation in the Wild". The formulas are in
:mod:`halluscope.metrics.prove`; this module supplies their inputs for a batch of answers:

1. every tuple becomes a string — its plain phrase ("dog on rug", "4 puppies"; ``tuple_text="phrase"``, the
   default) or its DSG string as written (``tuple_text="raw"``);
2. every *distinct* string of the whole batch is encoded once, in batches, through a caching
   :class:`~halluscope.embeddings.Embedder` (any sentence-transformers model; the packaged MiniLM by
   default), as the similarity judge does; cosines are dot products of the normalised vectors;
3. for each response tuple whose best similarity to an image tuple is below the entailment backend's
   largest possible score, p(I ⊨ t') is asked for (each distinct (image, statement) once); the others
   cannot change Eq. 2's max, so they are not asked;
4. Eq. 1 and Eq. 2 are applied per answer.

An entailment failure for any tuple of an answer leaves that answer's tscore undefined (with the reason),
never filled in; its hscore stands.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from halluscope.cache import Cache
from halluscope.embeddings import Embedder, load_embedder, resolve_model
from halluscope.judges.visual_entailment import NoEntailment, VisualEntailment
from halluscope.metrics.prove import hscore, tscore
from halluscope.scene.tuples import SceneTuple
from halluscope.stages import Failure

TUPLE_TEXTS = ("phrase", "raw")


@dataclass
class ProveItem:
    """One answer to score: its tuples, the reference answer's new tuples, the image's tuples and image."""

    sample_id: str
    answer_tuples: list[SceneTuple]
    response_tuples: list[SceneTuple]
    image_tuples: list[SceneTuple]
    image_path: str | None = None


@dataclass
class ProveResult:
    """Scores in [0, 1] (None where undefined) and the match behind each tuple's score."""

    hscore: float | None
    tscore: float | None
    #: Why tscore is None although the response has tuples (an entailment failure).
    tscore_error: str | None = None
    #: Per reference tuple: its closest response tuple and their cosine.
    answer_matches: list[dict[str, Any]] = field(default_factory=list)
    #: Per response tuple: its closest image tuple, cosine, p(I ⊨ t') (None if not asked) and its score.
    response_matches: list[dict[str, Any]] = field(default_factory=list)


class ProveScorer:
    """Computes hscore and tscore for batches of :class:`ProveItem`; see the module docstring.

    Options: ``embedding_model`` (None → packaged all-MiniLM-L6-v2; any sentence-transformers name or
    folder), ``entailment`` (a :class:`VisualEntailment`; default none), ``tuple_text`` (phrase | raw),
    ``cache`` (embedding vectors), ``device``, ``embedder`` (an already loaded one).
    """

    def __init__(
        self,
        *,
        embedding_model: str | None = None,
        entailment: VisualEntailment | None = None,
        tuple_text: str = "phrase",
        cache: Cache | None = None,
        device: str = "cpu",
        embedder: Embedder | None = None,
    ) -> None:
        if tuple_text not in TUPLE_TEXTS:
            raise ValueError(f"tuple_text must be one of {', '.join(TUPLE_TEXTS)}, got {tuple_text!r}")
        self.embedding_model = embedding_model
        self.entailment = entailment or NoEntailment()
        self.tuple_text = tuple_text
        self.cache = cache
        self.device = device
        self._embedder = embedder

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = load_embedder(self.embedding_model, cache=self.cache, device=self.device)
        return self._embedder

    def identity(self) -> dict[str, Any]:
        model = (
            self._embedder.identity() if self._embedder is not None else resolve_model(self.embedding_model).identity
        )
        return {
            "scorer": "prove",
            "embedding_model": model,
            "tuple_text": self.tuple_text,
            "entailment": self.entailment.identity(),
        }

    def text(self, item: SceneTuple) -> str:
        return item.phrase() if self.tuple_text == "phrase" else item.text()

    async def score_many(self, items: Sequence[ProveItem]) -> list[ProveResult | Failure]:
        """Scores for many answers at once (the batch is the speed-up: pass all you have)."""
        if not items:
            return []
        strings = list(
            dict.fromkeys(
                self.text(t)
                for it in items
                for t in (*it.answer_tuples, *it.response_tuples, *it.image_tuples)
            )
        )
        rows = {s: i for i, s in enumerate(strings)}
        vectors = await asyncio.to_thread(self.embedder.encode, strings) if strings else np.zeros((0, 0))
        vectors = np.asarray(vectors, dtype=np.float64)

        def matrix(tuples: Sequence[SceneTuple]) -> np.ndarray:
            if not tuples:
                return np.zeros((0, vectors.shape[1] if vectors.ndim == 2 else 0))
            return vectors[[rows[self.text(t)] for t in tuples]]

        plans = []
        asks: dict[tuple[str | None, str], int] = {}
        for it in items:
            a, r, c = matrix(it.answer_tuples), matrix(it.response_tuples), matrix(it.image_tuples)
            ar = a @ r.T if len(a) and len(r) else np.zeros((len(a), len(r)))
            rc = r @ c.T if len(r) and len(c) else np.zeros((len(r), len(c)))
            best = rc.max(axis=1) if rc.shape[1] else np.full(len(r), -np.inf)
            needs = [
                j for j in range(len(r))
                if not isinstance(self.entailment, NoEntailment) and best[j] < self.entailment.max_score
            ]
            for j in needs:
                asks.setdefault((it.image_path, it.response_tuples[j].phrase()), len(asks))
            plans.append((ar, rc, best, needs))

        answers: list[float | Failure] = []
        if asks:
            answers = await self.entailment.entail_many(list(asks))

        results: list[ProveResult | Failure] = []
        for it, (ar, rc, best, needs) in zip(items, plans, strict=True):
            p = np.zeros(len(it.response_tuples))
            asked: dict[int, float | None] = {}
            error: str | None = None
            for j in needs:
                answer = answers[asks[(it.image_path, it.response_tuples[j].phrase())]]
                if isinstance(answer, Failure):
                    error = error or f"tuple {it.response_tuples[j].text()!r}: {answer.reason}"
                    asked[j] = None
                else:
                    p[j] = answer
                    asked[j] = answer
            h = hscore(ar)
            t = tscore(rc, p) if error is None else None
            answer_matches = [
                {
                    "tuple": tup.text(),
                    "match": it.response_tuples[int(np.argmax(ar[i]))].text() if ar.shape[1] else None,
                    "similarity": float(ar[i].max()) if ar.shape[1] else None,
                }
                for i, tup in enumerate(it.answer_tuples)
            ]
            response_matches = []
            for j, tup in enumerate(it.response_tuples):
                failed = j in asked and asked[j] is None
                response_matches.append({
                    "tuple": tup.text(),
                    "match": it.image_tuples[int(np.argmax(rc[j]))].text() if rc.shape[1] else None,
                    "similarity": float(best[j]) if rc.shape[1] else None,
                    "entailment": asked.get(j),
                    "score": None if failed else float(max(best[j], p[j])),
                })
            results.append(ProveResult(h, t, error if it.response_tuples else None, answer_matches, response_matches))
        return results

    async def aclose(self) -> None:
        await self.entailment.aclose()


__all__ = ["TUPLE_TEXTS", "ProveItem", "ProveResult", "ProveScorer"]
