"""VLMEvalKit's way of reading yes/no answers and of rating POPE and HallusionBench, to reproduce its numbers.

Why: a user comparing a halluscope run with a VLMEvalKit ``*_score.csv`` needs the same reading of the same
predictions. Written from VLMEvalKit's public code (open-compass/VLMEvalKit, Apache-2.0):
``vlmeval/dataset/utils/yorn.py`` (``YOrN_Extraction``, ``POPE_rating``, ``Hallusion_rating``),
``vlmeval/dataset/image_yorn.py`` (``ImageYORNDataset.evaluate``) and ``process_punctuation`` in
``vlmeval/smp``. Used by POPE's ``mode=vlmevalkit`` and HallusionBench's ``judge=vlmevalkit``; without a GPT
judge, as VLMEvalKit runs when none is configured.

**Reading** (:func:`vlmevalkit_yes_no`): lower-case the prediction; strip punctuation as VQA evaluation does
(each of ``; / [ ] " { } ( ) = + \\ _ - > < @ ` , ? !`` is deleted where it touches a space, or anywhere when the
text holds a digit-comma-digit group, else replaced by a space; then periods not followed by a digit are
deleted — at most 32 of them, because VLMEvalKit passes ``re.UNICODE`` (= 32) where ``re.sub`` takes its
count); split on whitespace. "Yes" if the words hold ``yes`` and not ``no``, "No" if ``no`` and not ``yes``,
else "Unknown". A row is correct when the reading equals the label; "Unknown" is never correct.

**POPE** (:func:`vlmevalkit_pope`): a row whose category lists several settings counts once in each;
F1 / precision / recall with "Yes" the positive class and anything else (including "Unknown") a negative
prediction; accuracy = correct rows / rows. Overall over all (setting, row) pairs, and per setting.

**HallusionBench** (:func:`vlmevalkit_hallusion`): aAcc = correct questions / questions; fAcc = figures
(``<category>_<subcategory>``, set, figure) with every question correct / figures; qAcc = questions over
every figure of a set (``<category>_<subcategory>``, set, question) with every version correct / groups —
unlike the official rule, an "unclear" answer to a VS question without a figure is not counted correct, and
those questions form figure groups too. Overall, per category (VD / VS) and per category_subcategory.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["vlmevalkit_hallusion", "vlmevalkit_pope", "vlmevalkit_yes_no"]

_PUNCTUATION = tuple(';/[]"{}()=+\\_-><@`,?!')
_DIGIT_COMMA_DIGIT = re.compile(r"\d,\d")
_PERIOD = re.compile(r"\.(?!\d)")
#: VLMEvalKit hands ``re.UNICODE`` (32) to ``re.sub`` as its count: only the first 32 periods go.
_PERIOD_LIMIT = 32


def _strip_punctuation(text: str) -> str:
    out = text
    numbers = _DIGIT_COMMA_DIGIT.search(text) is not None
    for mark in _PUNCTUATION:
        touching = f"{mark} " in text or f" {mark}" in text
        out = out.replace(mark, "" if touching or numbers else " ")
    return _PERIOD.sub("", out, count=_PERIOD_LIMIT)


def vlmevalkit_yes_no(prediction: str) -> str:
    """``"Yes"``, ``"No"`` or ``"Unknown"``: VLMEvalKit's exact-matching reading of a yes/no answer."""
    words = _strip_punctuation(str(prediction).lower()).split()
    yes, no = "yes" in words, "no" in words
    if yes and not no:
        return "Yes"
    if no and not yes:
        return "No"
    return "Unknown"


def _f1(pairs: Sequence[tuple[str, str]]) -> dict[str, float]:
    """``pairs`` of (label, reading), both "Yes"/"No"/"Unknown"; VLMEvalKit's F1, precision, recall, acc."""
    tp = sum(1 for label, read in pairs if label == "Yes" and read == "Yes")
    fp = sum(1 for label, read in pairs if label != "Yes" and read == "Yes")
    fn = sum(1 for label, read in pairs if label == "Yes" and read != "Yes")
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    accuracy = sum(1 for label, read in pairs if label == read) / len(pairs) if pairs else 0.0
    return {"f1": 100 * f1, "accuracy": 100 * accuracy, "precision": 100 * precision, "recall": 100 * recall}


def vlmevalkit_pope(rows: Iterable[tuple[str, str, str]]) -> dict[str, dict[str, float]]:
    """``rows`` of (setting, label "Yes"/"No", reading): ``{"Overall": {...}, <setting>: {...}}``."""
    rows = list(rows)
    out = {"Overall": _f1([(label, read) for _, label, read in rows])}
    by_setting: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for setting, label, read in rows:
        by_setting[setting].append((label, read))
    for setting in sorted(by_setting):
        out[setting] = _f1(by_setting[setting])
    return out


def _all_correct(groups: Mapping[str, list[bool]]) -> float:
    return 100 * sum(1 for flags in groups.values() if all(flags)) / len(groups) if groups else 0.0


def _hallusion_split(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    figures: dict[str, list[bool]] = defaultdict(list)
    questions: dict[str, list[bool]] = defaultdict(list)
    for row in rows:
        l2 = f"{row['category']}_{row['subcategory']}"
        figures[f"{l2}_{row['set_id']}_{row['figure_id']}"].append(bool(row["correct"]))
        questions[f"{l2}_{row['set_id']}_{row['question_id']}"].append(bool(row["correct"]))
    return {
        "aAcc": 100 * sum(1 for r in rows if r["correct"]) / len(rows) if rows else 0.0,
        "fAcc": _all_correct(figures),
        "qAcc": _all_correct(questions),
    }


def vlmevalkit_hallusion(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """``rows`` with category, subcategory, set_id, figure_id, question_id and ``correct`` (bool):
    aAcc / fAcc / qAcc for ``Overall``, each category and each ``<category>_<subcategory>``."""
    rows = list(rows)
    out = {"Overall": _hallusion_split(rows)}
    for key in sorted({str(r["category"]) for r in rows}):
        out[key] = _hallusion_split([r for r in rows if str(r["category"]) == key])
    for key in sorted({f"{r['category']}_{r['subcategory']}" for r in rows}):
        out[key] = _hallusion_split([r for r in rows if f"{r['category']}_{r['subcategory']}" == key])
    return out


# -- on halluscope's records ----------------------------------------------------------------------------


def _extra(record: Any, name: str) -> Any:
    extra = record.model_extra or {}
    return extra.get(name, record.metadata.get(name))


def with_vlmevalkit_reading(record: Any) -> Any:
    """A yes/no record (:func:`halluscope.benchmarks.closed.yes_no_record`) whose ``prediction`` and
    ``correct`` follow VLMEvalKit's reading; the paper and robust readings stay on it as they were."""
    if record.response is None:
        record.vlmevalkit_reading = None
        record.mode = "vlmevalkit"
        return record
    reading = vlmevalkit_yes_no(record.response)
    label = str(_extra(record, "label"))
    record.vlmevalkit_reading = reading
    record.prediction = reading.lower() if reading != "Unknown" else None
    record.correct = reading.lower() == label
    record.mode = "vlmevalkit"
    record.parse = "vlmevalkit"
    return record


def pope_vlmevalkit_report(records: Sequence[Any], *, benchmark: str = "pope") -> Any:
    """POPE's report with VLMEvalKit's numbers as the headline and per set (``<source>/<setting>``);
    the paper and robust readings stay under ``paper_*`` / ``robust_*``."""
    from halluscope.metrics.yesno import yes_no_report

    report = yes_no_report(records, benchmark=benchmark, mode="paper", group_by=("source", "setting"))
    scored = [r for r in records if r.failure is None and _extra(r, "vlmevalkit_reading") is not None]
    rows = [
        (
            f"{_extra(r, 'source')}/{_extra(r, 'setting')}",
            "Yes" if str(_extra(r, "label")) == "yes" else "No",
            str(_extra(r, "vlmevalkit_reading")),
        )
        for r in scored
    ]
    scores = vlmevalkit_pope(rows)
    for key, value in scores["Overall"].items():
        report.metrics[key] = value
        report.metrics[f"vlmevalkit_{key}"] = value
    report.metrics["yes_ratio"] = (
        100 * sum(1 for _, _, read in rows if read == "Yes") / len(rows) if rows else None
    )
    for group, values in scores.items():
        if group != "Overall" and group in report.groups:
            report.groups[group].update(values)
    report.counts["vlmevalkit_unknown"] = sum(1 for _, _, read in rows if read == "Unknown")
    report.details["mode"] = "vlmevalkit"
    return report


def hallusion_vlmevalkit_report(records: Sequence[Any], report: Any) -> Any:
    """HallusionBench's report with VLMEvalKit's aAcc / fAcc / qAcc as the headline and its splits as groups
    (VD, VS and each ``<category>_<subcategory>``); the official-rule numbers stay under ``official_*``."""
    fields = ("category", "subcategory", "set_id", "figure_id", "question_id")
    rows = [
        {**{f: _extra(r, f) for f in fields}, "correct": _extra(r, "correctness") == 1}
        for r in records
        if r.failure is None and _extra(r, "correctness") is not None
    ]
    scores = vlmevalkit_hallusion(rows)
    for key in ("aAcc", "fAcc", "qAcc"):
        if key in report.metrics:
            report.metrics[f"official_{key}"] = report.metrics[key]
        report.metrics[key] = scores["Overall"][key]
    report.groups = {k: dict(v) for k, v in scores.items() if k != "Overall"}
    report.counts["vlmevalkit_unknown"] = sum(
        1 for r in records if r.failure is None and _extra(r, "vlmevalkit_reading") == "Unknown"
    )
    report.details["judge"] = "vlmevalkit"
    return report
