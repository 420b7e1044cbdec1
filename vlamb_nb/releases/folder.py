"""One paper's folder in the data home, as the fetch writes it: one writer at a time, one folder per revision, and
only names that stay inside.

Layout: ``<data home>/<paper>/`` holds ``manifest.json`` (the current revision; written last), ``.lock`` and
``revisions/<key>/`` — each revision's ``files/``, its ``.staging/`` (downloads in progress, resumed by the next
fetch), its ``.journal.jsonl`` (each file verified in place, with its stamp) and its own ``manifest.json``. A
file becomes visible under ``files/`` only verified, in one ``os.replace``.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from vlamb_nb.datahome import file_sha256, release_dir, stamp
from vlamb_nb.errors import FetchError
from vlamb_nb.releases.transfer import Failure, os_failure

LOCK = ".lock"
REVISIONS = "revisions"
JOURNAL = ".journal.jsonl"
STAGING = ".staging"
LOCK_WAIT_S = 2.0
#: a write refused because the data home cannot be written (not a full or failing disk)
UNWRITABLE = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})


def git_blob_sha1(path: Path) -> str:
    """The git object id of a file (what the hub lists for files not stored with LFS, and GitHub for every file)."""
    h = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


_DRIVE = re.compile(r"^[A-Za-z]:")


def safe_relpath(name: Any, *, paper: str, source: str) -> str:
    """A file name from a listing, an archive, a copy's manifest or a copy, as a relative path that stays inside
    the release folder; anything else (``..``, an absolute name, a drive, a backslash, NUL) is refused in one
    line naming where it came from."""
    text = name if isinstance(name, str) else repr(name)
    bad = (not isinstance(name, str) or not name.strip() or "\x00" in name or "\\" in name
           or name.startswith("/") or _DRIVE.match(name) is not None)
    parts = PurePosixPath(name).parts if not bad else ()
    if bad or not parts or any(p in ("..", "") for p in parts):
        raise FetchError(f"{paper}: {source} names the file {text[:120]!r}, which is not a plain relative path "
                         "inside the release (an absolute name, '..' or a drive); refused, nothing was written")
    return "/".join(p for p in parts if p != ".")


def within(path: Path, root: Path) -> bool:
    """Whether ``path`` (links followed) lies inside ``root`` (links followed)."""
    try:
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError):
        return False
    return True


class Lock:
    """One writer per paper (a maintained cross-platform file lock): a second fetch of the same paper waits a
    moment, then is refused in one line. In a paper folder that cannot be written (a read-only data home) no lock
    is taken: no one can write there, and the fetch can still verify what is in place (any write it then needs
    fails in one line)."""

    def __init__(self, paper: str, root: Path, wait: float = LOCK_WAIT_S) -> None:
        from filelock import FileLock

        self.paper, self.path, self.wait = paper, root / LOCK, wait
        self.lock = FileLock(str(self.path), timeout=wait)
        self.held = False

    def __enter__(self) -> Lock:
        from filelock import Timeout

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.lock.acquire()
        except Timeout:
            raise FetchError(f"{self.paper}: another fetch of {self.paper} is writing its release (lock {self.path}); "
                             "wait for it to end, then run this again") from None
        except OSError as e:
            if e.errno in UNWRITABLE and self.path.parent.is_dir() and not os.access(self.path.parent, os.W_OK):
                return self
            raise os_failure(e, str(self.path.parent)) from None
        self.held = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self.held:
            self.lock.release()


def revision_key(revisions: dict[str, str | None]) -> str:
    """A revision folder's name: the sources' revisions, hashed (the same revisions, the same folder)."""
    text = json.dumps(sorted((k, v or "") for k, v in revisions.items()))
    return hashlib.sha1(text.encode()).hexdigest()[:12]


@dataclass
class Journal:
    """Files verified in place (path, size, sha256, what they were checked against, stamp), appended as each lands,
    so a fetch that is stopped or fails half-way keeps what it had."""

    path: Path
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.path.is_file():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    e = json.loads(line)
                    self.entries[str(e["path"])] = e
                except (ValueError, KeyError, TypeError):
                    continue  # a torn last line after a kill: that file is checked again

    def add(self, entry: dict[str, Any]) -> None:
        """One line per file (not synced: a line lost in a crash only means that file is hashed again)."""
        self.entries[entry["path"]] = entry
        try:
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry) + "\n")
        except OSError as e:
            if e.errno in UNWRITABLE:
                return  # a read-only data home being re-checked: the file is only hashed again next time
            raise os_failure(e, str(self.path)) from None


class RevisionFolder:
    """``revisions/<key>/`` of one paper: where its files are staged, verified and placed."""

    def __init__(self, paper: str, key: str) -> None:
        self.paper = paper
        self.root = release_dir(paper)
        self.base = self.root / REVISIONS / key
        self.files = self.base / "files"
        self.stage = self.base / STAGING  # made when something is staged (a re-check in place writes nothing)
        try:
            self.files.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise os_failure(e, str(self.base)) from None
        self.journal = Journal(self.base / JOURNAL)

    @property
    def folder(self) -> str:
        """The folder as the manifest names it (relative to the paper's folder)."""
        return self.base.relative_to(self.root).as_posix()

    def target(self, rel: str) -> Path:
        """``files/<rel>``, refused if a link in the way would lead out of the revision folder."""
        path = self.files / rel
        probe = path.parent
        while probe != self.files and not probe.exists():
            probe = probe.parent
        if not within(probe, self.files) or path.is_symlink():
            raise FetchError(f"{self.paper}: {rel} would be written outside the release folder (a link in the way); "
                             "refused")
        return path

    def staged(self, kind: str, rel: str) -> Path:
        return self.stage / kind / (rel + ".part")

    def in_place(self, rel: str, *, sha256: str | None, git_sha1: str | None) -> dict[str, Any] | None:
        """The journal entry of ``files/<rel>`` when the file there is still the one verified: its stamp unchanged,
        or (stamp changed) its bytes hashed again and matching what is expected. A file that no longer matches is
        removed, so it is fetched again (the journal is never trusted over the bytes)."""
        path = self.files / rel
        if not path.is_file() or path.is_symlink():
            return None
        e = self.journal.entries.get(rel)
        now = stamp(path)
        if e is not None and e.get("stamp") == now and _agrees(e, sha256, git_sha1):
            return e
        got = file_sha256(path)
        ok = (sha256 == got) if sha256 else (git_sha1 == git_blob_sha1(path)) if git_sha1 else \
            (e is not None and e.get("sha256") == got)
        if not ok:
            path.unlink()
            return None
        entry = {**(e or {"path": rel, "verified": "in place"}), "size": now[0], "sha256": got, "stamp": now}
        self.journal.add(entry)
        return entry

    def place(self, staged: Path, rel: str, *, sha256: str | None, git_sha1: str | None, how: str,
              source: str, got: str | None = None) -> dict[str, Any]:
        """Verify ``staged`` (``got``: its sha256, hashed as it arrived) and move it to ``files/<rel>``; bytes that
        are not the listed or pinned ones are refused and removed."""
        got = got or file_sha256(staged)
        if sha256 is not None and got != sha256:
            staged.unlink(missing_ok=True)
            raise Failure("checksum", f"{self.paper}: {rel} has sha256 {got[:12]}…, {source} lists {sha256[:12]}…; "
                                      "the file was refused (a changed upstream file, a broken mirror or a damaged "
                                      "copy)")
        if git_sha1 is not None and sha256 is None and git_blob_sha1(staged) != git_sha1:
            staged.unlink(missing_ok=True)
            raise Failure("checksum", f"{self.paper}: {rel} does not match the git object {git_sha1[:12]}… "
                                      f"{source} lists; the file was refused")
        final = self.target(rel)
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged, final)
        except OSError as e:
            raise os_failure(e, str(final)) from None
        now = stamp(final)
        entry = {"path": rel, "size": now[0], "sha256": got, "git_sha1": git_sha1, "verified": how, "stamp": now}
        self.journal.add(entry)
        return entry

    def clear_stage(self) -> None:
        shutil.rmtree(self.stage, ignore_errors=True)


def _agrees(entry: dict[str, Any], sha256: str | None, git_sha1: str | None) -> bool:
    if sha256 is not None:
        return entry.get("sha256") == sha256
    if git_sha1 is not None:
        return entry.get("git_sha1") == git_sha1
    return True


def copy_into(src: Path, staged: Path, *, link: bool) -> None:
    """``src`` to ``staged``: with ``link`` a hard link where the file system allows (the data home's own files: no
    second copy of the bytes), else a copy (a user's files, which may change after the import)."""
    try:
        staged.parent.mkdir(parents=True, exist_ok=True)
        staged.unlink(missing_ok=True)
        try:
            if not link:
                raise OSError("copy")
            os.link(src, staged)
        except OSError:
            shutil.copyfile(src, staged)
    except OSError as e:
        raise os_failure(e, str(staged)) from None
