"""The comparison figure stays readable for any number of models and any script: the models' legend is clear of
every axis label, a dozen models get a dozen colour+marker pairs, many pairs are cut to those with the top-ranked
model (and the panel says so), and a Chinese model name is drawn (with a CJK font) or counted (without one)."""

from __future__ import annotations

import io

import pytest
from fixtures_pages import official_runs

from vlamb_nb import plots
from vlamb_nb.compare import MAX_FOREST_PAIRS, compare

N_ROWS = 40


def _compare(tmp_path, names: list[str]):
    """Models right on ever more rows (so their ranks differ), compared on released-format per-row files."""
    models = {name: set(range(0, N_ROWS, 1 + k % 4)) | set(range(k)) for k, name in enumerate(names)}
    return compare(official_runs(tmp_path, models, n=N_ROWS), n_resamples=200, title="models compared")


@pytest.fixture(scope="module")
def twelve(tmp_path_factory):
    return _compare(tmp_path_factory.mktemp("twelve"), [f"model-{k:02d}-of-a-family-with-long-names" for k in range(12)])


def _overlap(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


@pytest.mark.parametrize("n", [2, 12])
def test_the_models_legend_is_clear_of_every_axis_label(tmp_path, twelve, n):
    c = twelve if n == 12 else _compare(tmp_path, ["a", "b"])
    fig = c.figure()
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    (legend,) = fig.legends
    box = legend.get_window_extent(renderer)
    assert len(legend.get_texts()) == n
    for ax in fig.axes:
        for label in (ax.xaxis.label, ax.yaxis.label, ax.title, *ax.get_xticklabels(), *ax.get_yticklabels()):
            if label.get_text():
                assert not _overlap(box, label.get_window_extent(renderer)), label.get_text()
        assert not _overlap(box, ax.get_window_extent(renderer))
    fig_box = fig.bbox
    assert fig_box.x0 <= box.x0 and box.x1 <= fig_box.x1 and fig_box.y0 <= box.y0  # on the canvas, not cut


@pytest.mark.parametrize("names", [["our-lab/a-vision-language-model-7b-instruct-v2",
                                    "our-lab/a-vision-language-model-72b-instruct-v2"],
                                   ["Qwen2.5-VL-3B-Instruct", "Qwen2.5-VL-72B-Instruct", "Qwen2.5-VL-7B-Instruct",
                                    "Qwen3-VL-8B-Thinking"]])
def test_the_two_panels_x_labels_never_overprint_each_other(tmp_path, names):
    """Each panel's x-axis label stays clear of the other's (and of the other panel), whatever the row labels'
    width pushes the panels to."""
    fig = _compare(tmp_path, names).figure()
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    left, right = (ax.xaxis.label.get_window_extent(renderer) for ax in fig.axes[:2])
    assert left.x1 < right.x0 - 2, (left, right)  # apart, with a gap
    assert left.x1 < fig.axes[1].get_window_extent(renderer).x0 or left.y1 < fig.axes[1].get_window_extent(
        renderer).y0


def test_twelve_models_get_twelve_distinct_colour_and_marker_pairs(twelve):
    from matplotlib.colors import to_hex

    fig = twelve.figure()
    ax_ranks = fig.axes[1]
    points = [(to_hex(line.get_color()), line.get_marker()) for line in ax_ranks.get_lines()
              if line.get_marker() not in (None, "None", "") and len(line.get_xdata()) == 1]
    assert len(points) == 12 and len(set(points)) == 12
    handles = [(to_hex(h.get_color()), h.get_marker()) for h in fig.legends[0].legend_handles]
    assert sorted(handles) == sorted(points)  # the legend names each model by its own pair
    assert len(set(plots.series_styles(70))) == 70


def test_many_pairs_are_cut_to_those_with_the_top_ranked_model_and_the_panel_says_so(twelve):
    overall = twelve.pairs[(twelve.pairs["slice"] == "overall") & (twelve.pairs["metric"] == "Acc@0.5")]
    assert len(overall) == 66 > MAX_FOREST_PAIRS and len(twelve.pairs) > len(overall)  # each slice tested too
    fig = twelve.figure()
    ax_pairs = fig.axes[0]
    top = twelve.values.sort_values("rank", kind="stable")["model"].iloc[0]
    labels = [t.get_text() for t in ax_pairs.get_yticklabels()]
    assert len(labels) == 11 and all(top in t for t in labels)
    assert "11 of 66 pairs drawn; every pair is in the table" in ax_pairs.get_title(loc="left")


def _cjk_installed() -> bool:
    return any("CJK" in f or f.endswith((" SC", " JP")) for f in plots.figure_fonts())


def test_a_chinese_model_name_is_drawn_without_missing_glyphs(tmp_path, recwarn):
    if not _cjk_installed():
        pytest.skip("no CJK font installed (apt-get install fonts-noto-cjk)")
    c = _compare(tmp_path, ["通义千问-VL-72B", "Qwen2.5-VL-7B"])
    fig = c.figure()
    fig.canvas.draw()
    for fmt in ("png", "pdf"):
        fig.savefig(io.BytesIO(), format=fmt)
    assert "通义千问-VL-72B" in [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("通义千问-VL-72B" in t.get_text() for t in fig.axes[0].get_yticklabels())
    assert not [w for w in recwarn if "Glyph" in str(w.message)]


def test_without_a_cjk_font_a_chinese_name_becomes_counted_placeholders(tmp_path, monkeypatch, recwarn):
    from matplotlib import font_manager as fm
    from matplotlib.ft2font import FT2Font

    def dejavu_only():
        path = fm.findfont(fm.FontProperties(family="DejaVu Sans"), fallback_to_default=False)
        return ("DejaVu Sans",), frozenset(FT2Font(path).get_charmap())

    monkeypatch.setattr(plots, "_font_coverage", dejavu_only)
    c = _compare(tmp_path, ["通义千问", "Qwen2.5-VL-7B"])
    fig = c.figure()
    fig.savefig(io.BytesIO(), format="png")
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend[0] == plots.PLACEHOLDER * 4 and legend[1] == "Qwen2.5-VL-7B"
    assert "no installed font can draw" in fig.get_suptitle()
    assert not [w for w in recwarn if "Glyph" in str(w.message)]


def test_two_models_are_drawn_on_every_slice_and_many_on_their_whole_set_which_the_panel_says(tmp_path, twelve):
    two = _compare(tmp_path, ["a", "b"])
    slices = list(dict.fromkeys(two.values["slice"]))
    assert len(slices) > 1
    fig = two.figure()
    assert len(fig.axes[0].get_yticklabels()) == len(slices)  # one pair, every slice
    assert [t.get_text().split(" · ")[1].split("\n")[0] for t in fig.axes[1].get_yticklabels()] == slices
    many = twelve.figure()
    assert {t.get_text().split(" · ")[1].split("\n")[0] for t in many.axes[1].get_yticklabels()} == {"overall"}
    assert "slice is in the tables" in many.axes[0].get_title(loc="left")
