"""Reading yes/no, letters and relation answers: the official (paper) rules exactly, and the robust ones.

The hand-written cases include the official rules' known failures: "eyes" contains "yes", refusals count
as "no", a leading space or bracket or a sentence before the letter defeats the first-character rule.
"""

from __future__ import annotations

import pytest

from halluscope.judges.answers import (
    is_refusal,
    normalise_vqa_answer,
    parse_choice,
    parse_choice_paper,
    parse_mcq_options,
    parse_yes_no,
    parse_yes_no_paper,
)

QUESTION = "Is the bus driver off the bus in this photo? Please answer yes or no."

# (response, what the official rule reads, what a careful reader reads; None = unanswered)
YES_NO_CASES = [
    ("Yes.", "yes", "yes"),
    ("yes", "yes", "yes"),
    ("No", "no", "no"),
    ("No, there is not.", "no", "no"),
    ("No, the cow's eyes are closed.", "yes", "no"),  # official failure: "eyes" contains "yes"
    ("Nope, only the dog's eyes are visible.", "yes", "no"),  # "eyes" again
    ("I cannot determine that from the image.", "no", None),  # official failure: a refusal counts as "no"
    ("I'm not sure.", "no", None),
    ("Sorry, I can't tell from this picture.", "no", None),
    ("", "no", None),
    ("Sure! Yes, he is.", "yes", "yes"),
    ("**Yes**", "yes", "yes"),
    ("Answer: no", "no", "no"),
    ("Based on the image, the driver is not off the bus.", "no", "no"),
    ("There is no bus driver in the photo.", "no", "no"),
    ("The bus driver is off the bus.", "no", "yes"),  # official failure: a restated yes without "yes"
    ("The bus driver is on the bus.", "no", None),  # does not restate the question: not guessed
    ("Yes and no.", "yes", None),
    ("Correct answer: no", "no", "no"),
    ("I would say yes", "yes", "yes"),
]


@pytest.mark.parametrize(("response", "paper", "robust"), YES_NO_CASES)
def test_yes_no_paper_and_robust(response: str, paper: str, robust: str | None) -> None:
    assert parse_yes_no_paper(response).value == paper
    assert parse_yes_no(response, question=QUESTION).value == robust


def test_yes_no_paper_rule_is_the_official_substring_test() -> None:
    # The official script: 'yes' if 'yes' in response.strip().lower() else 'no' — for any text at all.
    for text in ["YES", "  yes  ", "Yesterday it rained", "eyes", "nothing", "No.", "Oui", "y e s", "\n"]:
        expected = "yes" if "yes" in text.strip().lower() else "no"
        assert parse_yes_no_paper(text).value == expected


def test_refusals_are_named_as_such() -> None:
    parsed = parse_yes_no("It is unclear from the image.")
    assert parsed.value is None and parsed.how == "refusal"
    assert is_refusal("I am unable to determine the relation.")
    assert not is_refusal("The man is on the bench.")
    assert (
        parse_yes_no("I cannot see a bus driver on the bus.").value == "no"
    )  # a negative answer, not a refusal


OPTIONS = parse_mcq_options(
    "What is the relation with knife and apple in this photo? A. behind B. onto C. on D. into, please choose."
)

# (response, official first character, robust letter; None = unanswered)
CHOICE_CASES = [
    ("D", "D", "D"),
    ("d", "D", "D"),
    (" D", " ", "D"),  # official failure: leading space
    ("(D)", "(", "D"),  # official failure: bracket
    ("The answer is D.", "T", "D"),  # official failure: a sentence first
    ("D. into", "D", "D"),
    ("Option B", "O", "B"),
    ("into", "I", "D"),  # the option's text
    ("The knife is into the apple.", "T", "D"),
    ("A man is holding the knife.", "A", None),  # the article "A" is not option A
    ("B or C", "B", None),
    ("I cannot tell.", "I", None),
    ("", None, None),
    ("Behind.", "B", "A"),  # official failure: the word "Behind" read as option B
]


@pytest.mark.parametrize(("response", "paper", "robust"), CHOICE_CASES)
def test_choice_paper_and_robust(response: str, paper: str | None, robust: str | None) -> None:
    assert parse_choice_paper(response).value == paper
    assert parse_choice(response, OPTIONS, mask=["knife", "apple"]).value == robust


def test_option_text_inside_a_longer_option_does_not_count() -> None:
    options = {"A": "on", "B": "on top of", "C": "under", "D": "beside"}
    assert parse_choice("It is on top of the table.", options).value == "B"
    assert parse_choice("on", options).value == "A"
    assert parse_choice("on or under", options).value is None


def test_mask_keeps_entity_names_from_being_read_as_options() -> None:
    options = {"A": "in", "B": "on", "C": "behind", "D": "near"}
    # "in" occurs inside the subject "man in hat"; only "behind" is the answer.
    assert parse_choice("The man in hat is behind the car.", options, mask=["man in hat", "car"]).value == "C"


def test_mcq_options_from_official_and_builder_prompts() -> None:
    assert OPTIONS == {"A": "behind", "B": "onto", "C": "on", "D": "into"}
    built = (
        "Which relation holds between the man and the horse in this image? A. riding B. feeding "
        "C. on top of D. near. Reply with the letter of the correct option."
    )
    assert parse_mcq_options(built) == {"A": "riding", "B": "feeding", "C": "on top of", "D": "near"}
    assert parse_mcq_options("Is the cat on the mat?") == {}


def test_vqa_answers_are_put_into_the_template_or_left_unanswered() -> None:
    assert normalise_vqa_answer("On.", "bag", "ground").value == "bag is on ground."
    assert normalise_vqa_answer("holding", "man", "cup", "").value == "man holding cup."
    assert normalise_vqa_answer("bag is on ground.", "bag", "ground").value == "bag is on ground."
    assert normalise_vqa_answer("bag is <relation> ground.", "bag", "ground").value is None
    assert normalise_vqa_answer("I don't know.", "bag", "ground").how == "refusal"
    assert normalise_vqa_answer("   ", "bag", "ground").value is None
