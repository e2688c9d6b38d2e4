"""A benchmark's declared official files, fetched into its data folder when ``--data`` is omitted.

Why here: each benchmark module declares its files once (a :class:`~halluscope.download.DataSet`), and the
loaders, ``halluscope data pull`` and ``halluscope eval --download`` all fetch through
:func:`halluscope.download.pull`, into the same folder: ``<user cache>/data/<data set name>``
(:func:`data_root`), which is also the layout ``--data-root`` reads.
"""

from __future__ import annotations

from pathlib import Path

from halluscope.benchmarks.data_files import BenchmarkDataError
from halluscope.cache import default_cache_dir
from halluscope.download import DataSet, PullReport, pull

__all__ = ["data_root", "ensure_data", "failure_line"]


def data_root() -> Path:
    """Where downloaded benchmark data goes by default: the user cache's ``data/`` folder."""
    return default_cache_dir() / "data"


def failure_line(report: PullReport) -> str:
    """What went wrong with a pull, in one line: where to put what by hand when offline, else each failure."""
    if report.offline:
        return report.offline_line()
    return f"could not download {report.data_set.title} ({'; '.join(o.message for o in report.failed)})"


def ensure_data(
    data_set: DataSet,
    *,
    error: type[Exception] = BenchmarkDataError,
    hint: str = "pass --data with a local copy",
) -> Path:
    """The data set's folder under :func:`data_root`, its missing files fetched first (machines with internet
    only); files already there are kept unread. A failure raises ``error`` with one line and ``hint``."""
    folder = data_set.folder(data_root())
    report = pull(data_set, folder, verify_present=False)
    if not report.ok:
        line = failure_line(report)
        raise error(line if report.offline else f"{line}; {hint}")
    return folder
