"""Run directories as HQM sees them: one model's score on one benchmark, named by the model.

``halluscope quality`` compares the same models across two runs (two sampling seeds, a benchmark and its
parallel form), so each run needs a model name that matches across them. The name is the run directory's
own name (lay runs out as ``runs/<form>/<model>``), or the ``NAME`` of a ``NAME=PATH`` argument. A path
that is not a run directory but holds run directories stands for all of them, each named by its folder.

Problems (not a run, unfinished, another benchmark, no such metric) are collected with the path they concern;
the run is left out and the rest goes on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from halluscope.runs.store import SPEC_FILE, RunDirError, read_metrics, read_records, read_spec
from halluscope.types import MetricsReport, SampleRecord


@dataclass
class QualityRun:
    """One finished run: its model name, benchmark and metrics; records are read on first use."""

    name: str
    directory: Path
    benchmark: str
    data: str | None
    spec: dict[str, Any]
    metrics: MetricsReport

    @cached_property
    def records(self) -> list[SampleRecord]:
        return read_records(self.directory)

    def value(self, metric: str) -> float | None:
        """A metric by name (``metrics.json`` ``metrics``), or ``GROUP:NAME`` from its groups."""
        group, sep, name = metric.rpartition(":")
        value = self.metrics.groups.get(group, {}).get(name) if sep else self.metrics.metrics.get(metric)
        return None if value is None else float(value)


@dataclass
class RunSet:
    """Runs loaded for one role (main, retest, parallel, coverage), and what went wrong with the rest."""

    runs: list[QualityRun] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def by_name(self) -> dict[str, QualityRun]:
        return {r.name: r for r in self.runs}


def _benchmark_of(spec: dict[str, Any], metrics: MetricsReport) -> tuple[str, str | None]:
    bench = spec.get("benchmark")
    if isinstance(bench, dict):
        name = bench.get("benchmark") or metrics.benchmark
        data = bench.get("data")
        return str(name), str(data) if data is not None else None
    return str(bench or metrics.benchmark), None


def expand(arguments: list[str]) -> tuple[list[tuple[str, Path]], list[str]]:
    """``[NAME=]PATH`` arguments to (name, run directory) pairs; folders of runs are expanded."""
    found: list[tuple[str, Path]] = []
    problems: list[str] = []
    for argument in arguments:
        name, sep, rest = argument.partition("=")
        path = Path(rest if sep and rest else argument)
        explicit = name if sep and rest else None
        if (path / SPEC_FILE).exists():
            found.append((explicit or path.name, path))
            continue
        if path.is_dir():
            inner = sorted(p for p in path.iterdir() if (p / SPEC_FILE).exists())
            if inner:
                found.extend(((f"{explicit}/{p.name}" if explicit else p.name), p) for p in inner)
                continue
        problems.append(f"{path}: not a halluscope run directory (no {SPEC_FILE}) and holds none")
    return found, problems


def load_runs(arguments: list[str], *, benchmark: str | None = None, metric: str | None = None,
              role: str = "run") -> RunSet:
    """Load runs; with ``benchmark``, runs of another benchmark are refused; with ``metric``, runs without it."""
    pairs, problems = expand(arguments)
    result = RunSet(problems=[f"{role}: {p}" for p in problems])
    seen: dict[str, Path] = {}
    for name, path in pairs:
        try:
            spec = read_spec(path)
            metrics = read_metrics(path)
        except (RunDirError, ValueError, OSError) as error:
            result.problems.append(f"{role} {name} ({path}): {error}")
            continue
        bench, data = _benchmark_of(spec, metrics)
        run = QualityRun(name=name, directory=path, benchmark=bench, data=data, spec=spec, metrics=metrics)
        if benchmark is not None and bench != benchmark:
            result.problems.append(
                f"{role} {name} ({path}): a run of benchmark {bench!r}, not {benchmark!r}; left out"
            )
            continue
        if metric is not None and run.value(metric) is None:
            available = ", ".join(sorted(k for k, v in metrics.metrics.items() if v is not None)[:12])
            result.problems.append(
                f"{role} {name} ({path}): no value for metric {metric!r}; left out (it has: {available})"
            )
            continue
        if name in seen:
            result.problems.append(
                f"{role} {name} ({path}): a second run named {name!r} (first: {seen[name]}); left out — "
                "name runs NAME=PATH to tell them apart"
            )
            continue
        seen[name] = path
        result.runs.append(run)
    return result
