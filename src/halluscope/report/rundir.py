"""Run directories as the report reads them: spec, metrics and answered samples, plus their labels.

Why a lenient reader of its own: a report is often made of runs copied from elsewhere or still being
written, so a missing file or a half-written line becomes a note on the run rather than an error; only a
directory that is no run at all raises ``ReportError``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from halluscope.jsonio import loads_json
from halluscope.redact import mask_data

#: Okabe–Ito colours: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#7f7f00", "#000000")


class ReportError(ValueError):
    """A run directory cannot be reported (missing, or neither samples nor metrics in it)."""


@dataclass
class ReportRun:
    """One run as the report reads it; ``label_runs`` sets its label, colour and unique name."""

    directory: Path
    spec: dict[str, Any]
    metrics: dict[str, Any]
    records: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    label: str = ""
    color: str = PALETTE[0]
    #: Unique in the report: the run folder's name (deep links use it).
    name: str = ""

    @property
    def model(self) -> str:
        """The model's name; for runs scored from a responses file, the run directory's name."""
        return component_name(self.spec.get("model")) or self.directory.name

    @property
    def benchmark(self) -> str:
        name = component_name(self.spec.get("benchmark")) or self.metrics.get("benchmark")
        return str(name) if name else "?"

    @property
    def judge(self) -> str:
        """The judge in the slot; for a run whose yes/no answers a rule reads (POPE, AMBER), that rule, as the
        terminal's report names it: an empty cell would read as "not judged"."""
        reader = ((self.metrics.get("judge_error") or {}).get("reader") or {}).get("name")
        fallback = f"none (yes/no read by the {reader} rule)" if reader else "—"
        return component_name(self.spec.get("judge")) or fallback

    @property
    def extractor(self) -> str:
        return component_name(self.spec.get("extractor")) or "—"

    def metric_values(self) -> dict[str, float | None]:
        values = self.metrics.get("metrics") or {}
        return {str(k): as_float(v) for k, v in values.items()} if isinstance(values, dict) else {}


def component_name(value: Any) -> str | None:
    """A spec names a component by a string or by its identity dict.

    Identity dicts (``{"judge": "similarity", "model": ...}``, ``{"provider": "openai", "model": "gpt-4o"}``)
    read as "name (model)", the way the terminal table shows them.
    """
    if value is None or value == "":
        return None
    if isinstance(value, dict):
        name = next(
            (
                value[k]
                for k in ("benchmark", "judge", "extractor", "name", "provider")
                if isinstance(value.get(k), str)
            ),
            None,
        )
        detail = value.get("model") or value.get("spec")
        detail = detail if isinstance(detail, str) else None
        if name is None:
            return detail or json.dumps(value, sort_keys=True)
        return f"{name} ({detail})" if detail else str(name)
    return str(value)


def as_float(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return None if math.isnan(value) else float(value)
    return None


def _read_json_file(path: Path) -> Any:
    try:
        return loads_json(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}: not valid JSON ({exc})") from exc


def read_records_jsonl(path: Path, notes: list[str]) -> list[dict[str, Any]]:
    """Reads samples.jsonl leniently: a run still being written may end in a half line."""
    from halluscope.jsonio import iter_jsonl

    records: list[dict[str, Any]] = []
    for line in iter_jsonl(path):
        if not line.ok:
            notes.append(f"{path.name} line {line.number} is not valid JSON; skipped")
        elif not isinstance(line.value, dict) or "id" not in line.value:
            notes.append(f"{path.name} line {line.number} is not a sample record; skipped")
        else:
            records.append(line.value)
    return records


def load_run(directory: Path) -> ReportRun:
    """Reads a run with ``halluscope.runs.store`` when available, else from the files (same format)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ReportError(f"run directory {directory} does not exist")
    samples_path, metrics_path, spec_path = (
        directory / "samples.jsonl",
        directory / "metrics.json",
        directory / "spec.json",
    )
    if not samples_path.exists() and not metrics_path.exists():
        raise ReportError(
            f"{directory} is not a run directory: it has neither samples.jsonl nor metrics.json"
        )
    notes: list[str] = []
    store: Any = None
    try:
        from halluscope.runs import store as store_module

        store = store_module
    except ImportError:
        store = None

    spec: dict[str, Any] = {}
    if spec_path.exists():
        raw_spec = store.read_spec(directory) if store else _read_json_file(spec_path)
        # masked as this version writes spec.json, so a key an older run kept in a base URL is not shown
        spec = mask_data(dict(raw_spec)) if isinstance(raw_spec, Mapping) else {}
    else:
        notes.append("spec.json is missing")
    imported = spec.get("responses_file")
    if isinstance(imported, Mapping):
        if imported.get("labels"):
            notes.append(f"labels: {imported['labels']}")
        if imported.get("problems"):
            notes.append(f"{imported['problems']:,} problem(s) in the responses file (listed in spec.json)")

    metrics: dict[str, Any] = {}
    if metrics_path.exists():
        raw_metrics = store.read_metrics(directory) if store else _read_json_file(metrics_path)
        metrics = _plain(raw_metrics)
        if not isinstance(metrics, dict):
            raise ReportError(f"{metrics_path}: expected a JSON object")
    else:
        notes.append("metrics.json is missing (run unfinished?): rates not shown")

    records: list[dict[str, Any]] = []
    if samples_path.exists():
        if store:
            scan = store.scan_records(directory)
            records = [_plain(r) for r in scan.records]
            notes.extend(_corrupt_notes(scan.corrupt))
        else:
            records = read_records_jsonl(samples_path, notes)
    else:
        notes.append("samples.jsonl is missing: no samples to show")
    # A sample nobody answered says nothing about the model: leave such placeholders out of the count,
    # the pages and the file (a 32-answer Tri-HE run would otherwise carry 1,194 empty cards and images).
    answered = [r for r in records if r.get("response") is not None]
    if len(answered) < len(records):
        notes.append(f"{len(records) - len(answered):,} samples without a response are not shown")
    return ReportRun(directory=directory, spec=spec, metrics=metrics, records=answered, notes=notes)


#: Corrupt log lines named one by one in a run's notes; the rest are counted.
_CORRUPT_LISTED = 10


def _corrupt_notes(corrupt: Sequence[Any]) -> list[str]:
    """A note per corrupt line of samples.jsonl (left out of the report; re-running the run redoes them)."""
    notes = [f"corrupt, not shown: {line} (re-run the run to redo its sample)" for line in corrupt[:_CORRUPT_LISTED]]
    if len(corrupt) > _CORRUPT_LISTED:
        notes.append(f"… and {len(corrupt) - _CORRUPT_LISTED} more corrupt line(s) in samples.jsonl")
    return notes


def _plain(value: Any) -> Any:
    """Pydantic models (from the store) to plain JSON data; plain data unchanged."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    return value


def label_runs(runs: Sequence[ReportRun]) -> None:
    """Model names label runs; add the judge, then the directory name, only where they collide."""
    labels = [r.model for r in runs]
    if len(set(labels)) < len(labels):
        labels = [f"{r.model} · {r.judge}" if labels.count(r.model) > 1 else r.model for r in runs]
    if len(set(labels)) < len(labels):
        labels = [
            f"{lab} ({r.directory.name})" if labels.count(lab) > 1 else lab
            for lab, r in zip(labels, runs, strict=True)
        ]
    if len(set(labels)) < len(labels):
        labels = [f"{lab} #{i + 1}" for i, lab in enumerate(labels)]
    for index, (run, label) in enumerate(zip(runs, labels, strict=True)):
        run.label = label
        run.color = PALETTE[index % len(PALETTE)]
    # Deep links (#/sample/<run>/<id>) name a run by its folder name; a repeated name gets "-2", "-3".
    taken: set[str] = set()
    for run in runs:
        name, suffix = run.directory.name or "run", 2
        while name in taken:
            name, suffix = f"{run.directory.name}-{suffix}", suffix + 1
        taken.add(name)
        run.name = name
