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

One request (its key and request id) may appear on several lines: a failure retried by a rerun, a store
copied twice into one file. A success replaces an earlier failure, a later failure never replaces a success
(so a rerun does not ask again), identical answers count once, and two different answers to one request are
kept apart in :meth:`PredictionStore.conflicts`: reading a store for scoring (:func:`read_store`) refuses
them, naming the file, the request and both lines.

Every record says the store format it was written in (``format``, :data:`STORE_FORMAT`; a record without one is
format 1). A record of a newer format is refused on open, naming the file and line: its fields may mean what this
version cannot know, and reading them as ours would score something else. Reading for scoring also refuses a record
whose fields have the wrong type (a ``run`` that is not an object, a null ``turn``), naming the field.

A record carries the item it answers (``item_id``), the turn of its run that asked it (``turn``) and its
request's ``meta`` as fields (:mod:`vlamb_nb.runner` writes them). A store written before those fields existed
is read by :func:`with_fields`, the one place that still knows how request ids and setting tags used to say
them, so a saved run scores as it always did.
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
from vlamb_nb.jsonl import BOM, not_utf8

#: the store format this version writes, and the newest it reads
STORE_FORMAT = 1

#: what a model answered: two successful records of one request that differ here are two different answers
ANSWER_FIELDS = ("text", "option_logprobs")


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
    if not isinstance(rec, dict) or not isinstance(rec.get("key"), str):
        raise ValueError("not a record with a 'key'")
    return rec


@dataclass
class _Scan:
    """What reading a store file found, and what opening it for writing must repair."""

    records: list[dict[str, Any]]
    lines: list[int]  # the 1-based line of each record
    good_end: int  # byte offset just past the last complete record (its newline included, if present)
    torn: bytes = b""  # an unparseable last line, dropped (an interrupted write)
    needs_newline: bool = False  # the last record is complete but its newline never reached the disk
    next_line: int = 1  # the line the next appended record will stand on, once repaired


def _check_utf8(path: Path, data: bytes, start: int, raw: bytes, last: bool) -> bool:
    """True when ``raw`` (the line at byte ``start``) is UTF-8 text. A byte that is not is damage, named by
    line and offset, unless the last line ends inside a character: a write cut short (False)."""
    try:
        raw.decode("utf-8")
        return True
    except UnicodeDecodeError as e:
        if last and e.reason == "unexpected end of data":
            return False
        line, what = not_utf8(data, e, base=start)
        raise StoreError(f"{path}: line {line}: {what}; the file was edited or damaged, refusing to guess") from None


def _scan(path: Path) -> _Scan:
    """Read records; a damaged line is an error unless it is the last one, which may be a torn write."""
    if not path.exists():
        return _Scan([], [], 0)
    data = path.read_bytes()
    scan = _scan_bytes(path, data)
    scan.next_line = data[: scan.good_end].count(b"\n") + 1 + scan.needs_newline
    return scan


def _scan_bytes(path: Path, data: bytes) -> _Scan:
    records: list[dict[str, Any]] = []
    numbers: list[int] = []
    bom = len(BOM) if data.startswith(BOM) else 0  # a byte-order mark (an editor's) is not data
    lines = data[bom:].split(b"\n")
    # the piece after the final newline is empty for a clean file, else a last line without its newline
    complete, tail = lines[:-1], lines[-1]
    offset = good_end = bom
    for i, raw in enumerate(complete, start=1):
        end = offset + len(raw) + 1
        last = i == len(complete) and not tail.strip()
        if raw.strip():
            try:
                if not _check_utf8(path, data, offset, raw, last):
                    return _Scan(records, numbers, good_end, torn=data[good_end:])
                rec = _parse_record(raw)
            except ValueError as e:
                if last:
                    # a last line that is complete but unparseable is also a torn write (newline landed)
                    return _Scan(records, numbers, good_end, torn=data[good_end:])
                raise StoreError(f"{path}: line {i} is not a valid store record ({e}); "
                                 "the file was edited or damaged, refusing to guess") from None
            records.append(rec)
            numbers.append(i)
        good_end = end
        offset = end
    if not tail.strip():
        return _Scan(records, numbers, good_end)
    try:
        # a whole record whose newline is missing (a crash between the two, or a copy that lost it)
        # is data, not a torn write: a strict prefix of a JSON object never parses as one
        if not _check_utf8(path, data, offset, tail, True):
            return _Scan(records, numbers, good_end, torn=data[good_end:])
        records.append(_parse_record(tail))
        numbers.append(len(complete) + 1)
    except ValueError:
        return _Scan(records, numbers, good_end, torn=data[good_end:])
    return _Scan(records, numbers, len(data), needs_newline=True)


def failed(rec: dict[str, Any]) -> bool:
    """A record whose generation failed (it carries an error and no answer)."""
    return bool(rec.get("error"))


def same_answer(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return all(a.get(f) == b.get(f) for f in ANSWER_FIELDS)


@dataclass(frozen=True)
class Conflict:
    """Two different successful answers to one request, by the lines they stand on (1-based)."""

    key: str
    request_id: str | None
    first_line: int
    line: int
    first_text: str
    text: str

    def describe(self) -> str:
        rid = f" (request {self.request_id!r})" if self.request_id is not None else ""
        key = self.key if len(self.key) <= 16 else self.key[:16] + "…"
        return (f"key {key}{rid} has two different answers, {_short(self.first_text)} on line "
                f"{self.first_line} and {_short(self.text)} on line {self.line}")


def _short(text: Any, n: int = 40) -> str:
    t = "" if text is None else str(text)
    return repr(t if len(t) <= n else t[: n - 1] + "…")


class _OnePer:
    """One record per key (a request hash, or a request hash and id) under the store's rule: a success over any
    failure, the first of two different answers (the second is a :class:`Conflict`), the newest of several
    failures. ``records`` keeps the order in which keys first appeared."""

    def __init__(self) -> None:
        self.records: dict[Any, dict[str, Any]] = {}
        self.lines: dict[Any, int] = {}
        self.conflicts: list[Conflict] = []

    def add(self, k: Any, rec: dict[str, Any], line: int) -> None:
        old = self.records.get(k)
        if old is not None and not failed(old):
            if not failed(rec) and not same_answer(old, rec):
                self.conflicts.append(Conflict(rec["key"], rec.get("request_id"), self.lines[k], line,
                                               old.get("text"), rec.get("text")))
            return  # a repeat, a later failure or a conflicting answer never replaces an answer
        self.records[k] = rec
        self.lines[k] = line


class PredictionStore:
    """A JSONL file of generation records keyed by request hash.

    Use as a context manager to write (it takes the lock); reading needs no lock.
    """

    def __init__(self, path: str | os.PathLike, *, run_meta: dict[str, Any] | None = None) -> None:
        self.path = Path(path)
        self.run_meta = dict(run_meta or {})
        self._lock_fd: int | None = None
        self._fh = None
        # the runner's view, one record per request hash (what a rerun may skip), and the scorers', one record
        # per request hash and request id (two items asked the same prompt are two requests, answered alike)
        self._by_key = _OnePer()
        self._by_request = _OnePer()
        self._next_line = 1
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
        self._by_key, self._by_request = _OnePer(), _OnePer()
        for rec, line in zip(records, scan.lines, strict=True):
            check_format(self.path, line, rec)
            self._keep(rec, line)
        self._next_line = scan.next_line

    def _keep(self, rec: dict[str, Any], line: int) -> None:
        self._by_key.add(rec["key"], rec, line)
        self._by_request.add((rec["key"], rec.get("request_id")), rec, line)

    def __contains__(self, key: str) -> bool:
        rec = self._by_key.records.get(key)
        return rec is not None and not failed(rec)

    def __len__(self) -> int:
        return len(self._by_key.records)

    def keys(self) -> set[str]:
        """Keys of finished (non-failed) records: what a rerun may skip."""
        return {k for k in self._by_key.records if k in self}

    def failed_keys(self) -> set[str]:
        return {k for k, r in self._by_key.records.items() if failed(r)}

    def get(self, key: str) -> dict[str, Any] | None:
        return self._by_key.records.get(key)

    def answer(self, key: str, request_id: str) -> dict[str, Any] | None:
        """The record answering request ``request_id`` of hash ``key`` (what scoring the store reads for it), else
        any answer of that hash: two requests of one run that ask alike (the same prompt, image and decoding) are
        answered once each when asked together, and by the hash's answer when one of them is new."""
        own = self._by_request.records.get((key, request_id))
        return own if own is not None and not failed(own) else self.get(key)

    def line(self, key: str) -> int | None:
        """The 1-based line of the record ``key`` stands for."""
        return self._by_key.lines.get(key)

    def conflicts(self) -> list[Conflict]:
        """Requests (hash and id) answered twice with different answers (the first answer is the one kept)."""
        return list(self._by_request.conflicts)

    def check(self) -> None:
        """Refuse a store with two different answers to one request: scoring one of them would be a guess."""
        c = self._by_request.conflicts
        if c:
            more = f" ({len(c) - 1} more request(s) like it)" if len(c) > 1 else ""
            raise StoreError(f"{self.path}: {c[0].describe()}{more}; the store mixes runs or was edited, "
                             "refusing to pick one")

    def records(self) -> Iterator[dict[str, Any]]:
        yield from self._by_key.records.values()

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
            rec.setdefault("format", STORE_FORMAT)
            if self.run_meta and "run" not in rec:
                rec["run"] = self.run_meta
            out.append(rec)
        if not out:
            return out
        try:
            data = b"".join(canonical_json(rec).encode("utf-8") + b"\n" for rec in out)
        except UnicodeEncodeError:  # a lone surrogate (a name from bytes that are not UTF-8): say which field
            rec = next(r for r in out if not _utf8(canonical_json(r)))
            field = next((k for k, v in rec.items() if not _utf8(canonical_json(v))), "?")
            raise StoreError(f"{self.path}: request {rec.get('request_id')!r}: field {field!r} holds text that is "
                             "not UTF-8 (a lone surrogate); give names and values in UTF-8") from None
        with self._write_lock:
            fh = self._fh
            if fh is None:
                raise StoreError("the store was closed while records were being written")
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
            for rec in out:
                self._keep(rec, self._next_line)
                self._next_line += 1
        return out


def check_format(path: str | os.PathLike, line: int, rec: dict[str, Any]) -> None:
    """Refuse a record of a store format newer than :data:`STORE_FORMAT` (or one that names no format number)."""
    fmt = rec.get("format", 1)
    if isinstance(fmt, bool) or not isinstance(fmt, int) or fmt < 1:
        raise StoreError(f"{path}: line {line}: field 'format' is {fmt!r}, not a store format number; "
                         "the file was edited or damaged, refusing to guess")
    if fmt > STORE_FORMAT:
        raise StoreError(f"{path}: line {line}: written in store format {fmt}, newer than the format "
                         f"{STORE_FORMAT} this version of vlamb_nb reads; upgrade vlamb_nb to read it")


#: the types a record's fields may have where present (None is allowed for those in :data:`_NULLABLE`)
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "request_id": (str, int), "item_id": (str, int), "turn": (str,), "benchmark": (str,), "setting": (str,),
    "model": (dict, str), "run": (dict,), "meta": (dict,), "params": (dict,), "text": (str,), "error": (str,),
}
_NULLABLE = {"benchmark", "setting", "model", "run", "meta", "params", "text", "error"}
#: the same for what the readers take from a record's run meta and its model (each may be null)
_RUN_TYPES: dict[str, tuple[type, ...]] = {
    "model": (dict, str), "data": (dict,), "deviations": (list,), "setting": (str,), "benchmark": (str,),
    "template": (str,), "source": (str,),
}
_MODEL_TYPES: dict[str, tuple[type, ...]] = {k: (str,) for k in ("model_id", "quantization", "revision", "endpoint",
                                                                  "backend")}
#: every field a record of this store format has (a record naming others may be of a newer one)
_KNOWN_FIELDS = {"format", "key", "request_id", "item_id", "turn", "benchmark", "setting", "model", "run", "meta",
                 "params", "prompt", "text", "error", "finish_reason", "prompt_tokens", "completion_tokens",
                 "seconds", "image_sizes", "processed_image_sizes", "option_logprobs", "cached", "created"}
_KINDS = {"str": "text", "int": "a number", "dict": "an object", "list": "a list"}


def _check_types(path: str | os.PathLike, line: int, obj: dict[str, Any], spec: dict[str, tuple[type, ...]],
                 nullable: set[str] | None, prefix: str = "") -> None:
    for name, types in spec.items():
        if name not in obj:
            continue
        v = obj[name]
        if v is None and (nullable is None or name in nullable):
            continue
        if v is None or isinstance(v, bool) or not isinstance(v, types):
            want = " or ".join(_KINDS[t.__name__] for t in types)
            shown = json.dumps(v, ensure_ascii=False, default=str)
            shown = shown if len(shown) <= 40 else shown[:39] + "…"
            raise StoreError(f"{path}: line {line}: field {prefix + name!r} is {shown} where {want} is expected; "
                             "the record was not written by this version of vlamb_nb (or was edited), "
                             "refusing to guess")


def check_fields(path: str | os.PathLike, line: int, rec: dict[str, Any]) -> None:
    """Refuse a record whose fields a reader relies on have the wrong type, naming the file, line and field:
    a store of another program, or an edited one, scored as if it were ours would fail deep inside or mislead."""
    _check_types(path, line, rec, _FIELD_TYPES, _NULLABLE)
    if not rec.get("error") and all(rec.get(f) is None for f in ANSWER_FIELDS):
        others = sorted(k for k in rec if k not in _KNOWN_FIELDS)
        raise StoreError(f"{path}: line {line}: field 'text' is missing: a record that neither answers nor failed"
                         + (f" (it has {', '.join(map(repr, others[:4]))})" if others else "")
                         + "; a store of a newer format or another program, refusing to guess")
    run = rec.get("run") if isinstance(rec.get("run"), dict) else {}
    _check_types(path, line, run, _RUN_TYPES, None, "run.")
    for prefix, model in (("model.", rec.get("model")), ("run.model.", run.get("model"))):
        if isinstance(model, dict):
            _check_types(path, line, model, _MODEL_TYPES, None, prefix)
    for name, v in rec.items():  # JSON may escape a lone surrogate (\udcff): text no page or file can hold
        try:
            json.dumps(v, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise StoreError(f"{path}: line {line}: field {name!r} holds text that is not UTF-8 (a lone surrogate "
                             "escaped in the JSON); the file was edited or damaged, refusing to guess") from None


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def read_store(path: str | os.PathLike) -> list[tuple[int, dict[str, Any]]]:
    """(1-based line, record) for every request of a store file, for scoring: one record per request (its hash
    and id; see the module doc), a torn last line skipped with a warning, and two different answers to one
    request a :class:`StoreError` naming the file, the request and both lines, as is a record of a newer store
    format or with a field of the wrong type (:func:`check_fields`). Every record has its
    ``item_id``, ``turn`` and ``meta`` (:func:`with_fields` reads them from a store written before they were
    fields)."""
    store = PredictionStore(path)
    store.check()
    kept = store._by_request
    for k, rec in kept.records.items():
        check_fields(path, kept.lines[k], rec)
    return [(kept.lines[k], with_fields(rec)) for k, rec in kept.records.items()]


#: the turn name of a record that is its run's answer (see :data:`vlamb_nb.runner.ANSWER`)
ANSWER = "answer"
#: how earlier stores named a turn in the request id, after ``::`` (any other suffix was the answer turn's)
_LEGACY_TURNS = {"caption": "caption", "sg": "scene_graph", "answer": ANSWER}


def with_fields(rec: dict[str, Any]) -> dict[str, Any]:
    """``rec`` with ``item_id``, ``turn`` and ``meta`` fields. A record that has them is returned as it is; one
    from an earlier store gets them from the conventions that store used, read here and nowhere else:

    - the item is the request id before ``::``;
    - the turn is named by the id's suffix (``::caption``, ``::sg`` and ``::answer``), ``::repair-<setting>`` is
      the repair turn (``repair``, or ``repair-<text>`` for a repair text tagged ``:repair-<text>``), a multi-step
      setting tagged ``<setting>:<step>`` is turn ``<step>``, and anything else is the answer;
    - a judge's request id ``<judged id>::judge-<name>`` judged the item before the first ``::``, and the judged
      request's suffix (``<setting>`` or ``sample-<k>``) gives the judged setting in ``meta``;
    - a record whose run meta names no setting (or that has none) belongs to the run of its setting tag's base.
    """
    if "turn" in rec and "item_id" in rec:
        return rec
    rid = str(rec.get("request_id", ""))
    parts = rid.split("::")
    tag = str(rec.get("setting") or "")
    meta: dict[str, Any] = dict(rec.get("meta") or {})
    turn = ANSWER
    if len(parts) > 2 and parts[-1].startswith("judge-"):
        judged = parts[1]
        meta.update(judge=parts[-1].removeprefix("judge-"), judged="::".join(parts[:-1]),
                    setting="sampling" if judged.startswith("sample-") and judged[7:].isdigit() else judged)
    elif len(parts) > 1:
        suffix = parts[1]
        if suffix.startswith("repair-"):
            turn = "repair" + tag.rpartition(":repair")[2]
        elif suffix in _LEGACY_TURNS:
            turn = _LEGACY_TURNS[suffix]
        elif tag.split(":")[1:] == [suffix]:
            turn = suffix
    out = {**rec, "item_id": parts[0], "turn": turn, "meta": meta}
    run = rec.get("run") if isinstance(rec.get("run"), dict) else {}
    if not run.get("setting") and tag:
        out["run"] = {**run, "setting": tag.split(":", 1)[0]}
    return out


def is_store(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a prediction store (JSON Lines whose first record has a request ``key`` and id), not
    another file of predictions (a paper's released outputs, a labels file)."""
    p = Path(path)
    if p.suffix.lower() != ".jsonl" or not p.is_file():
        return False
    with open(p, "rb") as fh:
        for raw in fh:
            if raw.strip():
                try:
                    rec = json.loads(raw.removeprefix(BOM))
                except ValueError:
                    return False
                return isinstance(rec, dict) and isinstance(rec.get("key"), str) and "request_id" in rec
    return False


def read_records(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The records of :func:`read_store`, without their lines."""
    return [rec for _, rec in read_store(path)]


# -- one run per file ----------------------------------------------------------------------------------------
#: the fields of a record's run meta (besides its ``run_key``) that tell two runs apart in a store written before
#: run keys: a store of another model, setting, prompts, items or seed is another run's
_RUN_FIELDS = ("benchmark", "setting", "template", "source", "seed")
_MODEL_FIELDS = ("model_id", "revision", "quantization", "backend", "endpoint")


def keyed_path(base: str | os.PathLike, run_key: str) -> Path:
    """A run's own store beside the default one: ``<stem>.<first 8 hex digits of its run key>.jsonl``."""
    p = Path(base)
    return p.with_name(f"{p.stem}.{run_key[:8]}{p.suffix}")


def run_stores(base: str | os.PathLike) -> list[Path]:
    """The stores a default store name stands for: the file itself and every run's own store beside it
    (:func:`keyed_path`), those that exist, the default first."""
    import glob
    import re

    p = Path(base)
    keyed = re.compile(re.escape(p.stem) + r"\.[0-9a-f]{8}" + re.escape(p.suffix))
    siblings = sorted(q for q in p.parent.glob(f"{glob.escape(p.stem)}.*{p.suffix}")
                      if keyed.fullmatch(q.name) and q.is_file())
    return ([p] if p.is_file() else []) + siblings


def _same_run(rec: dict[str, Any], meta: dict[str, Any]) -> bool:
    """Whether a stored record belongs to the run of ``meta``: by run key, or, for a record written before run keys,
    by its model, setting, prompts, items and seed."""
    run = rec.get("run") if isinstance(rec.get("run"), dict) else {}
    if run.get("run_key"):
        return run["run_key"] == meta.get("run_key")
    model = rec.get("model") if isinstance(rec.get("model"), dict) else {}
    want = meta.get("model") or {}
    return (all((model.get(f) or None) == (want.get(f) or None) for f in _MODEL_FIELDS)
            and all((run.get(f) or None) == (meta.get(f) or None) for f in _RUN_FIELDS))


def choose_store(base: str | os.PathLike, meta: dict[str, Any]) -> tuple[Path, list[Path]]:
    """Where the run of ``meta`` (its ``run_key``) writes, so one store file holds one run: the default name when
    it is new or holds this run only (a rerun resumes it), else the run's own file beside it (:func:`keyed_path`:
    another decoding, other items, another seed). Also returns the other stores beside it, whose answers to the
    same requests the run takes instead of asking again (``runner.run(reuse=...)``)."""
    p = Path(base)
    key = str(meta.get("run_key") or "")
    if not key:
        return p, []
    own = keyed_path(p, key)
    if own.is_file():
        chosen = own
    elif not p.is_file() or all(_same_run(r, meta) for r in _records_as_resumed(p)):
        chosen = p
    else:
        chosen = own
    return chosen, [q for q in run_stores(p) if q != chosen]


def _records_as_resumed(path: Path) -> list[dict[str, Any]]:
    """A store's records as the runner resumes it (one per request hash; a torn last line left to the runner,
    which says so when it opens the file)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TornLineWarning)
        return list(PredictionStore(path).records())
