"""A minimal OpenAI-compatible chat server in front of any ``VLM`` backend.

It serves ``POST /v1/chat/completions`` (text and base64 data-URL images) and ``GET /v1/models``.
Its purpose is local: exercising :class:`~vlamb_nb.models.openai_compat.OpenAIModel` against real
HTTP, or sharing one loaded model between notebooks on the same machine. It binds to 127.0.0.1
by default and stops by itself after ``lifetime`` seconds, so a forgotten server never lingers.
"""

from __future__ import annotations

import base64
import io
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from vlamb_nb.models.base import VLM, DecodingParams, Request

MAX_BODY = 64 * 1024 * 1024


def request_from_openai(body: dict[str, Any], *, request_id: str = "http") -> Request:
    """The inverse of ``to_openai_messages``: data URLs back to images, parameters back to ``DecodingParams``."""
    from PIL import Image

    messages, images = [], []
    for m in body.get("messages") or []:
        content = m.get("content", "")
        if isinstance(content, str):
            messages.append({"role": m["role"], "content": [{"type": "text", "text": content}]})
            continue
        parts = []
        for p in content:
            if p.get("type") == "image_url":
                url = p["image_url"]["url"] if isinstance(p["image_url"], dict) else p["image_url"]
                if not url.startswith("data:"):
                    raise ValueError("only base64 data URLs are accepted (no network fetches)")
                raw = base64.b64decode(url.split(",", 1)[1])
                images.append(Image.open(io.BytesIO(raw)).convert("RGB"))
                parts.append({"type": "image"})
            elif p.get("type") == "text":
                parts.append({"type": "text", "text": p["text"]})
        messages.append({"role": m["role"], "content": parts})
    temperature = float(body.get("temperature", 1.0) or 0.0)
    params = DecodingParams(max_new_tokens=int(body.get("max_tokens") or body.get("max_completion_tokens") or 256),
                            do_sample=temperature > 0, temperature=temperature if temperature > 0 else 1.0,
                            top_p=float(body.get("top_p", 1.0)), seed=body.get("seed"))
    return Request(id=request_id, messages=messages, images=images, params=params)


class ChatHandler(BaseHTTPRequestHandler):
    """Routes of the OpenAI API that the client uses; ``server.model`` answers."""

    server: ChatServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests and notebooks own stdout
        pass

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        if self.path.rstrip("/") == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": self.server.model_name, "object": "model"}]})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:  # noqa: N802
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length <= 0 or length > MAX_BODY:
            self._send(413 if length > MAX_BODY else 400, {"error": {"message": "bad Content-Length"}})
            return
        try:
            body = json.loads(self.rfile.read(length))
            req = request_from_openai(body, request_id=f"http-{self.server.next_id()}")
        except Exception as e:  # noqa: BLE001 - a malformed body is the client's error
            self._send(400, {"error": {"message": f"{type(e).__name__}: {e}"}})
            return
        with self.server.model_lock:  # one generate at a time: the model is not thread-safe
            gen = self.server.model.generate([req])[0]
        if gen.error:
            # a request the model cannot take (e.g. images for a text-only model) is the client's error:
            # 400 tells a well-behaved client not to retry it; anything else is the server's (500)
            client_fault = gen.error.startswith(CLIENT_ERRORS)
            self._send(400 if client_fault else 500, {"error": {"message": gen.error}})
            return
        self._send(200, {
            "id": f"chatcmpl-{req.id}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", self.server.model_name),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": gen.text},
                         "finish_reason": gen.finish_reason}],
            "usage": {"prompt_tokens": gen.prompt_tokens, "completion_tokens": gen.completion_tokens,
                      "total_tokens": (gen.prompt_tokens or 0) + (gen.completion_tokens or 0)},
        })


CLIENT_ERRORS = ("SettingError", "ImageError", "DataError")


class ChatServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the listen backlog: a client opening 64 connections at once must not be dropped

    def __init__(self, model: VLM, *, host: str = "127.0.0.1", port: int = 0, model_name: str | None = None,
                 handler: type[ChatHandler] = ChatHandler) -> None:
        super().__init__((host, port), handler)
        self.model = model
        self.model_name = model_name or model.info.model_id
        self.model_lock = threading.Lock()
        self._ids = 0
        self._ids_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.dropped = 0  # answers whose client had gone (ConnectionError while writing)

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/v1"

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away mid-answer (a timeout, a cancelled notebook) is not the server's fault: it is
        counted, never printed as a traceback; anything else is one line on stderr."""
        import sys

        err = sys.exc_info()[1]
        if isinstance(err, ConnectionError):
            self.dropped += 1
            return
        print(f"vlamb-nb chat server: a request from {client_address[0]} failed: {type(err).__name__}: {err}",
              file=sys.stderr)

    def next_id(self) -> int:
        with self._ids_lock:
            self._ids += 1
            return self._ids

    def _loop(self, lifetime: float) -> None:
        deadline = time.monotonic() + lifetime
        self.timeout = 0.2  # handle_request returns at least this often, so the deadline is honoured
        while not self._stop.is_set() and time.monotonic() < deadline:
            self.handle_request()
        self.server_close()

    def start(self, lifetime: float = 600.0) -> ChatServer:
        """Serve in a background thread until :meth:`stop` or ``lifetime`` seconds, whichever first."""
        self._thread = threading.Thread(target=self._loop, args=(lifetime,), daemon=True, name="vlamb-chat-server")
        self._thread.start()
        return self

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ChatServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve(model: VLM, *, host: str = "127.0.0.1", port: int = 0, lifetime: float = 600.0,
          model_name: str | None = None) -> ChatServer:
    """Start a chat server for ``model`` in the background; use its ``base_url`` with ``OpenAIModel``."""
    return ChatServer(model, host=host, port=port, model_name=model_name).start(lifetime)
