"""Yes/no reading on the answers people see: emphasis, answers without yes or no, answers that contradict
themselves, and the agreement with a person's reading on held-out real answers."""

from __future__ import annotations

import importlib.util
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
