"""VAGUE figures: Fig. 4 (wrong-choice counts), Fig. B1 (top solution verbs), accuracy with CIs, an item viewer.

Every function returns a matplotlib Figure; the notebooks save them with ``plots.save_figure``.
"""

from __future__ import annotations

from typing import Any

from vlamb_nb.plots import PALETTE, new_figure


def fig4(counts, *, alpha: float = 0.05, title: str = "Distribution of incorrect choices (all 1,677 items)"):
    """Fig. 4: FS / SU / NE counts per model, bars coloured by setting, Wilson 95% intervals as error bars.

    ``counts`` has columns ``model, type (LM/SM/VLM), FS, SU, NE, N`` (``vague_audit.fig4_data()``).
    The intervals are an addition of this package (the paper shows none).
    """
    import pandas as pd

    from vlamb_nb.plots import grouped_bars
    from vlamb_nb.stats import wilson

    models = list(dict.fromkeys(counts["model"]))
    types = [t for t in ("LM", "SM", "VLM") if t in set(counts["type"])]
    fig, axes = new_figure(max(6.0, 0.75 * len(models) + 2), 7.5, nrows=3, sharex=True)
    for k_ax, (ax, cat) in enumerate(zip(axes, ("FS", "SU", "NE"), strict=True)):  # one facet per error type
        rows = []
        for _, r in counts[counts["type"].isin(types)].iterrows():
            k, n = int(r[cat]), int(r["N"])
            ci = wilson(k, n, alpha=alpha)
            rows.append({"group": r["model"], "series": r["type"], "estimate": k, "ci_low": ci.ci_low * n,
                         "ci_high": ci.ci_high * n})
        grouped_bars(pd.DataFrame(rows), ax=ax, group_order=models, series_order=types, ylabel=f"{cat} count")
        if k_ax:
            ax.get_legend().remove()
    axes[0].set_title(title)
    axes[-1].set_xticks(range(len(models)))
    axes[-1].set_xticklabels(models, rotation=40, ha="right")
    fig.tight_layout()
    return fig


def figB1(verbs: dict[str, list[tuple[str, int]]], *, title: str = "Top solution verbs per subset"):
    """Fig. B1: polar bars of the most frequent solution-triplet actions, one panel per subset."""
    import numpy as np

    subsets = [s for s, v in verbs.items() if v]
    fig, axes = new_figure(4.2 * max(len(subsets), 1), 4.6, ncols=max(len(subsets), 1),
                           subplot_kw={"projection": "polar"})
    axes = np.atleast_1d(axes)
    for ax, subset in zip(axes, subsets, strict=False):
        words, counts = zip(*verbs[subset], strict=True)
        theta = np.linspace(0, 2 * np.pi, len(words), endpoint=False)
        ax.bar(theta, counts, width=2 * np.pi / len(words) * 0.85, color=PALETTE[: len(words)] * 3,
               alpha=0.85)
        ax.set_xticks(theta)
        ax.set_xticklabels([f"{w} ({c})" for w, c in zip(words, counts, strict=True)], fontsize=7)
        ax.set_yticklabels([])
        ax.set_title(f"VAGUE-{subset}", pad=14)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def accuracy_bars(frame, *, x: str = "setting", hue: str = "subset", title: str = "Accuracy (95% CI)"):
    """Bars of ``accuracy`` (seaborn) with the package's ``ci_low``/``ci_high`` whiskers, grouped by ``x`` and
    coloured by ``hue``."""
    from vlamb_nb.plots import grouped_bars

    long = frame.assign(group=frame[x].astype(str), series=frame[hue].astype(str),
                        estimate=frame["accuracy"].astype(float))
    fig = grouped_bars(long[long["estimate"].notna()], ylabel="accuracy (%)", ylim=(0, 100), title=title,
                       group_order=list(dict.fromkeys(long["group"])),
                       series_order=list(dict.fromkeys(long["series"])))
    fig.axes[0].tick_params(axis="x", rotation=30)
    fig.tight_layout()
    return fig


def show_item(item: Any, *, answer: str | None = None):
    """One item as the model sees it, with the ``meta.person_bbox`` boxes and their person tags drawn,
    the utterance, and the options labelled with their category (gold marked)."""
    import textwrap

    from vlamb_nb.benchmarks.vague.data import CATEGORIES, item_image

    img = item_image(item)
    fig, (ax_img, ax_txt) = new_figure(10, 4.2, ncols=2, gridspec_kw={"width_ratios": [1.3, 1]})
    ax_img.imshow(img)
    ax_img.set_axis_off()
    ax_img.grid(False)
    size = item.get("img_size") or {}
    sx = img.width / float(size.get("width") or img.width)
    sy = img.height / float(size.get("height") or img.height)
    for i, (x1, y1, x2, y2) in enumerate(item["person_bbox"]):
        color = "#e41a1c" if f"person{i + 1}" == item["addressee"] else "#ffff33"
        ax_img.add_patch(_rect(x1 * sx, y1 * sy, (x2 - x1) * sx, (y2 - y1) * sy, color))
        ax_img.text(x1 * sx, y1 * sy, f"person{i + 1}", color="black", fontsize=7,
                    bbox={"facecolor": color, "alpha": 0.8, "pad": 1, "edgecolor": "none"})
    ax_img.set_title(f"{item['id']} ({item['subset']})", fontsize=8)
    ax_txt.set_axis_off()
    ax_txt.grid(False)
    lines = [f"Utterance: {item['indirect']}", ""]
    by_letter = {item["ordering"][i]: c for i, c in enumerate(CATEGORIES)}
    for letter in sorted(by_letter):
        cat = by_letter[letter]
        mark = "*" if cat == "correct" else " "
        lines.append(f"{mark}{letter} [{cat}] {item['options'][cat]}")
    if answer is not None:
        lines += ["", f"Model answer: {answer}"]
    ax_txt.text(0, 1, "\n".join(textwrap.fill(t, 60, subsequent_indent="    ") if t else t for t in lines),
                va="top", ha="left", fontsize=7.5, family="monospace", transform=ax_txt.transAxes)
    fig.tight_layout()
    return fig


def _rect(x: float, y: float, w: float, h: float, color: str):
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), w, h, fill=False, edgecolor=color, linewidth=1.5)
