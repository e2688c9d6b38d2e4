"""Each benchmark's ``metrics.json`` on a fixed input, compared with the one committed in ``tests/data/golden``.

Refactors of the orchestration, the judges or the readers must leave every benchmark's figures as they
were; this test runs ``halluscope run`` on the same inputs and compares the whole ``metrics.json`` with a
golden copy written by the code the refactor started from. The inputs are the committed excerpts (POPE,
AMBER, HallusionBench, PROVE's hand-made file), the synthetic build of ``tests/layouts.py`` (Tri-HE and
Reefknot layouts, the synthetic benchmark) and, marked ``full_data``, the HQH release; the answers are
made here from the sample ids by fixed rules, mixing right, wrong, hedged, empty and unreadable ones so that
every counter moves. Offline stages only.

A change that is meant to alter figures rewrites the goldens, visibly, in its own commit:
``HALLUSCOPE_WRITE_GOLDEN=1 python -m pytest tests/test_golden_metrics.py``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from halluscope.benchmarks import BENCHMARKS
from halluscope.cli.main import app
from tests.layouts import reefknot_layout, synthetic_layouts, tri_he_layout
from tests.paths import AMBER_EXCERPT, HALLUSIONBENCH_EXCERPT, HQH_DIR, POPE_EXCERPT, REPO_ROOT

GOLDEN = REPO_ROOT / "tests" / "data" / "golden"
WRITE = os.environ.get("HALLUSCOPE_WRITE_GOLDEN", "") not in ("", "0")
PROVE_FILE = REPO_ROOT / "tests" / "data" / "prove" / "prove.json"

YES_NO = ["Yes", "No.", "Yes, there is one on the left.", "No", "No, there is not.", "I cannot tell from the image.",
          "", "yes", "There is no such thing in the picture.", "Yes."]
LETTERS = ["A", "B.", "The answer is C.", "D", "I am not sure.", "(B) because of the picture", ""]
DESCRIPTIONS = [
    "A man is standing next to a car on a street, and a dog sits by the door.",
    "There is a table with a cup, a laptop and a vase of flowers.",
    "Two people ride horses across a field under a cloudy sky.",
    "",
]


def _pick(options: list[str], i: int) -> str:
    """The answer for the i-th sample: spread so that neither twin of a yes/no pair always gets the same one."""
    return options[(i * 5 + i // 3) % len(options)]


def _ids(benchmark: str, data: Path, options: dict[str, Any]) -> list[Any]:
    return list(BENCHMARKS.create(benchmark, data=data, **options).samples())


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _closed(benchmark: str, where: Callable[[], Path], options: dict[str, str]) -> Callable[[Path], list[str]]:
    """A yes/no or multiple-choice benchmark, answered from the fixed lists by sample position."""

    def make(tmp: Path) -> list[str]:
        data = where()
        rows = []
        for i, sample in enumerate(_ids(benchmark, data, dict(options))):
            task = str(sample.metadata.get("task", ""))
            kind = str(sample.metadata.get("type", ""))
            if task == "mcq":
                rows.append({"id": sample.id, "response": _pick(LETTERS, i)})
            elif kind == "generative":
                rows.append({"id": sample.id, "response": _pick(DESCRIPTIONS, i)})
            else:
                row: dict[str, Any] = {"id": sample.id, "response": _pick(YES_NO, i)}
                if task == "yesno":  # Reefknot's answer-confidence analysis reads these
                    row["yes_prob"] = round(((i * 37) % 100) / 100, 2)
                    row["no_prob"] = round(1 - row["yes_prob"], 2)
                rows.append(row)
            if i % 11 == 10:
                rows.pop()  # some samples unanswered
        answers = _write(tmp / "answers.jsonl", rows)
        opts = [a for key, value in options.items() for a in ("--bench-opt", f"{key}={value}")]
        return ["-b", benchmark, "--data", str(data), "-r", str(answers), *opts]

    return make


def _claims(benchmark: str, where: Callable[[], Path]) -> Callable[[Path], list[str]]:
    """Open answers with supplied claims: the image's first reference facts, one of them bent, one invented."""

    def make(tmp: Path) -> list[str]:
        data = where()
        bench = BENCHMARKS.create(benchmark, data=data)
        rows = []
        for i, sample in enumerate(bench.samples()):
            scene = bench.scene(sample)
            facts = [[c.subject, c.relation, c.object] for c in (scene.reference_claims if scene else [])][:3]
            if facts and i % 3 == 1:
                facts[0] = [facts[0][0], facts[0][1], "zebra"]
            if i % 4 == 2:
                facts.append(["unicorn", "next to", facts[0][0] if facts else "table"])
            text = " ".join(f"The {s} {r} the {o}." for s, r, o in facts)
            rows.append({"id": sample.id, "response": text, "claims": facts})
        answers = _write(tmp / "answers.jsonl", rows)
        return ["-b", benchmark, "--data", str(data), "-r", str(answers), "--judge", "typed",
                "--judge-opt", "model=off"]

    return make


def _synthetic(tmp: Path) -> list[str]:
    return ["-b", "synthetic", "--data", str(synthetic_layouts()), "--model", "sim/hallucinate?object=0.2",
            "--extractor", "rules", "--judge", "typed", "--judge-opt", "model=off"]


def _prove(tmp: Path) -> list[str]:
    rows = []
    for i, sample in enumerate(_ids("prove", PROVE_FILE, {})):
        reference = str(sample.reference or "")
        response = reference if i % 2 == 0 else "There is a red bicycle leaning on a fence."
        rows.append({"id": sample.id, "response": response, "claims": [["thing", "is", "red"]] if i == 3 else None})
    for row in rows:
        if row["claims"] is None:
            del row["claims"]
    answers = _write(tmp / "answers.jsonl", rows)
    return ["-b", "prove", "--data", str(PROVE_FILE), "-r", str(answers), "--bench-opt", "entailment=none"]


def _hqh(tmp: Path) -> list[str]:
    options = {"types": "count,OCR,attribute,existence"}
    samples = _ids("hqh", HQH_DIR, dict(options))[:120]  # the run's --limit 120
    rows = []
    for i, sample in enumerate(samples):
        other = samples[(i + 1) % len(samples)]
        answer = sample.reference if i % 3 else other.reference
        rows.append({"id": sample.id, "response": "" if i % 13 == 12 else str(answer or "")})
    answers = _write(tmp / "answers.jsonl", rows)
    return ["-b", "hqh", "--data", str(HQH_DIR), "-r", str(answers), "--limit", "120",
            *[a for k, v in options.items() for a in ("--bench-opt", f"{k}={v}")]]


CASES: dict[str, Callable[[Path], list[str]]] = {
    "pope": _closed("pope", lambda: POPE_EXCERPT, {}),
    "pope-paper": _closed("pope", lambda: POPE_EXCERPT, {"mode": "paper"}),
    "amber": _closed("amber", lambda: AMBER_EXCERPT, {"word_similarity": "exact"}),
    "hallusionbench": _closed("hallusionbench", lambda: HALLUSIONBENCH_EXCERPT, {}),
    "reefknot": _closed("reefknot", reefknot_layout, {"tasks": "yesno,mcq"}),
    "tri-he": _claims("tri-he", tri_he_layout),
    "synthetic": _synthetic,
    "prove": _prove,
}
FULL_DATA_CASES: dict[str, Callable[[Path], list[str]]] = {"hqh": _hqh}


def _same(got: Any, want: Any, where: str = "") -> list[str]:
    """Differences between two JSON values; floats equal to 1e-9 (relative), everything else exactly."""
    if isinstance(got, float) and isinstance(want, float | int) and not isinstance(want, bool):
        return [] if math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12) else [f"{where}: {got!r} != {want!r}"]
    if isinstance(got, dict) and isinstance(want, dict):
        out = [f"{where}.{k}: missing" for k in want if k not in got]
        out += [f"{where}.{k}: unexpected" for k in got if k not in want]
        return out + [d for k in got if k in want for d in _same(got[k], want[k], f"{where}.{k}")]
    if isinstance(got, list) and isinstance(want, list) and len(got) == len(want):
        return [d for i, (g, w) in enumerate(zip(got, want, strict=True)) for d in _same(g, w, f"{where}[{i}]")]
    return [] if got == want else [f"{where}: {got!r} != {want!r}"]


def _check(name: str, make: Callable[[Path], list[str]], tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["run", *make(tmp_path), "--out", str(out), "--no-cache", "-q"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    golden = GOLDEN / f"{name}.json"
    if WRITE:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(json.dumps(metrics, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    want = json.loads(golden.read_text(encoding="utf-8"))
    assert any(v is not None for v in metrics["metrics"].values()), f"{name}: the fixed input gave no figure"
    differences = _same(metrics, want)
    assert not differences, f"{name}: metrics.json differs from {golden.name}:\n" + "\n".join(differences[:20])


@pytest.mark.parametrize("name", sorted(CASES))
def test_metrics_json_equals_the_golden_copy(name: str, tmp_path: Path) -> None:
    _check(name, CASES[name], tmp_path)


@pytest.mark.full_data
@pytest.mark.parametrize("name", sorted(FULL_DATA_CASES))
def test_metrics_json_equals_the_golden_copy_on_the_released_files(name: str, tmp_path: Path) -> None:
    _check(name, FULL_DATA_CASES[name], tmp_path)
