"""Benchmarks, by name. Each module opens with its paper's citation and documents its sample ids."""

from __future__ import annotations

from typing import Any

from halluscope.benchmarks.base import Benchmark, MetricsReport, ScoringContext
from halluscope.registry import Registry


class _BenchmarkRegistry(Registry[Benchmark]):
    """The benchmarks by name; ``data`` given as another tool's file (a VLMEvalKit TSV, an lmms-lab parquet
    dataset) is written once in the benchmark's own layout first (:mod:`halluscope.benchmarks.foreign_data`)."""

    def create(self, name: str, **options: Any) -> Benchmark:
        if options.get("data") is not None:
            from halluscope.benchmarks.foreign_data import resolve_foreign_options

            options = resolve_foreign_options(name, options)
        return super().create(name, **options)


BENCHMARKS: Registry[Benchmark] = _BenchmarkRegistry(
    "benchmark",
    {
        "tri-he": "halluscope.benchmarks.tri_he:TriHE.from_options",
        "synthetic": "halluscope.benchmarks.synthetic:SyntheticBenchmark.from_options",
        "reefknot": "halluscope.benchmarks.reefknot:Reefknot.from_options",
        "pope": "halluscope.benchmarks.pope:Pope.from_options",
        "hallusionbench": "halluscope.benchmarks.hallusionbench:HallusionBench.from_options",
        "amber": "halluscope.benchmarks.amber:Amber.from_options",
        "hqh": "halluscope.benchmarks.hqh:HQH.from_options",
        "prove": "halluscope.benchmarks.prove:Prove.from_options",
        "chair": "halluscope.benchmarks.chair:Chair.from_options",
        "mmhal": "halluscope.benchmarks.mmhal:MMHal.from_options",
        "gavie": "halluscope.benchmarks.gavie:Gavie.from_options",
    },
    {
        "tri-he": "Tri-HE: open questions; triplet-level object and relation hallucination (Hallu-Q, Hallu-I)",
        "synthetic": "rendered scenes with exact scene graphs (build synthetic); Tri-HE scoring",
        "reefknot": "Reefknot: relation hallucination as yes/no, multiple choice and VQA (Halr, R)",
        "pope": "POPE: object existence yes/no over COCO, A-OKVQA and GQA (accuracy, F1, yes-ratio)",
        "hallusionbench": "HallusionBench: yes/no about figures, original and edited (aAcc, qAcc, fAcc)",
        "amber": "AMBER: generative CHAIR/Cover/Hal/Cog and discriminative yes/no (existence, attribute, relation)",
        "hqh": "HQH: free-form questions over 8 hallucination types, judged against VG region descriptions",
        "prove": "PROVE: free-form answers scored for helpfulness (hscore) and truthfulness (tscore) over tuples",
        "chair": "CHAIR on COCO: object hallucination in image descriptions (CHAIRs, CHAIRi, Recall), as chair.py",
        "mmhal": "MMHal-Bench: 96 open questions over 8 types, each answer rated 0-6 by an LLM judge (avg, Hal%)",
        "gavie": "GAVIE: 1,000 open instructions over VG images, relevancy and accuracy 0-10 by an LLM judge",
    },
)


def benchmark_class(name: str) -> type[Benchmark]:
    """The class registered as ``name`` (its module imported now), for what it declares: its options."""
    factory = BENCHMARKS.factory(name)
    owner = getattr(factory, "__self__", None)  # the registry names each class's from_options
    if not isinstance(owner, type) or not issubclass(owner, Benchmark):
        raise TypeError(f"benchmark {name!r} is not registered through a Benchmark class's from_options")
    return owner


def judge_slots() -> dict[str, tuple[str, ...]]:
    """Each kind of judge slot (``judges.JUDGE_KINDS``) → the benchmarks whose judge slot it fills, made from
    what each benchmark declares (``judge_kind``; a benchmark without a default judge has no slot), so a new
    benchmark is listed with its judges without a second table to keep. Imports every benchmark module."""
    from halluscope.judges import JUDGE_KINDS

    slots: dict[str, list[str]] = {kind: [] for kind in JUDGE_KINDS}
    for name in BENCHMARKS.registered():
        declared = benchmark_class(name)
        if declared.default_judge is not None:
            slots.setdefault(declared.judge_kind, []).append(name)
    return {kind: tuple(names) for kind, names in slots.items()}


def judge_belongs_elsewhere(name: str, kind: str) -> str | None:
    """Where a judge that is not of ``kind`` belongs, in words (``judge 'hqh-llm' belongs to --benchmark
    hqh``), or None when no other kind has it."""
    from halluscope.judges import JUDGE_KINDS

    others = [k for k, registry in JUDGE_KINDS.items() if k != kind and name in registry.names()]
    if not others:
        return None
    slots = judge_slots()
    where = " or ".join(f"--benchmark {b}" for k in others for b in slots[k])
    return f"judge {name!r} belongs to {where}"


__all__ = [
    "BENCHMARKS",
    "Benchmark",
    "MetricsReport",
    "ScoringContext",
    "benchmark_class",
    "judge_belongs_elsewhere",
    "judge_slots",
]
