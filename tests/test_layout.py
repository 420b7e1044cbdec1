"""The package layout: one folder per paper with the same step files, and no import cycles.

The import graph is read from the source (every ``import``, also inside functions), so a cycle that only
bites when a function runs is caught too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "vlamb_nb"
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
