"""A scripted OpenAI-compatible server on loopback, for testing retries, timeouts and reply parsing.

It speaks real HTTP (stdlib ``http.server`` in a background thread), so the client under test runs its full
network path; each ``POST /v1/chat/completions`` is answered by the next scripted :class:`Reply`, or by a
responder function that sees the request. Every request is recorded (path, headers, JSON body), and the
largest number of requests in flight at once is tracked, so tests can count retries and check concurrency.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer: a status, a body (dict/list → JSON, str/bytes → sent as is), headers, a delay.

    ``trickle_s``: send the headers at once, then the body one byte every ``trickle_s`` seconds (a server
    that is alive but all but stuck), until the whole body is sent or the client hangs up.
    """

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    trickle_s: float = 0.0


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: Any


def completion(
    text: str | None,
    *,
    finish_reason: str = "stop",
    logprobs: list[dict[str, Any]] | None = None,
    usage: dict[str, int] | None = None,
    delay_s: float = 0.0,
) -> Reply:
    """A well-formed chat completion whose message content is ``text`` (None: ``"content": null``)."""
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": text},
        "finish_reason": finish_reason,
    }
    if logprobs is not None:
        choice["logprobs"] = {"content": logprobs}
    body = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [choice],
        "usage": usage or {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    return Reply(200, body, delay_s=delay_s)


def error(status: int, message: str, *, headers: dict[str, str] | None = None, delay_s: float = 0.0) -> Reply:
    """An OpenAI-style error reply."""
    return Reply(status, {"error": {"message": message, "type": "scripted"}}, headers or {}, delay_s)


Responder = Callable[[Any], Reply]


class ScriptedServer:
    """Serve scripted replies on ``http://127.0.0.1:<port>/v1`` while running (a free port by default)."""

    def __init__(
        self, replies: Iterable[Reply] = (), *, responder: Responder | None = None, port: int = 0
    ) -> None:
        self._queue: deque[Reply] = deque(replies)
        self.responder = responder
        #: The answer to ``GET /v1/models`` (None: a list of the one model ``scripted``).
        self.models_reply: Reply | None = None
        self.requests: list[Recorded] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler_class())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def chat_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def images_sent(self) -> list[list[tuple[str, bytes]]]:
        """Per chat request, the images it carried as (MIME type, bytes), decoded from their ``data:`` URLs
        here with the standard library alone, so a test compares what arrived with the files on disk
        independently of the client's encoder."""
        sent: list[list[tuple[str, bytes]]] = []
        for request in self.chat_requests():
            images: list[tuple[str, bytes]] = []
            for message in request.body.get("messages", []):
                content = message.get("content")
                for part in content if isinstance(content, list) else []:
                    if part.get("type") != "image_url":
                        continue
                    header, _, payload = str(part["image_url"]["url"]).partition(";base64,")
                    images.append((header.removeprefix("data:"), base64.b64decode(payload, validate=True)))
            sent.append(images)
        return sent

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> ScriptedServer:
        # A short poll interval makes ``shutdown`` (and so each test's teardown) quick.
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.02,), name="scripted-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- serving -----------------------------------------------------------------------------------

    def _next_reply(self, body: Any) -> Reply:
        if self.responder is not None:
            return self.responder(body)
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        return error(500, "scripted server: no reply left in the script")

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, reply: Reply) -> None:
                if isinstance(reply.body, dict | list):
                    payload = json.dumps(reply.body).encode()
                    content_type = "application/json"
                elif isinstance(reply.body, bytes):
                    payload, content_type = reply.body, "application/octet-stream"
                else:
                    payload, content_type = str(reply.body or "").encode(), "text/plain; charset=utf-8"
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    if reply.trickle_s > 0:
                        self.wfile.flush()
                        for index in range(len(payload)):
                            time.sleep(reply.trickle_s)
                            self.wfile.write(payload[index : index + 1])
                            self.wfile.flush()
                    else:
                        self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    models = {"object": "list", "data": [{"id": "scripted", "object": "model"}]}
                    self._send(owner.models_reply or Reply(200, models))
                else:
                    self._send(error(404, f"no route {self.path}"))

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                with owner._lock:
                    owner.requests.append(Recorded(self.path, dict(self.headers.items()), body))
                    owner._in_flight += 1
                    owner.max_in_flight = max(owner.max_in_flight, owner._in_flight)
                try:
                    if not self.path.rstrip("/").endswith("/chat/completions"):
                        self._send(error(404, f"no route {self.path}"))
                        return
                    reply = owner._next_reply(body)
                    if reply.delay_s:
                        time.sleep(reply.delay_s)
                    self._send(reply)
                finally:
                    with owner._lock:
                        owner._in_flight -= 1

        return Handler
