"""A bounded local OpenAI-compatible chat endpoint for tests: answers with a function of the prompt and keeps
every prompt it was asked, and the sha256 of every image sent with it (127.0.0.1 only; stops by itself after
``lifetime`` seconds at the latest)."""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


class ChatEndpoint:
    """``with ChatEndpoint(answer) as server:`` … ``server.base_url``, ``server.prompts``, ``server.log`` (the path,
    model and first words of each request), ``server.images`` (per request, the sha256 of each image's bytes)."""

    def __init__(self, answer: Callable[[str], str], *, lifetime: float = 1500.0) -> None:
        self.prompts: list[str] = []
        self.log: list[dict[str, str]] = []
        self.images: list[list[str]] = []
        lock = threading.Lock()
        prompts, log, images = self.prompts, self.log, self.images

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                texts, shown = [], []
                for m in body.get("messages", []):
                    c = m.get("content")
                    texts += [c] if isinstance(c, str) else [p.get("text", "") for p in c or [] if isinstance(p, dict)]
                    for p in c if isinstance(c, list) else []:
                        url = (p.get("image_url") or {}).get("url", "") if isinstance(p, dict) else ""
                        if url.startswith("data:"):
                            shown.append(hashlib.sha256(base64.b64decode(url.split(",", 1)[1])).hexdigest())
                prompt = "\n".join(texts)
                with lock:
                    prompts.append(prompt)
                    images.append(shown)
                    log.append({"path": self.path, "model": body.get("model", ""), "prompt": prompt[:120]})
                reply = {"id": "x", "object": "chat.completion", "model": body.get("model"),
                         "choices": [{"index": 0, "finish_reason": "stop",
                                      "message": {"role": "assistant", "content": answer(prompt)}}],
                         "usage": {"prompt_tokens": 10, "completion_tokens": 5}}
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.timer = threading.Timer(lifetime, self.server.shutdown)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> Self:
        self.thread.start()
        self.timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.timer.cancel()
        self.server.shutdown()
        self.server.server_close()
