"""The instrument on real language: a small hand-labelled set of answers to Tri-HE questions.

The perturbation sets of :mod:`halluscope.calibration.validate` are easy by construction (reference triplets
as true claims, lexical swaps as false ones), so a judge can score 100 % there and still double the
hallucination rate on real answers. This set is the check against real language. Each answer, to a
Tri-HE question about one of 25 Tri-HE images, comes with

- its source: Tri-HE's own reference answer, an answer to a question about a *different* image
  (``mismatched``), a real answer edited to change one fact (``edited``), or an answer written for the
  question by the annotator, in the style of a chat VLM, with the errors such models make (``own``);
- an answer-level score on the 1–5 scale of Tri-HE's human study (5: no hallucination, 1: all of it);
- hand-made claims (subject, relation, object), each labelled by looking at the image: ``true``,
  ``false`` or ``unseen`` (the picture does not show whether it holds);
- a split: ``dev`` (judging rules were tuned on these images) or ``heldout`` (never looked at while
  tuning; reported separately).

Provenance and the labelling protocol (two passes) are in ``docs/calibration.md``; the file is
``halluscope/calibration/data/real.json``.

:func:`evaluate_real` scores the set three ways — the answers through an extractor and a judge (what a
run does), the hand-made claims through the judge (no extraction error), and the hand-made claims against
a scene graph completed with what the annotator saw (no extraction error and no missing ground truth) —
and reports the Pearson correlation of each answer's rate with its score, the mean rate beside the
labelled mean, and claim-level precision / recall of "hallucinated" against the claim labels.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from statistics import fmean
from typing import Any, Literal

from pydantic import BaseModel, Field

from halluscope.cache import Cache
from halluscope.jsonio import loads_json
from halluscope.scene.graph import SceneGraph
from halluscope.stages import Extractor, Judge
from halluscope.types import Claim, JudgedClaim, Response, Sample, SampleRecord, Support, VerdictLabel

ClaimLabel = Literal["true", "false", "unseen"]

#: The instrument's error on the packaged real set, as measured and documented in docs/calibration.md
#: (``halluscope validate-judge --set real --judge typed --judge similarity``): what ``halluscope demo``
#: prints beside its synthetic figures, so the synthetic 100 % is never the only number a user sees.
MEASURED_ON_REAL: dict[str, Any] = {
    "answers": 59,
    "images": 25,
    "default": {
        "config": "rules + typed, contradicted rate",
        "pearson": 0.47,
        "heldout": 0.46,
        "mean_rate": 13.6,
    },
    "paper_typed": {"config": "rules + typed, Tri-HE reading", "pearson": 0.24, "mean_rate": 54.1},
    "similarity": {
        "config": "rules + similarity (paper)",
        "pearson": 0.42,
        "heldout": 0.25,
        "mean_rate": 42.2,
    },
    "labelled_mean_rate": 20.3,
    "command": "halluscope validate-judge --set real --data tri-he.json --judge typed --judge similarity",
}
#: How an answer's hallucination rate is read from its judged claims.
RateKind = Literal["default", "paper"]


class RealClaim(BaseModel):
    subject: str
    relation: str
    object: str
    #: First labelling pass; ``label2`` the second, made later without looking at the first.
    label: ClaimLabel
    label2: ClaimLabel | None = None

    def claim(self) -> Claim:
        return Claim(subject=self.subject, relation=self.relation, object=self.object)


class RealAnswer(BaseModel):
    id: str
    image_id: str
    question_index: int
    question: str
    source: Literal["reference", "mismatched", "edited", "own"]
    answer: str
    #: Tri-HE human-study scale, first pass; ``score2`` the second pass.
    score: int = Field(ge=1, le=5)
    score2: int | None = Field(default=None, ge=1, le=5)
    split: Literal["dev", "heldout"]
    claims: list[RealClaim]
    donor_image: str | None = None

    def labelled_rate(self) -> float:
        """Share of the hand-made claims labelled false, x100 (unseen ones count as not hallucinated)."""
        if not self.claims:
            return 0.0
        return 100 * sum(c.label == "false" for c in self.claims) / len(self.claims)


def default_real_path() -> Path:
    return Path(str(resources.files("halluscope.calibration") / "data" / "real.json"))


def load_real_set(path: Path | None = None) -> list[RealAnswer]:
    """The labelled answers (the packaged set by default); errors name the entry and the problem."""
    path = Path(path) if path is not None else default_real_path()
    try:
        raw = loads_json(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"cannot read the real-answer set {path}: {error}") from error
    if not isinstance(raw, list):
        raise ValueError(f"{path}: expected a list of answers")
    answers = []
    for index, entry in enumerate(raw):
        try:
            answers.append(RealAnswer.model_validate(entry))
        except ValueError as error:
            name = entry.get("id") if isinstance(entry, dict) else None
            raise ValueError(f"{path}: entry {index} ({name!r}): {error}") from error
    return answers


def completed_scene(scene: SceneGraph, answers: Sequence[RealAnswer]) -> SceneGraph:
    """A copy of the image's scene graph with every hand-made claim labelled true added as a fact.

    The upper bound of an offline judge: what it reaches when the ground truth records everything the
    annotator saw. False claims stay false; what they contradict is now recorded.
    """
    import copy

    done = copy.deepcopy(scene)
    for answer in answers:
        for claim in answer.claims:
            if claim.label == "true":
                done.add_fact(claim.claim())
                for name in (claim.subject, claim.object):
                    if name not in done.object_names:
                        done.object_names.append(name)
    return done


def answer_rate(record: SampleRecord, kind: RateKind = "default") -> float:
    """An answer's hallucination rate x100; 0 for an answer with nothing judged (nothing checkable).

    ``paper``: Tri-HE's h(q), hallucinated / judged. ``default``: contradicted (absent objects included)
    / judged, where the judge gives a three-way ``support``; judges that do not fall back to ``paper``.
    """
    judged = [c for c in record.claims if c.verdict != VerdictLabel.UNJUDGED]
    if not judged:
        return 0.0
    if kind == "default" and all(c.support is not None for c in judged):
        return 100 * sum(c.support == Support.CONTRADICTED for c in judged) / len(judged)
    return 100 * sum(c.verdict == VerdictLabel.HALLUCINATED for c in judged) / len(judged)


def _flagged(claim: JudgedClaim, kind: RateKind) -> bool:
    if kind == "default" and claim.support is not None:
        return claim.support == Support.CONTRADICTED
    return claim.verdict == VerdictLabel.HALLUCINATED


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    if len(xs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    mx, my = fmean(xs), fmean(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return sxy / math.sqrt(sxx * syy)


class RealFigures(BaseModel):
    """One configuration on one part of the set."""

    answers: int
    #: Pearson of (100 - rate) with the 1–5 score: higher is better, 1 is perfect ordering.
    pearson: float | None
    mean_rate: float
    labelled_mean_rate: float
    claims: int = 0
    unjudged_claims: int = 0
    #: Claim level (hand-made claims only): "hallucinated" against the label false; unseen claims apart.
    precision: float | None = None
    recall: float | None = None
    #: Share of claims labelled unseen that the judge called hallucinated.
    unseen_flagged: float | None = None
    #: Share of judged claims the judge found unverifiable from the scene graph (x100, claim-weighted).
    unverifiable_share: float | None = None


class RealReport(BaseModel):
    label: str
    claims_from: Literal["answer", "hand", "hand+completed"]
    rate: RateKind
    all: RealFigures
    dev: RealFigures
    heldout: RealFigures
    by_source: dict[str, RealFigures] = Field(default_factory=dict)
    per_answer: list[dict[str, Any]] = Field(default_factory=list)


def figures(
    answers: Sequence[RealAnswer], records: Sequence[SampleRecord], kind: RateKind, *, claim_level: bool
) -> RealFigures:
    rates = [answer_rate(r, kind) for r in records]
    scores = [float(a.score) for a in answers]
    judged = [c for r in records for c in r.claims if c.verdict != VerdictLabel.UNJUDGED]
    with_support = [c for c in judged if c.support is not None]
    out = RealFigures(
        answers=len(answers),
        pearson=pearson([100 - x for x in rates], scores),
        mean_rate=fmean(rates) if rates else 0.0,
        labelled_mean_rate=fmean(a.labelled_rate() for a in answers) if answers else 0.0,
        claims=sum(len(r.claims) for r in records),
        unjudged_claims=sum(len(r.claims) for r in records) - len(judged),
        unverifiable_share=(
            100 * sum(c.support == Support.UNVERIFIABLE for c in with_support) / len(with_support)
            if with_support and len(with_support) == len(judged)
            else None
        ),
    )
    if claim_level:
        tp = fp = fn = unseen = unseen_flag = 0
        for answer, record in zip(answers, records, strict=True):
            for truth, judged_claim in zip(answer.claims, record.claims, strict=False):
                if judged_claim.verdict == VerdictLabel.UNJUDGED:
                    continue
                flagged = _flagged(judged_claim, kind)
                if truth.label == "unseen":
                    unseen += 1
                    unseen_flag += flagged
                elif truth.label == "false":
                    tp += flagged
                    fn += not flagged
                else:
                    fp += flagged
        out.precision = tp / (tp + fp) if tp + fp else None
        out.recall = tp / (tp + fn) if tp + fn else None
        out.unseen_flagged = unseen_flag / unseen if unseen else None
    return out


async def score_real(
    answers: Sequence[RealAnswer],
    scene_of: Callable[[str], SceneGraph | None],
    *,
    judge: Judge,
    cache: Cache,
    extractor: Extractor | None = None,
    claims_from: Literal["answer", "hand", "hand+completed"] = "answer",
    chunk: int = 16,
    on_chunk: Callable[[int], None] | None = None,
    image_of: Callable[[str], str | None] | None = None,
) -> list[SampleRecord]:
    """One record per answer, in order, through the same cached scoring path as a run.

    ``image_of`` gives an image id's photo, for judges that look at it (``vlm``).
    """
    from halluscope.benchmarks.base import ScoringContext
    from halluscope.benchmarks.triplets import score_open_answers

    scenes: dict[str, SceneGraph | None] = {}
    by_image: dict[str, list[RealAnswer]] = {}
    for answer in answers:
        by_image.setdefault(answer.image_id, []).append(answer)
    for image_id, group in by_image.items():
        scene = scene_of(image_id)
        if scene is not None and claims_from == "hand+completed":
            scene = completed_scene(scene, group)
        scenes[image_id] = scene
    pairs: list[tuple[Sample, Response | None]] = []
    for answer in answers:
        sample = Sample(
            id=answer.id, benchmark="tri-he", prompt=answer.question, image_id=answer.image_id,
            image_path=image_of(answer.image_id) if image_of else None,
        )  # fmt: skip
        hand = [c.claim() for c in answer.claims] if claims_from != "answer" else None
        pairs.append((sample, Response(id=answer.id, response=answer.answer, claims=hand)))
    ctx = ScoringContext(cache=cache, extractor=extractor, judge=judge)
    records: list[SampleRecord] = []
    for start in range(0, len(pairs), chunk):
        part = pairs[start : start + chunk]
        records += await score_open_answers(part, lambda s: scenes.get(s.image_id or ""), ctx)
        if on_chunk is not None:
            on_chunk(len(part))
    if claims_from != "answer":
        # Supplied claims are de-duplicated by the scorer; keep the hand-made order for the claim labels.
        for answer, record in zip(answers, records, strict=True):
            by_claim = {(c.subject, c.relation, c.object): c for c in record.claims}
            record.claims = [
                by_claim[c.claim().as_tuple()] for c in answer.claims if c.claim().as_tuple() in by_claim
            ]
    return records


def evaluate_real(
    answers: Sequence[RealAnswer],
    records: Sequence[SampleRecord],
    *,
    label: str,
    claims_from: Literal["answer", "hand", "hand+completed"],
    rate: RateKind,
) -> RealReport:
    """Figures for the whole set, each split and each source, from records in the order of ``answers``."""
    claim_level = claims_from != "answer"

    def part(keep: Callable[[RealAnswer], bool]) -> RealFigures:
        chosen = [(a, r) for a, r in zip(answers, records, strict=True) if keep(a)]
        return figures([a for a, _ in chosen], [r for _, r in chosen], rate, claim_level=claim_level)

    sources = sorted({a.source for a in answers})
    return RealReport(
        label=label,
        claims_from=claims_from,
        rate=rate,
        all=part(lambda a: True),
        dev=part(lambda a: a.split == "dev"),
        heldout=part(lambda a: a.split == "heldout"),
        by_source={s: part(_of_source(s)) for s in sources},
        per_answer=[
            {
                "id": a.id,
                "score": a.score,
                "labelled_rate": round(a.labelled_rate(), 1),
                "rate": round(answer_rate(r, rate), 1),
                "claims": len(r.claims),
                "failure": r.failure,
            }
            for a, r in zip(answers, records, strict=True)
        ],
    )


def _of_source(source: str) -> Callable[[RealAnswer], bool]:
    return lambda answer: answer.source == source


def self_agreement(answers: Sequence[RealAnswer]) -> dict[str, float | int | None]:
    """Agreement of the two labelling passes: Pearson of the scores, and claim-label agreement."""
    paired = [(a.score, a.score2) for a in answers if a.score2 is not None]
    claims = [(c.label, c.label2) for a in answers for c in a.claims if c.label2 is not None]
    return {
        "answers_relabelled": len(paired),
        "score_pearson": pearson([float(x) for x, _ in paired], [float(y) for _, y in paired])
        if paired
        else None,
        "score_exact": sum(x == y for x, y in paired) / len(paired) if paired else None,
        "claims_relabelled": len(claims),
        "claim_agreement": sum(x == y for x, y in claims) / len(claims) if claims else None,
    }


def run_real(
    answers: Sequence[RealAnswer],
    scene_of: Callable[[str], SceneGraph | None],
    *,
    judge: Judge,
    cache: Cache,
    extractor: Extractor | None,
    claims_from: Literal["answer", "hand", "hand+completed"],
    rate: RateKind,
    label: str,
    chunk: int = 16,
    on_chunk: Callable[[int], None] | None = None,
    image_of: Callable[[str], str | None] | None = None,
) -> tuple[RealReport, list[SampleRecord]]:
    """Score and evaluate in one call (blocking)."""
    records = asyncio.run(
        score_real(
            answers,
            scene_of,
            judge=judge,
            cache=cache,
            extractor=extractor,
            claims_from=claims_from,
            chunk=chunk,
            on_chunk=on_chunk,
            image_of=image_of,
        )
    )
    return evaluate_real(answers, records, label=label, claims_from=claims_from, rate=rate), records


__all__ = [
    "RealAnswer",
    "RealClaim",
    "RealFigures",
    "RealReport",
    "answer_rate",
    "completed_scene",
    "default_real_path",
    "evaluate_real",
    "load_real_set",
    "pearson",
    "run_real",
    "score_real",
    "self_agreement",
]
