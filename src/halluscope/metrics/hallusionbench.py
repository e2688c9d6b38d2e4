"""HallusionBench's measures, as the official ``utils.py`` computes them, from per-question correctness.

Each record carries ``correctness`` — 1 correct, 0 incorrect, 2 unclear (the official codes) — and the
item's ``category`` (VD visual-dependent / VS visual-supplement), ``subcategory``, ``set_id``, ``figure_id``,
``question_id`` and ``visual_input``. Then, exactly as the official code:

- a question counts as correct when its code is 1, except VS questions asked without a figure
  (``figure_id`` 0), where "unclear" (2) also counts as correct: not knowing is right without the figure;
- **aAcc** (accuracy per question) = correct questions / questions;
- **qAcc** (accuracy per question pair) = groups of one question over every version of its figure
  (category, subcategory, set, question) with every member correct / groups;
- **fAcc** (accuracy per figure) = figures (category, subcategory, set, figure; VS figure 0 — no figure —
  left out) with every question correct / figures;
- **easy / hard** = qAcc over the original-figure questions (``figure_id`` 0) / over the edited ones;
- the per-pair failure analysis: language hallucination (LH), visual illusion (VI) or mixed, which needs to
  know whether a model's answer to an edited figure is the *same* as to the original. The official code asks
  GPT-4; halluscope compares the two answers' yes/no readings (``same`` field), documented as a deviation.

For intervals (:func:`hallusion_tables`, read through the benchmark's metric declarations) the resampling
unit is the set (category, subcategory, set): a set's figures are versions of one figure asked the same
questions, so its questions, figures and pairs stand or fall together.

All rates 0–100 as the paper; also per category (VD / VS) in groups. The names follow the official
leaderboard and lmms-eval (aAcc per question, qAcc per pair, fAcc per figure).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from halluscope.stages import MetricTable
from halluscope.types import MetricsReport, SampleRecord

__all__ = ["hallusion_metrics", "hallusion_scores", "hallusion_tables"]

_FIELDS = ("category", "subcategory", "set_id", "figure_id", "question_id", "visual_input", "correctness")


def _is_correct(row: dict[str, Any]) -> int:
    code = int(row["correctness"])
    if row["category"] == "VS" and str(row["figure_id"]) == "0":
        return 1 if code in (1, 2) else 0
    return 1 if code == 1 else 0


def _pair_key(row: dict[str, Any]) -> str:
    return "_".join(str(row[k]) for k in ("category", "subcategory", "set_id", "question_id"))


def _figure_key(row: dict[str, Any]) -> str:
    return "_".join(str(row[k]) for k in ("category", "subcategory", "set_id", "figure_id"))


def _set_key(row: dict[str, Any]) -> str:
    return "_".join(str(row[k]) for k in ("category", "subcategory", "set_id"))


def _scored(records: Sequence[SampleRecord]) -> list[SampleRecord]:
    """The records the rates count: no failure, and a correctness code from the grader."""
    return [r for r in records if r.failure is None and r.field("correctness") is not None]


def _all_correct_share(groups: dict[str, list[int]]) -> float | None:
    if not groups:
        return None
    return 100.0 * sum(1 for flags in groups.values() if all(flags)) / len(groups)


def _analysis(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Counts of wrong question pairs attributed to LH, VI or mixed (the official decision table)."""
    original = {_pair_key(r): str(r["correctness"]) for r in rows if str(r["figure_id"]) == "0"}
    per_pair: dict[str, tuple[int, int]] = defaultdict(lambda: (0, 0))
    wrong_pairs: dict[str, bool] = defaultdict(bool)
    for r in rows:
        key = _pair_key(r)
        code, same = str(r["correctness"]), str(r.get("same", "0"))
        wrong_pairs[key] |= not r["_correct"]
        lh_vi = (0, 0)
        if str(r["figure_id"]) == "0":
            if r["category"] == "VD":
                lh_vi = (0, 1) if code in ("0", "2") else (0, 0)
            elif code == "0":
                lh_vi = (1, 0)
        else:
            orig = original.get(key)
            if orig is None:
                lh_vi = (0, 0)
            elif r["category"] == "VD":
                if orig == "1" and code == "0":
                    lh_vi = (1, 1) if same == "1" else (0, 1)
                elif code in ("0", "2"):
                    lh_vi = (0, 1)
            elif orig == "0":
                if code == "0":
                    lh_vi = (1, 0) if same == "1" else (1, 1)
                elif code == "2":
                    lh_vi = (1, 1)
            elif orig == "2":
                if code in ("0", "2"):
                    lh_vi = (0, 1)
            elif code == "2":
                lh_vi = (0, 1)
            elif code == "0":
                lh_vi = (1, 0) if str(r["visual_input"]) == "2" and same == "1" else (0, 1)
        a, b = per_pair[key]
        per_pair[key] = (a + lh_vi[0], b + lh_vi[1])
    counts = {"language_hallucination": 0, "visual_illusion": 0, "mixed": 0}
    for key, wrong in wrong_pairs.items():
        if not wrong:
            continue
        lh, vi = per_pair[key]
        if lh and vi:
            counts["mixed"] += 1
        elif lh:
            counts["language_hallucination"] += 1
        elif vi:
            counts["visual_illusion"] += 1
    return counts


def hallusion_scores(rows: Iterable[dict[str, Any]]) -> dict[str, float | None]:
    """aAcc, qAcc, fAcc, easy and hard qAcc over rows carrying ``correctness`` and the id fields."""
    rows = list(rows)
    for r in rows:
        r["_correct"] = _is_correct(r)
    pairs: dict[str, list[int]] = defaultdict(list)
    easy: dict[str, list[int]] = defaultdict(list)
    hard: dict[str, list[int]] = defaultdict(list)
    figures: dict[str, list[int]] = defaultdict(list)
    for r in rows:
        key = _pair_key(r)
        pairs[key].append(r["_correct"])
        (easy if str(r["figure_id"]) == "0" else hard)[key].append(r["_correct"])
        if not (r["category"] == "VS" and str(r["figure_id"]) == "0"):
            figures[_figure_key(r)].append(r["_correct"])
    return {
        "aAcc": 100.0 * sum(r["_correct"] for r in rows) / len(rows) if rows else None,
        "qAcc": _all_correct_share(pairs),
        "fAcc": _all_correct_share(figures),
        "easy_qAcc": _all_correct_share(easy),
        "hard_qAcc": _all_correct_share(hard),
    }


def hallusion_metrics(records: Sequence[SampleRecord], *, benchmark: str = "hallusionbench") -> MetricsReport:
    scored = _scored(records)
    rows = [{f: r.field(f) for f in _FIELDS} for r in scored]
    # ``same``: whether an answer about an edited figure reads (yes/no) like the answer about the original.
    original = {
        _pair_key(row): r.field("prediction") for row, r in zip(rows, scored, strict=True)
        if str(row["figure_id"]) == "0"
    }
    for row, r in zip(rows, scored, strict=True):
        first = original.get(_pair_key(row))
        row["same"] = "1" if first is not None and first == r.field("prediction") else "0"
    metrics = hallusion_scores(rows)
    groups = {
        category: hallusion_scores([dict(r) for r in rows if r["category"] == category])
        for category in ("VD", "VS")
        if any(r["category"] == category for r in rows)
    }
    analysis = _analysis(rows) if rows else {}
    counts = {
        "samples": len(records),
        "scored": len(scored),
        "no_response": sum(1 for r in records if r.response is None),
        "failed": sum(1 for r in records if r.failure is not None and r.response is not None),
        "unclear": sum(1 for r in rows if str(r["correctness"]) == "2"),
        **analysis,
    }
    return MetricsReport(benchmark=benchmark, metrics=metrics, groups=groups, counts=counts)


def _group_table(groups: dict[str, list[int]], set_of: dict[str, str]) -> MetricTable:
    """One row per group (a figure or a question pair): 1 when every question in it is right; by set, and in
    its split (VD / VS, the first part of the set's key), so each split's figures get their intervals too."""
    ids = list(groups)
    return MetricTable(
        ids=ids,
        components={"all_correct": [float(all(groups[g])) for g in ids], "groups": [1.0] * len(ids)},
        clusters=[set_of[g] for g in ids],
        groups=[set_of[g].split("_", 1)[0] for g in ids],
    )


def hallusion_tables(records: Sequence[SampleRecord], *, vlmevalkit: bool = False) -> dict[str, MetricTable]:
    """The per-row components of aAcc (``questions``), fAcc (``figures``), qAcc (``pairs``), easy and hard
    qAcc (``easy_pairs``, ``hard_pairs``), each row in its set, so that a ratio of their sums is exactly
    :func:`hallusion_scores`'s figure (the same records, the same rule of what is right, the same groups).

    Why a table per figure and per pair: fAcc and qAcc are shares of groups, not of questions, so their rows
    are the groups. ``vlmevalkit`` builds aAcc, fAcc and qAcc as VLMEvalKit rates them
    (:func:`halluscope.metrics.vlmevalkit.vlmevalkit_hallusion`: only code 1 is right, VS figure 0 is a
    figure too); easy and hard qAcc stay official, as that report keeps them.
    """
    scored = _scored(records)
    rows = [{f: r.field(f) for f in _FIELDS} for r in scored]
    official = [_is_correct(row) for row in rows]
    correct = [int(r.field("correctness") == 1) for r in scored] if vlmevalkit else official
    set_of: dict[str, str] = {}
    figures: dict[str, list[int]] = defaultdict(list)
    pairs: dict[str, list[int]] = defaultdict(list)
    easy: dict[str, list[int]] = defaultdict(list)
    hard: dict[str, list[int]] = defaultdict(list)
    for row, right, right_officially in zip(rows, correct, official, strict=True):
        pair, figure = _pair_key(row), _figure_key(row)
        set_of[pair] = set_of[figure] = _set_key(row)
        pairs[pair].append(right)
        (easy if str(row["figure_id"]) == "0" else hard)[pair].append(right_officially)
        if vlmevalkit or not (row["category"] == "VS" and str(row["figure_id"]) == "0"):
            figures[figure].append(right)
    questions = MetricTable(
        ids=[r.id for r in scored],
        components={"correct": [float(c) for c in correct], "questions": [1.0] * len(scored)},
        clusters=[_set_key(row) for row in rows],
        groups=[str(row["category"]) for row in rows],
    )
    return {
        "questions": questions,
        "figures": _group_table(figures, set_of),
        "pairs": _group_table(pairs, set_of),
        "easy_pairs": _group_table(easy, set_of),
        "hard_pairs": _group_table(hard, set_of),
    }
