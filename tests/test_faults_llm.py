"""Faults of a real run with LLM stages, each reproduced against a loopback server:

- an endpoint that sends its headers and then a byte now and then holds a request no longer than
  ``timeout_s`` (the model under test and every LLM stage), then fails naming the endpoint and the limit;
- a model whose replies have no text fails its samples (stage ``model``) instead of a green run of empty
  answers, and such replies are not cached;
- a judge whose replies cannot be read fails its samples (stage ``judge``), so the run exits non-zero, and
  such replies are not cached: the next run asks again;
- the packaged local LLM server runs in a process group of its own, so a Ctrl-C at the terminal reaches
  halluscope only; halluscope stops the server itself, at the end of the run or at interpreter exit.

The tests that could hang on a regression bound themselves (``asyncio.wait_for``, a thread join) and fail
instead; none checks how fast anything is.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from typer.testing import CliRunner

from halluscope.benchmarks.tri_he import TriHE
from halluscope.cache import Cache
from halluscope.cli.main import app
from halluscope.judges.hqh import HQHItem, HQHLLMJudge
from halluscope.judges.llm import LLMJudge
from halluscope.judges.vlm import VLMJudge
from halluscope.llm.client import ChatClient, LLMRetriesExhaustedError, served_model
from halluscope.models.base import ChatTurn, GenerateRequest
from halluscope.models.spec import create_model
from halluscope.responses import write_responses
from halluscope.runs.selection import first_samples
from halluscope.scene.graph import SceneGraph
from halluscope.stages import Failure, JudgeItem
from halluscope.types import Claim, Response
from tests.layouts import tri_he_layout
from tests.paths import POPE_EXCERPT, TRI_HE_IMAGES_EXCERPT
from tests.scripted_server import Reply, ScriptedServer, completion

#: Generous bounds for what must end well before them; a regression fails at the bound instead of hanging.
BOUND_S = 60.0
#: One byte per this many seconds: alive, but a reply of a few hundred bytes would take minutes.
TRICKLE_S = 0.25
SRC = Path(__file__).resolve().parents[1] / "src"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HALLUSCOPE_API_KEY", "OPENAI_API_KEY", "HALLUSCOPE_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HALLUSCOPE_LLM_MODEL", "m")


def trickled(text: str) -> Callable[[Any], Reply]:
    """A responder whose every reply is a whole chat completion, sent a byte at a time after the headers."""

    def respond(body: Any) -> Reply:
        reply = completion(text)
        reply.trickle_s = TRICKLE_S
        return reply

    return respond


def invoke_bounded(args: list[str]) -> Result:
    """The CLI in this process, in a thread: a run that hangs fails the test at :data:`BOUND_S`."""
    outcome: list[Result] = []
    worker = threading.Thread(
        target=lambda: outcome.append(CliRunner().invoke(app, args, terminal_width=300)), daemon=True
    )
    worker.start()
    worker.join(BOUND_S)
    assert outcome, f"`halluscope {' '.join(args[:3])} …` was still running after {BOUND_S:g} s"
    return outcome[0]


def said(result: Result) -> str:
    return " ".join(result.output.split())


def _scene(image_id: str = "img") -> SceneGraph:
    scene = SceneGraph(image_id)
    scene.reference_texts = ["(man, using, laptop)"]
    scene.object_names = ["man", "laptop"]
    return scene


def records(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]


# -- one deadline per request ------------------------------------------------------------------------------


async def test_a_reply_sent_a_byte_at_a_time_fails_at_the_deadline_naming_endpoint_and_limit() -> None:
    with ScriptedServer(responder=trickled("A laptop on a desk.")) as server:
        client = ChatClient("m", server.base_url, timeout_s=1.0, max_retries=1, backoff_s=0.01)
        try:
            with pytest.raises(LLMRetriesExhaustedError) as caught:
                await asyncio.wait_for(client.chat([{"role": "user", "content": "hi"}]), BOUND_S)
        finally:
            await client.aclose()
        assert len(server.chat_requests()) == 2  # the timeout is retried like any other, within the budget
    message = str(caught.value)
    assert server.base_url in message and "within 1 s (timeout_s)" in message and "after 2 attempts" in message


async def test_every_llm_judge_and_the_model_under_test_keep_the_deadline() -> None:
    scene = _scene()
    with ScriptedServer(responder=trickled("Verdict: supported")) as server:
        options = {"base_url": server.base_url, "timeout_s": 1, "max_retries": 0}
        judge = LLMJudge(**options)
        (failed,) = await asyncio.wait_for(
            judge.judge_many([JudgeItem("a", [Claim.of(("man", "using", "laptop"))], scene)]), BOUND_S
        )
        await judge.aclose()
        assert isinstance(failed, Failure) and "within 1 s (timeout_s)" in failed.reason

        model = create_model(f"openai/vlm?base_url={server.base_url}&timeout_s=1&max_retries=0", cache=Cache(None))
        request = GenerateRequest(messages=[ChatTurn(text="What is on the desk?")], sample_id="s1")
        with pytest.raises(LLMRetriesExhaustedError, match=r"within 1 s \(timeout_s\)"):
            await asyncio.wait_for(model.generate(request), BOUND_S)
        await model.aclose()


def test_asking_an_endpoint_which_model_it_serves_keeps_the_deadline() -> None:
    listing = json.dumps({"object": "list", "data": [{"id": "scripted"}]}) + " " * 400
    with ScriptedServer() as server:
        server.models_reply = Reply(200, listing, trickle_s=TRICKLE_S)
        outcome: list[BaseException] = []

        def ask() -> None:
            try:
                served_model(server.base_url, timeout_s=1.0)
            except ValueError as error:
                outcome.append(error)

        worker = threading.Thread(target=ask, daemon=True)
        worker.start()
        worker.join(BOUND_S)
        assert outcome, f"asking {server.base_url}/models was still waiting after {BOUND_S:g} s"
    assert "could not say which model it serves" in str(outcome[0]) and "within 1 s" in str(outcome[0])


def _pope_run(server: ScriptedServer, out: Path, cache: Path, *model_options: str) -> list[str]:
    spec = "&".join([f"openai/vlm?base_url={server.base_url}", "text_only=true", *model_options])
    return [
        "run", "-b", "pope", "--data", str(POPE_EXCERPT), "--bench-opt", "sources=coco",
        "--bench-opt", "settings=random", "--limit", "3", "--model", spec, "--out", str(out),
        "--cache", str(cache), "-q",
    ]  # fmt: skip


def test_a_run_whose_model_trickles_ends_and_names_the_endpoint_and_the_limit(tmp_path: Path) -> None:
    with ScriptedServer(responder=trickled("Yes, there is.")) as server:
        result = invoke_bounded(
            _pope_run(server, tmp_path / "run", tmp_path / "cache.sqlite", "timeout_s=1", "max_retries=0")
        )
    assert result.exit_code == 1, result.output
    assert "the model failed on 3 of 3 samples" in said(result), result.output
    assert f"{server.base_url}/chat/completions within 1 s (timeout_s)" in said(result), result.output


# -- replies without text from the model under test ---------------------------------------------------------


def test_a_model_that_answers_null_fails_its_samples_and_is_asked_again(tmp_path: Path) -> None:
    with ScriptedServer(responder=lambda body: completion(None)) as server:
        args = _pope_run(server, tmp_path / "run", tmp_path / "cache.sqlite")
        first = invoke_bounded(args)
        assert first.exit_code == 1, first.output
        assert "the model failed on 3 of 3 samples" in said(first), first.output
        assert "no text" in said(first), first.output
        assert [r["failed_stage"] for r in records(tmp_path / "run")] == ["model"] * 3
        asked = len(server.chat_requests())
        assert asked == 3

        second = invoke_bounded(args)  # nothing was cached or kept: every sample is asked again
        assert second.exit_code == 1, second.output
        assert len(server.chat_requests()) == 2 * asked


async def test_an_empty_reply_is_an_error_of_the_model_and_not_cached(tmp_path: Path) -> None:
    from halluscope.llm.client import LLMEmptyReplyError

    cache = Cache(tmp_path / "cache.sqlite")
    with ScriptedServer([completion("  \n", finish_reason="length"), completion("A lamp.")]) as server:
        model = create_model(f"openai/vlm?base_url={server.base_url}", cache=cache)
        request = GenerateRequest(messages=[ChatTurn(text="What is on the desk?")], sample_id="s1")
        with pytest.raises(LLMEmptyReplyError, match=r"no text.*raise --max-tokens"):
            await model.generate(request)
        assert cache.count("chat") == 0
        again = await model.generate(request)  # asked again, not read back from the cache
        await model.aclose()
    assert (again.text, again.cached, len(server.chat_requests())) == ("A lamp.", False, 2)


# -- judge replies that cannot be read ----------------------------------------------------------------------


def _tri_he_answers(tmp_path: Path, n: int = 3) -> Path:
    samples = list(first_samples(TriHE(tri_he_layout()), n).samples())
    claims = [Claim.of(("man", "using", "laptop"))]
    return write_responses(
        tmp_path / "answers.jsonl", [Response(id=s.id, response="A man uses a laptop.", claims=claims) for s in samples]
    )


def test_tri_he_with_a_judge_that_answers_out_of_form_fails_and_asks_again(tmp_path: Path) -> None:
    answers = _tri_he_answers(tmp_path)
    with ScriptedServer(responder=lambda body: completion("Verdict: maybe")) as server:
        args = [
            "run", "-b", "tri-he", "--data", str(tri_he_layout()), "-r", str(answers), "--only-answered",
            "--judge", "llm", "--judge-model", "m", "--base-url", server.base_url,
            "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "cache.sqlite"), "-q",
        ]  # fmt: skip
        first = invoke_bounded(args)
        assert first.exit_code == 1, first.output
        assert "the judge failed on 3 of 3 samples" in said(first), first.output
        assert "'Verdict: maybe'" in said(first) and "could not be read" in said(first), first.output
        assert [r["failed_stage"] for r in records(tmp_path / "run")] == ["judge"] * 3
        asked = len(server.chat_requests())
        assert asked == 3

        second = invoke_bounded(args)  # the unreadable replies were not cached: asked again
        assert second.exit_code == 1, second.output
        assert len(server.chat_requests()) == 2 * asked

        server.responder = lambda body: completion("Verdict: supported")
        third = invoke_bounded(args)  # readable replies are kept and cached: a fourth run asks nothing
        assert third.exit_code == 0, third.output
        fourth = invoke_bounded([*args[:-5], "--out", str(tmp_path / "run-again"), *args[-3:]])
        assert fourth.exit_code == 0, fourth.output
        assert len(server.chat_requests()) == 3 * asked


@pytest.mark.full_data
def test_hqh_with_a_judge_that_answers_out_of_form_fails_and_asks_again(tmp_path: Path) -> None:
    from halluscope.api import EvaluationError, evaluate
    from halluscope.benchmarks.hqh import HQH
    from tests.paths import HQH_DIR

    usable = [s.id for s in HQH(HQH_DIR, types=["OCR"]).samples() if not s.metadata.get("problem")][:3]
    answers = [{"id": i, "response": f"answer {n}"} for n, i in enumerate(usable)]
    with ScriptedServer(responder=lambda body: completion("Verdict: maybe\nContradicting claims: 0")) as server:
        run: dict[str, Any] = {
            "data": HQH_DIR, "responses": answers, "judge": "hqh-llm", "out": tmp_path / "run",
            "cache": tmp_path / "cache.sqlite", "bench_options": {"types": "OCR"}, "only_answered": True,
            "judge_options": {"model": "m", "base_url": server.base_url},
        }  # fmt: skip
        for attempt in (1, 2):
            with pytest.raises(EvaluationError, match=r"the judge failed on 3 of 3 samples .*could not be read"):
                evaluate("hqh", **run)
            assert len(server.chat_requests()) == 3 * attempt  # not cached: the second run asks again
        assert [r["failed_stage"] for r in records(tmp_path / "run")] == ["judge"] * 3


async def test_batched_judges_fail_what_their_reply_does_not_say_and_do_not_cache_it(tmp_path: Path) -> None:
    scene = _scene()
    claims = [Claim.of(("man", "using", "laptop")), Claim.of(("man", "eating", "laptop"))]
    partial = {"verdicts": [{"index": 0, "supported": True}]}  # nothing said of the second claim
    cache = Cache(tmp_path / "cache.sqlite")
    with ScriptedServer(responder=lambda body: completion(json.dumps(partial))) as server:
        judge = LLMJudge(base_url=server.base_url, mode="batched", cache=cache)
        (result,) = await judge.judge_many([JudgeItem("a", claims, scene)])
        await judge.aclose()
        assert isinstance(result, Failure) and "1 of 2 claims" in result.reason and "claim 1" in result.reason
        hqh = HQHLLMJudge(base_url=server.base_url, mode="batched", cache=cache)
        items = [HQHItem(f"q{i}", "OCR", "What does it say?", "STOP", f"answer {i}", scene) for i in range(2)]
        graded = await hqh.grade_many(items)
        await hqh.aclose()
        assert all(isinstance(g, Failure) and "no 'grades' list" in g.reason for g in graded)
    assert cache.count("chat") == 0


async def test_the_vlm_judge_fails_replies_it_cannot_read_and_does_not_cache_them(tmp_path: Path) -> None:
    photo = str(TRI_HE_IMAGES_EXCERPT / "2374892.jpg")
    scene = _scene("2374892")
    cache = Cache(tmp_path / "cache.sqlite")
    with ScriptedServer(responder=lambda body: completion("I think so.")) as server:
        judge = VLMJudge(base_url=server.base_url, cache=cache)
        item = JudgeItem("a", [Claim.of(("man", "using", "laptop"))], scene, extra={"image_path": photo})
        (claims,) = await judge.judge_many([item])
        answer = await judge.grade_answer(photo, "What is he using?", "a laptop", "a laptop")
        await judge.aclose()
    assert isinstance(claims, Failure) and "'I think so.'" in claims.reason
    assert isinstance(answer, Failure) and "no grade line" in answer.reason
    assert cache.count("chat") == 0


# -- the local LLM server and the terminal's Ctrl-C ----------------------------------------------------------

#: A stand-in for ``python -m llama_cpp.server``: answers ``/v1/models`` on the given port, dies on Ctrl-C as
#: uvicorn does, optionally ignores SIGTERM, and ends by itself after two minutes should it be left behind.
FAKE_SERVER = '''
import argparse, json, os, signal, time
from http.server import BaseHTTPRequestHandler, HTTPServer

parser = argparse.ArgumentParser()
parser.add_argument("--host")
parser.add_argument("--port", type=int)
parser.add_argument("--model_alias")
args, _ = parser.parse_known_args()
signal.signal(signal.SIGINT, signal.default_int_handler)
if os.environ.get("FAKE_SERVER_IGNORES_SIGTERM"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)

class Handler(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": args.model_alias}]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

httpd = HTTPServer((args.host, args.port), Handler)
httpd.timeout = 0.2
deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    httpd.handle_request()
'''

#: A halluscope run holding the local LLM, in a session of its own (so the test can signal its process
#: group as a terminal does). It reports, as JSON lines, the server's pid and group, whether the server
#: still answers after the Ctrl-C, and whether it still answers after halluscope stopped it.
CTRL_C_SCRIPT = '''
import json, os, signal, sys, time, urllib.request
from pathlib import Path

if sys.argv[1] != "real":
    import halluscope.llm.offline as offline
    offline.server_runtime = lambda: "llama-cpp-python"  # the stand-in below
    offline.packaged_gguf = lambda cache_dir=None: Path(sys.argv[1])
from halluscope.llm.local import LocalLLM

signal.signal(signal.SIGINT, signal.default_int_handler)  # as a terminal's foreground command has it

def answers(url):
    try:
        return urllib.request.urlopen(url + "/models", timeout=5).status == 200
    except OSError:
        return False

def say(**fields):
    print(json.dumps(fields), flush=True)

with LocalLLM() as local:
    server = local.server()
    try:  # the test may press Ctrl-C as soon as it reads this line, before the print has returned
        say(pid=server.pid, own_group=os.getpgid(server.pid) != os.getpgid(0))
        time.sleep(300)
    except KeyboardInterrupt:
        # A Ctrl-C that reached the server too has stopped it within a few seconds.
        end = time.monotonic() + 3
        while time.monotonic() < end and answers(server.base_url):
            time.sleep(0.1)
        say(answers_after_ctrl_c=answers(server.base_url))
say(answers_after_close=answers(server.base_url))
'''

#: A run whose ``with`` block never unwinds (it is in a daemon thread when the interpreter exits).
ABANDONED_SCRIPT = '''
import json, sys, threading, time
import halluscope.llm.offline as offline

offline.server_runtime = lambda: "llama-cpp-python"  # the stand-in below
offline.STOP_GRACE_S = 1.0
started = threading.Event()

def serve():
    with offline.llama_server(sys.argv[1]) as server:
        print(json.dumps({"pid": server.pid}), flush=True)
        started.set()
        time.sleep(300)

threading.Thread(target=serve, daemon=True).start()
started.wait(60)
'''


@pytest.fixture
def fake_llama(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A stand-in GGUF file and the environment under which ``llama_cpp.server`` is the stand-in."""
    package = tmp_path / "fake" / "llama_cpp"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "server.py").write_text(FAKE_SERVER)
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "fake"), str(SRC)])}
    return gguf, env


def _alive(pid: int) -> bool:
    """Whether a process runs (a zombie, dead but not yet reaped, counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _gone(pid: int, within_s: float = 30.0) -> bool:
    end = time.monotonic() + within_s
    while _alive(pid) and time.monotonic() < end:
        time.sleep(0.1)
    return not _alive(pid)


def _run_script(script: str, arg: str, env: dict[str, str], tmp_path: Path) -> subprocess.Popen[str]:
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(script))
    return subprocess.Popen(
        [sys.executable, str(path), arg], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        start_new_session=True,  # its own process group: the test signals it as a terminal signals its job
    )  # fmt: skip


def _ctrl_c_at_the_terminal(arg: str, env: dict[str, str], tmp_path: Path, wait_s: float) -> None:
    process = _run_script(CTRL_C_SCRIPT, arg, env, tmp_path)
    server_pid = None
    try:
        assert process.stdout is not None
        seen = []
        while not (line := process.stdout.readline()).startswith("{"):
            seen.append(line)
            assert line, "the run ended before its server was up:\n" + "".join(seen)
        started = json.loads(line)
        server_pid = started["pid"]
        assert started["own_group"], "the server shares halluscope's process group: Ctrl-C reaches it too"
        os.killpg(process.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
        output, _ = process.communicate(timeout=wait_s)
        lines = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
        assert {"answers_after_ctrl_c": True} in lines, output
        assert {"answers_after_close": False} in lines, output
        assert _gone(server_pid), "halluscope left its LLM server running"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if server_pid is not None and _alive(server_pid):
            os.kill(server_pid, signal.SIGKILL)  # the server this test started, left behind by a failure


@pytest.mark.skipif(sys.platform != "linux", reason="process groups and /proc: Linux")
def test_ctrl_c_at_the_terminal_reaches_halluscope_not_its_local_llm(
    fake_llama: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    gguf, env = fake_llama
    _ctrl_c_at_the_terminal(str(gguf), env, tmp_path, wait_s=BOUND_S)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="process groups and /proc: Linux")
def test_ctrl_c_at_the_terminal_leaves_the_real_llama_cpp_server_to_halluscope(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    _ctrl_c_at_the_terminal("real", env, tmp_path, wait_s=600)


@pytest.mark.skipif(sys.platform != "linux", reason="process groups and /proc: Linux")
@pytest.mark.parametrize("ignores_sigterm", [False, True])
def test_a_server_left_running_is_stopped_at_interpreter_exit(
    fake_llama: tuple[Path, dict[str, str]], tmp_path: Path, ignores_sigterm: bool
) -> None:
    gguf, env = fake_llama
    if ignores_sigterm:
        env = {**env, "FAKE_SERVER_IGNORES_SIGTERM": "1"}  # then SIGKILL after the grace period
    process = _run_script(ABANDONED_SCRIPT, str(gguf), env, tmp_path)
    server_pid = None
    try:
        output, _ = process.communicate(timeout=BOUND_S)
        assert output.startswith("{"), output
        server_pid = json.loads(output.splitlines()[0])["pid"]
        assert process.returncode == 0, output
        assert _gone(server_pid), "a server whose run never unwound was left running after halluscope exited"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if server_pid is not None and _alive(server_pid):
            os.kill(server_pid, signal.SIGKILL)
