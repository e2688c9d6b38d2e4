"""``SampleRecord.field``: the one reader of a benchmark's own fields, used by every metrics function."""

from __future__ import annotations

from halluscope.types import SampleRecord


def _record(**extra: object) -> SampleRecord:
    return SampleRecord(id="x", prompt="q", response="a", metadata={"type": "count", "label": "yes"}, **extra)


def test_extra_field_first_then_metadata_then_default() -> None:
    record = _record(label="no")
    assert record.field("label") == "no"  # written on the record: wins over metadata
    assert record.field("type") == "count"  # only in metadata
    assert record.field("missing") is None
    assert record.field("missing", 0) == 0


def test_an_extra_field_written_as_none_is_not_looked_up_in_metadata() -> None:
    """A benchmark writes ``prediction: null`` for "no prediction"; metadata must not fill it in."""
    record = _record(type=None)
    assert record.field("type") is None
    assert record.fields()["type"] is None


def test_fields_is_what_field_reads() -> None:
    record = _record(label="no", prediction="yes")
    merged = record.fields()
    assert merged == {"type": "count", "label": "no", "prediction": "yes"}
    assert all(record.field(name) == value for name, value in merged.items())


def test_a_record_read_back_from_json_reads_the_same() -> None:
    record = _record(label="no")
    again = SampleRecord.model_validate_json(record.model_dump_json())
    assert again.field("label") == "no" and again.field("type") == "count"
