"""Fetching a benchmark's official files into a folder, keeping those already there.

The loaders of POPE, AMBER and HallusionBench call this when ``--data`` is omitted (machines with internet
only); the mirror loop itself is :func:`halluscope.download.fetch_first`.
"""

from __future__ import annotations

from pathlib import Path

from halluscope.benchmarks.data_files import BenchmarkDataError
from halluscope.download import fetch_first

__all__ = ["download_files"]


def download_files(urls: dict[str, str], target_dir: Path, what: str) -> Path:
    """Fetch ``{relative path: url}`` into ``target_dir`` (machines with internet only); keeps what exists."""
    target_dir.mkdir(parents=True, exist_ok=True)
    for relative, url in urls.items():
        target = target_dir / relative
        if target.exists():
            continue
        errors = fetch_first(target, [url])
        if errors:
            raise BenchmarkDataError(f"could not download {what} ({errors[0]}); pass --data with a local copy")
    return target_dir
