"""PROVE's helpfulness and truthfulness scores (Prabhu et al., "Trust but Verify", Eq. 1 and 2), as plain
functions of similarity matrices, and their aggregation over a run.

For one response with tuples g(Â), reference-answer tuples g(A) − g(Q) (``qa_diff_tuples``: the answer's
tuples minus those already in the question) and image tuples g(C):

    hscore = mean over t in g(A) − g(Q) of  max over t' in g(Â) of sim(t, t')                       (Eq. 1)
    tscore = mean over t' in g(Â) of  max( max over t in g(C) of sim(t', t),  p(I ⊨ t') )          (Eq. 2)

``sim`` is the cosine of sentence embeddings; ``p(I ⊨ t')`` a visual-entailment score in [0, 1]. Edge cases
(not in the paper, so stated here): no reference tuples → hscore undefined (None, counted); a response with
no tuples recovers nothing → hscore 0, and says nothing → tscore undefined (None, counted); an image
without tuples leaves only the entailment term. Run-level figures are means over the scored questions, ×100
as the paper's Table 1 reports them; ``average`` is (hscore + tscore) / 2 over questions that have both.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from statistics import fmean
from typing import Any

import numpy as np

from halluscope.stages import MetricDeclaration, MetricTable
from halluscope.types import MetricsReport, SampleRecord

#: How many leading words of a question name its type ("what color", "where is", "how many").
QUESTION_TYPE_WORDS = 2
#: Question types reported as groups: the most frequent ones (the paper's Fig. 7a shows the top 10).
TOP_QUESTION_TYPES = 10


def hscore(answer_to_response: np.ndarray) -> float | None:
    """Eq. 1 from the (answer tuples × response tuples) cosine matrix; None without answer tuples."""
    sims = np.asarray(answer_to_response, dtype=np.float64)
    if sims.ndim != 2 or sims.shape[0] == 0:
        return None
    if sims.shape[1] == 0:
        return 0.0
    return float(sims.max(axis=1).mean())


def tscore(response_to_image: np.ndarray, entailment: Sequence[float] | np.ndarray) -> float | None:
    """Eq. 2 from the (response tuples × image tuples) cosine matrix and p(I ⊨ t') per response tuple."""
    sims = np.asarray(response_to_image, dtype=np.float64)
    if sims.ndim != 2 or sims.shape[0] == 0:
        return None
    p = np.asarray(entailment, dtype=np.float64)
    if p.shape != (sims.shape[0],):
        raise ValueError(f"need one entailment score per response tuple ({sims.shape[0]}), got {p.shape}")
    best = sims.max(axis=1) if sims.shape[1] else np.full(sims.shape[0], -np.inf)
    return float(np.maximum(best, p).mean())


def question_type(question: str, words: int = QUESTION_TYPE_WORDS) -> str:
    """The first ``words`` words of the question, lower-cased, without punctuation ("what color")."""
    tokens = re.findall(r"[a-z0-9']+", question.lower())
    return " ".join(tokens[:words]) or "(empty)"


def _mean100(values: Sequence[float]) -> float | None:
    return 100 * fmean(values) if values else None


def _scores(records: Sequence[SampleRecord]) -> dict[str, Any]:
    h = [float(r.metadata["hscore"]) for r in records if r.metadata.get("hscore") is not None]
    t = [float(r.metadata["tscore"]) for r in records if r.metadata.get("tscore") is not None]
    both = [
        (float(r.metadata["hscore"]) + float(r.metadata["tscore"])) / 2
        for r in records
        if r.metadata.get("hscore") is not None and r.metadata.get("tscore") is not None
    ]
    return {"hscore": _mean100(h), "tscore": _mean100(t), "average": _mean100(both), "n": len(both)}


def prove_metrics(
    records: Sequence[SampleRecord], *, benchmark: str = "prove", top_types: int = TOP_QUESTION_TYPES
) -> MetricsReport:
    """hscore, tscore and their average ×100, overall and per question type (the most frequent types).

    Each record carries ``metadata["hscore"]`` / ``["tscore"]`` in [0, 1] (None where undefined) and
    ``metadata["question_type"]``.
    """
    scored = [r for r in records if r.failure is None]
    overall = _scores(scored)
    metrics: dict[str, float | None] = {k: overall[k] for k in ("hscore", "tscore", "average")}
    by_type: dict[str, list[SampleRecord]] = defaultdict(list)
    for record in scored:
        by_type[str(record.metadata.get("question_type") or "(none)")].append(record)
    ranked = sorted(by_type.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:top_types]
    groups: dict[str, dict[str, float | None]] = {}
    for name, members in ranked:
        values = _scores(members)
        groups[f"question_type={name}"] = {
            "hscore": values["hscore"],
            "tscore": values["tscore"],
            "average": values["average"],
            "n": float(len(members)),
        }
    counts = {
        "samples": len(records),
        "failed": len(records) - len(scored),
        # answers with any score (hscore or tscore); ``scored_both`` is the denominator of ``average``
        "scored": sum(
            1 for r in scored if r.metadata.get("hscore") is not None or r.metadata.get("tscore") is not None
        ),
        "scored_both": overall["n"],
        "hscore_undefined": sum(1 for r in scored if r.metadata.get("hscore") is None),
        "tscore_undefined": sum(1 for r in scored if r.metadata.get("tscore") is None),
        "response_tuples": sum(len(r.metadata.get("response_tuples") or []) for r in scored),
        "question_types": len(by_type),
    }
    return MetricsReport(
        benchmark=benchmark,
        metrics=metrics,
        groups=groups,
        counts=counts,
        details={"question_type_words": QUESTION_TYPE_WORDS},
    )


#: What PROVE's questions share: an image (DOCCI photo) and its scene graph, asked several questions.
PROVE_UNIT = "image"

#: Each declared score: (name in metrics.json, the table's value column, its "counted" column, description).
_DECLARED = (
    ("hscore", "hscore", "hscored", "helpfulness: the reference answer's tuples the response recovers"),
    ("tscore", "tscore", "tscored", "truthfulness: the response's tuples the image supports"),
    ("average", "average", "both_scored", "(hscore + tscore) / 2, over answers that have both"),
)


def prove_declarations() -> tuple[MetricDeclaration, ...]:
    """hscore, tscore and their average: each a mean over questions ×100, i.e. Σ score / Σ counted over the
    rows of :func:`prove_tables`, resampled by image (one image's questions share its scene graph)."""
    return tuple(
        MetricDeclaration(
            name=name, statistic="ratio", components=(value, counted), unit=PROVE_UNIT, description=description
        )
        for name, value, counted, description in _DECLARED
    )


def prove_tables(records: Sequence[SampleRecord]) -> dict[str, MetricTable]:
    """One row per answer :func:`prove_metrics` counts (no failure): each score (0 where undefined) and
    whether it is defined, so every mean is over the answers it is over in ``metrics.json``."""
    columns: dict[str, list[float]] = {name: [] for _, value, counted, _ in _DECLARED for name in (value, counted)}
    ids: list[str] = []
    clusters: list[str] = []
    for record in records:
        if record.failure is not None:
            continue
        h, t = (None if v is None else float(v) for v in (record.metadata.get("hscore"), record.metadata.get("tscore")))
        row = {
            "hscore": h or 0.0,
            "hscored": h is not None,
            "tscore": t or 0.0,
            "tscored": t is not None,
            "average": (h + t) / 2 if h is not None and t is not None else 0.0,
            "both_scored": h is not None and t is not None,
        }
        for name, value in row.items():
            columns[name].append(float(value))
        ids.append(record.id)
        clusters.append(f"image:{record.image_id}" if record.image_id else f"item:{record.id}")
    return {"items": MetricTable(ids=ids, components=columns, clusters=clusters)}


__all__ = [
    "PROVE_UNIT",
    "QUESTION_TYPE_WORDS",
    "hscore",
    "prove_declarations",
    "prove_metrics",
    "prove_tables",
    "question_type",
    "tscore",
]
