"""``local`` as a model name: the packaged Qwen GGUF on a llama.cpp server that lives as long as one run.

Why: trying an LLM stage offline used to take a ``python -c`` to find the GGUF, a server started by hand, and
its URL pasted into ``--base-url``. Now ``--judge-model local`` (or ``--extractor-model local``,
``build prove --llm local``, ``judge_options={"model": "local"}`` in :func:`halluscope.evaluate`) does it:
:class:`LocalLLM` starts :func:`~halluscope.llm.offline.llama_server` on a free loopback port the first time a
stage asks for it, hands every stage that says ``local`` the same server, and stops it when the run ends,
whichever way it ends (``with`` / :meth:`LocalLLM.close`; the CLI turns SIGTERM into the same unwinding as
Ctrl-C, a server still running at interpreter exit is stopped then, and the server is asked to die with its
parent should the parent be killed outright).

The server runs in a process group of its own: a Ctrl-C at the terminal reaches halluscope only, not the
server, which keeps answering the requests in flight until halluscope has unwound and stops it (SIGTERM,
then SIGKILL after a grace period). In the terminal's group it died with the key press, and the judge calls
still under way were recorded as the judge's failures.

The port changes from run to run, so the server is registered with
:func:`~halluscope.llm.client.named_endpoint` under :data:`LOCAL_ENDPOINT`: cache keys and ``spec.json`` name
that, not the address, and a second run with ``local`` reuses the first one's answers and can resume its
run directory.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any

from halluscope.llm.offline import PACKAGED_GGUF_NAME, LocalServer, llama_server

__all__ = ["LOCAL", "LOCAL_ENDPOINT", "LocalLLM", "is_local", "local_stage_options"]

#: The model name that asks for the packaged local server.
LOCAL = "local"
#: What stands for the local server's address in cache keys and run specs (its port is random).
LOCAL_ENDPOINT = f"local:{PACKAGED_GGUF_NAME}"
#: Stage options the local server gets unless the user set them: llama.cpp answers one request at a time,
#: so more in flight only queue (and time out) behind it, and a 1.5B model on a shared CPU is slow.
LOCAL_STAGE_DEFAULTS: dict[str, Any] = {"concurrency": 1, "timeout_s": 600.0}
#: The one progress line shown while the server starts.
STARTING = "starting the local LLM (llama.cpp, packaged Qwen2.5-Coder-1.5B GGUF) …"


def is_local(model: object) -> bool:
    """Whether a model option asks for the packaged local server."""
    return isinstance(model, str) and model.strip().lower() == LOCAL


class LocalLLM:
    """At most one packaged llama.cpp server, started on first use and shared by every stage that asks.

    ``status`` makes the progress shown while it starts (the CLI passes ``console.status``); ``n_ctx`` is
    the server's context length. Nothing starts until :meth:`server` is called, so a run with no ``local``
    stage pays nothing for holding one.
    """

    def __init__(
        self,
        *,
        status: Callable[[str], AbstractContextManager[Any]] | None = None,
        n_ctx: int = 4096,
        slots: int = 1,
    ) -> None:
        self._status = status
        self.n_ctx = n_ctx
        #: Requests the server decodes at once, each with ``n_ctx`` tokens of context of its own.
        self.slots = slots
        self._stack = contextlib.ExitStack()
        self._server: LocalServer | None = None
        #: Stages that use the server, for ``spec.json``.
        self.stages: list[str] = []

    @property
    def started(self) -> bool:
        return self._server is not None

    def server(self) -> LocalServer:
        """The running server, started now if it is not yet (raises ``LocalServerError`` /
        ``OfflineModelError`` when it cannot start)."""
        if self._server is None:
            from halluscope.llm.client import named_endpoint  # here: the client imports httpx (slow)

            with self._status(STARTING) if self._status else contextlib.nullcontext():
                server = self._stack.enter_context(
                    llama_server(
                        n_ctx=self.n_ctx * self.slots,
                        die_with_parent=True,
                        extra_args=("--n_parallel", str(self.slots)) if self.slots > 1 else (),
                    )
                )
                self._stack.enter_context(named_endpoint(server.base_url, LOCAL_ENDPOINT))
            self._server = server
        return self._server

    def stage_options(self, stage: str, options: Mapping[str, Any]) -> dict[str, Any]:
        """``options`` of a stage whose ``model`` is ``local``, pointed at the server (started if need be).

        A ``base_url`` of the stage's own is refused: ``local`` is an endpoint already, and quietly
        preferring one of the two would score with a model the user did not pick.
        """
        if options.get("base_url"):
            raise ValueError(
                f"{stage}: model 'local' runs the packaged model on a server of its own, and base_url "
                f"{options['base_url']!r} names another endpoint; give one of the two"
            )
        server = self.server()
        if stage not in self.stages:
            self.stages.append(stage)
        return {
            **LOCAL_STAGE_DEFAULTS,
            **{k: v for k, v in options.items() if k != "model"},
            "model": server.model,
            "base_url": server.base_url,
        }

    def describe(self) -> dict[str, Any] | None:
        """What ran, for ``spec.json`` (None when the server was never started)."""
        if self._server is None:
            return None
        from halluscope.llm.offline import SERVER_RUNTIMES, runtime_version

        runtime = self._server.runtime
        module = SERVER_RUNTIMES[runtime][0]
        return {
            "model": self._server.model,
            "gguf": self._server.model_path.name,
            "gguf_bytes": self._server.model_path.stat().st_size,
            "server": f"{runtime_version(runtime)} ({module}), packaged model started for this run on loopback",
            "endpoint": LOCAL_ENDPOINT,
            "n_ctx": self.n_ctx,
            "stages": list(self.stages),
        }

    def close(self) -> None:
        """Stop the server (if one was started). Safe to call more than once."""
        self._server = None
        self._stack.close()

    def __enter__(self) -> LocalLLM:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def local_stage_options(
    local: LocalLLM | None, stage: str, options: Mapping[str, Any]
) -> dict[str, Any]:
    """``options`` unchanged unless their ``model`` is ``local``; then pointed at ``local``'s server."""
    if not is_local(options.get("model")):
        return dict(options)
    if local is None:
        raise ValueError(f"{stage}: model 'local' is not available here; start the server with `halluscope serve`")
    return local.stage_options(stage, options)

