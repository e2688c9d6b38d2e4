"""What the yes/no benchmarks (POPE, AMBER's discriminative part, HallusionBench) share: reading the
official files, fetching them, and scoring one answer under both rule sets.

Every record of these benchmarks carries both verdicts — ``paper_prediction`` / ``paper_correct`` by the
benchmark's official rule, ``robust_prediction`` / ``robust_correct`` by halluscope's shared parser
(:func:`halluscope.judges.answers.parse_yes_no`, refusals unanswered) — and ``prediction`` / ``correct``
follow the run's ``mode``. So a user sees, per item, where the two rules part, without re-running anything.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from halluscope.download import fetch_first
from halluscope.judges.answers import ParsedAnswer, parse_yes_no
from halluscope.types import Response, Sample, SampleRecord

__all__ = ["MODES", "ClosedDataError", "check_prompt", "download_files", "read_json_rows", "yes_no_record"]

MODES = ("robust", "paper")


class ClosedDataError(ValueError):
    """A benchmark file is missing or malformed; the message names the file and the line or item."""


def read_json_rows(path: Path) -> list[dict[str, Any]]:
    """A JSON list of objects, or JSONL (one object a line): the two layouts the official files use."""
    path = Path(path)
    if not path.exists():
        raise ClosedDataError(f"file not found: {path}")
    text = path.read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            rows = json.loads(text)
        except json.JSONDecodeError as error:
            raise ClosedDataError(f"{path} is not valid JSON: {error}") from error
        for index, row in enumerate(rows):
            if not isinstance(row, dict):
                raise ClosedDataError(f"{path}: item {index} is not a JSON object")
        return list(rows)
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise ClosedDataError(f"{path} line {number}: not valid JSON ({error.msg})") from error
        if not isinstance(row, dict):
            raise ClosedDataError(f"{path} line {number}: not a JSON object")
        rows.append(row)
    return rows


def check_prompt(value: Any, prompts: Mapping[str, str], where: str) -> str:
    """A ``prompt`` option, checked against the benchmark's named prompts (recorded in spec.json)."""
    text = str(value).strip()
    if text not in prompts:
        raise ValueError(f"{where}: prompt={value!r}; choose one of: {', '.join(prompts)}")
    return text


def download_files(urls: dict[str, str], target_dir: Path, what: str) -> Path:
    """Fetch ``{relative path: url}`` into ``target_dir`` (machines with internet only); keeps what exists."""
    target_dir.mkdir(parents=True, exist_ok=True)
    for relative, url in urls.items():
        target = target_dir / relative
        if target.exists():
            continue
        errors = fetch_first(target, [url])
        if errors:
            raise ClosedDataError(f"could not download {what} ({errors[0]}); pass --data with a local copy")
    return target_dir


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
    if mode not in MODES:
        raise ValueError(f"unknown scoring mode {mode!r}; choose robust or paper")
    return mode
