"""The registry of papers: one line per paper. Everything else that lists papers — the CLI's help and its
settings, ``vlamb-nb reproduce``'s notebooks, the report card, the tests — is derived from :data:`PAPERS`.

A sixth paper is a folder ``vlamb_nb/benchmarks/<name>/`` whose ``__init__`` exposes ``BENCHMARK`` (an instance
of :class:`~vlamb_nb.benchmarks.base.Benchmark`), its notebook(s) in ``notebooks/``, and one line below; a paper
whose package lives elsewhere names it (``Paper("toy", "Toy", (), module="toy_paper")``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from vlamb_nb.errors import SettingError


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
        if not self.module:
            object.__setattr__(self, "module", f"vlamb_nb.benchmarks.{self.name}")


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


def list_benchmarks() -> list[str]:
    return [p.name for p in PAPERS]


def paper(name: str) -> Paper:
    key = ALIASES.get(name.lower(), name.lower())
    for p in PAPERS:
        if p.name == key:
            return p
    raise SettingError(f"unknown benchmark {name!r}; choose one of {', '.join(list_benchmarks())}")


def get_benchmark(name: str):
    return importlib.import_module(paper(name).module).BENCHMARK


def notebooks() -> tuple[str, ...]:
    """Every notebook in execution order: each paper's, then the cross-paper ones."""
    return tuple(nb for p in PAPERS for nb in p.notebooks) + CROSS_PAPER_NOTEBOOKS


def needs_weights(notebook: str) -> bool:
    """Whether a notebook needs the model's weights (so an ``openai:`` model cannot run it)."""
    return notebook in CROSS_PAPER_NEEDS_WEIGHTS or any(notebook in p.needs_weights for p in PAPERS)


def settings_help() -> str:
    """``name: setting setting ...; ...`` for every benchmark (imports each benchmark module)."""
    return "; ".join(f"{p.name}: {' '.join(get_benchmark(p.name).settings)}" for p in PAPERS)
