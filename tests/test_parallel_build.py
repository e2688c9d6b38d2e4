"""`halluscope build parallel` on the real Reefknot, Tri-HE and HQH files, the result run like any benchmark,
and the LLM paraphraser on the real llama.cpp server and on a scripted one that misbehaves."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from halluscope.benchmarks.reefknot import Reefknot
from halluscope.builders.parallel import build_parallel, verify_parallel
from halluscope.builders.paraphrase import LLMParaphraser, keeps_content, template_paraphrase
from halluscope.cli.main import app
from halluscope.judges.answers import parse_mcq_options
from halluscope.llm.client import ChatClient
from halluscope.runs.store import read_metrics
from tests.paths import HQH_DIR, REEFKNOT_DIR, TRI_HE_JSON
from tests.scripted_server import ScriptedServer, completion, error


@pytest.mark.full_data
def test_reefknot_yes_no_and_choices_build_with_zero_verification_problems(tmp_path: Path) -> None:
    out = tmp_path / "parallel"
    result = CliRunner().invoke(app, ["build", "parallel", "--benchmark", "reefknot", "--data", str(REEFKNOT_DIR),
                                      "--out", str(out), "--tasks", "yesno,mcq"])
    assert result.exit_code == 0, result.output
    assert "verified: 0 problems" in result.output
    summary = json.loads((out / "parallel.json").read_text())
    assert summary["verification"]["n_problems"] == 0
    original_yes = sum(1 for _ in (REEFKNOT_DIR / "YESNO.jsonl").open())
    original_mcq = sum(1 for _ in (REEFKNOT_DIR / "Multichoice.jsonl").open())
    # Every multiple-choice item is rewritten; yes/no pairs are left out only for stated reasons (under 5%).
    assert summary["counts"]["mcq shuffled"] == original_mcq
    assert summary["counts"]["yesno negated"] + 2 * summary["skipped"] == original_yes
    assert summary["skipped"] < 0.05 * original_yes / 2
    assert set(summary["skipped_reasons"]) <= {"a question of the pair is already negated",
                                              "twins ask the same question with opposite labels"}

    bench = Reefknot(out)
    samples = {s.id: s for s in bench.samples()}
    first, second = samples["yesno-0"], samples["yesno-1"]
    assert first.prompt == "Is the bus driver not off the bus in this photo? Please answer yes or no."
    assert (first.reference, second.reference) == ("yes", "no")
    assert first.metadata["pair"] == second.metadata["pair"] == 0  # twins still pair up
    originals = [json.loads(line) for line in (REEFKNOT_DIR / "Multichoice.jsonl").open()]
    moved = 0
    for sample in (s for s in samples.values() if s.metadata["task"] == "mcq"):
        row = bench.official_rows["mcq"][sample.metadata["line"]]
        source = originals[int(row["source"].split("-")[1])]
        correct = parse_mcq_options(source["query_prompt"])[source["label"]]
        assert sample.metadata["options"][sample.reference] == correct
        moved += sample.reference != source["label"]
    assert moved == original_mcq

    # Verification reads the files back: a label flipped back by hand is caught, by id.
    lines = (out / "YESNO.jsonl").read_text().splitlines()
    broken = json.loads(lines[5])
    broken["label"] = "no" if broken["label"] == "yes" else "yes"
    lines[5] = json.dumps(broken)
    (out / "YESNO.jsonl").write_text("\n".join(lines) + "\n")
    problems = verify_parallel("reefknot", REEFKNOT_DIR, out)
    assert any(p.startswith("yesno-5 (from yesno-") and "opposite" in p for p in problems)


@pytest.mark.full_data
def test_parallel_form_runs_like_any_benchmark(tmp_path: Path) -> None:
    out = tmp_path / "parallel"
    asyncio.run(build_parallel("reefknot", REEFKNOT_DIR, out, tasks=["yesno", "mcq"]))
    rows = {"yesno": [json.loads(x) for x in (out / "YESNO.jsonl").open()][:20],
            "mcq": [json.loads(x) for x in (out / "Multichoice.jsonl").open()][:10]}
    answers = tmp_path / "answers.jsonl"
    with answers.open("w") as handle:
        for task, task_rows in rows.items():
            for line, row in enumerate(task_rows):
                # A model that always says "yes" and always picks the correct letter.
                said = "Yes." if task == "yesno" else row["label"]
                handle.write(json.dumps({"id": f"{task}-{line}", "response": said}) + "\n")
    result = CliRunner().invoke(app, ["run", "-b", "reefknot", "--data", str(out), "-r", str(answers),
                                      "--out", str(tmp_path / "run"), "--no-cache", "-q",
                                      "--bench-opt", "tasks=yesno,mcq"])
    assert result.exit_code == 0, result.output
    metrics = read_metrics(tmp_path / "run").metrics
    assert metrics["yes_ratio"] == 100.0
    assert metrics["halr_yesno"] == pytest.approx(50.0, abs=10)  # labels stay balanced after negation
    assert metrics["halr_mcq"] == 0.0


@pytest.mark.full_data
@pytest.mark.parametrize("benchmark", ["tri-he", "hqh"])
def test_open_prompts_are_paraphrased_keeping_ids_and_answers(tmp_path: Path, benchmark: str) -> None:
    data = TRI_HE_JSON if benchmark == "tri-he" else HQH_DIR
    built = asyncio.run(build_parallel(benchmark, data, tmp_path / "p"))
    assert built.problems == []
    if benchmark == "hqh":
        items = json.loads((tmp_path / "p" / "HQH.json").read_text())
        assert len(items) == 4000 and built.counts["instructions paraphrased"] == 4000
        changed = [i for i in items if i["instruction"] != i["source_instruction"]]
        assert len(changed) == 4000
        assert (tmp_path / "p" / "image_data.partial.json").exists()
    else:
        from halluscope.benchmarks.tri_he import TriHE

        samples = list(TriHE(tmp_path / "p" / "tri-he.json").samples())
        originals = {s.id: s for s in TriHE(TRI_HE_JSON).samples()}
        assert {s.id for s in samples} == set(originals)
        assert all(s.prompt != originals[s.id].prompt for s in samples)


def test_templates_keep_every_content_word() -> None:
    assert template_paraphrase("What color is the car?", "1") == "What is the color of the car?"
    assert template_paraphrase("What is the man doing?", "1") == "Describe what the man is doing."
    assert template_paraphrase("Describe the image.", "1") == "Provide a description of the image."
    for prompt in ("How many dogs are there in the image?", "Is the cat black?", "Where is the red kite?"):
        for item in ("a", "b", "c", "d"):
            assert keeps_content(prompt, template_paraphrase(prompt, item)) is None
    assert keeps_content("How many 3 dogs?", "How many dogs?") is not None


def _tiny_hqh(tmp_path: Path, n: int) -> Path:
    items = json.loads((HQH_DIR / "HQH.json").read_text())
    chosen = [items[0], items[600], items[2100]][:n]
    folder = tmp_path / "hqh"
    folder.mkdir()
    (folder / "HQH.json").write_text(json.dumps(chosen))
    return folder


@pytest.mark.full_data
def test_llm_paraphraser_falls_back_to_templates_on_bad_replies(tmp_path: Path,
                                                                 scripted_server: ScriptedServer) -> None:
    data = _tiny_hqh(tmp_path, 3)
    scripted_server.push(
        completion("Rewritten request: Which text is written on the top street sign?"),  # accepted
        completion("The weather is sunny.\nThat is all."),  # two lines: rejected
        error(400, "bad request"),  # endpoint failure: template
    )

    async def go() -> object:
        async with ChatClient("scripted", scripted_server.base_url, max_retries=0) as client:
            writer = LLMParaphraser(client)
            return await build_parallel("hqh", data, tmp_path / "out", paraphrase=writer.paraphrase,
                                        paraphraser=writer.identity())

    built = asyncio.run(go())
    items = json.loads((tmp_path / "out" / "HQH.json").read_text())
    assert items[0]["instruction"] == "Which text is written on the top street sign?"
    assert items[1]["instruction"] == template_paraphrase(items[1]["source_instruction"], str(items[1]["id"]))
    assert built.counts["llm paraphrase rejected: reply spans several lines"] == 1  # type: ignore[attr-defined]
    assert built.counts["llm paraphrase rejected: endpoint failed (LLMBadRequestError)"] == 1  # type: ignore[attr-defined]


@pytest.mark.full_data
@pytest.mark.slow
def test_llm_paraphraser_on_the_real_server(tmp_path: Path, llama_server: str) -> None:
    from halluscope.llm.offline import PACKAGED_MODEL_NAME

    data = _tiny_hqh(tmp_path, 2)

    async def go() -> object:
        async with ChatClient(PACKAGED_MODEL_NAME, llama_server, concurrency=1, timeout_s=600) as client:
            writer = LLMParaphraser(client)
            return await build_parallel("hqh", data, tmp_path / "out", paraphrase=writer.paraphrase,
                                        paraphraser=writer.identity())

    built = asyncio.run(go())
    assert built.problems == []  # type: ignore[attr-defined]
    items = json.loads((tmp_path / "out" / "HQH.json").read_text())
    for item in items:
        assert item["instruction"] != item["source_instruction"]
        assert keeps_content(item["source_instruction"], item["instruction"], share=0.6) is None
