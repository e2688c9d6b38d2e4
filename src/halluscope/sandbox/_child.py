"""The sandbox's worker process: runs untrusted verification programs, one forked process per program.

This file is executed as a script (``python -I _child.py``) by :mod:`halluscope.sandbox.runner`, never
imported by halluscope: it uses only the standard library, ``pyseccomp`` (libseccomp through ctypes) and
``RestrictedPython``, so nothing of the halluscope process (its memory, its environment, its open files,
its API keys) is within reach of the programs it runs.

Protocol: one JSON request per line on stdin, ``{"graph": SceneGraph.to_dict(), "programs": [str, ...],
"entry": "verify", "limits": {...}}``; one JSON response per line on stdout, ``{"results": [...]}``, one
result per program, in order.

The worker itself runs only trusted code. For each program it forks a fresh process which, before it
compiles a single line of the program:

1. keeps only a pipe back to the worker (stdin/stdout/stderr become /dev/null; every other descriptor
   closed) and an empty environment;
2. sets OS resource limits: CPU seconds (SIGXCPU then SIGKILL), address space, no file writes
   (RLIMIT_FSIZE 0), no new descriptors (RLIMIT_NOFILE), no new processes (RLIMIT_NPROC 0; not enforced
   for root, which is why 3 matters), no core dumps;
3. loads a seccomp filter that allows an explicit list of system calls (memory, signals, clocks, futexes,
   reading, writing only to the result pipe, exiting) and answers every other call with EPERM: no open,
   no socket, no fork/clone/exec, no unlink/rename/mkdir, no ptrace, no kill, and no call that looks a
   path up (stat, lstat, newfstatat, statx, access, faccessat, readlink, ...), so a program cannot even
   learn whether a file exists or how large it is;
4. compiles the program with RestrictedPython (no names or attributes starting with ``_``, guarded
   attribute access, no ``str.format``), with a small builtins table and a guarded ``import`` that hands
   out read-only copies of a few pure modules (math, re, collections, itertools, statistics, string).

Layer 4 stops most tricks with a clear message; layers 2–3 are what hold if a trick gets past it
(e.g. a path to ``os.system`` through some module attribute: the exec is refused by the kernel).
Each program gets its own fork, so one program cannot change what another sees.
"""

from __future__ import annotations

# Imported here, before any fork, so the programs never need the file system to import them.
import collections
import contextlib
import errno
import itertools
import json
import math
import os
import re
import resource
import select
import signal
import statistics
import string
import sys
import time
import traceback
import types
from typing import Any

try:  # pragma: no cover - exercised through the runner
    import pyseccomp as seccomp
except Exception as error:
    seccomp = None
    SECCOMP_ERROR = f"{type(error).__name__}: {error}"
else:
    SECCOMP_ERROR = ""

from RestrictedPython import compile_restricted
from RestrictedPython.Guards import (
    full_write_guard,
    guarded_iter_unpack_sequence,
    guarded_unpack_sequence,
    safe_builtins,
    safer_getattr_raise,
)
from RestrictedPython.PrintCollector import PrintCollector

# -- the read-only scene-graph API the programs see ---------------------------------------------------------


def _norm(name: Any) -> str:
    return " ".join(str(name).lower().split())


class Relation(tuple):
    """(subject, predicate, object), with those names as read-only properties."""

    __slots__ = ()

    def __new__(cls, subject: str, predicate: str, obj: str) -> Relation:
        return tuple.__new__(cls, (subject, predicate, obj))

    @property
    def subject(self) -> str:
        return self[0]

    @property
    def predicate(self) -> str:
        return self[1]

    @property
    def object(self) -> str:
        return self[2]

    def text(self) -> str:
        return f"{self[0]} {self[1]} {self[2]}"


class Graph:
    """The scene graph, rebuilt from ``SceneGraph.to_dict()``; the same query methods as halluscope's.

    Names match case- and space-insensitively; every method returns fresh lists, so a program cannot
    change the graph through a result.
    """

    __slots__ = ("_attrs", "_caption", "_names", "_objects", "_regions", "_rels")

    def __init__(self, data: dict[str, Any]) -> None:
        names: dict[str, str] = {}
        objects: list[str] = []
        for name in data.get("objects") or []:
            names.setdefault(_norm(name), str(name))
            if _norm(name) not in [_norm(o) for o in objects]:
                objects.append(str(name))
        attrs: dict[str, list[str]] = {}
        for name, values in (data.get("attributes") or {}).items():
            names.setdefault(_norm(name), str(name))
            attrs.setdefault(_norm(name), []).extend(str(v) for v in values)
        rels: list[Relation] = []
        for subject, predicate, obj in data.get("relations") or []:
            names.setdefault(_norm(subject), str(subject))
            names.setdefault(_norm(obj), str(obj))
            rels.append(Relation(str(subject), str(predicate), str(obj)))
        self._names = names
        self._objects = objects
        self._attrs = attrs
        self._rels = rels
        self._caption = data.get("caption")
        self._regions = [str(r.get("description", "")) for r in data.get("regions") or []]

    @property
    def caption(self) -> str | None:
        return self._caption

    def entities(self, objects_only: bool = False) -> list[str]:
        """Entity names (objects first, then entities that appear only in relations or attributes)."""
        if objects_only:
            return list(self._objects)
        return list(self._names.values())

    def has_entity(self, name: str) -> bool:
        return _norm(name) in self._names

    def attributes(self, entity: str) -> list[str]:
        return list(self._attrs.get(_norm(entity), []))

    def outgoing(self, entity: str) -> list[Relation]:
        key = _norm(entity)
        return [r for r in self._rels if _norm(r[0]) == key]

    def incoming(self, entity: str) -> list[Relation]:
        key = _norm(entity)
        return [r for r in self._rels if _norm(r[2]) == key]

    def relations(self) -> list[Relation]:
        return list(self._rels)

    def relations_between(self, subject: str, obj: str) -> list[str]:
        s, o = _norm(subject), _norm(obj)
        return [r[1] for r in self._rels if _norm(r[0]) == s and _norm(r[2]) == o]

    def regions(self) -> list[str]:
        return list(self._regions)

    def describe(self) -> str:
        lines = [
            f"The {name} is {', '.join(self._attrs[key])}."
            for key, name in self._names.items()
            if key in self._attrs
        ]
        lines += [f"The {r[0]} {r[1]} the {r[2]}." for r in self._rels]
        return "\n".join(lines)


# -- restricted execution ------------------------------------------------------------------------------------

_ALLOWED_MODULES = {
    "math": math,
    "re": re,
    "collections": collections,
    "itertools": itertools,
    "statistics": statistics,
    "string": string,
}


class SandboxDenied(Exception):
    """An operation the sandbox does not allow (an import outside the list, a guarded write)."""


def _module_copy(module: types.ModuleType) -> types.SimpleNamespace:
    """A read-only-in-effect copy of a module's public, non-module attributes (no path to ``sys``)."""
    public = {
        name: value
        for name, value in vars(module).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    public.pop("Formatter", None)  # string.Formatter reaches attributes by name
    return types.SimpleNamespace(**public)


def _guarded_import(
    name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
) -> Any:
    if level != 0 or name not in _ALLOWED_MODULES:
        raise SandboxDenied(
            f"import of {name!r} is not allowed (allowed: {', '.join(sorted(_ALLOWED_MODULES))})"
        )
    return _module_copy(_ALLOWED_MODULES[name])


def _inplacevar(op: str, x: Any, y: Any) -> Any:
    ops = {
        "+=": lambda a, b: a + b, "-=": lambda a, b: a - b, "*=": lambda a, b: a * b,
        "/=": lambda a, b: a / b, "//=": lambda a, b: a // b, "%=": lambda a, b: a % b,
        "**=": lambda a, b: a**b, "|=": lambda a, b: a | b, "&=": lambda a, b: a & b,
        "^=": lambda a, b: a ^ b,
    }  # fmt: skip
    if op not in ops:
        raise SandboxDenied(f"operator {op} is not allowed")
    return ops[op](x, y)


def _restricted_globals() -> dict[str, Any]:
    builtins = dict(safe_builtins)
    for name in ("setattr", "delattr", "__build_class__"):
        builtins.pop(name, None)
    builtins.update(
        {
            "__import__": _guarded_import,
            "getattr": safer_getattr_raise,
            "list": list, "dict": dict, "set": set, "frozenset": frozenset, "tuple": tuple,
            "min": min, "max": max, "sum": sum, "any": any, "all": all, "sorted": sorted,
            "enumerate": enumerate, "zip": zip, "map": map, "filter": filter, "reversed": reversed,
        }
    )  # fmt: skip
    return {
        "__builtins__": builtins,
        "__name__": "program",
        "_getattr_": safer_getattr_raise,
        "_getitem_": lambda obj, index: obj[index],
        "_getiter_": iter,
        "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
        "_unpack_sequence_": guarded_unpack_sequence,
        "_write_": full_write_guard,
        "_inplacevar_": _inplacevar,
        "_print_": PrintCollector,
        "_apply_": lambda f, *a, **k: f(*a, **k),
    }


# -- the forked process -----------------------------------------------------------------------------------

#: System calls a forked program may make; every other one fails with EPERM.
#:
#: ``newfstatat`` is left out although glibc implements ``fstat()`` with it (``newfstatat(fd, "",
#: AT_EMPTY_PATH)``): seccomp sees only the pointer to the path, not the path, and with a non-empty path
#: the same call stats any file by name whatever its flags. Nothing the process does after the filter is
#: loaded needs to stat a descriptor; a program that tries gets EPERM.
_ALLOWED_SYSCALLS = (
    "read", "close", "fstat", "lseek",
    "brk", "mmap", "munmap", "mremap", "mprotect", "madvise",
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack",
    "futex", "sched_yield", "getpid", "gettid", "getuid", "geteuid", "getgid", "getegid",
    "clock_gettime", "clock_getres", "gettimeofday", "nanosleep", "clock_nanosleep",
    "getrusage", "times", "getrandom", "restart_syscall", "exit", "exit_group",
)  # fmt: skip


def _install_seccomp(result_fd: int) -> None:
    assert seccomp is not None
    rules = seccomp.SyscallFilter(defaction=seccomp.ERRNO(errno.EPERM))
    for name in _ALLOWED_SYSCALLS:
        try:
            rules.add_rule(seccomp.ALLOW, name)
        except Exception:
            continue
    rules.add_rule(seccomp.ALLOW, "write", seccomp.Arg(0, seccomp.EQ, result_fd))
    rules.load()


#: How deeply an answer may nest lists and dicts: far more than any check needs, and well inside what
#: JSON readers and pydantic (which stops at a few hundred levels) handle when the answer is stored.
MAX_VALUE_DEPTH = 32


def _nesting(value: Any) -> int:
    """How many levels of lists and dicts ``value`` holds (walked without recursion)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in item if isinstance(child, (list, dict)))
    return deepest


def _plain(value: Any, depth: int = 1) -> Any:
    """The value as JSON data, or raise TypeError naming what the program returned."""
    if isinstance(value, (list, tuple, set, frozenset, dict)) and depth > MAX_VALUE_DEPTH:
        raise TypeError(f"returned a structure nested more than {MAX_VALUE_DEPTH} levels deep")
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise TypeError(f"returned a non-finite number ({value})")
        return value
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else list(value)
        return [_plain(v, depth + 1) for v in items]
    if isinstance(value, dict):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    raise TypeError(f"returned a {type(value).__name__}, not a string, number, yes/no, or a list of them")


def _run_program(graph: dict[str, Any], program: str, entry: str, restricted: bool = True) -> dict[str, Any]:
    """Compile and run one program in the (already resource-limited and seccomp'd) current process.

    ``restricted=False`` skips the RestrictedPython layer; only the tests use it, to show that the OS
    layers alone stop hostile programs.
    """
    try:
        code = (
            compile_restricted(program, "<program>", "exec")
            if restricted
            else compile(program, "<program>", "exec")
        )
    except SyntaxError as error:
        text = str(error)
        status = (
            "rejected"
            if "restricted" in text.lower() or "invalid" in text.lower() or "not allowed" in text.lower()
            else "syntax_error"
        )
        return {"status": status, "error": text[:2000]}
    except Exception as error:
        return {"status": "syntax_error", "error": f"{type(error).__name__}: {error}"[:2000]}
    scope: dict[str, Any] = _restricted_globals() if restricted else {"__name__": "program"}
    api = Graph(graph)
    try:
        exec(code, scope)
        function = scope.get(entry)
        if function is None:
            functions = [
                v for k, v in scope.items() if isinstance(v, types.FunctionType) and not k.startswith("_")
            ]
            if len(functions) != 1:
                return {"status": "error", "error": f"the program defines no function named {entry!r}"}
            function = functions[0]
        value = function(api)
    except MemoryError:
        return {"status": "memory", "error": "the program ran out of its memory limit"}
    except RecursionError:
        return {"status": "error", "error": "RecursionError: maximum recursion depth exceeded"}
    except SandboxDenied as error:
        return {"status": "denied", "error": str(error)}
    except PermissionError as error:
        return {"status": "denied", "error": f"a system call was refused by the sandbox ({error})"}
    except AttributeError as error:
        if "invalid attribute name" in str(error) or "restricted name" in str(error):
            return {"status": "denied", "error": str(error)}
        return {"status": "error", "error": f"AttributeError: {error}"}
    except NameError as error:
        name = getattr(error, "name", None)
        if (
            restricted
            and name
            and name
            in vars(
                __builtins__
                if isinstance(__builtins__, types.ModuleType)
                else types.SimpleNamespace(**__builtins__)
            )
        ):
            return {"status": "denied", "error": f"{name!r} is not available to programs in the sandbox"}
        return {"status": "error", "error": f"NameError: {error}"}
    except ImportError as error:
        return {"status": "denied", "error": f"ImportError: {error}"}
    except BaseException as error:
        last = traceback.extract_tb(error.__traceback__)[-1:]
        where = f" (line {last[0].lineno})" if last and last[0].filename == "<program>" else ""
        return {"status": "error", "error": f"{type(error).__name__}: {error}{where}"[:2000]}
    try:
        plain = _plain(value)
    except TypeError as error:
        return {"status": "bad_type", "error": f"the program {error}"}
    except RecursionError:
        return {"status": "bad_type", "error": "the program returned a structure nested too deeply"}
    return {"status": "ok", "value": plain}


def _child(
    graph: dict[str, Any], program: str, entry: str, limits: dict[str, Any], write_fd: int, devnull: int
) -> None:
    """In the forked process: drop everything, restrict, run, write one JSON result, exit."""
    status = 0
    try:
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.closerange(3, write_fd)
        os.closerange(write_fd + 1, 65536)
        os.environ.clear()
        cpu = int(limits["cpu_s"])
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_AS, (int(limits["memory_bytes"]), int(limits["memory_bytes"])))
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NOFILE, (write_fd + 1, write_fd + 1))
        resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past RLIMIT_FSIZE fails instead of killing
        _install_seccomp(write_fd)
        result = _run_program(graph, program, entry, bool(limits.get("restricted", True)))
        try:
            data = json.dumps(result).encode()
        except (TypeError, ValueError, RecursionError) as error:
            data = json.dumps(
                {"status": "bad_type", "error": f"the program's answer is not JSON data ({error})"}
            ).encode()
        view = memoryview(data)
        while view:
            written = os.write(write_fd, view[: 1 << 16])
            view = view[written:]
    except BaseException:
        status = 70
    finally:
        os._exit(status)


def _collect(pid: int, read_fd: int, limits: dict[str, Any]) -> dict[str, Any]:
    """Read the child's result (bounded in size and wall time), reap it, and name the outcome."""
    max_bytes = int(limits["max_output_bytes"])
    deadline = time.monotonic() + float(limits["wall_s"])
    chunks: list[bytes] = []
    size = 0
    outcome: dict[str, Any] | None = None
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            outcome = {
                "status": "timeout",
                "error": f"the program ran longer than {limits['wall_s']} s (wall clock)",
            }
            break
        ready, _, _ = select.select([read_fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(read_fd, 1 << 16)
        if not chunk:
            break
        size += len(chunk)
        if size > max_bytes:
            outcome = {
                "status": "output_too_large",
                "error": f"the program's answer exceeds {max_bytes} bytes",
            }
            break
        chunks.append(chunk)
    os.close(read_fd)
    if outcome is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    _, wait_status = os.waitpid(pid, 0)
    if outcome is not None:
        return outcome
    if os.WIFSIGNALED(wait_status):
        sig = os.WTERMSIG(wait_status)
        if sig in (signal.SIGXCPU, signal.SIGKILL):
            return {
                "status": "timeout",
                "error": f"the program used more than {limits['cpu_s']} s of CPU time",
            }
        return {
            "status": "crashed",
            "error": f"the program's process was killed by {signal.Signals(sig).name}",
        }
    raw = b"".join(chunks)
    try:
        result = json.loads(raw.decode())
        if not isinstance(result, dict) or "status" not in result:
            raise ValueError("no status")
        if _nesting(result) > MAX_VALUE_DEPTH + 1:
            raise RecursionError  # only bytes the program wrote itself nest deeper than _plain allows
        return result
    except RecursionError:
        return {"status": "sandbox_error", "error": "invalid result from the sandbox (nested too deeply)"}
    except (ValueError, UnicodeDecodeError):
        code = os.WEXITSTATUS(wait_status) if os.WIFEXITED(wait_status) else -1
        if not raw and code == 70:
            return {
                "status": "memory",
                "error": "the program's process failed before answering (out of memory?)",
            }
        return {
            "status": "crashed",
            "error": f"the program's process exited ({code}) without a readable answer",
        }


def run_one(
    graph: dict[str, Any], program: str, entry: str, limits: dict[str, Any], devnull: int
) -> dict[str, Any]:
    started = time.perf_counter()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the forked process never returns
        os.close(read_fd)
        _child(graph, program, entry, limits, write_fd, devnull)
    os.close(write_fd)
    result = _collect(pid, read_fd, limits)
    result["seconds"] = round(time.perf_counter() - started, 4)
    return result


def _memory_limit(extra_bytes: int) -> int:
    """This worker's current address space plus the programs' allowance (a fork starts with a copy)."""
    with open("/proc/self/statm", encoding="ascii") as handle:
        pages = int(handle.read().split()[0])
    return pages * os.sysconf("SC_PAGE_SIZE") + extra_bytes


def main() -> None:
    if seccomp is None:
        sys.stdout.write(json.dumps({"fatal": f"seccomp is unavailable: {SECCOMP_ERROR}"}) + "\n")
        sys.stdout.flush()
        return
    devnull = os.open(os.devnull, os.O_RDWR)
    sys.stdout.write(json.dumps({"ready": True, "pid": os.getpid()}) + "\n")
    sys.stdout.flush()
    for line in sys.stdin:
        try:
            request = json.loads(line)
            limits = dict(request["limits"])
            limits["memory_bytes"] = _memory_limit(int(limits["memory_mb"]) << 20)
            graph = request["graph"]
            entry = str(request.get("entry") or "verify")
            results = [run_one(graph, str(p), entry, limits, devnull) for p in request["programs"]]
            reply: dict[str, Any] = {"results": results}
        except Exception as error:
            reply = {"error": f"{type(error).__name__}: {error}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
