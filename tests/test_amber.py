"""AMBER: the official discriminative arithmetic and generative noun rules, reproduced item by item."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import pytest

from halluscope.benchmarks import ScoringContext
from halluscope.benchmarks.amber import Amber, amber_paper_rule, judge_description
from halluscope.cache import Cache
from halluscope.metrics.amber import amber_discriminative_paper
from halluscope.runs.selection import first_samples
from halluscope.types import Response
from tests.paths import AMBER_DIR as AMBER_FULL
from tests.paths import AMBER_EXCERPT as AMBER_DIR

BOTH = [AMBER_DIR, pytest.param(AMBER_FULL, marks=pytest.mark.full_data)]  # the excerpt, and every item
ANSWERS = ["Yes", "No", "yes.", "No, there is not.", "yes", "", "I can't tell.", "There is no cup."]


def official_discriminative(items: list[dict[str, Any]], answers: dict[int, str]) -> dict[str, float]:
    """A plain transcription of the official counters (all dimensions)."""
    m = {k: 0.0 for k in ("c", "n", "no", "nn", "ans", "ansn")}
    m.update({"n": 0.001, "nn": 0.001, "ansn": 0.001})
    for item in items:
        if item["type"] == "generative":
            continue
        truth, response = item["truth"], answers[item["id"]]
        m["n"] += 1
        if truth == "yes":
            if response == "Yes":
                m["c"] += 1
        else:
            m["nn"] += 1
            if response == "No":
                m["c"] += 1
                m["no"] += 1
        if response == "No":
            m["ansn"] += 1
            if truth == "no":
                m["ans"] += 1
    accuracy = round(m["c"] / m["n"] * 100, 1)
    precision = round(m["ans"] / m["ansn"] * 100, 1)
    recall = round(m["no"] / m["nn"] * 100, 1)
    f1 = round(2 * (precision / 100) * (recall / 100) / ((precision / 100) + (recall / 100) + 0.0001) * 100, 1)
    return {"accuracy": accuracy, "precision": precision, "recall": recall, "f1": f1}


@pytest.mark.parametrize("data", BOTH)
def test_discriminative_paper_metrics_equal_the_official_counters(data: Path) -> None:
    items = json.loads((data / "annotations.json").read_text(encoding="utf-8"))
    rng = random.Random(0)
    answers = {item["id"]: rng.choice(ANSWERS) for item in items}
    expected = official_discriminative(items, answers)
    ours = amber_discriminative_paper([(i["type"], i["truth"], answers[i["id"]]) for i in items
                                       if i["type"] != "generative"])
    for key, value in expected.items():
        assert ours[key] == value, key
    assert {"existence_f1", "attribute_accuracy", "state_recall", "relation_precision"} <= set(ours)


@pytest.mark.parametrize(("answer", "value"), [("Yes", "yes"), ("No", "no"), ("yes.", None), ("No.", None),
                                               ("yes", None), (" Yes", None)])
def test_paper_rule_is_an_exact_match(answer: str, value: str | None) -> None:
    assert amber_paper_rule(answer) == value


def official_generative(nouns: list[str], truth: list[str], hallu: list[str], association: dict[str, list[str]],
                        vocabulary: set[str], safe: set[str], similar: Any) -> tuple[int, int, list[int], list[int]]:
    """The official per-noun loop with its index bookkeeping, transcribed."""
    kept = [n for n in nouns if n in vocabulary]
    safe_words, safe_list, ha_words, ha_list = [], [], [], []
    for idx, word in enumerate(truth):
        safe_words += association[word]
        safe_list += [idx] * len(association[word])
    for idx, word in enumerate(hallu):
        ha_words += association[word]
        ha_list += [idx] * len(association[word])
    safe_words += truth
    safe_len = len(truth)
    safe_list += [0] * safe_len
    ha_words += hallu
    ha_len = len(hallu)
    ha_list += [0] * ha_len
    flags = [0] * len(kept)

    def mark(lst: list[int], j: int, n: int) -> None:
        if j < len(lst) - n:
            lst[lst[j] + len(lst) - n] = 1
        else:
            lst[j] = 1

    for idx, noun in enumerate(kept):
        if noun in safe:
            continue
        if noun in safe_words:
            mark(safe_list, safe_words.index(noun), safe_len)
            continue
        if noun in ha_words:
            mark(ha_list, ha_words.index(noun), ha_len)
        for j, word in enumerate(ha_words):
            if similar(noun, word):
                mark(ha_list, j, ha_len)
                break
        found = False
        for j, word in enumerate(safe_words):
            if similar(noun, word):
                found = True
                mark(safe_list, j, safe_len)
                break
        if found:
            continue
        flags[idx] = 1
    return sum(flags), len(flags), safe_list[-safe_len:] if safe_len else [], ha_list[-ha_len:] if ha_len else []


@pytest.mark.parametrize("data", BOTH)
def test_generative_rules_equal_the_official_loop_on_every_item(data: Path) -> None:
    bench = Amber(data, types=["generative"])
    vocab = sorted(bench.vocabulary)
    rng = random.Random(1)

    def similar(a: str, b: str) -> bool:  # a deterministic stand-in for word-vector similarity
        return a != b and (a[:3] == b[:3])

    for item in bench.items:
        nouns = rng.sample(vocab, 6) + rng.sample(item["truth"], min(2, len(item["truth"]))) + ["image", "thing"]
        for sim in (lambda a, b: False, similar):
            got = judge_description(nouns, item["truth"], item["hallu"], vocabulary=bench.vocabulary,
                                    association=bench.association, safe_words=bench.safe_words, similar=sim)
            hallucinated, kept, truth_flags, hallu_flags = official_generative(
                nouns, item["truth"], item["hallu"], bench.association, bench.vocabulary, bench.safe_words, sim)
            assert len(got["hallucinated_nouns"]) == hallucinated
            assert len(got["object_nouns"]) == kept
            assert len(got["truth_covered"]) == sum(truth_flags)
            assert len(got["hallu_covered"]) == sum(hallu_flags)


def test_descriptions_are_scored_end_to_end_with_real_nouns(tmp_path: Path) -> None:
    bench = Amber(AMBER_DIR, types=["generative"], word_similarity="exact")
    first, second = first_samples(bench, 2).samples()
    truth = first.metadata["truth"]
    text = f"A photo of a {truth[0]} and some {truth[1]}s, with a dog."
    records = asyncio.run(bench.score_many(
        [(first, Response(id=first.id, response=text)), (second, None)], ScoringContext(cache=Cache(None))))
    extra = records[0].model_extra or {}
    assert truth[0] in extra["truth_covered"] and truth[1] in extra["truth_covered"]
    assert extra["hallucinated_nouns"] == (["dog"] if "dog" not in truth else [])
    assert records[1].failure == "no response for this sample"
    report = bench.metrics(records)
    assert report.metrics["Cover"] == round(2 / (len(truth) + 0.001) * 100, 1)


def test_selection_ids_and_bad_data(tmp_path: Path) -> None:
    bench = first_samples(Amber(AMBER_DIR, types=["existence"]), 3)
    ids = [s.id for s in bench.samples()]
    assert len(ids) == 3 and all(s.metadata["type"] == "discriminative-hallucination" for s in bench.samples())
    with pytest.raises(ValueError, match="unknown AMBER types"):
        Amber(AMBER_DIR, types=["counting"])
    with pytest.raises(ValueError, match="lacks"):
        Amber(tmp_path)


def _run(tmp_path: Path, responses: Path, *extra: str) -> Any:
    from typer.testing import CliRunner

    from halluscope.cli.main import app

    args = ["run", "-b", "amber", "--data", str(AMBER_DIR), "-r", str(responses), "--out", str(tmp_path / "run"),
            "--no-cache", "--quiet", *extra]  # fmt: skip
    return CliRunner().invoke(app, args, terminal_width=300)


def test_own_layout_duplicates_and_bad_json_are_named_with_file_and_line(tmp_path: Path) -> None:
    ids = [s.id for s in first_samples(Amber(AMBER_DIR, types=["existence"]), 2).samples()]
    answers = tmp_path / "answers.json"
    answers.write_text(
        "[\n"
        f'  {{"id": {ids[0]}, "response": "Yes"}},\n'
        f'  {{"id": {ids[1]}, "response": "No"}},\n'
        f'  {{"id": {ids[0]}, "response": "No"}}\n'
        "]\n"
    )
    result = _run(tmp_path, answers, "--bench-opt", "types=existence", "--limit", "2")
    said = " ".join(result.output.split())
    assert result.exit_code == 0, result.output
    assert f"answers.json line 4 (item 2): duplicate id {ids[0]} (first on line 2); the first answer is kept" in said
    logged = {json.loads(line)["id"]: json.loads(line)["response"]
              for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()}  # fmt: skip
    assert logged[ids[0]] == "Yes"  # the first answer, not the later duplicate

    answers.write_text('[\n  {"id": 1, "response": "Yes"},\n  {"id": 2, "response": "No",}\n]\n')
    broken = _run(tmp_path, answers, "--bench-opt", "types=existence", "--limit", "2", "--overwrite")
    said = " ".join(broken.output.split())
    assert broken.exit_code == 2 and f"{answers} line 3 column" in said and "not valid JSON" in said


def test_spec_names_the_tagger_that_ran(tmp_path: Path) -> None:
    first = next(iter(first_samples(Amber(AMBER_DIR, types=["generative"]), 1).samples()))
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"id": first.id, "response": "A dog on a rug."}) + "\n")
    result = _run(tmp_path, answers, "--bench-opt", "types=generative", "--bench-opt", "word_similarity=exact",
                  "--limit", "1")  # fmt: skip
    assert result.exit_code == 0, result.output
    spec = json.loads((tmp_path / "run" / "spec.json").read_text())["benchmark"]
    assert spec["tagger"] in ("nltk", "spacy")
    assert spec["tagger"] == ("spacy" if "spacy_model" in spec else "nltk")
