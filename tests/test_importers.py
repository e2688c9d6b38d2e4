"""lmms-eval ``--log_samples`` and VLMEvalKit prediction files read as responses, matched to sample ids."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from halluscope.benchmarks.amber import Amber
from halluscope.benchmarks.hallusionbench import HallusionBench
from halluscope.benchmarks.pope import Pope
from halluscope.importers import detect_external
from halluscope.responses import ResponsesError
from halluscope.runs.selection import first_samples
from tests.paths import AMBER_EXCERPT, HALLUSIONBENCH_EXCERPT, POPE_EXCERPT, TRI_HE_JSON

POPE_DIR = POPE_EXCERPT


def _lmms_row(doc_id: int, doc: dict[str, object], answer: str) -> dict[str, object]:
    """One line as lmms-eval's evaluator writes it with --log_samples (images left out of ``doc``)."""
    return {
        "doc_id": doc_id,
        "doc": doc,
        "target": doc.get("answer"),
        "arguments": [["gen_kwargs"], {"max_new_tokens": 128}],
        "resps": [[answer]],
        "filtered_resps": [answer],
        "doc_hash": "0" * 64,
        "prompt_hash": "1" * 64,
        "target_hash": "2" * 64,
        "pope_accuracy": {"question_id": doc.get("question_id"), "score": 1.0},
    }


def test_lmms_eval_pope_samples(tmp_path: Path) -> None:
    path = tmp_path / "pope_adv_samples.jsonl"
    docs = [
        {"id": "0", "question_id": "1", "question": "Is there a snowboard in the image?", "answer": "yes",
         "image_source": "COCO_val2014_000000310196", "category": "adversarial"},
        {"id": "1", "question_id": "2", "question": "Is there a backpack in the image?", "answer": "no",
         "image_source": "COCO_val2014_000000310196", "category": "adversarial"},
        {"id": "2", "question_id": "99999", "question": "Is there a yak?", "answer": "no", "category": "adversarial"},
    ]
    lines = [json.dumps(_lmms_row(i, d, a)) for i, (d, a) in enumerate(zip(docs, ["Yes.", "No", "No"], strict=True))]
    path.write_text("\n".join(lines) + "\n{broken\n", encoding="utf-8")
    assert detect_external(path) == "lmms-eval"
    bench = Pope(POPE_DIR, sources=["coco"], settings=["adversarial"])
    result = bench.read_responses(path, benchmark_ids={s.id for s in bench.samples()})
    assert sorted(result.responses) == ["coco-adversarial-1", "coco-adversarial-2"]
    assert result.responses["coco-adversarial-1"].response == "Yes."
    assert any("line 3" in p and "matches no sample" in p for p in result.problems)
    assert any("line 4" in p and "JSON" in p for p in result.problems)


def _pope_table_rows(bench: Pope) -> list[dict[str, object]]:
    rows = []
    for index, sample in enumerate(list(bench.samples())[:4]):
        rows.append({"index": index, "image_path": sample.metadata["image"], "question": sample.prompt,
                     "answer": sample.metadata["label"], "category": sample.metadata["setting"],
                     "prediction": "Yes" if index % 2 else "No"})
    return rows


@pytest.mark.parametrize("suffix", [".tsv", ".csv", ".xlsx"])
def test_vlmevalkit_prediction_tables(tmp_path: Path, suffix: str) -> None:
    bench = Pope(POPE_DIR, sources=["coco"], settings=["random"])
    rows = _pope_table_rows(bench)
    rows.append({"index": 99, "image_path": "nowhere.jpg", "question": "Is there a yak?", "answer": "no",
                 "category": "random", "prediction": "No"})
    path = tmp_path / f"MyModel_POPE{suffix}"
    header = list(rows[0])
    if suffix == ".xlsx":
        import openpyxl

        book = openpyxl.Workbook()
        sheet = book.active
        sheet.append(header)
        for row in rows:
            sheet.append([row[h] for h in header])
        book.save(path)
    else:
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=header, delimiter="\t" if suffix == ".tsv" else ",")
            writer.writeheader()
            writer.writerows(rows)
    result = bench.read_responses(path, benchmark_ids={s.id for s in bench.samples()})
    assert sorted(result.responses) == [f"coco-random-{i}" for i in (1, 2, 3, 4)]
    assert result.responses["coco-random-2"].response == "Yes"
    assert len(result.problems) == 1 and "row 6" in result.problems[0]


def test_vlmevalkit_hallusionbench_ids_survive_spreadsheet_numbers(tmp_path: Path) -> None:
    import openpyxl

    bench = HallusionBench(HALLUSIONBENCH_EXCERPT)
    path = tmp_path / "M_HallusionBench.xlsx"
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["index", "category", "subcategory", "set_id", "figure_id", "question_id", "question", "prediction"])
    question = "Is the right orange circle the same size as the left orange circle?"
    sheet.append([0, "VD", "illusion", 0.0, 0.0, 0.0, question, "Yes"])
    book.save(path)
    result = bench.read_responses(path, benchmark_ids={s.id for s in bench.samples()})
    assert list(result.responses) == ["VD-illusion-0-0-0"]


def test_generic_id_matching_and_nothing_matching(tmp_path: Path) -> None:
    bench = Amber(AMBER_EXCERPT, types=["existence"])
    samples = list(first_samples(bench, 2).samples())
    ids = [s.id for s in samples]
    path = tmp_path / "amber.csv"
    path.write_text(f"id,question,prediction\n{ids[0]},{samples[0].prompt},No\n", encoding="utf-8")
    assert list(bench.read_responses(path, benchmark_ids=set(ids)).responses) == [ids[0]]
    path.write_text("id,question,prediction\n424242,Is there a cloud in this image?,No\n", encoding="utf-8")
    with pytest.raises(ResponsesError, match=r"no row of .* matched the benchmark"):
        bench.read_responses(path, benchmark_ids=set(ids))


def test_generic_id_is_refused_when_the_question_is_another(tmp_path: Path) -> None:
    """A yes/no question carrying the number of AMBER's generative item 5 ("Describe this image.") is not
    that item's answer: the row is reported, not attached to it."""
    bench = Amber(AMBER_EXCERPT)
    ids = {s.id for s in bench.samples()}
    path = tmp_path / "amber.csv"
    path.write_text(
        "index,question,prediction\n5,Is there a dog in this image?,Yes\n8633,Is there a cloud in this image?,No\n",
        encoding="utf-8",
    )
    result = bench.read_responses(path, benchmark_ids=ids)
    assert list(result.responses) == ["8633"]
    assert len(result.problems) == 1
    assert "row 2" in result.problems[0] and "not the question of 5" in result.problems[0]
    assert "Describe this image." in result.problems[0]


@pytest.mark.full_data
def test_any_benchmark_reads_harness_files_by_id_field(tmp_path: Path) -> None:
    from halluscope.benchmarks.tri_he import TriHE

    bench = TriHE(TRI_HE_JSON)
    ids = first_samples(bench, 2).ids()
    path = tmp_path / "samples.jsonl"
    question = next(bench.samples()).prompt
    rows = [_lmms_row(0, {"id": ids[0], "question": question}, "A dog sits on a bench."),
            _lmms_row(1, {"id": "no-such-id", "question": question}, "x")]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = bench.read_responses(path, benchmark_ids=set(ids))
    assert list(result.responses) == [ids[0]]
    assert len(result.problems) == 1 and "line 2" in result.problems[0]


@pytest.mark.parametrize("layout", ["vlmevalkit", "halluscope"])
def test_problems_with_the_responses_file_are_kept_with_the_run(tmp_path: Path, layout: str) -> None:
    """Not only printed: spec.json keeps how many rows had a problem, and which (the first 50)."""
    from typer.testing import CliRunner

    from halluscope.cli.main import app
    from tests.paths import PEER_OUTPUTS_EXCERPT

    if layout == "vlmevalkit":
        sheet = PEER_OUTPUTS_EXCERPT / "vlmevalkit-vila-1.5-8b" / "vila_8b_HallusionBench_auxmatch.tsv"
        path = tmp_path / "M_HallusionBench.tsv"
        path.write_text(sheet.read_text(encoding="utf-8").replace(
            "Is the right orange circle larger than", "Is the blue square larger than", 1), encoding="utf-8")
        expected = "M_HallusionBench.tsv row 3: its question"
    else:
        path = tmp_path / "answers.jsonl"
        path.write_text('{"id": "VD-illusion-0-0-0", "response": "No"}\n{"id": "VD-nope-9-9-9", "response": "No"}\n',
                        encoding="utf-8")
        expected = "answers.jsonl line 2: unknown id"
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", "-b", "hallusionbench", "--data", str(HALLUSIONBENCH_EXCERPT),
                                      "-r", str(path), "--only-answered", "--out", str(out), "-q"],
                                terminal_width=200)  # fmt: skip
    assert result.exit_code == 0, result.output
    kept = json.loads((out / "spec.json").read_text(encoding="utf-8"))["responses_file"]
    assert kept["layout"] == layout and kept["problems"] == 1
    assert kept["first_problems"][0].startswith(expected)
    assert "1 problem(s) in the responses file, kept in spec.json" in " ".join(result.output.split())
