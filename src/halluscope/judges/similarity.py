"""Tri-HE's embedding-similarity judge ("NLI judge" in the official repository), exact and batched.

Wu et al., "Unified Triplet-Level Hallucination Evaluation for Large Vision-Language Models" (Tri-HE).
The official script ``NLI_judge.py`` uses no NLI model: it compares sentence embeddings. For one claim
(subject, relation, object) and the reference triplets of its image:

1. each reference string ``"(a, b, c)"`` becomes ``"a b c."`` (parentheses and commas removed, a full stop
   added; :func:`~halluscope.scene.triplets.reference_sentence`), the claim becomes ``"s r o"``;
2. ``sims`` = cosine(claim, each reference);
3. ``filtered`` = the references with sim > ``filter_threshold`` (0.5), in reference order, joined with single
   spaces into ONE string; ``top`` = the ``top_k`` (3) most similar references, most similar first, joined the
   same way;
4. score = cos(claim, emb(top)) when nothing passes the filter, else
   max(cos(claim, emb(filtered)), cos(claim, emb(top)));
5. supported iff score > ``verdict_threshold`` (0.6), else hallucinated.

The official loop makes 3–4 model calls per claim. Here every distinct string of a whole batch of answers —
claims and references in a first pass, the joined strings in a second — is encoded once, in large batches,
through a caching :class:`~halluscope.embeddings.Embedder`, so the verdicts are the same and a re-run
re-encodes nothing. Reference lists are used as given, duplicates included, because the official script
joins duplicates twice; a scene graph must therefore carry the image's raw reference strings in file order.

This judge cannot tell object from relation hallucination: every hallucinated verdict has ``error=None``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from halluscope.cache import Cache, default_cache_dir
from halluscope.embeddings import Embedder, load_embedder, resolve_model
from halluscope.jsonio import loads_json, write_json_atomic
from halluscope.options import check_options
from halluscope.scene.direction import reference_text
from halluscope.scene.graph import SceneGraph
from halluscope.scene.names import wordnet
from halluscope.scene.triplets import reference_sentence
from halluscope.stages import Failure, Judge, JudgeItem
from halluscope.types import Verdict, VerdictLabel

#: The official thresholds, tuned by Tri-HE for all-mpnet-base-v2.
DEFAULT_FILTER_THRESHOLD = 0.5
DEFAULT_VERDICT_THRESHOLD = 0.6
DEFAULT_TOP_K = 3

_PROFILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


# -- threshold profiles -----------------------------------------------------------------------------------


class JudgeProfile(BaseModel):
    """Thresholds calibrated for one embedding model (written by ``validate-judge --calibrate``).

    Extra fields (calibration data, accuracy, date) are allowed and ignored here.
    """

    model_config = ConfigDict(extra="ignore", protected_namespaces=())

    model: str | None = None
    filter_threshold: float
    verdict_threshold: float


def profiles_dir() -> Path:
    return default_cache_dir() / "judge_profiles"


def profile_path(name: str) -> Path:
    """Where the profile ``name`` lives; a name ending in ``.json`` or containing a slash is a file path."""
    if name.endswith(".json") or "/" in name:
        return Path(name).expanduser()
    if not _PROFILE_NAME.match(name):
        raise ValueError(f"invalid judge profile name {name!r}: use letters, digits, '.', '_' or '-'")
    return profiles_dir() / f"{name}.json"


def load_profile(name: str) -> JudgeProfile:
    """Read a named (or path-given) threshold profile, with errors that say what exists."""
    path = profile_path(name)
    if not path.is_file():
        known = sorted(p.stem for p in profiles_dir().glob("*.json")) if profiles_dir().is_dir() else []
        hint = f"known profiles: {', '.join(known)}" if known else "no profiles saved yet"
        raise ValueError(f"judge profile {name!r} not found at {path} ({hint})")
    try:
        return JudgeProfile.model_validate(loads_json(path.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, ValidationError) as exc:
        raise ValueError(f"judge profile {name!r} at {path} is not a valid profile: {exc}") from exc


def save_profile(name: str, profile: JudgeProfile, **extra: Any) -> Path:
    """Write a profile (plus any extra JSON fields, such as calibration figures) and return its path."""
    path = profile_path(name)
    return write_json_atomic(path, {**extra, **profile.model_dump()})


# -- the judge --------------------------------------------------------------------------------------------


@dataclass
class _Item:
    """One answer, ready to score: its claims and its image's reference sentences."""

    index: int
    sample_id: str
    claim_texts: list[str]
    raw_refs: list[str]
    ref_sents: list[str]


@dataclass
class _ClaimPlan:
    top: np.ndarray
    top_text: str
    filtered_text: str | None


def _references(scene: SceneGraph) -> list[str]:
    """The image's raw reference strings; graphs built without them fall back to their parsed facts."""
    if scene.reference_texts:
        return list(scene.reference_texts)
    return [f"({c.subject}, {c.relation}, {c.object})" for c in scene.reference_claims]


def _check_threshold(name: str, value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"similarity judge option {name} must be a number, got {value!r}") from None
    if not -1.0 <= number <= 1.0:
        raise ValueError(f"similarity judge option {name} must lie in [-1, 1] (a cosine), got {number}")
    return number


def _load_wordnet_meanwhile() -> None:
    """Start loading WordNet in a thread while the model encodes, once per process.

    Why: the verdicts' evidence is each reference oriented for reading (:func:`reference_text`), which needs
    WordNet; loading it (about 1.5 s) would otherwise wait until the encoding, which mostly runs outside the
    interpreter lock, is over. A load that fails here fails again, and is reported, where the evidence needs it.
    """
    global _wordnet_started
    if _wordnet_started:
        return
    _wordnet_started = True

    def load() -> None:
        with contextlib.suppress(Exception):
            wordnet()

    threading.Thread(target=load, name="halluscope-wordnet", daemon=True).start()


_wordnet_started = False


class SimilarityJudge(Judge):
    """Tri-HE's embedding-similarity judge; see the module docstring for the algorithm.

    Options: ``model`` (None → packaged all-MiniLM-L6-v2; ``"all-mpnet-base-v2"`` → the paper's model; a
    directory or hub name), ``filter_threshold`` (0.5), ``verdict_threshold`` (0.6), ``top_k`` (3), ``cache``
    (a :class:`Cache` for embeddings; None keeps them in memory only), ``profile`` (a saved threshold profile;
    explicit thresholds override it), ``device``, and ``embedder`` (an already loaded :class:`Embedder`).
    The model is loaded on first use, so building the judge (for ``--help`` or a spec) is instant.
    """

    name: ClassVar[str] = "similarity"

    def __init__(
        self,
        *,
        model: str | None = None,
        filter_threshold: float | None = None,
        verdict_threshold: float | None = None,
        top_k: int = DEFAULT_TOP_K,
        cache: Cache | None = None,
        profile: str | None = None,
        device: str = "cpu",
        embedder: Embedder | None = None,
        **unknown: Any,
    ) -> None:
        check_options(
            "the similarity judge",
            unknown,
            ["model", "filter_threshold", "verdict_threshold", "top_k", "cache", "profile", "device", "embedder"],
        )
        self.profile = profile
        if profile is not None:
            loaded = load_profile(profile)
            if (
                model is not None
                and loaded.model is not None
                and resolve_model(model).identity != resolve_model(loaded.model).identity
            ):
                raise ValueError(
                    f"judge profile {profile!r} was calibrated for model {loaded.model!r}, not {model!r}; "
                    "drop one of the two options"
                )
            model = model if model is not None else loaded.model
            filter_threshold = loaded.filter_threshold if filter_threshold is None else filter_threshold
            verdict_threshold = loaded.verdict_threshold if verdict_threshold is None else verdict_threshold
        self.model = model
        self.filter_threshold = _check_threshold(
            "filter_threshold", DEFAULT_FILTER_THRESHOLD if filter_threshold is None else filter_threshold
        )
        self.verdict_threshold = _check_threshold(
            "verdict_threshold", DEFAULT_VERDICT_THRESHOLD if verdict_threshold is None else verdict_threshold
        )
        if isinstance(top_k, str) and top_k.strip().isdigit():
            top_k = int(top_k)
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ValueError(f"similarity judge option top_k must be a positive integer, got {top_k!r}")
        self.top_k = top_k
        self.cache = cache
        self.device = device
        self._embedder = embedder

    # -- identity and model --------------------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        """The embedding model, loaded on first use."""
        if self._embedder is None:
            self._embedder = load_embedder(self.model, cache=self.cache, device=self.device)
        return self._embedder

    def identity(self) -> dict[str, Any]:
        model_id = (
            self._embedder.identity() if self._embedder is not None else resolve_model(self.model).identity
        )
        return {
            "judge": self.name,
            "model": model_id,
            "filter_threshold": self.filter_threshold,
            "verdict_threshold": self.verdict_threshold,
            "top_k": self.top_k,
        }

    # -- judging ---------------------------------------------------------------------------------------

    async def judge_many(self, items: Sequence[JudgeItem]) -> list[list[Verdict] | Failure]:
        """Verdicts for many answers at once; pass as many as you have, since batching is the speed-up."""
        return await asyncio.to_thread(self.judge_many_sync, items)

    def judge_many_sync(self, items: Sequence[JudgeItem]) -> list[list[Verdict] | Failure]:
        """The blocking form of :meth:`judge_many` (scripts, benchmarks, worker threads)."""
        results: list[list[Verdict] | Failure | None] = [None] * len(items)
        ready: list[_Item] = []
        for index, item in enumerate(items):
            try:
                prepared = self._prepare(index, item)
            except Exception as exc:
                results[index] = Failure(f"similarity judge: sample {item.sample_id!r}: {exc}")
                continue
            if isinstance(prepared, _Item):
                ready.append(prepared)
            else:
                results[index] = prepared
        if ready:
            try:
                self._score(ready, results)
            except Exception:
                # Find the culprit: score each answer alone so that one bad item fails alone.
                for one in ready:
                    try:
                        self._score([one], results)
                    except Exception as exc:
                        results[one.index] = Failure(
                            f"similarity judge: sample {one.sample_id!r}: {type(exc).__name__}: {exc}"
                        )
        return [r if r is not None else Failure("similarity judge: not scored") for r in results]

    def _prepare(self, index: int, item: JudgeItem) -> _Item | list[Verdict]:
        if not item.claims:
            return []
        raw_refs = _references(item.scene)
        if not raw_refs:
            reason = f"image {item.scene.image_id!r} has no reference triplets to compare claims with"
            return [Verdict.unjudged(reason) for _ in item.claims]
        return _Item(
            index=index,
            sample_id=item.sample_id,
            claim_texts=[claim.text() for claim in item.claims],
            raw_refs=raw_refs,
            ref_sents=[reference_sentence(r) for r in raw_refs],
        )

    def _score(self, ready: list[_Item], results: list[list[Verdict] | Failure | None]) -> None:
        embedder = self.embedder
        _load_wordnet_meanwhile()
        # Pass 1: every distinct claim and reference sentence of the whole batch, encoded once.
        first = list(dict.fromkeys(t for it in ready for t in (*it.claim_texts, *it.ref_sents)))
        first_rows = {text: row for row, text in enumerate(first)}
        first_vecs = embedder.encode(first)

        plans: list[list[_ClaimPlan]] = []
        claim_vecs: list[np.ndarray] = []
        for it in ready:
            claims = first_vecs[[first_rows[t] for t in it.claim_texts]]
            refs = first_vecs[[first_rows[t] for t in it.ref_sents]]
            sims = claims @ refs.T
            item_plans = []
            for row in sims:
                passing = np.flatnonzero(row > self.filter_threshold)
                top = np.argsort(-row, kind="stable")[: self.top_k]
                item_plans.append(
                    _ClaimPlan(
                        top=top,
                        top_text=" ".join(it.ref_sents[i] for i in top),
                        filtered_text=" ".join(it.ref_sents[i] for i in passing) if passing.size else None,
                    )
                )
            plans.append(item_plans)
            claim_vecs.append(claims)

        # Pass 2: the joined reference strings, again each distinct one once.
        joined = list(
            dict.fromkeys(
                t for item_plans in plans for p in item_plans for t in (p.top_text, p.filtered_text) if t
            )
        )
        joined_rows = {text: row for row, text in enumerate(joined)}
        joined_vecs = embedder.encode(joined).astype(np.float64)

        for it, item_plans, claims in zip(ready, plans, claim_vecs, strict=True):
            verdicts = []
            for plan, claim_vec in zip(item_plans, claims.astype(np.float64), strict=True):
                top_score = float(joined_vecs[joined_rows[plan.top_text]] @ claim_vec)
                score, basis = top_score, f"the top-{self.top_k} references"
                if plan.filtered_text is not None:
                    filtered_score = float(joined_vecs[joined_rows[plan.filtered_text]] @ claim_vec)
                    if filtered_score > top_score:
                        score, basis = filtered_score, f"the references above {self.filter_threshold:g}"
                supported = score > self.verdict_threshold
                verdicts.append(
                    Verdict(
                        label=VerdictLabel.SUPPORTED if supported else VerdictLabel.HALLUCINATED,
                        score=score,
                        evidence=[reference_text(None, it.raw_refs[i]) for i in plan.top],
                        explanation=(
                            f"cosine {score:.3f} with {basis} "
                            f"{'>' if supported else '<='} {self.verdict_threshold:g}"
                        ),
                    )
                )
            results[it.index] = verdicts


__all__ = [
    "DEFAULT_FILTER_THRESHOLD",
    "DEFAULT_TOP_K",
    "DEFAULT_VERDICT_THRESHOLD",
    "JudgeProfile",
    "SimilarityJudge",
    "load_profile",
    "profile_path",
    "profiles_dir",
    "save_profile",
]
