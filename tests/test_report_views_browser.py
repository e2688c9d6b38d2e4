"""The report's per-benchmark views and plots, opened in headless Chromium, on real runs: what a user checks.

- CHAIR on OPERA's released LLaVA-1.5 captions: the caption shows every COCO object word chair.py reads, the
  hallucinated ones marked, "seated" (read as *chair*) included; the image's ground-truth objects are listed;
  no pseudo-triplets.
- POPE on LLaVA's released answers: a card shows the answer, its reading and the true label; the page of an
  item says nothing of claims or scene graphs; the plot draws each set's figures with their intervals.
- HallusionBench (committed excerpt): the label and whether the answer was right, and its splits plotted.

Screenshots go to ``$HALLUSCOPE_ARTIFACTS`` (else the test's temporary folder); their paths are printed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from halluscope.cli.main import app
from halluscope.report.html import write_html_report
from tests.paths import FULL_DATA
from tests.test_golden_metrics import CASES
from tests.test_report_browser import (
    Browser,
    DevTools,
    artifacts,  # noqa: F401 - a fixture used by name
    browser,  # noqa: F401 - a fixture used by name
    open_report,
    serve,
)

CHAIR_DATA = FULL_DATA / "chair-coco"
OPERA_CAPTIONS = CHAIR_DATA / "opera-released-captions" / "llava-1.5" / "greedy.jsonl"
LLAVA_POPE = FULL_DATA / "peer-outputs" / "pope-llava-1.5-7b-partial"
#: A caption of OPERA's file in which chair.py reads "seated" as chair, absent from the image.
SEATED = "490701"


def _run(args: list[str]) -> None:
    result = CliRunner().invoke(app, ["run", *args, "--no-cache", "-q"])
    assert result.exit_code == 0, result.output


def _records(run: Path) -> dict[str, dict[str, Any]]:
    rows = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines() if line.strip()]
    return {r["id"]: r for r in rows}


def _show(page: DevTools, run: str, sample_id: str) -> None:
    page.js(f"location.hash = {json.dumps(f'#/sample/{run}/{sample_id}')}")
    page.wait_for(f"document.querySelector('#sample-page .sample-id')?.textContent === {json.dumps(sample_id)}")


def _bars(page: DevTools, metric: str) -> dict[str, dict[str, str]]:
    """The bars of one plotted figure, by group: their value and interval as the page draws them."""
    found = page.js(
        f"[...document.querySelectorAll('svg.group-bars[data-metric={json.dumps(metric)}] g.bar')]"
        ".map(g => [g.dataset.group, {value: g.dataset.value, low: g.dataset.low, high: g.dataset.high, "
        "whiskers: g.querySelectorAll('.ci-whisker').length, width: g.querySelector('rect').getBBox().width}])"
    )
    return dict(found)


def _headline_view(page: DevTools) -> dict[str, dict[str, str]]:
    """The headline view's rows as the page shows them: row -> column -> figure (its interval left out)."""
    found = page.js(
        "(() => { const t = document.querySelector('figure.headline-view table');"
        " const heads = [...t.querySelectorAll('thead th')].map(th => th.textContent);"
        " return [...t.querySelectorAll('tbody tr')].map(tr => [tr.dataset.row,"
        " Object.fromEntries([...tr.querySelectorAll('td.num')].map((td, i) =>"
        " [heads[i + 1], td.textContent.split(' [')[0]]))]); })()"
    )
    return dict(found)


def _assert_bar(bar: dict[str, Any], value: float, interval: dict[str, Any]) -> None:
    assert float(bar["value"]) == pytest.approx(value, rel=1e-5)
    assert float(bar["low"]) == pytest.approx(interval["low"], rel=1e-5)
    assert float(bar["high"]) == pytest.approx(interval["high"], rel=1e-5)
    assert bar["whiskers"] == 1 and bar["width"] > 10


@pytest.mark.full_data
def test_chair_caption_marks_each_coco_word_and_the_hallucinated_ones(
    tmp_path: Path, browser: Browser, artifacts: Path, capsys: pytest.CaptureFixture[str]  # noqa: F811
) -> None:
    lines = OPERA_CAPTIONS.read_text().splitlines()
    chosen = lines[:24] + [line for line in lines if json.loads(line)["image_id"] == int(SEATED)]
    captions = tmp_path / "captions.jsonl"
    captions.write_text("\n".join(chosen) + "\n")
    run = tmp_path / "llava-chair"
    _run(["-b", "chair", "--data", str(CHAIR_DATA), "-r", str(captions), "--bench-opt", f"ids={captions}",
          "--out", str(run)])  # fmt: skip
    record = _records(run)[SEATED]
    metrics = json.loads((run / "metrics.json").read_text())
    report = write_html_report([run], tmp_path / "site" / "report.html")
    assert "No rates to plot" not in report.read_text()
    page = browser.page()
    try:
        with serve(report.parent) as (base, _):
            open_report(page, f"{base}/report.html")
            # chair.py's own columns, in its order, first on the page
            view = _headline_view(page)
            assert list(view) == ["overall"] and list(view["overall"]) == ["CHAIRs", "CHAIRi", "Recall", "Len"]
            assert view["overall"]["CHAIRs"] == f"{metrics['metrics']['CHAIRs']:.2f}"
            # a tagger other than NLTK's perceptron (chair.py's) is said above the figures
            tagger = json.loads((run / "spec.json").read_text())["benchmark"]["tagger"]
            said = page.js("document.querySelector('ul.choices')?.textContent || ''")
            assert (f"tagger: {tagger} (" in said) == (tagger != "nltk"), said
            # the plot: CHAIRs, CHAIRi, Recall and Len of the run, each with its interval
            for metric in ("CHAIRs", "CHAIRi", "Recall", "Len"):
                _assert_bar(_bars(page, metric)["all"], metrics["metrics"][metric], metrics["intervals"][metric])
            page.js("document.getElementById('plots').scrollIntoView()")
            plots_png = page.screenshot(artifacts / "report-chair-overview.png", 1280, 900)

            _show(page, "llava-chair", SEATED)
            assert page.js("document.querySelector('#sample-page .response').textContent") == record["response"]
            marks = page.js(
                "[...document.querySelectorAll('#sample-page .response mark')].map(m => "
                "[m.textContent, m.dataset.word, m.dataset.object, m.dataset.hallucinated, m.className])"
            )
            # every COCO word chair.py read is marked, in order; hallucinated exactly where chair.py says so
            assert [m[1] for m in marks] == record["coco_words"]
            assert [m[2] for m in marks] == record["coco_objects"]
            hallucinated = [[m[1], m[2]] for m in marks if m[3] == "1"]
            assert hallucinated == record["hallucinated_objects"]
            assert all(("v-object" in m[4]) == (m[3] == "1") for m in marks)
            assert ["seated", "seat", "chair", "1"] in [m[:4] for m in marks]  # read as chair, not in the image
            assert "chair" not in record["truth_objects"]
            truth = page.js(
                "[...document.querySelectorAll('#sample-page .truth-objects li')].map(li => li.dataset.object)"
            )
            assert truth == record["truth_objects"]
            printed = page.js("document.querySelector('#sample-page dl.printed').textContent")
            assert "mscoco_hallucinated_words" in printed and '["seat","chair"]' in printed
            # no pseudo-triplets, no scene-graph message
            assert page.js("document.querySelectorAll('#sample-page li.claim').length") == 0
            assert "names" not in page.js("document.getElementById('sample-page').textContent")
            assert page.js("document.querySelectorAll('#sample-page .scene-missing').length") == 0
            sample_png = page.screenshot(artifacts / "report-chair-sample.png", 1280, 1100)
    finally:
        page.close()
    with capsys.disabled():
        print(f"\nCHAIR report screenshots: {plots_png} {sample_png}")


@pytest.mark.full_data
def test_pope_card_shows_the_reading_and_the_true_label_and_the_sets_are_plotted(
    tmp_path: Path, browser: Browser, artifacts: Path, capsys: pytest.CaptureFixture[str]  # noqa: F811
) -> None:
    run = tmp_path / "llava-pope"
    _run(["-b", "pope", "--data", str(LLAVA_POPE / "pope-labels-e3e3926"),
          "--responses", str(LLAVA_POPE / "llava-v1.5-7b.jsonl"), "--bench-opt", "sources=coco",
          "--bench-opt", "mode=paper", "--bench-opt", f"questions={LLAVA_POPE / 'llava_pope_test.jsonl'}",
          "--only-answered", "--out", str(run)])  # fmt: skip
    records = _records(run)
    metrics = json.loads((run / "metrics.json").read_text())
    wrong = next(r for r in records.values() if r["correct"] is False)
    report = write_html_report([run], tmp_path / "site" / "report.html")
    page = browser.page()
    try:
        with serve(report.parent) as (base, _):
            open_report(page, f"{base}/report.html")
            # the first table on the page: eval_pope's printout for these answers (POPE_results.txt)
            assert _headline_view(page) == {
                "coco/adversarial": {"Accuracy": "85.13", "Precision": "89.92", "Recall": "79.13", "F1": "84.18",
                                     "Yes-ratio": "44.00"},
                "coco/random": {"Accuracy": "88.09", "Precision": "97.44", "Recall": "78.97", "F1": "87.24",
                                "Yes-ratio": "41.78"},
            }  # fmt: skip
            assert page.js("document.querySelector('figure.headline-view table').compareDocumentPosition("
                           "document.getElementById('summary-table')) === Node.DOCUMENT_POSITION_FOLLOWING")
            judge = page.js("document.querySelector('#summary-table tbody tr td.component:nth-of-type(4)').title")
            assert judge == "none (yes/no read by the pope-paper rule)", judge
            columns = page.js("[...document.querySelectorAll('#summary-table th.metric')].map(th => th.title)")
            assert columns == ["accuracy", "precision", "recall", "f1", "yes_ratio"]  # no paper_/robust_ copies
            page.js("document.querySelector('figure.headline-view').scrollIntoView()")
            page.screenshot(artifacts / "report-pope-headline.png", 1280, 700)
            # each set as eval_pope prints it, with its interval
            for metric in ("accuracy", "precision", "recall", "f1", "yes_ratio"):
                bars = _bars(page, metric)
                assert set(bars) == {"all", *metrics["groups"]}
                _assert_bar(bars["all"], metrics["metrics"][metric], metrics["intervals"][metric])
                for group, figures in metrics["groups"].items():
                    _assert_bar(bars[group], figures[metric], metrics["group_intervals"][group][metric])
            assert "No rates to plot" not in page.js("document.getElementById('plots').textContent")

            # the cards of the first page: answer, reading, true label, correct
            cards = page.js(
                "[...document.querySelectorAll('#sample-list li.sample-card')].map(li => [li.dataset.id, "
                "li.querySelector('.response').textContent, li.querySelector('.reading').textContent, "
                "li.querySelector('.label').textContent, li.querySelector('.chip.good, .chip.bad').textContent])"
            )
            assert len(cards) == 50
            for sample_id, answer, reading, label, verdict in cards:
                record = records[sample_id]
                assert answer == record["response"]
                assert reading.split(" ")[0] == record["prediction"]
                assert label == record["label"]
                assert verdict == ("✔ correct" if record["correct"] else "✘ incorrect")
            assert "no claims" not in page.js("document.getElementById('sample-list').textContent")
            page.js("document.getElementById('plots').scrollIntoView()")
            overview_png = page.screenshot(artifacts / "report-pope-overview.png", 1280, 1100)

            _show(page, "llava-pope", wrong["id"])
            table = page.js(
                "Object.fromEntries([...document.querySelectorAll('#sample-page dl.yesno-table dt')]"
                ".map(dt => [dt.textContent, dt.nextElementSibling.textContent]))"
            )
            assert table["true label"] == wrong["label"]
            assert table["read as"].startswith(wrong["prediction"])
            assert table["correct"] == "no"
            text = page.js("document.getElementById('sample-page').textContent")
            assert "no claims" not in text and "Scene graph" not in text
            sample_png = page.screenshot(artifacts / "report-pope-sample.png", 1280, 900)
    finally:
        page.close()
    with capsys.disabled():
        print(f"\nPOPE report screenshots: {overview_png} {sample_png}")


def test_hallusionbench_cards_show_label_and_correctness_and_its_splits_are_plotted(
    tmp_path: Path, browser: Browser, artifacts: Path, capsys: pytest.CaptureFixture[str]  # noqa: F811
) -> None:
    run = tmp_path / "hallusionbench"
    _run([*CASES["hallusionbench"](tmp_path), "--out", str(run)])
    records = {k: r for k, r in _records(run).items() if r.get("response") is not None}
    metrics = json.loads((run / "metrics.json").read_text())
    report = write_html_report([run], tmp_path / "site" / "report.html")
    page = browser.page()
    try:
        with serve(report.parent) as (base, _):
            open_report(page, f"{base}/report.html")
            bars = _bars(page, "qAcc")
            assert set(bars) == {"all", *metrics["groups"]}  # VD and VS
            _assert_bar(bars["all"], metrics["metrics"]["qAcc"], metrics["intervals"]["qAcc"])
            for split in ("VD", "VS"):  # each split with its own interval, resampled over its figure sets
                _assert_bar(bars[split], metrics["groups"][split]["qAcc"], metrics["group_intervals"][split]["qAcc"])
            view = _headline_view(page)
            assert list(view) == ["VD", "VS", "overall"]
            assert list(view["VD"]) == [
                "Question Pair Acc", "Figure Acc", "Easy Question Acc", "Hard Question Acc", "All Acc"
            ]
            assert view["VS"]["Figure Acc"] == f"{metrics['groups']['VS']['fAcc']:.2f}"
            cards = page.js(
                "[...document.querySelectorAll('#sample-list li.sample-card')].map(li => [li.dataset.id, "
                "li.querySelector('.label').textContent, li.querySelector('.chip.good, .chip.bad')?.textContent])"
            )
            assert cards
            for sample_id, label, verdict in cards:
                record = records[sample_id]
                assert label == record["label"]
                if record.get("correctness") in (0, 1):
                    assert verdict == ("✔ correct" if record["correctness"] == 1 else "✘ incorrect")
            page.js("document.getElementById('plots').scrollIntoView()")
            overview_png = page.screenshot(artifacts / "report-hallusionbench-overview.png", 1280, 1100)
            first = next(iter(records.values()))
            _show(page, "hallusionbench", first["id"])
            assert page.js("document.querySelectorAll('#sample-page .scene-missing').length") == 0
            sample_png = page.screenshot(artifacts / "report-hallusionbench-sample.png", 1280, 900)
    finally:
        page.close()
    with capsys.disabled():
        print(f"\nHallusionBench report screenshots: {overview_png} {sample_png}")
