"""The CLI side of ``local`` as a model name: one packaged llama.cpp server per command, never left behind.

:class:`~halluscope.llm.local.LocalLLM` stops its server when its ``with`` block ends. A Ctrl-C (SIGINT)
unwinds that block as a ``KeyboardInterrupt``; SIGTERM (``kill``, a job scheduler's time limit) by default
ends Python at once, with no ``finally``, so while the block runs SIGTERM is turned into the same
unwinding. Start-up shows as one spinner line on stderr; llama.cpp's log goes to a temporary file.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import TYPE_CHECKING, Any

from halluscope.cli.common import console

if TYPE_CHECKING:
    from halluscope.llm.local import LocalLLM


@contextlib.contextmanager
def local_llm(n_ctx: int = 4096) -> Iterator[LocalLLM]:
    """A :class:`LocalLLM` for one command (nothing starts until a stage asks for ``local``)."""
    from halluscope.llm.local import LocalLLM

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    err = console(stderr=True)
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, on_sigterm) if main else None
    try:
        with LocalLLM(status=err.status, n_ctx=n_ctx) as local:
            try:
                yield local
            except KeyboardInterrupt:
                if local.started:
                    err.print("interrupted; stopping the local LLM server (re-run the command to resume)")
                raise
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)


def llm_endpoint(model: str, base_url: str | None, local: LocalLLM, flag: str) -> tuple[str, str | None]:
    """``(model, base_url)`` for a build step's LLM: unchanged, or for ``local`` the packaged server's."""
    from halluscope.cli.common import fail
    from halluscope.llm.local import is_local
    from halluscope.llm.offline import LocalServerError, OfflineModelError

    if not is_local(model):
        return model, base_url
    if base_url:
        fail(
            f"{flag} local runs the packaged model on a server of its own, and --base-url names another "
            "endpoint; give one of the two"
        )
    try:
        server = local.server()
    except (LocalServerError, OfflineModelError) as error:
        fail(f"{flag} local: the packaged model could not start: {error}")
    return server.model, server.base_url


def client_options(model: str | None) -> dict[str, Any]:
    """ChatClient options for ``model``: for ``local``, one request at a time and a long timeout."""
    from halluscope.llm.local import LOCAL_STAGE_DEFAULTS, is_local

    return dict(LOCAL_STAGE_DEFAULTS) if is_local(model) else {}
