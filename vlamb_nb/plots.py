"""One figure style for the package; every figure function returns a matplotlib Figure.

seaborn draws the statistical plots (grouped bars, distributions, box plots, heat maps) from the intervals
:mod:`vlamb_nb.stats` computed — never with its own estimators, so a bar's whisker is the package's cluster
bootstrap or Wilson interval — and matplotlib draws the rest (images with boxes, stacked shares, overlays).
Colours carry one meaning in every paper's figures: :data:`PALETTE` is colour-blind safe (seaborn's
"colorblind", after Okabe & Ito), and :data:`SEMANTIC` fixes the colours of roles and classes.

Text in figures is model names, model output and dataset text in any script: the style's font list
(:func:`figure_fonts`) puts the installed CJK and symbol fonts behind DejaVu Sans, and matplotlib's font
fallback draws each character with the first font that has it; :func:`drawable_text` replaces what no
installed font can draw by a counted placeholder. :func:`series_styles` gives many models distinct
colour+marker pairs.

``save_figure`` writes png + pdf with deterministic file names and no timestamps, so a
regenerated figure only changes when its data does; inside a notebook it also tells ``reproduce`` which files
the cell wrote (:data:`FIGURE_MIME`), so the HTML report places each figure beside the table it belongs to.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

STYLE: dict[str, Any] = {
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.frameon": False,
    "svg.hashsalt": "vlamb_nb",
    # figures show model answers and dataset text verbatim: a "$" must never be read as mathtext
    "text.parse_math": False,
}

#: seaborn's "colorblind" palette (Okabe & Ito's colour-blind-safe set, reordered by seaborn)
PALETTE = ["#0173B2", "#DE8F05", "#029E73", "#D55E00", "#CC78BC", "#CA9161", "#FBAFE4", "#949494",
           "#ECE133", "#56B4E9"]
RISK = "#D55E00"  # vermillion: a harmful or risky class
SAFE = "#029E73"  # bluish green: the safe class
CAUTION = "#DE8F05"  # orange: in between
NEUTRAL = "#949494"  # grey: not read, unlabelled, unknown
#: one colour per role or class, the same in every paper's figures
SEMANTIC: dict[str, str] = {
    "ours": PALETTE[0], "paper": "#000000", "published": "#000000",
    "correct": SAFE, "wrong": RISK, "unparsed": NEUTRAL, "unlabelled": NEUTRAL, "unscored": NEUTRAL,
    # RACQUET's answer classes (Figs. 3, 4, 8) and bias labels (Fig. 7)
    "Explicit": SAFE, "Implicit": CAUTION, "High Risk": RISK,
    "Anti-stereotypical": PALETTE[0], "Stereotypical": RISK,
    # saliency box roles
    "gold": SAFE, "prediction": PALETTE[0], "distractor": CAUTION,
}


#: markers paired with :data:`PALETTE` by :func:`series_styles`; 7 markers against 10 colours (coprime), so the
#: first 70 series all get a different colour+marker pair
SERIES_MARKERS = ("o", "s", "^", "D", "v", "P", "X")

# Matplotlib draws a character with the first font of the family list that has it; DejaVu Sans (bundled with
# matplotlib) covers Latin, Greek, Cyrillic and many symbols, the others are used when installed. Noto Color
# Emoji is left out: matplotlib cannot draw colour bitmap fonts. A character none of them has would come out as
# an empty box or be dropped with a "Glyph missing" warning; :func:`drawable_text` replaces it by PLACEHOLDER.
FONT_FALLBACK = ("DejaVu Sans", "Noto Sans CJK JP", "Noto Sans CJK SC", "Noto Sans CJK TC", "Noto Sans CJK KR",
                 "Noto Sans SC", "Noto Sans JP", "Source Han Sans", "WenQuanYi Zen Hei", "Noto Sans Symbols",
                 "Noto Sans Symbols 2", "Noto Emoji", "Symbola")
PLACEHOLDER = "\u25c7"  # ◇, in DejaVu Sans, so the placeholder itself always draws


def series_styles(n: int) -> list[tuple[str, str]]:
    """``n`` (colour, marker) pairs, all different for up to 70 series: many models stay apart in a legend
    even where the palette's ten colours repeat."""
    return [(PALETTE[i % len(PALETTE)], SERIES_MARKERS[i % len(SERIES_MARKERS)]) for i in range(n)]


@functools.cache
def _font_coverage() -> tuple[tuple[str, ...], frozenset[int]]:
    """The installed fonts of FONT_FALLBACK (in order) and the code points they cover together."""
    from matplotlib import font_manager as fm
    from matplotlib.ft2font import FT2Font

    families: list[str] = []
    codes: set[int] = set()
    installed = {f.name for f in fm.fontManager.ttflist}
    for name in FONT_FALLBACK:
        if name not in installed:
            continue
        try:
            path = fm.findfont(fm.FontProperties(family=name), fallback_to_default=False)
            codes.update(FT2Font(path).get_charmap())
        except Exception:  # noqa: BLE001 - an unreadable or bitmap-only font is skipped, not fatal
            continue
        families.append(name)
    return tuple(families), frozenset(codes)


def figure_fonts() -> list[str]:
    """The font family list for text in figures (rcParams-style fallback list, installed fonts only)."""
    return list(_font_coverage()[0])


def drawable_text(text: Any) -> tuple[str, int]:
    """``text`` with whitespace runs inside each line collapsed and every character no figure font can draw
    replaced by PLACEHOLDER (control characters and U+FFFD, an undecodable byte, included); returns
    (text, replaced)."""
    codes = _font_coverage()[1]
    lines, replaced = [], 0
    for line in str(text).split("\n"):
        out = []
        for ch in " ".join(line.split()):
            if ch.isprintable() and ch != "\ufffd" and ord(ch) in codes:
                out.append(ch)
            else:
                out.append(PLACEHOLDER)
                replaced += 1
        lines.append("".join(out))
    return "\n".join(lines), replaced


def placeholder_note(replaced: int) -> str:
    """The line a figure carries when characters were replaced, so a ◇ is never mistaken for the data."""
    if not replaced:
        return ""
    fonts = ", ".join(figure_fonts()) or "none"
    return f"{PLACEHOLDER} = {replaced} character(s) no installed font can draw (fonts: {fonts})"


def color_for(name: Any, index: int = 0) -> str:
    """The fixed colour of a role or class when it has one, else the palette's ``index``-th colour."""
    return SEMANTIC.get(str(name), PALETTE[index % len(PALETTE)])


def apply_style() -> None:
    """seaborn's "ticks" theme with the package's rc and palette (rcParams only: output stays deterministic), and
    the installed fallback fonts behind DejaVu Sans (text only DejaVu Sans can draw comes out byte-identical)."""
    import matplotlib as mpl
    import seaborn as sns

    sns.set_theme(context="paper", style="ticks", palette=PALETTE, rc=STYLE)
    mpl.rcParams.update(STYLE)
    mpl.rcParams["axes.prop_cycle"] = mpl.cycler(color=PALETTE)
    fonts = figure_fonts()
    if fonts:
        mpl.rcParams["font.family"] = fonts


def new_figure(width: float = 6.0, height: float = 3.5, **kwargs: Any):
    """A styled figure and axes (``plt.subplots`` arguments pass through)."""
    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline", "pdf"):
        pass  # leave interactive backends alone
    import matplotlib.pyplot as plt

    apply_style()
    return plt.subplots(figsize=(width, height), **kwargs)


DEMO_STAMP = "pipeline demo: a stand-in, not a result"
#: the stamp of a figure drawn from a generated sample (not the paper's data)
SAMPLE_DATA_STAMP = "generated sample data: not the paper's data"
#: what ``save_figure`` tells a notebook's output (shown as nothing): the files one call wrote, in the cell that
#: drew them, so ``reproduce`` knows which recorded table a figure belongs to
FIGURE_MIME = "application/vnd.vlamb.figure+json"


#: PNG text keys (and the PDF's Subject) that say what a saved figure is drawn from; ``reproduce --update-figures``
#: reads them back from the committed figure to never replace a figure of the release with one of a sample
DATA_KIND_KEY = "vlamb:data-kind"
DATA_TEXT_KEY = "vlamb:data"


@dataclass(frozen=True)
class FigureData:
    """What a figure stands on: ``kind`` is ``release`` (the paper's released files), ``reference`` (numbers the
    paper published), ``source`` (files a user gave) or ``sample`` (generated data); ``text`` says which, in the
    stamp under the figure."""

    kind: str
    text: str

    @property
    def sample(self) -> bool:
        return self.kind == "sample"


def figure_data(data: Any, *, described: str | None = None, kind: str | None = None) -> FigureData | None:
    """``data`` as a :class:`FigureData`: one already, a data identity (``vlamb_nb.datahome.DataIdentity``), or a
    frame that carries one in ``attrs['data']``. A frame that carries none is described by ``described`` (what a
    paper's ``notebook_data`` calls it, e.g. "released test split (beside the checkout)" or "generated sample (n=8,
    seed=0)") and ``kind`` (default: ``sample`` when the description names a generated sample, else ``release``);
    None when nothing says."""
    if data is None or isinstance(data, FigureData):
        return data
    attrs = getattr(data, "attrs", None)
    if isinstance(attrs, dict) and isinstance(attrs.get("data"), dict):
        from vlamb_nb.datahome import DataIdentity

        data = DataIdentity.from_dict(attrs["data"])
    elif described is not None:
        n_rows = len(data) if hasattr(data, "__len__") else None
        kind = kind or ("sample" if "generated" in described.lower() else "release")
        text = "generated sample" if kind == "sample" else described
        return FigureData(kind, f"{text}, n = {n_rows}" if n_rows is not None else text)
    kind = getattr(data, "kind", None)
    if kind is None:
        return None
    n = getattr(data, "n_loaded", None) or getattr(data, "n_items", None)
    if kind == "sample":
        return FigureData("sample", f"generated sample, n = {n}" if n is not None else "generated sample")
    text = data.short() if hasattr(data, "short") else str(getattr(data, "release", kind))
    return FigureData(kind, f"{text}, n = {n}" if n is not None else text)


def read_figure_data(path: str | Path) -> FigureData | None:
    """What a saved PNG says it is drawn from (None: it does not say, e.g. a figure saved before it was recorded)."""
    try:
        from PIL import Image

        with Image.open(path) as im:
            text = dict(getattr(im, "text", {}) or {})
    except (OSError, ValueError):
        return None
    kind = text.get(DATA_KIND_KEY)
    return FigureData(kind, text.get(DATA_TEXT_KEY, "")) if kind else None


def stamp_data(fig, data: FigureData) -> None:
    """Say under the figure what it is drawn from, so a copy of the image never loses it."""
    if getattr(fig, "_vlamb_data", None) == data:
        return
    fig.text(0.01, 0.0, f"data: {data.text}", ha="left", va="top", fontsize=7, color="#555555")
    fig._vlamb_data = data


def save_figure(fig, paper: str, name: str, *, directory: str | Path | None = None,
                formats: tuple[str, ...] = ("png", "pdf"), demo: bool | str = False, data: Any = None) -> None:
    """Write ``<figures>/<paper>/<name>.{png,pdf}`` without timestamps (so reruns are byte-identical).

    ``demo``: the figure shows a stand-in model's answers; it is stamped as a pipeline demonstration in the
    image itself and written to ``<figures>/<paper>/demo/``, which ``reproduce --update-figures`` never copies
    into the committed ``figures/``; a string is the stamp's text (e.g. for a generated data sample).
    ``data``: what the figure is drawn from (:func:`figure_data`), stamped under it and written into the files'
    metadata; a generated sample makes the figure a demo (a sample never stands in for the paper's data). Returns
    nothing, so a cell ending in this call prints no value.
    """
    from vlamb_nb.paths import figures_dir

    drawn_from = figure_data(data)
    if drawn_from is not None and drawn_from.sample and not demo:
        demo = SAMPLE_DATA_STAMP
    out_dir = Path(directory) / paper if directory is not None else figures_dir(paper)
    if demo:
        out_dir = out_dir / "demo"
        stamp_demo(fig, demo if isinstance(demo, str) else DEMO_STAMP)
    if drawn_from is not None:
        stamp_data(fig, drawn_from)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in formats:
        p = out_dir / f"{name}.{fmt}"
        meta: dict[str, Any] = {"CreationDate": None, "ModDate": None} if fmt == "pdf" else {"Software": None}
        if drawn_from is not None:
            if fmt == "png":
                meta.update({DATA_KIND_KEY: drawn_from.kind, DATA_TEXT_KEY: drawn_from.text})
            elif fmt == "pdf":
                meta["Subject"] = f"{drawn_from.kind}: {drawn_from.text}"
        fig.savefig(p, format=fmt, metadata=meta, bbox_inches="tight")
        written.append(str(p.resolve()))
    payload: dict[str, Any] = {"paper": paper, "name": name, "demo": bool(demo), "files": written,
                               "data": None if drawn_from is None else asdict(drawn_from)}
    if title := figure_title(fig):  # what the figure shows, for the page's alt text
        payload["title"] = title
    publish(FIGURE_MIME, payload)


def figure_title(fig, limit: int = 300) -> str:
    """What a figure shows, in words: its title, else its panels' titles (each once), "" when it has none."""
    sup = getattr(fig, "_suptitle", None)
    texts = [sup.get_text()] if sup is not None and sup.get_text().strip() else []
    if not texts:
        for ax in fig.axes:
            for loc in ("center", "left", "right"):
                t = ax.get_title(loc).strip()
                if t and t not in texts:
                    texts.append(t)
    text = " ".join("; ".join(texts).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def publish(mime: str, payload: dict[str, Any]) -> None:
    """Put ``payload`` under ``mime`` into the running cell's output, where it shows as nothing and ``reproduce``
    reads it (a recorded result, a saved figure); outside a kernel there is no cell to tell."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # plain Python: nothing to display to
        return
    if get_ipython() is None:
        return
    display({mime: payload, "text/plain": ""}, raw=True)


def stamp_demo(fig, text: str = DEMO_STAMP) -> None:
    """Mark a figure as a pipeline demonstration with a red ribbon above everything drawn (the saved figure grows
    to hold it), so the mark crosses no item text, title or data."""
    if getattr(fig, "_vlamb_demo", False):
        return
    # just above what is drawn (a title that spills past the canvas included), measured on a drawn canvas
    fig.canvas.draw()
    drawn = fig.get_tightbbox(fig.canvas.get_renderer())  # inches
    w, h = fig.get_figwidth(), fig.get_figheight()
    top = (max(drawn.y1, h) + 0.08) / h  # clear of the ribbon's padding
    ribbon = {"boxstyle": "square,pad=0.4", "facecolor": "#B22222", "edgecolor": "none"}
    fig.text(min(drawn.x0 / w, 0.0) + 0.01, top, text, ha="left", va="bottom", fontsize=10, color="white",
             fontweight="bold", bbox=ribbon, zorder=1000)
    fig._vlamb_demo = True


# --------------------------------------------------------------------------- error-bar helpers
# Every bar and point these helpers draw carries its interval: an estimate without its
# uncertainty is exactly what the papers print, and what this package exists to improve on.


def _ci_triplet(value: Any) -> tuple[float, float, float]:
    """(estimate, low, high) from a stats.Result, a mapping/Series with those keys, or a number."""
    import math

    if hasattr(value, "estimate"):
        est, lo, hi = value.estimate, value.ci_low, value.ci_high
    elif hasattr(value, "get") and value.get("estimate") is not None:
        est, lo, hi = value.get("estimate"), value.get("ci_low"), value.get("ci_high")
    else:
        est, lo, hi = value, None, None
    est = float(est)
    lo = float(lo) if lo is not None and math.isfinite(float(lo)) else est
    hi = float(hi) if hi is not None and math.isfinite(float(hi)) else est
    return est, lo, hi


def _labelled(results: Any) -> list[tuple[str, Any]]:
    """(label, value) pairs from a mapping, a DataFrame (``name`` column), or a list of Results."""
    if hasattr(results, "iterrows"):
        label_col = "name" if "name" in results.columns else None
        return [(str(row[label_col]) if label_col else str(idx), row) for idx, row in results.iterrows()]
    if hasattr(results, "items"):
        return [(str(k), v) for k, v in results.items()]
    return [(str(getattr(r, "name", "") or i), r) for i, r in enumerate(results)]


def _yerr(triplets: list[tuple[float, float, float]], scale: float):
    import numpy as np

    est = np.array([t[0] for t in triplets]) * scale
    lo = np.array([t[1] for t in triplets]) * scale
    hi = np.array([t[2] for t in triplets]) * scale
    return est, np.vstack([np.clip(est - lo, 0, None), np.clip(hi - est, 0, None)])


def _axes(ax, width: float, height: float):
    if ax is None:
        return new_figure(width, height)
    apply_style()
    return ax.figure, ax


def grouped_bars(results: Any, *, ax=None, title: str | None = None, ylabel: str | None = None,
                 scale: float = 1.0, series_order: list[str] | None = None,
                 group_order: list[str] | None = None, ylim: tuple[float, float] | None = None,
                 legend_title: str | None = None):
    """Bars grouped on the x axis (e.g. categories) with one bar per series (e.g. models).

    ``results``: nested mapping ``{group: {series: Result}}`` or a DataFrame with columns
    ``group``, ``series``, ``estimate``, ``ci_low``, ``ci_high``. Missing cells leave a gap.
    """
    import numpy as np

    nested = _nested(results)
    groups = group_order or list(nested)
    series = series_order or list(dict.fromkeys(s for g in nested.values() for s in g))
    if not groups or not series:
        raise ValueError("grouped_bars needs at least one group and one series")
    import pandas as pd
    import seaborn as sns

    fig, ax = _axes(ax, max(4.0, 0.35 * len(groups) * len(series) + 2.0), 3.5)
    rows = [{"group": g, "series": s, "est": t[0] * scale, "lo": t[1] * scale, "hi": t[2] * scale}
            for g in groups for s in series if (v := nested.get(g, {}).get(s)) is not None
            for t in [_ci_triplet(v)]]
    long = pd.DataFrame(rows)
    present = [s for s in series if s in set(long["series"])]
    # seaborn draws the bars only (errorbar=None): the whiskers are the package's intervals, drawn below
    sns.barplot(data=long, x="group", y="est", hue="series", order=groups, hue_order=present,
                palette={s: color_for(s, j) for j, s in enumerate(present)}, errorbar=None, ax=ax,
                saturation=1.0, zorder=2)
    for patch in list(ax.patches):  # seaborn's zero-size legend proxies: the legend is rebuilt below
        if patch.get_width() == 0:
            patch.remove()
    width = 0.8 / len(present)
    for j, s in enumerate(present):
        part = long[long["series"] == s]
        xs = np.array([groups.index(g) for g in part["group"]]) - 0.4 + width * (j + 0.5)
        est = part["est"].to_numpy()
        ax.errorbar(xs, est, yerr=[np.clip(est - part["lo"], 0, None), np.clip(part["hi"] - est, 0, None)],
                    fmt="none", ecolor="#333333", capsize=2, zorder=3)
    ax.set_xlabel("")
    x = np.arange(len(groups))
    ax.set_xticks(x, [str(g) for g in groups])
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(facecolor=color_for(s, j), label=str(s)) for j, s in enumerate(present)],
              title=legend_title, ncols=min(len(present), 4), fontsize=7)
    _finish(ax, title, ylabel, ylim)
    return fig


def stacked_bars(shares: Any, *, ax=None, title: str | None = None, ylabel: str | None = None,
                 scale: float = 1.0, segment_order: list[str] | None = None,
                 bar_order: list[str] | None = None, horizontal: bool = False, colors: dict[str, str] | None = None):
    """Stacked shares per bar (e.g. answer classes per model) with each segment's CI.

    ``shares``: ``{bar: {segment: Result}}`` (or a long DataFrame like ``grouped_bars``). Each
    segment's interval is drawn at its upper edge, so every segment carries its uncertainty.
    ``colors``: a fixed colour per segment (so a class keeps its meaning across figures).
    """
    import numpy as np

    nested = _nested(shares)
    bars = bar_order or list(nested)
    segments = segment_order or list(dict.fromkeys(s for b in nested.values() for s in b))
    if not bars or not segments:
        raise ValueError("stacked_bars needs at least one bar and one segment")
    fig, ax = _axes(ax, max(3.5, 0.6 * len(bars) + 2.5), 3.5)
    pos = np.arange(len(bars))
    bottom = np.zeros(len(bars))
    for j, s in enumerate(segments):
        trip = [_ci_triplet(nested.get(b, {}).get(s, 0.0)) for b in bars]
        est, err = _yerr(trip, scale)
        color = (colors or {}).get(str(s), color_for(s, j))
        if horizontal:
            ax.barh(pos, est, left=bottom, color=color, label=str(s), zorder=2)
            ax.errorbar(bottom + est, pos + (j - len(segments) / 2) * 0.04, xerr=err, fmt="none",
                        ecolor="#333333", capsize=2, zorder=3)
        else:
            ax.bar(pos, est, bottom=bottom, color=color, label=str(s), zorder=2)
            ax.errorbar(pos + (j - len(segments) / 2) * 0.04, bottom + est, yerr=err, fmt="none",
                        ecolor="#333333", capsize=2, zorder=3)
        bottom = bottom + est
    if horizontal:
        ax.set_yticks(pos, [str(b) for b in bars])
    else:
        ax.set_xticks(pos, [str(b) for b in bars])
    ax.legend(bbox_to_anchor=(1.01, 1), loc="upper left", fontsize=7)
    _finish(ax, title, ylabel if not horizontal else None, None)
    if horizontal and ylabel:
        ax.set_xlabel(ylabel)
    return fig


def heatmap(matrix: Any, *, annot: Any = None, ax=None, title: str | None = None, cbar_label: str | None = None,
            center: float | None = 0.0, cmap: str = "vlag"):
    """A seaborn heat map of a square or rectangular DataFrame; ``annot`` (same shape, strings) is written in the
    cells (e.g. an estimate with its interval). Diverging colours centred on ``center``; empty cells stay blank."""
    import seaborn as sns

    fig, ax = _axes(ax, max(4.0, 1.1 * matrix.shape[1] + 2.5), max(3.0, 0.75 * matrix.shape[0] + 1.5))
    sns.heatmap(matrix.astype(float), annot=annot if annot is not None else False, fmt="", cmap=cmap, center=center,
                linewidths=0.5, linecolor="white", ax=ax, annot_kws={"fontsize": 7})
    ax.grid(False)
    if cbar_label and ax.collections and ax.collections[0].colorbar is not None:
        _colorbar_label(ax.collections[0].colorbar, cbar_label)
    if title:
        ax.set_title(title)
    return fig


def _colorbar_label(cbar, label: str) -> None:
    """A colour bar's label, wrapped only where it is longer than the bar (a long label on a short heat map was
    cut at the figure's edge); measured as drawn."""
    import textwrap

    cbar.set_label(label)
    fig = cbar.ax.figure
    renderer = fig.canvas.get_renderer()
    bar = cbar.ax.get_window_extent(renderer).height
    text = cbar.ax.yaxis.label
    width = len(label)
    while text.get_window_extent(renderer).height > bar and width > 12:
        width = int(width * 0.8)
        cbar.set_label("\n".join(textwrap.wrap(label, width)))


def _nested(results: Any) -> dict[str, dict[str, Any]]:
    if hasattr(results, "iterrows"):
        need = {"group", "series", "estimate"}
        missing = need - set(results.columns)
        if missing:
            raise ValueError(f"frame needs columns {sorted(need)} (missing {sorted(missing)})")
        out: dict[str, dict[str, Any]] = {}
        for _, row in results.iterrows():
            out.setdefault(str(row["group"]), {})[str(row["series"])] = row
        return out
    return {str(g): {str(s): v for s, v in inner.items()} for g, inner in results.items()}


def _finish(ax, title: str | None, ylabel: str | None, ylim: tuple[float, float] | None) -> None:
    if title:
        ax.set_title(title)
    if ylabel:
        ax.set_ylabel(ylabel)
    if ylim:
        ax.set_ylim(*ylim)
