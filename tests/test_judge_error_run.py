"""A run says how far its judge was measured to be right: the measured judge's counts and corrected rates, or
"judge error not measured" for a configuration nobody measured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from halluscope.cli.main import app
from halluscope.judges.agreement import measured_agreement
from halluscope.metrics.stats.judge_error import rogan_gladen
from tests.test_rejudge import N, _answers_file


def _run(tmp_path: Path, name: str, *extra: str) -> tuple[dict, str]:
    data, answers = _answers_file(tmp_path)
    args = ["run", "-b", "tri-he", "--data", str(data), "-r", str(answers), "--limit", str(N), "--out",
            str(tmp_path / name), "--no-cache", "-q", *extra]  # fmt: skip
    result = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    return json.loads((tmp_path / name / "metrics.json").read_text()), result.output


def test_a_measured_judge_corrects_its_rates_with_its_own_counts(tmp_path: Path) -> None:
    metrics, output = _run(tmp_path, "typed", "--judge", "typed")
    section = metrics["judge_error"]
    spec = json.loads((tmp_path / "typed" / "spec.json").read_text())
    paper = measured_agreement(spec["judge"], "paper")
    assert paper is not None and section["measured"]["paper"]["flagged"] == paper.counts.found
    corrected = section["corrected"]["hallu_q"]
    observed = metrics["metrics"]["hallu_q"] / 100
    want = rogan_gladen(observed, paper.counts.sensitivity, paper.counts.specificity)
    assert want is not None and corrected["estimate"] == pytest.approx(100 * want)
    assert corrected["low"] <= corrected["estimate"] <= corrected["high"] and corrected["reading"] == "paper"
    assert "corrected for the judge's error" in output and "hallu_q" in output


def test_an_unmeasured_judge_configuration_says_so_beside_the_numbers(tmp_path: Path) -> None:
    metrics, output = _run(tmp_path, "other", "--judge", "similarity", "--judge-opt", "verdict_threshold=0.7")
    assert metrics["judge_error"]["measured"] is None
    assert "judge error not measured" in metrics["judge_error"]["note"]
    assert "judge error not measured" in output


def test_the_html_report_shows_each_runs_judge_error_under_the_table(tmp_path: Path) -> None:
    _run(tmp_path, "typed", "--judge", "typed")
    _run(tmp_path, "other", "--judge", "similarity", "--judge-opt", "verdict_threshold=0.7")
    page = tmp_path / "report.html"
    result = CliRunner().invoke(app, ["report", str(tmp_path / "typed"), str(tmp_path / "other"), "--html", str(page)])
    assert result.exit_code == 0, result.output
    html = page.read_text().replace("&#x27;", "'")
    section = html[html.index('class="notes judge-errors"') :]
    assert "hallu_q corrected for the judge's error" in section
    assert "judge error not measured" in section
