"""V-FLUTE: loaders (released split, official formats, HF parquet), prompts, official parser, F1@t, scoring files."""

from __future__ import annotations

import json
import random

import numpy as np
import pandas as pd
import pytest
from fixtures_vflute import oracle as _oracle
from fixtures_vflute import write_hf_parquet

from vlamb_nb import get_benchmark
from vlamb_nb.benchmarks.vflute import adequacy as vadequacy
from vlamb_nb.benchmarks.vflute import data as vd
from vlamb_nb.benchmarks.vflute import human as vhuman
from vlamb_nb.benchmarks.vflute import plots as vplots
from vlamb_nb.benchmarks.vflute import prompts as vp
from vlamb_nb.benchmarks.vflute import score as vm
from vlamb_nb.benchmarks.vflute.parse import (
    extract_label_and_explanation,
    normalize_sg_explanation,
    parse_output,
)
from vlamb_nb.errors import DataError, ImageError, SettingError
from vlamb_nb.models import ScriptedModel


def f1_score(*args, **kwargs):
    """scikit-learn's F1, the reference (imported where a test compares with it: collecting this file does not
    import scikit-learn)."""
    from sklearn.metrics import f1_score as reference

    return reference(*args, **kwargs)


BENCH = get_benchmark("vflute")


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    d = tmp_path_factory.mktemp("vflute")
    return BENCH.make_sample(d, n=16, seed=3)


# -- the released test split -------------------------------------------------------------------------
RELEASED = {  # notes §2.5, counted from the released file: (source, phenomenon) -> (entailment, contradiction)
    ("vismet", "metaphor"): (28, 31), ("vismet", "simile"): (16, 26), ("irfl", "metaphor"): (33, 33),
    ("irfl", "simile"): (26, 28), ("irfl", "idiom"): (51, 49), ("muse", "sarcasm"): (53, 53),
    ("memecap", "humor"): (98, 98), ("nycartoons", "humor"): (100, 0),
}


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_released_test_split_counts(shared_data, fmt):
    items = BENCH.load(shared_data / "vflute" / f"vflute-v2-test.{fmt}")
    assert len(items) == 723
    assert items["label"].value_counts().to_dict() == {"entailment": 405, "contradiction": 318}
    counts = vd.split_counts(items)
    got = {k: (int(r["entailment"]), int(r["contradiction"])) for k, r in counts.iterrows()}
    assert got == RELEASED
    # Table 3's test column, by reporting unit (IRFL split by phenomenon)
    t3 = {"vismet": 101, "irfl_metaphor_simile": 120, "irfl_idiom": 100, "muse": 106, "memecap": 196,
          "nycartoons": 100}
    assert vd.dataset_counts(items).to_dict() == t3
    assert set(items["prompt"]) <= set(vp.PROMPTS) and items["prompt"].nunique() == 21


def test_json_and_csv_agree(shared_data):
    a = BENCH.load(shared_data / "vflute" / "vflute-v2-test.json").set_index("id").sort_index()
    b = BENCH.load(shared_data / "vflute" / "vflute-v2-test.csv").set_index("id").sort_index()
    cols = ["source_dataset", "phenomenon", "claim", "label", "explanation", "prompt", "image"]
    pd.testing.assert_frame_equal(a[cols], b[cols])


def test_released_conversations_match_our_prompt_filling(shared_data):
    recs = json.loads((shared_data / "vflute" / "vflute-v2-test.json").read_text())
    for r in recs:
        assert r["conversations"][0]["value"] == "<image>\n" + vp.fill_claim(r["prompt"], r["claim"])
        assert r["conversations"][1]["value"] == vp.target_text(r["explanation"], r["label"])


def test_released_outputs_parse_to_gold(shared_data):
    """The official target format parses back to the gold label through the ported rules."""
    recs = json.loads((shared_data / "vflute" / "vflute-v2-test.json").read_text())
    labels = [extract_label_and_explanation(r["conversations"][1]["value"])[0] for r in recs]
    assert labels == [1 if r["label"] == "entailment" else 0 for r in recs]


def test_reference_check_against_release(shared_data):
    findings = BENCH.reference_check()
    bad = [(f.table, f.row, f.column) for f in findings if not f.ok]
    assert bad == [("Table 4", "LLaVA-ZS-7B", "F1@53")]  # the App. H text vs Table 4 inconsistency
    released = [f for f in findings if f.kind == "released data"]
    assert len(released) == 7 and all(f.ok for f in released)


def test_reference_check_detects_wrong_release_counts():
    counts = {name: 0 for name in vd.DATASETS.values()} | {"Total": 10}
    findings = vm_findings = __import__("vlamb_nb.benchmarks.vflute.audit", fromlist=["x"]).reference_findings(counts)
    assert sum(not f.ok for f in vm_findings if f.kind == "released data") == 7
    assert len(findings) > 20


# -- prompts --------------------------------------------------------------------------------------
def test_prompts_are_table8():
    assert len(vp.PROMPTS) == 21 == len(set(vp.PROMPTS))
    assert sorted(vp.TABLE8_NUMBER.values()) == list(range(1, 22))
    assert all("REPLACE_CLAIM" in p and p.rstrip(".").endswith("entailment or contradiction") for p in vp.PROMPTS)
    assert vp.fill_claim(vp.PROMPTS[0], "  It rains. ").startswith('Does the image entail or contradict the claim '
                                                                  '"It rains."? ')


def test_seeded_assignment_is_stable():
    a = vp.seeded_assignment()
    assert [len(a[s]) for s in vp.SPLIT_ORDER] == [4578, 726, 723]
    # pinned: the first draws of random.seed(42) + random.choice over the repository's list order
    assert [vp.TABLE8_NUMBER[p] for p in a["train"][:6]] == [21, 20, 19, 18, 17, 17]
    assert [vp.TABLE8_NUMBER[p] for p in a["test"][:6]] == [18, 5, 8, 14, 10, 4]
    assert vp.assigned_prompt("test", 3) == a["test"][3]
    with pytest.raises(SettingError):
        vp.assigned_prompt("test", 723)


def test_scene_graph_prompts():
    filled = vp.fill_claim(vp.PROMPTS[13], "Cats rule.")
    first = vp.sg_first_prompt(filled)
    # the official cut keeps the question before the last "?" and drops the instruction after it
    assert first.split("\n")[0] == 'Question: Does the image agree with or dispute the claim "Cats rule."'
    assert first.endswith("\nScene Graph:") and first.count("For the provided image") == 1
    second = vp.sg_second_prompt('{"objects": []}', filled)
    assert second == ('Scene Graph:\n{"objects": []}\nUse the image and scene graph as context and answer the '
                      f"following question:\nQuestion:\n{filled}")


def test_shots_are_per_item_and_exclude_the_item():
    pool = [f"t{i}" for i in range(30)]
    s1 = vp.choose_shots("x", pool, 5)
    assert s1 == vp.choose_shots("x", list(reversed(pool)) and pool, 5) and len(set(s1)) == 5
    assert vp.choose_shots("y", pool, 5) != s1
    assert "t3" not in vp.choose_shots("t3", pool, 29)
    with pytest.raises(SettingError):
        vp.choose_shots("x", pool[:3], 5)


# -- the official parser --------------------------------------------------------------------------
PARSE_TABLE = [
    # (raw output, label, explanation)
    ("The image shows a storm.\nLABEL: contradiction", 0, "The image shows a storm."),
    ("The sky is blue.\nLabel: Entailment", 1, "The sky is blue."),
    ("Sun.\nlabel: entails", 1, "Sun."),
    ("It is unclear.\nLABEL: neither entailment nor contradiction", None, "It is unclear."),
    ("Something.\nLABEL: unsure", None, "Something."),
    # marker wins over heuristics; the label text decides, contradict before entail
    ("This entails it.\nLABEL: contradiction (not entailment)", 0, "This entails it."),
    # "Label: x\nExplanation" shape: explanation after the first label word
    ("Label: Entailment\nThe dog is happy.", 1, "The dog is happy."),
    ("LABEL: Contradiction. The dog is sad.", 0, ". The dog is sad."),  # official quirk: the cut keeps the "."
    ("LABEL: entailment", 1, "LABEL: entailment"),  # nothing else: the whole output
    # heuristics (no marker): undecided phrases first, then entail, then contradict
    ("The image entails the claim and does not contradict it.", 1,
     "The image entails the claim and does not contradict it."),
    ("The picture contradicts the claim.", 0, "The picture contradicts the claim."),
    ("It is in harmony with the statement.", 1, "It is in harmony with the statement."),
    ("The image appears to contest the claim.", 0, "The image appears to contest the claim."),
    ("Choose entailment or contradiction: it contradicts.", None,
     "Choose entailment or contradiction: it contradicts."),
    ("Neither applies; it contradicts nothing.", None, "Neither applies; it contradicts nothing."),
    ("A cat on a mat.", None, "A cat on a mat."),
    ("", None, ""),
    # cleaning: label words removed, cut before the last "Therefore,"
    ("Entailment. The sun shines. Therefore, warm. Therefore, it entails.", 1, "The sun shines. Therefore, warm."),
    ("Contradiction: Dark sky.\nLABEL: contradiction", 0, "Dark sky."),
]


@pytest.mark.parametrize("raw,label,expl", PARSE_TABLE)
def test_official_parser(raw, label, expl):
    got_label, got_expl, _ = extract_label_and_explanation(raw)
    assert (got_label, got_expl) == (label, expl)


def test_parser_missing_and_garbage():
    assert extract_label_and_explanation(None)[:2] == (None, None)
    assert extract_label_and_explanation(float("nan"))[:2] == (None, None)
    # pandas' missing markers (nullable string columns) are missing too, as `pd.notna` says officially
    assert extract_label_and_explanation(pd.NA)[:2] == (None, None)
    assert extract_label_and_explanation(pd.Series(["x", None], dtype="string")[1])[:2] == (None, None)
    p = parse_output("ĠĠ<unk> zz qq 🙂 LABEL LABEL")
    assert p["valid"] is False and p["label_pred"] is None


def test_scene_graph_normalisation():
    x = "The image and the scene graph show a red_car near a tree. The scene graph shows smiley_emoji."
    assert normalize_sg_explanation(x) == "The image show a red car near a tree. The image shows smiley_emoji."
    assert normalize_sg_explanation("no graph here a_b") == "no graph here a_b"
    assert parse_output("The scene graph shows a cat.\nLABEL: entailment", scene_graph=True)["explanation_pred"] \
        == "The image shows a cat."


# -- metrics -------------------------------------------------------------------------------------
def _official_f1_at(t, p, s, thr):
    adjusted = np.where(s <= thr, 1 - t, p)
    return f1_score(t, adjusted, average="macro")


@pytest.mark.parametrize("seed", range(5))
def test_f1_curve_matches_sklearn(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 60))
    t = rng.integers(0, 2, n)
    p = rng.integers(0, 2, n)
    s = rng.uniform(-0.2, 1.0, n).round(2)  # ties at exact thresholds included
    curve = vm.f1_curve_arrays(t, p, s)
    expected = [_official_f1_at(t, p, s, i / 100) for i in range(101)]
    np.testing.assert_allclose(curve, expected, atol=1e-12)


def test_single_class_gold_matches_sklearn():
    t = np.ones(10, dtype=int)  # NYCartoons: entailment only
    for p in (np.ones(10, dtype=int), np.r_[np.ones(9, dtype=int), 0], np.zeros(10, dtype=int)):
        assert vm.macro_f1(t, p) == pytest.approx(f1_score(t, p, average="macro"))
    assert vm.macro_f1(t, np.r_[np.ones(9, dtype=int), 0]) <= 0.5


def test_threshold_indexing_has_no_float_equality_trap():
    assert np.arange(0, 1.01, 0.01)[70] != 0.7  # the official script's lookup failure
    assert vm.threshold(70) == 0.7
    t = np.array([1, 0, 1, 0])
    p = t.copy()
    s = np.array([0.7, 0.71, 0.69, 0.9])
    f = vm.f1_curve_arrays(t, p, s, percents=[70])[0]
    assert f == pytest.approx(_official_f1_at(t, p, s, 0.7))
    assert vm.adjusted_predictions(t, p, s, 70).tolist() == [0, 0, 0, 0]  # score == t counts as wrong
    with pytest.raises(SettingError):
        vm.threshold(0.7)


def test_adjusted_predictions_follow_the_official_rule_and_refuse_bad_input():
    t = np.array([1, 1, 0, 0, 1, 0])
    p = np.array([1, 0, 0, 1, 1, 0])
    s = np.array([0.9, 0.7, 0.53, 0.6, 0.52, -0.1])
    # official: where(score <= t, 1 - label_true, label_pred)
    assert vm.adjusted_predictions(t, p, s, 53).tolist() == np.where(s <= 0.53, 1 - t, p).tolist()
    # threshold 0 still flips negative (BLEURT) scores: F1@0 is not quite plain F1
    assert vm.adjusted_predictions(t, p, s, 0).tolist() == [1, 0, 0, 1, 1, 1]
    assert vm.f1_curve_arrays(t, p, s, percents=[0])[0] != vm.macro_f1(t, p)
    # one gold class only (NYCartoons): still adjusted, to the other class
    assert vm.adjusted_predictions([1, 1], [1, 1], [0.1, 0.9], 50).tolist() == [0, 1]
    with pytest.raises(DataError, match="NaN"):
        vm.adjusted_predictions(t, p, [np.nan] * 6, 50)
    with pytest.raises(DataError, match="NaN"):
        vm.f1_curve_arrays(t, p, [np.nan] * 6)
    with pytest.raises(DataError, match="0/1"):
        vm.adjusted_predictions([2, 1], [1, 1], [0.1, 0.9], 50)
    with pytest.raises(DataError, match="lengths differ"):
        vm.adjusted_predictions(t, p, s[:3], 50)


def test_unparsed_labels_are_wrong():
    t = np.array([1, 0, 1])
    assert vm.fill_unparsed(t, [None, None, 1]).tolist() == [0, 1, 1]


def test_paired_bootstrap_and_ci():
    rng = np.random.default_rng(0)
    t = rng.integers(0, 2, 200)
    good = np.where(rng.uniform(size=200) < 0.9, t, 1 - t)
    bad = np.where(rng.uniform(size=200) < 0.55, t, 1 - t)
    r = vm.paired_bootstrap_f1(t, good, bad, n_resamples=500)
    assert r["estimate"] > 0.2 and r["p"] < 0.01
    same = vm.paired_bootstrap_f1(t, good, good, n_resamples=200)
    assert same["estimate"] == 0 and same["p"] == 1.0
    ci = vm.f1_at_ci(t, good, np.ones(200), 0, n_resamples=300)
    assert ci["ci_low"] < ci["estimate"] < ci["ci_high"]


def _plain_macro_f1(t, p):
    """Macro-F1 over the classes present, written out (scikit-learn's rule; sklearn itself is too slow here)."""
    return float(np.mean([2 * np.sum((t == c) & (p == c)) / (np.sum(t == c) + np.sum(p == c))
                          for c in np.union1d(t, p)]))


def _loop_bootstrap_f1(t, pred, n_resamples, seed=1):
    """The straightforward version: resample items, recompute scikit-learn's macro-F1, take percentiles."""
    rng = np.random.default_rng(seed)
    n = len(t)
    vals = []
    for _ in range(n_resamples):
        idx = rng.integers(0, n, n)
        vals.append(_plain_macro_f1(t[idx], pred[idx]))
    return np.percentile(vals, [2.5, 97.5]), np.asarray(vals)


def test_vectorized_f1_ci_agrees_with_a_plain_loop():
    rng = np.random.default_rng(3)
    n = 240
    t = rng.integers(0, 2, n)
    p = np.where(rng.uniform(size=n) < 0.75, t, 1 - t)
    s = rng.uniform(size=n)
    adj = np.where(s <= 0.53, 1 - t, p)  # F1@53 by hand
    assert _plain_macro_f1(t, adj) == pytest.approx(f1_score(t, adj, average="macro"))
    (lo, hi), _ = _loop_bootstrap_f1(t, adj, 3000)
    ci = vm.f1_at_ci(t, p, s, 53, n_resamples=3000)
    assert ci["estimate"] == pytest.approx(f1_score(t, adj, average="macro"))
    assert ci["ci_low"] == pytest.approx(lo, abs=0.012)  # Monte Carlo error of a 2.5% quantile ~0.003
    assert ci["ci_high"] == pytest.approx(hi, abs=0.012)
    # single-class gold (NYCartoons): the loop and the vectorized statistic agree on the 0.5 cap too
    t1 = np.ones(60, dtype=int)
    p1 = np.where(rng.uniform(size=60) < 0.8, 1, 0)
    (lo1, hi1), _ = _loop_bootstrap_f1(t1, p1, 2000)
    ci1 = vm.f1_at_ci(t1, p1, np.ones(60), 0, n_resamples=2000)
    assert ci1["estimate"] == pytest.approx(f1_score(t1, p1, average="macro"))
    assert ci1["ci_low"] == pytest.approx(lo1, abs=0.02) and ci1["ci_high"] == pytest.approx(hi1, abs=0.02)


def test_vectorized_paired_bootstrap_agrees_with_a_plain_loop():
    rng = np.random.default_rng(4)
    n = 200
    t = rng.integers(0, 2, n)
    a = np.where(rng.uniform(size=n) < 0.8, t, 1 - t)
    b = np.where(rng.uniform(size=n) < 0.72, t, 1 - t)
    sa, sb = rng.uniform(size=n), rng.uniform(size=n)
    aa, bb = np.where(sa <= 0.3, 1 - t, a), np.where(sb <= 0.3, 1 - t, b)
    loop_rng = np.random.default_rng(5)
    diffs = []
    for _ in range(2000):
        idx = loop_rng.integers(0, n, n)
        diffs.append(_plain_macro_f1(t[idx], aa[idx]) - _plain_macro_f1(t[idx], bb[idx]))
    diffs = np.asarray(diffs)
    r = vm.paired_bootstrap_f1(t, a, b, scores_a=sa, scores_b=sb, pct=30, n_resamples=2000)
    assert r["estimate"] == pytest.approx(f1_score(t, aa, average="macro") - f1_score(t, bb, average="macro"))
    lo, hi = np.percentile(diffs, [2.5, 97.5])
    assert r["ci_low"] == pytest.approx(lo, abs=0.015) and r["ci_high"] == pytest.approx(hi, abs=0.015)
    assert (r["p"] < 0.05) == (lo > 0 or hi < 0)


def test_adequacy_pr():
    rng = np.random.default_rng(1)
    y = rng.uniform(size=300) < 0.5
    s = np.where(y, rng.normal(0.65, 0.08, 300), rng.normal(0.45, 0.08, 300))
    r = vadequacy.adequacy_pr(s, y)
    assert r["pr_auc"] > 0.8 and 0.45 < r["max_f1_threshold"] < 0.65
    with pytest.raises(DataError):
        vadequacy.adequacy_pr(s, np.ones(300, dtype=bool))


# -- loaders and bad input -----------------------------------------------------------------------
def test_sample_loads_in_both_formats(sample):
    a = BENCH.load(sample)
    b = BENCH.load(sample / "vflute-v2-test.csv")
    assert len(a) == len(b) == 16
    assert set(a["dataset"]) == set(vd.DATASETS)
    assert (a.loc[a["source_dataset"] == "nycartoons", "label"] == "entailment").all()
    train = BENCH.load(sample, split="train")
    assert len(train) == 12 and train["split"].eq("train").all()


def test_hf_parquet_roundtrip(sample, tmp_path):
    items = BENCH.load(sample)
    write_hf_parquet(items, tmp_path / "data" / "test-00000-of-00001.parquet")
    hf = BENCH.load(tmp_path)
    assert hf["id"].tolist() == [f"{s}-test-{i}" for i, s in enumerate(items["source_dataset"])]
    assert hf["image"].map(lambda im: im["path"].rsplit(".", 1)[1]).tolist() == \
        items["image"].str.rsplit(".", n=1).str[1].tolist()  # jpg iff JPEG bytes, as the official conversion
    assert hf["prompt"].tolist() == [vp.assigned_prompt("test", i) for i in range(len(hf))]
    reqs = BENCH.requests(hf, "zero_shot")
    assert isinstance(reqs[0].images[0], dict) and reqs[0].images[0]["bytes"]


def test_seeded_draw_is_not_the_released_assignment(shared_data):
    """The documented match count must stay true: if the draw ever reproduced the release, the deviation is stale."""
    items = BENCH.load(shared_data / "vflute" / "vflute-v2-test.json")
    same = sum(vp.assigned_prompt("test", int(i)) == p for i, p in zip(items["index"], items["prompt"], strict=True))
    assert (same, len(items)) == vp.SEEDED_RELEASE_MATCH
    assert items["prompt_origin"].eq("released").all() and BENCH.seeded_prompt_count(items) == 0
    assert BENCH.data_stats(items)["prompts_redrawn"] == 0


def test_redrawn_instructions_are_a_deviation(sample, tmp_path):
    items = BENCH.load(sample)
    write_hf_parquet(items, tmp_path / "data" / "test-00000-of-00001.parquet")
    hf = BENCH.load(tmp_path)
    assert hf["prompt_origin"].eq("seeded").all()
    assert {r.meta["prompt_origin"] for r in BENCH.requests(hf, "zero_shot")} == {"seeded"}
    assert {r.meta["prompt_origin"] for r in BENCH.requests(items, "zero_shot")} == {"released"}
    assert {r.meta["prompt_origin"] for r in BENCH.requests(items, "zero_shot", prompt_source="seeded")} == {"seeded"}
    scored = BENCH.evaluate(ScriptedModel(_oracle(items)), hf.head(3), "zero_shot", store=tmp_path / "hf.jsonl",
                            progress=False, scorer="none")
    devs = [d for d in scored.attrs["deviations"] if d.what == "instruction assignment"]
    assert len(devs) == 1 and devs[0].ours.startswith("3 item(s) re-drawn")
    released = BENCH.evaluate(ScriptedModel(_oracle(items)), items.head(3), "zero_shot",
                              store=tmp_path / "rel.jsonl", progress=False, scorer="none")
    assert not [d for d in released.attrs["deviations"] if d.what == "instruction assignment"]


def test_bad_records_name_row_and_field(tmp_path, sample):
    recs = json.loads((sample / "vflute-v2-test.json").read_text())
    recs[2]["label"] = "neutral"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(recs))
    with pytest.raises(DataError, match=r"bad.json, row 3, field 'label'"):  # the third record
        BENCH.load(bad)
    recs[2]["label"] = "entailment"
    del recs[4]["claim"]
    bad.write_text(json.dumps(recs))
    with pytest.raises(DataError, match="field 'claim'"):
        BENCH.load(bad)
    bad.write_text("{not json")
    with pytest.raises(DataError, match="not valid JSON"):
        BENCH.load(bad)
    with pytest.raises(DataError):
        BENCH.load(tmp_path / "nothing-here")
    with pytest.raises(SettingError):
        BENCH.load(sample, split="dev-2")


def test_missing_and_unsafe_images(sample, tmp_path):
    items = BENCH.load(sample).head(2).copy()
    items.loc[0, "image"] = "vismet/test/999.png"
    with pytest.raises(ImageError, match="vismet-test-0"):
        BENCH.requests(items, "zero_shot")
    items.loc[0, "image"] = "../../etc/passwd"
    with pytest.raises(ImageError, match="unsafe"):
        BENCH.requests(items, "zero_shot")
    # the -Image ablation needs no image at all
    assert len(BENCH.requests(items, "hypothesis_only")) == 2
    with pytest.raises(SettingError):
        BENCH.requests(items, "ten_shot")


# -- requests and the pipeline --------------------------------------------------------------------
def test_requests_per_setting(sample):
    items = BENCH.load(sample)
    zs = BENCH.requests(items, "zero_shot")
    assert zs[0].messages[0]["content"][1]["text"] == vp.fill_claim(items["prompt"][0], items["claim"][0])
    assert zs[0].params.num_beams == 3 and zs[0].params.max_new_tokens == 256 and not zs[0].params.do_sample
    seeded = BENCH.requests(items, "zero_shot", prompt_source="seeded")
    assert seeded[5].prompt_text == vp.fill_claim(vp.assigned_prompt("test", 5), items["claim"][5])
    ho = BENCH.requests(items, "hypothesis_only")
    assert ho[0].images[0].size == (336, 336) and ho[0].images[0].getpixel((5, 5)) == (255, 255, 255)
    fs = BENCH.requests(items, "few_shot", train=sample, k=3)
    assert len(fs[0].images) == 4 and len(fs[0].messages) == 7
    assert fs[0].messages[1]["content"][0]["text"].endswith(("LABEL: entailment", "LABEL: contradiction"))
    assert fs[0].meta["shots"] == BENCH.requests(items.iloc[::-1], "few_shot", train=sample, k=3)[-1].meta["shots"]
    with pytest.raises(SettingError):
        BENCH.requests(items, "few_shot")


def test_oracle_pipeline_scores_perfectly(sample, tmp_path):
    items = BENCH.load(sample)
    model = ScriptedModel(_oracle(items))
    scored = BENCH.evaluate(model, items, "zero_shot", store=tmp_path / "zs.jsonl", progress=False, scorer="none")
    t = BENCH.tables(scored)
    assert t["Table 4"].iloc[0].tolist() == [100.0, 100.0, 100.0]
    assert scored["valid"].all()
    # a rerun is served from the store
    calls = model.calls
    BENCH.evaluate(model, items, "zero_shot", store=tmp_path / "zs.jsonl", progress=False, scorer="none")
    assert model.calls == calls


def test_scene_graph_runs_two_steps(sample, tmp_path):
    items = BENCH.load(sample).head(4)
    seen = []

    def respond(req):
        seen.append(req.prompt_text)
        if "Scene Graph:" in req.prompt_text and "Use the image" not in req.prompt_text:
            return '{"objects": ["cat_emoji", "red_car"]}'
        return "The scene graph shows a red_car.\nLABEL: contradiction"
    out = BENCH.run(ScriptedModel(respond), items, "scene_graph", store=tmp_path / "sg.jsonl", progress=False)
    assert len(out) == 4 and len(seen) == 8
    assert out["scene_graph"].str.contains("red_car").all()
    scored = BENCH.score(BENCH.predictions(items, out), scorer="none")
    assert (scored["explanation_pred"] == "The image shows a red car.").all()


def test_failures_count_as_wrong(sample, tmp_path):
    items = BENCH.load(sample).head(6)

    def respond(req):
        if req.meta["item_id"].endswith("-0"):
            raise RuntimeError("backend down")
        return "blah ĠĠ"
    scored = BENCH.evaluate(ScriptedModel(respond), items, "zero_shot", store=tmp_path / "f.jsonl",
                            progress=False, scorer="none")
    assert len(scored) == 6 and (~scored["correct"]).all() and scored["label_pred"].isna().all()


# -- scoring files ---------------------------------------------------------------------------------
def test_score_file_official_shapes(sample, tmp_path):
    items = BENCH.load(sample)
    rng = random.Random(0)
    raw = pd.DataFrame({"id": items["id"], "output": [f"{e}\nLABEL: {rng.choice(vd.LABELS)}"
                                                       for e in items["explanation"]]})
    raw.to_csv(tmp_path / "preds.csv", index=False)
    res = BENCH.score_file(tmp_path / "preds.csv", source=sample, scorer="none", n_resamples=200)
    labels = [1 if o.endswith("entailment") else 0 for o in raw["output"]]
    assert res["metrics"]["F1@0"] == round(100 * f1_score(items["label_true"], labels, average="macro"), 2)
    assert res["metrics"]["F1@60"] == res["metrics"]["F1@0"]  # 'none': every explanation passes
    assert res["coverage"]["missing"] == 0 and res["invalid"] == 0
    # id,label,explanation with text labels, a missing label and a missing row
    norm = pd.DataFrame({"id": items["id"][1:], "label": ["entailment", None] + [str(x) for x in labels[3:]],
                         "explanation": items["explanation"][1:]})
    norm.to_csv(tmp_path / "norm.csv", index=False)
    res2 = BENCH.score_file(tmp_path / "norm.csv", source=sample, scorer="none", ci=False)
    # the missing row is counted as missing (and wrong), the unreadable label as invalid
    assert res2["coverage"]["missing"] == 1 and res2["invalid"] == 1 and res2["scored"] == len(items)
    pd.DataFrame({"id": ["nope-test-1"], "output": ["x"]}).to_csv(tmp_path / "alien.csv", index=False)
    with pytest.raises(DataError, match="not in the gold data"):
        BENCH.score_file(tmp_path / "alien.csv", source=sample, scorer="none")


def test_score_file_store_and_cli(sample, tmp_path, capsys):
    from vlamb_nb.cli import main

    items = BENCH.load(sample)
    BENCH.run(ScriptedModel(_oracle(items)), items, "zero_shot", store=tmp_path / "run.jsonl", progress=False)
    rc = main(["score", "vflute", "--predictions", str(tmp_path / "run.jsonl"), "--source", str(sample),
               "--scorer", "none", "--json", "-o", "n_resamples=100"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["metrics"]["F1@0"] == 100.0 and out["scored"] == 16
    rc = main(["data", "stats", "vflute", "--source", str(sample), "--json"])
    stats = json.loads(capsys.readouterr().out)
    assert rc == 0 and stats["n"] == 16 and sum(stats["by_dataset"].values()) == 16


def _macro_f1(t, p):
    """Macro F1 over the labels in ``t`` or ``p``, written out (sklearn's own takes 4 ms a call, too slow for a
    2000-resample reference loop; the test checks the two agree)."""
    f = []
    for c in np.union1d(t, p):
        tp, fp, fn = np.sum((p == c) & (t == c)), np.sum((p == c) & (t != c)), np.sum((p != c) & (t == c))
        f.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0)
    return float(np.mean(f))


def _paired_loop(t, a, b, n_resamples, seed=0):
    """Koehn's paired bootstrap written out plainly: the same resampled items for both systems."""
    assert _macro_f1(t, a) == pytest.approx(f1_score(t, a, average="macro"))
    rng = np.random.default_rng(seed)
    d = []
    for _ in range(n_resamples):
        idx = rng.integers(0, len(t), len(t))
        d.append(_macro_f1(t[idx], a[idx]) - _macro_f1(t[idx], b[idx]))
    return np.array(d)


def test_two_runs_pair_items_by_id_and_apply_each_runs_scores():
    """V-FLUTE's runs compare through the base's one step: items paired by id whatever their order, each run's
    own ExplanationScores deciding its F1@t (the official rule), F1@53 given as a metric of the same form."""
    from vlamb_nb.compare import paired

    rng = np.random.default_rng(4)
    n = 120
    base = pd.DataFrame({"id": [f"x-{i}" for i in range(n)], "label_true": rng.integers(0, 2, n)})
    a = base.assign(label_pred_filled=np.where(rng.random(n) < 0.8, base["label_true"], 1 - base["label_true"]),
                    explanation_score=rng.random(n))
    b = base.assign(label_pred_filled=rng.integers(0, 2, n), explanation_score=rng.random(n))
    res = BENCH.compare_runs(a, b.iloc[::-1], n_resamples=300, same_items=True).set_index("metric")  # B reordered
    at53 = paired("vflute", a, b, metrics=[vm._f1_at(53, "", 0)], n_resamples=300).set_index("metric")
    t = base["label_true"].to_numpy()
    for pct, row in ((0, res.loc["F1@0"]), (60, res.loc["F1@60"]), (53, at53.loc["F1@53"])):
        adj_a = np.where(a["explanation_score"] <= pct / 100, 1 - t, a["label_pred_filled"])
        adj_b = np.where(b["explanation_score"] <= pct / 100, 1 - t, b["label_pred_filled"])
        want = f1_score(t, adj_a, average="macro") - f1_score(t, adj_b, average="macro")
        assert row["diff"] == pytest.approx(100 * want)
    loop = _paired_loop(t, a["label_pred_filled"].to_numpy(), b["label_pred_filled"].to_numpy(), 2000)
    assert res.loc["F1@0", "ci_low"] == pytest.approx(100 * np.quantile(loop, 0.025), abs=3)
    assert res.loc["F1@0", "p"] < 0.01  # an 80%-accurate system against a coin
    with pytest.raises(DataError, match="1 only in A"):
        BENCH.compare_runs(a, b.iloc[1:], same_items=True)
    with pytest.raises(DataError, match="gold labels"):
        BENCH.compare_runs(a, b.assign(label_true=1 - b["label_true"]))


def test_score_file_compares_two_prediction_files(shared_data, tmp_path):
    """Two official-shape files on the released split: the paired bootstrap of F1@0 (A - B) is reported."""
    items = BENCH.load(shared_data / "vflute" / "vflute-v2-test.json")
    rng = random.Random(0)
    def flip(label, p):
        return label if rng.random() > p else ("contradiction" if label == "entailment" else "entailment")
    good = [f"{e}\nLABEL: {flip(lab, 0.1)}" for e, lab in zip(items["explanation"], items["label"], strict=True)]
    bad = [f"{e}\nLABEL: {flip(lab, 0.5)}" for e, lab in zip(items["explanation"], items["label"], strict=True)]
    pd.DataFrame({"id": items["id"], "output": good}).to_csv(tmp_path / "a.csv", index=False)
    pd.DataFrame({"id": items["id"], "output": bad}).to_csv(tmp_path / "b.csv", index=False)
    a, b = (BENCH.scored_file(tmp_path / f, source=shared_data / "vflute", scorer="none") for f in ("a.csv", "b.csv"))
    tests = BENCH.compare_runs(a, b, n_resamples=300).set_index("metric")
    t = items["label_true"].to_numpy()
    fa = f1_score(t, [1 if o.endswith("entailment") else 0 for o in good], average="macro")
    fb = f1_score(t, [1 if o.endswith("entailment") else 0 for o in bad], average="macro")
    assert tests.loc["F1@0", "diff"] == pytest.approx(100 * (fa - fb))
    assert tests.loc["F1@0", "p"] < 0.01 and tests.loc["F1@0", "n"] == 723
    assert {c["paper_p"] for c in vm.PAPER_COMPARISONS} >= {"< 0.03", "< 0.002"}


def test_prediction_files_are_scored_alike_beside_the_runs(sample, tmp_path):
    from vlamb_nb.benchmarks.vflute import report as report

    items = BENCH.load(sample)
    demo = BENCH.evaluate(ScriptedModel(_oracle(items)), items, "zero_shot", store=tmp_path / "o.jsonl",
                          progress=False, scorer="none")
    pd.DataFrame({"id": items["id"], "label": 1, "explanation": items["explanation"]}).to_csv(
        tmp_path / "entail.csv", index=False)
    runs = report.run_tables(BENCH, report.scored_runs(BENCH, {"oracle": demo},
                                                        {"always entailment": str(tmp_path / "entail.csv")},
                                                        sample, "none"))
    assert list(runs) == ["oracle", "always entailment"]
    ny = runs["always entailment"]["F1 curve"].query("dataset == 'nycartoons' and pct == 0")["f1"].iloc[0]
    sub = items[items["dataset"] == "nycartoons"]
    assert ny == pytest.approx(f1_score(sub["label_true"], [1] * len(sub), average="macro"))
    assert runs["oracle"]["Fig. 6"]["drop_pct"].eq(0).all()
    vplots.plot_drop({k: v["Fig. 6"] for k, v in runs.items()})
    with pytest.raises(SettingError, match="twice"):
        report.scored_runs(BENCH, {"oracle": demo}, {"oracle": str(tmp_path / "entail.csv")}, sample, "none")


# -- human adequacy labels (§5.3) ------------------------------------------------------------------
class OverlapScorer:
    """A tiny deterministic scorer for tests: token Jaccard overlap with the reference."""

    name, substitute, description = "overlap", True, "token Jaccard overlap (test scorer)"

    def score(self, predictions, references):
        out = []
        for p, r in zip(predictions, references, strict=True):
            a, b = set(p.lower().split()), set(r.lower().split())
            out.append(len(a & b) / len(a | b) if a | b else 0.0)
        return out


def _labels_csv(path, rows, header="id,adequate,adequate_2"):
    path.write_text(header + "\n" + "\n".join(",".join(str(x) for x in r) for r in rows) + "\n")
    return path


def test_read_adequacy_labels(tmp_path):
    one = vadequacy.read_adequacy_labels(_labels_csv(tmp_path / "a.csv", [("x-1", 1), (" x-2 ", "0")], "id,adequate"))
    assert one.to_dict("records") == [{"id": "x-1", "adequate": 1}, {"id": "x-2", "adequate": 0}]
    two = vadequacy.read_adequacy_labels(_labels_csv(tmp_path / "b.csv", [("x-1", 1, 0), ("x-2", 0, 0)]))
    assert list(two.columns) == ["id", "adequate", "adequate_2"] and two["adequate_2"].tolist() == [0, 0]


@pytest.mark.parametrize("text,match", [
    ("id,label\nx-1,1\n", "missing column"),
    ("id,adequate\n", "no label rows"),
    ("id,adequate\nx-1,yes\n", r"row 1, field 'adequate': expected 0 or 1"),
    ("id,adequate,adequate_2\nx-1,1,1\nx-2,0,\n", r"row 2, field 'adequate_2'"),
    ("id,adequate\nx-1,1\nx-1,0\n", "repeats row 1"),
    ("id,adequate\n,1\n", "empty id"),
])
def test_read_adequacy_labels_errors(tmp_path, text, match):
    (tmp_path / "l.csv").write_text(text)
    with pytest.raises(DataError, match=match):
        vadequacy.read_adequacy_labels(tmp_path / "l.csv")
    with pytest.raises(DataError, match="not found"):
        vadequacy.read_adequacy_labels(tmp_path / "missing.csv")


def _judged(n_agree=20, seed=0):
    # annotators agree on n_agree items, separable by score (adequate iff score > 0.5), and disagree on 6
    # more whose scores would break the separation if they were (wrongly) counted with annotator 1's label
    rng = np.random.default_rng(seed)
    ade = np.arange(n_agree) % 2
    score = np.where(ade == 1, rng.uniform(0.55, 0.95, n_agree), rng.uniform(0.05, 0.45, n_agree))
    ids = [f"memecap-test-{i}" for i in range(n_agree + 6)]
    a1 = list(ade) + [1, 1, 1, 0, 0, 0]
    a2 = list(ade) + [0, 0, 0, 1, 1, 1]
    scores = list(score) + [0.1, 0.15, 0.2, 0.9, 0.85, 0.8]
    scored = pd.DataFrame({"id": ids + ["memecap-test-999"], "explanation_score": scores + [0.5]})
    labels = pd.DataFrame({"id": ids, "adequate": a1, "adequate_2": a2})
    return scored, labels


def test_adequacy_report_uses_agreed_items_and_kappa():
    from sklearn.metrics import cohen_kappa_score

    scored, labels = _judged()
    rep = vadequacy.adequacy_report(scored, labels, n_resamples=200)
    assert rep["n_labelled"] == 26 and rep["n_used"] == 20 and rep["n_adequate"] == 10
    assert rep["pr_auc"] == pytest.approx(1.0) and rep["max_f1"] == pytest.approx(1.0)
    lowest_adequate = scored["explanation_score"][:20][labels["adequate"][:20] == 1].min()
    assert rep["max_f1_threshold"] == pytest.approx(lowest_adequate)
    assert rep["p75_r75_threshold"] is not None
    assert rep["cohen_kappa"]["estimate"] == pytest.approx(cohen_kappa_score(labels["adequate"], labels["adequate_2"]))
    # one annotator only: the disagreement items now count and the separation is gone
    single = vadequacy.adequacy_report(scored, labels[["id", "adequate"]], n_resamples=0)
    assert single["n_used"] == 26 and single["pr_auc"] < 0.95 and "cohen_kappa" not in single
    assert "pr_auc_ci" not in single


def test_adequacy_report_errors():
    scored, labels = _judged()
    with pytest.raises(DataError, match="not among the scored predictions"):
        vadequacy.adequacy_report(scored, pd.concat([labels, pd.DataFrame([{"id": "alien-1", "adequate": 1,
                                                                          "adequate_2": 1}])]))
    with pytest.raises(DataError, match="both adequate and inadequate"):
        vadequacy.adequacy_report(scored, labels.assign(adequate=1, adequate_2=1), n_resamples=0)


def test_adequacy_comparison_and_figure():
    from vlamb_nb.benchmarks.vflute import report as report

    scored, labels = _judged()
    rep = vadequacy.adequacy_report(scored, labels, n_resamples=0)
    cmp = vadequacy.adequacy_comparison(rep).set_index("column")
    assert cmp.loc["PR-AUC", "paper"] == 0.79 and cmp.loc["PR-AUC", "ours"] == pytest.approx(rep["pr_auc"])
    assert cmp.loc["Cohen kappa", "paper"] == 0.47 and cmp.loc["max-F1 threshold", "paper"] == 0.53
    fig = vplots.plot_adequacy_pr(rep)
    assert len(fig.axes[0].lines) == 3  # the curve and the two threshold markers


def test_score_file_with_labels(sample, tmp_path, capsys):
    from sklearn.metrics import auc, precision_recall_curve

    from vlamb_nb.cli import main

    items = BENCH.load(sample)
    rng = random.Random(1)
    # half the explanations are the reference (adequate), half unrelated text (inadequate)
    good = [i % 2 == 0 for i in range(len(items))]
    expl = [e if g else f"something else entirely {rng.random()}" for e, g in zip(items["explanation"], good,
                                                                                  strict=True)]
    pd.DataFrame({"id": items["id"], "label": items["label"], "explanation": expl}).to_csv(tmp_path / "p.csv",
                                                                                             index=False)
    lab = pd.DataFrame({"id": items["id"], "adequate": [int(g) for g in good]})
    lab.loc[1, "adequate"] = 1  # one judgement the score disagrees with
    lab.to_csv(tmp_path / "labels.csv", index=False)
    scored = BENCH.scored_file(tmp_path / "p.csv", source=sample, scorer=OverlapScorer())
    res = {"adequacy": vadequacy.adequacy_report(scored, vadequacy.read_adequacy_labels(tmp_path / "labels.csv"),
                                                 n_resamples=100)}
    s = OverlapScorer().score(expl, list(items["explanation"]))
    prec, rec, _ = precision_recall_curve(lab["adequate"].astype(bool), s)
    assert res["adequacy"]["pr_auc"] == pytest.approx(auc(rec, prec))
    assert res["adequacy"]["n_used"] == len(items) and res["adequacy"]["n_labelled"] == len(items)
    assert res["adequacy"]["scorer"] == "overlap" and res["adequacy"]["scorer_substitute"] is True
    assert res["adequacy"]["annotators"] == 1
    # `vlamb-nb score` prints the declared metrics, the same shape as every paper: labels are no option of it
    rc = main(["score", "vflute", "--predictions", str(tmp_path / "p.csv"), "--source", str(sample),
               "--scorer", "none", "-o", f"labels={tmp_path / 'labels.csv'}"])
    assert rc != 0 and "unknown vflute score option(s): labels" in capsys.readouterr().err


# -- Table 4's random baseline ---------------------------------------------------------------------
@pytest.mark.parametrize("n_pos,n_neg", [(3, 2), (2, 4), (4, 0), (1, 1)])
def test_expected_random_f1_is_the_mean_over_every_guess_vector(n_pos, n_neg):
    import itertools

    gold = [1] * n_pos + [0] * n_neg
    vals = [f1_score(gold, list(g), average="macro") for g in itertools.product((0, 1), repeat=len(gold))]
    got = vm.expected_random_f1(n_pos, n_neg)
    assert got["mean"] == pytest.approx(np.mean(vals)) and got["sd"] == pytest.approx(np.std(vals))
    # plug-in: macro-F1 of the expected confusion counts
    n = n_pos + n_neg
    plug = [2 * c * 0.5 / (c + n * 0.5) for c in (n_pos, n_neg) if c + n * 0.5 > 0]
    assert vm.expected_random_f1(n_pos, n_neg, method="plugin")["mean"] == pytest.approx(np.mean(plug))
    with pytest.raises(SettingError):
        vm.expected_random_f1(n_pos, n_neg, method="simulate")
    with pytest.raises(DataError):
        vm.expected_random_f1(0, 0)


def test_random_baseline_on_the_release_reproduces_table4(shared_data):
    items = BENCH.load(shared_data / "vflute" / "vflute-v2-test.json")
    rb = vm.random_baseline(items).set_index("dataset")
    overall = rb.loc["overall"]
    assert (overall["n"], overall["n_entailment"], overall["n_contradiction"]) == (723, 405, 318)
    assert round(overall["plugin_f1"], 2) == 49.82  # the published value, to the printed digit
    assert overall["expected_f1"] == pytest.approx(49.801, abs=1e-3)  # the exact mean: 0.02 lower
    assert overall["sd"] == pytest.approx(1.857, abs=1e-3)
    assert list(rb.index[1:]) == list(vd.DATASETS)
    assert rb.loc["nycartoons", "plugin_f1"] == pytest.approx(100 / 3)  # entailment-only: a second class at F1 0
    cmp = vm.random_baseline_comparison(vm.random_baseline(items))
    assert cmp["paper"].tolist() == [49.82, 49.82] and cmp["match"].all()
    assert cmp.loc[0, "method"].startswith("plug-in") and abs(cmp.loc[0, "diff"]) < 0.005
    from vlamb_nb.benchmarks.vflute import report as report

    sec = report.random_baseline_section(items)
    assert sec["by dataset"].loc[0, "plugin_f1"] == 49.82


# -- human evaluation: Table 6 and Fig. 7 -----------------------------------------------------------
PAPER_T6 = {"LLaVA-7B eViL+VF": (25, 74), "LLaVA-34B SG": (20, 67), "GPT-4 (5 shot)": (38, 75)}  # notes §6


def _write_labels(path, rows):
    pd.DataFrame(rows, columns=["id", "model", "setting", "label"]).to_csv(path, index=False)
    return path


def _paper_like_labels(tmp_path):
    """Two annotators whose agreed judgements give Table 6's fractions (95 items, as in §5)."""
    ade1, ade2 = [], []
    errors = list(vhuman.ERROR_TYPES)
    for m, (adequate, agreed) in PAPER_T6.items():
        for i in range(95):
            iid = f"memecap-test-{i}"
            if i < adequate:
                a, b = "Adequate", "Adequate"
            elif i < agreed:  # both inadequate; the error types sometimes differ
                a, b = errors[i % 3], errors[(i + (i % 2)) % 3]
            else:  # split: out of the denominator
                a, b = "Adequate", "Verbosity"
            ade1.append((iid, m, "adequacy", a))
            ade2.append((iid, m, "adequacy", b))
    models = list(PAPER_T6)
    pref1, pref2 = [], []
    plan = [models[0]] * 12 + [models[1]] * 4 + [models[2]] * 23 + [vhuman.NO_PREFERENCE] * 13
    for i in range(95):
        iid = f"memecap-test-{i}"
        a = plan[i] if i < len(plan) else models[0]
        b = plan[i] if i < len(plan) else models[2]  # 43 items split
        pref1.append((iid, "", "preference", a))
        pref2.append((iid, "", "preference", b))
    return ([_write_labels(tmp_path / "ade1.csv", ade1), _write_labels(tmp_path / "ade2.csv", ade2)],
            [_write_labels(tmp_path / "pref1.csv", pref1), _write_labels(tmp_path / "pref2.csv", pref2)])


def test_table6_aggregation_reproduces_the_published_shares(tmp_path):
    from vlamb_nb import stats

    ade, pref = _paper_like_labels(tmp_path)
    t6 = vhuman.table6(ade, pref)
    table = t6["Table 6"]
    assert list(table.index) == ["Adequate %", "Preference %"] and list(table.columns) == list(PAPER_T6)
    assert table.loc["Adequate %"].tolist() == [33.78, 29.85, 50.67]
    assert table.loc["Preference %"].tolist() == [23.08, 7.69, 44.23]
    c = t6["counts"].set_index(["measure", "model"])
    assert (c.loc[("Adequate %", "GPT-4 (5 shot)"), "k"], c.loc[("Adequate %", "GPT-4 (5 shot)"), "n"]) == (38, 75)
    assert c.loc[("Preference %", vhuman.NO_PREFERENCE), ["k", "n"]].tolist() == [13, 52]
    w = stats.wilson(25, 74)
    assert c.loc[("Adequate %", "LLaVA-7B eViL+VF"), "ci_low"] == pytest.approx(100 * w.ci_low)
    assert c.loc[("Adequate %", "LLaVA-7B eViL+VF"), "ci_high"] == pytest.approx(100 * w.ci_high)
    assert t6["split"] == {"adequacy": (95 - 74) + (95 - 67) + (95 - 75), "preference": 43}
    assert t6["pending"] == {"adequacy": 0, "preference": 0}
    assert -1 <= t6["kappa"]["estimate"] <= 1
    cmp = vhuman.table6_comparison(t6)
    t6_rows = cmp[cmp["table"] == "Table 6"]
    assert len(t6_rows) == 6 and t6_rows["match"].all() and t6_rows["paper_in_ci"].all()
    assert cmp.iloc[-1]["column"] == "Cohen kappa" and cmp.iloc[-1]["paper"] == 0.47
    # our run names are mapped onto the paper's columns
    renamed = {m: f"ours-{k}" for k, m in enumerate(PAPER_T6)}
    for p in (*ade, *pref):
        df = pd.read_csv(p, keep_default_na=False)
        df["model"] = df["model"].map(lambda m: renamed.get(m, m))
        df["label"] = df["label"].map(lambda x: renamed.get(x, x))
        df.to_csv(p, index=False)
    t6r = vhuman.table6(ade, pref)
    unmapped = vhuman.table6_comparison(t6r)
    assert (unmapped["flag"] == "not in the paper").sum() == 6
    mapped = vhuman.table6_comparison(t6r, {v: k for k, v in renamed.items()})
    assert mapped.loc[mapped["table"] == "Table 6", "match"].all()


def test_table6_one_annotator_and_pending_rows(tmp_path):
    rows = [("vismet-test-1", "a", "adequacy", "Adequate"), ("vismet-test-2", "a", "adequacy", "Hallucination"),
            ("vismet-test-1", "b", "adequacy", "Verbosity")]
    one = vhuman.table6(_write_labels(tmp_path / "one.csv", rows))
    assert one["Table 6"].loc["Adequate %"].tolist() == [50.0, 0.0] and "kappa" not in one
    assert "Preference %" not in one["Table 6"].index
    # a second annotator who has judged one explanation so far: the others are pending, not counted
    two = vhuman.table6([tmp_path / "one.csv", _write_labels(tmp_path / "two.csv", rows[:1])])
    assert two["pending"]["adequacy"] == 2
    assert two["counts"].set_index("model").loc["a", ["k", "n"]].tolist() == [1, 1]
    assert np.isnan(two["counts"].set_index("model").loc["b", "percent"])


def test_error_taxonomy_pools_agreed_inadequate_labels(tmp_path):
    ade, _ = _paper_like_labels(tmp_path)
    tax = vhuman.error_taxonomy(ade)
    fig7 = tax["Fig. 7"]
    assert list(fig7.columns) == list(vhuman.ERROR_TYPES) and list(fig7.index) == list(PAPER_T6)
    c = tax["counts"].set_index(["model", "error"])
    # GPT-4: 75 - 38 = 37 agreed-inadequate explanations, two error labels each; the split ones never count
    assert c.loc[("GPT-4 (5 shot)", "Hallucination"), "explanations"] == 37
    assert c.loc[("GPT-4 (5 shot)", "Hallucination"), "n"] == 74
    assert c.loc[("GPT-4 (5 shot)", "Verbosity"), "k"] == 0  # "Verbosity" only appears on split items
    assert np.allclose(tax["counts"].groupby("model")["percent"].sum(), 100)
    a1, a2 = (pd.read_csv(p, keep_default_na=False) for p in ade)
    both_bad = (a1["label"] != "Adequate") & (a2["label"] != "Adequate") & (a1["model"] == "LLaVA-34B SG")
    expected = (a1.loc[both_bad, "label"] == "Unsound reasoning").sum() + (
        a2.loc[both_bad, "label"] == "Unsound reasoning").sum()
    assert c.loc[("LLaVA-34B SG", "Unsound reasoning"), "k"] == expected
    fig = vplots.plot_error_taxonomy(tax["counts"])
    assert fig.axes[0].get_title().startswith("Fig. 7")


def test_human_eval_labels_are_checked(tmp_path):
    bad = _write_labels(tmp_path / "bad.csv", [("x-1", "a", "adequacy", "Boring")])
    with pytest.raises(DataError, match="Boring"):
        vhuman.table6(bad)
    with pytest.raises(DataError, match="no adequacy labels"):
        vhuman.error_taxonomy(tmp_path / "missing.csv")
    ok = _write_labels(tmp_path / "ok.csv", [("x-1", "a", "adequacy", "Adequate")])
    pref = _write_labels(tmp_path / "p.csv", [("x-1", "", "preference", "z")])
    with pytest.raises(DataError, match="'z' is not one of"):
        vhuman.table6(ok, pref)


def test_human_eval_annotation_flow(sample, tmp_path):
    from vlamb_nb.benchmarks.vflute import report as report

    items = BENCH.load(sample)
    oracle = BENCH.evaluate(ScriptedModel(_oracle(items)), items, "zero_shot", store=tmp_path / "o.jsonl",
                            progress=False, scorer="none")
    lazy = BENCH.evaluate(ScriptedModel(lambda r: "A picture.\nLABEL: entailment"), items, "zero_shot",
                          store=tmp_path / "l.jsonl", progress=False, scorer="none")
    frame = vhuman.annotation_frame({"oracle": oracle, "lazy": lazy}, n=5, seed=1)
    assert len(frame) == 10 and frame["id"].nunique() == 5
    assert frame.groupby("id", sort=False)["model"].agg(list).tolist() == [["oracle", "lazy"]] * 5  # adjacent
    assert frame["question"].str.contains("reference explanation").all()
    assert frame.loc[frame["model"] == "lazy", "response"].str.startswith("[entailment] A picture.").all()
    assert frame["image"].map(lambda p: str(p).endswith((".png", ".jpg"))).all()
    assert vhuman.annotation_frame({"oracle": oracle, "lazy": lazy}, n=5, seed=1).equals(frame)
    with pytest.raises(DataError, match="share no items"):
        vhuman.annotation_frame({"a": oracle, "b": lazy.assign(id="x-" + lazy["id"])})
    with pytest.raises(DataError, match="another claim"):
        vhuman.annotation_frame({"a": oracle, "b": lazy.assign(claim="?")})
    ade_path, pref_path = tmp_path / "ade.csv", tmp_path / "pref.csv"
    assert report.human_eval_section(ade_path, pref_path) is None  # nothing labelled yet
    # the generic annotator, with the paper's categories
    alien = lazy.assign(id="x-" + lazy["id"])
    h = report.human_eval_annotators({"oracle": oracle, "lazy": lazy, "alien": alien}, ade_path, pref_path, n=5,
                                     seed=1)
    assert h["runs"] == ["oracle", "lazy"] and h["dropped"] == ["alien"] and h["frame"].equals(frame)
    ann = h["annotators"]
    assert ann["adequacy"].labels == vhuman.ADEQUACY_LABELS
    assert ann["preference"].labels == ("oracle", "lazy", vhuman.NO_PREFERENCE)
    while not ann["adequacy"].finished:
        ann["adequacy"].label("Adequate" if ann["adequacy"].current["model"] == "oracle" else "Hallucination")
    while not ann["preference"].finished:
        ann["preference"].label("oracle")
    sec = report.human_eval_section(ade_path, pref_path, models=h["runs"])
    assert sec["Table 6"].loc["Adequate %"].tolist() == [100.0, 0.0]
    assert sec["Table 6"].loc["Preference %"].tolist() == [100.0, 0.0]
    assert sec["Fig. 7"].loc["lazy", "Hallucination"] == 100.0 and np.isnan(sec["Fig. 7"].loc["oracle"]).all()
    assert (sec["comparison"]["flag"] == "not in the paper").all()
    json.dumps(sec["summary"])  # recordable
    pytest.importorskip("ipywidgets")
    box = vhuman.annotators(frame, tmp_path / "w.csv")["adequacy"].widget()
    assert list(box.buttons) == [*vhuman.ADEQUACY_LABELS, "Skip"]
