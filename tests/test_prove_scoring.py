"""PROVE scoring: the loader on a hand-made file in the released layout, Eq. 1 and 2 against a plain
transcription on the same model, bad input named per item, visual entailment through an endpoint, and the
known-truth checks on synthetic scenes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest

from halluscope.benchmarks import BENCHMARKS
from halluscope.benchmarks.prove import Prove, ProveDataError
from halluscope.cache import Cache
from halluscope.judges.visual_entailment import VisualEntailment, VLMEntailment
from halluscope.scene.tuples import parse_tuple
from halluscope.stages import ScoringContext
from halluscope.types import Claim, Response, SampleRecord
from tests.paths import REPO_ROOT
from tests.scripted_server import ScriptedServer, completion

DATA = REPO_ROOT / "tests" / "data" / "prove" / "prove.json"

RESPONSES = {
    "test_00001-0": "There are four puppies lying on a blue rug.",
    "test_00001-1": "The rug is light blue and the puppies are brown.",
    "test_00002-0": "A green motorcycle is parked against the wall.",
    "test_00001-2": "The puppies lie on a rug next to a red ball.",
    "test_00002-1": "The door is green.",
}


def score(
    bench: Prove, responses: dict[str, Response], cache: Cache | None = None, judge: VisualEntailment | None = None
) -> list[SampleRecord]:
    samples = list(bench.samples())
    ctx = ScoringContext(cache=cache or Cache(None), judge=judge)
    return asyncio.run(bench.score_many([(s, responses.get(s.id)) for s in samples], ctx))


def as_responses(texts: dict[str, str]) -> dict[str, Response]:
    return {k: Response(id=k, response=v) for k, v in texts.items()}


@pytest.fixture(scope="module")
def minilm():  # type: ignore[no-untyped-def]
    from halluscope.embeddings import load_embedder

    return load_embedder(None)


def test_loader_reads_the_released_layout_with_stable_ids() -> None:
    bench = BENCHMARKS.create("prove", data=DATA)
    samples = list(bench.samples())
    # ids: <image file stem>-<position among that image's questions, in file order>
    assert [s.id for s in samples] == ["test_00001-0", "test_00001-1", "test_00002-0", "test_00001-2",
                                       "test_00002-1"]
    first = samples[0]
    assert first.prompt == "How many puppies are on the rug?"
    assert first.reference == "There are four puppies on the rug."
    assert first.metadata["question_type"] == "how many"
    assert first.metadata["qa_diff_tuples"] == ["other - count (puppies, ==4)"]
    graph = bench.scene(first)
    assert graph is not None and graph.relations_between("puppies", "rug") == ["on"]
    assert graph.caption is not None and graph.caption.startswith("Four puppies")
    # the folder and a JSONL copy load the same samples
    assert [s.id for s in Prove(data=DATA.parent).samples()] == [s.id for s in samples]


def test_jsonl_and_bad_files(tmp_path: Path) -> None:
    items = json.loads(DATA.read_text())
    jsonl = tmp_path / "prove.jsonl"
    jsonl.write_text("".join(json.dumps(i) + "\n" for i in items))
    assert len(list(Prove(data=jsonl).samples())) == 5
    # items that carry their own ids (as `halluscope build prove` writes them) keep them; repeats are named
    own = [dict(i, id=f"q{n}", image_id="img") for n, i in enumerate(items)]
    own[4]["id"] = "q0"
    path = tmp_path / "own.json"
    path.write_text(json.dumps(own))
    samples = list(Prove(data=path).samples())
    assert [s.id for s in samples][:4] == ["q0", "q1", "q2", "q3"] and samples[0].image_id == "img"
    assert "id 'q0' repeats" in samples[4].metadata["load_error"]
    broken = tmp_path / "broken.json"
    broken.write_text("[{")
    with pytest.raises(ProveDataError, match=r"broken\.json is not valid JSON"):
        Prove(data=broken)
    with pytest.raises(ProveDataError, match="does not exist"):
        Prove(data=tmp_path / "nope.json")
    with pytest.raises(ValueError, match="unknown option"):
        BENCHMARKS.create("prove", data=DATA, entailmnt="none")


def test_scores_equal_a_plain_transcription_of_eq_1_and_2(minilm) -> None:  # type: ignore[no-untyped-def]
    bench = Prove(data=DATA)
    records = {r.id: r for r in score(bench, as_responses(RESPONSES))}
    assert all(r.failure is None for r in records.values()), [r.failure for r in records.values()]

    def emb(tuple_string: str) -> np.ndarray:
        # the model itself, one string at a time: nothing shared with the batched scorer but the weights
        vector = minilm.model.encode([parse_tuple(tuple_string).phrase()], normalize_embeddings=True)[0]
        return np.asarray(vector, dtype=np.float64)

    for sample in bench.samples():
        record = records[sample.id]
        answer = sample.metadata["qa_diff_tuples"]
        response = record.metadata["response_tuples"]
        image = bench.image_tuples[sample.image_id or ""]
        assert response, f"{sample.id}: no response tuples"
        # Eq. 1
        h = sum(max(float(emb(t) @ emb(r)) for r in response) for t in answer) / len(answer)
        # Eq. 2 with p(I |= t') = 0 (entailment 'none')
        t_score = sum(max(max(float(emb(r) @ emb(c)) for c in image), 0.0) for r in response) / len(response)
        assert record.metadata["hscore"] == pytest.approx(h, abs=1e-5)
        assert record.metadata["tscore"] == pytest.approx(t_score, abs=1e-5)

    report = bench.metrics(list(records.values()))
    hs = [r.metadata["hscore"] for r in records.values()]
    ts = [r.metadata["tscore"] for r in records.values()]
    assert report.metrics["hscore"] == pytest.approx(100 * np.mean(hs))
    assert report.metrics["tscore"] == pytest.approx(100 * np.mean(ts))
    assert report.metrics["average"] == pytest.approx(50 * (np.mean(hs) + np.mean(ts)))
    assert set(report.groups) == {"question_type=what color", "question_type=how many",
                                  "question_type=what is", "question_type=where are"}
    assert report.groups["question_type=what color"]["n"] == 2
    # the made-up motorcycle answer recovers less than the faithful door answer
    assert records["test_00002-0"].metadata["hscore"] < records["test_00002-1"].metadata["hscore"]


def test_bad_input_is_named_per_item_and_the_rest_is_scored(tmp_path: Path) -> None:
    items = json.loads(DATA.read_text())
    items[1]["qa_diff_tuples"] = ["attribute - color (rug)"]           # malformed tuple
    for item in items:
        if item["image"] == "test_00002.jpg":
            item["image_tuples"] = []                                  # scene graph missing
    items.append({"image": "test_00003.jpg", "question": "Why?", "image_tuples": []})  # no answer
    path = tmp_path / "prove.json"
    path.write_text(json.dumps(items))
    bench = Prove(data=path)
    texts = dict(RESPONSES)
    texts["test_00001-2"] = "   "                                      # empty response
    records = {r.id: r for r in score(bench, as_responses(texts))}
    assert "attribute - color (rug)" in str(records["test_00001-1"].failure)
    assert "test_00001-1" in str(records["test_00001-1"].failure)
    assert "no scene graph for image 'test_00002'" in str(records["test_00002-0"].failure)
    assert "empty response" in str(records["test_00001-2"].failure)
    assert "missing or empty 'answer'" in str(records["test_00003-0"].failure)
    assert records["test_00001-0"].failure is None and records["test_00001-0"].metadata["hscore"] > 0.5
    report = bench.metrics(list(records.values()))
    assert report.counts["failed"] == 5 and report.counts["scored"] == 1


def test_supplied_tuples_and_claims_skip_extraction() -> None:
    bench = Prove(data=DATA)
    responses = {
        "test_00001-0": Response(id="test_00001-0", response="Four.",
                                 metadata={"tuples": ["other - count (puppies, ==4)"]}),
        "test_00001-1": Response(id="test_00001-1", response="Light blue.",
                                 claims=[Claim.of(("rug", "is", "light blue"))]),
    }
    records = {r.id: r for r in score(bench, responses)}
    # copying the reference tuples recovers all of them
    assert records["test_00001-0"].metadata["hscore"] == pytest.approx(1.0, abs=1e-6)
    assert records["test_00001-0"].claims_source == "supplied"
    assert records["test_00001-1"].metadata["hscore"] == pytest.approx(1.0, abs=1e-6)
    assert records["test_00001-1"].metadata["response_tuples"] == [
        "entity - whole (rug)", "attribute - color (rug, light blue)"]


def test_vlm_entailment_maps_yes_maybe_no_and_names_garbage(tmp_path: Path) -> None:
    from PIL import Image

    images = tmp_path / "images"
    images.mkdir()
    Image.new("RGB", (32, 32), (200, 30, 30)).save(images / "test_00001.jpg")
    Image.new("RGB", (32, 32), (30, 200, 30)).save(images / "test_00002.jpg")
    # first match wins: the more specific words come first
    replies = {"brown": "No, they are not.", "ball": "maybe", "motorcycle": "purple", "puppies": "Yes."}

    def respond(body):  # type: ignore[no-untyped-def]
        text = body["messages"][0]["content"][1]["text"]
        assert body["messages"][0]["content"][0]["image_url"]["url"].startswith("data:image/jpeg;base64,")
        word = next((w for w in replies if w in text), None)
        return completion(replies[word] if word else "no")

    with ScriptedServer(responder=respond) as server:
        bench = Prove(data=DATA, images=images)
        vlm = VLMEntailment(model="scripted-vlm", base_url=server.base_url)  # --judge vlm --judge-model ...
        texts = {"test_00001-2": "The puppies lie on a rug next to a red ball.",
                 "test_00001-1": "The puppies are brown.", "test_00002-0": "A green motorcycle is parked."}
        records = {r.id: r for r in score(bench, as_responses(texts), judge=vlm)}
        asked = len(server.chat_requests())
    matches = {m["tuple"]: m for m in records["test_00001-2"].metadata["response_matches"]}
    assert matches["entity - whole (ball)"]["entailment"] == 0.5
    assert matches["attribute - color (ball, red)"]["entailment"] == 0.5
    assert records["test_00001-2"].metadata["tscore"] == pytest.approx(
        np.mean([max(m["similarity"], m["entailment"] or 0.0) for m in matches.values()]))
    brown = {m["tuple"]: m for m in records["test_00001-1"].metadata["response_matches"]}
    assert brown["attribute - color (puppies, brown)"]["entailment"] == 0.0
    # an answer that is not yes / maybe / no leaves tscore undefined, named; hscore stands
    motorcycle = records["test_00002-0"]
    assert motorcycle.metadata["tscore"] is None and "'purple' is not yes, maybe or no" in motorcycle.metadata[
        "tscore_error"]
    assert motorcycle.metadata["hscore"] is not None
    # tuples whose graph similarity already reaches 0.75 are not asked about
    total = sum(len(r.metadata.get("response_tuples", [])) for r in records.values())
    assert 0 < asked < total


def test_missing_image_with_entailment_is_named(tmp_path: Path) -> None:
    with ScriptedServer(responder=lambda body: completion("yes")) as server:
        with pytest.warns(FutureWarning, match="--judge vlm"):  # the old spelling still works, with a note
            bench = Prove(data=DATA, images=tmp_path, entailment="vlm", entailment_model="m",
                          entailment_base_url=server.base_url)
        record = score(bench, as_responses({"test_00002-0": "A green motorcycle."}))[2]
    assert record.metadata["tscore"] is None and "image not found" in record.metadata["tscore_error"]


# -- known truth ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from halluscope.builders.synthetic import build_synthetic

    folder = tmp_path_factory.mktemp("synthetic")
    build_synthetic(folder, n=8, seed=3)
    return folder


def sim_responses(bench: Prove, spec: str) -> dict[str, Response]:
    """Answers of a scene-graph simulator, collected the way `halluscope run --model sim/...` collects them."""
    from halluscope.models.sim import SimModel
    from halluscope.runs.respond import build_request, to_response

    model = SimModel.from_spec(spec)
    out = {}
    for sample in bench.samples():
        result = asyncio.run(model.generate(build_request(bench, sample)))
        out[sample.id] = to_response(sample.id, result, model.name())
    return out


def test_oracle_beats_a_hallucinating_simulator_on_both_scores(synthetic: Path) -> None:
    bench = Prove(data=synthetic)
    samples = list(bench.samples())
    assert samples and all(bench.scene(s) is not None for s in samples)
    oracle = bench.metrics(score(bench, sim_responses(bench, "oracle")))
    liar = bench.metrics(score(bench, sim_responses(bench, "hallucinate?rate=0.8&seed=1")))
    assert oracle.counts["failed"] == 0 and liar.counts["failed"] == 0
    assert oracle.metrics["hscore"] > liar.metrics["hscore"]  # type: ignore[operator]
    assert oracle.metrics["tscore"] > liar.metrics["tscore"]  # type: ignore[operator]
    assert oracle.metrics["tscore"] == pytest.approx(100, abs=0.01)  # every stated fact is in the graph


def test_copying_the_reference_answer_scores_hscore_near_100(synthetic: Path) -> None:
    bench = Prove(data=synthetic)
    copies = {s.id: Response(id=s.id, response=s.reference or "") for s in bench.samples()}
    report = bench.metrics(score(bench, copies))
    assert report.counts["failed"] == 0
    assert report.metrics["hscore"] is not None and report.metrics["hscore"] >= 90


def test_without_data_the_hub_snapshot_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hub is unreachable here: the download call is replaced, the rest of the path is the real one."""
    import huggingface_hub

    snapshot = tmp_path / "snapshot"
    snapshot.mkdir()
    (snapshot / "prove.json").write_text(DATA.read_text())
    calls = []

    def fake_download(**kwargs):  # type: ignore[no-untyped-def]
        calls.append(kwargs)
        return str(snapshot)

    monkeypatch.delenv("HALLUSCOPE_PROVE", raising=False)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_download)
    bench = BENCHMARKS.create("prove")
    assert calls[0]["repo_id"] == "Salesforce/PROVE" and calls[0]["repo_type"] == "dataset"
    assert len(list(bench.samples())) == 5

    def offline(**kwargs):  # type: ignore[no-untyped-def]
        raise OSError("no network")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    with pytest.raises(ProveDataError, match="could not download Salesforce/PROVE"):
        BENCHMARKS.create("prove")


def test_each_distinct_string_is_encoded_once_per_batch(minilm) -> None:  # type: ignore[no-untyped-def]
    from halluscope.judges.prove import ProveItem, ProveScorer

    minilm.forget_memory()
    scorer = ProveScorer(embedder=minilm)
    dog, rug = parse_tuple("entity - whole (dog)"), parse_tuple("relation - spatial (dog, rug, on)")
    items = [ProveItem(sample_id=str(i), answer_tuples=[dog, rug], response_tuples=[dog],
                       image_tuples=[dog, rug, parse_tuple("attribute - color (rug, red)")]) for i in range(50)]
    minilm.stats.reset()
    results = asyncio.run(scorer.score_many(items))
    assert minilm.stats.requested == 3 and minilm.stats.encoded == 3  # 3 distinct phrases, one call
    assert all(r.hscore == pytest.approx(np.mean([1.0, float(minilm.encode(["dog on rug"])[0] @
                                                               minilm.encode(["dog"])[0])]), abs=1e-6)
               for r in results)  # type: ignore[union-attr]
