"""The data home: where fetched releases live, what each holds, and which data a run stands on.

``vlamb-nb data fetch PAPER`` (:mod:`vlamb_nb.releases`) downloads a paper's release once into
``$VLAMB_DATA/<paper>/`` (default ``~/.cache/vlamb_nb/data``, or under ``$XDG_CACHE_HOME``) and writes
``manifest.json`` there last, so a release without a manifest is never read. This module only reads:
the paper profile asks :func:`choose` which data to run on, and every result carries the answer as a
:class:`DataIdentity` (release, revision, n of N items), so a report card can always say what a row stands on.

A low layer (paths and errors only): benchmarks, notebooks and the card import it; nothing here downloads.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from vlamb_nb.errors import DataError, NotFetchedError

DATA_ENV = "VLAMB_DATA"
MANIFEST = "manifest.json"
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
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> DataIdentity | None:
        if not d:
            return None
        return cls(kind=str(d.get("kind", "")), paper=str(d.get("paper", "")), release=str(d.get("release", "")),
                   revision=d.get("revision"), n_items=d.get("n_items"), label=str(d.get("label", "")),
                   deviations=tuple(d.get("deviations") or ()), n_loaded=d.get("n_loaded"))


@dataclass(frozen=True)
class DataChoice:
    """Which data a notebook runs on: a fetched release's load arguments, a given source, or a sample."""

    identity: DataIdentity
    source: Path | str | None = None  # what the paper's ``load`` takes
    images: Path | None = None  # the release's image folder, where the paper loads images separately
    extra: dict[str, Any] = field(default_factory=dict)  # other files of the release (e.g. released runs)


def fetched(paper: str) -> DataChoice:
    """The fetched release of ``paper`` as load arguments, or :class:`NotFetchedError` in one line."""
    manifest = read_manifest(paper)
    if manifest is None:
        raise NotFetchedError(f"{paper}: the paper's release is not fetched (data home {data_home()}); run "
                              f"`vlamb-nb data fetch {paper}` first, or pass source=")
    if not manifest.get("complete", False):
        missing = manifest.get("missing") or {}
        raise NotFetchedError(f"{paper}: the fetched release is incomplete ({_missing_text(missing)}); run "
                              f"`vlamb-nb data fetch {paper}` again, or `vlamb-nb data status` for details")
    root = release_dir(paper)
    load = manifest.get("load") or {}
    ident = DataIdentity(kind="release", paper=paper, release=str(manifest.get("release", "")),
                         revision=manifest.get("revision"), n_items=manifest.get("n_items"),
                         label=str(manifest.get("label", "")), deviations=tuple(manifest.get("deviations") or ()))
    extra = {k: root / v for k, v in (load.get("extra") or {}).items()}
    return DataChoice(identity=ident, source=root / load["source"] if load.get("source") else root,
                      images=root / load["images"] if load.get("images") else None, extra=extra)


def _missing_text(missing: dict[str, Any]) -> str:
    if not missing:
        return "not every part was fetched"
    return "; ".join(f"{v.get('count', '?')} {k} missing" for k, v in missing.items() if isinstance(v, dict)) \
        or "not every part was fetched"


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
    stores it in every run's meta, and :func:`identity_of` reads it back."""
    d = identity.to_dict()
    d["n_loaded"] = int(len(items))
    if d["n_items"] is None:
        d["n_items"] = int(len(items))
    items.attrs["data"] = d
    return items


def identity_of(frame: Any) -> DataIdentity | None:
    """The data identity an items or scored frame carries, if any."""
    return DataIdentity.from_dict(getattr(frame, "attrs", {}).get("data"))
