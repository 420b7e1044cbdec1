"""V-FLUTE figures: Figs. 8-9 (lengths by source), Fig. 6 (F1 drop), Fig. 11 (F1 vs threshold), Fig. 7 (error
types), the §5.3 PR curve, the QLoRA run's losses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vlamb_nb.benchmarks.vflute.data import DATASETS, SOURCE_NAMES

if TYPE_CHECKING:
    from vlamb_nb.benchmarks.vflute.finetune import TrainResult


def plot_lengths(items):
    """Figs. 8-9: claim and explanation length (characters) by source dataset."""
    import seaborn as sns

    from vlamb_nb.plots import PALETTE, new_figure

    fig, axes = new_figure(9, 3.2, ncols=2)
    sources = [s for s in SOURCE_NAMES if s in set(items["source_dataset"])]
    names = [SOURCE_NAMES[s] for s in sources]
    for ax, col, title in ((axes[0], "claim", "Fig. 8: caption length"),
                           (axes[1], "explanation", "Fig. 9: explanation length")):
        frame = items.assign(source=items["source_dataset"].map(SOURCE_NAMES), chars=items[col].str.len())
        sns.boxplot(data=frame[frame["source_dataset"].isin(sources)], x="source", y="chars", order=names,
                    color=PALETTE[0], fill=False, linewidth=1.2, flierprops={"marker": "o", "markersize": 3}, ax=ax)
        ax.set_xlabel("")
        ax.set_title(title)
        ax.set_ylabel("characters")
        ax.tick_params(axis="x", rotation=30)
    fig.tight_layout()
    return fig


def plot_drop(drops: dict[str, Any]):
    """Fig. 6: % drop in F1 from threshold 0 to 0.6, per dataset, one bar group per model.

    No paper overlay: the paper gives Fig. 6 only as a plot, with no numbers in the text (§4.3 says
    only that the drop is large for every model, largest on NYCartoons, and higher on HAIVMet than
    on IRFL). The notes' values were read by eye off the official notebook's embedded PNG, which may
    differ from the camera-ready figure; they are not published numbers, so none are drawn.
    """
    import numpy as np

    from vlamb_nb.plots import new_figure

    fig, ax = new_figure(8, 3.5)
    names = list(DATASETS.values())
    x = np.arange(len(names))
    width = 0.8 / max(len(drops), 1)
    for k, (model, df) in enumerate(drops.items()):
        vals = df.set_index("dataset")["drop_pct"].reindex(names)
        pos = x + k * width - 0.4 + width / 2
        ax.bar(pos, vals.to_numpy(), width, label=model)  # NaN: no bar
        for xi in pos[vals.isna().to_numpy()]:  # say why a bar is absent instead of drawing a 0 drop
            ax.text(xi, 0, "n/a", ha="center", va="bottom", fontsize=7, rotation=90, color="0.4")
    ax.set_xticks(x, names, rotation=20)
    ax.set_ylabel("Drop in F1 score (%)")
    ax.set_title("Fig. 6: drop in F1 from ExplanationScore threshold 0 to 0.6 (n/a: F1@0 is 0 or no items)")
    ax.legend()
    fig.tight_layout()
    return fig


def plot_f1_curves(curves: dict[str, Any], *, min_threshold: float = 0.4):
    """Fig. 11: F1 vs threshold (≥ ``min_threshold``) per dataset, one line per model.

    No paper overlay: App. I gives Fig. 11 only as a plot ("performance of the models by phenomenon
    ... across various thresholds") with no numbers, and its per-dataset F1 is in no table. The
    notes' F1 values at 0.4 were read by eye off the official notebook's PNG, not published, so none
    are drawn.
    """
    from vlamb_nb.plots import new_figure

    fig, axes = new_figure(10, 5.5, nrows=2, ncols=3, sharey=True)
    for ax, (key, name) in zip(axes.ravel(), DATASETS.items(), strict=True):
        for model, c in curves.items():
            g = c[(c["dataset"] == key) & (c["threshold"] >= min_threshold)]
            if len(g):
                ax.plot(g["threshold"], g["f1"], label=model)
        ax.set_title(name)
        ax.set_xlabel("ExplanationScore threshold")
    axes[0, 0].set_ylabel("macro-F1")
    axes[0, 0].legend()
    fig.suptitle("Fig. 11: F1 vs explanation-score threshold by dataset")
    fig.tight_layout()
    return fig


def plot_adequacy_pr(report: dict[str, Any]):
    """§5.3: precision-recall curve of ExplanationScore as a predictor of human adequacy.

    Marks our max-F1 threshold and the best threshold with P and R >= 0.75; the paper's values
    (PR-AUC 0.79, max F1 0.77 at 0.53, 0.6) are in the caption for comparison.
    """
    import numpy as np

    from vlamb_nb.plots import new_figure

    curve = report["curve"]
    prec, rec, thr = (np.asarray(curve[k], dtype=float) for k in ("precision", "recall", "thresholds"))
    fig, ax = new_figure(5.0, 4.0)
    ax.plot(rec, prec, drawstyle="steps-post", label=f"ExplanationScore (PR-AUC {report['pr_auc']:.2f})")
    for key, marker, text in (("max_f1_threshold", "o", "max F1"), ("p75_r75_threshold", "s", "P,R ≥ 0.75")):
        t = report.get(key)
        if t is None:
            continue
        i = int(np.flatnonzero(thr == t)[0])
        ax.plot(rec[i], prec[i], marker, label=f"{text} at t={t:.3f}")
    ax.set_xlabel("recall (adequate)")
    ax.set_ylabel("precision (adequate)")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    sub = " (substitute scorer)" if report.get("scorer_substitute") else ""
    ax.set_title(f"ExplanationScore vs human adequacy, n={report['n_used']}{sub}\n"
                 "paper: PR-AUC 0.79, max F1 0.77 at 0.53; P,R ≥ 0.75 at 0.6", fontsize=9)
    ax.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    return fig


def plot_error_taxonomy(counts):
    """Fig. 7: share of each error type among a model's agreed-inadequate explanations, with Wilson intervals.

    ``counts`` is :func:`.human.error_taxonomy`'s ``"counts"``. The paper prints no numbers for Fig. 7,
    so there are no paper markers.
    """
    from vlamb_nb.benchmarks.vflute.human import ERROR_TYPES
    from vlamb_nb.plots import grouped_bars

    df = counts.rename(columns={"error": "group", "model": "series", "percent": "estimate"})
    df = df[df["n"] > 0]
    if df.empty:
        raise ValueError("no agreed-inadequate explanations to plot")
    groups = [e for e in ERROR_TYPES if e in set(df["group"])]
    fig = grouped_bars(df, group_order=groups, title="Fig. 7: error types among agreed-inadequate explanations",
                       ylabel="% of the model's errors", ylim=(0, 100), legend_title="model")
    ax = fig.axes[0]
    ax.set_xticks(ax.get_xticks(), [g.replace(" ", "\n") for g in groups])  # long names side by side
    fig.tight_layout()
    return fig


def plot_losses(result: TrainResult):
    """Training loss (and learning rate) per optimizer step."""
    from vlamb_nb.plots import new_figure

    fig, ax = new_figure(6, 3.2)
    df = result.frame()
    ax.plot(df["step"], df["loss"], marker="o", label="training loss")
    if result.eval_losses:
        ev = [e["step"] for e in result.eval_losses], [e["loss"] for e in result.eval_losses]
        ax.plot(*ev, marker="s", label="validation loss")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("loss (answer tokens)")
    lr = ax.twinx()
    lr.plot(df["step"], df["lr"], color="grey", linestyle=":", label="learning rate")
    lr.set_ylabel("learning rate")
    ax.legend(loc="upper right")
    fig.tight_layout()
    return fig
