"""Append-only JSONL prediction store: crash-safe, resumable, one writer at a time.

Every finished generation is one JSON line, flushed and fsync'ed before the next request
starts, so a crash (even SIGKILL) loses at most the request in flight. A torn last line
(the process died mid-write) is detected on open, reported with a warning and cut off;
a damaged line anywhere else is an error, because silently dropping it would lose data.
A second writer on the same file is refused through an ``flock`` on ``<file>.lock``,
which the kernel releases when the owning process dies, so a crash never leaves a stale lock.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from vlamb_nb.errors import StoreError
from vlamb_nb.hashing import canonical_json, digest

KEY_FIELDS = ("model_id", "revision", "quantization", "benchmark", "setting", "prompt", "image_digests", "params")


class TornLineWarning(UserWarning):
    """The last line of a store was incomplete (a crash mid-write) and was dropped."""


def request_key(*, model_id: str, revision: str | None, quantization: str | None, benchmark: str, setting: str,
                prompt: Any, image_digests: Iterable[str], params: dict[str, Any]) -> str:
    """Hash of everything that determines a model output; stable across processes and machines."""
    return digest({
        "model_id": model_id,
        "revision": revision,
        "quantization": quantization,
        "benchmark": benchmark,
        "setting": setting,
        "prompt": prompt,
        "image_digests": list(image_digests),
        "params": params,
    })


def _scan(path: Path) -> tuple[list[dict[str, Any]], int, bool]:
    """Read records; return (records, byte offset of the end of the last good line, torn?)."""
    records: list[dict[str, Any]] = []
    if not path.exists():
        return records, 0, False
    data = path.read_bytes()
    good_end = 0
    lines = data.split(b"\n")
    # the piece after the final newline is empty for a clean file, else a torn tail
    complete, tail = lines[:-1], lines[-1]
    offset = 0
    for i, raw in enumerate(complete, start=1):
        end = offset + len(raw) + 1
        if raw.strip():
            try:
                rec = json.loads(raw)
                if not isinstance(rec, dict) or "key" not in rec:
                    raise ValueError("not a record with a 'key'")
            except ValueError as e:
                if i == len(complete) and not tail:
                    # a last line that is complete but unparseable is also a torn write (newline landed)
                    return records, good_end, True
                raise StoreError(f"{path}: line {i} is not a valid store record ({e}); "
                                 "the file was edited or damaged, refusing to guess") from None
            records.append(rec)
        good_end = end
        offset = end
    torn = bool(tail.strip())
    return records, good_end, torn


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
        self._load(repair=False)

    # -- reading -----------------------------------------------------------------------------------
    def _load(self, *, repair: bool) -> None:
        records, good_end, torn = _scan(self.path)
        if torn:
            warnings.warn(f"{self.path}: dropped an incomplete last line (interrupted write); "
                          f"{len(records)} complete records kept", TornLineWarning, stacklevel=3)
            if repair:
                with open(self.path, "r+b") as fh:
                    fh.truncate(good_end)
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
        lock_path = self.path.with_name(self.path.name + ".lock")
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
        if self._fh is None:
            raise StoreError("open the store for writing first (use `with PredictionStore(path) as store:`)")
        if "key" not in record:
            raise StoreError("a store record needs a 'key' (the request hash)")
        rec = dict(record)
        rec.setdefault("created", time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        if self.run_meta and "run" not in rec:
            rec["run"] = self.run_meta
        line = canonical_json(rec).encode("utf-8") + b"\n"
        self._fh.write(line)
        self._fh.flush()
        os.fsync(self._fh.fileno())
        if rec["key"] not in self._records:
            self._order.append(rec["key"])
        self._records[rec["key"]] = rec
        return rec


def read_records(path: str | os.PathLike) -> list[dict[str, Any]]:
    """All complete records of a store file (a torn last line is skipped with a warning)."""
    return list(PredictionStore(path).records())
