"""`halluscope build parallel` for POPE, AMBER and HallusionBench: negated yes/no questions with flipped labels,
read back through each benchmark's loader and verified; AMBER's captioning prompt paraphrased."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from halluscope.benchmarks import BENCHMARKS
from halluscope.builders.negation import negate_questions, negation_problem
from halluscope.builders.parallel import build_parallel, verify_parallel
from halluscope.cli.main import app
from tests.paths import AMBER_EXCERPT, HALLUSIONBENCH_DIR, HALLUSIONBENCH_EXCERPT, POPE_EXCERPT

EXCERPTS = {"pope": POPE_EXCERPT, "amber": AMBER_EXCERPT, "hallusionbench": HALLUSIONBENCH_EXCERPT}


def test_negation_rules() -> None:
    cases = {
        "Is there a dog in the image?": "Is there no dog in the image?",
        "Are there any ducks in this figure?": "Are there no ducks in this figure?",
        "Is there direct contact between the tiger and ground?": "Is there no direct contact between the tiger "
        "and ground?",
        "Is the coffee table wooden in this image?": "Is the coffee table not wooden in this image?",
        "Does the person ride a bike in this image?": "Does the person not ride a bike in this image?",
        "According to the chart, is Russia the largest country by land area in the world?": "According to the "
        "chart, is Russia not the largest country by land area in the world?",
        "Is the green line longer than the red line? Yes or No": "Is the green line not longer than the red line? "
        "Yes or No",  # "yes or no" is an answer format, not a negation
        "According to the text, is this a poster for Jaws?": "According to the text, is this not a poster for Jaws?",
        "Does this figure depict Colonel Sanders?": "Does this figure not depict Colonel Sanders?",
    }
    got = negate_questions(list(cases))
    assert [text for text, _ in got] == list(cases.values())
    left_alone = ["Are there two dogs in this image?", "Is the dog not running?", "Is the text in this figure "
                  "made by Ronald Reagan?", "Is the sky jet-black in this image?"]
    for question, (text, why) in zip(left_alone, negate_questions(left_alone), strict=True):
        assert text is None or negation_problem(question, text), (question, text, why)


@pytest.mark.parametrize("benchmark", ["pope", "amber", "hallusionbench"])
def test_parallel_form_verifies_and_flips_every_label(benchmark: str, tmp_path: Path) -> None:
    out = tmp_path / benchmark
    result = CliRunner().invoke(app, ["build", "parallel", "-b", benchmark, "--data", str(EXCERPTS[benchmark]),
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "verified: 0 problems" in result.output
    summary = json.loads((out / "parallel.json").read_text())
    assert summary["verification"]["n_problems"] == 0 and summary["counts"]["questions negated"] > 0
    source = {s.id: s for s in BENCHMARKS.create(benchmark, data=EXCERPTS[benchmark]).samples()}
    written = [s for s in BENCHMARKS.create(benchmark, data=out).samples() if "label" in s.metadata]
    assert written and all(s.metadata["label"] != source[s.id].metadata["label"] for s in written)
    assert all(" no " in s.prompt or " not " in s.prompt for s in written)
    # Every item is either in the parallel form or listed as left out, with a reason.
    closed = [sid for sid, s in source.items() if "label" in s.metadata]
    assert len(written) + summary["skipped"] == len(closed)
    # A label put back to the source's is caught.
    if benchmark == "pope":
        path = next(out.glob("*/*.json"))
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        sid = next(s.id for s in BENCHMARKS.create(benchmark, data=out).samples())
        rows[0]["label"] = source[sid].metadata["label"]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        problems = verify_parallel(benchmark, EXCERPTS[benchmark], out)
        assert len(problems) == 1 and "not the opposite" in problems[0]


def test_amber_captioning_prompt_is_paraphrased_with_its_annotations(tmp_path: Path) -> None:
    asyncio.run(build_parallel("amber", AMBER_EXCERPT, tmp_path))
    source = {s.id: s for s in BENCHMARKS.create("amber", data=AMBER_EXCERPT).samples()}
    generative = [s for s in BENCHMARKS.create("amber", data=tmp_path).samples() if s.metadata["type"] == "generative"]
    assert generative and all(s.prompt != source[s.id].prompt for s in generative)
    assert all(s.metadata["truth"] == source[s.id].metadata["truth"] for s in generative)


@pytest.mark.full_data
def test_full_hallusionbench_parallel_form(tmp_path: Path) -> None:
    built = asyncio.run(build_parallel("hallusionbench", HALLUSIONBENCH_DIR, tmp_path))
    assert built.problems == []
    assert built.counts["questions negated"] >= 600 and len(built.skipped) <= 500
