"""Scoring one yes/no answer under both rule sets, for the yes/no benchmarks (POPE, AMBER's discriminative
part, HallusionBench).

Every record of these benchmarks carries both verdicts — ``paper_prediction`` / ``paper_correct`` by the
benchmark's official rule, ``robust_prediction`` / ``robust_correct`` by halluscope's shared parser
(:func:`halluscope.judges.answers.parse_yes_no`, refusals unanswered) — and ``prediction`` / ``correct``
follow the run's ``mode``. So a user sees, per item, where the two rules part, without re-running anything.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from halluscope.judges.answers import ParsedAnswer, parse_yes_no
from halluscope.stages import MetricDeclaration, MetricTable
from halluscope.types import Response, Sample, SampleRecord

__all__ = ["MODES", "check_mode", "yes_no_declarations", "yes_no_record", "yes_no_table"]

MODES = ("robust", "paper")


def yes_no_record(
    sample: Sample,
    response: Response | None,
    *,
    mode: str,
    paper_rule: Callable[[str], str | None],
    fields: Sequence[str],
) -> SampleRecord:
    """Score one yes/no answer under both rules; ``fields`` names the sample metadata copied onto the record.

    ``paper_rule`` maps the raw answer to "yes" / "no" (or None where the official code itself gives no
    prediction); the robust rule reads yes / no / unanswered. ``correct`` is None when unanswered.
    """
    label = str(sample.metadata["label"]).lower()
    extras: dict[str, Any] = {key: sample.metadata.get(key) for key in fields}
    extras["label"] = label
    extras["mode"] = mode
    if response is None:
        for rule in MODES:
            extras[f"{rule}_prediction"] = None
            extras[f"{rule}_correct"] = None
        extras.update(prediction=None, correct=None, parse=None)
        return SampleRecord(
            id=sample.id,
            prompt=sample.prompt,
            response=None,
            failure="no response for this sample",
            image_id=sample.image_id,
            image_path=sample.image_path,
            reference=sample.reference,
            **extras,
        )
    text = response.response
    paper_value = paper_rule(text)
    robust: ParsedAnswer = parse_yes_no(text, question=sample.prompt)
    extras["paper_prediction"] = paper_value
    extras["paper_correct"] = None if paper_value is None else paper_value == label
    extras["robust_prediction"] = robust.value
    extras["robust_correct"] = None if robust.value is None else robust.value == label
    extras["robust_parse"] = robust.how
    extras["prediction"] = extras[f"{mode}_prediction"]
    extras["correct"] = extras[f"{mode}_correct"]
    extras["parse"] = "paper" if mode == "paper" else robust.how
    return SampleRecord(
        id=sample.id,
        prompt=sample.prompt,
        response=text,
        image_id=sample.image_id,
        image_path=sample.image_path,
        reference=sample.reference,
        model=response.model,
        **extras,
    )


def check_mode(mode: str) -> str:
    """The run's scoring mode, refused with the choices when it is neither rule set."""
    if mode not in MODES:
        raise ValueError(f"unknown scoring mode {mode!r}; choose robust or paper")
    return mode


def check_prompt(value: Any, prompts: Mapping[str, str], where: str) -> str:
    """A ``prompt`` option, checked against the benchmark's named prompts (recorded in spec.json)."""
    text = str(value).strip()
    if text not in prompts:
        raise ValueError(f"{where}: prompt={value!r}; choose one of: {', '.join(prompts)}")
    return text


def yes_no_declarations(unit: str = "item", *, scale: float = 100.0) -> tuple[MetricDeclaration, ...]:
    """The yes/no headline (accuracy, precision, recall, F1 with "yes" positive, yes-ratio) over rows of
    :func:`yes_no_table`; ``unit`` is what the table's clusters are (POPE's six questions share an image)."""

    def declare(
        name: str, statistic: str, components: tuple[str, ...], description: str, higher: bool | None = True
    ) -> MetricDeclaration:
        return MetricDeclaration(
            name=name, statistic=statistic, components=components, scale=scale, higher_is_better=higher,
            unit=unit, description=description,
        )  # fmt: skip

    return (
        declare("accuracy", "ratio", ("correct", "answered"), "answered questions answered right"),
        declare("precision", "ratio", ("tp", "said_positive"), "answers of the positive class that are right"),
        declare("recall", "ratio", ("tp", "truly_positive"), "questions of the positive class answered so"),
        declare("f1", "f1", ("tp", "fp", "fn"), "F1 of the positive class"),
        # Neither direction is better: 50 % is a model without a bias towards yes or no.
        declare("yes_ratio", "ratio", ("said_yes", "answered"), "answers that are yes (50 is unbiased)", None),
    )


def yes_no_table(
    records: Sequence[SampleRecord],
    *,
    cluster: Callable[[SampleRecord], str] | None = None,
    group: Callable[[SampleRecord], str] | None = None,
    positive: str = "yes",
    reading: Callable[[SampleRecord], str | None] | None = None,
    prediction_field: str = "prediction",
) -> MetricTable:
    """One row per scored record (no failure, a label), as the yes/no report counts them.

    ``reading`` gives a record's prediction ("yes", "no", None for unanswered, or another word, which
    counts as answered and wrong, as VLMEvalKit's "Unknown" does); by default the record's ``prediction_field``
    (the run mode's ``prediction``, or e.g. ``robust_prediction`` for figures a run reports under both rules),
    unanswered rows having every component 0 so they count in no rate. ``cluster`` gives each row's
    resampling unit, ``group`` its group in ``metrics.json``'s ``groups``.
    """
    names = ("correct", "answered", "tp", "fp", "fn", "said_positive", "truly_positive", "said_yes")
    columns: dict[str, list[float]] = {name: [] for name in names}
    ids: list[str] = []
    kept: list[SampleRecord] = []
    for record in records:
        label = record.field("label")
        if record.failure is not None or label is None:
            continue
        prediction = reading(record) if reading is not None else record.field(prediction_field)
        answered = prediction is not None
        said_positive = answered and prediction == positive
        truly_positive = str(label) == positive
        row = {
            "correct": answered and prediction == str(label),
            "answered": answered,
            "tp": said_positive and truly_positive,
            "fp": said_positive and not truly_positive,
            "fn": answered and not said_positive and truly_positive,
            "said_positive": said_positive,
            "truly_positive": answered and truly_positive,
            "said_yes": answered and prediction == "yes",
        }
        for name, value in row.items():
            columns[name].append(float(value))
        ids.append(record.id)
        kept.append(record)
    return MetricTable(
        ids=ids,
        components=columns,
        clusters=None if cluster is None else [cluster(r) for r in kept],
        groups=None if group is None else [group(r) for r in kept],
    )
