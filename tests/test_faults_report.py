"""Faults of a real run: keys on disk and on screen, formulas in the CSV export, an HTML page too big to open.

- A key written into a base URL (``http://user:sk-...@host/v1``) or into a model spec (``?api_key=sk-...``)
  still reaches the server, but no file of the run folder and no line of output shows it.
- A run folder named like a spreadsheet formula is exported to CSV as text, while numbers stay numbers.
- A run whose answers are 68 KB each gives an HTML page of a few kilobytes per sample, saying where the rest is.
"""

from __future__ import annotations

import base64
import csv
import json
import socket
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.layouts import reefknot_layout
from tests.scripted_server import Recorded, Reply, ScriptedServer, completion

SECRET = "sk-SECRET-7d1c9e"


@pytest.fixture(autouse=True)
def no_endpoint_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    names = (
        "HALLUSCOPE_LLM_MODEL",
        "HALLUSCOPE_BASE_URL",
        "OPENAI_BASE_URL",
        "HALLUSCOPE_API_KEY",
        "OPENAI_API_KEY",
    )
    for name in names:
        monkeypatch.delenv(name, raising=False)


def invoke(*args: str) -> Any:
    from halluscope.cli.main import app

    return CliRunner().invoke(app, list(args), terminal_width=200)


def with_key(base_url: str) -> str:
    """The server's URL with a user and the key written into it, as users paste them."""
    return base_url.replace("http://", f"http://u:{SECRET}@", 1)


def answer_or_entail(body: Any) -> Reply:
    """The model under test ("vlm") answers "yes"; the judge ("m") says the answers entail each other."""
    return completion("yes" if body["model"] == "vlm" else '{"entails": true}')


def run_with_key_in_urls(tmp_path: Path, server: ScriptedServer) -> Any:
    url = with_key(server.base_url)
    return invoke(
        "run", "-b", "reefknot", "--data", str(reefknot_layout()), "--bench-opt", "tasks=vqa",
        "--limit", "4", "--model", f"openai/vlm?base_url={url}&text_only=true",
        "--judge", "llm", "--judge-model", "m", "--base-url", url,
        "--out", str(tmp_path / "run"), "--no-cache", "--quiet",
    )  # fmt: skip


def files_holding(folder: Path, text: str) -> list[str]:
    return [p.name for p in folder.rglob("*") if p.is_file() and text in p.read_text(encoding="utf-8")]


def basic_auth(request: Recorded) -> str:
    header = request.headers.get("Authorization", "")
    return base64.b64decode(header.removeprefix("Basic ")).decode() if header.startswith("Basic ") else ""


def test_a_key_in_the_base_url_authenticates_but_is_in_no_file_and_no_output(tmp_path: Path) -> None:
    with ScriptedServer(responder=answer_or_entail) as server:
        result = run_with_key_in_urls(tmp_path, server)
        sent = server.chat_requests()
        masked = server.base_url.replace("http://", "http://u:***@", 1)
    assert result.exit_code == 0, result.output
    # Both the model and the judge were asked, each with the key the URL carries.
    assert {r.body["model"] for r in sent} == {"vlm", "m"}
    assert all(basic_auth(r) == f"u:{SECRET}" for r in sent)
    run = tmp_path / "run"
    assert {"spec.json", "respond.json", "responses.jsonl", "samples.jsonl"} <= {
        p.name for p in run.iterdir()
    }
    assert files_holding(run, SECRET) == []
    assert SECRET not in result.output
    # What ran is still recorded: the endpoint, with the key masked.
    spec = json.loads((run / "spec.json").read_text())
    assert spec["model"]["base_url"] == masked and spec["judge"]["base_url"] == masked
    assert spec["run"]["base_url"] == masked and f"base_url={masked}" in spec["run"]["model"]
    assert json.loads((run / "respond.json").read_text())["model"]["base_url"] == masked


def test_the_same_run_with_its_key_resumes(tmp_path: Path) -> None:
    with ScriptedServer(responder=answer_or_entail) as server:
        first = run_with_key_in_urls(tmp_path, server)
        again = run_with_key_in_urls(tmp_path, server)
    assert first.exit_code == 0, first.output
    assert again.exit_code == 0, again.output
    assert "holds a run with" not in again.output


def test_an_unreachable_endpoint_is_named_without_its_key(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://u:{SECRET}@127.0.0.1:{port}/v1"
    result = invoke(
        "run", "-b", "reefknot", "--data", str(reefknot_layout()), "--bench-opt", "tasks=yesno", "--limit", "2",
        "--model", f"openai/vlm?base_url={url}&text_only=true&max_retries=0", "--out", str(tmp_path / "run"),
        "--no-cache", "--quiet",
    )  # fmt: skip
    said = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert f"could not reach http://u:***@127.0.0.1:{port}/v1" in said
    assert SECRET not in result.output
    assert files_holding(tmp_path / "run", SECRET) == []


@pytest.mark.parametrize("command", ["run", "respond"])
def test_a_refused_model_spec_is_named_without_its_key(tmp_path: Path, command: str) -> None:
    result = invoke(
        command, "-b", "reefknot", "--data", str(reefknot_layout()), "--limit", "2",
        "--model", f"openai/x?max_side=256&api_key={SECRET}", "--out", str(tmp_path / "run"), "--no-cache",
    )  # fmt: skip
    said = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert "api_key" in said and "openai/x?max_side=256&api_key=***" in said
    assert SECRET not in result.output


def test_a_rendered_model_spec_hides_keys_but_shows_max_tokens() -> None:
    from halluscope.models.spec import parse_model_spec

    spec = parse_model_spec(
        f"general-description[describe_max_tokens=256]:openai/x?max_tokens=64&access_token={SECRET}"
        f"&base_url=http://u:{SECRET}@127.0.0.1:9/v1"
    )
    shown = spec.render()
    assert SECRET not in shown
    assert "max_tokens=64" in shown and "describe_max_tokens=256" in shown and "access_token=***" in shown
    assert f"access_token={SECRET}" in spec.render(redact=False)


# -- report --csv ------------------------------------------------------------------------------------------


FORMULA = "=cmd|' -C calc'!A0"


def write_minimal_run(
    folder: Path, metrics: dict[str, float], records: list[dict[str, Any]] | None = None
) -> Path:
    """A run folder as the runner leaves it: spec.json, metrics.json and samples.jsonl."""
    records = records or []
    folder.mkdir(parents=True)
    (folder / "spec.json").write_text(json.dumps({"benchmark": {"benchmark": "pope"}, "model": "-model"}))
    report = {"benchmark": "pope", "metrics": metrics, "groups": {}, "counts": {"samples": len(records)}}
    (folder / "metrics.json").write_text(json.dumps(report))
    (folder / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def test_csv_cells_that_would_be_formulas_are_text_and_numbers_stay_numbers(tmp_path: Path) -> None:
    run = write_minimal_run(tmp_path / FORMULA, {"accuracy": 81.25, "delta_accuracy": -0.5})
    out = tmp_path / "runs.csv"
    result = invoke("report", str(run), "--csv", str(out))
    assert result.exit_code == 0, result.output
    with out.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert rows[0]["run"] == "'" + FORMULA
    assert rows[0]["model"] == "'-model"
    assert rows[0]["accuracy"] == "81.25" and rows[0]["delta_accuracy"] == "-0.5"
    assert float(rows[0]["delta_accuracy"]) == -0.5


# -- report --html ----------------------------------------------------------------------------------------


def test_an_html_report_of_huge_answers_stays_small_and_says_where_the_rest_is(tmp_path: Path) -> None:
    from halluscope.report.html import write_html_report

    filler = "The scene shows many things in great detail. " * 1_500  # 69,000 characters
    records = [
        {
            "id": f"q{i}",
            "prompt": "Describe the image.",
            "response": f"A dog sits on a sofa. {filler}A cat sleeps under the table.",
            "claims": [
                {"subject": "dog", "relation": "sits on", "object": "sofa", "verdict": "supported"},
                {"subject": "cat", "relation": "sleeps under", "object": "table", "verdict": "hallucinated"},
            ],
        }
        for i in range(4)
    ]
    run = write_minimal_run(tmp_path / "run", {"accuracy": 50.0}, records)
    answers = sum(len(r["response"]) for r in records)
    page = write_html_report([run], tmp_path / "report.html").read_text(encoding="utf-8")
    assert answers > 250_000
    assert len(page) < answers / 4
    more = len(records[0]["response"]) - 4_000
    assert page.count(f"… ({more:,} more characters in samples.jsonl)") == len(records)
    # The beginning is shown, with its claim marked; the claim stated past the cut is said to be there.
    data = json.loads(page.split('id="hs-data">', 1)[1].split("</script>", 1)[0])
    first = data["samples"][0]
    assert first["a"].startswith("A dog sits on a sofa. The scene shows")
    assert first["c"][0]["sp"] is not None and first["c"][1]["sp"] is None and first["c"][1]["cut"] is True
    # The whole answer is still in the run folder.
    assert (
        json.loads((run / "samples.jsonl").read_text().splitlines()[0])["response"] == records[0]["response"]
    )
