"""Deliberately faulty OpenAI-compatible endpoints on 127.0.0.1, shared by the client and streaming tests.

A server runs a script: a function of (handler, request number, parsed body) that answers the request however
badly the test needs: wrong status, redirects, trickled bytes, broken JSON, delays.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

Script = Callable[["FaultHandler", int, Any], None]


class FaultHandler(BaseHTTPRequestHandler):
    server: FaultServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _handle(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = None
        with self.server.lock:
            n = len(self.server.hits)
            self.server.hits.append({"method": self.command, "path": self.path, "t": time.monotonic(),
                                     "auth": self.headers.get("Authorization"), "body": body})
        try:
            self.server.script(self, n, body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up: that is the point of some tests
            self.close_connection = True

    do_POST = do_GET = _handle  # noqa: N815 - http.server naming

    def reply(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)


class FaultServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, script: Script) -> None:
        super().__init__(("127.0.0.1", 0), FaultHandler)
        self.script = script
        self.hits: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


def completion(text: str | None, finish: str | None = "stop") -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}


@pytest.fixture
def fault_server():
    """``make(script)``: a scripted faulty endpoint on 127.0.0.1 (:class:`FaultServer`), stopped after the test."""
    servers: list[FaultServer] = []

    def make(script: Script) -> FaultServer:
        srv = FaultServer(script)
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(srv)
        return srv

    yield make
    for s in servers:
        s.stopping.set()
        s.shutdown()
        s.server_close()
