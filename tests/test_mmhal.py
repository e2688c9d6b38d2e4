"""MMHal-Bench: the template and the official response files, the judge's rating parser on real GPT-4o
replies, the metrics against a published re-score, and `halluscope run -b mmhal` with a scripted judge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from halluscope.benchmarks.mmhal import MMHal, load_mmhal_answers
from halluscope.cli.main import app
from halluscope.judges.mmhal import MMHalItem, MMHalLLMJudge, parse_rating
from halluscope.metrics.mmhal import TYPES, mmhal_metrics
from halluscope.runs.selection import first_samples
from halluscope.types import SampleRecord
from tests.paths import MMHAL_DIR
from tests.scripted_server import Reply, ScriptedServer, completion

REVIEW = MMHAL_DIR / "third-party-gpt4o-review"
RESPONSES = MMHAL_DIR / "responses"


def gpt4o_replies() -> list[str]:
    rows = json.loads((REVIEW / "blip2_mmhal_eval.json").read_text())
    return [str(r["choices"][0]["message"]["content"]) for r in rows]


def official_rating(reply: str) -> int | None:
    """The official summary script's reading: each 'rating: s' substring for s in 0..6; one found or None."""
    found = [s for s in range(7) if f"rating: {s}" in reply.lower()]
    return found[0] if len(found) == 1 else None


def test_rating_parser_is_strict() -> None:
    assert parse_rating("The answer is right.\nRating: 5").rating == 5
    assert parse_rating("**Rating:** 2, hallucination").rating == 2
    assert parse_rating("rating: 4\n\nRating: 4").rating == 4  # the same rating twice is one rating
    for reply, why in (
        ("I cannot rate a missing answer.", "no 'Rating"),
        ("Rating: 3 at first, but on reflection Rating: 1", "several"),
        ("Rating: 7", "not a whole number"),
        ("Rating: 4.5", "not a whole number"),
    ):
        rated = parse_rating(reply)
        assert rated.rating is None and why in (rated.unjudged_reason or ""), reply


@pytest.mark.full_data
def test_gpt4o_replies_ratings_recovered_exactly() -> None:
    """Every rating in the 96 raw GPT-4o replies is read; the one reply without a rating (the empty BLIP-2
    answer) stays unjudged, where the official script would have counted a 0."""
    replies = gpt4o_replies()
    assert len(replies) == 96
    ours = [parse_rating(r).rating for r in replies]
    theirs = [official_rating(r) for r in replies]
    assert ours == theirs
    answers = json.loads((RESPONSES / "blip2_2.7b.json").read_text())
    empty = [i for i, a in enumerate(answers) if not a["model_answer"].strip()]
    assert [i for i, r in enumerate(ours) if r is None] == empty == [24]


def _records(ratings: list[int | None], reasons: bool = True) -> list[SampleRecord]:
    return [
        SampleRecord(
            id=str(i), prompt="q", response="a", rating=r,
            unjudged_reason=None if r is not None or not reasons else "no rating",
            metadata={"question_type": TYPES[i % 8]},
        )
        for i, r in enumerate(ratings)
    ]


@pytest.mark.full_data
def test_blip2_scores_reproduce_the_published_gpt4o_rescore() -> None:
    """results.md of the review repository: BLIP-2 1.31 average, 0.65 hallucination rate, per type
    0.83,0.17,1.67,1.08,1.58,2.08,2.33,0.75 (its script counts the unrated reply as 0)."""
    replies = gpt4o_replies()
    report = mmhal_metrics(_records([parse_rating(r).rating for r in replies]))
    m = report.metrics
    assert round(m["official_average_score"], 2) == 1.31
    assert round(m["official_hallucination_rate"] / 100, 2) == 0.65
    assert report.counts["judged"] == 95 and report.counts["unjudged"] == 1
    # halluscope's own figures leave the unrated answer out
    assert m["average_score"] == pytest.approx(126 / 95)
    published = (REVIEW / "results.md").read_text().split("BLIP-2")[1].split("|")[3].strip()
    per_type = [float(x) for x in published.split(",")]
    ours = [round(sum(parse_rating(replies[i]).rating or 0 for i in range(k, 96, 8)) / 12, 2) for k in range(8)]
    assert ours == per_type


@pytest.mark.full_data
def test_template_and_images() -> None:
    bench = MMHal(MMHAL_DIR / "response_template.json", images=MMHAL_DIR / "images")
    samples = list(bench.samples())
    assert [s.id for s in samples] == [str(i) for i in range(96)]
    assert [s.metadata["question_type"] for s in samples[:8]] == list(TYPES)
    with_photo = [s for s in samples if s.image_path and Path(s.image_path).is_file()]
    assert len(with_photo) == 81 and sum(1 for s in samples if s.metadata.get("image_missing")) == 15
    assert samples[0].image_path.endswith("7206072054_c53d53b97d_o.jpg")  # type: ignore[union-attr]
    assert samples[0].reference == "The color of the fire hydrant cap in the image is yellow."
    assert [s.id for s in first_samples(MMHal(MMHAL_DIR, types=["counting"]), 2).samples()] == ["3", "11"]


@pytest.mark.full_data
def test_official_response_files_read_by_position_and_checked(tmp_path: Path) -> None:
    bench = MMHal(MMHAL_DIR)
    for path in sorted(RESPONSES.glob("*.json")):
        read = bench.read_responses(path)
        assert len(read.responses) == 96 and not read.problems, path.name
    records = json.loads((RESPONSES / "llava_7b.json").read_text())
    records[3], records[4] = records[4], records[3]
    swapped = tmp_path / "swapped.json"
    swapped.write_text(json.dumps(records))
    read = load_mmhal_answers(swapped, bench.records)
    assert sorted(set(map(str, range(96))) - set(read.responses)) == ["3", "4"]
    assert any("record 3" in p and "not the template's question" in p for p in read.problems)


async def test_judge_prompt_carries_labels_reference_and_answer(scripted_server: ScriptedServer) -> None:
    scripted_server.push(completion("Matches the reference.\nRating: 5"), completion("hmm"))
    judge = MMHalLLMJudge(model="m", base_url=scripted_server.base_url, concurrency=1)
    item = MMHalItem("0", "attribute", "What colour is the cap?", "Yellow.", ["Fire hydrant"], "It is red.")
    first, second = await judge.grade_many([item, MMHalItem("1", "other", "Q?", "R.", [], "A.")])
    await judge.aclose()
    prompt = scripted_server.chat_requests()[0].body["messages"][-1]["content"]
    assert "Fire hydrant" in prompt and "Yellow." in prompt and "It is red." in prompt
    assert first.rating == 5 and first.hallucinated is False  # type: ignore[union-attr]
    assert second.rating is None and "no 'Rating" in (second.unjudged_reason or "")  # type: ignore[union-attr]


@pytest.mark.full_data
def test_cli_run_unjudged_replies_are_asked_again_on_resume(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    """An unparseable judge reply leaves its answer unjudged (not 0) and is not cached; the re-run asks
    again for that answer only, and the metrics then count it."""
    state: dict[str, Any] = {"garbled": True, "asked": []}

    def respond(body: Any) -> Reply:
        text = body["messages"][-1]["content"]
        state["asked"].append(text)
        if "fire hydrant cap" in text and state["garbled"]:
            return completion("I would say it is fine.")
        return completion("Wrong colour.\nRating: 1") if "fire hydrant" in text.lower() else completion("Rating: 4")

    scripted_server.responder = respond
    out = tmp_path / "run"
    cache = tmp_path / "cache.sqlite"
    args = ["run", "-b", "mmhal", "--data", str(MMHAL_DIR), "--limit", "8", "-r", str(RESPONSES / "llava_7b.json"),
            "--judge-model", "m", "--base-url", scripted_server.base_url, "--cache", str(cache),
            "--out", str(out), "-q", "--max-failure-share", "0.5"]  # fmt: skip
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    metrics = json.loads((out / "metrics.json").read_text())
    counts = {k: metrics["counts"][k] for k in ("samples", "judged", "unjudged", "failed")}
    assert counts == {"samples": 8, "judged": 7, "unjudged": 1, "failed": 0}
    assert metrics["metrics"]["average_score"] == 4.0 and metrics["metrics"]["hallucination_rate"] == 0.0
    state["garbled"], state["asked"] = False, []
    second = CliRunner().invoke(app, args)
    assert second.exit_code == 0, second.output
    assert len(state["asked"]) == 1 and "fire hydrant cap" in state["asked"][0]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["counts"]["judged"] == 8
    assert metrics["metrics"]["score_attribute"] == 1.0 and metrics["metrics"]["hallucination_rate"] == 12.5


def test_packaged_labels_split_by_photo_and_agreement_figures() -> None:
    from halluscope.calibration.mmhal_real import agreement, load_labels

    labels = load_labels()
    assert len(labels) >= 100 and len({x.model for x in labels}) >= 4
    tune = {x.image for x in labels if x.split == "tune"}
    heldout = {x.image for x in labels if x.split == "heldout"}
    assert tune and heldout and not tune & heldout
    assert len(load_labels(split="heldout")) == sum(1 for x in labels if x.split == "heldout")
    figures = agreement({"a": 0, "b": 4, "c": 5, "d": 2}, {"a": 1, "b": 4, "c": 2, "d": None})
    assert figures["n"] == 3 and figures["not_rated"] == 1
    assert figures["exact"] == pytest.approx(1 / 3) and figures["within_1"] == pytest.approx(2 / 3)
    assert figures["hallucinated_agreement"] == pytest.approx(2 / 3)


@pytest.mark.full_data
def test_quality_reads_mmhal_runs(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    """Four real response files scored (a scripted judge rates by answer length), then `halluscope quality`
    on them: the metric is read from each run, criterion validity against the packaged hand labels, and
    MMHal-Bench's question types in the coverage table."""
    from halluscope.calibration.mmhal_real import load_labels

    def respond(body: Any) -> Reply:
        answer = body["messages"][-1]["content"].split("Model's answer:")[1]
        return completion(f"Rating: {len(answer) % 7}")

    scripted_server.responder = respond
    models = ["llava_7b", "llava_13b", "idefics_80b", "instructblip_13b"]
    for model in models:
        result = CliRunner().invoke(app, [
            "run", "-b", "mmhal", "--data", str(MMHAL_DIR), "-r", str(RESPONSES / f"{model}.json"),
            "--judge-model", "m", "--base-url", scripted_server.base_url, "--no-cache",
            "--out", str(tmp_path / "runs" / model), "-q",
        ])  # fmt: skip
        assert result.exit_code == 0, result.output
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(x.model_dump()) + "\n" for x in load_labels()))
    out = tmp_path / "quality.json"
    result = CliRunner().invoke(app, [
        "quality", str(tmp_path / "runs"), "--metric", "hallucination_rate", "--labels", str(labels),
        "--coverage", str(tmp_path / "runs" / "llava_7b"), "--resamples", "200", "--out", str(out),
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    text = json.dumps(report)
    (validity,) = [c for c in report["correlations"] if c["measure"] == "criterion validity"]
    assert validity["correlation"]["n"] == 4 and set(validity["scores"]) == set(models)
    assert report["benchmark"] == "mmhal" and report["human_labelled"] == {m: 25 for m in models}
    coverage = {b["benchmark"]: b["counts"] for b in report["coverage"]["benchmarks"]}
    assert coverage["mmhal"]["object"] == 12 and coverage["mmhal"]["holistic"] == 12, text[:500]


@pytest.mark.full_data
def test_model_run_sends_the_photo(tmp_path: Path) -> None:
    """`--model` with `--bench-opt images=DIR`: the VLM gets question 0's photo (a JPEG data URL) and its
    question, and the answer is rated by the judge on another endpoint; question 1's photo is one of the
    15 the folder lacks, and that sample fails naming the file instead of being asked without its photo."""
    with ScriptedServer() as vlm, ScriptedServer() as judge:
        vlm.responder = lambda body: completion("The cap is yellow.")
        judge.responder = lambda body: completion("Right.\nRating: 4")
        result = CliRunner().invoke(app, [
            "run", "-b", "mmhal", "--data", str(MMHAL_DIR), "--limit", "2",
            "--bench-opt", f"images={MMHAL_DIR / 'images'}", "--bench-opt", "missing_images=fail",
            "--model", f"openai/some-vlm?base_url={vlm.base_url}", "--judge-model", "m",
            "--base-url", judge.base_url, "--no-cache", "--out", str(tmp_path / "run"), "-q",
        ])  # fmt: skip
        assert result.exit_code == 0, result.output
        first = vlm.chat_requests()[0].body["messages"][-1]["content"]
        parts = {p["type"]: p for p in first}
        assert parts["image_url"]["image_url"]["url"].startswith("data:image/jpeg;base64,")
        assert "fire hydrant cap" in parts["text"]["text"]
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["counts"]["judged"] == 1 and metrics["metrics"]["average_score"] == 4.0
    records = {r["id"]: r for r in map(json.loads, (tmp_path / "run" / "samples.jsonl").read_text().splitlines())}
    assert "7413067568_06a8d1eb64_o.jpg" in str(records["1"]["failure"])
    assert len(vlm.chat_requests()) == 1


async def test_rating_first_asks_for_the_rating_line_first_with_few_tokens(scripted_server: ScriptedServer) -> None:
    scripted_server.push(completion("Rating: 2\nThe cap is yellow, not red."))
    judge = MMHalLLMJudge(model="m", base_url=scripted_server.base_url, rating_first="true")
    item = MMHalItem("0", "attribute", "What colour is the cap?", "Yellow.", ["Fire hydrant"], "It is red.")
    (rated,) = await judge.grade_many([item])
    await judge.aclose()
    body = scripted_server.chat_requests()[0].body
    assert body["max_tokens"] == 24 and "first, then one short sentence" in body["messages"][-1]["content"]
    assert rated.rating == 2 and judge.identity()["rating_first"] is True  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="unknown option"):
        MMHalLLMJudge(model="m", base_url=scripted_server.base_url, ratings_first=True)
