"""The one download loop the benchmark loaders share: mirrors tried in order, atomic write, errors kept."""

from __future__ import annotations

from pathlib import Path

from halluscope.download import fetch_first


def test_first_mirror_that_answers_is_written_and_failures_are_named(tmp_path: Path) -> None:
    source = tmp_path / "official.json"
    source.write_text('{"ok": true}', encoding="utf-8")
    missing = (tmp_path / "gone.json").as_uri()
    target = tmp_path / "cache" / "data.json"
    assert fetch_first(target, [missing, source.as_uri()]) == []
    assert target.read_text(encoding="utf-8") == '{"ok": true}'
    assert not (tmp_path / "cache" / "data.json.part").exists()

    other = tmp_path / "cache" / "other.json"
    errors = fetch_first(other, [missing, missing])
    assert len(errors) == 2 and all(missing in e for e in errors)
    assert not other.exists()
