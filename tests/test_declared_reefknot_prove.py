"""Reefknot's and PROVE's declared headline metrics: each declared estimate is the benchmark's own figure, and
its interval resamples what the questions share (the image), not the questions one by one."""

from __future__ import annotations

import asyncio
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from halluscope.benchmarks.prove import Prove
from halluscope.benchmarks.reefknot import Reefknot
from halluscope.cache import Cache
from halluscope.judges.entailment import FunctionEntailment
from halluscope.metrics.declared import declared_intervals, declared_value
from halluscope.metrics.stats import Interval
from halluscope.runs.runner import headline_intervals
from halluscope.stages import MetricDeclaration, MetricTable, ScoringContext
from halluscope.types import Response, Sample, SampleRecord
from tests.paths import REPO_ROOT

PROVE_FILE = REPO_ROOT / "tests" / "data" / "prove" / "prove.json"

#: What Reefknot declares for a run over all three tasks (the R score, a mean of per-task rates, is not).
REEFKNOT_HEADLINES = {
    "halr_yesno", "halr_mcq", "halr_vqa", "yes_ratio", "yesno_precision", "yesno_recall", "yesno_f1",
    "yesno_pair_accuracy", "entropy_detector_precision_yesno", "entropy_detector_recall_yesno",
    "entropy_detector_precision_mcq", "entropy_detector_recall_mcq",
}  # fmt: skip


def _exact_match(premise: str, hypothesis: str) -> bool:
    return premise.lower().strip(" .") == hypothesis.lower().strip(" .")


def _probabilities(i: int, task: str) -> dict[str, Any]:
    """Answer-option probabilities for the confidence analysis, on two answers in three (none on the rest)."""
    if i % 3 == 2:
        return {}
    top = round(0.25 + ((i * 37) % 75) / 100, 2)
    if task == "yesno":
        return {"yes_prob": top, "no_prob": round(1 - top, 2)}
    rest = round((1 - top) / 3, 4)
    return {"option_probs": {"A": top, "B": rest, "C": rest, "D": rest}} if task == "mcq" else {}


def _score(bench: Reefknot, answer: dict[str, str | None]) -> list[SampleRecord]:
    pairs = [
        (s, None if answer[s.id] is None else Response(
            id=s.id, response=str(answer[s.id]), metadata=_probabilities(i, str(s.metadata["task"]))
        ))
        for i, s in enumerate(bench.samples())
    ]  # fmt: skip
    return asyncio.run(bench.score_many(pairs, ScoringContext(cache=Cache(None))))


def _varied_answer(i: int, sample: Sample) -> str | None:
    """Right, wrong, refused, empty, or no response at all, spread over the samples by position."""
    label, task = str(sample.reference), sample.metadata["task"]
    wrong = {"yesno": "yes" if label.lower() == "no" else "no", "mcq": "A" if label != "A" else "B"}.get(
        task, f"{sample.metadata.get('subject')} is far from {sample.metadata.get('object')}."
    )
    return [label, wrong, f"The answer is {label}.", "I cannot tell from the image.", "", None, label.upper()][
        (i * 5 + i // 3) % 7
    ]


def _width(interval: Interval) -> float:
    return interval.high - interval.low


@pytest.mark.parametrize("mode", ["robust", "paper"])
def test_reefknot_declared_estimates_are_its_own_figures(reefknot_dir: Path, mode: str) -> None:
    """Every headline Reefknot reports per task, in either rule set, is what its declaration computes from the
    same records (failures, unanswered items and half-answered twin pairs left out the same way)."""
    bench = Reefknot(data=reefknot_dir, mode=mode, entailment=FunctionEntailment(_exact_match))
    samples = list(bench.samples())
    records = _score(bench, {s.id: _varied_answer(i, s) for i, s in enumerate(samples)})
    report = bench.metrics(records)
    declarations = bench.metric_declarations()
    assert {d.name for d in declarations} == REEFKNOT_HEADLINES
    assert report.counts["missing_response"] > 0 and 0 < report.counts["with_answer_probs"] < report.counts["scored"]
    # The official rules read every answer (an empty one is wrong); halluscope's leave refusals unanswered.
    assert (report.counts["unanswered"] > 0) == (mode == "robust")
    tables = bench.metric_tables(records)
    for declaration in declarations:
        figure = report.metrics[declaration.name]
        assert figure is not None, declaration.name
        assert math.isclose(declared_value(declaration, tables) or math.nan, figure, rel_tol=1e-9, abs_tol=1e-9), (
            declaration.name
        )
    intervals, _ = headline_intervals(bench, records)
    images = {r.image_id for r in records if r.failure is None and r.field("task") == "yesno"}
    assert intervals["halr_yesno"] is not None and intervals["halr_yesno"]["units"] == len(images)


def test_reefknot_interval_resamples_images(reefknot_dir: Path) -> None:
    """When a model gets an image's questions all right or all wrong (both twins of a pair ask about the same
    image), the yes/no hallucination rate rests on as many units as there are images, and its interval is
    wider than one that takes every question as independent."""
    bench = Reefknot(data=reefknot_dir, tasks="yesno")
    samples = list(bench.samples())
    images = sorted({str(s.image_id) for s in samples})
    right = {image for k, image in enumerate(images) if k % 2 == 0}

    def answer(sample: Sample) -> str:
        label = str(sample.reference).lower()
        return label if sample.image_id in right else ("no" if label == "yes" else "yes")

    records = _score(bench, {s.id: answer(s) for s in samples})
    tables = bench.metric_tables(records)
    halr = next(d for d in bench.metric_declarations() if d.name == "halr_yesno")
    clustered = declared_intervals([halr], tables)["halr_yesno"]
    assert clustered is not None
    assert (clustered.unit, clustered.n, clustered.units) == ("image", len(samples), len(images))
    items = {"yesno": replace(tables["yesno"], clusters=None)}
    independent = declared_intervals([replace(halr, unit="item")], items)["halr_yesno"]
    assert independent is not None and independent.units == len(samples)
    assert _width(clustered) > 1.2 * _width(independent)
    pairs = declared_intervals([d for d in bench.metric_declarations() if d.name == "yesno_pair_accuracy"], tables)
    pair_interval = pairs["yesno_pair_accuracy"]
    assert pair_interval is not None
    paired_images = {s.image_id for s in samples if s.metadata.get("pair") is not None}
    assert pair_interval.units == len(paired_images)


def _prove_record(index: int, image: str, h: float | None, t: float | None, failure: str | None = None) -> SampleRecord:
    return SampleRecord(
        id=f"{image}-{index}", prompt="What is on the table?", response=None if failure else "A cup.",
        failure=failure, image_id=image, metadata={"hscore": h, "tscore": t, "question_type": "what is"},
    )  # fmt: skip


def test_prove_scores_from_hand_written_records() -> None:
    """hscore, tscore and average are means over the questions that have them (a failure in none, an undefined
    score in none of its own), and the declaration gives the same numbers."""
    bench = Prove(data=PROVE_FILE)
    records = [
        _prove_record(0, "img-a", 0.5, 0.9),
        _prove_record(1, "img-a", None, 0.7),  # no reference tuples: hscore undefined
        _prove_record(0, "img-b", 1.0, None),  # a response with no tuples: tscore undefined
        _prove_record(1, "img-b", 0.25, 0.4),
        _prove_record(0, "img-c", 0.0, 0.0, failure="no response"),
    ]
    report = bench.metrics(records)
    want = {
        "hscore": 100 * (0.5 + 1.0 + 0.25) / 3,
        "tscore": 100 * (0.9 + 0.7 + 0.4) / 3,
        "average": 100 * ((0.5 + 0.9) / 2 + (0.25 + 0.4) / 2) / 2,
    }
    tables = bench.metric_tables(records)
    declarations = {d.name: d for d in bench.metric_declarations()}
    assert set(declarations) == set(want)
    for name, value in want.items():
        assert report.metrics[name] == pytest.approx(value, rel=1e-12)
        assert declared_value(declarations[name], tables) == pytest.approx(value, rel=1e-12)
        assert declarations[name].unit == "image"
    intervals, _ = headline_intervals(bench, records)
    assert {name: (i or {}).get("units") for name, i in intervals.items()} == {"hscore": 2, "tscore": 2, "average": 2}
    assert {name: (i or {}).get("n") for name, i in intervals.items()} == {"hscore": 4, "tscore": 4, "average": 4}


def test_prove_interval_resamples_images_not_questions() -> None:
    """An image's questions share its scene graph (and a model's grasp of the photo): when they score alike,
    the interval counts images and is wider than a per-question one."""
    bench = Prove(data=PROVE_FILE)
    records = [
        _prove_record(k, f"img-{image}", (image % 5) / 4, 1 - (image % 3) / 2)
        for image in range(12)
        for k in range(4)
    ]
    tables = bench.metric_tables(records)
    for declaration in bench.metric_declarations():
        clustered = declared_intervals([declaration], tables)[declaration.name]
        independent = declared_intervals(
            [replace(declaration, unit="item")], {"items": replace(tables["items"], clusters=None)}
        )[declaration.name]
        assert clustered is not None and independent is not None
        assert (clustered.units, clustered.n, independent.units) == (12, 48, 48)
        assert _width(clustered) > 1.2 * _width(independent), declaration.name
        figure = bench.metrics(records).metrics[declaration.name]
        assert figure is not None and clustered.low <= figure <= clustered.high


def test_every_declared_table_is_given_even_without_rows(reefknot_dir: Path) -> None:
    """Each declaration reads a table its benchmark gives, holding its components, also on a run whose records
    hold none of a task (``--limit 30`` asks yes/no questions only): the metric is then undefined, not an error."""
    benches = [Reefknot(data=reefknot_dir, entailment=FunctionEntailment(_exact_match)), Prove(data=PROVE_FILE)]
    for bench in benches:
        tables: dict[str, MetricTable] = bench.metric_tables([])
        declarations: list[MetricDeclaration] = list(bench.metric_declarations())
        assert declarations
        for declaration in declarations:
            assert set(declaration.components) <= set(tables[declaration.table].components)
            assert declared_value(declaration, tables) is None
