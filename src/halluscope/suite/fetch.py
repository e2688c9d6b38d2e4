"""``eval --download``: the official data of each planned benchmark that lacks it, pulled before any run.

Why a step of its own between planning and running: the pull is the one of ``halluscope data pull`` (the
benchmarks' declared files, verified and resumable), and what it cannot fetch becomes that benchmark's
failure, in one line, while the other benchmarks run, as a benchmark whose data is missing already does.
With a data root the files go to ``<root>/<data set>`` and the benchmark then reads them from there; without
one they go to the user cache, where the loaders look when no ``--data`` is given.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # types only: plan.py imports this module when asked to download
    from halluscope.download import PullReport, TransferProgress
    from halluscope.suite.plan import SuitePlan
    from halluscope.suite.spec import BenchmarkEntry

__all__ = ["fetch_missing_data"]


def fetch_missing_data(
    plan: SuitePlan,
    data_root: Path | None,
    *,
    timeout: float | None = None,
    progress: TransferProgress | None = None,
) -> tuple[SuitePlan, list[PullReport]]:
    """The plan with each pulled benchmark's entry pointing at its data (or saying why it is missing), and the
    pull reports. Benchmarks given a data file or folder of their own are left alone."""
    entries: dict[str, BenchmarkEntry] = {}
    reports: list[PullReport] = []
    for run in plan.runs:
        entry = run.benchmark
        if entry.data is not None or entry.name in entries:
            continue
        pulled = _pull(entry.name, data_root, timeout, progress)
        reports += pulled
        entries[entry.name] = _after_pull(entry, pulled, data_root)
    runs = [
        run.model_copy(update={"benchmark": entries[run.benchmark.name]})
        if run.benchmark.data is None and run.benchmark.name in entries
        else run
        for run in plan.runs
    ]
    return plan.model_copy(update={"runs": runs}), reports


def _pull(
    name: str, root: Path | None, timeout: float | None, progress: TransferProgress | None
) -> list[PullReport]:
    from halluscope.benchmarks.data_sets import UnknownDataError, data_sets_named, pull_named

    try:
        data_sets = [d for d in data_sets_named([name]) if d.files]
    except UnknownDataError:  # the run says so itself, with the registry's list of names
        return []
    return pull_named(data_sets, root, timeout=timeout, progress=progress)


def _after_pull(entry: BenchmarkEntry, reports: list[PullReport], root: Path | None) -> BenchmarkEntry:
    from halluscope.benchmarks._download import failure_line
    from halluscope.suite.spec import find_data

    failed = [r for r in reports if not r.ok]
    if failed:
        return entry.model_copy(update={"missing": "; ".join(failure_line(r) for r in failed)})
    if not reports or root is None:
        return entry
    found = find_data(entry.name, root)
    return entry.model_copy(
        update={"data": found.data, "images": entry.images or found.images, "missing": None}
    )
