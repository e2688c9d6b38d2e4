"""Tri-HE's measures, as pure functions of scored records.

Per question q with at least one judged claim, h(q) = #hallucinated / #judged claims. Then

- ``hallu_q`` = mean of h(q) over questions; ``hallu_i`` = mean over images of the mean h(q) of that
  image's questions (each image weighs the same, however many questions it has);
- ``object_hallu_*`` / ``relation_hallu_*`` the same with only object- / relation-typed hallucinations in
  the numerator (``attribute_hallu_*`` likewise, for judges that type attribute errors);

all ×100, as the paper reports them. Two deliberate choices, both visible in ``counts``:

- Questions with zero claims are skipped, as in the official script: a model that answers nothing
  checkable is neither right nor wrong. Because that rewards evasive answers, the ``*_with_empty``
  variants count such a question as 0 % hallucinated, so the two numbers together show how much of a
  model's score comes from saying little.
- ``unjudged`` claims (a judge failure) are left out of the denominator, where the official script counts
  its 'null' answers in it: a failure of the instrument must not lower the measured rate.
  ``counts["unjudged_claims"]`` says how many there were.

**Contradicted rate** (``contradicted_hallu_q`` / ``_i``), for judges that read each claim three ways
(``support``: supported / contradicted / unverifiable, e.g. ``typed``): the same averages with only the
claims the ground truth *contradicts* — a recorded fact says otherwise, or a visual object is absent — in
the numerator, and all judged claims in the denominator. Tri-HE's ``hallu_q`` counts everything unsupported,
so with an incomplete scene graph it reads the graph's silence as hallucination; measured on hand-labelled
real answers (docs/calibration.md) the contradicted rate tracks the truth far better, so it is the default
rate of the typed judge. ``unverifiable_share`` (x100, averaged the same way) says how much of each answer
the scene graph could not check at all. These are None for judges without ``support`` (the similarity and
LLM judges), whose ``hallu_q`` is the paper's metric unchanged.

**The headline** — one rate per judge, named in ``details["headline"]`` and first in ``metrics``:
``contradicted_hallu_q`` for judges that read claims three ways (``typed``, ``vlm``), ``hallu_q`` for the
rest (``similarity``, ``llm``). For three-way judges the two readings bracket the truth: the contradicted
rate counts only what the ground truth refutes (a lower bound), ``hallu_q`` also counts everything the scene
graph cannot confirm (an upper bound); ``details["headline_bounds"]`` names the pair. Why this one leads:
on Tri-HE's own reference answers against answers taken from other images, the default judge's ``hallu_q``
reads 73.8 vs 98.0 (it barely separates right from wrong), its contradicted rate 1.1 vs 44.0.

Typed rates are reported only when the judge typed every hallucination (the similarity judge cannot say
which part of a claim is wrong); otherwise they are ``None`` rather than a misleading zero.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from statistics import fmean

from halluscope.types import ErrorType, MetricsReport, SampleRecord, Support, VerdictLabel

RATE_KEYS = ("hallu_q", "hallu_i", "object_hallu_q", "object_hallu_i", "relation_hallu_q", "relation_hallu_i")


def question_rates(record: SampleRecord) -> dict[str, float] | None:
    """h(q) and its typed parts for one question, or None when no claim was judged."""
    judged = [c for c in record.claims if c.verdict != VerdictLabel.UNJUDGED]
    if not judged:
        return None
    hallucinated = [c for c in judged if c.verdict == VerdictLabel.HALLUCINATED]
    n = len(judged)
    out = {
        "all": len(hallucinated) / n,
        "object": sum(c.error == ErrorType.OBJECT for c in hallucinated) / n,
        "relation": sum(c.error == ErrorType.RELATION for c in hallucinated) / n,
        "attribute": sum(c.error == ErrorType.ATTRIBUTE for c in hallucinated) / n,
    }
    if all(c.support is not None for c in judged):
        out["contradicted"] = sum(c.support == Support.CONTRADICTED for c in judged) / n
        out["unverifiable"] = sum(c.support == Support.UNVERIFIABLE for c in judged) / n
    return out


def _question_and_image_means(rates: list[tuple[str, float]]) -> tuple[float | None, float | None]:
    if not rates:
        return None, None
    by_image: dict[str, list[float]] = defaultdict(list)
    for image_id, rate in rates:
        by_image[image_id].append(rate)
    return 100 * fmean(r for _, r in rates), 100 * fmean(fmean(v) for v in by_image.values())


def triplet_metrics(records: Sequence[SampleRecord], benchmark: str = "tri-he") -> MetricsReport:
    """Hallu-Q, Hallu-I and their object / relation / attribute parts, with the counts behind them."""
    per_kind: dict[str, list[tuple[str, float]]] = defaultdict(list)
    with_empty: list[tuple[str, float]] = []
    counts = {
        "samples": len(records),
        "scored_questions": 0,
        "zero_claim_questions": 0,
        "all_unjudged_questions": 0,
        "failed_samples": 0,
        "claims": 0,
        "supported_claims": 0,
        "hallucinated_claims": 0,
        "unjudged_claims": 0,
        "untyped_hallucinated_claims": 0,
    }
    for record in records:
        image_id = record.image_id or record.id
        if record.failure is not None:
            counts["failed_samples"] += 1
            continue
        counts["claims"] += len(record.claims)
        counts["supported_claims"] += record.count(VerdictLabel.SUPPORTED)
        counts["hallucinated_claims"] += record.count(VerdictLabel.HALLUCINATED)
        counts["unjudged_claims"] += record.count(VerdictLabel.UNJUDGED)
        counts["untyped_hallucinated_claims"] += sum(
            1 for c in record.claims if c.verdict == VerdictLabel.HALLUCINATED and c.error is None
        )
        if not record.claims:
            counts["zero_claim_questions"] += 1
            with_empty.append((image_id, 0.0))
            continue
        rates = question_rates(record)
        if rates is None:
            counts["all_unjudged_questions"] += 1
            continue
        counts["scored_questions"] += 1
        with_empty.append((image_id, rates["all"]))
        for kind, value in rates.items():
            per_kind[kind].append((image_id, value))

    metrics: dict[str, float | None] = {}
    typed = counts["untyped_hallucinated_claims"] == 0
    for kind, prefix in (
        ("all", ""),
        ("object", "object_"),
        ("relation", "relation_"),
        ("attribute", "attribute_"),
    ):
        q, i = _question_and_image_means(per_kind[kind])
        if kind != "all" and not typed:
            q = i = None
        metrics[f"{prefix}hallu_q"] = q
        metrics[f"{prefix}hallu_i"] = i
    # Only when every scored question has a three-way reading (a judge that gives ``support``).
    three_way = bool(per_kind["all"]) and len(per_kind["contradicted"]) == len(per_kind["all"])
    for kind, key in (("contradicted", "contradicted_hallu"), ("unverifiable", "unverifiable_share")):
        q, i = _question_and_image_means(per_kind[kind]) if three_way else (None, None)
        metrics[f"{key}_q"] = q
        metrics[f"{key}_i"] = i
    q, i = _question_and_image_means(with_empty)
    metrics["hallu_q_with_empty"] = q
    metrics["hallu_i_with_empty"] = i
    details: dict[str, object] = {"headline": headline_key(three_way)}
    if three_way:  # the headline leads the table; Tri-HE's own rate stays beside it as the upper bound
        lead = ("contradicted_hallu_q", "contradicted_hallu_i", "unverifiable_share_q", "unverifiable_share_i")
        metrics = {**{k: metrics[k] for k in lead}, **{k: v for k, v in metrics.items() if k not in lead}}
        details["headline_bounds"] = ["contradicted_hallu_q", "hallu_q"]
    return MetricsReport(benchmark=benchmark, metrics=metrics, counts=counts, details=details)


def headline_key(three_way: bool) -> str:
    """The one rate to report for a Tri-HE run: the contradicted rate for three-way judges, else ``hallu_q``."""
    return "contradicted_hallu_q" if three_way else "hallu_q"
