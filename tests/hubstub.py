"""A local stand-in for the Hugging Face Hub, and a plain static-file server, for tests.

Why: downloads go through the real ``huggingface_hub`` client (and plain ``httpx`` for other files), and the
tests must exercise that client end to end (listing, ETags, LFS sha256, ranges, gated repos, broken
connections) without reaching the network. Both servers listen on 127.0.0.1 on a free port, in daemon
threads, and stop (bounded) when their ``with`` block or fixture ends.

What the stand-in hub answers (the calls ``huggingface_hub`` makes):

* ``GET /api/{models,datasets}/{repo_id}[/revision/{rev}][?blobs=true]``: revision info (``sha``,
  ``siblings`` with ``rfilename`` and, with ``blobs``, ``size``, ``blobId`` and ``lfs`` {sha256, size,
  pointerSize}).
* ``GET /api/{models,datasets}/{repo_id}/tree/{rev}[/{path}]?recursive=..&expand=..``: tree listing,
  paginated through a ``Link: <..>; rel="next"`` header (``hub.tree_page_size`` entries a page).
* ``HEAD``/``GET /[datasets/]{repo_id}/resolve/{rev}/{path}``: the file, with ``ETag``, ``X-Repo-Commit``,
  ``X-Linked-Etag``/``X-Linked-Size`` (LFS files), ``Content-Length``, ``Accept-Ranges`` and ``Range``
  (206 + ``Content-Range``). No Xet headers, so the client downloads over plain HTTP.
* Errors as the real hub marks them: ``X-Error-Code: RepoNotFound`` / ``RevisionNotFound`` /
  ``EntryNotFound`` (404) and ``GatedRepo`` (401 without a token, 403 with a wrong one).

Pointing ``huggingface_hub`` at it. The client reads its environment once, at import: ``HF_ENDPOINT``
becomes ``huggingface_hub.constants.ENDPOINT`` and ``HUGGINGFACE_CO_URL_TEMPLATE`` (used by
``hf_hub_url``), ``HF_HUB_OFFLINE`` becomes ``constants.HF_HUB_OFFLINE``, ``HF_HOME`` the cache and token
paths, and the module-level ``huggingface_hub.hf_api.api`` (behind ``huggingface_hub.dataset_info`` and the
other module-level functions) keeps the endpoint it saw at import. Setting ``os.environ`` in a running
process therefore changes nothing for an imported client. :func:`point_client_at` does both halves:

* in this process it monkeypatches those ``constants`` attributes and ``hf_api.api.endpoint``; an
  ``HfApi()`` built afterwards takes the new endpoint as its default (one built earlier keeps its own);
* it sets the environment variables (:func:`hub_env`) and removes the ones that would get in the way
  (``HF_HUB_OFFLINE``, ``HF_TOKEN``, ...), so a subprocess started later imports a client that already
  points at the stand-in.

monkeypatch undoes all of it after the test. Code that copied a constant at its own import (``from
huggingface_hub.constants import ENDPOINT``) does not follow; read ``constants.ENDPOINT`` at call time or
take an ``endpoint`` argument. The ``stand_in_hub`` and ``static_server`` fixtures are plain pytest
fixtures: a test module takes them with ``stand_in_hub = hubstub.stand_in_hub`` at module level (``from
hubstub import stand_in_hub`` works as well, but ruff then reports F811 on every test parameter).

Faults for tests: ``cut_after(path, n)`` sends the first ``n`` body bytes of the next GET and then closes
the connection cleanly (FIN), ``cut_after(path, n, reset=True)`` resets it (RST); ``corrupt(path, data)``
serves other bytes than the listing's sha256; ``answer(path, status, times, headers)`` answers the next GETs
with a status (a 503 with ``Retry-After``, a 429); ``stall_after(path, n, seconds)`` sends ``n`` body bytes and
then nothing for ``seconds``; ``endless(path)`` sends no length and never stops (a server that keeps sending);
``announce(path, length)`` sends a ``Content-Length`` of ``length`` (a 1 TB file) before the real bytes;
``requests`` records every (method, path, Range header). A repo published again under the same id is a new
commit: ``main`` moves to it and the earlier commits stay addressable by their sha, as on the hub.
Revisions that misbehave: ``substitute(repo, rev)`` answers a listing at ``rev`` with the newest commit (another
commit for a pinned one), ``answer_sha(repo, value)`` names ``value`` as the commit (``"main"``, None, markup),
``move_after_listing(repo, files)`` publishes ``files`` as a new commit right after the next listing at ``main``;
the static server's ``answers(path, *bodies)`` gives successive GETs successive bodies (GitHub's commits API for
a branch that moves).
What huggingface_hub 2.4 does with them: after a FIN it retries inside the same call (1 s pause, up to 5
times without progress) with ``Range: bytes=<written>-``, where ``<written>`` is a multiple of its 10 MiB
chunk size (so a smaller file restarts from 0); an RST raises ``httpx2.ReadError`` and the partial file
(``<etag>.<8 hex>.incomplete``, unique per call) is deleted, so the next call starts over. It checks the
byte count against ``X-Linked-Size``/``Content-Length`` but never the content against the sha256.
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
import os
import socket
import struct
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import parse_qs, quote, unquote, urlsplit

import pytest

DATE = "2024-01-01T00:00:00.000Z"
_UNSET = object()  # no fake commit sha is set for a repo
DEFAULT_TOKEN = "hf_standin0123456789abcdefABCDEF"
LFS_THRESHOLD = 100  # bytes: a file larger than this is stored as LFS (its listing carries a sha256)
JOIN_TIMEOUT = 2.0

# environment variables that would redirect, authenticate or switch off the client under test
CLEARED_ENV = (
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "HF_TOKEN_PATH",
    "HF_OIDC_RESOURCE",
    "HF_OIDC_ID_TOKEN",
    "HF_HUB_CACHE",
    "HUGGINGFACE_HUB_CACHE",
    "HF_ASSETS_CACHE",
    "HUGGINGFACE_ASSETS_CACHE",
    "HUGGINGFACE_CO_STAGING",
    "HF_HUB_ENABLE_HF_TRANSFER",
)

Seen = tuple[str, str, str | None]  # (method, unquoted path without query, Range header or None)
FaultKey = tuple[str | None, str]  # (repo_id or None for any repo, path)


# ---------------------------------------------------------------- repository content


def git_blob_oid(data: bytes) -> str:
    """The git object id of ``data`` as a blob: what the hub lists as ``oid``/``blobId``."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def lfs_pointer(sha256: str, size: int) -> bytes:
    """The git-lfs pointer file committed in place of a large file (its length is ``pointerSize``)."""
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()


@dataclass(frozen=True)
class HubFile:
    """One file of a repo, with the hashes the hub reports for it."""

    path: str
    data: bytes
    lfs: bool

    @property
    def size(self) -> int:
        return len(self.data)

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @cached_property
    def pointer(self) -> bytes:
        return lfs_pointer(self.sha256, self.size)

    @cached_property
    def oid(self) -> str:
        """Git blob id: of the pointer for LFS files, of the content otherwise."""
        return git_blob_oid(self.pointer if self.lfs else self.data)

    @property
    def etag(self) -> str:
        """What ``/resolve`` sends as (linked) ETag: the sha256 for LFS, the git blob id otherwise."""
        return self.sha256 if self.lfs else self.oid

    def lfs_info(self, sha_key: str) -> dict[str, Any]:
        return {sha_key: self.sha256, "size": self.size, "pointerSize": len(self.pointer)}


@dataclass
class HubRepo:
    """A repo at its newest commit (``main`` and the sha); ``older`` holds its earlier commits by sha."""

    repo_id: str
    repo_type: str
    files: dict[str, HubFile]
    sha: str
    gated: bool = False
    gate_metadata: bool = False
    older: dict[str, HubRepo] = field(default_factory=dict)
    hashes: bool = True  # False: the listing gives sizes but no blobId or LFS sha256 (a bare mirror's listing)

    def revision_ok(self, revision: str) -> bool:
        return self.at(revision) is not None

    def at(self, revision: str) -> HubRepo | None:
        """The repo as it was at ``revision`` (``main``, the newest sha, or an earlier commit's sha)."""
        if revision in ("main", self.sha):
            return self
        return self.older.get(revision)

    def dirs(self) -> set[str]:
        out: set[str] = set()
        for p in self.files:
            parts = p.split("/")[:-1]
            out.update("/".join(parts[: i + 1]) for i in range(len(parts)))
        return out


def commit_sha(repo_type: str, repo_id: str, files: Mapping[str, bytes]) -> str:
    """A deterministic 40-hex commit id: same content, same sha (so tests can pin it)."""
    h = hashlib.sha1(f"{repo_type}:{repo_id}".encode())
    for path in sorted(files):
        h.update(f"\0{path}\0{hashlib.sha256(files[path]).hexdigest()}".encode())
    return h.hexdigest()


# ---------------------------------------------------------------- shared server machinery


@dataclass
class _Cut:
    n_bytes: int
    reset: bool
    times: int


@dataclass
class _Fault:
    """A misbehaviour for the next ``times`` GETs of a path: ``status`` (an error answer), ``stall`` (``n_bytes``,
    then silence for ``seconds``), ``endless`` (no length, bytes forever), ``announce`` (a false length)."""

    kind: str
    times: int
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    n_bytes: int = 0
    seconds: float = 0.0
    length: int = 0


def parse_range(header: str, total: int) -> tuple[int, int] | None | str:
    """``(start, end)`` inclusive, ``None`` when unsatisfiable (416), ``"ignore"`` for forms not served."""
    unit, _, spec = header.partition("=")
    if unit.strip() != "bytes" or "," in spec:
        return "ignore"
    first, _, last = spec.strip().partition("-")
    try:
        if first == "":
            n = int(last)
            return (max(total - n, 0), total - 1) if n > 0 and total > 0 else None
        start = int(first)
        end = int(last) if last else total - 1
    except ValueError:
        return "ignore"
    if start >= total or end < start:
        return None
    return start, min(end, total - 1)


def header_safe(text: str) -> str:
    """``text`` as http.server can send it in a header (latin-1): non-ASCII becomes ``?``."""
    return text.encode("ascii", "replace").decode("ascii").replace('"', "'")


class _FileServer(ThreadingHTTPServer):
    """Threaded 127.0.0.1 server that records requests, tracks connections and injects file faults."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.lock = threading.Lock()
        self.requests: list[Seen] = []
        self._cuts: dict[FaultKey, _Cut] = {}
        self._corrupt: dict[FaultKey, bytes] = {}
        self._faults: dict[FaultKey, _Fault] = {}
        self._conns: dict[socket.socket, threading.Thread] = {}
        self._thread: threading.Thread | None = None
        self.stopping = threading.Event()  # set by stop(): a stalled answer ends at once

    @property
    def endpoint(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    # lifecycle -----------------------------------------------------------

    def start(self) -> Self:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=type(self).__name__,
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, drop open keep-alive connections, and wait (bounded) for the threads."""
        self.stopping.set()
        if self._thread is not None:
            self.shutdown()
            self._thread.join(JOIN_TIMEOUT)
            self._thread = None
        with self.lock:
            conns = list(self._conns.items())
        for sock, _ in conns:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for _, thread in conns:
            thread.join(JOIN_TIMEOUT)
        self.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # bookkeeping ------------------------------------------------------------

    def record(self, method: str, path: str, range_header: str | None) -> None:
        with self.lock:
            self.requests.append((method, path, range_header))

    def seen(self, method: str | None = None, path_suffix: str = "") -> list[Seen]:
        """Requests so far, optionally only one method and paths ending with ``path_suffix``."""
        with self.lock:
            return [
                r for r in self.requests if (method is None or r[0] == method) and r[1].endswith(path_suffix)
            ]

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (a reset, a stop) is no error of the stand-in: nothing printed."""
        import sys

        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)

    def wait_stopping(self, seconds: float) -> None:
        """Hold an answer for ``seconds`` (a stall), or until the server stops."""
        self.stopping.wait(seconds)

    # faults any file server offers --------------------------------------------

    def answer(self, path: str, status: int, *, times: int = 1, headers: Mapping[str, str] | None = None,
               repo_id: str | None = None) -> None:
        """Answer the next ``times`` GETs of ``path`` with ``status`` (and ``headers``, e.g. Retry-After)."""
        self._set_fault(self._key(path, repo_id), _Fault("status", times, status=status, headers=dict(headers or {})))

    def stall_after(self, path: str, n_bytes: int, seconds: float, *, times: int = 1,
                    repo_id: str | None = None) -> None:
        """Send ``n_bytes`` of the next ``times`` GETs of ``path``, then nothing for ``seconds``, then close."""
        self._set_fault(self._key(path, repo_id), _Fault("stall", times, n_bytes=n_bytes, seconds=seconds))

    def endless(self, path: str, *, times: int = 1, repo_id: str | None = None) -> None:
        """Answer the next GETs of ``path`` with a body that has no length and does not end."""
        self._set_fault(self._key(path, repo_id), _Fault("endless", times))

    def announce(self, path: str, length: int, *, times: int = 1, repo_id: str | None = None) -> None:
        """Send ``Content-Length: length`` with the next GETs of ``path`` (then the real bytes, and close)."""
        self._set_fault(self._key(path, repo_id), _Fault("announce", times, length=length))

    def _key(self, path: str, repo_id: str | None) -> FaultKey:
        return (repo_id, path)

    def _track(self, sock: socket.socket, add: bool) -> None:
        with self.lock:
            if add:
                self._conns[sock] = threading.current_thread()
            else:
                self._conns.pop(sock, None)

    # faults -----------------------------------------------------------------

    def _set_cut(self, key: FaultKey, n_bytes: int, reset: bool, times: int) -> None:
        with self.lock:
            self._cuts[key] = _Cut(n_bytes, reset, times)

    def _set_corrupt(self, key: FaultKey, data: bytes | None) -> None:
        with self.lock:
            if data is None:
                self._corrupt.pop(key, None)
            else:
                self._corrupt[key] = data

    def clear_faults(self) -> None:
        with self.lock:
            self._cuts.clear()
            self._corrupt.clear()
            self._faults.clear()

    def _set_fault(self, key: FaultKey, fault: _Fault) -> None:
        with self.lock:
            self._faults[key] = fault

    def _take_fault(self, keys: list[FaultKey]) -> _Fault | None:
        with self.lock:
            for key in keys:
                fault = self._faults.get(key)
                if fault is not None:
                    fault.times -= 1
                    if fault.times <= 0:
                        del self._faults[key]
                    return fault
        return None

    def _take_cut(self, keys: list[FaultKey]) -> _Cut | None:
        with self.lock:
            for key in keys:
                cut = self._cuts.get(key)
                if cut is not None:
                    cut.times -= 1
                    if cut.times <= 0:
                        del self._cuts[key]
                    return cut
        return None

    def _corrupted(self, keys: list[FaultKey]) -> bytes | None:
        with self.lock:
            for key in keys:
                if key in self._corrupt:
                    return self._corrupt[key]
        return None


class _Handler(BaseHTTPRequestHandler):
    """HTTP/1.1 keep-alive handler with JSON/error replies and ranged, fault-aware file sends."""

    server: _FileServer
    protocol_version = "HTTP/1.1"
    timeout = 10  # an idle keep-alive connection never holds a thread longer than this

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        self.server._track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server._track(self.connection, False)

    def _route(self) -> None:
        raise NotImplementedError

    def _serve(self) -> None:
        split = urlsplit(self.path)
        self.url_path = unquote(split.path)
        self.query = parse_qs(split.query)
        self.server.record(self.command, self.url_path, self.headers.get("Range"))
        try:
            self._route()
        except (BrokenPipeError, ConnectionResetError):  # the client went away mid-answer
            self.close_connection = True

    do_GET = do_HEAD = _serve  # noqa: N815 - http.server naming

    def reply(self, status: int, body: bytes, headers: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def reply_json(self, payload: Any, headers: Mapping[str, str] | None = None, status: int = 200) -> None:
        self.reply(
            status, json.dumps(payload).encode(), {"Content-Type": "application/json", **(headers or {})}
        )

    def error(
        self, status: int, code: str | None, message: str, headers: Mapping[str, str] | None = None
    ) -> None:
        extra = {"X-Error-Message": header_safe(message), **(headers or {})}
        if code:
            extra["X-Error-Code"] = code
        self.reply_json({"error": message}, extra, status)

    def send_file(self, data: bytes, keys: list[FaultKey], headers: Mapping[str, str]) -> None:
        """Send ``data`` (honouring ``Range``), cutting the connection if a fault is armed for ``keys``."""
        fault = self.server._take_fault(keys) if self.command == "GET" else None
        if fault is not None and fault.kind == "status":
            self.error(fault.status, None, f"stand-in answer {fault.status}", fault.headers)
            return
        if fault is not None and fault.kind == "endless":
            self._send_endless(headers)
            return
        total = len(data)
        start, end, status = 0, total - 1, 200
        range_header = self.headers.get("Range")
        if range_header:
            parsed = parse_range(range_header, total)
            if parsed is None:
                self.reply(416, b"", {**headers, "Content-Range": f"bytes */{total}"})
                return
            if isinstance(parsed, tuple):
                (start, end), status = parsed, 206
        body = data[start : end + 1]
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Accept-Ranges", "bytes")
        announced = fault.length if fault is not None and fault.kind == "announce" else len(body)
        self.send_header("Content-Length", str(announced))
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{total}")
        self.end_headers()
        if self.command == "HEAD":
            return
        if fault is not None and fault.kind == "announce":
            self.wfile.write(body)
            self.wfile.flush()
            self.close_connection = True
            return
        if fault is not None and fault.kind == "stall":
            self.wfile.write(body[: fault.n_bytes])
            self.wfile.flush()
            self.server.wait_stopping(fault.seconds)
            self.close_connection = True
            return
        cut = self.server._take_cut(keys)
        if cut is None:
            self.wfile.write(body)
            return
        self.wfile.write(body[: cut.n_bytes])
        self.wfile.flush()
        self._drop_connection(cut.reset)

    def _send_endless(self, headers: Mapping[str, str]) -> None:
        """A body without a length that never ends (until the client goes, or 1 GiB)."""
        self.send_response(200)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        block = b"\0" * 65536
        for _ in range(16384):
            if self.server.stopping.is_set():
                return
            self.wfile.write(block)

    def _drop_connection(self, reset: bool) -> None:
        """End the connection mid-body: FIN (graceful close) or, with ``reset``, an RST."""
        self.close_connection = True
        if not reset:
            return  # finish() + shutdown_request() send the FIN
        sock = self.connection
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.rfile.close()  # its makefile() reference would keep the descriptor open past close()
        sock.close()  # wfile writes straight to the socket: left open, its flush() stays a no-op


# ---------------------------------------------------------------- the hub


class _HubHandler(_Handler):
    server: StandInHub

    def _route(self) -> None:
        segs = [unquote(s) for s in urlsplit(self.path).path.split("/")[1:]]
        if segs and segs[-1] == "":
            segs.pop()
        if len(segs) >= 3 and segs[0] == "api" and segs[1] in ("models", "datasets", "spaces"):
            self._api(segs[1][:-1], segs[2:])
        elif len(segs) >= 2 and segs[0] in ("datasets", "spaces"):
            self._resolve(segs[0][:-1], segs[1:])
        elif segs:
            self._resolve("model", segs)
        else:
            self.error(404, None, "Not Found")

    def _find(self, repo_type: str, segs: list[str]) -> tuple[HubRepo | None, list[str]]:
        hub = self.server
        for n in (2, 1):
            repo = hub.repos.get((repo_type, "/".join(segs[:n])))
            if repo is not None and len(segs) >= n:
                return repo, segs[n:]
        return None, segs[2:]

    def _gate(self, repo: HubRepo) -> bool:
        """Refuse like the hub does for a gated repo without the right token; True when refused."""
        auth = self.headers.get("Authorization") or ""
        if auth == f"Bearer {self.server.token}":
            return False
        kind = repo.repo_type
        if not auth:
            msg = (
                f"Access to {kind} {repo.repo_id} is restricted. You must have access to it and be "
                "authenticated to access it. Please log in."
            )
            self.error(401, "GatedRepo", msg)
        else:
            msg = (
                f"Access to {kind} {repo.repo_id} is restricted and you are not in the authorized list. "
                f"Visit {self.server.endpoint}/{self.server.url_prefix(repo)}{repo.repo_id} "
                "to ask for access."
            )
            self.error(403, "GatedRepo", msg)
        return True

    def _repo_not_found(self) -> None:
        self.error(404, "RepoNotFound", "Repository not found")

    def _api(self, repo_type: str, segs: list[str]) -> None:
        repo, rest = self._find(repo_type, segs)
        if repo is None:
            self._repo_not_found()
            return
        if repo.gated and repo.gate_metadata and self._gate(repo):
            return
        if not rest:
            self._info(repo, "main")
        elif rest[0] == "revision" and len(rest) == 2:
            self._info(repo, rest[1])
        elif rest[0] == "tree" and len(rest) >= 2:
            self._tree(repo, rest[1], "/".join(rest[2:]))
        else:
            self.error(404, None, "Not Found")

    def _at(self, repo: HubRepo, revision: str) -> HubRepo | None:
        """The repo at ``revision``, or None after answering RevisionNotFound."""
        found = repo.at(revision)
        if found is None:
            self.error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        return found

    def _info(self, repo: HubRepo, revision: str) -> None:
        hub, key = self.server, (repo.repo_type, repo.repo_id)
        with hub.lock:
            substituted = hub.substitutes.get(key) == revision
            fake = hub.fake_shas.get(key, _UNSET)
            move = hub.moves.pop(key, None) if repo.at(revision) is repo and revision != repo.sha else None
        found = repo if substituted else self._at(repo, revision)  # substituted: the newest commit, not the asked one
        if found is None:
            return
        repo = found
        blobs = self.query.get("blobs", ["false"])[0].lower() == "true"
        siblings = []
        for f in sorted(repo.files.values(), key=lambda f: f.path):
            entry: dict[str, Any] = {"rfilename": f.path}
            if blobs:
                entry.update(size=f.size)
                if repo.hashes:
                    entry["blobId"] = f.oid
                if f.lfs and repo.hashes:
                    entry["lfs"] = f.lfs_info("sha256")
            siblings.append(entry)
        author = repo.repo_id.split("/")[0] if "/" in repo.repo_id else None
        self.reply_json(
            {
                "_id": repo.sha[:24],
                "id": repo.repo_id,
                "author": author,
                "sha": repo.sha if fake is _UNSET else fake,
                "lastModified": DATE,
                "createdAt": DATE,
                "private": False,
                "gated": "auto" if repo.gated else False,
                "disabled": False,
                "downloads": 0,
                "likes": 0,
                "tags": [],
                "siblings": siblings,
                "usedStorage": sum(f.size for f in repo.files.values()),
            }
        )
        if move is not None:  # the branch moves on right after this listing was answered
            hub.add_repo(repo.repo_id, move, repo_type=repo.repo_type)

    def _tree(self, repo: HubRepo, revision: str, path: str) -> None:
        found = self._at(repo, revision)
        if found is None:
            return
        repo = found
        recursive = self.query.get("recursive", ["false"])[0].lower() == "true"
        expand = self.query.get("expand", ["false"])[0].lower() == "true"
        prefix = f"{path}/" if path else ""
        dirs = repo.dirs()
        if path and path not in dirs:
            self.error(404, "EntryNotFound", f'{path} does not exist on "{revision}"')
            return

        def wanted(p: str) -> bool:
            return p.startswith(prefix) and (recursive or "/" not in p[len(prefix) :])

        commit = {"id": repo.sha, "title": "Stand-in commit", "date": DATE}
        entries: list[dict[str, Any]] = []
        for d in sorted(d for d in dirs if wanted(d)):
            entry: dict[str, Any] = {
                "type": "directory",
                "oid": hashlib.sha1(f"{repo.sha}:{d}".encode()).hexdigest(),
                "size": 0,
                "path": d,
            }
            if expand:
                entry["lastCommit"] = commit
            entries.append(entry)
        for f in sorted((f for f in repo.files.values() if wanted(f.path)), key=lambda f: f.path):
            entry = {"type": "file", "oid": f.oid, "size": f.size, "path": f.path}
            if f.lfs:
                entry["lfs"] = f.lfs_info("oid")
            if expand:
                entry["lastCommit"] = commit
                entry["securityFileStatus"] = {
                    "status": "safe",
                    "avScan": {"virusFound": False, "virusNames": None},
                    "pickleImportScan": None,
                }
            entries.append(entry)
        entries.sort(key=lambda e: e["path"])

        page_size = self.server.tree_page_size or (50 if expand else 1000)
        try:
            cursor = int(self.query.get("cursor", ["0"])[0])
        except ValueError:
            cursor = 0
        page = entries[cursor : cursor + page_size]
        headers: dict[str, str] = {}
        if cursor + page_size < len(entries):
            here = urlsplit(self.path).path
            nxt = (
                f"{self.server.endpoint}{here}?recursive={str(recursive).lower()}"
                f"&expand={str(expand).lower()}&cursor={cursor + page_size}"
            )
            headers["Link"] = f'<{nxt}>; rel="next"'
        self.reply_json(page, headers)

    def _resolve(self, repo_type: str, segs: list[str]) -> None:
        repo, rest = self._find(repo_type, segs)
        if repo is None:
            self._repo_not_found()
            return
        if len(rest) < 3 or rest[0] != "resolve":
            self.error(404, None, "Not Found")
            return
        if repo.gated and self._gate(repo):
            return
        revision, filename = rest[1], "/".join(rest[2:])
        found = self._at(repo, revision)
        if found is None:
            return
        repo = found
        f = repo.files.get(filename)
        if f is None:
            self.error(
                404,
                "EntryNotFound",
                f'{filename} does not exist on "{revision}"',
                {"X-Repo-Commit": repo.sha},
            )
            return
        keys: list[FaultKey] = [(repo.repo_id, filename), (None, filename)]
        corrupted = self.server._corrupted(keys)
        headers = {
            "Content-Type": mimetypes.guess_type(filename)[0] or "application/octet-stream",
            "ETag": f'"{f.etag}"',
            "X-Repo-Commit": repo.sha,
            "Content-Disposition": f'inline; filename="{header_safe(filename.rsplit("/", 1)[-1])}"',
        }
        if f.lfs:
            headers["X-Linked-Etag"] = f'"{f.sha256}"'
            headers["X-Linked-Size"] = str(f.size)
        self.send_file(f.data if corrupted is None else corrupted, keys, headers)


class StandInHub(_FileServer):
    """A Hugging Face Hub stand-in on 127.0.0.1: add repos, point the client at ``.endpoint``, download.

    ``token`` is the one token that opens gated repos; ``tree_page_size`` (None: 1000, or 50 with
    ``expand``, as on the hub) sets the tree listing page size, so pagination can be exercised.
    """

    def __init__(self, token: str = DEFAULT_TOKEN, lfs_threshold: int = LFS_THRESHOLD) -> None:
        super().__init__(_HubHandler)
        self.token = token
        self.lfs_threshold = lfs_threshold
        self.tree_page_size: int | None = None
        self.repos: dict[tuple[str, str], HubRepo] = {}
        self.substitutes: dict[tuple[str, str], str] = {}
        self.fake_shas: dict[tuple[str, str], Any] = {}
        self.moves: dict[tuple[str, str], Mapping[str, bytes]] = {}

    def add_repo(
        self,
        repo_id: str,
        files: Mapping[str, bytes],
        repo_type: str = "dataset",
        gated: bool = False,
        revision_sha: str | None = None,
        *,
        lfs: bool | None = None,
        gate_metadata: bool = False,
        hashes: bool = True,
    ) -> HubRepo:
        """Publish (or replace: a new commit) a repo. Returns it, with ``.sha`` and per-file hashes.

        ``lfs``: None stores files above ``lfs_threshold`` bytes as LFS, True all, False none.
        ``gated`` gates file downloads; the listing stays public as on the hub unless ``gate_metadata``.
        ``hashes=False`` lists no blobId or sha256 (sizes only).
        """
        if repo_type not in ("dataset", "model", "space"):
            raise ValueError(f"unknown repo_type {repo_type!r}")
        sha = revision_sha or commit_sha(repo_type, repo_id, files)
        if len(sha) != 40 or any(c not in "0123456789abcdef" for c in sha):
            raise ValueError(f"revision_sha must be 40 lowercase hex digits, not {sha!r}")
        hub_files = {
            p: HubFile(p, bytes(d), lfs=(len(d) > self.lfs_threshold) if lfs is None else lfs)
            for p, d in files.items()
        }
        with self.lock:
            before = self.repos.get((repo_type, repo_id))
            older = {} if before is None else {**before.older, before.sha: before}
            older.pop(sha, None)
            repo = HubRepo(repo_id, repo_type, hub_files, sha, gated=gated, gate_metadata=gate_metadata, older=older,
                           hashes=hashes)
            self.repos[(repo_type, repo_id)] = repo
        return repo

    def substitute(self, repo_id: str, revision: str, repo_type: str = "dataset") -> None:
        """Misbehave: a listing asked at ``revision`` (a pinned commit) answers the newest commit instead, its files
        and its sha, as a hub that serves another commit than the one asked for would."""
        with self.lock:
            self.substitutes[(repo_type, repo_id)] = revision

    def answer_sha(self, repo_id: str, sha: Any, repo_type: str = "dataset") -> None:
        """Misbehave: every listing of the repo names ``sha`` as its commit (any JSON value: ``"main"``, None,
        markup), whatever revision was asked."""
        with self.lock:
            self.fake_shas[(repo_type, repo_id)] = sha

    def move_after_listing(self, repo_id: str, files: Mapping[str, bytes], repo_type: str = "dataset") -> None:
        """Misbehave: right after the next listing asked at a moving name (``main``), ``files`` become a new commit,
        so a second listing at that name answers another commit."""
        with self.lock:
            self.moves[(repo_type, repo_id)] = dict(files)

    @staticmethod
    def url_prefix(repo: HubRepo) -> str:
        return {"dataset": "datasets/", "space": "spaces/"}.get(repo.repo_type, "")

    def resolve_path(
        self, repo_id: str, filename: str, repo_type: str = "dataset", revision: str = "main"
    ) -> str:
        """The (unquoted) path ``requests`` records for a download of ``filename``."""
        prefix = {"dataset": "datasets/", "space": "spaces/"}.get(repo_type, "")
        return f"/{prefix}{repo_id}/resolve/{revision}/{filename}"

    def file_requests(self, filename: str, method: str = "GET") -> list[Seen]:
        """``requests`` for ``/resolve/<any revision>/<filename>`` with ``method``."""
        return [
            r
            for r in self.seen(method)
            if "/resolve/" in r[1] and r[1].split("/resolve/", 1)[1].split("/", 1)[-1] == filename
        ]

    def cut_after(
        self, path: str, n_bytes: int, *, repo_id: str | None = None, reset: bool = False, times: int = 1
    ) -> None:
        """Make the next ``times`` GETs of file ``path`` (any repo unless ``repo_id``) stop after ``n_bytes``.

        Default: the connection is closed cleanly (FIN) after those bytes, as when a proxy or server dies;
        ``reset=True`` sends an RST instead, as when the connection is killed.
        """
        self._set_cut((repo_id, path), n_bytes, reset, times)

    def corrupt(self, path: str, data: bytes | None, *, repo_id: str | None = None) -> None:
        """Serve ``data`` for file ``path``; listings and ETags still describe the real file (None: undo)."""
        self._set_corrupt((repo_id, path), data)


# ---------------------------------------------------------------- the static server


class _StaticHandler(_Handler):
    server: StaticServer

    def _route(self) -> None:
        query = urlsplit(self.path).query
        with self.server.lock:
            path = f"{self.url_path}?{unquote(query)}" if query and f"{self.url_path}?{unquote(query)}" in \
                self.server.files else self.url_path
            data = self.server.files.get(path)
            later = self.server.sequences.get(path)
            if data is not None and later:  # misbehave: the next GET gets the next answer of the sequence
                self.server.files[path] = later.pop(0)
        if data is None:
            self.reply(404, b"Not Found", {"Content-Type": "text/plain"})
            return
        keys: list[FaultKey] = [(None, path), (None, self.url_path)]
        corrupted = self.server._corrupted(keys)
        headers = {
            "Content-Type": mimetypes.guess_type(self.url_path)[0] or "application/octet-stream",
            "ETag": f'"{hashlib.sha256(data).hexdigest()[:32]}"',
        }
        self.send_file(data if corrupted is None else corrupted, keys, headers)


class StaticServer(_FileServer):
    """Plain file server on 127.0.0.1: url path -> bytes, 404 otherwise, with Range and the same faults. A path
    registered with its query (``/api/x?ref=abc``) answers only that query; one without answers any."""

    def __init__(self, files: Mapping[str, bytes] | None = None) -> None:
        super().__init__(_StaticHandler)
        self.files: dict[str, bytes] = {}
        self.sequences: dict[str, list[bytes]] = {}
        for path, data in (files or {}).items():
            self.add(path, data)

    def add(self, path: str, data: bytes) -> str:
        """Serve ``data`` at ``path`` (leading slash optional); returns its URL."""
        path = "/" + path.lstrip("/")
        with self.lock:
            self.files[path] = bytes(data)
        return self.url(path)

    def answers(self, path: str, *bodies: bytes) -> None:
        """Misbehave: successive GETs of ``path`` answer ``bodies`` in turn, then the last one (a branch that moves
        between two calls of GitHub's commits API)."""
        path = "/" + path.lstrip("/")
        with self.lock:
            self.files[path] = bytes(bodies[0])
            self.sequences[path] = [bytes(b) for b in bodies[1:]]

    def url(self, path: str) -> str:
        path, sep, query = path.partition("?")
        return self.endpoint + quote("/" + path.lstrip("/")) + (f"?{query}" if sep else "")

    def _key(self, path: str, repo_id: str | None) -> FaultKey:
        return (None, "/" + path.lstrip("/"))

    def remove(self, path: str) -> None:
        """Stop serving ``path`` (it answers 404 from now on)."""
        with self.lock:
            self.files.pop("/" + path.lstrip("/"), None)

    def cut_after(self, path: str, n_bytes: int, *, reset: bool = False, times: int = 1) -> None:
        """Make the next ``times`` GETs of ``path`` stop after ``n_bytes`` body bytes (see StandInHub)."""
        self._set_cut((None, "/" + path.lstrip("/")), n_bytes, reset, times)

    def corrupt(self, path: str, data: bytes | None) -> None:
        """Serve ``data`` at ``path`` instead of the registered bytes (None: undo)."""
        self._set_corrupt((None, "/" + path.lstrip("/")), data)


# ---------------------------------------------------------------- pointing the client


def hub_env(endpoint: str, home: str | os.PathLike[str]) -> dict[str, str]:
    """Environment for a process whose huggingface_hub must use ``endpoint`` (and nothing else)."""
    return {
        "HF_ENDPOINT": endpoint,
        "HF_HOME": str(home),
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_XET": "1",
        "HF_HUB_DISABLE_UPDATE_CHECK": "1",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }


def point_client_at(monkeypatch: pytest.MonkeyPatch, endpoint: str, home: str | os.PathLike[str]) -> None:
    """Point huggingface_hub at ``endpoint`` for this process and for subprocesses started after this.

    The environment covers subprocesses; the ``constants`` attributes and the module-level ``HfApi``
    cover the client already imported here (it read its environment at import).
    """
    from huggingface_hub import constants, hf_api

    home = Path(home)
    home.mkdir(parents=True, exist_ok=True)
    for name in CLEARED_ENV:
        monkeypatch.delenv(name, raising=False)
    for name, value in hub_env(endpoint, home).items():
        monkeypatch.setenv(name, value)

    hub_cache, assets = str(home / "hub"), str(home / "assets")
    host = urlsplit(endpoint).hostname or "127.0.0.1"
    patched: dict[str, Any] = {
        "ENDPOINT": endpoint.rstrip("/"),
        "HUGGINGFACE_CO_URL_TEMPLATE": endpoint.rstrip("/") + "/{repo_id}/resolve/{revision}/{filename}",
        "HF_URL_HOSTS": frozenset(constants.HF_URL_HOSTS | {host}),
        "HF_HUB_OFFLINE": False,
        "HF_HUB_DISABLE_TELEMETRY": True,
        "HF_HUB_DISABLE_XET": True,
        "HF_HUB_DISABLE_UPDATE_CHECK": True,
        "HF_HOME": str(home),
        "default_cache_path": hub_cache,
        "default_assets_cache_path": assets,
        "HUGGINGFACE_HUB_CACHE": hub_cache,
        "HUGGINGFACE_ASSETS_CACHE": assets,
        "HF_HUB_CACHE": hub_cache,
        "HF_ASSETS_CACHE": assets,
        "HF_TOKEN_PATH": str(home / "token"),
        "HF_STORED_TOKENS_PATH": str(home / "stored_tokens"),
        "CHECK_FOR_UPDATE_DONE_PATH": str(home / ".check_for_update_done"),
        "AGENT_HARNESSES_PATH": str(home / ".agent_harnesses.json"),
    }
    for name, value in patched.items():
        if hasattr(constants, name):
            monkeypatch.setattr(constants, name, value)
    monkeypatch.setattr(hf_api.api, "endpoint", endpoint.rstrip("/"))


def _close_client_session() -> None:
    """Drop the client's pooled keep-alive connections, so none outlives the server they went to."""
    from huggingface_hub import close_session

    close_session()


# ---------------------------------------------------------------- fixtures


@pytest.fixture
def stand_in_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[StandInHub]:
    """A started :class:`StandInHub`, with huggingface_hub (here and in subprocesses) pointed at it.

    ``HF_HOME`` is ``tmp_path / "hf-home"``; no token is configured, telemetry and Xet are off and offline
    mode is lifted. The server and the client's connections are closed after the test.
    """
    with StandInHub() as hub:
        point_client_at(monkeypatch, hub.endpoint, tmp_path / "hf-home")
        _close_client_session()
        try:
            yield hub
        finally:
            _close_client_session()


@pytest.fixture
def static_server() -> Iterator[StaticServer]:
    """A started, empty :class:`StaticServer` (``.add(path, data)`` returns the URL), stopped after it."""
    with StaticServer() as server:
        yield server
