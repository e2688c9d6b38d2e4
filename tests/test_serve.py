"""``halluscope serve``: prints a working URL, and Ctrl-C (SIGINT) or SIGTERM leaves no server behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from halluscope.llm.offline import SERVER_RUNTIMES

#: The command-line module of each server halluscope may start.
SERVER_MODULES = {module.encode() for module, _ in SERVER_RUNTIMES.values()}


def _server_processes(port: str) -> list[int]:
    """Pids of llama_cpp.server processes listening on ``port`` (by command line)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(module in cmdline for module in SERVER_MODULES) and port.encode() in cmdline:
            found.append(int(proc.name))
    return found


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM])
def test_serve_prints_a_working_url_and_leaves_nothing_behind(stop_signal: int) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "halluscope.cli.main", "serve"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
        # Ctrl-C reaches a command run in a terminal with SIGINT's default handling; a test session started
        # as a background job would hand its children SIGINT ignored, which no program is meant to override.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        second = process.stdout.readline()
        assert first.startswith("base_url: http://127.0.0.1:"), first
        assert second.startswith("model: "), second
        base_url = first.split(": ", 1)[1].strip()
        port = base_url.rsplit(":", 1)[1].split("/")[0]
        models = httpx.get(f"{base_url}/models", timeout=10).json()
        assert second.split(": ", 1)[1].strip() in {m["id"] for m in models["data"]}
        assert _server_processes(port), "the llama.cpp server process was not found while serving"
        process.send_signal(stop_signal)
        assert process.wait(timeout=60) == 0
        assert _server_processes(port) == []
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"{base_url}/models", timeout=2)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
