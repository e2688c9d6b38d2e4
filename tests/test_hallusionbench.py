"""HallusionBench: ids, official metric arithmetic, the official result layout, the LLM grader's mapping."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from halluscope.benchmarks import ScoringContext
from halluscope.benchmarks.hallusionbench import HallusionBench
from halluscope.cache import Cache
from halluscope.judges.hallusionbench import HallusionGrade, HallusionItem, LLMGrader, correctness_from_reply
from halluscope.metrics.hallusionbench import hallusion_scores
from halluscope.runs.runner import run_benchmark
from halluscope.runs.selection import first_samples
from halluscope.stages import Failure
from halluscope.types import Response
from tests.paths import HALLUSIONBENCH_DIR, HALLUSIONBENCH_EXCERPT
from tests.scripted_server import ScriptedServer, completion, error

HB_DIR = HALLUSIONBENCH_EXCERPT
BOTH = [HB_DIR, pytest.param(HALLUSIONBENCH_DIR, marks=pytest.mark.full_data)]  # the excerpt, and every item


def official_scores(rows: list[dict[str, str]]) -> dict[str, float]:
    """A plain transcription of the official utils.py arithmetic (assign_correctness, eval_all/pair/fig)."""
    for r in rows:
        code = int(r["correctness"])
        if r["category"] == "VS" and int(r["figure_id"]) == 0:
            r["correct"] = 1 if code in (1, 2) else 0
        else:
            r["correct"] = 1 if code == 1 else 0

    def pairs(keep: object) -> float:
        groups: dict[str, tuple[int, int]] = {}
        for r in rows:
            if keep == "easy" and str(r["figure_id"]) != "0":
                continue
            if keep == "hard" and str(r["figure_id"]) == "0":
                continue
            name = "_".join([r["category"], r["subcategory"], str(r["set_id"]), str(r["question_id"])])
            c, t = groups.get(name, (0, 0))
            groups[name] = (c + r["correct"], t + 1)
        return 100 * sum(1 for c, t in groups.values() if c == t) / len(groups)

    figs: dict[str, tuple[int, int]] = {}
    for r in rows:
        if r["category"] == "VS" and str(r["figure_id"]) == "0":
            continue
        name = "_".join([r["category"], r["subcategory"], str(r["set_id"]), str(r["figure_id"])])
        c, t = figs.get(name, (0, 0))
        figs[name] = (c + r["correct"], t + 1)
    return {
        "aAcc": 100 * sum(r["correct"] for r in rows) / len(rows),
        "qAcc": pairs(None),
        "fAcc": 100 * sum(1 for c, t in figs.values() if c == t) / len(figs),
        "easy_qAcc": pairs("easy"),
        "hard_qAcc": pairs("hard"),
    }


@pytest.mark.parametrize("data", BOTH)
def test_scores_equal_the_official_arithmetic_on_every_item(data: Path) -> None:
    raw = json.loads((data / "HallusionBench.json").read_text(encoding="utf-8"))
    rows = [{**r, "correctness": str((i * 7) % 3)} for i, r in enumerate(raw)]
    ours = hallusion_scores([dict(r) for r in rows])
    expected = official_scores([dict(r) for r in rows])
    for key, value in expected.items():
        assert ours[key] == pytest.approx(value), key


@pytest.mark.parametrize(("data", "answered", "total"), [
    (HB_DIR, 106, 127), pytest.param(HALLUSIONBENCH_DIR, 254, 1129, marks=pytest.mark.full_data)])
def test_result_sample_is_read_and_scored(tmp_path: Path, data: Path, answered: int, total: int) -> None:
    bench = HallusionBench(data)
    answers = bench.read_responses(data / "HallusionBench_result_sample.json")
    assert len(answers.responses) == answered and not answers.problems
    assert "VD-illusion-0-0-0" in answers.responses
    report = run_benchmark(bench, answers.responses, ScoringContext(cache=Cache(None)), tmp_path / "run",
                           show_progress=False)
    assert report.counts["scored"] == answered
    assert report.counts["no_response"] == total - answered
    for key in ("aAcc", "qAcc", "fAcc", "easy_qAcc", "hard_qAcc"):
        assert report.metrics[key] is not None and 0 <= report.metrics[key] <= 100
    assert report.metrics["qAcc"] <= report.metrics["aAcc"]
    assert set(report.groups) == {"VD", "VS"}
    wrong_pairs = report.counts["language_hallucination"] + report.counts["visual_illusion"] + report.counts["mixed"]
    assert wrong_pairs > 0


def test_parser_codes_refusals_as_unclear() -> None:
    bench = HallusionBench(HB_DIR)
    samples = list(first_samples(bench, 3).samples())
    label = samples[0].metadata["label"]
    wrong = "no" if label == "yes" else "yes"
    answers = [f"{label.capitalize()}, that is right.", f"{wrong.capitalize()}.", "I cannot tell from the figure."]
    records = asyncio.run(bench.score_many(
        [(s, Response(id=s.id, response=a)) for s, a in zip(samples, answers, strict=False)],
        ScoringContext(cache=Cache(None)),
    ))
    codes = [(r.model_extra or {})["correctness"] for r in records]
    assert codes[0] == 1 and codes[2] == 2


@pytest.mark.parametrize(
    ("reply", "code"),
    [("correct", 1), ("Incorrect.", 0), ("The prediction is correct", 1), ("unclear", 2), ("", None),
     ("not incorrect", 0), ("<think>Is it correct? The figure", None), ("<think>maybe incorrect</think>", None),
     ("<think>it conflicts, so not correct</think>\nincorrect", 0), ("<think>hmm</think> Correct", 1),
     ("I cannot say.", None)],
)
def test_grader_reply_mapping_is_the_official_one(reply: str, code: int | None) -> None:
    """The official words, read outside ``<think>`` blocks; a reply naming none of them is no verdict."""
    assert correctness_from_reply(reply) == code


def test_llm_grader_reads_replies_and_failures_stay_unjudged(scripted_server: ScriptedServer) -> None:
    scripted_server.push(completion("Incorrect"), completion("correct"))
    judge = LLMGrader(model="grader", base_url=scripted_server.base_url, concurrency=1)
    verdicts = asyncio.run(judge.grade_many([HallusionItem("Is it red?", "It is blue.", "no", "Yes, red."),
                                             HallusionItem("Is it blue?", "It is blue.", "yes", "Yes.")]))
    assert verdicts == [HallusionGrade(0), HallusionGrade(1)]
    scripted_server.push(*[error(503, "busy") for _ in range(10)])
    judge = LLMGrader(model="grader", base_url=scripted_server.base_url, timeout_s=2, max_retries=1)
    judge.client.backoff_s = 0.01
    (failed,) = asyncio.run(judge.grade_many([HallusionItem("Is it?", "Yes.", "yes", "Yes.")]))
    assert isinstance(failed, Failure) and "judge failed" in failed.reason


def test_garbled_grader_replies_are_unjudged_and_asked_again(tmp_path: Path) -> None:
    """VS questions asked without a figure (figure_id 0), where "unclear" counts as correct: an empty, a
    cut-off and a still-thinking reply must not become "unclear". They leave their items unjudged (the run
    fails on the judge's share), are not cached, and the next run asks again."""
    from halluscope.runs.runner import StageFailureError

    bench = HallusionBench(HB_DIR, categories=["VS"])
    chosen = first_samples(bench, 4)
    samples = list(chosen.samples())
    assert {s.metadata["figure_id"] for s in samples} == {"0"}
    answers = {s.id: Response(id=s.id, response=f"answer {i}") for i, s in enumerate(samples)}
    garbled = {
        "answer 0": completion(""),
        "answer 1": completion("<think>The reference says the value rose, and the predic", finish_reason="length"),
        "answer 2": completion("corr", finish_reason="length"),
    }
    state = {"fixed": False}

    def respond(body: object) -> object:
        prompt = str(body["messages"][-1]["content"])  # type: ignore[index]
        which = next(a for a in (f"answer {i}" for i in range(4)) if f"Predicted answer: {a}" in prompt)
        return completion("incorrect") if state["fixed"] or which not in garbled else garbled[which]

    cache, out = Cache(tmp_path / "cache.sqlite"), tmp_path / "run"
    with ScriptedServer(responder=respond) as server:  # type: ignore[arg-type]
        ctx = ScoringContext(cache=cache, judge=LLMGrader(model="grader", base_url=server.base_url))
        with pytest.raises(StageFailureError) as caught:
            run_benchmark(bench, answers, ctx, out, show_progress=False, selection=chosen)
        assert (caught.value.stage, caught.value.failed, caught.value.reached) == ("judge", 3, 4)
        report = caught.value.report
        assert report.counts["scored"] == 1 and report.counts["unclear"] == 0
        assert report.metrics["aAcc"] == 0.0  # the one judged answer is wrong; nothing counted as correct
        records = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
        assert [r["failed_stage"] for r in records] == ["judge", "judge", "judge", None]
        assert "no verdict" in records[0]["failure"] and "cut off" in records[1]["failure"]

        sent = len(server.chat_requests())
        state["fixed"] = True
        ctx = ScoringContext(cache=cache, judge=LLMGrader(model="grader", base_url=server.base_url))
        again = run_benchmark(bench, answers, ctx, out, show_progress=False, selection=chosen)
        assert len(server.chat_requests()) == sent + 3  # the three garbled replies were not kept
    assert again.counts["scored"] == 4 and again.metrics["aAcc"] == 0.0
