"""The one fetch loop the benchmark loaders share: mirrors tried in order, verified, written atomically."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from halluscope.download import FetchError, RemoteFile, fetch_file


def test_first_mirror_that_answers_is_written_and_failures_are_named(tmp_path: Path) -> None:
    source = tmp_path / "official.json"
    source.write_text('{"ok": true}', encoding="utf-8")
    missing = (tmp_path / "gone.json").as_uri()
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    target = tmp_path / "cache" / "data.json"
    fetch_file(RemoteFile("data.json", (missing, source.as_uri()), source.stat().st_size, digest), target)
    assert target.read_text(encoding="utf-8") == '{"ok": true}'
    assert not (tmp_path / "cache" / "data.json.part").exists()

    other = tmp_path / "cache" / "other.json"
    with pytest.raises(FetchError) as caught:
        fetch_file(RemoteFile("other.json", (missing, missing + "?again")), other)
    message = str(caught.value)
    assert "\n" not in message and message.count(missing) == 2
    assert not other.exists()
