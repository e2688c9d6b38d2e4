"""An answers file's reading kept in the cache: used only while everything the reading depends on is the same,
and then exactly what reading the file gives (LLaVA's layout, matched through its question file)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from halluscope.benchmarks.pope import Pope
from halluscope.cache import Cache
from halluscope.responses import ResponsesFile
from halluscope.runs.answers_cache import NAMESPACE
from halluscope.runs.setup import read_responses_for_run
from tests.test_import_llava import EXCERPT, _excerpt_answers


class CountingPope(Pope):
    """POPE counting how often it really reads an answers file."""

    reads = 0

    def read_responses(self, path: Path, **options: Any) -> ResponsesFile:
        type(self).reads += 1
        return super().read_responses(path, **options)


def _bench(questions: Path) -> CountingPope:
    return CountingPope(EXCERPT / "pope-labels-e3e3926", sources=["coco"], mode="paper", questions=questions)


def _read(bench: Pope, path: Path, cache: Cache | None, key: str | None = None) -> ResponsesFile:
    return read_responses_for_run(bench, path, benchmark_ids={s.id for s in bench.samples()}, key=key, cache=cache)


def _same(a: ResponsesFile, b: ResponsesFile) -> None:
    assert a.responses == b.responses and a.problems == b.problems
    assert (a.layout, a.notes, a.items) == (b.layout, b.notes, b.items)


@pytest.fixture
def questions(tmp_path: Path) -> Path:
    copy = tmp_path / "llava_pope_test.jsonl"
    shutil.copy(EXCERPT / "llava_pope_test.jsonl", copy)
    return copy


def test_a_second_reading_comes_from_the_cache_and_equals_the_file(tmp_path: Path, questions: Path) -> None:
    path, lines = _excerpt_answers(tmp_path)
    lines[2]["question_id"] = 99  # a problem, kept with the reading
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    cache = Cache(tmp_path / "cache.sqlite")
    CountingPope.reads = 0
    first = _read(_bench(questions), path, cache)
    again = _read(_bench(questions), path, Cache(tmp_path / "cache.sqlite"))  # another process, the same file
    assert CountingPope.reads == 1
    _same(first, again)
    assert len(again.responses) == 179 and any("question_id 99" in p for p in again.problems)
    assert again.layout == "llava" and again.notes["questions"] == str(questions)
    _same(again, _read(_bench(questions), path, None))  # and it is what reading the file gives


def test_a_changed_answers_file_question_file_or_key_is_read_again(tmp_path: Path, questions: Path) -> None:
    path, lines = _excerpt_answers(tmp_path)
    cache = Cache(tmp_path / "cache.sqlite")
    CountingPope.reads = 0
    _read(_bench(questions), path, cache)
    lines[0]["text"] = "No" if lines[0]["text"] == "Yes" else "Yes"  # same size, other bytes
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    changed = _read(_bench(questions), path, cache)
    assert CountingPope.reads == 2
    assert next(r.response for r in changed.responses.values()) == lines[0]["text"]
    rows = questions.read_text(encoding="utf-8").splitlines()
    questions.write_text("\n".join(rows[:-1]) + "\n", encoding="utf-8")  # the question file lost a line
    fewer = _read(_bench(questions), path, cache)
    assert CountingPope.reads == 3 and len(fewer.responses) == len(lines) - 1
    _read(_bench(questions), path, cache, key="answer")  # another --responses-key: read again
    assert CountingPope.reads == 4


def test_other_samples_are_read_again(tmp_path: Path, questions: Path) -> None:
    path, _ = _excerpt_answers(tmp_path)
    cache = Cache(tmp_path / "cache.sqlite")
    CountingPope.reads = 0
    _read(_bench(questions), path, cache)
    labels = tmp_path / "labels"
    shutil.copytree(EXCERPT / "pope-labels-e3e3926", labels)
    adversarial = labels / "coco" / "coco_pope_adversarial.json"
    rows = [json.loads(line) for line in adversarial.read_text(encoding="utf-8").splitlines()]
    rows[0]["label"] = "no" if rows[0]["label"] == "yes" else "yes"  # one label changed: the samples differ
    adversarial.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    other = CountingPope(labels, sources=["coco"], mode="paper", questions=questions)
    _read(other, path, cache)
    assert CountingPope.reads == 2


def test_a_damaged_kept_reading_is_read_again_and_replaced(tmp_path: Path, questions: Path) -> None:
    path, _ = _excerpt_answers(tmp_path)
    cache = Cache(tmp_path / "cache.sqlite")
    CountingPope.reads = 0
    first = _read(_bench(questions), path, cache)
    (key,) = cache.get_blobs(NAMESPACE, [k for k in _keys(cache)]).keys()
    cache.put_blobs(NAMESPACE, {key: b'{"layout": "llava"}\n[1, 2'})
    again = _read(_bench(questions), path, cache)
    assert CountingPope.reads == 2
    _same(first, again)
    _read(_bench(questions), path, cache)
    assert CountingPope.reads == 2  # the replaced entry is used


def _keys(cache: Cache) -> list[str]:
    return [row[0] for row in cache._conn.execute("SELECT key FROM entries WHERE namespace=?", (NAMESPACE,))]


def test_a_run_re_run_with_the_kept_reading_writes_what_a_fresh_reading_writes(tmp_path: Path) -> None:
    """End to end: the same spec (answers, problems, notes), metrics and log as a run that read the file."""
    from halluscope.api import evaluate

    path, _ = _excerpt_answers(tmp_path)
    options = {"sources": "coco", "mode": "paper", "questions": str(EXCERPT / "llava_pope_test.jsonl")}
    common: dict[str, Any] = {"data": EXCERPT / "pope-labels-e3e3926", "responses": path,
                              "bench_options": options, "only_answered": True}  # fmt: skip
    cache = tmp_path / "cache.sqlite"
    evaluate("pope", **common, cache=cache, out=tmp_path / "first")
    kept = evaluate("pope", **common, cache=cache, out=tmp_path / "second")
    fresh = evaluate("pope", **common, cache=False, out=tmp_path / "fresh")
    assert len(_keys(Cache(cache))) == 1
    assert kept.spec["responses_file"] == fresh.spec["responses_file"]
    assert kept.metrics == fresh.metrics and kept.groups == fresh.groups
    assert (tmp_path / "second" / "samples.jsonl").read_bytes() == (tmp_path / "fresh" / "samples.jsonl").read_bytes()


def test_nothing_is_kept_without_a_cache_file_or_for_halluscopes_own_layout(tmp_path: Path, questions: Path) -> None:
    """``--no-cache`` (a cache in memory) and halluscope's own JSONL pay nothing for keeping: read each time."""
    path, _ = _excerpt_answers(tmp_path)
    CountingPope.reads = 0
    memory = Cache(None)
    _read(_bench(questions), path, memory)
    _read(_bench(questions), path, memory)
    assert CountingPope.reads == 2 and not _keys(memory)
    own = tmp_path / "own.jsonl"
    bench = _bench(questions)
    own.write_text("".join(json.dumps({"id": s.id, "response": "yes"}) + "\n" for s in bench.samples()))
    on_disk = Cache(tmp_path / "cache.sqlite")
    _read(bench, own, on_disk)
    _read(bench, own, on_disk)
    assert CountingPope.reads == 4 and not _keys(on_disk)
