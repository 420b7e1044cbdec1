"""RACQUET figures: class shares as stacked horizontal bars (Figs. 3, 4, 8)."""

from __future__ import annotations

from vlamb_nb.plots import SEMANTIC

#: one colour per class in every RACQUET figure (the package's fixed meanings): risk in vermillion, the safe
#: class in bluish green, in between in orange, nothing read in grey
CLASS_COLORS = {c: SEMANTIC[c] for c in ("Explicit", "Implicit", "High Risk", "unlabelled", "Stereotypical",
                                          "Anti-stereotypical")}


def share_figure(shares, *, bar: tuple[str, ...] = ("model", "setting"), title: str | None = None,
                 labels: tuple[str, ...] = ("Explicit", "Implicit", "High Risk")):
    """Fig. 3/4/7-style horizontal stacked bars of class shares with each segment's CI."""
    from vlamb_nb.plots import stacked_bars

    df = shares.copy()
    cols = [c for c in bar if c in df.columns]
    df["group"] = df[cols].astype(str).agg(" / ".join, axis=1) if cols else "all"
    df["series"] = df["class_name"]
    df["estimate"] = df["share"]
    df = df[df["series"].isin(labels)]
    order = list(dict.fromkeys(df["group"]))[::-1]  # horizontal bars stack upwards: first group on top
    shown = set(df.loc[df["estimate"].fillna(0) > 0, "series"])
    present = [x for x in labels if x in shown] or [x for x in labels if x in set(df["series"])]
    return stacked_bars(df, title=title, ylabel="% of responses", segment_order=present, bar_order=order,
                        horizontal=True, colors=CLASS_COLORS)
