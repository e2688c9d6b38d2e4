"""AMBER's measures, computed as the official ``inference.py`` computes them.

Discriminative part (``paper`` mode, exactly the official arithmetic): every counter starts at 0.001 (the
released ``metrics.txt``), "no" is the positive class, and only the exact strings ``"Yes"`` / ``"No"`` count
as answers — ``"yes."`` or ``"No, there is not"`` is wrong either way. Accuracy = right answers / items;
precision = right "No" answers / "No" answers; recall = right "No" answers / items whose truth is no;
F1 = 2PR / (P + R + 0.0001) (0.001 for existence, as the official code); all ×100 rounded to 0.1.
Dimensions: existence (``discriminative-hallucination``), attribute (state + number + action) and each of
the three, relation (``discriminative-relation`` and the separate ``relation`` type, counted together).
``robust`` mode reads answers with the shared yes/no parser and leaves unanswered items out of the rates.

Generative part: CHAIR = hallucinated object nouns / object nouns kept; Cover = truth objects mentioned /
truth objects; Hal = share of responses with at least one hallucinated noun; Cog = hallucination-prone
objects mentioned / such objects; counters start at 0.001; ×100 rounded to 0.1.
"""

from __future__ import annotations

from collections.abc import Sequence

from halluscope.metrics.binary import binary_metrics
from halluscope.metrics.chair import ChairTally
from halluscope.metrics.yesno import unanswered_reasons
from halluscope.types import MetricsReport, SampleRecord

__all__ = ["DIMENSIONS", "amber_discriminative_paper", "amber_generative", "amber_metrics", "dimension_of"]

#: AMBER's discriminative dimensions and the annotation types each covers.
DIMENSIONS: dict[str, tuple[str, ...]] = {
    "existence": ("discriminative-hallucination",),
    "attribute": (
        "discriminative-attribute-state",
        "discriminative-attribute-number",
        "discriminative-attribute-action",
    ),
    "state": ("discriminative-attribute-state",),
    "number": ("discriminative-attribute-number",),
    "action": ("discriminative-attribute-action",),
    "relation": ("discriminative-relation", "relation"),
}
_START = 0.001


def dimension_of(kind: str) -> str:
    """The dimension an annotation type belongs to (state/number/action roll up into attribute)."""
    for name in ("existence", "state", "number", "action", "relation"):
        if kind in DIMENSIONS[name]:
            return name
    return "generative" if kind == "generative" else "relation"


def amber_discriminative_paper(rows: Sequence[tuple[str, str, str]]) -> dict[str, float]:
    """``(type, truth, raw response)`` rows → official accuracy / precision / recall / F1 per dimension."""
    out: dict[str, float] = {}
    scopes = {"overall": None, **DIMENSIONS}
    for scope, kinds in scopes.items():
        chosen = [r for r in rows if r[0] != "generative" and (kinds is None or r[0] in kinds)]
        # The official counters: every "*_num" starts at 0.001, every "*_score" at 0.
        correct = sum(1 for _, t, a in chosen if (t == "yes" and a == "Yes") or (t == "no" and a == "No"))
        total = _START + len(chosen)
        no_truth = _START + sum(1 for _, t, _ in chosen if t == "no")
        no_right = sum(1 for _, t, a in chosen if t == "no" and a == "No")
        no_said = _START + sum(1 for _, _, a in chosen if a == "No")
        no_said_right = no_right
        accuracy = round(correct / total * 100, 1)
        precision = round(no_said_right / no_said * 100, 1)
        recall = round(no_right / no_truth * 100, 1)
        eps = 0.001 if scope == "existence" else 0.0001
        f1 = round(2 * (precision / 100) * (recall / 100) / ((precision / 100) + (recall / 100) + eps) * 100, 1)
        prefix = "" if scope == "overall" else f"{scope}_"
        out.update({f"{prefix}accuracy": accuracy, f"{prefix}precision": precision,
                    f"{prefix}recall": recall, f"{prefix}f1": f1})
    return out


def amber_generative(records: Sequence[SampleRecord]) -> dict[str, float]:
    """CHAIR, Cover, Hal and Cog over generative records (fields written by the AMBER benchmark)."""
    tally = ChairTally()  # CHAIR's counting; AMBER's counters start at 0.001, its Hal from the clean ones
    cover_score = cog_score = 0.0
    cover_num = cog_num = _START
    for record in records:
        tally.add(len(record.field("object_nouns") or []), len(record.field("hallucinated_nouns") or []))
        cover_score += len(record.field("truth_covered") or [])
        cover_num += len(record.field("truth") or [])
        cog_score += len(record.field("hallu_covered") or [])
        cog_num += len(record.field("hallu") or [])
    non_hallu = tally.captions - tally.hallucinated_captions
    return {
        "CHAIR": round(tally.chair_i(start=_START) or 0.0, 1),
        "Cover": round(cover_score / cover_num * 100, 1),
        "Hal": round(100 - non_hallu / (tally.captions + _START) * 100, 1),
        "Cog": round(cog_score / cog_num * 100, 1),
    }


def amber_metrics(records: Sequence[SampleRecord], *, benchmark: str, mode: str) -> MetricsReport:
    scored = [r for r in records if r.failure is None]
    generative = [r for r in scored if r.field("type") == "generative"]
    discriminative = [r for r in scored if r.field("type") != "generative"]
    metrics: dict[str, float | None] = {}
    groups: dict[str, dict[str, float | None]] = {}
    if generative:
        metrics.update(amber_generative(generative))
    if discriminative:
        paper = amber_discriminative_paper(
            [(str(r.field("type")), str(r.field("label")), r.response or "") for r in discriminative]
        )
        robust: dict[str, float | None] = {}
        for scope, kinds in {"overall": None, **DIMENSIONS}.items():
            chosen = [r for r in discriminative if kinds is None or r.field("type") in kinds]
            if not chosen:
                continue
            values = binary_metrics(
                [r.field("robust_prediction") for r in chosen],
                [str(r.field("label")) for r in chosen],
                positive="no",
            )
            prefix = "" if scope == "overall" else f"{scope}_"
            for key in ("accuracy", "precision", "recall", "f1"):
                robust[f"{prefix}{key}"] = values[key]
        headline = paper if mode == "paper" else robust
        for key in ("accuracy", "precision", "recall", "f1"):
            metrics[key] = headline.get(key)
        for scope in DIMENSIONS:
            groups[scope] = {k: headline.get(f"{scope}_{k}") for k in ("accuracy", "precision", "recall", "f1")}
        metrics.update({f"paper_{k}": paper[k] for k in ("accuracy", "precision", "recall", "f1")})
        metrics.update({f"robust_{k}": robust.get(k) for k in ("accuracy", "precision", "recall", "f1")})
    counts = {
        "samples": len(records),
        "scored": len(scored),
        "generative": len(generative),
        "discriminative": len(discriminative),
        "no_response": sum(1 for r in records if r.response is None),
        "failed": sum(1 for r in records if r.failure is not None and r.response is not None),
        "unanswered": sum(1 for r in discriminative if r.field("robust_prediction") is None),
        "paper_not_exact_yes_no": sum(1 for r in discriminative if (r.response or "") not in ("Yes", "No")),
        "mode_disagreements": sum(
            1 for r in discriminative if r.field("paper_prediction") != r.field("robust_prediction")
        ),
        **unanswered_reasons(discriminative),
    }
    return MetricsReport(benchmark=benchmark, metrics=metrics, groups=groups, counts=counts,
                         details={"mode": mode, "positive_class": "no"})
