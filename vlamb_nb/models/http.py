"""HTTP robustness for a model served behind an endpoint, apart from any one API's wire format.

- secrets: :func:`scrub` masks API keys and secret-looking query values in every message, and
  :class:`ScrubSecretsFilter` does the same in httpx/httpcore debug logs; :func:`split_base_url` keeps an
  address's query parameters to send while showing them masked, and refuses ``user:password@``;
- a total deadline per request: httpx's timeouts bound each socket operation, so
  :func:`deadline_transport` holds every socket operation to the time left before the request's deadline
  (:data:`request_deadline`);
- ``Retry-After`` (:func:`retry_after_seconds`), the statuses worth a retry, and :class:`AdaptiveLimit`, the number
  of requests in flight adapted to the server (additive increase, multiplicative decrease).

:mod:`vlamb_nb.models.openai_compat` speaks the OpenAI chat format over these.
"""

from __future__ import annotations

import email.utils
import logging
import math
import os
import re
import threading
import time
import urllib.parse
import urllib.request
from datetime import UTC, datetime
from typing import Any

import httpcore  # httpx's own transport layer (a dependency of httpx); used for the deadline hook only
import httpx

from vlamb_nb.errors import SettingError

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
RETRY_AFTER_STATUS = frozenset({429, 503})
DETAIL_CHARS = 300  # of an error reply's body kept in the message


class EndpointError(RuntimeError):
    """A request that failed for good (after retries, or with a non-retryable status)."""


# -- secrets ----------------------------------------------------------------------------------------
KEY_ENVS: set[str] = {"OPENAI_API_KEY"}  # variables whose values are scrubbed from errors and logs
URL_SECRETS: set[str] = set()  # secret query values of the base URLs in use, scrubbed the same way
_BEARER = re.compile(r"(?i)\bbearer\s+[^\s'\",;)\]}]+")
#: query parameter names whose values are treated as secrets (api_key, key, token, sig, ...)
_SECRET_NAMES = r"key|token|secret|passw|pwd|sig|auth|credential|sess"
SECRET_PARAM = re.compile(_SECRET_NAMES, re.IGNORECASE)
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@?#]*@")
_URL_SECRET_QUERY = re.compile(r"([?&;][^=&\s?#]*(?:" + _SECRET_NAMES + r")[^=&\s?#]*=)[^&\s'\"#<>]+",
                               re.IGNORECASE)


def scrub(text: str, *secrets: str | None) -> str:
    """``text`` with the given secrets, any bearer token and any credential inside a URL (``user:pass@``,
    ``?api_key=...``) masked: errors end up in result files and logs."""
    for s in (*secrets, *tuple(URL_SECRETS)):
        if s:
            text = text.replace(s, "***")
    text = _URL_USERINFO.sub(r"\1***@", text)
    text = _URL_SECRET_QUERY.sub(r"\1***", text)
    return _BEARER.sub("Bearer ***", text)


def known_keys() -> list[str]:
    return [v for name in tuple(KEY_ENVS) if (v := os.environ.get(name))]


def redact_url(url: str) -> str:
    """``url`` as it may be shown and stored: ``user:pass@`` and secret-looking query values masked."""
    return scrub(str(url))


def split_base_url(url: str) -> tuple[str, list[tuple[str, str]], str]:
    """``(base, query, shown)``: the address requests go to (no query, no trailing slash), the query
    parameters sent with every request, and the address as shown and stored (:func:`redact_url`).

    An address with a ``user:password@`` part is refused: the message shows it masked.
    """
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SettingError(f"base_url must be an http(s) URL with a host, got {redact_url(url)!r}")
    if "@" in parts.netloc:
        raise SettingError(f"base_url {redact_url(url)!r} carries credentials (user:password@host); they would be "
                           "printed and stored with every error. Put the key in an environment variable and name "
                           "it with api_key_env (sent as a bearer token), and give the address without them")
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    base = urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))
    shown = base + ("?" + urllib.parse.urlencode([(k, "***" if SECRET_PARAM.search(k) else v) for k, v in query],
                                                 safe="*") if query else "")
    return base, query, shown


class ScrubSecretsFilter(logging.Filter):
    """Masks keys and bearer tokens in httpx/httpcore records (at DEBUG httpcore logs raw header lists)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            msg = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken record is logging's problem, not ours
            return True
        clean = scrub(msg, *known_keys())
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
request_deadline = threading.local()


def _time_left(timeout: float | None, expired: type[Exception]) -> float | None:
    at = getattr(request_deadline, "at", None)
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


_ssl_lock = threading.Lock()
_ssl_context: Any = None


def _shared_ssl_context() -> Any:
    """One verifying SSL context per process: building one loads the CA bundle (a large share of a CPU
    second per hundred), and every worker's client needs one."""
    global _ssl_context
    with _ssl_lock:
        if _ssl_context is None:
            _ssl_context = httpx.create_ssl_context(trust_env=True)
        return _ssl_context


def deadline_transport(base_url: str, limits: httpx.Limits | None = None) -> httpx.HTTPTransport:
    """httpx's transport, through the proxy urllib would use for ``base_url``, its sockets held to the deadline.

    The client is given this transport explicitly (so it ignores proxy variables itself); the proxy is
    therefore chosen here, with the same rules as the urllib code this replaced.
    """
    parts = urllib.parse.urlsplit(base_url)
    proxy = urllib.request.getproxies().get(parts.scheme)
    if proxy and parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        proxy = None
    transport = httpx.HTTPTransport(verify=_shared_ssl_context(), proxy=proxy, trust_env=True,
                                   **({"limits": limits} if limits else {}))
    pool = getattr(transport, "_pool", None)  # httpx exposes no hook for the network backend
    if pool is not None and isinstance(getattr(pool, "_network_backend", None), httpcore.NetworkBackend):
        pool._network_backend = _DeadlineBackend(pool._network_backend)
    # otherwise (a future httpx) the body is still read against the deadline in ``_exchange``
    return transport


class DeadlinePassed(Exception):
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


# -- how many requests in flight ----------------------------------------------------------------------
class AdaptiveLimit:
    """At most ``limit`` requests in flight, adapted to the server (additive increase, multiplicative decrease).

    An overload answer (429, 503) halves the limit, once per round trip: answers to requests sent before
    the last cut are the same congestion and cut nothing more. Its ``Retry-After`` (capped by ``max_pause``)
    pauses every new send. Each success raises the limit by ``1 / limit``, so about one more request per
    round trip, back up to ``maximum``. ``peak`` is the most requests ever in flight at once.
    """

    def __init__(self, maximum: int, *, max_pause: float = 60.0) -> None:
        if maximum < 1:
            raise SettingError(f"concurrency must be >= 1, got {maximum}")
        self.maximum = int(maximum)
        self.limit = float(maximum)
        self.max_pause = max_pause
        self.active = self.peak = self.cuts = 0
        self._resume_at = 0.0
        self._cut_at = float("-inf")
        self._cond = threading.Condition()

    @property
    def allowed(self) -> int:
        return max(1, int(self.limit))

    def acquire(self) -> float:
        """Wait for a free slot (and for any Retry-After pause to end); return the send time."""
        with self._cond:
            while True:
                now = time.monotonic()
                if now >= self._resume_at and self.active < self.allowed:
                    break
                self._cond.wait(timeout=max(self._resume_at - now, 0.0) or None)
            self.active += 1
            self.peak = max(self.peak, self.active)
            return now

    def release(self, sent: float, *, ok: bool = False, overloaded: bool = False,
                retry_after: float | None = None) -> None:
        """Free the slot of a request sent at ``sent``; ``ok`` grows the limit, ``overloaded`` cuts it."""
        with self._cond:
            self.active -= 1
            now = time.monotonic()
            if overloaded:
                if sent >= self._cut_at:
                    self.limit = max(1.0, self.limit / 2)
                    self._cut_at = now
                    self.cuts += 1
                if retry_after:
                    self._resume_at = max(self._resume_at, now + min(retry_after, self.max_pause))
            elif ok:
                self.limit = min(float(self.maximum), self.limit + 1.0 / self.limit)
            self._cond.notify_all()
