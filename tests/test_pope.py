"""POPE: paper mode equals the official script on every item; robust mode reads answers as a person would."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from halluscope.benchmarks import BENCHMARKS, ScoringContext
from halluscope.benchmarks.closed import ClosedDataError
from halluscope.benchmarks.pope import Pope, pope_paper_rule
from halluscope.cache import Cache
from halluscope.runs.runner import run_benchmark
from halluscope.runs.selection import first_samples
from halluscope.types import Response
from tests.paths import POPE_DIR as POPE_FULL
from tests.paths import POPE_EXCERPT as POPE_DIR

TRICKY = [
    "Yes, there is a dog in the image.",
    "There is no dog.",
    "No, there is not.",
    "No.",
    "no",
    "NO",
    "Nope.",
    "I can't tell from this image.",
    "I cannot tell.",
    "",
    "yes.",
    "Yes",
    "There is not a single dog, but a cat.",
    "Not sure. It might be.",
    "The answer is no",
    "Yes, no doubt.",
    "no, there isn't",
]


def official_rule(text: str) -> str:
    """A plain transcription of POPE's evaluate.py, line by line."""
    if text.find(".") != -1:
        text = text.split(".")[0]
    text = text.replace(",", "")
    words = text.split(" ")
    if "No" in words or "not" in words or "no" in words:
        return "no"
    return "yes"


def official_metrics(answers: list[str], labels: list[str]) -> dict[str, float]:
    preds = [0 if official_rule(a) == "no" else 1 for a in answers]
    gold = [0 if label == "no" else 1 for label in labels]
    tp = sum(1 for p, g in zip(preds, gold, strict=True) if p == 1 and g == 1)
    fp = sum(1 for p, g in zip(preds, gold, strict=True) if p == 1 and g == 0)
    tn = sum(1 for p, g in zip(preds, gold, strict=True) if p == 0 and g == 0)
    fn = sum(1 for p, g in zip(preds, gold, strict=True) if p == 0 and g == 1)
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    return {
        "accuracy": (tp + tn) / len(preds),
        "precision": precision,
        "recall": recall,
        "f1": 2 * precision * recall / (precision + recall),
        "yes_ratio": preds.count(1) / len(preds),
    }


@pytest.mark.parametrize("answer", TRICKY)
def test_paper_rule_is_the_official_rule(answer: str) -> None:
    assert pope_paper_rule(answer) == official_rule(answer)


def test_robust_mode_reads_the_answers_the_paper_rule_misreads() -> None:
    from halluscope.judges.answers import parse_yes_no

    assert pope_paper_rule("I cannot tell.") == "yes"
    assert parse_yes_no("I cannot tell.").value is None
    assert pope_paper_rule("NO") == "yes"
    assert parse_yes_no("NO").value == "no"
    assert parse_yes_no("Yes, there is a dog in the image.").value == "yes"
    assert parse_yes_no("There is no dog.").value == "no"


def _answers_for(rows: list[dict[str, object]]) -> list[str]:
    return [TRICKY[i % len(TRICKY)] if i % 3 == 0 else str(r["label"]).capitalize() + "." for i, r in enumerate(rows)]


@pytest.mark.parametrize(("data", "size"), [(POPE_DIR, 60), pytest.param(POPE_FULL, 3000, marks=pytest.mark.full_data)])
def test_paper_metrics_equal_the_official_script_on_a_real_set(tmp_path: Path, data: Path, size: int) -> None:
    bench = Pope(data, sources=["gqa"], settings=["adversarial"], mode="paper")
    rows = bench.rows[("gqa", "adversarial")]
    answers = _answers_for(rows)
    responses = {
        s.id: Response(id=s.id, response=a) for s, a in zip(bench.samples(), answers, strict=True)
    }
    report = run_benchmark(bench, responses, ScoringContext(cache=Cache(None)), tmp_path / "run",
                           show_progress=False)
    expected = official_metrics(answers, [str(r["label"]) for r in rows])
    for key, value in expected.items():
        assert report.metrics[f"paper_{key}"] == pytest.approx(100 * value)
        assert report.metrics[key] == pytest.approx(100 * value)  # mode=paper: the headline is paper
    assert report.counts["scored"] == size
    assert report.counts["mode_disagreements"] > 0
    assert set(report.groups) == {"gqa/adversarial"}


def test_robust_mode_counts_refusals_as_unanswered_and_yes_ratio_from_predictions() -> None:
    bench = Pope(POPE_DIR, sources=["coco"], settings=["random"])
    samples = list(first_samples(bench, 4).samples())
    answers = ["I can't tell.", "Yes, there is.", "Yes", "There is no such thing."]
    records = asyncio.run(
        bench.score_many(
            [(s, Response(id=s.id, response=a)) for s, a in zip(samples, answers, strict=True)],
            ScoringContext(cache=Cache(None)),
        )
    )
    report = bench.metrics(records)
    assert report.counts["unanswered"] == 1
    assert report.metrics["yes_ratio"] == pytest.approx(100 * 2 / 3)  # of the three answered
    assert report.metrics["paper_yes_ratio"] == pytest.approx(75.0)  # "I can't tell" is a yes there
    assert samples[0].id == "coco-random-1"


def test_ids_selection_and_registry() -> None:
    bench = BENCHMARKS.create("pope", data=POPE_DIR, sources="coco,aokvqa", settings="popular")
    ids = [s.id for s in bench.samples()]
    sets = [i.rsplit("-", 1)[0] for i in ids]
    assert ids[0] == "coco-popular-1" and "aokvqa-popular" in sets
    assert sets == sorted(sets, key=["coco-popular", "aokvqa-popular"].index)  # one set after the other
    # A run's --limit takes the first N of that order, not N per set.
    assert [s.id for s in first_samples(bench, 5).samples()] == ids[:5]
    with pytest.raises(ValueError, match=r"unknown option.*limit.*the run's --limit N"):
        BENCHMARKS.create("pope", data=POPE_DIR, limit=5)
    with pytest.raises(ValueError, match="unknown POPE source"):
        BENCHMARKS.create("pope", data=POPE_DIR, sources="coco,nocaps")
    with pytest.raises(ValueError, match="unknown option"):
        BENCHMARKS.create("pope", data=POPE_DIR, setting="random")


def test_official_answer_layout_follows_one_question_file(tmp_path: Path) -> None:
    bench = Pope(POPE_DIR, sources=["coco"], settings=["random"])
    rows = bench.rows[("coco", "random")]
    path = tmp_path / "answers.json"
    lines = [{"question": rows[0]["text"], "answer": "yes"}, {"question": "Is there a unicorn in the image?",
             "answer": "no"}, {"question": rows[2]["text"], "answer": "No, there is not."}]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    result = bench.read_responses(path)
    assert sorted(result.responses) == ["coco-random-1", "coco-random-3"]
    assert any("line 2" in p and "does not match" in p for p in result.problems)
    both = Pope(POPE_DIR, sources=["coco"], settings=["random", "popular"])
    with pytest.raises(ClosedDataError, match="ONE question file"):
        both.read_responses(path)


def test_official_answer_example_file_is_read() -> None:
    bench = Pope(POPE_DIR, sources=["coco"], settings=["random"])
    result = bench.read_responses(POPE_DIR / "answer_example.json")
    # The example's first question is not question 1 of coco random: it is reported, not silently paired.
    assert result.responses or result.problems


def test_missing_data_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ClosedDataError, match="holds no POPE set"):
        Pope(tmp_path)
    broken = tmp_path / "coco"
    broken.mkdir()
    (broken / "coco_pope_random.json").write_text('{"question_id": 1, "text": "Is there a cat?"}\n')
    bench = Pope(tmp_path)
    with pytest.raises(ClosedDataError, match="item 0: missing field"):
        list(bench.samples())


def test_quality_reads_pope_runs_and_counts_existence(tmp_path: Path) -> None:
    """HQM accepts POPE runs: a test-retest correlation across models and POPE in the coverage table."""
    import random

    from halluscope.quality.assess import assess

    bench = Pope(POPE_DIR, sources=["coco"], settings=["random"])
    chosen = first_samples(bench, 60)
    samples = list(chosen.samples())
    for rep in ("a", "b"):
        for k, accuracy in enumerate((0.95, 0.8, 0.65, 0.5)):
            rng = random.Random(f"{rep}{k}")
            responses = {}
            for s in samples:
                right = rng.random() < accuracy
                label = s.metadata["label"] if right else ("no" if s.metadata["label"] == "yes" else "yes")
                responses[s.id] = Response(id=s.id, response=label.capitalize() + ".")
            run_benchmark(bench, responses, ScoringContext(cache=Cache(None)), tmp_path / rep / f"m{k}",
                          show_progress=False, selection=chosen)
    report = assess([str(tmp_path / "a")], "accuracy", retest=[str(tmp_path / "b")], resamples=200)
    dumped = report.model_dump()
    assert "pope" in json.dumps(dumped)
    (column,) = [c for c in dumped["coverage"]["benchmarks"] if c["benchmark"] == "pope"]
    assert column["counts"] == {"object": 60}
