"""``--limit N`` asks N questions and scores N samples, on every benchmark.

The fault this guards against: ``halluscope run -b pope --limit 3 --model ...`` asked 3 questions and scored
27 samples, 24 of them "no response", because POPE applied the limit per question file (9 sets × 3), the
run dropped it when telling known ids, and the collector cut it again. AMBER applied it per type, Reefknot
split it over its tasks, and CHAIR ignored it. Now the run picks the first N samples once and the model and
the scoring use that one selection.

Every benchmark with data in the tests is run twice with ``--limit 3``: asking a scripted model on loopback
(its requests are counted) and scoring a responses file that answers every sample of the benchmark.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.layouts import reefknot_layout, synthetic_layouts, tri_he_layout
from tests.paths import (
    AMBER_DIR,
    AMBER_EXCERPT,
    FULL_DATA,
    HALLUSIONBENCH_DIR,
    HALLUSIONBENCH_EXCERPT,
    HQH_DIR,
    MMHAL_DIR,
    POPE_DIR,
    POPE_EXCERPT,
    REEFKNOT_DIR,
    REPO_ROOT,
    REPOPE_DIR,
    TRI_HE_JSON,
)
from tests.scripted_server import ScriptedServer, completion

N = 3
CHAIR_DIR = FULL_DATA / "chair-coco"
DECO_CAPTIONS = FULL_DATA / "peer-outputs" / "chair-deco-llava-1.5-7b" / "deco.jsonl"
PROVE_DATA = REPO_ROOT / "tests" / "data" / "prove" / "prove.json"


@dataclass(frozen=True)
class Case:
    """One benchmark's data and options, as a user passes them to ``halluscope run``."""

    benchmark: str
    data: Callable[[], Path]
    options: tuple[str, ...] = ()
    #: The judge asks an LLM (MMHal-Bench): it is pointed at a second scripted server, counted apart.
    llm_judge: bool = False

    def bench_options(self) -> dict[str, str]:
        return dict(option.split("=", 1) for option in self.options)

    def flags(self) -> list[str]:
        flags = ["-b", self.benchmark, "--data", str(self.data())]
        for option in self.options:
            flags += ["--bench-opt", option]
        return flags


_FULL = pytest.mark.full_data
CASES = [
    # All nine POPE sets: the limit was applied to each question file.
    pytest.param(Case("pope", lambda: POPE_EXCERPT), id="pope-excerpt"),
    pytest.param(Case("pope", lambda: POPE_DIR), id="pope", marks=_FULL),
    pytest.param(
        Case("pope", lambda: POPE_DIR, ("sources=coco", "labels=repope", f"repope_data={REPOPE_DIR}")),
        id="repope",
        marks=_FULL,
    ),
    # AMBER's yes/no types: the limit was applied to each type.
    pytest.param(Case("amber", lambda: AMBER_EXCERPT, ("types=existence,attribute,relation",)), id="amber-excerpt"),
    pytest.param(Case("amber", lambda: AMBER_DIR, ("types=existence,attribute,relation",)), id="amber", marks=_FULL),
    # Reefknot's three tasks: the limit was split over them (4 samples for a limit of 3).
    pytest.param(Case("reefknot", reefknot_layout), id="reefknot-layout"),
    pytest.param(Case("reefknot", lambda: REEFKNOT_DIR), id="reefknot", marks=_FULL),
    pytest.param(Case("hallusionbench", lambda: HALLUSIONBENCH_EXCERPT), id="hallusionbench-excerpt"),
    pytest.param(Case("hallusionbench", lambda: HALLUSIONBENCH_DIR), id="hallusionbench", marks=_FULL),
    pytest.param(Case("tri-he", tri_he_layout), id="tri-he-layout"),
    pytest.param(Case("tri-he", lambda: TRI_HE_JSON), id="tri-he", marks=_FULL),
    pytest.param(Case("synthetic", synthetic_layouts), id="synthetic"),
    pytest.param(Case("prove", lambda: PROVE_DATA), id="prove"),
    pytest.param(Case("hqh", lambda: HQH_DIR), id="hqh", marks=_FULL),
    pytest.param(Case("mmhal", lambda: MMHAL_DIR, llm_judge=True), id="mmhal", marks=_FULL),
    # CHAIR had no limit of its own: every listed image was scored.
    pytest.param(
        Case("chair", lambda: CHAIR_DIR, (f"ids={DECO_CAPTIONS}", "tagger=perceptron")), id="chair", marks=_FULL
    ),
]


@pytest.fixture(autouse=True)
def no_endpoint_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HALLUSCOPE_LLM_MODEL", "HALLUSCOPE_BASE_URL", "OPENAI_BASE_URL", "HALLUSCOPE_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def invoke(*args: str) -> Any:
    from halluscope.cli.main import app

    return CliRunner().invoke(app, list(args), terminal_width=200)


def said(result: Any) -> str:
    return " ".join(result.output.split())


def records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines() if line.strip()]


def assert_scored(out: Path, n: int = N) -> None:
    """``out`` holds a run of ``n`` samples, each with an answer; its counts and spec.json say ``n``."""
    scored = records(out)
    assert len(scored) == n, [r["id"] for r in scored]
    assert all(r["response"] is not None for r in scored), [r["failure"] for r in scored]
    assert not any("no response" in str(r.get("failure")) for r in scored)
    counts = json.loads((out / "metrics.json").read_text())["counts"]
    assert counts["samples"] == n
    assert counts.get("no_response", 0) == 0
    spec = json.loads((out / "spec.json").read_text())
    assert spec["benchmark"]["limit"] == n and spec["benchmark"]["selected_samples"] == n
    assert spec["run"]["limit"] == n


def every_id(case: Case) -> list[str]:
    """The ids of the whole benchmark, in its order (the runs below select from these)."""
    from halluscope.benchmarks import BENCHMARKS

    return [s.id for s in BENCHMARKS.create(case.benchmark, data=case.data(), **case.bench_options()).samples()]


def judge_flags(case: Case, judge: ScriptedServer) -> list[str]:
    return ["--judge-model", "m", "--base-url", judge.base_url] if case.llm_judge else []


@pytest.mark.parametrize("case", CASES)
def test_a_model_run_with_limit_3_asks_3_questions_and_scores_them(case: Case, tmp_path: Path) -> None:
    out = tmp_path / "run"
    with (
        ScriptedServer(responder=lambda body: completion("Yes.")) as vlm,
        ScriptedServer(responder=lambda body: completion("It matches.\nRating: 4")) as judge,
    ):
        result = invoke(
            "run", *case.flags(), "--limit", str(N), "--model", f"blind/openai/vlm?base_url={vlm.base_url}",
            *judge_flags(case, judge), "--out", str(out), "--no-cache", "-q",
        )  # fmt: skip
        asked = vlm.chat_requests()
    assert result.exit_code == 0, result.output
    assert len(asked) == N
    assert "no response" not in said(result)
    assert_scored(out)
    first = every_id(case)[:N]
    assert [r["id"] for r in records(out)] == first  # the first N in the benchmark's order
    collected = [json.loads(line)["id"] for line in (out / "responses.jsonl").read_text().splitlines()]
    assert sorted(collected) == sorted(first)


@pytest.mark.parametrize("case", CASES)
def test_a_responses_run_with_limit_3_scores_3_samples(case: Case, tmp_path: Path) -> None:
    ids = every_id(case)
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"id": i, "response": "Yes."}) + "\n" for i in ids), encoding="utf-8")
    out = tmp_path / "run"
    with ScriptedServer(responder=lambda body: completion("It matches.\nRating: 4")) as judge:
        result = invoke(
            "run", *case.flags(), "--limit", str(N), "-r", str(answers), *judge_flags(case, judge),
            "--out", str(out), "--no-cache", "-q",
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert_scored(out)
    assert [r["id"] for r in records(out)] == ids[:N]


def test_respond_then_run_use_the_same_3_pope_questions(tmp_path: Path) -> None:
    """``halluscope respond --limit 3`` asks what ``halluscope run --limit 3`` scores."""
    out = tmp_path / "answers"
    with ScriptedServer(responder=lambda body: completion("No.")) as vlm:
        result = invoke(
            "respond", "-b", "pope", "--data", str(POPE_EXCERPT), "--limit", str(N), "--out", str(out),
            "-m", f"blind/openai/vlm?base_url={vlm.base_url}", "--no-cache", "-q",
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        assert len(vlm.chat_requests()) == N
    assert f"{N} of {N} answered" in said(result)
    run = tmp_path / "run"
    result = invoke(
        "run", "-b", "pope", "--data", str(POPE_EXCERPT), "--limit", str(N), "-r", str(out / "responses.jsonl"),
        "--out", str(run), "--no-cache", "-q",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "no response" not in said(result)
    assert_scored(run)


def test_the_old_bench_opt_limit_is_the_run_limit(tmp_path: Path) -> None:
    """``--bench-opt limit=3`` (once POPE's per-set limit) selects the run's first 3 samples, with a note."""
    with ScriptedServer(responder=lambda body: completion("Yes.")) as vlm:
        result = invoke(
            "run", "-b", "pope", "--data", str(POPE_EXCERPT), "--bench-opt", f"limit={N}",
            "--model", f"blind/openai/vlm?base_url={vlm.base_url}", "--out", str(tmp_path / "run"), "--no-cache",
            "-q",
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        assert len(vlm.chat_requests()) == N
    assert f"write --limit {N}" in said(result)
    assert_scored(tmp_path / "run")

    both = invoke(
        "run", "-b", "pope", "--data", str(POPE_EXCERPT), "--bench-opt", "limit=5", "--limit", "3",
        "-r", str(tmp_path / "run" / "responses.jsonl"), "--out", str(tmp_path / "other"), "--no-cache", "-q",
    )  # fmt: skip
    assert both.exit_code == 2
    assert "--bench-opt limit=5 and --limit 3 disagree" in said(both)
    assert "Traceback" not in both.output and not (tmp_path / "other" / "spec.json").exists()


def test_evaluate_with_limit_scores_the_first_samples(tmp_path: Path) -> None:
    import halluscope

    answers = [{"id": i, "response": "Yes."} for i in every_id(Case("pope", lambda: POPE_EXCERPT))]
    result = halluscope.evaluate(
        "pope", data=POPE_EXCERPT, responses=answers, limit=N, out=tmp_path / "run", cache=False, progress=False
    )
    assert result.counts["samples"] == N and result.counts["no_response"] == 0
    assert_scored(tmp_path / "run")


def test_only_answered_leaves_out_the_unanswered_among_the_first_n(tmp_path: Path) -> None:
    """``--limit 3 --only-answered``: of the first 3 samples, those the file answers (the limit comes first)."""
    ids = every_id(Case("pope", lambda: POPE_EXCERPT))
    answers = tmp_path / "answers.jsonl"
    answered = [ids[1], *ids[N:]]  # the first and third are not answered
    answers.write_text("".join(json.dumps({"id": i, "response": "Yes."}) + "\n" for i in answered))
    result = invoke(
        "run", "-b", "pope", "--data", str(POPE_EXCERPT), "--limit", str(N), "-r", str(answers), "--only-answered",
        "--out", str(tmp_path / "run"), "--no-cache", "-q",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert [r["id"] for r in records(tmp_path / "run")] == [ids[1]]


def test_a_limit_below_one_is_refused_in_one_line(tmp_path: Path) -> None:
    """``--limit 0`` once meant "no limit" to POPE: a green run over every sample. It is refused."""
    answers = tmp_path / "a.jsonl"
    answers.write_text(json.dumps({"id": "coco-random-1", "response": "Yes."}) + "\n")
    result = invoke(
        "run", "-b", "pope", "--data", str(POPE_EXCERPT), "--limit", "0", "-r", str(answers),
        "--out", str(tmp_path / "run"), "--no-cache", "-q",
    )  # fmt: skip
    assert result.exit_code == 2
    assert "--limit must be at least 1, got 0" in said(result) and "Traceback" not in result.output
    assert not (tmp_path / "run" / "samples.jsonl").exists()


def test_another_limit_in_the_same_out_is_refused_before_the_model_is_asked(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with ScriptedServer(responder=lambda body: completion("Yes.")) as vlm:
        model = f"blind/openai/vlm?base_url={vlm.base_url}"
        first = invoke("run", "-b", "pope", "--data", str(POPE_EXCERPT), "--limit", "2", "--model", model,
                       "--out", str(out), "--no-cache", "-q")  # fmt: skip
        assert first.exit_code == 0, first.output
        again = invoke("run", "-b", "pope", "--data", str(POPE_EXCERPT), "--limit", "3", "--model", model,
                       "--out", str(out), "--no-cache", "-q")  # fmt: skip
        asked = len(vlm.chat_requests())
    assert again.exit_code == 2
    assert "limit: 2 there, 3 now" in said(again)
    assert asked == 2  # nothing asked for a run that would then be refused
    assert_scored(out, 2)
