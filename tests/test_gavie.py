"""GAVIE: the released instructions, Visual Genome's region descriptions in both layouts, the strict score parser,
and `halluscope run -b gavie` end to end with a scripted judge and with the packaged model on a real llama.cpp
server, on the five real answers of the benchmark's own judge example."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from halluscope.benchmarks import BENCHMARKS
from halluscope.benchmarks.gavie import GavieDataError, read_regions
from halluscope.cli.main import app
from halluscope.judges.gavie import RUBRIC, parse_scores
from halluscope.llm.offline import PACKAGED_MODEL_NAME
from tests.paths import GAVIE_SET
from tests.scripted_server import Reply, ScriptedServer, completion

EXCERPT = Path(__file__).parent / "data" / "gavie"
REGIONS = EXCERPT / "region_descriptions.json"
RELEASED = GAVIE_SET
#: The example's five answers, in its order: the first rejects the false premise; the others accept it.
ANSWERS = [str(row["response"]) for row in json.loads((EXCERPT / "example_answers.json").read_text())]


def test_score_parser_is_strict() -> None:
    good = parse_scores("The answer invents a wine glass.\n**Relevancy:** 6\nAccuracy: 1")
    assert (good.relevancy, good.accuracy, good.unjudged_reason) == (6, 1, None)
    assert parse_scores("Relevancy: 7\nAccuracy: 7\nAccuracy: 7").accuracy == 7  # the same value twice is one
    for reply, why in [
        ("Relevancy: N\nAccuracy: N", "no 'Relevancy: N'"),
        ("Relevancy: 8", "no 'Accuracy: N'"),
        ("Relevancy: 8\nAccuracy: 2\nAccuracy: 5", "several different accuracy scores"),
        ("Relevancy: 11\nAccuracy: 5", "not a whole number from 0 to 10"),
        ("Relevancy: 7.5\nAccuracy: 5", "not a whole number from 0 to 10"),
    ]:
        grade = parse_scores(reply)
        assert grade.relevancy is None and grade.accuracy is None
        assert why in (grade.unjudged_reason or ""), (reply, grade.unjudged_reason)


@pytest.mark.full_data
def test_released_instructions_are_samples_by_position(tmp_path: Path) -> None:
    bench = BENCHMARKS.create("gavie", data=RELEASED.parent)
    samples = list(bench.samples())
    assert len(samples) == 1000 and len({s.image_id for s in samples}) == 120
    assert [s.id for s in samples[:3]] == ["0", "1", "2"]
    assert samples[218].prompt == "Can you notice the red wine glass beside the white container?"
    assert samples[218].image_id == "2357436"
    # The official script's field name for the same text reads the same.
    renamed = [
        {"image_id": r["image_id"], "instruction": r["question"]} for r in json.loads(RELEASED.read_text())
    ]
    (tmp_path / "evaluation_set.json").write_text(json.dumps(renamed))
    again = list(BENCHMARKS.create("gavie", data=tmp_path).samples())
    assert [(s.id, s.prompt, s.image_id) for s in again] == [(s.id, s.prompt, s.image_id) for s in samples]


def test_region_descriptions_read_in_both_layouts(tmp_path: Path) -> None:
    vg = read_regions(REGIONS)
    assert list(vg) == ["2357436", "2346780"] and [len(r) for r in vg.values()] == [50, 30]
    first = vg["2357436"][0]
    assert (first.phrase, first.x, first.y, first.width, first.height) == (
        "food is in a tray",
        20,
        55,
        470,
        470,
    )
    official = {
        image: [{"caption": r.phrase, "bbox": [r.x, r.y, r.width, r.height]} for r in regions]
        for image, regions in vg.items()
    }
    (tmp_path / "vg_annotation.json").write_text(json.dumps(official))
    assert read_regions(tmp_path / "vg_annotation.json") == vg
    (tmp_path / "bad.json").write_text(json.dumps({"a": 1}))
    with pytest.raises(GavieDataError, match="no region descriptions read"):
        read_regions(tmp_path / "bad.json")


def _five_answers(tmp_path: Path) -> tuple[Path, Path]:
    """The example's instruction asked five times (one item per real answer) and once about an image the region
    file does not describe; the answers file."""
    example = json.loads((EXCERPT / "evaluation_set.json").read_text())[0]
    items = [example] * len(ANSWERS) + [
        {"image_id": "2356371", "question": "Which objects are on the wooden table?"}
    ]
    data = tmp_path / "evaluation_set.json"
    data.write_text(json.dumps(items))
    rows = [{"id": str(i), "response": a} for i, a in enumerate([*ANSWERS, "A table."])]
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return data, answers


def test_run_scores_each_answer_and_names_what_it_could_not(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    """Five answers scored, the item whose image has no region descriptions named in one line; an unreadable
    reply is a judge failure that is not cached, so the same command again asks for that answer only."""
    state: dict[str, Any] = {"garbled": True, "asked": []}

    def respond(body: Any) -> Reply:
        assert body["messages"][0] == {
            "role": "system",
            "content": RUBRIC,
        }  # the same prefix on every request
        text = body["messages"][-1]["content"]
        state["asked"].append(text)
        if "nice touch" in text and state["garbled"]:
            return completion("A fine answer, I would say.")
        if "instruction is misleading" in text:
            return completion("It rightly finds no wine glass.\nRelevancy: 9\nAccuracy: 10")
        return completion("No wine glass is described.\nRelevancy: 6\nAccuracy: 2")

    scripted_server.responder = respond
    data, answers = _five_answers(tmp_path)
    out = tmp_path / "run"
    args = ["run", "-b", "gavie", "--data", str(data), "--bench-opt", f"regions={REGIONS}", "-r", str(answers),
            "--judge-model", "m", "--base-url", scripted_server.base_url, "--cache", str(tmp_path / "cache.sqlite"),
            "--out", str(out), "--max-failure-share", "0.5"]  # fmt: skip
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "Traceback" not in first.output
    said = " ".join(first.output.split())
    assert "2 sample(s) could not be scored" in said
    assert "• GAVIE item 5: image 2356371 has no region descriptions in region_descriptions.json" in said
    assert "• GAVIE item 4: unjudged: no 'Relevancy: N' in the judge's reply" in said
    records = {r["id"]: r for r in map(json.loads, (out / "samples.jsonl").read_text().splitlines())}
    assert (
        records["5"]["failure"]
        == "GAVIE item 5: image 2356371 has no region descriptions in region_descriptions.json"
    )
    prompt = state["asked"][0]
    assert "food is in a tray X:20 Y:55 Width:470 Height:470" in prompt and "red wine glass" in prompt
    metrics = json.loads((out / "metrics.json").read_text())
    assert {k: metrics["counts"][k] for k in ("samples", "scored", "failed")} == {
        "samples": 6,
        "scored": 4,
        "failed": 2,
    }
    assert metrics["metrics"]["accuracy_score"] == pytest.approx((10 + 2 + 2 + 2) / 4)
    assert metrics["metrics"]["relevancy_score"] == pytest.approx((9 + 6 + 6 + 6) / 4)
    # All scored answers are about one image: no interval, rather than one of zero width that claims certainty.
    assert metrics["intervals"] == {"accuracy_score": None, "relevancy_score": None}

    state["garbled"], state["asked"] = False, []
    second = CliRunner().invoke(app, args)
    assert second.exit_code == 0, second.output
    assert len(state["asked"]) == 1 and "nice touch" in state["asked"][0]
    metrics = json.loads((out / "metrics.json").read_text())
    assert {k: metrics["counts"][k] for k in ("samples", "scored", "failed")} == {
        "samples": 6,
        "scored": 5,
        "failed": 1,
    }
    assert metrics["metrics"]["accuracy_score"] == pytest.approx((10 + 2 * 4) / 5)


def test_without_region_descriptions_each_item_says_what_to_give(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    data, answers = _five_answers(tmp_path)
    args = ["run", "-b", "gavie", "--data", str(data), "-r", str(answers), "--judge-model", "m",
            "--base-url", scripted_server.base_url, "--out", str(tmp_path / "run")]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code != 0  # nothing measured: not a green run
    assert "no region descriptions to judge by; give --bench-opt regions=FILE" in " ".join(
        result.output.split()
    )
    assert not scripted_server.chat_requests()


@pytest.mark.slow
def test_the_packaged_model_scores_a_real_answer_on_a_real_server(llama_server: str, tmp_path: Path) -> None:
    """The whole path on llama.cpp: the prompt reaches the packaged model and its reply is read by the strict
    parser into two scores (how well it scores is measured in docs/gavie.md, not here)."""
    data, answers = _five_answers(tmp_path)
    out = tmp_path / "run"
    args = ["run", "-b", "gavie", "--data", str(data), "--bench-opt", f"regions={REGIONS}", "-r", str(answers),
            "--limit", "1", "--judge-model", PACKAGED_MODEL_NAME, "--base-url", llama_server,
            "--judge-opt", "timeout_s=600", "--out", str(out)]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    (record,) = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert record["failure"] is None and 0 <= record["accuracy"] <= 10 and 0 <= record["relevancy"] <= 10


def test_an_unanswered_item_whose_photo_the_images_folder_lacks_names_the_photo(tmp_path: Path) -> None:
    """As for MMHal-Bench: an item without an answer fails naming its photo when the images folder lacks it
    (why a --model run could not ask it); with the photo there, the failure says only that it has no answer;
    an images folder that is not there is refused naming the benchmark."""
    import asyncio

    from halluscope.cache import Cache
    from halluscope.stages import ScoringContext

    example = json.loads((EXCERPT / "evaluation_set.json").read_text())[0]
    data = tmp_path / "evaluation_set.json"
    data.write_text(json.dumps([example, {**example, "image_id": "2346780"}]))
    images = tmp_path / "images"
    images.mkdir()
    (images / f"{example['image_id']}.jpg").write_bytes(b"a photo")
    bench = BENCHMARKS.create("gavie", data=data, images=images, regions=REGIONS)
    samples = list(bench.samples())
    records = asyncio.run(bench.score_many([(s, None) for s in samples], ScoringContext(cache=Cache(None))))
    assert [r.failure for r in records] == [
        "GAVIE item 0: no response for this item",
        "GAVIE item 1: no response for this item (its photo 2346780.jpg is not in the images folder)",
    ]
    with pytest.raises(GavieDataError, match=r"the GAVIE benchmark: images folder .* does not exist"):
        BENCHMARKS.create("gavie", data=data, images=tmp_path / "nowhere")
