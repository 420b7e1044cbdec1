"""Quantitative and visual use of saliency maps: mass in boxes, pointing game, CIs, overlays.

``box_mass`` is the share of a map's mass inside a box (energy-in-box), computed with exact
fractional pixel coverage, so a box smaller than a map pixel still gets its share. The pointing
game asks whether the map's peak falls inside the box (optionally within a tolerance, as in Zhang
et al. 2018). Records from many items go into one DataFrame (one row per item x box role), which
:func:`summarize` aggregates per benchmark / method / role with bootstrap CIs and
:func:`compare_correct_wrong` splits by answer correctness.

Box mass is a share of a map normalised over the image, so it says nothing about how much of the answer's
attention reaches the image at all; every record and summary row therefore carries the map's
``image_share`` (see :mod:`.methods`), and overlay titles show it. Overlays carry a colour bar of the per-pixel
share of the map's mass, and draw text with the figure style's font fallback list
(:data:`vlamb_nb.plots.FONT_FALLBACK`); characters no installed font has become :data:`PLACEHOLDER`, counted on
the figure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vlamb_nb.boxes import to_abs_xyxy
from vlamb_nb.errors import SettingError
from vlamb_nb.plots import (  # noqa: F401 - FONT_FALLBACK, _font_coverage: importable from here too
    FONT_FALLBACK,
    PLACEHOLDER,
    _font_coverage,
    drawable_text,
    figure_fonts,
    placeholder_note,
)

RECORD_COLUMNS = ["item_id", "benchmark", "method", "role", "correct", "mass", "area_share", "ratio", "hit",
                  "image_share"]


def _coverage(n: int, lo: float, hi: float) -> np.ndarray:
    """Fraction of each of ``n`` unit pixels covered by the interval [lo, hi] (map pixel units)."""
    edges = np.arange(n, dtype=np.float64)
    return np.clip(np.minimum(edges + 1.0, hi) - np.maximum(edges, lo), 0.0, 1.0)


def box_mass(heatmap: np.ndarray, box: Sequence[float], size: tuple[int, int], *, fmt: str = "abs_xyxy") -> float:
    """Share of the map's mass inside ``box`` (given in ``fmt`` for an image of ``size`` = (width, height))."""
    rows, cols = heatmap.shape
    w, h = size
    x0, y0, x1, y1 = to_abs_xyxy(box, w, h, fmt)
    cy = _coverage(rows, y0 * rows / h, y1 * rows / h)
    cx = _coverage(cols, x0 * cols / w, x1 * cols / w)
    total = float(heatmap.sum())
    return float(cy @ heatmap @ cx) / total if total > 0 else 0.0


def pointing_hit(heatmap: np.ndarray, box: Sequence[float], size: tuple[int, int], *, fmt: str = "abs_xyxy",
                 tolerance: float = 0.0) -> bool:
    """Pointing game: is the map's peak (in image pixels) inside ``box`` grown by ``tolerance`` pixels?"""
    rows, cols = heatmap.shape
    w, h = size
    x0, y0, x1, y1 = to_abs_xyxy(box, w, h, fmt)
    r, c = np.unravel_index(int(np.argmax(heatmap)), heatmap.shape)
    x, y = (c + 0.5) * w / cols, (r + 0.5) * h / rows
    return bool(x0 - tolerance <= x <= x1 + tolerance and y0 - tolerance <= y <= y1 + tolerance)


def box_records(heatmap: np.ndarray, size: tuple[int, int], boxes: Mapping[str, Sequence[float]], *,
                fmt: str = "abs_xyxy", item_id: str = "", benchmark: str = "", method: str = "",
                correct: bool | None = None, tolerance: float = 0.0) -> list[dict[str, Any]]:
    """One record per named box (role -> box): mass, the box's share of the image, their ratio, pointing hit.

    ``ratio`` = mass / area share: 1 is what a uniform map gives, so it compares boxes of different sizes.
    """
    w, h = size
    out = []
    for role, box in boxes.items():
        if box is None:
            continue
        b = to_abs_xyxy(box, w, h, fmt)
        share = max(0.0, b[2] - b[0]) * max(0.0, b[3] - b[1]) / float(w * h)
        mass = box_mass(heatmap, b, size)
        out.append({"item_id": item_id, "benchmark": benchmark, "method": method, "role": role,
                    "correct": correct, "mass": mass, "area_share": share,
                    "ratio": mass / share if share > 0 else float("nan"),
                    "hit": pointing_hit(heatmap, b, size, tolerance=tolerance)})
    return out


def records_frame(records: Sequence[Mapping[str, Any]]):
    import pandas as pd

    return pd.DataFrame(list(records), columns=RECORD_COLUMNS)


def summarize(frame, by: Sequence[str] = ("benchmark", "method", "role"), *, value: str = "mass",
              n_resamples: int = 2000, seed: int = 0, clusters: str | None = None):
    """Mean ``value`` per group with a bootstrap CI, plus the pointing-game rate with a Wilson CI and the
    mean ``image_share`` (how much of the mass reached the image before the map was normalised)."""
    import pandas as pd

    from vlamb_nb import stats

    rows = []
    for key, g in frame.groupby(list(by), sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        vals = g[value].to_numpy(dtype=float)
        finite = np.isfinite(vals)  # e.g. ratio is NaN for an empty box; counted in n_undefined
        vals = vals[finite]
        row = dict(zip(by, key, strict=True))
        if len(vals) == 0:
            rows.append({**row, "n": 0, "n_undefined": int((~finite).sum())})
            continue
        cl = g[clusters].to_numpy()[finite] if clusters else None  # clusters stay aligned with the kept values
        r = stats.bootstrap_ci(vals, n_resamples=n_resamples, seed=seed, clusters=cl)
        hits = g["hit"].astype(bool)
        pg = stats.wilson(int(hits.sum()), int(len(hits)))
        rows.append({**row, "n": int(len(vals)), "n_undefined": int((~finite).sum()), value: r.estimate, "ci_low": r.ci_low, "ci_high": r.ci_high,
                     "pointing": pg.estimate, "pointing_ci_low": pg.ci_low, "pointing_ci_high": pg.ci_high,
                     "image_share": _finite_mean(g["image_share"]) if "image_share" in g else float("nan")})
    return pd.DataFrame(rows)


def _finite_mean(values: Any) -> float:
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return float(v.mean()) if len(v) else float("nan")


def compare_correct_wrong(frame, *, role: str, value: str = "mass", by: Sequence[str] = ("benchmark", "method"),
                          n_resamples: int = 2000, seed: int = 0):
    """Mean ``value`` in the ``role`` box for correct minus wrong answers, with a bootstrap CI of the gap.

    The two groups are different items, so the bootstrap resamples items within each group
    (:func:`~vlamb_nb.stats.bootstrap.two_sample_ci`, a stratified bootstrap); the p-value comes from a
    label-permutation test of the gap (:func:`~vlamb_nb.stats.permutation.label_permutation_test`; the paired
    ``stats.permutation_test`` is for two systems on the same items, which this is not). Both draw, in that
    order, from one generator per group.
    """
    import pandas as pd

    from vlamb_nb.stats.bootstrap import two_sample_ci
    from vlamb_nb.stats.permutation import label_permutation_test

    sub = frame[(frame["role"] == role) & frame["correct"].notna()]
    rows = []
    for key, g in sub.groupby(list(by), sort=True):
        key = key if isinstance(key, tuple) else (key,)
        vals = g[value].to_numpy(dtype=float)
        ok = g["correct"].astype(bool).to_numpy()
        row = {**dict(zip(by, key, strict=True)), "role": role, "n_correct": int(ok.sum()),
               "n_wrong": int((~ok).sum())}
        if ok.all() or (~ok).all():
            rows.append(row)
            continue
        rng = np.random.default_rng(seed)
        ci = two_sample_ci(vals, ok, n_resamples=n_resamples, seed=rng)
        test = label_permutation_test(vals, ok, n_resamples=n_resamples, seed=rng)
        row.update({f"{value}_correct": float(vals[ok].mean()), f"{value}_wrong": float(vals[~ok].mean()),
                    "gap": ci.estimate, "ci_low": ci.ci_low, "ci_high": ci.ci_high, "p": test.p})
        rows.append(row)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------------
# figures
# --------------------------------------------------------------------------------------------------
BOX_COLORS = {"gold": "#55A868", "target": "#55A868", "distractor": "#C44E52", "addressee": "#4C72B0",
              "predicted": "#DD8452"}


# Text in figures is model output and dataset text in any script: the font list, the placeholder for what no
# installed font can draw and its note are the figure style's (vlamb_nb.plots), shared with every figure.
MASS_LABEL = "share of saliency mass per map pixel"


def _wrap(text: str, width: int = 70, max_lines: int = 4) -> tuple[str, int]:
    import textwrap

    shown, replaced = drawable_text(" ".join(str(text).split()))  # a wrapped block: newlines are spaces too
    lines = textwrap.wrap(shown, width) or [""]
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = lines[-1][: width - 1] + "…"
    return "\n".join(lines), replaced


def plot_overlay(smap: Any, *, boxes: Mapping[str, Sequence[float]] | None = None, fmt: str = "abs_xyxy",
                 title: str | None = None, show_text: bool = True, alpha: float = 0.55, cmap: str = "inferno",
                 ax: Any = None, width: float = 4.2):
    """Image, heat map with a colour bar, named boxes (with their mass), prompt and answer; returns the Figure.

    Text the fonts cannot draw is replaced by PLACEHOLDER and counted in a note (in the text block, or in
    the title when ``show_text`` is off).
    """
    from matplotlib.ticker import FuncFormatter

    from vlamb_nb.plots import PALETTE, new_figure

    fonts = figure_fonts()
    img = smap.image
    w, h = img.size
    if ax is None:
        fig, ax = new_figure(width + 0.7, width * h / w + (0.9 if show_text else 0.2))
    else:
        fig = ax.figure
    ax.imshow(img, extent=(0, w, h, 0))
    # vmin 0: the darkest colour means no mass, not "the least mass on this map"
    heat = ax.imshow(smap.heatmap, extent=(0, w, h, 0), cmap=cmap, alpha=alpha, interpolation="bilinear", vmin=0)
    bar = fig.colorbar(heat, ax=ax, fraction=0.046, pad=0.02, format=FuncFormatter(lambda v, _: f"{100 * v:.3g}%"))
    bar.set_label(MASS_LABEL, fontsize=7, fontfamily=fonts)
    bar.ax.tick_params(labelsize=6)
    replaced = 0
    for i, (role, box) in enumerate((boxes or {}).items()):
        if box is None:
            continue
        x0, y0, x1, y1 = to_abs_xyxy(box, w, h, fmt)
        color = BOX_COLORS.get(role, PALETTE[i % len(PALETTE)])
        ax.add_patch(_rect(x0, y0, x1 - x0, y1 - y0, color))
        label, k = drawable_text(role)
        replaced += k
        ax.text(x0 + 2, y0 + 2, f"{label} {box_mass(smap.heatmap, (x0, y0, x1, y1), (w, h)):.0%}", color="white",
                fontsize=7, va="top", fontfamily=fonts,
                bbox={"facecolor": color, "alpha": 0.8, "pad": 1, "linewidth": 0})
    ax.set_xlim(0, w)
    ax.set_ylim(h, 0)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)
    for spine in ax.spines.values():
        spine.set_visible(False)
    shown_title, k = drawable_text(title or overlay_title(smap))
    replaced += k
    if show_text:
        q, kq = _wrap(f"Q: {smap.prompt}")
        a, ka = _wrap(f"A: {smap.answer}", max_lines=2)
        replaced += kq + ka
        note = placeholder_note(replaced)
        ax.set_xlabel(q + "\n" + a + (f"\n{note}" if note else ""), fontsize=7, loc="left", fontfamily=fonts)
    elif replaced:
        shown_title += "\n" + placeholder_note(replaced)
    ax.set_title(shown_title, loc="left", fontfamily=fonts)
    return fig


def overlay_title(smap: Any) -> str:
    """The method and, when known, its image share: the map is normalised, the share says how much reached
    the image at all."""
    share = float(getattr(smap, "image_share", float("nan")))
    return f"{smap.method}: {share:.1%} on image" if np.isfinite(share) else f"{smap.method} saliency"


def _rect(x: float, y: float, w: float, h: float, color: str):
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), w, h, fill=False, edgecolor=color, linewidth=1.8)


def plot_methods(maps: Sequence[Any], *, boxes: Mapping[str, Sequence[float]] | None = None,
                 fmt: str = "abs_xyxy", width: float = 3.2):
    """The same item under several methods, side by side."""
    from vlamb_nb.plots import new_figure

    if not maps:
        raise SettingError("no maps to plot")
    w, h = maps[0].image.size
    # constrained layout: each panel's colour bar label keeps clear of the next panel
    fig, axes = new_figure((width + 0.9) * len(maps), width * h / w + 0.9, ncols=len(maps), squeeze=False,
                           layout="constrained")
    for ax, m in zip(axes[0], maps, strict=True):
        plot_overlay(m, boxes=boxes, fmt=fmt, ax=ax, show_text=False)
    q, kq = _wrap(f"Q: {maps[0].prompt}", width=110, max_lines=2)
    a, ka = _wrap(f"A: {maps[0].answer}", width=110, max_lines=1)
    note = placeholder_note(kq + ka)
    fig.supxlabel(q + "\n" + a + (f"\n{note}" if note else ""), fontsize=7, x=0.02, ha="left",
                  fontfamily=figure_fonts())
    return fig


def plot_box_mass(summary, *, role_order: Sequence[str] | None = None, value: str = "mass", title: str = ""):
    """Mean box mass per method and role with bootstrap CIs (error bars)."""
    from vlamb_nb.plots import PALETTE, new_figure

    methods = list(dict.fromkeys(summary["method"]))
    roles = list(role_order or dict.fromkeys(summary["role"]))
    fig, ax = new_figure(1.4 + 1.1 * len(methods) * max(1, len(roles)) / 2, 3.0)
    bw = 0.8 / max(1, len(roles))
    for j, role in enumerate(roles):
        sub = summary[summary["role"] == role].set_index("method").reindex(methods)
        x = np.arange(len(methods)) + (j - (len(roles) - 1) / 2) * bw
        est = sub[value].to_numpy(dtype=float)
        err = np.vstack([est - sub["ci_low"].to_numpy(dtype=float), sub["ci_high"].to_numpy(dtype=float) - est])
        ax.bar(x, est, bw, yerr=err, capsize=3, label=role, color=PALETTE[j % len(PALETTE)])
    ax.set_xticks(np.arange(len(methods)), methods)
    ax.set_ylabel("saliency mass in box" if value == "mass" else value)
    ax.set_title(title, loc="left")
    ax.legend()
    return fig


# --------------------------------------------------------------------------------------------------
# target boxes from benchmark rows (by column, never by benchmark internals)
# --------------------------------------------------------------------------------------------------
def _box_like(v: Any) -> bool:
    try:
        return len(v) == 4 and all(np.isfinite(float(x)) for x in v)
    except (TypeError, ValueError):
        return False


def _boxes_list(v: Any) -> list[Sequence[float]]:
    if _box_like(v):
        return [v]
    if isinstance(v, (list, tuple, np.ndarray)):
        return [b for b in v if _box_like(b)]
    return []


def reference_size(row: Mapping[str, Any]) -> tuple[float, float] | None:
    """(width, height) the row's boxes are expressed in, from ``width``/``height`` or ``img_size``."""
    w, h = row.get("width"), row.get("height")
    size = row.get("img_size")
    if isinstance(size, Mapping):
        w, h = size.get("width", w), size.get("height", h)
    try:
        w, h = float(w), float(h)
    except (TypeError, ValueError):
        return None
    return (w, h) if np.isfinite(w) and np.isfinite(h) and w > 0 and h > 0 else None


def target_boxes(row: Mapping[str, Any]) -> dict[str, Any]:
    """Named target boxes (absolute xyxy, in the row's reference size) found in a benchmark row.

    - ``gt_xyxy`` (Ref-Adv): ``gold``; ``pred_xyxy``: ``predicted`` (first box, as the official scorer);
      any ``*distractor*`` box column (a user annotation; the release has none): ``distractor``;
    - ``person_bbox`` + ``addressee`` (VAGUE): ``addressee`` and ``other people`` (a list);
    - ``candidate_boxes`` (RACQUET): ``largest``, ``centermost`` and ``candidates`` (a list).
    A list-valued role reports the mean mass per box and a hit if the peak is in any of them.
    """
    out: dict[str, Any] = {}
    if _box_like(row.get("gt_xyxy")):
        out["gold"] = row["gt_xyxy"]
    for col, val in row.items():
        if "distractor" in str(col) and _boxes_list(val):
            out["distractor"] = _boxes_list(val)[0]
    pred = _boxes_list(row.get("pred_xyxy"))
    if pred:
        out["predicted"] = pred[0]
    people = _boxes_list(row.get("person_bbox"))
    who = str(row.get("addressee") or "")
    if people and who.startswith("person") and who[6:].isdigit():
        k = int(who[6:]) - 1
        if 0 <= k < len(people):
            out["addressee"] = people[k]
            others = [b for i, b in enumerate(people) if i != k]
            if others:
                out["other people"] = others
    cands = _boxes_list(row.get("candidate_boxes"))
    if cands:
        areas = [max(0.0, b[2] - b[0]) * max(0.0, b[3] - b[1]) for b in cands]
        out["largest"] = cands[int(np.argmax(areas))]
        size = reference_size(row)
        if size is not None:
            cx, cy = size[0] / 2, size[1] / 2
            dist = [np.hypot((b[0] + b[2]) / 2 - cx, (b[1] + b[3]) / 2 - cy) for b in cands]
            out["centermost"] = cands[int(np.argmin(dist))]
        out["candidates"] = cands
    return out


def _scale_boxes(boxes: Mapping[str, Any], ref: tuple[float, float] | None,
                 size: tuple[int, int]) -> dict[str, Any]:
    from vlamb_nb.boxes import rescale

    if ref is None or (abs(ref[0] - size[0]) < 0.5 and abs(ref[1] - size[1]) < 0.5):
        return dict(boxes)
    return {k: ([rescale(b, ref, size) for b in v] if not _box_like(v) else rescale(v, ref, size))
            for k, v in boxes.items()}


def role_records(smap: Any, boxes: Mapping[str, Any], **fields: Any) -> list[dict[str, Any]]:
    """Box records for one map (each with the map's image share); list-valued roles give mean mass per box
    and 'any' hit."""
    single = {k: v for k, v in boxes.items() if _box_like(v)}
    out = box_records(smap.heatmap, smap.size, single, method=smap.method, **fields)
    for role, group in boxes.items():
        if _box_like(group) or not group:
            continue
        recs = box_records(smap.heatmap, smap.size, {str(i): b for i, b in enumerate(group)},
                           method=smap.method, **fields)
        out.append({**recs[0], "role": role, "mass": float(np.mean([r["mass"] for r in recs])),
                    "area_share": float(np.mean([r["area_share"] for r in recs])),
                    "ratio": float(np.nanmean([r["ratio"] for r in recs])),
                    "hit": any(r["hit"] for r in recs)})
    share = float(getattr(smap, "image_share", float("nan")))
    return [{**r, "image_share": share} for r in out]
