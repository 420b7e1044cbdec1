"""MUCAR's notebook says what its outputs show: each sentence is computed from the numbers beside it, so a changed
number changes the sentence (a flipped difference turns "higher" into "lower", a missing release gives the line
that names what is missing and the command that brings it)."""

from __future__ import annotations

import pandas as pd
import pytest

from vlamb_nb.benchmarks.mucar import report
from vlamb_nb.benchmarks.mucar.benchmark import BENCHMARK as B


@pytest.fixture(scope="module")
def items(tmp_path_factory):
    return B.load(B.make_sample(tmp_path_factory.mktemp("mucar") / "s", n=24, seed=0))


@pytest.fixture(scope="module")
def stand_in_runs(items):
    model = B.scripted_stand_in(items, seed=0)
    return model, B.run_settings(model, items, ["full", "q_i"], progress=False)


def test_the_data_line_says_what_the_statistics_stand_on_and_what_the_release_adds(items):
    from vlamb_nb.benchmarks.base import NotebookData

    sample = report.data_finding(NotebookData(items, "sample", items, "sample"))
    assert sample.holds is None and "`vlamb-nb data fetch mucar`" in sample.text and "Not shown here" in sample.text
    released = report.data_finding(NotebookData(items, "release", items, "sample"))
    assert released.text.startswith("Statistics and the audit are computed on the released data-all.json")
    assert f"{len(items)} queries" in released.text


def test_table5_names_each_printed_count_the_release_contradicts():
    from vlamb_nb import reference

    paper = reference.table_wide("mucar", "Table 5")
    ours = paper.rename(index={"Dual-Amb": "Dual-ambiguity"}).astype(int)
    same = report.table5_finding(ours, paper, "release")
    assert same.holds and same.text.startswith(f"{paper.size} of {paper.size} printed counts")
    ours.loc["Grammar", "Malay"] += 1
    off = report.table5_finding(ours, paper, "release")
    assert not off.holds and "1 do not: Grammar Malay (printed 78, release 79)" in off.text
    assert report.table5_finding(ours, paper, "sample").mark == "Not shown here"


def test_the_scenarios_line_follows_whether_the_data_has_them():
    info = {"derivable": False, "fields_looked_for": ["scenario"], "stand_in": "image_ambiguity",
            "stand_in_queries": 210}
    assert "draws a stand-in, image_ambiguity, on 210 queries" in report.scenario_finding(info).text
    assert report.scenario_finding({"derivable": True, "labelled_queries": 5}).holds


def test_quirks_and_the_audit_are_counted_in_their_sentences():
    assert "singleton group: 3" in report.quirks_finding({"singleton_group": 3}, "release").text
    assert report.quirks_finding({}, "sample").text == "No quirk found in the generated sample."
    findings = pd.DataFrame({"kind": ["sum", "sum", "impossible"], "ok": [True, False, True]})
    one = report.audit_finding(findings, "release")
    assert "3 checks of the paper's printed numbers: 1 do not follow (sum: 1)" in one.text and not one.holds
    findings.loc[1, "ok"] = True
    none = report.audit_finding(findings, "sample")
    assert "0 do not follow." in none.text and "`vlamb-nb data fetch mucar`" in none.text


def test_the_published_intervals_say_whether_the_best_model_stands_apart():
    frame = pd.DataFrame({"column": ["Overall Acc_p"] * 3, "row": ["a", "b", "c"], "value": [40.0, 38.0, 10.0],
                          "ci_low": [36.0, 34.0, 8.0], "ci_high": [44.0, 42.0, 12.0], "n": [501] * 3})
    close = report.published_ci_finding(frame)
    assert not close.holds and "1 of the other 2 models' intervals reach it (b)" in close.text
    assert "not separated" in close.text
    frame.loc[1, "ci_high"] = 35.0
    apart = report.published_ci_finding(frame)
    assert apart.holds and "0 of the other 2" in apart.text and "is separated" in apart.text
    assert report.published_ci_finding(None).mark == "Not shown here"


def test_table3_drops_are_read_from_the_printed_table(monkeypatch):
    from vlamb_nb import reference

    shown = report.table3_finding()
    assert shown.holds and "by 13.67 (Qwen2.5-VL-7B-Instruct) to 34.62 (LLaVA-OneVision)" in shown.text
    table = reference.table_wide("mucar", "Table 3").copy()
    table.loc["LLaVA-OneVision (w/o)", "Overall Acc_p drop"] = -2.0
    monkeypatch.setattr(reference, "table_wide", lambda *a: table)
    assert not report.table3_finding().holds


def test_the_answers_line_counts_what_the_parser_read(stand_in_runs):
    _, runs = stand_in_runs
    full = runs["full"]
    text = report.answers_finding(full, "m").text
    n_read = int(full["valid"].sum())
    assert text.startswith(f"m: the strict parser read {n_read} of {len(full)} answers")
    worse = full.copy()
    worse.loc[worse.index[0], ["valid", "outcome", "correct"]] = [False, "refusal", False]
    assert f"read {n_read - 1} of" in report.answers_finding(worse, "m").text


@pytest.mark.parametrize("given, row", [("Qwen/Qwen2.5-VL-7B-Instruct", "Qwen2.5-VL-7B-Instruct"),
                                        ("OpenGVLab/InternVL2_5-8B-MPO", "InternVL2.5-8B-MPO"),
                                        ("llava-hf/llava-v1.6-mistral-7b-hf", "LLaVA-v1.6-mistral-7b"),
                                        ("openai:gpt-4o", "GPT-4o"), ("tiny:qwen2_5_vl", None),
                                        ("scripted stand-in (seed 0)", None)])
def test_a_model_finds_its_own_row_of_table_2a(given, row):
    assert report.paper_row_of(given) == row


def test_paper_vs_ours_labels_ours_with_our_model_and_counts_only_the_same_model(stand_in_runs):
    model, runs = stand_in_runs
    full = runs["full"]
    stand_in = report.paper_vs_ours(full, model=model, n_resamples=0)
    assert (stand_in["model"] == model.info.model_id).all() and stand_in["match"].isna().all()
    assert (stand_in["row"] == report.DEFAULT_PAPER_ROW).all()
    said = report.paper_vs_ours_finding(stand_in)
    assert said.holds is None and "for orientation only: not the same model" in said.text
    other = report.paper_vs_ours(full, "GPT-4o", model="llava-hf/llava-onevision-qwen2-7b-ov-hf", n_resamples=0)
    assert other["match"].isna().all() and other["flag"].str.contains("is not the paper's GPT-4o").all()
    same = report.paper_vs_ours(full, model="Qwen/Qwen2.5-VL-7B-Instruct", n_resamples=0)
    assert same["match"].notna().all() and (same["row"] == "Qwen2.5-VL-7B-Instruct").all()
    assert "published cells equal ours within rounding" in report.paper_vs_ours_finding(same).text


def test_a_setting_claim_holds_flips_or_is_not_shown_with_the_test_beside_it(stand_in_runs):
    model, runs = stand_in_runs
    claims = report.SETTING_CLAIMS
    tests = report.setting_tests(runs, claims, n_resamples=200)
    assert set(tests["a_setting"]) == {"full"} and set(tests["b_setting"]) == {"q_i"}
    held, *missing = report.claim_findings(tests, claims, model.info.model_id)
    assert held.holds and "full input is higher than no context (Q,I)" in held.text
    assert "As the paper states" in held.text
    assert held.text.startswith("Table 3, context removed:") and "discordant:" in held.text
    assert all(f.holds is None and f.mark == "Not shown here" for f in missing)
    flipped = tests.assign(diff=-tests["diff"], ci_low=-tests["ci_high"], ci_high=-tests["ci_low"])
    turned = report.claim_findings(flipped, claims[:1], "m")[0]
    assert turned.holds is False and "is lower than" in turned.text and "The paper states the opposite" in turned.text


def test_the_image_insensitive_line_follows_the_counts():
    summary = {"label": "constant-A", "image_insensitive_groups": 5, "groups_with_distinct_golds": 5,
               "Acc_q": 50.0, "Acc_p": 0.0}
    assert report.insensitive_finding([summary]).holds and "the paper's pattern" in report.insensitive_finding(
        [summary]).text
    fewer = report.insensitive_finding([{**summary, "image_insensitive_groups": 2}])
    assert fewer.holds is None and "2 of 5" in fewer.text and "pattern" not in fewer.text


def test_the_judge_line_reads_both_readings_and_their_agreement():
    summary = {"no_verdict": 0, "overall": [{"metric": "Acc_p", "value": 61.0, "ci_low": 50.0, "ci_high": 70.0,
                                             "ci_method": "Wilson, pair"}],
               "agreement_with_parser": {"n": 100, "percent_agreement": 91.0, "cohen_kappa": 0.8,
                                         "kappa_ci": [0.7, 0.9]}}
    parser = pd.DataFrame({"metric": ["Acc_p"], "value": [57.0]})
    text = report.judge_finding(summary, parser, "j").text
    assert "reads Acc_p 61.0 [50.0, 70.0] (Wilson, pair) where the strict parser reads 57.0" in text
    assert "agree on 91.0% of 100 queries" in text
    summary["agreement_with_parser"]["percent_agreement"] = 99.0
    assert "agree on 99.0%" in report.judge_finding(summary, parser, "j").text


def test_table4_is_held_against_its_own_model_only(stand_in_runs):
    model, runs = stand_in_runs
    stand_in = report.paper_vs_ours_table4({"full": runs["full"]}, model=model, n_resamples=0)
    assert (stand_in["model"] == model.info.model_id).all() and stand_in["match"].isna().all()
    assert "for orientation only" in report.paper_vs_ours_finding(stand_in).text
    gpt = report.paper_vs_ours_table4({"full": runs["full"]}, model="openai:gpt-4o-2024-11-20", n_resamples=0)
    assert gpt["match"].notna().all() and (gpt["model"] == "openai:gpt-4o-2024-11-20").all()
