"""One HQM assessment: load the runs, compute every measure the inputs allow, keep every problem.

What is computed depends on what is given: test-retest needs retest runs, parallel-forms and the parallel
half of response bias need parallel-form runs, criterion validity needs a labels file. Coverage uses every
run given (and ``coverage`` runs of other benchmarks, for one table across benchmarks). Nothing here stops
on a bad input: a run of another benchmark, a missing metric, too few models for a correlation or unknown
label ids each become a problem naming the item, and the rest is still computed.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from halluscope.quality.labels import LabelsError, read_labels
from halluscope.quality.measures import (
    BiasRow,
    CorrelationMeasure,
    Coverage,
    coverage,
    criterion_validity,
    parallel_forms,
    response_bias,
    test_retest,
)
from halluscope.quality.runs import load_runs


class QualityError(ValueError):
    """Nothing can be assessed (no usable run at all)."""


class QualityReport(BaseModel):
    """The content of ``quality.json``."""

    benchmark: str
    metric: str
    higher_is_better: bool
    runs: dict[str, list[str]] = Field(default_factory=dict)
    correlations: list[CorrelationMeasure] = Field(default_factory=list)
    coverage: Coverage = Field(default_factory=Coverage)
    response_bias: list[BiasRow] = Field(default_factory=list)
    #: model → number of human-labelled samples behind its human score
    human_labelled: dict[str, int] = Field(default_factory=dict)
    problems: list[str] = Field(default_factory=list)


def assess(
    runs: list[str],
    metric: str,
    *,
    retest: list[str] | None = None,
    parallel: list[str] | None = None,
    labels: Path | None = None,
    coverage_runs: list[str] | None = None,
    higher_is_better: bool = False,
    resamples: int = 2000,
    seed: int = 0,
) -> QualityReport:
    """Every measure the inputs allow (see the module docstring); raises only when no run is usable."""
    main = load_runs(runs, metric=metric, role="run")
    if not main.runs:
        raise QualityError("no usable run: " + "; ".join(main.problems or ["none given"]))
    # The benchmark is the one most of the given runs are on; runs of any other are refused, by name.
    names = [r.benchmark for r in main.runs]
    benchmark = max(sorted(set(names)), key=names.count)
    problems = [p for p in main.problems]
    kept = []
    for run in main.runs:
        if run.benchmark != benchmark:
            problems.append(
                f"run {run.name} ({run.directory}): a run of benchmark {run.benchmark!r}, not {benchmark!r} "
                "like the others; left out"
            )
        else:
            kept.append(run)
    main.runs = kept
    report = QualityReport(benchmark=benchmark, metric=metric, higher_is_better=higher_is_better,
                           runs={"run": [r.name for r in main.runs]})
    everything = list(main.runs)
    if retest:
        second = load_runs(retest, benchmark=benchmark, metric=metric, role="retest")
        problems += second.problems
        report.runs["retest"] = [r.name for r in second.runs]
        report.correlations.append(test_retest(main.runs, second.runs, metric, resamples=resamples, seed=seed))
    parallel_runs = []
    if parallel:
        other = load_runs(parallel, benchmark=benchmark, metric=metric, role="parallel")
        problems += other.problems
        parallel_runs = other.runs
        report.runs["parallel"] = [r.name for r in other.runs]
        report.correlations.append(
            parallel_forms(main.runs, other.runs, metric, resamples=resamples, seed=seed)
        )
        everything += other.runs
    if labels is not None:
        try:
            human = read_labels(labels, {r.name: {rec.id for rec in r.records} for r in main.runs})
        except LabelsError as error:
            problems.append(f"criterion validity: {error}")
        else:
            problems += human.problems
            report.human_labelled = human.labelled
            report.correlations.append(criterion_validity(main.runs, human.scores(higher_is_better), metric,
                                                          resamples=resamples, seed=seed))
    if coverage_runs:
        extra = load_runs(coverage_runs, role="coverage")
        problems += extra.problems
        everything += extra.runs
        report.runs["coverage"] = [r.name for r in extra.runs]
    report.coverage = coverage(everything)
    report.response_bias = response_bias(main.runs, parallel_runs)
    for measure in report.correlations:
        if measure.error:
            problems.append(measure.error)
    report.problems = problems
    return report
