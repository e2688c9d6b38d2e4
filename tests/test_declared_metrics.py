"""Intervals and paired comparisons made from a benchmark's metric declarations (``metrics.declared``), and
what ``halluscope report`` and ``halluscope.compare`` show from them, on real POPE answers LLaVA wrote."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest
from typer.testing import CliRunner

import halluscope
from halluscope.benchmarks.yes_no import yes_no_declarations, yes_no_table
from halluscope.cli.main import app
from halluscope.metrics.binary import binary_metrics
from halluscope.metrics.declared import compare_declared, declared_intervals, declared_value
from halluscope.metrics.stats import proportion_interval
from halluscope.stages import MetricDeclaration, MetricTable
from halluscope.types import SampleRecord
from tests.paths import FULL_DATA

LLAVA_POPE = FULL_DATA / "peer-outputs" / "pope-llava-1.5-7b-partial"
ACCURACY = MetricDeclaration("accuracy", "ratio", ("correct", "answered"), unit="image")


def _record(i: int, label: str, prediction: str | None, image: str) -> SampleRecord:
    return SampleRecord(
        id=f"q{i}", prompt="Is there a dog?", response=prediction or "hmm", image_id=image, label=label,
        prediction=prediction,
    )  # fmt: skip


def test_yes_no_declarations_give_the_binary_metrics_of_the_same_records() -> None:
    rng = random.Random(3)
    records = [
        _record(i, rng.choice(["yes", "no"]), rng.choice(["yes", "no", None]), f"img{i // 6}") for i in range(300)
    ]
    records.append(SampleRecord(id="failed", prompt="?", response=None, failure="no response", label="yes"))
    scored = [r for r in records if r.failure is None]
    want = binary_metrics([r.field("prediction") for r in scored], [r.field("label") for r in scored])
    tables = {"items": yes_no_table(records, cluster=lambda r: r.image_id or r.id)}
    for declaration in yes_no_declarations("image"):
        assert declared_value(declaration, tables) == pytest.approx(want[declaration.name], rel=1e-12)
    assert tables["items"].ids[-1] == "q299"  # the failed record is in no rate


def test_a_share_of_independent_items_gets_wilsons_interval_and_clustered_items_the_bootstrap() -> None:
    correct = [1.0] * 70 + [0.0] * 30
    components = {"correct": correct, "answered": [1.0] * 100}
    independent = {"items": MetricTable(ids=[str(i) for i in range(100)], components=components)}
    declaration = MetricDeclaration("accuracy", "ratio", ("correct", "answered"))
    interval = declared_intervals([declaration], independent)["accuracy"]
    wilson = proportion_interval(70, 100)
    assert interval is not None and wilson is not None
    assert interval.method == "wilson"
    assert (interval.low, interval.high) == pytest.approx((100 * wilson.low, 100 * wilson.high))
    clustered = {"items": MetricTable(ids=independent["items"].ids, components=independent["items"].components,
                                      clusters=[str(i // 10) for i in range(100)])}  # fmt: skip
    by_image = declared_intervals([ACCURACY], clustered)["accuracy"]
    assert by_image is not None and by_image.method == "bootstrap-percentile"
    assert (by_image.units, by_image.n, by_image.unit) == (10, 100, "image")
    # Ten images each all right or all wrong hold the information of ten answers, not a hundred.
    assert by_image.width > 2 * interval.width


def _simulated_images(rng: np.random.Generator, images: int, per_image: int, truth: float) -> MetricTable:
    """Answers about the same image succeed together: each image has its own chance around ``truth``."""
    image_rates = rng.beta(2 * truth, 2 * (1 - truth), size=images)
    correct = (rng.random((images, per_image)) < image_rates[:, None]).astype(float).ravel()
    ids = [f"{i}-{j}" for i in range(images) for j in range(per_image)]
    clusters = [str(i) for i in range(images) for _ in range(per_image)]
    return MetricTable(ids=ids, components={"correct": list(correct), "answered": [1.0] * len(ids)}, clusters=clusters)


def test_the_clustered_interval_covers_the_truth_where_an_item_level_one_would_not() -> None:
    rng = np.random.default_rng(7)
    truth, covered, naive_covered, runs = 0.8, 0, 0, 150
    for run in range(runs):
        table = _simulated_images(rng, images=40, per_image=6, truth=truth)
        interval = declared_intervals([ACCURACY], {"items": table}, resamples=800, seed=run)["accuracy"]
        assert interval is not None
        covered += interval.contains(100 * truth)
        hits = int(sum(table.components["correct"]))
        naive = proportion_interval(hits, len(table.ids))
        assert naive is not None
        naive_covered += naive.scaled(100).contains(100 * truth)
    assert covered / runs >= 0.88, covered / runs
    assert naive_covered / runs < covered / runs - 0.1, (naive_covered / runs, covered / runs)


def test_equal_models_are_called_different_about_five_percent_of_the_time_per_metric() -> None:
    rng = np.random.default_rng(11)
    calls, runs = 0, 200
    for run in range(runs):
        truth = rng.random(300) < 0.75
        a = (rng.random(300) < np.where(truth, 0.85, 0.25)).astype(float)
        b = (rng.random(300) < np.where(truth, 0.85, 0.25)).astype(float)
        ids = [str(i) for i in range(300)]
        table_a = {"items": MetricTable(ids=ids, components={"correct": list(a), "answered": [1.0] * 300})}
        table_b = {"items": MetricTable(ids=ids, components={"correct": list(b), "answered": [1.0] * 300})}
        declaration = MetricDeclaration("accuracy", "ratio", ("correct", "answered"))
        result = compare_declared([declaration], table_a, table_b, resamples=200, seed=run)["accuracy"]
        assert result is not None and result.test == "mcnemar-exact"
        only_a = int(((a == 1) & (b == 0)).sum())
        only_b = int(((a == 0) & (b == 1)).sum())
        if only_a + only_b:
            assert result.p_value == pytest.approx(binomtest(only_a, only_a + only_b, 0.5).pvalue, rel=1e-9)
        calls += result.p_value < 0.05
    assert calls / runs <= 0.08, calls / runs


def _pope_run(out: Path, answers: Path) -> None:
    args = [
        "run", "-b", "pope", "--data", str(LLAVA_POPE / "pope-labels-e3e3926"), "--responses", str(answers),
        "--bench-opt", "sources=coco", "--bench-opt", "mode=paper",
        "--bench-opt", f"questions={LLAVA_POPE / 'llava_pope_test.jsonl'}", "--only-answered", "--out", str(out),
        "--no-cache", "-q",
    ]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output


def _flipped(answers: Path, out: Path, share: float, *, keep_every: int = 1) -> Path:
    """LLaVA's answers with ``share`` of them turned to the other word (a worse model), every ``keep_every``-th."""
    rng = random.Random(5)
    rows = []
    for index, line in enumerate(answers.read_text().splitlines()):
        row = json.loads(line)
        if index % keep_every:
            continue
        if rng.random() < share:
            row["text"] = "No" if row["text"].strip().lower().startswith("yes") else "Yes"
        rows.append(json.dumps(row))
    out.write_text("\n".join(rows) + "\n")
    return out


@pytest.mark.full_data
def test_report_pairs_two_runs_of_llavas_pope_answers_and_finds_the_worse_one(tmp_path: Path) -> None:
    answers = LLAVA_POPE / "llava-v1.5-7b.jsonl"
    _pope_run(tmp_path / "llava", answers)
    _pope_run(tmp_path / "worse", _flipped(answers, tmp_path / "worse.jsonl", 0.05))
    metrics = json.loads((tmp_path / "llava" / "metrics.json").read_text())
    accuracy = metrics["intervals"]["accuracy"]
    assert accuracy["unit"] == "image" and accuracy["units"] == 500 and accuracy["n"] == 5712
    assert accuracy["low"] < metrics["metrics"]["accuracy"] < accuracy["high"]

    html = tmp_path / "report.html"
    runs = [str(tmp_path / "llava"), str(tmp_path / "worse")]
    result = CliRunner().invoke(app, ["report", *runs, "--power", "--html", str(html)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    page = html.read_text()
    low, high = accuracy["low"], accuracy["high"]
    assert f'95 % interval {low:.2f} to {high:.2f}, bootstrap-percentile, over 500 images' in page
    assert page.count('class="ci-bar"') >= 10  # every headline of both runs has its error bar
    assert "5712 items in common" in result.output
    assert "worse (paired-bootstrap)" in result.output
    assert "smallest difference detectable" in result.output

    comparison = halluscope.compare(tmp_path / "llava", tmp_path / "worse")[0]
    by_metric = {m.metric: m.comparison for m in comparison.metrics}
    accuracy_difference = by_metric["accuracy"]
    assert accuracy_difference is not None and accuracy_difference.interval is not None
    assert accuracy_difference.interval.high < 0 and accuracy_difference.p_adjusted is not None
    assert accuracy_difference.p_adjusted < 0.05
    assert accuracy_difference.difference == pytest.approx(
        json.loads((tmp_path / "worse" / "metrics.json").read_text())["metrics"]["accuracy"]
        - metrics["metrics"]["accuracy"]
    )


@pytest.mark.full_data
def test_same_answers_differ_by_nothing_and_other_levels_are_recomputed(tmp_path: Path) -> None:
    answers = LLAVA_POPE / "llava-v1.5-7b.jsonl"
    _pope_run(tmp_path / "a", answers)
    _pope_run(tmp_path / "b", answers)
    comparison = halluscope.compare(tmp_path / "a", tmp_path / "b")[0]
    for metric in comparison.metrics:
        assert metric.comparison is not None
        assert metric.comparison.difference == 0 and metric.comparison.p_value == 1.0
    wide = CliRunner().invoke(app, ["report", str(tmp_path / "a"), "--ci", "0.99", "--csv", str(tmp_path / "t.csv")])
    assert wide.exit_code == 0, wide.output
    stored = json.loads((tmp_path / "a" / "metrics.json").read_text())["intervals"]["accuracy"]
    header, row = [line.split(",") for line in (tmp_path / "t.csv").read_text().splitlines()[:2]]
    low = float(row[header.index("accuracy_low")])
    assert low < stored["low"], "a 99 % interval is wider than the 95 % one metrics.json holds"


@pytest.mark.full_data
def test_runs_with_no_item_in_common_are_refused_in_one_line(tmp_path: Path) -> None:
    answers = LLAVA_POPE / "llava-v1.5-7b.jsonl"
    lines = answers.read_text().splitlines()
    (tmp_path / "first.jsonl").write_text("\n".join(lines[:100]) + "\n")
    (tmp_path / "second.jsonl").write_text("\n".join(lines[200:300]) + "\n")
    _pope_run(tmp_path / "a", tmp_path / "first.jsonl")
    _pope_run(tmp_path / "b", tmp_path / "second.jsonl")
    wide = {"COLUMNS": "300"}
    shown = CliRunner().invoke(app, ["report", str(tmp_path / "a"), str(tmp_path / "b")], env=wide)
    assert shown.exit_code == 0, shown.output  # the table stands; the comparison nobody asked for is not made
    assert "not compared:" in shown.output and "no item in common" in shown.output
    asked = [str(tmp_path / "a"), str(tmp_path / "b"), "--baseline", str(tmp_path / "a")]
    result = CliRunner().invoke(app, ["report", *asked], env=wide)
    assert result.exit_code != 0
    assert "no item in common" in result.output and "Traceback" not in result.output
    with pytest.raises(halluscope.api.EvaluationError, match="no item in common"):
        halluscope.compare(tmp_path / "a", tmp_path / "b")
