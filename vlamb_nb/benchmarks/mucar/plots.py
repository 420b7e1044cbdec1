"""MUCAR figures: Fig. 3 (category × language distribution, scenarios panel), accuracy bars with intervals, the image-insensitive failure."""

from __future__ import annotations

from typing import Any

import numpy as np

from vlamb_nb.benchmarks.mucar.data import category_language_counts, scenario_counts


# -- figures -------------------------------------------------------------------------------------
def plot_distribution(items, *, title: str = "MUCAR release, Fig. 3 layout"):
    """Fig. 3, regenerated: queries per category stacked by language (left) beside the scenarios (right).

    The paper's right panel shows "scenarios", which it never defines, and the released ``data-all.json``
    has no scenario field (:func:`~vlamb_nb.benchmarks.mucar.data.scenario_counts`), so that panel is
    **not derivable** from the release. Where the data carry no scenario, the right panel draws the only
    scenario-like label the release has, the CODIS image-ambiguity type of the schema-C dual-ambiguity
    queries, titled as a stand-in so it is never read as the paper's panel.
    """
    from vlamb_nb.plots import PALETTE, new_figure

    tab = category_language_counts(items).drop(index="Overall").drop(columns="Total")
    fig, (ax, right) = new_figure(10.5, 3.4, ncols=2, gridspec_kw={"width_ratios": [3, 2]})
    bottom = np.zeros(len(tab))
    for i, lang in enumerate(tab.columns):
        ax.bar(tab.index, tab[lang], bottom=bottom, label=lang, color=PALETTE[i])
        bottom += tab[lang].to_numpy()
    ax.set_ylabel("queries")
    ax.set_title("Categories: queries per category and language")
    ax.tick_params(axis="x", rotation=30)
    ax.legend()
    counts, info = scenario_counts(items)
    if info["derivable"]:
        right.barh(counts["scenario"], counts["queries"], color=PALETTE[4])
        right.set_title(f"Scenarios ({info['labelled_queries']} of {info['queries']} queries labelled)")
    elif info["stand_in_counts"]:
        names = list(info["stand_in_counts"])
        right.barh(names, list(info["stand_in_counts"].values()), color=PALETTE[7])
        right.set_title(f"Scenarios: not in the release (no scenario field).\nStand-in: image-ambiguity type, "
                        f"{info['stand_in_queries']} of {info['queries']} queries (schema C only)", fontsize=8)
    else:
        right.set_axis_off()
        right.set_title("Scenarios: not derivable (no scenario field in the data)", fontsize=8)
    right.invert_yaxis()
    right.set_xlabel("queries")
    fig.suptitle(title)  # says what the items are: the release, or a generated sample
    fig.tight_layout()
    return fig


def plot_accuracy(frame, *, x: str = "label", hue: str = "metric", title: str = ""):
    """Grouped bars (seaborn) with the package's CI whiskers from a long frame (``value``, ``ci_low``,
    ``ci_high``); a cell without an interval is drawn without a whisker."""
    from vlamb_nb.plots import grouped_bars

    long = frame.assign(group=frame[x].astype(str), series=frame[hue].astype(str),
                        estimate=frame["value"].astype(float))
    for c in ("ci_low", "ci_high"):
        long[c] = frame[c].astype(float) if c in frame else np.nan
    fig = grouped_bars(long[long["estimate"].notna()], ylabel="accuracy (%)", ylim=(0, 105),
                       title=title or None, group_order=list(dict.fromkeys(long["group"])),
                       series_order=list(dict.fromkeys(long["series"])))
    fig.axes[0].tick_params(axis="x", rotation=20)
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


def plot_table4(comparison):
    """Table 4's MUCAR columns: each strategy's run (bars with group-bootstrap CIs) beside the published value.

    ``comparison`` is :func:`~vlamb_nb.benchmarks.mucar.report.paper_vs_ours_table4`'s frame, its bars labelled
    with the run's model; the published cells carry no interval (the paper reports none).
    """
    import pandas as pd

    rows = []
    who = str(comparison["model"].iloc[0]) if "model" in comparison and len(comparison) else "ours"
    for _, r in comparison.iterrows():
        metric = str(r["column"]).replace("MUCAR ", "")
        label = f"{r['row']} ({r['setting']})"
        rows.append({"label": label, "metric": f"{who} {metric}", "value": r["ours"], "ci_low": r.get("ci_low"),
                     "ci_high": r.get("ci_high")})
        rows.append({"label": label, "metric": f"paper {metric}", "value": r["paper"], "ci_low": np.nan,
                     "ci_high": np.nan})
    frame = pd.DataFrame(rows)
    order = {m: i for i, m in enumerate([f"{who} Acc_p", "paper Acc_p", f"{who} Acc_q", "paper Acc_q"])}
    frame = frame.sort_values("metric", key=lambda s: s.map(order), kind="stable")
    return plot_accuracy(frame, title=f"Table 4 (MUCAR columns): {who} beside the published rows")
