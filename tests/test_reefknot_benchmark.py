"""The Reefknot benchmark on the official data: loading, selection, images, both scoring modes, responses in
Reefknot's own layout, and a full run through the runner."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest

from halluscope.benchmarks import BENCHMARKS, ScoringContext
from halluscope.benchmarks.reefknot import (
    Reefknot,
    ReefknotDataError,
    is_reefknot_jsonl,
    load_reefknot_responses,
)
from halluscope.cache import Cache
from halluscope.judges.entailment import FunctionEntailment
from halluscope.responses import ResponsesError
from halluscope.runs.runner import run_benchmark
from halluscope.runs.selection import every_sample, first_samples
from halluscope.types import Response, Sample
from tests.paths import REEFKNOT_DIR


def exact_match(premise: str, hypothesis: str) -> bool:
    """A scripted entailment: two statements entail each other when equal up to case and final period."""
    return premise.lower().strip(" .") == hypothesis.lower().strip(" .")


@pytest.fixture(scope="module")
def official() -> Reefknot:
    return Reefknot(data=REEFKNOT_DIR, entailment=FunctionEntailment(exact_match))


@pytest.fixture(scope="module")
def samples(official: Reefknot) -> dict[str, Sample]:
    return {s.id: s for s in official.samples()}


def ctx() -> ScoringContext:
    return ScoringContext(cache=Cache(None))


@pytest.mark.full_data
def test_official_counts_ids_and_twins(samples: dict[str, Sample]) -> None:
    tasks = Counter(s.metadata["task"] for s in samples.values())
    assert tasks == {"yesno": 9740, "mcq": 6950, "vqa": 4870}
    assert len(samples) == 21560
    by_type = Counter((s.metadata["task"], s.metadata["relation_type"]) for s in samples.values())
    assert by_type[("yesno", "perception")] == 4300 and by_type[("mcq", "cognitive")] == 4800
    first = samples["yesno-0"]
    assert first.prompt.startswith("Is the bus driver on bus") and first.reference == "yes"
    assert first.metadata["pair"] == 0 and first.metadata["twin"] == "yesno-1"
    assert samples["yesno-1"].metadata["pair"] == 0 and samples["yesno-1"].metadata["role"] == "negative"
    assert all(
        s.metadata.get("pair") == int(s.id.split("-")[1]) // 2
        for s in samples.values()
        if s.metadata["task"] == "yesno"
    )
    mcq = [s for s in samples.values() if s.metadata["task"] == "mcq"]
    assert all(len(s.metadata["options"]) == 4 and s.metadata["answer_text"] for s in mcq)
    assert samples["mcq-0"].metadata["options"] == {"A": "behind", "B": "onto", "C": "on", "D": "into"}
    vqa = [s for s in samples.values() if s.metadata["task"] == "vqa"]
    assert all(s.metadata.get("subject") and s.metadata.get("object") for s in vqa)
    assert samples["vqa-1"].metadata["copula"] == "are"


@pytest.mark.full_data
def test_selection_by_task_relation_type_and_limit() -> None:
    bench = BENCHMARKS.create("reefknot", data=REEFKNOT_DIR, tasks="yesno,vqa", relation_types="perceptive")
    chosen = list(bench.samples())
    assert {s.metadata["relation_type"] for s in chosen} == {"perception"}
    assert set(Counter(s.metadata["task"] for s in chosen)) == {"yesno", "vqa"}
    pairs = Counter(s.metadata["pair"] for s in chosen if s.metadata["task"] == "yesno")
    assert set(pairs.values()) == {2}  # a relation type keeps whole twin pairs
    # A run's --limit takes the first N in this order (yes/no before VQA), not a share of each task.
    first = list(first_samples(bench, 11).samples())
    assert [s.id for s in first] == [s.id for s in chosen[:11]] and {s.metadata["task"] for s in first} == {"yesno"}
    with pytest.raises(ValueError, match="Reefknot benchmark: unknown option"):
        BENCHMARKS.create("reefknot", data=REEFKNOT_DIR, colour="red")
    with pytest.raises(ValueError, match="unknown Reefknot task"):
        Reefknot(data=REEFKNOT_DIR, tasks=["captioning"])


def test_bad_data_is_named(tmp_path: Path) -> None:
    with pytest.raises(ReefknotDataError, match="holds none of"):
        Reefknot(data=tmp_path)
    (tmp_path / "VQA.jsonl").write_text(
        '{"image_id": "1", "query_prompt": "q", "label": "x"}\n{"image_id": 2}\n'
    )
    bench = Reefknot(data=tmp_path)
    with pytest.raises(ReefknotDataError, match=r"VQA.jsonl line 2: missing or invalid field 'query_prompt'"):
        list(bench.samples())


@pytest.mark.full_data
def test_visual_genome_images_are_found_in_either_folder(tmp_path: Path) -> None:
    (tmp_path / "VG_100K").mkdir()
    (tmp_path / "VG_100K_2").mkdir()
    (tmp_path / "VG_100K" / "1592267.jpg").write_bytes(b"jpeg")
    (tmp_path / "VG_100K_2" / "2391735.jpg").write_bytes(b"jpeg")
    bench = Reefknot(data=REEFKNOT_DIR, images=tmp_path)
    found = {s.id: s.image_path for s in bench.samples()}
    assert found["yesno-0"] == str(tmp_path / "VG_100K" / "1592267.jpg")
    assert found["mcq-0"] == str(tmp_path / "VG_100K_2" / "2391735.jpg")
    # not on disk: fine when responses are supplied; the path looked for is named when a model is asked
    assert found["vqa-0"] == str(tmp_path / "713858.jpg") and not (tmp_path / "713858.jpg").exists()


@pytest.mark.full_data
async def test_both_modes_on_the_official_rules_known_failures(
    official: Reefknot, samples: dict[str, Sample]
) -> None:
    answers = {
        "yesno-0": "Yes, the driver is on the bus.",  # label yes
        "yesno-1": "No, the driver's eyes are on the road.",  # label no; "eyes" fools the official rule
        "yesno-2": "I cannot tell from this image.",  # label yes; a refusal
        "mcq-0": " D",  # label D; leading space fools the official rule
        "mcq-1": "The answer is B.",  # label B
        "mcq-2": "C",  # label C
        "vqa-0": "bag is on ground.",  # the label itself
        "vqa-1": "On",  # a bare relation: put into the template "stripes are on kite."
        "vqa-2": "I'm not sure.",
    }
    pairs = [(samples[i], Response(id=i, response=text)) for i, text in answers.items()]
    pairs.append((samples["yesno-3"], None))
    records = {r.id: r for r in await official.score_many(pairs, ctx())}
    got = {i: (r.paper_correct, r.robust_correct) for i, r in records.items()}  # type: ignore[attr-defined]
    assert got == {
        "yesno-0": (True, True),
        "yesno-1": (False, True),
        "yesno-2": (False, None),
        "mcq-0": (False, True),
        "mcq-1": (False, True),
        "mcq-2": (True, True),
        "vqa-0": (True, True),
        "vqa-1": (False, True),
        "vqa-2": (False, None),
        "yesno-3": (None, None),
    }
    assert records["yesno-1"].prediction == "no" and records["yesno-1"].paper_prediction == "yes"  # type: ignore[attr-defined]
    assert records["yesno-2"].correct is None and records["yesno-2"].parse == "refusal"  # type: ignore[attr-defined]
    assert records["yesno-3"].failure == "no response for this sample"
    report = official.metrics(list(records.values()))
    assert report.counts["mode_disagreements"] == 6
    assert report.counts["unanswered"] == 2 and report.counts["missing_response"] == 1
    assert report.metrics["halr_yesno"] == pytest.approx(0.0)
    assert report.details["modes"]["paper"]["halr_yesno"] == pytest.approx(100 * 2 / 3)


@pytest.mark.full_data
async def test_paper_mode_makes_the_official_rule_the_score(samples: dict[str, Sample]) -> None:
    paper = Reefknot(data=REEFKNOT_DIR, mode="paper", entailment=FunctionEntailment(exact_match))
    records = await paper.score_many(
        [(samples["yesno-1"], Response(id="yesno-1", response="No, eyes closed."))], ctx()
    )
    assert records[0].correct is False and records[0].prediction == "yes"  # type: ignore[attr-defined]
    assert paper.spec()["mode"] == "paper"


def write_reefknot_lines(
    path: Path,
    source: Path,
    lines: list[int],
    answers: dict[int, str],
    extra: dict[int, dict[str, float]] | None = None,
) -> None:
    rows = [json.loads(text) for text in source.read_text(encoding="utf-8").splitlines()]
    with path.open("w", encoding="utf-8") as handle:
        for line in lines:
            row = dict(
                rows[line], response=answers[line], mllm_name="tiny-vlm", **(extra or {}).get(line, {})
            )
            handle.write(json.dumps(row) + "\n")


@pytest.mark.full_data
def test_reefknot_layout_responses_match_by_line_or_by_content(tmp_path: Path, official: Reefknot) -> None:
    yes_no = REEFKNOT_DIR / "YESNO.jsonl"
    in_order = tmp_path / "YESNO.jsonl"
    write_reefknot_lines(
        in_order, yes_no, [0, 1], {0: "Yes", 1: "No"}, {0: {"yes_prob": 0.9, "no_prob": 0.05}}
    )
    loaded = official.read_responses(in_order, benchmark_ids={"yesno-0", "yesno-1", "mcq-0"})
    assert set(loaded.responses) == {"yesno-0", "yesno-1"}
    assert loaded.responses["yesno-0"].metadata == {"yes_prob": 0.9, "no_prob": 0.05}
    assert loaded.responses["yesno-0"].model == "tiny-vlm"

    # A file with only some lines (the official scripts split by relation type) still matches by content.
    subset = tmp_path / "cognitive_yesno.jsonl"
    cognitive = [
        i for i, s in enumerate(official.official_rows["yesno"]) if s["relation_type"] == "cognitive"
    ][:3]
    write_reefknot_lines(subset, yes_no, cognitive, dict.fromkeys(cognitive, "yes"))
    matched = load_reefknot_responses(subset, official=official.official_rows)
    assert set(matched.responses) == {f"yesno-{i}" for i in cognitive}
    assert not matched.problems

    # Without the official data, the line number alone names the sample.
    assert set(load_reefknot_responses(subset).responses) == {"yesno-0", "yesno-1", "yesno-2"}

    stray = tmp_path / "stray.jsonl"
    stray.write_text(
        json.dumps(
            {
                "image_id": "1",
                "query_prompt": "Is the cat on the moon?",
                "label": "yes",
                "type": "Yes/No",
                "response": "yes",
            }
        )
        + "\n"
        + in_order.read_text(encoding="utf-8").splitlines()[0]
        + "\n"
    )
    partial = load_reefknot_responses(stray, official=official.official_rows)
    assert any("stray.jsonl line 1: no Yes/No question" in p for p in partial.problems)
    assert set(partial.responses) == {"yesno-0"}


@pytest.mark.full_data
def test_unanswered_reefknot_files_and_format_detection(tmp_path: Path) -> None:
    assert is_reefknot_jsonl(REEFKNOT_DIR / "VQA.jsonl")
    ours = tmp_path / "ours.jsonl"
    ours.write_text(json.dumps({"id": "vqa-0", "response": "bag is on ground."}) + "\n")
    assert not is_reefknot_jsonl(ours)
    with pytest.raises(ResponsesError, match="no line has its 'response' filled in"):
        load_reefknot_responses(REEFKNOT_DIR / "VQA.jsonl")


@pytest.mark.full_data
def test_probabilities_in_responses_give_entropy_on_records(
    official: Reefknot, samples: dict[str, Sample]
) -> None:
    response = Response(id="yesno-0", response="Yes", metadata={"yes_prob": 0.5, "no_prob": 0.5})
    record = asyncio.run(official.score_many([(samples["yesno-0"], response)], ctx()))[0]
    assert record.answer_probs == {"yes": 0.5, "no": 0.5}  # type: ignore[attr-defined]
    assert record.entropy == pytest.approx(1.0)  # type: ignore[attr-defined]


@pytest.mark.full_data
def test_a_full_run_writes_reefknot_metrics(tmp_path: Path) -> None:
    whole = Reefknot(data=REEFKNOT_DIR, entailment=FunctionEntailment(exact_match))
    by_task: dict[str, list[str]] = {}
    for sample in whole.samples():
        by_task.setdefault(sample.metadata["task"], []).append(sample.id)
    chosen = every_sample(whole).answered([i for ids in by_task.values() for i in ids[:10]])  # 10 of each task
    answers = {}
    for sample in chosen.samples():
        meta = sample.metadata
        if meta["task"] == "yesno":
            text = "Yes." if meta["role"] == "positive" else "Yes, it is."  # a yes-sayer
        elif meta["task"] == "mcq":
            text = f"{meta['label']}. {meta['answer_text']}"
        else:
            text = str(meta["label"])
        answers[sample.id] = Response(id=sample.id, response=text)
    report = run_benchmark(whole, answers, ctx(), tmp_path / "run", show_progress=False, selection=chosen)
    saved = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert saved["benchmark"] == "reefknot"
    assert saved["groups"]["yesno/perception"]["halr"] == pytest.approx(50.0)
    assert saved["groups"]["mcq/perception"]["halr"] == pytest.approx(0.0)
    assert report.metrics["yes_ratio"] == pytest.approx(100.0)
    assert report.metrics["r_score"] == pytest.approx((50 + 100 + 100) / 3)
    lines = (tmp_path / "run" / "samples.jsonl").read_text().splitlines()
    assert len(lines) == 30 and json.loads(lines[0])["task"] == "yesno"
