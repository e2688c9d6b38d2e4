"""Synthetic: open questions about rendered scenes whose scene graphs are complete and exact.

Built by ``halluscope build synthetic`` (see :mod:`halluscope.builders.synthetic` for the folder layout and the
rules that make each relation true). Scored like Tri-HE (Wu et al., "Unified Triplet-Level Hallucination
Evaluation for Large Vision-Language Models"): each answer's claims are judged against the image's scene
graph, giving Hallu-Q / Hallu-I and their object and relation parts.

Sample ids are ``<image_id>-<question index>`` (``syn00003-1``). When the answers come from a simulator
(``sim/...``), whose responses record which claims it falsified, ``metrics.json`` also carries the injected
rates (``injected_hallu_q`` and its object / relation / attribute parts) and how well the judge recovered
them claim by claim (``judge_precision``, ``judge_recall``, ``judge_balanced_accuracy``), so a run is its
own calibration check.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterator, Sequence
from functools import cached_property
from pathlib import Path
from statistics import fmean
from typing import Any, ClassVar

from halluscope.benchmarks.base import MetricsReport, ScoringContext
from halluscope.benchmarks.tri_he import TriHELayout
from halluscope.benchmarks.triplets import score_open_answers, triplet_declarations, triplet_tables
from halluscope.builders.synthetic import (
    SyntheticDataError,
    SyntheticQuestion,
    SyntheticScene,
    build_synthetic,
    load_questions,
    load_scenes,
)
from halluscope.cache import default_cache_dir
from halluscope.metrics.triplets import triplet_metrics
from halluscope.scene.graph import SceneGraph
from halluscope.stages import MetricDeclaration, MetricTable
from halluscope.types import Response, Sample, SampleRecord, VerdictLabel

#: What ``--benchmark synthetic`` builds (once, into the user cache) when no ``--data`` is given.
DEFAULT_N = 100
DEFAULT_SEED = 0


def default_data_dir(n: int = DEFAULT_N, seed: int = DEFAULT_SEED) -> Path:
    """The user-cache folder of the default synthetic set, built on first use (a few seconds)."""
    env = os.environ.get("HALLUSCOPE_SYNTHETIC")
    if env:
        return Path(env)
    folder = default_cache_dir() / "data" / f"synthetic-seed{seed}-n{n}"
    if not (folder / "questions.json").exists():
        build_synthetic(folder, n=n, seed=seed)
    return folder


class SyntheticBenchmark(TriHELayout):
    """Open questions about synthetic scenes, scored claim by claim against their exact scene graphs."""

    name: ClassVar[str] = "synthetic"
    default_extractor: ClassVar[str | None] = "rules"
    default_judge: ClassVar[str | None] = "typed"

    def __init__(self, data: Path | None = None) -> None:
        self.path = Path(data) if data is not None else default_data_dir()
        if not self.path.is_dir():
            raise SyntheticDataError(
                f"synthetic data folder {self.path} does not exist; build it with "
                f"`halluscope build synthetic --n 100 --out {self.path}`"
            )
        self.scene_data  # noqa: B018 - fail early, naming the folder, if it is not a synthetic build
        self.questions  # noqa: B018

    @cached_property
    def scene_data(self) -> dict[str, SyntheticScene]:
        return load_scenes(self.path)

    @cached_property
    def questions(self) -> list[SyntheticQuestion]:
        questions = load_questions(self.path)
        for question in questions:
            if question.image_id not in self.scene_data:
                raise SyntheticDataError(
                    f"{self.path}/questions.json: question {question.id} names image {question.image_id!r}, "
                    "which scenes.json does not have"
                )
        return questions

    @cached_property
    def scenes(self) -> dict[str, SceneGraph]:
        return {image_id: scene.graph() for image_id, scene in self.scene_data.items()}

    def spec(self, samples: Sequence[Sample] | None = None) -> dict[str, Any]:
        return {"benchmark": self.name, "data": str(self.path.resolve())}

    def samples(self) -> Iterator[Sample]:
        for question in self.questions:
            scene = self.scene_data[question.image_id]
            yield Sample(
                id=question.id,
                benchmark=self.name,
                prompt=question.question,
                image_id=question.image_id,
                image_path=str((self.path / scene.image).resolve()),
                reference=question.answer,
                metadata={
                    "question_index": question.index,
                    "template": question.template,
                    "gt_triplets": [f"({s}, {r}, {o})" for s, r, o in question.triplets],
                },
            )

    def scene(self, sample: Sample) -> SceneGraph | None:
        return self.scenes.get(sample.image_id or "")

    async def score_many(
        self, pairs: Sequence[tuple[Sample, Response | None]], ctx: ScoringContext
    ) -> list[SampleRecord]:
        return await score_open_answers(pairs, self.scene, ctx)

    def metric_declarations(self) -> Sequence[MetricDeclaration]:
        # Every rate of ``triplet_metrics``; a judge that does not type or does not read claims three ways
        # leaves those rates undefined, and their intervals None, from the records themselves.
        # The simulator's injected rates and the judge's claim-level precision / recall are left undeclared:
        # they grade the judge against the simulator's truth, not the model, and exist only for ``sim/`` runs.
        return triplet_declarations()

    def metric_tables(self, records: Sequence[SampleRecord]) -> dict[str, MetricTable]:
        return triplet_tables(records)

    def metrics(self, records: Sequence[SampleRecord]) -> MetricsReport:
        report = triplet_metrics(records, benchmark=self.name)
        known = known_truth_metrics(records)
        if known:
            report.metrics.update(known["metrics"])
            report.counts.update(known["counts"])
        return report


def _sim_claims(record: SampleRecord) -> list[dict[str, Any]] | None:
    response_metadata = record.metadata.get("response_metadata") or {}
    sim = response_metadata.get("sim") if isinstance(response_metadata, dict) else None
    claims = sim.get("claims") if isinstance(sim, dict) else None
    return claims if isinstance(claims, list) else None


def known_truth_metrics(records: Sequence[SampleRecord]) -> dict[str, Any] | None:
    """Injected rates and claim-level judge accuracy, for records whose answers came from a simulator.

    The injected rates are averaged exactly like the measured ones (per question, then ×100), over the
    same questions, so ``injected_hallu_q`` and ``hallu_q`` can be compared directly. None when no record
    carries a simulator's truth.
    """
    per_kind: dict[str, list[float]] = defaultdict(list)
    per_image: dict[str, list[float]] = defaultdict(list)
    tp = fp = fn = tn = unmatched = 0
    seen = False
    for record in records:
        truth = _sim_claims(record)
        if truth is None or record.failure is not None:
            continue
        seen = True
        by_claim = {(c["subject"], c["relation"], c["object"]): c for c in truth}
        judged = [c for c in record.claims if c.verdict != VerdictLabel.UNJUDGED]
        if not judged:
            continue
        falsified = {"all": 0, "object": 0, "relation": 0, "attribute": 0}
        for claim in judged:
            fact = by_claim.get((claim.subject, claim.relation, claim.object))
            if fact is None:
                unmatched += 1
                continue
            is_false = bool(fact.get("falsified"))
            said_false = claim.verdict == VerdictLabel.HALLUCINATED
            tp += is_false and said_false
            fp += (not is_false) and said_false
            fn += is_false and not said_false
            tn += (not is_false) and not said_false
            if is_false:
                falsified["all"] += 1
                if fact.get("error") in falsified:
                    falsified[str(fact["error"])] += 1
        for kind, count in falsified.items():
            per_kind[kind].append(count / len(judged))
        per_image[record.image_id or record.id].append(falsified["all"] / len(judged))
    if not seen:
        return None
    metrics: dict[str, float | None] = {}
    for kind, values in per_kind.items():
        prefix = "" if kind == "all" else f"{kind}_"
        metrics[f"injected_{prefix}hallu_q"] = 100 * fmean(values) if values else None
    metrics["injected_hallu_i"] = 100 * fmean(fmean(v) for v in per_image.values()) if per_image else None
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    specificity = tn / (tn + fp) if tn + fp else None
    metrics["judge_precision"] = precision
    metrics["judge_recall"] = recall
    metrics["judge_specificity"] = specificity
    metrics["judge_balanced_accuracy"] = (
        (recall + specificity) / 2 if recall is not None and specificity is not None else None
    )
    counts = {"injected_claims": tp + fn, "truth_matched_claims": tp + fp + fn + tn,
              "truth_unmatched_claims": unmatched}
    return {"metrics": metrics, "counts": counts}
