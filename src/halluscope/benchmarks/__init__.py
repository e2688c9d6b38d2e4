"""Benchmarks, by name. Each module opens with its paper's citation and documents its sample ids."""

from halluscope.benchmarks.base import Benchmark, MetricsReport, ScoringContext
from halluscope.registry import Registry

BENCHMARKS: Registry[Benchmark] = Registry(
    "benchmark",
    {
        "tri-he": "halluscope.benchmarks.tri_he:TriHE.from_options",
        "synthetic": "halluscope.benchmarks.synthetic:SyntheticBenchmark.from_options",
        "reefknot": "halluscope.benchmarks.reefknot:Reefknot.from_options",
        "prove": "halluscope.benchmarks.prove:Prove.from_options",
    },
    {
        "tri-he": "Tri-HE: open questions; triplet-level object and relation hallucination (Hallu-Q, Hallu-I)",
        "synthetic": "rendered scenes with exact scene graphs (build synthetic); Tri-HE scoring",
        "reefknot": "Reefknot: relation hallucination as yes/no, multiple choice and VQA (Halr, R)",
        "prove": "PROVE: free-form answers scored for helpfulness (hscore) and truthfulness (tscore) over tuples",
    },
)

__all__ = ["BENCHMARKS", "Benchmark", "MetricsReport", "ScoringContext"]
