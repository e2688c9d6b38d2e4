"""The suite's leaderboard as a user reads it: two models' real runs (a scripted VLM on loopback), ranked with
intervals, a significant difference marked, and each model's hallucination profile across the benchmarks,
in the terminal, CSV, markdown and the HTML page opened in a real headless Chromium.

The two models answer POPE's questions of the released excerpt: one from POPE's own labels (a model that
mostly sees right), one "yes" to everything (POPE's classic failure); both describe Tri-HE's scenes with the
same two sentences, so the profile has a discriminative and a generative side.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.layouts import synthetic_layouts
from tests.paths import POPE_EXCERPT
from tests.scripted_server import ScriptedServer, completion

LIMIT = 60


def _pope_labels() -> dict[str, str]:
    """POPE's label for each question text of the excerpt (the commoner one where a text has two)."""
    votes: dict[str, Counter[str]] = {}
    for path in sorted((POPE_EXCERPT / "gqa").glob("*.json")):
        for row in json.loads(path.read_text()):
            votes.setdefault(row["text"], Counter())[row["label"]] += 1
    return {text: counts.most_common(1)[0][0] for text, counts in votes.items()}


def _responder(truthful: bool) -> Any:
    labels = _pope_labels()

    def respond(body: Any) -> Any:
        asked = str(body["messages"][-1]["content"])
        if "Is there" not in asked:
            return completion("The cup is on the box. A green dog sleeps under the red table.")
        if not truthful:
            return completion("Yes.")
        text = next((t for t in labels if t in asked), None)
        return completion("Yes." if text and labels[text] == "yes" else "No.")

    return respond


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """Two models on POPE and Tri-HE, run once for the module; the suite folder and what the command printed."""
    from halluscope.cli.main import app

    tmp = tmp_path_factory.mktemp("suite")
    root = tmp / "data"
    root.mkdir()
    (root / "pope").symlink_to(POPE_EXCERPT, target_is_directory=True)
    (root / "tri-he").symlink_to(synthetic_layouts(), target_is_directory=True)
    out = tmp / "suite"
    with (
        ScriptedServer(responder=_responder(True)) as sees,
        ScriptedServer(responder=_responder(False)) as yes,
    ):
        result = CliRunner().invoke(
            app,
            ["eval", "-b", "pope,tri-he", "--model", f"sees=blind/openai/vlm?base_url={sees.base_url}",
             "--model", f"yes=blind/openai/vlm?base_url={yes.base_url}", "--data-root", str(root),
             "--limit", str(LIMIT), "--out", str(out), "--no-cache"],
            terminal_width=200,
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    return out, result.output


def _metrics(out: Path, model: str, benchmark: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / model / benchmark / "metrics.json").read_text())
    return data


def test_profile_in_csv_markdown_and_terminal_is_each_models_share_hallucinated(
    suite: tuple[Path, str],
) -> None:
    out, printed = suite
    rows = list(csv.DictReader(io.StringIO((out / "profile.csv").read_text(encoding="utf-8"))))
    cells = {(r["model"], r["kind"], r["form"]): r for r in rows}
    # POPE's accuracy as the share of wrong answers, for object hallucination in yes/no questions
    for model in ("sees", "yes"):
        accuracy = _metrics(out, model, "pope")["metrics"]["accuracy"]
        cell = cells[(model, "object", "discriminative")]
        assert float(cell["hallucinated_percent"]) == pytest.approx(100 - accuracy)
        assert "pope 100 - accuracy" in cell["sources"]
        tri_he = _metrics(out, model, "tri-he")["metrics"]
        for kind in ("object", "relation"):
            generative = cells[(model, kind, "generative")]
            assert float(generative["hallucinated_percent"]) == pytest.approx(tri_he[f"{kind}_hallu_i"])
            assert f"tri-he {kind}_hallu_i" in generative["sources"]
    share = {
        m: float(cells[(m, "object", "discriminative")]["hallucinated_percent"]) for m in ("sees", "yes")
    }
    assert share["sees"] < share["yes"]
    # no benchmark of this suite asks relation questions yes/no: that cell is left empty, not zero
    assert ("sees", "relation", "discriminative") not in cells

    markdown = (out / "leaderboard.md").read_text(encoding="utf-8")
    table = markdown.split("## Hallucination profile", 1)[1]
    sees_line = next(line for line in table.splitlines() if line.startswith("| sees |"))
    assert f"{float(cells[('sees', 'object', 'discriminative')]['hallucinated_percent']):.2f}" in sees_line
    assert "–" in sees_line  # the cells no benchmark measured
    words = " ".join(printed.split())
    assert "hallucination profile" in words and "sees" in words


# -- in a real browser --------------------------------------------------------------------------------------


def test_leaderboard_page_in_chromium_shows_ranks_intervals_the_marked_difference_and_the_profile(
    suite: tuple[Path, str], tmp_path: Path
) -> None:
    from tests.test_report_browser import Browser, chromium_executable, serve

    out, _ = suite
    browser = Browser(chromium_executable())
    try:
        page = browser.page()
        with serve(out) as (url, _requests):
            page.call("Page.navigate", url=f"{url}/leaderboard.html")
            page.wait_for("document.readyState === 'complete' && document.querySelector('table.profile')")
            seen = page.js(
                """(() => {
                  const tables = [...document.querySelectorAll('h2')].map(h => {
                    const t = h.nextElementSibling?.tagName === 'TABLE' ? h.nextElementSibling
                      : h.nextElementSibling?.nextElementSibling;
                    return {title: h.textContent, rows: [...t.querySelectorAll('tr')].slice(1).map(r =>
                      [...r.cells].map(c => ({text: c.innerText.trim(), cls: c.className, title: c.title,
                                              color: getComputedStyle(c).color})))};
                  });
                  return {tables, scripts: document.scripts.length,
                          outside: [...document.querySelectorAll('[src],[href]')].length};
                })()"""
            )
            page.screenshot(tmp_path / "leaderboard.png", 1280, 900)
        page.close()
    finally:
        browser.close()
    assert seen["scripts"] == 0 and seen["outside"] == 0  # one self-contained page
    pope = next(t for t in seen["tables"] if t["title"].startswith("pope"))
    ranked = {row[1]["text"]: row for row in pope["rows"]}
    # each model ranked, with its interval around its value
    assert ranked["sees"][0]["text"] == "1" and ranked["yes"][0]["text"] == "2"
    for model in ("sees", "yes"):
        value = _metrics(out, model, "pope")["metrics"]
        interval = _metrics(out, model, "pope")["intervals"]
        headline = pope["title"].split(": ", 1)[1].split(" ", 1)[0]
        assert ranked[model][2]["text"] == f"{value[headline]:.2f}"
        assert ranked[model][3]["text"].startswith(
            f"[{interval[headline]['low']:.2f}, {interval[headline]['high']:.2f}]"
        )
    # the baseline (the first model) marked, the other's significant difference marked worse, in red
    assert ranked["sees"][4]["text"] == "baseline"
    versus = ranked["yes"][4]
    assert versus["cls"] == "worse" and versus["text"].endswith("worse *")
    assert versus["color"] == "rgb(170, 0, 0)"
    # the profile: one row per model, each measured cell naming the figures it averages
    profile = next(t for t in seen["tables"] if t["title"] == "Hallucination profile")
    by_model = {row[0]["text"]: row for row in profile["rows"]}
    assert set(by_model) == {"sees", "yes"}
    object_disc = {m: float(by_model[m][1]["text"]) for m in by_model}
    assert object_disc["sees"] < object_disc["yes"]
    assert "pope 100 - accuracy" in by_model["yes"][1]["title"]
    # columns: object, attribute, relation, each discriminative then generative
    relation_disc = by_model["yes"][5]
    assert relation_disc["text"] == "–" and relation_disc["title"] == "not measured"
