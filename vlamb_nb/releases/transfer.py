"""Downloads that a misbehaving server, a slow link or a full disk cannot turn into damage or a traceback.

Every byte of a release goes through :meth:`Transfer.get`:

- the size is known before the body (the listing's or the pinned size, else a cap): a ``Content-Length`` above it,
  or above the free disk space, is refused before a byte is written, and a body that keeps sending is cut there;
- 5xx, 429 and 408 are retried with exponential backoff, honouring ``Retry-After`` (capped);
- a body cut short is resumed with ``Range`` from the bytes already written; a body that sends nothing for
  ``stall`` seconds is a stall, retried, then reported as timed out;
- a stop event (Ctrl-C) is checked between chunks, and worker threads are daemons, so one Ctrl-C stops a fetch
  within two seconds and the partial files stay for the next fetch to resume;
- a failure is one line (:class:`Failure`) naming its class — disk full, read-only, timed out, refused, network,
  HTTP status, too large, not an image — with every URL shown through the HTTP client's secret scrubber.

``$VLAMB_MIRRORS`` rewrites URLs for a local mirror (:func:`mirrored`).
"""

from __future__ import annotations

import errno
import hashlib
import os
import queue
import re
import shutil
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlamb_nb.errors import FetchError, SettingError

MIRRORS_ENV = "VLAMB_MIRRORS"
CHUNK = 1 << 16
STALL_S = 30.0  # no byte for this long: a stalled body
CONNECT_S = 15.0
TRIES = 5  # attempts without progress before a file is given up
CONNECT_TRIES = 2  # a host that refuses or cannot be resolved is tried again once
BACKOFF_S = 1.0  # first pause; doubled on each attempt without progress
MAX_PAUSE_S = 60.0  # the longest pause, Retry-After included
LISTING_LIMIT = 20_000_000  # a listing (JSON) larger than this is refused
RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})


def scrubbed(text: str) -> str:
    """``text`` with credentials masked (the OpenAI client's scrubber: ``user:pass@``, tokens, secret queries)."""
    from vlamb_nb.models.http import scrub

    return scrub(str(text), os.environ.get("HF_TOKEN"), os.environ.get("GITHUB_TOKEN"))


def mirror_rules() -> list[tuple[str, str]]:
    """``$VLAMB_MIRRORS`` as ``(prefix, replacement)`` pairs; a rule without ``=``, or one that rewrites to anything
    but an http(s) URL (an ftp URL, a bare host), is an error naming the variable before anything is fetched."""
    rules = []
    for rule in (os.environ.get(MIRRORS_ENV) or "").split():
        prefix, sep, repl = rule.partition("=")
        if not sep or not prefix or not repl:
            raise SettingError(f"${MIRRORS_ENV}: the rule {scrubbed(rule)!r} is not PREFIX=REPLACEMENT (or "
                               "*=URL/ for every URL)")
        if not re.match(r"https?://[^/\s]+", repl, flags=re.IGNORECASE):
            raise SettingError(f"${MIRRORS_ENV}: the rule {scrubbed(rule)!r} rewrites to {scrubbed(repl)!r}, not an "
                               "http:// or https:// URL (the only kinds a fetch can read)")
        rules.append((prefix, repl))
    return rules


def mirrored(url: str) -> str:
    """``url`` rewritten by ``$VLAMB_MIRRORS`` (unchanged when no rule matches)."""
    for prefix, repl in mirror_rules():
        if prefix == "*":
            return repl.rstrip("/") + "/" + re.sub(r"^[a-z]+://", "", url)
        if url.startswith(prefix):
            return repl + url[len(prefix):]
    return url


def mirror_note(url: str) -> str:
    """`` (the mirror of the $VLAMB_MIRRORS rule '...')`` when ``url`` lies on a mirror a rule names, else empty: a mirror
    that cannot be reached is then named as the setting to fix, not mistaken for the release's own server."""
    host = host_of(url).lower()
    for prefix, repl in mirror_rules():
        if host_of(repl).lower() == host:
            return f" (the mirror of the ${MIRRORS_ENV} rule {scrubbed(prefix + '=' + repl)!r})"
    return ""


def host_of(url: str) -> str:
    return scrubbed(re.sub(r"^([a-z]+://[^/]+).*$", r"\1", url))


# -- failures ----------------------------------------------------------------------------------------
class Failure(FetchError):
    """One file (or listing) that could not be had: ``kind`` is its class, the message one line."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(scrubbed(message))
        self.kind = kind


class Stopped(FetchError):
    """The fetch was asked to stop (Ctrl-C); what was written stays for the next fetch to resume."""


def os_failure(err: OSError, where: str) -> Failure:
    """A write that failed, by its class: disk full, read-only, permission denied."""
    kind = {errno.ENOSPC: "disk full", errno.EDQUOT: "disk full", errno.EROFS: "read-only",
            errno.EACCES: "permission denied", errno.EPERM: "permission denied"}.get(err.errno or 0, "disk error")
    advice = {"disk full": "free some space and fetch again (the download resumes)",
              "read-only": "the data home cannot be written; set $VLAMB_DATA to a writable folder",
              "permission denied": "the data home cannot be written; set $VLAMB_DATA to a writable folder"}
    return Failure(kind, f"{kind}: {err.strerror or err} writing {where}; {advice.get(kind, 'fetch again')}")


# -- one download --------------------------------------------------------------------------------------
@dataclass
class Want:
    """What to GET: its URL, the name messages use, its size when listed or pinned, the most bytes allowed."""

    url: str
    name: str
    size: int | None
    limit: int
    headers: dict[str, str] = field(default_factory=dict)


class _Retry(Exception):
    def __init__(self, failure: Failure, *, progress: bool, pause: float | None = None,
                 connect: bool = False) -> None:
        super().__init__(str(failure))
        self.failure, self.progress, self.pause, self.connect = failure, progress, pause, connect


class Transfer:
    """One HTTP client for a fetch: every GET retried, resumed, bounded and stoppable as the module says."""

    def __init__(self, stop: threading.Event, *, stall: float | None = None, tries: int | None = None,
                 backoff: float | None = None, concurrency: int = 8) -> None:
        import httpx

        self.stop = stop
        self.stall = STALL_S if stall is None else float(stall)
        self.tries = TRIES if tries is None else max(1, int(tries))
        self.backoff = BACKOFF_S if backoff is None else float(backoff)
        self.client = httpx.Client(follow_redirects=True, limits=httpx.Limits(max_connections=max(1, concurrency)),
                                   timeout=httpx.Timeout(self.stall, connect=min(CONNECT_S, max(self.stall, 1.0))))

    def close(self) -> None:
        self.client.close()

    def pause(self, seconds: float) -> None:
        """Sleep ``seconds``, waking at once when the fetch is stopped."""
        if self.stop.wait(max(0.0, seconds)):
            raise Stopped("stopped")

    def check_stop(self) -> None:
        if self.stop.is_set():
            raise Stopped("stopped")

    def _loop(self, attempt: Callable[[], Any], what: str) -> Any:
        """``attempt()`` until it returns, retrying what :class:`_Retry` says is worth another try."""
        no_progress = connects = 0
        while True:
            self.check_stop()
            try:
                return attempt()
            except _Retry as r:
                if r.connect:
                    connects += 1
                    if connects >= min(CONNECT_TRIES, self.tries):
                        raise r.failure from None
                no_progress = 0 if r.progress else no_progress + 1
                if no_progress >= self.tries:
                    tries = f" after {self.tries} tries" if self.tries > 1 else ""
                    raise Failure(r.failure.kind, f"{r.failure}{tries}") from None
                wait = r.pause if r.pause is not None else self.backoff * 2 ** max(0, no_progress - 1)
                self.pause(min(wait, MAX_PAUSE_S))

    def _transport_retry(self, err: Exception, url: str, *, got: int, progress: bool) -> _Retry:
        import httpx

        where = host_of(url)
        if isinstance(err, httpx.ConnectTimeout):
            return _Retry(Failure("timed out", f"timed out connecting to {where}{mirror_note(url)}"), progress=False,
                          connect=True)
        if isinstance(err, httpx.TimeoutException):
            return _Retry(Failure("timed out", f"timed out: {where} sent nothing for {self.stall:g} s (stalled) "
                                               f"after {got:,} bytes"), progress=progress)
        if isinstance(err, httpx.ConnectError):
            refused = "refused" in str(err).lower() or isinstance(err.__context__, ConnectionRefusedError)
            kind = "refused" if refused else "network"
            return _Retry(Failure(kind, f"cannot reach {where}{mirror_note(url)} "
                                        f"({'connection refused' if refused else 'network'}: {_first_line(err)})"),
                          progress=False, connect=True)
        return _Retry(Failure("network", f"the connection to {where} broke after {got:,} bytes "
                                         f"({type(err).__name__}: {_first_line(err)})"), progress=progress)

    def _status(self, resp: Any, url: str) -> None:
        """Raise for an answer that is not a body: retry what is worth it, fail the rest in one line."""
        from vlamb_nb.models.http import retry_after_seconds

        code = resp.status_code
        if code < 400:
            return
        reason = f"HTTP {code} {resp.reason_phrase}".strip()
        if code in (401, 403) and resp.headers.get("X-Error-Code") == "GatedRepo":
            raise Failure("gated", f"{reason} from {scrubbed(url)}: a gated repository")
        if code in RETRY_STATUS:
            raise _Retry(Failure(f"HTTP {code}", f"{reason} from {scrubbed(url)}"), progress=False,
                         pause=retry_after_seconds(resp.headers.get("Retry-After")))
        hint = ""
        if code == 403 and resp.headers.get("X-RateLimit-Remaining") == "0":
            hint = " (GitHub's rate limit: set GITHUB_TOKEN, or wait an hour)"
        raise Failure(f"HTTP {code}", f"{reason} from {scrubbed(url)}{hint}")

    def get(self, want: Want, staged: Path) -> str:
        """Download ``want`` into ``staged`` (resuming what is there); returns the sha256 of what it holds, hashed
        as the bytes arrive (a resumed file's first part once, from the disk), so no file is read twice."""
        try:
            staged.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise os_failure(e, str(staged.parent)) from None
        return self._loop(lambda: self._attempt(want, staged), want.name)

    def _attempt(self, want: Want, staged: Path) -> str:
        import httpx

        limit = want.size if want.size is not None else want.limit
        have = staged.stat().st_size if staged.is_file() else 0
        if have > limit:
            staged.unlink()
            have = 0
        if want.size is not None and 0 < have == want.size:
            return _sha256_of(staged)
        headers = {**want.headers, "Accept-Encoding": "identity"}
        if have:
            headers["Range"] = f"bytes={have}-"
        got = have
        try:
            with self.client.stream("GET", want.url, headers=headers) as resp:
                if resp.status_code == 416 and have:
                    total = _total_of(resp.headers.get("Content-Range"))
                    if total == have and (want.size is None or want.size == have):
                        return _sha256_of(staged)  # what is here is already whole
                    staged.unlink()
                    raise _Retry(Failure("HTTP 416", f"{want.name}: the server refused to resume"), progress=True,
                                 pause=0.0)
                self._status(resp, want.url)
                mode = "ab"
                if resp.status_code != 206 or _start_of(resp.headers.get("Content-Range")) != have:
                    have = got = 0  # the server sent the whole file (or another range): start again
                    mode = "wb"
                length = _int(resp.headers.get("Content-Length"))
                total = have + length if length is not None else None
                if total is not None and total > limit:
                    staged.unlink(missing_ok=True)
                    listed = "listed" if want.size is not None else "allowed"
                    raise Failure("too large", f"{want.name}: {host_of(want.url)} announces {total:,} bytes, more "
                                               f"than the {limit:,} {listed}; refused before downloading")
                if length:
                    free = shutil.disk_usage(staged.parent).free
                    if length > free:
                        raise Failure("disk full", f"disk full: {want.name} needs {length:,} bytes and "
                                                   f"{free:,} are free in {staged.parent}; free some space and "
                                                   "fetch again")
                digest = hashlib.sha256()
                if mode == "ab":
                    digest = _sha256_of(staged, digest=True)
                try:
                    with open(staged, mode) as fh:
                        for block in resp.iter_bytes():  # as the bytes arrive: a stop keeps all of them
                            if self.stop.is_set():
                                raise Stopped("stopped")
                            if got + len(block) > limit:
                                fh.truncate(0)
                                raise Failure("too large", f"{want.name}: {host_of(want.url)} sent more than the "
                                                           f"{limit:,} bytes {'listed' if want.size else 'allowed'}"
                                                           "; stopped there and refused")
                            fh.write(block)
                            digest.update(block)
                            got += len(block)
                except OSError as e:
                    raise os_failure(e, str(staged)) from None
        except (Failure, Stopped, _Retry):
            raise
        except httpx.HTTPError as e:
            raise self._transport_retry(e, want.url, got=got, progress=got > have) from None
        if want.size is not None and got < want.size:  # the server closed early without saying how long
            raise _Retry(Failure("network", f"{want.name}: the body ended after {got:,} of {want.size:,} bytes"),
                         progress=got > have)
        return digest.hexdigest()

    def json(self, url: str, *, headers: dict[str, str] | None = None, name: str = "listing") -> Any:
        """A small JSON document (a listing), with the same retries and a size limit."""
        import json

        import httpx

        def attempt() -> Any:
            body = bytearray()
            try:
                with self.client.stream("GET", url, headers={**(headers or {}), "Accept-Encoding": "identity"}) \
                        as resp:
                    self._status(resp, url)
                    for block in resp.iter_bytes(CHUNK):
                        self.check_stop()
                        body += block
                        if len(body) > LISTING_LIMIT:
                            raise Failure("too large", f"{name}: more than {LISTING_LIMIT:,} bytes; refused")
            except (Failure, Stopped, _Retry):
                raise
            except httpx.HTTPError as e:
                raise self._transport_retry(e, url, got=len(body), progress=False) from None
            try:
                return json.loads(bytes(body))
            except ValueError:
                raise Failure("not JSON", f"{name}: {scrubbed(url)} did not answer JSON") from None

        return self._loop(attempt, name)


def _sha256_of(path: Path, *, digest: bool = False) -> Any:
    """The sha256 of a file (the hex digest, or with ``digest`` the hash object, to go on with)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h if digest else h.hexdigest()


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _start_of(content_range: str | None) -> int | None:
    m = re.match(r"bytes (\d+)-\d+/", content_range or "")
    return int(m.group(1)) if m else None


def _total_of(content_range: str | None) -> int | None:
    m = re.search(r"/(\d+)$", content_range or "")
    return int(m.group(1)) if m else None


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return scrubbed(text[0][:200] if text else type(err).__name__)


# -- images count only when they decode ----------------------------------------------------------------
def image_problem(path: Path) -> str | None:
    """Why ``path`` is not an image (0 bytes, an HTML page, undecodable), or None."""
    size = path.stat().st_size
    if size == 0:
        return "0 bytes, not an image"
    with open(path, "rb") as fh:
        head = fh.read(512).lstrip().lower()
    if head.startswith((b"<!doctype", b"<html", b"<?xml", b"<head", b"<body")):
        return "an HTML page, not an image"
    from PIL import Image

    try:
        with Image.open(path) as img:
            img.verify()
    except Exception as e:  # noqa: BLE001 - PIL raises many types for bytes that are not an image
        return f"not a decodable image ({type(e).__name__})"
    return None


# -- threads that a Ctrl-C can leave ---------------------------------------------------------------------
def run_jobs(jobs: Iterable[Any], fn: Callable[[Any], None], *, concurrency: int,
             stop: threading.Event) -> list[tuple[Any, BaseException]]:
    """``fn(job)`` for every job on up to ``concurrency`` daemon threads; errors are returned with their job.

    The calling thread waits in short steps, so a Ctrl-C reaches it at once: it sets ``stop`` (the workers check
    it between chunks), gives them a second to notice, and raises; a worker still blocked in a read is a daemon
    and cannot hold the process."""
    todo: queue.Queue[Any] = queue.Queue()
    jobs = list(jobs)
    for j in jobs:
        todo.put(j)
    errors: list[tuple[Any, BaseException]] = []
    lock = threading.Lock()

    def worker() -> None:
        while not stop.is_set():
            try:
                job = todo.get_nowait()
            except queue.Empty:
                return
            try:
                fn(job)
            except BaseException as e:  # noqa: BLE001 - every error is returned to the caller with its job
                with lock:
                    errors.append((job, e))

    threads = [threading.Thread(target=worker, daemon=True, name=f"vlamb-fetch-{i}")
               for i in range(min(max(1, concurrency), len(jobs)))]
    for t in threads:
        t.start()
    try:
        while alive := [t for t in threads if t.is_alive()]:
            alive[0].join(0.1)
    except KeyboardInterrupt:
        stop.set()
        deadline = time.monotonic() + 1.0
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        raise
    return errors
