"""Yes/no reading on the answers people see: emphasis, answers without yes or no, answers that contradict
themselves, and the agreement with a person's reading on held-out real answers."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from halluscope.judges.answers import parse_yes_no
from halluscope.judges.statements import question_statement

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("answer", "value"),
    [
        ("Absolutely not.", "no"),
        ("Definitely not", "no"),
        ("Indeed not.", "no"),
        ("Of course not!", "no"),
        ("Certainly not, there is no dog.", "no"),
        ("Certainly!", "yes"),
        ("Sure, there is.", "yes"),
        ("Absolutely.", "yes"),
        ("Definitely, the dog is on the sofa.", "yes"),
        ("Sure! Here is a description of the scene.", None),
    ],
)
def test_emphasis_takes_the_polarity_of_what_follows(answer: str, value: str | None) -> None:
    assert parse_yes_no(answer, question="Is there a dog in the image?").value == value


@pytest.mark.parametrize(
    ("question", "answer", "value", "how"),
    [
        ("Is there a dog in the image?", "There appears to be a dog.", "yes", "restated"),
        (
            "According to the table, does Germany have the highest GDP in Europe in 2021?",
            "According to the table, Germany has the highest GDP in Europe in 2021.",
            "yes",
            "restated",
        ),
        ("Are the colours on tiles A and B the same?", "The colors on tiles A and B are not the same.", "no", "denied"),
        ("Is the cup not on the table?", "The cup is not on the table.", "yes", "restated"),
        ("Is the cup not on the table?", "The cup is on the table.", "no", "denied"),
        ("Is the dog on the sofa?", "The dog is on the sofa, not the floor.", "yes", "restated"),
        ("Is there a dog in the image?", "There is no dog.", "no", "denied"),
        (
            "Is the vertical line shorter than the horizontal line?",
            "The vertical line and the horizontal line appear to be of equal length.",
            "no",
            "compared",
        ),
        ("Are the two circles the same colour? Yes or No", "The two circles are different colours.", "no", "compared"),
        # A reordered list is another claim: not guessed.
        (
            "Does the USA have the most gold medals, followed by China and Russia?",
            "China has the most gold medals, followed by the USA and Russia.",
            None,
            "unparsed",
        ),
        ("Is there a dog in the image?", "I see a cat on the sofa.", None, "unparsed"),
    ],
)
def test_answers_that_state_or_deny_the_question(question: str, answer: str, value: str | None, how: str) -> None:
    parsed = parse_yes_no(answer, question=question)
    assert (parsed.value, parsed.how) == (value, how)


def test_an_answer_that_contradicts_itself_is_unanswered_and_named() -> None:
    question = "Is Switzerland the leading importer of gold in 2018?"
    answer = (
        "Yes, that's correct. China is the leading importer. So, Switzerland is not the leading importer of gold"
        " in 2018."
    )
    parsed = parse_yes_no(answer, question=question)
    assert parsed.value is None and parsed.how == "contradictory"
    # The same opening with a conclusion that agrees stays a yes.
    agreeing = "Yes. The chart shows it. So, Switzerland is the leading importer of gold in 2018."
    assert parse_yes_no(agreeing, question=question).value == "yes"


def test_question_statement_drops_instructions_and_context() -> None:
    assert question_statement("The man opens the door. According to the images, are they in the correct order?") == (
        "they in the correct order"
    )
    assert question_statement("Is there a cat in the image? Please answer yes or no.") == "a cat in the image"
    assert question_statement("Which country has the highest GDP?") is None


def _bench() -> object:
    spec = importlib.util.spec_from_file_location("yesno_bench", ROOT / "bench" / "yesno_reader_agreement.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["yesno_bench"] = module
    spec.loader.exec_module(module)
    return module


def test_held_out_real_answers_agree_with_a_careful_reading() -> None:
    bench = _bench()
    rows = bench.load(bench.LABELS, "heldout")  # type: ignore[attr-defined]
    assert len(rows) >= 150
    robust = bench.score(rows, bench.READERS["robust"])  # type: ignore[attr-defined]
    paper = bench.score(rows, bench.READERS["paper"])  # type: ignore[attr-defined]
    assert robust["agreement"] >= 0.99 and robust["coverage"] >= 0.97
    assert robust["exact"] > paper["exact"]  # unclear answers are left unanswered, not guessed
    assert robust["unclear_unanswered"] > paper["unclear_unanswered"] == 0


def test_unanswered_answers_are_counted_by_reason() -> None:
    from halluscope.benchmarks.closed import yes_no_record
    from halluscope.judges.answers import parse_yes_no_paper
    from halluscope.metrics.yesno import yes_no_report
    from halluscope.types import Response, Sample

    question = "Is Switzerland the leading importer of gold in 2018?"
    answers = [
        "Yes.",
        "No, it is not.",
        "Yes. China leads. So, Switzerland is not the leading importer of gold in 2018.",
        "I cannot tell from this chart.",
        "Yes and no.",
    ]
    records = [
        yes_no_record(
            Sample(id=str(i), benchmark="pope", prompt=question, metadata={"label": "no"}),
            Response(id=str(i), response=answer),
            mode="robust",
            paper_rule=lambda a: parse_yes_no_paper(a).value,
            fields=["label"],
        )
        for i, answer in enumerate(answers)
    ]
    counts = yes_no_report(records, benchmark="pope", mode="robust", group_by=()).counts
    assert counts["unanswered"] == 3
    assert (counts["unanswered_contradictory"], counts["unanswered_refusal"], counts["unanswered_ambiguous"]) == (
        1, 1, 1,
    )  # fmt: skip


def test_the_packaged_reader_measurement_is_what_the_held_out_answers_give() -> None:
    """What every run states of its reader is reproduced by the bench script from the labelled answers: a change
    of the reading rules that moves it fails here until the measurement is packaged again."""
    from halluscope.judges.agreement import measured_reader

    bench = _bench()
    rows = bench.load(bench.LABELS, "heldout")  # type: ignore[attr-defined]
    for name, run_name in bench.RUN_NAMES.items():  # type: ignore[attr-defined]
        fresh = bench.score(rows, bench.READERS[name])  # type: ignore[attr-defined]
        packaged = measured_reader(run_name)
        assert packaged is not None, run_name
        for key in ("items", "decided", "answered", "agreed", "exact_count", "unclear", "unclear_unanswered"):
            assert packaged[key] == fresh[key], (run_name, key)
    assert measured_reader("pope-paper") is None


def test_a_pope_run_states_how_its_reader_was_measured(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from halluscope.benchmarks.pope import Pope
    from halluscope.cli.main import app
    from tests.paths import POPE_EXCERPT

    answers = tmp_path / "answers.jsonl"
    samples = list(Pope(POPE_EXCERPT).samples())[:12]
    answers.write_text("".join(json.dumps({"id": s.id, "response": "Yes, there is."}) + "\n" for s in samples))
    outputs = {}
    for mode in ("robust", "paper"):
        out = tmp_path / mode
        args = ["run", "-b", "pope", "--data", str(POPE_EXCERPT), "-r", str(answers), "--limit", "12",
                "--bench-opt", f"mode={mode}", "--out", str(out), "--no-cache", "-q"]  # fmt: skip
        result = CliRunner().invoke(app, args, env={"COLUMNS": "400"})
        assert result.exit_code == 0, result.output
        reader = json.loads((out / "metrics.json").read_text())["judge_error"]["reader"]
        outputs[mode] = (reader, result.output)
    robust, output = outputs["robust"]
    assert robust["name"] == "robust" and robust["measured"]["items"] >= 150
    assert f"read {robust['measured']['answered']} of the {robust['measured']['decided']}" in output
    paper, output = outputs["paper"]
    assert paper == {"name": "pope-paper", "measured": None, "note": paper["note"]}
    assert "yes/no reader pope-paper: not measured" in output
