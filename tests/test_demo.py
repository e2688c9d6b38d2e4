"""The offline demo end to end, on a tiny synthetic set: real run directories, the table, the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner


def test_demo_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from halluscope.cli.main import app

    monkeypatch.setenv("HALLUSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "160")
    out = tmp_path / "demo"
    result = CliRunner().invoke(app, ["demo", "--out", str(out), "--n", "4", "--quiet"], terminal_width=120)
    assert result.exit_code == 0, result.output
    for heading in ("sim/oracle", "sim/hallucinate", "Hallu-Q", "judge precision", "HTML report:", "On real answers"):
        assert heading in result.output
    # the table leads with the benchmark's headline under the demo's judge, as the report and the README do
    measures = [line.split("│")[1].strip() for line in result.output.splitlines() if line.startswith("│")]
    assert measures[1] == "Contradicted Hallu-Q (headline)" and measures[2] == "Hallu-Q (upper bound)", measures

    runs = sorted((out / "runs").iterdir())
    assert len(runs) == 3
    rows = {}
    for run in runs:
        for name in ("spec.json", "samples.jsonl", "metrics.json", "responses.jsonl"):
            assert (run / name).is_file(), f"{run.name} lacks {name}"
        spec = json.loads((run / "spec.json").read_text())
        assert spec["benchmark"]["benchmark"] == "synthetic" and spec["model"]["calibration_tool"] is True
        records = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
        assert len(records) == 16 and all(r["claims_source"] == "supplied" for r in records)
        rows[spec["model"]["name"]] = json.loads((run / "metrics.json").read_text())["metrics"]

    oracle = rows["oracle"]
    assert oracle["injected_hallu_q"] == 0.0 and oracle["hallu_q"] == 0.0
    heavy = rows["hallucinate?object=0.2&relation=0.3&attribute=0.2&seed=0"]
    mild = rows["hallucinate?object=0.1&relation=0.1&attribute=0.1&seed=0"]
    assert 0 < mild["injected_hallu_q"] < heavy["injected_hallu_q"]
    assert 0 < mild["hallu_q"] < heavy["hallu_q"]
    assert heavy["judge_precision"] == 1.0

    report = out / "report.html"
    assert report.is_file() and "sim/oracle" in report.read_text(encoding="utf-8")

    again = CliRunner().invoke(app, ["demo", "--out", str(out), "--n", "4", "--quiet"], terminal_width=120)
    assert again.exit_code == 0, again.output
    assert (
        json.loads((runs[0] / "metrics.json").read_text())["metrics"]
        == rows[json.loads((runs[0] / "spec.json").read_text())["model"]["name"]]
    ), "a second demo resumes the same runs to the same numbers"
