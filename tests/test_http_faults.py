"""The OpenAI-compatible client against deliberately faulty HTTP servers on 127.0.0.1.

Each server runs a script: a function of (handler, request number, parsed body) that answers the
request however badly the test needs: wrong status, redirects, trickled bytes, broken JSON, delays.
"""

from __future__ import annotations

import json
import logging
import pickle
import threading
import time
from collections.abc import Callable
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from vlamb_nb import runner
from vlamb_nb.models import Request, user_message
from vlamb_nb.models.openai_compat import DETAIL_CHARS, OpenAIModel, retry_after_seconds

pytestmark = pytest.mark.timeout(10)

KEY_ENV = "VLAMB_FAULT_KEY"
KEY = "sk-fault-0123456789abcdef"

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


@pytest.fixture
def fault_server():
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


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    return KEY


def completion(text: str | None, finish: str | None = "stop") -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}


def ok_after(n_faults: int, fault: Callable[[FaultHandler], None]) -> Script:
    """Fail the first ``n_faults`` requests with ``fault``, then answer "ok"."""
    def script(h: FaultHandler, n: int, body: Any) -> None:
        if n < n_faults:
            fault(h)
        else:
            h.reply(200, completion("ok"))
    return script


def model(srv: FaultServer, **kw: Any) -> OpenAIModel:
    kw = {"backoff": 0.01, "max_retries": 2, "timeout": 5, "api_key_env": KEY_ENV, **kw}
    return OpenAIModel("m", base_url=srv.base_url, **kw)


def ask(m: OpenAIModel, prompt: str = "hi", rid: str = "a"):
    return m.generate([Request(id=rid, messages=[user_message(prompt)])])[0]


# -- retries ----------------------------------------------------------------------------------------

def test_500_then_success(fault_server):
    srv = fault_server(ok_after(1, lambda h: h.reply(500, {"error": {"message": "boom"}})))
    m = model(srv)
    g = ask(m)
    assert g.error is None and g.text == "ok" and g.finish_reason == "stop"
    assert m.http_attempts == 2 and len(srv.hits) == 2


def test_429_retry_after_is_honoured(fault_server):
    srv = fault_server(ok_after(1, lambda h: h.reply(429, {"error": {"message": "slow down"}},
                                                     headers={"Retry-After": "1"})))
    m = model(srv, backoff=0.01)  # without Retry-After the retry would come after ~10 ms
    g = ask(m)
    assert g.error is None and g.text == "ok"
    waited = srv.hits[1]["t"] - srv.hits[0]["t"]
    assert 0.95 <= waited < 2.5


@pytest.mark.parametrize("status", [429, 503])
def test_retry_after_is_capped_by_max_backoff(fault_server, status):
    srv = fault_server(ok_after(1, lambda h: h.reply(status, {"error": {}}, headers={"Retry-After": "30"})))
    m = model(srv, max_backoff=0.2)
    t0 = time.monotonic()
    g = ask(m)
    assert g.error is None and time.monotonic() - t0 < 2


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_are_not_retried(fault_server, status):
    srv = fault_server(lambda h, n, b: h.reply(status, {"error": {"message": "no"}}))
    m = model(srv)
    g = ask(m)
    assert f"HTTP {status}" in g.error and m.http_attempts == 1 and len(srv.hits) == 1


@pytest.mark.parametrize("status", [408, 409])
def test_408_and_409_are_retried(fault_server, status):
    srv = fault_server(lambda h, n, b: h.reply(status, {"error": {"message": "again"}}))
    m = model(srv, max_retries=1)
    g = ask(m)
    assert "gave up after 2 attempts" in g.error and f"HTTP {status}" in g.error and len(srv.hits) == 2


def test_retry_after_parsing():
    assert retry_after_seconds("1") == 1.0 and retry_after_seconds(" 2.5 ") == 2.5
    assert retry_after_seconds("-3") == 0.0
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    assert retry_after_seconds("nan") is None and retry_after_seconds("inf") is None
    in_a_minute = retry_after_seconds(formatdate(time.time() + 60, usegmt=True))
    assert in_a_minute is not None and 55 < in_a_minute <= 60
    assert retry_after_seconds(formatdate(time.time() - 60, usegmt=True)) == 0.0


# -- a total deadline -------------------------------------------------------------------------------

def _trickle_body(h: FaultHandler, n: int, body: Any) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", "100")
    h.end_headers()
    for _ in range(100):
        h.wfile.write(b" ")
        if h.server.stopping.wait(1.0):
            return


def _trickle_headers(h: FaultHandler, n: int, body: Any) -> None:
    for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}":
        h.wfile.write(bytes([byte]))
        if h.server.stopping.wait(1.0):
            return


@pytest.mark.parametrize("script", [_trickle_body, _trickle_headers], ids=["body", "headers"])
def test_a_trickling_server_fails_at_the_total_deadline(fault_server, script):
    srv = fault_server(script)
    m = model(srv, timeout=2, max_retries=0)
    t0 = time.monotonic()
    g = ask(m)
    elapsed = time.monotonic() - t0
    assert "timed out after 2 s" in g.error and "gave up after 1 attempts" in g.error
    assert 1.8 <= elapsed < 3.0  # every byte arrived within the per-read timeout; the total one still holds


# -- redirects and keys -----------------------------------------------------------------------------

@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_is_a_failure_and_is_not_followed(fault_server, key, status):
    elsewhere = fault_server(lambda h, n, b: h.reply(200, completion("stolen")))
    target = f"{elsewhere.base_url}/chat/completions"
    srv = fault_server(lambda h, n, b: h.reply(status, b"", headers={"Location": target}))
    m = model(srv)
    g = ask(m)
    assert f"HTTP {status} redirect" in g.error and target in g.error
    assert elsewhere.hits == []  # neither the request (as GET or POST) nor the key went there
    assert len(srv.hits) == 1 and srv.hits[0]["auth"] == f"Bearer {key}"
    assert key not in g.error


def test_a_401_echoing_the_key_never_shows_it(fault_server, key, caplog):
    def echo(h: FaultHandler, n: int, body: Any) -> None:
        auth = h.headers.get("Authorization")
        # the key straddles the point where the error detail is cut (DETAIL_CHARS), so cutting before
        # scrubbing would leave half of it in the message
        head = '{"error": {"message": "' + "x" * 200 + " Incorrect API key provided: "
        head += "x" * (DETAIL_CHARS - 16 - len(head))
        body = f'{head}{key}; you sent {auth}"}}}}'.encode()
        assert body.index(key.encode()) == DETAIL_CHARS - 16
        h.reply(401, body, headers={"X-Echo": auth, "X-Key": key})

    srv = fault_server(echo)
    caplog.set_level(logging.DEBUG, logger="httpcore")
    caplog.set_level(logging.DEBUG, logger="httpx")
    m = model(srv)
    g = ask(m)
    assert "HTTP 401" in g.error and m.http_attempts == 1
    assert key not in g.error and key[:12] not in g.error
    assert srv.hits[0]["auth"] == f"Bearer {key}"  # the key was sent, to the right place
    assert "X-Echo" in caplog.text  # httpcore did log the response headers...
    assert key not in caplog.text and key[:12] not in caplog.text  # ...with the key masked


def test_log_filter_masks_authorization_headers(caplog):
    caplog.set_level(logging.DEBUG, logger="httpcore")
    logging.getLogger("httpcore.http11").debug("send_request_headers %r",
                                               [(b"Authorization", b"Bearer sk-some-other-secret")])
    assert "sk-some-other-secret" not in caplog.text and "Bearer ***" in caplog.text


# -- replies without an answer ----------------------------------------------------------------------

def test_malformed_json_in_a_200_is_a_clear_failure(fault_server):
    srv = fault_server(lambda h, n, b: h.reply(200, b'{"choices": [{"message": '))
    m = model(srv)
    g = ask(m)
    assert "malformed JSON in the HTTP 200 reply" in g.error and g.text == "" and g.finish_reason == "error"
    assert m.http_attempts == 1


@pytest.mark.parametrize("payload, expected", [
    (completion(None, "content_filter"), "content filter"),
    (completion("partial", "content_filter"), "content filter"),
    (completion(None, "stop"), "no content"),
    ({"id": "c", "choices": []}, "no choices"),
    ({"id": "c"}, "no choices"),
], ids=["filtered-null", "filtered-text", "null-content", "empty-choices", "no-choices"])
def test_a_reply_without_an_answer_is_a_failure(fault_server, payload, expected):
    srv = fault_server(lambda h, n, b: h.reply(200, payload))
    g = ask(model(srv))
    assert g.error and expected in g.error and g.text == ""


def test_a_filtered_answer_is_retried_by_a_rerun(fault_server, tmp_path):
    srv = fault_server(lambda h, n, b: h.reply(200, completion(None, "content_filter") if n == 0
                                               else completion("answer")))
    m = model(srv)
    reqs = [Request(id="a", messages=[user_message("hi")])]
    first = runner.run(m, reqs, tmp_path / "preds.jsonl", progress=False)
    assert first["error"].iloc[0] and first["finish_reason"].iloc[0] == "content_filter"
    second = runner.run(m, reqs, tmp_path / "preds.jsonl", progress=False)
    assert second["error"].isna().all() and second["text"].iloc[0] == "answer" and not second["cached"].iloc[0]


# -- concurrency ------------------------------------------------------------------------------------

def test_out_of_order_replies_are_matched_to_their_requests(fault_server):
    finished: list[str] = []

    def slow_first(h: FaultHandler, n: int, body: Any) -> None:
        prompt = body["messages"][0]["content"]
        time.sleep(0.15 * (5 - int(prompt[1:])))  # p0 is slowest, p4 fastest
        h.reply(200, completion(f"answer to {prompt}"))
        with h.server.lock:
            finished.append(prompt)

    srv = fault_server(slow_first)
    m = model(srv, concurrency=5)
    reqs = [Request(id=f"id{i}", messages=[user_message(f"p{i}")]) for i in range(5)]
    gens = m.generate(reqs)
    assert finished != sorted(finished) and finished[-1] == "p0"  # the replies really came out of order
    assert [g.request_id for g in gens] == [r.id for r in reqs]
    assert [g.text for g in gens] == [f"answer to p{i}" for i in range(5)]


def test_model_pickles_after_use_and_closes(fault_server):
    srv = fault_server(lambda h, n, b: h.reply(200, completion("ok")))
    m = model(srv)
    assert ask(m).text == "ok"
    clone = pickle.loads(pickle.dumps(m))
    assert ask(clone).text == "ok" and clone.base_url == m.base_url
    m.close()
    assert ask(m).text == "ok"  # a closed model reopens its pool on the next request
