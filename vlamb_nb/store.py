"""Append-only JSONL prediction store: crash-safe, resumable, one writer at a time.

Every record is one JSON line, flushed and fsync'ed by :meth:`PredictionStore.append` (or, for several
records that arrived together, by one :meth:`PredictionStore.append_many`) before it returns, so a crash
(even SIGKILL) loses only what was not yet appended. The runner appends each answer as soon as it
arrives (a local model's answers when its batch returns, a remote endpoint's one by one), so a crash loses
at most the requests in flight (a batch, or the endpoint's open requests), never a finished answer; a rerun
skips what was stored and asks only the rest. Appends are serialised by a lock, so worker threads may hand
records to one store.
A torn last line (the process died mid-write) is detected on open, reported with a warning and
cut off; a last record that is whole but lacks its newline is kept, and the newline is added
when the store is next opened for writing. A damaged line anywhere else is an error, because
silently dropping it would lose data. A second writer on the same file is refused through an
``flock`` on ``<real path>.lock`` (symlinks resolved, so two names for one file share one lock),
which the kernel releases when the owning process dies, so a crash never leaves a stale lock.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlamb_nb.errors import StoreError
from vlamb_nb.hashing import canonical_json, digest

KEY_FIELDS = ("model_id", "revision", "quantization", "benchmark", "setting", "prompt", "image_digests", "params",
              "endpoint")


class TornLineWarning(UserWarning):
    """The last line of a store was incomplete (a crash mid-write) and was dropped."""


def request_key(*, model_id: str, revision: str | None, quantization: str | None, benchmark: str, setting: str,
                prompt: Any, image_digests: Iterable[str], params: dict[str, Any], endpoint: str | None = None) -> str:
    """Hash of everything that determines a model output; stable across processes and machines.

    ``endpoint`` (a remote model's address, credentials stripped) is hashed only when given, so the keys of
    local models stay what they were."""
    fields: dict[str, Any] = {
        "model_id": model_id,
        "revision": revision,
        "quantization": quantization,
        "benchmark": benchmark,
        "setting": setting,
        "prompt": prompt,
        "image_digests": list(image_digests),
        "params": params,
    }
    if endpoint is not None:
        fields["endpoint"] = endpoint
    return digest(fields)


def _parse_record(raw: bytes) -> dict[str, Any]:
    rec = json.loads(raw)
    if not isinstance(rec, dict) or "key" not in rec:
        raise ValueError("not a record with a 'key'")
    return rec


@dataclass
class _Scan:
    """What reading a store file found, and what opening it for writing must repair."""

    records: list[dict[str, Any]]
    good_end: int  # byte offset just past the last complete record (its newline included, if present)
    torn: bytes = b""  # an unparseable last line, dropped (an interrupted write)
    needs_newline: bool = False  # the last record is complete but its newline never reached the disk


def _scan(path: Path) -> _Scan:
    """Read records; a damaged line is an error unless it is the last one, which may be a torn write."""
    if not path.exists():
        return _Scan([], 0)
    data = path.read_bytes()
    records: list[dict[str, Any]] = []
    lines = data.split(b"\n")
    # the piece after the final newline is empty for a clean file, else a last line without its newline
    complete, tail = lines[:-1], lines[-1]
    offset = good_end = 0
    for i, raw in enumerate(complete, start=1):
        end = offset + len(raw) + 1
        if raw.strip():
            try:
                rec = _parse_record(raw)
            except ValueError as e:
                if i == len(complete) and not tail.strip():
                    # a last line that is complete but unparseable is also a torn write (newline landed)
                    return _Scan(records, good_end, torn=data[good_end:])
                raise StoreError(f"{path}: line {i} is not a valid store record ({e}); "
                                 "the file was edited or damaged, refusing to guess") from None
            records.append(rec)
        good_end = end
        offset = end
    if not tail.strip():
        return _Scan(records, good_end)
    try:
        # a whole record whose newline is missing (a crash between the two, or a copy that lost it)
        # is data, not a torn write: a strict prefix of a JSON object never parses as one
        records.append(_parse_record(tail))
    except ValueError:
        return _Scan(records, good_end, torn=data[good_end:])
    return _Scan(records, len(data), needs_newline=True)


class PredictionStore:
    """A JSONL file of generation records keyed by request hash.

    Use as a context manager to write (it takes the lock); reading needs no lock.
    """

    def __init__(self, path: str | os.PathLike, *, run_meta: dict[str, Any] | None = None) -> None:
        self.path = Path(path)
        self.run_meta = dict(run_meta or {})
        self._lock_fd: int | None = None
        self._fh = None
        self._records: dict[str, dict[str, Any]] = {}
        self._order: list[str] = []
        self._write_lock = threading.Lock()
        self._load(repair=False)

    # -- reading -----------------------------------------------------------------------------------
    def _load(self, *, repair: bool) -> None:
        scan = _scan(self.path)
        records = scan.records
        if scan.torn:
            preview = scan.torn[:60].decode("utf-8", errors="replace")
            warnings.warn(f"{self.path}: dropped an incomplete last line of {len(scan.torn)} bytes "
                          f"(interrupted write) starting {preview!r}; {len(records)} complete records kept",
                          TornLineWarning, stacklevel=3)
        if repair and (scan.torn or scan.needs_newline):
            with open(self.path, "r+b") as fh:
                fh.truncate(scan.good_end)
                if scan.needs_newline:  # end the kept record so the next append starts a line of its own
                    fh.seek(scan.good_end)
                    fh.write(b"\n")
                fh.flush()
                os.fsync(fh.fileno())
        self._records = {}
        self._order = []
        for rec in records:
            if rec["key"] not in self._records:
                self._order.append(rec["key"])
            self._records[rec["key"]] = rec  # a later record for the same key wins (a retried failure)

    def __contains__(self, key: str) -> bool:
        rec = self._records.get(key)
        return rec is not None and not rec.get("error")

    def __len__(self) -> int:
        return len(self._order)

    def keys(self) -> set[str]:
        """Keys of finished (non-failed) records: what a rerun may skip."""
        return {k for k in self._order if k in self}

    def failed_keys(self) -> set[str]:
        return {k for k in self._order if self._records[k].get("error")}

    def get(self, key: str) -> dict[str, Any] | None:
        return self._records.get(key)

    def records(self) -> Iterator[dict[str, Any]]:
        for k in self._order:
            yield self._records[k]

    def to_frame(self):
        """All records as a pandas DataFrame (one row per request)."""
        import pandas as pd

        return pd.DataFrame(list(self.records()))

    # -- writing -----------------------------------------------------------------------------------
    def open(self) -> PredictionStore:
        if self._fh is not None:
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # lock the file's real path: two names for one file (a symlink, a linked folder, ../) share one lock
        real = self.path.resolve()
        lock_path = real.with_name(real.name + ".lock")
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                owner = os.read(fd, 64).decode(errors="replace").strip() or "unknown"
            finally:
                os.close(fd)
            raise StoreError(f"{self.path} is being written by another process (pid {owner}); "
                             "wait for it to finish or write to another file") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._lock_fd = fd
        self._load(repair=True)  # re-read under the lock: another writer may have appended meanwhile
        self._fh = open(self.path, "ab")
        return self

    def close(self) -> None:
        with self._write_lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> PredictionStore:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def append(self, record: dict[str, Any]) -> dict[str, Any]:
        """Write one record durably; adds ``created`` and the store's run metadata."""
        return self.append_many([record])[0]

    def append_many(self, records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """Write records that arrived together with one write and one fsync (what a busy endpoint needs:
        an fsync per answer would cap a run at a few hundred answers per second)."""
        if self._fh is None:
            raise StoreError("open the store for writing first (use `with PredictionStore(path) as store:`)")
        out = []
        for record in records:
            if "key" not in record:
                raise StoreError("a store record needs a 'key' (the request hash)")
            rec = dict(record)
            rec.setdefault("created", time.strftime("%Y-%m-%dT%H:%M:%S%z"))
            if self.run_meta and "run" not in rec:
                rec["run"] = self.run_meta
            out.append(rec)
        if not out:
            return out
        data = b"".join(canonical_json(rec).encode("utf-8") + b"\n" for rec in out)
        with self._write_lock:
            fh = self._fh
            if fh is None:
                raise StoreError("the store was closed while records were being written")
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
            for rec in out:
                if rec["key"] not in self._records:
                    self._order.append(rec["key"])
                self._records[rec["key"]] = rec
        return out


def read_records(path: str | os.PathLike) -> list[dict[str, Any]]:
    """All complete records of a store file (a torn last line is skipped with a warning)."""
    return list(PredictionStore(path).records())
