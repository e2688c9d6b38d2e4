"""The program sandbox: good programs answer, hostile ones are stopped with a named outcome, 0 escapes.

Each hostile program runs twice: through the full sandbox, and with the RestrictedPython layer switched
off, to show that the OS layers (resource limits + seccomp) hold on their own. Escapes are checked by their
effects (a file read back, a file written or deleted, a process started, a connection accepted), not only
by the outcome the sandbox reports.
"""

from __future__ import annotations

import os
import platform
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from halluscope.sandbox import OUTCOMES, Limits, ProgramResult, Sandbox
from halluscope.scene.graph import SceneGraph

GRAPH = SceneGraph.from_triplets(
    [("dog", "is", "white"), ("dog", "is", "fluffy"), ("dog", "on", "rug"), ("cat", "next to", "dog")],
    objects=["dog", "rug", "cat", "cat"],
    image_id="img-1",
).to_dict()

GOOD = """
import collections
def verify(g):
    counts = collections.Counter(g.entities(objects_only=True))
    beside = [r.subject for r in g.incoming("dog") if r.predicate == "next to"]
    on = g.relations_between("dog", "rug")
    return {"colour": g.attributes("Dog")[0], "beside": beside, "n": len(counts), "on": on}
"""


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(limits=Limits(cpu_s=1, wall_s=10.0, memory_mb=128)) as box:
        yield box


@pytest.fixture(scope="module")
def bare_sandbox() -> Iterator[Sandbox]:
    """The OS layers alone (no RestrictedPython)."""
    with Sandbox(limits=Limits(cpu_s=1, wall_s=10.0, memory_mb=128, restricted=False)) as box:
        yield box


def test_a_program_reads_the_graph_through_the_api(sandbox: Sandbox) -> None:
    (result,) = sandbox.run(GRAPH, [GOOD])
    assert result.status == "ok", result.describe()
    assert result.value == {"colour": "white", "beside": ["cat"], "n": 3, "on": ["on"]}


def test_wrong_types_and_failures_are_named(sandbox: Sandbox) -> None:
    programs = [
        "def verify(g):\n    return g\n",  # the graph object itself
        "def verify(g):\n    return float('nan')\n",
        "def verify(g):\n    return 1 / 0\n",
        "def verify(g)\n    return 1\n",
        "x = 1\n",  # no function at all
    ]
    results = sandbox.run(GRAPH, programs)
    assert [r.status for r in results] == ["bad_type", "bad_type", "error", "syntax_error", "error"]
    assert "Graph" in (results[0].error or "")
    assert "ZeroDivisionError" in (results[2].error or "")
    assert all(r.status in OUTCOMES for r in results)


def _prog(*body: str, imports: str = "") -> str:
    """A program ``verify(g)`` with the given body lines (and an optional import line)."""
    head = f"import {imports}\n" if imports else ""
    return head + "def verify(g):\n" + "".join(f"    {line}\n" for line in body)


TOUCH = "'touch {tmp}/spawned.txt'"
# name -> a hostile program ({tmp}: a scratch folder, {port}: a listening loopback port)
HOSTILE: dict[str, str] = {
    "read /etc/passwd": _prog("return open('/etc/passwd').read()"),
    "list the home folder": _prog("return os.listdir(os.path.expanduser('~'))", imports="os"),
    "read a home file": _prog(
        "return open(os.path.join(os.environ.get('HOME', '/root'), '.bashrc')).read()", imports="os"
    ),
    "write a file": _prog("open('{tmp}/written.txt', 'w').write('x')", "return 'done'"),
    "delete a file": _prog("os.remove('{tmp}/victim.txt')", "return 'done'", imports="os"),
    "open a socket": _prog(
        "s = socket.create_connection(('127.0.0.1', {port}), timeout=1)",
        "s.sendall(b'x')",
        "return 1",
        imports="socket",
    ),
    "spawn a process": _prog(f"os.system({TOUCH})", "return open('{tmp}/spawned.txt').read()", imports="os"),
    "subprocess": _prog(
        "return subprocess.check_output(['touch', '{tmp}/spawned.txt']).decode()", imports="subprocess"
    ),
    "fork bomb": _prog("while True:", "    os.fork()", imports="os"),
    "infinite loop": _prog("while True:", "    pass"),
    "memory bomb": _prog("blocks = []", "while True:", "    blocks.append('x' * 10_000_000)"),
    "huge answer": _prog("return 'x' * 5_000_000"),
    "__import__": _prog(f"return __import__('os').system({TOUCH})"),
    "builtins via attributes": _prog(
        "return g.entities.__globals__['__builtins__']['open']('/etc/passwd').read()"
    ),
    "getattr on dunders": _prog(
        "b = getattr(getattr(g, '__init__'), '__globals__')", f"return b['os'].system({TOUCH})"
    ),
    "walk object subclasses": _prog(
        "for cls in ().__class__.__base__.__subclasses__():",
        "    if cls.__name__ == '_wrap_close':",
        f"        return cls.__init__.__globals__['system']({TOUCH})",
    ),
    "ctypes": _prog(f"return ctypes.CDLL(None).system(b{TOUCH})", imports="ctypes"),
    "module attribute chain": _prog(f"return re.enum.sys.modules['os'].system({TOUCH})", imports="re"),
    "str.format leak": _prog("return '{{0.__class__}'.format(g)"),
    "environment": _prog("return dict(os.environ)", imports="os"),
}

#: Outcomes that count as "stopped" (anything but a normal answer).
STOPPED = {"error", "rejected", "denied", "timeout", "memory", "output_too_large", "crashed", "bad_type"}


class _Listener:
    """A loopback TCP server that records whether anyone connected."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(5)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop = True
        self.thread.join(timeout=2)
        self.sock.close()


def _run_hostile(box: Sandbox, tmp_path: Path) -> tuple[dict[str, ProgramResult], _Listener]:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    listener = _Listener()
    programs = {
        name: code.replace("{tmp}", str(tmp_path))
        .replace("{port}", str(listener.port))
        .replace("{{", "{")
        .replace("}}", "}")
        for name, code in HOSTILE.items()
    }
    # Between the hostile ones, a good program: the run goes on, and it still answers.
    names: list[str] = []
    codes: list[str] = []
    for name, code in programs.items():
        names += [name, f"good after {name}"]
        codes += [code, GOOD]
    results = dict(zip(names, box.run(GRAPH, codes), strict=True))
    return results, listener


def _assert_no_escape(results: dict[str, ProgramResult], listener: _Listener, tmp_path: Path) -> None:
    try:
        assert listener.connections == 0, "a program opened a connection"
    finally:
        listener.close()
    assert (tmp_path / "victim.txt").read_text() == "keep me", "a program deleted a file"
    assert not (tmp_path / "written.txt").exists(), "a program wrote a file"
    assert not (tmp_path / "spawned.txt").exists(), "a program started a process"
    for name, result in results.items():
        if name.startswith("good after"):
            assert result.status == "ok", f"{name}: {result.describe()}"
            continue
        text = repr(result.value) + (result.error or "")
        assert "root:" not in text, f"{name} read /etc/passwd: {result.describe()}"
        assert "PATH" not in text and "HOME" not in text, f"{name} read the environment: {result.describe()}"


def test_hostile_programs_are_stopped_with_a_named_outcome(sandbox: Sandbox, tmp_path: Path) -> None:
    results, listener = _run_hostile(sandbox, tmp_path)
    _assert_no_escape(results, listener, tmp_path)
    named = {name: r.status for name, r in results.items() if not name.startswith("good after")}
    assert all(status in STOPPED for status in named.values()), named
    # the outcome says what happened, not just "error"
    assert named["infinite loop"] == "timeout"
    assert named["memory bomb"] == "memory"
    assert named["huge answer"] == "output_too_large"
    for name in (
        "read /etc/passwd",
        "write a file",
        "open a socket",
        "spawn a process",
        "fork bomb",
        "ctypes",
    ):
        assert named[name] in ("denied", "rejected"), (name, results[name].describe())
    for name in ("__import__", "walk object subclasses", "builtins via attributes", "getattr on dunders"):
        assert named[name] in ("denied", "rejected"), (name, results[name].describe())


def test_os_layers_alone_stop_the_same_programs(bare_sandbox: Sandbox, tmp_path: Path) -> None:
    """Without RestrictedPython, os/socket/ctypes are importable: rlimits and seccomp must hold."""
    results, listener = _run_hostile(bare_sandbox, tmp_path)
    _assert_no_escape(results, listener, tmp_path)
    assert results["read /etc/passwd"].status == "denied"
    assert results["write a file"].status == "denied"
    assert results["delete a file"].status == "denied"
    assert results["fork bomb"].status == "denied"
    assert results["subprocess"].status == "denied"
    assert results["infinite loop"].status == "timeout"
    assert results["memory bomb"].status == "memory"
    assert results["environment"].value == {}  # the worker's environment is empty


def test_programs_never_run_in_the_calling_process(sandbox: Sandbox) -> None:
    (result,) = sandbox.run(GRAPH, ["def verify(g):\n    return 1\n"])
    assert result.ok
    process = sandbox._process
    assert process is not None and process.pid != os.getpid()


FORGER = """
import os
def verify(g):
    for fd in range(3, 64):
        try:
            os.write(fd, FORGED)
        except OSError:
            continue
        os._exit(0)
"""


@pytest.mark.parametrize(
    "forged",
    [
        b'{"status": {"nested": 1}}',
        b'{"status": "escaped", "value": 1}',
        b'{"status": "ok", "error": ["x"]}',
        b'{"status": "ok", "value": ' + b"[" * 5000 + b"]" * 5000 + b"}",  # too deep for Python's JSON reader
        b'{"status": "ok", "value": ' + b"[" * 300 + b"]" * 300 + b"}",  # too deep to be stored
    ],
    ids=["status not text", "unknown status", "error not text", "5000 levels deep", "300 levels deep"],
)
def test_a_forged_result_is_that_programs_sandbox_error(bare_sandbox: Sandbox, forged: bytes) -> None:
    """Without RestrictedPython a program can write its own bytes to the result pipe: that one program
    gets ``sandbox_error``, and the programs around it in the batch keep their results."""
    program = FORGER.replace("FORGED", repr(forged))
    before, forger, after = bare_sandbox.run(
        GRAPH, ["def verify(g):\n    return 1\n", program, "def verify(g):\n    return 2\n"]
    )
    assert forger.status == "sandbox_error" and "invalid result" in (forger.error or ""), forger.describe()
    assert (before.status, before.value, after.status, after.value) == ("ok", 1, "ok", 2)


#: ``newfstatat`` by number, per machine: called through ctypes it takes any path, whatever its flags.
_NEWFSTATAT = {"x86_64": 262, "aarch64": 79}.get(platform.machine())
AT_FDCWD, AT_EMPTY_PATH = -100, 0x1000

PATH_PROBES: dict[str, tuple[str, set[str], object]] = {
    # name: (program, the outcomes that mean it learned nothing, the answer it may give then)
    "stat": (_prog("return os.stat('/etc/passwd').st_size", imports="os"), {"denied"}, None),
    "lstat": (_prog("return os.lstat('/etc').st_mode", imports="os"), {"denied"}, None),
    "exists": (
        _prog("return [os.path.exists(p) for p in ('/etc/passwd', '/no/such/file', '/')]", imports="os"),
        {"ok"},
        [False, False, False],
    ),
    "access": (
        _prog("return [os.access(p, os.F_OK) for p in ('/etc/passwd', '/no/such/file')]", imports="os"),
        {"ok"},
        [False, False],
    ),
    "readlink": (_prog("return os.readlink('/proc/self/exe')", imports="os"), {"denied"}, None),
}
if _NEWFSTATAT is not None:
    PATH_PROBES["newfstatat with AT_EMPTY_PATH and a path"] = (
        _prog(
            "buffer = ctypes.create_string_buffer(512)",
            f"return ctypes.CDLL(None).syscall({_NEWFSTATAT}, {AT_FDCWD}, b'/etc/passwd', buffer, {AT_EMPTY_PATH})",
            imports="ctypes",
        ),
        {"ok"},
        -1,
    )


def test_a_program_cannot_learn_whether_a_path_exists(bare_sandbox: Sandbox) -> None:
    """With the OS layers alone, no system call that looks a path up answers: stat, access, readlink."""
    names = list(PATH_PROBES)
    results = bare_sandbox.run(GRAPH, [PATH_PROBES[name][0] for name in names] + [GOOD])
    for name, result in zip(names, results, strict=False):
        _, stopped, answer = PATH_PROBES[name]
        assert result.status in stopped, (name, result.describe())
        if result.status == "ok":
            assert result.value == answer, (name, result.describe())
        else:
            assert "refused by the sandbox" in (result.error or ""), (name, result.describe())
    assert results[-1].status == "ok" and results[-1].value["colour"] == "white"  # a normal program still runs


def test_an_answer_nested_too_deeply_is_bad_type_and_the_batch_goes_on(sandbox: Sandbox) -> None:
    """A 300-level list would pass JSON but not pydantic when the build stores the answer: refused at the source."""
    deep = _prog("x = []", "for i in range(300):", "    x = [x]", "return x")
    shallow = _prog("return {'tuples': [['dog', 'on', 'rug']], 'n': 1}")
    before, refused, after = sandbox.run(GRAPH, [shallow, deep, shallow])
    assert refused.status == "bad_type", refused.describe()
    assert "nested more than 32 levels deep" in (refused.error or "")
    assert before.value == after.value == {"tuples": [["dog", "on", "rug"]], "n": 1}
    assert all(r.model_dump_json() for r in (before, refused, after))  # every result can be stored
