"""Detect-then-Calibrate: the formula on crafted logits, then the wrapper end to end on tiny VLMs."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import math
from pathlib import Path
from typing import Any

import pytest
import torch

from halluscope.cache import Cache
from halluscope.mitigation.dtc import (
    DTCConfig,
    DTCModel,
    DTCSummary,
    calibrate_step,
    contrast_logits,
    dtc,
    needs_calibration,
    option_entropy,
    relative_top_mask,
    resolve_layer,
    summarize,
)
from halluscope.models import ChatTurn, GenerateRequest, GenerateResult, Model
from halluscope.models.hf import HFModel, option_probabilities
from halluscope.stages import Failure
from tests import tiny_vlms


def logits_of(probs: list[float]) -> torch.Tensor:
    """Logits whose softmax is exactly ``probs`` (which sum to 1)."""
    return torch.tensor(probs, dtype=torch.float64).log().float()


def bits(*probs: float) -> float:
    return -sum(p * math.log2(p) for p in probs if p > 0)


# -- the formula on crafted numbers --


def test_entropy_is_in_bits_over_renormalised_options() -> None:
    assert option_entropy(torch.tensor([0.5, 0.5])).item() == pytest.approx(1.0)
    assert option_entropy(torch.tensor([1.0, 0.0])).item() == pytest.approx(0.0)
    # mass elsewhere in the vocabulary does not matter: 0.2/0.2 is as unsure as 0.5/0.5
    assert option_entropy(torch.tensor([0.2, 0.2])).item() == pytest.approx(1.0)
    assert option_entropy(torch.tensor([0.56, 0.24])).item() == pytest.approx(bits(0.7, 0.3), abs=1e-6)
    # k options: up to log2 k bits, or [0, 1] when normalised
    assert option_entropy(torch.tensor([0.25] * 4)).item() == pytest.approx(2.0)
    assert option_entropy(torch.tensor([0.25] * 4), normalize=True).item() == pytest.approx(1.0)
    assert option_entropy(torch.tensor([0.7, 0.1, 0.1, 0.1])).item() == pytest.approx(
        bits(0.7, 0.1, 0.1, 0.1), abs=1e-6
    )
    # options with no probability at all: not an answering step, nothing to calibrate
    assert option_entropy(torch.tensor([0.0, 0.0])).item() == 0.0
    batch = option_entropy(torch.tensor([[0.5, 0.5], [0.9, 0.1]]))
    assert batch.tolist() == pytest.approx([1.0, bits(0.9, 0.1)], abs=1e-6)


def test_which_entropies_are_calibrated_at_the_default_threshold() -> None:
    threshold = DTCConfig().threshold
    assert threshold == 0.9
    entropies = torch.tensor([bits(0.8, 0.2), bits(0.7, 0.3), bits(0.65, 0.35), 0.9, 1.0, float("nan")])
    # 0.72 and 0.88 bits are confident enough; 0.93, exactly 0.9, and 1.0 are not; NaN (no options) never
    assert needs_calibration(entropies, threshold).tolist() == [False, False, True, True, True, False]


def test_relative_top_keeps_tokens_within_a_factor_of_the_best() -> None:
    logprobs = torch.log(torch.tensor([0.5, 0.06, 0.05, 0.049, 0.341]))
    # cutoff: 0.5 * 0.1 = 0.05 -> 0.05 itself is kept, 0.049 is not
    assert relative_top_mask(logprobs, 0.1).tolist() == [True, True, True, False, True]
    assert relative_top_mask(logprobs, 0.5).tolist() == [True, False, False, False, True]
    assert relative_top_mask(logprobs, 0.0).all()


def test_contrast_follows_the_formula_and_can_flip_the_answer() -> None:
    final = logits_of([0.5, 0.45, 0.04, 0.01])
    intermediate = logits_of([0.7, 0.1, 0.1, 0.1])
    scores = contrast_logits(final, intermediate, alpha=0.1, relative_top=0.1)
    expected_0 = 1.1 * math.log(0.5) - 0.1 * math.log(0.7)  # -0.7268
    expected_1 = 1.1 * math.log(0.45) - 0.1 * math.log(0.1)  # -0.6481
    assert scores[0].item() == pytest.approx(expected_0, abs=1e-5)
    assert scores[1].item() == pytest.approx(expected_1, abs=1e-5)
    # 0.04 and 0.01 are below 0.5 * 0.1: masked out however the intermediate layer rates them
    assert scores[2].item() == float("-inf") and scores[3].item() == float("-inf")
    # the intermediate layer was sure of token 0 and the final layer barely preferred it: token 1 wins
    assert final.argmax().item() == 0 and scores.argmax().item() == 1
    # a smaller alpha keeps the final layer's choice
    assert contrast_logits(final, intermediate, alpha=0.01, relative_top=0.1).argmax().item() == 0
    # the shift of the logits does not matter (log-softmax on both sides)
    shifted = contrast_logits(final + 3.0, intermediate - 7.0, alpha=0.1, relative_top=0.1)
    assert torch.allclose(shifted[:2], scores[:2], atol=1e-5)


def test_one_step_calibrates_only_unsure_rows_with_options() -> None:
    yes, no = [0], [1]
    final = torch.stack(
        [
            logits_of([0.5, 0.45, 0.04, 0.01]),  # unsure between yes and no -> calibrated, flips to no
            logits_of([0.95, 0.01, 0.03, 0.01]),  # sure -> untouched
            logits_of([0.5, 0.45, 0.04, 0.01]),  # unsure but no options -> untouched
            logits_of([0.5, 0.45, 0.04, 0.01]),  # unsure but not eligible (finished) -> untouched
        ]
    )
    intermediate = logits_of([0.7, 0.1, 0.1, 0.1]).expand(4, -1)
    outcome = calibrate_step(
        final,
        intermediate,
        [[yes, no], [yes, no], None, [yes, no]],
        DTCConfig(),
        eligible=torch.tensor([True, True, True, False]),
    )
    assert outcome.calibrated.tolist() == [True, False, False, False]
    assert outcome.entropy[0].item() == pytest.approx(bits(0.5 / 0.95, 0.45 / 0.95), abs=1e-5)
    assert outcome.entropy[1].item() == pytest.approx(bits(0.95 / 0.96, 0.01 / 0.96), abs=1e-5)
    assert math.isnan(outcome.entropy[2].item())
    assert outcome.option_probs[0] == pytest.approx([0.5, 0.45], abs=1e-6) and outcome.option_probs[2] is None
    assert outcome.scores.argmax(dim=-1).tolist() == [1, 0, 0, 0]
    assert torch.equal(outcome.scores[1:], final[1:])
    # a threshold above the highest possible entropy (1 bit for two options) calibrates nothing
    assert not calibrate_step(
        final, intermediate, [[yes, no]] * 4, DTCConfig(threshold=1.01)
    ).calibrated.any()


def test_option_probabilities_sum_each_options_token_ids() -> None:
    logits = logits_of([0.3, 0.2, 0.1, 0.4])
    probs = option_probabilities(logits, [[0, 1], [3]])
    assert probs.tolist() == pytest.approx([0.5, 0.4], abs=1e-6)


def test_layers_are_hidden_state_indices_and_negative_counts_from_the_end() -> None:
    assert resolve_layer(-2, 40) == 39  # the default: output of the second-to-last layer
    assert resolve_layer(38, 40) == 38  # the paper's choice for LLaVA-1.5-13B
    assert resolve_layer(0, 40) == 0 and resolve_layer(-41, 40) == 0
    for bad in (40, -1, -42, 41):
        with pytest.raises(ValueError, match=r"outside 0\.\.39"):
            resolve_layer(bad, 40)


def test_summary_counts_from_results_and_saved_metadata() -> None:
    calibrated_changed = {"dtc": {"options": ["yes", "no"], "calibrated": True, "changed": True}}
    calibrated_only = {"dtc": {"options": ["yes", "no"], "calibrated": True, "changed": False}}
    plain = {"dtc": {"options": [], "calibrated": False, "changed": False}}
    results: list[Any] = [
        GenerateResult(text="No", metadata=calibrated_changed),
        GenerateResult(text="Yes", metadata=calibrated_only),
        plain,
        Failure("boom"),
        None,
        GenerateResult(text="no dtc here"),
    ]
    assert summarize(results) == DTCSummary(items=3, calibrated=2, changed=1, without_options=1)


def test_config_rejects_unknown_and_out_of_range_settings() -> None:
    with pytest.raises(ValueError, match="thresold"):
        DTCConfig(thresold=0.5)  # type: ignore[call-arg]
    with pytest.raises(ValueError):
        DTCConfig(relative_top=1.5)
    with pytest.raises(ValueError):
        DTCConfig(steps="some")  # type: ignore[arg-type]


# -- end to end on tiny models --


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("dtc")


@pytest.fixture(scope="module")
def images(workdir: Path) -> dict[str, str]:
    return {
        "drawn": str(tiny_vlms.draw_image(workdir / "drawn.png", size=48, seed=3)),
        "photo": str(tiny_vlms.photo_image(workdir / "astronaut.jpg", size=56)),
    }


@pytest.fixture(scope="module")
def llava_path(workdir: Path) -> Path:
    return tiny_vlms.build_tiny_llava(workdir / "llava", layers=4)


@pytest.fixture(scope="module", params=["llava", "qwen2-vl"])
def hf(request: pytest.FixtureRequest, workdir: Path, llava_path: Path) -> HFModel:
    if request.param == "llava":
        return HFModel.from_spec(str(llava_path), batch_size=4)
    path = tiny_vlms.build_tiny_qwen2vl(workdir / "qwen", layers=4)
    return HFModel.from_spec(str(path), batch_size=4, processor=tiny_vlms.qwen2vl_image_processor(path))


def questions(images: dict[str, str]) -> list[GenerateRequest]:
    def ask(text: str, image: str, options: list[str] | None) -> GenerateRequest:
        turn = ChatTurn(text=text, images=[image])
        return GenerateRequest(messages=[turn], max_tokens=5, answer_options=options)

    return [
        ask("Is the cat on the mat? Please answer yes or no.", images["drawn"], ["yes", "no"]),
        ask("Is the man riding a horse? Please answer yes or no.", images["photo"], ["yes", "no"]),
        ask(
            "What is the relation? A. on B. under C. behind D. near, please choose.",
            images["photo"],
            list("ABCD"),
        ),
        ask("Describe the image in one sentence.", images["drawn"], None),
    ]


def texts(results: list[GenerateResult | Failure]) -> list[str]:
    assert all(isinstance(r, GenerateResult) for r in results), results
    return [r.text for r in results if isinstance(r, GenerateResult)]


async def test_never_calibrating_is_plain_greedy(hf: HFModel, images: dict[str, str]) -> None:
    requests = questions(images)
    plain = await hf.generate_many(requests)
    dtc = DTCModel(hf, DTCConfig(threshold=100.0))
    results = await dtc.generate_many(requests)
    assert texts(results) == texts(plain)
    records = [r.metadata["dtc"] for r in results if isinstance(r, GenerateResult)]
    assert not any(r["calibrated"] or r["changed"] for r in records)
    assert records[0]["entropy"] is not None and records[3]["entropy"] is None
    assert dtc.summary() == DTCSummary(items=4, calibrated=0, changed=0, without_options=1)


async def test_calibrating_every_step_changes_answers_and_says_so(
    hf: HFModel, images: dict[str, str]
) -> None:
    requests = questions(images)
    plain = texts(await hf.generate_many(requests))
    dtc = DTCModel(hf, DTCConfig(threshold=0.0, alpha=1.0))
    results = await dtc.generate_many(requests)
    calibrated = texts(results)
    records = [r.metadata["dtc"] for r in results if isinstance(r, GenerateResult)]
    assert [r["calibrated"] for r in records] == [True, True, True, False]
    # "changed" is derived without a second run; it must agree with an actual plain greedy run
    assert [r["changed"] for r in records] == [a != b for a, b in zip(calibrated, plain, strict=True)]
    assert any(r["changed"] for r in records)
    for record in records[:3]:
        assert record["steps_calibrated"][0] == 0
        assert set(record["calibrated_option_probs"]) == set(record["options"])
        if record["changed"]:
            change = record["first_change"]
            assert change["plain_token_id"] != change["calibrated_token_id"]
    summary = dtc.summary()
    assert summary.items == 4 and summary.calibrated == 3
    assert summary.changed == sum(r["changed"] for r in records) >= 1


async def test_contrast_with_no_weight_and_no_mask_changes_nothing(
    hf: HFModel, images: dict[str, str]
) -> None:
    requests = questions(images)
    plain = texts(await hf.generate_many(requests))
    results = await DTCModel(hf, DTCConfig(threshold=0.0, alpha=0.0, relative_top=0.0)).generate_many(
        requests
    )
    assert texts(results) == plain
    records = [r.metadata["dtc"] for r in results if isinstance(r, GenerateResult)]
    assert [r["calibrated"] for r in records] == [True, True, True, False]
    assert not any(r["changed"] for r in records)


@pytest.mark.parametrize("final_norm", [True, False])
async def test_the_chosen_layer_is_read_through_the_lm_head(
    hf: HFModel, images: dict[str, str], final_norm: bool
) -> None:
    request = questions(images)[0]
    dtc = DTCModel(hf, DTCConfig(layer=2, final_norm=final_norm))
    result = await dtc.generate(request)
    record = result.metadata["dtc"]
    assert record["layer"] == 2
    vectors = hf.hidden_states(request)
    ids = list(hf.option_token_ids(["yes", "no"]).values())
    expected = option_probabilities(hf.logit_lens(vectors[2], apply_norm=final_norm), ids).tolist()
    got = [record["intermediate_option_probs"][o] for o in ("yes", "no")]
    assert got == pytest.approx(expected, rel=1e-4, abs=1e-9)
    assert record["option_probs"] == pytest.approx(result.option_probs, rel=1e-6)


async def test_batched_calibration_equals_one_at_a_time(hf: HFModel, images: dict[str, str]) -> None:
    requests = questions(images)
    config = DTCConfig(threshold=0.0, alpha=1.0)
    batched = await DTCModel(hf, config).generate_many(requests)
    single_hf = HFModel(hf.name, hf.model, hf.processor, device=hf.device, dtype=hf.dtype, batch_size=1)
    alone = await DTCModel(single_hf, config).generate_many(requests)
    assert texts(batched) == texts(alone)
    for one, other in zip(batched, alone, strict=True):
        assert isinstance(one, GenerateResult) and isinstance(other, GenerateResult)
        assert one.metadata["batch_size"] == 4 and other.metadata["batch_size"] == 1
        first, second = one.metadata["dtc"], other.metadata["dtc"]
        assert (
            first["changed"] == second["changed"] and first["steps_calibrated"] == second["steps_calibrated"]
        )


async def test_sampling_is_refused_and_cached_answers_still_count(
    hf: HFModel, images: dict[str, str]
) -> None:
    request = questions(images)[0]
    cached_hf = HFModel(hf.name, hf.model, hf.processor, device=hf.device, dtype=hf.dtype, cache=Cache(None))
    dtc = DTCModel(cached_hf, DTCConfig(threshold=0.0))
    [refused] = await dtc.generate_many(
        [request.model_copy(update={"temperature": 0.7, "sample_id": "yn-3"})]
    )
    assert isinstance(refused, Failure) and "greedily" in refused.reason and "yn-3" in refused.reason
    first = await dtc.generate(request)
    again = await dtc.generate(request)
    assert again.cached and again.metadata["dtc"] == first.metadata["dtc"]
    assert dtc.summary().items == 2 and dtc.summary().calibrated == 2
    # a different DTC setting is a different answer, not a cache hit
    other = DTCModel(cached_hf, DTCConfig(threshold=0.5))
    assert not (await other.generate(request)).cached


def test_the_mitigation_factory_configures_and_checks_its_model(llava_path: Path) -> None:
    hf = HFModel.from_spec(str(llava_path), batch_size=2)
    model = dtc(hf, threshold=0.5, layer=1, options="yes|no", final_norm=False)
    assert model.config.threshold == 0.5 and model.layer == 1 and model.config.options == ["yes", "no"]
    assert model.identity()["dtc"]["final_norm"] is False and model.identity()["mitigation"] == "dtc"
    assert model.identity()["model"] == str(llava_path)
    with pytest.raises(ValueError, match=r"outside 0\.\.3"):
        dtc(hf, layer=4)

    class Scripted(Model):
        provider = "scripted"

        async def generate(self, request: GenerateRequest) -> GenerateResult:
            return GenerateResult(text="yes")

    with pytest.raises(TypeError, match="dtc needs an hf model"):
        dtc(Scripted())


async def test_default_options_apply_to_requests_without_any(hf: HFModel, images: dict[str, str]) -> None:
    request = questions(images)[3]  # an open question: no options of its own
    plain = await DTCModel(hf, DTCConfig(threshold=0.0)).generate(request)
    assert plain.metadata["dtc"]["options"] == [] and not plain.metadata["dtc"]["calibrated"]
    forced = await DTCModel(hf, DTCConfig(threshold=0.0, options=["yes", "no"])).generate(request)
    assert forced.metadata["dtc"]["options"] == ["yes", "no"] and forced.metadata["dtc"]["calibrated"]
