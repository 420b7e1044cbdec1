"""Any OpenAI-compatible chat endpoint behind the ``VLM`` protocol.

Works with a vLLM server (``vllm serve MODEL`` then ``base_url="http://host:8000/v1"``) and with
API models such as GPT-4o. Images travel as base64 data URLs; requests run concurrently up to a
limit. HTTP goes through one pooled ``httpx.Client`` per model with these rules:

* ``timeout`` bounds the whole request (connect, upload, headers, body), so a server that trickles
  its reply cannot hold a worker for longer;
* redirects are never followed: a redirected POST would come back as a GET, or take the key to
  another host; the redirect is reported as a failure naming the status and ``Location``;
* 408, 409, 429 and 5xx answers, timeouts and dropped connections are retried with exponential
  backoff, honouring ``Retry-After`` on 429/503, never waiting longer than ``max_backoff``;
* the API key is read from an environment variable at call time and is never stored on the object,
  in metadata, in error messages (even when the server echoes it) or in httpx/httpcore debug logs;
* a reply without an answer (content filter, null content, no choices, malformed JSON) is a failed
  ``Generation``, so a rerun retries it rather than keeping an empty answer.
"""

from __future__ import annotations

import base64
import email.utils
import io
import json
import logging
import math
import os
import random
import re
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import UTC, datetime
from typing import Any

import httpcore  # httpx's own transport layer (a dependency of httpx); used for the deadline hook only
import httpx

from vlamb_nb.errors import SettingError
from vlamb_nb.models.base import DecodingParams, Generation, ModelInfo, Request

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
RETRY_AFTER_STATUS = frozenset({429, 503})
DEFAULT_BASE_URL = "https://api.openai.com/v1"
DETAIL_CHARS = 300  # of an error reply's body kept in the message


class EndpointError(RuntimeError):
    """A request that failed for good (after retries, or with a non-retryable status)."""


# -- secrets ----------------------------------------------------------------------------------------
_KEY_ENVS: set[str] = {"OPENAI_API_KEY"}  # variables whose values are scrubbed from errors and logs
_BEARER = re.compile(r"(?i)\bbearer\s+[^\s'\",;)\]}]+")


def scrub(text: str, *secrets: str | None) -> str:
    """``text`` with the given secrets and any bearer token masked: errors end up in result files and logs."""
    for s in secrets:
        if s:
            text = text.replace(s, "***")
    return _BEARER.sub("Bearer ***", text)


def _known_keys() -> list[str]:
    return [v for name in tuple(_KEY_ENVS) if (v := os.environ.get(name))]


class ScrubSecretsFilter(logging.Filter):
    """Masks keys and bearer tokens in httpx/httpcore records (at DEBUG httpcore logs raw header lists)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            msg = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken record is logging's problem, not ours
            return True
        clean = scrub(msg, *_known_keys())
        if clean != msg:
            record.msg, record.args = clean, None
        return True


# a logger's filters do not apply to its children's records, so every logger httpx and httpcore use is listed
HTTP_LOGGERS = ("httpx", "httpcore", "httpcore.connection", "httpcore.http11", "httpcore.http2",
                "httpcore.proxy", "httpcore.socks")


def install_log_filter() -> None:
    """Attach :class:`ScrubSecretsFilter` to the HTTP loggers (idempotent)."""
    for name in HTTP_LOGGERS:
        lg = logging.getLogger(name)
        if not any(isinstance(f, ScrubSecretsFilter) for f in lg.filters):
            lg.addFilter(ScrubSecretsFilter())


install_log_filter()


# -- a total deadline per request ---------------------------------------------------------------------
# httpx's timeouts apply to each socket operation, so a server sending a byte a second never trips them.
# Every socket operation of a request therefore gets at most the time left before the request's deadline,
# which ``OpenAIModel._exchange`` keeps in a thread-local (sync httpx does its I/O in the calling thread).
_deadline = threading.local()


def _time_left(timeout: float | None, expired: type[Exception]) -> float | None:
    at = getattr(_deadline, "at", None)
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise expired("the request's total deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _time_left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _time_left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        timeout = _time_left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:
        timeout = _time_left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_tcp(host, port, timeout, local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> httpcore.NetworkStream:
        timeout = _time_left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _transport(base_url: str) -> httpx.HTTPTransport:
    """httpx's transport, through the proxy urllib would use for ``base_url``, its sockets held to the deadline.

    The client is given this transport explicitly (so it ignores proxy variables itself); the proxy is
    therefore chosen here, with the same rules as the urllib code this replaced.
    """
    parts = urllib.parse.urlsplit(base_url)
    proxy = urllib.request.getproxies().get(parts.scheme)
    if proxy and parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        proxy = None
    transport = httpx.HTTPTransport(proxy=proxy, trust_env=True)
    pool = getattr(transport, "_pool", None)  # httpx exposes no hook for the network backend
    if pool is not None and isinstance(getattr(pool, "_network_backend", None), httpcore.NetworkBackend):
        pool._network_backend = _DeadlineBackend(pool._network_backend)
    # otherwise (a future httpx) the body is still read against the deadline in ``_exchange``
    return transport


class _DeadlinePassed(Exception):
    pass


def retry_after_seconds(value: str | None) -> float | None:
    """Seconds asked for by a ``Retry-After`` header (delta-seconds or an HTTP date); None if absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None


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


def _content_text(content: Any) -> str | None:
    """The answer text of a chat message's ``content`` (a string, or a list of text parts); None if absent."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "".join(texts) if texts else None
    return None


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
        _KEY_ENVS.add(api_key_env)  # so the log filter masks this key too
        if self.base_url == DEFAULT_BASE_URL and not os.environ.get(api_key_env):
            raise SettingError(f"the OpenAI API needs a key in the environment variable {api_key_env}")
        self.concurrency, self.timeout, self.max_retries = concurrency, timeout, max_retries
        self.backoff, self.max_backoff = backoff, max_backoff
        self.extra_body = dict(extra_body or {})
        self.info = ModelInfo(model_id=f"openai:{model}", revision=revision, quantization=quantization_label,
                              backend="openai")
        self.http_attempts = 0  # every HTTP attempt, retries included (for tests and measurements)
        self._lock = threading.Lock()
        self._client: httpx.Client | None = None  # opened on first use, shared by the worker threads

    # -- lifecycle ----------------------------------------------------------------------------------
    def _http(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                # trust_env=False: no .netrc credentials and no proxy lookup by the client (``_transport`` does it)
                self._client = httpx.Client(transport=_transport(self.base_url), follow_redirects=False,
                                            timeout=self.timeout, trust_env=False)
            return self._client

    def close(self) -> None:
        """Close pooled connections; a later request opens new ones."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def __enter__(self) -> OpenAIModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:
        """Picklable like the settings it holds: the connection pool and lock are rebuilt on the other side."""
        state = dict(vars(self))
        state.pop("_lock", None)
        state["_client"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        vars(self).update(state)
        self._lock = threading.Lock()
        _KEY_ENVS.add(self.api_key_env)

    # -- HTTP ---------------------------------------------------------------------------------------
    def _key(self) -> str | None:
        return os.environ.get(self.api_key_env) or None

    def _headers(self) -> dict[str, str]:
        h = {"Content-Type": "application/json", "Accept": "application/json"}
        key = self._key()
        if key:
            h["Authorization"] = f"Bearer {key}"
        return h

    def _scrub(self, text: str) -> str:
        return scrub(text, self._key(), *_known_keys())

    def _sleep_for(self, attempt: int, retry_after: str | None) -> float:
        asked = retry_after_seconds(retry_after)
        if asked is not None:
            return min(asked, self.max_backoff)
        return min(self.backoff * (2 ** attempt), self.max_backoff) * (0.5 + random.random() / 2)

    def _exchange(self, url: str, data: bytes) -> tuple[int, httpx.Headers, bytes]:
        """One POST within ``timeout`` in total: sockets wait at most the time left, and the body is
        streamed and checked against the deadline, so a trickling server cannot stretch the request."""
        deadline = time.monotonic() + self.timeout
        _deadline.at = deadline
        try:
            with self._http().stream("POST", url, content=data, headers=self._headers()) as resp:
                chunks = []
                for chunk in resp.iter_bytes():
                    chunks.append(chunk)
                    if time.monotonic() > deadline:
                        raise _DeadlinePassed
                return resp.status_code, resp.headers, b"".join(chunks)
        finally:
            _deadline.at = None

    def _parse(self, status: int, raw: bytes, url: str) -> dict[str, Any]:
        try:
            payload = json.loads(raw.decode("utf-8", errors="replace"))
        except json.JSONDecodeError as e:
            start = raw[:120].decode("utf-8", errors="replace")
            raise EndpointError(self._scrub(f"malformed JSON in the HTTP {status} reply from {url} ({e.msg} at "
                                            f"char {e.pos}); the reply starts {start!r}")) from None
        if not isinstance(payload, dict):
            raise EndpointError(f"the HTTP {status} reply from {url} is JSON but not an object "
                                f"({type(payload).__name__})")
        return payload

    def post(self, route: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST JSON with retries; raises :class:`EndpointError` with a reason that never holds the key."""
        data = json.dumps(body).encode()
        url = f"{self.base_url}/{route.lstrip('/')}"
        last = ""
        for attempt in range(self.max_retries + 1):
            with self._lock:
                self.http_attempts += 1
            retry_after = None
            try:
                status, headers, raw = self._exchange(url, data)
            except (httpx.TimeoutException, _DeadlinePassed):
                last = f"timed out after {self.timeout:g} s ({url})"
            except httpx.ConnectError as e:
                last = f"cannot reach {url}: {e}"
            except httpx.RequestError as e:  # dropped connection, protocol or decoding error
                last = f"{type(e).__name__} from {url}: {e}"
            else:
                if 200 <= status < 300:
                    return self._parse(status, raw, url)  # malformed JSON is not retried: it is the server's answer
                if 300 <= status < 400:
                    location = headers.get("Location") or "(no Location header)"
                    raise EndpointError(self._scrub(
                        f"HTTP {status} redirect from {url} to {location}: not followed, since the POST would be "
                        f"resent as a GET or the key sent elsewhere; set base_url to the final address"))
                detail = self._scrub(raw.decode("utf-8", errors="replace"))  # before cutting: no half key survives
                last = f"HTTP {status} from {url}: {detail[:DETAIL_CHARS]}"
                if status not in RETRY_STATUS:
                    raise EndpointError(self._scrub(last))
                if status in RETRY_AFTER_STATUS:
                    retry_after = headers.get("Retry-After")
            if attempt < self.max_retries:
                time.sleep(self._sleep_for(attempt, retry_after))
        raise EndpointError(self._scrub(f"gave up after {self.max_retries + 1} attempts: {last}"))

    # -- protocol -----------------------------------------------------------------------------------
    def _one(self, request: Request) -> Generation:
        t0 = time.perf_counter()
        sizes: list[tuple[int, int]] = []
        try:
            messages, sizes = to_openai_messages(request)
            body = {"model": self.model, "messages": messages, **decoding_body(request.params), **self.extra_body}
            resp = self.post("chat/completions", body)
        except Exception as e:  # noqa: BLE001 - one failed request never stops the others
            return Generation(request_id=request.id, error=self._scrub(f"{type(e).__name__}: {e}"),
                              finish_reason="error", seconds=time.perf_counter() - t0, image_sizes=sizes or None)
        usage = resp.get("usage") if isinstance(resp.get("usage"), dict) else {}
        common = dict(request_id=request.id, prompt_tokens=usage.get("prompt_tokens"),
                      completion_tokens=usage.get("completion_tokens"), image_sizes=sizes or None)
        choices = resp.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
        message = (choice or {}).get("message")
        text = _content_text(message.get("content")) if isinstance(message, dict) else None
        finish = (choice or {}).get("finish_reason")
        # no answer is a failure (error set), so a rerun asks again instead of keeping an empty answer
        error = None
        if choice is None:
            error = "the endpoint returned no choices"
        elif finish == "content_filter":
            error = "the endpoint's content filter withheld the answer (finish_reason=content_filter)"
        elif text is None:
            refusal = message.get("refusal") if isinstance(message, dict) else None
            error = f"the endpoint returned no content (finish_reason={finish})" + (
                f"; refusal: {str(refusal)[:DETAIL_CHARS]}" if refusal else "")
        if error is not None:
            return Generation(**common, error=self._scrub(f"EndpointError: {error}"),
                              finish_reason="content_filter" if finish == "content_filter" else "error",
                              seconds=time.perf_counter() - t0)
        return Generation(**common, text=text or "", finish_reason=finish, seconds=time.perf_counter() - t0)

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        """Up to ``concurrency`` requests in flight; each result is filed under the request it answers.

        Replies finish in any order, so each future carries its request and the result is checked
        against that request's id, rather than trusting the order in which results arrive.
        """
        reqs = list(requests)
        results: dict[int, Generation] = {}
        if len(reqs) <= 1 or self.concurrency == 1:
            results = {i: self._one(r) for i, r in enumerate(reqs)}
        else:
            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(reqs))) as pool:
                futures = {pool.submit(self._one, r): i for i, r in enumerate(reqs)}
                for fut in as_completed(futures):
                    results[futures[fut]] = fut.result()
        out = []
        for i, r in enumerate(reqs):
            g = results[i]
            if g.request_id != r.id:  # _one never does this; the check keeps a refactor from mixing answers up
                g = Generation(request_id=r.id, finish_reason="error",
                               error=f"EndpointError: result for {g.request_id!r} filed under {r.id!r}")
            out.append(g)
        return out

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
        choices = resp.get("choices") or [{}]
        content = (choices[0].get("logprobs") or {}).get("content") or []
        if not content:
            raise EndpointError("the endpoint returned no logprobs (does it support logprobs=True?)")
        top = {c["token"].strip(): c["logprob"] for c in content[0].get("top_logprobs", [])}
        return [top.get(opt.strip(), float("-inf")) for opt in options]
