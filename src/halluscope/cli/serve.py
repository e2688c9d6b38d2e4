"""``halluscope serve``: the packaged Qwen GGUF on a llama.cpp server in the foreground, for other tools.

It prints the OpenAI-compatible base URL and model name on stdout (one line each, so a script can read
them) and serves until Ctrl-C or SIGTERM, then stops the server process; llama.cpp's own log goes to a
temporary file, not the terminal.
"""

from __future__ import annotations

import contextlib
import signal
import time
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer

from halluscope.cli.common import console, fail


def serve(
    port: Annotated[int | None, typer.Option(help="Port on 127.0.0.1 (default: a free one).")] = None,
    n_ctx: Annotated[int, typer.Option(help="Context length in tokens.")] = 4096,
    model_path: Annotated[
        Path | None, typer.Option("--model-path", help="Another GGUF file (default: the packaged one).")
    ] = None,
) -> None:
    """Run the offline LLM (packaged Qwen2.5-Coder-1.5B GGUF) on loopback until Ctrl-C; print its URL."""
    from halluscope.llm.offline import LocalServerError, OfflineModelError, llama_server

    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    err = console(stderr=True)
    try:
        with contextlib.ExitStack() as stack:
            with err.status("starting the local LLM (llama.cpp, packaged Qwen2.5-Coder-1.5B GGUF) …"):
                try:
                    server = stack.enter_context(llama_server(model_path, n_ctx=n_ctx, port=port))
                except (LocalServerError, OfflineModelError) as error:
                    fail(str(error))
            typer.echo(f"base_url: {server.base_url}")
            typer.echo(f"model: {server.model}")
            err.print(f"serving; use --base-url {server.base_url} --judge-model {server.model}; Ctrl-C stops it")
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        err.print("stopped")
    finally:
        signal.signal(signal.SIGTERM, previous)


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
