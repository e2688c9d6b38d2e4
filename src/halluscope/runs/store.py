"""The run directory: ``spec.json`` (frozen config), ``samples.jsonl`` (one record per sample, appended as
samples finish), ``metrics.json`` and ``metric_tables.json`` (what the headline intervals and paired
comparisons are computed from). Other tools rely on this layout; see docs/run-directory.md.

Appends are flushed per batch of records as it finishes (and fsynced at most once a second, and when the
run ends), so a crash loses at most the batch in flight; a torn last line (the process died mid-write) is
dropped when the log is read back, and the next run redoes it. Any other line that cannot be read (not
UTF-8 text, bad JSON, not a sample record) is *corrupt*: :func:`scan_records` lists it by line number,
the runner reports it (terminal and ``counts["corrupt_log_lines"]``) and redoes its sample, instead of
computing metrics without it.

The folder's identity (which run it holds: :func:`check_run_dir`), its lock (:func:`holding_run_dir`) and
``--overwrite`` (:func:`discard_run`, :func:`start_run`) live here only, used by the orchestrator before it
asks a model and by the runner before it scores.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import os
import time
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from pydantic import ValidationError

from halluscope.gcpause import gc_paused
from halluscope.jsonio import (
    JsonlLine,
    iter_jsonl_lines,
    json_line,
    write_json_atomic,
    write_jsonl_atomic,
    write_text_atomic,
)
from halluscope.spelling import PhrasedError, phrase
from halluscope.stages import MetricDeclaration, MetricTable
from halluscope.types import MetricsReport, SampleRecord

SPEC_FILE = "spec.json"
SAMPLES_FILE = "samples.jsonl"
METRICS_FILE = "metrics.json"
#: The per-item components of each declared headline metric (``metrics.declared``): what a paired comparison
#: of two runs and an interval at another level are computed from, without the benchmark's data.
TABLES_FILE = "metric_tables.json"
#: What collecting a model's answers writes in the folder (``runs.respond``): the answers, how they were asked,
#: and the requests that failed.
RESPONSES_FILE = "responses.jsonl"
RESPOND_META_FILE = "respond.json"
RESPOND_ERRORS_FILE = "respond-errors.jsonl"

P = ParamSpec("P")
T = TypeVar("T")


class RunDirError(PhrasedError, ValueError):
    """A run directory is missing, incomplete, or belongs to a different configuration (its message names
    ``out`` and ``overwrite`` by name: phrased for the surface that gave them)."""


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


def write_metric_tables(
    run_dir: Path, declarations: Sequence[MetricDeclaration], tables: Mapping[str, MetricTable]
) -> None:
    """Save the declarations and the tables they read (only those), beside ``metrics.json``."""
    used = {d.table for d in declarations}
    payload = {
        "declarations": [asdict(d) for d in declarations],
        "tables": {name: _shallow(table) for name, table in tables.items() if name in used},
    }
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":")) + "\n"  # compact: one row per item
    write_text_atomic(Path(run_dir) / TABLES_FILE, text)


def _shallow(table: MetricTable) -> dict[str, Any]:
    """A table's fields as JSON takes them. Not ``dataclasses.asdict``: that deep-copies every cell of every
    column (177,000 calls for Reefknot's 16,690 yes/no and multiple-choice rows) only for the copy to be
    serialised and dropped; the JSON text is the same."""
    return {item.name: getattr(table, item.name) for item in fields(table)}


def read_metric_tables(run_dir: Path) -> tuple[list[MetricDeclaration], dict[str, MetricTable]]:
    """The declarations and tables a finished run saved; RunDirError when it has none or they are unreadable."""
    path = Path(run_dir) / TABLES_FILE
    if not path.exists():
        raise RunDirError(
            f"{run_dir} has no {TABLES_FILE}: its benchmark declares no headline metrics, or the run was made "
            "by an older halluscope (re-run the same command to add it: nothing is asked again)"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        declarations = [
            MetricDeclaration(**{**d, "components": tuple(d["components"])}) for d in data["declarations"]
        ]
        tables = {name: MetricTable(**table) for name, table in data["tables"].items()}
    except (OSError, ValueError, TypeError, KeyError) as error:
        raise RunDirError(f"{path}: unreadable ({error}); re-run the same command to rewrite it") from error
    return declarations, tables


@dataclass(frozen=True)
class CorruptLine:
    """A line of ``samples.jsonl`` that could not be read back as a sample record."""

    number: int
    problem: str
    #: The sample id, when the line is JSON with an ``id`` (its sample is redone either way).
    id: str | None = None

    def __str__(self) -> str:
        which = f" (sample {self.id})" if self.id else ""
        return f"{SAMPLES_FILE} line {self.number}{which}: {self.problem}"


@dataclass
class RecordScan:
    """What reading a run log found: the records, and every line that was not one."""

    records: list[SampleRecord] = field(default_factory=list)
    corrupt: list[CorruptLine] = field(default_factory=list)
    #: The log ended in an unfinished line (an interrupted write); not corrupt, its sample is redone.
    torn: bool = False


@gc_paused()  # builds one record per line, no cycles: see halluscope.gcpause
def scan_records(run_dir: Path) -> RecordScan:
    """Every complete record (first occurrence of each id wins), and the lines that are corrupt."""
    path = Path(run_dir) / SAMPLES_FILE
    scan = RecordScan()
    if not path.exists():
        return scan
    records: dict[str, SampleRecord] = {}
    for number, text, torn, undecodable in iter_jsonl_lines(path):
        if torn:
            scan.torn = True  # torn write from an interrupted run
            break
        if undecodable is not None:
            scan.corrupt.append(CorruptLine(number, undecodable))
            continue
        try:
            # One step from text to record; a line it refuses is read again the long way, to say why.
            record = SampleRecord.model_validate_json(text)
        except ValidationError:
            read = _read_line(json_line(number, text))
            if isinstance(read, CorruptLine):
                scan.corrupt.append(read)
                continue
            record = read
        records.setdefault(record.id, record)
    scan.records = list(records.values())
    return scan


def _read_line(line: JsonlLine) -> SampleRecord | CorruptLine:
    """A parsed line as a record, or why it is not one: bad JSON, or the first field that does not fit."""
    if not line.ok:
        return CorruptLine(line.number, str(line.error))
    try:
        return SampleRecord.model_validate(line.value)
    except ValidationError as error:
        found = line.value.get("id") if isinstance(line.value, dict) else None
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "record"
        return CorruptLine(
            line.number,
            f"not a sample record ({where}: {first['msg']})",
            found if isinstance(found, str) else None,
        )


def read_records(run_dir: Path) -> list[SampleRecord]:
    """Every complete record, first occurrence of each id wins; torn and corrupt lines are left out.

    Use :func:`scan_records` to learn which lines were left out.
    """
    return scan_records(run_dir).records


def records_as_logged(
    run_dir: Path, kept: Sequence[SampleRecord], written: Sequence[SampleRecord]
) -> list[SampleRecord]:
    """What :func:`read_records` gives for a log that held ``kept`` when this process appended ``written``,
    without reading it back when the records in memory are exactly what it would give.

    Why: metrics are computed from the records as the log holds them (a later ``halluscope report`` reads the
    log), and reading a large log back costs as much as writing it (16,690 records: a third of a second). A
    record holding only JSON's own values (text, whole numbers, finite floats, booleans, None, lists and
    string-keyed objects of these) and no claims reads back equal to itself, so it is used as it is; one
    holding anything JSON would change (a tuple, NaN, a non-text key, another type) sends the whole list back to
    the log. First occurrence of an id wins, as on reading.
    """
    if not all(_reads_back_as_is(record) for record in written):
        return read_records(run_dir)
    first: dict[str, SampleRecord] = {}
    for record in (*kept, *written):
        first.setdefault(record.id, record)
    return list(first.values())


def _reads_back_as_is(record: SampleRecord) -> bool:
    return not record.claims and _plain([record.metadata, record.model_extra or {}])


#: The types JSON reads back as themselves, besides finite floats, lists and string-keyed objects.
_JSON_SCALARS = frozenset({str, int, bool, type(None)})


def _plain(value: Any) -> bool:
    """``value`` holds only what JSON reads back as itself (walked without recursion: one call per record).

    A list's or an object's scalars are checked where they stand; only nested lists and objects are pushed
    (checking 16,690 records' metadata and fields was a tenth of a second by pushing every value)."""
    stack = [value]
    push = stack.append
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            for key, child in item.items():
                if type(key) is not str:  # exactly a str: a subclass would read back as another type
                    return False
                child_kind = type(child)
                if child_kind in _JSON_SCALARS:
                    continue
                if child_kind is float:
                    if child - child != 0.0:  # NaN and the infinities give NaN
                        return False
                else:
                    push(child)
        elif kind is list:
            for child in item:
                child_kind = type(child)
                if child_kind in _JSON_SCALARS:
                    continue
                if child_kind is float:
                    if child - child != 0.0:
                        return False
                else:
                    push(child)
        elif kind in _JSON_SCALARS:
            continue
        elif kind is float:
            if item - item != 0.0:
                return False
        else:
            return False
    return True


def rewrite_records(run_dir: Path, records: Iterable[SampleRecord]) -> None:
    """Replace the log atomically (used on resume to drop torn lines and failed samples to redo)."""
    write_jsonl_atomic(Path(run_dir) / SAMPLES_FILE, (r.model_dump_json() for r in records), fsync=True)


class RecordWriter:
    """Appends records to ``samples.jsonl``.

    Each :meth:`write` is in the file (flushed to the operating system) when it returns, so a killed or
    interrupted process keeps it; it is forced to the disk (``fsync``) at most every ``sync_every_s``
    seconds and on :meth:`close`, because an ``fsync`` per small batch would cost more than the batch.
    """

    def __init__(self, run_dir: Path, *, sync_every_s: float = 1.0) -> None:
        self._handle = (Path(run_dir) / SAMPLES_FILE).open("a", encoding="utf-8")
        self._sync_every_s = sync_every_s
        self._synced_at = time.monotonic()
        self._unsynced = False

    def write(self, records: Iterable[SampleRecord]) -> None:
        self._handle.write("".join(r.model_dump_json() + "\n" for r in records))
        self._handle.flush()
        self._unsynced = True
        if time.monotonic() - self._synced_at >= self._sync_every_s:
            self._sync()

    def _sync(self) -> None:
        os.fsync(self._handle.fileno())
        self._synced_at = time.monotonic()
        self._unsynced = False

    def close(self) -> None:
        try:
            if self._unsynced:
                self._sync()
        finally:
            self._handle.close()


# -- the run folder's identity, lock and overwrite ---------------------------------------------------------

#: Spec fields that must match for a run directory to be resumed rather than refused.
IDENTITY_FIELDS = ("benchmark", "extractor", "judge", "model", "responses")
#: What a finished run's metrics were computed from (:mod:`halluscope.runs.finished`).
METRICS_KEY_FILE = "metrics.key"
#: What scoring writes in a run directory (removed by ``overwrite``).
RUN_FILES = (SPEC_FILE, SAMPLES_FILE, METRICS_FILE, TABLES_FILE, METRICS_KEY_FILE)


@contextlib.contextmanager
def holding_run_dir(out_dir: Path) -> Iterator[None]:
    """The folder's lock (one writing process; the same thread may take it again) for the block, with its
    write failures named (:mod:`halluscope.runs.lock`): what every path that writes a run folder holds."""
    from halluscope.runs.lock import run_dir_lock, run_dir_writes

    with run_dir_lock(Path(out_dir)), run_dir_writes(Path(out_dir)):
        yield


def run_dir_writer(
    as_error: Callable[[str], Exception],
) -> Callable[[Callable[P, Coroutine[Any, Any, T]]], Callable[P, Coroutine[Any, Any, T]]]:
    """Run a coroutine function that writes to its ``out_dir`` argument under the folder's lock
    (:func:`holding_run_dir`), as collecting a model's answers does.

    A busy or unwritable folder is raised as ``as_error(message)`` (the caller's own error type).
    """

    def decorate(function: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, Coroutine[Any, Any, T]]:
        signature = inspect.signature(function)

        @functools.wraps(function)
        async def locked(*args: P.args, **kwargs: P.kwargs) -> T:
            out_dir: Any = signature.bind(*args, **kwargs).arguments["out_dir"]
            from halluscope.runs.lock import RunDirBusyError, RunDirWriteError

            try:
                with holding_run_dir(Path(out_dir)):
                    return await function(*args, **kwargs)
            except (RunDirBusyError, RunDirWriteError) as error:
                raise as_error(str(error)) from error

        return locked

    return decorate


def check_run_dir(out_dir: Path, spec: Mapping[str, Any], keys: tuple[str, ...] = IDENTITY_FIELDS) -> None:
    """Refuse, in one short line, to resume a run directory that holds another run (on ``keys``)."""
    from halluscope.redact import mask_data
    from halluscope.runs.differences import (
        comparable_identity,
        describe_difference,
        same_responses,
        upgraded_spec,
        without_counts,
    )

    if not (Path(out_dir) / SPEC_FILE).exists():
        return
    previous = mask_data(upgraded_spec(read_spec(out_dir)))  # as this version writes it: keys masked
    for key in keys:
        if key not in spec:
            continue
        there, now = without_counts(key, previous.get(key)), without_counts(key, mask_data(spec.get(key)))
        if key == "model":  # the endpoint's address may change between runs; what it serves may not
            there, now = comparable_identity(there), comparable_identity(now)
        same = same_responses(there, now) if key == "responses" else there == now
        if not same:
            raise RunDirError(
                phrase(
                    "{out_dir} holds a run with {difference}; choose another {flag:out}, or pass "
                    "{flag:overwrite} to replace it",
                    out_dir=out_dir,
                    difference=describe_difference(key, there, now),
                )
            )


def discard_run(out_dir: Path, *, answers: bool = True) -> None:
    """Remove what a run left in ``out_dir`` (``--overwrite``): its scoring files, and with ``answers`` the
    answers a model gave into it too (the cache still has them)."""
    answer_files = (RESPONSES_FILE, RESPOND_META_FILE, RESPOND_ERRORS_FILE) if answers else ()
    for name in (*RUN_FILES, *answer_files):
        (Path(out_dir) / name).unlink(missing_ok=True)


def start_run(out_dir: Path, spec: dict[str, Any], *, overwrite: bool) -> dict[str, Any]:
    """Write ``spec.json`` for a run about to score into ``out_dir``: the folder's earlier run files removed
    with ``overwrite``, else the folder refused when it holds another run (:func:`check_run_dir`) and its
    ``created`` time kept when it is resumed. Returns the spec as written."""
    out_dir = Path(out_dir)
    if overwrite:
        discard_run(out_dir, answers=False)
    if (out_dir / SPEC_FILE).exists():
        check_run_dir(out_dir, spec)
        spec = {**spec, "created": read_spec(out_dir).get("created", spec.get("created"))}
    write_json_atomic(out_dir / SPEC_FILE, spec)
    return spec
