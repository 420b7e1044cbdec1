"""What each paper's release is, gathered from the paper registry: every paper's ``data.py`` declares its
``RELEASE`` (:class:`~vlamb_nb.release_spec.Release`: sources at their known-good revisions, checksums, counts,
what the items name, known defects, metric models), so this module names no paper and a new paper's release is
fetched once its folder and its registry line exist.
"""

from __future__ import annotations

import importlib
from functools import cache

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


def releases() -> dict[str, Release]:
    """Every registered paper's release, in registry order; a paper that declares none (no ``data.py``, or no
    ``RELEASE`` in it: its data is given by the user) is left out here, and :func:`release` names it in one line."""
    from vlamb_nb.benchmarks import PAPERS

    return {p.name: _declared(p.name, p.module) for p in PAPERS if _declares(p.module)}


def _declares(package: str) -> bool:
    try:
        module = importlib.import_module(f"{package}.data")
    except ModuleNotFoundError as e:
        if e.name == f"{package}.data":
            return False
        raise
    return getattr(module, "RELEASE", None) is not None


@cache
def _declared(name: str, package: str) -> Release:
    """The ``RELEASE`` of ``<package>.data``: the package the registry line names, so a paper whose folder lives
    outside ``vlamb_nb.benchmarks`` (``Paper(..., module=...)``) is fetched like the others."""
    if not _declares(package):
        raise SettingError(f"{name}: its data.py declares no RELEASE, so its release cannot be fetched (give its data "
                           "with --source)")
    rel = getattr(importlib.import_module(f"{package}.data"), "RELEASE", None)
    if not isinstance(rel, Release):
        raise SettingError(f"{name}: its data.py declares no RELEASE, so its release cannot be fetched")
    if rel.paper != name:
        raise SettingError(f"{name}: its data.py declares the release of {rel.paper!r}")
    return rel


def release(paper: str) -> Release:
    """The release of ``paper`` (aliases such as ``ref-adv`` accepted)."""
    from vlamb_nb.benchmarks import paper as registry_paper

    entry = registry_paper(paper)
    return _declared(entry.name, entry.module)
