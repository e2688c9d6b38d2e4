"""Known-truth validation of judges: how accurately does a judge recover hallucinations we planted?

A hallucination rate is a measurement, and its instrument (extractor + judge) has errors of its own. Here
the truth of every claim is known, so the instrument can be measured:

- **synthetic**: answers of ``sim/hallucinate`` on synthetic scenes (exact scene graphs); each claim is
  true or was falsified by the simulator (object, relation or attribute), and the simulator says which.
- **tri-he**: each question's ground-truth supporting triplets as claims (true), plus perturbed copies
  from :func:`halluscope.calibration.perturb.perturb_claims` (an object swapped for one not in the image, a
  relation swapped for a false one).

For each injected rate r (default 0, 0.1, 0.2, 0.3, 0.5) every question gets an answer in which each claim
is falsified with probability r (half by object, half by relation or attribute). The random draws do not
depend on r, so the claims falsified at 0.1 are also falsified at 0.2: the curve moves only because r does.
Every distinct (question, claim) is judged once, through the same cached scoring path as a run
(:func:`halluscope.benchmarks.triplets.score_open_answers`), and the report gives:

- claim-level detection of "hallucinated": precision, recall, specificity, F1, balanced accuracy, and the
  recall per injected error kind;
- typing accuracy where the judge types its verdicts: object vs relation, attribute errors counting as
  relation errors as in Tri-HE (``typing_accuracy``), over the planted errors the judge caught and typed;
- the calibration curve: for each r, the injected Hallu-Q (share of falsified claims, averaged per
  question ×100) next to the measured Hallu-Q (Tri-HE's metric over the judge's verdicts), with the mean
  absolute gap and a least-squares line measured = intercept + slope × injected (an ideal judge: 0 and 1).

:func:`calibrate_similarity` searches the similarity judge's two thresholds for the pair with the best
balanced accuracy: for each filter threshold on a grid it scores every claim once, then sweeps the verdict
threshold over the scores. It also reports a two-fold estimate (fit on half the images, score the other
half) so the in-sample figure's optimism is visible.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean
from typing import Any

from pydantic import BaseModel, Field

from halluscope.benchmarks.base import Benchmark, ScoringContext
from halluscope.cache import Cache, content_key
from halluscope.runs.progress import NullProgress, ProgressSink
from halluscope.scene.graph import SceneGraph
from halluscope.stages import Judge, JudgeItem
from halluscope.types import (
    Claim,
    ErrorType,
    JudgedClaim,
    Response,
    Sample,
    SampleRecord,
    Verdict,
    VerdictLabel,
)

DEFAULT_RATES = (0.0, 0.1, 0.2, 0.3, 0.5)

ClaimKey = tuple[str, str, str, str]  # sample id, subject, relation, object


class TruthClaim(BaseModel):
    """A claim with its known truth: ``error`` None for a true claim, else how it was made false."""

    subject: str
    relation: str
    object: str
    error: ErrorType | None = None
    original: list[str] | None = None

    def claim(self) -> Claim:
        return Claim(subject=self.subject, relation=self.relation, object=self.object)


class ValidationQuestion(BaseModel):
    """One answer at one injected rate."""

    sample_id: str
    image_id: str
    rate: float
    claims: list[TruthClaim]


@dataclass
class ValidationSet:
    """Questions at several rates over one benchmark's samples, with what is needed to judge them."""

    benchmark: str
    data: str
    rates: list[float]
    samples: dict[str, Sample]
    scenes: dict[str, SceneGraph]  # by sample id
    questions: list[ValidationQuestion] = field(default_factory=list)
    #: Claims whose truth differs between two answers (should not happen; dropped from detection).
    conflicts: int = 0

    def distinct_claims(self) -> dict[ClaimKey, TruthClaim]:
        truth: dict[ClaimKey, TruthClaim] = {}
        clash: set[ClaimKey] = set()
        for question in self.questions:
            for claim in question.claims:
                key = (question.sample_id, claim.subject, claim.relation, claim.object)
                if key in truth and (truth[key].error is None) != (claim.error is None):
                    clash.add(key)
                truth.setdefault(key, claim)
        self.conflicts = len(clash)
        return {k: v for k, v in truth.items() if k not in clash}


class CurvePoint(BaseModel):
    rate: float
    questions: int
    claims: int
    injected_hallu_q: float | None
    measured_hallu_q: float | None
    measured_object_hallu_q: float | None = None
    measured_relation_hallu_q: float | None = None


class ValidationReport(BaseModel):
    """What ``halluscope validate-judge`` prints and writes for one judge on one benchmark."""

    judge: str
    judge_identity: dict[str, Any]
    benchmark: str
    data: str
    questions: int
    claims: int
    hallucinated_claims: int
    unjudged_claims: int
    precision: float | None
    recall: float | None
    specificity: float | None
    f1: float | None
    balanced_accuracy: float | None
    recall_by_error: dict[str, float | None] = Field(default_factory=dict)
    typing_accuracy: float | None = None
    typing_coverage: float | None = None
    typing_confusion: dict[str, dict[str, int]] = Field(default_factory=dict)
    curve: list[CurvePoint] = Field(default_factory=list)
    curve_mae: float | None = None
    curve_slope: float | None = None
    curve_intercept: float | None = None
    seconds: float = 0.0


# -- building validation sets ------------------------------------------------------------------------------


def _draw(seed: int, sample_id: str, index: int) -> float:
    """A uniform number for claim ``index`` of a sample, independent of the rate (nested errors)."""
    key = content_key("halluscope-validate", seed, sample_id, index)
    return int(key[:13], 16) / float(16**13)


def synthetic_validation_set(
    benchmark: Benchmark, *, rates: Sequence[float] = DEFAULT_RATES, seed: int = 0, limit: int | None = None
) -> ValidationSet:
    """Answers of ``sim/hallucinate?rate=r`` to the benchmark's questions, for each rate r."""
    from halluscope.models.sim import ErrorRates, SimModel

    vset = _empty_set(benchmark, rates, limit)
    for rate in rates:
        sim = SimModel("hallucinate" if rate else "oracle", ErrorRates.uniform(rate), seed=seed)
        for sample in vset.samples.values():
            scene = vset.scenes.get(sample.id)
            if scene is None:
                continue
            answer = sim.answer(scene, sample.prompt, sample_id=sample.id)
            claims = [TruthClaim(subject=c.subject, relation=c.relation, object=c.object,
                                 error=c.error if c.falsified else None, original=c.original)
                      for c in answer.claims]
            if claims:
                vset.questions.append(ValidationQuestion(sample_id=sample.id, image_id=sample.image_id or "",
                                                         rate=rate, claims=claims))
    return vset


def _perturb(scene: SceneGraph, claims: list[Claim], kind: str, rng: random.Random) -> list[Claim | None]:
    """One perturbed copy per claim (None where this kind of perturbation is impossible)."""
    from halluscope.calibration.perturb import perturb_claims

    results = perturb_claims(scene, claims, "object" if kind == "object" else "relation", rng)
    if len(results) != len(claims):
        raise RuntimeError(f"perturb_claims gave {len(results)} results for {len(claims)} claims ({kind})")
    return [p.claim if p is not None else None for p in results]


def tri_he_validation_set(
    benchmark: Benchmark, *, rates: Sequence[float] = DEFAULT_RATES, seed: int = 0, limit: int | None = None
) -> ValidationSet:
    """Each question's ground-truth triplets, with each one perturbed (object or relation) at rate r."""
    from halluscope.scene.triplets import TripletParseError, parse_triplet_string

    vset = _empty_set(benchmark, rates, limit)
    for sample in vset.samples.values():
        scene = vset.scenes.get(sample.id)
        if scene is None:
            continue
        truth: list[Claim] = []
        for text in sample.metadata.get("gt_triplets", []):
            try:
                truth += parse_triplet_string(text)
            except TripletParseError:
                continue
        truth = list(dict.fromkeys(truth))
        if not truth:
            continue
        rng = random.Random(f"halluscope-validate:{seed}:{sample.id}")
        variants = {
            ErrorType.OBJECT: _perturb(scene, truth, "object", rng),
            ErrorType.RELATION: _perturb(scene, truth, "relation", rng),
        }
        draws = [_draw(seed, sample.id, i) for i in range(len(truth))]
        for rate in rates:
            claims: list[TruthClaim] = []
            for index, (claim, u) in enumerate(zip(truth, draws, strict=True)):
                error = None if u >= rate else ErrorType.OBJECT if u < rate / 2 else ErrorType.RELATION
                replaced = variants[error][index] if error is not None else None
                if error is None or replaced is None or replaced in truth:
                    claims.append(TruthClaim(**claim.model_dump()))
                else:
                    claims.append(TruthClaim(**replaced.model_dump(), error=error,
                                             original=list(claim.as_tuple())))
            unique: dict[Claim, TruthClaim] = {}
            for item in claims:
                unique.setdefault(item.claim(), item)
            vset.questions.append(ValidationQuestion(sample_id=sample.id, image_id=sample.image_id or "",
                                                     rate=rate, claims=list(unique.values())))
    return vset


def _empty_set(benchmark: Benchmark, rates: Sequence[float], limit: int | None) -> ValidationSet:
    """The first ``limit`` samples of the benchmark with their scene graphs, and no questions yet."""
    samples: list[Sample] = []
    for sample in benchmark.samples():
        if limit is not None and len(samples) >= limit:
            break
        samples.append(sample)
    vset = ValidationSet(benchmark=benchmark.name, data=str(benchmark.spec().get("data")), rates=list(rates),
                         samples={s.id: s for s in samples}, scenes={})
    for sample in samples:
        scene = benchmark.scene(sample)
        if scene is not None:
            vset.scenes[sample.id] = scene
    return vset


# -- judging ----------------------------------------------------------------------------------------------


async def judge_validation_set(
    vset: ValidationSet,
    judge: Judge,
    cache: Cache,
    *,
    chunk_size: int = 128,
    progress: ProgressSink | None = None,
) -> dict[ClaimKey, Verdict]:
    """The judge's verdict on every distinct (question, claim) of the set, judged once each (cached)."""
    from halluscope.benchmarks.triplets import score_open_answers

    progress = progress or NullProgress()
    per_sample: dict[str, list[Claim]] = defaultdict(list)
    for sample_id, subject, relation, obj in vset.distinct_claims():
        per_sample[sample_id].append(Claim(subject=subject, relation=relation, object=obj))
    pairs = [(vset.samples[sid], Response(id=sid, response="", claims=claims))
             for sid, claims in per_sample.items()]
    ctx = ScoringContext(cache=cache, judge=judge)
    verdicts: dict[ClaimKey, Verdict] = {}
    progress.start(f"judging with {judge.name}", total=len(pairs))
    for start in range(0, len(pairs), chunk_size):
        chunk = pairs[start : start + chunk_size]
        records = await score_open_answers(chunk, lambda s: vset.scenes.get(s.id), ctx)
        for record in records:
            for judged in record.claims:
                verdicts[(record.id, judged.subject, judged.relation, judged.object)] = Verdict(
                    label=judged.verdict, error=judged.error, score=judged.score, evidence=judged.evidence,
                    explanation=judged.explanation,
                )
        progress.advance(len(chunk))
    return verdicts


# -- scoring the judge ---------------------------------------------------------------------------------------


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def detection(truth: dict[ClaimKey, TruthClaim], verdicts: dict[ClaimKey, Verdict],
              predict: Callable[[Verdict], bool] | None = None) -> dict[str, Any]:
    """Claim-level confusion of "hallucinated" against the truth; unjudged claims are counted apart."""
    predict = predict or (lambda v: v.label == VerdictLabel.HALLUCINATED)
    tp = fp = fn = tn = unjudged = 0
    caught: dict[str, list[bool]] = defaultdict(list)
    for key, claim in truth.items():
        verdict = verdicts.get(key)
        if verdict is None or verdict.label == VerdictLabel.UNJUDGED:
            unjudged += 1
            continue
        said = predict(verdict)
        if claim.error is not None:
            caught[claim.error.value].append(said)
            tp += said
            fn += not said
        else:
            fp += said
            tn += not said
    precision, recall, specificity = _ratio(tp, tp + fp), _ratio(tp, tp + fn), _ratio(tn, tn + fp)
    f1 = 2 * precision * recall / (precision + recall) if precision and recall else None
    balanced = (recall + specificity) / 2 if recall is not None and specificity is not None else None
    return {
        "tp": tp, "fp": fp, "fn": fn, "tn": tn, "unjudged": unjudged,
        "precision": precision, "recall": recall, "specificity": specificity, "f1": f1,
        "balanced_accuracy": balanced,
        "recall_by_error": {kind: fmean(values) for kind, values in sorted(caught.items())},
    }


def typing(truth: dict[ClaimKey, TruthClaim], verdicts: dict[ClaimKey, Verdict]) -> dict[str, Any]:
    """Object-vs-relation typing of the planted errors the judge caught (attribute counts as relation)."""
    confusion: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    typed = correct = caught = 0
    for key, claim in truth.items():
        verdict = verdicts.get(key)
        if claim.error is None or verdict is None or verdict.label != VerdictLabel.HALLUCINATED:
            continue
        caught += 1
        predicted = verdict.error.value if verdict.error is not None else "untyped"
        confusion[claim.error.value][predicted] += 1
        if verdict.error is None:
            continue
        typed += 1
        correct += (claim.error == ErrorType.OBJECT) == (verdict.error == ErrorType.OBJECT)
    return {
        "accuracy": _ratio(correct, typed),
        "coverage": _ratio(typed, caught),
        "confusion": {k: dict(v) for k, v in sorted(confusion.items())},
    }


def calibration_curve(vset: ValidationSet, verdicts: dict[ClaimKey, Verdict]) -> list[CurvePoint]:
    """Injected vs measured Hallu-Q per rate, over the same questions and the same judged claims."""
    from halluscope.metrics.triplets import triplet_metrics

    points = []
    for rate in vset.rates:
        records: list[SampleRecord] = []
        injected: list[float] = []
        n_claims = 0
        for question in (q for q in vset.questions if q.rate == rate):
            judged: list[JudgedClaim] = []
            falsified = 0
            for claim in question.claims:
                verdict = verdicts.get((question.sample_id, claim.subject, claim.relation, claim.object))
                if verdict is None or verdict.label == VerdictLabel.UNJUDGED:
                    continue
                judged.append(JudgedClaim.from_parts(claim.claim(), verdict))
                falsified += claim.error is not None
            if not judged:
                continue
            n_claims += len(judged)
            injected.append(falsified / len(judged))
            records.append(SampleRecord(id=question.sample_id, prompt="", response="", claims=judged,
                                        image_id=question.image_id))
        measured = triplet_metrics(records).metrics if records else {}
        points.append(CurvePoint(
            rate=rate,
            questions=len(records),
            claims=n_claims,
            injected_hallu_q=100 * fmean(injected) if injected else None,
            measured_hallu_q=measured.get("hallu_q"),
            measured_object_hallu_q=measured.get("object_hallu_q"),
            measured_relation_hallu_q=measured.get("relation_hallu_q"),
        ))
    return points


def _line(points: list[CurvePoint]) -> tuple[float | None, float | None, float | None]:
    pairs = [(p.injected_hallu_q, p.measured_hallu_q) for p in points
             if p.injected_hallu_q is not None and p.measured_hallu_q is not None]
    if not pairs:
        return None, None, None
    mae = fmean(abs(m - i) for i, m in pairs)
    if len(pairs) < 2:
        return mae, None, None
    mean_x = fmean(i for i, _ in pairs)
    mean_y = fmean(m for _, m in pairs)
    sxx = sum((i - mean_x) ** 2 for i, _ in pairs)
    if sxx == 0:
        return mae, None, None
    slope = sum((i - mean_x) * (m - mean_y) for i, m in pairs) / sxx
    return mae, slope, mean_y - slope * mean_x


def evaluate(vset: ValidationSet, verdicts: dict[ClaimKey, Verdict], judge: Judge,
             seconds: float = 0.0) -> ValidationReport:
    """The full report for one judge's verdicts on a validation set."""
    truth = vset.distinct_claims()
    found = detection(truth, verdicts)
    typed = typing(truth, verdicts)
    curve = calibration_curve(vset, verdicts)
    mae, slope, intercept = _line(curve)
    return ValidationReport(
        judge=judge.name,
        judge_identity=judge.identity(),
        benchmark=vset.benchmark,
        data=vset.data,
        questions=len({q.sample_id for q in vset.questions}),
        claims=len(truth),
        hallucinated_claims=sum(1 for c in truth.values() if c.error is not None),
        unjudged_claims=found["unjudged"],
        precision=found["precision"],
        recall=found["recall"],
        specificity=found["specificity"],
        f1=found["f1"],
        balanced_accuracy=found["balanced_accuracy"],
        recall_by_error=found["recall_by_error"],
        typing_accuracy=typed["accuracy"],
        typing_coverage=typed["coverage"],
        typing_confusion=typed["confusion"],
        curve=curve,
        curve_mae=mae,
        curve_slope=slope,
        curve_intercept=intercept,
        seconds=round(seconds, 2),
    )


def validate_judge(vset: ValidationSet, judge: Judge, cache: Cache, *,
                   progress: ProgressSink | None = None) -> ValidationReport:
    """Judge the set and score the judge (synchronous entry point)."""
    started = time.perf_counter()
    verdicts = asyncio.run(judge_validation_set(vset, judge, cache, progress=progress))
    return evaluate(vset, verdicts, judge, seconds=time.perf_counter() - started)


# -- calibrating the similarity judge --------------------------------------------------------------------


DEFAULT_FILTER_GRID = tuple(round(0.30 + 0.05 * i, 2) for i in range(11))  # 0.30 … 0.80
DEFAULT_VERDICT_GRID = tuple(round(0.30 + 0.01 * i, 2) for i in range(66))  # 0.30 … 0.95


class CalibrationResult(BaseModel):
    """The best threshold pair for one embedding model on one validation set."""

    model: str
    benchmark: str
    filter_threshold: float
    verdict_threshold: float
    balanced_accuracy: float
    #: Two-fold estimate: thresholds fitted on one half of the images, scored on the other, averaged.
    heldout_balanced_accuracy: float | None
    #: The paper's thresholds (0.5, 0.6) on the same claims, for comparison.
    paper_balanced_accuracy: float | None
    claims: int
    profile_path: str | None = None


def _balanced(scores: list[tuple[float, bool]], threshold: float) -> float | None:
    """Balanced accuracy of "hallucinated iff score <= threshold" (the judge's own rule)."""
    tp = sum(1 for s, bad in scores if bad and s <= threshold)
    fn = sum(1 for s, bad in scores if bad and s > threshold)
    tn = sum(1 for s, bad in scores if not bad and s > threshold)
    fp = sum(1 for s, bad in scores if not bad and s <= threshold)
    if not tp + fn or not tn + fp:
        return None
    return (tp / (tp + fn) + tn / (tn + fp)) / 2


def _best(table: dict[float, list[tuple[float, bool]]], verdict_grid: Sequence[float]
          ) -> tuple[float, float, float]:
    """(filter, verdict, balanced accuracy) maximising balanced accuracy; ties go to the plateau's middle."""
    best: tuple[float, float, float] | None = None
    for f, scores in table.items():
        values = [(v, _balanced(scores, v)) for v in verdict_grid]
        valid = [(v, b) for v, b in values if b is not None]
        if not valid:
            continue
        top = max(b for _, b in valid)
        plateau = [v for v, b in valid if b >= top - 1e-12]
        middle = plateau[len(plateau) // 2]
        if best is None or top > best[2] + 1e-12:
            best = (f, middle, top)
    if best is None:
        raise ValueError("calibration needs both true and hallucinated claims")
    return best


def fold_of(image_id: str) -> int:
    """Which half of a two-fold split an image falls in (stable across runs and machines)."""
    return int(content_key("halluscope-fold", image_id)[:8], 16) % 2


def calibrate_similarity(
    vset: ValidationSet,
    *,
    model: str | None = None,
    cache: Cache,
    filter_grid: Sequence[float] = DEFAULT_FILTER_GRID,
    verdict_grid: Sequence[float] = DEFAULT_VERDICT_GRID,
    progress: ProgressSink | None = None,
) -> CalibrationResult:
    """Grid-search the similarity judge's thresholds for the best balanced accuracy on ``vset``."""
    from halluscope.embeddings import load_embedder
    from halluscope.judges.similarity import (
        DEFAULT_FILTER_THRESHOLD,
        DEFAULT_VERDICT_THRESHOLD,
        SimilarityJudge,
    )

    progress = progress or NullProgress()
    embedder = load_embedder(model, cache=cache)
    truth = vset.distinct_claims()
    per_sample: dict[str, list[tuple[ClaimKey, TruthClaim]]] = defaultdict(list)
    for key, claim in truth.items():
        per_sample[key[0]].append((key, claim))
    items = [JudgeItem(sample_id=sid, claims=[c.claim() for _, c in rows], scene=vset.scenes[sid])
             for sid, rows in per_sample.items()]
    image_of = {sid: vset.samples[sid].image_id or sid for sid in per_sample}

    grid = sorted({*filter_grid, DEFAULT_FILTER_THRESHOLD})
    tables: dict[float, list[tuple[float, bool, str]]] = {}
    progress.start("calibrating similarity thresholds", total=len(grid))
    for f in grid:
        judge = SimilarityJudge(embedder=embedder, filter_threshold=f, verdict_threshold=0.0, cache=cache)
        results = judge.judge_many_sync(items)
        rows: list[tuple[float, bool, str]] = []
        for item, verdicts in zip(items, results, strict=True):
            if not isinstance(verdicts, list):
                continue
            for (_, claim), verdict in zip(per_sample[item.sample_id], verdicts, strict=True):
                if verdict.score is not None:
                    rows.append((verdict.score, claim.error is not None, image_of[item.sample_id]))
        tables[f] = rows
        progress.advance(1)

    def fit(fold: int | None) -> tuple[float, float, float]:
        """Best thresholds on every image (None) or on the images of one fold."""
        return _best({f: [(s, bad) for s, bad, img in rows if fold is None or fold_of(img) == fold]
                      for f, rows in tables.items()}, verdict_grid)

    f_best, v_best, ba = fit(None)
    folds = []
    for fold in (0, 1):
        try:
            f_fit, v_fit, _ = fit(fold)
        except ValueError:  # a fold without both kinds of claims
            continue
        score = _balanced([(s, bad) for s, bad, img in tables[f_fit] if fold_of(img) != fold], v_fit)
        if score is not None:
            folds.append(score)
    paper = _balanced([(s, bad) for s, bad, _ in tables[DEFAULT_FILTER_THRESHOLD]], DEFAULT_VERDICT_THRESHOLD)
    return CalibrationResult(
        model=model or "all-MiniLM-L6-v2",
        benchmark=vset.benchmark,
        filter_threshold=f_best,
        verdict_threshold=v_best,
        balanced_accuracy=ba,
        heldout_balanced_accuracy=fmean(folds) if folds else None,
        paper_balanced_accuracy=paper,
        claims=len(tables[f_best]),
    )


def save_calibration(name: str, result: CalibrationResult) -> Path:
    """Save the thresholds as a named similarity-judge profile (``--judge-opt profile=NAME`` reads it)."""
    import datetime as dt

    from halluscope.judges.similarity import JudgeProfile, save_profile

    profile = JudgeProfile(model=result.model, filter_threshold=result.filter_threshold,
                           verdict_threshold=result.verdict_threshold)
    path = save_profile(
        name, profile,
        calibrated_on=result.benchmark,
        balanced_accuracy=round(result.balanced_accuracy, 4),
        heldout_balanced_accuracy=(round(result.heldout_balanced_accuracy, 4)
                                   if result.heldout_balanced_accuracy is not None else None),
        paper_balanced_accuracy=(round(result.paper_balanced_accuracy, 4)
                                 if result.paper_balanced_accuracy is not None else None),
        claims=result.claims,
        created=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    )
    result.profile_path = str(path)
    return path


__all__ = [
    "DEFAULT_RATES",
    "CalibrationResult",
    "CurvePoint",
    "TruthClaim",
    "ValidationQuestion",
    "ValidationReport",
    "ValidationSet",
    "calibrate_similarity",
    "calibration_curve",
    "detection",
    "evaluate",
    "judge_validation_set",
    "save_calibration",
    "synthetic_validation_set",
    "tri_he_validation_set",
    "typing",
    "validate_judge",
]
