"""``halluscope data pull`` and ``eval --download`` against a loopback server serving the real official files.

The server (stdlib ``http.server`` in a thread) serves the shared copies of the benchmarks' files at the paths
raw.githubusercontent.com has them under, so ``$HALLUSCOPE_DATA_MIRROR`` points the real fetch code at it. It
honours ``Range`` and can misbehave on purpose: cut a transfer after N bytes, serve wrong bytes, go silent,
trickle, or ignore ``Range``. What a user notices: the files arrive byte for byte, an interrupted pull resumes
where it stopped, wrong bytes are refused in one line and never kept, a stuck server ends in a timeout line,
and offline the command says what to fetch and where to put it.
"""

from __future__ import annotations

import hashlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from halluscope.download import GITHUB_RAW, MIRROR_ENV, DataSet
from tests.paths import FULL_DATA
from tests.scripted_server import ScriptedServer, completion

pytestmark = pytest.mark.full_data


def _declared() -> list[DataSet]:
    from halluscope.benchmarks.data_sets import all_data_sets

    return [data_set for _, data_set in all_data_sets().values() if data_set.files]


@dataclass
class Behaviour:
    """How the server treats one path (by default: properly)."""

    drop_after: int | None = None  # send the headers for the whole body, then hang up after N bytes
    corrupt: bool = False  # flip the first byte of the body
    silent_after: int | None = None  # send N bytes, then nothing while the client waits
    trickle: bool = False  # one byte every 50 ms
    ignore_range: bool = False  # answer 200 with the whole body even to a Range request


@dataclass
class FileServer:
    """What the server holds and does; ``requests`` records (path, Range header) of each GET."""

    files: dict[str, bytes]
    behaviour: dict[str, Behaviour] = field(default_factory=dict)
    requests: list[tuple[str, str | None]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    base_url: str = ""

    def ranges(self, path: str) -> list[str | None]:
        return [r for p, r in self.requests if p == path]


def _handler(state: FileServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return None

        def do_GET(self) -> None:
            path = self.path.lstrip("/")
            asked = self.headers.get("Range")
            state.requests.append((path, asked))
            if path not in state.files:
                self.send_error(404)
                return
            how = state.behaviour.get(path, Behaviour())
            body = state.files[path]
            if how.corrupt:
                body = bytes([body[0] ^ 0xFF]) + body[1:]
            start = int(asked.split("=", 1)[1].split("-", 1)[0]) if asked and not how.ignore_range else 0
            self.send_response(206 if start else 200)
            if start:
                self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            self.send_header("Content-Length", str(len(body) - start))
            self.end_headers()
            self._send(body[start:], how)

        def _send(self, body: bytes, how: Behaviour) -> None:
            try:
                if how.drop_after is not None:
                    self.wfile.write(body[: how.drop_after])
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                elif how.silent_after is not None:
                    self.wfile.write(body[: how.silent_after])
                    self.wfile.flush()
                    state.stop.wait(20)
                elif how.trickle:
                    for index in range(len(body)):
                        if state.stop.wait(0.05):
                            return
                        self.wfile.write(body[index : index + 1])
                        self.wfile.flush()
                else:
                    self.wfile.write(body)
            except OSError:  # the client hung up (as a timed-out client does)
                return

    return Handler


def _official_files() -> dict[str, bytes]:
    """Every declared file's mirror path → the shared copy's bytes (the copies are in folders of the data
    sets' names), for each URL a file declares."""
    files: dict[str, bytes] = {}
    for data_set in _declared():
        for file in data_set.files:
            shared = FULL_DATA / data_set.name / file.path
            if not shared.is_file():
                continue
            for url in file.urls:
                if url.startswith(GITHUB_RAW):
                    files[url[len(GITHUB_RAW) :]] = shared.read_bytes()
    return files


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FileServer]:
    state = FileServer(_official_files())
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    state.base_url = f"http://127.0.0.1:{httpd.server_address[1]}/"
    monkeypatch.setenv(MIRROR_ENV, state.base_url)
    monkeypatch.setenv("HALLUSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HALLUSCOPE_DOWNLOAD_TIMEOUT", raising=False)
    try:
        yield state
    finally:
        state.stop.set()
        httpd.shutdown()
        httpd.server_close()


def invoke(*args: str) -> Any:
    from halluscope.cli.main import app

    return CliRunner().invoke(app, list(args), terminal_width=240)


def said(result: Any) -> str:
    return " ".join(result.output.split())


def _pope() -> DataSet:
    from halluscope.benchmarks.pope import POPE_DATA

    return POPE_DATA


def _path_of(relative: str) -> str:
    """The mirror path of one POPE file."""
    file = next(f for f in _pope().files if f.path == relative)
    return file.urls[0][len(GITHUB_RAW) :]


RANDOM = "coco/coco_pope_random.json"


def test_declared_checksums_are_those_of_the_official_copies() -> None:
    """Every declared size and sha256 is that of the shared copy (the official bytes); a drifted declaration
    would refuse every user's download."""
    checked = 0
    for data_set in _declared():
        for file in data_set.files:
            shared = FULL_DATA / data_set.name / file.path
            if file.sha256 is None:
                continue
            data = shared.read_bytes()
            assert (len(data), hashlib.sha256(data).hexdigest()) == (file.size, file.sha256), shared
            checked += 1
    assert checked >= 20


def test_pull_pope_fetches_the_official_files_byte_for_byte_and_keeps_them(
    server: FileServer, tmp_path: Path
) -> None:
    root = tmp_path / "data"
    first = invoke("data", "pull", "pope", "--to", str(root))
    assert first.exit_code == 0, first.output
    for file in _pope().files:
        assert (root / "pope" / file.path).read_bytes() == (FULL_DATA / "pope" / file.path).read_bytes()
    assert not list((root / "pope").rglob("*.part"))
    assert f"pope: 9 fetched {root / 'pope'}" in said(first)
    # not a terminal: plain progress lines, one when a file starts and one when it has arrived
    assert (
        f"fetching {RANDOM} (0 B of 368.2 kB)" in first.output
        and f"received {RANDOM}: 368.2 kB" in first.output
    )
    asked = len(server.requests)
    again = invoke("data", "pull", "pope", "--to", str(root))
    assert again.exit_code == 0 and "pope: 9 present" in said(again)
    assert len(server.requests) == asked  # verified on disk, nothing asked again


def test_an_interrupted_transfer_resumes_with_a_range_request(server: FileServer, tmp_path: Path) -> None:
    root, path = tmp_path / "data", _path_of(RANDOM)
    server.behaviour[path] = Behaviour(drop_after=100_000)
    cut = invoke("data", "pull", "pope", "--to", str(root))
    assert cut.exit_code == 1
    assert f"{RANDOM}: connection closed after 100000 of 368166 bytes" in said(cut)
    assert "run again to resume" in said(cut)
    part = root / "pope" / (RANDOM + ".part")
    assert part.stat().st_size == 100_000 and not (root / "pope" / RANDOM).exists()
    del server.behaviour[path]
    resumed = invoke("data", "pull", "pope", "--to", str(root))
    assert resumed.exit_code == 0, resumed.output
    assert server.ranges(path) == [None, "bytes=100000-"]
    assert "resuming at 100.0 kB" in resumed.output
    assert (root / "pope" / RANDOM).read_bytes() == (FULL_DATA / "pope" / RANDOM).read_bytes()
    assert not part.exists()


def test_a_server_that_ignores_the_range_gives_the_whole_file_again(
    server: FileServer, tmp_path: Path
) -> None:
    root, path = tmp_path / "data", _path_of(RANDOM)
    part = root / "pope" / (RANDOM + ".part")
    part.parent.mkdir(parents=True)
    part.write_bytes(b"stale bytes of an older try")
    server.behaviour[path] = Behaviour(ignore_range=True)
    result = invoke("data", "pull", "pope", "--to", str(root), "-q")
    assert result.exit_code == 0, result.output
    assert server.ranges(path) == [f"bytes={len(b'stale bytes of an older try')}-"]
    assert (root / "pope" / RANDOM).read_bytes() == (FULL_DATA / "pope" / RANDOM).read_bytes()


def test_wrong_bytes_give_one_checksum_line_and_leave_no_file(server: FileServer, tmp_path: Path) -> None:
    root, path = tmp_path / "data", _path_of(RANDOM)
    server.behaviour[path] = Behaviour(corrupt=True)
    official = server.files[path]
    got = hashlib.sha256(bytes([official[0] ^ 0xFF]) + official[1:]).hexdigest()
    result = invoke("data", "pull", "pope", "--to", str(root), "-q")
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if "checksum mismatch" in line]
    expected = hashlib.sha256(official).hexdigest()
    assert len(lines) == 1 and RANDOM in lines[0] and server.base_url + path in lines[0]
    assert f"expected sha256 {expected}, got {got}" in lines[0]
    assert "Traceback" not in result.output
    assert not (root / "pope" / RANDOM).exists() and not (root / "pope" / (RANDOM + ".part")).exists()
    assert "pope: 8 fetched, 1 failed" in said(result)


@pytest.mark.parametrize(
    ("behaviour", "why"),
    [(Behaviour(silent_after=10), "no data for 1 s"), (Behaviour(trickle=True), "under 1024 bytes in 1 s")],
    ids=["silent", "trickle"],
)
def test_a_stuck_server_ends_in_a_timeout_line(
    server: FileServer, tmp_path: Path, behaviour: Behaviour, why: str
) -> None:
    root, path = tmp_path / "data", _path_of(RANDOM)
    server.behaviour[path] = behaviour
    started = time.monotonic()
    result = invoke("data", "pull", "pope", "--to", str(root), "--timeout", "1", "-q")
    assert time.monotonic() - started < 15
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if "timed out" in line]
    assert len(lines) == 1 and RANDOM in lines[0] and why in lines[0], result.output
    assert (root / "pope" / (RANDOM + ".part")).is_file()  # kept: the next run resumes it


def test_offline_it_says_what_to_fetch_and_where(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv(MIRROR_ENV, f"http://127.0.0.1:{port}/")
    root = tmp_path / "data"
    result = invoke("data", "pull", "pope", "hallusionbench", "--to", str(root), "-q")
    assert result.exit_code == 1
    offline = [line for line in result.output.splitlines() if line.startswith("offline:")]
    assert len(offline) == 2, result.output  # one line per benchmark
    pope_line = next(line for line in offline if "POPE" in line)
    assert f"http://127.0.0.1:{port}/{_path_of(RANDOM)}" in pope_line
    assert f"into {root / 'pope'}" in pope_line and f"--data {root / 'pope'}" in pope_line
    assert "Traceback" not in result.output


def test_an_unknown_name_is_refused_with_the_known_ones(tmp_path: Path) -> None:
    result = invoke("data", "pull", "popee", "--to", str(tmp_path))
    assert result.exit_code == 2 and "unknown benchmark or data set 'popee'" in said(result)
    assert "repope" in said(result) and "tri-he" in said(result)


def test_the_loader_fetches_its_declared_files_when_no_data_is_given(
    server: FileServer, tmp_path: Path
) -> None:
    from halluscope.benchmarks.pope import Pope

    benchmark = Pope(sources=("coco",), settings=("random",))
    assert len(list(benchmark.samples())) == 3000
    fetched = tmp_path / "cache" / "data" / "pope" / RANDOM
    assert fetched.read_bytes() == (FULL_DATA / "pope" / RANDOM).read_bytes()


def test_eval_download_fetches_the_missing_data_then_runs(server: FileServer, tmp_path: Path) -> None:
    root, out = tmp_path / "data", tmp_path / "suite"
    with ScriptedServer(responder=lambda body: completion("Yes, there is.")) as vlm:
        result = invoke(
            "eval", "-b", "pope", "--model", f"blind/openai/vlm?base_url={vlm.base_url}", "--data-root", str(root),
            "--limit", "3", "--out", str(out), "--no-cache", "-q", "--download",
        )  # fmt: skip
        asked = len(vlm.chat_requests())
    assert result.exit_code == 0, result.output
    assert (root / "pope" / RANDOM).read_bytes() == (FULL_DATA / "pope" / RANDOM).read_bytes()
    assert f"pope: 9 fetched {root / 'pope'}" in said(result) and "ok blind-openai-vlm · pope" in said(result)
    assert asked == 3 and (out / "blind-openai-vlm" / "pope" / "metrics.json").is_file()


def test_evaluate_suite_download_makes_a_missing_file_that_benchmarks_failure(
    monkeypatch: pytest.MonkeyPatch, server: FileServer, tmp_path: Path
) -> None:
    from halluscope import evaluate_suite

    server.behaviour[_path_of(RANDOM)] = Behaviour(corrupt=True)
    result = evaluate_suite(
        "pope", models="blind/openai/vlm?base_url=http://127.0.0.1:9/v1", data_root=tmp_path / "data",
        out=tmp_path / "suite", limit=2, cache=False, download=True,
    )  # fmt: skip
    assert not result.ok
    (run,) = result.runs
    assert run.status != "ok" and "checksum mismatch" in (run.message or "") and RANDOM in (run.message or "")
