"""Tri-HE's one headline rate per judge: named in metrics.json, first in every table and in the radar."""

from __future__ import annotations

import re
from pathlib import Path

from halluscope.metrics.triplets import triplet_metrics
from halluscope.report.formatting import metric_keys_of
from halluscope.report.plots import radar_svg
from halluscope.report.rundir import ReportRun
from halluscope.types import JudgedClaim, SampleRecord, Support, VerdictLabel


def _record(i: int, supports: list[Support | None], hallucinated: list[bool] | None = None) -> SampleRecord:
    claims = []
    for j, support in enumerate(supports):
        bad = hallucinated[j] if hallucinated is not None else support != Support.SUPPORTED
        claims.append(
            JudgedClaim(
                subject="a", relation="b", object="c", support=support,
                verdict=VerdictLabel.HALLUCINATED if bad else VerdictLabel.SUPPORTED,
            )
        )  # fmt: skip
    return SampleRecord(id=str(i), prompt="?", response="...", image_id=f"img{i % 2}", claims=claims)


def test_three_way_judges_lead_with_the_contradicted_rate_and_name_its_bounds() -> None:
    records = [_record(0, [Support.SUPPORTED, Support.CONTRADICTED, Support.UNVERIFIABLE, Support.UNVERIFIABLE])]
    report = triplet_metrics(records)
    assert report.details["headline"] == "contradicted_hallu_q" == next(iter(report.metrics))
    assert report.details["headline_bounds"] == ["contradicted_hallu_q", "hallu_q"]
    low, high = (report.metrics[k] for k in report.details["headline_bounds"])
    assert low is not None and high is not None and low <= high  # the truth lies between the two readings


def test_two_way_judges_lead_with_the_paper_rate() -> None:
    report = triplet_metrics([_record(0, [None, None], hallucinated=[True, False])])
    assert report.details["headline"] == "hallu_q" and report.metrics["hallu_q"] == 50.0
    assert "headline_bounds" not in report.details


def _run(tmp_path: Path, name: str, metrics: dict[str, float | None]) -> ReportRun:
    return ReportRun(directory=tmp_path / name, spec={}, metrics={"benchmark": "tri-he", "metrics": metrics},
                     records=[], label=name, name=name)  # fmt: skip


def test_tables_and_the_radar_lead_with_the_headline(tmp_path: Path) -> None:
    metrics = triplet_metrics([
        _record(0, [Support.SUPPORTED, Support.CONTRADICTED, Support.UNVERIFIABLE]),
        _record(1, [Support.CONTRADICTED, Support.UNVERIFIABLE]),
    ]).metrics  # fmt: skip
    # A report table's columns come in this order whatever order the run wrote them in.
    shuffled = dict(sorted(metrics.items()))
    runs = [_run(tmp_path, "a", shuffled), _run(tmp_path, "b", {k: (v or 0) + 1 for k, v in shuffled.items()})]
    assert metric_keys_of(runs)[:2] == ["contradicted_hallu_q", "contradicted_hallu_i"]
    svg = radar_svg(runs)
    labels = re.findall(r'class="axis-label">([^<]+)<', svg)
    assert labels[0] == "Contradicted Hallu-Q"  # the first axis, at the top of the radar
    assert "Hallu-Q" in labels  # the paper's reading stays beside it
