"""The benchmark interface, re-exported where benchmark modules look for it (it lives in ``stages``)."""

from halluscope.stages import Benchmark, ScoringContext
from halluscope.types import MetricsReport

__all__ = ["Benchmark", "MetricsReport", "ScoringContext"]
