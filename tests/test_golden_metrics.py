"""Each benchmark's ``metrics.json`` on a fixed input, compared with the one committed in ``tests/data/golden``.

Refactors of the orchestration, the judges or the readers must leave every benchmark's figures as they
were; this test runs ``halluscope run`` on the same inputs and compares the whole ``metrics.json`` with a
golden copy written by the code the refactor started from. The inputs are the committed excerpts (POPE,
AMBER, HallusionBench, PROVE's hand-made file), the synthetic build of ``tests/layouts.py`` (Tri-HE and
Reefknot layouts, the synthetic benchmark) and, marked ``full_data``, the HQH release; the answers are
made here from the sample ids by fixed rules, mixing right, wrong, hedged, empty and unreadable ones so that
every counter moves. Offline stages, and for the benchmarks an LLM judges (MMHal-Bench, Reefknot's VQA) a
scripted judge on loopback whose verdicts follow fixed rules over the prompt it is sent; marked ``full_data``,
CHAIR on OPERA's released captions and MMHal-Bench on LLaVA's released answers.

A change that is meant to alter figures rewrites the goldens, visibly, in its own commit:
``HALLUSCOPE_WRITE_GOLDEN=1 python -m pytest tests/test_golden_metrics.py``.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from halluscope.benchmarks import BENCHMARKS
from halluscope.cli.main import app
from tests.layouts import reefknot_layout, synthetic_layouts, tri_he_layout
from tests.paths import (
    AMBER_EXCERPT,
    FULL_DATA,
    GAVIE_SET,
    HALLUSIONBENCH_EXCERPT,
    HQH_DIR,
    MMHAL_DIR,
    POPE_EXCERPT,
    REPO_ROOT,
)
from tests.scripted_server import Reply, ScriptedServer, completion

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


def _claims(benchmark: str, where: Callable[[], Path], *judge: str) -> Callable[[Path], list[str]]:
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
        return ["-b", benchmark, "--data", str(data), "-r", str(answers),
                *(judge or ("--judge", "typed", "--judge-opt", "model=off"))]

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


def _chair(tmp: Path) -> list[str]:
    captions = FULL_DATA / "chair-coco" / "opera-released-captions" / "llava-1.5" / "greedy.jsonl"
    return ["-b", "chair", "--data", str(FULL_DATA / "chair-coco"), "-r", str(captions),
            "--bench-opt", f"ids={captions}"]


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def _scripted_judge(body: Any) -> Reply:
    """Fixed rules over the prompt: MMHal-Bench's rating from the answer's length, entailment from shared words."""
    prompt = str(body["messages"][-1]["content"])
    if "Model's answer:" in prompt:
        answer = prompt.split("Model's answer:")[1]
        return completion(f"The answer is compared with the reference.\nRating: {len(answer) % 7}")
    if "Region descriptions:" in prompt:  # GAVIE: two scores from the lengths of the instruction and the answer
        instruction, answer = prompt.split("Instruction: ")[1].split("\n\nAnswer: ")
        return completion(f"Compared.\nRelevancy: {len(instruction) % 11}\nAccuracy: {len(answer) % 11}")
    first = re.search(r"First statement: (.*)", prompt)
    second = re.search(r"Second statement: (.*)", prompt)
    if first and second:
        one, two = _words(first.group(1)), _words(second.group(1))
        return completion(json.dumps({"entails": two <= one}) if len(one) % 5 else "not sure")
    return completion("not sure")


def _mmhal(tmp: Path, base_url: str) -> list[str]:
    answers = MMHAL_DIR / "responses" / "llava_7b.json"
    return ["-b", "mmhal", "--data", str(MMHAL_DIR), "-r", str(answers), "--judge-model", "m", "--base-url",
            base_url, "--max-failure-share", "1"]


def _gavie(tmp: Path, base_url: str) -> list[str]:
    """GAVIE's released instructions about the two images whose region descriptions are in tests/data, each
    answered by one of the five real answers of the benchmark's judge example, in turn."""
    excerpt = Path(__file__).parent / "data" / "gavie"
    answers = [str(r["response"]) for r in json.loads((excerpt / "example_answers.json").read_text())]
    ids = [s.id for s in BENCHMARKS.create("gavie", data=GAVIE_SET).samples() if s.image_id in ("2357436", "2346780")]
    rows = [{"id": i, "response": answers[n % len(answers)]} for n, i in enumerate(ids)]
    return ["-b", "gavie", "--data", str(GAVIE_SET), "--bench-opt", f"regions={excerpt / 'region_descriptions.json'}",
            "-r", str(_write(tmp / "answers.jsonl", rows)), "--only-answered", "--judge-model", "m",
            "--base-url", base_url]


def _reefknot_vqa(tmp: Path, base_url: str) -> list[str]:
    """Reefknot's VQA answered by rule: the label itself, the label with a word more, or the wrong relation."""
    data = reefknot_layout()
    rows = []
    for i, sample in enumerate(_ids("reefknot", data, {"tasks": "vqa"})):
        label = str(sample.reference)
        subject, obj = str(sample.metadata["subject"]), str(sample.metadata["object"])
        answer = [label, f"The {label}", f"{subject} is far from {obj}.", "", label.upper()][i % 5]
        rows.append({"id": sample.id, "response": answer})
    answers = _write(tmp / "answers.jsonl", rows)
    return ["-b", "reefknot", "--data", str(data), "-r", str(answers), "--bench-opt", "tasks=vqa",
            "--judge", "llm", "--judge-model", "m", "--base-url", base_url, "--max-failure-share", "1"]


CASES: dict[str, Callable[[Path], list[str]]] = {
    "pope": _closed("pope", lambda: POPE_EXCERPT, {}),
    "pope-paper": _closed("pope", lambda: POPE_EXCERPT, {"mode": "paper"}),
    "amber": _closed("amber", lambda: AMBER_EXCERPT, {"word_similarity": "exact"}),
    "hallusionbench": _closed("hallusionbench", lambda: HALLUSIONBENCH_EXCERPT, {}),
    "reefknot": _closed("reefknot", reefknot_layout, {"tasks": "yesno,mcq"}),
    "tri-he": _claims("tri-he", tri_he_layout),
    "tri-he-similarity": _claims("tri-he", tri_he_layout, "--judge", "similarity"),
    "synthetic": _synthetic,
    "prove": _prove,
}
FULL_DATA_CASES: dict[str, Callable[[Path], list[str]]] = {"hqh": _hqh, "chair": _chair}
#: Cases judged by the scripted judge: they are given its address.
JUDGED_CASES: dict[str, Callable[[Path, str], list[str]]] = {"reefknot-vqa": _reefknot_vqa}
FULL_DATA_JUDGED_CASES: dict[str, Callable[[Path, str], list[str]]] = {"mmhal": _mmhal, "gavie": _gavie}

#: Relative tolerance for floats computed by plain arithmetic over counts: only rounding may differ.
EXACT_FLOATS = 1e-9
#: Relative tolerance for floats that pass through an embedding model (PROVE's hScore / tScore are means of
#: cosine similarities): the model's float32 kernels give results that move by about 1e-7 between installs of
#: the same versions (BLAS build, CPU features), so a tighter bound fails on a fresh machine for no reason.
#: A real change of the figures moves them by far more than this.
EMBEDDING_FLOATS = 1e-6
FLOAT_TOLERANCE = {"prove": EMBEDDING_FLOATS, "tri-he-similarity": EMBEDDING_FLOATS}


def _same(got: Any, want: Any, where: str = "", rel_tol: float = EXACT_FLOATS) -> list[str]:
    """Differences between two JSON values; floats equal to ``rel_tol`` (relative), everything else exactly.

    Counts are integers and compared exactly: an embedding's rounding can move a score, never a count.
    """
    if isinstance(got, float) and isinstance(want, float | int) and not isinstance(want, bool):
        return [] if math.isclose(got, want, rel_tol=rel_tol, abs_tol=1e-12) else [f"{where}: {got!r} != {want!r}"]
    if isinstance(got, dict) and isinstance(want, dict):
        out = [f"{where}.{k}: missing" for k in want if k not in got]
        out += [f"{where}.{k}: unexpected" for k in got if k not in want]
        return out + [d for k in got if k in want for d in _same(got[k], want[k], f"{where}.{k}", rel_tol)]
    if isinstance(got, list) and isinstance(want, list) and len(got) == len(want):
        pairs = zip(got, want, strict=True)
        return [d for i, (g, w) in enumerate(pairs) for d in _same(g, w, f"{where}[{i}]", rel_tol)]
    return [] if got == want else [f"{where}: {got!r} != {want!r}"]


def _check_intervals(name: str, metrics: dict[str, Any]) -> None:
    """Each declared headline's interval bounds the very figure the benchmark reports: the declaration's point
    estimate equals the benchmark's own number, and lies inside its interval."""
    for metric, interval in metrics.get("intervals", {}).items():
        value = metrics["metrics"].get(metric)
        if interval is None:
            assert value is None, f"{name}: {metric} = {value} has no interval"
            continue
        assert value is not None, f"{name}: {metric} has an interval but no value"
        assert math.isclose(interval["estimate"], value, rel_tol=1e-9, abs_tol=1e-9), (name, metric, interval, value)
        assert interval["low"] - 1e-6 <= value <= interval["high"] + 1e-6, (name, metric, interval, value)
    for group, intervals in metrics.get("group_intervals", {}).items():
        for metric, interval in intervals.items():
            value = metrics["groups"][group].get(metric)
            assert (interval is None) == (value is None) or interval is None, (name, group, metric, value)
            if interval is not None:
                assert math.isclose(interval["estimate"], value, rel_tol=1e-9, abs_tol=1e-9), (name, group, metric)


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
    _check_intervals(name, metrics)
    differences = _same(metrics, want, rel_tol=FLOAT_TOLERANCE.get(name, EXACT_FLOATS))
    assert not differences, f"{name}: metrics.json differs from {golden.name}:\n" + "\n".join(differences[:20])


@pytest.mark.parametrize("name", sorted(CASES))
def test_metrics_json_equals_the_golden_copy(name: str, tmp_path: Path) -> None:
    _check(name, CASES[name], tmp_path)


@pytest.mark.full_data
@pytest.mark.parametrize("name", sorted(FULL_DATA_CASES))
def test_metrics_json_equals_the_golden_copy_on_the_released_files(name: str, tmp_path: Path) -> None:
    _check(name, FULL_DATA_CASES[name], tmp_path)


@pytest.mark.parametrize("name", sorted(JUDGED_CASES))
def test_metrics_json_with_a_scripted_judge_equals_the_golden_copy(
    name: str, tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.responder = _scripted_judge
    _check(name, lambda tmp: JUDGED_CASES[name](tmp, scripted_server.base_url), tmp_path)


@pytest.mark.full_data
@pytest.mark.parametrize("name", sorted(FULL_DATA_JUDGED_CASES))
def test_metrics_json_with_a_scripted_judge_on_the_released_files(
    name: str, tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.responder = _scripted_judge
    _check(name, lambda tmp: FULL_DATA_JUDGED_CASES[name](tmp, scripted_server.base_url), tmp_path)


def test_embedding_tolerance_lets_rounding_pass_and_catches_a_real_change() -> None:
    """The drift seen between two fresh installs passes; a change in the fifth digit, or in a count, does not."""
    seen_between_installs = ({"hscore": 72.3854604609403}, {"hscore": 72.38546488579038})
    assert _same(*seen_between_installs, rel_tol=EMBEDDING_FLOATS) == []
    assert _same(*seen_between_installs, rel_tol=EXACT_FLOATS) != []
    assert _same({"hscore": 72.3857}, {"hscore": 72.3854}, rel_tol=EMBEDDING_FLOATS) != []
    assert _same({"scored": 41}, {"scored": 42}, rel_tol=EMBEDDING_FLOATS) != []
