"""The data home: where fetched releases live, what each holds, and which data a run stands on.

``vlamb-nb data fetch PAPER`` (:mod:`vlamb_nb.releases`) downloads a paper's release once into
``$VLAMB_DATA/<paper>/revisions/<key>/`` (default ``~/.cache/vlamb_nb/data``, or under ``$XDG_CACHE_HOME``),
one folder per revision, and writes ``<paper>/manifest.json`` last: it names the current revision's folder, so a
release without a manifest is never read and a new revision is read only once it is complete and verified.

This module reads: the paper profile asks :func:`choose` which data to run on. :func:`fetched` verifies what it
reads — every file's size every time, its sha256 whenever the file's stamp (size, mtime, inode, ctime) changed since
it was last verified — and refuses a damaged release in one line naming the repair. Every result carries the answer
as a :class:`DataIdentity` (release, revision, n of N items, what was left out and why), so a report card can always
say what a row stands on; :func:`tag` leaves out the items the release cannot give as meant.

A low layer (paths and errors only): benchmarks, notebooks and the card import it; nothing here downloads (the
only file it writes is the stamp cache of what it verified, where the data home can be written).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from vlamb_nb.errors import DataError, NotFetchedError

DATA_ENV = "VLAMB_DATA"
MANIFEST = "manifest.json"
STAMPS = ".stamps.json"  # per revision folder: the stamp of each file when its sha256 was last verified
CHUNK = 1 << 20
#: the kinds of data a run can stand on; only a release is ranked among the papers' models
KINDS = ("release", "source", "sample")


def data_home() -> Path:
    """``$VLAMB_DATA``, else ``$XDG_CACHE_HOME/vlamb_nb/data``, else ``~/.cache/vlamb_nb/data``."""
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME")
    return (Path(cache).expanduser() if cache else Path.home() / ".cache") / "vlamb_nb" / "data"


def release_dir(paper: str) -> Path:
    """The folder of one paper's fetched release (it may not exist yet)."""
    return data_home() / paper


def release_base(paper: str, manifest: dict[str, Any]) -> Path:
    """The folder of the manifest's revision (``files/`` lies in it); a manifest of the older flat layout names
    none, and its files lie in the paper's folder."""
    import re

    folder = str(manifest.get("folder") or "")
    root = release_dir(paper)
    if not folder:
        return root
    if not re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*", folder) or ".." in folder:
        raise DataError(f"the manifest names the folder {folder!r}, outside the release; fetch again with "
                        f"`vlamb-nb data fetch {paper}`", source=str(root / MANIFEST))
    return root / folder


def read_manifest(paper: str) -> dict[str, Any] | None:
    """The manifest of a fetched release, or None when nothing was fetched; a damaged one is an error."""
    path = release_dir(paper) / MANIFEST
    if not path.is_file():
        return None
    try:
        out = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise DataError(f"unreadable manifest ({e}); fetch again with `vlamb-nb data fetch {paper}`",
                        source=str(path)) from None
    if not isinstance(out, dict) or out.get("paper") != paper:
        raise DataError(f"not a manifest of {paper}; fetch again with `vlamb-nb data fetch {paper}`",
                        source=str(path))
    return out


@dataclass(frozen=True)
class LeftOut:
    """Items of a release left out of every run, and why: a known defect of the release (its keys name no single
    file), or files that could not be had and that the user accepted (``--accept-missing``). Items are never
    guessed; with ``whole`` the rest of their group goes too (a pair is scored all-or-nothing)."""

    kind: str  # "defect" or "missing"
    why: str
    column: str  # the items column the keys are in
    keys: tuple[str, ...] = ()  # every key; results keep only n_keys and the first few
    n_keys: int = 0
    first: tuple[str, ...] = ()
    whole: str | None = None
    unit: str = "items"
    items: int | None = None  # items that name a key (known once the items are tagged)
    also: int | None = None  # more items left out with them, as the rest of their groups

    def text(self) -> str:
        """One line: how many items, which keys, why."""
        first = ", ".join(self.first[:3]) + (", …" if self.n_keys > 3 else "")
        what = f"{self.n_keys:,} {self.column} value{'s' if self.n_keys != 1 else ''} ({first})"
        if self.items is None:
            return f"{what}: {self.why}"
        total = self.items + (self.also or 0)
        if not total and self.n_keys:
            return (f"no more {self.unit} left out: {what}: {self.why}; their {self.unit} are already left out "
                    "for an earlier reason (each counted once)")
        more = f", {self.also:,} more are the rest of their groups (scored all-or-nothing)" if self.also else ""
        return f"{total:,} {self.unit} left out: {what}: {self.why}; {self.items:,} {self.unit} name them{more}"

    def summary(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("keys")
        d["first"] = list(self.first)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LeftOut:
        keys = tuple(str(k) for k in d.get("keys") or ())
        return cls(kind=str(d.get("kind", "")), why=str(d.get("why", "")), column=str(d.get("column", "")),
                   keys=keys, n_keys=int(d.get("n_keys") or len(keys)),
                   first=tuple(str(k) for k in (d.get("first") or keys[:5])), whole=d.get("whole"),
                   unit=str(d.get("unit") or "items"), items=d.get("items"), also=d.get("also"))


@dataclass(frozen=True)
class DataIdentity:
    """What a run's items are: the paper's release (at a revision), files a user gave, or a generated sample."""

    kind: str  # one of KINDS
    paper: str
    release: str = ""  # e.g. "hub:dddraxxx/ref-adv-s"; for a source: its path; for a sample: how it was made
    revision: str | None = None  # the hub commit or the release's pinned commit
    n_items: int | None = None  # items in the whole release (N); a run on a subset answers n of them
    label: str = ""
    deviations: tuple[str, ...] = field(default_factory=tuple)  # e.g. a count mismatch accepted at fetch time
    n_loaded: int | None = None  # items a notebook loaded from it (the demo's 31 of 1,142 rows)
    left_out: tuple[LeftOut, ...] = field(default_factory=tuple)  # items of the release no run can have
    sha256: str | None = None  # a generated sample's items as loaded, files they name included (items_sha256)

    @property
    def ranked(self) -> bool:
        """Only the paper's own release is placed among the paper's published models."""
        return self.kind == "release"

    def short(self) -> str:
        """``release@revision`` (7 characters of the hash), for tables and card rows."""
        rev = f"@{self.revision[:7]}" if self.revision else ""
        return f"{self.release}{rev}" if self.release else self.kind

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["deviations"] = list(self.deviations)
        d["left_out"] = [lo.summary() for lo in self.left_out]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> DataIdentity | None:
        if not d:
            return None
        def text(k: str) -> str:  # a null field is empty, not the word "None"
            v = d.get(k)
            return "" if v is None else str(v)

        return cls(kind=text("kind"), paper=text("paper"), release=text("release"),
                   revision=d.get("revision"), n_items=d.get("n_items"), label=text("label"),
                   deviations=tuple(d.get("deviations") or ()), n_loaded=d.get("n_loaded"),
                   left_out=tuple(LeftOut.from_dict(x) for x in d.get("left_out") or () if isinstance(x, dict)),
                   sha256=d.get("sha256") if isinstance(d.get("sha256"), str) else None)


@dataclass(frozen=True)
class DataChoice:
    """Which data a notebook runs on: a fetched release's load arguments, a given source, or a sample."""

    identity: DataIdentity
    source: Path | str | None = None  # what the paper's ``load`` takes
    images: Path | None = None  # the release's image folder, where the paper loads images separately
    extra: dict[str, Any] = field(default_factory=dict)  # other files of the release (e.g. released runs)


def fetched(paper: str) -> DataChoice:
    """The fetched release of ``paper`` as load arguments, verified (:func:`check_release`); a release that is not
    fetched, not usable or damaged is a :class:`NotFetchedError` in one line naming the command that fixes it."""
    manifest = read_manifest(paper)
    if manifest is None:
        raise NotFetchedError(f"{paper}: the paper's release is not fetched (data home {data_home()}); run "
                              f"`vlamb-nb data fetch {paper}` first, or pass source=")
    if not manifest.get("usable", manifest.get("complete", False)):
        missing = manifest.get("missing") or {}
        raise NotFetchedError(f"{paper}: the fetched release is incomplete ({_missing_text(missing)}); run "
                              f"`vlamb-nb data fetch {paper}` again to retry them, or accept them with "
                              f"`vlamb-nb data fetch {paper} --accept-missing` (their items are then left out, and "
                              "every result says so)")
    base = release_base(paper, manifest)
    if base != release_dir(paper):
        hold(base)  # read by this process from now on: a fetch of another revision leaves it in place
    problems = check_release(paper, manifest)
    if problems:
        more = f" and {len(problems) - 1} more" if len(problems) > 1 else ""
        raise NotFetchedError(f"{paper}: the fetched release is damaged ({problems[0]}{more}); repair it with "
                              f"`vlamb-nb data fetch {paper}`")
    load = manifest.get("load") or {}
    ident = DataIdentity(kind="release", paper=paper, release=str(manifest.get("release", "")),
                         revision=manifest.get("revision"), n_items=manifest.get("n_items"),
                         label=str(manifest.get("label", "")), deviations=tuple(manifest.get("deviations") or ()),
                         left_out=tuple(LeftOut.from_dict(x) for x in manifest.get("left_out") or ()))
    extra = {k: base / v for k, v in (load.get("extra") or {}).items()}
    return DataChoice(identity=ident, source=base / load["source"] if load.get("source") else base,
                      images=base / load["images"] if load.get("images") else None, extra=extra)


# -- a revision in use is never removed under its reader ---------------------------------------------------------
#: ``<paper>/.in-use/<revision folder>``: every process reading a revision holds a shared lock on it for as long as
#: it runs (the kernel lets it go when the process ends, so a crashed reader leaves no stale lock), and a fetch
#: removes an old revision only when it can take the lock exclusively, else leaves it to the next fetch
IN_USE = ".in-use"
_HELD: dict[str, int] = {}


def in_use_lock(folder: Path) -> Path:
    """The lock file of the revision in ``folder`` (``<paper>/revisions/<name>``)."""
    return folder.parent.parent / IN_USE / folder.name


def hold(folder: Path) -> None:
    """This process reads the revision in ``folder``: a shared lock on its ``.in-use`` file, held until the process
    ends (once per folder). A data home where the file cannot be made (read-only) holds none: nothing can remove
    the revision there either."""
    import fcntl

    key = str(folder)
    if key in _HELD or not folder.is_dir():
        return
    lock = in_use_lock(folder)
    try:
        lock.parent.mkdir(exist_ok=True)
        fd = os.open(lock, os.O_RDONLY | os.O_CREAT, 0o644)
    except OSError:
        try:
            fd = os.open(lock, os.O_RDONLY)
        except OSError:
            return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)  # a fetch holds it exclusively only for the moment of a removal
    except OSError:
        os.close(fd)
        return
    _HELD[key] = fd


def remove_unless_read(folder: Path) -> bool:
    """Remove a revision's folder unless a running process reads it (holds its ``.in-use`` lock): True when it
    was removed, False when it is left for the next fetch."""
    import fcntl
    import shutil

    lock = in_use_lock(folder)
    if (own := _HELD.pop(str(folder), None)) is not None:  # this process moves on to the new revision itself
        os.close(own)
    try:
        lock.parent.mkdir(exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        fd = None  # a folder that cannot be locked cannot be read under a lock either
    try:
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return False
        shutil.rmtree(folder, ignore_errors=True)
        lock.unlink(missing_ok=True)
        return True
    finally:
        if fd is not None:
            os.close(fd)


def read_by_another(folder: Path) -> bool:
    """Whether a running process reads the revision in ``folder`` (holds its ``.in-use`` lock)."""
    import fcntl

    lock = in_use_lock(folder)
    try:
        fd = os.open(lock, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return str(folder) not in _HELD
    finally:
        os.close(fd)
    return False


def _missing_text(missing: dict[str, Any]) -> str:
    if not missing:
        return "not every part was fetched"
    parts = []
    for k, v in missing.items():
        if isinstance(v, dict):
            first = ", ".join(map(str, (v.get("first") or [])[:3]))
            parts.append(f"{v.get('count', '?')} {k} missing" + (f", first {first}" if first else ""))
    return "; ".join(parts) or "not every part was fetched"


# -- verifying what is read ------------------------------------------------------------------------------
def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def stamp(path: Path) -> list[int]:
    """What changes when a file's bytes may have: size, mtime, inode and ctime (which no copy can set)."""
    st = os.stat(path, follow_symlinks=False)
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]


def verify_files(files_dir: Path, records: list[dict[str, Any]], *, stamps: dict[str, Any] | None = None,
                 full: bool = False) -> tuple[list[str], dict[str, list[int]]]:
    """Each recorded file against its record: present, a plain file, its size; its sha256 when its stamp changed
    since it was last verified (every one with ``full``). Returns the problems (one short phrase each) and the
    stamps of the files whose sha256 was checked anew and held."""
    import stat as st_mod

    problems: list[str] = []
    fresh: dict[str, list[int]] = {}
    for rec in records:
        rel = str(rec.get("path", ""))
        if not rel or rel.startswith("/") or ".." in Path(rel).parts:
            problems.append(f"the manifest names {rel!r}, outside the release")
            continue
        path = files_dir / rel
        try:
            now = stamp(path)
            mode = os.stat(path, follow_symlinks=False).st_mode
        except OSError:
            problems.append(f"{rel} is missing")
            continue
        if not st_mod.S_ISREG(mode):
            problems.append(f"{rel} is not a plain file (a link or a folder)")
            continue
        if now[0] != rec.get("size"):
            problems.append(f"{rel} has {now[0]:,} bytes, {int(rec.get('size') or 0):,} were verified")
            continue
        known = (stamps or {}).get(rel) or rec.get("stamp")
        if rec.get("sha256") and (full or list(known or []) != now):
            try:
                same = file_sha256(path) == rec["sha256"]
            except OSError as e:
                problems.append(f"{rel} cannot be read ({e.strerror or e})")
                continue
            if not same:
                problems.append(f"{rel} is not the file that was verified (sha256 differs)")
                continue
            fresh[rel] = now
    return problems, fresh


def check_release(paper: str, manifest: dict[str, Any], *, full: bool = False) -> list[str]:
    """:func:`verify_files` on the manifest's revision, keeping the stamps of what was hashed anew (where the data
    home can be written) so an unchanged file is hashed once."""
    try:
        base = release_base(paper, manifest)
    except DataError as e:
        return [str(e)]
    cache = base / STAMPS
    try:
        stamps = json.loads(cache.read_text(encoding="utf-8")) if cache.is_file() else {}
    except (OSError, ValueError):
        stamps = {}
    if not isinstance(stamps, dict):
        stamps = {}
    problems, fresh = verify_files(base / "files", list(manifest.get("files") or []), stamps=stamps, full=full)
    if fresh:
        try:
            tmp = cache.with_name(f"{STAMPS}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps({**stamps, **fresh}), encoding="utf-8")
            os.replace(tmp, cache)
        except OSError:
            pass  # a read-only data home: verified again next time
    return problems


def release_source(paper: str, data: dict[str, Any] | None, *, origin: str | None = None) -> Path | str | None:
    """What ``load`` takes for the fetched release a stored run stood on (the data identity its records carry), so
    a store of a paper-profile run is scored without naming its data; None when the run stood on other data. The
    release fetched again at another revision holds other items: refused in one line (naming ``origin``)."""
    if not data or data.get("kind") != "release":
        return None
    choice = fetched(paper)
    if data.get("revision") and choice.identity.revision != data.get("revision"):
        raise DataError(f"the run stood on {paper}'s release at {str(data.get('revision'))[:7]}, the data home holds "
                        f"{str(choice.identity.revision)[:7]}: give the data it ran on (--source PATH)", source=origin)
    return choice.source


def choose(paper: str, source: Any = None, *, profile: str) -> DataChoice | None:
    """The data a notebook runs on: ``source`` when given; the offline profile's generated sample (None: the
    paper makes it); under the paper profile the fetched release, else :class:`NotFetchedError` — a real model
    is never run on generated data by default."""
    if source is not None:
        return DataChoice(identity=given_identity(paper, source), source=source)
    if profile == "offline":
        return None
    return fetched(paper)


def given_identity(paper: str, source: Any, n_items: int | None = None) -> DataIdentity:
    """Files a user named: their path is all we know of them (they are not ranked as the paper's release)."""
    return DataIdentity(kind="source", paper=paper, release=str(source), n_items=n_items,
                        label=f"given files ({source})")


def sample_identity(paper: str, *, n_items: int | None, seed: int) -> DataIdentity:
    """A generated sample in the release's format: a pipeline demonstration, never ranked."""
    return DataIdentity(kind="sample", paper=paper, release=f"generated sample (seed {seed})", n_items=n_items,
                        label=f"generated sample (n={n_items}, seed {seed}): not the paper's data")


def tag(items: Any, identity: DataIdentity) -> Any:
    """Attach ``identity`` to an items frame (``attrs['data']``, with the number of items loaded): the runner
    stores it in every run's meta, and :func:`identity_of` reads it back. Items the release leaves out
    (``identity.left_out``: a known defect, images accepted as missing) are dropped here, each with the rest of its
    group where the release says so, and the identity counts them: use the frame this returns."""
    left_out = identity.left_out
    if any(lo.keys for lo in left_out):
        items, left_out = leave_out(items, left_out)
    d = identity.to_dict()
    d["left_out"] = [lo.summary() for lo in left_out]
    d["n_loaded"] = int(len(items))
    if d["n_items"] is None:
        d["n_items"] = int(len(items))
    if identity.kind == "sample" and not d.get("sha256"):  # a sample has no release files to name: its items do
        d["sha256"] = items_sha256(items)
    items.attrs["data"] = d
    return items


#: a folder an items frame names (a sample's image root) is digested by its files up to this many
MAX_FOLDER_FILES = 5000


def items_sha256(items: Any) -> str:
    """One sha256 of an items frame as loaded: every column (sorted) of every row, a value that is an absolute path
    of a file by that file's bytes (images), of a folder (an image root) by its files' names and bytes, bytes by
    their own sha256, so the same sample gives the same digest in any folder and another sample another."""
    folders: dict[str, str] = {}

    def folder(p: Path) -> str:
        if str(p) not in folders:
            h = hashlib.sha256()
            files: list[Path] = []
            for f in p.rglob("*"):  # stops at the cap: a folder of a whole release is named, never walked
                if f.is_file() and not f.is_symlink():  # a link out of the folder is not its content
                    files.append(f)
                    if len(files) > MAX_FOLDER_FILES:
                        return "folder:" + p.name
            for f in sorted(files):
                h.update(f"{f.relative_to(p).as_posix()}\0{hashlib.sha256(f.read_bytes()).hexdigest()}\n".encode())
            folders[str(p)] = "folder:" + h.hexdigest()
        return folders[str(p)]

    def part(v: Any) -> Any:
        if isinstance(v, bytes | bytearray):
            return "sha256:" + hashlib.sha256(v).hexdigest()
        if isinstance(v, str) and v.startswith("/") and len(v) < 4096:
            try:
                p = Path(v)
                if p.is_file():
                    return "file:" + hashlib.sha256(p.read_bytes()).hexdigest()
                if p.is_dir():
                    return folder(p)
            except (OSError, ValueError):
                pass
            return v
        if isinstance(v, dict):
            return {str(k): part(x) for k, x in sorted(v.items(), key=lambda kv: str(kv[0]))}
        if isinstance(v, list | tuple):
            return [part(x) for x in v]
        if hasattr(v, "tobytes") and hasattr(v, "size") and hasattr(v, "mode"):  # a PIL image
            return "image:" + hashlib.sha256(v.tobytes()).hexdigest()
        if hasattr(v, "tolist"):  # numpy values and arrays
            return part(v.tolist())
        return v if isinstance(v, int | float | bool | type(None)) else str(v)

    h = hashlib.sha256()
    columns = sorted(str(c) for c in getattr(items, "columns", []))
    for row in items[columns].itertuples(index=False, name=None) if columns else []:
        h.update(json.dumps([part(v) for v in row], sort_keys=True, default=str, allow_nan=True).encode())
        h.update(b"\n")
    return h.hexdigest()


def leave_out(items: Any, left_out: tuple[LeftOut, ...]) -> tuple[Any, tuple[LeftOut, ...]]:
    """``items`` without the rows whose key a :class:`LeftOut` names (and the rest of their groups), and the
    entries with their counts."""
    import numpy as np

    gone = np.zeros(len(items), dtype=bool)
    out = []
    for lo in left_out:
        if not lo.keys:
            out.append(lo)
            continue
        if lo.column not in items.columns:
            raise DataError(f"the release leaves out items by {lo.column!r}, a column these items lack")
        direct = items[lo.column].astype(str).isin(set(lo.keys)).to_numpy() & ~gone
        mask = direct.copy()
        if lo.whole and lo.whole in items.columns:
            groups = set(items.loc[direct, lo.whole])
            mask |= items[lo.whole].isin(groups).to_numpy() & ~gone
        out.append(replace(lo, items=int(direct.sum()), also=int((mask & ~direct).sum())))
        gone |= mask
    attrs = dict(items.attrs)
    kept = items[~gone].reset_index(drop=True)
    kept.attrs.update(attrs)
    return kept, tuple(out)


def identity_of(frame: Any) -> DataIdentity | None:
    """The data identity an items or scored frame carries, if any."""
    return DataIdentity.from_dict(getattr(frame, "attrs", {}).get("data"))
