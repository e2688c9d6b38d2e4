"""Simulated answerers: a truthful oracle, errors at the asked rates and of the asked kinds, the truth
recorded, and a judge agreeing with that truth on the simulator's own claims."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from halluscope.builders.synthetic import build_synthetic
from halluscope.models.base import ChatTurn, GenerateRequest
from halluscope.models.sim import SimError, SimModel, StatedClaim
from halluscope.scene.graph import SceneGraph, normalise_name
from halluscope.stages import Failure
from halluscope.types import ErrorType


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from halluscope.benchmarks.synthetic import SyntheticBenchmark

    out = tmp_path_factory.mktemp("sim") / "set"
    build_synthetic(out, n=30, seed=5)
    return SyntheticBenchmark(out)


def _request(bench, sample) -> GenerateRequest:  # type: ignore[no-untyped-def]
    from halluscope.runs.respond import build_request

    return build_request(bench, sample)


def _true_under(scene: SceneGraph, claim: StatedClaim) -> bool:
    if claim.relation == "is":
        return claim.object in scene.attributes(claim.subject)
    return claim.relation in scene.relations_between(claim.subject, claim.object)


def _answers(bench, spec: str):  # type: ignore[no-untyped-def]
    from halluscope.models.spec import create_model

    model = create_model(spec)
    samples = list(bench.samples())
    results = asyncio.run(model.generate_many([_request(bench, s) for s in samples]))
    return samples, results


def test_oracle_states_the_questions_facts_and_only_true_ones(bench) -> None:  # type: ignore[no-untyped-def]
    samples, results = _answers(bench, "sim/oracle")
    exact = checked = 0
    for sample, result in zip(samples, results, strict=True):
        assert not isinstance(result, Failure)
        scene = bench.scene(sample)
        sim = result.metadata["sim"]
        assert sim["calibration_tool"] is True and sim["model"] == "sim/oracle"
        claims = [StatedClaim.model_validate(c) for c in sim["claims"]]
        assert claims and not any(c.falsified for c in claims)
        assert all(_true_under(scene, c) for c in claims), sample.id
        assert result.metadata["claims"] == [[c.subject, c.relation, c.object] for c in claims]
        for claim in claims:
            assert claim.subject in result.text and claim.object in result.text
        gt = {t.strip("()") for t in sample.metadata["gt_triplets"]}
        stated = {f"{c.subject}, {c.relation}, {c.object}" for c in claims}
        if sample.metadata["template"] == "describe":  # its own choice of relations; the same attributes
            assert {t for t in gt if ", is, " in t} == {t for t in stated if ", is, " in t}
            continue
        exact += gt == stated
        checked += 1
    # The simulator reads the question, not the answer key; it recovers the key for every other template.
    assert exact == checked > 60


def test_hallucinating_sim_falsifies_at_the_rate_and_in_the_asked_way(bench) -> None:  # type: ignore[no-untyped-def]
    samples, results = _answers(bench, "sim/hallucinate?object=0.2&relation=0.3&attribute=0.2&seed=1")
    kinds = {"object": [0, 0], "relation": [0, 0], "attribute": [0, 0]}  # [falsified, facts] by fact kind
    for sample, result in zip(samples, results, strict=True):
        assert not isinstance(result, Failure)
        scene = bench.scene(sample)
        names = {normalise_name(n) for n in scene.entities()}
        false_relations = {tuple(t) for t in scene.graph.graph["false_relations"]}
        for raw in result.metadata["sim"]["claims"]:
            claim = StatedClaim.model_validate(raw)
            fact_kind = "attribute" if (claim.original or [None, claim.relation])[1] == "is" else "relation"
            kinds[fact_kind][1] += 1
            if not claim.falsified:
                assert _true_under(scene, claim)
                continue
            kinds[fact_kind][0] += 1
            assert not _true_under(scene, claim), claim
            if claim.error == ErrorType.OBJECT:
                assert {normalise_name(claim.subject), normalise_name(claim.object)} - names, claim
            elif claim.error == ErrorType.RELATION:
                assert (claim.subject, claim.relation, claim.object) in false_relations
                assert claim.original and claim.original[1] != claim.relation
            else:
                assert claim.error == ErrorType.ATTRIBUTE and claim.relation == "is"
                assert claim.original and claim.original[2] != claim.object
    relation_rate = kinds["relation"][0] / kinds["relation"][1]
    attribute_rate = kinds["attribute"][0] / kinds["attribute"][1]
    assert 0.38 <= relation_rate <= 0.62, relation_rate  # object 0.2 + relation 0.3
    assert 0.28 <= attribute_rate <= 0.52, attribute_rate  # object 0.2 + attribute 0.2


def test_answers_are_deterministic_and_errors_nest_as_the_rate_grows(bench) -> None:  # type: ignore[no-untyped-def]
    sample = next(s for s in bench.samples() if s.metadata["template"] == "describe")
    scene = bench.scene(sample)
    low, high = SimModel.from_spec("hallucinate?rate=0.2"), SimModel.from_spec("hallucinate", rate=0.6)
    a = low.answer(scene, sample.prompt, sample_id=sample.id)
    assert a == low.answer(scene, sample.prompt, sample_id=sample.id)
    b = high.answer(scene, sample.prompt, sample_id=sample.id)
    falsified_low = {tuple(c.original or []) for c in a.claims if c.falsified}
    falsified_high = {tuple(c.original or []) for c in b.claims if c.falsified}
    assert falsified_low <= falsified_high and len(falsified_high) > len(falsified_low)
    other_seed = SimModel.from_spec("hallucinate", rate=0.6, seed=9).answer(
        scene, sample.prompt, sample_id=sample.id
    )
    assert other_seed != b


def test_specs_and_errors() -> None:
    from halluscope.models.spec import ModelSpecError, create_model

    model = create_model("sim/hallucinate?object=0.2&relation=0.3&attribute=0.1&seed=0")
    assert isinstance(model, SimModel)
    assert model.rates.object == 0.2 and model.rates.relation == 0.3 and model.rates.attribute == 0.1
    assert model.name() == "sim/hallucinate?object=0.2&relation=0.3&attribute=0.1&seed=0"
    assert model.identity()["calibration_tool"] is True
    with pytest.raises((SimError, ModelSpecError), match="sim/oracle states only true facts"):
        create_model("sim/oracle?object=0.1")
    with pytest.raises(ValueError, match="exclusive per fact"):
        SimModel.from_spec("hallucinate", object=0.6, relation=0.6)
    with pytest.raises(SimError, match="unknown simulator"):
        SimModel.from_spec("psychic")
    with pytest.raises(ModelSpecError, match="does not take option"):
        create_model("sim/hallucinate?objects=0.1")

    request = GenerateRequest(messages=[ChatTurn(text="What is on the box?")], sample_id="x-0")
    [failure] = asyncio.run(SimModel().generate_many([request]))
    assert isinstance(failure, Failure) and "scene graph" in failure.reason and "x-0" in failure.reason


def test_sim_answers_any_scene_graph_with_supplied_facts() -> None:
    scene = SceneGraph.from_triplets(
        [("man", "riding", "horse"), ("horse", "is", "brown")], objects=["man", "horse"], image_id="img"
    )
    model = SimModel("hallucinate", seed=2)
    answer = model.answer(scene, "What is the man doing?", sample_id="img-0")
    assert {(c.subject, c.relation, c.object) for c in answer.claims} >= {("man", "riding", "horse")}
    text = asyncio.run(
        model.generate(
            GenerateRequest(
                messages=[ChatTurn(text="Why?")],
                scene=scene,
                metadata={"gt_triplets": ["(horse, is, brown)"]},
            )
        )
    ).text
    assert text == "The horse is brown."


@pytest.fixture(scope="module")
def typed_judge():  # type: ignore[no-untyped-def]
    from halluscope.cache import Cache
    from halluscope.judges import JUDGES

    return JUDGES.create("typed", cache=Cache(None))


def _judge(bench, judge, results, samples):  # type: ignore[no-untyped-def]
    from halluscope.stages import JudgeItem
    from halluscope.types import Claim

    items = []
    truths = []
    for sample, result in zip(samples, results, strict=True):
        claims = [StatedClaim.model_validate(c) for c in result.metadata["sim"]["claims"]]
        items.append(
            JudgeItem(
                sample_id=sample.id,
                claims=[Claim.of(c.claim().as_tuple()) for c in claims],
                scene=bench.scene(sample),
                question=sample.prompt,
                response=result.text,
            )
        )
        truths.append(claims)
    verdicts = asyncio.run(judge.judge_many(items))
    return list(zip(truths, verdicts, strict=True))


def test_judge_supports_every_oracle_claim(bench, typed_judge) -> None:  # type: ignore[no-untyped-def]
    samples, results = _answers(bench, "sim/oracle")
    for truth, verdicts in _judge(bench, typed_judge, results, samples):
        assert not isinstance(verdicts, Failure)
        assert [v.label.value for v in verdicts] == ["supported"] * len(truth), (truth, verdicts)


def test_judge_flags_the_falsified_claims(bench, typed_judge) -> None:  # type: ignore[no-untyped-def]
    samples, results = _answers(bench, "sim/hallucinate?object=0.25&relation=0.25&attribute=0.25&seed=3")
    caught = planted = false_alarms = 0
    for truth, verdicts in _judge(bench, typed_judge, results, samples):
        assert not isinstance(verdicts, Failure)
        for claim, verdict in zip(truth, verdicts, strict=True):
            said = verdict.label.value == "hallucinated"
            if claim.falsified:
                planted += 1
                caught += said
            else:
                false_alarms += said
    assert planted > 50
    assert caught / planted >= 0.9, (caught, planted)
    assert false_alarms == 0


def test_demo_models_in_a_run(bench, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """`halluscope run --model sim/...` takes the simulator's claims as supplied, keeping its truth."""
    from typer.testing import CliRunner

    from halluscope.cli.main import app

    monkeypatch.setenv("HALLUSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--benchmark",
            "synthetic",
            "--data",
            str(bench.path),
            "--limit",
            "12",
            "--judge",
            "typed",
            "--model",
            "sim/hallucinate?rate=0.5&seed=0",
            "--out",
            str(out),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    import json

    metrics = json.loads((out / "metrics.json").read_text())["metrics"]
    assert metrics["injected_hallu_q"] > 20
    assert abs(metrics["hallu_q"] - metrics["injected_hallu_q"]) < 15
    first = json.loads((out / "samples.jsonl").read_text().splitlines()[0])
    assert first["claims_source"] == "supplied"
