"""Headline metrics declared as data: each kind's one aggregation against numbers worked out by hand, and each
paper's declaration giving the card, the sweep summary and ``compare`` the number the paper's own tables give.

The paper tables read the declared metric's units where a table shows the metric (VAGUE's accuracy column, MUCAR's
Acc_q / Acc_p cells, V-FLUTE's F1@t cells, RACQUET's class shares, Ref-Adv's Acc@0.5 cells of its official report,
with the papers' own rounding), so their checks here count by hand instead (the answers' categories; a pair's
queries all right; scikit-learn's macro-F1 of the labels the official rule keeps; IoU at 0.5 per slice; a class's
answers over all answers), and each has a test that a rule changed in ``METRICS`` changes the table's cells.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from vlamb_nb import get_benchmark
from vlamb_nb.compare import Run, compare
from vlamb_nb.errors import DataError
from vlamb_nb.models import ScriptedModel
from vlamb_nb.stats.metric import Metric, OnCard, Published, headlines, summary

B = 300


def _records(metrics, runs: dict) -> dict:
    """``{name: scored frame}`` as the run records the card and a summary read (a frame's, in memory)."""
    from types import SimpleNamespace

    from vlamb_nb.record import from_scored

    return {k: from_scored(SimpleNamespace(metrics=tuple(metrics)), v, n_resamples=0) for k, v in runs.items()}


# -- each kind against a hand count -------------------------------------------------------------------------
def _point(m: Metric, df: pd.DataFrame) -> float:
    return m.point(m.rows(df))


def test_binary_counts_truthy_answers_and_missing_ones_as_wrong():
    df = pd.DataFrame({"correct": [True, False, None, 1, np.nan, "yes"]})
    assert _point(Metric("accuracy"), df) == pytest.approx(100 * 2 / 6)  # True, 1; text is no correctness flag


def test_binary_with_a_threshold_reads_a_score_column():
    df = pd.DataFrame({"iou": [0.5, 0.49999, np.nan, 0.9]})
    assert _point(Metric("Acc@0.5", column="iou", threshold=0.5), df) == 50.0
    assert _point(Metric("Acc@0.9", column="iou", threshold=0.9), df) == 25.0  # one parameter, no function each


def test_all_correct_counts_a_group_only_when_every_row_is_right_in_declared_order():
    df = pd.DataFrame({"group": ["g2", "g1", "g3", "g1", "g2"], "correct": [True, True, True, True, False],
                       "record_id": [5, 2, 9, 1, 4]})
    m = Metric("Acc_p", "all_correct", group="group", order="record_id", unit="pair")
    units = m.units(df)
    assert list(units.index) == ["g1", "g2", "g3"]  # first seen after ordering by record_id
    assert list(units) == [1.0, 0.0, 1.0]
    assert _point(m, df) == pytest.approx(200 / 3)


def test_a_share_keeps_unlabelled_answers_in_the_denominator():
    df = pd.DataFrame({"label": ["A", "B", None, "A", "C"], "subset": ["general"] * 4 + ["bias"]})
    m = Metric("Explicit share", "share", column="label", value="A",
               where=lambda d: (d["subset"] == "general").to_numpy())
    assert _point(m, df) == 50.0  # 2 of the 4 GENERAL answers, the unlabelled one counted


def test_macro_f1_with_a_support_threshold_follows_the_official_rule():
    gold = np.array([1, 1, 0, 0, 1, 0])
    pred = np.array([1, 0, 0, 1, 1, 0])
    support = np.array([0.9, 0.9, 0.1, 0.9, 0.6, 0.6])
    df = pd.DataFrame({"label_true": gold, "label_pred_filled": pred, "explanation_score": support})

    def by_hand(p: np.ndarray) -> float:
        return 100 * np.mean([2 * np.sum((gold == k) & (p == k)) / (np.sum(gold == k) + np.sum(p == k))
                              for k in (0, 1)])
    f1 = [Metric(f"F1@{t}", "macro_f1", column="label_pred_filled", gold="label_true", support="explanation_score",
                 threshold=t / 100) for t in (0, 60)]
    assert _point(f1[0], df) == pytest.approx(by_hand(pred))
    adjusted = np.where(support <= 0.6, 1 - gold, pred)  # a score of exactly 0.6 does not pass 0.6
    assert _point(f1[1], df) == pytest.approx(by_hand(adjusted))
    with pytest.raises(DataError, match="explanation_score contains missing values"):
        f1[1].units(df.assign(explanation_score=[0.9, np.nan, 0.1, 0.9, 0.6, 0.6]))


def test_a_mean_and_its_resampled_statistic_agree_with_numpy():
    x = np.array([0.2, 0.4, 0.9, 0.5])
    m = Metric("explanation score", "mean", column="s", card=None)
    stat = m.statistic(x)
    w = np.array([[1, 1, 1, 1], [2, 0, 0, 2], [0, 4, 0, 0]], float)
    assert stat(w) == pytest.approx([100 * x.mean(), 100 * (0.2 + 0.5) / 2, 40.0])


def test_a_declaration_that_cannot_be_computed_is_refused_when_written():
    with pytest.raises(ValueError, match="unknown metric kind 'median'"):
        Metric("m", "median")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="names its group column"):
        Metric("Acc_p", "all_correct")
    with pytest.raises(ValueError, match="names its gold column"):
        Metric("F1", "macro_f1")
    with pytest.raises(ValueError, match="names the value it counts"):
        Metric("share", "share", column="label")


def test_slices_come_from_a_column_or_a_declared_rule():
    df = pd.DataFrame({"subset": ["VCR", "Ego4D", "VCR"], "neg": [True, False, False]})
    by_column = Metric("accuracy", slices="subset").slice_masks(df)
    assert [(n, m.tolist()) for n, m in by_column] == [("Ego4D", [False, True, False]), ("VCR", [True, False, True])]
    by_rule = Metric("accuracy", slices=lambda d: [("Neg", d["neg"].to_numpy())]).slice_masks(df)
    assert [(n, m.tolist()) for n, m in by_rule] == [("Neg", [True, False, False])]


def test_the_card_reads_the_declared_settings_slices_published_column_and_seed():
    from vlamb_nb.stats.ranking import headline_among_published, published, weighted_mean

    cells = pd.DataFrame({"table": "T1", "row": ["M1", "M2", "Humans"], "column": ["VCR LM"] * 3,
                          "value": ["40", "60", "90"], "value_num": [40.0, 60.0, 90.0]})
    m = Metric("accuracy", slices="subset",
               card=OnCard(published=Published("T1", {"VCR": "VCR {SETTING}"}, n=100, n_of_row={"Humans": 10}),
                           settings=("sm", "lm"), slice="{slice} {SETTING}", note="{n} of {n_all} rows", seed=3))
    right = np.random.default_rng(0).random(40) < 0.75
    run = pd.DataFrame({"subset": ["VCR"] * 40 + ["Ego4D"], "correct": [*right, True]})
    rows = headlines("p", [m], _records([m], {"lm": run, "vlm": run}), cells=lambda table: cells[cells["table"] == table],
                     n_resamples=B, seed=10)
    assert len(rows) == 1  # sm not run, vlm not declared, Ego4D not published
    h = rows[0]
    assert (h.metric, h.slice, h.setting, h.n, h.note) == ("accuracy", "VCR LM", "lm", 40, "41 of 41 rows")
    assert h.value == pytest.approx(100 * right.mean())
    assert {c.name: c.n for c in h.comparators} == {"M1": 100, "M2": 100, "Humans": 10}
    comps = published("p", "T1", "VCR LM", n=100, cells=cells)
    comps[-1].n = 10
    # the seed: the card's + the setting's place among the declared settings (lm: 1) + the metric's own (3)
    # the interval: Wilson's for 40 items resampled alone (statsmodels counts it here, not the package)
    from statsmodels.stats.proportion import proportion_confint

    lo, hi = (100 * x for x in proportion_confint(int(right.sum()), 40, alpha=0.05, method="wilson"))
    by_hand = headline_among_published(paper="p", metric="accuracy", slice="VCR LM",
                                       stat=weighted_mean(right.astype(float)), n_rows=40, published=comps,
                                       setting="lm", n_resamples=B, seed=10 + 1 + 3, note="41 of 41 rows",
                                       interval=lambda draws: (lo, hi, "Wilson, item"))
    ours, hand = h.to_dict(), by_hand.to_dict()
    assert (ours.pop("ci_low"), ours.pop("ci_high")) == pytest.approx((hand.pop("ci_low"), hand.pop("ci_high")))
    assert ours == hand


def test_a_run_without_the_metrics_values_gets_one_row_saying_so():
    declared = get_benchmark("racquet").metrics
    run = pd.DataFrame({"id": ["g1", "g2"], "subset": "general", "image_url": ["u1", "u2"], "label": [None, None]})
    (rec,) = _records(declared, {"direct": run}).values()
    rows = headlines("racquet", declared, {"direct": rec}, cells=get_benchmark("racquet").reference, n_resamples=B)
    assert [(h.metric, h.slice, h.status, h.value) for h in rows] == [
        ("Explicit share", "GENERAL, direct", "no labels", None)]
    assert summary(declared, rec) == {"n": 2}


# -- each paper: the card, the summary and compare give the paper's own table's number -------------------------
def _rng_model(seed: int, answer, model_id: str) -> ScriptedModel:
    rng = np.random.default_rng(seed)
    return ScriptedModel(lambda r: answer(rng), model_id=model_id)


def _letters(rng) -> str:
    return "ABCD"[int(rng.integers(0, 4))]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two scripted models' scored runs of every paper (random answers, so no number is trivially 0 or 100)."""
    d = tmp_path_factory.mktemp("metric")
    out: dict[str, dict[str, pd.DataFrame]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = get_benchmark("vague")
        items = b.load(b.make_sample(d / "vague", n=40))
        out["vague"] = {m: b.evaluate(_rng_model(s, _letters, m), items, "vlm", progress=False, bertscore=None)
                        for m, s in (("A", 1), ("B", 2))}
        b = get_benchmark("mucar")
        items = b.load(b.make_sample(d / "mucar", n=40))
        out["mucar"] = {m: b.evaluate(_rng_model(s, _letters, m), items, "full", progress=False)
                        for m, s in (("A", 1), ("B", 2))}
        b = get_benchmark("vflute")
        items = b.load(b.make_sample(d / "vflute", n=40))
        out["vflute"] = {}
        for m, s in (("A", 1), ("B", 2)):
            sc = b.evaluate(_rng_model(s, lambda rng: f"x\nLABEL: {'entailment' if rng.random() < .5 else 'contradiction'}",
                                       m), items, "zero_shot", progress=False, scorer="none")
            out["vflute"][m] = sc.assign(explanation_score=np.random.default_rng(s).uniform(0.3, 0.9, len(sc)),
                                         explanation_scorer="drawn")
        b = get_benchmark("refadv")
        items = b.load(b.make_sample(d / "refadv", n=40))
        out["refadv"] = {}
        for m, s in (("A", 1), ("B", 2)):
            sc = b.evaluate(ScriptedModel(lambda r: "[1, 2, 30, 40]", model_id=m), items, "direct", progress=False)
            out["refadv"][m] = sc.assign(iou=np.random.default_rng(s).uniform(0, 1, len(sc)))
        b = get_benchmark("racquet")
        items = b.load(b.make_sample(d / "racquet", n=40))
        out["racquet"] = {m: b.evaluate(ScriptedModel(lambda r: "the red one", model_id=m), items, "direct",
                                        judge=_rng_model(s, lambda rng: f"CLASS {'ABC'[int(rng.integers(0, 3))]}",
                                                         "judge"), progress=False)
                          for m, s in (("A", 1), ("B", 2))}
    return out


def _three_ways(paper: str, setting: str, runs) -> tuple[list, dict, pd.DataFrame]:
    """The card's rows and the summary of model A, and the comparison's values of A and B."""
    bench = get_benchmark(paper)
    a = runs[paper]["A"]
    card = bench.headline({setting: a}, n_resamples=B)
    c = compare([Run(m, paper, setting, runs[paper][m]) for m in ("A", "B")], n_resamples=B)
    return card, bench.summary(a), c.values[c.values["model"] == "A"].set_index(["metric", "slice"])["value"]


def test_mucar_acc_p_and_acc_q_are_pair_accuracys_overall(runs):
    from vlamb_nb.benchmarks.mucar.score import pair_accuracy

    card, summ, values = _three_ways("mucar", "full", runs)
    run = runs["mucar"]["A"]
    table = pair_accuracy(run, None, n_resamples=100).set_index("metric")["value"]
    # by hand: a query counts when right; a pair when every query of it is right
    by_hand = {"Acc_q": 100 * run["correct"].astype(bool).mean(),
               "Acc_p": 100 * run.groupby("group")["correct"].all().mean()}
    assert 0 < by_hand["Acc_p"] < by_hand["Acc_q"] < 100
    for name in ("Acc_p", "Acc_q"):
        assert table[name] == pytest.approx(by_hand[name])
        assert next(h.value for h in card if h.metric == name) == pytest.approx(by_hand[name])
        assert summ[name] == round(by_hand[name], 2)
        assert values[(name, "Overall")] == pytest.approx(by_hand[name])


def test_mucars_table_cells_are_the_declared_metrics(runs, monkeypatch):
    """Table 2's cells read the declared Acc_q / Acc_p: a rule changed in ``METRICS`` changes every cell."""
    from dataclasses import replace

    from vlamb_nb.benchmarks.mucar import score as S

    run = runs["mucar"]["A"].copy()
    run["lenient"] = True  # another correctness column: every query right
    before = S.pair_accuracy(run, "category", n_resamples=0).set_index(["category", "metric"])["value"]
    assert (before < 100).any()
    monkeypatch.setattr(S, "METRICS", tuple(replace(m, column="lenient") for m in S.METRICS))
    after = S.pair_accuracy(run, "category", n_resamples=0)
    assert (after["value"] == 100).all() and len(after) == len(before)
    counts = S.pair_accuracy(run, ["category", "language"], n_resamples=0)
    by_hand = run.assign(category=run["group"].map(run.groupby("group")["category"].first()))
    n = by_hand.groupby(["category", "language"]).agg(q=("group", "size"), p=("group", "nunique"))
    for _, r in counts.iterrows():
        assert r["n_queries"] == n.loc[(r["category"], r["language"]), "q"]
        assert r["n_groups"] == n.loc[(r["category"], r["language"]), "p"]


def test_vflute_f1_at_t_is_table_4s(runs):
    from sklearn.metrics import f1_score

    from vlamb_nb.benchmarks.vflute.score import tables

    card, summ, values = _three_ways("vflute", "zero_shot", runs)
    run = runs["vflute"]["A"]
    t4 = tables(run)["Table 4"].iloc[0]
    for name, t in (("F1@0", 0.0), ("F1@60", 0.6)):
        # by hand: a label stands only where its explanation scores above t, else it is wrong (the official rule)
        gold = run["label_true"].to_numpy(int)
        kept = np.where(run["explanation_score"].to_numpy(float) <= t, 1 - gold, run["label_pred_filled"])
        by_hand = 100 * f1_score(gold, kept, average="macro")
        assert 0 < by_hand < 100 and t4[name] == round(by_hand, 2)
        assert next(h.value for h in card if h.metric == name) == pytest.approx(by_hand)
        assert summ[name] == round(by_hand, 2)
        assert values[(name, "overall")] == pytest.approx(by_hand)
    assert next(h for h in card if h.metric == "F1@60").note == "explanations scored by drawn"
    assert values[("explanation score", "overall")] == pytest.approx(100 * runs["vflute"]["A"]["explanation_score"]
                                                                     .mean())


def test_vflutes_table_cells_are_the_declared_f1_at_t(runs, monkeypatch):
    """Table 4's and Table 7's F1@t cells are the declared metrics' values: a rule changed in ``METRICS`` (here the
    support an F1@60 label needs) changes F1@60 and F1@53 (the same rule at 0.53), and F1@0 not at all."""
    from dataclasses import replace

    from vlamb_nb.benchmarks.vflute import score as S

    run = runs["vflute"]["A"].assign(perfect=1.0)  # every explanation adequate: F1@60 becomes F1@0
    before = S.tables(run)
    assert (before["By dataset"]["F1@60"] != before["By dataset"]["F1@0"]).any()
    monkeypatch.setattr(S, "METRICS", (S.METRICS[0], replace(S.METRICS[1], support="perfect"), *S.METRICS[2:]))
    after = S.tables(run)
    for table in ("Table 4", "By dataset"):
        assert (after[table]["F1@60"] == after[table]["F1@0"]).all() and (after[table]["F1@53"] ==
                                                                           after[table]["F1@0"]).all()
        assert after[table]["F1@0"].equals(before[table]["F1@0"])


def test_vague_accuracy_per_subset_is_the_breakdowns(runs):
    from vlamb_nb.benchmarks.vague.score import breakdown

    card, summ, values = _three_ways("vague", "vlm", runs)
    rows = breakdown(runs["vague"]["A"]).set_index("subset")
    for subset in ("VCR", "Ego4D"):
        exact = 100 * rows.loc[subset, "correct"] / rows.loc[subset, "N"]
        assert next(h.value for h in card if h.slice == f"{subset} VLM") == pytest.approx(exact)
        assert values[("accuracy", subset)] == pytest.approx(exact)
    assert summ["accuracy"] == round(100 * rows.loc["All", "correct"] / rows.loc["All", "N"], 2)
    assert values[("accuracy", "all")] == pytest.approx(100 * rows.loc["All", "correct"] / rows.loc["All", "N"])


def test_racquet_shares_are_the_class_shares_of_the_general_questions(runs):
    from vlamb_nb.benchmarks.racquet.score import class_shares

    card, summ, values = _three_ways("racquet", "direct", runs)
    a = runs["racquet"]["A"]
    general = a[a["subset"] == "general"]
    shares = class_shares(general, n_resamples=100).set_index("label")
    for name, label in (("Explicit share", "A"), ("High Risk share", "C")):
        exact = 100 * (general["label"] == label).sum() / len(general)  # by hand: unlabelled answers count in n
        assert 0 < exact < 100
        assert shares.loc[label, "share"] == pytest.approx(exact)
        assert next(h.value for h in card if h.metric == name) == pytest.approx(exact)
        assert summ[name] == round(exact, 2)
        assert values[(name, "GENERAL")] == pytest.approx(exact)


def test_racquets_class_shares_are_the_declared_share_metrics(runs, monkeypatch):
    """Every class share of the tables is a share metric's value, the declared one where the headline has it: a
    class counted under another column in ``METRICS`` changes its cells, and only its."""
    from dataclasses import replace

    from vlamb_nb.benchmarks.racquet import score as S

    a = runs["racquet"]["A"].assign(other="A")  # another labelling: every answer Explicit
    before = S.class_shares(a, n_resamples=20).set_index(["setting", "label"])
    monkeypatch.setattr(S, "METRICS", tuple(replace(m, column="other") if m.value == "A" else m for m in S.METRICS))
    after = S.class_shares(a, n_resamples=20).set_index(["setting", "label"])
    explicit = after.xs("A", level="label")
    assert (explicit["share"] == 100).all() and (before.xs("A", level="label")["share"] < 100).all()
    assert after.drop(index="A", level="label")["share"].equals(before.drop(index="A", level="label")["share"])


def test_refadv_acc_at_half_is_the_official_reports(runs):
    from vlamb_nb.benchmarks.refadv.data import in_bin
    from vlamb_nb.benchmarks.refadv.score import acc_at
    from vlamb_nb.benchmarks.refadv.score import summary as official

    card, summ, values = _three_ways("refadv", "direct", runs)
    run = runs["refadv"]["A"]
    report = official(run)  # its Acc@0.5 cells read the declared metric's units: checked here by hand
    ious, neg = run["iou"].astype(float), run["use_negation"].astype(bool)
    mid = run["distractor_count"].map(lambda d: in_bin(int(d), "4-6")).astype(bool)
    by_slice = {h.slice: h.value for h in card if h.metric == "Acc@0.5"}
    stricter = {h.metric: h.value for h in card if h.metric != "Acc@0.5"}  # the official table's other columns
    assert stricter == pytest.approx({"Acc@0.75": 100 * report["acc@0.75"], "Acc@0.9": 100 * acc_at(ious, 0.9)})
    assert by_slice["overall"] == pytest.approx(100 * report["acc@0.5"]) == pytest.approx(100 * acc_at(ious, 0.5))
    assert by_slice["Neg"] == pytest.approx(100 * report["neg"]) == pytest.approx(100 * acc_at(ious[neg], 0.5))
    assert by_slice["No-Neg"] == pytest.approx(100 * report["no_neg"]) == pytest.approx(100 * acc_at(ious[~neg],
                                                                                                       0.5))
    assert by_slice["4-6"] == pytest.approx(100 * report["4-6"]) == pytest.approx(100 * acc_at(ious[mid], 0.5))
    assert summ["Acc@0.5"] == round(100 * report["acc@0.5"], 2) == summ["acc@0.5"]
    assert values[("Acc@0.5", "overall")] == pytest.approx(100 * report["acc@0.5"])
    # compare reports every slice the metric declares, each the card's value (the same rows, the same rule)
    slices = ["overall", "Neg", "No-Neg", "2-3", "4-6", ">=7"]
    # Acc@0.5 on every slice; the stricter thresholds on the whole set, as the official table prints them
    assert list(values.index.get_level_values("slice")) == slices + ["overall", "overall"]
    for sl in ("Neg", "No-Neg", "4-6"):
        assert values[("Acc@0.5", sl)] == pytest.approx(by_slice[sl])
    assert values[("Acc@0.75", "overall")] == pytest.approx(100 * acc_at(ious, 0.75))


def test_one_number_has_one_interval_in_the_record_the_card_and_compare():
    """0 of 3 right: Wilson's [0, 56.1] everywhere (a percentile bootstrap gave the card and the record [0, 0]);
    a clustered metric keeps the cluster bootstrap."""
    from vlamb_nb.record import value_of
    from vlamb_nb.stats.common import Scores

    m = Metric("accuracy")
    run = pd.DataFrame({"item_id": ["a", "b", "c"], "correct": [False, False, False]})
    (u,) = m.unit_sets(run, slices=False)
    lo, hi, how = m.interval(u)
    assert (round(lo, 1), round(hi, 1)) == (0.0, 56.1) and how.startswith("Wilson")
    rec = value_of(m, u, n_resamples=B)
    assert (rec.ci_low, rec.ci_high) == (round(lo, 2), round(hi, 2))
    on_card = Metric("accuracy", card=OnCard())
    (card,) = headlines("p", [on_card], _records([on_card], {"x": run}), cells=lambda t: pd.DataFrame(),
                        n_resamples=B)
    assert (card.ci_low, card.ci_high) == pytest.approx((lo, hi))
    sc = Scores(metric=m, slice="overall", values=[u.array()], ci_unit="item")
    assert sc.interval(0, np.zeros(B)) == pytest.approx((lo, hi))
    clustered = Metric("accuracy", cluster="image", cluster_unit="image")
    (cu,) = clustered.unit_sets(run.assign(image=["i", "i", "j"]), slices=False)
    assert clustered.interval(cu)[2] == "bootstrap over images"




def test_a_clustered_value_has_the_records_interval_in_compare_and_on_the_card():
    """Resampled by image: compare's and the card's interval are the record's (the same draws), not their own."""
    from vlamb_nb.record import value_of
    from vlamb_nb.stats.common import Scores

    m = Metric("Acc", cluster="image", cluster_unit="image", card=OnCard())
    rng = np.random.default_rng(3)
    run = pd.DataFrame({"item_id": [f"i{k}" for k in range(40)], "image": [f"im{k // 4}" for k in range(40)],
                        "correct": rng.random(40) < 0.6})
    (u,) = m.unit_sets(run, slices=False)
    rec = value_of(m, u)
    sc = Scores(metric=m, slice="overall", values=[u.array()], clusters=u.cluster_array(), ci_unit="image")
    assert tuple(round(x, 2) for x in sc.interval(0, np.zeros((5, 40)))) == (rec.ci_low, rec.ci_high)
    (card,) = headlines("p", [m], _records([m], {"x": run}), cells=lambda t: pd.DataFrame(), n_resamples=B, seed=7)
    assert (round(card.ci_low, 2), round(card.ci_high, 2)) == (rec.ci_low, rec.ci_high)
