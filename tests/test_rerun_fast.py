"""Re-running a finished run loads only what the finished run needs (issue 33): asking whether NLTK's tagger
data is installed does not import NLTK when the data is not there, and the answer stays NLTK's own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from halluscope.claims import nltk_data
from halluscope.claims.nltk_data import nltk_data_installed

RESOURCES = ["taggers/averaged_perceptron_tagger_eng/", "tokenizers/punkt_tab/english/", "corpora/wordnet"]


@pytest.mark.parametrize("resource", RESOURCES)
def test_the_answer_is_nltks_own(resource: str) -> None:
    import nltk

    try:
        nltk.data.find(resource)
        expected = True
    except LookupError:
        expected = False
    assert nltk_data_installed(resource) is expected


def test_the_search_folders_are_the_ones_nltk_builds(tmp_path: Path) -> None:
    """Built without NLTK in the process (and with NLTK_DATA set), the list equals ``nltk.data.path``."""
    code = (
        "import sys; from halluscope.claims.nltk_data import _search_paths; mine = _search_paths(); "
        "assert 'nltk' not in sys.modules; import nltk; print(mine == nltk.data.path, mine[0])"
    )
    env_data = str(tmp_path / "extra")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**_env(), "NLTK_DATA": env_data})  # fmt: skip
    assert out.stdout.split() == ["True", env_data]


def test_a_package_folder_that_is_there_is_checked_by_nltk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Something named like the package is handed to NLTK, which decides (an empty folder passes its find)."""
    (tmp_path / "taggers" / "averaged_perceptron_tagger_eng").mkdir(parents=True)
    monkeypatch.setattr(nltk_data, "_search_paths", lambda: [str(tmp_path)])
    assert nltk_data._maybe_there("taggers/averaged_perceptron_tagger_eng/")
    import nltk

    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])
    assert nltk_data_installed("taggers/averaged_perceptron_tagger_eng/")
    assert not nltk_data_installed("tokenizers/punkt_tab/english/")


def test_asking_about_missing_tagger_data_does_not_import_nltk() -> None:
    code = (
        "import sys; from halluscope.claims.chair_words import nltk_tagger_ready, nltk_tokenizer_ready; "
        "from halluscope.claims.nouns import NounExtractor; "
        "print(nltk_tagger_ready(), nltk_tokenizer_ready(), NounExtractor().tagger, 'nltk' in sys.modules)"
    )
    import nltk

    try:
        nltk.data.find("taggers/averaged_perceptron_tagger_eng/")
        pytest.skip("NLTK's tagger data is installed here: then NLTK must be imported to use it")
    except LookupError:
        pass
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=_env())
    assert out.stdout.split() == ["False", "False", "spacy", "False"]


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
