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
from users and servers, and show as text; a control byte in them is shown as its visible symbol (U+2400...), never
written into the page. Every table is a :class:`Table` with readable headers (:func:`header_label`), one p-value
format (:func:`vlamb_nb.stats.result.format_p`) and its CSV and LaTeX (booktabs) both as ``data:`` links
on the page and as files in ``tables/`` beside it (:class:`Exports`). Both pages carry a provenance block
(:func:`provenance`): what produced the numbers, from the run's stores and the environment at run time
(``provenance.json``, written once with the run's first page).
"""

from __future__ import annotations

import base64
import csv
import io
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: notebook metadata is stored with sorted keys; tables read better in this order: what a row is (its model, item,
#: table and row) first, then the paper's value beside ours
PREFERRED_COLUMNS = ("model", "model_name", "run", "item_id", "item", "name", "table", "row", "column", "paper",
                     "setting", "slice", "metric", "published", "paper_value", "ours", "recomputed", "diff", "match",
                     "ok", "ci_low", "ci_high", "paper_in_ci", "kind", "flag", "note")
#: headers a reader knows, for recorded column names; any other name is written as words (:func:`header_label`)
HEADER_LABELS = {
    "ci_low": "CI low", "ci_high": "CI high", "paper_in_ci": "paper in CI", "paper_value": "paper value",
    "ci": "95% CI", "n": "n", "p": "p", "p_value": "p", "pvalue": "p", "p_holm": "p (Holm)", "p_adjusted": "p (adj.)",
    "p_adj": "p (adj.)", "p_bh": "p (BH)", "diff": "difference", "acc": "accuracy", "iou": "IoU", "item_id": "item",
    "model_name": "model", "n_items": "n items", "rank_low": "rank low", "rank_high": "rank high", "f1": "F1",
    "se": "SE", "sd": "SD", "": "row",
}
#: words kept in their usual capitals when a header is made from a snake_case name
_ACRONYMS = {"ci": "CI", "iou": "IoU", "id": "ID", "f1": "F1", "vqa": "VQA", "llm": "LLM", "vlm": "VLM", "bh": "BH",
             "pp": "pp", "url": "URL", "sha256": "SHA-256", "ocr": "OCR"}
#: a table with more rows than this scrolls inside a box of bounded height (its header stays), so a section
#: reads at a glance; one with more than FOLD_ROWS is also folded (one click away)
TALL_ROWS = 25
FOLD_ROWS = 300
#: rows shown of one table; the rest stay in results.json (the page says how many)
MAX_ROWS = 2000
FIGURE_SUFFIXES = (".png", ".pdf")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: C0 and C1 control characters (tab, newline and carriage return aside), DEL and lone surrogates: never written
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def clean_text(text: str) -> str:
    """``text`` with every control character shown as its visible symbol (NUL as U+2400 \u2400, DEL as \u2421,
    C1 controls and lone surrogates as U+FFFD): a byte a browser would drop or choke on never reaches the page."""
    def visible(m: re.Match[str]) -> str:
        c = ord(m.group())
        return chr(0x2400 + c) if c < 0x20 else "\u2421" if c == 0x7F else "\ufffd"

    return _CONTROL.sub(visible, text)


def header_label(name: Any) -> str:
    """A column's header as a reader reads it: a known label (``ci_low`` -> "CI low"), a snake_case name as words
    with their usual capitals (``paper_in_ci`` -> "paper in CI", lower case like the pages' other headers), a name
    without underscores as it is."""
    key = str(name)
    if key in HEADER_LABELS:
        return HEADER_LABELS[key]
    if "_" not in key:
        return key
    return " ".join(_ACRONYMS.get(w.lower(), w) for w in key.split("_") if w)


def is_p_column(name: Any) -> bool:
    """A column of p-values: the one rule, :func:`vlamb_nb.stats.result.is_p_column`."""
    from vlamb_nb.stats.result import is_p_column as rule

    return rule(name)


# -- figures ----------------------------------------------------------------------------------------------------
@dataclass
class Figure:
    """One figure of a run: its PNG and/or PDF (the same name), as a path under the run's figures folder."""

    name: str  # the path under the figures folder without suffix, e.g. "vague/demo/ours_accuracy"
    png: Path | None = None
    pdf: Path | None = None
    refused: str | None = None  # why its files are not read (a link out of the figures folder)
    title: str = ""  # what it shows, as the notebook's save_figure recorded it (its titles)
    table: str | None = None  # the recorded table it explains

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

    def alt(self) -> str:
        """What the image shows, for a reader who cannot see it: its recorded titles, else its name in words, with
        its paper and the table it explains."""
        paper, _, rest = self.name.partition("/")
        stem = rest.rsplit("/", 1)[-1] if rest else paper
        what = self.title or re.sub(r"[_-]+", " ", stem).strip()
        out = f"{'Report card' if paper == 'card' else paper} figure: {what}"
        if self.table:
            out += f" (for the table {header_label(self.table)})"
        return out + (" — pipeline demo, not a result" if self.demo else "")

    def data_uri(self) -> tuple[str | None, str | None]:
        """(``data:image/png;base64,...``, None), or (None, why not) for a file that is not a readable PNG (or
        one that is not read: a link out of the run's figures folder)."""
        if self.refused:
            return None, self.refused
        if self.png is None:
            return None, "no PNG (PDF only)"
        try:
            data = self.png.read_bytes()
        except OSError as e:
            from vlamb_nb.errors import reason

            return None, f"cannot be read: {reason(e)}"
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
    #: per notebook, the files its cells said they saved outside the figures folder (``../``): never read,
    #: reported in its section
    outside: dict[str, list[str]] = field(default_factory=dict)

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
    """Every figure file under ``figures`` (PNG and PDF of one name are one figure), by name, sorted. A link whose
    target lies outside ``figures`` (or is gone) is listed with why it is not read: it is never opened."""
    out: dict[str, Figure] = {}
    if not figures.is_dir():
        return out
    root = figures.resolve()
    for p in sorted(figures.rglob("*")):
        if p.suffix not in FIGURE_SUFFIXES or not (p.is_file() or p.is_symlink()):
            continue
        name = p.relative_to(figures).with_suffix("").as_posix()
        fig = out.setdefault(name, Figure(name))
        setattr(fig, p.suffix[1:], p)
        target = p.resolve()
        if not target.is_relative_to(root):
            fig.refused = (f"is a link to a file outside the run's figures folder ({p.name} -> {os.readlink(p)}): "
                           "not read" if p.is_symlink() else "lies outside the run's figures folder: not read")
        elif not target.is_file():
            fig.refused = f"is a link to nothing ({p.name}): not read"
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
                path = Path(os.path.normpath(run_dir.resolve() / f))  # where the cell said it saved, links kept
                if not path.is_relative_to(figures):
                    if str(f) not in placement.outside.setdefault(nb, []):
                        placement.outside[nb].append(str(f))
                    continue
                fig = inventory.pop(path.relative_to(figures).with_suffix("").as_posix(), None)
                if fig is not None:
                    fig.title, fig.table = str(entry.get("title") or ""), entry.get("table")
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
    """A notebook's collected figures for ``results.json``: each call's table and its files relative to the run
    (and its title, where ``save_figure`` recorded one: the page's alt text)."""
    return [{"table": f.get("table"), "name": f.get("name"),
             "files": [Path(os.path.relpath(p, run_dir)).as_posix() for p in f.get("files") or []],
             **({"title": str(f["title"])} if f.get("title") else {})}
            for f in figures]


# -- values as tables -----------------------------------------------------------------------------------------
@dataclass
class Table:
    """A table as text, with a sort key per cell (numbers sort as numbers); ``raw`` keeps each cell's value for
    the CSV (a number at full precision), ``title`` names it (its scroll box's label, its files' names), and
    ``csv_uri``/``tex_uri``/``file`` are filled when the page exports it (:class:`Exports`)."""

    columns: list[str]
    rows: list[list[tuple[str, Any]]]
    more: int = 0  # rows left out (in results.json)
    raw: list[list[Any]] | None = None
    title: str = "table"
    section: str = ""  # the page's section it is in (a paper, the card, the comparison)
    file: str = ""
    csv_uri: str = ""
    tex_uri: str = ""
    #: the CSV's own columns and rows where they differ from the table's (every number in a column of its own:
    #: value, ci_low, ci_high, n, p), else the table's columns with ``raw``
    export: tuple[list[str], list[list[Any]]] | None = None
    #: what the page calls it (a recorded result's section title), where its ``title`` (the files' names) is a key
    label: str = ""

    @property
    def shown_title(self) -> str:
        return self.label or self.title

    @property
    def tall(self) -> bool:
        return len(self.rows) > TALL_ROWS

    @property
    def folded(self) -> bool:
        return len(self.rows) > FOLD_ROWS

    @property
    def labels(self) -> list[str]:
        """The headers as shown."""
        return [header_label(c) for c in self.columns]

    @property
    def numeric(self) -> list[bool]:
        """Per column: every non-empty cell is a number (right-aligned in LaTeX)."""
        out = []
        for i in range(len(self.columns)):
            cells = [r[i] for r in self.rows if i < len(r) and r[i][0] != ""]
            out.append(bool(cells) and all(v is not None for _, v in cells))
        return out

    def csv(self) -> str:
        """The table as CSV: the recorded column names, each value as recorded (numbers at full precision), or
        its ``export`` columns and rows; every text cell safe to open in a spreadsheet (:func:`csv_cell`)."""
        if self.export is not None:
            return csv_text(self.export[0], self.export[1])
        rows = []
        for i, row in enumerate(self.rows):
            raw = self.raw[i] if self.raw is not None else None
            rows.append([raw[j] if raw is not None else text for j, (text, _) in enumerate(row)])
        return csv_text(self.columns, rows)

    def latex(self) -> str:
        """The table as LaTeX with booktabs rules (``\\usepackage{booktabs}``), as the page shows it."""
        align = "".join("r" if n else "l" for n in self.numeric)
        lines = [f"\\begin{{tabular}}{{{align}}}", "\\toprule",
                 " & ".join(latex_escape(c) for c in self.labels) + " \\\\", "\\midrule"]
        lines += [" & ".join(latex_escape(text) for text, _ in row) + " \\\\" for row in self.rows]
        lines += ["\\bottomrule", "\\end{tabular}", ""]
        return "\n".join(lines)


def _csv_value(v: Any) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    if isinstance(v, dict | list):
        return json.dumps(v, ensure_ascii=False)
    return str(v)


#: what a spreadsheet reads as the start of a formula (OWASP's list: = + - @, a tab, a carriage return)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def csv_cell(v: Any) -> str:
    """One CSV cell: a number as it is (a negative one too), text with its control characters made visible and,
    where it starts as a formula would (:data:`FORMULA_START`), a leading apostrophe, as spreadsheet software
    expects, so a model named ``=HYPERLINK(...)`` is shown, never run."""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int | float):
        return _csv_value(v)
    text = _csv_value(v)
    if text.startswith(FORMULA_START) and not _NUMBER.fullmatch(text):
        text = "'" + text
    return clean_text(text)


def csv_text(columns: list[Any], rows: list[list[Any]]) -> str:
    """A CSV file: a header and rows, every cell through :func:`csv_cell`."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([csv_cell(str(c)) for c in columns])
    for row in rows:
        w.writerow([csv_cell(v) for v in row])
    return buf.getvalue()


_LATEX = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
          "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "\\": r"\textbackslash{}", "<": r"\textless{}",
          ">": r"\textgreater{}", "\n": " ", "\t": " ", "\r": " ",
          # brackets in braces: a row (or a rule) that opens with ``[`` is never read as an optional argument
          "[": "{[}", "]": "{]}"}
#: characters outside ASCII that plain pdflatex (no extra package) sets, as LaTeX writes them
_LATEX_SYMBOLS = {
    "–": "--", "—": "---", "−": "$-$", "‘": "`", "’": "'", "“": "``", "”": "''", "…": r"\ldots{}",
    "·": r"$\cdot$", "×": r"$\times$", "±": r"$\pm$", "≤": r"$\leq$", "≥": r"$\geq$", "≠": r"$\neq$",
    "≈": r"$\approx$", "→": r"$\rightarrow$", "←": r"$\leftarrow$", "↔": r"$\leftrightarrow$",
    "✓": r"$\surd$", "✔": r"$\surd$", "✗": r"$\times$", "✘": r"$\times$", "°": r"$^\circ$",
    "µ": r"$\mu$", "§": r"\S{}", "¶": r"\P{}", "©": r"\copyright{}", "£": r"\pounds{}", "€": "EUR",
    "•": r"$\bullet$", "∞": r"$\infty$", "√": r"$\surd$", "½": "1/2", "¼": "1/4", "¾": "3/4", "\u00a0": "~",
    "ß": r"\ss{}", "æ": r"\ae{}", "Æ": r"\AE{}", "ø": r"\o{}", "Ø": r"\O{}", "œ": r"\oe{}", "Œ": r"\OE{}",
    "å": r"\aa{}", "Å": r"\AA{}", "ł": r"\l{}", "Ł": r"\L{}", "ı": r"\i{}", "¿": r"?`", "¡": r"!`",
}
_GREEK = dict(zip("αβγδεζηθικλμνξπρστυφχψωΓΔΘΛΞΠΣΥΦΨΩ", (
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi pi rho sigma tau upsilon phi chi psi "
    "omega Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega").split(), strict=True))
#: combining accents (after NFD) and the LaTeX accent command each is
_ACCENTS = {"\u0300": "`", "\u0301": "'", "\u0302": "^", "\u0303": "~", "\u0308": '"', "\u0304": "=", "\u0307": ".",
            "\u0306": "u", "\u030c": "v", "\u030b": "H", "\u0327": "c", "\u0328": "k", "\u030a": "r"}


def _latex_char(ch: str) -> str:
    """One character outside ASCII as plain pdflatex sets it: a known symbol, a Greek letter in math, a Latin
    letter with accents as accent commands (é as ``\\'{e}``), anything else (Cyrillic, CJK, emoji) as its code
    point ``U+0416`` in typewriter type, so every row compiles and nothing is silently lost."""
    import unicodedata

    if ch in _LATEX_SYMBOLS:
        return _LATEX_SYMBOLS[ch]
    if ch in _GREEK:
        return f"$\\{_GREEK[ch]}$"
    parts = unicodedata.normalize("NFD", ch)
    if parts[0].isascii() and parts[0].isalpha() and len(parts) > 1 and all(p in _ACCENTS for p in parts[1:]):
        out = parts[0] if parts[0] not in "ij" else "\\" + parts[0]  # dotless i, j under an accent
        for p in parts[1:]:
            out = f"\\{_ACCENTS[p]}{{{out}}}"
        return out
    return ""  # no LaTeX form: written as its code point by latex_escape (runs of them together)


def latex_escape(text: Any) -> str:
    """``text`` for a LaTeX cell that compiles with plain pdflatex and booktabs: its special characters escaped,
    brackets braced (a cell that opens with ``[`` after ``\\\\`` is never an optional argument), control characters
    made visible, every character outside ASCII mapped (:func:`_latex_char`)."""
    import unicodedata

    out: list[str] = []
    codes: list[str] = []  # a run of characters with no LaTeX form, written together as their code points
    for ch in unicodedata.normalize("NFC", clean_text(str(text))):
        mapped = _LATEX.get(ch, ch) if ch.isascii() else _latex_char(ch)
        if not mapped:
            codes.append(f"U+{ord(ch):04X}")
            continue
        if codes:
            out.append("\\texttt{" + " ".join(codes) + "}")
            codes = []
        out.append(mapped)
    if codes:
        out.append("\\texttt{" + " ".join(codes) + "}")
    return "".join(out)


#: a nested value longer than this is cut in a table cell (the whole value is in the CSV and results.json)
CELL_CHARS = 400


def compact(v: Any, depth: int = 0) -> str:
    """A nested value in one short line: ``{"a": 1, "b": {"c": 2}}`` as ``a: 1 · b: (c: 2)``, a list as
    ``x, y``."""
    if isinstance(v, dict):
        parts = [f"{k}: {compact(x, depth + 1)}" for k, x in v.items()]
        text = (", " if depth else " · ").join(parts) if parts else "none"
        return f"({text})" if depth and parts else text
    if isinstance(v, list | tuple):
        text = ", ".join(compact(x, depth + 1) for x in v)
        return f"[{text}]" if depth else (text or "none")
    return cell(v)[0] if v is not None else "–"


def cell(v: Any, column: Any = None) -> tuple[str, Any]:
    """A value as table text and its sort key (None: sort by the text); a p-value column in the one p format,
    a missing number as "–" (never ``nan``), a nested value compact on one line."""
    if column is not None and is_p_column(column) and (v is None or isinstance(v, int | float)) \
            and not isinstance(v, bool):
        from vlamb_nb.stats.result import format_p

        return format_p(v), (float(v) if v is not None and math.isfinite(v) else None)
    if v is None:
        return "", None
    if isinstance(v, bool):
        return str(v), None
    if isinstance(v, int):
        return str(v), v
    if isinstance(v, float):
        return (f"{v:.4g}", v) if math.isfinite(v) else ("–", None)
    if isinstance(v, dict | list):
        text = compact(v)
        return (text if len(text) <= CELL_CHARS else text[:CELL_CHARS] + " …"), None
    return str(v), None


def records_table(rows: list[dict[str, Any]], title: str = "table") -> Table:
    keys = list(dict.fromkeys(k for r in rows for k in r))
    cols = [k for k in PREFERRED_COLUMNS if k in keys] + [k for k in keys if k not in PREFERRED_COLUMNS]
    shown = rows[:MAX_ROWS]
    return Table(cols, [[cell(r.get(c), c) for c in cols] for r in shown], max(0, len(rows) - MAX_ROWS),
                 raw=[[r.get(c) for c in cols] for r in shown], title=title)


def _frame_like(value: Any) -> bool:
    """A pandas ``to_dict()`` (column -> {row -> scalar}) as recorded: shown as a table with its row names."""
    return (isinstance(value, dict) and bool(value) and all(isinstance(v, dict) and v for v in value.values())
            and all(not isinstance(x, dict | list) for v in value.values() for x in v.values()))


def _frame_table(value: dict[str, dict[str, Any]], title: str = "table") -> Table:
    cols = list(value)
    index = list(dict.fromkeys(r for v in value.values() for r in v))
    rows = [[(str(r), None)] + [cell(value[c].get(r), c) for c in cols] for r in index[:MAX_ROWS]]
    raw = [[str(r)] + [value[c].get(r) for c in cols] for r in index[:MAX_ROWS]]
    return Table(["", *cols], rows, max(0, len(index) - MAX_ROWS), raw=raw, title=title)


def _scalar(v: Any) -> bool:
    return not isinstance(v, dict | list) or (isinstance(v, dict | list) and len(compact(v)) <= 160
                                              and not (isinstance(v, list) and v and isinstance(v[0], dict)))


def block(key: str, value: Any, title: str | None = None, label: str | None = None) -> dict[str, Any]:
    """One recorded result as the page shows it: a table, a list, named parts or one value. Named parts that are
    plain values (or small nested ones) read as one compact paragraph of ``name: value`` pairs, not one line
    each. ``title`` names its tables' files (the key); ``label`` is what the page calls them (the key's section
    title, :func:`vlamb_nb.run_view.section_title`, never the raw key)."""
    from vlamb_nb.findings import Finding, is_finding
    from vlamb_nb.run_view import section_title

    title = title or key
    label = label or section_title(key)
    if is_finding(value):  # a computed conclusion: its sentence with what it is, as the notebook says it
        f = Finding.from_dict(value)
        return {"key": key, "kind": "value", "text": clean_text(f.said())}
    if isinstance(value, list) and value and all(isinstance(r, dict) for r in value):
        return {"key": key, "kind": "table", "table": _labelled(records_table(value, title), label)}
    if isinstance(value, list):
        return {"key": key, "kind": "list", "items": [cell(v)[0] for v in value]}
    if _frame_like(value):
        return {"key": key, "kind": "table", "table": _labelled(_frame_table(value, title), label)}
    if isinstance(value, dict):
        facts = [{"key": str(k), "text": cell(v, k)[0] if not isinstance(v, dict | list) else _inner(v)}
                 for k, v in value.items() if _scalar(v)]
        parts = [block(str(k), v, f"{title}: {k}", f"{label}: {header_label(k)}") for k, v in value.items()
                 if not _scalar(v)]
        return {"key": key, "kind": "parts", "facts": facts, "parts": parts}
    return {"key": key, "kind": "value", "text": cell(value, key)[0]}


def _labelled(t: Table, label: str) -> Table:
    t.label = label
    return t


def _inner(v: Any) -> str:
    """A nested value inside a line of facts: ``1: 1, 2: 3`` (commas, so the facts' dots still part the names)."""
    text = compact(v, 1)
    return text[1:-1] if text[:1] in "([" and text[-1:] in ")]" else text


def tables_of(b: dict[str, Any]) -> list[Table]:
    """Every table of a block, nested parts included."""
    if b["kind"] == "table":
        return [b["table"]]
    return [t for p in b.get("parts") or [] for t in tables_of(p)]


def score_table(rows: list[dict[str, Any]], title: str) -> Table:
    """The scores of a run's stores (:data:`vlamb_nb.run_view.SCORE_COLUMNS`), numbers sorting as numbers."""
    from vlamb_nb.run_view import SCORE_COLUMNS

    cols = list(SCORE_COLUMNS)
    return Table(cols, [[cell(r.get(c), c) for c in cols] for r in rows], raw=[[r.get(c) for c in cols] for r in rows],
                 title=title)


def text_rows_table(columns: Any, rows: list[dict[str, Any]], title: str) -> Table:
    """Rows of display text (the card's, the comparison's models) as a :class:`Table`."""
    cols = list(columns)
    return Table(cols, [[(str(r.get(c, "")), None) for c in cols] for r in rows], title=title)


class Exports:
    """Every table of a page as CSV and LaTeX: ``data:`` links on the page (no server needed to download) and
    files ``tables/<section>-<table>.{csv,tex}`` beside it; names are made unique."""

    def __init__(self) -> None:
        self.files: dict[str, Table] = {}

    def add(self, section: str, t: Table) -> Table:
        t.section = section
        stem = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{section}-{t.title}".lower()).strip("-.") or "table"
        stem, k = stem[:100], 2
        name = stem
        while name in self.files:
            name, k = f"{stem}-{k}", k + 1
        self.files[name] = t
        t.file = name
        t.csv_uri = "data:text/csv;charset=utf-8;base64," + base64.b64encode(t.csv().encode("utf-8")).decode("ascii")
        # a table folded for its length (thousands of paired tests) is no table to paste into a paper: its LaTeX
        # is the file beside the page, not a second copy inside it
        t.tex_uri = f"tables/{name}.tex" if t.folded else "data:application/x-tex;charset=utf-8;base64," + \
            base64.b64encode(t.latex().encode("utf-8")).decode("ascii")
        return t

    def write(self, folder: Path) -> list[Path]:
        """The files beside the page (``folder`` is its ``tables/``); stale ones of an earlier page removed."""
        folder.mkdir(parents=True, exist_ok=True)
        keep = {f"{n}.{x}" for n in self.files for x in ("csv", "tex")}
        for old in folder.iterdir():
            if old.is_file() and old.suffix in (".csv", ".tex") and old.name not in keep:
                old.unlink()
        out = []
        for name, t in self.files.items():
            for suffix, text in ((".csv", t.csv()), (".tex", t.latex())):
                path = folder / f"{name}{suffix}"
                path.write_text(text, encoding="utf-8")
                out.append(path)
        return out


# -- templates ------------------------------------------------------------------------------------------------
def _finalize(value: Any) -> Any:
    """Every value a template writes: text with its control characters made visible (markup the package made
    itself is left as it is)."""
    import markupsafe

    if isinstance(value, str) and not isinstance(value, markupsafe.Markup):
        return clean_text(value)
    return value


def environment():
    """The Jinja2 environment of the package's templates, autoescaping every value."""
    import jinja2

    from vlamb_nb.run_view import section_title

    env = jinja2.Environment(loader=jinja2.PackageLoader("vlamb_nb", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             finalize=_finalize)
    env.globals["page_css"] = _static("page.css")
    env.globals["page_js"] = _static("page.js")
    env.globals["tall_rows"] = TALL_ROWS
    env.filters["code_spans"] = code_spans
    env.filters["label"] = header_label
    env.filters["section_title"] = section_title  # a recorded result's key as its section title (never the raw key)
    return env


def code_spans(text: Any):
    """``text`` escaped, with its `backtick` spans (commands in the package's notes) as ``<code>``."""
    import markupsafe

    text = clean_text(str(text))
    parts = markupsafe.escape(text).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: leave the text as it is
        return markupsafe.escape(text)
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
        readable = f.refused is None
        out.append({"name": f.name, "demo": f.demo, "uri": uri, "problem": problem, "alt": f.alt(),
                    "png_file": f"{f.name}.png" if f.png is not None else None,
                    "pdf_file": f"{f.name}.pdf" if f.pdf is not None else None,
                    "pdf_href": f.href("pdf", page_dir) if f.pdf is not None and readable else None})
    return out


# -- provenance -----------------------------------------------------------------------------------------------
PROVENANCE_FILE = "provenance.json"
_LIBRARIES = ("torch", "transformers", "bitsandbytes")


def git_commit(folder: Path | None = None) -> str | None:
    """The commit of the package's own checkout (``+ local changes`` when it differs from it), or None where the
    package is not run from a checkout of its own (:func:`vlamb_nb.meta.package_commit`, the run record's reading)."""
    from vlamb_nb.meta import commit_label, package_commit

    found = package_commit(folder)
    return None if found is None else commit_label(*found)


def environment_facts() -> dict[str, Any]:
    """What ran the numbers: the package's version and commit, Python and the libraries a model runs on (read
    from their installed metadata, never imported)."""
    import platform
    import sys
    from importlib.metadata import PackageNotFoundError, version

    from vlamb_nb.meta import package_version

    libs: dict[str, str | None] = {}
    for name in _LIBRARIES:
        try:
            libs[name] = version(name)
        except PackageNotFoundError:
            libs[name] = None
    return {"vlamb_nb": package_version(), "commit": git_commit(), "python": sys.version.split()[0],
            "platform": platform.platform(), **libs}


def _first_record(path: Path) -> dict[str, Any] | None:
    try:
        with path.open("rb") as f:
            line = f.readline(1 << 20)
        rec = json.loads(line)
    except (OSError, ValueError):
        return None
    return rec if isinstance(rec, dict) and isinstance(rec.get("run"), dict) else None


def store_facts(folder: Path, *, limit: int = 200) -> list[dict[str, Any]]:
    """Per prediction store under ``folder`` (its first record's run meta): the paper and setting, the model and
    its revision, quantization, decoding, the prompt templates' digest, the items' digest, the data, and the
    library versions the run recorded."""
    out: list[dict[str, Any]] = []
    if not folder.is_dir():
        return out
    for path in sorted(folder.rglob("*.jsonl"))[:limit]:
        rec = _first_record(path)
        if rec is not None:
            out += [{**s, "store": path.relative_to(folder).as_posix()} for s in store_facts_of(rec)]
    return out


def store_facts_of(rec: dict[str, Any]) -> list[dict[str, Any]]:
    """The provenance one stored record carries (its run meta, model and decoding)."""
    run, model = rec["run"], rec.get("model") if isinstance(rec.get("model"), dict) else {}
    versions = run.get("versions") if isinstance(run.get("versions"), dict) else {}
    data = run.get("data") if isinstance(run.get("data"), dict) else {}
    return [{"paper": run.get("benchmark") or rec.get("benchmark"),
             "setting": run.get("setting") or rec.get("setting"), "model": model.get("model_id"),
             "revision": model.get("revision"), "quantization": model.get("quantization"),
             "backend": model.get("backend"), "decoding": rec.get("params") or {},
             "prompt_digest": run.get("template"), "items_digest": run.get("source"),
             "data_release": data.get("release"), "data_revision": data.get("revision"),
             "versions": {k: versions.get(k) for k in ("vlamb_nb", "python", *_LIBRARIES) if versions.get(k)}}]


def release_facts(papers: list[str]) -> dict[str, dict[str, Any]]:
    """Per paper with a fetched release: its release, revision and the sha256 of its manifest's file list (the
    sha256 of every file, in name order: one digest that names exactly the bytes read)."""
    import hashlib

    out: dict[str, dict[str, Any]] = {}
    try:
        from vlamb_nb.datahome import read_manifest
    except ImportError:  # pragma: no cover - the package always has it
        return out
    for paper in papers:
        try:
            manifest = read_manifest(paper)
        except Exception:  # noqa: BLE001 - a damaged manifest is said by `data status`; the page goes on
            manifest = None
        if not manifest:
            continue
        files = sorted((str(f.get("name") or f.get("path") or ""), str(f.get("sha256") or ""))
                       for f in manifest.get("files") or [] if isinstance(f, dict))
        digest = hashlib.sha256("".join(f"{n}\t{h}\n" for n, h in files).encode()).hexdigest() if files else None
        out[paper] = {"release": manifest.get("release"), "revision": manifest.get("revision"),
                      "files": len(files), "sha256": digest}
    return out


def provenance(run_dir: Path, papers: list[str], *, record: bool = True) -> dict[str, Any]:
    """The run's provenance: ``<run>/provenance.json`` when the run recorded it (a page rebuilt later shows what
    ran, not what is installed now), else gathered now — the environment, every store's run meta, each release's
    files digest — and recorded there (``record``)."""
    path = run_dir / PROVENANCE_FILE
    if path.is_file():
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            old = None
        if isinstance(old, dict) and isinstance(old.get("environment"), dict):
            old.setdefault("stores", store_facts(run_dir))
            return old
    facts = {"environment": environment_facts(), "stores": store_facts(run_dir), "releases": release_facts(papers)}
    if record:
        try:
            path.write_text(json.dumps(facts, indent=2), encoding="utf-8")  # ASCII: any odd name survives
        except OSError:
            pass  # a read-only run folder: the page still shows what it found
    return facts


def provenance_view(facts: dict[str, Any], data_ids: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The provenance block as the page shows it: the environment as name/value pairs, one row per model run
    (paper, setting, model@revision, quantization, decoding, prompt and items digests) and per paper's data."""
    env = facts.get("environment") or {}
    names = {"vlamb_nb": "vlamb_nb version", "commit": "package commit", "python": "Python", "platform": "platform",
             "torch": "torch", "transformers": "transformers", "bitsandbytes": "bitsandbytes"}
    pairs = [(label, env.get(k) or ("not a git checkout" if k == "commit" else "not installed")) for k, label
             in names.items() if k in env]
    runs = []
    for s in facts.get("stores") or []:
        dec = s.get("decoding") or {}
        runs.append({"paper": s.get("paper") or "–", "setting": s.get("setting") or "–",
                     "model": f"{s.get('model') or '–'}" + (f"@{s['revision']}" if s.get("revision") else ""),
                     "quantization": s.get("quantization") or "none",
                     "decoding": compact(dec) if dec else "–", "prompt digest": s.get("prompt_digest") or "–",
                     "items digest": s.get("items_digest") or "–",
                     "libraries": compact(s.get("versions") or {}) or "–"})
    data = []
    releases = facts.get("releases") or {}
    seen = set()
    for paper, d in data_ids:
        d = d or {}
        key = (paper, d.get("release"), d.get("revision"))
        if key in seen:
            continue
        seen.add(key)
        rel = releases.get(paper) or {}
        same = rel and rel.get("revision") == d.get("revision")
        data.append({"paper": paper, "release": d.get("release") or d.get("kind") or "–",
                     "revision": d.get("revision") or "–",
                     "sha256": rel.get("sha256") if same and rel.get("sha256") else d.get("sha256") or
                     ("a generated sample (no release files)" if d.get("kind") == "sample" else "not recorded")})
    for paper, rel in releases.items():
        if not any(r["paper"] == paper for r in data):
            data.append({"paper": paper, "release": rel.get("release") or "–", "revision": rel.get("revision") or "–",
                         "sha256": rel.get("sha256") or "not recorded"})
    return {"pairs": pairs, "runs": runs, "data": data,
            "run_columns": ["paper", "setting", "model", "quantization", "decoding", "prompt digest", "items digest",
                            "libraries"],
            "data_columns": ["paper", "release", "revision", "sha256"]}


def _export_provenance(prov: dict[str, Any], exports: Exports) -> None:
    """The provenance block's tables exported like the others (``prov["exports"]``: runs, data, files)."""
    files = prov.setdefault("files", [])
    prov["file_columns"] = ["model", "file", "bytes", "sha256"]
    prov["exports"] = {
        "runs": exports.add("provenance", text_rows_table(prov["run_columns"], prov["runs"], "model runs"))
        if prov["runs"] else None,
        "data": exports.add("provenance", text_rows_table(prov["data_columns"], prov["data"], "data"))
        if prov["data"] else None,
        "files": exports.add("provenance", Table(prov["file_columns"], [
            [(str(f["model"]), None), (str(f["file"]), None), (str(f["bytes"]) if f["bytes"] is not None else "–",
                                                                f["bytes"]), (f["sha256"] or "–", None)]
            for f in files], title="compared files", raw=[[f["model"], f["file"], f["bytes"], f["sha256"]]
                                                         for f in files])) if files else None}


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


def _section_id(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", name) or "x"


def run_page(results: dict[str, dict[str, Any]], card: Any, *, run_dir: Path, figures: Path,
             params: dict[str, Any] | None = None, card_figure_error: str | None = None,
             exports: Exports | None = None, runs: list[Any] | None = None,
             items_error: str | Mapping[str, str] | None = None, items_notes: Mapping[str, list[str]] | None = None,
             view: Any = None) -> str:
    """``report.html`` of a reproduce run, from its ``results.json`` content, its card and its figures folder,
    laid out from the run's one view (:mod:`vlamb_nb.run_view`, the one ``report.md`` renders; built here when
    ``view`` is not given); every table is added to ``exports`` (its CSV and LaTeX). ``runs``: its scored stores
    (``compare.Run``), whose items each paper's section lists (``items_error``: why they could not be read, for
    the whole run or ``{paper: why}``; ``items_notes``: ``{paper: [what its items leave out]}``)."""
    from vlamb_nb import run_view
    from vlamb_nb.report_card import COLUMNS, DEMO_NOTE, RANK_NOTE, TEST_COLUMNS, table

    run_dir = Path(run_dir)
    exports = exports if exports is not None else Exports()
    view = view if view is not None else run_view.build(results, run_dir, place_figures(results, Path(figures), run_dir))
    card_rows, card_notes, card_tests = table(card)
    item_views = _item_views(runs, items_error, items_notes)  # items behind every number (report_items)
    notebooks, failures, sections = [], [], []
    for nv in view.notebooks:
        name, status = nv.name, nv.status
        notebooks.append({"name": name, "status": status, "seconds": nv.seconds,
                          "parameters": compact(nv.parameters), "warnings": nv.warnings})
        if status == "failed":
            failures.append({"name": name, "error": nv.error or "unknown error", "cell": nv.failed_cell,
                             "source": nv.failed_source})

        def shown(b: Any) -> dict[str, Any]:
            out = {**block(b.key, b.value), "rank": b.rank, "figures": _figures_view(b.figures, run_dir)}
            for t in tables_of(out):
                exports.add(name, t)  # noqa: B023 - used at once, within this notebook's loop
            return out

        blocks = [shown(b) for b in nv.blocks]
        deviations = [shown(b) for b in nv.deviations]
        headline = [row for row in card_rows if row["paper"] == name and "state" not in row]
        headline_table = exports.add(name, text_rows_table(COLUMNS, headline, "headline")) if headline \
            else None
        scores = nv.score_rows()
        scores_table = exports.add(name, score_table(scores, "scores")) if scores else None
        sections.append({"name": name, "id": _section_id(name), "status": status, "skipped": nv.skipped,
                         "error": nv.error, "failed_cell": nv.failed_cell, "failed_source": nv.failed_source,
                         "warnings": nv.warnings, "seconds": nv.seconds,
                         "notebook": f"{name}.ipynb", "headline": headline_table, "scores": scores_table,
                         "headline_figures": _figures_view(nv.headline_figures, run_dir),
                         "blocks": blocks, "audit_from": run_view.AUDIT, "deviations": deviations,
                         "outside": nv.outside, "rest": _figures_view(nv.rest, run_dir)})
        sections[-1]["items"] = _section_items(item_views, name, headline, card_rows, scores, first=not any(
            x.get("items") for x in sections[:-1]))  # items behind every number (report_items)
    other = [r for sc in view.other_scores for r in sc.rows()]
    other_scores = exports.add("run", score_table(other, "other scores")) if other else None
    card_table = exports.add("card", Table(list(COLUMNS), [[(str(r[c]), None) for c in COLUMNS] for r in card_rows],
                                           title="report card"))
    tests_table = exports.add("card", text_rows_table(TEST_COLUMNS, card_tests, "paired tests")) if card_tests \
        else None
    facts = provenance(run_dir, list(results))
    prov = provenance_view(facts, [(h.paper, h.data or {}) for h in card.headlines])
    data = data_rows(card)
    run_tables = {  # rendered by the template with links and status colours; exported as their text
        "notebooks": exports.add("run", Table(["notebook", "status", "seconds", "parameters"], [
            [(n["name"], None), (n["status"], None), (f"{n['seconds']:.1f}", n["seconds"]), (n["parameters"], None)]
            for n in notebooks], title="notebooks")),
        "data": exports.add("run", Table(["paper", "status", "data", "rank basis", "notes"], [
            [(d["paper"], None), (d["status"], None), (d["data"], None), (d["basis"], None),
             ("; ".join(d["notes"]), None)] for d in data], title="data"))}
    _export_provenance(prov, exports)
    return environment().get_template("report.html.j2").render(
        run_id=run_dir.name, card=card, demo=card.demo, demo_note=DEMO_NOTE, params=compact(params or {}),
        notebooks=notebooks, failures=failures, data=data, n_ok=sum(n["status"] == "ok" for n in notebooks),
        run_tables=run_tables,
        card_table=card_table, card_notes=card_notes, tests_table=tests_table, rank_note=RANK_NOTE,
        card_figures=_figures_view(view.card_figures, run_dir), card_figure_error=card_figure_error, sections=sections,
        other_figures=_figures_view(view.other_figures, run_dir), other_scores=other_scores, prov=prov,
        n_warnings=sum(len(s["warnings"]) + bool(s["skipped"]) + len(s["outside"]) for s in sections))


def write_run_page(run_dir: str | os.PathLike, results: dict[str, dict[str, Any]], card: Any, *,
                   figures: str | os.PathLike | None = None, params: dict[str, Any] | None = None,
                   card_figure_error: str | None = None, runs: list[Any] | None = None,
                   items_error: str | Mapping[str, str] | None = None,
                   items_notes: Mapping[str, list[str]] | None = None, view: Any = None) -> Path:
    """Write ``<run>/report.html`` and every table of it as ``<run>/tables/*.csv`` and ``*.tex``; returns the
    page's path. ``runs``: the run's scored stores, whose items the page lists."""
    run_dir = Path(run_dir)
    exports = Exports()
    page = run_page(results, card, run_dir=run_dir, figures=Path(figures) if figures else run_dir / "figures",
                    params=params, card_figure_error=card_figure_error, exports=exports, runs=runs,
                    items_error=items_error, items_notes=items_notes, view=view)
    exports.write(run_dir / "tables")
    path = run_dir / "report.html"
    path.write_text(page, encoding="utf-8")
    return path


# -- the items behind the numbers (vlamb_nb/report_items.py; templates/_items.html.j2) -----------------------------
def _item_views(runs: list[Any] | None, error: str | Mapping[str, str] | None,
                notes: Mapping[str, list[str]] | None = None) -> dict[str, Any]:
    """Each paper's items view (``{paper: view}``), a paper whose stores could not be read as ``{"error": why}``
    in its place (the others still listed), or ``{"error": why}`` for the whole run."""
    from vlamb_nb.report_items import run_views

    errors = {"": error} if isinstance(error, str) else dict(error or {})
    if errors.get(""):
        return {"error": errors[""]}
    try:
        views: dict[str, Any] = run_views(runs) if runs else {}
    except Exception as e:  # noqa: BLE001 - items that cannot be listed must not lose the report
        from vlamb_nb.errors import reason

        return {"error": reason(e)}
    for paper, lines in (notes or {}).items():  # "": the folder's own (a paper that cannot be loaded): said in each
        for name in ([paper] if paper else list(views)):
            if name in views:
                views[name].notes.extend(x for x in lines if x not in views[name].notes)
    views.update({paper: {"error": why} for paper, why in errors.items() if paper})
    return views


def _section_items(views: dict[str, Any], paper: str, headline: list[dict[str, Any]],
                   card_rows: list[dict[str, Any]], scores: list[dict[str, Any]], *,
                   first: bool) -> dict[str, Any] | None:
    """A paper's item table: its section's headline rows, its store scores and its rows of the card at the top
    link to it."""
    from vlamb_nb.report_items import blob, headline_links, score_links

    if "error" in views:
        return {"error": views["error"], "assets": False}
    view = views.get(paper)
    if isinstance(view, dict):  # this paper's stores could not be read; the other papers' are listed
        return {"error": view["error"], "assets": False}
    if view is None or not view.rows:
        return None
    card = [g if r["paper"] == paper and "state" not in r else None
            for r, g in zip(card_rows, headline_links(view, card_rows), strict=True)]
    data = {**view.to_json(), "links": {"headline": headline_links(view, headline), "card": card,
                                        "scores": score_links(view, paper, scores)}}
    return {"id": f"items-{paper}", "blob": blob(data), "notes": view.notes, "assets": first}


def _comparison_items(c: Any, slices: list[dict[str, Any]]) -> dict[str, Any] | None:
    from vlamb_nb.report_items import blob, comparison_links, comparison_view, slice_links

    try:
        view = comparison_view(c)
    except Exception as e:  # noqa: BLE001 - items that cannot be listed must not lose the page
        from vlamb_nb.errors import reason

        return {"error": reason(e), "assets": False}
    if not view.rows:
        return None
    data = {**view.to_json(), "links": comparison_links(view, c), "cells": slice_links(view, slices)}
    return {"id": "items", "blob": blob(data), "notes": view.notes, "assets": True}


# -- the comparison's page ------------------------------------------------------------------------------------
def comparison_page(c: Any, *, figure: Path | None = None, page_dir: Path | None = None,
                    exports: Exports | None = None) -> str:
    """``comparison.html`` of a :class:`vlamb_nb.compare.Comparison` (read through its ``display()``), its figure
    (PNG, with a link to the PDF beside it when there is one) inlined; its tables added to ``exports``."""
    page_dir = Path(page_dir) if page_dir is not None else Path(".")
    exports = exports if exports is not None else Exports()
    figs = []
    if figure is not None:
        figure = Path(figure)
        pdf = figure.with_suffix(".pdf")
        fig = Figure(figure.stem, png=figure, pdf=pdf if pdf.is_file() else None,
                     title="paired differences and ranks of the compared models")
        figs = _figures_view([fig], page_dir)
    d = c.display()
    own = d["own_deviations"]
    models = [{**m, "own": own.get(m["model"], [])} for m in c.models]
    models_table = exports.add("comparison", Table(
        ["model", "runs", "from", "own deviations"],
        [[(str(m["model"]), None), (", ".join(map(str, m.get("runs") or [])), None),
          (", ".join(map(str, m.get("origins") or [])), None), ("; ".join(map(str, m["own"])) or "none", None)]
         for m in models], title="models"))
    stores, data_ids = [], []
    for m in c.models:
        for origin in m.get("origins") or []:
            rec = _first_record(Path(origin)) if Path(origin).is_file() else None
            if rec is not None:
                stores += [{**s, "store": Path(origin).name} for s in store_facts_of(rec)]
        data_ids += [(str(k).split("/", 1)[0], v or {}) for k, v in (m.get("data") or {}).items()]
    papers = sorted({p for p, _ in data_ids})
    facts = {"environment": environment_facts(), "stores": stores, "releases": release_facts(papers)}
    prov = provenance_view(facts, data_ids)
    prov["files"] = [{"model": m["model"], **f, "file": Path(str(f["file"])).name} for m in c.models
                     for f in m.get("files") or []]
    _export_provenance(prov, exports)
    slices = [{**t, "table": exports.add("comparison", Table(t["columns"], t["rows"], title=t["title"],
                                                            export=t["export"]))} for t in d["slices"]]
    return environment().get_template("comparison.html.j2").render(
        c=c, d=d, figures=figs, items=_comparison_items(c, d["slices"]),  # items behind every number (report_items)
        values=exports.add("comparison", _first(Table(d["value_columns"], d["values"], title="values",
                                                      export=d["values_export"]), ["model"])),
        pairs=exports.add("comparison", _first(Table(d["pair_columns"], d["pairs"], title="paired differences",
                                                     export=d["pairs_export"]), ["a", "b"])),
        slices=slices, demo=d["demo"], demo_note=d["demo_note"], models=models, models_table=models_table, prov=prov)


def _first(t: Table, names: list[str]) -> Table:
    """``t`` with the columns ``names`` (what a row is about: the model, the pair) moved to the front."""
    order = [t.columns.index(n) for n in names if n in t.columns]
    order += [i for i in range(len(t.columns)) if i not in order]
    t.columns = [t.columns[i] for i in order]
    t.rows = [[r[i] for i in order] for r in t.rows]
    if t.raw is not None:
        t.raw = [[r[i] for i in order] for r in t.raw]
    return t


def write_comparison_page(c: Any, directory: str | os.PathLike, *, name: str = "comparison",
                          figure: Path | None = None) -> Path:
    """Write ``<directory>/<name>.html`` and its tables as ``<directory>/tables/<name>-*.csv`` and ``*.tex``;
    returns the page's path."""
    d = Path(directory)
    exports = Exports()
    page = comparison_page(c, figure=figure, page_dir=d, exports=exports)
    exports.write(d / "tables")
    path = d / f"{name}.html"
    path.write_text(page, encoding="utf-8")
    return path
