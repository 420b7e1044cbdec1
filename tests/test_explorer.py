"""The explorer's filtering and navigation, as plain Python state (no browser, no widgets)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from vlamb_nb.errors import ImageError, SettingError
from vlamb_nb.interactive.explorer import MISSING, Explorer, ExplorerState, failure_type


def _frame():
    return pd.DataFrame({
        "item_id": [f"i{k}" for k in range(8)],
        "setting": ["direct", "cot"] * 4,
        "language": ["en", "en", "zh", "zh", "en", None, "zh", "en"],
        "category": ["a", "b", "a", "b", "a", "b", "a", "b"],
        "prompt": [f"question {k}" for k in range(8)],
        "text": ["(A)", "(B)", "", "garbage", "(C)", "(A)", "(B)", "(D)"],
        "letter": ["A", "B", None, None, "C", "A", "B", "D"],
        "gold": ["A", "A", "B", "B", "C", "C", "B", "B"],
        "valid": [True, True, False, False, True, True, True, True],
        "parse_error": [None, None, "generation_failed", "no_letter", None, None, None, None],
        "error": [None, None, "RuntimeError: boom", None, None, None, None, None],
        "correct": [True, False, False, False, True, False, True, False],
        "gt_box": [[1, 2, 30, 40]] * 8,
        "pred_xyxy": [[[0, 0, 5, 5]], None] * 4,
        "image": [None] * 8,
    })


def test_failure_types_are_derived_per_row():
    st = ExplorerState(_frame())
    assert st.frame["failure_type"].tolist() == ["correct", "wrong", "generation_failed", "unparsed: no_letter",
                                                 "correct", "wrong", "correct", "wrong"]
    assert failure_type({"correct": None}) == "unscored"
    assert failure_type({"failure": "refusal", "correct": False}) == "refusal"


def test_filters_combine_and_clear():
    st = ExplorerState(_frame())
    assert set(st.filter_columns) == {"setting", "correct", "failure", "language", "category"}
    assert st.options("language") == [MISSING, "en", "zh"]
    assert st.set_filter("setting", "direct") == 4
    assert st.set_filter("correct", [True]) == 3  # i0, i4, i6
    assert st.view["item_id"].tolist() == ["i0", "i4", "i6"]
    assert st.set_filter("language", ["zh"]) == 1
    assert st.set_filter("language", None) == 3
    assert st.set_filter("failure", ["wrong", "unparsed: no_letter"]) == 0
    assert st.current() is None and st.details()["empty"]
    for name in ("setting", "correct", "failure"):  # what the selectors do when set back to "any"
        st.set_filter(name, None)
    assert len(st) == 8
    assert st.set_filter("language", [MISSING]) == 1 and st.current()["item_id"] == "i5"
    with pytest.raises(SettingError, match="unknown filter"):
        st.set_filter("colour", "red")


def test_navigation_wraps_and_stays_on_the_item_when_filters_change():
    st = ExplorerState(_frame())
    assert st.next() == 1 and st.next(3) == 4 and st.current()["item_id"] == "i4"
    assert st.prev(5) == 7  # wraps backwards
    assert st.jump_to_id("i4").ok
    st.set_filter("setting", ["direct"])  # i4 survives: stay on it
    assert st.current()["item_id"] == "i4" and st.position == 2
    st.set_filter("setting", ["cot"])  # i4 filtered out: first match
    assert st.current()["item_id"] == "i1" and st.position == 0
    with pytest.raises(SettingError):
        st.goto(10)
    jump = st.jump_to_id("i4")
    assert not jump.ok and st.current()["item_id"] == "i1"  # refused, the view stays where it was


def test_details_and_counts_for_the_current_item():
    st = ExplorerState(_frame())
    st.set_filter("setting", "cot")
    assert st.jump_to_id("i3").ok
    d = st.details()
    assert d["prompt"] == "question 3" and d["raw"] == "garbage" and d["parsed"] is None and d["gold"] == "B"
    assert d["failure_type"] == "unparsed: no_letter" and d["correct"] is False
    assert st.box_columns == ["gt_box", "pred_xyxy"]
    assert d["boxes"] == {"gt_box": [1, 2, 30, 40]}  # no predicted box for this item
    assert d["filters"]["language"] == "zh" and (d["position"], d["n"]) == (1, 4)
    c = st.counts()
    assert c["n"] == 4 and c["of"] == 8 and c["accuracy"] == pytest.approx(0.0)
    with pytest.raises(ImageError, match="no image"):
        st.image()


def test_images_load_relative_to_a_root_and_bad_paths_are_refused(tmp_path):
    from PIL import Image

    Image.new("RGB", (20, 10), "red").save(tmp_path / "a.png")
    frame = _frame().assign(image=["a.png", "../outside.png"] + ["missing.png"] * 6)
    st = ExplorerState(frame, image_root=tmp_path)
    assert st.image().size == (20, 10)
    st.next()
    with pytest.raises(ImageError, match="unsafe"):
        st.image()
    st.next()
    with pytest.raises(ImageError, match="not found"):
        st.image()


def test_explicit_filters_and_bad_input():
    st = ExplorerState(_frame(), filters=["category"])
    assert list(st.filter_columns) == ["category"]
    with pytest.raises(SettingError):
        ExplorerState(_frame(), filters=["nope"])
    with pytest.raises(SettingError):
        ExplorerState([1, 2, 3])
    with pytest.raises(SettingError, match="image column"):
        ExplorerState(_frame(), image_column="picture")


def test_widget_is_built_only_when_asked_and_follows_the_state():
    ex = Explorer(_frame())
    assert ex._widget is None  # nothing built at construction
    box = ex.widget()
    selectors = box.children[0].children
    assert [s.description for s in selectors] == list(ex.state.filter_columns)
    setting = next(s for s in selectors if s.description == "setting")
    setting.value = ("cot",)
    assert len(ex.state) == 4
    prev_b, next_b, sal_b, counter = box.children[1].children
    next_b.click()
    assert ex.state.position == 1 and counter.value.startswith("<b>2 / 4</b>")
    assert sal_b.disabled  # no model given
    with pytest.raises(SettingError, match="saliency needs"):
        ex.saliency()


def test_numpy_bool_and_list_values_are_filterable():
    frame = _frame().assign(correct=np.array([True, False] * 4), tags=[["x"], ["y"]] * 4)
    st = ExplorerState(frame)
    assert st.set_filter("correct", [np.True_]) == 4
    assert st.set_filter("tags", ["['x']"]) == 4


def test_item_columns_are_joined_and_items_are_drawn(tmp_path):
    from PIL import Image

    Image.new("RGB", (40, 20), "blue").save(tmp_path / "x.png")
    preds = _frame().drop(columns=["image", "gt_box", "pred_xyxy"])
    items = pd.DataFrame({"id": [f"i{k}" for k in range(8)], "image": ["x.png"] * 8,
                          "person_bbox": [[[0, 0, 80, 40], [10, 10, 20, 20]]] * 8,
                          "img_size": [{"width": 80.0, "height": 40.0}] * 8})
    ex = Explorer(preds, items=items, image_root=tmp_path)
    d = ex.state.details()
    assert d["image"] == "x.png" and d["box_size"] == (80.0, 40.0)
    assert list(d["boxes"]) == ["person_bbox"]  # a list of boxes (person tags) is drawable
    fig = ex._figure(ex.state.image(), d["boxes"], d["box_size"])
    (ax,) = fig.axes
    assert len(ax.patches) == 2 and ax.patches[0].get_width() == pytest.approx(40.0)  # scaled 80 -> 40 px
    page = ex.item_html()  # renders without a browser: fields escaped, image inlined
    assert "<img src='data:image/png;base64," in page and f">{d['id']}</td>" in page


def test_widget_view_is_plain_html_and_follows_navigation(tmp_path):
    """No Output widget (batch runs under nbclient must not wait on captured output); buttons update the view."""
    import ipywidgets as w
    from PIL import Image

    Image.new("RGB", (40, 20), "blue").save(tmp_path / "x.png")
    preds = _frame().drop(columns=["image", "gt_box", "pred_xyxy"])
    items = pd.DataFrame({"id": [f"i{k}" for k in range(8)], "image": ["x.png"] * 8})
    ex = Explorer(preds, items=items, image_root=tmp_path)
    box = ex.widget()
    kids = [c for row in box.children for c in (row.children if isinstance(row, w.Box) else [row])]
    assert not any(isinstance(c, w.Output) for c in kids)
    view = box.children[-1]
    first = view.value
    next_b = next(c for c in kids if isinstance(c, w.Button) and "next" in c.description)
    next_b.click()
    assert view.value != first and f">{ex.state.details()['id']}</td>" in view.value
    with pytest.raises(SettingError, match="'id' column"):
        ExplorerState(preds, items=items.rename(columns={"id": "key"}))


def test_vflute_scored_predictions_show_the_parsed_label_and_filter_by_dataset(tmp_path):
    """V-FLUTE's columns (label_text, dataset_name) are found: the parsed answer and a category filter."""
    from vlamb_nb import get_benchmark
    from vlamb_nb.models import ScriptedModel

    bench = get_benchmark("vflute")
    items = bench.load(bench.make_sample(tmp_path, n=8, seed=0))
    model = ScriptedModel(lambda req: "The image shows a thing.\nLABEL: contradiction")
    scored = bench.evaluate(model, items, "zero_shot", store=tmp_path / "s.jsonl", progress=False, scorer="none")
    st = ExplorerState(scored, image_root=items["image_root"][0])
    d = st.details()
    assert d["parsed"] == "contradiction" and d["gold"] == items["label"][0]
    assert st.filter_columns["category"] == "dataset_name"
    n = st.set_filter("category", "HAIVMet")
    assert n == int((items["dataset_name"] == "HAIVMet").sum()) > 0
    assert st.image().size[0] > 0


def test_refadv_scored_rows_show_the_gold_and_predicted_boxes(shared_data):
    """Ref-Adv keeps its boxes in gt_xyxy / pred_xyxy: the explorer shows them instead of None."""
    from vlamb_nb import get_benchmark
    from vlamb_nb.models import ScriptedModel

    bench = get_benchmark("refadv")
    items = bench.load(shared_data / "refadv" / "demo").head(3)
    scored = bench.evaluate(ScriptedModel(lambda r: '[{"bbox_2d": [10, 20, 110, 220]}]'), items, "direct",
                       progress=False)
    d = ExplorerState(scored).details()
    assert d["gold"] not in (None, MISSING) and list(d["gold"]) == list(items["gt_xyxy"].iloc[0])
    assert d["parsed"] not in (None, MISSING)


def test_jump_to_id_moves_or_says_why_not_and_leaves_the_state_alone():
    st = ExplorerState(_frame())
    st.next(2)
    jump = st.jump_to_id(" i5 ")  # pasted ids often carry spaces
    assert jump.ok and st.current()["item_id"] == "i5" and jump.message == "item 'i5': 6 / 8"
    for bad in ("nope", "", None):
        jump = st.jump_to_id(bad)
        assert not jump.ok and st.current()["item_id"] == "i5"
    assert "no item with id 'nope'" in st.jump_to_id("nope").message
    assert st.jump_to_id("").message == "type an item id"
    st.set_filter("setting", "direct")  # i5 is a cot item: filtered out, first match
    before = (st.position, st.current()["item_id"], len(st))
    jump = st.jump_to_id("i3")
    assert not jump.ok and "hidden by the current filters (setting)" in jump.message
    assert (st.position, st.current()["item_id"], len(st)) == before
    assert st.jump_to_id("i4").ok and st.position == 2
    no_ids = ExplorerState(_frame().drop(columns=["item_id"]))
    assert not no_ids.jump_to_id("i1").ok and "no id column" in no_ids.jump_to_id("i1").message


def test_slider_spans_the_filtered_items_and_single_value_filters_are_not_offered():
    frame = _frame().assign(setting="vlm")  # one setting only: a selector for it would do nothing
    st = ExplorerState(frame)
    assert "setting" in st.filter_columns and "setting" not in st.shown_filters()
    assert st.fixed_filters() == {"setting": "vlm"}
    assert st.slider() == {"min": 1, "max": 8, "value": 1, "disabled": False}
    st.set_filter("category", "a")
    st.goto(3)
    assert st.slider() == {"min": 1, "max": 4, "value": 4, "disabled": False}
    st.set_filter("language", "zh")  # i2, i6
    assert st.slider()["max"] == 2
    st.set_filter("correct", [True])  # i6 only: nothing to slide over
    assert st.slider() == {"min": 1, "max": 1, "value": 1, "disabled": True}
    st.set_filter("correct", [None])
    assert len(st) == 0 and st.slider()["disabled"]


def test_widget_slider_and_go_to_id_drive_the_state():
    import ipywidgets as w

    ex = Explorer(_frame().assign(setting="vlm"))
    box = ex.widget()
    selectors = box.children[0].children
    assert "setting" not in [s.description for s in selectors]  # hidden, and named in a note instead
    assert "setting = vlm" in box.children[3].value
    slider, id_box, go_b, message = box.children[2].children
    assert isinstance(slider, w.IntSlider) and (slider.min, slider.max, slider.value) == (1, 8, 1)
    slider.value = 5
    assert ex.state.current()["item_id"] == "i4" and f">{'i4'}</td>" in box.children[-1].value
    id_box.value = "i6"
    assert ex.state.current()["item_id"] == "i6" and slider.value == 7 and "7 / 8" in message.value
    id_box.value = "i99"
    go_b.click()
    assert ex.state.current()["item_id"] == "i6" and slider.value == 7 and "no item with id" in message.value
    category = next(s for s in selectors if s.description == "category")
    category.value = ("b",)  # i6 is category a: the view moves to i1, the slider shrinks to 4 items
    assert (slider.max, slider.value) == (4, 1) and ex.state.current()["item_id"] == "i1"
    slider.value = 4
    assert ex.state.current()["item_id"] == "i7"


def test_explorer_tabs_hold_one_explorer_per_benchmark_built_when_first_shown():
    from vlamb_nb.interactive.explorer import explorer_tabs

    a, b = Explorer(_frame()), Explorer(_frame().iloc[:3])
    tabs = explorer_tabs({"refadv": a, "vague": b})
    assert tabs.titles == ("refadv (8)", "vague (3)")
    assert tabs.children[0].children == (a.widget(),) and tabs.children[1].children == ()
    assert b._widget is None  # nothing built for a tab nobody opened
    tabs.selected_index = 1
    assert tabs.children[1].children == (b.widget(),)
    with pytest.raises(SettingError):
        explorer_tabs({})


def test_benchmark_slices_are_filters_when_the_items_carry_them():
    """Ref-Adv's negation and distractor count, VAGUE's subset: joined from the items and offered as filters."""
    frame = _frame().drop(columns=["category"])
    items = pd.DataFrame({"id": [f"i{k}" for k in range(8)], "use_negation": [k % 2 == 0 for k in range(8)],
                          "distractor_count": [k % 3 for k in range(8)], "subset": ["VCR"] * 5 + ["Ego4D"] * 3})
    st = ExplorerState(frame, items=items)
    assert {"negation", "distractors", "subset"} <= set(st.shown_filters())
    assert st.set_filter("subset", "Ego4D") == 3
    assert st.set_filter("negation", True) == 1  # i6 is the only Ego4D item with a negation
    assert st.current()["item_id"] == "i6"
