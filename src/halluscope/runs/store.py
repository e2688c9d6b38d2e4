"""The run directory: ``spec.json`` (frozen config), ``samples.jsonl`` (one record per sample, appended as
samples finish) and ``metrics.json``. Other tools rely on this layout; see docs/run-directory.md.

Appends are flushed and fsynced per chunk, so a crash loses at most the chunk in flight; a torn last
line (the process died mid-write) is dropped when the log is read back, and the next run redoes it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from halluscope.types import MetricsReport, SampleRecord

SPEC_FILE = "spec.json"
SAMPLES_FILE = "samples.jsonl"
METRICS_FILE = "metrics.json"


class RunDirError(ValueError):
    """A run directory is missing, incomplete, or belongs to a different configuration."""


def read_spec(run_dir: Path) -> dict[str, Any]:
    path = Path(run_dir) / SPEC_FILE
    if not path.exists():
        raise RunDirError(f"{run_dir} is not a halluscope run directory (no {SPEC_FILE})")
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def read_metrics(run_dir: Path) -> MetricsReport:
    path = Path(run_dir) / METRICS_FILE
    if not path.exists():
        raise RunDirError(f"{run_dir} has no {METRICS_FILE}: the run has not finished")
    return MetricsReport.model_validate_json(path.read_text(encoding="utf-8"))


def read_records(run_dir: Path) -> list[SampleRecord]:
    """Every complete record, first occurrence of each id wins; a torn trailing line is ignored."""
    path = Path(run_dir) / SAMPLES_FILE
    if not path.exists():
        return []
    records: dict[str, SampleRecord] = {}
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.endswith("\n"):
                break  # torn write from an interrupted run
            if not line.strip():
                continue
            try:
                record = SampleRecord.model_validate_json(line)
            except ValueError:
                continue
            records.setdefault(record.id, record)
    return list(records.values())


def rewrite_records(run_dir: Path, records: Iterable[SampleRecord]) -> None:
    """Replace the log atomically (used on resume to drop torn lines and failed samples to redo)."""
    path = Path(run_dir) / SAMPLES_FILE
    tmp = path.with_suffix(".jsonl.tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(record.model_dump_json() + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    tmp.replace(path)


class RecordWriter:
    """Appends records to ``samples.jsonl``; each :meth:`write` is durable when it returns."""

    def __init__(self, run_dir: Path) -> None:
        self._handle = (Path(run_dir) / SAMPLES_FILE).open("a", encoding="utf-8")

    def write(self, records: Iterable[SampleRecord]) -> None:
        self._handle.write("".join(r.model_dump_json() + "\n" for r in records))
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        self._handle.close()
