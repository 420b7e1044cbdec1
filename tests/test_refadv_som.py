"""Ref-Adv's set-of-mark protocol (Table 6's GPT-4o and Claude rows) through the real run path, offline: numbered
marks drawn over region proposals, the model answers a mark, the mark maps back to a box that is scored as any
box; proposals from the release's own boxes, COCO instances or the tiny random Grounding DINO; Semantic-SAM said
in one line where it is not installed."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from vlamb_nb import get_benchmark
from vlamb_nb.benchmarks.refadv import som
from vlamb_nb.benchmarks.refadv.parse import parse_answer
from vlamb_nb.boxes import iou
from vlamb_nb.errors import NotAvailableError, SettingError
from vlamb_nb.models import ScriptedModel


@pytest.fixture(scope="module")
def items(tmp_path_factory):
    """A generated Ref-Adv-s sample where every image is asked about twice: the target and another object on the
    same image (as Ref-Adv-s asks several expressions per image), so each image has two release boxes."""
    bench = get_benchmark("refadv")
    base = bench.load(bench.make_sample(tmp_path_factory.mktemp("refadv_som"), n=4, seed=5))
    other = base.copy()
    for i, r in other.iterrows():
        x1, y1, x2, y2 = r["gt_xyxy"]
        w = float(r["width"])
        nx1 = 2.0 if x1 > w / 2 else w - (x2 - x1) - 2  # a same-size box on the other side of the image
        other.at[i, "gt_xyxy"] = [nx1, y1, nx1 + (x2 - x1), y2]
    other["id"] = other["id"].astype(str) + "-other"
    other["row_idx"] = other["row_idx"] + 100
    return pd.concat([base, other], ignore_index=True)


def _right_mark(items):
    """A scripted model that answers the mark whose box is the target's (it reads the marks' boxes the request
    carries and the gold box, as a perfect model would read the image)."""
    gold = {str(i): b for i, b in zip(items["id"], items["gt_xyxy"], strict=True)}

    def respond(req):
        boxes = req.meta["som_boxes"]
        best = int(np.argmax([iou(b, gold[req.meta["item_id"]]) for b in boxes])) + 1
        return f"The object is the one on the side.\nMark: {best}" if "Think first" in req.messages[0]["content"][0][
            "text"] else str(best)

    return respond


def test_release_boxes_mark_every_object_of_the_image_and_the_right_mark_scores_a_hit(items, tmp_path):
    bench = get_benchmark("refadv")
    seen = []
    respond = _right_mark(items)
    model = ScriptedModel(lambda r: seen.append(r) or respond(r))
    store = tmp_path / "som.jsonl"
    scored = bench.evaluate(model, items, "direct", store=store, proposals="release", progress=False)
    assert len(seen) == len(items)  # one turn: no JSON repair turn under SoM
    assert all(len(r.meta["som_boxes"]) == 2 for r in seen) and {r.meta["proposals"] for r in seen} == {"release boxes"}
    assert scored["hit"].all() and (scored["iou"] > 0.99).all() and scored["mark"].between(1, 2).all()
    # the marks are in reading order, so the target is mark 1 on some images and mark 2 on others
    assert set(scored["mark"]) == {1, 2}
    devs = {d["what"] if isinstance(d, dict) else d.what for d in scored.attrs["deviations"]}
    assert {"set-of-mark prompt and marks", "SoM proposals"} <= devs
    # the stored run scores again with nothing but the store and the items: the boxes travel in the meta
    again = bench.score_store(store, items)
    pd.testing.assert_series_equal(again["iou"].reset_index(drop=True), scored["iou"].reset_index(drop=True))
    assert (again["mark"].to_numpy() == scored["mark"].to_numpy()).all()
    # the run record beside the store names the set-of-mark style and gives every declared Acc@t at 100
    from vlamb_nb.record import RunRecord

    rec = RunRecord.read(store)
    whole = {m.metric: m.value for m in rec.metrics if m.slice == "overall"}
    assert whole == {"Acc@0.5": 100.0, "Acc@0.75": 100.0, "Acc@0.9": 100.0}


def test_the_wrong_mark_is_the_other_objects_box_and_a_number_that_is_no_mark_is_a_miss(items):
    bench = get_benchmark("refadv")
    right = _right_mark(items)
    wrong = bench.evaluate(ScriptedModel(lambda r: str(3 - int(right(r)))), items, "direct", proposals="release",
                           progress=False)
    assert not wrong["hit"].any() and (wrong["parse_error"] == "").all()
    for _, row in wrong.iterrows():  # the box scored is exactly the other mark's
        assert row["pred_xyxy"] == row["som_boxes"][int(row["mark"]) - 1]
    none = bench.evaluate(ScriptedModel(lambda r: "Mark: 7"), items, "cot", proposals="release", progress=False)
    assert (none["parse_error"] == som.NO_MARK_FOUND).all() and (none["iou"] == 0).all() and not none["valid"].any()
    cot = bench.evaluate(ScriptedModel(right), items, "cot", proposals="release", progress=False)
    assert cot["hit"].all()  # "Mark: N" after the reasoning's other numbers


def test_the_marks_are_drawn_on_the_image_the_model_is_shown(items):
    from PIL import Image

    from vlamb_nb.images import load_image

    bench = get_benchmark("refadv")
    [plain] = bench.requests(items.head(1), "direct")
    [marked] = bench.requests(items.head(1), "direct", proposals="release")
    assert marked.images[0] != plain.images[0] and marked.meta["som_boxes"]
    img = Image.open(__import__("io").BytesIO(marked.images[0])).convert("RGB")
    assert img.size == load_image(items["image"].iloc[0]).size  # the boxes stay in the image's coordinates
    b = marked.meta["som_boxes"][0]
    x, y = int(b[0]) + 1, int((b[1] + b[3]) / 2)  # on the first mark's outline: its colour
    assert np.abs(np.array(img.getpixel((x, y))) - np.array(som.PALETTE[0])).max() < 60
    assert "numbered marks" in marked.messages[0]["content"][0]["text"]


def test_coco_instances_and_the_tiny_detector_are_proposal_sources(items, tmp_path):
    bench = get_benchmark("refadv")
    first = items.iloc[0]
    coco = {"images": [{"id": 1, "file_name": first["file_name"], "width": int(first["width"]),
                        "height": int(first["height"])}],
            "annotations": [{"id": k, "image_id": 1, "category_id": 1, "bbox": bb} for k, bb in enumerate(
                ([first["gt_xyxy"][0], first["gt_xyxy"][1], first["gt_xyxy"][2] - first["gt_xyxy"][0],
                  first["gt_xyxy"][3] - first["gt_xyxy"][1]], [1, 1, 10, 10], [20, 20, 15, 15]))]}
    path = tmp_path / "instances.json"
    path.write_text(json.dumps(coco), encoding="utf-8")
    src = som.proposal_source(f"coco:{path}")
    assert len(src.propose(first)) == 3 and "instances.json" in src.name
    scored = bench.evaluate(ScriptedModel(_right_mark(items)), items.head(1), "direct", proposals=src,
                            progress=False)
    assert scored["hit"].all() and scored["proposals"].iloc[0] == src.name
    tiny = som.proposal_source("tiny")
    assert isinstance(tiny, som.DetectorBoxes) and "tiny random grounding-dino" in tiny.name
    boxes = tiny.propose(first)
    assert all(b[2] > b[0] and b[3] > b[1] for b in boxes) and len(boxes) <= tiny.max_marks
    run = bench.evaluate(ScriptedModel(lambda r: "1"), items.head(2), "direct", proposals=tiny, progress=False)
    assert len(run) == 2 and set(run["proposals"]) == {tiny.name}


def test_the_paper_profile_takes_semantic_sam_where_installed_else_grounding_dino_and_says_so(items):
    src = som.proposal_source(None, profile="paper")
    if som.semantic_sam_installed():
        assert isinstance(src, som.SemanticSAMBoxes)
    else:
        assert isinstance(src, som.DetectorBoxes) and "grounding-dino" in src.name
        with pytest.raises(NotAvailableError, match="Semantic-SAM is not installed") as e:
            som.proposal_source("semantic-sam").propose(items.iloc[0])
        assert "\n" not in str(e.value)
    assert isinstance(som.proposal_source(None, items, profile="offline"), som.ReleaseBoxes)
    with pytest.raises(SettingError, match="unknown proposal source"):
        som.proposal_source("sam2")
    with pytest.raises(SettingError, match="style='internvl'"):
        get_benchmark("refadv").evaluate(ScriptedModel(lambda r: "1"), items, "direct", proposals="release",
                                         style="internvl", progress=False)


@pytest.mark.parametrize("text,mark,error", [
    ("2", 2, ""), ("Mark: 1", 1, ""), ("I see marks 1 and 2. The answer is 2.", 2, ""),
    ("Among 3 people the left one.\nMark: 1", 1, ""), ("[2]", 2, ""), ("", None, "empty_response"),
    ("none of them", None, som.NO_MARK_FOUND), ("Mark: 5", None, som.NO_MARK_FOUND), ("2.5", None, som.NO_MARK_FOUND)])
def test_a_mark_is_read_from_the_answer_and_mapped_back_to_its_box(text, mark, error):
    boxes = [[0, 0, 10, 10], [20, 20, 40, 40]]
    got = parse_answer(text, {"parser": "som", "som_boxes": boxes, "width": 50, "height": 50})
    assert got["mark"] == mark and got["parse_error"] == error
    assert got["pred_xyxy"] == (boxes[mark - 1] if mark else [])


def test_distinct_regions_keep_reading_order_and_drop_repeats():
    kept = som.distinct_regions([[50, 50, 60, 60], [0, 0, 10, 10], [0.2, 0, 10, 10.1], [5, 5, 5, 9]])
    assert kept == [[0.0, 0.0, 10.0, 10.0], [50.0, 50.0, 60.0, 60.0]]


def test_the_notebook_table_sets_our_som_runs_beside_table_6s_som_rows(items):
    from vlamb_nb.benchmarks.refadv import report

    bench = get_benchmark("refadv")
    runs = {s: bench.evaluate(ScriptedModel(_right_mark(items) if s == "direct" else (lambda r: "1")), items, s,
                              proposals="release", progress=False) for s in ("direct", "cot")}
    table = report.som_table(runs, n_resamples=50).set_index("row")  # each row named by the model that answered
    assert table.loc["scripted | direct", "Acc@0.5"] == 100.0
    assert table.loc["scripted | direct", "proposals"] == "release boxes"
    assert table.loc["scripted | direct", "proposal recall @0.5"] == 100.0  # the targets are among the release boxes
    assert table.loc["scripted | direct", "marks per item"] == 2.0
    assert table.loc["scripted | cot", "Acc@0.5"] == 50.0 and table.loc["scripted | cot", "picked the best mark %"] == 50.0
    assert table.loc["paper | GPT-4o (CoT)", "Acc@0.5"] == 63.7  # Table 6, the paper's SoM rows as data
    assert table.loc["paper | Claude-3.5 Sonnet (Direct)", "Acc@0.75"] > 0
