"""Every JSONL file a user or an interrupted run hands us is read by one line-numbered reader
(``halluscope.jsonio.iter_jsonl``): a bad or torn line is reported by its number, never lost silently."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from halluscope.benchmarks.reefknot import (
    Reefknot,
    ReefknotDataError,
    load_reefknot_responses,
    read_reefknot_file,
)
from halluscope.models.replay import ReplayModel
from halluscope.report.rundir import read_records_jsonl
from halluscope.responses import load_responses
from halluscope.runs.respond import read_collected


def test_responses_file_names_a_torn_last_line_and_keeps_a_complete_one(tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps({"id": "a", "response": "x"}) + "\n" + '{"id": "b", "respo')
    loaded = load_responses(path)
    assert set(loaded.responses) == {"a"}
    assert len(loaded.problems) == 1
    assert loaded.problems[0].startswith("answers.jsonl line 2: not valid JSON")
    assert "interrupted write" in loaded.problems[0]
    # A hand-written file whose last line simply lacks its newline is fine.
    path.write_text(json.dumps({"id": "a", "response": "x"}))
    assert set(load_responses(path).responses) == {"a"}


def test_collected_answers_treat_a_torn_line_as_not_written(tmp_path: Path) -> None:
    path = tmp_path / "responses.jsonl"
    path.write_text(json.dumps({"id": "a", "response": "x"}) + "\n" + json.dumps({"id": "b", "response": "y"}))
    responses, problems = read_collected(path)
    assert set(responses) == {"a"}  # "b" was being written when the process died: ask it again
    assert problems and "line 2" in problems[0] and "asked again" in problems[0]


def test_reefknot_layout_reports_bad_lines_by_number(reefknot_dir: Path, tmp_path: Path) -> None:
    rows = [json.loads(t) for t in (reefknot_dir / "YESNO.jsonl").read_text().splitlines()[:3]]
    for row in rows:
        row["response"] = "yes"
    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps(rows[0]) + "\nnot json\n" + json.dumps(rows[2]) + "\n")
    loaded = load_reefknot_responses(path)
    assert set(loaded.responses) == {"yesno-0", "yesno-2"}  # line numbers stay the sample ids
    assert any(p.startswith("answers.jsonl line 2: not valid JSON") for p in loaded.problems)
    replay = ReplayModel.from_spec(str(path))
    replay.bind(Reefknot(data=reefknot_dir))  # the benchmark's reader reads the file
    assert replay.ids() == {"yesno-0", "yesno-2"}
    assert any("line 2" in p for p in replay.problems)


def test_official_reefknot_file_with_a_gap_is_refused_with_its_line(reefknot_dir: Path, tmp_path: Path) -> None:
    lines = (reefknot_dir / "VQA.jsonl").read_text().splitlines()[:4]
    path = tmp_path / "VQA.jsonl"
    path.write_text("\n".join(lines[:2]) + "\n\n" + "\n".join(lines[2:]) + "\n")
    with pytest.raises(ReefknotDataError, match=r"VQA\.jsonl line 3: empty line"):
        read_reefknot_file(path)
    path.write_text("\n".join(lines[:2]) + "\n{oops\n")
    with pytest.raises(ReefknotDataError, match=r"VQA\.jsonl line 3: not valid JSON"):
        read_reefknot_file(path)


def test_report_reader_notes_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text(json.dumps({"id": "a"}) + "\n[1]\n{broken")
    notes: list[str] = []
    assert read_records_jsonl(path, notes) == [{"id": "a"}]
    assert notes == [
        "samples.jsonl line 2 is not a sample record; skipped",
        "samples.jsonl line 3 is not valid JSON; skipped",
    ]
