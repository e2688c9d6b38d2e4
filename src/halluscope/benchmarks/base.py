"""The base class of halluscope's benchmarks: the interface of :class:`halluscope.stages.Benchmark` plus the
reader of responses files every benchmark starts from.

The interface lives in ``stages`` (the contract every layer may import); reading responses files needs
``responses`` and ``importers``, which sit above the contract, so the default reader is here, where the
benchmarks subclass it. ``halluscope.benchmarks.Benchmark`` is this class.
"""

from __future__ import annotations

from pathlib import Path

from halluscope import stages
from halluscope.responses import ResponsesFile, read_any_responses
from halluscope.stages import ScoringContext
from halluscope.types import MetricsReport

__all__ = ["Benchmark", "MetricsReport", "ScoringContext"]


class Benchmark(stages.Benchmark):
    """One benchmark's data, scoring and metrics (see :class:`halluscope.stages.Benchmark`)."""

    def read_responses(
        self, path: Path, *, benchmark_ids: set[str] | None = None, key: str | None = None
    ) -> ResponsesFile:
        """Read a responses file: halluscope's own layouts, or an lmms-eval / VLMEvalKit output (matched by
        id fields, see docs/importers.md). Benchmarks override this to accept their official layouts too."""
        from halluscope.importers import detect_external, read_external

        kind = detect_external(Path(path))
        if kind is not None:
            return read_external(Path(path), kind, self, benchmark_ids=benchmark_ids)
        return read_any_responses(path, benchmark_ids=benchmark_ids, key=key)
