"""HQM's measures of a benchmark's quality, over finished runs of several models.

* **Test-retest reliability**: the correlation, across models, of a metric between two runs of the same
  models on the same benchmark with different sampling seeds. Low: the ranking is mostly sampling noise.
* **Parallel-forms reliability**: the same between a benchmark and its parallel form (``halluscope build
  parallel``: negated yes/no questions, shuffled options, paraphrased prompts). Low: the scores depend on
  the wording rather than on the models' hallucination.
* **Criterion validity**: the correlation between each model's benchmark score and its human score, the
  share of its answers that people marked hallucinated (see :mod:`halluscope.quality.labels`).
* **Coverage**: which hallucination types a benchmark's items (or the errors its judge finds) cover.
* **Response bias** (yes/no benchmarks): each model's yes-ratio against the labels' yes-ratio, on the
  original and the parallel form (HQM appendix, Table 7).

Each correlation is a :class:`~halluscope.quality.stats.Correlation`: ``n``, Pearson and Spearman with
bootstrap intervals, and a warning when it says little.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from pydantic import BaseModel, Field

from halluscope.quality.runs import QualityRun
from halluscope.quality.stats import Correlation, TooFewModelsError, correlate
from halluscope.types import SampleRecord, VerdictLabel

# -- correlations ------------------------------------------------------------------------------------------


class CorrelationMeasure(BaseModel):
    """One reliability or validity figure: the paired scores and their correlation (or why there is none)."""

    measure: str
    metric: str
    #: model → [score on the first side, score on the second side]
    scores: dict[str, list[float]] = Field(default_factory=dict)
    correlation: Correlation | None = None
    error: str | None = None
    notes: list[str] = Field(default_factory=list)


def _pair_scores(
    measure: str, metric: str, first: Mapping[str, float], second: Mapping[str, float], *,
    first_label: str, second_label: str, resamples: int, seed: int,
) -> CorrelationMeasure:
    notes = []
    for missing, label in ((sorted(set(first) - set(second)), second_label),
                           (sorted(set(second) - set(first)), first_label)):
        if missing:
            shown = ", ".join(missing[:6]) + (f" and {len(missing) - 6} more" if len(missing) > 6 else "")
            notes.append(f"{len(missing)} model(s) without a {label} run left out: {shown}")
    both = sorted(set(first) & set(second))
    result = CorrelationMeasure(
        measure=measure, metric=metric, scores={m: [first[m], second[m]] for m in both}, notes=notes
    )
    try:
        result.correlation = correlate(first, second, resamples=resamples, seed=seed)
    except TooFewModelsError as error:
        result.error = f"{measure}: {error}"
    return result


def _scores(runs: Iterable[QualityRun], metric: str) -> dict[str, float]:
    out = {}
    for run in runs:
        value = run.value(metric)
        if value is not None:
            out[run.name] = value
    return out


def test_retest(main: Sequence[QualityRun], retest: Sequence[QualityRun], metric: str, *,
                resamples: int = 2000, seed: int = 0) -> CorrelationMeasure:
    """Correlation across models between two runs with different sampling seeds."""
    result = _pair_scores("test-retest", metric, _scores(main, metric), _scores(retest, metric),
                          first_label="first", second_label="retest", resamples=resamples, seed=seed)
    by_name = {r.name: r for r in main}
    for other in retest:
        first = by_name.get(other.name)
        if first is not None and first.data != other.data:
            result.notes.append(
                f"{other.name}: the retest run used other data ({other.data}) than the first ({first.data})"
            )
    return result


test_retest.__test__ = False  # type: ignore[attr-defined]  # not a pytest test, despite its name


def parallel_forms(main: Sequence[QualityRun], parallel: Sequence[QualityRun], metric: str, *,
                   resamples: int = 2000, seed: int = 0) -> CorrelationMeasure:
    """Correlation across models between a benchmark and its parallel form."""
    return _pair_scores("parallel-forms", metric, _scores(main, metric), _scores(parallel, metric),
                        first_label="original-form", second_label="parallel-form",
                        resamples=resamples, seed=seed)


def criterion_validity(main: Sequence[QualityRun], human: Mapping[str, float], metric: str, *,
                       resamples: int = 2000, seed: int = 0) -> CorrelationMeasure:
    """Correlation across models between the benchmark's metric and the human score."""
    return _pair_scores("criterion validity", metric, _scores(main, metric), human,
                        first_label="benchmark", second_label="human-label",
                        resamples=resamples, seed=seed)


# -- coverage ----------------------------------------------------------------------------------------------

#: The hallucination types of the coverage table, in its row order, with their display names.
COVERAGE_TYPES: dict[str, str] = {
    "object": "object / existence",
    "attribute": "attribute",
    "relation": "relation",
    "relation/perception": "relation: perceptive",
    "relation/cognitive": "relation: cognitive",
    "action": "action",
    "counting": "counting",
    "environment": "environment",
    "comparison": "comparison",
    "ocr": "OCR",
}
_ALIASES = {
    "existence": "object", "object": "object", "objects": "object",
    "attribute": "attribute", "attributes": "attribute",
    "relation": "relation", "relations": "relation",
    "perception": "relation/perception", "perceptive": "relation/perception",
    "cognitive": "relation/cognitive", "cognition": "relation/cognitive",
    "action": "action", "count": "counting", "counting": "counting",
    "environment": "environment", "comparison": "comparison", "ocr": "ocr",
    # AMBER's annotation types.
    "generative": "object", "discriminative-hallucination": "object",
    "discriminative-attribute-state": "attribute", "discriminative-attribute-number": "counting",
    "discriminative-attribute-action": "action", "discriminative-relation": "relation",
    # MMHal-Bench's question types: its "adversarial" questions ask about objects that are not there.
    "adversarial": "object",
}


def canonical_type(label: str) -> str:
    """A benchmark's own type label as a coverage row (unknown labels keep their own lower-cased row)."""
    text = str(label).strip().lower()
    return _ALIASES.get(text, text)


class BenchmarkCoverage(BaseModel):
    """One benchmark's column of the coverage table."""

    benchmark: str
    #: What the counts count: "items" (item types) or "hallucinated claims" (the judge's error types).
    unit: str
    counts: dict[str, int] = Field(default_factory=dict)
    runs: int = 0

    @property
    def covered(self) -> list[str]:
        return [t for t, n in self.counts.items() if n > 0]


class Coverage(BaseModel):
    """Which hallucination types each benchmark covers (rows: :data:`COVERAGE_TYPES`, then any others)."""

    benchmarks: list[BenchmarkCoverage] = Field(default_factory=list)

    def rows(self) -> list[str]:
        extra = sorted({t for b in self.benchmarks for t in b.counts} - set(COVERAGE_TYPES))
        return [*COVERAGE_TYPES, *extra]


def coverage(runs: Sequence[QualityRun]) -> Coverage:
    """Types per benchmark: item types (record ``type``, else ``relation_type``, else ``question_type`` as
    MMHal-Bench records carry it), else claim error types.

    Item types are counted over one run's samples (the benchmark's items); claim error types over the
    hallucinated claims of every run of that benchmark, since they depend on what the models said.
    """
    by_benchmark: dict[str, list[QualityRun]] = {}
    for run in runs:
        by_benchmark.setdefault(run.benchmark, []).append(run)
    out = Coverage()
    for bench, bench_runs in by_benchmark.items():
        first = bench_runs[0].records
        items: Counter[str] = Counter()
        for record in first:
            label = record.field("type")
            if not isinstance(label, str) or not label.strip():
                label = record.field("relation_type")
            if not isinstance(label, str) or not label.strip():
                label = record.field("question_type")
            if isinstance(label, str) and label.strip() and label.strip().lower() != "unknown":
                items[canonical_type(label)] += 1
        if items:
            out.benchmarks.append(BenchmarkCoverage(benchmark=bench, unit="items", counts=dict(items),
                                                    runs=len(bench_runs)))
            continue
        errors: Counter[str] = Counter()
        for run in bench_runs:
            for record in run.records:
                for claim in record.claims:
                    if claim.verdict == VerdictLabel.HALLUCINATED and claim.error is not None:
                        errors[canonical_type(claim.error.value)] += 1
        out.benchmarks.append(BenchmarkCoverage(benchmark=bench, unit="hallucinated claims",
                                                counts=dict(errors), runs=len(bench_runs)))
    return out


# -- response bias -----------------------------------------------------------------------------------------


class YesNoStats(BaseModel):
    """A model's answers to one form's yes/no items."""

    items: int
    answered: int
    accuracy: float | None
    yes_ratio: float | None
    label_yes_ratio: float | None

    @property
    def bias(self) -> float | None:
        """How much more often the model says yes than the labels do (0–1 scale)."""
        if self.yes_ratio is None or self.label_yes_ratio is None:
            return None
        return self.yes_ratio - self.label_yes_ratio


def yes_no_stats(records: Sequence[SampleRecord]) -> YesNoStats | None:
    """Yes-ratio of predictions and of labels (fractions), both over the answered records (label yes or no)."""
    rows = [r for r in records if str(r.field("label") or "").strip().lower() in ("yes", "no")]
    if not rows:
        return None
    labels = [str(r.field("label")).strip().lower() for r in rows]
    predictions = [str(r.field("prediction") or "").strip().lower() for r in rows]
    answered = [(p, y) for p, y in zip(predictions, labels, strict=True) if p in ("yes", "no")]
    return YesNoStats(
        items=len(rows),
        answered=len(answered),
        accuracy=sum(p == y for p, y in answered) / len(answered) if answered else None,
        yes_ratio=sum(p == "yes" for p, _ in answered) / len(answered) if answered else None,
        # over the same answered items as yes_ratio: a model that skips "no" items must not look yes-biased
        label_yes_ratio=sum(y == "yes" for _, y in answered) / len(answered) if answered else None,
    )


class BiasRow(BaseModel):
    model: str
    original: YesNoStats | None = None
    parallel: YesNoStats | None = None


def response_bias(main: Sequence[QualityRun], parallel: Sequence[QualityRun]) -> list[BiasRow]:
    """Yes/no statistics per model on the original and the parallel form; empty without yes/no items."""
    rows: dict[str, BiasRow] = {}
    for run in main:
        stats = yes_no_stats(run.records)
        if stats is not None:
            rows.setdefault(run.name, BiasRow(model=run.name)).original = stats
    for run in parallel:
        stats = yes_no_stats(run.records)
        if stats is not None:
            rows.setdefault(run.name, BiasRow(model=run.name)).parallel = stats
    return [rows[name] for name in sorted(rows)]
