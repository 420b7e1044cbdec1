"""Ref-Adv: official parser (table of raw replies), repair turn, box formats and the style each model gets,
loaders, metrics, audit."""

from __future__ import annotations

import json
import re

import fixtures_stored as F
import pandas as pd
import pytest

from vlamb_nb import boxes, get_benchmark
from vlamb_nb.benchmarks.refadv import data
from vlamb_nb.benchmarks.refadv import report as analysis
from vlamb_nb.benchmarks.refadv import score as metrics
from vlamb_nb.benchmarks.refadv.benchmark import RefAdv
from vlamb_nb.benchmarks.refadv.data import parse_distractor_count
from vlamb_nb.benchmarks.refadv.parse import (
    PRIORITY_KEYS,
    collect_keyed_boxes,
    parse_bracket_boxes,
    parse_json_boxes,
    style_for,
)
from vlamb_nb.benchmarks.refadv.prompts import (
    FOLLOWUP_TEXT,
    FOLLOWUP_TEXT_NEWLINES,
    PROMPTS,
    bag_of_words,
    followup_text,
    prompt_text,
)
from vlamb_nb.errors import DataError, SettingError
from vlamb_nb.models import ModelInfo, ScriptedModel

W, H = 640, 480

# (reply, expected first box in absolute xyxy for abs_xyxy, expected error)
PARSER_TABLE = [
    ('```json\n{"bboxes": [[10, 20, 110, 220]]}\n```', [10, 20, 110, 220], ""),
    ('[{"bbox_2d": [5, 6, 50, 60], "label": "cup"}]', [5, 6, 50, 60], ""),
    ('[[1, 2, 3, 4], [5, 6, 7, 8]]', [1, 2, 3, 4], ""),
    # fenced blocks are tried last to first; the last loadable one wins
    ('```json\n{"bbox": [1, 1, 2, 2]}\n```\ntext\n```json\n{"bbox": [3, 3, 9, 9]}\n```', [3, 3, 9, 9], ""),
    ('```json\n{"bbox": [1, 1, 2, 2]}\n```\n```json\n{broken\n```', [1, 1, 2, 2], ""),
    # thinking text before an unfenced JSON value that ends the reply
    ('Let me think. The [left] one is a cup {maybe}. Answer: {"boxes": [[30, 40, 130, 140]]}', [30, 40, 130, 140], ""),
    # unfenced JSON that does not end the reply is not accepted
    ('{"bbox": [1, 2, 3, 4]} and some trailing words', None, "no_bbox_found"),
    # corners sorted and clipped to the image
    ('{"bbox": [700, 500, -10, 100]}', [0, 100, 640, 480], ""),
    # duplicates removed (first kept), nested dicts recurse
    ('{"results": {"objects": [{"coordinates": [9, 9, 19, 19]}, {"coordinates": [9, 9, 19, 19]}]}}', [9, 9, 19, 19], ""),
    ("", None, "empty_response"),
    ("   \n", None, "empty_response"),
    ("I cannot see any such object.", None, "no_bbox_found"),
    ('```json\n{"label": "cup"}\n```', None, "no_bbox_found"),
    ('{"bboxes": [[1, 2, 3]]}', None, "no_bbox_found"),
]


@pytest.mark.parametrize("reply,first,error", PARSER_TABLE)
def test_official_parser_table(reply, first, error):
    found, err = parse_json_boxes(reply, W, H, "abs_xyxy")
    assert err == error
    assert (found[0] if found else None) == first


def collect_boxes(obj):
    """The boxes in the official order (the official ``_collect_boxes``), without the keys they came under."""
    return [box for box, _ in collect_keyed_boxes(obj)]


@pytest.mark.parametrize("key", PRIORITY_KEYS)
def test_priority_key_beats_earlier_other_keys(key):
    obj = {"zzz_other": [1, 1, 2, 2], key: [[10, 10, 20, 20]]}
    assert collect_boxes(obj)[0] == [10.0, 10.0, 20.0, 20.0]


def test_priority_order_between_priority_keys():
    obj = {"coordinates": [7, 7, 8, 8], "bbox_2d": [5, 5, 6, 6], "bboxes": [[1, 1, 2, 2]]}
    assert collect_boxes(obj) == [[1, 1, 2, 2], [5, 5, 6, 6], [7, 7, 8, 8]]


def test_collect_boxes_caps_at_100():
    assert len(collect_boxes([[i, i, i + 1, i + 1] for i in range(150)])) == 100


def test_normalised_formats_convert_to_absolute():
    found, _ = parse_json_boxes('{"bbox": [500, 500, 1000, 1000]}', W, H, "norm_1000_xyxy")
    assert found[0] == [320.0, 240.0, 640.0, 480.0]
    found, _ = parse_json_boxes('{"bbox": [0.25, 0.5, 0.5, 1.0]}', W, H, "norm_1_xyxy")
    assert found[0] == [160.0, 240.0, 320.0, 480.0]


def test_family_parsers():
    assert parse_bracket_boxes("<ref>cup</ref><box>[[100, 200, 300, 400]]</box>", 1000, 1000, "norm_1000_xyxy")[0][0] == \
        [100.0, 200.0, 300.0, 400.0]
    assert parse_bracket_boxes("<|begin_of_box|>[500,500,1000,1000]<|end_of_box|>", W, H, "norm_1000_xyxy")[0][0] == \
        [320.0, 240.0, 640.0, 480.0]
    assert parse_bracket_boxes("no box", W, H, "norm_1000_xyxy") == ([], "no_bbox_found")


@pytest.mark.parametrize("value,expected", [("5", 5), (5, 5), ([1, 2, 3], 3), ('[4, 5]', 2), (None, 0), ("", 0),
                                            ("a, b and c 7", 1), (-3, 0)])
def test_distractor_count_forms(value, expected):
    assert parse_distractor_count(value) == expected


def test_prompts_are_official_and_text_comes_first():
    st = style_for(None)
    assert prompt_text("the red cup", st, "direct") == (
        '<image>\nLocate every object that matches the description "the red cup" in the image. '
        "Report bbox coordinates in JSON format.")
    assert prompt_text("x", st, "cot").endswith("Think first, then answer.\nFinally report bbox coordinates in JSON format.")
    assert "<ref>x</ref>" in prompt_text("x", style_for(None, "internvl"))
    assert prompt_text("x", style_for(None, "cogvlm")).startswith("Where is x?")
    with pytest.raises(SettingError):
        prompt_text("x", style_for(None, "cogvlm"), "cot")
    assert not prompt_text("x", style_for(ModelInfo("m", family="llava")), "direct").startswith("<image>")
    assert style_for(ModelInfo("m", family="qwen2_5_vl")).resized_pixels
    assert set(PROMPTS) == {"direct", "cot"}


def test_bag_of_words_is_seeded_permutation():
    e = "a red ball with yellow stripes near the left wall"
    s0, s0b, s1 = bag_of_words(e, 0, "7"), bag_of_words(e, 0, "7"), bag_of_words(e, 1, "7")
    assert s0 == s0b and sorted(s0.split()) == sorted(e.split())
    assert s0 != s1 or s0 != e


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    bench = get_benchmark("refadv")
    path = bench.make_sample(tmp_path_factory.mktemp("refadv"), n=6, seed=3)
    return bench, bench.load(path), path


def test_sample_is_hub_layout_and_loads(sample):
    import pyarrow.parquet as pq

    bench, items, path = sample
    schema = pq.read_schema(path)
    assert schema.field("image").type.names == ["bytes", "path"]
    assert len(items) == 6 and items["distractor_count"].min() >= 2
    assert bench.data_stats(items)["instances"] == 6


def test_repair_turn_is_a_second_chat_turn(sample, tmp_path):
    bench, items, path = sample
    seen = []

    def respond(req):
        seen.append(req)
        item = items.set_index("id").loc[req.meta["item_id"]]
        if len(req.messages) == 1:
            return "I think it is the one on the left."  # no JSON: triggers the repair turn
        x1, y1, x2, y2 = item["gt_xyxy"]
        return f'```json\n{{"bboxes": [[{x1}, {y1}, {x2}, {y2}]]}}\n```'

    scored = bench.evaluate(ScriptedModel(respond), items, "direct", store=tmp_path / "s.jsonl", progress=False)
    assert scored["retry_used"].all() and scored["hit"].all()
    repair = [r for r in seen if len(r.messages) == 3]
    assert len(repair) == len(items)
    assert repair[0].messages[1]["role"] == "assistant"
    assert repair[0].messages[2]["content"][0]["text"] == FOLLOWUP_TEXT
    assert [p["type"] for p in repair[0].messages[0]["content"]] == ["text", "image"]
    # the store re-scores to the same numbers
    again = bench.score_store(tmp_path / "s.jsonl", items, style="official")
    assert again["hit"].all() and again["retry_used"].all()


def test_garbage_and_backend_errors_are_counted(sample):
    bench, items, _ = sample

    def respond(req):
        if req.meta["item_id"] == items["id"].iloc[0]:
            raise RuntimeError("server down")
        return "\x00garbage ]]{{"

    scored = bench.evaluate(ScriptedModel(respond), items, "cot", progress=False)
    assert len(scored) == len(items)
    assert (scored["iou"] == 0).all()
    assert scored["parse_error"].iloc[0] == "backend_error" and not scored["retry_used"].iloc[0]
    assert set(scored["parse_error"].iloc[1:]) == {"no_bbox_found"}


def test_qwen25_resized_pixels_mapped_back():
    item = {"width": 640, "height": 480, "box_format": "abs_xyxy", "parser": "json", "resized_pixels": True,
            "processed_image_sizes": [(320, 240)]}
    out = RefAdv().parse('{"bbox_2d": [10, 20, 30, 40]}', item)
    assert out["pred_xyxy"] == [20.0, 40.0, 60.0, 80.0]


def test_unknown_setting_and_unsafe_demo_path(tmp_path):
    with pytest.raises(SettingError):
        RefAdv().check_setting("nope")
    (tmp_path / "images").mkdir()
    (tmp_path / "demo_samples.json").write_text(json.dumps([{"image": "x/0000.jpg", "caption": "c", "width": 5}]))
    with pytest.raises(DataError, match="row 1, field 'bbox'"):  # rows count from 1
        data.load_demo(tmp_path)


def test_refer_pickle_needs_opt_in_and_explodes_sentences(tmp_path):
    import pickle

    refs = [{"ref_id": 0, "ann_id": 11, "image_id": 1, "split": "testA", "category_id": 1,
             "sentences": [{"sent_id": 0, "sent": "man left"}, {"sent_id": 1, "sent": "man not right"}]}]
    inst = {"images": [{"id": 1, "file_name": "COCO_train2014_000000000001.jpg", "width": 100, "height": 80}],
            "annotations": [{"id": 11, "image_id": 1, "category_id": 1, "bbox": [10, 10, 20, 30]},
                            {"id": 12, "image_id": 1, "category_id": 1, "bbox": [50, 10, 20, 30]},
                            {"id": 13, "image_id": 1, "category_id": 2, "bbox": [0, 0, 5, 5]}]}
    (tmp_path / "refs(unc).p").write_bytes(pickle.dumps(refs))
    (tmp_path / "instances.json").write_text(json.dumps(inst))
    with pytest.raises(DataError, match="allow_pickle"):
        data.load_refcoco_refer(tmp_path)
    items = data.load_refcoco_refer(tmp_path, allow_pickle=True, splits=("testA",))
    assert len(items) == 2 and items["gt_xyxy"].iloc[0] == [10.0, 10.0, 30.0, 40.0]
    assert items["distractor_count"].tolist() == [1, 1] and items["use_negation"].tolist() == [False, True]


def test_lmms_parquet_loader(tmp_path):
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (64, 48)).save(buf, format="PNG")
    rec = {"question_id": "q1", "image": {"bytes": buf.getvalue(), "path": None}, "question": "",
           "answer": ["left dog", "left dog", "brown dog"], "segmentation": [0.0], "bbox": [1.0, 2.0, 10.0, 20.0],
           "iscrowd": 0, "file_name": "COCO_train2014_000000000009.jpg"}
    pq.write_table(pa.Table.from_pylist([rec]), tmp_path / "val.parquet")
    items = data.load_any(tmp_path / "val.parquet")
    assert len(items) == 2 and items["gt_xyxy"].iloc[0] == [1.0, 2.0, 11.0, 22.0] and items["width"].iloc[0] == 64


def test_metrics_thresholds_and_bins():
    sc = pd.DataFrame({"iou": [0.5, 0.49, 0.75, 0.9, 0.0], "parse_error": ["", "", "", "", "no_bbox_found"],
                       "distractor_count": [2, 3, 5, 8, 1], "use_negation": [True, False, False, False, True],
                       "human_authored": [True] * 5, "image_source": ["coco_val2017"] * 5})
    s = metrics.summary(sc)
    assert s["acc@0.5"] == pytest.approx(0.6) and s["acc@0.9"] == pytest.approx(0.2)
    assert s["2-3"] == pytest.approx(0.5) and s["n_>=7"] == 1 and s["parse_fail"] == 1 and s["near_miss"] == 1
    assert s["macc"] == pytest.approx(sum(metrics.acc_at(sc["iou"], t) for t in metrics.MACC_THRESHOLDS) / 10)
    row = metrics.report_row(sc, model="Qwen/X-Thinking", prompt="direct")
    assert row["Variant"] == "Thinking" and row["d(2-3)"] == "-10.0" and row["Model"] == "X-Thinking"


def test_box_conversions_roundtrip():
    b = (10.0, 20.0, 110.0, 220.0)
    for fmt in boxes.FORMATS:
        assert boxes.to_abs_xyxy(boxes.from_abs_xyxy(b, W, H, fmt), W, H, fmt) == pytest.approx(b)


def test_reference_audit_flags_known_inconsistencies():
    findings = {(f.table, f.row, f.column): f for f in get_benchmark("refadv").reference_check()}
    assert not findings[("Table 6", "LLaVA-OneVision-1.5-4B (CoT)", "Acc0.5 vs Neg/No-Neg")].ok
    assert findings[("Table 6", "GPT-4o (CoT)", "Acc0.5 vs Neg/No-Neg")].ok
    assert not findings[("Table 6", "Qwen2.5-VL-72B (CoT)", "mAcc")].ok
    assert not findings[("Table 3", "InternVL-3-14B", "RefCOCO+ Orig")].ok
    assert findings[("Table 2", "Qwen2.5-VL-72B", "RefCOCO Δ")].ok
    assert all(f.ok for k, f in findings.items() if k[0] == "Ref-Adv-s")
    assert not findings[("Table 9", "InternVL-3-7B (Direct)", "all cells")].ok


# -- the released files --------------------------------------------------------------------------------
def test_official_files_rescore_exactly(shared_data):
    folder = shared_data / "refadv" / "predictions"
    files = sorted(folder.glob("*_predictions.jsonl"))
    assert files
    for p in files:
        sc = metrics.read_official_predictions(p)
        check = metrics.check_official(sc)
        assert check["iou_mismatches"] == 0 and check["hit_mismatches"] == 0, p.name
        assert (sc["hit"] == sc["official_hit"]).all()


def test_official_table_matches_published(shared_data):
    rep = analysis.official_reproduction(shared_data / "refadv" / "predictions", n_resamples=200)
    cmp = rep["comparison"]
    assert len(cmp) >= 9 and cmp["match"].all(), cmp[~cmp["match"]]


def test_the_bases_paper_vs_ours_reproduces_ref_adv_s_from_the_released_runs_and_their_records(shared_data, tmp_path):
    """The base's step puts the declared Acc@0.5 (whole and by the slices the paper prints), Acc@0.75 and Acc@0.9
    beside the paper's
    row for the model, per setting: on Qwen2.5-VL-72B's released runs every printed cell is matched and inside
    its interval; slices the table does not print say so; a run record gives the same cells as its frame."""
    from vlamb_nb.errors import NotAvailableError
    from vlamb_nb.record import RunRecord

    bench = get_benchmark("refadv")
    files = {s: shared_data / "refadv" / "predictions" / f"qwen25a72b_{s}_predictions.jsonl" for s in ("direct", "cot")}
    runs = {s: metrics.read_official_predictions(p) for s, p in files.items()}
    cmp = bench.paper_vs_ours(runs, "Qwen2.5-VL-72B-Instruct | {setting}", n_resamples=200)
    printed = cmp[cmp["paper"].notna()]
    assert len(printed) == 12 and printed["match"].all() and printed["paper_in_ci"].all()
    assert set(printed["column"]) == {"Acc@0.5", "Acc@0.75", "Acc@0.9", "2-3", "4-6", ">=7"}
    assert set(printed["row"]) == {"Qwen2.5-VL-72B-Instruct | direct", "Qwen2.5-VL-72B-Instruct | cot"}
    assert set(cmp.loc[cmp["paper"].isna(), "flag"]) == {"not in the paper"}  # Neg / No-Neg: not in Ref-Adv-s
    assert (bench.paper_vs_ours(runs, "Qwen2.5-VL-7B-Instruct | {setting}", n_resamples=0)
            .dropna(subset=["paper"])["match"].sum() == 0)  # another model's row: nothing matches by chance
    assert bench.paper_vs_ours(runs, "") is None

    bench.score_file(files["direct"], record=tmp_path / "direct.record.json")
    rec = bench.paper_vs_ours({"direct": RunRecord.read(tmp_path / "direct.record.json")},
                              "Qwen2.5-VL-72B-Instruct | {setting}", n_resamples=200)
    pd.testing.assert_frame_equal(rec, cmp[cmp["row"].str.endswith("direct")].reset_index(drop=True))
    with pytest.raises(NotAvailableError, match="no declared metric the paper prints has values"):
        bench.paper_vs_ours({"other": runs["direct"]}, "x")

def test_cli_score_official_file(shared_data, capsys):
    from vlamb_nb.cli import main

    p = shared_data / "refadv" / "predictions" / "qwen25a72b_direct_predictions.jsonl"
    assert main(["score", "refadv", "--predictions", str(p), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["metrics"]["Acc@0.5"] == pytest.approx(54.0, abs=0.05)
    assert not [n for n in out["notes"] if "disagrees" in n]  # our IoUs are the file's own


def test_score_prints_the_official_row_of_every_released_run(shared_data, capsys):
    """``vlamb-nb score refadv --predictions <official file>`` gives the official Ref-Adv-s row again: Acc@0.5,
    Acc@0.75 and Acc@0.9 (declared in METRICS) and the distractor bins, each the published cell at its one decimal
    (the view prints two); the text view prints the three accuracies."""
    from vlamb_nb import reference
    from vlamb_nb.cli import main

    ref = reference.load("refadv", table="Ref-Adv-s")
    checked = 0
    for p in sorted((shared_data / "refadv" / "predictions").glob("*_predictions.jsonl")):
        assert main(["score", "refadv", "--predictions", str(p), "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        row = f"{out['model'].split('/')[-1]} | {out['setting']}"
        published = ref[ref["row"] == row].set_index("column")["value_num"]
        assert len(published), row
        ours = {**out["metrics"], **{s["slice"]: s["value"] for s in out["by_slice"]
                                     if s["metric"] == "Acc@0.5" and s["slice"] in ("2-3", "4-6", ">=7")}}
        for col in ("Acc@0.5", "Acc@0.75", "Acc@0.9", "2-3", "4-6", ">=7"):
            assert ours[col] == pytest.approx(published[col], abs=0.055), (row, col)  # printed at 2 decimals
            checked += 1
    assert checked >= 30
    assert main(["score", "refadv", "--predictions", str(p)]) == 0
    text = capsys.readouterr().out
    assert all(re.search(rf"^{re.escape(m)}\s+\d", text, re.M) for m in ("Acc@0.5", "Acc@0.75", "Acc@0.9"))


def test_demo_loads_with_real_images(shared_data):
    from vlamb_nb.images import load_image

    items = data.load_demo(shared_data / "refadv" / "demo")
    assert len(items) == 31
    img = load_image(items["image"].iloc[0])
    assert img.size == (items["width"].iloc[0], items["height"].iloc[0])
    preds = metrics.read_official_predictions(shared_data / "refadv" / "predictions" / "qwen25a3b_direct_predictions.jsonl")
    joined = items.merge(preds, on="row_idx", suffixes=("", "_pred"))
    assert len(joined) == 31 and (joined["expression"] == joined["expression_pred"]).all()


# -- Gemini's [ymin, xmin, ymax, xmax] 0-1000 convention (a declared family format) --------------------
def test_gemini_yxyx_1000_format():
    from vlamb_nb.benchmarks.refadv.parse import BOX_FORMATS, to_abs

    assert "norm_1000_yxyx" in BOX_FORMATS
    found, err = parse_json_boxes('[{"box_2d": [500, 250, 1000, 500], "label": "cup"}]', W, H, "norm_1000_yxyx")
    assert err == "" and found == [[160.0, 240.0, 320.0, 480.0]]
    # the same numbers read as xyxy give a different box: the order matters
    assert parse_json_boxes('{"box_2d": [500, 250, 1000, 500]}', W, H, "norm_1000_xyxy")[0][0] == \
        [320.0, 120.0, 640.0, 240.0]
    assert list(to_abs([100, 900, 0, 1000], W, H, "norm_1000_yxyx")) == [576.0, 0.0, 640.0, 48.0]  # sorted
    with pytest.raises(SettingError, match="unknown box format"):
        to_abs([1, 2, 3, 4], W, H, "yxyx")
    with pytest.raises(SettingError, match="unknown box format"):
        RefAdv().parse('{"bbox": [1, 2, 3, 4]}', {"width": W, "height": H, "box_format": "abs_yxyx"})


def test_gemini_style_is_declared_and_chosen():
    from vlamb_nb.benchmarks.refadv.parse import GroundingStyle

    st = style_for(None, "gemini")
    assert st.box_format == "norm_1000_yxyx" and not prompt_text("x", st).startswith("<image>")
    assert style_for(ModelInfo("gemini-2.5-flash", backend="openai")).name == "gemini"
    assert style_for(ModelInfo("gpt-4o", backend="openai")).name == "official"
    with pytest.raises(SettingError, match="unknown box format"):
        GroundingStyle("mine", "abs_yxyx")
    devs = RefAdv().style_deviations(st, ModelInfo("gemini-2.5-flash", backend="openai"), 1024)
    assert any(d.what == "grounding style" and "ymin" in d.ours for d in devs)


def test_gemini_run_end_to_end(sample):
    bench, items, _ = sample
    by_id = items.set_index("id")

    def respond(req):  # answers the GT in Gemini's own convention
        item = by_id.loc[req.meta["item_id"]]
        x1, y1, x2, y2 = boxes.from_abs_xyxy(item["gt_xyxy"], item["width"], item["height"], "norm_1000_xyxy")
        return json.dumps([{"box_2d": [round(y1, 3), round(x1, 3), round(y2, 3), round(x2, 3)], "label": "box"}])

    gem = ScriptedModel(respond, model_id="gemini-2.5-flash")
    assert bench.evaluate(gem, items, "direct", style="gemini", progress=False)["hit"].all()
    assert not bench.evaluate(gem, items, "direct", style="official", progress=False)["hit"].all()


# -- descriptor deletion (Table 4) through a scripted text model --------------------------------------
EXTRACTS = {"0": RuntimeError("server down"), "1": "I am not sure.",
            "2": '```json\n["yellow", "rightmost", "striped"]\n```', "3": '["red", "number 4 from the left"]',
            "4": '["green"]', "5": '["red"]'}


def _rewriter(items):
    import re

    expr_to_id = dict(zip(items["expression"], items["id"], strict=True))

    def respond(req):
        text = req.messages[0]["content"][0]["text"]
        expr = re.search(r'Expression: "(.*)"', text).group(1)
        item_id = expr_to_id[expr]
        if text.startswith("List every descriptor"):
            out = EXTRACTS[item_id]
        else:
            desc = re.search(r'contains the descriptor "(.*?)"', text).group(1)
            out = {"3": expr, "4": "", "5": RuntimeError("timeout")}.get(
                item_id, '"' + " ".join(expr.replace(desc, "").split()) + '"\nThat is all.')
        if isinstance(out, Exception):
            raise out
        return out

    return ScriptedModel(respond, model_id="rewriter")


def test_descriptor_deletion_outcomes(sample):
    bench, items, _ = sample
    out = bench.delete_descriptors(items, _rewriter(items), progress=False).set_index("id")
    status = out["deletion_status"].to_dict()
    assert status == {"0": "generation_failed", "1": "no_descriptor", "2": "ok", "3": "unchanged",
                      "4": "empty_rewrite", "5": "generation_failed"}
    assert out["deletion_ok"].sum() == 1 and len(out) == len(items)
    # failures keep the original expression, never "nan" or an empty string
    for i in ("0", "1", "3", "4", "5"):
        assert out.loc[i, "deleted_expression"] == items.set_index("id").loc[i, "expression"]
    assert pd.isna(out.loc["0", "deleted_descriptor"]) and pd.isna(out.loc["1", "deleted_descriptor"])
    # the deleted descriptor is one the extractor found *in* the expression, and is gone after the rewrite
    desc = out.loc["2", "deleted_descriptor"]
    assert desc in ("yellow", "rightmost")
    assert desc not in out.loc["2", "deleted_expression"]
    assert ({"yellow", "rightmost"} - {desc}).pop() in out.loc["2", "deleted_expression"]


def test_descriptor_choice_is_seeded(sample):
    bench, items, _ = sample
    picks = [bench.delete_descriptors(items, _rewriter(items), seed=s, progress=False).set_index("id")
             .loc["2", "deleted_descriptor"] for s in range(12)]
    again = bench.delete_descriptors(items, _rewriter(items), seed=5, progress=False).set_index("id")
    assert again.loc["2", "deleted_descriptor"] == picks[5]
    assert set(picks) == {"yellow", "rightmost"}  # the seed decides; both descriptors get deleted


def test_deletion_setting_runs_through_the_grounder(sample, tmp_path):
    bench, items, _ = sample
    asked = {}

    def ground(req):
        asked[req.meta["item_id"]] = req.meta["expression_asked"]
        return '{"bbox": [0, 0, 10, 10]}'

    with pytest.raises(SettingError, match="rewriter"):
        bench.evaluate(ScriptedModel(ground), items, "deletion", progress=False)
    rewriter = _rewriter(items)
    scored = bench.evaluate(ScriptedModel(ground), items, "deletion", rewriter=rewriter,
                       rewriter_store=tmp_path / "rw.jsonl", progress=False)
    assert len(scored) == len(items) and scored["deletion_status"].notna().all()
    ok = scored.set_index("id")
    assert asked["2"] == ok.loc["2", "deleted_expression"] != items.set_index("id").loc["2", "expression"]
    assert asked["1"] == items.set_index("id").loc["1", "expression"]
    calls = rewriter.calls
    bench.evaluate(ScriptedModel(ground), items, "deletion", rewriter=rewriter, rewriter_store=tmp_path / "rw.jsonl",
              progress=False)
    assert rewriter.calls == calls + 2  # only the two failed generations are asked again; the rest is stored
    assert any(d.what == "descriptor deletion" for d in bench.deviations(ModelInfo("m"), "deletion"))


# -- hard-distractor picks from a hand-built COCO instances file -----------------------------------------
INSTANCES = {
    "images": [{"id": 1, "file_name": "000000000001.jpg"}, {"id": 2, "file_name": "000000000002.jpg"}],
    "annotations": [
        {"id": 10, "image_id": 1, "category_id": 1, "bbox": [10, 10, 100, 200]},   # person A  -> [10,10,110,210]
        {"id": 11, "image_id": 1, "category_id": 1, "bbox": [300, 10, 100, 200]},  # person B  -> [300,10,400,210]
        {"id": 12, "image_id": 1, "category_id": 2, "bbox": [10, 300, 200, 100]},  # a dog     -> [10,300,210,400]
        {"id": 20, "image_id": 2, "category_id": 3, "bbox": [0, 0, 50, 50]},
    ],
}
A, B_, DOG = [10, 10, 110, 210], [300, 10, 400, 210], [10, 300, 210, 400]


def _picks_frame():
    rows = [("000000000001.jpg", "coco_val2017", A, A),                      # hit
            ("000000000001.jpg", "coco_val2017", A, B_),                     # same-category pick
            ("000000000001.jpg", "coco_val2017", B_, [12, 12, 108, 205]),    # same-category pick (B asked)
            ("000000000001.jpg", "coco_val2017", A, DOG),                    # other-category pick
            ("000000000001.jpg", "coco_val2017", A, [500, 400, 600, 470]),   # lands on no instance
            ("000000000001.jpg", "coco_val2017", A, []),                     # parse failure
            ("000000000001.jpg", "coco_val2017", [200, 200, 260, 260], A),   # GT matches no instance
            ("000000000002.jpg", "openimages", [0, 0, 50, 50], [0, 0, 9, 9]),  # not COCO
            ("000000000099.jpg", "coco_val2017", A, B_)]                     # image not in the file
    df = pd.DataFrame(rows, columns=["file_name", "image_source", "gt_xyxy", "pred_xyxy"])
    df["iou"] = [metrics.first_iou(p, g) for p, g in zip(df["pred_xyxy"], df["gt_xyxy"], strict=True)]
    return df


def test_hard_distractor_picks_known_answers(tmp_path):
    path = tmp_path / "instances.json"
    path.write_text(json.dumps(INSTANCES))
    got = metrics.hard_distractor_picks(_picks_frame(), path)
    assert {k: got[k] for k in ("coco_rows", "matched", "misses", "same_category_pick", "other_category_pick",
                                "no_instance", "parse_failure")} == \
        {"coco_rows": 7, "matched": 6, "misses": 5, "same_category_pick": 2, "other_category_pick": 1,
         "no_instance": 1, "parse_failure": 1}
    assert got["same_category_share_of_misses"] == pytest.approx(2 / 5)
    assert got["same_category_share_of_box_misses"] == pytest.approx(2 / 4)
    # a stricter overlap rule turns the loose pick on person A into "no instance"
    strict = metrics.hard_distractor_picks(_picks_frame(), INSTANCES, pick_iou=0.95)
    assert strict["same_category_pick"] == 1 and strict["no_instance"] == 2


@pytest.mark.parametrize("bad,match", [
    ({"images": []}, "annotations"),
    ({"images": [{"id": 1}], "annotations": []}, "file_name"),
    ({"images": [], "annotations": [{"image_id": 1, "bbox": [1, 2, 3, 4]}]}, "category_id"),
    ({"images": [], "annotations": [{"image_id": 1, "category_id": 1, "bbox": [1, 2]}]}, "bbox"),
    ([1, 2], "COCO instances"),
])
def test_hard_distractor_picks_bad_instances(bad, match, tmp_path):
    path = tmp_path / "instances.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(DataError, match=match):
        metrics.hard_distractor_picks(_picks_frame(), path)


def test_hard_distractor_picks_missing_or_broken_file(tmp_path):
    with pytest.raises(DataError, match="not found"):
        metrics.hard_distractor_picks(_picks_frame(), tmp_path / "nope.json")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(DataError, match="not valid JSON"):
        metrics.hard_distractor_picks(_picks_frame(), tmp_path / "broken.json")


def test_store_with_several_runs_is_scored_per_run(sample, tmp_path):
    """A store holding two settings must not mix them (the repair turn of one run overrode the other)."""
    bench, items, path = sample
    gt = items.set_index("id")["gt_xyxy"]

    def respond(req):
        if req.setting.startswith("direct"):
            return "[{}, {}, {}, {}]".format(*gt[req.meta["item_id"]])
        return "no idea"

    model = ScriptedModel(respond)
    store = F.one_store(tmp_path / "both.jsonl",  # two settings in one file, as written before one run per file
                        *(lambda p, s=s: bench.evaluate(model, items, s, store=p, progress=False)
                          for s in ("direct", "fixed")))
    with pytest.raises(DataError, match=r"holds 2 runs.*direct:official:direct.*fixed:official:direct"):
        bench.score_store(store, items)
    direct = bench.score_store(store, items, setting="direct")
    assert direct["hit"].all() and not direct["retry_used"].any() and len(direct) == len(items)
    fixed = bench.score_store(store, items, setting="fixed")
    assert not fixed["hit"].any() and fixed["retry_used"].all()
    with pytest.raises(DataError, match="no run matches"):
        bench.score_store(store, items, setting="cot")
    out = bench.score_file(store, source=path, setting="direct")
    assert out["metrics"]["Acc@0.5"] == 100.0 and out["setting"] == "direct"


def test_store_repair_only_replaces_a_failed_first_answer(sample, tmp_path):
    """Two decodings in one store are two runs: the newer run's first answers are never mixed with the older
    run's repair turns, and neither run is scored without being picked."""
    bench, items, path = sample
    gt = items.set_index("id")["gt_xyxy"]
    store = F.one_store(  # two decodings in one file, as written before one run per file
        tmp_path / "s.jsonl",
        lambda p: bench.evaluate(ScriptedModel(lambda r: "nothing" if len(r.messages) == 1 else "[0, 0, 1, 1]"),
                                 items, "direct", store=p, progress=False, max_new_tokens=16),
        lambda p: bench.evaluate(ScriptedModel(lambda r: "[{}, {}, {}, {}]".format(*gt[r.meta["item_id"]])), items,
                                 "direct", store=p, progress=False, max_new_tokens=17))  # other params: not cached
    with pytest.raises(DataError, match=r"holds 2 runs.*\[0\].*\[1\].*run=N"):
        bench.score_store(store, items)
    again = bench.score_store(store, items, run=1)
    assert again["hit"].all() and not again["retry_used"].any()
    older = bench.score_store(store, items, run=0)
    assert older["retry_used"].all() and not older["hit"].any()


@pytest.mark.parametrize("field,value", [("gt_bbox_xyxy", None), ("gt_bbox_xyxy", [1, 2, "x", 4]),
                                         ("pred_box_xyxy_first", 5), ("distractor_count", "many"),
                                         ("first_iou", None)])
def test_malformed_official_row_names_the_field(tmp_path, field, value):
    rec = {"row_idx": 0, "distractor_count": 3, "gt_bbox_xyxy": [0, 0, 10, 10], "pred_box_xyxy_first": [0, 0, 10, 10],
           "first_iou": 1.0, "first_hit": True, "parse_error": ""}
    good = tmp_path / "ok_predictions.jsonl"
    good.write_text(json.dumps(rec) + "\n")
    assert metrics.read_official_predictions(good)["iou"].iloc[0] == 1.0
    bad = tmp_path / "bad_predictions.jsonl"
    bad.write_text(json.dumps(rec) + "\n" + json.dumps(dict(rec, **{field: value})) + "\n")
    with pytest.raises(DataError, match=field) as e:
        metrics.read_official_predictions(bad)
    assert "row 2," in str(e.value)  # a JSON Lines row is its line


# -- the repair turn as the official runs sent it -----------------------------------------------------
OFFICIAL_FOLLOWUP = (
    'Your previous answer did not end with a valid JSON bbox output.\\nNow output ONLY one complete JSON code '
    'block.\\nUse this exact schema:\\n```json\\n{"bboxes": [[x1, y1, x2, y2]]}\\n```\\nDo not output any extra text.'
)


def test_followup_default_is_the_official_literal_backslash_n_text():
    assert FOLLOWUP_TEXT == OFFICIAL_FOLLOWUP == followup_text() == followup_text("official")
    assert len(FOLLOWUP_TEXT) == 211
    assert "\n" not in FOLLOWUP_TEXT and FOLLOWUP_TEXT.count("\\n") == 6
    newlines = followup_text("newlines")
    assert newlines == FOLLOWUP_TEXT_NEWLINES == FOLLOWUP_TEXT.replace("\\n", "\n")
    assert len(newlines) == 205 and newlines.count("\n") == 6 and "\\" not in newlines
    with pytest.raises(SettingError, match="unknown repair_text"):
        followup_text("yaml")


def test_repair_text_option_is_sent_recorded_and_kept_apart(sample, tmp_path):
    from vlamb_nb.store import read_records

    bench, items, path = sample
    by_id = items.set_index("id")
    sent = []

    def respond(req):
        if len(req.messages) == 1:
            return "It is the one on the left."  # no box: the repair turn follows
        text = req.messages[2]["content"][0]["text"]
        sent.append(text)
        x1, y1, x2, y2 = by_id.loc[req.meta["item_id"]]["gt_xyxy"]
        hit = [x1, y1, x2, y2] if text == FOLLOWUP_TEXT else [0, 0, 1, 1]  # tells the two runs apart
        return json.dumps({"bboxes": [hit]})

    model, store = ScriptedModel(respond), tmp_path / "r.jsonl"
    with pytest.raises(SettingError, match="unknown repair_text"):
        bench.evaluate(model, items, "direct", store=store, repair_text="yaml", progress=False)
    assert model.calls == 0
    official = bench.evaluate(model, items, "direct", store=store, progress=False)
    assert official["hit"].all() and set(sent) == {FOLLOWUP_TEXT}
    sent.clear()
    calls = model.calls
    newlines = bench.evaluate(model, items, "direct", store=store, repair_text="newlines", progress=False)
    assert model.calls - calls == len(items)  # first answers come from the store, only the repair turns are new
    assert set(sent) == {FOLLOWUP_TEXT_NEWLINES} and not newlines["hit"].any()
    assert newlines.attrs["store"] != str(store)  # another run: a store of its own, its first answers copied in
    recs = read_records(store) + read_records(newlines.attrs["store"])
    repairs = [r for r in recs if "::repair-" in r["request_id"]]
    assert {r["run"]["repair_text"] for r in repairs} == {"official", "newlines"}
    assert {r["setting"].rsplit(":", 1)[-1] for r in repairs} == {"repair", "repair-newlines"}
    new_meta = next(r["run"] for r in repairs if r["run"]["repair_text"] == "newlines")
    assert any(d["what"] == "repair turn text" for d in new_meta["deviations"])
    assert not any(d["what"] == "repair turn text" for d in recs[0]["run"]["deviations"])
    # the store keeps both variants; scoring picks one, the official text by default
    assert bench.score_store(store, items)["hit"].all()
    assert not bench.score_store(store, items, repair_text="newlines")["hit"].any()


# -- grounding style (coordinate format) from the model: family (HF) or name (OpenAI-compatible) ------------
@pytest.mark.parametrize("info,style,box_format", [
    (ModelInfo("openai:Qwen/Qwen3-VL-8B-Thinking", backend="openai"), "qwen3_vl", "norm_1000_xyxy"),
    (ModelInfo("openai:qwen3-vl:8b", backend="openai"), "qwen3_vl", "norm_1000_xyxy"),
    (ModelInfo("openai:Qwen/Qwen3.5-27B", backend="openai"), "qwen3_vl", "norm_1000_xyxy"),
    (ModelInfo("openai:Qwen3_5-35B-A3B", backend="openai"), "qwen3_vl", "norm_1000_xyxy"),
    (ModelInfo("openai:Qwen/Qwen2.5-VL-72B-Instruct", backend="openai"), "official", "abs_xyxy"),
    (ModelInfo("openai:qwen2_5_vl_7b", backend="openai"), "official", "abs_xyxy"),
    (ModelInfo("openai:gemini-2.5-flash", backend="openai"), "gemini", "norm_1000_yxyx"),
    (ModelInfo("openai:gpt-4o", backend="openai"), "official", "abs_xyxy"),  # the stated default
    (ModelInfo("Qwen/Qwen3.5-27B", family="qwen3_5"), "qwen3_vl", "norm_1000_xyxy"),
    (ModelInfo("Qwen/Qwen3-VL-8B-Instruct", family="qwen3_vl"), "qwen3_vl", "norm_1000_xyxy"),
    (ModelInfo("Qwen/Qwen2.5-VL-7B-Instruct", family="qwen2_5_vl"), "qwen2_5_vl", "abs_xyxy"),
    (ModelInfo("llava-hf/llava-onevision-qwen2-7b-ov-hf", family="llava_onevision"), "generic", "norm_1_xyxy"),
    (ModelInfo("some/new-vlm", family="generic"), "generic", "norm_1_xyxy"),
])
def test_style_follows_family_or_model_name(info, style, box_format):
    st = style_for(info)
    assert (st.name, st.box_format) == (style, box_format)
    assert not (info.backend == "openai" and st.resized_pixels)  # a server's resized size is unknown: no rescale


def test_style_choice_is_explained_and_qwen3_5_has_a_family_row():
    from types import SimpleNamespace

    from vlamb_nb.benchmarks.refadv.parse import OPENAI_DEFAULT_STYLE, choose_style, style_from_name
    from vlamb_nb.models.families import family_for_config

    def family_for(model_type):
        return family_for_config(SimpleNamespace(model_type=model_type))

    assert family_for("qwen3_5").name == family_for("qwen3_5_moe").name == "qwen3_5"
    assert family_for("qwen3_5").size_rule == "grid_thw"
    assert style_from_name("gpt-4o") is None and OPENAI_DEFAULT_STYLE == "official"
    assert "model name" in choose_style(ModelInfo("openai:Qwen/Qwen3.5-27B", backend="openai"))[1]
    assert "default" in choose_style(ModelInfo("openai:gpt-4o", backend="openai"))[1]
    assert "family" in choose_style(ModelInfo("m", family="qwen3_5"))[1]
    assert choose_style(ModelInfo("openai:Qwen/Qwen3.5-27B", backend="openai"), "official") == \
        (style_for(None, "official"), "explicit")
    assert style_for(ModelInfo("Qwen3-VL-8B", backend="scripted")).name == "official"  # scripted: unchanged


def _official_first_answers(shared_data, run: str):
    """The demo items joined to an official prediction file, each model answer rebuilt in its own format."""
    from pathlib import Path

    items = data.load_demo(shared_data / "refadv" / "demo")
    preds = {}
    for line in (shared_data / "refadv" / "predictions" / f"{run}_predictions.jsonl").read_text().splitlines():
        rec = json.loads(line)
        preds[rec["row_idx"]] = rec
    answers = {}
    for _, item in items.iterrows():
        rec = preds[int(Path(item["image"]).stem)]
        assert rec["row_idx"] == item["row_idx"] and rec["normal_caption"] == item["expression"]
        box = rec["pred_box_xyxy_first"]
        if len(box) != 4:
            answers[item["id"]] = "I cannot tell."
            continue
        raw = boxes.from_abs_xyxy(box, item["width"], item["height"], rec["pred_box_expected_format"])
        answers[item["id"]] = '```json\n' + json.dumps({"bboxes": [[round(v, 3) for v in raw]]}) + '\n```'
    return items, preds, answers


def test_official_qwen3_vl_answers_are_read_on_the_1000_grid(shared_data):
    """Qwen3-VL-8B-Thinking over an OpenAI-compatible server: 9/31 demo hits as published (3/31 as pixels)."""
    from vlamb_nb.benchmarks.refadv.parse import STYLES

    items, preds, answers = _official_first_answers(shared_data, "qwen3a8bthinking_direct")
    assert {r["pred_box_expected_format"] for r in preds.values()} == {"norm_1000_xyxy"}
    published = sum(preds[int(r)]["first_hit"] for r in items["row_idx"])
    info = ModelInfo("openai:Qwen/Qwen3-VL-8B-Thinking", backend="openai")
    st = style_for(info)
    assert st.box_format == "norm_1000_xyxy"

    def hits(style) -> int:
        n = 0
        for _, item in items.iterrows():
            row = dict(item, box_format=style.box_format, parser=style.parser, resized_pixels=style.resized_pixels)
            out = RefAdv().parse(answers[item["id"]], row)
            n += metrics.first_iou(out["pred_xyxy"], item["gt_xyxy"]) >= 0.5
        return n

    assert hits(st) == published == 9
    assert hits(STYLES["official"]) == 3  # what reading every served model as pixels gave

    # the whole run with a stand-in for the served model picks the same style and records why
    served = ScriptedModel(lambda req: answers[req.meta["item_id"]])
    served.info = info
    scored = RefAdv().evaluate(served, items, "direct", progress=False)
    assert int(scored["hit"].sum()) == 9 and set(scored["box_format"]) == {"norm_1000_xyxy"}


# -- Gemini: the y/x reorder belongs to its box_2d key only --------------------------------------------------
def test_gemini_reorder_only_under_box_2d():
    from vlamb_nb.benchmarks.refadv.parse import collect_keyed_boxes

    want = [[160.0, 240.0, 320.0, 480.0]]
    # Gemini's own format: [ymin, xmin, ymax, xmax]
    assert parse_json_boxes('[{"box_2d": [500, 250, 1000, 500], "label": "cup"}]', W, H, "norm_1000_yxyx") == \
        (want, "")
    assert parse_json_boxes('{"objects": [{"box_2d": [500, 250, 1000, 500]}]}', W, H, "norm_1000_yxyx") == \
        (want, "")
    # any other 4-number list (the repair turn's schema, a bare list, other keys) is x/y order
    for reply in ('{"bboxes": [[250, 500, 500, 1000]]}', "[250, 500, 500, 1000]",
                  '{"bbox_2d": [250, 500, 500, 1000]}', '[{"box": [250, 500, 500, 1000]}]'):
        assert parse_json_boxes(reply, W, H, "norm_1000_yxyx") == (want, ""), reply
    # in one reply each box is read by its own key (priority keys first, as the official order)
    found, _ = parse_json_boxes('{"box_2d": [500, 250, 1000, 500], "bboxes": [[0, 0, 500, 500]]}', W, H,
                                "norm_1000_yxyx")
    assert found == [[0.0, 0.0, 320.0, 240.0], *want]
    assert collect_keyed_boxes({"box_2d": [1, 2, 3, 4], "bboxes": [[5, 6, 7, 8]]}) == \
        [([5.0, 6.0, 7.0, 8.0], "bboxes"), ([1.0, 2.0, 3.0, 4.0], "box_2d")]
    assert parse_bracket_boxes("[[250, 500, 500, 1000]]", W, H, "norm_1000_yxyx")[0] == want  # no key: x/y


def test_gemini_repair_answer_in_the_official_schema_is_read_as_xyxy(sample):
    bench, items, _ = sample
    by_id = items.set_index("id")

    def respond(req):
        if len(req.messages) == 1:
            return "The cup on the left."
        item = by_id.loc[req.meta["item_id"]]
        box = boxes.from_abs_xyxy(item["gt_xyxy"], item["width"], item["height"], "norm_1000_xyxy")
        return json.dumps({"bboxes": [[round(v, 3) for v in box]]})  # the schema the repair turn asks for

    gem = ScriptedModel(respond, model_id="gemini-2.5-flash")
    scored = bench.evaluate(gem, items, "direct", style="gemini", progress=False)
    assert scored["retry_used"].all() and scored["hit"].all()
