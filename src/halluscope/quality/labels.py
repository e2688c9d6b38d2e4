"""Human labels for criterion validity: per-sample verdicts on a subset of each model's answers.

The file is JSONL, one human verdict per line::

    {"model": "llava-7b", "id": "yesno-12", "hallucinated": true}
    {"model": "llava-7b", "id": "yesno-40", "hallucinated": false, "annotator": "a2"}

* ``model``: the run's name as ``halluscope quality`` knows it (its run directory's name, or the NAME of a
  ``NAME=PATH`` argument);
* ``id``: the sample id in that run (as in its ``samples.jsonl``);
* ``hallucinated``: true when the person found the answer inconsistent with the image, false otherwise.

Other fields are ignored. A model's human score is the share of its labelled answers marked hallucinated,
in percent (or 100 minus that, when the benchmark metric is one where higher is better, so that agreement
shows as a positive correlation). Several verdicts on one (model, id) are averaged. Lines that are not
valid, or name a model or a sample id that no run has, are reported with their line numbers and skipped.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from halluscope.jsonio import MAX_LINE_DEPTH, loads_json


class LabelsError(ValueError):
    """The labels file cannot be read at all."""


@dataclass
class HumanScores:
    """Per-model human hallucination rates and what was wrong with the file."""

    #: model → percent of its labelled answers marked hallucinated
    rates: dict[str, float] = field(default_factory=dict)
    #: model → number of labelled samples behind its rate
    labelled: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def scores(self, higher_is_better: bool) -> dict[str, float]:
        return {m: (100.0 - r if higher_is_better else r) for m, r in self.rates.items()}


def read_labels(path: Path, sample_ids: Mapping[str, set[str]]) -> HumanScores:
    """Read ``path``; ``sample_ids`` maps each known model to the ids of its run's samples."""
    path = Path(path)
    if not path.is_file():
        raise LabelsError(f"labels file not found: {path}")
    verdicts: dict[tuple[str, str], list[bool]] = defaultdict(list)
    out = HumanScores()
    unknown_ids: dict[str, list[str]] = defaultdict(list)
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path.name} line {number}"
            try:
                row = loads_json(line, max_depth=MAX_LINE_DEPTH)
            except json.JSONDecodeError as error:
                out.problems.append(f"{where}: not valid JSON ({error.msg})")
                continue
            if not isinstance(row, dict):
                out.problems.append(f"{where}: expected a JSON object")
                continue
            model, sample_id, verdict = row.get("model"), row.get("id"), row.get("hallucinated")
            if not isinstance(model, str) or not isinstance(sample_id, str | int) or isinstance(sample_id, bool):
                out.problems.append(f"{where}: needs string fields 'model' and 'id'")
                continue
            if not isinstance(verdict, bool):
                out.problems.append(f"{where}: 'hallucinated' must be true or false, got {verdict!r}")
                continue
            if model not in sample_ids:
                out.problems.append(
                    f"{where}: no run named {model!r} (runs: {', '.join(sorted(sample_ids)) or 'none'})"
                )
                continue
            if str(sample_id) not in sample_ids[model]:
                unknown_ids[model].append(f"{sample_id} (line {number})")
                continue
            verdicts[(model, str(sample_id))].append(verdict)
    for model, ids in sorted(unknown_ids.items()):
        shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
        out.problems.append(f"{path.name}: {len(ids)} unknown sample id(s) for run {model!r}: {shown}; skipped")
    per_model: dict[str, list[float]] = defaultdict(list)
    for (model, _), marks in verdicts.items():
        per_model[model].append(sum(marks) / len(marks))
    for model, shares in sorted(per_model.items()):
        out.rates[model] = 100.0 * sum(shares) / len(shares)
        out.labelled[model] = len(shares)
    if not out.rates:
        out.problems.append(f"{path.name}: no usable label")
    return out
