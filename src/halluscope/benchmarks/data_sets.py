"""Benchmarks' declared data sets by name: what ``halluscope data pull NAME`` and ``eval --download`` fetch.

Why here: the declarations live in each benchmark's module (its ``data_sets``); this module only finds them
through the registry, so a new benchmark's data is pullable without a second table to keep. A name is a
benchmark (its required data sets: ``pope`` is POPE's nine sets) or a data set (``repope``, RePOPE's labels,
which only POPE's ``labels=repope`` reads).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from halluscope.benchmarks._download import data_root
from halluscope.download import DataSet, PullReport, TransferProgress, pull

__all__ = ["UnknownDataError", "all_data_sets", "data_sets_named", "pull_named", "required_data_sets"]


class UnknownDataError(ValueError):
    """A name that is neither a benchmark nor a declared data set; the message lists the known names."""


def required_data_sets(benchmark: str) -> tuple[DataSet, ...]:
    """The data a benchmark needs to run (its declared sets but those only an option reads)."""
    from halluscope.benchmarks import benchmark_class

    return tuple(d for d in benchmark_class(benchmark).data_sets if d.required)


def all_data_sets() -> dict[str, tuple[str, DataSet]]:
    """Every declared data set by its name, with the benchmark that declares it (imports every benchmark)."""
    from halluscope.benchmarks import BENCHMARKS, benchmark_class

    found: dict[str, tuple[str, DataSet]] = {}
    for name in BENCHMARKS.names():
        for data_set in benchmark_class(name).data_sets:
            found.setdefault(data_set.name, (name, data_set))
    return found


def data_sets_named(names: Sequence[str]) -> list[DataSet]:
    """The data sets the names stand for, each once, in order; ``all`` is every data set with files."""
    from halluscope.benchmarks import BENCHMARKS

    declared = all_data_sets()
    chosen: list[DataSet] = []
    for name in names:
        if name == "all":
            chosen += [d for _, d in declared.values() if d.files]
        elif name in BENCHMARKS.names():
            chosen += required_data_sets(name)
        elif name in declared:
            chosen.append(declared[name][1])
        else:
            known = sorted({*BENCHMARKS.names(), *declared})
            raise UnknownDataError(
                f"unknown benchmark or data set {name!r}; choose from all, {', '.join(known)}"
            )
    return list({d.name: d for d in chosen}.values())


def pull_named(
    data_sets: Sequence[DataSet],
    root: Path | None = None,
    *,
    timeout: float | None = None,
    progress: TransferProgress | None = None,
) -> list[PullReport]:
    """Each data set pulled into ``<root>/<its name>`` (the user cache's ``data/`` when no root is given)."""
    base = Path(root) if root is not None else data_root()
    return [pull(d, d.folder(base), timeout=timeout, progress=progress) for d in data_sets]
