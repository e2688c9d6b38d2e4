"""Run untrusted verification programs outside the halluscope process, and name each one's outcome.

:class:`Sandbox` starts one worker process (``_child.py`` run as a script by the same interpreter, with
``-I`` and an empty environment) and sends it a scene graph as data with the programs to run against it.
The worker never runs a program itself: it forks a fresh process per program, which limits its own
resources, installs a seccomp allow-list and runs the program under RestrictedPython (see ``_child.py``
for the layers). Results come back as JSON.

Why one worker and a fork per program: starting a Python interpreter costs ~50–100 ms, forking a warm
one ~1–2 ms, so a batch of one image's programs costs little more than the programs themselves, while
every program still gets its own process: a program cannot tamper with what a later one sees, whether
they belong to the same image or not.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

_CHILD = Path(__file__).with_name("_child.py")

#: Every outcome a program can have, in the words the reports use.
OUTCOMES: dict[str, str] = {
    "ok": "ran and returned an answer",
    "error": "raised an exception",
    "syntax_error": "is not valid Python",
    "rejected": "uses constructs the restricted interpreter refuses (names or attributes starting with _)",
    "denied": "tried something the sandbox forbids (a module import, a file, a socket, a process)",
    "bad_type": "returned something other than a string, number, yes/no or list of them",
    "timeout": "ran past its CPU or wall-clock limit",
    "memory": "ran past its memory limit",
    "output_too_large": "returned an answer larger than the output limit",
    "crashed": "its process died without an answer",
    "sandbox_error": "the sandbox itself failed (not the program's fault)",
}


class SandboxUnavailableError(RuntimeError):
    """The sandbox cannot run here (no libseccomp, not Linux, worker failed to start)."""


class ProgramResult(BaseModel):
    """The outcome of one program: ``status`` is a key of :data:`OUTCOMES`; ``value`` only when ok."""

    status: str
    value: Any = None
    error: str | None = None
    seconds: float | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def describe(self) -> str:
        if self.ok:
            return f"ok: {self.value!r}"
        return f"{self.status}: {self.error or OUTCOMES.get(self.status, '')}"


@dataclass(frozen=True)
class Limits:
    """Per-program limits. ``memory_mb`` is on top of the worker's own address space."""

    cpu_s: int = 2
    wall_s: float = 5.0
    memory_mb: int = 256
    max_output_bytes: int = 64_000
    #: The RestrictedPython layer; switched off only by tests that check the OS layers hold alone.
    restricted: bool = True

    def as_dict(self) -> dict[str, Any]:
        return {
            "cpu_s": self.cpu_s,
            "wall_s": self.wall_s,
            "memory_mb": self.memory_mb,
            "max_output_bytes": self.max_output_bytes,
            "restricted": self.restricted,
        }


def _checked(raw: Any) -> ProgramResult:
    """One program's result as the worker sent it, or a ``sandbox_error`` when it is not a valid result.

    A program with the OS layers alone can write its own bytes to the result pipe; a forged or garbled
    result becomes that program's ``sandbox_error``, and the other programs of the batch keep theirs.
    """
    try:
        result = ProgramResult.model_validate(raw)
    except ValidationError as error:
        problem = error.errors()[0]
        where = ".".join(str(p) for p in problem.get("loc", ())) or "result"
        return ProgramResult(
            status="sandbox_error", error=f"invalid result from the sandbox ({where}: {problem['msg']})"
        )
    if result.status not in OUTCOMES:
        return ProgramResult(
            status="sandbox_error", error=f"invalid result from the sandbox (status {result.status[:40]!r})"
        )
    return result


@dataclass
class Sandbox:
    """A worker process that runs programs against scene graphs; use as a context manager, or close()."""

    limits: Limits = field(default_factory=Limits)
    entry: str = "verify"
    _process: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    #: Programs run, and seconds spent in :meth:`run` (for the overhead figures).
    programs_run: int = field(default=0, init=False)

    def __enter__(self) -> Sandbox:
        self._ensure()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.stdin:
            process.stdin.close()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
        if process.stdout:
            process.stdout.close()

    def _ensure(self) -> subprocess.Popen[bytes]:
        if self._process is not None and self._process.poll() is None:
            return self._process
        if not sys.platform.startswith("linux"):
            raise SandboxUnavailableError("the program sandbox needs Linux (seccomp); it does not run here")
        process = subprocess.Popen(
            [sys.executable, "-I", "-B", str(_CHILD)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={"LANG": "C.UTF-8"},
            cwd="/",
            close_fds=True,
        )
        hello = self._read_line(process, timeout_s=60.0)
        if hello is None or not hello.get("ready"):
            process.kill()
            process.wait()
            why = (hello or {}).get("fatal") or "the worker did not start"
            raise SandboxUnavailableError(
                f"the program sandbox cannot run: {why} (it needs libseccomp (Debian: libseccomp2) and the "
                "python packages pyseccomp and RestrictedPython)"
            )
        self._process = process
        return process

    @staticmethod
    def _read_line(process: subprocess.Popen[bytes], timeout_s: float) -> dict[str, Any] | None:
        assert process.stdout is not None
        fd = process.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        buffer = b""
        while not buffer.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return None
            buffer += chunk
        try:
            data = json.loads(buffer)
        except (ValueError, RecursionError):
            return None
        return data if isinstance(data, dict) else None

    def run(self, graph: dict[str, Any], programs: Sequence[str]) -> list[ProgramResult]:
        """Run each program against ``graph`` (a ``SceneGraph.to_dict()``), each in its own process."""
        if not programs:
            return []
        request = {
            "graph": graph,
            "programs": list(programs),
            "entry": self.entry,
            "limits": self.limits.as_dict(),
        }
        with self._lock:
            process = self._ensure()
            assert process.stdin is not None
            try:
                process.stdin.write(json.dumps(request).encode() + b"\n")
                process.stdin.flush()
            except (BrokenPipeError, OSError) as error:
                self._discard()
                return [
                    ProgramResult(status="sandbox_error", error=f"worker gone: {error}") for _ in programs
                ]
            budget = len(programs) * (self.limits.wall_s + 2.0) + 10.0
            reply = self._read_line(process, timeout_s=budget)
            if reply is None or not isinstance(reply.get("results"), list):
                why = (reply or {}).get("error") or "no answer from the sandbox worker"
                self._discard()
                return [ProgramResult(status="sandbox_error", error=str(why)) for _ in programs]
            self.programs_run += len(programs)
        if len(reply["results"]) != len(programs):
            return [
                ProgramResult(
                    status="sandbox_error", error="the worker answered for the wrong number of programs"
                )
            ] * len(programs)
        return [_checked(raw) for raw in reply["results"]]

    def run_one(self, graph: dict[str, Any], program: str) -> ProgramResult:
        return self.run(graph, [program])[0]

    def _discard(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            process.kill()
            process.wait()
