"""End-to-end: the HTML report opened in a real headless Chromium (Debian's ``chromium``).

The report is served over http on 127.0.0.1 and driven through the Chrome DevTools Protocol, with a
minimal websocket client written here on the standard library (so the test needs no extra package). It
checks what a person would see — the summary table, the plots, a sample page whose claim colours match
``samples.jsonl`` — saves screenshots and prints their paths, and measures how long a Tri-HE-sized run
(1,226 samples) takes to open. Without chromium the test fails with the install command: CI installs it.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest

from halluscope.report.html import claim_category, write_html_report
from tests.test_html_report import (
    INJECTION,
    RATES_A,
    RATES_B,
    TRI_HE,
    claims_of,
    fixture_benchmark,  # noqa: F401 - a fixture used by name
    tri_he_items,
    write_run,
)

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",
    "--window-size=1280,900",
]
# Both tests render runs of the released Tri-HE questions and images (tri_he_items, fixture_benchmark).
pytestmark = [pytest.mark.usefixtures("fixture_benchmark"), pytest.mark.full_data]

#: A Tri-HE-sized run must be usable within this time (file fetched, JSON parsed, first page drawn).
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def chromium_executable() -> str:
    for name in (os.environ.get("HALLUSCOPE_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return str(shutil.which(name))
    pytest.fail("headless Chromium is needed for the report test: apt-get install -y chromium")


# -- a minimal Chrome DevTools Protocol client ------------------------------------------------------------


class DevTools:
    """JSON-RPC over one websocket (RFC 6455 client side: masked text frames out, plain frames in)."""

    def __init__(self, ws_url: str, timeout: float = 60.0) -> None:
        parts = urlsplit(ws_url)
        self.sock = socket.create_connection(
            (parts.hostname or "127.0.0.1", parts.port or 80), timeout=timeout
        )
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (
                f"GET {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("DevTools closed the connection during the handshake")
            head += chunk
        head, _, self.buffer = head.partition(b"\r\n\r\n")
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"DevTools refused the websocket: {head[:200]!r}")
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def _exact(self, size: int) -> bytes:
        while len(self.buffer) < size:
            chunk = self.sock.recv(max(65536, size - len(self.buffer)))
            if not chunk:
                raise ConnectionError("DevTools closed the connection")
            self.buffer += chunk
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data

    def _send_frame(self, opcode: int, payload: bytes) -> None:
        header = bytearray([0x80 | opcode])
        if len(payload) < 126:
            header.append(0x80 | len(payload))
        elif len(payload) < 65536:
            header += bytes([0x80 | 126]) + struct.pack(">H", len(payload))
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", len(payload))
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(bytes(header) + mask + masked)

    def _receive(self) -> dict[str, Any]:
        message = b""
        while True:
            first, second = self._exact(2)
            length = second & 0x7F
            if length == 126:
                (length,) = struct.unpack(">H", self._exact(2))
            elif length == 127:
                (length,) = struct.unpack(">Q", self._exact(8))
            payload = self._exact(length)
            opcode = first & 0x0F
            if opcode == 0x8:
                raise ConnectionError("DevTools closed the websocket")
            if opcode == 0x9:
                self._send_frame(0xA, payload)
                continue
            message += payload
            if first & 0x80:
                result: dict[str, Any] = json.loads(message)
                return result

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self._send_frame(0x1, json.dumps({"id": self.next_id, "method": method, "params": params}).encode())
        while True:
            message = self._receive()
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method} failed: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            self.events.append(message)

    def js(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited)."""
        reply = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in reply:
            raise AssertionError(f"page script error in {expression!r}: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.js(f"!!({expression})")
            if value:
                return value
            time.sleep(0.02)
        raise AssertionError(f"timed out after {timeout}s waiting for {expression!r}")

    def screenshot(self, path: Path, width: int, height: int) -> Path:
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        self.sock.close()


class Browser:
    def __init__(self, executable: str) -> None:
        self.profile = Path(tempfile.mkdtemp(prefix="halluscope-chromium-"))
        self.process = subprocess.Popen(
            [executable, *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().count("\n") >= 1):
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"chromium exited with code {self.process.returncode} before DevTools started"
                )
            if time.monotonic() > deadline:
                raise RuntimeError("chromium did not open its DevTools port within 60 s")
            time.sleep(0.05)
        self.port = int(port_file.read_text().split()[0])

    def page(self) -> DevTools:
        with _NO_PROXY.open(f"http://127.0.0.1:{self.port}/json/list", timeout=30) as reply:
            targets = json.load(reply)
        page = next(t for t in targets if t.get("type") == "page")
        tools = DevTools(page["webSocketDebuggerUrl"])
        for domain in ("Page", "Runtime", "Network"):
            tools.call(f"{domain}.enable")
        return tools

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    instance = Browser(chromium_executable())
    try:
        yield instance
    finally:
        instance.close()


class _QuietHandler(SimpleHTTPRequestHandler):
    requests: list[str]

    def log_message(self, format: str, *args: Any) -> None:
        self.requests.append(self.path)


@contextmanager
def serve(directory: Path) -> Iterator[tuple[str, list[str]]]:
    """A stdlib http server for ``directory`` on a free loopback port; yields its URL and the paths asked."""
    requests: list[str] = []
    handler = type("Handler", (_QuietHandler,), {"requests": requests})
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(directory)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", requests
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def artifacts(tmp_path: Path) -> Path:
    """Where screenshots go: $HALLUSCOPE_ARTIFACTS (CI may keep it), else the test's temporary folder."""
    folder = Path(os.environ.get("HALLUSCOPE_ARTIFACTS", tmp_path / "artifacts"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def open_report(page: DevTools, url: str) -> float:
    """Navigates and waits until the report's script has drawn the first page; returns wall seconds."""
    started = time.monotonic()
    page.call("Page.navigate", url=url)
    page.wait_for(f"location.href === {json.dumps(url)} && document.documentElement?.dataset.hsReady === '1'")
    return time.monotonic() - started


def requested_urls(page: DevTools) -> list[str]:
    return [
        e["params"]["request"]["url"]
        for e in page.events
        if e.get("method") == "Network.requestWillBeSent"
        and not e["params"]["request"]["url"].startswith("data:")
    ]


# -- the tests ----------------------------------------------------------------------------------------------


@pytest.mark.full_data
def test_report_renders_in_chromium(
    tmp_path: Path,
    browser: Browser,
    artifacts: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    items = tri_he_items(limit=40)
    hostile_id = items[3]["id"]
    hostile = {"response": f"I see a lamp. {INJECTION} Done.", "prompt": "<iframe src=x></iframe>What is it?"}
    runs = {
        "llava-sim": write_run(
            tmp_path / "llava",
            model="llava-sim",
            items=items,
            seed=21,
            rates=RATES_A,
            extra_metrics={"hscore": 0.58, "tscore": 0.66},
            mutate={hostile_id: hostile},
        ),
        "gpt-sim": write_run(
            tmp_path / "gpt",
            model="gpt-sim",
            items=items,
            seed=22,
            rates=RATES_B,
            extra_metrics={"hscore": 0.71, "tscore": 0.81},
        ),
        "oracle-sim": write_run(
            tmp_path / "oracle",
            model="oracle-sim",
            items=items,
            seed=23,
            rates={"object": 0.0, "relation": 0.02, "unjudged": 0.0},
            extra_metrics={"hscore": 0.5, "tscore": 0.97},
        ),
    }
    report = write_html_report(
        [tmp_path / "llava", tmp_path / "gpt", tmp_path / "oracle"], tmp_path / "site" / "report.html"
    )
    page = browser.page()
    try:
        with serve(report.parent) as (base, served):
            open_report(page, f"{base}/report.html")

            # the summary table: one row per run, with its sample count and claim counts per verdict
            rows = page.js(
                "[...document.querySelectorAll('#summary-table tbody tr')].map(r => ({"
                "text: r.innerText, samples: r.querySelector('[data-key=samples]').textContent,"
                "cats: Object.fromEntries([...r.querySelectorAll('.chip[data-cat]')].map("
                "c => [c.dataset.cat, c.textContent.split(' ').pop()]))}))"
            )
            assert [r["text"].split("\n")[0].strip() for r in rows] == list(runs)
            for row, records in zip(rows, runs.values(), strict=True):
                assert row["samples"] == str(len(records))
                expected = Counter(claim_category(c) for r in records for c in r["claims"])
                assert {k: int(v) for k, v in row["cats"].items() if int(v)} == dict(expected)

            # the plots are drawn: one radar polygon and one scatter point per model, with a real size
            radar = page.js(
                "(() => { const s = document.querySelector('svg#radar'); const b = s.getBoundingClientRect();"
                " return {w: b.width, h: b.height,"
                " series: s.querySelectorAll('g.series polygon').length}; })()"
            )
            assert radar["w"] > 200 and radar["h"] > 200 and radar["series"] == 3
            assert page.js("document.querySelectorAll('svg#scatter g.series circle').length") == 3

            # the first page of samples, and a filter by verdict that matches samples.jsonl
            assert page.js("document.querySelectorAll('#sample-list li.sample-card').length") == 50
            assert page.js("document.getElementById('sample-list').dataset.total") == str(3 * len(items))
            page.js(
                "(() => { const s = document.getElementById('f-verdict'); s.value = 'relation';"
                " s.dispatchEvent(new Event('change')); })()"
            )
            with_relation = sum(
                1
                for records in runs.values()
                for r in records
                if any(claim_category(c) == "relation" for c in r["claims"])
            )
            assert page.js("document.getElementById('sample-list').dataset.total") == str(with_relation)
            overview_png = page.screenshot(artifacts / "report-overview.png", 1280, 1600)

            # one sample's page: every claim listed with its verdict, as in samples.jsonl, and its scene graph
            record = max(runs["llava-sim"], key=lambda r: len({claim_category(c) for c in r["claims"]}))
            page.js(f"location.hash = '#/sample/0/{quote(record['id'])}'")
            page.wait_for(
                "!document.getElementById('sample-page').hidden"
                " && document.querySelector('#sample-page li.claim')"
            )
            shown = page.js(
                "[...document.querySelectorAll('#sample-page li.claim')]"
                ".map(li => [li.dataset.verdict, li.dataset.cat])"
            )
            assert shown == [[c["verdict"], claim_category(c)] for c in record["claims"]]
            marks = page.js(
                "[...document.querySelectorAll('#sample-page .response mark')].map(m => m.className)"
            )
            assert {m.removeprefix("v-") for m in marks} == {claim_category(c) for c in record["claims"]}
            assert (
                page.js("document.querySelector('#sample-page .response').textContent") == record["response"]
            )
            assert page.js("document.querySelector('#sample-page .question').textContent") == record["prompt"]
            raw = json.loads((TRI_HE / "tri-he.json").read_text())[record["image_id"]]
            facts = page.js(
                "[...document.querySelectorAll('#sample-page li.fact')].map(li => li.textContent)"
            )
            expected_facts = [f"({c.subject}, {c.relation}, {c.object})" for c in claims_of(raw["triplets"])]
            assert facts == list(dict.fromkeys(expected_facts))  # the image's scene graph, fact by fact
            assert page.js("document.querySelector('#sample-page img.photo').naturalWidth") > 100
            sample_png = page.screenshot(artifacts / "report-sample.png", 1280, 1000)

            # untrusted text stays text
            page.js(f"location.hash = '#/sample/0/{quote(hostile_id)}'")
            page.wait_for(
                f"document.querySelector('#sample-page .sample-id')?.textContent === {json.dumps(hostile_id)}"
            )
            assert (
                page.js("document.querySelector('#sample-page .response').textContent") == hostile["response"]
            )
            assert page.js("typeof window.__pwned") == "undefined"
            assert page.js("document.querySelectorAll('iframe, img[src=x]').length") == 0

        # one self-contained file: the only request the page made was for itself
        assert served == ["/report.html"]
        assert requested_urls(page) == [f"{base}/report.html"]
    finally:
        page.close()
    with capsys.disabled():
        print(f"\nreport screenshots: {overview_png} {sample_png}")


def test_tri_he_sized_run_pages_through_every_sample(
    tmp_path: Path,
    browser: Browser,
    artifacts: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    items = tri_he_items()
    assert len(items) == 1226
    records = write_run(tmp_path / "run", model="llava-sim", items=items, seed=31, rates=RATES_A)
    started = time.monotonic()
    report = write_html_report([tmp_path / "run"], tmp_path / "site" / "report.html")
    build_s = time.monotonic() - started
    size_mb = report.stat().st_size / 1e6
    page = browser.page()
    try:
        with serve(report.parent) as (base, _):
            wall_s = open_report(page, f"{base}/report.html")
            timing = page.js("window.hsTiming")
            assert page.js("document.querySelectorAll('#sample-list li.sample-card').length") == 50
            assert (
                page.js("document.querySelector('.page-info').textContent")
                == "page 1 of 25 · samples 1–50 of 1226"
            )
            # paging to the end shows the last samples
            for _ in range(24):
                page.js("document.querySelector('#sample-pager button:last-child').click()")
            last_ids = page.js(
                "[...document.querySelectorAll('#sample-list li.sample-card')].map(li => li.dataset.id)"
            )
            assert last_ids == [r["id"] for r in records[1200:]]
            images = page.js("document.querySelectorAll('#sample-list li.sample-card img').length")
            assert images == 26  # every sample has its image, within the default size budget
            page.screenshot(artifacts / "report-1226-last-page.png", 1280, 900)
    finally:
        page.close()
    with capsys.disabled():
        print(
            f"\n1,226-sample report: {size_mb:.1f} MB, written in {build_s:.1f} s; ready in the browser "
            f"{timing['readyAt']:.0f} ms after navigation (JSON.parse {timing['parseMs']:.0f} ms, first page "
            f"{timing['renderMs']:.0f} ms), {wall_s:.2f} s wall; "
            f"screenshot {artifacts / 'report-1226-last-page.png'}"
        )
    assert size_mb < 25
