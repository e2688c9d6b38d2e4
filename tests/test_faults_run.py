"""A real run's faults: two processes on one ``--out``, a run that measured nothing, a full or read-only
disk, an undecodable byte in the run log, and Ctrl-C / SIGTERM in the middle of a run.

The runs are Tri-HE-layout runs judged by the LLM judge on a scripted loopback server (no model to load),
as the user's command line (in process, or as a subprocess where signals and a second process matter).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from halluscope.benchmarks.tri_he import TriHE, ground_truth_responses
from halluscope.cache import Cache
from halluscope.responses import write_responses
from halluscope.runs.runner import NothingMeasuredError, run_benchmark
from halluscope.runs.selection import first_samples
from halluscope.stages import ScoringContext
from tests.layouts import tri_he_layout
from tests.scripted_server import Reply, ScriptedServer, completion

N = 3


def answers_file(tmp_path: Path, n: int = N) -> Path:
    bench = TriHE(tri_he_layout())
    chosen = first_samples(bench, n)
    return write_responses(tmp_path / "answers.jsonl", ground_truth_responses(chosen, with_claims=True))


def claims_of(answers: Path) -> dict[str, int]:
    """Claims per sample id in an answers file: the LLM judge asks once per claim."""
    rows = [json.loads(line) for line in answers.read_text().splitlines()]
    return {row["id"]: len(row["claims"]) for row in rows}


def run_args(out: Path, answers: Path, base_url: str, n: int = N, *extra: str) -> list[str]:
    return [
        "run", "-b", "tri-he", "--data", str(tri_he_layout()), "-r", str(answers), "--limit", str(n),
        "--judge", "llm", "--judge-model", "m", "--base-url", base_url, "--judge-opt", "max_retries=0",
        "--out", str(out), "--quiet", *extra,
    ]  # fmt: skip


def cli(args: list[str]) -> Any:
    from halluscope.cli.main import app

    return CliRunner().invoke(app, args, terminal_width=400)


def spawn(args: list[str]) -> subprocess.Popen[str]:
    """``halluscope ARGS`` as a process of its own (a group of its own, so a signal reaches it alone)."""
    return subprocess.Popen(
        [sys.executable, "-m", "halluscope.cli.main", *args],
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def records(out: Path) -> list[dict[str, Any]]:
    path = out / "samples.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def wait_for(condition: Any, process: subprocess.Popen[str] | None = None, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the process ended first: {process.communicate()}")
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.05)


class Gate:
    """A judge on the scripted server that answers the first ``quick`` requests at once and holds the rest
    until :meth:`open` (a slow endpoint): a run is caught in the middle, deterministically."""

    def __init__(self, quick: int) -> None:
        self.quick = quick
        self.seen = 0
        self._lock = threading.Lock()
        self._open = threading.Event()

    def open(self) -> None:
        self._open.set()

    def __call__(self, body: Any) -> Reply:
        with self._lock:
            self.seen += 1
            held = self.seen > self.quick
        if held:
            self._open.wait(60)
        return completion("Verdict: supported")


# -- one writer per run folder ---------------------------------------------------------------------------


def test_a_second_process_on_the_same_out_is_refused_naming_the_first(tmp_path: Path) -> None:
    answers, out = answers_file(tmp_path), tmp_path / "run"
    gate = Gate(quick=0)  # the first run waits on its first judge call
    with ScriptedServer(responder=gate) as server:
        first = spawn(run_args(out, answers, server.base_url, N, "--no-cache"))
        try:
            wait_for(lambda: len(server.chat_requests()) > 0, first)
            second = cli(run_args(out, answers, server.base_url, N, "--no-cache"))
            collect = cli([
                "respond", "-b", "tri-he", "--data", str(tri_he_layout()), "--limit", str(N), "--quiet",
                "--model", f"openai/x?base_url={server.base_url}", "--no-cache", "--out", str(out),
            ])  # fmt: skip
        finally:
            first.kill()  # killed mid-run, holding the lock
            first.wait()
        gate.open()
        for refused in (second, collect):
            said = " ".join(refused.output.split())
            assert refused.exit_code == 2, refused.output
            assert f"{out} is in use by process {first.pid}" in said and "halluscope" in said, said
            assert "Traceback" not in refused.output
        assert all(r.body.get("model") != "x" for r in server.chat_requests())  # the model was not asked
        assert not (out / "responses.jsonl").exists() and records(out) == []

        # The killed process's lock went with it: the same command now runs to its end.
        third = cli(run_args(out, answers, server.base_url, N, "--no-cache"))
    assert third.exit_code == 0, third.output
    ids = [r["id"] for r in records(out)]
    assert len(ids) == N == len(set(ids))


def test_two_threads_of_one_process_on_one_out_are_refused_too(tmp_path: Path) -> None:
    from halluscope.runs.lock import RunDirBusyError, run_dir_lock

    out = tmp_path / "run"
    refused: list[BaseException] = []

    def other() -> None:
        try:
            with run_dir_lock(out):
                pass
        except RunDirBusyError as error:
            refused.append(error)

    with run_dir_lock(out), run_dir_lock(out):  # the same thread may take it again (run --model)
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
    assert len(refused) == 1 and f"process {os.getpid()}" in str(refused[0])


# -- a run that measured nothing fails -------------------------------------------------------------------


def test_a_tri_he_run_that_scored_no_sample_fails_naming_the_failures(tmp_path: Path) -> None:
    bench = TriHE(tri_he_layout())
    chosen = first_samples(bench, N)
    with pytest.raises(NothingMeasuredError) as caught:
        run_benchmark(
            bench, {}, ScoringContext(cache=Cache(None)), tmp_path / "run", show_progress=False, selection=chosen
        )
    message = str(caught.value)
    assert f"nothing was measured: none of the {N} samples was scored ({N} failed in their inputs)" in message
    assert "no answer for this sample" in message  # the last error
    assert caught.value.failures == {"input": N}
    saved = json.loads((tmp_path / "run" / "metrics.json").read_text())  # kept for inspection
    assert all(value is None for value in saved["metrics"].values())


def test_a_pope_run_whose_answers_all_failed_fails(tmp_path: Path) -> None:
    from halluscope.benchmarks.pope import Pope
    from tests.paths import POPE_EXCERPT

    bench = Pope(POPE_EXCERPT, sources=["coco"], settings=["random"])
    chosen = first_samples(bench, 4)
    with pytest.raises(NothingMeasuredError, match=r"none of the 4 samples was scored \(4 failed in their inputs"):
        run_benchmark(
            bench, {}, ScoringContext(cache=Cache(None)), tmp_path / "run", show_progress=False, selection=chosen
        )


def test_the_command_exits_1_when_nothing_was_measured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every sample fails in its inputs (as when no image has a scene graph): no table of "—" and exit 0."""
    from halluscope.types import SampleRecord

    async def no_scene_graphs(self: TriHE, pairs: Any, ctx: Any) -> list[SampleRecord]:
        return [
            SampleRecord(
                id=s.id, prompt=s.prompt, response=r.response, failure=f"no scene graph for image {s.image_id!r}",
                failed_stage="input",
            )
            for s, r in pairs
        ]

    monkeypatch.setattr(TriHE, "score_many", no_scene_graphs)
    with ScriptedServer(responder=lambda body: completion("Verdict: supported")) as server:
        result = cli(run_args(tmp_path / "run", answers_file(tmp_path), server.base_url))
    said = " ".join(result.output.split())
    assert result.exit_code == 1, result.output
    assert f"nothing was measured: none of the {N} samples was scored ({N} failed in their inputs)" in said
    assert "no scene graph for image" in said and "metrics.json is written for inspection" in said, said
    assert (tmp_path / "run" / "metrics.json").exists()


# -- a full disk, a read-only folder -----------------------------------------------------------------------


@contextlib.contextmanager
def small_disk(folder: Path, size: str, *options: str) -> Iterator[bool]:
    """A tmpfs of ``size`` at ``folder`` when this process may mount one (root); yields whether it did."""
    folder.mkdir(parents=True, exist_ok=True)
    mounted = (
        os.geteuid() == 0
        and subprocess.run(
            ["mount", "-t", "tmpfs", "-o", ",".join([f"size={size}", *options]), "tmpfs", str(folder)],
            capture_output=True,
        ).returncode
        == 0
    )
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def test_a_full_disk_stops_the_run_in_one_line_and_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = 64
    answers, cache = answers_file(tmp_path, n), tmp_path / "cache.sqlite"
    disk = tmp_path / "disk"
    supported = ScriptedServer(responder=lambda body: completion("Verdict: supported"))
    with small_disk(disk, "1m") as mounted, supported as server:
        out = disk / "run"
        filler = disk / "filler"
        if mounted:  # a real full disk: leave room for the spec and a few records only
            filler.write_bytes(b"\0" * (1024 * 1024 - 40 * 1024))
        else:  # not root: the third write of records finds the disk full
            from halluscope.runs import store

            write, calls = store.RecordWriter.write, []

            def full(self: Any, batch: Any) -> None:
                calls.append(1)
                if len(calls) >= 3:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                write(self, batch)

            monkeypatch.setattr(store.RecordWriter, "write", full)
        stopped = cli(run_args(out, answers, server.base_url, n, "--cache", str(cache)))
        said = " ".join(stopped.output.split())
        assert stopped.exit_code == 2, stopped.output
        assert f"cannot write to {out}: the disk is full" in said and "re-run the same command" in said, said
        assert "Traceback" not in stopped.output
        complete = (out / "samples.jsonl").read_text().split("\n")[:-1]  # a torn last line is not complete
        assert 0 < len(complete) < n
        assert not (out / "metrics.json").exists()

        filler.unlink(missing_ok=True)
        monkeypatch.undo()
        resumed = cli(run_args(out, answers, server.base_url, n, "--cache", str(cache)))
        assert resumed.exit_code == 0, resumed.output
        final = {json.dumps(r, sort_keys=True) for r in records(out)}
        assert len(final) == n
        assert all(json.dumps(json.loads(line), sort_keys=True) in final for line in complete)


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[tuple[Path, str]]:
    """``folder`` seen read-only, and how the refusal reads: a read-only bind mount when this process may
    mount (root, which ignores permissions), else the folder's write permission taken away."""
    view = folder.with_name(folder.name + "-ro")
    view.mkdir()
    mount = ["mount", "--bind", str(folder), str(view)]
    if os.geteuid() == 0 and subprocess.run(mount, capture_output=True).returncode == 0:
        remount = subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], capture_output=True)
        try:
            assert remount.returncode == 0, remount.stderr
            yield view, "it is on a read-only file system"
        finally:
            subprocess.run(["umount", "-l", str(view)], capture_output=True)
        return
    view.rmdir()
    folder.chmod(0o555)
    try:
        yield folder, "permission denied"
    finally:
        folder.chmod(0o755)


def test_a_read_only_out_is_refused_in_one_line(tmp_path: Path) -> None:
    n, answers = 4, answers_file(tmp_path, 4)
    with ScriptedServer(responder=lambda body: completion("Verdict: supported")) as server:
        # A run stopped half-way (its last two records dropped), then resumed on a read-only copy.
        out = tmp_path / "run"
        assert cli(run_args(out, answers, server.base_url, n)).exit_code == 0
        lines = (out / "samples.jsonl").read_text().splitlines(keepends=True)
        (out / "samples.jsonl").write_text("".join(lines[:2]))
        with read_only(out) as (view, why):
            before = (view / "samples.jsonl").read_text()
            result = cli(run_args(view, answers, server.base_url, n))
            after = (view / "samples.jsonl").read_text()
            # A folder that does not exist yet, on the read-only disk, is named the same way.
            fresh = cli(run_args(view / "new", answers, server.base_url, n))
    for refused, folder in ((result, view), (fresh, view / "new")):
        said = " ".join(refused.output.split())
        assert refused.exit_code == 2, refused.output
        assert f"cannot write to {folder}: {why}" in said, said
        assert "Traceback" not in refused.output
    assert after == before  # nothing lost


# -- an undecodable byte in samples.jsonl ---------------------------------------------------------------


def test_an_undecodable_line_in_the_run_log_is_listed_and_redone(tmp_path: Path) -> None:
    from halluscope.report.rundir import load_run

    answers, out = answers_file(tmp_path), tmp_path / "run"
    with ScriptedServer(responder=lambda body: completion("Verdict: supported")) as server:
        assert cli(run_args(out, answers, server.base_url)).exit_code == 0
        full = json.loads((out / "metrics.json").read_text())
        lines = (out / "samples.jsonl").read_bytes().splitlines(keepends=True)
        damaged = json.loads(lines[1])["id"]
        lines[1] = lines[1].replace(b'"response":"', b'"response":"\xff', 1)
        (out / "samples.jsonl").write_bytes(b"".join(lines))

        # The report reads the run as it is: the line is named, not a crash.
        shown = load_run(out)
        assert damaged not in {r["id"] for r in shown.records}
        assert any("samples.jsonl line 2" in note and "not UTF-8 text" in note for note in shown.notes)
        html = cli(["report", str(out), "--html", str(tmp_path / "report.html")])
        assert html.exit_code == 0, html.output

        again = cli(run_args(out, answers, server.base_url))
    said = " ".join(again.output.split())
    assert again.exit_code == 0, again.output
    assert "1 corrupt line(s) in samples.jsonl" in said and "line 2: not UTF-8 text" in said, said
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["counts"]["corrupt_log_lines"] == 1 and metrics["metrics"] == full["metrics"]
    assert sorted(r["id"] for r in records(out)).count(damaged) == 1 and len(records(out)) == N


# -- Ctrl-C and SIGTERM ---------------------------------------------------------------------------------


@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_stops_the_run_at_once_keeping_what_finished(tmp_path: Path, sent: signal.Signals) -> None:
    n = 32
    answers, out = answers_file(tmp_path, n), tmp_path / "run"
    claims = claims_of(answers)
    first_chunk = list(claims)[:8]  # the runner's first batch
    gate = Gate(quick=sum(claims[i] for i in first_chunk))
    with ScriptedServer(responder=gate) as server:
        process = spawn(run_args(out, answers, server.base_url, n, "--no-cache"))
        try:
            wait_for(lambda: len(records(out)) >= len(first_chunk), process)
            wait_for(lambda: gate.seen > gate.quick, process)  # the next batch is waiting on the judge
            process.send_signal(sent)
            started = time.monotonic()
            _, stderr = process.communicate(timeout=20)
            took = time.monotonic() - started
        finally:
            if process.poll() is None:
                process.kill()
            gate.open()
        assert process.returncode == 130, stderr
        assert "interrupted; re-run the same command to resume" in stderr and "Traceback" not in stderr
        assert took < 20
        assert not (out / "metrics.json").exists()
        kept = [r["id"] for r in records(out)]
        assert kept[: len(first_chunk)] == first_chunk

        before = len(server.chat_requests())
        resumed = cli(run_args(out, answers, server.base_url, n, "--no-cache"))
        asked = len(server.chat_requests()) - before
    assert resumed.exit_code == 0, resumed.output
    assert asked == sum(c for i, c in claims.items() if i not in kept)  # finished samples were not redone
    assert len(records(out)) == n and (out / "metrics.json").exists()


def test_a_step_that_never_awaits_is_stopped_too(tmp_path: Path) -> None:
    """Synchronous scoring (a whole batch with no ``await``) does not hold a Ctrl-C back."""
    script = (
        "import asyncio, sys, time\n"
        "from halluscope.runs.interrupt import RunInterrupted, run_async\n"
        "async def busy():\n"
        "    await asyncio.sleep(0)\n"
        "    print('busy', flush=True)\n"
        "    end = time.monotonic() + 120\n"
        "    while time.monotonic() < end:\n"
        "        sum(range(1000))\n"
        "try:\n"
        "    run_async(busy())\n"
        "except RunInterrupted as error:\n"
        "    print(error, flush=True)\n"
        "    sys.exit(130)\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "busy"
    process.send_signal(signal.SIGINT)
    try:
        said, _ = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130 and "interrupted; re-run the same command to resume" in said


def test_evaluate_raises_evaluation_error_when_nothing_was_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In Python as on the command line: a run with no figure fails; it does not return a result of None's."""
    from halluscope.api import EvaluationError, evaluate
    from halluscope.types import SampleRecord

    async def no_scene_graphs(self: TriHE, pairs: Any, ctx: Any) -> list[SampleRecord]:
        return [SampleRecord(id=s.id, prompt=s.prompt, response=r.response, failure="no scene graph",
                             failed_stage="input") for s, r in pairs]  # fmt: skip

    monkeypatch.setattr(TriHE, "score_many", no_scene_graphs)
    with pytest.raises(EvaluationError, match=r"nothing was measured: none of the 3 samples was scored"):
        evaluate("tri-he", data=tri_he_layout(), responses=answers_file(tmp_path), limit=N, judge="typed",
                 judge_options={"model": "off"}, out=tmp_path / "run", cache=False, progress=False)
    assert (tmp_path / "run" / "metrics.json").exists()  # kept to inspect
