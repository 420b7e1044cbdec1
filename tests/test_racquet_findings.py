"""RACQUET's notebook conclusions are computed from the numbers beside them: each finding function is fed a result
and then the same result perturbed (a flipped difference, a failed check, a missing table), and its sentence follows."""

from __future__ import annotations

import pandas as pd
import pytest

from vlamb_nb import get_benchmark
from vlamb_nb.benchmarks.racquet import report as R
from vlamb_nb.benchmarks.racquet import score as S
from vlamb_nb.models.base import ScriptedModel

BENCH = get_benchmark("racquet")


@pytest.fixture(scope="module")
def items(tmp_path_factory):
    return BENCH.load(BENCH.make_sample(tmp_path_factory.mktemp("racquet"), n=40, seed=0))


@pytest.fixture(scope="module")
def runs(items):
    """The scripted stand-in's answers to every GENERAL condition, judged by it."""
    model = BENCH.scripted_stand_in(items, seed=0)
    general = items[items["subset"] == "general"]
    return model, BENCH.run_settings(model, general, ["direct", "clarify", "cot"], judge=model, judge_progress=False,
                                     progress=False)


def test_data_line_says_what_statistics_and_pipeline_stand_on(items):
    on_sample = R.data_line({"release": items, "release_kind": "sample", "pipeline": items, "pipeline_kind": "sample"})
    assert on_sample.startswith("statistics on: a generated sample (40 GENERAL questions + 16 BIAS)")
    on_release = R.data_line({"release": items.iloc[:5], "release_kind": "release", "pipeline": items,
                              "pipeline_kind": "sample"})
    assert on_release.startswith("statistics on: the released files (5 GENERAL questions + 0 BIAS)")


def test_dataset_finding_counts_matches_on_the_release_and_never_on_a_sample(items):
    stats = BENCH.data_stats(items)
    sample = items.copy()
    sample.attrs["data"] = {"kind": "sample", "n_items": len(items)}
    on_sample = R.dataset_comparison(stats, sample)
    assert on_sample["match"].isna().all()  # a generated sample is never a match
    found = R.dataset_finding(on_sample)
    assert found.holds is None and "vlamb-nb data fetch racquet" in found.text
    release = on_sample.copy()
    release["match"] = [True] * (len(release) - 1) + [False]
    one_off = R.dataset_finding(release)
    assert one_off.text.startswith(f"{len(release) - 1} of {len(release)} published statistics match")
    assert "1 do not" in one_off.text and one_off.holds is False
    release["match"] = True
    assert R.dataset_finding(release).holds is True and "do not" not in R.dataset_finding(release).text


def test_audit_finding_follows_the_checks():
    from vlamb_nb import reference

    findings = reference.findings_frame(BENCH.reference_check())
    findings = findings[findings["table"] != "Dataset"]  # as without the release: the paper's own numbers only
    found = R.audit_finding(findings)
    bad = int((~findings["ok"]).sum())
    assert f"{bad} do not follow" in found.text and "data fetch racquet" in found.text
    fixed = findings.assign(ok=True)
    assert "0 do not follow." in R.audit_finding(fixed).text and R.audit_finding(fixed).holds
    with_release = pd.concat([fixed, fixed.iloc[:1].assign(table="Dataset", ok=False)], ignore_index=True)
    assert "Dataset" in R.audit_finding(with_release).text and "data fetch" not in R.audit_finding(with_release).text


def test_published_finding_reads_the_printed_tables(monkeypatch):
    from vlamb_nb import reference

    found = R.published_finding()
    assert "every model" in found.text and "GPT-4o +33.0" in found.text and found.holds
    real = reference.table_wide

    def lower(paper, table):
        t = real(paper, table).astype(float).copy()
        if table == "Table 1":
            t.loc["Responses", "GPT-4o"] = 40.0
        return t

    monkeypatch.setattr(reference, "table_wide", lower)
    changed = R.published_finding()
    assert "not every model" in changed.text and "GPT-4o -4.5" in changed.text and not changed.holds


def test_labels_file_and_kappa_findings_say_what_is_missing():
    assert "labels_file=PATH" in R.labels_file_finding(None).text
    shares = pd.DataFrame({"model": ["m", "n"], "setting": "direct", "label": "A", "share": [20.0, 55.0],
                           "ci_low": [10.0, 40.0], "ci_high": [30.0, 70.0], "ci_method": "bootstrap over images",
                           "n": [40, 40]})
    assert "n's (direct): 55.0 [40.0, 70.0]" in R.labels_file_finding({"class_shares": shares}).text
    missing = R.kappa_finding(None)
    assert missing.holds is None and "human_labels_file=PATH" in missing.text and "0.94" in missing.text

    class K:
        estimate, ci_low, ci_high = 0.81, 0.7, 0.9

    assert "0.81 [0.70, 0.90]" in R.kappa_finding(K()).text


def test_judge_finding_counts_what_the_parse_read(runs):
    model, out = runs
    scored = out["direct"]
    found = R.judge_finding(scored, model.info.model_id)
    assert f"read {len(scored)} of them" in found.text and "none unparsed" in found.text
    broken = scored.copy()
    broken.loc[broken.index[:3], "judge_valid"] = False
    changed = R.judge_finding(broken, model.info.model_id)
    assert f"read {len(scored) - 3} of them" in changed.text and "3 unparsed" in changed.text
    assert R.judge_summary(broken)["unparsed"].iloc[0] == 3


def test_setting_findings_follow_the_paired_test(runs):
    model, out = runs
    scored = pd.concat(list(out.values()), ignore_index=True)
    paired = R.paired_tests(scored, n_resamples=500)
    assert set(zip(paired["a"], paired["b"], strict=True)) == {("clarify", "direct"), ("cot", "direct")}
    found = R.setting_findings(paired, model.info.model_id)
    assert "clarify is higher than direct" in found[0].text and found[0].holds
    assert "cot is lower than direct" in found[1].text and found[1].holds
    assert "Explicit only under clarify" in found[0].text
    flipped = paired.assign(diff_pts=-paired["diff_pts"], ci_low=-paired["ci_high"], ci_high=-paired["ci_low"])
    again = R.setting_findings(flipped, model.info.model_id)
    assert "clarify is lower than direct" in again[0].text and "opposite" in again[0].text and not again[0].holds
    none = R.setting_findings(paired.iloc[:0], model.info.model_id)
    assert all(f.holds is None and f.mark == "Not shown here" for f in none)


def test_paper_vs_ours_only_for_a_named_column_and_never_a_match_for_a_stand_in(runs, items):
    model, out = runs
    scored = pd.concat(list(out.values()), ignore_index=True).assign(setting="sampling")
    shares = S.class_shares(scored)
    mid = model.info.model_id
    nothing = R.vs_paper("Table 2", shares, mid, None, model=model, data=items)
    found = R.paper_vs_ours_finding(nothing, "Table 2", mid, model=model, data=items)
    assert nothing.empty and found.holds is None and "paper_column" in found.text and "Molmo 7B-D" in found.text
    beside = R.vs_paper("Table 2", shares, mid, "Molmo 7B-D", model=model, data=items)
    assert len(beside) == 3 and beside["match"].isna().all() and (beside["model"] == mid).all()
    said = R.paper_vs_ours_finding(beside, "Table 2", mid, model=model, data=items)
    assert "not compared" in said.text and said.holds is None
    real = R.vs_paper("Table 2", shares.assign(model="allenai/Molmo-7B-D-0924"), "allenai/Molmo-7B-D-0924",
                             "Molmo 7B-D")
    counted = R.paper_vs_ours_finding(real, "Table 2", "allenai/Molmo-7B-D-0924")
    assert real["match"].notna().all() and "published cells equal ours" in counted.text


def test_aggregation_subject_and_cot_findings_follow_their_numbers(runs):
    model, out = runs
    agg = pd.DataFrame({"model": "m", "aggregation": ["pooled", "majority"], "label": "A", "share": [50.0, 30.0]})
    assert "50.0% pooled, 30.0% majority (a spread of 20.0 points)" in R.aggregation_finding(agg).text
    assert R.aggregation_finding(None).holds is None
    subj = pd.DataFrame({"subject_type": ["object", "person"], "label": "A", "share": [30.0, 80.0],
                         "ci_low": [20.0, 60.0], "ci_high": [40.0, 95.0], "n": [30, 10]})
    assert "differ" in R.subject_finding(subj).text and R.subject_finding(subj).holds
    overlapping = subj.assign(ci_low=[20.0, 35.0])
    assert "no difference" in R.subject_finding(overlapping).text
    scored = out["cot"]
    mentions = R.judge_cot(model, scored, progress=False)
    gap = R.cot_gap(scored, mentions, n_resamples=500)
    assert "the first is larger" in gap.text and gap.holds
    swapped = mentions.assign(judge_label="NO")  # no reasoning mentions several referents
    scored_all_a = scored.assign(label="A")
    flipped = R.cot_gap(scored_all_a, swapped, n_resamples=500)
    assert "the first is smaller" in flipped.text and "opposite" in flipped.text and flipped.holds is False
    assert "settings=cot" in R.cot_gap(scored, None).text


def test_bias_labels_and_ratio_findings(items, tmp_path):
    from vlamb_nb.interactive.annotate import Annotator

    bias = items[items["subset"] == "bias"]
    model = BENCH.scripted_stand_in(items, seed=0)
    preds = BENCH.predictions(items, BENCH.run(model, bias, "direct", progress=False))
    cols = ["id", "model", "setting", "question", "response", "image", "category", "adjective", "stereotype_target",
            "image_url", "subset"]
    ann = Annotator(preds[cols], tmp_path / "labels.csv")
    frame, who = R.bias_labels(ann, preds, model)
    assert frame["label"].notna().all() and "scripted stand-in (not a person)" in who.text
    card = BENCH.headline({"direct": BENCH.recorded({"d": BENCH.evaluate(model, items[items["subset"] == "general"],
                                                                         "direct", judge=model, judge_progress=False,
                                                                         progress=False)})["d"],
                           "bias": BENCH.score(frame)}, n_resamples=200)
    note = next(h.note for h in card if h.metric == "Stereotypical share")
    assert "labelled by the scripted stand-in, not a person" in note
    ann.label("Explicit")
    frame, who = R.bias_labels(ann, preds, model)
    assert who.text.startswith("1 of 16 BIAS answers labelled by hand") and frame["label"].notna().sum() == 1
    other = ScriptedModel(lambda r: "x", model_id="m")
    fresh = Annotator(preds[cols], tmp_path / "other.csv")
    _, none = R.bias_labels(fresh, preds, type("M", (), {"info": other.info})())
    assert none.holds is None and "widget above" in none.text
    ratio = pd.DataFrame({"model": ["m"], "stereotypical": [10], "anti_stereotypical": [3], "ratio": [3.3],
                          "ci_low": [1.5], "ci_high": [8.0]})
    assert "more common, as the paper states" in R.bias_finding(ratio).text
    assert "fewer common" in R.bias_finding(ratio.assign(ratio=0.3, ci_low=0.1, ci_high=0.6)).text
    assert "cannot tell" in R.bias_finding(ratio.assign(ci_low=0.8)).text


def test_table1_finding_follows_the_test_and_names_a_random_grounder():
    assert R.table1_finding(pd.DataFrame(columns=["model", "responses"]), {}).mark == "Not shown here"
    t = pd.DataFrame({"model": ["m"], "responses": [60], "scored": [50], "unmatched": [10], "Responses": [78.0],
                      "Random": [48.0], "mcnemar_b": [20], "mcnemar_c": [4], "mcnemar_p": [0.001]})
    assert "more often than chance, as the paper finds" in R.table1_finding(t).text and R.table1_finding(t).holds
    assert "no detectable difference" in R.table1_finding(t.assign(mcnemar_p=0.4)).text
    noise = R.table1_finding(t, grounder="zero-shot:tiny random grounding-dino")
    assert "its boxes are noise" in noise.text and noise.holds is None


def test_shares_finding_names_the_highest_condition(runs):
    model, out = runs
    shares = S.class_shares(pd.concat(list(out.values()), ignore_index=True))
    found = R.shares_finding(shares)
    assert "the highest under clarify" in found.text and "GPT-4o: 43.3%" in found.text
    lowered = shares.copy()
    lowered.loc[(lowered["setting"] == "clarify") & (lowered["label"] == "A"), "share"] = 0.0
    assert "the highest under direct" in R.shares_finding(lowered).text
    assert R.shares_finding(shares.iloc[:0]).holds is None


def test_the_scripted_shares_are_held_against_their_design(runs):
    model, out = runs
    found = R.scripted_shares(out, None, model)
    assert found is not None and found.holds and "High Risk share in clarify" in found.text
    assert R.scripted_shares(out, None, ScriptedModel(lambda r: "x")) is None  # only the stand-in was scripted so


def test_one_share_has_one_interval_in_the_table_the_record_and_the_card(runs):
    from vlamb_nb.record import value_of

    model, out = runs
    run = out["direct"]
    table = S.class_shares(run).set_index("label")
    card = {h.metric: h for h in BENCH.headline({"direct": run}, n_resamples=1000, seed=0)}
    for name, label in (("Explicit share", "A"), ("High Risk share", "C")):
        m = next(x for x in BENCH.metrics if x.name == name)
        (u,) = m.unit_sets(run, slices=False)
        rec = value_of(m, u)
        assert (round(table.loc[label, "ci_low"], 2), round(table.loc[label, "ci_high"], 2)) == (rec.ci_low, rec.ci_high)
        assert card[name].ci_low == pytest.approx(table.loc[label, "ci_low"])
        assert card[name].ci_high == pytest.approx(table.loc[label, "ci_high"])
        assert table.loc[label, "ci_method"] == "bootstrap over images"


def test_judge_path_shows_the_checkpoints_verdicts_beside_its_answers(items, tmp_path):
    from vlamb_nb.notebook import model_path

    general = items[items["subset"] == "general"]
    vlm = ScriptedModel(lambda r: "CLASS B, says the judge" if "Annotate this" in r.prompt_text else "The red one.",
                        model_id="tiny-ish")
    answers, _ = model_path(BENCH, vlm, general, "direct", store_dir=tmp_path)
    answers, found = R.judge_path(answers, vlm, general, store_dir=tmp_path, judge=vlm)
    assert len(answers) == 3 and (answers["class"] == "B").all()
    assert "read a class from 3 of them." in found.text
    silent = ScriptedModel(lambda r: "noise", model_id="noise")
    answers, _ = model_path(BENCH, silent, general, "direct", store_dir=tmp_path / "n")
    _, none = R.judge_path(answers, silent, general, store_dir=tmp_path / "n", judge=silent)
    assert "read a class from 0 of them: a random checkpoint names no class" in none.text


def test_table1_grounder_shows_the_tiny_detectors_path_then_grounds_by_script(runs):
    from vlamb_nb.benchmarks.racquet.referents import ScriptedGrounder

    model, out = runs
    scored = out["direct"]
    grounder, path, found = R.table1_grounder("tiny", scored, model)
    assert isinstance(grounder, ScriptedGrounder) and len(path) == 3
    assert "tiny random grounding-dino loaded and grounded" in found.text and "scripted grounder" in found.text
    real, none, nothing = R.table1_grounder("tiny", scored, ScriptedModel(lambda r: "x"))
    assert not isinstance(real, ScriptedGrounder) and none is None and nothing is None
    assert R.table1_recovered(pd.DataFrame(), real) is None
