"""Saliency math, token-grid geometry, rendering, box mass and overlays, on synthetic inputs (no model)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from fixtures_saliency import attention_scores

from vlamb_nb.errors import SettingError
from vlamb_nb.saliency.analysis import (
    box_mass,
    box_records,
    compare_correct_wrong,
    plot_overlay,
    pointing_hit,
    records_frame,
    summarize,
)
from vlamb_nb.saliency.grid import (
    GridSegment,
    ImageLayout,
    anyres_segments,
    idefics3_segments,
    llava_segments,
    map_shape,
    qwen_segments,
    render,
)
from vlamb_nb.saliency.methods import _signed, image_share, rollout_row


def attention_rollout(attn, q, k, **options):
    """The rollout's share of each key (:func:`rollout_row` at the keys)."""
    return rollout_row(attn, q, **options)[np.asarray(k)]


def token_cell(layout, segment: str, row: int, col: int) -> int:
    """Index (within the image's token run) of the token at grid cell (row, col) of ``segment``."""
    seg = next(s for s in layout.segments if s.name == segment)
    return int(seg.indices[row * seg.shape[1] + col])


def _random_attn(rng, layers=3, heads=2, n=7):
    a = rng.random((layers, heads, n, n)) * np.tril(np.ones((n, n)))
    return [x / x.sum(-1, keepdims=True) for x in a]


# -- attention and rollout -------------------------------------------------------------------------
def test_attention_scores_average_chosen_layers_and_heads():
    rng = np.random.default_rng(0)
    attn = _random_attn(rng)
    q, k = [5, 6], [1, 2, 3]
    want = np.mean([attn[li][h][np.ix_(q, k)].mean(0) for li in (0, 2) for h in (1,)], axis=0)
    np.testing.assert_allclose(attention_scores(attn, q, k, layers=[0, -1], heads=1), want)
    full = np.mean([attn[li][:, q][:, :, k].mean((0, 1)) for li in range(3)], axis=0)
    np.testing.assert_allclose(attention_scores(attn, q, k), full)
    with pytest.raises(SettingError, match="layer 5 out of range"):
        attention_scores(attn, q, k, layers=5)


def test_attention_scores_find_the_attended_key():
    n = 6
    a = np.full((2, n, n), 0.01)
    a[:, 5, 2] = 0.9
    assert int(np.argmax(attention_scores([a, a], [5], [0, 1, 2, 3]))) == 2


def test_rollout_equals_the_full_matrix_product():
    rng = np.random.default_rng(1)
    attn = _random_attn(rng, layers=4)
    mats = []
    for a in attn:
        m = 0.5 * a.mean(0) + 0.5 * np.eye(a.shape[-1])
        mats.append(m / m.sum(-1, keepdims=True))
    full = mats[3] @ mats[2] @ mats[1] @ mats[0]  # last layer applied first to the query row
    q, k = [6], [0, 1, 2]
    np.testing.assert_allclose(attention_rollout(attn, q, k), full[np.ix_(q, k)].mean(0))
    sub = mats[2] @ mats[1]
    np.testing.assert_allclose(attention_rollout(attn, q, k, layers=[1, 2]), sub[np.ix_(q, k)].mean(0))
    # pure residual: nothing flows from the query to other tokens
    np.testing.assert_allclose(attention_rollout(attn, q, k, residual=1.0), 0.0)
    with pytest.raises(SettingError):
        attention_rollout(attn, q, k, residual=1.5)


def test_rollout_refuses_layers_with_gaps_or_repeats():
    """Rollout multiplies each layer into the next: [0, 2] would silently drop layer 1, so it is refused."""
    rng = np.random.default_rng(2)
    attn = _random_attn(rng, layers=4)
    q, k = [6], [0, 1, 2]
    for bad in ([0, 2], [0, 1, 3], [1, 1], [-1, 0]):
        with pytest.raises(SettingError, match="consecutive layers"):
            attention_rollout(attn, q, k, layers=bad)
    np.testing.assert_allclose(attention_rollout(attn, q, k, layers=[2, 1]), attention_rollout(attn, q, k, layers=[1, 2]))
    np.testing.assert_allclose(attention_rollout(attn, q, k, layers=[-2, -1]), attention_rollout(attn, q, k, layers=[2, 3]))
    np.testing.assert_allclose(attention_rollout(attn, q, k, layers=range(4)), attention_rollout(attn, q, k))
    # plain attention may average any layers
    assert attention_scores(attn, q, k, layers=[0, 2]).shape == (3,)


def test_image_share_is_the_image_tokens_part_of_the_whole_row():
    rng = np.random.default_rng(3)
    attn = _random_attn(rng)
    q, keys, every = [5, 6], [1, 2, 3], list(range(7))
    row = attention_scores(attn, q, every)
    assert row.sum() == pytest.approx(1.0)  # softmax rows: the share is the image tokens' raw attention
    assert image_share(row, keys) == pytest.approx(attention_scores(attn, q, keys).sum())
    roll = rollout_row(attn, q)
    assert roll.sum() == pytest.approx(1.0)
    assert image_share(roll, keys) == pytest.approx(attention_rollout(attn, q, keys).sum())
    assert image_share([0.2, 0.3, 0.5], [0, 1]) == pytest.approx(0.5)
    assert np.isnan(image_share(np.zeros(3), [0]))


def test_gradient_x_input_modes():
    g = np.array([[1.0, 2.0], [-1.0, 0.0], [0.5, 0.5]])
    e = np.array([[1.0, 1.0], [3.0, 1.0], [-2.0, 0.0]])
    dots = (g * e).sum(axis=-1)  # the explainer's per-token dot product
    np.testing.assert_allclose(_signed(dots, "abs"), [3.0, 3.0, 1.0])
    np.testing.assert_allclose(_signed(dots, "positive"), [3.0, 0.0, 0.0])
    with pytest.raises(SettingError):
        _signed(dots, "signed")


# -- family geometry ---------------------------------------------------------------------------------
def test_qwen_grid_is_merged_row_major_over_the_whole_image():
    segs = qwen_segments((300, 200), 6, (1, 4, 6), merge=2)
    assert segs[0].shape == (2, 3) and segs[0].region == (0.0, 0.0, 300.0, 200.0)
    with pytest.raises(SettingError, match="predicts 6 image tokens"):
        qwen_segments((300, 200), 7, (1, 4, 6), merge=2)


def test_llava_center_crop_region_in_original_pixels():
    ip = SimpleNamespace(do_pad=False, do_resize=True, size={"shortest_edge": 336}, do_center_crop=True,
                         crop_size={"height": 336, "width": 336})
    (seg,) = llava_segments((600, 400), 576, ip, patch=14)
    assert seg.shape == (24, 24)
    np.testing.assert_allclose(seg.region, (100.0, 0.0, 500.0, 400.0))  # the central 400x400 square
    (cls,) = llava_segments((600, 400), 577, ip, patch=14)  # "full" strategy: CLS first
    assert cls.indices[0] == 1
    padded = SimpleNamespace(**{**vars(ip), "do_pad": True})
    (pad,) = llava_segments((600, 400), 576, padded, patch=14)
    np.testing.assert_allclose(pad.region, (0.0, -100.0, 600.0, 500.0), atol=1e-9)  # square pad beyond the image
    with pytest.raises(SettingError):
        llava_segments((600, 400), 500, ip, patch=14)


def test_anyres_layout_skips_newlines_and_matches_token_count():
    pin = [[384, 384], [384, 768], [768, 384], [768, 768]]
    # 768x384 (w x h) image: best resolution 384x768 (h x w) -> 1x2 tiles of 27x27, no padding
    segs = anyres_segments((768, 384), 27 * 27 + 27 * 55, tile=384, patch=14, pinpoints=pin, max_patches=9,
                           base_tokens=27 * 27, family="llava_onevision")
    base, hi = segs
    assert base.shape == (27, 27) and hi.shape == (27, 54)
    assert hi.indices[54] == 27 * 27 + 55  # the newline after row 0 is skipped
    with pytest.raises(SettingError, match="llava_onevision"):
        anyres_segments((768, 384), 27 * 27 + 10, tile=384, patch=14, pinpoints=pin, max_patches=9,
                        base_tokens=27 * 27, family="llava_onevision")


def test_idefics3_tiles_then_global():
    segs = idefics3_segments((200, 100), 3 * 9, rows=1, cols=2, seq_len=9)
    assert [s.name for s in segs] == ["tile r1c1", "tile r1c2", "global"]
    assert segs[1].region == (100.0, 0.0, 200.0, 100.0) and segs[2].indices[0] == 18
    with pytest.raises(SettingError):
        idefics3_segments((200, 100), 20, rows=1, cols=2, seq_len=9)


# -- rendering ------------------------------------------------------------------------------------
def _layout(size, segments, n):
    return ImageLayout(0, size, np.arange(100, 100 + n), segments)


def test_render_keeps_aspect_and_puts_mass_where_the_token_looks():
    size = (400, 200)
    lay = _layout(size, qwen_segments(size, 8, (1, 4, 8), merge=2), 8)  # 2 x 4 grid
    scores = np.zeros(8)
    scores[token_cell(lay, "frame0", 1, 2)] = 3.0
    heat = render(scores, lay, max_side=100)
    assert heat.shape == map_shape(size, 100) == (50, 100)
    assert heat.sum() == pytest.approx(1.0)
    assert box_mass(heat, (200, 100, 300, 200), size) == pytest.approx(1.0)
    assert pointing_hit(heat, (200, 100, 300, 200), size) and not pointing_hit(heat, (0, 0, 200, 100), size)


def test_render_adds_tiles_and_global_and_handles_degenerate_input():
    size = (200, 100)
    lay = _layout(size, idefics3_segments(size, 3 * 4, rows=1, cols=2, seq_len=4), 12)
    scores = np.zeros(12)
    scores[token_cell(lay, "tile r1c2", 0, 0)] = 1.0  # top-left cell of the right tile
    scores[token_cell(lay, "global", 1, 0)] = 1.0  # bottom-left quarter of the whole image
    heat = render(scores, lay, max_side=None)
    assert box_mass(heat, (100, 0, 150, 50), size) == pytest.approx(0.5)
    assert box_mass(heat, (0, 50, 100, 100), size) == pytest.approx(0.5)
    uniform = render(np.zeros(12), lay, max_side=None)
    np.testing.assert_allclose(uniform, 1.0 / uniform.size)
    with pytest.raises(SettingError):
        render(-scores, lay)
    with pytest.raises(SettingError):
        render(np.ones(5), lay)


def test_mass_outside_the_image_is_dropped():
    size = (600, 400)
    ip = SimpleNamespace(do_pad=True, do_resize=True, size={"shortest_edge": 4}, do_center_crop=True,
                         crop_size={"height": 4, "width": 4})
    lay = _layout(size, llava_segments(size, 4, ip, patch=2), 4)  # 2x2 over a 600x600 padded square
    heat = render(np.array([1.0, 1.0, 1.0, 1.0]), lay, max_side=None)
    assert heat.sum() == pytest.approx(1.0)
    assert box_mass(heat, (0, 0, 600, 200), size) == pytest.approx(0.5)


def test_segment_checks_its_token_count():
    with pytest.raises(SettingError):
        GridSegment("x", np.arange(5), (2, 3), (0, 0, 1, 1))


# -- box mass and aggregation ----------------------------------------------------------------------
def test_box_mass_fractional_coverage_and_formats():
    heat = np.full((10, 20), 1 / 200)
    size = (200, 100)
    assert box_mass(heat, (0, 0, 100, 100), size) == pytest.approx(0.5)
    assert box_mass(heat, (5, 5, 10, 10), size) == pytest.approx(25 / 20000)  # a box smaller than one pixel
    assert box_mass(heat, (0.0, 0.0, 0.5, 1.0), size, fmt="norm_1_xyxy") == pytest.approx(0.5)
    recs = box_records(heat, size, {"gold": (0, 0, 50, 50), "distractor": None}, item_id="a", correct=True)
    assert len(recs) == 1 and recs[0]["ratio"] == pytest.approx(1.0)


def test_summarize_and_correct_vs_wrong_gap():
    rng = np.random.default_rng(0)
    rows = []
    for i in range(60):
        ok = i % 2 == 0
        rows.append({"item_id": str(i), "benchmark": "b", "method": "gradient", "role": "gold", "correct": ok,
                     "mass": float(np.clip(rng.normal(0.6 if ok else 0.3, 0.05), 0, 1)), "area_share": 0.2,
                     "ratio": 1.0, "hit": ok})
    frame = records_frame(rows)
    s = summarize(frame, n_resamples=500)
    assert s.loc[0, "n"] == 60 and s.loc[0, "ci_low"] < s.loc[0, "mass"] < s.loc[0, "ci_high"]
    assert s.loc[0, "pointing"] == pytest.approx(0.5)
    gap = compare_correct_wrong(frame, role="gold", n_resamples=500)
    assert 0.25 < gap.loc[0, "gap"] < 0.35 and gap.loc[0, "ci_low"] > 0 and gap.loc[0, "p"] < 0.01
    same = frame.assign(mass=rng.random(60))
    gap0 = compare_correct_wrong(same, role="gold", n_resamples=500)
    assert gap0.loc[0, "ci_low"] < 0 < gap0.loc[0, "ci_high"] or gap0.loc[0, "p"] > 0.01
    one_sided = compare_correct_wrong(frame.assign(correct=True), role="gold")
    assert "gap" not in one_sided.columns or pd.isna(one_sided.loc[0].get("gap"))


def test_summarize_keeps_clusters_aligned_when_values_are_undefined():
    """A NaN ratio (empty box) must not silently switch the cluster bootstrap off for the whole group."""
    from vlamb_nb import stats

    rng = np.random.default_rng(1)
    rows = [{"item_id": f"i{i // 3}", "benchmark": "b", "method": "gradient", "role": "candidates", "correct": True,
             "mass": 0.1, "area_share": 0.1, "ratio": float(rng.random() + (i // 3)), "hit": False}
            for i in range(30)]
    rows[4]["ratio"] = float("nan")
    frame = records_frame(rows)
    got = summarize(frame, value="ratio", clusters="item_id", n_resamples=400)
    keep = frame["ratio"].notna().to_numpy()
    want = stats.bootstrap_ci(frame["ratio"].to_numpy()[keep], n_resamples=400, seed=0,
                              clusters=frame["item_id"].to_numpy()[keep])
    assert got.loc[0, "n"] == 29 and got.loc[0, "n_undefined"] == 1
    assert (got.loc[0, "ci_low"], got.loc[0, "ci_high"]) == pytest.approx((want.ci_low, want.ci_high))


def test_overlay_figure_saves_png_and_pdf(tmp_path):
    from PIL import Image

    from vlamb_nb.plots import save_figure
    from vlamb_nb.saliency.methods import SaliencyMap

    size = (120, 80)
    lay = _layout(size, qwen_segments(size, 6, (1, 4, 6), merge=2), 6)
    heat = render(np.arange(6, dtype=float), lay, max_side=None)
    smap = SaliencyMap(heat, "gradient", Image.new("RGB", size), "Which cup?", "the left one", "generated",
                       np.arange(6.0), lay, details={"image_share": 0.087})
    fig = plot_overlay(smap, boxes={"gold": (0, 0, 60, 40), "distractor": (60, 40, 120, 80)})
    assert fig.axes[0].get_title(loc="left") == "gradient: 8.7% on image"  # the normalised map hides this
    save_figure(fig, "saliency", "overlay-test", directory=tmp_path)
    paths = sorted((tmp_path / "saliency").iterdir())
    assert [p.suffix for p in paths] == [".pdf", ".png"] and all(p.stat().st_size > 0 for p in paths)


# -- target boxes from benchmark rows ------------------------------------------------------------------
def test_target_boxes_from_benchmark_columns():
    from vlamb_nb.saliency.analysis import _scale_boxes, reference_size, target_boxes

    ref = target_boxes({"gt_xyxy": [1, 2, 3, 4], "pred_xyxy": [[5, 6, 7, 8], [0, 0, 1, 1]], "distractor_count": 3})
    assert ref == {"gold": [1, 2, 3, 4], "predicted": [5, 6, 7, 8]}  # a count is not a distractor box
    vague = target_boxes({"person_bbox": [[0, 0, 10, 10], [20, 20, 40, 40], [50, 0, 60, 5]], "addressee": "person2"})
    assert vague["addressee"] == [20, 20, 40, 40] and len(vague["other people"]) == 2
    assert "addressee" not in target_boxes({"person_bbox": [[0, 0, 1, 1]], "addressee": "person7"})
    row = {"candidate_boxes": [(0, 0, 50, 50), (45, 45, 55, 55), (60, 0, 100, 20)], "width": 100.0, "height": 100.0}
    rq = target_boxes(row)
    assert rq["largest"] == (0, 0, 50, 50) and rq["centermost"] == (45, 45, 55, 55) and len(rq["candidates"]) == 3
    assert reference_size({"img_size": {"width": 320.0, "height": 200.0}}) == (320.0, 200.0)
    assert reference_size({"width": float("nan"), "height": 3}) is None
    scaled = _scale_boxes({"a": (0, 0, 160, 100), "b": [(0, 0, 32, 20)]}, (320.0, 200.0), (160, 100))
    assert scaled["a"] == (0.0, 0.0, 80.0, 50.0) and scaled["b"] == [(0.0, 0.0, 16.0, 10.0)]


def test_role_records_average_list_roles():
    from vlamb_nb.saliency.analysis import role_records
    from vlamb_nb.saliency.methods import SaliencyMap

    size = (100, 100)
    lay = _layout(size, qwen_segments(size, 4, (1, 4, 4), merge=2), 4)
    heat = render(np.array([1.0, 0.0, 0.0, 0.0]), lay, max_side=None)  # all mass top-left quarter
    smap = SaliencyMap(heat, "gradient", None, "", "", "option", np.zeros(4), lay, details={"image_share": 0.09})
    recs = {r["role"]: r for r in role_records(smap, {"one": (0, 0, 50, 50),
                                                      "many": [(0, 0, 50, 50), (50, 50, 100, 100)]},
                                               item_id="x", benchmark="b", correct=False)}
    assert recs["one"]["mass"] == pytest.approx(1.0) and recs["one"]["ratio"] == pytest.approx(4.0)
    assert recs["many"]["mass"] == pytest.approx(0.5) and recs["many"]["hit"]
    assert recs["one"]["image_share"] == recs["many"]["image_share"] == 0.09
    other = SaliencyMap(heat, "gradient", None, "", "", "option", np.zeros(4), lay, details={"image_share": 0.03})
    frame = records_frame(list(recs.values()) + role_records(other, {"one": (0, 0, 50, 50)}, item_id="y",
                                                              benchmark="b", correct=True))
    s = summarize(frame, n_resamples=100).set_index("role")
    assert s.loc["one", "image_share"] == pytest.approx(0.06) and s.loc["many", "image_share"] == pytest.approx(0.09)


# -- overlay figures: colour bar and text the fonts cannot draw -----------------------------------------------
def _overlay_map(prompt="Which cup?", answer="the left one"):
    from PIL import Image

    from vlamb_nb.saliency.methods import SaliencyMap

    size = (120, 80)
    lay = _layout(size, qwen_segments(size, 6, (1, 4, 6), merge=2), 6)
    heat = render(np.arange(6, dtype=float), lay, max_side=None)
    return SaliencyMap(heat, "gradient", Image.new("RGB", size), prompt, answer, "generated", np.arange(6.0), lay,
                       details={"image_share": 0.087})


def test_overlay_has_a_labelled_colour_bar_starting_at_zero():
    from vlamb_nb.saliency.analysis import MASS_LABEL, plot_methods

    smap = _overlay_map()
    fig = plot_overlay(smap, boxes={"gold": (0, 0, 60, 40)})
    main, bar = fig.axes
    assert bar.get_ylabel() == MASS_LABEL == "share of saliency mass per map pixel"
    image = main.get_images()[1]
    assert image.get_clim() == (0.0, pytest.approx(float(smap.heatmap.max())))  # dark means no mass
    fig.canvas.draw()
    assert any(t.get_text().endswith("%") for t in bar.get_yticklabels())  # shares shown as percentages
    many = plot_methods([smap, smap])
    assert sum(ax.get_ylabel() == MASS_LABEL for ax in many.axes) == 2  # one bar per map: scales differ


def test_overlay_text_never_draws_tofu_or_question_marks(recwarn):
    """CJK, emoji and control characters: drawn when a font has them, else a counted placeholder; no warning."""
    import io
    import warnings

    from vlamb_nb.saliency.analysis import (
        PLACEHOLDER,
        _font_coverage,
        drawable_text,
        figure_fonts,
        plot_methods,
    )

    text = "这个杯子 🙂 café\x07ok\ufffd"
    shown, replaced = drawable_text(text)
    codes = _font_coverage()[1]
    assert "?" not in shown and figure_fonts()[0] == "DejaVu Sans"
    assert all(ch == PLACEHOLDER or ord(ch) in codes for ch in shown)
    assert shown.startswith("".join(ch if ord(ch) in codes else PLACEHOLDER for ch in "这个杯子"))
    assert "café" in shown and shown.endswith(f"ok{PLACEHOLDER}")  # bell and U+FFFD replaced, Latin kept
    want = sum(ord(ch) not in codes for ch in "这个杯子🙂") + 2
    assert replaced == want
    smap = _overlay_map(prompt="哪个杯子 🙂", answer=text)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # "Glyph ... missing from font(s)" would raise here
        for fig in (plot_overlay(smap, boxes={"金": (0, 0, 60, 40)}, title="方法 🙂"), plot_methods([smap])):
            fig.savefig(io.BytesIO(), format="png")
            fig.savefig(io.BytesIO(), format="pdf")
    fig = plot_overlay(smap)
    label = fig.axes[0].get_xlabel()
    assert "?" not in label
    if PLACEHOLDER in label:  # no CJK/emoji font here: the figure says what the placeholder means
        assert f"{PLACEHOLDER} = " in label.splitlines()[-1] and "no installed font can draw" in label
    assert not [w for w in recwarn if "Glyph" in str(w.message)]


def test_study_request_for_explains_a_repair_turn_through_its_items_first_request():
    """Ref-Adv's scored rows can come from the repair turn ('0::repair-direct'); the explorer's saliency button
    must explain that item's request, not fail to find it."""
    from vlamb_nb.models.base import Request
    from vlamb_nb.saliency_study import Study

    reqs = [Request(f"{k}::direct", [{"role": "user", "content": "q"}], meta={"item_id": str(k)}) for k in (0, 1)]
    s = Study("refadv", "direct", pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), {}, [], [], "", reqs)
    assert s.request_for({"request_id": "1::direct"}) is reqs[1]
    assert s.request_for({"request_id": "0::repair-direct", "item_id": "0"}) is reqs[0]
    with pytest.raises(SettingError, match="item '7'"):
        s.request_for({"request_id": "7::repair-direct", "item_id": "7"})


def _dejavu_only():
    from matplotlib import font_manager as fm
    from matplotlib.ft2font import FT2Font

    path = fm.findfont(fm.FontProperties(family="DejaVu Sans"), fallback_to_default=False)
    return ("DejaVu Sans",), frozenset(FT2Font(path).get_charmap())


def test_without_a_cjk_font_chinese_becomes_counted_placeholders(monkeypatch):
    """The fallback path, forced: only DejaVu Sans installed. No '?', no tofu; the figure explains the mark."""
    from vlamb_nb import plots
    from vlamb_nb.saliency import analysis as sa

    monkeypatch.setattr(plots, "_font_coverage", _dejavu_only)
    shown, replaced = sa.drawable_text("这个杯子 café")
    assert shown == f"{sa.PLACEHOLDER * 4} café" and replaced == 4
    label = plot_overlay(_overlay_map(prompt="哪个杯子", answer="左边")).axes[0].get_xlabel()
    assert "?" not in label and f"{sa.PLACEHOLDER} = " in label and "no installed font can draw" in label


def test_with_a_cjk_font_chinese_is_drawn_as_written(recwarn):
    """The other path: a CJK font installed (CI installs fonts-noto-cjk) draws the characters themselves."""
    import io

    from vlamb_nb.saliency import analysis as sa

    if not any("CJK" in f or f.endswith((" SC", " JP")) for f in sa.figure_fonts()):
        pytest.skip("no CJK font installed (apt-get install fonts-noto-cjk)")
    shown, replaced = sa.drawable_text("这个杯子 café")
    assert (shown, replaced) == ("这个杯子 café", 0)
    fig = plot_overlay(_overlay_map(prompt="哪个杯子", answer="左边的杯子"))
    assert "左边的杯子" in fig.axes[0].get_xlabel() and sa.PLACEHOLDER not in fig.axes[0].get_xlabel()
    fig.savefig(io.BytesIO(), format="png")
    assert not [w for w in recwarn if "Glyph" in str(w.message)]
