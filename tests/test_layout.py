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
# the step files a paper folder may hold (a step the paper does not have is absent) and what every folder needs
STEPS = {"__init__.py", "data.py", "prompts.py", "parse.py", "judge.py", "score.py", "audit.py", "benchmark.py",
         "report.py", "plots.py"}
REQUIRED = {"__init__.py", "data.py", "prompts.py", "score.py", "benchmark.py"}


def _papers() -> list[str]:
    from vlamb_nb.benchmarks import list_benchmarks

    return list_benchmarks()


def _documented_extras() -> set[str]:
    """Paper-specific modules ARCHITECTURE.md names (``mucar/judge.py`` ...): the only other names allowed."""
    import re

    text = (PKG.parent / "ARCHITECTURE.md").read_text(encoding="utf-8")
    return set(re.findall(r"`(\w+/\w+\.py)`", text))


def _modules(root: Path = PKG) -> dict[str, Path]:
    out = {}
    for f in root.rglob("*.py"):
        parts = list(f.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


def _dynamic_loads(tree: ast.AST, mods: dict[str, Path]) -> set[str]:
    """The modules a module loads by name (``importlib.import_module``): a string constant names one module, an
    f-string ``f"pkg.{x}"`` any module directly under ``pkg`` (the registry loads every paper this way)."""
    if not any(isinstance(n, ast.Attribute | ast.Name) and getattr(n, "attr", getattr(n, "id", "")) == "import_module"
               for n in ast.walk(tree)):
        return set()
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in mods:
            out.add(node.value)
        elif isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
            prefix = str(node.values[0].value)
            if prefix.endswith(".") and prefix[:-1] in mods:
                out |= {m for m in mods if m.startswith(prefix) and "." not in m[len(prefix):]}
    return out


def import_graph(root: Path = PKG) -> dict[str, set[str]]:
    """Module -> the package modules it imports (``from pkg import sub`` counts as importing ``pkg.sub``; an
    import of a package it sits in, the root included, is an edge too), and the modules it loads by name."""
    mods = _modules(root)

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        package = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        tree = ast.parse(path.read_text(), str(path))
        graph[mod] |= _dynamic_loads(tree, mods) - {mod}
        for node in ast.walk(tree):
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
                if r and r != mod:
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


def _toy_registry(tmp_path, root: str = ""):
    """A package whose registry (``vlamb_nb.papers``) loads its papers by name, with one paper whose folder's
    ``__init__`` imports its ``score`` step; ``root`` is the package root's code."""
    pkg = tmp_path / "vlamb_nb"
    (pkg / "papers" / "one").mkdir(parents=True)
    (pkg / "__init__.py").write_text(root)
    (pkg / "papers" / "__init__.py").write_text(
        "import importlib\n\ndef load(name):\n    return importlib.import_module(f'vlamb_nb.papers.{name}')\n")
    (pkg / "papers" / "one" / "__init__.py").write_text("from vlamb_nb.papers.one.score import x\n")
    (pkg / "papers" / "one" / "score.py").write_text("x = 1\n")
    return pkg


def test_the_cycle_check_sees_the_root_package_and_the_registrys_loads(tmp_path):
    """A loop through the package facade or through a registry that loads its papers by name is a loop too."""
    pkg = _toy_registry(tmp_path, "def get(name):\n    from vlamb_nb.papers import load\n    return load(name)\n")
    (pkg / "version.py").write_text("")
    graph = import_graph(pkg)
    assert "vlamb_nb.papers.one" in graph["vlamb_nb.papers"]
    assert cycles(graph) == []
    (pkg / "papers" / "one" / "score.py").write_text("def f():\n    from vlamb_nb import get\n")  # via the root
    assert cycles(import_graph(pkg)) == [["vlamb_nb", "vlamb_nb.papers", "vlamb_nb.papers.one",
                                          "vlamb_nb.papers.one.score"]]
    (pkg / "papers" / "one" / "score.py").write_text("from vlamb_nb.papers import load\n")  # via the registry
    assert cycles(import_graph(pkg)) == [["vlamb_nb.papers", "vlamb_nb.papers.one", "vlamb_nb.papers.one.score"]]


def folder_graph(graph: dict[str, set[str]], folders: str = "vlamb_nb.benchmarks") -> dict[str, set[str]]:
    """The import graph with each paper folder (``<folders>.<paper>`` and its modules) as one node: a paper's step
    that imports a module above the registry (one that loads every paper) loops through the registry's load of
    that paper's folder, even when no single module imports one that imports it back."""
    depth = folders.count(".") + 2

    def node(m: str) -> str:
        return ".".join(m.split(".")[:depth]) if m.startswith(folders + ".") else m

    out: dict[str, set[str]] = {}
    for m, deps in graph.items():
        out.setdefault(node(m), set()).update(node(d) for d in deps)
    return {m: deps - {m} for m, deps in out.items()}


def test_no_paper_folder_imports_a_module_above_the_registry():
    found = cycles(folder_graph(import_graph()))
    assert not found, "a paper folder imports what loads the papers: " + "; ".join(" <-> ".join(c) for c in found)


def test_the_folder_check_catches_a_paper_importing_the_card(tmp_path):
    """Ref-Adv's report once imported the report card, which loads every paper through the registry: no module
    imports one that imports it back, yet the paper folder and the card load each other."""
    pkg = _toy_registry(tmp_path)
    (pkg / "papers" / "one" / "report.py").write_text("def example():\n    from vlamb_nb.card import Card\n")
    (pkg / "card.py").write_text("class Card:\n    pass\n\ndef build():\n    from vlamb_nb.papers import load\n")
    graph = import_graph(pkg)
    assert cycles(graph) == []  # no module-level loop ...
    assert cycles(folder_graph(graph, "vlamb_nb.papers")) == [["vlamb_nb.card", "vlamb_nb.papers",
                                                                 "vlamb_nb.papers.one"]]  # ... but a folder loop
    (pkg / "papers" / "one" / "report.py").write_text("def example():\n    return 1\n")
    assert cycles(folder_graph(import_graph(pkg), "vlamb_nb.papers")) == []


def test_the_registry_loads_every_paper():
    graph = import_graph()
    assert {f"vlamb_nb.benchmarks.{p}" for p in _papers()} <= graph["vlamb_nb.benchmarks"]


#: the kinds of model spec with a prefix; only vlamb_nb/models/ (ModelSpec.parse) may read one
SPEC_KINDS = ("tiny", "openai", "replay", "scripted")


def spec_prefix_reads(root: Path = PKG) -> list[str]:
    """``file:line`` outside ``models/`` that reads a model spec's prefix: a bare prefix (``"openai:"``, also in a
    tuple of prefixes) or ``startswith``/``removeprefix`` of one. Writing a spec (``f"replay:{path}"``) is fine."""
    out = []
    for path in sorted(root.rglob("*.py")):
        if root / "models" in path.parents:
            continue
        tree = ast.parse(path.read_text(), str(path))
        written = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
        for node in ast.walk(tree):
            consts: list[ast.AST] = []
            if isinstance(node, ast.Constant) and id(node) not in written:
                consts = [node]
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr in ("startswith", "removeprefix")):
                consts = [c for a in node.args for c in ast.walk(a) if isinstance(c, ast.Constant)]
            hit = any(isinstance(c.value, str) and (c.value in {f"{k}:" for k in SPEC_KINDS} or (
                node is not c and c.value.startswith(SPEC_KINDS))) for c in consts)
            if hit:
                out.append(f"{path.relative_to(root.parent)}:{node.lineno}")
    return sorted(set(out))


def test_only_the_models_package_reads_a_model_spec():
    found = spec_prefix_reads()
    assert not found, f"read a model spec with vlamb_nb.models.ModelSpec.parse, not by its prefix: {found}"


def test_the_spec_check_can_fail(tmp_path):
    pkg = tmp_path / "vlamb_nb"
    (pkg / "models").mkdir(parents=True)
    (pkg / "models" / "spec.py").write_text("def kind(s):\n    return s.startswith('openai:')\n")
    (pkg / "cli.py").write_text("REMOTE = ('openai:', 'replay:')\n")
    (pkg / "sweep.py").write_text("def f(s):\n    return s.startswith(('tiny', 'x'))\n")
    (pkg / "fine.py").write_text("MODEL = 'tiny:qwen2_5_vl'\n\ndef f(s):\n    return s.startswith('agent'), "
                                 "f'replay:{s}'\n")
    assert spec_prefix_reads(pkg) == ["vlamb_nb/cli.py:1", "vlamb_nb/sweep.py:2"]


@pytest.mark.parametrize("paper", _papers())
def test_each_paper_folder_holds_its_steps_under_their_names(paper):
    """What exists has the right name and place: the steps every paper has, then only step names and the
    paper-specific modules ARCHITECTURE.md names — never a stub kept to satisfy a list."""
    folder = PKG / "benchmarks" / paper
    names = {f.name for f in folder.glob("*.py")}
    assert REQUIRED <= names, f"{paper}/ lacks {sorted(REQUIRED - names)}"
    stray = sorted(n for n in names - STEPS if f"{paper}/{n}" not in _documented_extras())
    assert not stray, f"{paper}/ holds {stray}: neither a step name nor a module ARCHITECTURE.md describes"
    init = (folder / "__init__.py").read_text()
    assert "BENCHMARK" in init


def test_the_layout_check_can_fail():
    assert "vflute/adequacy.py" in _documented_extras()
    assert "racquet/helpers.py" not in _documented_extras()


def test_benchmarks_folder_holds_only_the_paper_folders():
    flat = sorted(f.name for f in (PKG / "benchmarks").glob("*.py"))
    assert flat == ["__init__.py", "base.py"], f"modules outside a paper folder: {flat}"
    folders = sorted(d.name for d in (PKG / "benchmarks").iterdir() if d.is_dir() and d.name != "__pycache__")
    assert folders == sorted(_papers())


def test_registry_names_the_paper_folders_and_their_notebooks():
    from vlamb_nb.benchmarks import PAPERS, get_benchmark, notebooks

    for paper in PAPERS:
        assert get_benchmark(paper.name).name == paper.name
        assert set(paper.needs_weights) <= set(paper.notebooks)
        for nb in paper.notebooks:
            assert (PKG.parent / "notebooks" / f"{nb}.ipynb").is_file(), nb
    assert {p.stem for p in (PKG.parent / "notebooks").glob("*.ipynb")} == set(notebooks())


def test_no_benchmark_overrides_evaluate_and_no_caller_probes_for_a_step():
    """evaluate is defined once, on the base; nothing asks a benchmark whether it has a step."""
    import re

    from vlamb_nb.benchmarks import get_benchmark, list_benchmarks
    from vlamb_nb.benchmarks.base import Benchmark

    for name in list_benchmarks():
        bench = get_benchmark(name)
        assert type(bench).evaluate is Benchmark.evaluate, f"{name} overrides evaluate"
    probes = re.compile(r"hasattr\(\s*(bench|benchmark|self)\w*\s*,|inspect\.signature\(\s*bench")
    found = [f"{p.relative_to(PKG.parent)}:{i}" for p in PKG.rglob("*.py")
             for i, line in enumerate(p.read_text().splitlines(), 1) if probes.search(line)]
    assert not found, f"callers probing a benchmark for a step: {found}"


#: a paper's benchmark.py is wiring (which loader, prompts, parser, scorer, tables); its steps live in their files
MAX_BENCHMARK_LINES = 150


def benchmark_shape_problems(paper_dir: Path) -> list[str]:
    """Why a paper's ``benchmark.py`` is not wiring: too long, or a class there defines ``run``/``predictions``
    (a setting's model calls are declared as turns, its answers read through the base's join and parse)."""
    path = paper_dir / "benchmark.py"
    text = path.read_text(encoding="utf-8")
    out = []
    if len(text.splitlines()) > MAX_BENCHMARK_LINES:
        out.append(f"{paper_dir.name}/benchmark.py has {len(text.splitlines())} lines (at most {MAX_BENCHMARK_LINES})")
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                targets = ([item.name] if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) else
                           [t.id for t in item.targets if isinstance(t, ast.Name)] if isinstance(item, ast.Assign)
                           else [])
                out += [f"{paper_dir.name}: {node.name} defines {t}" for t in targets if t in ("run", "predictions")]
    return out


@pytest.mark.parametrize("paper", _papers())
def test_each_benchmark_is_wiring_and_declares_its_turns(paper):
    from vlamb_nb.benchmarks import get_benchmark
    from vlamb_nb.benchmarks.base import Benchmark

    assert not benchmark_shape_problems(PKG / "benchmarks" / paper)
    bench = type(get_benchmark(paper))
    assert bench.run is Benchmark.run and bench.predictions is Benchmark.predictions


def test_the_benchmark_shape_check_can_fail(tmp_path):
    (tmp_path / "benchmark.py").write_text("class B:\n    def run(self):\n        pass\n" + "x = 1\n" * 150)
    problems = benchmark_shape_problems(tmp_path)
    assert any("lines" in p for p in problems) and any("defines run" in p for p in problems)


def test_the_paper_list_is_written_once():
    """No module but the registry spells out the papers' names as a list."""
    import re

    pattern = re.compile(r"""["']vague["']\s*,\s*["']mucar["']""")
    found = [str(p.relative_to(PKG.parent)) for p in [*PKG.rglob("*.py"), PKG.parent / "tests" / "test_browser.py"]
             if pattern.search(p.read_text()) and p != PKG / "benchmarks" / "__init__.py"]
    assert not found, f"the paper list is written again in {found}"


def imports_of_test_modules(folder: Path) -> list[str]:
    """``file: module`` for each import of a test module (``test_*``, ``tests.*``) or of ``conftest`` in ``folder``."""
    found = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            found += [f"{path.name}: {n}" for n in names
                      if n.split(".")[0].startswith("test_") or n.startswith("tests.") or n.split(".")[0] == "conftest"]
    return found


def test_no_test_module_imports_another():
    """Shared helpers live in conftest.py or a fixtures module: a test module that imports another runs that
    module's import-time code, and ties two test files together, so neither can be changed alone."""
    found = imports_of_test_modules(ROOT / "tests")
    assert not found, f"imports of test modules (move the helper to a fixtures module): {found}"


def test_the_test_import_check_can_fail(tmp_path):
    (tmp_path / "test_a.py").write_text("def f():\n    from test_b import helper\n")
    (tmp_path / "test_c.py").write_text("import tests.test_b\nimport conftest\nfrom fixtures_x import y\n")
    (tmp_path / "fixtures_x.py").write_text("import test_b as b\n")
    assert imports_of_test_modules(tmp_path) == ["fixtures_x.py: test_b", "test_a.py: test_b", "test_c.py: tests.test_b",
                                             "test_c.py: conftest"]


#: modules that serve every paper alike: what a paper needs of them it declares in its own folder
PAPER_BLIND = ("compare.py", "report_card.py", "stats/common.py")


def paper_names_in(paths: list[Path], names: list[str]) -> list[str]:
    """``file:line: name`` for each mention of a paper's name or alias (any case, as a whole word)."""
    import re

    words = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    pattern = re.compile(rf"(?<![\w-])({words})(?![\w-])", re.IGNORECASE)
    return [f"{p.name}:{i}: {m.group(0)}" for p in paths
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) for m in pattern.finditer(line)]


def _registry_names() -> list[str]:
    from vlamb_nb.benchmarks import ALIASES, PAPERS

    return [p.name for p in PAPERS] + list(ALIASES)


def test_compare_and_the_card_name_no_paper():
    """A paper's headline knowledge is its declaration (``metrics``): comparing and carding never branch on a name."""
    found = paper_names_in([PKG / f for f in PAPER_BLIND], _registry_names())
    assert not found, f"paper names in modules that serve every paper: {found}"


def test_the_paper_name_check_can_fail(tmp_path):
    planted = tmp_path / "compare.py"
    planted.write_text((PKG / "compare.py").read_text(encoding="utf-8")
                       + '\n\ndef _f(paper):  # vaguely: a word, not a paper\n'
                       '    return paper == "mucar"  # Ref-Adv-s rows\n', encoding="utf-8")
    found = paper_names_in([planted], _registry_names())
    assert [f.split(": ")[1] for f in found] == ["mucar", "Ref-Adv-s"]


# -- the stored run record is the interface: its item and turn are fields, read back by one compatibility reader --
#: the one module that may still read an item or a turn out of a request id or setting tag (stores written before
#: those were fields), and the recording format of replayed answers, which names a setting by its base
TURN_CONVENTION_READERS = {"vlamb_nb/store.py", "vlamb_nb/models/replay.py"}
#: string methods that read a part of a string (``replace`` builds an id and is fine)
_READ_METHODS = {"split", "rsplit", "partition", "rpartition", "startswith", "endswith", "removeprefix",
                 "removesuffix", "contains", "find", "index"}


def _convention(value: object) -> bool:
    """A request-id or setting-tag convention: ``::`` (item and turn in a request id), ``:`` (a step or a repair in
    a setting tag) and the old turn suffixes."""
    return isinstance(value, str) and ("::" in value or value == ":" or value.startswith(("repair-", ":repair")))


def turn_convention_reads(root: Path = PKG) -> list[str]:
    """``file:line`` that reads an item or a turn out of a string convention (``rid.split("::")``,
    ``setting.str.contains(":")``, ``endswith("::caption")``, ``"::" in rid``) outside the compatibility reader."""
    out = []
    for path in sorted(root.rglob("*.py")):
        if str(path.relative_to(root.parent)) in TURN_CONVENTION_READERS:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            hit = False
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _READ_METHODS:
                hit = any(isinstance(c, ast.Constant) and _convention(c.value) for a in node.args for c in ast.walk(a))
            elif isinstance(node, ast.Compare) and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops):
                hit = isinstance(node.left, ast.Constant) and _convention(node.left.value)
            if hit:
                out.append(f"{path.relative_to(root.parent)}:{node.lineno}")
    return sorted(set(out))


def test_no_module_reads_a_turn_or_an_item_out_of_a_request_id():
    found = turn_convention_reads()
    assert not found, ("read a record's item and turn from its item_id/turn fields (vlamb_nb.store.read_store gives "
                       f"them to old stores too), not out of a request id or setting tag: {found}")


def test_the_turn_convention_check_can_fail(tmp_path):
    pkg = tmp_path / "vlamb_nb"
    (pkg / "models").mkdir(parents=True)
    (pkg / "store.py").write_text("def legacy(rid):\n    return rid.split('::')[0]\n")
    (pkg / "a.py").write_text("def f(g):\n    return g['request_id'].str.split('::').str[0]\n")
    (pkg / "b.py").write_text("def f(rid, tag):\n    return rid.endswith('::caption') or '::' in rid\n")
    (pkg / "c.py").write_text("def f(g):\n    return g['setting'].str.contains(':', regex=False)\n")
    (pkg / "d.py").write_text("def f(s):\n    return s.removeprefix('repair-')\n")
    (pkg / "fine.py").write_text("def f(i, s):\n    return f'{i}::{s}', i.replace('::', '::repair-', 1)\n")
    assert turn_convention_reads(pkg) == ["vlamb_nb/a.py:2", "vlamb_nb/b.py:2", "vlamb_nb/c.py:2",
                                          "vlamb_nb/d.py:2"]


#: what scoring a stored run of one's own takes: reading a store, choosing the run's records, applying the store's
#: rules to them (the one reader is run_identity.stored_answers, which a paper may call)
_STORE_SCORING = {"select_run", "one_run", "identify_runs", "_StoredAnswers", "read_store", "dedupe",
                  "one_per_question"}
_STORE_SCORER_NAMES = {"score_store", "score_generations", "predictions_frame", "_store_row"}


def own_store_scorers(root: Path = PKG) -> list[str]:
    """``file:line`` of a paper module that scores stored runs itself (defines a store scorer, reads a store or
    picks a run's records: ``read_store``/``select_run``/``dedupe``/...), or of ``compare.py`` replaying a store
    through ``evaluate``: :meth:`Benchmark.score_store` is the one way from stored answers to scores, and
    ``run_identity.stored_answers`` the one reader of a store (a judge's verdicts go through it)."""
    out = []
    papers = root / "benchmarks"
    for path in sorted(root.rglob("*.py")):
        in_paper = papers in path.parents and path.parent != papers
        if not in_paper and path.name != "compare.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names: list[str] = []
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                names = [node.name] if node.name in _STORE_SCORING or (in_paper and node.name in _STORE_SCORER_NAMES) \
                    else []
            elif isinstance(node, ast.Name | ast.Attribute):
                name = node.id if isinstance(node, ast.Name) else node.attr
                names = [name] if name in _STORE_SCORING or (path.name == "compare.py" and name == "evaluate") \
                    else []
            elif isinstance(node, ast.ImportFrom):
                names = [a.name for a in node.names if a.name in _STORE_SCORING]
            if names:
                out.append(f"{path.relative_to(root.parent)}:{node.lineno}")
    return sorted(set(out))


def test_no_paper_scores_a_store_of_its_own():
    found = own_store_scorers()
    assert not found, f"score stored runs with Benchmark.score_store (papers keep only readers): {found}"


def test_the_store_scorer_check_can_fail(tmp_path):
    pkg = tmp_path / "vlamb_nb"
    (pkg / "benchmarks" / "toy").mkdir(parents=True)
    (pkg / "benchmarks" / "base.py").write_text("def score_store(self):\n    pass\n")  # the base's is the one
    (pkg / "benchmarks" / "toy" / "score.py").write_text(
        "from vlamb_nb.run_identity import one_run\n\ndef read(p):\n    return p\n")
    (pkg / "benchmarks" / "toy" / "benchmark.py").write_text("class T:\n    def score_store(self, p):\n"
                                                             "        return p\n")
    (pkg / "benchmarks" / "toy" / "judge.py").write_text(
        "from vlamb_nb.store import read_store\n\ndef verdicts(p):\n    return read_store(p)\n")
    (pkg / "benchmarks" / "toy" / "fine.py").write_text(
        "from vlamb_nb.run_identity import stored_answers\n\ndef verdicts(p):\n    return stored_answers(p, 'toy')\n")
    (pkg / "compare.py").write_text("def replay(bench, m, items):\n    return bench.evaluate(m, items)\n")
    (pkg / "sweep.py").write_text("def run(bench, m, items):\n    return bench.evaluate(m, items)\n")
    assert own_store_scorers(pkg) == ["vlamb_nb/benchmarks/toy/benchmark.py:2", "vlamb_nb/benchmarks/toy/judge.py:1",
                                      "vlamb_nb/benchmarks/toy/judge.py:4", "vlamb_nb/benchmarks/toy/score.py:1",
                                      "vlamb_nb/compare.py:2"]


def backend_text_compares(root: Path = PKG) -> list[str]:
    """``file:line`` outside ``models/`` comparing a model's ``backend`` with text (``info.backend == "hf"``,
    ``backend in ("openai", "replay")``): backends are the :class:`~vlamb_nb.models.base.Backend` enum."""
    out = []
    for path in sorted(root.rglob("*.py")):
        if root / "models" in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            backend = any((isinstance(s, ast.Attribute) and s.attr == "backend") or (isinstance(s, ast.Name)
                          and s.id == "backend") for s in sides)
            text = any(isinstance(c, ast.Constant) and isinstance(c.value, str) for s in sides for c in ast.walk(s))
            if backend and text:
                out.append(f"{path.relative_to(root.parent)}:{node.lineno}")
    return sorted(set(out))


def test_backends_are_compared_as_the_enum_outside_models():
    found = backend_text_compares()
    assert not found, f"compare ModelInfo.backend with vlamb_nb.models.Backend, not text: {found}"


def test_the_backend_check_can_fail(tmp_path):
    pkg = tmp_path / "vlamb_nb"
    (pkg / "models").mkdir(parents=True)
    (pkg / "models" / "base.py").write_text("def f(info):\n    return info.backend == 'hf'\n")
    (pkg / "a.py").write_text("def f(model):\n    return model.backend == 'scripted'\n")
    (pkg / "b.py").write_text("def f(backend):\n    return backend in ('openai', 'replay')\n")
    (pkg / "fine.py").write_text("from vlamb_nb.models.base import Backend\n\n"
                                 "def f(m):\n    return m.backend is Backend.HF\n")
    assert backend_text_compares(pkg) == ["vlamb_nb/a.py:2", "vlamb_nb/b.py:2"]
