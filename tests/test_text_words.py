"""The one table of number words and the shared yes/no, negation and comparison words."""

from __future__ import annotations

from pathlib import Path

import pytest

from halluscope.builders.prove import answers_agree
from halluscope.judges.hqh_rules import parse_numbers
from halluscope.text import NUMBER_WORDS, comparison_words, is_negation, number_value, numbers_in

SRC = Path(__file__).resolve().parent.parent / "src" / "halluscope"


def test_there_is_one_number_word_table() -> None:
    holders = sorted(
        str(path.relative_to(SRC)) for path in SRC.rglob("*.py") if '"eleven"' in path.read_text(encoding="utf-8")
    )
    assert holders == ["text/numbers.py"]


@pytest.mark.parametrize(("word", "value"), [("dozen", 12), ("pair", 2), ("couple", 2), ("both", 2), ("none", 0)])
def test_quantity_words_mean_the_same_everywhere(word: str, value: int) -> None:
    assert NUMBER_WORDS[word] == value
    text = f"I see {word} here"
    assert value in parse_numbers(text)  # the HQH judge
    assert value in numbers_in(text, no_is_zero=True)  # the PROVE builder's reader


def test_no_is_zero_only_when_asked() -> None:
    assert numbers_in("No dogs are there.") == set()
    assert numbers_in("No dogs are there.", no_is_zero=True) == {0}
    assert numbers_in("It costs 2.5 dollars, 3 apples") == {3}  # a decimal is not two numbers
    assert number_value("Twelve") == 12 and number_value("17") == 17 and number_value("dog") is None


def test_prove_builder_reads_a_dozen_and_a_contracted_no() -> None:
    def never(a: str, b: str) -> float:
        raise AssertionError("no similarity needed")

    assert answers_agree(12, "A dozen eggs.", never, 0.75)[0]
    assert answers_agree(2, "A pair of skis.", never, 0.75)[0]
    assert answers_agree(False, "There isn't a dog.", never, 0.75)[0]  # "isn't" was read as a yes before
    assert not answers_agree(True, "There isn't a dog.", never, 0.75)[0]


def test_negation_and_comparison_words() -> None:
    assert is_negation("isn't") and is_negation("never") and not is_negation("note")
    assert comparison_words("The left line is shorter than the right one.") == {"shorter"}
    assert comparison_words("They are of equal length.") == {"same"}
    assert comparison_words("The colours differ.") == {"different"}
