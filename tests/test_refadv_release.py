"""Ref-Adv Tables 1, 4, 5 and Figs. 4-6 on the real released files: statistics on all 1,142 Ref-Adv-s rows,
the descriptor-deletion pipeline with scripted models on the demo items, slices with image-clustered CIs, the
printed examples looked up in the release, and the list of what the public data cannot give."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest

from vlamb_nb import get_benchmark
from vlamb_nb.benchmarks.refadv import data, release
from vlamb_nb.benchmarks.refadv import plots as rplots
from vlamb_nb.benchmarks.refadv import report as analysis
from vlamb_nb.benchmarks.refadv import score as metrics
from vlamb_nb.errors import DataError
from vlamb_nb.models import ScriptedModel


@pytest.fixture(scope="module")
def pred_dir(shared_data):
    return shared_data / "refadv" / "predictions"


@pytest.fixture(scope="module")
def released(pred_dir):
    return release.released_items(pred_dir)


@pytest.fixture(scope="module")
def demo(shared_data):
    return data.load_demo(shared_data / "refadv" / "demo")


def _raw_rows(pred_dir) -> list[dict]:
    """One prediction file read with json alone: an independent check of the package's reading."""
    path = sorted(pred_dir.glob("*_predictions.jsonl"))[0]
    return [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


# -- Table 1 on all released rows ----------------------------------------------------------------------------
def test_released_items_are_one_release_of_1142_rows(released, pred_dir):
    assert len(released) == release.RELEASED_ROWS == 1142
    assert released["row_idx"].tolist() == list(range(1142))
    assert list(released.columns) == data.ITEM_COLUMNS
    assert released["width"].isna().all() and released["image"].isna().all()  # not in the prediction files
    raw = sorted(_raw_rows(pred_dir), key=lambda r: r["row_idx"])
    assert released["expression"].tolist() == [r["normal_caption"] for r in raw]
    assert released["gt_xyxy"].map(list).tolist() == [[float(v) for v in r["gt_bbox_xyxy"]] for r in raw]


def test_files_that_disagree_on_a_dataset_field_are_refused(pred_dir, tmp_path):
    files = sorted(pred_dir.glob("*_predictions.jsonl"))[:2]
    for f in files:
        shutil.copy(f, tmp_path / f.name)
    assert len(release.released_items(tmp_path)) == 1142
    lines = (tmp_path / files[1].name).read_text(encoding="utf-8").splitlines()
    rec = json.loads(lines[3])
    rec["use_negation"] = not rec["use_negation"]
    lines[3] = json.dumps(rec)
    (tmp_path / files[1].name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="use_negation"):
        release.released_items(tmp_path)


def test_table1_statistics_on_all_released_rows(released, pred_dir):
    raw = _raw_rows(pred_dir)
    v = release.table1_values(released)
    assert v["Instances"] == len(raw) == 1142
    assert v["Images"] == len({r["file_name"] for r in raw}) == 614
    assert v["Negation Ratio"] == pytest.approx(100 * sum(r["use_negation"] for r in raw) / len(raw), abs=0.005)
    assert v["Negation Ratio"] == pytest.approx(40.02, abs=0.005)
    assert v["Avg. Distractors"] == pytest.approx(sum(r["distractor_count"] for r in raw) / len(raw), abs=0.005)
    assert v["Avg. Length"] == pytest.approx(sum(len(r["normal_caption"].split()) for r in raw) / len(raw), abs=0.005)
    assert (v["Instance Size (min)"], v["Instance Size (max)"]) == (7, 741)
    assert v["Vocab."] == 1609

    cmp = release.table1_comparison(released).set_index("column")
    assert list(cmp.index) == list(release.TABLE1_NOTES)
    assert cmp.loc["Negation Ratio", "paper"] == 21.25 and cmp.loc["Avg. Length", "paper"] == 11.5
    assert (cmp.loc["Instance Size (min)", "paper"], cmp.loc["Instance Size (max)", "paper"]) == (30, 607)
    assert cmp.loc["Vocab.", "ours"] == 1609 and cmp.loc["Vocab.", "paper"] == 5308
    assert set(cmp.index[cmp["comparable"]]) == set(release.SIZE_FREE)
    assert (cmp["note"] != "").all() and cmp["scope"].str.contains("1,142").all()
    assert cmp.loc["Avg. Length", "diff"] == pytest.approx(11.74 - 11.5, abs=0.01)


def test_table1_by_group_and_what_needs_the_image_size(released, demo):
    g = release.table1_by_group(released).set_index("group")
    assert g.loc["human-authored", "Instances"] + g.loc["LLM-authored", "Instances"] == 1142
    assert g.loc["COCO", "Instances"] + g.loc["OpenImages", "Instances"] == 1142
    assert (g.loc["human-authored", "Instances"], g.loc["LLM-authored", "Instances"]) == (421, 721)
    # the subset's negation share comes from both streams, not from an over-share of humans alone
    assert g.loc["human-authored", "Negation Ratio"] > g.loc["LLM-authored", "Negation Ratio"] > 21.25
    sizes = release.demo_size_stats(demo)
    assert sizes["scope"].startswith("31 demo records")
    lo, hi = sizes["instance_size_sqrt_area_px"]
    assert 7 <= lo <= hi <= 741  # the demo boxes are released boxes
    assert 0 < sizes["instance_size_relative_pct"][0] < sizes["instance_size_relative_pct"][1] < 100
    assert sizes["image_width_range"][1] == 1024  # OpenImages: 1024 px on the long side


# -- Table 4: descriptor deletion through scripted models on the demo items ------------------------------------
def _scripted_pair(items):
    """A rewriter that extracts the last two words (nothing for short expressions; fails for item 0) and
    deletes the chosen one, and a grounder that answers the GT only for the original expression."""
    by_id = items.set_index("id")

    def rewrite(req):
        text = req.messages[0]["content"][0]["text"]
        expr = re.search(r'Expression: "(.*)"', text).group(1)
        if text.startswith("List every descriptor"):
            if req.meta["item_id"] == "0":
                raise RuntimeError("server down")
            words = expr.split()
            return "none found" if len(words) < 6 else json.dumps(words[-2:])
        desc = re.search(r'contains the descriptor "(.*?)"', text).group(1)
        return " ".join(expr.replace(desc, " ", 1).split())

    def ground(req):
        item = by_id.loc[req.meta["item_id"]]
        box = list(item["gt_xyxy"]) if req.meta["expression_asked"] == item["expression"] else [0, 0, 2, 2]
        return "```json\n" + json.dumps({"bboxes": [box]}) + "\n```"

    return (ScriptedModel(rewrite, model_id="scripted-rewriter"), ScriptedModel(ground, model_id="scripted-grounder"))


def test_table4_deletion_pipeline_on_demo_items(demo, tmp_path):
    rewriter, grounder = _scripted_pair(demo)
    out = analysis.deletion_demo(demo, model=grounder, rewriter=rewriter, store_dir=tmp_path, seed=3)
    table = out["table"]
    assert list(table.columns) == analysis.DELETION_COLUMNS and len(table) == 1
    n = len(demo)
    short = sum(len(e.split()) < 6 for i, e in zip(demo["id"], demo["expression"], strict=True) if i != "0")
    ok = n - 1 - short
    assert out["status"] == {k: v for k, v in {"ok": ok, "no_descriptor": short, "generation_failed": 1}.items() if v}
    r = table.iloc[0]
    assert (r["model"], r["rewriter"], r["n"], r["rewritten"]) == ("scripted-grounder", "scripted-rewriter", 31, ok)
    assert r["Orig@0.5"] == 100.0 and r["1D@0.5"] == pytest.approx(round(100 * (n - ok) / n, 1))
    assert r["Δ"] == pytest.approx(round(-100 * ok / n, 1)) and r["Δ rewritten rows"] == -100.0
    assert (r["hits lost"], r["hits gained"]) == (ok, 0)
    # the deletion logic: one extracted descriptor removed, the rest kept; failures keep the original text
    rows = out["items"].set_index("id")
    for i, rec in rows.iterrows():
        if rec["deletion_status"] == "ok":
            words = rec["expression"].split()
            assert rec["deleted_descriptor"] in words[-2:]
            assert rec["deleted_expression"] == " ".join(rec["expression"].replace(rec["deleted_descriptor"], " ", 1).split())
        else:
            assert rec["deleted_expression"] == rec["expression"], i
    asked = out["runs"]["deletion"].set_index("id")["expression_asked"]
    assert (asked == rows.loc[asked.index, "deleted_expression"]).all()  # the grounder saw the rewritten text
    assert any(d.what == "descriptor extractor/rewriter" for d in out["deviations"])
    # stored: a rerun asks only the failed extraction again, and the seed fixes which descriptor goes
    calls = (rewriter.calls, grounder.calls)
    again = analysis.deletion_demo(demo, model=grounder, rewriter=rewriter, store_dir=tmp_path, seed=3)
    assert (rewriter.calls, grounder.calls) == (calls[0] + 1, calls[1])
    assert again["items"]["deleted_expression"].equals(out["items"]["deleted_expression"])


def test_deletion_table_needs_the_same_items(demo):
    a = demo[["id"]].assign(iou=1.0)
    with pytest.raises(DataError, match="same items"):
        analysis.deletion_table(a, a.head(5).assign(deletion_status="ok"))


# -- Fig. 2b / Table 6 slices with image-clustered intervals --------------------------------------------------
def test_slice_accuracy_resamples_images_and_matches_published_bins(pred_dir):
    runs = {"qwen25a72b_direct": metrics.read_official_predictions(pred_dir / "qwen25a72b_direct_predictions.jsonl")}
    sl = release.slice_accuracy(runs, n_resamples=400)
    assert set(sl["family"]) == {"distractors", "authorship", "negation"} and (sl["ci_unit"] == "image").all()
    bins = sl[sl["family"] == "distractors"].set_index("group")
    assert list(bins.index) == list(data.BINS) and bins["n"].sum() == 1142
    assert (bins["estimate"].round(1) == bins["paper"]).all()  # the published Ref-Adv-s bins: 57.0 / 52.7 / 41.1
    assert ((sl["ci_low"] <= sl["estimate"]) & (sl["estimate"] <= sl["ci_high"])).all()
    auth = sl[sl["family"] == "authorship"].set_index("group")
    assert (auth.loc["human", "n"], auth.loc["LLM", "n"]) == (421, 721) and auth["paper"].isna().all()
    assert auth.loc["LLM", "estimate"] > auth.loc["human", "estimate"]
    fig = rplots.slice_accuracy(sl)
    assert len(fig.axes) == 2
    # the shared legend names every run's bar colour and the published ticks
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["qwen25a72b_direct", "published (Ref-Adv-s)"]


# -- Table 5 and Figs. 4-6 -------------------------------------------------------------------------------------
def test_table5_examples_looked_up_in_the_release(released, demo):
    t5 = release.table5_lookup(released, demo_items=demo).set_index(["table_row", "table_column"])
    assert len(t5) == 8
    exact = t5.loc[(1, 4)]
    assert exact["match"] == "exact" and exact["row_idx"] == 258 and exact["authorship_agrees"]
    assert exact["in_demo"]  # its image is demo image 0005 (another expression on the same target's image)
    near = t5.loc[(2, 4)]
    assert near["match"] == "near" and near["row_idx"] == 11 and near["authorship_agrees"]
    llm = t5[t5["paper_authorship"] == "LLM"]
    assert len(llm) == 6 and (llm["match"] == "not in Ref-Adv-s").all() and llm["row_idx"].isna().all()


def test_fig4_and_fig5_from_released_rows(released, demo, pred_dir):
    fig = rplots.dataset_distributions(released)
    assert len(fig.axes) == 3 and fig.axes[2].get_xscale() == "log"
    runs = {k: metrics.read_official_predictions(pred_dir / f"{k}_predictions.jsonl")
            for k in ("qwen25a72b_direct", "qwen25a72b_cot")}
    fig = rplots.direct_vs_cot(runs["qwen25a72b_direct"], runs["qwen25a72b_cot"], demo, n=6)
    drawn = [ax for ax in fig.axes if ax.images]
    assert len(drawn) == 6 and all(len(ax.patches) == 3 for ax in drawn)


def test_fig6_categories_of_coco_rows_from_instances(released):
    coco = released[released["image_source"] == "coco_val2017"].head(3)
    images = [{"id": k, "file_name": f} for k, f in enumerate(coco["file_name"])]
    anns = []
    for k, (box, cat) in enumerate(zip(coco["gt_xyxy"], (1, 1, 2), strict=True)):
        x1, y1, x2, y2 = box
        anns.append({"id": 10 + k, "image_id": k, "category_id": cat, "bbox": [x1, y1, x2 - x1, y2 - y1]})
        anns.append({"id": 20 + k, "image_id": k, "category_id": 3, "bbox": [0, 0, 1, 1]})  # not the target
    inst = {"images": images, "annotations": anns, "categories": [{"id": 1, "name": "person"},
                                                                  {"id": 2, "name": "cup"}, {"id": 3, "name": "dog"}]}
    counts = release.category_counts(released, inst)
    assert counts[["category", "count"]].values.tolist() == [["person", 2], ["cup", 1]]
    assert counts["ratio"].sum() == pytest.approx(1.0)
    assert counts.attrs == {"rows": 1142, "coco_rows": 259, "matched": 3, "left_out": 1139}
    assert rplots.category_ratio_curve(counts).axes[0].get_yscale() == "log"


def test_not_derivable_items_each_carry_a_reason():
    nd = get_benchmark("refadv").not_derivable()
    assert all(set(d) == {"item", "reason"} and d["item"] and len(d["reason"]) > 20 for d in nd)
    items = " ".join(d["item"] for d in nd)
    for needed in ("Table 4", "Table 5", "Fig. 5 (CoT text)", "Fig. 6", "Table 8"):
        assert needed in items


def test_notebook_records_the_new_tables(repo_root):
    nb = json.loads((repo_root / "notebooks" / "refadv.ipynb").read_text(encoding="utf-8"))
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert all(not c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code")
    for call in ('record("not_derivable", bench.not_derivable())', "release.table1_comparison(",
                 "analysis.deletion_demo(", 'record("table1_comparison"', "rplots.slice_accuracy("):
        assert call in code


def test_pairwise_heatmap_is_antisymmetric_with_intervals_and_holm_stars(pred_dir):
    """The seaborn heat map of paired differences: cell (a, b) = −cell (b, a), each annotated with its CI."""
    from vlamb_nb.benchmarks.refadv import report as analysis

    runs = {n: metrics.read_official_predictions(pred_dir / f"{n}_predictions.jsonl")
            for n in ("qwen25a3b_direct", "qwen25a7b_direct", "qwen25a72b_direct")}
    sig = analysis.significance(runs, n_resamples=200, seed=0)
    fig = rplots.pairwise_heatmap(sig)
    ax = fig.axes[0]
    values = np.ma.filled(ax.collections[0].get_array().reshape(3, 3).astype(float), np.nan)
    assert np.allclose(values, -values.T, equal_nan=True) and np.isnan(np.diag(values)).all()
    texts = [t.get_text() for t in ax.texts]
    row = sig[sig["comparison"] == "qwen25a3b_direct − qwen25a72b_direct"].iloc[0]
    assert f"{row['diff_pp']:+.1f}*\n[{row['ci_low']:.1f}, {row['ci_high']:.1f}]" in texts
    assert len(fig.axes) == 2 and "row − column" in fig.axes[1].get_ylabel()  # the colour bar says what it shows


def test_the_closest_expression_is_the_first_best_ratio_of_all():
    """Table 5's lookup passes over texts whose shared letters cannot beat the best so far: the answer is still
    the first text with the highest difflib ratio of all of them (ties, empty texts and exact hits included)."""
    import difflib
    import random
    from collections import Counter

    from vlamb_nb.benchmarks.refadv.release import _closest

    rnd = random.Random(0)
    texts = ["a b", "b a", "a b", "", "abc"] + ["".join(rnd.choice("ab c") for _ in range(rnd.randint(0, 9)))
                                                 for _ in range(200)]
    letters = [Counter(t) for t in texts]
    for q in ["a b", "", "cab", "zz", *texts[:60]]:
        ratios = [difflib.SequenceMatcher(None, q, t).ratio() for t in texts]
        k = max(range(len(texts)), key=ratios.__getitem__)
        assert _closest(q, texts, letters) == (k, ratios[k])
