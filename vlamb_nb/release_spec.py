"""How a paper declares its release: where each file comes from (at which revision), how many items it must hold,
what the items name, and the release's known defects, stated as data.

A paper's ``data.py`` holds its ``RELEASE``; :mod:`vlamb_nb.releases` builds the catalog from the paper registry
and fetches, verifies and records what a declaration names. This module is a low layer (errors and the standard
library only), so a paper can declare its release without importing anything that lists the papers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RAW = "https://raw.githubusercontent.com"
GITHUB_API = "https://api.github.com"


@dataclass(frozen=True)
class HubFiles:
    """Files of a hub repository matching ``patterns``, placed under ``files/<dest>``.

    ``revision`` is the known-good commit the fetch asks for; None where none is known yet (the commit fetched is
    then recorded, said so, and asked for again by later fetches until ``--revision`` moves it)."""

    repo: str
    patterns: tuple[str, ...] = ("*",)
    revision: str | None = None
    repo_type: str = "dataset"
    dest: str = ""
    gated: bool = False
    what: str = "data"  # "images": every file is decoded before it counts


@dataclass(frozen=True)
class UrlFile:
    """One file at a fixed URL of a repository at a pinned commit, with the sha256 and size of the released bytes.

    ``url`` may hold ``{revision}``: ``--revision`` then fetches another commit, where the pinned sha256 is checked
    only if that commit is listed in ``identical_at`` (else the file's sha256 is recorded, not pinned)."""

    dest: str
    url: str
    sha256: str
    size: int
    revision: str | None = None
    source: str = ""  # e.g. "THUNLP-MT/MUCAR": what ``--revision SOURCE=REV`` names
    identical_at: tuple[str, ...] = ()  # other commits known to hold the same bytes
    what: str = "data"


@dataclass(frozen=True)
class GitHubFolder:
    """The files of a GitHub repository folder at a pinned commit, found by listing the folder (the contents API).

    ``pinned`` gives the sha256 and size of files whose released bytes are known here; the others are checked
    against the listing's git object id, and their sha256 is recorded at first fetch (not pinned)."""

    repo: str
    path: str
    revision: str
    pattern: str = "*"
    dest: str = ""
    expected: int | None = None  # how many matching files the folder holds at that commit
    pinned: Mapping[str, tuple[str, int]] = field(default_factory=dict)  # file name -> (sha256, size)
    what: str = "data"


@dataclass(frozen=True)
class RecordImages:
    """Images the records name by URL, downloaded into ``files/<dest>`` under the package's image-cache names."""

    urls: Callable[[Path], dict[str, str]]  # files folder -> {url: the first record id that uses it}
    dest: str = "images"
    what: str = "images"
    max_bytes: int = 50_000_000  # an image larger than this is refused (no size is published)


@dataclass(frozen=True)
class ItemFiles:
    """Files the items name by a key (an image id, an image URL): each key must resolve to a fetched file."""

    column: str  # the items column holding the key
    resolve: Callable[[Path], Callable[[str], Path | None]]  # files folder -> (key -> the file, or None)
    what: str = "images"
    #: files folder -> (a key that names no file -> the keys of the fetched files it could mean): a key with two
    #: or more is a defect (reported with them, its items left out, never guessed), not a download to retry
    candidates: Callable[[Path], Callable[[str], tuple[str, ...]]] | None = None


@dataclass(frozen=True)
class KnownDefect:
    """Keys the release names but cannot give as meant, each with the files it could mean: the items that use one
    are left out (never guessed), and the release stays usable."""

    column: str  # the items column holding the key
    keys: Mapping[str, tuple[str, ...]]  # key -> the candidate keys (files) it could mean
    why: str
    found_at: str = ""  # the source revision where the defect was found


@dataclass(frozen=True)
class MetricModel:
    """A model the paper's default scorer loads, fetched into the Hugging Face cache where it looks."""

    repo: str
    why: str
    allow: tuple[str, ...] = ("*.json", "*.txt", "*.model", "*.safetensors", "*.bin", "*.py")


Part = HubFiles | UrlFile | GitHubFolder | RecordImages


@dataclass(frozen=True)
class Release:
    """One paper's release: its parts, the counts it must have, what the items name, its known defects, and what
    the paper's ``load`` takes from the fetched folder."""

    paper: str
    name: str  # e.g. "hub:dddraxxx/ref-adv-s"
    licence: str
    parts: tuple[Part, ...]
    expected: Mapping[str, int]
    count: Callable[[Path], dict[str, int]]
    load: Mapping[str, Any]  # {"source": path under the release folder, "images": ..., "extra": {...}}
    n_items: int
    size: str  # what a user downloads, for the README and `data status`
    unit: str = "items"  # what one item is called (queries, rows, questions)
    items: Callable[[Path], Any] | None = None  # files folder -> the items frame, to name what is left out
    item_id: str = "id"  # the items column naming one item
    names: ItemFiles | None = None
    whole: str | None = None  # an items column whose groups are left out whole (a pair scored all-or-nothing)
    defects: tuple[KnownDefect, ...] = ()
    models: tuple[MetricModel, ...] = ()
    notes: tuple[str, ...] = ()
    #: data the authors published beside the release (a website demo), by the release name a run's data identity
    #: records for it: where it lies when it is on this machine (None: not here). A page finds a run's items there.
    beside: Mapping[str, Callable[[], Path | None]] = field(default_factory=dict)

    def sources(self) -> list[str]:
        """The names ``--revision SOURCE=REV`` takes, in order."""
        out = []
        for p in self.parts:
            name = p.repo if isinstance(p, HubFiles | GitHubFolder) else p.source if isinstance(p, UrlFile) else ""
            if name and name not in out:
                out.append(name)
        return out


def parquet_rows(files: list[Path]) -> int:
    """Rows of parquet shards from their footers (a count needs no decoding); a file that is not parquet is a
    one-line DataError naming it."""
    import pyarrow.parquet as pq

    from vlamb_nb.errors import DataError

    n = 0
    for f in files:
        try:
            n += pq.ParquetFile(f).metadata.num_rows
        except Exception as e:  # noqa: BLE001 - pyarrow raises several types for a file that is not parquet
            first = (str(e).strip().splitlines() or [type(e).__name__])[0][:120]
            raise DataError(f"not a parquet file ({type(e).__name__}: {first})", source=Path(f).name) from None
    return n
