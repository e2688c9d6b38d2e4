"""The similarity judge gives the official Tri-HE verdicts, batched and cached.

The reference here is a plain transcription of the official per-claim loop (``NLI_judge.py``): one claim at a
time, the image's references encoded in one call, the joined strings encoded per claim, cosine via
scikit-learn. Its only omission is the official script's encoding of all references joined, whose result
the script never uses.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.metrics.pairwise import cosine_similarity

from halluscope.benchmarks.tri_he import load_scene_graphs
from halluscope.cache import Cache
from halluscope.embeddings import Embedder, load_embedder
from halluscope.judges import JUDGES
from halluscope.judges.similarity import JudgeProfile, SimilarityJudge, save_profile
from halluscope.scene.direction import reference_text
from halluscope.scene.graph import SceneGraph
from halluscope.scene.triplets import parse_triplet_string
from halluscope.stages import Failure, JudgeItem
from halluscope.types import Claim, Verdict, VerdictLabel
from tests.paths import TRI_HE_JSON

PARITY_IMAGES = 12


@pytest.fixture(scope="module")
def minilm() -> Iterator[Embedder]:
    """The packaged default model, run on one thread here.

    The per-claim reference loop makes hundreds of one-sentence calls, where torch's thread hand-offs cost
    more than the work (tenfold on a busy 2-core machine); the thread count does not change what is tested.
    """
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield load_embedder()
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tri_he() -> tuple[dict[str, Any], dict[str, SceneGraph]]:
    return json.loads(TRI_HE_JSON.read_text(encoding="utf-8")), load_scene_graphs(TRI_HE_JSON)


def official_scores(model: Any, raw_refs: list[str], claims: list[Claim]) -> list[tuple[float, list[int]]]:
    """The official algorithm, one claim at a time: (score, top-3 reference indices) per claim."""
    triplets = [t.replace("(", "").replace(")", "").replace(",", "") + "." for t in raw_refs]
    embeddings = model.encode(triplets)
    out = []
    for claim in claims:
        src = model.encode([" ".join(claim.as_tuple())])
        res = cosine_similarity(src, embeddings)
        filtered = [" ".join([triplets[idx] for idx in np.nonzero(res > 0.5)[1]])]
        topk = (-res).argsort()[0, :3]
        top = model.encode([" ".join([triplets[i] for i in topk])])
        value = cosine_similarity(src, top)[0][0]
        if filtered != [""]:
            value = max(cosine_similarity(src, model.encode(filtered))[0][0], value)
        out.append((float(value), [int(i) for i in topk]))
    return out


@pytest.mark.full_data
def test_same_verdicts_as_the_official_per_claim_loop(
    minilm: Embedder, tri_he: tuple[dict[str, Any], dict[str, SceneGraph]], tmp_path: Path
) -> None:
    raw, scenes = tri_he
    image_ids = list(raw)[:PARITY_IMAGES]
    items: list[JudgeItem] = []
    for position, image_id in enumerate(image_ids):
        # Each question's ground-truth supporting triplets, judged against its own image (mostly supported)
        # and against the next image (mostly hallucinated, often with no reference above the filter).
        other = scenes[image_ids[(position + 1) % len(image_ids)]]
        for index, instance in enumerate(raw[image_id]["instance"]):
            claims = [c for text in instance["triplet"] for c in parse_triplet_string(text)]
            items.append(JudgeItem(sample_id=f"{image_id}-{index}", claims=claims, scene=scenes[image_id]))
            items.append(JudgeItem(sample_id=f"{image_id}-{index}-other", claims=claims, scene=other))

    judge = SimilarityJudge(
        embedder=Embedder(minilm.model, minilm.identity(), cache=Cache(tmp_path / "c.sqlite"))
    )
    results = judge.judge_many_sync(items)

    labels: list[VerdictLabel] = []
    empty_filter = 0
    for item, verdicts in zip(items, results, strict=True):
        assert isinstance(verdicts, list), verdicts
        expected = official_scores(minilm.model, item.scene.reference_texts, item.claims)
        assert len(verdicts) == len(expected)
        for verdict, (score, top) in zip(verdicts, expected, strict=True):
            official_label = VerdictLabel.SUPPORTED if score > 0.6 else VerdictLabel.HALLUCINATED
            assert verdict.label == official_label, (item.sample_id, verdict, score)
            assert verdict.score is not None and abs(verdict.score - score) < 1e-5, (item.sample_id, score)
            # The same references, shown subject first ("(wall, hanging on, picture)" → picture on wall).
            assert verdict.evidence == [reference_text(None, item.scene.reference_texts[i]) for i in top]
            assert verdict.error is None
            labels.append(verdict.label)
            empty_filter += "top-3" in (verdict.explanation or "")
    # The comparison covers both outcomes and both branches of the score.
    assert labels.count(VerdictLabel.SUPPORTED) > 50 and labels.count(VerdictLabel.HALLUCINATED) > 50
    assert empty_filter > 0


@pytest.mark.full_data
def test_reference_lists_keep_duplicates_as_the_official_script_does(
    tri_he: tuple[dict[str, Any], dict[str, SceneGraph]],
) -> None:
    raw, scenes = tri_he
    with_duplicates = [k for k, v in raw.items() if len(set(v["triplets"])) < len(v["triplets"])]
    assert with_duplicates, "the official file has images listing a triplet twice"
    assert all(scenes[k].reference_texts == raw[k]["triplets"] for k in with_duplicates)


def _kitchen() -> SceneGraph:
    graph = SceneGraph(image_id="kitchen")
    graph.reference_texts = [
        "(knife, on, cutting board)",
        "(refrigerator, is, white)",
        "(woman, holding, cup)",
        "(window, above, sink)",
    ]
    return graph


def _judge_one(judge: SimilarityJudge, *claims: tuple[str, str, str]) -> list[Verdict]:
    [result] = judge.judge_many_sync([JudgeItem("s", [Claim.of(c) for c in claims], _kitchen())])
    assert isinstance(result, list)
    return result


def test_a_claim_stating_a_reference_is_supported_and_an_unrelated_one_is_not(minilm: Embedder) -> None:
    judge = SimilarityJudge(embedder=minilm)
    exact, unrelated = _judge_one(judge, ("woman", "holding", "cup"), ("giraffe", "eating", "pizza"))
    assert exact.label == VerdictLabel.SUPPORTED
    assert exact.evidence[0] == "(woman, holding, cup)"
    assert unrelated.label == VerdictLabel.HALLUCINATED
    assert unrelated.error is None
    assert exact.score is not None and unrelated.score is not None and exact.score > unrelated.score + 0.3


def test_thresholds_change_verdicts(minilm: Embedder) -> None:
    claim = ("woman", "drinking from", "cup")
    [default] = _judge_one(SimilarityJudge(embedder=minilm), claim)
    assert default.score is not None
    # Supported means strictly above the verdict threshold.
    [at] = _judge_one(SimilarityJudge(embedder=minilm, verdict_threshold=default.score), claim)
    assert at.label == VerdictLabel.HALLUCINATED
    [below] = _judge_one(SimilarityJudge(embedder=minilm, verdict_threshold=default.score - 1e-3), claim)
    assert below.label == VerdictLabel.SUPPORTED
    [one] = _judge_one(SimilarityJudge(embedder=minilm, top_k=1), claim)
    assert one.evidence == ["(woman, holding, cup)"]


def test_one_bad_item_fails_alone_and_empty_cases_are_handled(minilm: Embedder) -> None:
    judge = SimilarityJudge(embedder=minilm)
    claim = Claim.of(("knife", "on", "cutting board"))
    items = [
        JudgeItem("good", [claim], _kitchen()),
        JudgeItem("broken", [claim], None),  # type: ignore[arg-type]
        JudgeItem("no-claims", [], _kitchen()),
        JudgeItem("no-references", [claim], SceneGraph(image_id="empty")),
    ]
    good, broken, no_claims, no_refs = asyncio.run(judge.judge_many(items))
    assert isinstance(good, list) and good[0].label == VerdictLabel.SUPPORTED
    assert isinstance(broken, Failure) and "'broken'" in broken.reason
    assert no_claims == []
    assert isinstance(no_refs, list) and no_refs[0].label == VerdictLabel.UNJUDGED
    assert "no reference triplets" in (no_refs[0].explanation or "")


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match=r"unknown option.*threshold"):
        SimilarityJudge(threshold=0.7)
    with pytest.raises(ValueError, match="verdict_threshold"):
        SimilarityJudge(verdict_threshold=1.5)
    with pytest.raises(ValueError, match="top_k"):
        SimilarityJudge(top_k=0)
    # Built through the registry by name, with options as a run spec gives them; no model is loaded yet.
    judge = JUDGES.create("similarity", filter_threshold="0.45")
    assert judge.identity()["filter_threshold"] == 0.45
    assert "all-MiniLM-L6-v2" in judge.identity()["model"]
    assert judge.identity() != SimilarityJudge(model="all-mpnet-base-v2").identity()


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("HALLUSCOPE_CACHE_DIR", str(tmp_path))
    yield tmp_path


def test_threshold_profiles(cache_dir: Path) -> None:
    path = save_profile(
        "minilm-tri-he",
        JudgeProfile(model="all-MiniLM-L6-v2", filter_threshold=0.4, verdict_threshold=0.55),
        balanced_accuracy=0.8,
    )
    assert path == cache_dir / "judge_profiles" / "minilm-tri-he.json"
    judge = SimilarityJudge(profile="minilm-tri-he")
    assert (judge.filter_threshold, judge.verdict_threshold, judge.model) == (0.4, 0.55, "all-MiniLM-L6-v2")
    # Explicit options win over the profile; an alias of the same model is accepted.
    assert (
        SimilarityJudge(profile="minilm-tri-he", model="minilm", verdict_threshold=0.7).verdict_threshold
        == 0.7
    )
    with pytest.raises(ValueError, match="calibrated for model"):
        SimilarityJudge(profile="minilm-tri-he", model="all-mpnet-base-v2")
    with pytest.raises(ValueError, match="known profiles: minilm-tri-he"):
        SimilarityJudge(profile="mpnet")
    (cache_dir / "judge_profiles" / "bad.json").write_text('{"model": null}')
    with pytest.raises(ValueError, match="not a valid profile"):
        SimilarityJudge(profile="bad")
