"""The pages a person opens (report.html, comparison.html): self-contained, every figure once and in its place,
user text shown as text, deviations folded; and the figure log that tells which table a figure belongs to.

The browser half (the pages load from file:// with no console error and no broken image) is in test_browser.py.
"""

from __future__ import annotations

import base64
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from fixtures_pages import official_runs, png

from vlamb_nb import report_card
from vlamb_nb.notebook import RESULTS_MIME, collect_figures
from vlamb_nb.plots import FIGURE_MIME
from vlamb_nb.report_html import write_run_page

HOSTILE = "<script>alert('x')</script>"


class Page(HTMLParser):
    """The page's elements in document order: (tag, attributes, the ids of the sections and headings around it)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self.details_depth = 0
        self.in_details: list[str] = []  # text seen inside <details>
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, {k: v or "" for k, v in attrs}))
        if tag == "details":
            self.details_depth += 1

    def handle_endtag(self, tag):
        if tag == "details":
            self.details_depth -= 1

    def handle_data(self, data):
        self.text.append(data)
        if self.details_depth:
            self.in_details.append(data)

    def files(self) -> list[str]:
        return [a["data-file"] for _, a in self.elements if "data-file" in a]

    def position(self, **attr: str) -> int:
        return next(i for i, (_, a) in enumerate(self.elements) if all(a.get(k) == v for k, v in attr.items()))


def _results(run: Path, figs: Path) -> dict:
    """A reproduce run's summary of two notebooks: vague (ok, a figure saved with its table, one with none, a
    deviation) and mucar (failed in cell 3)."""
    headline = {"paper": "vague", "metric": "accuracy", "slice": "all", "setting": "vlm", "value": 10.0,
                "ci_low": 5.0, "ci_high": 20.0, "n": 20, "unit": "item", "model": HOSTILE, "profile": "offline",
                "deviations": ["model: paper the paper's models; here a stand-in"],
                "data": {"kind": "release", "paper": "vague", "release": "hub:x/vague", "revision": "abc1234def",
                         "n_items": 1677, "n_run": 20,
                         "left_out": [{"kind": "defect", "why": "names no single image file", "column": "image_id",
                                       "n_keys": 22, "first": ["malay/8", "malay/9"], "whole": "group",
                                       "unit": "queries", "items": 186, "also": 0}]}}
    return {
        "vague": {"ok": True, "skipped": None, "error": None, "warnings": [], "seconds": 1.5,
                  "parameters": {"profile": "offline"}, "generations": [],
                  "figures": [{"table": "fig4_counts", "name": "fig4",
                               "files": [str(Path("..") / figs.name / "vague" / f"fig4.{x}") for x in ("png", "pdf")]}],
                  "results": {"fig4_counts": [{"choice": "A", "count": 3}, {"choice": "B", "count": HOSTILE}],
                              "paper_vs_ours": [{"table": "Table 1", "row": "m", "paper": 50.0, "ours": 51.0}],
                              "audit_findings": {"checked": 12, "mismatches": 0},
                              "deviations": [{"what": "quantization", "paper": "fp16", "ours": "4bit",
                                              "affects": "all"}],
                              "headline": [headline]}},
        "mucar": {"ok": False, "skipped": None, "error": "ValueError: n must be >= 0, got -1", "failed_cell": 3,
                  "failed_source": "if n < 0:\n    raise ValueError(...)", "warnings": [], "seconds": 0.4,
                  "parameters": {"n": -1}, "generations": [], "figures": [], "results": {}},
    }


@pytest.fixture
def run_page(tmp_path):
    """A run folder whose figures sit beside it (as the test runs' shared reproduction keeps them), and its page."""
    run, figs = tmp_path / "run", tmp_path / "figs"
    run.mkdir()
    png(figs / "vague" / "fig4.png")
    (figs / "vague" / "fig4.pdf").write_bytes(b"%PDF-1.4 stand-in")
    png(figs / "vague" / "demo" / "ours_accuracy.png", color="#D55E00")  # claimed by no table
    png(figs / "card" / "demo" / "report_card.png")
    (figs / "mucar").mkdir()
    (figs / "mucar" / "only.pdf").write_bytes(b"%PDF-1.4 no png")
    (figs / "mucar" / "broken.png").write_bytes(b"<html>not a png</html>")  # a corrupt file: said, never dropped
    png(figs / "stray" / "other.png")  # a folder of no notebook in this run
    results = _results(run, figs)
    card = report_card.build(results, papers=["vague", "mucar"])
    path = write_run_page(run, results, card, figures=figs, params={"n": 3})
    return path, figs, Page(path.read_text(encoding="utf-8"))


def test_every_figure_file_of_the_run_is_on_the_page_once_inlined_as_a_data_uri(run_page):
    path, figs, page = run_page
    on_disk = sorted(p.relative_to(figs).as_posix() for p in figs.rglob("*") if p.is_file())
    assert sorted(page.files()) == on_disk  # each exactly once
    imgs = [a for t, a in page.elements if t == "img"]
    assert len(imgs) == 4  # fig4, ours_accuracy, report_card, other: the PDF-only and the corrupt one are not images
    for a in imgs:
        assert a["src"].startswith("data:image/png;base64,")
        assert base64.b64decode(a["src"].split(",", 1)[1]) == (figs / a["data-file"]).read_bytes()
    # a corrupt PNG is named with what is wrong; a PDF-only figure is linked beside the page
    assert "not a PNG file" in "".join(page.text)
    link = next(a for t, a in page.elements if t == "a" and a.get("data-file") == "mucar/only.pdf")
    assert (path.parent / link["href"]).resolve() == (figs / "mucar" / "only.pdf").resolve()


def test_each_figure_is_placed_by_its_table_and_the_rest_at_the_end_of_its_section(run_page):
    _, _, page = run_page
    fig4 = page.position(**{"data-file": "vague/fig4.png"})
    table = page.position(id="nb-vague-fig4_counts")
    following = [i for i, (t, _) in enumerate(page.elements) if t == "h4" and i > table]
    assert table < fig4 < following[0]  # right after the table its cell recorded
    rest = page.position(**{"data-file": "vague/demo/ours_accuracy.png"})
    assert page.position(id="nb-vague-deviations") < rest < page.position(id="nb-mucar")
    assert page.position(id="card") < page.position(**{"data-file": "card/demo/report_card.png"}) \
        < page.position(id="nb-vague")
    assert page.position(id="other-figures") < page.position(**{"data-file": "stray/other.png"})
    order = [page.position(id=x) for x in ("run", "data", "failures", "card", "nb-vague", "nb-mucar")]
    assert order == sorted(order)  # parameters, data and failures before the card, then the papers


def test_the_page_is_self_contained(run_page):
    path, _, page = run_page
    text = path.read_text(encoding="utf-8")
    for tag, a in page.elements:
        for attr in ("src", "href"):
            if attr in a:
                assert not re.match(r"\s*(https?:)?//", a[attr]), (tag, a)
        assert tag not in ("link", "iframe", "object", "embed")
        assert not (tag == "script" and "src" in a)
    assert "@import" not in text and not re.search(r"url\(\s*['\"]?(https?:)?//", text)
    assert not re.search(r"@font-face", text)


def test_user_text_is_escaped_and_deviations_are_folded(run_page):
    path, _, page = run_page
    text = path.read_text(encoding="utf-8")
    assert [t for t, _ in page.elements].count("script") == 1  # the page's own sorting script, nothing injected
    assert HOSTILE not in text and "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in text
    assert HOSTILE in "".join(page.text)  # shown as text
    folded = "".join(page.in_details)
    assert "quantization" in folded and "fp16" in folded  # the paper's deviations, closed until opened
    assert "model: paper the paper's models; here a stand-in" in folded  # the card's deviations too


def test_the_top_says_parameters_data_left_out_and_the_failing_cell(run_page):
    _, _, page = run_page
    text = " ".join(" ".join(page.text).split())
    top = text[: text.index("Report card:")]  # the card's heading
    assert '{"n": 3}' in top and "hub:x/vague@abc1234 · 20 of 1,677 (186 left out)" in top
    # what was left out and why, in full (the card's data note)
    assert "186 queries left out: 22 image_id values (malay/8, malay/9, …): names no single image file" in top
    assert "mucar failed in cell In [3]: ValueError: n must be >= 0, got -1" in top
    assert "raise ValueError(...)" in top


def test_an_offline_page_says_pipeline_demo_up_front(run_page):
    path, _, page = run_page
    text = " ".join(page.text)
    assert text.index("PIPELINE DEMO") < text.index("The run")  # the first thing under the page's heading
    assert re.search(r"<title>Pipeline demo · ", path.read_text(encoding="utf-8"))  # and in the tab's title


def test_long_tables_scroll_in_a_bounded_box_and_sort(tmp_path):
    results = {"vague": {"ok": True, "seconds": 1.0, "parameters": {}, "figures": [],
                         "results": {"responses": [{"i": i, "v": 0.5 * i} for i in range(60)],
                                     "few": [{"i": 1}]}}}
    path = write_run_page(tmp_path, results, report_card.build(results, papers=["vague"]))
    page = Page(path.read_text(encoding="utf-8"))
    boxes = [a["class"] for t, a in page.elements if t == "div" and "scroll" in a.get("class", "")]
    tables = [a["class"] for t, a in page.elements if t == "table"]
    assert "scroll tall" in boxes and all("sortable" in c for c in tables)
    numeric = [a for t, a in page.elements if t == "td" and "data-v" in a]
    assert {float(a["data-v"]) for a in numeric} >= {0.5 * i for i in range(60)}  # numbers sort as numbers


def test_collect_figures_pairs_each_figure_with_its_cells_table():
    def cell(*outputs):
        return {"cell_type": "code", "outputs": [{"output_type": "display_data", "data": o} for o in outputs]}

    def heading(text):
        return {"cell_type": "markdown", "source": text}

    def fig(name):
        return {FIGURE_MIME: {"paper": "p", "name": name, "demo": False, "files": [f"/f/p/{name}.png"]}}

    def rec(**values):
        return {RESULTS_MIME: json.dumps(values)}

    nb = {"cells": [heading("# Title"),
                    cell(fig("first")),  # before any record of its section: the first cell after it
                    cell(rec(label="a string", table1=[{"x": 1}])),  # a table before a plain value
                    cell(fig("own"), rec(counts=[{"n": 1}], more={"k": 2})),  # its own cell's, drawn before it
                    heading("### a subsection: still the same section"),
                    cell(fig("later")),  # the nearest recording cell before it
                    cell(rec(deviations=[{"what": "x"}]), fig("not_deviations")),  # never the folded deviations
                    heading("## Another section\n\ntext"),
                    cell(fig("alone")),  # its section records nothing: no table (the end of the notebook's part)
                    heading("## Last"),
                    cell(rec(value=3), fig("scalar"))]}  # only a plain value: that one
    got = {f["name"]: f["table"] for f in collect_figures(nb)}
    assert got == {"first": "table1", "own": "counts", "later": "counts", "not_deviations": "counts",
                   "alone": None, "scalar": "value"}


def test_a_comparison_page_shows_figure_tables_notes_and_escapes_names(tmp_path):
    from vlamb_nb.compare import compare

    files = official_runs(tmp_path / "runs", {HOSTILE: set(range(0, 30)), "通义千问-VL": set(range(10, 40)),
                                              "plain": set(range(0, 40, 2))})
    c = compare(files, n_resamples=200, title="three models")
    written = c.save(tmp_path / "out")
    page_path = written[-1]
    assert page_path == tmp_path / "out" / "comparison.html"
    text = page_path.read_text(encoding="utf-8")
    page = Page(text)
    imgs = [a for t, a in page.elements if t == "img"]
    assert len(imgs) == 1 and base64.b64decode(imgs[0]["src"].split(",", 1)[1]) == \
        (tmp_path / "out" / "comparison.png").read_bytes()
    assert page.files() == ["comparison.png", "comparison.pdf"]
    assert HOSTILE not in text and HOSTILE in "".join(page.text) and "通义千问-VL" in text
    # the page's own scripts (sorting, the item table) and the items' data, nothing injected
    assert sorted(str(a.get("type")) for t, a in page.elements if t == "script") == ["None", "None", "application/json"]
    shown = " ".join(" ".join(page.text).split())
    for n in c.notes:  # what every model answered and what was dropped, as the comparison says it
        assert " ".join(n.split()) in shown
    rows = [a for t, a in page.elements if t == "tr"]
    assert len(rows) >= 1 + len(c.values) + 1 + len(c.pairs)
    assert all(not re.match(r"\s*(https?:)?//", a.get("src", "") + a.get("href", "")) for _, a in page.elements)


def test_cli_compare_prints_the_page_last(tmp_path, capsys):
    from vlamb_nb.cli import main

    files = official_runs(tmp_path / "runs", {"a": set(range(30)), "b": set(range(5, 40))})
    assert main(["compare", *map(str, files), "--n-resamples", "200", "--out", str(tmp_path / "cmp")]) == 0
    out = capsys.readouterr().out.rstrip("\n").splitlines()
    assert out[-1] == str(tmp_path / "cmp" / "comparison.html") and Path(out[-1]).is_file()
    assert main(["compare", *map(str, files), "--n-resamples", "200", "--out", str(tmp_path / "j"), "--json"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out)["models"]  # stdout stays JSON; the page is stderr's last line
    assert cap.err.rstrip("\n").splitlines()[-1] == str(tmp_path / "j" / "comparison.html")


def test_the_templates_ship_with_the_package(repo_root):
    """Every template file is package data (an installed wheel renders the same pages)."""
    import fnmatch
    import tomllib

    globs = tomllib.loads((repo_root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["vlamb_nb"]
    folder = repo_root / "vlamb_nb" / "templates"
    files = [p.relative_to(repo_root / "vlamb_nb").as_posix() for p in folder.rglob("*") if p.is_file()]
    assert files and all(any(fnmatch.fnmatch(f, g) for g in globs) for f in files), (files, globs)
    import jinja2

    from vlamb_nb.report_html import environment

    env = environment()
    for name in ("report.html.j2", "comparison.html.j2"):
        env.get_template(name)  # found through the package and parsed
    assert isinstance(env.loader, jinja2.PackageLoader) and env.autoescape is True
