"""Any OpenAI-compatible chat endpoint behind the ``VLM`` protocol.

Works with a vLLM server (``vllm serve MODEL`` then ``base_url="http://host:8000/v1"``) and with
API models such as GPT-4o. Images travel as base64 data URLs, each image encoded once per model
(a bounded cache keyed by the image's digest) and converted exactly as a local model's images are
(:func:`vlamb_nb.images.model_image_bytes`). The model is a :class:`~vlamb_nb.models.base.StreamingVLM`:
:meth:`OpenAIModel.stream` keeps up to ``concurrency`` requests in flight and hands back each answer
as it arrives. HTTP goes through one pooled ``httpx.Client`` per model with these rules:

* ``timeout`` bounds each attempt (connect, upload, headers, body), so a server that trickles its
  reply cannot hold a worker for longer; ``deadline`` bounds the whole request, every retry and
  back-off included, measured from its first send;
* redirects are never followed: a redirected POST would come back as a GET, or take the key to
  another host; the redirect is reported as a failure naming the status and ``Location``;
* 408, 409, 429 and 5xx answers, timeouts and dropped connections are retried (at most
  ``max_retries`` times per request) with exponential backoff, honouring ``Retry-After`` on 429/503
  (one of 0 s gets the jittered backoff), never waiting longer than ``max_backoff``;
* a 429 or 503 also halves the number of requests in flight and pauses new sends for its
  ``Retry-After``; each success then adds about one request in flight per round trip, back up to
  ``concurrency`` (additive increase, multiplicative decrease, as TCP does);
* the API key is read from an environment variable at call time and is never stored on the object,
  in metadata, in error messages (even when the server echoes it) or in httpx/httpcore debug logs;
* ``base_url`` is split: its query parameters (``?api-version=...``, a gateway's ``?key=...``) are sent
  with every request, and everything shown (errors, stored records, ``info.endpoint``, logs) carries the
  address with secret-looking query values masked. A ``user:password@`` in the address is refused:
  a credential belongs in the environment variable named by ``api_key_env``, not in an address that
  is printed and stored (secrets, the deadline, ``Retry-After`` and the adaptive limit live in
  :mod:`vlamb_nb.models.http`; this module is the OpenAI wire format);
* a reply without an answer (content filter, null content, no choices, malformed JSON) is a failed
  ``Generation``, so a rerun retries it rather than keeping an empty answer.
"""

from __future__ import annotations

import base64
import json
import os
import queue
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import httpx

from vlamb_nb.errors import SettingError
from vlamb_nb.models.base import Backend, DecodingParams, Generation, ModelInfo, Request
from vlamb_nb.models.http import (
    DETAIL_CHARS,
    KEY_ENVS,
    RETRY_AFTER_STATUS,
    RETRY_STATUS,
    SECRET_PARAM,
    URL_SECRETS,
    AdaptiveLimit,
    DeadlinePassed,
    EndpointError,
    deadline_transport,
    known_keys,
    request_deadline,
    retry_after_seconds,
    scrub,
    split_base_url,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"


def image_data_url(image: Any) -> tuple[str, tuple[int, int]]:
    """``data:<mime>;base64,...`` of the image a model is given (:func:`vlamb_nb.images.model_image_bytes`:
    the file's own bytes when they already are 8-bit RGB, else the RGB conversion a local model gets)."""
    from vlamb_nb.images import model_image_bytes

    data, mime, size = model_image_bytes(image)
    return f"data:{mime};base64," + base64.b64encode(data).decode(), size


class ImageURLCache:
    """Data URLs by image digest, so an image asked about in several requests (settings, repair turns,
    samples) is converted and base64-encoded once. Bounded: beyond ``max_bytes`` of URLs the least recently
    used are dropped. Thread-safe; two threads wanting the same new image wait for one encoding."""

    def __init__(self, max_bytes: int = 256 * 2**20) -> None:
        self.max_bytes = max_bytes
        self.size = 0  # bytes of URLs held
        self.encodings = 0  # images converted and encoded (cache misses)
        self._urls: OrderedDict[str, tuple[str, tuple[int, int]]] = OrderedDict()
        self._pending: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._urls)

    def get(self, image: Any) -> tuple[str, tuple[int, int]]:
        from vlamb_nb.images import image_digest

        key = image_digest(image)
        while True:
            with self._lock:
                hit = self._urls.get(key)
                if hit is not None:
                    self._urls.move_to_end(key)
                    return hit
                waiting = self._pending.get(key)
                if waiting is None:
                    self._pending[key] = threading.Event()
            if waiting is None:
                break
            waiting.wait()  # another thread is encoding it; if that failed, this thread tries itself
        value = None
        try:
            value = image_data_url(image)
            return value
        finally:
            with self._lock:
                self.encodings += 1
                if value is not None and len(value[0]) <= self.max_bytes:
                    self._urls[key] = value
                    self.size += len(value[0])
                    while self.size > self.max_bytes:
                        _, (url, _) = self._urls.popitem(last=False)
                        self.size -= len(url)
                self._pending.pop(key).set()


def to_openai_messages(request: Request, images: Callable[[Any], tuple[str, tuple[int, int]]] = image_data_url,
                       ) -> tuple[list[dict[str, Any]], list[tuple[int, int]]]:
    """Chat messages in the OpenAI format; image slots become ``image_url`` parts, in order.

    ``images`` turns an image into its data URL and size (a model passes its :class:`ImageURLCache`)."""
    pending = iter(request.images)
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
                url, size = images(next(pending))
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


#: requests in flight by default: enough to keep a vLLM server's batch full (it schedules up to 256 sequences)
DEFAULT_CONCURRENCY = 64
DEFAULT_TIMEOUT = 120.0  # seconds per attempt
DEFAULT_DEADLINE = 600.0  # seconds per request, every retry included


class OpenAIModel:
    """A chat-completions endpoint; ``info.model_id`` is ``openai:<model>``, ``info.endpoint`` its address
    (credentials masked).

    ``concurrency``: requests in flight (lowered for a while by 429/503 answers); ``timeout``: seconds per
    attempt; ``max_retries``: retries per request; ``deadline``: seconds per request from its first send,
    every retry and back-off included (0 or None: no limit beyond ``timeout`` × attempts).
    """

    def __init__(self, model: str, *, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                 concurrency: int = DEFAULT_CONCURRENCY, timeout: float = DEFAULT_TIMEOUT, max_retries: int = 5,
                 deadline: float | None = DEFAULT_DEADLINE, backoff: float = 1.0, max_backoff: float = 60.0,
                 extra_body: dict[str, Any] | None = None, quantization_label: str | None = None,
                 revision: str | None = None, image_cache_bytes: int = 256 * 2**20) -> None:
        if not model:
            raise SettingError("openai: needs a model name, e.g. openai:gpt-4o or openai:Qwen/Qwen2.5-VL-7B-Instruct")
        try:
            concurrency, max_retries, timeout = int(concurrency), int(max_retries), float(timeout)
            deadline = float(deadline) if deadline else None
        except (TypeError, ValueError):
            raise SettingError(f"concurrency and max_retries must be integers, timeout and deadline numbers; got "
                               f"concurrency={concurrency!r}, max_retries={max_retries!r}, timeout={timeout!r}, "
                               f"deadline={deadline!r}") from None
        if concurrency < 1 or max_retries < 0 or timeout <= 0 or (deadline is not None and deadline < 0):
            raise SettingError(f"concurrency >= 1, max_retries >= 0, timeout > 0 and deadline >= 0 (0 or None: no "
                               f"deadline) are required; got concurrency={concurrency}, max_retries={max_retries}, "
                               f"timeout={timeout:g}, deadline={deadline}")
        self.model = model
        base, self._query, self.endpoint = split_base_url(base_url or os.environ.get("OPENAI_BASE_URL")
                                                          or DEFAULT_BASE_URL)
        self.base_url = base  # without its query (sent as parameters) and never with credentials
        URL_SECRETS.update(v for k, v in self._query if v and SECRET_PARAM.search(k))
        self.api_key_env = api_key_env  # the variable's name only; its value is read per call
        KEY_ENVS.add(api_key_env)  # so the log filter masks this key too
        if self.base_url == DEFAULT_BASE_URL and not os.environ.get(api_key_env):
            raise SettingError(f"the OpenAI API needs a key in the environment variable {api_key_env}")
        self.concurrency, self.timeout, self.max_retries, self.deadline = concurrency, timeout, max_retries, deadline
        self.backoff, self.max_backoff = backoff, max_backoff
        self.extra_body = dict(extra_body or {})
        self.info = ModelInfo(model_id=f"openai:{model}", revision=revision, quantization=quantization_label,
                              backend=Backend.OPENAI, endpoint=self.endpoint)
        self.http_attempts = 0  # every HTTP attempt, retries included (for tests and measurements)
        self.last_limit: AdaptiveLimit | None = None  # the in-flight limit of the latest stream (peak, cuts)
        self.image_cache_bytes = image_cache_bytes
        self.images = ImageURLCache(image_cache_bytes)
        self._lock = threading.Lock()
        self._clients: list[httpx.Client] = []  # every client opened (closed by close())
        self._idle: list[httpx.Client] = []  # clients no worker holds, kept with their open connection

    # -- lifecycle ----------------------------------------------------------------------------------
    def _checkout(self) -> httpx.Client:
        """A client for one worker. Each worker holds its own one-connection client: httpx's shared pool scans
        every connection for every request, which at 64 in flight costs more CPU than the request itself."""
        with self._lock:
            if self._idle:
                return self._idle.pop()
        # trust_env=False: no .netrc credentials and no proxy lookup by the client (``deadline_transport`` does it)
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=2)
        client = httpx.Client(transport=deadline_transport(self.base_url, limits), follow_redirects=False,
                              timeout=self.timeout, trust_env=False)
        with self._lock:
            self._clients.append(client)
        return client

    def _checkin(self, client: httpx.Client) -> None:
        with self._lock:
            if client in self._clients:  # not closed meanwhile
                self._idle.append(client)

    def close(self) -> None:
        """Close pooled connections; a later request opens new ones."""
        with self._lock:
            clients, self._clients, self._idle = self._clients, [], []
        for client in clients:
            client.close()

    def __enter__(self) -> OpenAIModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:
        """Picklable like the settings it holds: the connection pool, image cache and lock are rebuilt."""
        state = dict(vars(self))
        state.pop("_lock", None)
        state.update(_clients=[], _idle=[], images=None, last_limit=None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        vars(self).update(state)
        self._lock = threading.Lock()
        self.images = ImageURLCache(self.image_cache_bytes)
        KEY_ENVS.add(self.api_key_env)
        URL_SECRETS.update(v for k, v in self._query if v and SECRET_PARAM.search(k))

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
        return scrub(text, self._key(), *known_keys())

    def _sleep_for(self, attempt: int, retry_after: str | None) -> float:
        """The pause before a retry: the server's ``Retry-After``, or, when it asks for none or for 0 s, the
        jittered exponential backoff (a fleet told "now" would otherwise come back in step and be refused again)."""
        asked = retry_after_seconds(retry_after)
        if asked:
            return min(asked, self.max_backoff)
        return min(self.backoff * (2 ** attempt), self.max_backoff) * (0.5 + random.random() / 2)

    def _exchange(self, client: httpx.Client, url: str, data: bytes, budget: float) -> tuple[int, httpx.Headers, bytes]:
        """One POST within ``budget`` seconds in total: sockets wait at most the time left, and the body is
        streamed and checked against the deadline, so a trickling server cannot stretch the request."""
        deadline = time.monotonic() + budget
        request_deadline.at = deadline
        try:
            with client.stream("POST", url, params=self._query or None, content=data,
                               headers=self._headers()) as resp:
                chunks = []
                for chunk in resp.iter_bytes():
                    chunks.append(chunk)
                    if time.monotonic() > deadline:
                        raise DeadlinePassed
                return resp.status_code, resp.headers, b"".join(chunks)
        finally:
            request_deadline.at = None

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

    def post(self, route: str, body: dict[str, Any], *, limit: AdaptiveLimit | None = None,
             client: httpx.Client | None = None) -> dict[str, Any]:
        """POST JSON with retries; raises :class:`EndpointError` with a reason that never holds a credential.

        Each attempt holds a slot of ``limit`` (the stream's in-flight limit) while it is on the wire, not
        while it backs off. At most ``max_retries`` retries, all within ``deadline`` of the first send.
        ``client``: the calling worker's (default: one checked out for this call).
        """
        if client is None:
            client = self._checkout()
            try:
                return self.post(route, body, limit=limit, client=client)
            finally:
                self._checkin(client)
        data = json.dumps(body).encode()
        route = route.lstrip("/")
        url = f"{self.base_url}/{route}"
        shown = url + self.endpoint[len(self.base_url):]  # the masked query, as everything shows it
        limit = limit or AdaptiveLimit(1, max_pause=self.max_backoff)
        last, end, attempts, out_of_time = "", float("inf"), 0, False
        for attempt in range(self.max_retries + 1):
            sent = limit.acquire()
            if attempt == 0 and self.deadline is not None:
                end = sent + self.deadline
            budget = min(self.timeout, end - time.monotonic())
            if budget <= 0:
                limit.release(sent)
                out_of_time = True
                break
            with self._lock:
                self.http_attempts += 1
            attempts += 1
            status: int | None = None
            retry_after: str | None = None
            try:
                status, headers, raw = self._exchange(client, url, data, budget)
                if status in RETRY_AFTER_STATUS:
                    retry_after = headers.get("Retry-After")
            except (httpx.TimeoutException, DeadlinePassed):
                last = (f"timed out after {self.timeout:g} s ({shown})" if budget >= self.timeout else
                        f"timed out at the request's deadline ({shown})")
            except httpx.ConnectError as e:
                last = f"cannot reach {shown}: {e}"
            except httpx.RequestError as e:  # dropped connection, protocol or decoding error
                last = f"{type(e).__name__} from {shown}: {e}"
            finally:
                limit.release(sent, ok=status is not None and 200 <= status < 300,
                              overloaded=status in RETRY_AFTER_STATUS, retry_after=retry_after_seconds(retry_after))
            if status is not None:
                if 200 <= status < 300:
                    return self._parse(status, raw, shown)  # malformed JSON is not retried: it is the answer
                if 300 <= status < 400:
                    location = headers.get("Location") or "(no Location header)"
                    raise EndpointError(self._scrub(
                        f"HTTP {status} redirect from {shown} to {location}: not followed, since the POST would be "
                        f"resent as a GET or the key sent elsewhere; set base_url to the final address"))
                detail = self._scrub(raw.decode("utf-8", errors="replace"))  # before cutting: no half key survives
                last = f"HTTP {status} from {shown}: {detail[:DETAIL_CHARS]}"
                if status not in RETRY_STATUS:
                    raise EndpointError(self._scrub(last))
            if attempt < self.max_retries:
                pause = self._sleep_for(attempt, retry_after)
                if time.monotonic() + pause >= end:
                    out_of_time = True
                    break
                time.sleep(pause)
        within = f" within the request's deadline of {self.deadline:g} s" if out_of_time else ""
        raise EndpointError(self._scrub(f"gave up after {attempts} attempts{within}: {last}"))

    # -- protocol -----------------------------------------------------------------------------------
    def _one(self, request: Request, limit: AdaptiveLimit | None = None,
             client: httpx.Client | None = None) -> Generation:
        t0 = time.perf_counter()
        sizes: list[tuple[int, int]] = []
        try:
            messages, sizes = to_openai_messages(request, self.images.get)
            body = {"model": self.model, "messages": messages, **decoding_body(request.params), **self.extra_body}
            resp = self.post("chat/completions", body, limit=limit, client=client)
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

    def stream(self, requests: Sequence[Request], *,
               concurrency: int | None = None) -> Iterator[list[tuple[int, Generation]]]:
        """Answers as they arrive: lists of ``(index, generation)`` of what finished since the last yield.

        ``concurrency`` worker threads (default: the model's) each send a request, wait for its answer and
        take the next, so a slot is refilled the moment it frees up; an :class:`AdaptiveLimit` keeps the
        number actually on the wire at what the server accepts. Closing the iterator stops new sends (the
        requests already sent finish in the background and are dropped).
        """
        reqs = list(requests)
        if not reqs:
            return
        width = int(concurrency or self.concurrency)
        limit = AdaptiveLimit(width, max_pause=self.max_backoff)
        self.last_limit = limit
        todo: queue.SimpleQueue[int] = queue.SimpleQueue()
        for i in range(len(reqs)):
            todo.put(i)
        done: queue.SimpleQueue[tuple[int, Generation]] = queue.SimpleQueue()
        stop = threading.Event()

        def work() -> None:
            client = self._checkout()
            try:
                while not stop.is_set():
                    try:
                        i = todo.get_nowait()
                    except queue.Empty:
                        return
                    try:
                        g = self._one(reqs[i], limit, client)
                    except BaseException as e:  # noqa: BLE001 - _one records failures; the reader must not hang
                        g = Generation(request_id=reqs[i].id, error=self._scrub(f"{type(e).__name__}: {e}"),
                                       finish_reason="error")
                    done.put((i, g))
            finally:
                self._checkin(client)

        for n in range(min(width, len(reqs))):
            threading.Thread(target=work, daemon=True, name=f"vlamb-openai-{n}").start()
        left = len(reqs)
        try:
            while left:
                try:
                    first = done.get(timeout=0.5)  # a timeout keeps Ctrl-C responsive
                except queue.Empty:
                    continue
                batch = [first]
                while True:
                    try:
                        batch.append(done.get_nowait())
                    except queue.Empty:
                        break
                left -= len(batch)
                yield batch
        finally:
            stop.set()

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        """Up to ``concurrency`` requests in flight; each result is filed under the request it answers.

        Replies finish in any order, so each result carries its request's index and is checked against
        that request's id, rather than trusting the order in which results arrive.
        """
        reqs = list(requests)
        results: dict[int, Generation] = {}
        for finished in self.stream(reqs):
            results.update(finished)
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
        messages, _ = to_openai_messages(request, self.images.get)
        body = {"model": self.model, "messages": messages, "max_tokens": 1, "temperature": 0.0,
                "logprobs": True, "top_logprobs": 20, **self.extra_body}
        resp = self.post("chat/completions", body)
        choices = resp.get("choices") or [{}]
        content = (choices[0].get("logprobs") or {}).get("content") or []
        if not content:
            raise EndpointError("the endpoint returned no logprobs (does it support logprobs=True?)")
        top = {c["token"].strip(): c["logprob"] for c in content[0].get("top_logprobs", [])}
        return [top.get(opt.strip(), float("-inf")) for opt in options]
