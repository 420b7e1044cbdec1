"""MUCAR: loader on the real release and on generated samples, prompts, parser, Acc_p/Acc_q, audit, CLI."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from vlamb_nb import cli
from vlamb_nb.benchmarks.mucar import audit, parse, prompts, score
from vlamb_nb.benchmarks.mucar import data as data
from vlamb_nb.benchmarks.mucar import judge as mjudge
from vlamb_nb.benchmarks.mucar.benchmark import BENCHMARK
from vlamb_nb.errors import DataError, ImageError, SettingError
from vlamb_nb.models import ScriptedModel

B = BENCHMARK


@pytest.fixture(scope="module")
def release(shared_data):
    path = shared_data / "mucar" / "data-all.json"
    if not path.is_file():
        pytest.skip("MUCAR release data-all.json not found")
    return B.load(path)


@pytest.fixture()
def sample(tmp_path):
    return B.load(B.make_sample(tmp_path / "mucar"))


# -- the real release ----------------------------------------------------------------------------
def test_release_counts(release):
    stats = B.data_stats(release)
    assert stats["queries"] == 1278
    assert stats["per_schema"] == {"A": 906, "B": 162, "C": 210}
    assert stats["per_language"] == {"Chinese": 345, "English": 601, "Malay": 332}
    assert stats["per_category"] == {"Polysemy": 179, "Homonymy": 250, "Grammar": 214, "Semantics": 84,
                                     "Specialized": 94, "Cultural": 85, "Dual-ambiguity": 372}
    # first-six pair counts equal the denominators the notes derive from Table 2
    assert stats["groups_per_category"]["Homonymy"] == 117
    assert stats["groups_per_category"]["Grammar"] == 107
    assert {1, 2, 4, 6} <= set(stats["group_sizes"])
    assert stats["options_per_query"][2] == 1241


def test_release_gold_letters_all_resolve(release):
    assert release["gold"].isin(list("ABCDE")).all()
    assert (release["gold"].map("ABCDE".index) < release["n_options"]).all()
    odd = release[release["gold_method"] != "exact"].set_index("record_id")
    assert odd.loc[180, "gold"] == "A"  # "A.是。" vs option "A.是"
    assert odd.loc[316, ["gold", "gold_method"]].tolist() == ["A", "text"]  # no letter in the answer
    assert odd.loc[525, "gold"] == "B"  # gold text differs from the option: the letter wins


def test_release_schemas_and_translations(release):
    r = release.set_index("record_id")
    assert r.loc[1026, "schema"] == "C" and r.loc[1026, "image_ambiguity"] == "Temporal Information"
    assert r.loc[936, "schema"] == "B" and r.loc[936, "context_embedded"] and pd.isna(r.loc[936, "context"])
    assert r.loc[1255, "language"] == "Malay" and r.loc[1255, "old_id"] == 121
    assert r.loc[0, "context"].startswith("I saw the man with a telescope")
    # question_id 935 is shared by a schema-B query and a schema-C pair: one paper pair of 9 queries
    assert r.loc[1026, "group"] == r.loc[935, "group"] == r.loc[1255, "group"]
    assert (release["group"] == r.loc[935, "group"]).sum() == 9


def test_release_pairs_are_the_papers_501(release):
    """§3.3: 501 pairs, 439 in the first six categories and 62 dual (the old default gave 633 / 194)."""
    stats = B.data_stats(release)
    assert (stats["pairs"], stats["pairs_non_dual"], stats["pairs_dual"]) == (501, 439, 62)
    assert stats["grouping"] == "question_id" and release.attrs["grouping"] == "question_id"
    dual = release[release["category"] == "Dual-ambiguity"]
    assert set(data.group_sizes(dual)) == {1, 3, 9}
    # the other rules stay available by name, and give other counts (not the paper's)
    counts = {rule: data.regroup(dual, rule).nunique() for rule in data.GROUPINGS}
    assert counts == {"question_id": 62, "question_id_schema": 97, "pair_language": 194, "pair_id": 70,
                      "pair_language_schema": 194}
    old = B.load(release.attrs["source"], grouping="pair_language")
    assert old["group"].nunique() == 633 and (old["group"] == data.regroup(release, "pair_language")).all()
    assert B.load(release.attrs["source"], grouping="default")["group"].equals(release["group"])


def test_release_dual_acc_p_counts_question_id_pairs(release):
    """Dual Acc_p is over the 62 question_id pairs: right on every English query and nothing else, only
    the 6 English-only (untranslated) pairs pass. Per (pair_id, language) it was 6 + 56 English groups."""
    scored = release.assign(correct=release["language"] == "English", setting="full")
    dual = score.pair_accuracy(scored, "category", n_resamples=0)
    dual = dual[dual["category"] == "Dual-ambiguity"].set_index("metric")
    assert dual.loc["Acc_p", "n_groups"] == 62
    assert dual.loc["Acc_p", "value"] == pytest.approx(100 * 6 / 62)
    assert dual.loc["Acc_q", "value"] == pytest.approx(100 * 126 / 372)
    old = scored.assign(group=data.regroup(release, "pair_language"))
    by_old = score.pair_accuracy(old, "category", n_resamples=0)
    by_old = by_old[by_old["category"] == "Dual-ambiguity"].set_index("metric")
    assert by_old.loc["Acc_p", "n_groups"] == 194 and by_old.loc["Acc_p", "value"] > 2 * dual.loc["Acc_p", "value"]


def test_release_per_language_uses_each_querys_language(release):
    """Dual pairs span three languages; each query still counts under its own language."""
    scored = release.assign(correct=release["language"] == "Malay", setting="full")
    lang = score.pair_accuracy(scored, "language", n_resamples=0).set_index(["language", "metric"])
    assert lang.loc[("Malay", "Acc_q"), "value"] == 100.0 and lang.loc[("Chinese", "Acc_q"), "value"] == 0.0
    assert lang.loc[("Malay", "Acc_q"), "n_queries"] == 332
    assert lang.loc[("Malay", "Acc_p"), "value"] == 100.0  # every pair's Malay queries are right


def test_release_quirks(release):
    q = B.data_stats(release)["quirks"]
    assert q["singleton_group"] >= 6 and q["mixed_category_group"] == 2
    qs = data.quirks(release)
    assert [935] in qs.loc[qs["kind"] == "answer_in_question", "record_ids"].tolist()
    dup = {i for ids in qs.loc[qs["kind"] == "duplicate_options", "record_ids"] for i in ids}
    assert {1170, 1171} <= dup


def test_table5_recomputed_vs_paper(release):
    tab = data.category_language_counts(release)
    assert tab.loc["Overall", "Total"] == 1278
    f = pd.DataFrame([x.to_dict() for x in audit.table5_vs_release(release)])
    zh = f[(f["row"] == "Overall") & (f["column"] == "Chinese")].iloc[0]
    assert zh["published"] == 364 and zh["recomputed"] == 345 and not zh["ok"]


# -- loader on generated and malformed files -----------------------------------------------------
def test_sample_has_all_three_schemas_and_loads_images(sample):
    assert set(sample["schema"]) == {"A", "B", "C"}
    assert {1, 2, 4} <= set(data.group_sizes(sample))
    assert (sample["gold_method"] == "letter").sum() == 1  # the injected gold typo
    res = data.ImageResolver(sample.attrs["images"])
    assert res.load("malay/1-1").size == (96, 72)


def _write(tmp_path, recs):
    p = tmp_path / "data-all.json"
    p.write_text(json.dumps(recs), encoding="utf-8")
    return p


def test_malformed_records_name_row_and_field(tmp_path, sample):
    recs = json.loads((tmp_path / "mucar" / "data-all.json").read_text(encoding="utf-8"))
    bad = [dict(r) for r in recs]
    del bad[3]["options"]
    with pytest.raises(DataError, match=r"row 4.*'options'"):  # rows count from 1, as editors show
        B.load(_write(tmp_path, bad))
    bad = [dict(r) for r in recs]
    bad[2]["answer"] = "Z.nothing"
    with pytest.raises(DataError, match=r"row 3.*'answer'"):
        B.load(_write(tmp_path, bad))
    bad = [dict(r) for r in recs]
    bad[1]["tags"] = {"category": 9, "language": 1}
    with pytest.raises(DataError, match="category code 9"):
        B.load(_write(tmp_path, bad))
    (tmp_path / "x.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(DataError, match="not valid JSON"):
        B.load(tmp_path / "x.json")
    with pytest.raises(DataError, match="not found"):
        B.load(tmp_path / "missing.json")
    with pytest.raises(SettingError, match="grouping"):
        B.load(tmp_path / "mucar", grouping="nope")


def test_grouping_rules(sample):
    dual = sample[sample["category"] == "Dual-ambiguity"].set_index("record_id")
    # default: question_id pairs, translations in; the schema-C pair shares a schema-B question_id
    c = dual[dual["schema"] == "C"]
    first_b = dual[dual["schema"] == "B"].index[0]
    assert set(c["group"]) == {dual.loc[first_b, "group"]}
    assert sorted(data.group_sizes(dual.reset_index()).tolist()) == [1, 3, 9]
    assert B.data_stats(sample)["pairs_dual"] == 3
    n = {rule: B.load(sample.attrs["source"], grouping=rule).query("category == 'Dual-ambiguity'")["group"].nunique()
         for rule in data.GROUPINGS}
    # schemas apart: the 9 split into 3 + 6; translations apart: one group per (pair_id, language)
    assert n == {"question_id": 3, "question_id_schema": 4, "pair_language": 7, "pair_id": 3,
                 "pair_language_schema": 7}


def test_image_resolver_errors_and_parquet(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image

    from vlamb_nb.images import encode_png

    root = tmp_path / "hub"
    (root / "data").mkdir(parents=True)
    png = encode_png(Image.new("RGB", (5, 7), (9, 9, 9)))
    table = pa.table({"image": pa.array([{"bytes": png, "path": "malay/131.png"}],
                                        type=pa.struct([("bytes", pa.binary()), ("path", pa.string())]))})
    pq.write_table(table, root / "data" / "train-00000.parquet")
    res = data.ImageResolver(root)
    assert res.load("malay/131").size == (5, 7)
    with pytest.raises(ImageError, match=r"tried .*7-1\.jpg"):
        res.resolve("7-1")
    with pytest.raises(ImageError, match="unsafe"):
        res.resolve("../../etc/passwd")
    with pytest.raises(ImageError, match="not available locally|neither"):
        data.ImageResolver.from_spec("no-such-owner/no-such-dataset-xyz")


# -- prompts -------------------------------------------------------------------------------------
def _notes_block(shared_data, heading: str) -> str:
    notes = (shared_data.parent / "papers" / "notes" / "mucar.md")
    if not notes.is_file():
        pytest.skip("paper notes not found")
    text = notes.read_text(encoding="utf-8")
    i = text.index(heading)
    return re.search(r"```\n(.*?)\n```", text[i:], re.S).group(1)


@pytest.mark.parametrize("heading,template", [
    ("**Main experiment (English):**", prompts.PROMPT_EN),
    ("**Ablation, Chinese:**", prompts.PROMPT_ZH),
    ("**Ablation, Malay:**", prompts.PROMPT_MS),
    ("**Ablation, only input (𝒞, 𝒬)** (no image):", prompts.PROMPT_TEXT_ONLY),
    ("**Ablation, \"Is 𝒞 ambiguous?\":**", prompts.PROMPT_IS_AMBIGUOUS),
])
def test_templates_verbatim(shared_data, heading, template):
    assert _notes_block(shared_data, heading) == template


def test_build_prompt_settings():
    item = {"context": "I'm going to the bank.", "question": "Is there a misunderstanding?",
            "options": ["A.Yes.", "B.No."], "context_embedded": False}
    full = prompts.build_prompt(item, "full")
    assert full.endswith("Question: I'm going to the bank. Is there a misunderstanding? Options: A.Yes. B.No.")
    assert "Question: Is there a misunderstanding? Options" in prompts.build_prompt(item, "q_i")
    assert "Question: I'm going to the bank. Options" in prompts.build_prompt(item, "c_i")
    assert prompts.build_prompt(item, "c_q").startswith("Please answer my question.")
    assert prompts.build_prompt(item, "full_zh").endswith("选项: A.Yes. B.No.")
    assert prompts.build_prompt(item, "c_ambiguous").endswith("Sentence: I'm going to the bank.")
    spaced = prompts.build_prompt(item, "full", option_sep="\n", option_style="spaced", context_mode="newline")
    assert spaced.endswith("bank.\nIs there a misunderstanding? Options: A. Yes.\nB. No.")
    with pytest.raises(SettingError):
        prompts.build_prompt(item, "nope")


# -- parser --------------------------------------------------------------------------------------
OPTS = ["A.Chicken.", "B.Chicken feed."]


@pytest.mark.parametrize("text,letter,method", [
    ("Answer: B", "B", "answer_tag"),
    ("answer:(A)", "A", "answer_tag"),
    ("The answer is B.", "B", "answer_tag"),
    ("The image shows a farm... so the chicken eats feed.\nAnswer: B", "B", "answer_tag"),
    ("Answer: A\nWait, reconsider. Answer: B", "B", "answer_tag"),
    ("答案：B", "B", "answer_tag"),
    ("Answer：A。", "A", "answer_tag"),
    ("Jawapan: B", "B", "answer_tag"),
    ("B", "B", "lone_letter"),
    ("(A)", "A", "lone_letter"),
    ("A. Chicken.", "A", "leading_letter"),
    ("B.鸡饲料", "B", "leading_letter"),
    ("It is chicken feed.", "B", "option_text"),
])
def test_parser_valid(text, letter, method):
    p = parse.parse_answer(text, OPTS)
    assert (p["letter"], p["valid"], p["parse_method"]) == (letter, True, method)


@pytest.mark.parametrize("text,method", [
    ("I'm sorry, but I can't provide assistance with that request.", "refusal"),
    ("抱歉，我无法回答这个问题。", "refusal"),
    ("Maaf, saya tidak dapat menjawab soalan ini.", "refusal"),
    ("Answer: D", "out_of_range"),
    ("", "empty"),
    ("ĠĠ ð?? zxq 0.31 tokens<unk>", "unparsed"),
])
def test_parser_invalid(text, method):
    p = parse.parse_answer(text, OPTS)
    assert not p["valid"] and p["parse_method"] == method


@pytest.mark.parametrize("text,letter", [
    ("**Answer: B**", "B"),
    ("The answer is __A__.", "A"),
    ("**答案：B**", "B"),
])
def test_parser_reads_through_markdown_emphasis(text, letter):
    p = parse.parse_answer(text, OPTS)
    assert (p["letter"], p["valid"]) == (letter, True)


@pytest.mark.parametrize("text", ["Answer: A or B", "Jawapan: A atau B", "Answer: (A)/(B)", "Answer: A and B"])
def test_parser_hedged_answer_is_invalid(text):
    p = parse.parse_answer(text, OPTS)
    assert not p["valid"] and p["parse_method"] == "ambiguous"
    assert score.outcome({**p, "correct": False}) == "ambiguous"


def test_parser_never_matches_template_echo_or_duplicate_options():
    echo = "Answer: [ONLY the option letter; not a complete sentence]"
    assert not parse.parse_answer(echo, OPTS)["valid"]
    assert not parse.parse_answer("是的。", ["A. 是的。", "B. 是的。"])["valid"]


def test_yes_no_and_judge_rules():
    assert parse.parse_yes_no("Yes.")["yes_no"] == "yes"
    assert parse.parse_yes_no("no")["yes_no"] == "no"
    assert not parse.parse_yes_no("maybe")["valid"]
    assert mjudge.parse_judge("Right.") == 1 and mjudge.parse_judge("wrong") == 0
    assert mjudge.parse_judge("not right") == 1  # CODIS's substring rule, kept as released
    assert mjudge.parse_judge("not right", "strict") is None


# -- Acc_p / Acc_q -------------------------------------------------------------------------------
def _hand_scored():
    # groups of 1, 4 and 6 queries (sizes in the release), correctness chosen by hand
    spec = [("g1", "Polysemy", "English", [1]),
            ("g4", "Polysemy", "English", [1, 1, 1, 0]),
            ("g6", "Homonymy", "Chinese", [1, 1, 1, 1, 1, 1]),
            ("g2", "Homonymy", "Malay", [0, 1])]
    rows, rid = [], 0
    for g, cat, lang, cs in spec:
        for c in cs:
            rows.append({"record_id": rid, "group": g, "category": cat, "language": lang, "correct": bool(c)})
            rid += 1
    return pd.DataFrame(rows)


def test_acc_p_acc_q_hand_built():
    s = _hand_scored()
    tot = score.pair_accuracy(s, None, n_resamples=0).set_index("metric")["value"]
    assert tot["Acc_q"] == pytest.approx(100 * 11 / 13)
    assert tot["Acc_p"] == pytest.approx(100 * 2 / 4)
    per = score.pair_accuracy(s, "category", n_resamples=0)
    poly = per[per["category"] == "Polysemy"].set_index("metric")
    assert poly.loc["Acc_q", "value"] == pytest.approx(80.0) and poly.loc["Acc_p", "value"] == pytest.approx(50.0)
    assert poly.loc["Acc_p", "n_groups"] == 2 and poly.loc["Acc_q", "n_queries"] == 5
    lang = score.pair_accuracy(s, "language", n_resamples=0).set_index(["language", "metric"])["value"]
    assert lang[("Malay", "Acc_p")] == 0.0 and lang[("Chinese", "Acc_p")] == 100.0


def _with_dual(setting: str):
    """Two non-dual pairs (one right) and two dual pairs (both right) under one setting."""
    s = pd.DataFrame([{"record_id": i, "group": g, "category": c, "language": "English", "correct": ok,
                       "setting": setting}
                      for i, (g, c, ok) in enumerate([("a", "Polysemy", True), ("a", "Polysemy", True),
                                                      ("b", "Grammar", True), ("b", "Grammar", False),
                                                      ("d1", "Dual-ambiguity", True), ("d1", "Dual-ambiguity", True),
                                                      ("d2", "Dual-ambiguity", True), ("d2", "Dual-ambiguity", True)])])
    return s


@pytest.mark.parametrize("setting", ["q_i", "c_i", "c_q", "full_zh", "full_ms"])
def test_ablation_overall_is_over_the_six_non_dual_categories(setting):
    """Table 3 / Fig. 4 / Table 12 report Overall over six categories; dual pairs must not lift it."""
    s = _with_dual(setting)
    tot = score.pair_accuracy(s, None, n_resamples=0).set_index("metric")
    assert tot.loc["Acc_p", "value"] == 50.0 and tot.loc["Acc_q", "value"] == 75.0
    assert tot.loc["Acc_q", "n_queries"] == 4
    long = score.results_long(s, "m", "Table 12", n_resamples=0).set_index("column")["value"]
    assert long["Overall Acc_p"] == 50.0 and "Dual-ambiguity Acc_p" not in long
    # all seven only when asked
    everything = score.pair_accuracy(s, None, categories=None, n_resamples=0).set_index("metric")["value"]
    assert everything["Acc_p"] == 75.0


def test_full_input_overall_keeps_seven_except_for_table3():
    s = _with_dual("full")
    assert score.pair_accuracy(s, None, n_resamples=0).set_index("metric")["value"]["Acc_p"] == 75.0  # Table 2
    t3 = score.results_long(s, "m (w/)", "Table 3", n_resamples=0).set_index("column")["value"]
    assert t3["Overall Acc_p"] == 50.0  # Table 3's "(w/)" rows are the six categories
    runs = {"full": s.assign(model="m"), "q_i": _with_dual("q_i").assign(model="m")}
    frame = score.settings_overall(runs, n_resamples=0).set_index(["setting", "metric"])["value"]
    assert frame[("full", "Acc_p")] == frame[("q_i", "Acc_p")] == 50.0
    with pytest.raises(SettingError, match="categories"):
        score.pair_accuracy(s, None, categories="Polysemy")


def test_overall_acc_q_is_micro_not_macro():
    s = _hand_scored()
    per = score.pair_accuracy(s, "category", n_resamples=0)
    macro = per[per["metric"] == "Acc_q"]["value"].mean()
    tot = score.pair_accuracy(s, None, n_resamples=0).set_index("metric")["value"]["Acc_q"]
    assert tot != pytest.approx(macro)


def test_group_category_is_first_member():
    s = pd.DataFrame({"record_id": [2, 1], "group": ["g", "g"], "category": ["Grammar", "Polysemy"],
                      "language": ["Malay", "Malay"], "correct": [True, True]})
    per = score.pair_accuracy(s, "category", n_resamples=0)
    assert set(per["category"].astype(str)) == {"Polysemy"}


def test_bootstrap_resamples_groups():
    rng = np.random.default_rng(1)
    rows = [{"record_id": i, "group": f"g{i // 2}", "category": "Grammar", "language": "English",
             "correct": bool(rng.integers(0, 2))} for i in range(200)]
    s = pd.DataFrame(rows)
    res = score.pair_accuracy(s, None, n_resamples=500, seed=3).set_index("metric")
    for m in ("Acc_q", "Acc_p"):
        assert res.loc[m, "ci_low"] < res.loc[m, "value"] < res.loc[m, "ci_high"]
    again = score.pair_accuracy(s, None, n_resamples=500, seed=3).set_index("metric")
    assert again.loc["Acc_p", "ci_low"] == res.loc["Acc_p", "ci_low"]


def _correlated(n_groups: int = 40, size: int = 4, seed: int = 0):
    # every query of a group has the same correctness: the case where queries are not independent
    rng = np.random.default_rng(seed)
    ok = rng.random(n_groups) < 0.6
    rows = [{"record_id": g * size + j, "group": f"g{g}", "category": "Grammar", "language": "English",
             "correct": bool(ok[g])} for g in range(n_groups) for j in range(size)]
    return pd.DataFrame(rows)


def test_acc_p_ci_resamples_whole_groups():
    from vlamb_nb.stats import bootstrap_ci, group_accuracy_statistic

    s = _correlated()
    res = score.pair_accuracy(s, None, n_resamples=2000, seed=5).set_index("metric")
    width = {m: res.loc[m, "ci_high"] - res.loc[m, "ci_low"] for m in ("Acc_q", "Acc_p")}
    # all-or-nothing groups of equal size: Acc_q == Acc_p in every group resample
    assert res.loc["Acc_q", "value"] == res.loc["Acc_p", "value"]
    assert width["Acc_q"] == pytest.approx(width["Acc_p"], rel=0.2)
    correct = s["correct"].to_numpy(float)
    items = bootstrap_ci(correct, n_resamples=2000, seed=5).scaled(100)
    items_p = bootstrap_ci(correct, group_accuracy_statistic(s["group"].to_numpy()), n_resamples=2000,
                           seed=5).scaled(100)
    # resampling single queries pretends to have 4x the data: about half as wide (1/sqrt(4))
    assert width["Acc_q"] > 1.6 * (items.ci_high - items.ci_low)
    assert width["Acc_p"] > 1.6 * (items_p.ci_high - items_p.ci_low)
    # and the group bootstrap matches the binomial spread over 40 groups
    p = res.loc["Acc_p", "value"] / 100
    assert width["Acc_p"] == pytest.approx(100 * 2 * 1.96 * np.sqrt(p * (1 - p) / 40), rel=0.2)


def test_single_group_or_no_resamples_gives_no_interval():
    s = _correlated(n_groups=1)
    res = score.pair_accuracy(s, None, n_resamples=200).set_index("metric")
    assert res["ci_low"].isna().all() and res["ci_high"].isna().all()


def test_two_runs_are_compared_paired_over_groups_by_the_base_step():
    """MUCAR's runs compare through the base's one step (its declared Acc_q and Acc_p), intervals resampling
    whole pairs; a difference is the values' difference, counted by hand here."""
    from vlamb_nb import get_benchmark

    bench = get_benchmark("mucar")
    a = _correlated(seed=1).assign(uid=lambda d: "q" + d["record_id"].astype(str))
    same = bench.compare_runs(a, a, n_resamples=500).set_index("metric")
    assert (same["diff"] == 0).all() and (same["p"] == 1).all()
    worse = a.assign(correct=False)
    d = bench.compare_runs(a, worse, n_resamples=500, seed=2).set_index("metric")
    by_hand = {"Acc_q": 100 * a["correct"].mean(), "Acc_p": 100 * a.groupby("group")["correct"].all().mean()}
    for m in ("Acc_q", "Acc_p"):
        assert d.loc[m, "diff"] == pytest.approx(by_hand[m]) and d.loc[m, "a"] == pytest.approx(by_hand[m])
        assert d.loc[m, "ci_low"] > 0 and d.loc[m, "p"] < 0.01
    assert d.loc["Acc_p", "n"] == 40 and d.loc["Acc_p", "ci_unit"] == "pair"
    assert d.loc["Acc_q", "n"] == 160 and d.loc["Acc_q", "ci_unit"] == "pair"
    part = bench.compare_runs(a, worse.iloc[:80], n_resamples=200).set_index("metric")
    assert part.loc["Acc_q", "n"] == 80 and part.loc["Acc_q", "dropped_a"] == 80
    with pytest.raises(DataError, match="same items: 80 only in A"):
        bench.compare_runs(a, worse.iloc[:80], n_resamples=200, same_items=True)
    with pytest.raises(DataError, match="share no item"):
        bench.compare_runs(a, a.assign(uid="other"))


def test_constant_answer_is_image_insensitive(sample):
    scored = B.evaluate(ScriptedModel(lambda r: "Answer: A"), sample, "full", progress=False)
    fs = score.failure_summary(scored)
    assert fs["image_insensitive_groups"] == fs["groups_with_distinct_golds"] > 0
    distinct = scored.groupby("group").filter(lambda d: d["gold"].nunique() > 1)
    assert score.pair_accuracy(distinct, None, n_resamples=0).set_index("metric")["value"]["Acc_p"] == 0.0
    assert fs["Acc_q"] > 30


# -- the pipeline --------------------------------------------------------------------------------
def _oracle(items):
    gold = dict(zip(items["uid"], items["gold"], strict=True))
    return ScriptedModel(lambda r: f"Answer: {gold[r.meta['item_id']]}", model_id="oracle")


def test_pipeline_oracle_and_resume(sample, tmp_path):
    store = tmp_path / "preds.jsonl"
    model = _oracle(sample)
    scored = B.evaluate(model, sample, "full", store=store, progress=False)
    assert scored["correct"].all() and len(scored) == len(sample)
    t = B.tables(scored, n_resamples=200)
    assert t["Table 2"].loc["oracle", "Overall Acc_p"] == 100.0
    calls = model.calls
    B.evaluate(model, sample, "full", store=store, progress=False)
    assert model.calls == calls  # every request came from the store


def test_requests_need_images_and_known_settings(sample):
    no_img = sample.copy()
    no_img.attrs = {**sample.attrs, "images": None}
    with pytest.raises(SettingError, match="needs images"):
        B.requests(no_img, "full")
    assert all(not r.images for r in B.requests(no_img, "c_q"))
    with pytest.raises(SettingError, match="unknown mucar setting"):
        B.requests(sample, "nope")
    amb = B.requests(sample, "c_ambiguous")
    assert len(amb) == len(sample) - B.skipped(sample, "c_ambiguous")["context embedded in the question (schema B)"]


def test_failed_generation_counts_as_wrong(sample):
    def flaky(r):
        if r.meta["item_id"] == "mucar-0":
            raise RuntimeError("backend down")
        return "Answer: A"

    scored = B.evaluate(ScriptedModel(flaky), sample, "full", progress=False)
    row = scored.set_index("uid").loc["mucar-0"]
    assert row["outcome"] == "generation_failed" and not row["correct"]
    assert len(scored) == len(sample)


def test_judge_and_agreement(sample):
    scored = B.evaluate(ScriptedModel(lambda r: "Answer: A"), sample, "c_q", progress=False)
    judge = ScriptedModel(lambda r: "right" if "groundtruth: A." in r.prompt_text else "wrong", model_id="judge")
    judged = mjudge.run_judge(judge, scored, progress=False)
    assert (judged["judge_correct"] == judged["correct"].astype(float)).all()
    ag = mjudge.agreement(judged["judge_correct"], judged["correct"].astype(float))
    assert ag["percent_agreement"] == 100.0
    assert "Here is the output: Answer: A" in judge_spec_prompt(judged)


def _letter_judge(model_id: str = "judge") -> ScriptedModel:
    """A judge that compares the groundtruth letter with the output's ``Answer: X``, as a careful reader would."""
    def verdict(r) -> str:
        gold = re.search(r"Here is the groundtruth: ([A-E])\.", r.prompt_text).group(1)
        said = re.search(r"Here is the output: Answer: ([A-E])", r.prompt_text)
        return "right" if said and said.group(1) == gold else "wrong"

    return ScriptedModel(verdict, model_id=model_id)


def test_score_file_reads_answers_with_the_judge_too(sample, tmp_path, capsys, monkeypatch):
    groups = sample.groupby("group")["uid"].agg(list)
    right = set(groups[groups.map(len) >= 2].iloc[0])
    p = _filled(sample, tmp_path, right)  # these answered correctly, the rest left empty
    scored = B.scored_file(p, source=tmp_path / "mucar")
    parser = B.score_file(p, source=tmp_path / "mucar", n_resamples=0)["metrics"]
    out = B.judge_report(_letter_judge(), scored, store=tmp_path / "judge.jsonl", n_resamples=0)
    judged = {r["metric"]: round(r["value"], 2) for r in out["overall"]}
    assert judged == parser and parser["Acc_q"] == pytest.approx(100 * len(right) / len(sample), abs=0.005)
    assert out["agreement_with_parser"]["percent_agreement"] == 100.0
    assert out["model"] == "judge" and out["no_verdict"] == 0
    assert (tmp_path / "judge.jsonl").is_file()
    # a lenient judge that calls everything right: its reading, not the parser's, is reported
    monkeypatch.setattr("vlamb_nb.models.load_model", lambda spec: ScriptedModel(lambda r: "right", model_id=spec))
    res = B.judge_report("lenient", scored, n_resamples=0)
    assert res["model"] == "lenient"
    assert {r["metric"]: r["value"] for r in res["overall"]} == {"Acc_q": 100.0, "Acc_p": 100.0}
    assert res["agreement_with_parser"]["percent_agreement"] < 100.0
    # `vlamb-nb score` prints the declared metrics only, the same shape as every paper: a judge is no option of it
    assert cli.main(["score", "mucar", "--predictions", str(p), "--source", str(tmp_path / "mucar"),
                     "-o", "judge=lenient"]) != 0
    assert "unknown MUCAR score option(s): judge" in capsys.readouterr().err


def judge_spec_prompt(judged):
    spec = mjudge.judge_spec()
    r = judged.iloc[0]
    return spec.prompt(question="q", groundtruth=r["groundtruth"], output=r["output"])


# -- audit and CLI -------------------------------------------------------------------------------
def test_fits_fraction():
    assert audit.fits_fraction(60.0, 95, 95) == (57, 95)
    assert audit.fits_fraction(60.0, 94, 94) is None
    assert audit.fits_fraction(69.91, 42, 85) is None


def test_audit_explains_dual_acc_p_denominators():
    """Table 2's Dual Acc_p is k/97 for GPT-4V/GPT-4o/Deepseek and k/62 for the InternVL/Qwen rows."""
    f = pd.DataFrame([x.to_dict() for x in audit.dual_denominators()]).set_index(["table", "row"])
    for table in ("Table 2a", "Table 2b"):
        for row in ("GPT-4V", "GPT-4o", "Deepseek-VL-Tiny"):
            pub = f.loc[(table, row), "published"]
            assert f.loc[(table, row), "ok"] and f.loc[(table, row), "recomputed"].endswith("/97")
            assert abs(pub * 97 / 100 - round(pub * 97 / 100)) < 0.005
            assert abs(pub * 62 / 100 - round(pub * 62 / 100)) > 0.05
        for row in audit.DUAL_ROWS_62:
            pub = f.loc[(table, row), "published"]
            assert f.loc[(table, row), "ok"] and f.loc[(table, row), "recomputed"].endswith("/62")
            assert abs(pub * 62 / 100 - round(pub * 62 / 100)) < 0.005
    assert f.loc[("Table 2a", "GPT-4V"), "recomputed"] == "20/97"
    assert f.loc[("Table 2a", "InternVL2-8B"), "recomputed"] == "13/62"
    assert "20.62×97/100 = 20.001 ≈ 20" in f.loc[("Table 2a", "GPT-4V"), "note"]
    assert "62 + 35 = 97" in f.loc[("Table 2a", "GPT-4V"), "note"]
    # the other denominators are named too; two rows fit no common one
    assert f.loc[("Table 2a", "Kimi-VL"), "recomputed"] == "10/71"
    assert f.loc[("Table 2b", "Kimi-VL"), "recomputed"] == "4/70"
    assert set(f.index[~f["ok"]].get_level_values("row")) == {"Gemini-2.0-flash", "Claude-3.5-Sonnet"}
    assert ("Table 2b", "Human") not in f.index


def test_audit_dual_pair_counts_against_release(release):
    f = pd.DataFrame([x.to_dict() for x in audit.dual_pairs_vs_release(release)])
    assert f["ok"].all()
    got = dict(zip(f["row"] + " " + f["column"], f["recomputed"], strict=True))
    assert got["Dual-ambiguity pairs (question_id_schema) n_pairs"] == 97
    assert got["Dual-ambiguity pairs (question_id) n_pairs"] == 62
    assert got["question_id pairs pairs"] == 501 and got["question_id pairs non-dual pairs"] == 439
    kinds = {x.kind for x in audit.audit(release)}
    assert {"dual denominator", "release"} <= kinds


def test_audit_flags_paper_inconsistencies():
    f = pd.DataFrame([x.to_dict() for x in audit.audit(None)])
    bad = f[~f["ok"]]
    zh = bad[(bad["table"] == "Table 5") & (bad["column"] == "Chinese")].iloc[0]
    assert zh["recomputed"] == 369
    imp = bad[bad["kind"] == "impossible"]
    assert set(imp["row"]) == {"MiniCPM-o 2.6", "mPLUG-Owl3-7B-240728"}
    dups = bad[bad["kind"] == "duplicate"]["row"].tolist()
    assert "Llama-3.2-Vision-11B" in dups and "LLaVA-v1.6-mistral-7b" in dups
    micro = f[(f["kind"] == "micro-average") & (f["column"] == "Overall Acc_q")]
    assert micro["ok"].all() and set(micro["recomputed"]) == {52.7, 60.13}
    assert f[f["kind"] == "gain"]["ok"].all()


def test_cli_stats_score_and_check(release, tmp_path, capsys):
    assert cli.main(["data", "stats", "mucar", "--source", release.attrs["source"], "--json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert st["queries"] == 1278 and st["per_schema"]["C"] == 210
    assert (st["pairs"], st["pairs_non_dual"], st["pairs_dual"]) == (501, 439, 62)
    assert cli.main(["data", "stats", "mucar", "--source", release.attrs["source"], "-o", "grouping=pair_language",
                     "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pairs_dual"] == 194
    preds = tmp_path / "p.jsonl"
    with preds.open("w") as fh:
        for uid, g in zip(release["uid"], release["gold"], strict=True):
            fh.write(json.dumps({"id": int(uid.split("-")[1]), "output": f"Answer: {g}"}) + "\n")
    assert cli.main(["score", "mucar", "--predictions", str(preds), "--source", release.attrs["source"],
                     "-o", "n_resamples=0", "--json"]) == 0
    sc = json.loads(capsys.readouterr().out)
    assert sc["metrics"] == {"Acc_p": 100.0, "Acc_q": 100.0}
    assert cli.main(["reference", "check", "mucar", "--json"]) == 0
    chk = json.loads(capsys.readouterr().out)
    assert chk["mismatches"] > 0
    assert any(r["kind"] == "release" and not r["ok"] for r in chk["findings"])


def test_score_file_release_layout_and_bad_ids(sample, tmp_path):
    recs = json.loads((tmp_path / "mucar" / "data-all.json").read_text(encoding="utf-8"))
    for r in recs[:4]:
        r["eval"]["models"]["GPT_4o"]["output"] = "Answer: B"
    p = tmp_path / "filled.json"
    p.write_text(json.dumps(recs), encoding="utf-8")
    out = B.score_file(p, source=tmp_path / "mucar", n_resamples=0)
    assert out["coverage"]["answered"] == 4 and out["coverage"]["missing"] == len(sample) - 4
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 99999, "output": "A"}\n')
    with pytest.raises(DataError, match="not in the data"):
        B.score_file(bad, source=tmp_path / "mucar")


@pytest.mark.slow
def test_tiny_4bit_model_garbage_is_counted(sample, tmp_path):
    from vlamb_nb.models import load_model

    model = load_model("tiny:qwen2_5_vl", quantization="4bit")
    scored = B.evaluate(model, sample.head(4), "full", store=tmp_path / "s.jsonl", progress=False,
                        params=None)
    assert len(scored) == 4
    assert set(scored["outcome"]) <= {"correct", "wrong", "unparsed", "refusal", "out_of_range",
                                      "generation_failed", "ambiguous"}


def _filled(sample, tmp_path, uids):
    """The sample's own file with correct outputs for ``uids`` (others left as empty placeholders)."""
    recs = json.loads((tmp_path / "mucar" / "data-all.json").read_text(encoding="utf-8"))
    gold = dict(zip(sample["uid"], sample["gold"], strict=True))
    for r in recs:
        uid = f"mucar-{r['id']}"
        if uid in uids:
            r["eval"]["models"]["GPT_4o"]["output"] = f"Answer: {gold[uid]}"
    p = tmp_path / "filled.json"
    p.write_text(json.dumps(recs), encoding="utf-8")
    return p


def test_score_file_partial_group_cannot_pass_acc_p(sample, tmp_path):
    """A group answered only in part must not count as all-correct (it did before: 100% Acc_p)."""
    big = sample.groupby("group")["uid"].agg(list)
    big = big[big.map(len) >= 2].iloc[0]
    p = _filled(sample, tmp_path, {big[0]})  # one correct answer out of a group of >= 2
    out = B.score_file(p, source=tmp_path / "mucar", n_resamples=0)
    overall = {r["metric"]: r for r in out["by_slice"]}
    assert overall["Acc_p"]["value"] == 0.0 and overall["Acc_q"]["n"] == len(sample)
    assert out["coverage"]["missing"] == len(sample) - 1 and out["invalid"] == len(sample) - 1
    with pytest.raises(DataError, match="no group has a prediction"):
        B.score_file(p, source=tmp_path / "mucar", n_resamples=0, missing="skip")
    with pytest.raises(SettingError, match="missing"):
        B.score_file(p, source=tmp_path / "mucar", missing="drop")


def test_score_file_skip_keeps_only_complete_groups(sample, tmp_path):
    groups = sample.groupby("group")["uid"].agg(list)
    complete = groups[groups.map(len) >= 2].iloc[0]
    p = _filled(sample, tmp_path, set(complete) | {groups[groups.map(len) >= 2].iloc[1][0]})
    out = B.score_file(p, source=tmp_path / "mucar", n_resamples=0, missing="skip")
    overall = {r["metric"]: r for r in out["by_slice"]}
    assert overall["Acc_p"]["value"] == 100.0 and overall["Acc_p"]["n"] == 1
    assert out["scored"] == len(complete)


def test_score_file_store_with_several_settings_needs_a_choice(sample, tmp_path):
    store = tmp_path / "store.jsonl"
    with store.open("w") as fh:
        for uid, gold in zip(sample["uid"], sample["gold"], strict=True):
            fh.write(json.dumps({"request_id": uid, "setting": "full", "text": f"Answer: {gold}"}) + "\n")
            fh.write(json.dumps({"request_id": uid, "setting": "full_zh", "text": "Answer: E"}) + "\n")
    with pytest.raises(SettingError, match="several settings"):
        B.score_file(store, source=tmp_path / "mucar", n_resamples=0)
    out = B.score_file(store, source=tmp_path / "mucar", n_resamples=0, setting="full")
    assert out["metrics"] == {"Acc_q": 100.0, "Acc_p": 100.0}
    out = B.score_file(store, source=tmp_path / "mucar", n_resamples=0, setting="full_zh")
    assert out["metrics"] == {"Acc_q": 0.0, "Acc_p": 0.0}
    with pytest.raises(SettingError, match="no predictions for setting"):
        B.score_file(store, source=tmp_path / "mucar", setting="q_i")


def test_score_file_conflicting_duplicate_outputs_are_an_error(sample, tmp_path):
    p = tmp_path / "dup.jsonl"
    uid = sample["uid"].iloc[0]
    p.write_text(json.dumps({"id": uid, "output": "A"}) + "\n" + json.dumps({"id": uid, "output": "B"}) + "\n")
    with pytest.raises(DataError, match="two different outputs"):
        B.score_file(p, source=tmp_path / "mucar")


def test_decoding_deviation_names_the_budget_used():
    from vlamb_nb.models.base import ModelInfo

    info = ModelInfo(model_id="m")
    text = [str(d) for d in B.deviations(info, "full", max_new_tokens=8) if d.what == "decoding"]
    assert text and "8 new tokens" in text[0]
    assert any("64 new tokens" in str(d) for d in B.deviations(info, "full"))


def test_stored_run_meta_names_the_budget_the_run_used(sample, tmp_path):
    """The decoding deviation stored with every record is the scored frame's, from the budget actually sent."""
    from vlamb_nb.store import read_store

    store = tmp_path / "mucar.jsonl"
    scored = B.evaluate(ScriptedModel(lambda r: "Answer: A"), sample, "full", store=store, progress=False,
                        max_new_tokens=8)
    records = [rec for _, rec in read_store(store)]
    assert records and {r["params"]["max_new_tokens"] for r in records} == {8}
    for rec in records:
        stored = [d for d in rec["run"]["deviations"] if d["what"] == "decoding"]
        assert len(stored) == 1 and "8 new tokens" in stored[0]["ours"]
    used = [d.to_dict() for d in scored.attrs["deviations"] if d.what == "decoding"]  # one type, as stored
    assert used == stored
    assert records[0]["run"]["deviations"] == [d.to_dict() for d in scored.attrs["deviations"]]


# -- Fig. 3: the scenarios panel ------------------------------------------------------------------
def test_fig3_scenarios_panel_is_not_derivable_from_the_release(release):
    """The release has no scenario field: the right panel is a labelled stand-in, listed as not derivable."""
    from vlamb_nb.benchmarks.mucar import plots

    counts, info = data.scenario_counts(release)
    assert counts.empty and not info["derivable"] and info["labelled_queries"] == 0
    assert release["scenario"].isna().all()
    assert info["stand_in_counts"] == {"Temporal Information": 99, "Location and Orientation": 60,
                                       "Relationships": 33, "Cultural Background": 18}
    fig = plots.plot_distribution(release)
    left, right = fig.axes
    assert "category" in left.get_title().lower() and len(left.patches) == 3 * 7
    assert "not in the release" in right.get_title() and "Stand-in" in right.get_title()
    assert sum(p.get_width() for p in right.patches) == 210
    assert "not derivable" in plots.plot_distribution.__doc__
    nd = {d["item"]: d["reason"] for d in B.not_derivable()}
    assert "no scenario field" in nd["Fig. 3 (right): scenarios"]
    assert all(f in nd["Fig. 3 (right): scenarios"] for f in data.SCENARIO_FIELDS)  # every field looked for


def test_fig3_scenarios_panel_counts_a_scenario_field(tmp_path):
    from vlamb_nb.benchmarks.mucar import plots

    path = B.make_sample(tmp_path / "m")
    recs = json.loads(path.read_text(encoding="utf-8"))
    for i, r in enumerate(recs):
        r["scenario"] = ["daily life", "travel", "food"][i % 3]
    items = B.load(_write(tmp_path, recs))
    counts, info = data.scenario_counts(items)
    assert info["derivable"] and info["labelled_queries"] == len(items)
    assert set(counts["scenario"]) == {"daily life", "travel", "food"} and counts["queries"].sum() == len(items)
    right = plots.plot_distribution(items).axes[1]
    assert right.get_title().startswith("Scenarios (") and sum(p.get_width() for p in right.patches) == len(items)


def test_notebook_says_the_scenarios_panel_is_not_derivable(repo_root):
    nb = json.loads((repo_root / "notebooks" / "mucar.ipynb").read_text(encoding="utf-8"))
    assert all(not c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code")
    text = "\n".join("".join(c["source"]) for c in nb["cells"])
    assert "no scenario field" in text and "not derivable" in text
    for call in ("scenario_counts(release)", 'record("not_derivable", not_derivable)', "bench.not_derivable()"):
        assert call in text


# -- Table 4: CoT, CODIS-specific prompting and the agent framework --------------------------------
def _gold(items):
    return dict(zip(items["uid"], items["gold"], strict=True))


@pytest.mark.parametrize("setting,marker", [
    ("full_cot", "Think step by step: first explain your reasoning"),
    ("full_codis", "first use the context to decide how the image should be understood"),
    ("full_agent_unified", prompts.AGENT_T1 + "\n" + prompts.AGENT_T2 + "\n" + prompts.AGENT_T3),
])
def test_single_call_strategies_carry_their_prompt_and_score_like_full(sample, setting, marker):
    reqs = B.requests(sample, setting)
    assert len(reqs) == len(sample) and all(marker in r.prompt_text for r in reqs)
    assert all(r.setting == setting and r.id == r.meta["item_id"] and len(r.images) == 1 for r in reqs)
    assert reqs[0].params.max_new_tokens == prompts.SETTINGS[setting].max_new_tokens
    item = sample.iloc[0]
    assert f"Question: {item['context'].strip()} {item['question']} Options: {' '.join(item['options'])}" \
        in reqs[0].prompt_text
    gold = _gold(sample)
    model = ScriptedModel(lambda r: f"The image settles it.\nAnswer: {gold[r.meta['item_id']]}", model_id="m")
    scored = B.evaluate(model, sample, setting, progress=False)
    assert model.calls == len(sample) and scored["correct"].all() and (scored["parse_method"] == "answer_tag").all()
    t = B.tables(scored, n_resamples=0)
    assert t["Table 2"].loc["m", "Overall Acc_p"] == 100.0
    assert set(t["Table 4 (MUCAR columns)"]["row"]) == {prompts.TABLE4_ROWS[setting]}
    assert {"strict", "lenient"} == set(t["strict vs lenient"]["reading"])


def test_strategy_prompts_are_marked_ours_and_recorded_as_deviations():
    from vlamb_nb.models.base import ModelInfo

    info = ModelInfo(model_id="m")
    assert "ours" in prompts.__doc__ and "no prompt text" in prompts.__doc__
    for setting in prompts.STRATEGY_SETTINGS:
        devs = {d.what: d for d in B.deviations(info, setting)}
        assert "ours" in devs["prompt wording"].ours and devs["prompt wording"].affects == setting
        assert devs["Table 4 model"].paper == "gpt-4o-2024-11-20"
        assert "512 new tokens" in str(devs["decoding"]) or setting == "full_codis"
    assert "prompt wording" not in {d.what for d in B.deviations(info, "full")}
    assert "agent variant" in {d.what for d in B.deviations(info, "full_agent")}


def _agent_model(items, log):
    gold = _gold(items)

    def respond(r):
        uid, step = r.meta["item_id"], r.meta.get("step")
        log.append((step, r.setting, r.prompt_text))
        if step == "detect":
            return f"AMBIGUITY-{uid}"
        if step == "evidence":
            return f"EVIDENCE-{uid}"
        return f"Reasoning.\nAnswer: {gold[uid]}"

    return ScriptedModel(respond, model_id="agent-oracle")


def test_agent_runs_three_chained_calls_per_query(sample, tmp_path):
    log: list = []
    model = _agent_model(sample, log)
    store = tmp_path / "agent.jsonl"
    scored = B.evaluate(model, sample, "full_agent", store=store, progress=False)
    n = len(sample)
    assert model.calls == 3 * n and len(scored) == n and scored["correct"].all()
    by_step = {s: [x for x in log if x[0] == s] for s in prompts.AGENT_STEPS}
    assert all(len(v) == n for v in by_step.values())
    assert all(x[1] == "full_agent:detect" and prompts.AGENT_T1 in x[2] for x in by_step["detect"])
    # step 2 sees step 1's ambiguity analysis; step 3 sees the evidence but not the analysis (§5.3)
    assert all("Ambiguity (step 1): AMBIGUITY-mucar-" in x[2] and prompts.AGENT_T2 in x[2] for x in by_step["evidence"])
    for _, setting, text in by_step["answer"]:
        assert setting == "full_agent" and "Evidence (step 2): EVIDENCE-mucar-" in text and "AMBIGUITY-" not in text
        assert prompts.AGENT_T3 in text
    row = scored.set_index("uid").loc["mucar-0"]
    assert row["step_detect"] == "AMBIGUITY-mucar-0" and row["step_evidence"] == "EVIDENCE-mucar-0"
    assert row["setting"] == "full_agent"
    B.evaluate(model, sample, "full_agent", store=store, progress=False)
    assert model.calls == 3 * n  # all three steps came from the store
    res = B.score_file(store, source=sample.attrs["source"], setting="full_agent", n_resamples=0)
    assert res["scored"] == n and res["metrics"]["Acc_q"] == 100.0  # step records are not answers


def test_agent_limit_asks_the_same_queries_at_every_step(sample):
    log: list = []
    scored = B.evaluate(_agent_model(sample, log), sample, "full_agent", limit=3, progress=False)
    assert len(scored) == 3 and len(log) == 9
    asked = {s: {x[2].split("Question: ")[1][:40] for x in log if x[0] == s} for s in prompts.AGENT_STEPS}
    assert asked["detect"] == asked["evidence"] == asked["answer"]


def test_agent_failed_step_is_passed_on_as_no_output(sample):
    def respond(r):
        if r.meta.get("step") == "detect":
            raise RuntimeError("backend down")
        return "Answer: A"

    model = ScriptedModel(respond)
    scored = B.evaluate(model, sample, "full_agent", progress=False)
    assert len(scored) == len(sample) and scored["valid"].all()
    reqs = B.requests(sample, "full_agent", step="evidence", previous={})
    assert "Ambiguity (step 1): (no output)" in reqs[0].prompt_text
    with pytest.raises(SettingError, match="needs the outputs of the step before"):
        B.requests(sample, "full_agent", step="answer")
    with pytest.raises(SettingError, match="has the steps"):
        prompts.build_prompt(sample.iloc[0], "full_agent", step="nope")


def test_table4_strategies_compared_with_the_published_rows(sample):
    from vlamb_nb.benchmarks.mucar import report

    gold = _gold(sample)
    oracle = ScriptedModel(lambda r: f"Answer: {gold[r.meta['item_id']]}" if r.meta.get("step") in (None, "answer")
                           else "notes", model_id="oracle")
    wrong = ScriptedModel(lambda r: "Answer: E", model_id="wrong")
    runs = {s: B.evaluate(oracle, sample, s, progress=False) for s in ("full", "full_cot", "full_agent")}
    runs["full_codis"] = B.evaluate(wrong, sample, "full_codis", progress=False)
    runs["c_q"] = B.evaluate(oracle, sample, "c_q", progress=False)  # not a Table 4 row: left out
    cmp = report.paper_vs_ours_table4(runs, n_resamples=50).set_index(["row", "column"])
    assert set(cmp.index.get_level_values(0)) == {"Vanilla", "CoT", "CODIS", "OURS"}
    assert cmp.loc[("OURS", "MUCAR Acc_p"), "paper"] == 44.87 and cmp.loc[("OURS", "MUCAR Acc_p"), "ours"] == 100.0
    assert cmp.loc[("Vanilla", "MUCAR Acc_q"), "paper"] == 53.91
    assert cmp.loc[("CODIS", "MUCAR Acc_q"), "ours"] == 0.0 and cmp.loc[("CoT", "MUCAR Acc_p"), "paper"] == 28.57
    assert (cmp["n_queries"] == len(sample)).all() and "setting" in cmp
    from vlamb_nb.benchmarks.mucar import plots

    ax = plots.plot_table4(cmp.reset_index()).axes[0]
    assert len(ax.patches) == 4 * 4  # 4 strategies x (ours, paper) x (Acc_p, Acc_q)
    with pytest.raises(DataError, match="no Table 4 run"):
        report.paper_vs_ours_table4({"c_q": runs["c_q"]})


def test_notebook_runs_a_table4_strategy_and_compares_it(repo_root):
    """Every Table 4 strategy runs under the offline profile (the scripted stand-in answers them) and Table 4 is
    compared, labelled with the answering model, not audited only."""
    import papermill

    path = repo_root / "notebooks" / "mucar.ipynb"
    nb = json.loads(path.read_text(encoding="utf-8"))
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert papermill.inspect_notebook(str(path))["table4_settings"]["default"] == "None"
    assert 'paper=["full_cot", "full_codis", "full_agent"]' in code and 'offline=["full_agent"]' not in code
    for call in ("bench.run_settings(answering, items, table4_settings", "report.paper_vs_ours_table4(",
                 "model=answering, data=items",
                 'record("table4_vs_paper"', "plots.plot_table4(", 'cfg.save_figure(fig, "table4-prompting-strategies", '
                 "model_output=True, data=items)", '"step_detect", "step_evidence"'):
        assert call in code


def test_pair_accuracy_intervals_name_their_resampling_unit(tmp_path):
    from vlamb_nb.benchmarks.mucar.benchmark import BENCHMARK as B
    from vlamb_nb.benchmarks.mucar.score import pair_accuracy
    from vlamb_nb.models import ScriptedModel

    items = B.load(B.make_sample(tmp_path / "s", n=4, seed=0))
    scored = B.evaluate(ScriptedModel(lambda r: "Answer: A"), items, "full", progress=False)
    assert set(pair_accuracy(scored, None, n_resamples=50)["ci_unit"]) == {"pair"}


def test_a_table_cell_has_the_interval_of_the_run_record_and_the_card(tmp_path):
    """One number, one interval: Table 2's Overall Acc_p / Acc_q cells give the interval the run record and the
    report card give them (the declared metric's rule: Wilson over pairs for Acc_p, the pair bootstrap for Acc_q),
    and name how it was drawn."""
    import zlib

    items = B.load(B.make_sample(tmp_path / "s", n=30, seed=0))
    gold = _gold(items)
    model = ScriptedModel(lambda r: f"Answer: {gold[r.item_id]}" if zlib.crc32(r.item_id.encode()) % 4 else "no")
    runs = B.run_settings(model, items, ["full"], store_dir=tmp_path / "st", progress=False)
    table = score.pair_accuracy(runs["full"], None, n_resamples=1000).set_index("metric")
    record = {v.metric: v for v in B.recorded(runs)["full"].metrics if v.whole}
    card = {h.metric: h for h in B.headline(B.recorded(runs), n_resamples=1000, seed=0)}
    for m in ("Acc_p", "Acc_q"):
        assert 0 < table.loc[m, "value"] < 100
        assert round(table.loc[m, "ci_low"], 2) == record[m].ci_low == round(card[m].ci_low, 2)
        assert round(table.loc[m, "ci_high"], 2) == record[m].ci_high == round(card[m].ci_high, 2)
    assert table.loc["Acc_p", "ci_method"].startswith("Wilson") and table.loc["Acc_q", "ci_method"] == \
        "bootstrap over pairs"
