"""Ref-Adv figures: IoU histograms with the near-miss band, accuracy vs expression length and
distractor count (Fig. 2 style, marker size ∝ n), Acc@0.5 with CIs, and GT-vs-prediction drawings."""

from __future__ import annotations

from typing import Any

import vlamb_nb.benchmarks.refadv.score as metrics
from vlamb_nb import stats
from vlamb_nb.plots import PALETTE, new_figure


def iou_histogram(runs: dict[str, Any], *, bins: int = 20):
    """IoU distribution per run; the shaded band is the near miss 0.3 <= IoU < 0.5."""
    import numpy as np

    fig, ax = new_figure(6.5, 3.5)
    edges = np.linspace(0, 1, bins + 1)
    lo, hi = metrics.NEAR_MISS
    ax.axvspan(lo, hi, color="#DDDDDD", alpha=0.6)
    import pandas as pd
    import seaborn as sns

    long = pd.concat([pd.DataFrame({"run": name, "iou": sc["iou"].astype(float).to_numpy()})
                      for name, sc in runs.items()], ignore_index=True)
    sns.histplot(data=long, x="iou", hue="run", hue_order=list(runs), bins=edges, element="step", fill=False,
                 stat="density", common_norm=False, linewidth=1.5, ax=ax,
                 palette={name: PALETTE[i % len(PALETTE)] for i, name in enumerate(runs)})
    ax.axvline(0.5, color="k", linestyle="--", linewidth=0.8)
    ax.set_xlabel("IoU of the first predicted box with the GT")
    ax.set_ylabel("density")
    ax.text((lo + hi) / 2, 0.98, f"near miss\n({lo}-{hi})", transform=ax.get_xaxis_transform(), ha="center",
            va="top", fontsize=7, color="#555555")
    sns.move_legend(ax, "upper right", fontsize=7, title=None)
    return fig


def accuracy_vs(runs: dict[str, Any]):
    """Fig. 2 style: Acc@0.5 vs expression length (words) and vs distractor count, each point with its Wilson
    95% interval; marker size ∝ n."""
    import numpy as np

    fig, axes = new_figure(9.0, 3.5, ncols=2)
    for i, (name, sc) in enumerate(runs.items()):
        color = PALETTE[i % len(PALETTE)]
        for ax, column, bins, frame in ((axes[0], "n_words", metrics.LENGTH_BINS, metrics.with_length(sc)),
                                        (axes[1], "distractor_count", metrics.DISTRACTOR_BINS, sc)):
            t = metrics.accuracy_by(frame, column, bins)
            t = t[t["n"] > 0]
            ax.plot(t["bin"], 100 * t["acc@0.5"], color=color, linewidth=1, label=name)
            ax.scatter(t["bin"], 100 * t["acc@0.5"], s=8 + 200 * t["n"] / max(1, t["n"].max()), color=color, alpha=0.7)
            ci = [stats.wilson(round(a * n), int(n)) for a, n in zip(t["acc@0.5"], t["n"], strict=True)]
            acc = 100 * t["acc@0.5"].to_numpy(float)
            # Wilson's bound at 0 or n can land a rounding error past the estimate: clip, never a negative bar
            err = np.clip([acc - [100 * c.ci_low for c in ci], [100 * c.ci_high for c in ci] - acc], 0, None)
            ax.errorbar(list(t["bin"]), acc, yerr=err, fmt="none", ecolor=color, alpha=0.6, capsize=2)
    axes[0].set_xlabel("words in the expression")
    axes[1].set_xlabel("same-category distractors")
    for ax in axes:
        ax.set_ylabel("Acc@0.5 (%)")
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=min(3, max(1, len(names))), fontsize=7,
               bbox_to_anchor=(0.5, 1.0))
    fig.text(0.99, -0.04, "bars: Wilson 95% intervals per bin", fontsize=7, color="#666666", ha="right")
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


# -- Figs. 4-6 from the released rows -------------------------------------------------------------------------
def dataset_distributions(items, *, title: str = "Ref-Adv-s (1,142 released rows)"):
    """Fig. 4 for Ref-Adv-s: (a) expression length, (b) distractor count, (c) instance size on a log scale.

    Human- and LLM-written expressions are drawn separately: the public subset mixes them unlike the full set.
    """
    import math

    import numpy as np

    from vlamb_nb import boxes

    fig, axes = new_figure(11.0, 3.3, ncols=3)
    groups = (("human-authored", items["human_authored"].astype(bool)),
              ("LLM-authored", ~items["human_authored"].astype(bool)))
    n_words = items["expression"].astype(str).str.split().str.len()
    size = items["gt_xyxy"].map(lambda b: math.sqrt(max(boxes.area(b), 1.0)))
    top = int(items["distractor_count"].max())
    specs = ((axes[0], n_words, np.arange(0.5, n_words.max() + 1.5), "words in the expression", False),
             (axes[1], items["distractor_count"], np.arange(-0.5, top + 1.5), "same-category distractors", False),
             (axes[2], size, np.logspace(math.log10(max(1.0, size.min())), math.log10(size.max()), 25),
              "instance size: sqrt(GT box area), px (log)", True))
    import pandas as pd
    import seaborn as sns

    names = [f"{label} (n={int(mask.sum())})" for label, mask in groups]
    who = pd.Series(names[1], index=items.index).where(~groups[0][1], names[0])
    for k, (ax, values, bins, xlabel, log) in enumerate(specs):
        sns.histplot(x=values.astype(float).to_numpy(), hue=who.to_numpy(), hue_order=names, bins=bins,
                     element="step", fill=False, linewidth=1.5, ax=ax, legend=k == 0,
                     palette=dict(zip(names, PALETTE[:2], strict=True)))
        ax.set_xlabel(xlabel)
        ax.set_ylabel("expressions")
        if log:
            ax.set_xscale("log")
            _plain_log_ticks(ax.xaxis)
    for ax, letter in zip(axes, "abc", strict=True):
        ax.set_title(f"({letter})", loc="left")
    sns.move_legend(axes[0], "upper right", fontsize=7, title=None)
    fig.suptitle(title, fontsize=9)
    return fig


def slice_accuracy(frame, *, families: tuple[str, ...] = ("distractors", "authorship")):
    """Acc@0.5 by slice with image-clustered 95% CIs (``tables.slice_accuracy``), one panel per family.

    Black ticks are the published Ref-Adv-s values where the paper has them (the distractor bins).
    """
    from vlamb_nb.plots import grouped_bars

    fams = [f for f in families if (frame["family"] == f).any()]
    fig, axes = new_figure(5.0 * len(fams), 3.6, ncols=len(fams), squeeze=False)
    handles: dict[str, Any] = {}
    for ax, fam in zip(axes[0], fams, strict=True):
        part = frame[frame["family"] == fam].rename(columns={"run": "series"})
        groups = list(dict.fromkeys(part["group"]))
        series = list(dict.fromkeys(part["series"]))
        grouped_bars(part[["group", "series", "estimate", "ci_low", "ci_high"]], ax=ax, group_order=groups,
                     series_order=series, ylabel="Acc@0.5 (%)", ylim=(0, 100))
        width = 0.8 / len(series)
        pts = [(groups.index(r["group"]) - 0.4 + width * (series.index(r["series"]) + 0.5), r["paper"])
               for _, r in part.iterrows() if r["paper"] == r["paper"]]
        if pts:
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], marker="_", s=120, color="black", zorder=4,
                       label="published (Ref-Adv-s)")
        legend = ax.get_legend()  # one bar colour per run: kept for the figure's shared legend
        for h, t in zip(legend.legend_handles, legend.get_texts(), strict=True):
            handles.setdefault(t.get_text(), h)
        legend.remove()
        ax.set_title({"distractors": "by distractor count", "authorship": "by authorship",
                      "negation": "by negation"}.get(fam, fam))
    for ax in axes[0]:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(lab, h)
    fig.legend(list(handles.values()), list(handles), loc="lower center", ncols=min(len(handles), 3), fontsize=7,
               bbox_to_anchor=(0.5, -0.12))
    fig.suptitle("Ref-Adv-s Acc@0.5 with 95% CIs (whole images resampled)", fontsize=9)
    return fig


def direct_vs_cot(direct, cot, items, *, n: int = 6, ncols: int = 3):
    """Fig. 5 from what is released: GT (cyan), direct (red) and CoT (orange) first boxes on demo images.

    Cases where the two prompts disagree on the hit come first. The CoT text itself is not released.
    """
    from vlamb_nb.images import load_image

    ids = set(items["id"].astype(str))
    d = direct[direct["id"].astype(str).isin(ids)].set_index("id")
    c = cot.set_index("id").loc[d.index]
    disagree = (d["iou"] >= 0.5) != (c["iou"] >= 0.5)
    order = list(d.index[disagree]) + list(d.index[~disagree])
    sel = order[:n]
    nrows = max(1, -(-len(sel) // ncols))
    fig, axes = new_figure(3.2 * ncols, 2.9 * nrows, nrows=nrows, ncols=ncols, squeeze=False)
    by_id = items.assign(id=items["id"].astype(str)).set_index("id")
    for ax in axes.flat:
        ax.axis("off")
    for ax, i in zip(axes.flat, sel, strict=False):
        ax.imshow(load_image(by_id.loc[i, "image"]))
        for box, color, style in ((d.loc[i, "gt_xyxy"], "cyan", "-"), (d.loc[i, "pred_xyxy"], "red", "-"),
                                  (c.loc[i, "pred_xyxy"], "orange", "--")):
            if box is not None and len(box) == 4:
                patch = _rect(box[0], box[1], box[2] - box[0], box[3] - box[1], color)
                patch.set_linestyle(style)
                ax.add_patch(patch)
        text = str(d.loc[i, "expression"])
        ax.set_title((text[:45] + "…" if len(text) > 46 else text)
                     + f"\ndirect IoU {d.loc[i, 'iou']:.2f} | CoT IoU {c.loc[i, 'iou']:.2f}", fontsize=7)
    fig.suptitle("GT cyan, direct red, CoT orange dashed (first boxes; the CoT text is not released)", fontsize=8)
    return fig


def category_ratio_curve(counts, *, label: str = "Ref-Adv-s COCO rows"):
    """Fig. 6 style: category frequency ratios sorted in descending order, log scale."""
    fig, ax = new_figure(5.0, 3.3)
    ax.plot(range(1, len(counts) + 1), counts["ratio"], marker="o", markersize=3, color=PALETTE[0],
            label=f"{label} ({counts.attrs.get('matched', int(counts['count'].sum()))} rows)")
    ax.set_yscale("log")
    _plain_log_ticks(ax.yaxis)
    ax.set_xlabel("category rank")
    ax.set_ylabel("frequency ratio (log)")
    ax.legend(fontsize=7)
    return fig


def _plain_log_ticks(axis) -> None:
    """Plain numbers on a log axis: the package style turns mathtext off, which garbles ``10^k`` labels."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def pairwise_heatmap(sig, *, family: str = "model vs model", alpha: float = 0.05):
    """Paired Acc@0.5 differences between runs (row − column, points) as a heat map; each cell gives the
    difference with its image-clustered 95% CI, and * where the Holm-adjusted paired p-value is below ``alpha``."""
    import pandas as pd

    from vlamb_nb.plots import heatmap

    rows = sig[sig["family"] == family]
    if rows.empty:
        raise ValueError(f"no {family!r} comparisons to draw")
    pairs = [c.split(" − ") for c in rows["comparison"]]
    runs = list(dict.fromkeys(x for p in pairs for x in p))
    diff = pd.DataFrame(float("nan"), index=runs, columns=runs)
    text = pd.DataFrame("", index=runs, columns=runs)
    for (a, b), (_, r) in zip(pairs, rows.iterrows(), strict=True):
        star = "*" if r.get("p_holm", float("nan")) < alpha else ""
        for x, y, sign in ((a, b, 1), (b, a, -1)):
            lo, hi = sorted((sign * r["ci_low"], sign * r["ci_high"]))
            diff.loc[x, y] = sign * r["diff_pp"]
            text.loc[x, y] = f"{sign * r['diff_pp']:+.1f}{star}\n[{lo:.1f}, {hi:.1f}]"
    fig = heatmap(diff, annot=text.to_numpy(), cbar_label="Acc@0.5 difference, row − column (points)",
                  title=f"Ref-Adv-s: paired differences (95% CI; * Holm-adjusted p < {alpha})")
    ax = fig.axes[0]
    ax.set_xlabel("")
    ax.set_ylabel("")
    ax.tick_params(axis="x", rotation=30)
    return fig
