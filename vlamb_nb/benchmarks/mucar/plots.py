"""MUCAR figures: Fig. 3 (category × language distribution), accuracy bars with intervals, the image-insensitive failure."""

from __future__ import annotations

from typing import Any

import numpy as np

from vlamb_nb.benchmarks.mucar.data import category_language_counts


# -- figures -------------------------------------------------------------------------------------
def plot_distribution(items):
    """Fig. 3 (left), regenerated: queries per category, stacked by language."""
    from vlamb_nb.plots import PALETTE, new_figure

    tab = category_language_counts(items).drop(index="Overall").drop(columns="Total")
    fig, ax = new_figure(6.5, 3.2)
    bottom = np.zeros(len(tab))
    for i, lang in enumerate(tab.columns):
        ax.bar(tab.index, tab[lang], bottom=bottom, label=lang, color=PALETTE[i])
        bottom += tab[lang].to_numpy()
    ax.set_ylabel("queries")
    ax.set_title("MUCAR release: queries per category and language")
    ax.tick_params(axis="x", rotation=30)
    ax.legend()
    return fig


def plot_accuracy(frame, *, x: str = "label", hue: str = "metric", title: str = ""):
    """Grouped bars with CI whiskers from a long frame (``value``, ``ci_low``, ``ci_high``)."""
    from vlamb_nb.plots import PALETTE, new_figure

    xs = list(dict.fromkeys(frame[x].astype(str)))
    hues = list(dict.fromkeys(frame[hue].astype(str)))
    fig, ax = new_figure(max(5.0, 0.9 * len(xs) * len(hues) / 2 + 2), 3.2)
    w = 0.8 / len(hues)
    for j, h in enumerate(hues):
        sub = frame[frame[hue].astype(str) == h].set_index(frame[frame[hue].astype(str) == h][x].astype(str))
        vals = [float(sub["value"].get(v, np.nan)) for v in xs]
        lo = [float(sub["ci_low"].get(v, np.nan)) if "ci_low" in sub else np.nan for v in xs]
        hi = [float(sub["ci_high"].get(v, np.nan)) if "ci_high" in sub else np.nan for v in xs]
        err = np.array([[max(v - a, 0) if a == a else 0 for v, a in zip(vals, lo, strict=True)],
                        [max(b - v, 0) if b == b else 0 for v, b in zip(vals, hi, strict=True)]])
        ax.bar(np.arange(len(xs)) + j * w, vals, w, yerr=err, capsize=2, label=h, color=PALETTE[j % len(PALETTE)])
    ax.set_xticks(np.arange(len(xs)) + w * (len(hues) - 1) / 2, xs, rotation=20)
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 105)
    ax.set_title(title)
    ax.legend()
    return fig


def plot_image_insensitive(summaries: list[dict[str, Any]]):
    """Acc_q, Acc_p and the share of image-insensitive groups per run (the constant-answer failure)."""
    import pandas as pd

    rows = []
    for s in summaries:
        for m, v in (("Acc_q", s["Acc_q"]), ("Acc_p", s["Acc_p"]),
                     ("image-insensitive groups", s["image_insensitive_share"] or 0.0)):
            rows.append({"label": s["label"], "metric": m, "value": v})
    return plot_accuracy(pd.DataFrame(rows), title="Image-insensitive answering: Acc_q survives, Acc_p collapses")
