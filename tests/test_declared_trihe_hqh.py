"""Declared headline metrics of Tri-HE, the synthetic benchmark and HQH: each declared point estimate is the
benchmark's own figure, and the interval resamples the images the questions share, not the questions."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from halluscope.benchmarks.hqh import HQH, TYPES, hqh_declarations, hqh_table
from halluscope.benchmarks.synthetic import SyntheticBenchmark
from halluscope.benchmarks.tri_he import TriHE
from halluscope.cli.main import app
from halluscope.metrics.declared import declared_intervals, declared_value
from halluscope.metrics.hqh import hqh_metrics
from halluscope.metrics.stats import Interval
from halluscope.runs.runner import headline_intervals
from halluscope.stages import BenchmarkInterface, MetricDeclaration, MetricTable
from halluscope.types import ErrorType, JudgedClaim, SampleRecord, Support, VerdictLabel
from tests.layouts import synthetic_layouts, tri_he_layout
from tests.paths import HQH_DIR

S, H, U = VerdictLabel.SUPPORTED, VerdictLabel.HALLUCINATED, VerdictLabel.UNJUDGED


def _claim(verdict: VerdictLabel, error: ErrorType | None = None, support: Support | None = None) -> JudgedClaim:
    return JudgedClaim(subject="a", relation="b", object="c", verdict=verdict, error=error, support=support)


def _question(sample_id: str, image_id: str, claims: list[JudgedClaim], failure: str | None = None) -> SampleRecord:
    return SampleRecord(id=sample_id, prompt="q", response="r", image_id=image_id, claims=claims, failure=failure)


def _assert_declared_equal_reported(
    benchmark: BenchmarkInterface, records: list[SampleRecord]
) -> dict[str, float | None]:
    """Every declared metric: its estimate is the benchmark's figure (None exactly where the figure is None)."""
    reported = benchmark.metrics(records).metrics
    tables = benchmark.metric_tables(records)
    declared = {d.name: declared_value(d, tables) for d in benchmark.metric_declarations()}
    for name, value in declared.items():
        want = reported.get(name)
        assert (value is None) == (want is None), (name, value, want)
        if want is not None:
            assert value == pytest.approx(want, rel=1e-12, abs=1e-12), name
    return declared


def _item_level(declaration: MetricDeclaration, tables: dict[str, MetricTable]) -> dict[str, MetricTable]:
    """The same table with every row its own unit: what an interval that ignores the shared images would use."""
    table = tables[declaration.table]
    return {declaration.table: replace(table, clusters=None)}


def _width(interval: Interval) -> float:
    return interval.high - interval.low


# -- Tri-HE --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tri_he() -> TriHE:
    return TriHE(tri_he_layout())


def test_tri_he_declared_rates_equal_the_reported_ones_on_hand_written_records(tri_he: TriHE) -> None:
    """A typed, three-way judge: every rate is defined, and the declared ones equal triplet_metrics' figures,
    with zero-claim, all-unjudged and failed questions left out exactly as it leaves them out."""
    c, v = Support.CONTRADICTED, Support.UNVERIFIABLE
    records = [
        _question("1-0", "1", [_claim(S, support=Support.SUPPORTED), _claim(H, ErrorType.OBJECT, c)]),
        _question("1-1", "1", [_claim(H, ErrorType.RELATION, v)]),
        _question("1-2", "1", []),  # no claim: only in the *_with_empty rates, as 0
        _question("2-0", "2", [_claim(S, support=Support.SUPPORTED), _claim(U), _claim(H, ErrorType.ATTRIBUTE, c)]),
        _question("2-1", "2", [_claim(U)]),  # nothing judged: in no rate
        _question("3-0", "3", [_claim(H, ErrorType.OBJECT, c)], failure="no response"),
        _question("4-0", "4", [], failure="no response"),
        _question("5-0", "5", []),  # an image whose only answer says nothing checkable
    ]
    declared = _assert_declared_equal_reported(tri_he, records)
    assert {"hallu_q", "hallu_i", "object_hallu_q", "relation_hallu_i", "contradicted_hallu_q"} <= set(declared)
    assert all(value is not None for value in declared.values())
    assert declared["hallu_i"] != pytest.approx(declared["hallu_q"])  # the two averages really differ here


def test_tri_he_rates_a_judge_cannot_give_stay_undefined(tri_he: TriHE) -> None:
    """The similarity judge types no error and reads claims two ways: those rates are None in metrics.json,
    so their intervals are None too, while Hallu-Q keeps its interval."""
    records = [_question("1-0", "1", [_claim(H), _claim(S)]), _question("2-0", "2", [_claim(S)])]
    _assert_declared_equal_reported(tri_he, records)
    intervals, _ = headline_intervals(tri_he, records)
    assert intervals["hallu_q"] is not None
    for name in ("object_hallu_q", "relation_hallu_i", "contradicted_hallu_q", "unverifiable_share_i"):
        assert intervals[name] is None, name


def test_tri_he_hallu_q_resamples_images_and_is_wider_than_a_per_question_interval(tri_he: TriHE) -> None:
    """On the real layout (several questions per image) with answers that agree within an image, Hallu-Q's
    interval counts the images as its units, and is wider than one pretending the questions independent."""
    samples = list(tri_he.samples())
    images = list(dict.fromkeys(s.image_id or "" for s in samples))
    assert len(images) < len(samples)
    bad = set(images[::3])  # every question about these images is wrong, every other answer right
    records = [
        _question(s.id, s.image_id or "", [_claim(H if s.image_id in bad else S, ErrorType.OBJECT)]) for s in samples
    ]
    _assert_declared_equal_reported(tri_he, records)
    intervals, _ = headline_intervals(tri_he, records)
    for name, rows in (("hallu_q", len(samples)), ("hallu_i", len(images))):
        interval = intervals[name]
        assert interval is not None
        assert interval["unit"] == "image" and interval["units"] == len(images), (name, interval)
        assert interval["n"] == rows, (name, interval)

    declaration = next(d for d in tri_he.metric_declarations() if d.name == "hallu_q")
    tables = tri_he.metric_tables(records)
    clustered = declared_intervals([declaration], tables)["hallu_q"]
    per_question = declared_intervals([declaration], _item_level(declaration, tables))["hallu_q"]
    assert clustered is not None and per_question is not None
    assert per_question.units == len(samples)
    assert _width(clustered) > 1.3 * _width(per_question)


# -- the synthetic benchmark ---------------------------------------------------------------------------------


def test_synthetic_run_gives_each_triplet_rate_an_interval_over_its_images(tmp_path: Path) -> None:
    """A simulated model's run: metrics.json bounds the headline (the contradicted rate) and Hallu-Q with
    intervals over the run's images, and leaves the simulator's calibration figures without one."""
    data = synthetic_layouts()
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        ["run", "-b", "synthetic", "--data", str(data), "--model", "sim/hallucinate?object=0.3&relation=0.2",
         "--extractor", "rules", "--judge", "typed", "--judge-opt", "model=off", "--out", str(out), "--no-cache",
         "-q"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    metrics, intervals = report["metrics"], report["intervals"]
    images = {s.image_id for s in SyntheticBenchmark(data).samples()}
    headline = report["details"]["headline"]
    for name in (headline, "hallu_q", "object_hallu_q", "relation_hallu_i"):
        interval = intervals[name]
        assert interval["estimate"] == pytest.approx(metrics[name], rel=1e-9)
        assert interval["low"] <= metrics[name] <= interval["high"]
        assert interval["unit"] == "image" and interval["units"] == len(images), (name, interval)
    assert metrics["injected_hallu_q"] is not None and "injected_hallu_q" not in intervals
    assert "judge_precision" not in intervals


# -- HQH -----------------------------------------------------------------------------------------------------


def _answer(i: int, kind: str, image: str, hallucinated: bool | None, extra: int | None, failure: str | None = None
            ) -> SampleRecord:  # fmt: skip
    return SampleRecord(
        id=str(i), prompt="?", response="x", image_id=image, failure=failure, metadata={"type": kind},
        hallucinated=hallucinated, extra_claims=extra,
    )  # fmt: skip


def test_hqh_declared_rates_equal_hqh_metrics_on_hand_written_records() -> None:
    """Per-type, overall, "Overall Hal%" and "Extra #Hal": the declared estimates are hqh_metrics' figures,
    with unjudged and failed answers in no rate and a type with nothing judged undefined."""
    records = [
        _answer(1, "count", "10", True, 0),
        _answer(2, "count", "10", False, 2),
        _answer(3, "count", "11", False, 0),
        _answer(4, "OCR", "11", False, None),  # extra claims not counted: in the main rates only
        _answer(5, "OCR", "12", None, None),  # unjudged
        _answer(6, "OCR", "12", None, None, failure="HQH item 6: image 12 has no entry in image_data.json"),
        _answer(7, "attribute", "13", None, None),  # a type with nothing judged
        _answer(8, "existence", "10", True, 1),
    ]
    reported = hqh_metrics(records).metrics
    declarations = hqh_declarations(TYPES)
    tables = {"items": hqh_table(records)}
    for declaration in declarations:
        value, want = declared_value(declaration, tables), reported.get(declaration.name)
        assert (value is None) == (want is None), declaration.name
        if want is not None:
            assert value == pytest.approx(want, rel=1e-12), declaration.name
    names = {d.name for d in declarations}
    assert {"counting", "ocr", "hallucination_rate", "overall_hallucination_rate", "extra_claims_per_answer"} <= names
    assert reported["overall_hallucination_rate"] == pytest.approx(75.0)  # 3 of the 4 counted: the rows exercise it
    assert tables["items"].clusters is not None and set(tables["items"].clusters) == {"10", "11"}


@pytest.mark.full_data
def test_hqh_rate_resamples_images_of_the_release() -> None:
    """On the released items (images asked about up to seven times), answers that agree within an image:
    the rate's interval counts the images the judged answers are about, and is wider than a per-answer one."""
    bench = HQH(HQH_DIR)
    samples = [s for s in bench.samples() if not s.metadata.get("problem")]
    per_image: dict[str, int] = {}
    for sample in samples:
        per_image[sample.image_id or ""] = per_image.get(sample.image_id or "", 0) + 1
    shared = [s for s in samples if per_image[s.image_id or ""] > 1]  # images asked about more than once
    images = list(dict.fromkeys(s.image_id or "" for s in shared))
    assert len(images) < len(shared)
    bad = set(images[::2])
    records = [
        _answer(int(s.id), str(s.metadata["type"]), s.image_id or "", s.image_id in bad, None) for s in shared
    ]
    _assert_declared_equal_reported(bench, records)
    interval = headline_intervals(bench, records)[0]["hallucination_rate"]
    assert interval is not None
    assert interval["unit"] == "image" and interval["units"] == len(images) and interval["n"] == len(shared)

    declaration = next(d for d in bench.metric_declarations() if d.name == "hallucination_rate")
    tables = bench.metric_tables(records)
    clustered = declared_intervals([declaration], tables)["hallucination_rate"]
    per_answer = declared_intervals([declaration], _item_level(declaration, tables))["hallucination_rate"]
    assert clustered is not None and per_answer is not None
    assert per_answer.method == "wilson" and clustered.method.startswith("bootstrap")
    assert _width(clustered) > 1.2 * _width(per_answer)
