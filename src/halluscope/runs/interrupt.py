"""Running a run's asyncio work so that Ctrl-C and SIGTERM stop it within moments, at any stage.

Why not ``asyncio.run``: its Ctrl-C handler cancels the main task and then, on the way out, waits for
every thread of the default executor to finish (a batch of embeddings, a judge model's forward pass), so a
Ctrl-C could go unanswered for minutes; and SIGTERM ended Python with no clean-up at all. A step that
scores synchronously (no ``await`` for a whole batch) kept running to its end as well.

:func:`run_async` instead:

- on the first SIGINT or SIGTERM cancels the run's task: what is awaited (an LLM call, a thread) stops
  at once, and records already written stay (the runner writes each batch as it finishes);
- does not wait for executor threads of an interrupted run (they finish, or die with the process);
- when the task has not unwound :data:`GRACE_S` seconds after the signal (synchronous code that never
  awaits), or on a second signal, raises :class:`RunInterrupted` wherever the main thread is;
- raises :class:`RunInterrupted` (a ``KeyboardInterrupt``) to its caller, who says "re-run to resume".

Signals are only handled this way in the main thread; elsewhere (``evaluate`` in a notebook's worker
thread) it behaves like ``asyncio.run`` with the executor not waited for after an interruption.
"""

from __future__ import annotations

import _thread
import asyncio
import contextlib
import signal
import threading
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from types import FrameType
from typing import Any, TypeVar

T = TypeVar("T")

#: What a user is told when a run stops on Ctrl-C or SIGTERM.
INTERRUPTED_MESSAGE = "interrupted; re-run the same command to resume"
#: Seconds an interrupted run may take to unwind by cancellation before it is stopped where it is.
GRACE_S = 2.0
#: The exit status of a command stopped by a signal it handled (128 + SIGINT, the shell's convention).
INTERRUPTED_EXIT = 130


class RunInterrupted(KeyboardInterrupt):
    """The run was stopped by Ctrl-C or SIGTERM; what had finished is kept, so re-running resumes it."""

    def __init__(self, message: str = INTERRUPTED_MESSAGE) -> None:
        super().__init__(message)


class _Stopper:
    """The signal handler: cancel the task first; force the stop on a second signal or after the grace."""

    def __init__(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> None:
        self.loop = loop
        self.task = task
        self.signals: list[int] = []
        self.finished = threading.Event()

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.signals.append(signum)
        if len(self.signals) > 1 or self.finished.is_set():
            raise RunInterrupted()
        self.loop.call_soon_threadsafe(self.task.cancel)
        threading.Thread(target=self._force_after_grace, name="halluscope-interrupt", daemon=True).start()

    def _force_after_grace(self) -> None:
        if not self.finished.wait(GRACE_S):
            # A second "signal" for __call__ in the main thread (forced), and a wake-up for a loop waiting
            # in select(): the flag alone is only looked at when the main thread runs Python code.
            _thread.interrupt_main(signal.SIGINT)
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                self.loop.call_soon_threadsafe(lambda: None)


def run_async(main: Coroutine[Any, Any, T]) -> T:
    """Run ``main`` to its end on a fresh event loop; Ctrl-C or SIGTERM raise :class:`RunInterrupted`."""
    loop = asyncio.new_event_loop()
    executor = ThreadPoolExecutor(thread_name_prefix="halluscope")
    loop.set_default_executor(executor)
    task = loop.create_task(main)
    stopper = _Stopper(loop, task)
    in_main = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.signal(sig, stopper) for sig in (signal.SIGINT, signal.SIGTERM)} if in_main else {}
    try:
        try:
            return loop.run_until_complete(task)
        except (asyncio.CancelledError, KeyboardInterrupt) as error:
            if stopper.signals and not isinstance(error, RunInterrupted):
                raise RunInterrupted() from None
            raise
        finally:
            stopper.finished.set()
            with contextlib.suppress(KeyboardInterrupt):  # another Ctrl-C while closing: it is stopping
                _close(loop, executor, interrupted=bool(stopper.signals))
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _close(loop: asyncio.AbstractEventLoop, executor: ThreadPoolExecutor, *, interrupted: bool) -> None:
    """Cancel what is left, as ``asyncio.run`` does; after an interruption, wait neither long nor for threads."""
    try:
        left = asyncio.all_tasks(loop)
        for task in left:
            task.cancel()
        if left:
            loop.run_until_complete(asyncio.wait(left, timeout=GRACE_S if interrupted else None))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        executor.shutdown(wait=not interrupted, cancel_futures=interrupted)
        loop.close()
