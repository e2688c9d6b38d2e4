"""Answer confidence as a hallucination signal (Reefknot, section 4 and Detect-then-Calibrate).

The paper observes that when a model hallucinates a relation, the probability it gives its answer is low
(about 0.7 against about 0.95 otherwise), so the entropy of the answer-token distribution, restricted to
the possible answers ("yes"/"no", or the option letters), flags likely hallucinations. Its decoding fix
calibrates only the answers whose entropy reaches a threshold (0.9 bits in the official code).

These functions measure how good that signal is on a set of scored answers: the entropy of each answer,
the hallucination rate per entropy bin, and the threshold detector scored as a hallucination detector
(precision, recall, F1 at the paper's threshold and at the best threshold, and the threshold-free AUROC).
All are pure functions of numbers the responses carried; nothing here calls a model.

Entropy convention: ``H = -Σ p log2 p`` over the answer options' probabilities *as given* (the official
code takes the two probabilities from the full-vocabulary softmax, without renormalising). Unlike the
official code, which returns 0 whenever a probability is 0, a zero probability simply contributes 0.
Pass ``normalise=True`` to renormalise over the options first.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from halluscope.metrics.binary import f1_score

__all__ = [
    "PAPER_ENTROPY_THRESHOLD",
    "answer_probabilities",
    "confidence_report",
    "detector_scores",
    "entropy_bins",
    "entropy_bits",
]

#: The threshold the official Detect-then-Calibrate code compares the yes/no entropy with.
PAPER_ENTROPY_THRESHOLD = 0.9

_LETTER_KEYS = ("A", "B", "C", "D")
#: The answer options whose probabilities a task reads.
_WANTED: dict[str, tuple[str, ...]] = {"yesno": ("yes", "no"), "mcq": _LETTER_KEYS}
#: Per option, the metadata fields that may carry its probability ("A_prob", then "a_prob").
_PROB_FIELDS = {key: (f"{key}_prob", f"{key.lower()}_prob") for keys in _WANTED.values() for key in keys}


def entropy_bits(probs: Sequence[float], *, normalise: bool = False) -> float:
    """Shannon entropy in bits of the given probabilities (see the module docstring for the convention)."""
    values = [max(0.0, float(p)) for p in probs]
    if normalise:
        total = sum(values)
        if total <= 0:
            raise ValueError("cannot normalise probabilities that sum to 0")
        values = [p / total for p in values]
    return float(-sum(p * math.log2(p) for p in values if p > 0))


def _as_prob(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if 0.0 <= number <= 1.0 and math.isfinite(number) else None


def answer_probabilities(metadata: Mapping[str, Any], task: str) -> dict[str, float] | None:
    """The answer options' probabilities carried by a response, if any.

    Accepted, in order: ``option_probs`` or ``answer_probs`` (a mapping; keys matched case-insensitively to
    yes/no or to the letters A-D), Reefknot's ``yes_prob``/``no_prob``, and ``A_prob`` … ``D_prob``. Values
    outside [0, 1] are ignored. Returns None when the response has no usable probabilities for ``task``.
    """
    wanted = _WANTED.get(task)
    if not wanted or not metadata:
        return None
    found: dict[str, float] = {}
    for field in ("option_probs", "answer_probs"):
        table = metadata.get(field)
        if isinstance(table, Mapping):
            lowered = {str(k).strip().lower(): v for k, v in table.items()}
            for key in wanted:
                value = _as_prob(lowered.get(key.lower()))
                if value is not None:
                    found[key] = value
            if found:
                break
    if not found:
        for key in wanted:
            own, lower = _PROB_FIELDS[key]
            value = _as_prob(metadata.get(own, metadata.get(lower)))
            if value is not None:
                found[key] = value
    return found if len(found) == len(wanted) else None


def entropy_bins(
    items: Sequence[tuple[float, bool]], *, bins: int = 10, max_entropy: float = 1.0
) -> list[dict[str, float | int | None]]:
    """Hallucination rate (0-100) per equal-width entropy bin over ``[0, max_entropy]``.

    ``items`` are (entropy, hallucinated) pairs; the last bin also holds entropies above ``max_entropy``.
    """
    if bins < 1:
        raise ValueError("bins must be at least 1")
    width = max_entropy / bins
    counts = [[0, 0] for _ in range(bins)]
    for entropy, hallucinated in items:
        index = min(bins - 1, max(0, int(entropy / width))) if width > 0 else 0
        counts[index][0] += 1
        counts[index][1] += int(hallucinated)
    return [
        {
            "low": round(i * width, 6),
            "high": round((i + 1) * width, 6),
            "n": n,
            "hallucinated": h,
            "hallucination_rate": 100.0 * h / n if n else None,
        }
        for i, (n, h) in enumerate(counts)
    ]


def _prf(items: Sequence[tuple[float, bool]], threshold: float) -> dict[str, float | int | None]:
    tp = sum(1 for e, h in items if e >= threshold and h)
    fp = sum(1 for e, h in items if e >= threshold and not h)
    fn = sum(1 for e, h in items if e < threshold and h)
    precision = 100.0 * tp / (tp + fp) if tp + fp else None
    recall = 100.0 * tp / (tp + fn) if tp + fn else None
    f1 = f1_score(precision, recall)
    return {"threshold": threshold, "flagged": tp + fp, "precision": precision, "recall": recall, "f1": f1}


def _auroc(items: Sequence[tuple[float, bool]]) -> float | None:
    """Probability that a hallucinated answer has higher entropy than a correct one (ties count half)."""
    positives = sorted(e for e, h in items if h)
    negatives = sorted(e for e, h in items if not h)
    if not positives or not negatives:
        return None
    ranked = sorted([(e, 1) for e in positives] + [(e, 0) for e in negatives])
    rank_sum, position = 0.0, 0
    while position < len(ranked):
        end = position
        while end + 1 < len(ranked) and ranked[end + 1][0] == ranked[position][0]:
            end += 1
        average_rank = (position + end) / 2 + 1
        rank_sum += average_rank * sum(label for _, label in ranked[position : end + 1])
        position = end + 1
    n_pos, n_neg = len(positives), len(negatives)
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def detector_scores(
    items: Sequence[tuple[float, bool]], *, threshold: float = PAPER_ENTROPY_THRESHOLD
) -> dict[str, Any]:
    """The detector "entropy >= threshold ⇒ hallucination", scored against what actually happened.

    Returns precision/recall/F1 (0-100) at ``threshold``, the same at the threshold with the best F1
    (candidates: every observed entropy; ties go to the higher threshold, which flags fewer answers), and
    the AUROC of entropy as a hallucination score.
    """
    at_threshold = _prf(items, threshold)
    # Sweep thresholds from the highest entropy down, counting flagged answers cumulatively: O(n log n).
    positives = sum(1 for _, h in items if h)
    ordered = sorted(items, key=lambda item: item[0], reverse=True)
    best_threshold: float | None = None
    best_f1 = -1.0
    tp = fp = 0
    position = 0
    while position < len(ordered):
        entropy = ordered[position][0]
        while position < len(ordered) and ordered[position][0] == entropy:
            tp += int(ordered[position][1])
            fp += int(not ordered[position][1])
            position += 1
        if tp == 0 or positives == 0:
            continue
        precision, recall = tp / (tp + fp), tp / positives
        f1 = 2 * precision * recall / (precision + recall)
        if f1 > best_f1:
            best_f1, best_threshold = f1, entropy
    best = _prf(items, best_threshold) if best_threshold is not None else None
    return {"at_threshold": at_threshold, "best": best, "auroc": _auroc(items)}


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def confidence_report(
    entries: Sequence[tuple[str, Mapping[str, float], bool]],
    *,
    threshold: float = PAPER_ENTROPY_THRESHOLD,
    bins: int = 10,
    normalise: bool = False,
) -> dict[str, Any]:
    """Per task: entropy statistics, hallucination rate by entropy bin, and the detector's scores.

    ``entries`` are (task, answer-option probabilities, hallucinated) for each answered item that carried
    probabilities. The threshold applies to yes/no as in the paper; for 4-way choices (entropy up to 2 bits)
    it is scaled by log2(4), so the same relative uncertainty is flagged.
    """
    by_task: dict[str, list[tuple[float, bool, float]]] = {}
    for task, probs, hallucinated in entries:
        values = list(probs.values())
        entropy = entropy_bits(values, normalise=normalise)
        by_task.setdefault(task, []).append((entropy, hallucinated, max(values) if values else 0.0))
    report: dict[str, Any] = {"threshold": threshold, "normalised": normalise, "tasks": {}}
    for task, rows in sorted(by_task.items()):
        options = 2 if task == "yesno" else 4
        max_entropy = math.log2(options)
        task_threshold = threshold * max_entropy
        pairs = [(e, h) for e, h, _ in rows]
        wrong = [r for r in rows if r[1]]
        right = [r for r in rows if not r[1]]
        report["tasks"][task] = {
            "n": len(rows),
            "threshold": task_threshold,
            "mean_entropy_hallucinated": _mean([r[0] for r in wrong]),
            "mean_entropy_correct": _mean([r[0] for r in right]),
            "mean_answer_prob_hallucinated": _mean([r[2] for r in wrong]),
            "mean_answer_prob_correct": _mean([r[2] for r in right]),
            "bins": entropy_bins(pairs, bins=bins, max_entropy=max_entropy),
            "detector": detector_scores(pairs, threshold=task_threshold),
        }
    return report
