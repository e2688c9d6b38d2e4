"""HQM (`halluscope quality`) on small run directories made by the real pipeline (simulated models answering
Reefknot yes/no items) and on constructed runs of other benchmarks."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from halluscope.benchmarks.reefknot import Reefknot
from halluscope.cache import Cache
from halluscope.calibration.simulate import predicted_reliability, run_population
from halluscope.cli.main import app
from halluscope.jsonio import write_json_atomic
from halluscope.quality.assess import assess
from halluscope.runs.selection import first_samples
from halluscope.runs.store import rewrite_records
from halluscope.stages import ScoringContext
from halluscope.types import JudgedClaim, MetricsReport, SampleRecord
from tests.layouts import reefknot_layout
from tests.paths import REEFKNOT_DIR


def population(tmp: Path, n_items: int, n_models: int, seeds: tuple[int, ...] = (1, 2), *,
               rng_seed: int = 0, low: float = 0.05, high: float = 0.45, data: Path | None = None) -> dict[str, float]:
    """Simulated models with known true rates, run once per sampling seed into tmp/seed<k>/<model>."""
    bench = Reefknot(data or reefknot_layout(), tasks=["yesno"])
    chosen = first_samples(bench, n_items)
    rng = random.Random(rng_seed)
    rates = {f"m{i:02d}": rng.uniform(low, high) for i in range(n_models)}
    ctx = ScoringContext(cache=Cache(None))
    for seed in seeds:
        asyncio.run(run_population(bench, rates, seed, tmp / f"seed{seed}", ctx, selection=chosen))
    return rates


def constructed_run(directory: Path, benchmark: str, records: list[SampleRecord],
                    metrics: dict[str, float | None]) -> Path:
    directory.mkdir(parents=True)
    write_json_atomic(directory / "spec.json", {"benchmark": {"benchmark": benchmark, "data": "x"}})
    rewrite_records(directory, records)
    write_json_atomic(directory / "metrics.json",
                      MetricsReport(benchmark=benchmark, metrics=metrics).model_dump(mode="json"))
    return directory


@pytest.mark.full_data
def test_simulated_population_recovers_the_predicted_reliability(tmp_path: Path) -> None:
    estimates = {}
    for n_items in (10, 200):  # 200 yes/no items: more than the synthetic stand-in holds
        rates = population(tmp_path / str(n_items), n_items, 24, rng_seed=n_items, data=REEFKNOT_DIR)
        report = assess([str(tmp_path / str(n_items) / "seed1")], "halr_yesno",
                        retest=[str(tmp_path / str(n_items) / "seed2")], resamples=1000)
        (measure,) = report.correlations
        assert measure.measure == "test-retest" and measure.correlation is not None
        pearson = measure.correlation.pearson
        assert measure.correlation.n == 24
        truth = predicted_reliability(list(rates.values()), n_items)
        assert pearson.ci_low is not None and pearson.ci_high is not None
        assert pearson.ci_low <= truth <= pearson.ci_high, (n_items, pearson, truth)
        estimates[n_items] = pearson.value
    # Fewer items, more binomial noise, lower reliability.
    assert estimates[10] is not None and estimates[200] is not None
    assert estimates[10] < estimates[200]
    assert predicted_reliability([0.1, 0.3, 0.5], 10) < predicted_reliability([0.1, 0.3, 0.5], 200)


def test_identical_models_have_no_reliability_to_find(tmp_path: Path) -> None:
    """Every model with the same true rate: the score differences are pure noise, r near 0."""
    population(tmp_path, 100, 20, low=0.3, high=0.3)
    report = assess([str(tmp_path / "seed1")], "halr_yesno", retest=[str(tmp_path / "seed2")], resamples=500)
    correlation = report.correlations[0].correlation
    assert correlation is not None and correlation.pearson.value is not None
    assert correlation.pearson.ci_low is not None and correlation.pearson.ci_low < 0.3
    assert abs(correlation.pearson.value) < 0.5


def test_bad_inputs_are_named_and_the_rest_goes_on(tmp_path: Path) -> None:
    population(tmp_path, 20, 4, seeds=(1,))
    retest = tmp_path / "retest"
    population(retest, 20, 2, seeds=(2,))  # only m00 and m01 are retested
    other = constructed_run(
        tmp_path / "seed1" / "trihe-model", "tri-he",
        [SampleRecord(id="1-0", prompt="q", response="a")], {"halr_yesno": 10.0, "hallu_q": 10.0},
    )
    labels = tmp_path / "labels.jsonl"
    labels.write_text("\n".join(json.dumps(row) for row in [
        {"model": "m00", "id": "yesno-0", "hallucinated": True},
        {"model": "m01", "id": "yesno-1", "hallucinated": False},
        {"model": "m02", "id": "yesno-2", "hallucinated": False},
        {"model": "m03", "id": "yesno-3", "hallucinated": True},
        {"model": "m03", "id": "yesno-9999", "hallucinated": True},
        {"model": "nobody", "id": "yesno-3", "hallucinated": True},
        {"model": "m02", "id": "yesno-4", "hallucinated": "maybe"},
    ]) + "\n")
    report = assess([str(tmp_path / "seed1")], "halr_yesno", retest=[str(retest / "seed2")], labels=labels,
                    resamples=200)
    problems = "\n".join(report.problems)
    assert report.benchmark == "reefknot"
    assert f"trihe-model ({other})" in problems and "'tri-he'" in problems
    assert "test-retest: a correlation needs at least 3 models" in problems
    assert "yesno-9999" in problems and "'m03'" in problems
    assert "no run named 'nobody'" in problems
    assert "line 7" in problems and "'hallucinated' must be true or false" in problems
    # ... and the rest went on: criterion validity over the four models with valid labels, coverage.
    measures = {m.measure: m for m in report.correlations}
    assert measures["test-retest"].correlation is None
    validity = measures["criterion validity"].correlation
    assert validity is not None and validity.n == 4 and validity.warning and "only 4 models" in validity.warning
    assert report.human_labelled == {"m00": 1, "m01": 1, "m02": 1, "m03": 1}
    assert report.coverage.benchmarks[0].counts == {"relation/perception": 20}


def test_parallel_forms_and_response_bias(tmp_path: Path) -> None:
    population(tmp_path, 40, 6)
    # The "parallel form" here: the same models answering with their yes/no flipped on every item would
    # be a model that always says the opposite; instead make m00 say yes to everything on the parallel form.
    yes_run = tmp_path / "seed2" / "m00"
    records = [json.loads(line) for line in (yes_run / "samples.jsonl").read_text().splitlines()]
    for record in records:
        record["prediction"] = "yes"
    (yes_run / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    report = assess([str(tmp_path / "seed1")], "halr_yesno", parallel=[str(tmp_path / "seed2")], resamples=200)
    assert [m.measure for m in report.correlations] == ["parallel-forms"]
    assert report.correlations[0].correlation is not None and report.correlations[0].correlation.n == 6
    bias = {row.model: row for row in report.response_bias}
    assert set(bias) == {f"m{i:02d}" for i in range(6)}
    m00 = bias["m00"]
    assert m00.parallel is not None and m00.parallel.yes_ratio == 1.0 and m00.parallel.label_yes_ratio == 0.5
    assert m00.original is not None and m00.original.yes_ratio is not None and m00.original.yes_ratio < 1.0


def test_coverage_is_one_table_across_benchmarks(tmp_path: Path) -> None:
    population(tmp_path, 10, 3, seeds=(1,))
    claims = [
        JudgedClaim(subject="dog", relation="on", object="sofa", verdict="hallucinated", error="object"),
        JudgedClaim(subject="dog", relation="under", object="table", verdict="hallucinated", error="relation"),
        JudgedClaim(subject="dog", relation="is", object="brown", verdict="supported"),
    ]
    constructed_run(tmp_path / "other" / "tri", "tri-he",
                    [SampleRecord(id="1-0", prompt="q", response="a", claims=claims)], {"hallu_q": 50.0})
    hqh = [SampleRecord(id=str(i), prompt="q", response="a", metadata={"type": t})
           for i, t in enumerate(["count", "OCR", "existence", "existence", "relation"])]
    constructed_run(tmp_path / "other" / "hqh-model", "hqh", hqh, {"overall": 0.2})
    report = assess([str(tmp_path / "seed1")], "halr_yesno", coverage_runs=[str(tmp_path / "other")],
                    resamples=200)
    table = {b.benchmark: b for b in report.coverage.benchmarks}
    assert table["reefknot"].counts == {"relation/perception": 10} and table["reefknot"].unit == "items"
    assert table["tri-he"].counts == {"object": 1, "relation": 1}
    assert table["tri-he"].unit == "hallucinated claims"
    assert table["hqh"].counts == {"counting": 1, "ocr": 1, "object": 2, "relation": 1}
    assert report.correlations == [] and not report.problems


def test_cli_writes_quality_json_terminal_table_and_html(tmp_path: Path) -> None:
    population(tmp_path, 20, 5)
    out = tmp_path / "quality.json"
    html = tmp_path / "report.html"
    result = CliRunner().invoke(app, [
        "quality", str(tmp_path / "seed1"), "--metric", "halr_yesno", "--retest", str(tmp_path / "seed2"),
        "--out", str(out), "--html", str(html), "--resamples", "200",
    ], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "test-retest" in result.output and "only 5 models" in result.output
    assert max(len(line) for line in result.output.splitlines()) <= 80
    saved = json.loads(out.read_text())
    assert saved["correlations"][0]["correlation"]["n"] == 5
    assert "Benchmark quality (HQM)" in html.read_text()


def test_a_missing_labels_file_is_a_problem_not_a_stop(tmp_path: Path) -> None:
    population(tmp_path, 10, 3)
    report = assess([str(tmp_path / "seed1")], "halr_yesno", retest=[str(tmp_path / "seed2")],
                    labels=tmp_path / "nope.jsonl", resamples=200)
    assert any("nope.jsonl" in p for p in report.problems)
    assert [m.measure for m in report.correlations] == ["test-retest"]


def test_cli_reports_nothing_usable_clearly(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["quality", str(tmp_path), "--metric", "halr_yesno"])
    assert result.exit_code == 2
    assert "no usable run" in result.output and str(tmp_path) in result.output


@pytest.mark.parametrize("values", [([1, 2, 3], [2, 4, 6.5]), ([1, 2, 3, 4], [4, 3, 2, 1])])
def test_correlation_matches_scipy(values: tuple[list[float], list[float]]) -> None:
    from scipy import stats

    from halluscope.quality.stats import correlate

    xs, ys = values
    result = correlate({str(i): v for i, v in enumerate(xs)}, {str(i): v for i, v in enumerate(ys)}, resamples=200)
    assert result.pearson.value == pytest.approx(stats.pearsonr(xs, ys).statistic)
    assert result.spearman.value == pytest.approx(stats.spearmanr(xs, ys).statistic)
    assert result.warning and f"only {len(xs)} models" in result.warning


def test_criterion_validity_follows_human_labels(tmp_path: Path) -> None:
    """Human labels that are the truth on a 30-item subset: the benchmark's Halr agrees with them; with
    --higher-is-better on an accuracy-like metric, the sign stays positive."""
    population(tmp_path, 100, 12, seeds=(1,), low=0.05, high=0.6)
    labels = tmp_path / "labels.jsonl"
    with labels.open("w") as handle:
        for run in sorted((tmp_path / "seed1").iterdir()):
            for line in (run / "samples.jsonl").read_text().splitlines()[:30]:
                record = json.loads(line)
                handle.write(json.dumps({"model": run.name, "id": record["id"],
                                         "hallucinated": not record["correct"]}) + "\n")
    report = assess([str(tmp_path / "seed1")], "halr_yesno", labels=labels, resamples=500)
    (validity,) = report.correlations
    assert validity.measure == "criterion validity" and validity.correlation is not None
    assert validity.correlation.n == 12 and validity.correlation.pearson.value is not None
    assert validity.correlation.pearson.value > 0.5
    assert set(report.human_labelled.values()) == {30}
    flipped = assess([str(tmp_path / "seed1")], "yesno/perception:accuracy", labels=labels, resamples=500,
                     higher_is_better=True)
    correlation = flipped.correlations[0].correlation
    assert correlation is not None and correlation.pearson.value is not None
    assert correlation.pearson.value == pytest.approx(validity.correlation.pearson.value)


def test_parallel_form_exposes_negation_blind_models(tmp_path: Path) -> None:
    """The real parallel form of Reefknot yes/no: models that ignore "not" collapse there, and the
    parallel-forms correlation says the benchmark's ranking does not survive the rewording."""
    from halluscope.builders.parallel import build_parallel

    parallel_data = tmp_path / "parallel-data"
    asyncio.run(build_parallel("reefknot", reefknot_layout(), parallel_data, tasks=["yesno"]))
    rng = random.Random(5)
    rates = {f"m{i:02d}": rng.uniform(0.05, 0.45) for i in range(10)}
    blind = frozenset(name for name, rate in rates.items() if rate < 0.25)  # the best models on the original
    ctx = ScoringContext(cache=Cache(None))
    for label, data, blind_here in (("original", reefknot_layout(), frozenset()), ("parallel", parallel_data, blind),
                                    ("honest", parallel_data, frozenset())):
        bench = Reefknot(data, tasks=["yesno"])
        seed = 1 if label == "original" else 2  # independent answers on the two forms
        asyncio.run(run_population(bench, rates, seed, tmp_path / label, ctx, negation_blind=blind_here,
                                   selection=first_samples(bench, 100)))
    fooled = assess([str(tmp_path / "original")], "halr_yesno", parallel=[str(tmp_path / "parallel")],
                    resamples=300)
    honest = assess([str(tmp_path / "original")], "halr_yesno", parallel=[str(tmp_path / "honest")],
                    resamples=300)
    fooled_r = fooled.correlations[0].correlation
    honest_r = honest.correlations[0].correlation
    assert fooled_r is not None and honest_r is not None
    assert fooled_r.pearson.value is not None and honest_r.pearson.value is not None
    assert honest_r.pearson.value > 0.6 and fooled_r.pearson.value < 0
    bias = {row.model: row for row in fooled.response_bias}
    for name in blind:
        original, parallel = bias[name].original, bias[name].parallel
        assert original is not None and parallel is not None
        assert original.accuracy is not None and parallel.accuracy is not None
        assert parallel.accuracy < 0.5 < original.accuracy


def test_report_adds_a_quality_json_to_the_html(tmp_path: Path) -> None:
    population(tmp_path, 10, 3, seeds=(1,))
    quality = tmp_path / "quality.json"
    runner = CliRunner()
    result = runner.invoke(app, ["quality", str(tmp_path / "seed1"), "-m", "halr_yesno", "-o", str(quality)])
    assert result.exit_code == 0, result.output
    html = tmp_path / "r.html"
    result = runner.invoke(app, ["report", str(tmp_path / "seed1" / "m00"), "--html", str(html),
                                 "--quality", str(quality)])
    assert result.exit_code == 0, result.output
    assert "Coverage of hallucination types" in html.read_text()
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    result = runner.invoke(app, ["report", str(tmp_path / "seed1" / "m00"), "--html", str(html), "--quality", str(bad)])
    assert result.exit_code == 2 and "bad.json" in result.output
