"""The registry of papers: one line per paper. Everything else that lists papers — the CLI's help and its
settings, ``vlamb-nb reproduce``'s notebooks, the report card, the tests — is derived from :data:`PAPERS`.

A sixth paper is a folder ``vlamb_nb/benchmarks/<name>/`` whose ``__init__`` exposes ``BENCHMARK`` (an instance
of :class:`~vlamb_nb.benchmarks.base.Benchmark`), its notebook(s) in ``notebooks/``, and one line below; a paper
whose package lives elsewhere names it (``Paper("toy", "Toy", (), module="toy_paper")``), or code registers it
with :func:`register`, or an installed package registers it through the ``vlamb_nb.papers`` entry point
(:data:`ENTRY_POINTS`), its notebooks beside its code.

One broken paper never breaks the others: a paper is imported only when it is asked for, and a package that
fails to import (whatever it raises, ``sys.exit()`` included; Ctrl-C aside) or declares what the package cannot
read (an unknown metric kind) raises :class:`BrokenPaper`, one line naming the paper, the cause and the paper's
file and line; commands that go over every paper (``data status``, ``data fetch``, ``compare``) report it for
that paper and go on with the others. What a paper prints while it is imported goes to stderr, never into a
command's ``--json``. A name is normalised once, where it is registered (lower case, as every look-up reads it),
so a registered name always resolves; a name registered twice (or an alias's) is refused in one line: two papers
under one name would share a data home folder and a store name.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from vlamb_nb.errors import SettingError, VlambError


class BrokenPaper(SettingError):
    """A registered paper whose package cannot be loaded or declares what cannot be read: one line naming the
    paper and the cause, so the commands over every paper report it for that paper only."""

    def __init__(self, paper: str, cause: str) -> None:
        super().__init__(f"{paper}: cannot be loaded: {cause}")
        self.paper, self.cause = paper, cause


@dataclass(frozen=True)
class Paper:
    """One registered paper: its benchmark name (= folder), title, the notebooks that reproduce it, and the
    package exposing its ``BENCHMARK`` (default ``vlamb_nb.benchmarks.<name>``)."""

    name: str
    title: str
    notebooks: tuple[str, ...]
    #: notebooks that need the model's weights (training, saliency): an ``openai:`` model cannot run them
    needs_weights: tuple[str, ...] = ()
    module: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", normal_name(self.name))  # once, here: every look-up reads it so
        if not self.module:
            object.__setattr__(self, "module", f"vlamb_nb.benchmarks.{self.name}")


def normal_name(name: str) -> str:
    """A paper's name as the registry keeps it and every look-up reads it (``MyToy`` and ``mytoy`` are one)."""
    return str(name).strip().lower()


PAPERS: tuple[Paper, ...] = (
    Paper("vague", "VAGUE", ("vague",)),
    Paper("mucar", "MUCAR", ("mucar",)),
    Paper("vflute", "V-FLUTE", ("vflute", "vflute_qlora"), needs_weights=("vflute_qlora",)),
    Paper("refadv", "Ref-Adv", ("refadv",)),
    Paper("racquet", "RACQUET", ("racquet",)),
)

#: notebooks that span papers, run after the papers' own (saliency maps need the model's weights)
CROSS_PAPER_NOTEBOOKS: tuple[str, ...] = ("saliency",)
CROSS_PAPER_NEEDS_WEIGHTS: tuple[str, ...] = ("saliency",)

ALIASES = {"v-flute": "vflute", "ref-adv": "refadv", "ref-adv-s": "refadv"}


def _duplicate(papers: tuple[Paper, ...], new: Paper) -> str | None:
    """Why ``new`` cannot join ``papers`` (its name is taken, by a paper or an alias), else None."""
    key = new.name.lower()
    if key in ALIASES:
        return f"{new.name!r} is an alias of {ALIASES[key]!r}"
    old = next((p for p in papers if p.name.lower() == key), None)
    if old is not None:
        return f"{new.name!r} is already registered (by {old.module})"
    return None


#: the entry-point group through which an installed package registers a paper of its own (in its pyproject.toml:
#: ``[project.entry-points."vlamb_nb.papers"] NAME = "its_package"``): its notebooks are the ``*.ipynb`` in its folder
ENTRY_POINTS = "vlamb_nb.papers"


def installed_papers() -> tuple[Paper, ...]:
    """The papers installed packages register (:data:`ENTRY_POINTS`), each named by its entry and read without
    importing it: a package that cannot be loaded is still listed, and :func:`get_benchmark` says why."""
    return _installed(tuple(sys.path))


@functools.lru_cache(maxsize=8)
def _installed(path: tuple[str, ...]) -> tuple[Paper, ...]:
    from importlib.metadata import entry_points

    out = []
    for ep in sorted(entry_points(group=ENTRY_POINTS), key=lambda e: e.name):
        module = ep.module  # "pkg" or "pkg:attr": the package holding BENCHMARK
        folder = _package_folder(module)
        notebooks = tuple(sorted(f.stem for f in folder.glob("*.ipynb"))) if folder is not None else ()
        out.append(Paper(ep.name, ep.name, notebooks, module=module))
    return tuple(out)


def notebook_file(name: str, directory: Path) -> Path:
    """Where notebook ``name`` is: ``directory/<name>.ipynb`` (the package's notebooks), else in the folder of
    the registered paper that lists it (a paper of its own package keeps its notebook beside its code)."""
    here = Path(directory) / f"{name}.ipynb"
    if here.is_file():
        return here
    for p in registered():
        if name in p.notebooks and not p.module.startswith("vlamb_nb."):
            folder = _package_folder(p.module)
            if folder is not None and (folder / f"{name}.ipynb").is_file():
                return folder / f"{name}.ipynb"
    return here


def registered() -> tuple[Paper, ...]:
    """:data:`PAPERS` and the installed papers (:func:`installed_papers`), checked: a name registered twice in
    :data:`PAPERS` is refused in one line naming both packages; an installed package that takes a name already
    registered is left out with a warning naming it (someone else's package never stops the package working)."""
    seen: tuple[Paper, ...] = ()
    for p in PAPERS:
        why = _duplicate(seen, p)
        if why:
            raise SettingError(f"paper registry: {p.module} cannot be registered as {p.name!r}: {why}; give it a "
                               "name of its own")
        seen += (p,)
    for p in installed_papers():
        why = _duplicate(seen, p)
        if why:
            _warn_once(f"the installed package {p.module} is not registered as {p.name!r}: {why}; give its "
                       f"{ENTRY_POINTS} entry point a name of its own")
            continue
        seen += (p,)
    return seen


@functools.lru_cache(maxsize=32)
def _warn_once(text: str) -> None:
    """One warning line per clash: named after the registry, with no source line under it."""
    import warnings

    warnings.warn_explicit(text, RegistryWarning, filename="vlamb_nb paper registry", lineno=0,
                           module="vlamb_nb.benchmarks")


class RegistryWarning(UserWarning):
    """An installed paper left out of the registry (its name is taken)."""


def register(entry: Paper) -> Paper:
    """Add a paper to the registry; a name already registered (or an alias) is refused in one line."""
    global PAPERS
    why = _duplicate(registered(), entry)
    if why:
        raise SettingError(f"paper registry: {entry.module} cannot be registered as {entry.name!r}: {why}; give it "
                           "a name of its own")
    PAPERS = (*PAPERS, entry)
    return entry


def list_benchmarks() -> list[str]:
    return [p.name for p in registered()]


def paper(name: str) -> Paper:
    key = ALIASES.get(normal_name(name), normal_name(name))
    for p in registered():
        if p.name == key:
            return p
    raise SettingError(f"unknown benchmark {name!r}; choose one of {', '.join(list_benchmarks())}")


def load_module(entry: Paper, submodule: str = "") -> ModuleType | None:
    """The paper's package (or its ``submodule``, None when the package has no such module), imported; any
    failure is a :class:`BrokenPaper` naming the cause and where in the paper's files it happened."""
    name = f"{entry.module}.{submodule}" if submodule else entry.module
    try:  # the package first: a submodule left in sys.modules by a failed import of its package is not the paper
        with _quiet_import():
            package = importlib.import_module(entry.module)
            return importlib.import_module(name) if submodule else package
    except ModuleNotFoundError as e:
        if submodule and e.name == name:
            return None
        if e.name == entry.module:
            raise BrokenPaper(entry.name, f"its package {entry.module} is not installed or not on the path") from None
        raise BrokenPaper(entry.name, _cause(e, entry.module)) from None
    except (VlambError, KeyboardInterrupt):
        raise
    except BaseException as e:  # noqa: BLE001 - whatever a paper's own code raises (sys.exit() too) is that paper's
        raise BrokenPaper(entry.name, _cause(e, entry.module)) from None


@contextlib.contextmanager
def _quiet_import():
    """While a paper's package is imported, what it prints goes to stderr: a command's stdout (``--json``) holds
    the command's output only."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


def _cause(e: BaseException, package: str) -> str:
    """``Type: message (file, line N)``, the file and line the last of the paper's own files in the traceback."""
    first = (str(e).strip().splitlines() or [""])[0]
    text = f"{type(e).__name__}: {first}" if first else type(e).__name__
    where = _package_folder(package)
    frames = [(f.filename, f.lineno) for f in traceback.extract_tb(e.__traceback__)]
    if isinstance(e, SyntaxError) and e.filename:
        frames.append((e.filename, e.lineno or 0))
    if where is not None:
        own = [(Path(f).resolve(), n) for f, n in frames if Path(f).resolve().is_relative_to(where)]
        if own:
            f, n = own[-1]
            return f"{text} ({Path(where.name, f.relative_to(where)).as_posix()}, line {n})"
    return text


def _package_folder(package: str) -> Path | None:
    mod = sys.modules.get(package)
    origin = getattr(mod, "__file__", None)
    if origin is None:
        try:
            with _quiet_import():  # a dotted name imports its parent package: the paper's own code runs
                spec = importlib.util.find_spec(package)
        except KeyboardInterrupt:
            raise
        except BaseException:  # noqa: BLE001 - a package that cannot even be found is reported where it is loaded
            return None
        origin = spec.origin if spec is not None else None
    return Path(origin).resolve().parent if origin else None


def get_benchmark(name: str) -> Any:
    """The paper's ``BENCHMARK``, checked: a package that fails to import, exposes none, or declares a metric
    the package cannot read raises :class:`BrokenPaper` (one line), never a traceback from inside it."""
    from vlamb_nb.stats.metric import KINDS, Metric

    entry = paper(name)
    bench = getattr(load_module(entry), "BENCHMARK", None)
    if not any((c.__module__, c.__qualname__) == ("vlamb_nb.benchmarks.base", "Benchmark")
               for c in type(bench).__mro__):  # isinstance without importing base (which imports the registry)
        raise BrokenPaper(entry.name, f"its package {entry.module} exposes no BENCHMARK (a Benchmark instance)")
    metrics = getattr(bench, "metrics", ())
    for m in metrics if isinstance(metrics, list | tuple) else [metrics]:
        if not isinstance(m, Metric):
            raise BrokenPaper(entry.name, f"its metrics hold {type(m).__name__} {m!r:.60}, not a Metric")
        if m.kind not in KINDS:
            raise BrokenPaper(entry.name, f"metric {m.name!r} has unknown kind {m.kind!r}; one of {', '.join(KINDS)}")
    return bench


def notebooks() -> tuple[str, ...]:
    """Every notebook in execution order: each paper's, then the cross-paper ones."""
    return tuple(nb for p in registered() for nb in p.notebooks) + CROSS_PAPER_NOTEBOOKS


def needs_weights(notebook: str) -> bool:
    """Whether a notebook needs the model's weights (so an ``openai:`` model cannot run it)."""
    return notebook in CROSS_PAPER_NEEDS_WEIGHTS or any(notebook in p.needs_weights for p in registered())


def settings_help() -> str:
    """``name: setting setting ...; ...`` for every benchmark (imports each benchmark module); a paper that
    cannot be loaded shows why in its place."""
    parts = []
    for p in registered():
        try:
            parts.append(f"{p.name}: {' '.join(get_benchmark(p.name).settings)}")
        except BrokenPaper as e:
            parts.append(f"{p.name}: (cannot be loaded: {e.cause})")
    return "; ".join(parts)
