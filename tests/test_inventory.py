"""Each paper's inventory (``vlamb_nb/benchmarks/<paper>/inventory.toml``) against the code, the notebooks and the
README: a claim cannot outrun the code.

- the README's coverage table is the one the inventories give (generated, never edited by hand);
- an item that is not derivable (or not built yet) has a reason, and ``bench.not_derivable()`` is exactly those;
- every function an item names exists and is called by the notebook the item names;
- a notebook heading, or a result a notebook records for its pages, that names a table or figure names one the
  inventory lists, and not one it marks uncovered (unless the heading says it is not derivable).
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path

import pytest

from vlamb_nb.benchmarks import PAPERS, get_benchmark
from vlamb_nb.errors import DataError
from vlamb_nb.inventory import UNCOVERED, read, refs

ROOT = Path(__file__).resolve().parent.parent
NAMES = [p.name for p in PAPERS]
#: words with which a heading says its item is not derivable (it may name the item then)
DECLARES = re.compile(r"not derivable|not released|cannot|declared", re.I)


def _notebook(name: str) -> dict:
    return json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8"))


def _code(name: str) -> str:
    return "\n".join("".join(c["source"]) for c in _notebook(name)["cells"] if c["cell_type"] == "code")


def resolve(paper: str, dotted: str):
    """The object a ``calls`` entry names: ``bench.<method>``, ``<module>.<name>`` of the paper's package, or an
    absolute ``vlamb_nb.…`` name."""
    if dotted.startswith("bench."):
        return getattr(get_benchmark(paper), dotted.split(".", 1)[1])
    module, _, attr = dotted.rpartition(".")
    full = module if module.startswith("vlamb_nb.") else f"vlamb_nb.benchmarks.{paper}.{module}"
    return getattr(importlib.import_module(full), attr)


def claims(notebook: str) -> list[tuple[str, str]]:
    """``(where, ref)`` for every table, figure, section or appendix a heading of ``notebook`` names, and every
    table or figure a result it records for the pages is keyed by (``table4_vs_paper``, ``fig6_…``)."""
    out = []
    for cell in _notebook(notebook)["cells"]:
        src = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            for line in src.splitlines():
                if line.startswith("#") and not DECLARES.search(line):
                    out += [(line, r) for r in refs(line)]
        else:
            for key in re.findall(r"""record\(\s*["']([A-Za-z0-9_]+)["']""", src):
                m = re.match(r"(table|fig)_?([a-z]?\d+[a-z]?)(?:_|$)", key)
                if m:
                    ident = m[2][0].upper() + m[2][1:] if m[2][0].isalpha() else m[2]
                    out.append((f'record("{key}")', f"{'Table' if m[1] == 'table' else 'Fig.'} {ident}"))
    return out


@pytest.mark.parametrize("paper", NAMES)
def test_every_paper_keeps_an_inventory_and_not_derivable_is_read_from_it(paper):
    bench = get_benchmark(paper)
    inv = bench.inventory()
    assert inv is not None and inv.paper == paper and inv.items
    uncovered = [i for i in inv.items if i.status in UNCOVERED]
    assert all(i.reason for i in uncovered)
    assert [d["item"] for d in bench.not_derivable()] == [i.item for i in uncovered]
    assert bench.not_derivable(), f"{paper}: a paper with nothing it cannot rebuild? (human studies, case studies)"


@pytest.mark.parametrize("paper", NAMES)
def test_every_function_an_item_names_exists_and_its_notebook_calls_it(paper):
    inv = get_benchmark(paper).inventory()
    default = next(p for p in PAPERS if p.name == paper).notebooks[0]
    bad = []
    for it in inv.items:
        code = _code(it.notebook or default)
        for dotted in it.calls:
            try:
                obj = resolve(paper, dotted)
            except (AttributeError, ImportError) as e:
                bad.append(f"{it.item}: {dotted} does not exist ({e})")
                continue
            name = dotted.rsplit(".", 1)[1]
            if not callable(obj) or not re.search(rf"\b{re.escape(name)}\b", code):
                bad.append(f"{it.item}: {it.notebook or default}.ipynb never calls {dotted}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("notebook", [(p.name, nb) for p in PAPERS for nb in p.notebooks], ids=str)
def test_no_notebook_claims_an_item_the_inventory_does_not_cover(notebook):
    paper, name = notebook
    inv = get_benchmark(paper).inventory()
    bad = []
    for where, ref in claims(name):
        items = inv.covering(ref)
        if not items:
            bad.append(f"{name}.ipynb {where!r} names {ref}, which the inventory does not list")
        elif all(i.status in UNCOVERED for i in items):
            bad.append(f"{name}.ipynb {where!r} claims {ref}, which the inventory marks "
                       f"{'/'.join(sorted({i.status for i in items}))}")
    assert not bad, "\n".join(bad)


def test_the_claims_check_can_fail(tmp_path, monkeypatch):
    """A heading naming an item the inventory marks not derivable, and one naming an item it lacks, are caught."""
    nb = {"cells": [{"cell_type": "markdown", "source": ["## Table 9: the human evaluation\n"]},
                    {"cell_type": "markdown", "source": ["## Table 99 rebuilt\n"]},
                    {"cell_type": "markdown", "source": ["## Table 7 (not derivable: no labels)\n"]},
                    {"cell_type": "code", "source": ['record("fig13_cases", x)\n']}]}
    monkeypatch.setattr(sys.modules[__name__], "_notebook", lambda name: nb)
    inv = get_benchmark("mucar").inventory()
    found = claims("mucar")
    assert ("## Table 9: the human evaluation", "Table 9") in found and ('record("fig13_cases")', "Fig. 13") in found
    assert not any(ref == "Table 7" for _, ref in found)  # the heading declares it
    assert all(i.status in UNCOVERED for i in inv.covering("Table 9")) and not inv.covering("Table 99")
    with pytest.raises(AssertionError, match="claims Table 9"):
        test_no_notebook_claims_an_item_the_inventory_does_not_cover(("mucar", "mucar"))


def test_the_readme_coverage_table_is_generated_from_the_inventories(tmp_path):
    from vlamb_nb import coverage

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert coverage.stale(readme) == [], "README.md is stale: run `vlamb-nb coverage --readme README.md`"
    for _title, inv in coverage.inventories():
        for it in inv.items:
            assert it.item.replace("|", "\\|") in readme
    edited = readme.replace("| not derivable |", "| rebuilt |", 1)
    assert coverage.stale(edited) == ["coverage"]
    copy = tmp_path / "README.md"
    copy.write_text(edited, encoding="utf-8")
    assert coverage.update_readme(copy, check=True) == ["coverage"] and copy.read_text(encoding="utf-8") == edited
    assert coverage.update_readme(copy) == ["coverage"] and coverage.stale(copy.read_text(encoding="utf-8")) == []


def test_the_cli_checks_the_readme_and_prints_each_inventory(tmp_path, capsys):
    from vlamb_nb.cli import main

    copy = tmp_path / "README.md"
    copy.write_text((ROOT / "README.md").read_text(encoding="utf-8").replace("| run |", "| rebuilt |", 1),
                    encoding="utf-8")
    assert main(["coverage", "--readme", str(copy), "--check"]) == 1
    assert "stale: coverage" in capsys.readouterr().err
    assert main(["coverage", "racquet"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("RACQUET: ") and "[not derivable] App. G.2" in out


def test_an_uncovered_item_without_a_reason_or_a_covered_one_without_a_place_is_refused(tmp_path):
    path = tmp_path / "inventory.toml"
    good = 'paper = "x"\n[[item]]\nitem = "Table 1"\nkind = "table"\nstatus = "rebuilt"\nwhere = "§1"\n'
    path.write_text(good, encoding="utf-8")
    assert read(path).items[0].refs == {"Table 1"}
    for bad, field in (
            ('paper = "x"\n[[item]]\nitem = "Table 9"\nkind = "human study"\nstatus = "not_derivable"\n', "reason"),
            ('paper = "x"\n[[item]]\nitem = "Table 9"\nkind = "table"\nstatus = "missing"\nreason = " "\n', "reason"),
            ('paper = "x"\n[[item]]\nitem = "Table 2"\nkind = "table"\nstatus = "run"\n', "where"),
            (good.replace('"rebuilt"', '"done"'), "status"),
            (good.replace('"table"', '"tabel"'), "kind"),
            (good + 'why = "y"\n', "why"),
            (good + good.split("\n", 1)[1], "item"),
            ("paper = 'x'\n[[item\n", None)):
        path.write_text(bad, encoding="utf-8")
        with pytest.raises(DataError) as e:
            read(path)
        assert str(path) in str(e.value) and "\n" not in str(e.value)
        if field:
            assert f"field {field!r}" in str(e.value)


def test_refs_reads_the_ids_a_text_names():
    assert refs("Tables 3, G4, F3 and 2, as printed") == {"Table 3", "Table G4", "Table F3", "Table 2"}
    assert refs("Figs. 6–12 (case studies)") == {f"Fig. {k}" for k in range(6, 13)}
    assert refs("Figs. J15–J24") == {f"Fig. J{k}" for k in range(15, 25)}
    assert refs("Input ablations (Fig. 4 / Table 3) and prompt language (Table 12)") == {"Fig. 4", "Table 3",
                                                                                        "Table 12"}
    assert refs("(§3, App. B, §5.4) and App. G.3") == {"§3", "App. B", "§5.4", "App. G.3"}
    assert refs("the pipeline on a sample") == frozenset()
