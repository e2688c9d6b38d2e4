"""The replay backend reads answers in halluscope's format and in each benchmark's official layout, built here
from the real benchmark files with answers filled in the way the official scripts do. The file is read by the
benchmark the model is bound to (its one reader of each layout), as a run binds it before asking."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from halluscope.benchmarks.hqh import HQH
from halluscope.benchmarks.prove import Prove
from halluscope.benchmarks.reefknot import Reefknot
from halluscope.benchmarks.tri_he import TriHE
from halluscope.cache import Cache
from halluscope.models.base import ChatTurn, GenerateRequest
from halluscope.models.replay import ReplayError, ReplayModel, detect_format
from halluscope.models.spec import create_model
from halluscope.responses import ResponsesFile, load_responses
from tests.paths import HQH_DIR


class _DefaultLayouts:
    """A benchmark with only the layouts every benchmark reads (halluscope JSONL), for the JSONL cases."""

    name = "plain"

    def read_responses(
        self, path: Path, *, benchmark_ids: set[str] | None = None, key: str | None = None
    ) -> ResponsesFile:
        return load_responses(path, benchmark_ids=benchmark_ids)


def _replay(path: Path, query: str = "", bench: Any = None) -> ReplayModel:
    """The replay model of ``path``, bound to ``bench`` (the run binds it before asking)."""
    model = create_model(f"replay/{path}{query}", cache=Cache(None))
    assert isinstance(model, ReplayModel)
    model.bind(bench if bench is not None else _DefaultLayouts())
    return model


async def _answer(model: ReplayModel, sample_id: str) -> Any:
    return await model.generate(GenerateRequest(messages=[ChatTurn(text="q")], sample_id=sample_id))


def _tri_he_with_answers(tri_he_json: Path, tmp_path: Path, keys: dict[str, Any], images: int = 2) -> Path:
    raw = json.loads(tri_he_json.read_text())
    kept = dict(list(raw.items())[:images])
    for image_id, entry in kept.items():
        for index, instance in enumerate(entry["instance"]):
            for key, make in keys.items():
                instance[key] = make(image_id, index)
    path = tmp_path / "llava_with_answers.json"
    path.write_text(json.dumps(kept))
    return path


async def test_halluscope_jsonl_with_claims(tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl"
    rows = [
        {"id": "a-0", "response": "A man rides a horse.", "claims": [["man", "rides", "horse"]]},
        {"id": "a-1", "response": "A cat.", "metadata": {"option_probs": {"yes": 0.9, "no": 0.1}}},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + "not json\n")
    model = _replay(path)
    assert model.data.format == "halluscope"
    first = await _answer(model, "a-0")
    assert first.text == "A man rides a horse."
    assert first.metadata["claims"] == [["man", "rides", "horse"]]
    second = await _answer(model, "a-1")
    assert second.option_probs == {"yes": 0.9, "no": 0.1}
    assert any("line 3" in p for p in model.problems)
    with pytest.raises(ReplayError, match="has no answer for sample 'zzz'"):
        await _answer(model, "zzz")


async def test_tri_he_layout_with_answer_key_and_extracted_triplets(tri_he_json: Path, tmp_path: Path) -> None:
    path = _tri_he_with_answers(
        tri_he_json, tmp_path,
        {
            "llava-1.5-7b": lambda i, k: f"answer {i} {k}",
            "llava-1.5-7b_triplets": lambda i, k: [["lamp", "is", "on"], "(man, sits at, desk)"],
        },
    )
    model = _replay(path, bench=TriHE(tri_he_json))
    assert model.data.format == "tri-he"
    image_id = next(iter(json.loads(path.read_text())))
    result = await _answer(model, f"{image_id}-1")
    assert result.text == f"answer {image_id} 1"
    assert result.metadata["claims"] == [["lamp", "is", "on"], ["man", "sits at", "desk"]]
    # the extracted triplets can be switched off
    plain = _replay(path, "?key=llava-1.5-7b&claims_key=none", TriHE(tri_he_json))
    assert "claims" not in (await _answer(plain, f"{image_id}-1")).metadata


def test_tri_he_layout_needs_a_key_when_ambiguous(tri_he_json: Path, tmp_path: Path) -> None:
    path = _tri_he_with_answers(tri_he_json, tmp_path, {"llava": lambda i, k: "a", "minigpt4": lambda i, k: "b"})
    with pytest.raises(ReplayError, match=r"llava, minigpt4.*\?key=<field>"):
        _replay(path, bench=TriHE(tri_he_json))
    assert _replay(path, "?key=minigpt4", TriHE(tri_he_json)).data.answers


async def test_reefknot_jsonl_with_yes_no_probabilities(reefknot_dir: Path, tmp_path: Path) -> None:
    lines = (reefknot_dir / "YESNO.jsonl").read_text().splitlines()[:6]
    out = []
    for number, line in enumerate(lines):
        row = json.loads(line)
        row["response"] = "Yes, it is." if number % 2 == 0 else "No."
        row["yes_prob"], row["no_prob"] = (0.8, 0.2) if number % 2 == 0 else (0.3, 0.7)
        out.append(json.dumps(row))
    path = tmp_path / "llava_yesno.jsonl"
    path.write_text("\n".join(out) + "\n")
    model = _replay(path, bench=Reefknot(data=reefknot_dir))
    assert model.data.format == "reefknot"
    assert model.ids() == {f"yesno-{n}" for n in range(6)}
    result = await _answer(model, "yesno-1")
    assert result.text == "No."
    assert result.option_probs == {"yes": 0.3, "no": 0.7}
    assert result.metadata["no_prob"] == 0.7


def test_reefknot_unanswered_official_file_is_rejected(reefknot_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "Multichoice.jsonl"
    path.write_text("\n".join((reefknot_dir / "Multichoice.jsonl").read_text().splitlines()[:4]) + "\n")
    with pytest.raises(ReplayError, match="is this the unanswered official file"):
        _replay(path, bench=Reefknot(data=reefknot_dir))


async def test_reefknot_multichoice_ids(reefknot_dir: Path, tmp_path: Path) -> None:
    rows = [json.loads(x) for x in (reefknot_dir / "Multichoice.jsonl").read_text().splitlines()[:3]]
    for row in rows:
        row["response"] = "B"
    path = tmp_path / "mcq.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert _replay(path, bench=Reefknot(data=reefknot_dir)).ids() == {"mcq-0", "mcq-1", "mcq-2"}


@pytest.mark.full_data
async def test_hqh_answers(tmp_path: Path) -> None:
    items = json.loads((HQH_DIR / "HQH.json").read_text())[:5]
    for item in items:
        item["answer"] = f"answer to {item['id']}"
    del items[2]["answer"]
    path = tmp_path / "hqh_answers.json"
    path.write_text(json.dumps(items))
    model = _replay(path, bench=HQH(HQH_DIR))
    assert model.data.format == "hqh"
    assert (await _answer(model, str(items[0]["id"]))).text == f"answer to {items[0]['id']}"
    assert len(model.ids()) == 4
    assert any(f"id {items[2]['id']}" in p for p in model.problems)


async def test_prove_list_and_dict(tmp_path: Path) -> None:
    listed = tmp_path / "prove_list.json"
    listed.write_text(json.dumps([
        {"qa_id": "q1", "question": "What colour?", "answer": "reference", "response": "Red."},
        {"qa_id": "q2", "question": "How many?", "response": "Two."},
    ]))  # fmt: skip
    model = _replay(listed, bench=Prove(data=listed))
    assert model.data.format == "prove"
    assert (await _answer(model, "q1")).text == "Red."  # the response, not the reference answer
    keyed = tmp_path / "prove_dict.json"
    keyed.write_text(json.dumps({"q1": "Red.", "q2": {"response": "Two."}}))
    answers = _replay(keyed, bench=Prove(data=listed)).data.answers
    assert {i: a.text for i, a in answers.items()} == {"q1": "Red.", "q2": "Two."}


def test_ids_that_do_not_match_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl"
    rows = [{"id": "2374892-0", "response": "x"}, {"id": "foo", "response": "y"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    model = _replay(path)
    warnings = model.check_ids(["2374892-0", "2374892-1"])
    assert any("no answer for 1 of 2" in w and "2374892-1" in w for w in warnings)
    assert any("outside this selection" in w and "foo" in w for w in warnings)
    with pytest.raises(ReplayError, match=r"none of the 2 sample ids match.*yesno-0"):
        model.check_ids(["yesno-0", "yesno-1"])


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(ReplayError, match="answers file not found"):
        create_model(f"replay/{tmp_path / 'missing.jsonl'}", cache=Cache(None))
    odd = tmp_path / "odd.jsonl"
    odd.write_text(json.dumps({"question": "x", "text": "y"}) + "\n")
    with pytest.raises(ReplayError, match=r"cannot tell the layout.*\?format="):
        detect_format(odd)


def test_prove_layout_is_read_by_the_benchmark_for_responses_too(tmp_path: Path) -> None:
    listed = tmp_path / "prove_list.json"
    listed.write_text(json.dumps([{"qa_id": "q1", "response": "Red."}, {"qa_id": "q2", "response": "Two."}]))
    loaded = Prove(data=listed).read_responses(listed, benchmark_ids={"q1"})
    assert loaded.layout == "prove" and list(loaded.responses) == ["q1"]
    assert loaded.problems == ["prove_list.json item 1: unknown id 'q2': no such sample in the benchmark"]


def test_layout_options_and_a_named_format_are_checked_by_the_benchmark_that_reads(tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps({"id": "a", "response": "x"}) + "\n")
    model = create_model(f"replay/{path}?id_key=qid", cache=Cache(None))
    assert isinstance(model, ReplayModel)
    with pytest.raises(ReplayError, match=r"the plain benchmark's answer layouts take no \?id_key="):
        model.bind(_DefaultLayouts())
    with pytest.raises(ReplayError, match="bind the replay model"):  # read only once bound
        asyncio.run(_answer(model, "a"))
    listed = tmp_path / "prove_list.json"
    listed.write_text(json.dumps([{"qa_id": "q1", "response": "Red."}]))
    named = create_model(f"replay/{listed}?format=hqh", cache=Cache(None))
    assert isinstance(named, ReplayModel)
    with pytest.raises(ReplayError, match="reads this file as the prove layout, not hqh"):
        named.bind(Prove(data=listed))
