"""Error-bar helpers: every bar/point carries exactly the interval of its Result."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.container import ErrorbarContainer  # noqa: E402

from vlamb_nb import plots, stats  # noqa: E402


def _segments(ax) -> np.ndarray:
    """(low, high) of every vertical error bar drawn on ``ax``, one row per bar."""
    out = []
    for c in ax.containers:
        if isinstance(c, ErrorbarContainer):
            for coll in c.lines[2]:
                for seg in coll.get_segments():
                    out.append((float(seg[:, 1].min()), float(seg[:, 1].max())))
    return np.array(out).reshape(-1, 2)


def _result(k: int, n: int, name: str = "") -> stats.Result:
    return stats.wilson(k, n, name=name)


def test_a_figure_is_saved_as_png_and_pdf_and_a_demo_is_stamped_and_kept_apart(tmp_path):
    fig, ax = plots.new_figure()
    ax.bar([0, 1], [0.3, 0.5])
    assert plots.save_figure(fig, "stats", "bar", directory=tmp_path) is None  # nothing printed in a cell
    paths = sorted((tmp_path / "stats").iterdir())
    assert [p.name for p in paths] == ["bar.pdf", "bar.png"] and all(p.stat().st_size > 0 for p in paths)
    plots.save_figure(fig, "vague", "acc", directory=tmp_path, demo=True)
    assert sorted(p.name for p in (tmp_path / "vague" / "demo").iterdir()) == ["acc.pdf", "acc.png"]
    assert not (tmp_path / "vague" / "acc.png").exists()
    assert plots.DEMO_STAMP in [t.get_text() for t in fig.texts]


def test_grouped_bars_put_every_series_in_every_group_with_its_ci():
    nested = {cat: {m: _result(k, 50) for m, k in [("m1", 20 + i), ("m2", 30 - i)]}
              for i, cat in enumerate(["Polysemy", "Grammar", "Cultural"])}
    fig = plots.grouped_bars(nested, ylabel="Acc_q")
    ax = fig.axes[0]
    assert len(ax.patches) == 6
    segs = np.sort(_segments(ax), axis=0)
    want = np.sort([(r.ci_low, r.ci_high) for g in nested.values() for r in g.values()], axis=0)
    assert segs == pytest.approx(want)
    # the long-frame form gives the same heights
    import pandas as pd

    rows = [{"group": g, "series": s, "estimate": r.estimate, "ci_low": r.ci_low, "ci_high": r.ci_high}
            for g, inner in nested.items() for s, r in inner.items()]
    fig2 = plots.grouped_bars(pd.DataFrame(rows))
    assert sorted(p.get_height() for p in fig2.axes[0].patches) == pytest.approx(
        sorted(p.get_height() for p in ax.patches))
    with pytest.raises(ValueError, match="columns"):
        plots.grouped_bars(pd.DataFrame({"group": ["a"]}))


def test_stacked_bars_stack_shares_and_draw_segment_intervals_at_their_tops():
    labels = np.array(["largest"] * 5 + ["central"] * 3 + ["other"] * 2)
    shares = {}
    for model in ["A", "B"]:
        shares[model] = {c: stats.bootstrap_ci((labels == c).astype(int), n_resamples=500, name=c)
                         for c in ["largest", "central", "other"]}
    fig = plots.stacked_bars(shares, ylabel="share")
    ax = fig.axes[0]
    heights = [p.get_height() for p in ax.patches]
    assert sum(heights) == pytest.approx(2.0)  # two bars of total share 1
    segs = _segments(ax)
    assert len(segs) == 6
    # segment j of each bar is centred at the cumulative share 0.5, 0.8, 1.0 (up to CI asymmetry)
    for (lo, hi), top in zip(segs.tolist(), [0.5, 0.5, 0.8, 0.8, 1.0, 1.0], strict=True):
        assert lo <= top <= hi and hi - lo > 0.1
    fig_h = plots.stacked_bars(shares, horizontal=True, ylabel="share")
    assert len(fig_h.axes[0].patches) == 6


def test_model_text_with_dollar_signs_is_drawn_verbatim(tmp_path):
    """A random model's answer such as ``A: $#@gh?+*&%$#@`` once crashed a figure as broken mathtext."""
    from vlamb_nb.plots import new_figure, save_figure

    fig, ax = new_figure(3, 2)
    ax.set_title("A: $#@gh?+*&%$#@ abcd?")
    ax.text(0.1, 0.5, "cost $5 and $6")
    save_figure(fig, "t", "dollars", directory=tmp_path)
    assert (tmp_path / "t" / "dollars.png").is_file() or (tmp_path / "dollars.png").is_file()


def test_a_figure_of_generated_sample_data_is_stamped_as_such(tmp_path, monkeypatch):
    from vlamb_nb.notebook import SAMPLE_STAMP, setup
    from vlamb_nb.plots import new_figure

    monkeypatch.setenv("VLAMB_FIGURES_DIR", str(tmp_path))
    cfg = setup("vague", profile="offline")
    fig, _ = new_figure(3, 2)
    cfg.save_figure(fig, "b1", sample_data=True)
    assert (tmp_path / "vague" / "demo" / "b1.png").is_file() and not (tmp_path / "vague" / "b1.png").exists()
    assert any(t.get_text() == SAMPLE_STAMP for t in fig.texts)


def test_palette_is_colour_blind_safe_and_classes_keep_their_colours():
    """One meaning per colour across papers: seaborn's colour-blind palette, risk classes in the risk colour."""
    import seaborn as sns
    from matplotlib.colors import to_hex

    from vlamb_nb.benchmarks.racquet.plots import CLASS_COLORS

    assert plots.PALETTE == [to_hex(c).upper() for c in sns.color_palette("colorblind")]
    assert CLASS_COLORS["High Risk"] == CLASS_COLORS["Stereotypical"] == plots.RISK
    assert CLASS_COLORS["Explicit"] == plots.SAFE and CLASS_COLORS["unlabelled"] == plots.NEUTRAL
    assert len({plots.RISK, plots.SAFE, plots.CAUTION, plots.NEUTRAL}) == 4


def test_seaborn_grouped_bars_carry_the_package_intervals_and_a_legend_per_series(recwarn):
    """seaborn draws the bars (no estimator of its own); each whisker spans exactly the interval given."""
    from matplotlib.colors import to_hex

    nested = {"g1": {"ours": {"estimate": 0.4, "ci_low": 0.31, "ci_high": 0.52},
                     "High Risk": {"estimate": 0.2, "ci_low": 0.12, "ci_high": 0.29}},
              "g2": {"ours": {"estimate": 0.6, "ci_low": 0.55, "ci_high": 0.66}}}
    fig = plots.grouped_bars(nested, scale=100)
    ax = fig.axes[0]
    bars = sorted((round(p.get_x() + p.get_width() / 2, 3), round(p.get_height(), 6), to_hex(p.get_facecolor()))
                  for p in ax.patches)
    assert [b[1] for b in bars] == pytest.approx([40.0, 20.0, 60.0])  # g2 has no "High Risk" bar: a gap
    assert bars[1][2].upper() == plots.RISK and bars[0][2].upper() == plots.PALETTE[0]
    assert np.sort(_segments(ax), axis=0) == pytest.approx(np.array([(12, 29), (31, 52), (55, 66)]))
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["ours", "High Risk"]
    assert not [w for w in recwarn if "legend" in str(w.message)]
