"""Reefknot's measures, as pure functions of scored records.

- **Halr** (hallucination rate) = 100 − accuracy, per task (yes/no, multiple choice, VQA) and per relation
  type (perception, cognitive); metrics.json groups are keyed ``<task>/<relation_type>``.
- **R** = mean over the tasks of (100 − Halr) — the paper's single score.
- Yes/no: the **yes-ratio computed from the predictions** (a model that says yes to everything shows 100
  here, whatever the labels), precision / recall / F1 with "yes" as the positive class, and accuracy over
  twin pairs (a real triplet and its relation-swapped negative: both must be answered right).
- Multiple choice: the distribution of chosen letters against the distribution of correct letters
  (option-position bias).
- Unanswered items (refusals, unreadable answers) are counted, and left out of every rate; items without a
  response or whose scoring failed are counted separately.
- How many items the ``paper`` and ``robust`` rules score differently, and both modes' headline numbers.
- With answer-token probabilities: the confidence analysis of :mod:`halluscope.metrics.confidence`.

Records are the :class:`~halluscope.types.SampleRecord` s written by the Reefknot benchmark; the fields read
here (``task``, ``relation_type``, ``label``, ``prediction``, ``correct``, ``paper_correct``,
``robust_correct``, ``pair``, ``answer_probs``) are extra fields of the record.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from halluscope.metrics.confidence import PAPER_ENTROPY_THRESHOLD, confidence_report, entropy_bits
from halluscope.stages import MetricDeclaration, MetricTable
from halluscope.types import MetricsReport, SampleRecord

__all__ = [
    "RELATION_TYPES",
    "TASKS",
    "halr",
    "r_score",
    "reefknot_declarations",
    "reefknot_metrics",
    "reefknot_tables",
]

TASKS = ("yesno", "mcq", "vqa")
RELATION_TYPES = ("perception", "cognitive")


#: A record flattened for fast repeated lookups: metadata, then the record's extra fields on top.
Row = dict[str, Any]


def _row(record: SampleRecord) -> Row:
    return {**record.fields(), "_failure": record.failure, "_response": record.response, "_id": record.id,
            "_cluster": _cluster(record)}  # fmt: skip


def reefknot_rows(records: Sequence[SampleRecord]) -> list[Row]:
    """The records flattened once, for :func:`reefknot_metrics` and :func:`reefknot_tables` both (each would
    otherwise flatten all 16,690 of a full yes/no + multiple-choice run again)."""
    return [_row(record) for record in records]


def _accuracy(flags: Sequence[bool]) -> float | None:
    return 100.0 * sum(flags) / len(flags) if flags else None


def halr(flags: Sequence[bool]) -> float | None:
    """Hallucination rate (0-100) over scored items' correctness flags; None when nothing was scored."""
    accuracy = _accuracy(flags)
    return None if accuracy is None else 100.0 - accuracy


def r_score(task_halr: Mapping[str, float | None]) -> float | None:
    """Mean over the tasks present of (100 − Halr)."""
    values = [100.0 - v for v in task_halr.values() if v is not None]
    return sum(values) / len(values) if values else None


def _divide(a: float, b: float) -> float | None:
    return 100.0 * a / b if b else None


def _yes_no_stats(rows: Sequence[Row], key: str, prediction_key: str) -> dict[str, Any]:
    answered = [
        (r.get(prediction_key), str(r.get("label")).lower())
        for r in rows
        if r.get(key) is not None
    ]
    tp = sum(1 for p, y in answered if p == "yes" and y == "yes")
    fp = sum(1 for p, y in answered if p == "yes" and y == "no")
    fn = sum(1 for p, y in answered if p != "yes" and y == "yes")
    tn = sum(1 for p, y in answered if p != "yes" and y == "no")
    precision, recall = _divide(tp, tp + fp), _divide(tp, tp + fn)
    if precision is None or recall is None:
        f1 = None
    else:
        f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    pairs: dict[Any, list[bool | None]] = {}
    for r in rows:
        pair = r.get("pair")
        if pair is not None:
            pairs.setdefault(pair, []).append(r.get(key))
    complete = [v for v in pairs.values() if len(v) == 2]
    scored_pairs = [v for v in complete if None not in v]
    return {
        "yes_ratio": _divide(sum(1 for p, _ in answered if p == "yes"), len(answered)),
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "pair_accuracy": _divide(sum(1 for v in scored_pairs if all(v)), len(scored_pairs)),
        "confusion": {"tp": tp, "fp": fp, "fn": fn, "tn": tn},
        "pairs_complete": len(complete),
        "pairs_scored": len(scored_pairs),
    }


def _mode_summary(by_task: Mapping[str, Sequence[Row]], key: str) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    per_task: dict[str, float | None] = {}
    for task in TASKS:
        rows = by_task.get(task)
        if rows:
            per_task[task] = halr([bool(r.get(key)) for r in rows if r.get(key) is not None])
            out[f"halr_{task}"] = per_task[task]
    out["r_score"] = r_score(per_task)
    return out


def reefknot_metrics(
    records: Sequence[SampleRecord],
    *,
    benchmark: str = "reefknot",
    entropy_threshold: float = PAPER_ENTROPY_THRESHOLD,
    rows: Sequence[Row] | None = None,
) -> MetricsReport:
    """Every Reefknot measure over scored records (see the module docstring); ``rows``: the records'
    :func:`reefknot_rows`, when the caller has them."""
    # One pass sorts the records: scored ones by task (in record order), failed ones apart. Every measure
    # below reads these lists, not all records again (21,560 records on the full benchmark).
    scoring: list[Row] = []
    failed: list[Row] = []
    by_task: dict[str, list[Row]] = {task: [] for task in TASKS}
    for row in rows if rows is not None else reefknot_rows(records):
        if row["_failure"] is not None:
            failed.append(row)
            continue
        in_task = by_task.get(str(row.get("task")))
        if in_task is not None:
            scoring.append(row)
            in_task.append(row)
    missing = [r for r in failed if r["_response"] is None]

    scored = sum(1 for r in scoring if r.get("correct") is not None)
    metrics: dict[str, float | None] = {}
    groups: dict[str, dict[str, float | None]] = {}
    counts: dict[str, int] = {
        "samples": len(records),
        "scored": scored,
        "unanswered": len(scoring) - scored,
        "missing_response": len(missing),
        "failed": len(failed) - len(missing),
    }
    details: dict[str, Any] = {}

    task_halr: dict[str, float | None] = {}
    for task in TASKS:
        in_task = by_task[task]
        if not in_task:
            continue
        flags = [bool(r.get("correct")) for r in in_task if r.get("correct") is not None]
        task_halr[task] = halr(flags)
        metrics[f"halr_{task}"] = task_halr[task]
        groups[task] = {"halr": task_halr[task], "accuracy": _accuracy(flags), "n": float(len(flags))}
        counts[f"unanswered_{task}"] = len(in_task) - len(flags)
        counts[f"mode_disagreements_{task}"] = sum(
            1 for r in in_task if r.get("paper_correct") != r.get("robust_correct")
        )
        by_relation: dict[str, list[bool]] = {}
        for r in in_task:
            subset = by_relation.setdefault(str(r.get("relation_type")), [])
            if r.get("correct") is not None:
                subset.append(bool(r.get("correct")))
        for relation_type, subset in sorted(by_relation.items()):
            groups[f"{task}/{relation_type}"] = {
                "halr": halr(subset),
                "accuracy": _accuracy(subset),
                "n": float(len(subset)),
            }
    metrics["r_score"] = r_score(task_halr)
    details["r_score_tasks"] = sorted(task_halr)
    counts["mode_disagreements"] = sum(counts.get(f"mode_disagreements_{task}", 0) for task in TASKS)

    yes_no = by_task["yesno"]
    if yes_no:
        stats = _yes_no_stats(yes_no, "correct", "prediction")
        metrics.update(
            {
                "yes_ratio": stats["yes_ratio"],
                "yesno_precision": stats["precision"],
                "yesno_recall": stats["recall"],
                "yesno_f1": stats["f1"],
                "yesno_pair_accuracy": stats["pair_accuracy"],
            }
        )
        details["yesno_confusion"] = stats["confusion"]
        counts["yesno_pairs"] = stats["pairs_complete"]
        counts["yesno_pairs_scored"] = stats["pairs_scored"]

    mcq = by_task["mcq"]
    if mcq:
        chosen = Counter(
            p if p in ("A", "B", "C", "D") else "other"
            for r in mcq
            if r.get("correct") is not None
            for p in [r.get("prediction")]
        )
        labels = Counter(str(r.get("label")) for r in mcq)
        total = sum(chosen.values())
        details["mcq_letters"] = {
            "chosen": {k: chosen.get(k, 0) for k in ("A", "B", "C", "D", "other")},
            "labels": {k: labels.get(k, 0) for k in ("A", "B", "C", "D")},
        }
        metrics["mcq_most_chosen_share"] = _divide(max(chosen.values()), total) if total else None

    modes = {mode: _mode_summary(by_task, f"{mode}_correct") for mode in ("paper", "robust")}
    details["modes"] = modes
    metrics["paper_r_score"] = modes["paper"]["r_score"]
    metrics["robust_r_score"] = modes["robust"]["r_score"]
    details["parse_rules"] = dict(
        Counter(
            f"{r.get('task')}:{r.get('parse')}"
            for r in scoring
            if r.get("parse")
        )
    )

    entries = []
    for r in scoring:
        probs = r.get("answer_probs")
        correct = r.get("correct")
        if isinstance(probs, Mapping) and probs and correct is not None:
            entries.append(
                (str(r.get("task")), {str(k): float(v) for k, v in probs.items()}, not correct)
            )
    if entries:
        confidence = confidence_report(entries, threshold=entropy_threshold)
        details["confidence"] = confidence
        counts["with_answer_probs"] = len(entries)
        for task, values in confidence["tasks"].items():
            at = values["detector"]["at_threshold"]
            best = values["detector"]["best"] or {}
            metrics[f"entropy_detector_precision_{task}"] = at["precision"]
            metrics[f"entropy_detector_recall_{task}"] = at["recall"]
            metrics[f"entropy_detector_best_threshold_{task}"] = best.get("threshold")
            metrics[f"entropy_detector_auroc_{task}"] = values["detector"]["auroc"]

    return MetricsReport(benchmark=benchmark, metrics=metrics, groups=groups, counts=counts, details=details)


# -- declared headline metrics (intervals, paired tests) -------------------------------------------------------
#
# Declared: halr_<task> per task, yes/no's yes_ratio, precision, recall, F1 and pair accuracy, and the entropy
# detector's precision and recall at the threshold (yes/no and multiple choice, the tasks with answer
# probabilities), each over Visual Genome images (the unit items share: a yes/no twin pair is one triplet asked
# twice about one image, and an image carries several triplets in every task). Not declared:
# - r_score, paper_r_score, robust_r_score: an unweighted mean of the per-task accuracies, not a ratio or F1 of
#   sums over rows. A table with one row per task would give the right number but a bootstrap over three
#   tasks, and weighting items by 1/(their task's size) fixes those sizes at this run's, so neither interval
#   would be honest; the per-task hallucination rates it averages are declared.
# - mcq_most_chosen_share: a maximum over letters, the letter itself chosen by the data.
# - entropy_detector_best_threshold_* and entropy_detector_auroc_*: a threshold chosen by the data and a rank
#   statistic, not ratios of sums.

#: The tasks whose answers may carry answer-option probabilities (the confidence analysis).
CONFIDENCE_TASKS = ("yesno", "mcq")

#: The unit Reefknot's items share: questions (and both twins of a yes/no pair) about one image.
REEFKNOT_UNIT = "image"


def reefknot_declarations(tasks: Iterable[str]) -> tuple[MetricDeclaration, ...]:
    """The declared headline metrics of a run over ``tasks``: each task's Halr (table ``<task>``), and with
    yes/no its yes-ratio, precision, recall, F1 (table ``yesno``) and pair accuracy (table ``yesno_pairs``)."""

    def declare(name: str, statistic: str, components: tuple[str, ...], table: str, description: str,
                higher: bool = True) -> MetricDeclaration:
        return MetricDeclaration(
            name=name, statistic=statistic, components=components, higher_is_better=higher, table=table,
            unit=REEFKNOT_UNIT, description=description,
        )  # fmt: skip

    chosen = set(tasks)
    out = [
        declare(f"halr_{task}", "ratio", ("wrong", "answered"), task, f"{task} answers that are wrong", False)
        for task in TASKS
        if task in chosen
    ]
    if "yesno" in chosen:
        out += [
            # Neither direction is better: 50 is a model without a bias towards yes or no.
            declare("yes_ratio", "ratio", ("said_yes", "answered"), "yesno", "yes/no answers that are yes", False),
            declare("yesno_precision", "ratio", ("tp", "said_yes"), "yesno", "yes answers that are right"),
            declare("yesno_recall", "ratio", ("tp", "truly_yes"), "yesno", "true relations answered yes"),
            declare("yesno_f1", "f1", ("tp", "fp", "fn"), "yesno", "F1 of the yes class"),
            declare("yesno_pair_accuracy", "ratio", ("both_right", "both_answered"), "yesno_pairs",
                    "twin pairs with both questions answered right"),
        ]  # fmt: skip
    for task in CONFIDENCE_TASKS:
        if task in chosen:
            # Defined only on runs whose answers carry probabilities: elsewhere the table is empty, the metric
            # absent from metrics.json and its interval None.
            out += [
                declare(f"entropy_detector_precision_{task}", "ratio", ("flagged_wrong", "flagged"),
                        f"confidence_{task}", "answers the entropy detector flags that are wrong"),
                declare(f"entropy_detector_recall_{task}", "ratio", ("flagged_wrong", "wrong"),
                        f"confidence_{task}", "wrong answers the entropy detector flags"),
            ]  # fmt: skip
    return tuple(out)


def _cluster(record: SampleRecord) -> str:
    """The image a record asks about; a record without one is its own unit."""
    return f"image:{record.image_id}" if record.image_id else f"item:{record.id}"


#: The components of each table :func:`reefknot_tables` gives.
_TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "yesno": ("wrong", "answered", "said_yes", "truly_yes", "tp", "fp", "fn"),
    "mcq": ("wrong", "answered"),
    "vqa": ("wrong", "answered"),
    "yesno_pairs": ("both_right", "both_answered"),
    **{f"confidence_{task}": ("flagged_wrong", "flagged", "wrong") for task in CONFIDENCE_TASKS},
}


def _empty_table(columns: Iterable[str]) -> MetricTable:
    return MetricTable(ids=[], components={name: [] for name in columns}, clusters=[])


def _add(table: MetricTable, row_id: str, cluster: str, values: Mapping[str, bool]) -> None:
    table.ids.append(row_id)
    assert table.clusters is not None
    table.clusters.append(cluster)
    for name, value in values.items():
        table.components[name].append(float(value))


def _detector_row(row: Row, entropy_threshold: float) -> dict[str, bool] | None:
    """An answered item with answer probabilities, as the confidence analysis scores its detector ("entropy at
    or above the threshold, scaled to the task's number of options ⇒ hallucination"); None for other items."""
    probs, correct = row.get("answer_probs"), row.get("correct")
    if not (isinstance(probs, Mapping) and probs) or correct is None:
        return None
    entropy = entropy_bits([float(v) for v in probs.values()])
    flagged = entropy >= entropy_threshold * math.log2(2 if row.get("task") == "yesno" else 4)
    wrong = not correct
    return {"flagged_wrong": flagged and wrong, "flagged": flagged, "wrong": wrong}


def reefknot_tables(
    records: Sequence[SampleRecord],
    *,
    entropy_threshold: float = PAPER_ENTROPY_THRESHOLD,
    rows: Sequence[Row] | None = None,
) -> dict[str, MetricTable]:
    """The tables :func:`reefknot_declarations` read, from the rows :func:`reefknot_metrics` counts: one per
    task (a row per scored item; unanswered items, ``correct`` None, count in no rate), ``yesno_pairs`` (a row
    per twin pair, both twins scored) and ``confidence_<task>`` (a row per answered item with answer
    probabilities). Clustered by image, so n counts items and units images."""
    # Every table is there, maybe empty (a metric over no rows is undefined, as in metrics.json), whichever
    # tasks this run's records happen to hold (``--limit 30`` asks yes/no questions only).
    tables = {name: _empty_table(columns) for name, columns in _TABLE_COLUMNS.items()}
    pairs: dict[Any, list[tuple[str, Any]]] = {}
    for row in rows if rows is not None else reefknot_rows(records):
        task = str(row.get("task"))
        if row["_failure"] is not None or task not in TASKS:
            continue
        correct = row.get("correct")
        answered = correct is not None
        values = {"wrong": answered and not correct, "answered": answered}
        if task == "yesno":
            said_yes = answered and row.get("prediction") == "yes"
            truly_yes = str(row.get("label")).lower() == "yes"
            values.update(
                said_yes=said_yes,
                truly_yes=answered and truly_yes,
                tp=said_yes and truly_yes,
                fp=said_yes and not truly_yes,
                fn=answered and not said_yes and truly_yes,
            )
            if row.get("pair") is not None:
                pairs.setdefault(row["pair"], []).append((row["_cluster"], correct))
        _add(tables[task], row["_id"], row["_cluster"], values)
        detector = _detector_row(row, entropy_threshold) if task in CONFIDENCE_TASKS else None
        if detector is not None:
            _add(tables[f"confidence_{task}"], row["_id"], row["_cluster"], detector)
    for pair, twins in pairs.items():
        if len(twins) != 2:  # as the pair accuracy: a pair with a twin missing or failed is left out
            continue
        flags = [correct for _, correct in twins]
        both_answered = None not in flags
        # Twins are paired only when they ask about the same image (benchmarks/reefknot.py).
        _add(tables["yesno_pairs"], f"pair-{pair}", twins[0][0],
             {"both_right": both_answered and all(flags), "both_answered": both_answered})  # fmt: skip
    return tables
