"""Ref-Adv-s statistics on the released prediction files: image-clustered intervals, exact small-n tests and
the negation finding stratified by authorship."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from vlamb_nb import stats
from vlamb_nb.benchmarks.refadv import report
from vlamb_nb.benchmarks.refadv import score as metrics


@pytest.fixture(scope="module")
def runs(shared_data):
    return metrics.official_runs(shared_data / "refadv" / "predictions")


def test_intervals_resample_images_and_say_so(runs):
    one = {"qwen25a72b_direct": runs["qwen25a72b_direct"]}
    long = report.ours_long(one, n_resamples=2000)
    acc = long[long["column"] == "Acc@0.5"].iloc[0]
    assert acc["ci_unit"] == "image"
    hits = (runs["qwen25a72b_direct"]["iou"].to_numpy(float) >= 0.5).astype(float)
    naive = stats.bootstrap_ci(hits, n_resamples=2000, seed=0)
    width, naive_width = acc["ci_high"] - acc["ci_low"], 100 * (naive.ci_high - naive.ci_low)
    assert 614 == runs["qwen25a72b_direct"]["file_name"].nunique()
    assert width > 1.1 * naive_width  # rows on one image are not independent: the row bootstrap is too narrow


def test_paired_p_is_mcnemar_and_exact_when_few_rows_disagree(runs):
    sig = report.significance(runs, n_resamples=300)
    paired = sig[sig["family"] != "Neg vs No-Neg"]
    assert (paired["p"] == paired["p_mcnemar"]).all() and (sig["ci_unit"] == "image").all()
    assert (paired["p_bootstrap"] >= round(1 / 301, 4)).all()  # never below 1/(B+1) (table rounded to 4 places)
    # 5 wins and 0 losses on 31 rows: exact McNemar p = 2 * 0.5**5 = 0.0625, not a bootstrap's ~0.02
    base = runs["qwen25a72b_direct"].sort_values("row_idx").head(31).copy()
    a, b = base.copy(), base.copy()
    a["iou"], b["iou"] = 0.0, 0.0
    a.iloc[:5, a.columns.get_loc("iou")] = 0.9
    small = report.significance({"x_direct": a, "y_direct": b}, n_resamples=300)
    row = small[small["family"] == "model vs model"].iloc[0]
    assert row["p"] == pytest.approx(0.0625) and row["test"] == "McNemar exact"


def test_negation_is_reported_against_the_paper_stratified_by_authorship(runs):
    neg = report.negation_analysis(runs).set_index("run")
    assert neg.loc["qwen25a72b_direct", "neg_share"] == pytest.approx(40.0, abs=0.05)  # the paper: 21.25%
    r = neg.loc["qwen25a72b_direct"]
    assert r["acc_neg"] == pytest.approx(56.9, abs=0.05) and r["acc_noneg"] == pytest.approx(52.1, abs=0.05)
    assert r["direction"].startswith("reverses")
    # the confound: human-written 56.9 vs 44.3, LLM-written 56.9 vs 55.6
    assert r["acc_noneg human"] == pytest.approx(44.3, abs=0.05) and r["acc_noneg LLM"] == pytest.approx(55.6, abs=0.05)
    assert {"cmh_or", "cmh_p", "gee_or", "gee_or_low", "gee_or_high", "gee_p", "cmh_p_holm"} <= set(neg.columns)
    think = neg.loc["qwen3a8bthinking_direct"]
    assert think["cmh_p_holm"] < 0.05 and think["gee_or_low"] > 1
    assert isinstance(neg, pd.DataFrame) and np.isfinite(neg["gee_or"]).all()


def test_official_files_with_repeated_rows_or_mixed_runs(shared_data, tmp_path):
    import json

    from vlamb_nb.errors import DataError
    from vlamb_nb.run_identity import DuplicateWarning

    src = (shared_data / "refadv" / "predictions" / "qwen25a72b_direct_predictions.jsonl").read_text().splitlines()
    repeated = tmp_path / "rep_predictions.jsonl"
    repeated.write_text("\n".join(src + src[:50]) + "\n")
    with pytest.warns(DuplicateWarning, match="50 repeated"):
        df = metrics.read_official_predictions(repeated)
    assert len(df) == 1142 and df.attrs["duplicates_dropped"] == 50
    changed = json.loads(src[0])
    changed["pred_box_xyxy_first"] = [0, 0, 1, 1]
    clash = tmp_path / "clash_predictions.jsonl"
    clash.write_text("\n".join([*src, json.dumps(changed)]) + "\n")
    with pytest.raises(DataError, match="different predictions"):
        metrics.read_official_predictions(clash)
    other = json.loads(src[1])
    other["model_full_name"] = "Qwen/Qwen2.5-VL-7B-Instruct"
    mixed = tmp_path / "mixed_predictions.jsonl"
    mixed.write_text("\n".join([*src[:1], *src[2:], json.dumps(other)]) + "\n")
    with pytest.raises(DataError, match="mixes 2 runs"):
        metrics.read_official_predictions(mixed)
