"""Files and folders written all-or-nothing: a reader (or the next run) finds the old version or the new one,
never half of one, nor a new file beside an old page.

A file is written to a temporary name beside it and renamed over the old one (a rename within one folder is
atomic); a set of files that belong together (a page and the files it shows) is written into a temporary folder
first and moved in with Ctrl-C held back, the page last and the old page gone before any new file lands. Whatever
fails half-way (a full disk, Ctrl-C) removes the temporary files and leaves what was there before.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """Hold Ctrl-C back for the duration of the block (a few renames), then raise it: a move of several files is
    never cut in the middle. Outside the main thread, where no signal handler can be set, nothing is held."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    old = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
    if caught:
        raise KeyboardInterrupt


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file renamed over it."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


@contextlib.contextmanager
def staged(directory: str | os.PathLike) -> Iterator[Path]:
    """A temporary folder beside ``directory`` (created if missing) to write a set of files into; the caller moves
    them in with :func:`move_in`. The temporary folder is removed however the block ends."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", suffix=".part", dir=directory.parent))
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def move_in(tmp: Path, directory: Path, names: Sequence[str], *, page: str, stale: Sequence[str] = ()) -> list[Path]:
    """Move ``names`` (files in ``tmp``) into ``directory`` with Ctrl-C held back: first the old ``page`` and the
    ``stale`` files this version does not write are removed, then each file is renamed in, ``page`` (one of
    ``names``) last. Returns the moved files' paths in the order of ``names``."""
    order = [n for n in names if n != page] + [page]
    with interrupts_held():
        for name in [page, *stale]:
            with contextlib.suppress(FileNotFoundError):
                (directory / name).unlink()
        for name in order:
            os.replace(tmp / name, directory / name)
    return [directory / n for n in names]
