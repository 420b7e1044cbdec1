"""Benchmark registry: ``get_benchmark(name)`` imports the module lazily and returns its instance."""

from __future__ import annotations

import importlib

from vlamb_nb.errors import SettingError

# name -> module; each module defines ``BENCHMARK``, an instance of ``Benchmark``
_MODULES = {
    "vague": "vlamb_nb.benchmarks.vague",
    "mucar": "vlamb_nb.benchmarks.mucar",
    "vflute": "vlamb_nb.benchmarks.vflute",
    "refadv": "vlamb_nb.benchmarks.refadv",
    "racquet": "vlamb_nb.benchmarks.racquet",
}

ALIASES = {"v-flute": "vflute", "ref-adv": "refadv", "ref-adv-s": "refadv"}


def list_benchmarks() -> list[str]:
    return list(_MODULES)


def get_benchmark(name: str):
    key = ALIASES.get(name.lower(), name.lower())
    if key not in _MODULES:
        raise SettingError(f"unknown benchmark {name!r}; choose one of {', '.join(_MODULES)}")
    return importlib.import_module(_MODULES[key]).BENCHMARK
