"""Run metadata: what produced a result, and every way the run deviates from the paper's setup."""

from __future__ import annotations

import functools
import os
import platform
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Deviation:
    """One difference from a paper's setup, printed under every table it affects."""

    what: str  # e.g. "quantization"
    paper: str  # what the paper did, e.g. "fp16"
    ours: str  # what this run did, e.g. "4-bit NF4 (bitsandbytes)"
    affects: str = ""  # table ids or "all"

    def __str__(self) -> str:
        tail = f" [affects {self.affects}]" if self.affects else ""
        return f"{self.what}: paper {self.paper}; here {self.ours}{tail}"

    def to_dict(self) -> dict[str, str]:
        """Its fields, as a store's run meta and ``results.json`` hold them."""
        return asdict(self)

    @classmethod
    def of(cls, value: Any) -> Deviation:
        """The one converter: a deviation as a run stored it (its fields, read back from JSON) or a
        :class:`Deviation`. Whatever else a file holds in its place is kept as its text, never dropped."""
        if isinstance(value, Deviation):
            return value
        if isinstance(value, Mapping):
            return cls(*(str(value.get(k) or "") for k in ("what", "paper", "ours", "affects")))
        return cls(str(value), "(not stated)", "(not stated)")


def quantization_deviation(quantization: str) -> Deviation:
    """The one deviation a quantized model brings to every paper (all of them ran full or half precision)."""
    return Deviation("quantization", "full/half precision weights", quantization, "all")


def package_version() -> str:
    """The installed package's version, read from its metadata (so nothing here imports the package root)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("vlamb_nb")
    except PackageNotFoundError:  # a source tree on the path without an install
        return "0+unknown"


#: what a commit with local changes is shown as (the page, ``vlamb-nb card``), from a record's ``dirty`` flag too
LOCAL_CHANGES = " + local changes"


def package_commit(folder: str | os.PathLike | None = None) -> tuple[str, bool] | None:
    """The commit of the package's own checkout and whether its tracked files differ from it; None where the folder
    holding the ``vlamb_nb`` package (``folder``) is not the top of a git checkout: an installed package, or one
    vendored inside another project's repository, whose commit is that project's, never the package's. The one
    reading of it, for the run record and the pages alike."""
    root = Path(folder) if folder is not None else Path(__file__).resolve().parent.parent
    return _package_commit(str(root.resolve()))


@functools.lru_cache(maxsize=8)
def _package_commit(root: str) -> tuple[str, bool] | None:
    import re
    import subprocess

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", "-C", root, *args], capture_output=True, text=True, timeout=10, check=False)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    top = git("rev-parse", "--show-toplevel")
    if not top or Path(top).resolve() != Path(root):
        return None
    head = git("rev-parse", "HEAD")
    dirty = git("status", "--porcelain", "--untracked-files=no")
    if head is None or dirty is None or not re.fullmatch(r"[0-9a-f]{40}", head):
        return None
    return head, bool(dirty)


def commit_label(commit: str | None, dirty: bool | None) -> str | None:
    """A commit as the pages show it: ``<sha> + local changes`` where the checkout differed from it."""
    return None if not commit else commit + (LOCAL_CHANGES if dirty else "")


def _versions() -> dict[str, str]:
    out = {"vlamb_nb": package_version(), "python": sys.version.split()[0], "platform": platform.platform()}
    # report heavy libraries only if something already imported them (never import them here)
    for name in ("torch", "transformers", "bitsandbytes", "numpy", "pandas"):
        mod = sys.modules.get(name)
        if mod is not None:
            out[name] = getattr(mod, "__version__", "?")
    return out


@dataclass
class RunMeta:
    benchmark: str = ""
    setting: str = ""
    model: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    deviations: list[Deviation] = field(default_factory=list)
    template: str = ""  # digest of the benchmark's prompt templates (a changed prompt is another run)
    source: str = ""  # digest of the items the run was asked about (another data source is another run)
    #: what the items are (:class:`~vlamb_nb.datahome.DataIdentity`: release, revision, N), so every stored answer
    #: says which data it stands on
    data: dict[str, Any] = field(default_factory=dict)
    #: the digest of the asked items' fields and their number (``Benchmark.item_digests``): a scoring against other
    #: items (another answer key) is told by it
    items_sha256: str = ""
    n_asked: int | None = None
    #: the digest of what makes the run (model, setting, seed, prompts, items, options): a store holds one run, so
    #: a run whose key differs from the one its store holds writes its own file (``store.choose_store``)
    run_key: str = ""
    versions: dict[str, str] = field(default_factory=_versions)
    started: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%S%z"))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def all_deviations(*groups: Iterable[Deviation | Mapping[str, Any]]) -> list[Deviation]:
    """The deviations of every group, each listed once, in order: one line per thing that differs, however often
    and in whichever spelling it is said (the first's wording, with what the others add).

    A group is what a run carries: a scored frame's ``attrs["deviations"]`` (stored with every record by
    ``Benchmark.run``), a study's or a training run's list, a notebook's own (``NotebookConfig.all_deviations``
    puts those first). This is how every notebook gets the deviations it records and prints.
    """
    out: list[Deviation] = []
    at: dict[str, int] = {}
    for group in groups:
        for d in map(Deviation.of, group):
            key = _meaning(d.what)
            if key not in at:
                at[key] = len(out)
                out.append(d)
                continue
            # the same thing said twice (``max_new_tokens`` and ``max new tokens``; the notebook's model and the
            # run's): one line, with what each adds
            first = out[at[key]]
            ours = first.ours if _meaning(d.ours) in _meaning(first.ours) else (
                d.ours if _meaning(first.ours) in _meaning(d.ours) else f"{first.ours}; {d.ours}")
            affects = first.affects if d.affects in ("", first.affects) or first.affects == "all" else (
                d.affects if d.affects == "all" or not first.affects else f"{first.affects}, {d.affects}")
            out[at[key]] = Deviation(first.what, first.paper, ours, affects)
    return out


def _meaning(text: str) -> str:
    """A deviation's words as compared: case, underscores and spacing left out."""
    return " ".join(str(text).replace("_", " ").lower().split())


def deviation_lines(deviations: Iterable[Deviation | Mapping[str, Any]]) -> list[str]:
    """Each deviation as the line printed under the tables it affects."""
    return [str(Deviation.of(d)) for d in deviations]


def format_deviations(deviations: Iterable[Deviation | Mapping[str, Any]]) -> str:
    """The footnote printed under an affected table."""
    lines = deviation_lines(deviations)
    if not lines:
        return "Deviations from the paper's setup: none."
    return "Deviations from the paper's setup:\n" + "\n".join(f"  - {line}" for line in lines)
