"""The base class of halluscope's benchmarks: the interface of :class:`halluscope.stages.BenchmarkInterface` plus the
reader of responses files every benchmark starts from, and the one ``from_options`` that makes a benchmark
from its declared options.

The interface lives in ``stages`` (the contract every layer may import); reading responses files needs
``responses`` and ``importers``, which sit above the contract, so the default reader is here, where the
benchmarks subclass it; each benchmark's own answer layouts are read in its module.
``halluscope.benchmarks.Benchmark`` is this class.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, Self

from halluscope import stages
from halluscope.download import DataSet
from halluscope.options import parse_declared
from halluscope.responses import ResponsesFile, load_responses
from halluscope.stages import ScoringContext
from halluscope.types import MetricsReport, SampleRecord

__all__ = ["Benchmark", "MetricsReport", "ScoringContext"]


class Benchmark(stages.BenchmarkInterface):
    """One benchmark's data, scoring and metrics (see :class:`halluscope.stages.BenchmarkInterface`)."""

    #: The official data, declared once in the benchmark's module: what ``halluscope data pull NAME`` and
    #: ``eval --download`` fetch (the ``required`` ones) and what the loader fetches when ``--data`` is omitted.
    data_sets: ClassVar[tuple[DataSet, ...]] = ()

    @classmethod
    def from_options(cls, data: Path | None = None, **options: Any) -> Self:
        """The registry's factory: ``options`` (``--bench-opt`` values or Python ones) checked against the
        declared :attr:`options`, each read by its kind, then given to ``__init__``, which stays the Python
        API and applies the defaults of the options not given."""
        given = cls.given_options(dict(options))
        chosen = parse_declared(cls.component(), cls.options, given)
        make: Callable[..., Self] = cls  # every benchmark's __init__ takes data and its declared options
        return make(data=data, **{**cls.computed_defaults(chosen), **chosen})

    @classmethod
    def component(cls) -> str:
        """The benchmark as messages about its options name it."""
        return f"the {cls.title or cls.name} benchmark"

    @classmethod
    def given_options(cls, options: dict[str, Any]) -> dict[str, Any]:
        """The options before they are checked: where a benchmark refuses an old spelling, naming the new one,
        or drops what its ``spec()`` records that is not a choice (a run's benchmark is re-made from it)."""
        return options

    @classmethod
    def computed_defaults(cls, chosen: dict[str, Any]) -> dict[str, Any]:
        """Defaults that depend on other options' values (POPE's sources under RePOPE's labels), for the
        options not given; ``__init__``'s own defaults apply to the rest."""
        return {}

    def metrics(self, records: Sequence[SampleRecord]) -> MetricsReport:
        """``metrics.json`` made from the declarations alone: each declared metric's value over its table, the
        records counted and those that failed. A benchmark whose figures are all declared needs no metrics code
        of its own; those with figures beyond their headlines (per-set tables, distributions) override this."""
        from halluscope.metrics.declared import declared_value

        tables = self.metric_tables(records)
        values = {d.name: declared_value(d, tables) for d in self.metric_declarations()}
        failed = sum(1 for record in records if record.failure)
        counts = {"samples": len(records), "scored": len(records) - failed, "failed": failed}
        return MetricsReport(benchmark=self.name, metrics=values, counts=counts)

    def read_responses(
        self, path: Path, *, benchmark_ids: set[str] | None = None, key: str | None = None
    ) -> ResponsesFile:
        """Read a responses file: halluscope's JSONL, or an lmms-eval / VLMEvalKit / LLaVA output (matched by
        id fields, see docs/importers.md). A benchmark with an official answer layout of its own overrides this
        in its module, reads that layout there and calls this for the rest: each layout has one reader, in the
        benchmark that owns it, which ``--responses`` and ``--model replay/FILE`` both use."""
        from halluscope.importers import detect_external, read_external

        kind = detect_external(Path(path))
        if kind is not None:
            return read_external(Path(path), kind, self, benchmark_ids=benchmark_ids)
        return load_responses(path, benchmark_ids=benchmark_ids)
