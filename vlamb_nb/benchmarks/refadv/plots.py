"""Ref-Adv figures: IoU histograms with the near-miss band, accuracy vs expression length and
distractor count (Fig. 2 style, marker size ∝ n), Acc@0.5 with CIs, and GT-vs-prediction drawings."""

from __future__ import annotations

from typing import Any

import vlamb_nb.benchmarks.refadv.score as metrics
from vlamb_nb.plots import PALETTE, new_figure


def iou_histogram(runs: dict[str, Any], *, bins: int = 20):
    """IoU distribution per run; the shaded band is the near miss 0.3 <= IoU < 0.5."""
    import numpy as np

    fig, ax = new_figure(6.5, 3.5)
    edges = np.linspace(0, 1, bins + 1)
    lo, hi = metrics.NEAR_MISS
    ax.axvspan(lo, hi, color="#DDDDDD", alpha=0.6, label="near miss (0.3-0.5)")
    for i, (name, sc) in enumerate(runs.items()):
        ax.hist(sc["iou"].astype(float), bins=edges, histtype="step", linewidth=1.5, color=PALETTE[i % len(PALETTE)],
                label=name, density=True)
    ax.axvline(0.5, color="k", linestyle="--", linewidth=0.8)
    ax.set_xlabel("IoU of the first predicted box with the GT")
    ax.set_ylabel("density")
    ax.legend(fontsize=7)
    return fig


def accuracy_vs(runs: dict[str, Any]):
    """Fig. 2 style: Acc@0.5 vs expression length (words) and vs distractor count; marker size ∝ n."""
    fig, axes = new_figure(9.0, 3.5, ncols=2)
    for i, (name, sc) in enumerate(runs.items()):
        color = PALETTE[i % len(PALETTE)]
        for ax, column, bins, frame in ((axes[0], "n_words", metrics.LENGTH_BINS, metrics.with_length(sc)),
                                        (axes[1], "distractor_count", metrics.DISTRACTOR_BINS, sc)):
            t = metrics.accuracy_by(frame, column, bins)
            t = t[t["n"] > 0]
            ax.plot(t["bin"], 100 * t["acc@0.5"], color=color, linewidth=1, label=name)
            ax.scatter(t["bin"], 100 * t["acc@0.5"], s=8 + 200 * t["n"] / max(1, t["n"].max()), color=color, alpha=0.7)
    axes[0].set_xlabel("words in the expression")
    axes[1].set_xlabel("same-category distractors")
    for ax in axes:
        ax.set_ylabel("Acc@0.5 (%)")
    axes[0].legend(fontsize=7)
    return fig


def accuracy_with_ci(results: Any, *, label: str = "Acc@0.5 (%)"):
    """Horizontal bars of ours with 95% CIs and the published value as a marker.

    ``results``: the comparison frame from ``report.official_reproduction`` filtered to one column.
    """
    fig, ax = new_figure(6.5, 0.45 * len(results) + 1.2)
    y = range(len(results))
    err = [(results["ours"] - results["ci_low"]).clip(lower=0), (results["ci_high"] - results["ours"]).clip(lower=0)]
    ax.barh(list(y), results["ours"], xerr=err, color=PALETTE[0], alpha=0.8, capsize=3, label="ours (95% CI)")
    ax.scatter(results["paper"], list(y), color=PALETTE[3], zorder=3, marker="D", s=20, label="published")
    ax.set_yticks(list(y))
    ax.set_yticklabels(results["row"], fontsize=7)
    ax.set_xlabel(label)
    ax.legend(fontsize=7, loc="lower right")
    return fig


def draw_predictions(scored, items, *, n: int = 6, ncols: int = 3):
    """Images with the GT box (cyan) and the first predicted box (red), IoU in the title."""
    from vlamb_nb.images import load_image

    sel = scored.head(n)
    nrows = max(1, -(-len(sel) // ncols))
    fig, axes = new_figure(3.2 * ncols, 2.8 * nrows, nrows=nrows, ncols=ncols, squeeze=False)
    by_id = items.set_index("id")
    for ax in axes.flat:
        ax.axis("off")
    for ax, (_, r) in zip(axes.flat, sel.iterrows(), strict=False):
        img = load_image(by_id.loc[r["id"], "image"])
        ax.imshow(img)
        for box, color in ((r["gt_xyxy"], "cyan"), (r["pred_xyxy"], "red")):
            if box is not None and len(box) == 4:
                x1, y1, x2, y2 = box
                ax.add_patch(_rect(x1, y1, x2 - x1, y2 - y1, color))
        title = str(r["expression"])
        ax.set_title((title[:45] + "…" if len(title) > 46 else title) + f"\nIoU {r['iou']:.2f}"
                     + (f" ({r['parse_error']})" if r["parse_error"] else ""), fontsize=7)
    return fig


def _rect(x: float, y: float, w: float, h: float, color: str):
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), w, h, fill=False, edgecolor=color, linewidth=1.8)
