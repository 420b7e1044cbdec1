"""The pages a person opens (report.html, comparison.html): self-contained, every figure once and in its place,
user text shown as text, deviations folded; and the figure log that tells which table a figure belongs to.

The browser half (the pages load from file:// with no console error and no broken image) is in test_browser.py.
"""

from __future__ import annotations

import base64
import hashlib
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
    order = [page.position(id=x) for x in ("run-facts", "run", "data", "failures", "card", "nb-vague", "nb-mucar",
                                           "provenance")]
    assert order == sorted(order)  # the run's facts folded into one line, then the card, the papers, provenance


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
    assert "n: 3" in top and "hub:x/vague@abc1234 · 20 of 1,677 (186 left out)" in top
    # what was left out and why, in full (the card's data note)
    assert "186 queries left out: 22 image_id values (malay/8, malay/9, …): names no single image file" in top
    assert "mucar failed in cell In [3]: ValueError: n must be >= 0, got -1" in top
    assert "raise ValueError(...)" in top


def test_an_offline_page_says_pipeline_demo_up_front(run_page):
    path, _, page = run_page
    text = " ".join(page.text)
    assert text.index("PIPELINE DEMO") < text.index("The run") < text.index("Report card:")  # first under the h1
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


# -- the card first, readable tables, provenance, export, access (issue: a page to explore) --------------------
@pytest.fixture
def awkward(tmp_path):
    """A page of the run in ``fixtures_pages.awkward_run`` (built once per test), its folder and parsed page."""
    from fixtures_pages import awkward_run

    run, figs, outside = tmp_path / "run", tmp_path / "run" / "figures", tmp_path / "outside"
    run.mkdir()
    results = awkward_run(run, figs, outside)
    card = report_card.build(results, papers=["vague"])
    path = write_run_page(run, results, card, figures=figs, params={"note": "x" * 300})
    return path, Page(path.read_text(encoding="utf-8"))


def _cells(text: str, heading: str) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of the first table after the heading with id ``heading``, as text."""
    frag = text[text.index(f'id="{heading}"'):]
    frag = frag[frag.index("<table"):frag.index("</table>")]
    from html import unescape

    heads = [unescape(re.sub(r"<[^>]+>", "", h)) for h in re.findall(r"<th[^>]*>(.*?)</th>", frag, flags=re.S)]
    rows = [[unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", r, flags=re.S)]
            for r in re.findall(r"<tr>(.*?)</tr>", frag.split("</thead>", 1)[1], flags=re.S)]
    return heads, rows


def test_the_first_screen_is_the_card_and_the_run_facts_fold_into_one_line(run_page):
    path, _, page = run_page
    text = path.read_text(encoding="utf-8")
    before_card = text[: text.index('<section id="card"')]
    # every table and section before the card is inside the one folded summary of the run's facts
    facts = before_card[before_card.index('<details class="run-facts"'):]
    assert "<table" not in before_card.replace(facts, "") and "</details>" in facts
    assert not re.search(r'<details class="run-facts"[^>]*\bopen\b', text)
    summary = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", re.search(r"<summary>(.*?)</summary>", facts, re.S)[1]))
    assert "1 of 2 notebook(s) succeeded, 1 failed" in summary and "(show)" in summary
    # the card's figure comes right after its heading, before its table
    assert page.position(id="card") < page.position(**{"data-file": "card/demo/report_card.png"}) \
        < next(i for i, (t, _) in enumerate(page.elements) if t == "table" and i > page.position(id="card"))


def test_tables_read_as_a_reader_expects(awkward):
    path, page = awkward
    text = path.read_text(encoding="utf-8")
    heads, rows = _cells(text, "nb-vague-negation")
    assert heads[0] == "model"  # the identifier first, not scrolled off at the end
    assert heads == ["model", "slice", "CI low", "CI high", "paper in CI", "value", "p", "p (Holm)"]
    assert not [h for h in heads if "_" in h or not h.strip()]
    assert [r[6] for r in rows] == ["<0.001", "0.0123"]  # a p of 0 is never printed as 0; 3 significant digits
    assert [r[7] for r in rows] == ["–", "0.0247"]  # a missing p is a dash, never nan
    words = " ".join(page.text)
    assert not re.search(r"\bnan\b", words, flags=re.I)


def test_a_nested_dict_reads_as_one_line_of_facts_not_one_key_per_line(awkward):
    path, page = awkward
    text = path.read_text(encoding="utf-8")
    frag = text[text.index('id="nb-vague-data_stats"'):]
    frag = frag[: frag.index("<h3", 10)]
    assert frag.count("<p") == 1 and 'class="facts"' in frag  # one paragraph, not a line per key
    shown = re.sub(r"<[^>]+>", "", frag)
    assert "per language: Chinese: 426, English: 426, Malay: 426" in shown and "queries: 1278" in shown


def test_no_control_byte_reaches_the_page_and_it_is_shown_as_a_symbol(awkward):
    path, page = awkward
    raw = path.read_bytes()
    assert not re.search(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", raw)
    assert not re.search("[\x80-\x9f]", raw.decode("utf-8"))
    assert "a\u2400b\u241bc\u2421d\ufffde\ufffdf" in " ".join(page.text)
    csv_text = (path.parent / "tables" / "vague-control.csv").read_text(encoding="utf-8")
    assert "a\u2400b\u241bc\u2421d\ufffde\ufffdf" in csv_text  # the exported files too


def test_a_figure_linked_from_outside_the_run_is_not_read_and_one_saved_outside_figures_is_reported(awkward, tmp_path):
    path, page = awkward
    text = path.read_text(encoding="utf-8")
    secret = base64.b64encode((tmp_path / "outside" / "secret.png").read_bytes()).decode()
    escaped = base64.b64encode((tmp_path / "outside" / "escaped.png").read_bytes()).decode()
    assert secret not in text and escaped not in text  # neither inlined
    shown = " ".join(" ".join(page.text).split())
    assert "vague/leak.png is a link to a file outside the run's figures folder" in shown
    warn = [a for t, a in page.elements if t == "div" and a.get("data-outside")]
    assert [a["data-outside"] for a in warn] == ["../outside/escaped.png"]  # reported in vague's section
    assert page.position(id="nb-vague") < page.position(**{"data-outside": "../outside/escaped.png"})
    assert "saved outside the run's figures folder" in shown


def test_every_table_downloads_as_csv_and_latex_from_the_page_and_beside_it(awkward):
    import csv
    import io

    path, page = awkward
    tables = [a for t, a in page.elements if t == "table"]
    links = [a for t, a in page.elements if t == "a" and a.get("data-export")]
    assert len(links) == 2 * len(tables) and len(tables) >= 5  # every table: run facts, card, results, provenance
    boxes = [a["aria-label"] for t, a in page.elements if t == "div" and "scroll" in a.get("class", "").split()]
    assert len(boxes) == len(tables)
    folder = path.parent / "tables"
    for a in links:
        kind, name = a["data-export"], a["data-table"]
        assert a["download"] == f"{name}.{kind}" and a["href"].startswith("data:")
        body = base64.b64decode(a["href"].split(",", 1)[1]).decode("utf-8")
        assert (folder / f"{name}.{kind}").read_text(encoding="utf-8") == body  # the same file beside the page
        if kind == "tex":
            assert body.startswith("\\begin{tabular}") and "\\toprule" in body and "\\midrule" in body \
                and "\\bottomrule" in body
    neg = list(csv.reader(io.StringIO((folder / "vague-negation.csv").read_text(encoding="utf-8"))))
    assert neg[0][:2] == ["model", "slice"] and neg[1][neg[0].index("p")] == "0.0"  # the recorded value, exactly
    tex = (folder / "vague-negation.tex").read_text(encoding="utf-8")
    assert "paper in CI" in tex and "\\textless{}0.001" in tex and "Qwen2.5-VL-7B" in tex
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{a['data-table']}.{a['data-export']}" for a in links)


def test_the_provenance_block_names_the_package_commit_libraries_model_decoding_and_data(tmp_path, monkeypatch):
    from vlamb_nb.report_html import git_commit

    data_home = tmp_path / "data"
    (data_home / "vague").mkdir(parents=True)
    (data_home / "vague" / "manifest.json").write_text(json.dumps({
        "paper": "vague", "release": "hub:x/vague", "revision": "abc1234def", "files": [
            {"path": "data/train-0.parquet", "sha256": "a" * 64}, {"path": "data/train-1.parquet", "sha256": "b" * 64}]}))
    monkeypatch.setenv("VLAMB_DATA", str(data_home))
    run, figs = tmp_path / "run", tmp_path / "figs"
    run.mkdir()
    store = run / "tiny-qwen__4bit" / "vague__vlm.jsonl"
    store.parent.mkdir()
    store.write_text(json.dumps({"key": "k", "request_id": "1", "text": "A", "params": {"max_new_tokens": 7,
                                                                                       "num_beams": 1},
                                 "model": {"model_id": "Qwen/Qwen2.5-VL-7B-Instruct", "revision": "cafe1234",
                                           "quantization": "4bit"},
                                 "run": {"benchmark": "vague", "setting": "vlm", "template": "feedbeef00112233",
                                         "source": "0123456789abcdef", "versions": {"torch": "2.14.1"}}}) + "\n")
    results = _results(run, figs)
    card = report_card.build(results, papers=["vague", "mucar"])
    path = write_run_page(run, results, card, figures=figs)
    text = path.read_text(encoding="utf-8")
    prov = " ".join(re.sub(r"<[^>]+>", " ", text[text.index('<section id="provenance"'):]).split())
    from vlamb_nb.meta import package_version

    assert f"vlamb_nb version {package_version()}" in prov
    commit = git_commit()
    assert commit is None or commit.split()[0] in prov  # the package's commit where it runs from a checkout
    for name in ("Python", "torch", "transformers", "bitsandbytes"):
        assert name in prov
    assert "Qwen/Qwen2.5-VL-7B-Instruct@cafe1234" in prov and "max_new_tokens: 7" in prov
    assert "feedbeef00112233" in prov and "0123456789abcdef" in prov  # prompt and items digests
    import hashlib

    digest = hashlib.sha256(f"data/train-0.parquet\t{'a' * 64}\ndata/train-1.parquet\t{'b' * 64}\n".encode())
    assert "hub:x/vague abc1234def " + digest.hexdigest() in prov  # the release, its revision, its files' sha256
    # recorded with the run: a page rebuilt later shows what ran then, not what is installed now
    recorded = json.loads((run / "provenance.json").read_text(encoding="utf-8"))
    recorded["environment"]["vlamb_nb"] = "9.9.9-then"
    (run / "provenance.json").write_text(json.dumps(recorded))
    again = write_run_page(run, results, card, figures=figs).read_text(encoding="utf-8")
    assert "9.9.9-then" in again


def test_access_scroll_boxes_are_focusable_and_named_headers_are_buttons_and_images_say_what_they_show(run_page):
    _, _, page = run_page
    boxes = [a for t, a in page.elements if t == "div" and "scroll" in a.get("class", "").split()]
    assert boxes and all(a.get("tabindex") == "0" and a.get("aria-label", "").startswith("Table: ") for a in boxes)
    ths = [i for i, (t, _) in enumerate(page.elements) if t == "th"]
    assert ths and all(page.elements[i + 1][0] == "button" for i in ths)  # a header sorts by keyboard too
    imgs = [a for t, a in page.elements if t == "img"]
    for a in imgs:
        assert a["alt"] and ".png" not in a["alt"] and "/" not in a["alt"], a["alt"]
    fig4 = next(a for a in imgs if a["data-file"] == "vague/fig4.png")
    assert fig4["alt"] == "vague figure: fig4 (for the table fig4 counts)"
    # headings never skip a level (h2 -> h4)
    levels = [int(t[1]) for t, _ in page.elements if re.fullmatch(r"h[1-6]", t)]
    assert all(b <= a + 1 for a, b in zip(levels, levels[1:], strict=False)), levels


def test_the_comparison_page_formats_p_once_says_why_a_rank_has_no_interval_and_names_samples_once():
    from vlamb_nb.compare import _data_label, _rank_text
    from vlamb_nb.stats.result import format_p

    assert [format_p(p) for p in (0, 0.0004, 0.001, 0.012345, 0.5, 1.0, None, float("nan"))] == \
        ["<0.001", "<0.001", "0.001", "0.0123", "0.5", "1", "–", "–"]
    row = {"rank": 1, "of": 2, "rank_low": None, "rank_high": None, "n_clusters": 1, "ci_unit": "image"}
    assert _rank_text(row) == "1 of 2 (no interval: only 1 image to resample)"
    assert _rank_text({**row, "rank_low": 1, "rank_high": 2}) == "1 [1–2] of 2"
    label = _data_label({"kind": "sample", "release": "generated sample (seed 0)"})
    assert label == "a generated sample (seed 0)"


# -- figures as the page shows them ----------------------------------------------------------------------------
def _extent(artist, renderer):
    return artist.get_window_extent(renderer)


def _overlap(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def test_the_pipeline_demo_mark_crosses_no_text_title_or_plot():
    from vlamb_nb import plots

    fig, axes = plots.new_figure(6.0, 3.0, ncols=2)
    for ax in axes:
        ax.set_title("saliency: the red umbrella on the left")
        ax.text(0.5, 0.5, "item text in the middle of the panel", transform=ax.transAxes, ha="center")
        ax.set_xlabel("x label")
    fig.suptitle("a figure title")
    plots.stamp_demo(fig)
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    marks = [t for t in fig.texts if "pipeline demo" in t.get_text().lower()]
    assert [t.get_text() for t in marks] == [plots.DEMO_STAMP]
    others = [fig._suptitle, *[a for ax in axes for a in (ax.title, ax.xaxis.label, *ax.texts)]]
    for m in marks:
        box = _extent(m.get_bbox_patch(), r)  # the ribbon, padding included
        assert not any(_overlap(box, _extent(ax, r)) for ax in axes)  # off every panel
        assert not any(_overlap(box, _extent(o, r)) for o in others), m.get_text()


def test_the_refadv_heatmap_colour_bar_label_is_not_cut():
    import pandas as pd

    from vlamb_nb.benchmarks.refadv.plots import pairwise_heatmap

    sig = pd.DataFrame([{"family": "model vs model", "comparison": "run-a − run-b", "diff_pp": 5.0,
                         "ci_low": -1.0, "ci_high": 11.0, "p_holm": 0.2}])
    fig = pairwise_heatmap(sig)  # two runs: the smallest heat map, where the label was cut ("Acc@0.!")
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    cbar_ax = fig.axes[-1]
    label = cbar_ax.yaxis.label
    box, bar = _extent(label, r), _extent(cbar_ax, r)
    assert " ".join(label.get_text().split()) == "Acc@0.5 difference, row − column (points)"  # all of it
    assert fig.bbox.y0 <= box.y0 and box.y1 <= fig.bbox.y1 and box.height <= bar.height * 1.05


def test_the_comparison_figure_labels_are_readable(tmp_path):
    from vlamb_nb.compare import compare

    files = official_runs(tmp_path / "runs", {"a": set(range(30)), "b": set(range(5, 40)), "c": set(range(0, 40, 2))})
    fig = compare(files, n_resamples=200).figure()
    labels = [t for ax in fig.axes for t in ax.get_yticklabels() if t.get_text()]
    assert labels and min(t.get_fontsize() for t in labels) >= 9
    assert min(t.get_fontsize() for t in fig.legends[0].get_texts()) >= 9


def test_the_comparison_page_puts_the_model_first_exports_its_tables_and_has_provenance(tmp_path):
    from vlamb_nb.compare import compare

    files = official_runs(tmp_path / "runs", {"a": set(range(30)), "b": set(range(5, 40))})
    page_path = compare(files, n_resamples=200, title="two").save(tmp_path / "out")[-1]
    text = page_path.read_text(encoding="utf-8")
    heads, rows = _cells(text, "values")
    assert heads[:2] == ["model", "paper"] and {r[0] for r in rows} == {"a", "b"}
    heads, rows = _cells(text, "pairs")
    assert heads[:2] == ["a", "b"] and rows[0][:2] == ["a", "b"]
    assert re.fullmatch(r"<0\.001|[01](\.\d+)?|0\.\d{1,3}|0\.0+\d{1,3}", rows[0][heads.index("p")])
    page = Page(text)
    links = {(a["data-table"], a["data-export"]) for t, a in page.elements if t == "a" and a.get("data-export")}
    assert links == {(n, k) for n in ("comparison-values", "comparison-paired-differences", "comparison-models",
                                      "comparison-acc-0.5-by-slice-refadv-direct", "provenance-data",
                                      "provenance-compared-files") for k in ("csv", "tex")}
    for name, kind in links:
        assert (tmp_path / "out" / "tables" / f"{name}.{kind}").is_file()
    prov = " ".join(re.sub(r"<[^>]+>", " ", text[text.index('<section id="provenance"'):]).split())
    assert "vlamb_nb version" in prov and "Python" in prov and "refadv" in prov
    # every compared file by its sha256, as read
    for f in files:
        assert f"{f.name} {f.stat().st_size} {hashlib.sha256(f.read_bytes()).hexdigest()}" in prov


def test_a_comparisons_csv_files_hold_numbers_in_columns_of_their_own(tmp_path):
    """``comparison-values.csv`` and the pairs' CSV carry each number in its own column (value, ci_low, ci_high,
    n, p, the discordant split), never display text such as "23.8 [20.9, 26.8]", "1142 rows" or "<0.001"; the
    per-slice table's CSV has value, interval and n per slice."""
    import csv
    import io

    from vlamb_nb.compare import compare

    files = official_runs(tmp_path / "runs", {"a": set(range(30)), "b": set(range(5, 40))})
    c = compare(files, n_resamples=200, title="two")
    c.save(tmp_path / "out")
    tables = tmp_path / "out" / "tables"
    values = list(csv.DictReader(io.StringIO((tables / "comparison-values.csv").read_text(encoding="utf-8"))))
    assert len(values) == len(c.values)
    for row, want in zip(values, c.values.to_dict(orient="records"), strict=True):
        assert float(row["value"]) == pytest.approx(want["value"])
        assert float(row["ci_low"]) == pytest.approx(want["ci_low"]) and float(row["ci_high"]) == pytest.approx(
            want["ci_high"])
        assert int(row["n"]) == want["n"] and row["unit"] == "row"
    pairs = list(csv.DictReader(io.StringIO((tables / "comparison-paired-differences.csv").read_text(
        encoding="utf-8"))))
    for row, want in zip(pairs, c.pairs.to_dict(orient="records"), strict=True):
        assert float(row["p"]) == pytest.approx(want["p"]) and float(row["p_adjusted"]) == pytest.approx(
            want["p_adjusted"])
        assert int(row["discordant_a_only"]) == want["discordant_a_only"]
        assert int(row["discordant_b_only"]) == want["discordant_b_only"]
        assert float(row["diff"]) == pytest.approx(want["diff"])
    by_slice = list(csv.reader(io.StringIO((tables / "comparison-acc-0.5-by-slice-refadv-direct.csv").read_text(
        encoding="utf-8"))))
    assert by_slice[0][:5] == ["model", "overall value", "overall ci_low", "overall ci_high", "overall n"]
    assert {r[0] for r in by_slice[1:]} == {"a", "b"} and all(float(x) >= 0 for x in by_slice[1][1:])


def test_save_figure_records_what_the_figure_shows_and_the_page_says_it_as_alt_text(tmp_path):
    from vlamb_nb import plots
    from vlamb_nb.report_html import Figure, figure_log

    fig, ax = plots.new_figure()
    ax.set_title("Accuracy by distractor count")
    assert plots.figure_title(fig) == "Accuracy by distractor count"
    fig.suptitle("Ref-Adv-s  Acc@0.5\nwith 95% CIs")
    assert plots.figure_title(fig) == "Ref-Adv-s Acc@0.5 with 95% CIs"
    untitled, _ = plots.new_figure()
    assert plots.figure_title(untitled) == ""
    log = figure_log([{"table": "t", "name": "a", "files": [], "title": "Acc by count"},
                      {"table": "t", "name": "b", "files": []}], tmp_path)
    assert log[0]["title"] == "Acc by count" and "title" not in log[1]  # recorded only where there is one
    alt = Figure("refadv/demo/acc_by_count", title="Acc by count", table="slices").alt()
    assert alt == "refadv figure: Acc by count (for the table slices) — pipeline demo, not a result"


#: model names a spreadsheet would run as a formula, and text plain pdflatex cannot set as it is
FORMULAS = ["=HYPERLINK(\"http://x\",\"a\")", "+SUM(1,2)", "-2+3", "@cmd", "\tTAB"]
UNSET = ["✓ Δ Москва", "[0.5] opens with a bracket", "通义千问-VL"]


def test_csv_cells_a_spreadsheet_would_run_open_as_text_and_numbers_stay_numbers(tmp_path):
    """Every CSV a page exports (a comparison's tables, its provenance, an awkward run's tables) has each cell
    that opens with = + - @ (or a tab, a carriage return) neutralised with an apostrophe, as spreadsheet software
    expects; a negative number stays a number."""
    import csv
    import io

    from vlamb_nb.compare import compare
    from vlamb_nb.report_html import csv_cell

    assert [csv_cell(v) for v in ("=1+1", "+x", "-x", "@x", "\tx", "\rx", "-5.4", -5.4, "1e-3", "a=b")] == \
        ["'=1+1", "'+x", "'-x", "'@x", "'\tx", "'\rx", "-5.4", "-5.4", "1e-3", "a=b"]
    files = official_runs(tmp_path / "runs", {name: set(range(k, 30 + k)) for k, name in enumerate(FORMULAS)})
    c = compare(files, n_resamples=200, title="=1+1")
    c.save(tmp_path / "out")
    seen = 0
    for f in sorted((tmp_path / "out" / "tables").glob("*.csv")):
        for row in csv.reader(io.StringIO(f.read_text(encoding="utf-8"))):
            for cell in row:
                seen += cell.lstrip("'") in FORMULAS
                assert not cell.startswith(("=", "+", "@", "\t", "\r")), (f.name, cell)
                assert not cell.startswith("-") or re.fullmatch(r"-\d+(\.\d+)?(e-?\d+)?", cell), (f.name, cell)
    assert seen >= 3 * len(FORMULAS)  # the names are there, as text: values, pairs, models, per slice, files
    values = list(csv.DictReader(io.StringIO((tmp_path / "out" / "tables" / "comparison-paired-differences.csv")
                                             .read_text(encoding="utf-8"))))
    assert any(float(r["diff"]) < 0 for r in values)  # a negative difference is a number, never neutralised


def _compiles(tex: str, folder: Path) -> tuple[bool, str]:
    """Whether ``tex`` (a booktabs tabular) compiles in a plain pdflatex document; the log's first error."""
    import subprocess

    doc = folder / "table.tex"
    doc.write_text("\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n" + tex
                   + "\n\\end{document}\n", encoding="utf-8")
    out = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", doc.name], cwd=folder,
                         capture_output=True, text=True, timeout=120)
    first = next((ln for ln in out.stdout.splitlines() if ln.startswith("!")), "")
    return out.returncode == 0 and (folder / "table.pdf").is_file(), first


def test_every_latex_table_compiles_with_plain_pdflatex(tmp_path, awkward):
    """Each table's LaTeX compiles in a plain pdflatex document with booktabs, whatever its text: ✓, Δ, Cyrillic,
    Chinese, a row that opens with ``[`` (never read as ``\\\\[length]``), control bytes, a 20,000-character cell;
    each character outside ASCII is written as LaTeX writes it or by its code point, never dropped."""
    import shutil

    from vlamb_nb.compare import compare
    from vlamb_nb.report_html import latex_escape

    assert latex_escape("[1] ✓ Δ é Ж") == "{[}1{]} $\\surd$ $\\Delta$ \\'{e} \\texttt{U+0416}"
    if shutil.which("pdflatex") is None:
        pytest.skip("no pdflatex (apt-get install texlive-latex-base texlive-latex-recommended)")
    files = official_runs(tmp_path / "runs", {name: set(range(k, 30 + k)) for k, name in enumerate(UNSET)})
    compare(files, n_resamples=200, title="[Δ] ✓").save(tmp_path / "out")
    run_tables = awkward[0].parent / "tables"
    texts = sorted([*(tmp_path / "out" / "tables").glob("*.tex"), *run_tables.glob("*.tex")])
    assert len(texts) >= 10
    work = tmp_path / "tex"
    work.mkdir()
    for f in texts:
        ok, error = _compiles(f.read_text(encoding="utf-8"), work)
        assert ok, (f.name, error)
    pairs = (tmp_path / "out" / "tables" / "comparison-paired-differences.tex").read_text(encoding="utf-8")
    assert "{[}0.5{]} opens with a bracket" in pairs and "\\texttt{U+041C" in pairs and "$\\Delta$" in pairs


def test_a_comparison_of_stand_ins_says_pipeline_demo_up_front_and_one_of_models_does_not(tmp_path):
    """``comparison.html`` of scripted stand-ins (or generated samples) opens with the pipeline-demo banner and
    says so in its title and its markdown; released runs of real models carry neither."""
    import fixtures_stored as F

    from vlamb_nb import get_benchmark
    from vlamb_nb.compare import compare

    bench = get_benchmark("vague")
    src = bench.make_sample(tmp_path / "data", n=8, seed=0)
    items = bench.load(src)
    stores = []
    for name in ("model-a", "model-b"):
        stores.append(tmp_path / f"{name}.jsonl")
        bench.evaluate(F.model(name), items, "vlm", store=stores[-1], progress=False)
    demo = compare(stores, sources={"vague": src}, n_resamples=200)
    assert demo.demo and all(m["stand_in"] for m in demo.models)
    page = demo.save(tmp_path / "demo")[-1].read_text(encoding="utf-8")
    assert '<div class="banner" id="demo"><strong>PIPELINE DEMO</strong>' in page
    assert "<title>Pipeline demo · " in page and "**Pipeline demo.**" in demo.markdown()
    real = compare(official_runs(tmp_path / "runs", {"a": set(range(30)), "b": set(range(5, 40))}), n_resamples=200)
    assert not real.demo
    page = real.save(tmp_path / "real")[-1].read_text(encoding="utf-8")
    assert 'id="demo"' not in page and "Pipeline demo" not in page
