"""spec.json names the model that really answered, never a made-up default (issue 15, B5).

A local server answers with whatever model it loaded, whatever name a request carries, so an LLM stage given
no model name asks the endpoint which model it serves, and records (and sends) that name with the endpoint.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from halluscope.benchmarks.tri_he import TriHE
from halluscope.cache import content_key
from halluscope.llm.client import ChatClient, _hash_inline_data
from halluscope.responses import write_responses
from halluscope.runs.selection import first_samples
from halluscope.types import Response
from tests.layouts import tri_he_layout

TIMEOUT_S = 600


@pytest.fixture(autouse=True)
def no_model_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HALLUSCOPE_LLM_MODEL", "HALLUSCOPE_BASE_URL", "OPENAI_BASE_URL", "HALLUSCOPE_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def run(tmp_path: Path, base_url: str, *extra: str) -> Any:
    from halluscope.cli.main import app

    bench = first_samples(TriHE(tri_he_layout()), 1)
    (sample,) = bench.samples()
    responses = write_responses(
        tmp_path / "answers.jsonl", [Response(id=sample.id, response="A man is using a laptop.")]
    )
    args = [
        "run", "-b", "tri-he", "--data", str(tri_he_layout()), "-r", str(responses), "--limit", "1",
        "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "cache.sqlite"), "--quiet",
        "--base-url", base_url, *extra,
    ]  # fmt: skip
    return CliRunner().invoke(app, args, terminal_width=200)


@pytest.mark.slow
def test_spec_records_the_model_a_real_llama_cpp_server_reports(tmp_path: Path, llama_server: str) -> None:
    served = httpx.get(f"{llama_server}/models", timeout=30).json()["data"][0]["id"]
    result = run(
        tmp_path, llama_server,
        "--extractor", "llm", "--extractor-opt", f"timeout_s={TIMEOUT_S}", "--extractor-opt", "max_tokens=40",
        "--judge", "llm", "--judge-opt", "max_tokens=16", "--judge-opt", f"timeout_s={TIMEOUT_S}",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    spec_text = (tmp_path / "run" / "spec.json").read_text()
    spec = json.loads(spec_text)
    for stage in ("extractor", "judge"):
        assert spec[stage]["model"] == served, stage
        assert spec[stage]["base_url"] == llama_server, stage
    assert "gpt-4o-mini" not in spec_text


def test_no_model_named_and_no_answer_from_the_endpoint_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = run(tmp_path, f"http://127.0.0.1:{port}/v1", "--judge", "llm")
    said = " ".join(result.output.split())
    assert result.exit_code == 2
    assert f"127.0.0.1:{port}/v1/models could not say which model it serves" in said
    assert "--judge-model" in said and not (tmp_path / "run" / "spec.json").exists()


def test_the_cache_key_of_a_named_model_is_unchanged() -> None:
    # The key a named model's chat call had before the fix (same model, endpoint, messages, parameters):
    # results cached by earlier versions are still found.
    client = ChatClient("m", "http://127.0.0.1:9/v1")
    params = {"temperature": 0.0, "max_tokens": 512, "stream": False}
    key = content_key(client.identity(), _hash_inline_data([{"role": "user", "content": "hi"}]), params)
    assert key == "c8504e7d6a0de3a3890b6271c6dceef8fda6a073dee5123f05cd6ef82655bb0b"
