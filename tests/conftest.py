"""Fixtures shared by the test modules.

- ``shared_dir``: the shared data folder (``$HALLUSCOPE_SHARED``, else ``../shared`` next to the repo).
- ``scripted_server``: a fresh scripted OpenAI-compatible server on loopback (see ``scripted_server.py``).
- ``llama_server``: the base URL of a real llama.cpp server running the packaged Qwen2.5-1.5B GGUF, started
  once per test session. It never skips: without llama-cpp-python[server] or the model packages it fails
  with the install command, because CI installs both.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.paths import SHARED
from tests.scripted_server import ScriptedServer


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    path = SHARED
    if not path.is_dir():
        pytest.fail(f"shared data folder not found at {path}; set HALLUSCOPE_SHARED to its location")
    return path


@pytest.fixture
def scripted_server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        yield server


@pytest.fixture(scope="session")
def llama_server() -> Iterator[str]:
    from halluscope.llm.offline import llama_server as serve

    with serve(n_ctx=4096) as server:
        yield server.base_url
