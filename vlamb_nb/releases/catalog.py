"""What each paper's release is, gathered from the paper registry: every paper's ``data.py`` declares its
``RELEASE`` (:class:`~vlamb_nb.release_spec.Release`: sources at their known-good revisions, checksums, counts,
what the items name, known defects, metric models), so this module names no paper and a new paper's release is
fetched once its folder and its registry line exist.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from typing import Any

from vlamb_nb.errors import SettingError
from vlamb_nb.release_spec import (
    GitHubFolder,
    HubFiles,
    ItemFiles,
    KnownDefect,
    MetricModel,
    RecordImages,
    Release,
    UrlFile,
)

__all__ = ["GitHubFolder", "HubFiles", "ItemFiles", "KnownDefect", "MetricModel", "RecordImages", "Release",
           "UrlFile", "release", "releases"]


def releases(*, broken: dict[str, Any] | None = None) -> dict[str, Release]:
    """Every registered paper's release, in registry order; a paper that declares none (no ``data.py``, or no
    ``RELEASE`` in it: its data is given by the user) is left out here, and :func:`release` names it in one line.

    A paper that cannot be loaded (:class:`~vlamb_nb.benchmarks.BrokenPaper`) raises its one line; given
    ``broken``, the error goes there under the paper's name instead and the other papers' releases are returned,
    so one broken paper never stops the others' fetch or status."""
    from vlamb_nb.benchmarks import BrokenPaper, registered

    out = {}
    for p in registered():
        try:
            if _declares(p):
                out[p.name] = _declared(p.name, p.module)
        except BrokenPaper as e:
            if broken is None:
                raise
            broken[p.name] = e
    return out


def _declares(entry: Any) -> bool:
    from vlamb_nb.benchmarks import load_module

    module = load_module(entry, "data")
    return module is not None and getattr(module, "RELEASE", None) is not None


@cache
def _declared(name: str, package: str) -> Release:
    """The ``RELEASE`` of ``<package>.data``: the package the registry line names, so a paper whose folder lives
    outside ``vlamb_nb.benchmarks`` (``Paper(..., module=...)``) is fetched like the others."""
    from vlamb_nb.benchmarks import BrokenPaper, load_module, normal_name, paper

    entry = paper(name)
    if not _declares(entry):
        raise SettingError(f"{name}: its data.py declares no RELEASE, so its release cannot be fetched (give its data "
                           "with --source)")
    rel = getattr(load_module(entry, "data"), "RELEASE", None)
    if not isinstance(rel, Release):
        raise BrokenPaper(name, f"its data.py declares RELEASE as {type(rel).__name__}, not a Release")
    if normal_name(rel.paper) != name:
        raise BrokenPaper(name, f"its data.py declares the release of {rel.paper!r}, not of {name!r}")
    return replace(rel, paper=name) if rel.paper != name else rel  # one name for its data home folder


def release(paper: str) -> Release:
    """The release of ``paper`` (aliases such as ``ref-adv`` accepted)."""
    from vlamb_nb.benchmarks import paper as registry_paper

    entry = registry_paper(paper)
    return _declared(entry.name, entry.module)
