"""The speed-ups of issue 14 (Reefknot scoring) change nothing a user sees: the run log reads back as it did,
cached answer parsing still depends on the question, the collector is handed back, and a run that calls no
LLM does not import the HTTP stack."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

from halluscope.gcpause import gc_frozen
from halluscope.judges.answers import parse_yes_no
from halluscope.runs.store import SAMPLES_FILE, RecordWriter, read_records, records_as_logged, scan_records
from halluscope.types import SampleRecord


def _record(sample_id: str, **extra: object) -> str:
    return SampleRecord(id=sample_id, prompt="Is the cat on the mat?", response="Yes.", **extra).model_dump_json()


def test_run_log_reads_back_records_and_names_every_bad_line(tmp_path: Path) -> None:
    lines = [
        _record("a", correct=True, answer_probs={"yes": 0.9, "no": 0.1}),
        "",  # blank lines are skipped, not corrupt
        '{"id": "b", "prompt": ',  # not JSON
        json.dumps({"id": "c", "prompt": "p", "response": "r", "claims": "garbled"}),  # JSON, not a record
        '{"id": "d", "prompt": "p", "response": "r", "entropy": NaN}',  # Python's JSON reading accepts NaN
        _record("a", correct=False),  # a repeated id: the first one wins
        _record("e"),
        _record("f")[:20],  # the last write was cut short
    ]
    (tmp_path / SAMPLES_FILE).write_text("\n".join(lines), encoding="utf-8")

    scan = scan_records(tmp_path)

    assert [r.id for r in scan.records] == ["a", "d", "e"]
    assert scan.records[0].model_extra == {"correct": True, "answer_probs": {"yes": 0.9, "no": 0.1}}
    entropy = (scan.records[1].model_extra or {})["entropy"]
    assert entropy != entropy  # NaN read back as NaN, the record kept
    assert scan.torn
    assert [(c.number, c.id) for c in scan.corrupt] == [(3, None), (4, "c")]
    assert scan.corrupt[0].problem.startswith("not valid JSON (")
    assert scan.corrupt[1].problem.startswith("not a sample record (claims:")


def test_cached_yes_no_reading_still_depends_on_the_question() -> None:
    answer = "The cat is on the mat."
    # The same words restate one question (a yes) and not the other (no answer): the cache must not mix them.
    assert parse_yes_no(answer, question="Is the cat on the mat in this image?").value == "yes"
    assert parse_yes_no(answer, question="Is the dog under the table in this image?").value is None
    assert parse_yes_no(answer, question="Is the cat on the mat in this image?").how == "restated"
    assert parse_yes_no(answer).how == "unparsed"


def test_frozen_objects_are_handed_back_to_the_collector() -> None:
    class Node:
        def __init__(self) -> None:
            self.me = self

    before = gc.get_freeze_count()
    cycle = Node()
    with gc_frozen():
        assert gc.get_freeze_count() > before
        made_inside = Node()
        del made_inside
    assert gc.get_freeze_count() == 0
    del cycle
    # Both cycles, the one frozen and the one made in the block, are collectable once the block ends.
    assert gc.collect() >= 2


def test_a_run_without_an_llm_does_not_import_the_http_stack() -> None:
    code = (
        "import sys\n"
        "import halluscope.cli.main, halluscope.cli.run, halluscope.runs.runner, halluscope.benchmarks.reefknot\n"
        "import halluscope.llm, halluscope.llm.local, halluscope.llm.errors, halluscope.scene.graph\n"
        "print(sorted(m for m in ('httpx', 'networkx', 'http.client', 'torch') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    # The lazy names still resolve.
    from halluscope.llm import ChatClient, LLMError
    from halluscope.llm.client import LLMError as ClientLLMError

    assert LLMError is ClientLLMError and ChatClient.__name__ == "ChatClient"


def test_a_freeze_made_by_the_process_itself_is_left_in_place() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with gc_frozen():
            pass
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()


def test_records_kept_in_memory_are_what_the_log_reads_back(tmp_path: Path) -> None:
    kept = SampleRecord(id="k", prompt="p", response="No.", correct=False)
    plain = [
        SampleRecord(
            id="a", prompt="p", response="Yes.", correct=True, answer_probs={"yes": 0.9, "no": 0.1},
            entropy=0.4689955935892812, metadata={"line": 3, "options": {"A": "on", "B": "under"}},
        ),
        SampleRecord(id="b", prompt="p", response=None, failure="no response for this sample", pair=None),
        SampleRecord(id="a", prompt="p", response="No.", correct=False),  # a repeated id: the first one wins
    ]  # fmt: skip
    writer = RecordWriter(tmp_path)
    writer.write([kept, *plain])
    writer.close()

    in_memory = records_as_logged(tmp_path, [kept], plain)

    assert in_memory == read_records(tmp_path)
    assert in_memory[1] is plain[0]  # not read again

    # Values JSON would change (a tuple becomes a list, NaN becomes null): the log is read instead.
    odd = SampleRecord(id="c", prompt="p", response="r", pair=(1, 2), entropy=float("nan"))
    writer = RecordWriter(tmp_path)
    writer.write([odd])
    writer.close()

    read_back = records_as_logged(tmp_path, [kept], [*plain, odd])

    assert read_back == read_records(tmp_path)
    assert (read_back[-1].model_extra or {})["pair"] == [1, 2]


def test_plain_json_check_walks_every_level() -> None:
    """What records_as_logged uses in memory: only values JSON reads back as themselves, at any depth."""
    from enum import StrEnum

    from halluscope.runs.store import _plain

    class Word(StrEnum):
        YES = "yes"

    plain = [{}, [], "x", 2.0, {"a": 1, "b": "x", "c": None, "d": True, "e": 1.5}, [{"a": 1}, {"x": [1, "y"]}]]
    not_plain = [
        {"a": float("nan")}, {"a": [1, {"b": float("inf")}]}, {1: "x"}, {"a": (1,)}, {"a": {"b": {2: 3}}},
        {"a": object()}, [float("nan")], float("-inf"), {Word.YES: 1}, {"a": Word.YES}, [Word.YES], (1,),
        [[[float("-inf")]]],
    ]  # fmt: skip
    assert all(_plain(value) for value in plain)
    assert not any(_plain(value) for value in not_plain)
