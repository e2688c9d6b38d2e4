"""The HTML report's shareable addresses name runs by their folder (``#/sample/<run>/<id>``, as docs/report.md
shows), its metric columns come in one fixed, paired order, and unanswered placeholders stay out of it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import quote

import pytest

from halluscope.report.html import write_html_report
from tests.test_html_report import RATES_A, RATES_B, embedded_data, tri_he_items, write_run
from tests.test_report_browser import Browser, browser, open_report, serve  # noqa: F401 (fixture)

PAIRED = {
    "attribute_hallu_i": 3.0,  # given image-level first, as a dict may hold them
    "attribute_hallu_q": 4.0,
    "hallu_i_with_empty": 20.0,
    "hallu_q_with_empty": 21.0,
    "judge_hallu_i": 1.0,
    "judge_hallu_q": 2.0,
}


def _two_runs(tmp_path: Path) -> tuple[list[dict], list[dict]]:  # type: ignore[type-arg]
    items = tri_he_items(limit=12)
    llava = write_run(tmp_path / "llava", model="llava-sim", items=items, seed=1, rates=RATES_A)
    gpt = write_run(
        tmp_path / "gpt4o", model="gpt-sim", items=items, seed=2, rates=RATES_B, extra_metrics=PAIRED
    )
    return llava, gpt


@pytest.mark.full_data
def test_deep_links_name_the_run_and_open_its_sample(tmp_path: Path, browser: Browser) -> None:  # noqa: F811
    llava, gpt = _two_runs(tmp_path)
    report = write_html_report([tmp_path / "llava", tmp_path / "gpt4o"], tmp_path / "site" / "report.html")
    record = gpt[5]
    page = browser.page()
    try:
        with serve(report.parent) as (base, _):
            # a shared address, opened fresh: the second run's sample, named by the run's folder
            url = f"{base}/report.html#/sample/gpt4o/{quote(record['id'])}"
            open_report(page, url)
            page.wait_for("!document.getElementById('sample-page').hidden")
            assert page.js("document.querySelector('#sample-page .response').textContent") == record["response"]
            assert page.js("document.querySelector('#sample-page .sample-id').textContent") == record["id"]
            # the page's own links use run names too
            next_href = page.js("document.getElementById('next-sample').getAttribute('href')")
            assert next_href.startswith("#/sample/gpt4o/")
            other = page.js("document.querySelector('#sample-page .others a').getAttribute('href')")
            assert other == f"#/sample/llava/{quote(record['id'])}"
            # the same sample in the first run differs: the link really picks the run
            page.js(f"location.hash = '#/sample/llava/{quote(record['id'])}'")
            page.wait_for(
                "document.querySelector('#sample-page .response')?.textContent === "
                + json.dumps(llava[5]["response"])
            )
            # a run's sample list by name; an unknown run says so
            page.js("location.hash = '#/samples?run=gpt4o'")
            page.wait_for("document.getElementById('f-run').value === '1'")
            assert page.js("document.getElementById('sample-list').dataset.total") == str(len(gpt))
            page.js("location.hash = '#/sample/nosuchrun/x'")
            page.wait_for("document.getElementById('sample-page').textContent.includes('no such run')")
    finally:
        page.close()


@pytest.mark.full_data
def test_metric_columns_are_fixed_and_paired(tmp_path: Path) -> None:
    _two_runs(tmp_path)
    for order in ([tmp_path / "llava", tmp_path / "gpt4o"], [tmp_path / "gpt4o", tmp_path / "llava"]):
        page = write_html_report(order, tmp_path / "report.html").read_text(encoding="utf-8")
        columns = re.findall(r'<th class="num metric" title="([^"]+)"', page)
        assert columns[:6] == [
            "hallu_q",
            "hallu_i",
            "object_hallu_q",
            "object_hallu_i",
            "relation_hallu_q",
            "relation_hallu_i",
        ]
        for kind in ("attribute_", "judge_"):
            assert columns.index(f"{kind}hallu_q") + 1 == columns.index(f"{kind}hallu_i")
        assert columns.index("hallu_q_with_empty") + 1 == columns.index("hallu_i_with_empty")


@pytest.mark.full_data
def test_unanswered_placeholders_stay_out_of_the_report(tmp_path: Path) -> None:
    items = tri_he_items(limit=60)
    answered = {item["id"] for item in items[:4]}
    placeholder = {"response": None, "claims": [], "failure": "no response for this sample"}
    write_run(
        tmp_path / "run",
        model="m",
        items=items,
        seed=3,
        rates=RATES_A,
        mutate={item["id"]: placeholder for item in items if item["id"] not in answered},
    )
    full = write_html_report([tmp_path / "run"], tmp_path / "report.html")
    page = full.read_text(encoding="utf-8")
    data = embedded_data(page)
    assert {s["id"] for s in data["samples"]} == answered
    assert "1 run(s), 4 samples" in page
    assert '<td class="num" data-key="samples">4</td>' in page
    assert "56 samples without a response are not shown" in page
    images = {s["img"] for s in data["samples"] if s["img"]}
    assert set(data["images"]) == images  # no thumbnails for samples that are not shown
