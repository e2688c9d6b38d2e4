"""``--judge-model local`` / ``--extractor-model local``: the packaged model starts with the run and is gone
after it, whichever way the run ends, and its port never reaches a cache key or the run's identity.

The end-to-end tests run the real CLI in a subprocess with the real llama.cpp server and the packaged GGUF,
and watch ``/proc`` while it runs for ``llama_cpp.server`` processes whose parent is the CLI; afterwards
each pid seen must be gone. Answers are Tri-HE reference answers with one pre-extracted claim each, so the
LLM judges 20 short claims and extracts nothing; the tests share one cache so that a resumed run costs no
new LLM call.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from halluscope.cache import Cache
from halluscope.cli.main import app
from halluscope.llm.client import ChatClient, named_endpoint
from halluscope.llm.local import LOCAL_ENDPOINT
from halluscope.llm.offline import SERVER_RUNTIMES
from tests.paths import TRI_HE_JSON

N_ANSWERS = 20

# The answers and scene graphs are the released Tri-HE's (no licence to commit an excerpt of it).
pytestmark = pytest.mark.full_data

#: The command-line module of each server halluscope may start.
SERVER_MODULES = {module.encode() for module, _ in SERVER_RUNTIMES.values()}


# -- helpers ------------------------------------------------------------------------------------------


def _reference_answers(n: int) -> list[dict[str, object]]:
    """The first ``n`` Tri-HE reference answers that come with a well-formed triplet, with that one claim."""
    data = json.loads(TRI_HE_JSON.read_text(encoding="utf-8"))
    rows: list[dict[str, object]] = []
    for image_id, entry in data.items():
        for index, item in enumerate(entry["instance"]):
            parts = [p.strip() for p in item["triplet"][0].strip("() ").split(",", 2)] if item["triplet"] else []
            if len(parts) == 3 and all(parts):
                rows.append({"id": f"{image_id}-{index}", "response": item["answer"], "claims": [parts]})
            if len(rows) == n:
                return rows
    raise AssertionError(f"fewer than {n} usable reference answers in {TRI_HE_JSON}")


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _proc_info(pid: int) -> tuple[int, list[bytes]] | None:
    """(parent pid, command line) of a live process, or None once it is gone (zombies count as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    state, ppid = stat.rsplit(")", 1)[1].split()[:2]
    return None if state == "Z" else (int(ppid), cmdline)


def _servers_of(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (info := _proc_info(int(entry.name))) is not None:
            ppid, cmdline = info
            if ppid == parent and any(module in cmdline for module in SERVER_MODULES):
                found.append(int(entry.name))
    return found


def _alive_server(pid: int) -> bool:
    info = _proc_info(pid)
    return info is not None and any(module in info[1] for module in SERVER_MODULES)


class Cli:
    """The CLI in a subprocess, with the llama.cpp servers it starts recorded while it runs."""

    def __init__(self, args: list[str]) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "halluscope.cli.main", *args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
            # A shell's background job (`pytest ... &`) starts with SIGINT ignored, and so would the CLI:
            # give it the default disposition, as a terminal's foreground command has.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )  # fmt: skip
        self.servers: set[int] = set()

    def watch(self, until: Callable[[], bool] | None = None, timeout_s: float = 1800.0) -> None:
        """Record server pids until the CLI exits (or until ``until()`` holds, a server having been seen)."""
        deadline = time.monotonic() + timeout_s
        while self.process.poll() is None and time.monotonic() < deadline:
            self.servers.update(_servers_of(self.process.pid))
            if until is not None and self.servers and until():
                return
            time.sleep(0.2)
        assert until is None, "the run ended (or timed out) before it was under way"

    def finish(self, timeout_s: float = 1800.0) -> tuple[int, str]:
        self.watch(timeout_s=timeout_s)
        try:
            out, _ = self.process.communicate(timeout=60)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
        return self.process.returncode, out

    def assert_no_server_left(self) -> None:
        assert self.servers, "no llama.cpp server was seen while the command ran"
        deadline = time.monotonic() + 20  # SIGTERM to the server, then its own shutdown
        while any(_alive_server(pid) for pid in self.servers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert [pid for pid in self.servers if _alive_server(pid)] == [], "a llama.cpp server was left behind"


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder (and so one cache file) for the module's runs."""
    return tmp_path_factory.mktemp("local-llm")


def _run_args(answers: Path, out: Path, cache: Path, *extra: str) -> list[str]:
    return [
        "run", "-b", "tri-he", "--data", str(TRI_HE_JSON), "--responses", str(answers), "--only-answered",
        "--out", str(out), "--cache", str(cache), "--judge", "llm", "--judge-model", "local", *extra,
    ]  # fmt: skip


# -- end to end, with the real server -------------------------------------------------------------------


@pytest.mark.slow
def test_judge_model_local_runs_20_answers_and_leaves_no_server(work: Path) -> None:
    answers = _write(work / "answers.jsonl", _reference_answers(N_ANSWERS))
    cache = work / "cache.sqlite"
    # Both stages say local: one server serves them (the extractor is idle, every answer has its claim).
    cli = Cli(_run_args(answers, work / "run", cache, "--extractor", "llm", "--extractor-model", "local"))
    code, output = cli.finish()
    assert code == 0, output
    assert len(cli.servers) == 1, f"expected one shared server, saw {sorted(cli.servers)}"
    cli.assert_no_server_left()
    for log_line in ("llama_model_loader", "Uvicorn running", "INFO:"):  # llama.cpp's log stays in its file
        assert log_line not in output, output

    metrics = json.loads((work / "run" / "metrics.json").read_text(encoding="utf-8"))
    counts = metrics["counts"]
    assert (counts["scored_questions"], counts["failed_samples"], counts["claims"]) == (N_ANSWERS, 0, N_ANSWERS)
    assert metrics["metrics"]["hallu_q"] is not None
    records = [json.loads(line) for line in (work / "run" / "samples.jsonl").read_text().splitlines()]
    verdicts = [c["verdict"] for r in records for c in r["claims"]]
    assert len(verdicts) == N_ANSWERS and set(verdicts) <= {"supported", "hallucinated", "unjudged"}
    assert verdicts.count("unjudged") < N_ANSWERS, "the local judge judged nothing"

    spec = json.loads((work / "run" / "spec.json").read_text(encoding="utf-8"))
    assert spec["judge"]["model"] == spec["local_llm"]["model"] == "qwen2.5-coder-1.5b-instruct"
    assert spec["judge"]["base_url"] == spec["extractor"]["base_url"] == LOCAL_ENDPOINT  # not the port
    assert spec["local_llm"]["gguf"] == "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    assert spec["local_llm"]["stages"] == ["extractor 'llm'", "judge 'llm'"]

    # A second run with `local` starts a server on another port, and finds every verdict in the cache.
    rows_before = Cache(cache).count("chat")
    again = Cli(_run_args(answers, work / "run-again", cache))
    code, output = again.finish()
    assert code == 0, output
    again.assert_no_server_left()
    assert Cache(cache).count("chat") == rows_before, "the second run asked the LLM again"
    assert json.loads((work / "run-again" / "metrics.json").read_text())["metrics"] == metrics["metrics"]


@pytest.mark.slow
@pytest.mark.parametrize("how", ["sigint", "sigterm", "error"])
def test_interrupted_or_failed_run_stops_the_server_and_resumes(work: Path, how: str) -> None:
    rows = _reference_answers(3)
    answers = _write(work / f"answers-{how}.jsonl", rows)
    out = work / f"run-{how}"
    if how == "error":
        # A claim far beyond the server's 4,096-token context: the server rejects it (HTTP 400), a fatal error
        # that stops the run while the server is up.
        huge = {**rows[-1], "claims": [["desk", "has", " ".join(["papers"] * 6000)]]}
        _write(answers, [*rows[:-1], huge])
        first = Cli(_run_args(answers, out, work / "cache.sqlite"))
        code, output = first.finish()
        assert code == 2, output
        assert "re-run to resume" in output, output
        _write(answers, rows)  # the user mends the answers file in place and runs the same command again
    else:
        first = Cli(_run_args(answers, out, work / f"cache-{how}.sqlite"))
        first.watch(until=(out / "spec.json").exists)  # the server is up and the run under way
        first.process.send_signal(signal.SIGINT if how == "sigint" else signal.SIGTERM)
        code, output = first.finish(timeout_s=120)
        assert code != 0, output
    first.assert_no_server_left()

    # The same run directory is taken up again (its judge's identity holds no port) and finishes.
    resumed = Cli(_run_args(answers, out, work / "cache.sqlite"))
    code, output = resumed.finish()
    assert code == 0, output
    resumed.assert_no_server_left()
    counts = json.loads((out / "metrics.json").read_text())["counts"]
    assert (counts["scored_questions"], counts["failed_samples"]) == (len(rows), 0)


@pytest.mark.slow
def test_evaluate_with_a_local_judge_stops_its_server(work: Path) -> None:
    import halluscope

    answers = _write(work / "answers-api.jsonl", _reference_answers(3))
    # Servers this test process already runs (the session's llama_server fixture) are not evaluate()'s.
    before = set(_servers_of(os.getpid()))
    seen: set[int] = set()
    stop = False

    def watch() -> None:  # the server is a child of this process while evaluate() runs
        while not stop:
            seen.update(_servers_of(os.getpid()))
            time.sleep(0.2)

    import threading

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        result = halluscope.evaluate(
            "tri-he", data=TRI_HE_JSON, responses=answers, judge="llm", judge_options={"model": "local"},
            only_answered=True, out=work / "run-api", cache=work / "cache.sqlite",
        )  # fmt: skip
    finally:
        stop = True
        watcher.join()
    assert result.counts["scored_questions"] == 3 and result.counts["failed_samples"] == 0
    assert result.spec["judge"]["base_url"] == LOCAL_ENDPOINT
    seen -= before
    assert len(seen) == 1
    deadline = time.monotonic() + 20
    while any(_alive_server(pid) for pid in seen) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive_server(pid) for pid in seen), "evaluate() left its llama.cpp server behind"


# -- without a server -------------------------------------------------------------------------------------


def test_a_named_endpoint_keys_the_cache_by_its_name_and_others_by_their_address() -> None:
    first, second = ChatClient("m", "http://127.0.0.1:40001/v1"), ChatClient("m", "http://127.0.0.1:40002/v1")
    assert first.identity() != second.identity()
    assert first.identity() == {"model": "m", "base_url": "http://127.0.0.1:40001/v1"}  # unchanged keys
    with named_endpoint("http://127.0.0.1:40001/v1", LOCAL_ENDPOINT):
        keyed = first.identity()
        assert second.identity()["base_url"] == "http://127.0.0.1:40002/v1"
    with named_endpoint("http://127.0.0.1:40002/v1/", LOCAL_ENDPOINT):
        assert second.identity() == keyed == {"model": "m", "base_url": LOCAL_ENDPOINT}
    assert second.identity()["base_url"] == "http://127.0.0.1:40002/v1"  # the name ends with the block


@pytest.fixture
def one_answer(tmp_path: Path) -> Path:
    return _write(tmp_path / "a.jsonl", _reference_answers(1))


def _refused(args: list[str]) -> str:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    return " ".join(result.output.split())


def test_base_url_with_local_for_the_same_stage_is_refused(one_answer: Path, tmp_path: Path) -> None:
    base = _run_args(one_answer, tmp_path / "r", tmp_path / "c.sqlite")
    output = _refused([*base, "--base-url", "http://127.0.0.1:9/v1"])
    assert "model 'local'" in output and "--base-url" in output and "give one of the two" in output
    output = _refused([*base, "--judge-opt", "base_url=http://127.0.0.1:9/v1"])
    assert "base_url 'http://127.0.0.1:9/v1'" in output and "give one of the two" in output
    assert not (tmp_path / "r").exists()


def test_local_for_a_stage_without_an_llm_is_refused(one_answer: Path, tmp_path: Path) -> None:
    args = _run_args(one_answer, tmp_path / "r", tmp_path / "c.sqlite")
    args[args.index("llm")] = "similarity"
    output = _refused(args)
    assert "judge 'similarity' uses no LLM" in output


def test_evaluate_refuses_base_url_with_a_local_judge(one_answer: Path, tmp_path: Path) -> None:
    import halluscope
    from halluscope.api import EvaluationError

    with pytest.raises(EvaluationError, match="give one of the two"):
        halluscope.evaluate(
            "tri-he", data=TRI_HE_JSON, responses=one_answer, judge="llm", only_answered=True,
            judge_options={"model": "local"}, base_url="http://127.0.0.1:9/v1", out=tmp_path / "r", cache=False,
        )  # fmt: skip


def test_stage_options_point_a_local_stage_at_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    from halluscope.llm import local as local_module
    from halluscope.llm.local import LocalLLM, local_stage_options
    from halluscope.llm.offline import LocalServer

    started: list[int] = []

    def fake_server(self: LocalLLM) -> LocalServer:  # the real one is exercised end to end above
        started.append(1)
        return LocalServer("http://127.0.0.1:5/v1", "qwen", Path("m.gguf"), 1, Path("log"))

    monkeypatch.setattr(local_module.LocalLLM, "server", fake_server)
    local = LocalLLM()
    assert local_stage_options(local, "judge", {"model": "gpt-4o", "mode": "batched"}) == {
        "model": "gpt-4o", "mode": "batched",
    }  # fmt: skip
    assert started == []
    options = local_stage_options(local, "judge", {"model": "LOCAL", "concurrency": 2})
    assert options == {"model": "qwen", "base_url": "http://127.0.0.1:5/v1", "concurrency": 2, "timeout_s": 600.0}


def test_build_commands_refuse_local_with_base_url(tmp_path: Path) -> None:
    from tests.paths import REEFKNOT_DIR

    elsewhere = ["--base-url", "http://127.0.0.1:9/v1"]
    output = _refused(["build", "parallel", "-b", "reefknot", "--data", str(REEFKNOT_DIR), "--out",
                       str(tmp_path / "p"), "--paraphraser", "llm", "--llm-model", "local", *elsewhere])  # fmt: skip
    assert "--llm-model local" in output and "give one of the two" in output
    output = _refused(["build", "prove", "-g", str(TRI_HE_JSON), "--out", str(tmp_path / "b"), "--llm", "local",
                       *elsewhere])  # fmt: skip
    assert "--llm local" in output and "give one of the two" in output


@pytest.mark.slow
def test_a_local_mmhal_judge_run_carries_its_packaged_measurement(work: Path) -> None:
    """The packaged agreement of the local MMHal-Bench judge (rating first) is keyed by the judge's identity: a
    run configured as it was measured carries the counts and corrected rates. A change of the judge's prompt or
    settings changes the identity, and this test then asks for the measurement to be made again
    (``bench/mmhal_judges.py labels --rating-first --write-agreement``)."""
    from halluscope.judges.agreement import measured_agreement
    from tests.paths import MMHAL_DIR

    out = work / "mmhal"
    args = ["run", "-b", "mmhal", "--data", str(MMHAL_DIR), "-r", str(MMHAL_DIR / "responses" / "llava_7b.json"),
            "--limit", "1", "--judge-model", "local", "--judge-opt", "rating_first=true", "--out", str(out),
            "--cache", str(work / "cache.sqlite"), "-q"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    spec = json.loads((out / "spec.json").read_text(encoding="utf-8"))
    measured = measured_agreement(spec["judge"], "rating")
    assert measured is not None, f"no packaged measurement for {spec['judge']}: measure the judge again"
    section = json.loads((out / "metrics.json").read_text(encoding="utf-8"))["judge_error"]
    assert section["measured"]["rating"]["hallucinated"] == measured.counts.positives
    assert set(section["corrected"]) == {"hallucination_rate", "official_hallucination_rate"}
