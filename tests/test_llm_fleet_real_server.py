"""A fleet of two real llama.cpp servers (the packaged Qwen GGUF) behind ``halluscope respond``; one is killed
mid-run. What a user must see: the run finishes, every sample is answered exactly once, nothing is listed as
failed. How the requests were spread is checked with scripted servers in ``test_llm_fleet.py``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from halluscope.llm.offline import PACKAGED_MODEL_NAME, llama_server
from halluscope.runs.respond import RESPOND_ERRORS_FILE, RESPONSES_FILE
from tests.layouts import tri_he_layout
from tests.paths import REPO_ROOT

pytestmark = pytest.mark.slow

ITEMS = 10


def _written(path: Path) -> int:
    if not path.exists():
        return 0
    return sum(1 for line in path.read_text().splitlines() if line.endswith("}"))


def test_respond_on_two_servers_survives_one_being_killed(tmp_path: Path) -> None:
    with contextlib.ExitStack() as stack:
        # Small contexts and one thread each: two 1.5B servers on a shared two-core machine.
        first = stack.enter_context(llama_server(n_ctx=1024, n_threads=1))
        second = stack.enter_context(llama_server(n_ctx=1024, n_threads=1))
        out = tmp_path / "out"
        command = [
            sys.executable, "-m", "halluscope.cli.main", "respond",
            "--benchmark", "tri-he", "--data", str(tri_he_layout()), "--limit", str(ITEMS),
            "--model", f"openai/{PACKAGED_MODEL_NAME}?text_only=true&timeout_s=600",
            "--base-url", first.base_url, "--base-url", second.base_url,
            "--concurrency", "2", "--max-tokens", "16", "--out", str(out), "--no-cache", "--quiet",
        ]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            responses = out / RESPONSES_FILE
            deadline = time.monotonic() + 300
            while _written(responses) < 2 and process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
            killed_after = _written(responses)
            # With two requests in flight over two servers, the killed one is answering one of them.
            os.kill(first.pid, signal.SIGKILL)
            output, _ = process.communicate(timeout=600)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    text = output.decode(errors="replace")
    assert process.returncode == 0, text
    assert 2 <= killed_after < ITEMS, "the server was not killed mid-run"
    # The client met the dead server (a dropped or refused connection) and took it out.
    assert f"taking {first.base_url} out" in text, text
    rows = [json.loads(line) for line in responses.read_text().splitlines()]
    ids = [row["id"] for row in rows]
    assert len(ids) == len(set(ids)) == ITEMS, "an answer was lost or written twice"
    assert all(row["response"].strip() for row in rows)
    errors = out / RESPOND_ERRORS_FILE
    assert not errors.exists() or not errors.read_text().strip(), errors.read_text()
