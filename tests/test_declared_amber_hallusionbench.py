"""AMBER's and HallusionBench's declared headline metrics: what a user reads in ``metrics.json``'s
``intervals``.

Two things a user would notice if they were wrong: the interval resamples the unit the questions really share
(AMBER's image, HallusionBench's figure set), so on answers where a unit's questions stand or fall together it
is counted over those units and is wider than an interval that took each question as independent; and each
declared estimate is the very figure the benchmark reports, in every mode (AMBER's paper mode, HallusionBench
rated by VLMEvalKit, also after a resume that scored nothing).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from halluscope.benchmarks import ScoringContext
from halluscope.benchmarks.amber import Amber, amber_table
from halluscope.benchmarks.hallusionbench import HallusionBench
from halluscope.cache import Cache
from halluscope.judges.hallusionbench import VLMEvalKitGrader
from halluscope.metrics.declared import declared_intervals
from halluscope.runs.runner import headline_intervals, run_benchmark
from halluscope.runs.store import read_records
from halluscope.stages import BenchmarkInterface
from halluscope.types import Response, Sample
from tests.paths import AMBER_DIR, AMBER_EXCERPT, HALLUSIONBENCH_DIR, HALLUSIONBENCH_EXCERPT

AMBER_DATA = [AMBER_EXCERPT, pytest.param(AMBER_DIR, marks=pytest.mark.full_data)]
HB_DATA = [HALLUSIONBENCH_EXCERPT, pytest.param(HALLUSIONBENCH_DIR, marks=pytest.mark.full_data)]
YES_NO_TYPES = ["existence", "attribute", "relation"]


def _answer(sample: Sample, right: bool) -> str:
    """A bare "Yes" / "No": right or wrong as asked, read alike by every rule."""
    said_yes = (sample.metadata["label"] == "yes") == right
    return "Yes" if said_yes else "No"


def _unit_by_unit(samples: list[Sample], unit_of: Callable[[Sample], str]) -> dict[str, Response]:
    """Every question of every other unit answered right, the rest wrong: a unit's questions agree."""
    order = {u: i for i, u in enumerate(dict.fromkeys(unit_of(s) for s in samples))}
    return {s.id: Response(id=s.id, response=_answer(s, order[unit_of(s)] % 2 == 0)) for s in samples}


def _run(bench: BenchmarkInterface, responses: dict[str, Response], out: Path, **ctx: Any) -> dict[str, Any]:
    run_benchmark(bench, responses, ScoringContext(cache=Cache(None), **ctx), out, show_progress=False)
    metrics: dict[str, Any] = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    return metrics


def _estimates_are_the_figures(metrics: dict[str, Any], names: list[str]) -> None:
    assert sorted(metrics["intervals"]) == sorted(names)
    for name in names:
        interval = metrics["intervals"][name]
        assert interval["estimate"] == pytest.approx(metrics["metrics"][name], rel=1e-12), name
        assert interval["low"] <= interval["estimate"] <= interval["high"], name


def _width(interval: Any) -> float:
    return float(interval.high - interval.low)


@pytest.mark.parametrize("data", AMBER_DATA)
def test_amber_intervals_resample_images(tmp_path: Path, data: Path) -> None:
    bench = Amber(data, types=YES_NO_TYPES)
    samples = list(bench.samples())
    metrics = _run(bench, _unit_by_unit(samples, lambda s: str(s.image_id)), tmp_path / "run")
    _estimates_are_the_figures(metrics, ["accuracy", "precision", "recall", "f1"])
    accuracy = metrics["intervals"]["accuracy"]
    assert accuracy["unit"] == "image"
    assert (accuracy["n"], accuracy["units"]) == (len(samples), len({s.image_id for s in samples}))

    # The same rows taken one question at a time (Wilson's interval) claim a precision the data has not.
    records = read_records(tmp_path / "run")
    table = amber_table(records)
    declarations = bench.metric_declarations()
    by_image = declared_intervals(declarations, {"items": table})["accuracy"]
    by_question = declared_intervals(declarations, {"items": replace(table, clusters=None)})["accuracy"]
    assert by_image is not None and by_question is not None
    assert by_question.method == "wilson" and by_question.units == len(samples)
    assert _width(by_image) > 1.5 * _width(by_question)


def test_amber_paper_mode_bounds_the_robust_figures_it_reports(tmp_path: Path) -> None:
    """Paper mode's headline is the official 0.1-rounded arithmetic (no interval); the robust figures the run
    reports beside it get theirs, equal to a count made by hand over hand-written answers."""
    bench = Amber(AMBER_EXCERPT, types=["existence"], mode="paper")
    samples = list(bench.samples())
    # Each answer with its robust reading: "no" is AMBER's positive class; a refusal is unanswered.
    answers = [("Yes", "yes"), ("No, there is not.", "no"), ("yes.", "yes"), ("I cannot tell from the image.", None)]
    responses: dict[str, Response] = {}
    said: dict[str, str | None] = {}
    for i, sample in enumerate(samples):
        text, reading = answers[i % len(answers)]
        responses[sample.id] = Response(id=sample.id, response=text)
        said[sample.id] = reading
    metrics = _run(bench, responses, tmp_path / "run")

    labels = {s.id: s.metadata["label"] for s in samples}
    answered = [i for i in said if said[i] is not None]
    right = [i for i in answered if said[i] == labels[i]]
    tp = sum(1 for i in right if labels[i] == "no")
    said_no = sum(1 for i in answered if said[i] == "no")
    truly_no = sum(1 for i in answered if labels[i] == "no")
    by_hand = {
        "robust_accuracy": 100 * len(right) / len(answered),
        "robust_precision": 100 * tp / said_no,
        "robust_recall": 100 * tp / truly_no,
        "robust_f1": 100 * 2 * tp / (said_no + truly_no),
    }
    _estimates_are_the_figures(metrics, list(by_hand))
    for name, value in by_hand.items():
        assert metrics["metrics"][name] == pytest.approx(value, rel=1e-12), name
    assert metrics["metrics"]["accuracy"] == metrics["metrics"]["paper_accuracy"]  # the headline, undeclared


def _figure_set(sample: Sample) -> str:
    return "/".join(str(sample.metadata[k]) for k in ("category", "subcategory", "set_id"))


@pytest.mark.parametrize("data", HB_DATA)
def test_hallusionbench_intervals_resample_figure_sets(tmp_path: Path, data: Path) -> None:
    bench = HallusionBench(data)
    samples = list(bench.samples())
    metrics = _run(bench, _unit_by_unit(samples, _figure_set), tmp_path / "run")
    _estimates_are_the_figures(metrics, ["aAcc", "fAcc", "qAcc", "easy_qAcc", "hard_qAcc"])
    sets = len({_figure_set(s) for s in samples})
    for name in ("aAcc", "qAcc"):
        interval = metrics["intervals"][name]
        assert (interval["unit"], interval["units"]) == ("figure set", sets), name
    assert metrics["intervals"]["aAcc"]["n"] == len(samples)

    tables = bench.metric_tables(read_records(tmp_path / "run"))
    declarations = [d for d in bench.metric_declarations() if d.name == "aAcc"]
    by_set = declared_intervals(declarations, tables)["aAcc"]
    unclustered = {"questions": replace(tables["questions"], clusters=None)}
    by_question = declared_intervals(declarations, unclustered)["aAcc"]
    assert by_set is not None and by_question is not None and by_question.method == "wilson"
    assert _width(by_set) > 1.5 * _width(by_question)


def test_hallusionbench_rated_by_vlmevalkit_declares_its_rating(tmp_path: Path) -> None:
    """With ``--judge vlmevalkit`` the headline aAcc / fAcc / qAcc are VLMEvalKit's rating (its fAcc counts
    the VS questions asked without a figure as a figure of their own), and so are their intervals; a resumed
    run, whose grader only the records tell, declares the same."""
    bench = HallusionBench(HALLUSIONBENCH_EXCERPT)
    samples = list(bench.samples())
    texts = ["Yes", "No", "I am not sure.", "yes, it is", "No."]
    responses = {s.id: Response(id=s.id, response=texts[i % len(texts)]) for i, s in enumerate(samples)}
    out = tmp_path / "run"
    metrics = _run(bench, responses, out, judge=VLMEvalKitGrader())
    names = ["aAcc", "fAcc", "qAcc", "easy_qAcc", "hard_qAcc"]
    _estimates_are_the_figures(metrics, names)
    assert metrics["metrics"]["fAcc"] != metrics["metrics"]["official_fAcc"]

    resumed, _ = headline_intervals(HallusionBench(HALLUSIONBENCH_EXCERPT), read_records(out))
    for name in names:
        assert resumed[name] == metrics["intervals"][name], name
