"""The package layout: one folder per paper with the same step files, no import cycles, no unused modules.

The import graph is read from the source (every ``import``, also inside functions), so a cycle that only
bites when a function runs is caught too.
"""

from __future__ import annotations

import ast
import json
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "vlamb_nb"
PAPERS = ("vague", "mucar", "vflute", "refadv", "racquet")
# every paper has these steps; a paper may add its own (mucar/judge.py, vflute/finetune.py, ...)
COMMON = {"__init__.py", "data.py", "prompts.py", "parse.py", "score.py", "audit.py", "benchmark.py",
          "report.py", "plots.py"}


def _modules(root: Path = PKG) -> dict[str, Path]:
    out = {}
    for f in root.rglob("*.py"):
        parts = list(f.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


def import_graph(root: Path = PKG) -> dict[str, set[str]]:
    """Module -> the package modules it imports (``from pkg import sub`` counts as importing ``pkg.sub``)."""
    mods = _modules(root)

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        package = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            for t in targets:
                r = resolve(t)
                if r and r != mod and not mod.startswith(r + "."):  # a submodule importing its own package
                    graph[mod].add(r)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def notebook_imports(folder: Path) -> set[str]:
    """Every name the notebooks' code cells import: ``from a.b import c`` gives ``a.b`` and ``a.b.c``."""
    out: set[str] = set()
    for nb in sorted(folder.glob("*.ipynb")):
        for i, cell in enumerate(json.loads(nb.read_text(encoding="utf-8"))["cells"]):
            if cell["cell_type"] != "code":
                continue
            src = "".join(cell["source"])
            src = "\n".join(line for line in src.splitlines() if not line.lstrip().startswith(("%", "!")))
            for node in ast.walk(ast.parse(src, f"{nb.name} cell {i + 1}")):
                if isinstance(node, ast.Import):
                    out |= {a.name for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module:
                    out |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return out


def entry_points(pyproject: Path) -> set[str]:
    """The modules of the console scripts (``vlamb-nb = "vlamb_nb.cli:main"`` gives ``vlamb_nb.cli``)."""
    scripts = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {}).get("scripts", {})
    return {target.split(":")[0] for target in scripts.values()}


def unused_modules(root: Path = PKG, notebooks: Path = ROOT / "notebooks",
                   pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """Modules no other package module, notebook or console script imports (``__init__``/``__main__`` aside)."""
    used = set().union(*import_graph(root).values()) | notebook_imports(notebooks) | entry_points(pyproject)
    return sorted(m for m, path in _modules(root).items()
                  if path.name not in ("__init__.py", "__main__.py") and m not in used)


def test_every_module_has_a_user():
    dead = unused_modules()
    assert not dead, f"modules nothing imports (wire them to their user or remove them): {dead}"


def test_the_unused_module_check_can_fail(tmp_path):
    pkg = tmp_path / "vlamb_nb"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text("")
    (pkg / "cli.py").write_text("from vlamb_nb import used\n")
    (pkg / "used.py").write_text("")
    (pkg / "dead.py").write_text("import os\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "shown.py").write_text("")
    (pkg / "sub" / "lonely.py").write_text("")
    nbs = tmp_path / "notebooks"
    nbs.mkdir()
    cell = {"cell_type": "code", "source": ["%matplotlib inline\n", "from vlamb_nb.sub import shown\n"]}
    note = {"cell_type": "markdown", "source": ["import vlamb_nb.sub.lonely"]}  # prose is no user
    (nbs / "a.ipynb").write_text(json.dumps({"cells": [note, cell]}))
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project.scripts]\nx = "vlamb_nb.cli:main"\n')
    assert unused_modules(pkg, nbs, pyproject) == ["vlamb_nb.dead", "vlamb_nb.sub.lonely"]


def test_no_module_imports_one_that_imports_it_back():
    found = cycles(import_graph())
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_the_cycle_check_can_fail(tmp_path):
    pkg = tmp_path / "vlamb_nb"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from vlamb_nb.sub import b\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("import vlamb_nb.a as a\n")
    (pkg / "c.py").write_text("from vlamb_nb import a\n")
    assert cycles(import_graph(pkg)) == [["vlamb_nb.a", "vlamb_nb.sub.b"]]


@pytest.mark.parametrize("paper", PAPERS)
def test_each_paper_folder_has_the_common_steps(paper):
    folder = PKG / "benchmarks" / paper
    names = {f.name for f in folder.glob("*.py")}
    assert COMMON <= names, f"{paper}/ lacks {sorted(COMMON - names)}"
    init = (folder / "__init__.py").read_text()
    assert "BENCHMARK" in init


def test_benchmarks_folder_holds_only_the_paper_folders():
    flat = sorted(f.name for f in (PKG / "benchmarks").glob("*.py"))
    assert flat == ["__init__.py", "base.py"], f"modules outside a paper folder: {flat}"
    folders = sorted(d.name for d in (PKG / "benchmarks").iterdir() if d.is_dir() and d.name != "__pycache__")
    assert folders == sorted(PAPERS)


def test_registry_names_the_paper_folders():
    from vlamb_nb.benchmarks import get_benchmark

    for paper in PAPERS:
        assert get_benchmark(paper).name == paper
