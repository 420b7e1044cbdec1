"""The pages a person opens: one self-contained HTML file per reproduce run and per comparison.

A run's ``report.md`` is long and its figures sit in folders beside it; ``report.html`` puts them together: the
run's parameters, data and failures first, the report card (figure and table), then one section per paper with
its headline, its tables (paper beside ours), each figure right after the table it explains, the audit and the
deviations folded away. ``comparison.html`` does the same for a comparison. Everything a page shows is inside
the file — figures as PNG data URIs, the style, the few lines of script that sort a table — so it opens from
disk in any browser, offline, and travels as one file.

Which table a figure explains comes from the notebook itself: ``save_figure`` tells the cell's output which
files it wrote, and :func:`vlamb_nb.notebook.collect_figures` pairs each with the result its cell (or the cell
before) recorded. A figure file of the run that no table claims is shown at the end of its notebook's section
(or of the page), never dropped; ``report.md`` links the same figures by relative path (:func:`place_figures`).

Pages are Jinja2 templates (``vlamb_nb/templates/``) with autoescaping on: model names, notes and answers come
from users and servers, and show as text.
"""

from __future__ import annotations

import base64
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: notebook metadata is stored with sorted keys; tables read better in this order
PREFERRED_COLUMNS = ("table", "row", "column", "paper", "published", "paper_value", "ours", "recomputed", "diff",
                     "match", "ok", "ci_low", "ci_high", "paper_in_ci", "kind", "flag", "note")
#: a table with more rows than this scrolls inside a box of bounded height (its header stays), so a section
#: reads at a glance; one with more than FOLD_ROWS is also folded (one click away)
TALL_ROWS = 25
FOLD_ROWS = 300
#: rows shown of one table; the rest stay in results.json (the page says how many)
MAX_ROWS = 2000
FIGURE_SUFFIXES = (".png", ".pdf")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


# -- figures ----------------------------------------------------------------------------------------------------
@dataclass
class Figure:
    """One figure of a run: its PNG and/or PDF (the same name), as a path under the run's figures folder."""

    name: str  # the path under the figures folder without suffix, e.g. "vague/demo/ours_accuracy"
    png: Path | None = None
    pdf: Path | None = None

    @property
    def files(self) -> list[str]:
        """Its files under the figures folder (``vague/fig4.png``, ``vague/fig4.pdf``)."""
        return [f"{self.name}{p.suffix}" for p in (self.png, self.pdf) if p is not None]

    @property
    def demo(self) -> bool:
        return "demo" in self.name.split("/")[:-1]

    def href(self, which: str, page_dir: Path) -> str:
        """A relative link from the page's folder to its PNG or PDF (``report.md``'s image, the page's PDF link)."""
        from urllib.parse import quote

        path = self.png if which == "png" else self.pdf
        assert path is not None
        return quote(Path(os.path.relpath(path, page_dir)).as_posix())

    def data_uri(self) -> tuple[str | None, str | None]:
        """(``data:image/png;base64,...``, None), or (None, why not) for a file that is not a readable PNG."""
        if self.png is None:
            return None, "no PNG (PDF only)"
        try:
            data = self.png.read_bytes()
        except OSError as e:
            return None, f"cannot be read: {type(e).__name__}: {e.strerror or e}"
        if not data.startswith(PNG_SIGNATURE):
            return None, f"not a PNG file ({len(data)} bytes)"
        return "data:image/png;base64," + base64.b64encode(data).decode("ascii"), None


@dataclass
class Placement:
    """Every figure of a run, each in one place: the card's, each notebook's by the table it explains (``None``:
    by no table, shown at the end of the notebook's section), and the others (end of the page)."""

    card: list[Figure] = field(default_factory=list)
    notebooks: dict[str, dict[str | None, list[Figure]]] = field(default_factory=dict)
    other: list[Figure] = field(default_factory=list)

    def take(self, notebook: str, table: str | None) -> list[Figure]:
        """The figures of ``table`` (removed, so each is shown once)."""
        return self.notebooks.get(notebook, {}).pop(table, [])

    def rest(self, notebook: str) -> list[Figure]:
        """The notebook's figures no shown table took, in order (removed)."""
        left = self.notebooks.pop(notebook, {})
        return [f for figs in left.values() for f in figs]

    def all(self) -> list[Figure]:
        return self.card + [f for t in self.notebooks.values() for figs in t.values() for f in figs] + self.other


def figure_inventory(figures: Path) -> dict[str, Figure]:
    """Every figure file under ``figures`` (PNG and PDF of one name are one figure), by name, sorted."""
    out: dict[str, Figure] = {}
    if not figures.is_dir():
        return out
    for p in sorted(figures.rglob("*")):
        if p.suffix not in FIGURE_SUFFIXES or not p.is_file():
            continue
        name = p.relative_to(figures).with_suffix("").as_posix()
        fig = out.setdefault(name, Figure(name))
        setattr(fig, p.suffix[1:], p)
    return out


def place_figures(results: dict[str, dict[str, Any]], figures: Path, run_dir: Path) -> Placement:
    """Each figure file of the run in one place: the card's folder to the card, a figure a notebook saved to the
    table its cell recorded (``results[nb]["figures"]``, paths relative to ``run_dir``), a file in a notebook's
    folder that no cell claimed to that notebook, any other file to the end."""
    inventory = figure_inventory(figures)
    placement = Placement()
    figures = figures.resolve()
    for nb, summary in results.items():
        placement.notebooks[nb] = {}
        for entry in summary.get("figures") or []:
            for f in entry.get("files") or []:
                path = (run_dir / f).resolve()
                if not path.is_relative_to(figures):
                    continue
                fig = inventory.pop(path.relative_to(figures).with_suffix("").as_posix(), None)
                if fig is not None:
                    placement.notebooks[nb].setdefault(entry.get("table"), []).append(fig)
    for name, fig in inventory.items():
        top = name.split("/", 1)[0]
        if top == "card":
            placement.card.append(fig)
        elif top in placement.notebooks:
            placement.notebooks[top].setdefault(None, []).append(fig)
        else:
            placement.other.append(fig)
    return placement


def figure_log(figures: list[dict[str, Any]], run_dir: Path) -> list[dict[str, Any]]:
    """A notebook's collected figures for ``results.json``: each call's table and its files relative to the run."""
    return [{"table": f.get("table"), "name": f.get("name"),
             "files": [Path(os.path.relpath(p, run_dir)).as_posix() for p in f.get("files") or []]}
            for f in figures]


# -- values as tables -----------------------------------------------------------------------------------------
@dataclass
class Table:
    """A table as text, with a sort key per cell (numbers sort as numbers)."""

    columns: list[str]
    rows: list[list[tuple[str, Any]]]
    more: int = 0  # rows left out (in results.json)

    @property
    def tall(self) -> bool:
        return len(self.rows) > TALL_ROWS

    @property
    def folded(self) -> bool:
        return len(self.rows) > FOLD_ROWS


def cell(v: Any) -> tuple[str, Any]:
    """A value as table text and its sort key (None: sort by the text)."""
    if v is None:
        return "", None
    if isinstance(v, bool):
        return str(v), None
    if isinstance(v, int):
        return str(v), v
    if isinstance(v, float):
        return (f"{v:.4g}", v) if math.isfinite(v) else (str(v), None)
    if isinstance(v, dict | list):
        return json.dumps(v, ensure_ascii=False), None
    return str(v), None


def records_table(rows: list[dict[str, Any]]) -> Table:
    keys = list(dict.fromkeys(k for r in rows for k in r))
    cols = [k for k in PREFERRED_COLUMNS if k in keys] + [k for k in keys if k not in PREFERRED_COLUMNS]
    return Table(cols, [[cell(r.get(c)) for c in cols] for r in rows[:MAX_ROWS]], max(0, len(rows) - MAX_ROWS))


def _frame_like(value: Any) -> bool:
    """A pandas ``to_dict()`` (column -> {row -> scalar}) as recorded: shown as a table with its row names."""
    return (isinstance(value, dict) and bool(value) and all(isinstance(v, dict) and v for v in value.values())
            and all(not isinstance(x, dict | list) for v in value.values() for x in v.values()))


def _frame_table(value: dict[str, dict[str, Any]]) -> Table:
    cols = list(value)
    index = list(dict.fromkeys(r for v in value.values() for r in v))
    rows = [[(str(r), None)] + [cell(value[c].get(r)) for c in cols] for r in index[:MAX_ROWS]]
    return Table(["", *cols], rows, max(0, len(index) - MAX_ROWS))


def block(key: str, value: Any) -> dict[str, Any]:
    """One recorded result as the page shows it: a table, a list, named parts or one value."""
    if isinstance(value, list) and value and all(isinstance(r, dict) for r in value):
        return {"key": key, "kind": "table", "table": records_table(value)}
    if isinstance(value, list):
        return {"key": key, "kind": "list", "items": [cell(v)[0] for v in value]}
    if _frame_like(value):
        return {"key": key, "kind": "table", "table": _frame_table(value)}
    if isinstance(value, dict):
        return {"key": key, "kind": "parts", "parts": [block(str(k), v) for k, v in value.items()]}
    return {"key": key, "kind": "value", "text": cell(value)[0]}


def section_rank(key: str) -> int:
    """Where a result goes in its paper's section: paper-vs-ours comparisons, other results, the audit, and the
    deviations last (folded)."""
    k = key.lower()
    if "deviation" in k:
        return 3
    if "compar" in k or "paper_vs" in k:
        return 0
    if "audit" in k or "finding" in k or "check" in k:
        return 2
    return 1


# -- templates ------------------------------------------------------------------------------------------------
def environment():
    """The Jinja2 environment of the package's templates, autoescaping every value."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("vlamb_nb", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.globals["page_css"] = _static("page.css")
    env.globals["page_js"] = _static("page.js")
    env.globals["tall_rows"] = TALL_ROWS
    env.filters["code_spans"] = code_spans
    return env


def code_spans(text: Any):
    """``text`` escaped, with its `backtick` spans (commands in the package's notes) as ``<code>``."""
    import markupsafe

    parts = markupsafe.escape(str(text)).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: leave the text as it is
        return markupsafe.escape(str(text))
    return markupsafe.Markup("").join(markupsafe.Markup("<code>") + p + markupsafe.Markup("</code>") if i % 2 else p
                                      for i, p in enumerate(parts))


def _static(name: str):
    """A file of the templates folder inlined as it is (the package's own CSS/JS: no user text in it)."""
    from importlib.resources import files

    import markupsafe

    return markupsafe.Markup(files("vlamb_nb").joinpath("templates", name).read_text(encoding="utf-8"))


def _figures_view(figs: list[Figure], page_dir: Path) -> list[dict[str, Any]]:
    out = []
    for f in figs:
        uri, problem = f.data_uri()
        out.append({"name": f.name, "demo": f.demo, "uri": uri, "problem": problem,
                    "png_file": f"{f.name}.png" if f.png is not None else None,
                    "pdf_file": f"{f.name}.pdf" if f.pdf is not None else None,
                    "pdf_href": f.href("pdf", page_dir) if f.pdf is not None else None})
    return out


# -- the run's page -------------------------------------------------------------------------------------------
#: data identity fields every card row already shows (``data_text``); any other field is shown as it is
#: (``left_out`` and ``deviations`` are said in full by ``data_notes``)
_DATA_SHOWN = {"kind", "paper", "release", "revision", "n_items", "n_loaded", "n_run", "label", "deviations",
               "left_out"}


def data_rows(card: Any) -> list[dict[str, Any]]:
    """Per paper, what its rows stand on (the card's data text, the rank basis, the data's own deviations and
    any further field a data identity carries), with what was left out and why (``data_notes``)."""
    from vlamb_nb.report_card import data_notes, data_text

    rows: list[dict[str, Any]] = []
    for paper, state in card.papers.items():
        seen: list[tuple] = []
        for h in card.headlines:
            if h.paper != paper:
                continue
            d = h.data or {}
            extra = [f"{k}: {cell(v)[0]}" for k, v in d.items() if k not in _DATA_SHOWN and v not in (None, "", [])]
            what = (data_text(h), h.rank_basis, tuple(data_notes(d)), tuple(extra))
            if what not in seen:
                seen.append(what)
        if not seen:
            rows.append({"paper": paper, "status": state, "data": "–", "basis": "", "notes": []})
        for text, basis, notes, extra in seen:
            rows.append({"paper": paper, "status": state, "data": text, "basis": basis, "notes": [*extra, *notes]})
    return rows


def run_page(results: dict[str, dict[str, Any]], card: Any, *, run_dir: Path, figures: Path,
             params: dict[str, Any] | None = None, card_figure_error: str | None = None,
             runs: list[Any] | None = None, items_error: str | None = None) -> str:
    """``report.html`` of a reproduce run, from its ``results.json`` content, its card and its figures folder;
    ``runs``: its scored stores (``compare.Run``), whose items each paper's section lists (``items_error``: why
    they could not be read)."""
    from vlamb_nb.report_card import COLUMNS, DEMO_NOTE, RANK_NOTE, TEST_COLUMNS, table

    run_dir = Path(run_dir)
    placement = place_figures(results, Path(figures), run_dir)
    card_rows, card_notes, card_tests = table(card)
    item_views = _item_views(runs, items_error)  # items behind every number (report_items)
    notebooks, failures, sections = [], [], []
    for name, r in results.items():
        status = "not run" if r.get("skipped") else "ok" if r.get("ok") else "failed"
        notebooks.append({"name": name, "status": status, "seconds": r.get("seconds") or 0.0,
                          "parameters": cell(r.get("parameters") or {})[0], "warnings": r.get("warnings") or []})
        if status == "failed":
            failures.append({"name": name, "error": r.get("error") or "unknown error", "cell": r.get("failed_cell"),
                             "source": r.get("failed_source")})
        res = r.get("results") or {}
        keys = sorted((k for k in res if k != "headline"), key=lambda k: (section_rank(k), list(res).index(k)))
        blocks = [{**block(k, res[k]), "rank": section_rank(k), "figures": _figures_view(placement.take(name, k),
                                                                                            run_dir)}
                  for k in keys]
        headline = [row for row in card_rows if row["paper"] == name and "state" not in row]
        sections.append({"name": name, "status": status, "skipped": r.get("skipped"), "error": r.get("error"),
                         "failed_cell": r.get("failed_cell"), "failed_source": r.get("failed_source"),
                         "warnings": r.get("warnings") or [], "seconds": r.get("seconds") or 0.0,
                         "notebook": f"{name}.ipynb", "headline": headline,
                         "headline_figures": _figures_view(placement.take(name, "headline"), run_dir),
                         "blocks": [b for b in blocks if b["rank"] < 3], "audit_from": 2,
                         "deviations": [b for b in blocks if b["rank"] == 3],
                         "rest": _figures_view(placement.rest(name), run_dir)})
        sections[-1]["items"] = _section_items(item_views, name, headline, first=not any(
            x.get("items") for x in sections[:-1]))  # items behind every number (report_items)
    return environment().get_template("report.html.j2").render(
        run_id=run_dir.name, card=card, demo=card.demo, demo_note=DEMO_NOTE, params=cell(params or {})[0],
        notebooks=notebooks, failures=failures, data=data_rows(card), n_ok=sum(n["status"] == "ok" for n in notebooks),
        card_columns=COLUMNS, card_rows=card_rows, card_notes=card_notes, card_tests=card_tests,
        test_columns=TEST_COLUMNS, rank_note=RANK_NOTE, card_figures=_figures_view(placement.card, run_dir),
        card_figure_error=card_figure_error, sections=sections,
        other_figures=_figures_view(placement.other, run_dir))


def write_run_page(run_dir: str | os.PathLike, results: dict[str, dict[str, Any]], card: Any, *,
                   figures: str | os.PathLike | None = None, params: dict[str, Any] | None = None,
                   card_figure_error: str | None = None, runs: list[Any] | None = None,
                   items_error: str | None = None) -> Path:
    """Write ``<run>/report.html``; returns its path."""
    run_dir = Path(run_dir)
    page = run_page(results, card, run_dir=run_dir, figures=Path(figures) if figures else run_dir / "figures",
                    params=params, card_figure_error=card_figure_error, runs=runs, items_error=items_error)
    path = run_dir / "report.html"
    path.write_text(page, encoding="utf-8")
    return path


# -- the items behind the numbers (vlamb_nb/report_items.py; templates/_items.html.j2) -----------------------------
def _item_views(runs: list[Any] | None, error: str | None) -> dict[str, Any]:
    from vlamb_nb.report_items import run_views

    if error or not runs:
        return {"error": error} if error else {}
    try:
        return run_views(runs)
    except Exception as e:  # noqa: BLE001 - items that cannot be listed must not lose the report
        return {"error": f"{type(e).__name__}: {e}"}


def _section_items(views: dict[str, Any], paper: str, headline: list[dict[str, Any]], *,
                   first: bool) -> dict[str, Any] | None:
    from vlamb_nb.report_items import blob, headline_links

    if "error" in views:
        return {"error": views["error"], "assets": False}
    view = views.get(paper)
    if view is None or not view.rows:
        return None
    data = {**view.to_json(), "links": {"headline": headline_links(view, headline)}}
    return {"id": f"items-{paper}", "blob": blob(data), "notes": view.notes, "assets": first}


def _comparison_items(c: Any) -> dict[str, Any] | None:
    from vlamb_nb.report_items import blob, comparison_links, comparison_view

    try:
        view = comparison_view(c)
    except Exception as e:  # noqa: BLE001 - items that cannot be listed must not lose the page
        return {"error": f"{type(e).__name__}: {e}", "assets": False}
    if not view.rows:
        return None
    data = {**view.to_json(), "links": comparison_links(view, c)}
    return {"id": "items", "blob": blob(data), "notes": view.notes, "assets": True}


# -- the comparison's page ------------------------------------------------------------------------------------
def comparison_page(c: Any, *, figure: Path | None = None, page_dir: Path | None = None) -> str:
    """``comparison.html`` of a :class:`vlamb_nb.compare.Comparison` (read through its ``display()``), its figure
    (PNG, with a link to the PDF beside it when there is one) inlined."""
    page_dir = Path(page_dir) if page_dir is not None else Path(".")
    figs = []
    if figure is not None:
        figure = Path(figure)
        pdf = figure.with_suffix(".pdf")
        figs = _figures_view([Figure(figure.stem, png=figure, pdf=pdf if pdf.is_file() else None)], page_dir)
    d = c.display()
    return environment().get_template("comparison.html.j2").render(
        c=c, d=d, figures=figs, items=_comparison_items(c),  # items behind every number (report_items)
        values=Table(d["value_columns"], d["values"]),
        pairs=Table(d["pair_columns"], d["pairs"]),
        models=[{**m, "own": d["own_deviations"].get(m["model"], [])} for m in c.models])


def write_comparison_page(c: Any, directory: str | os.PathLike, *, name: str = "comparison",
                          figure: Path | None = None) -> Path:
    """Write ``<directory>/<name>.html``; returns its path."""
    d = Path(directory)
    path = d / f"{name}.html"
    path.write_text(comparison_page(c, figure=figure, page_dir=d), encoding="utf-8")
    return path
