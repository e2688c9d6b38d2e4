"""One reader per official answer layout: the same file scores the same through ``--responses FILE`` and
through ``--model replay/FILE``, on the real Reefknot and Tri-HE data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from halluscope.cli.main import app
from halluscope.jsonio import iter_jsonl


def _run(*args: str) -> None:
    result = CliRunner().invoke(app, ["run", *args, "--no-cache", "--quiet"])
    assert result.exit_code == 0, result.output


def _records(run_dir: Path) -> dict[str, dict[str, Any]]:
    return {line.value["id"]: line.value for line in iter_jsonl(run_dir / "samples.jsonl")}


def _metrics(run_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    return data


@pytest.fixture()
def small_reefknot(reefknot_dir: Path, tmp_path: Path) -> Path:
    """The first 40 yes/no and 20 multiple-choice lines of the files, as a benchmark folder."""
    folder = tmp_path / "reefknot"
    folder.mkdir()
    for name, count in (("YESNO.jsonl", 40), ("Multichoice.jsonl", 20)):
        lines = (reefknot_dir / name).read_text(encoding="utf-8").splitlines()[:count]
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def _reefknot_answers(data: Path, out: Path) -> None:
    """Answers in Reefknot's own layout, in an order of the user's making (here: reversed), with an empty
    answer and a yes/no line that carries only one of the two probabilities."""
    rows = []
    for name in ("YESNO.jsonl", "Multichoice.jsonl"):
        for number, text in enumerate((data / name).read_text(encoding="utf-8").splitlines()):
            row = json.loads(text)
            if row["type"] == "Yes/No":
                row["response"] = "Yes, it is." if number % 3 else "No."
                row["yes_prob"], row["no_prob"] = (0.7, 0.3) if number % 3 else (0.2, 0.8)
            else:
                row["response"] = "ABCD"[number % 4] + "."
            row["mllm_name"] = "tiny-vlm"
            rows.append(row)
    rows[4]["response"] = ""  # an empty answer is an answer (wrong in paper mode, unanswered in robust)
    del rows[6]["no_prob"]  # a probability the file does not give stays missing
    rows.reverse()
    out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_reefknot_file_scores_the_same_through_responses_and_replay(
    tmp_path: Path, small_reefknot: Path
) -> None:
    answers = tmp_path / "llava_reefknot.jsonl"
    _reefknot_answers(small_reefknot, answers)
    common = ["-b", "reefknot", "--data", str(small_reefknot), "--bench-opt", "tasks=yesno,mcq"]
    _run(*common, "--responses", str(answers), "--out", str(tmp_path / "by-responses"))
    _run(*common, "--model", f"replay/{answers}", "--out", str(tmp_path / "by-replay"))

    direct, replayed = _records(tmp_path / "by-responses"), _records(tmp_path / "by-replay")
    assert set(direct) == set(replayed) and len(direct) == 60
    for sample_id, record in direct.items():
        other = replayed[sample_id]
        for key in ("response", "prediction", "correct", "paper_correct", "robust_correct", "entropy"):
            assert record.get(key) == other.get(key), (sample_id, key)
        assert record["model"] == "tiny-vlm"  # mllm_name becomes the model name of each record
    # Lines are matched by content, not by position: every record answers its own question.
    assert direct["yesno-0"]["response"] == "No." and direct["mcq-1"]["response"] == "B."
    # The empty answer is scored (not dropped as "no response"); the half-given probability gives no entropy.
    assert direct["yesno-4"]["response"] == "" and direct["yesno-4"]["failure"] is None
    assert "entropy" not in replayed["yesno-6"] and "answer_probs" not in replayed["yesno-6"]
    assert replayed["yesno-1"]["answer_probs"] == {"yes": 0.7, "no": 0.3}

    first, second = _metrics(tmp_path / "by-responses"), _metrics(tmp_path / "by-replay")
    assert first["metrics"] == second["metrics"]
    assert first["counts"] == second["counts"]
    assert first["counts"]["missing_response"] == 0


def test_reefknot_folder_of_answer_files_replays_too(tmp_path: Path, small_reefknot: Path) -> None:
    folder = tmp_path / "answers"
    folder.mkdir()
    for name in ("YESNO.jsonl", "Multichoice.jsonl"):
        rows = [json.loads(t) for t in (small_reefknot / name).read_text(encoding="utf-8").splitlines()]
        for row in rows:
            row["response"] = "yes" if name == "YESNO.jsonl" else "C"
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    common = ["-b", "reefknot", "--data", str(small_reefknot)]
    _run(*common, "--responses", str(folder), "--out", str(tmp_path / "a"))
    _run(*common, "--model", f"replay/{folder}", "--out", str(tmp_path / "b"))
    assert _metrics(tmp_path / "a")["metrics"] == _metrics(tmp_path / "b")["metrics"]
    assert _metrics(tmp_path / "b")["counts"]["scored"] == 60


def test_tri_he_file_scores_the_same_through_responses_and_replay(tri_he_json: Path, tmp_path: Path) -> None:
    """Pre-extracted triplets under ``<key>_triplets`` are the claims both ways (never re-extracted)."""
    raw = json.loads(tri_he_json.read_text(encoding="utf-8"))
    image_ids = list(raw)[:1]
    data = tmp_path / "tri-he.json"
    data.write_text(json.dumps({i: raw[i] for i in image_ids}), encoding="utf-8")
    answered = {i: json.loads(json.dumps(raw[i])) for i in image_ids}
    for entry in answered.values():
        for instance in entry["instance"]:
            subject, relation, obj = (p.strip() for p in entry["triplets"][0].strip("()").split(",", 2))
            instance["llava"] = f"The {subject} {relation} the {obj}. A unicorn flies."
            instance["llava_triplets"] = [entry["triplets"][0], ["unicorn", "flies over", "table"]]
    answers = tmp_path / "llava_tri-he.json"
    answers.write_text(json.dumps(answered), encoding="utf-8")
    common = ["-b", "tri-he", "--data", str(data), "--judge", "similarity"]
    _run(*common, "--responses", str(answers), "--out", str(tmp_path / "by-responses"))
    _run(*common, "--model", f"replay/{answers}", "--out", str(tmp_path / "by-replay"))

    direct, replayed = _records(tmp_path / "by-responses"), _records(tmp_path / "by-replay")
    assert set(direct) == set(replayed)
    for sample_id, record in direct.items():
        assert record["claims_source"] == "supplied" == replayed[sample_id]["claims_source"], sample_id
        assert record["claims"] == replayed[sample_id]["claims"], sample_id
    assert _metrics(tmp_path / "by-responses")["metrics"] == _metrics(tmp_path / "by-replay")["metrics"]
