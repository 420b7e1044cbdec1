"""Any OpenAI-compatible chat endpoint behind the ``VLM`` protocol.

Works with a vLLM server (``vllm serve MODEL`` then ``base_url="http://host:8000/v1"``) and with
API models such as GPT-4o. Images travel as base64 data URLs; requests run concurrently up to a
limit; 429 and 5xx answers, timeouts and dropped connections are retried with exponential backoff
(honouring ``Retry-After``). The API key is read from an environment variable at call time and is
never stored on the object, in metadata or in error messages.

Only the standard library is used for HTTP, so this backend needs no extra package.
"""

from __future__ import annotations

import base64
import io
import json
import os
import random
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from vlamb_nb.errors import SettingError
from vlamb_nb.models.base import DecodingParams, Generation, ModelInfo, Request

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
DEFAULT_BASE_URL = "https://api.openai.com/v1"


class EndpointError(RuntimeError):
    """A request that failed for good (after retries, or with a non-retryable status)."""


def image_data_url(image: Any) -> tuple[str, tuple[int, int]]:
    """``data:<mime>;base64,...`` for any image source, keeping JPEG/PNG/WebP/GIF bytes as they are."""
    from PIL import Image as PILImage

    from vlamb_nb.images import _open_bytes, encode_png, read_image_bytes

    if isinstance(image, PILImage.Image):
        return "data:image/png;base64," + base64.b64encode(encode_png(image)).decode(), image.size
    data, label = read_image_bytes(image)
    img = _open_bytes(data, label)
    fmt = (img.format or "").lower()
    mime = {"jpeg": "image/jpeg", "png": "image/png", "webp": "image/webp", "gif": "image/gif"}.get(fmt)
    if mime is None:  # BMP, TIFF, ...: re-encode to a format every endpoint accepts
        buf = io.BytesIO()
        img.convert("RGB").save(buf, format="PNG")
        data, mime = buf.getvalue(), "image/png"
    return f"data:{mime};base64," + base64.b64encode(data).decode(), img.size


def to_openai_messages(request: Request) -> tuple[list[dict[str, Any]], list[tuple[int, int]]]:
    """Chat messages in the OpenAI format; image slots become ``image_url`` parts, in order."""
    images = iter(request.images)
    sizes: list[tuple[int, int]] = []
    out = []
    for m in request.messages:
        content = m.get("content", [])
        if isinstance(content, str):
            out.append({"role": m["role"], "content": content})
            continue
        parts = []
        for p in content:
            if p.get("type") == "image":
                url, size = image_data_url(next(images))
                sizes.append(size)
                parts.append({"type": "image_url", "image_url": {"url": url}})
            elif p.get("type") == "text":
                parts.append({"type": "text", "text": p["text"]})
        if all(p["type"] == "text" for p in parts):  # plain strings suit text-only servers best
            out.append({"role": m["role"], "content": "".join(p["text"] for p in parts)})
        else:
            out.append({"role": m["role"], "content": parts})
    return out, sizes


def decoding_body(params: DecodingParams) -> dict[str, Any]:
    """Decoding parameters in chat-completions terms (greedy = temperature 0)."""
    if params.num_beams > 1:
        raise SettingError("beam search is not part of the OpenAI chat API; use num_beams=1")
    body: dict[str, Any] = {"max_tokens": params.max_new_tokens}
    if params.do_sample:
        body.update(temperature=params.temperature, top_p=params.top_p)
    else:
        body.update(temperature=0.0)
    if params.seed is not None:
        body["seed"] = params.seed
    return body


class OpenAIModel:
    """A chat-completions endpoint; ``info.model_id`` is ``openai:<model>``."""

    def __init__(self, model: str, *, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                 concurrency: int = 4, timeout: float = 120.0, max_retries: int = 5, backoff: float = 1.0,
                 max_backoff: float = 60.0, extra_body: dict[str, Any] | None = None,
                 quantization_label: str | None = None, revision: str | None = None) -> None:
        if not model:
            raise SettingError("openai: needs a model name, e.g. openai:gpt-4o or openai:Qwen/Qwen2.5-VL-7B-Instruct")
        if concurrency < 1 or max_retries < 0 or timeout <= 0:
            raise SettingError("concurrency >= 1, max_retries >= 0 and timeout > 0 are required")
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        if not self.base_url.startswith(("http://", "https://")):
            raise SettingError(f"base_url must be an http(s) URL, got {self.base_url!r}")
        self.api_key_env = api_key_env  # the variable's name only; its value is read per call
        if self.base_url == DEFAULT_BASE_URL and not os.environ.get(api_key_env):
            raise SettingError(f"the OpenAI API needs a key in the environment variable {api_key_env}")
        self.concurrency, self.timeout, self.max_retries = concurrency, timeout, max_retries
        self.backoff, self.max_backoff = backoff, max_backoff
        self.extra_body = dict(extra_body or {})
        self.info = ModelInfo(model_id=f"openai:{model}", revision=revision, quantization=quantization_label,
                              backend="openai")
        self.http_attempts = 0  # every HTTP attempt, retries included (for tests and measurements)

    # -- HTTP ---------------------------------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        h = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env)
        if key:
            h["Authorization"] = f"Bearer {key}"
        return h

    def _sleep_for(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(float(retry_after), self.max_backoff)
            except ValueError:
                pass
        return min(self.backoff * (2 ** attempt), self.max_backoff) * (0.5 + random.random() / 2)

    def post(self, route: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST JSON with retries; raises :class:`EndpointError` with a reason that never holds the key."""
        data = json.dumps(body).encode()
        url = f"{self.base_url}/{route.lstrip('/')}"
        last = ""
        for attempt in range(self.max_retries + 1):
            self.http_attempts += 1
            req = urllib.request.Request(url, data=data, headers=self._headers(), method="POST")
            retry_after = None
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:  # noqa: S310 - user's endpoint
                    return json.loads(resp.read().decode())
            except urllib.error.HTTPError as e:
                detail = e.read()[:300].decode(errors="replace")
                last = f"HTTP {e.code} from {url}: {detail}"
                if e.code not in RETRY_STATUS:
                    raise EndpointError(last) from None
                retry_after = e.headers.get("Retry-After") if e.headers else None
            except TimeoutError as e:
                last = f"timed out after {self.timeout:g} s ({url}): {e}"
            except urllib.error.URLError as e:
                if isinstance(e.reason, (TimeoutError, socket.timeout)):
                    last = f"timed out after {self.timeout:g} s ({url})"
                else:
                    last = f"cannot reach {url}: {e.reason}"
            except (ConnectionError, json.JSONDecodeError) as e:
                last = f"{type(e).__name__} from {url}: {e}"
            if attempt < self.max_retries:
                time.sleep(self._sleep_for(attempt, retry_after))
        raise EndpointError(f"gave up after {self.max_retries + 1} attempts: {last}")

    # -- protocol -----------------------------------------------------------------------------------
    def _one(self, request: Request) -> Generation:
        t0 = time.perf_counter()
        sizes: list[tuple[int, int]] = []
        try:
            messages, sizes = to_openai_messages(request)
            body = {"model": self.model, "messages": messages, **decoding_body(request.params), **self.extra_body}
            resp = self.post("chat/completions", body)
            choice = resp["choices"][0]
            usage = resp.get("usage") or {}
            return Generation(request_id=request.id, text=choice["message"].get("content") or "",
                              prompt_tokens=usage.get("prompt_tokens"),
                              completion_tokens=usage.get("completion_tokens"),
                              seconds=time.perf_counter() - t0, finish_reason=choice.get("finish_reason"),
                              image_sizes=sizes or None)
        except Exception as e:  # noqa: BLE001 - one failed request never stops the others
            return Generation(request_id=request.id, error=f"{type(e).__name__}: {e}", finish_reason="error",
                              seconds=time.perf_counter() - t0, image_sizes=sizes or None)

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        """Up to ``concurrency`` requests in flight; results come back in request order."""
        reqs = list(requests)
        if len(reqs) <= 1 or self.concurrency == 1:
            return [self._one(r) for r in reqs]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(reqs))) as pool:
            return list(pool.map(self._one, reqs))

    def score_options(self, request: Request, options: Sequence[str]) -> list[float]:
        """First-token log-probabilities from ``top_logprobs`` (exact for options of one token).

        Options that are not one of the endpoint's top candidates get ``-inf``.
        """
        if not options:
            raise SettingError(f"request {request.id}: no options to score")
        messages, _ = to_openai_messages(request)
        body = {"model": self.model, "messages": messages, "max_tokens": 1, "temperature": 0.0,
                "logprobs": True, "top_logprobs": 20, **self.extra_body}
        resp = self.post("chat/completions", body)
        content = (resp["choices"][0].get("logprobs") or {}).get("content") or []
        if not content:
            raise EndpointError("the endpoint returned no logprobs (does it support logprobs=True?)")
        top = {c["token"].strip(): c["logprob"] for c in content[0].get("top_logprobs", [])}
        return [top.get(opt.strip(), float("-inf")) for opt in options]
