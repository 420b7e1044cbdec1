"""vlamb_nb.stats against known values, simulations with known truth, and its own loop path."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from vlamb_nb import stats
from vlamb_nb.errors import DataError, SettingError


def _macro_f1(y_true, y_pred) -> float:
    from sklearn.metrics import f1_score

    return float(f1_score(y_true, y_pred, average="macro"))


def _pairs_all_correct(correct: np.ndarray) -> np.ndarray:
    """1 for each consecutive pair of items that are both correct (the groups of these tests)."""
    return correct.reshape(-1, 2).min(axis=1)


def _systems(n: int, acc_a: float, acc_b: float, seed: int, k: int = 2):
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, k, n)
    wrong = (gold + rng.integers(1, k, n)) % k
    pa = np.where(rng.random(n) < acc_a, gold, wrong)
    pb = np.where(rng.random(n) < acc_b, gold, wrong)
    return gold, pa, pb


def test_import_loads_numpy_only():
    """The libraries (scipy, statsmodels, scikit-learn, pandas) load on first use, torch never."""
    import subprocess
    import sys

    heavy = ("torch", "transformers", "scipy", "statsmodels", "sklearn", "pandas")
    code = f"import sys, vlamb_nb.stats; print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# ----------------------------------------------------------------------------- known values


def test_wilson_matches_hand_computation():
    # k=7, n=20, z=1.959964: centre=(0.35+z^2/40)/(1+z^2/20), half=z*sqrt(.35*.65/20+z^2/1600)/(1+z^2/20)
    z = 1.959963984540054
    denom = 1 + z * z / 20
    centre = (0.35 + z * z / 40) / denom
    half = z * math.sqrt(0.35 * 0.65 / 20 + z * z / 1600) / denom
    r = stats.wilson(7, 20)
    assert r.estimate == pytest.approx(0.35)
    assert r.ci_low == pytest.approx(centre - half, abs=1e-12)
    assert r.ci_high == pytest.approx(centre + half, abs=1e-12)
    assert (round(r.ci_low, 4), round(r.ci_high, 4)) == (0.1812, 0.5671)  # textbook table value


def test_wilson_agrees_with_statsmodels_and_edges():
    from statsmodels.stats.proportion import proportion_confint

    for k, n in [(0, 10), (10, 10), (3, 1279), (674, 1279)]:
        r = stats.wilson(k, n, alpha=0.1)
        lo, hi = proportion_confint(k, n, alpha=0.1, method="wilson")
        assert (r.ci_low, r.ci_high) == pytest.approx((lo, hi), abs=1e-12)
    assert stats.wilson(0, 10).ci_low == 0.0
    with pytest.raises(DataError):
        stats.wilson(11, 10)
    with pytest.raises(DataError):
        stats.wilson(1.5, 10)
    fp = stats.wilson_from_percent(52.70, 1279)
    assert fp.extra["k"] == 674 and abs(fp.extra["residual"]) < 0.01


@pytest.mark.parametrize("table", [[[30, 3], [9, 58]], [[500, 40], [70, 390]], [[5, 0], [0, 5]]])
def test_mcnemar_matches_statsmodels(table):
    from statsmodels.stats.contingency_tables import mcnemar as sm

    b, c = table[0][1], table[1][0]
    exact = b + c < 25
    r = stats.mcnemar_table(table)
    expected = sm(np.array(table), exact=exact, correction=True).pvalue if b + c else 1.0
    assert r.p == pytest.approx(expected)
    assert r.method.startswith("mcnemar exact" if exact else "mcnemar chi2")
    n = np.sum(table)
    assert r.estimate == pytest.approx((b - c) / n)


def test_mcnemar_from_correctness_builds_the_paired_table():
    a = np.array([1] * 30 + [1] * 3 + [0] * 9 + [0] * 58)
    b = np.array([1] * 30 + [0] * 3 + [1] * 9 + [0] * 58)
    r = stats.mcnemar(a, b)
    assert r.extra["discordant_a_only"] == 3 and r.extra["discordant_b_only"] == 9
    assert r.p == pytest.approx(stats.mcnemar_table([[30, 3], [9, 58]]).p)
    with pytest.raises(DataError):
        stats.mcnemar(a, b[:-1])
    with pytest.raises(DataError):
        stats.mcnemar(a * 2, b)


def test_cohen_kappa_matches_sklearn_and_statsmodels():
    from sklearn.metrics import cohen_kappa_score
    from statsmodels.stats.inter_rater import cohens_kappa

    rng = np.random.default_rng(3)
    r1 = rng.choice(["a", "b", "c"], 200)
    r2 = np.where(rng.random(200) < 0.6, r1, rng.choice(["a", "b", "c"], 200))
    res = stats.cohen_kappa(r1, r2)
    assert res.estimate == pytest.approx(cohen_kappa_score(r1, r2))
    labels = ["a", "b", "c"]
    table = np.array([[np.sum((r1 == x) & (r2 == y)) for y in labels] for x in labels])
    sm = cohens_kappa(table)
    assert (res.ci_low, res.ci_high) == pytest.approx((sm["kappa_low"], sm["kappa_upp"]))
    assert res.p == pytest.approx(sm["pvalue_two_sided"])
    assert np.isnan(stats.cohen_kappa(["x"] * 5, ["x"] * 5).estimate)  # undefined, not a crash
    with pytest.raises(DataError):
        stats.cohen_kappa(["a", None], ["a", "b"])


def test_fleiss_kappa_matches_statsmodels_and_has_a_ci():
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    rng = np.random.default_rng(4)
    truth = rng.integers(0, 3, 150)
    ratings = np.column_stack([np.where(rng.random(150) < 0.7, truth, rng.integers(0, 3, 150))
                               for _ in range(4)])
    table = stats.ratings_to_table(ratings)
    r = stats.fleiss_kappa(table, n_resamples=1000)
    assert r.estimate == pytest.approx(sm_fleiss(table))
    assert r.ci_low < r.estimate < r.ci_high and r.p < 1e-6
    with pytest.raises(DataError):
        stats.fleiss_kappa([[2, 1], [1, 1]])  # unequal raters


def test_holm_and_bh_match_statsmodels():
    from statsmodels.stats.multitest import multipletests

    p = [0.01, 0.04, 0.03, 0.2, 0.001, 0.04]
    assert stats.holm(p) == pytest.approx(multipletests(p, method="holm")[1])
    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 30, 200):  # Holm is our own numpy: statsmodels' numbers to the last bit, ties and caps too
        q = np.round(rng.random(n) ** 2, 2)
        q[:: max(1, n // 3)] = 1.0
        assert np.array_equal(stats.holm(q), multipletests(q, method="holm")[1])
    assert stats.benjamini_hochberg(p) == pytest.approx(multipletests(p, method="fdr_bh")[1])
    res = [stats.Result(0.1, p=x, name=str(i)) for i, x in enumerate(p)]
    adj = stats.adjust(res, "bh")
    assert [r.p for r in adj] == pytest.approx(list(stats.benjamini_hochberg(p)))
    with pytest.raises(DataError):
        stats.holm([0.1, float("nan")])
    with pytest.raises(SettingError):
        stats.adjust(res, "bonferonni")


# ----------------------------------------------------------------------------- bootstrap behaviour


def test_bootstrap_is_deterministic_and_matches_the_loop_distribution():
    rng = np.random.default_rng(5)
    x = (rng.random(400) < 0.65).astype(int)
    a = stats.bootstrap_ci(x, seed=7, n_resamples=4000)
    assert a == stats.bootstrap_ci(x, seed=7, n_resamples=4000)
    assert a != stats.bootstrap_ci(x, seed=8, n_resamples=4000)
    loop = stats.bootstrap_ci(x, lambda idx: x[idx].mean(), seed=7, n_resamples=4000)
    assert a.estimate == loop.estimate == pytest.approx(x.mean())
    se = math.sqrt(x.mean() * (1 - x.mean()) / len(x))
    assert a.ci_low == pytest.approx(x.mean() - 1.96 * se, abs=0.2 * se)
    assert loop.ci_high == pytest.approx(a.ci_high, abs=0.25 * se)
    assert "loop" in loop.method and "loop" not in a.method


def test_vectorized_macro_f1_matches_sklearn_including_single_class_quirk():
    from sklearn.metrics import f1_score

    gold, pa, _ = _systems(300, 0.7, 0.6, 6, k=3)
    stat = stats.macro_f1_statistic(gold)
    assert stat.value(pa) == pytest.approx(f1_score(gold, pa, average="macro"))
    # V-FLUTE NYCartoons: gold all "entailment", some predictions "contradiction"
    g = np.array(["entailment"] * 10)
    p = np.array(["entailment"] * 8 + ["contradiction"] * 2)
    assert stats.macro_f1_statistic(g).value(p) == pytest.approx(f1_score(g, p, average="macro"))
    # a resample = weights; check a random weight row against sklearn's sample_weight
    rng = np.random.default_rng(0)
    w = rng.integers(0, 3, (1, 300)).astype(float)
    got = stat(pa, w, y_true=gold)[0]
    assert got == pytest.approx(f1_score(gold, pa, average="macro", sample_weight=w[0],
                                         labels=np.unique(np.r_[gold[w[0] > 0], pa[w[0] > 0]])))


def test_bca_differs_from_percentile_on_skewed_data_and_falls_back_when_degenerate():
    rng = np.random.default_rng(9)
    x = rng.exponential(size=60) ** 2
    pct = stats.bootstrap_ci(x, n_resamples=4000)
    bca = stats.bootstrap_ci(x, n_resamples=4000, method="bca")
    assert bca.method.startswith("bootstrap bca")
    assert bca.ci_high > pct.ci_high  # right skew moves BCa upwards
    loop_bca = stats.bootstrap_ci(x, lambda idx: x[idx].mean(), n_resamples=4000, method="bca")
    assert loop_bca.ci_high == pytest.approx(bca.ci_high, rel=0.15)
    const = stats.bootstrap_ci(np.ones(20), method="bca", n_resamples=200)
    assert (const.ci_low, const.ci_high) == (1.0, 1.0) and "degenerate" in const.method


def test_cluster_bootstrap_is_wider_when_clusters_are_perfectly_correlated():
    rng = np.random.default_rng(10)
    per_cluster = (rng.random(150) < 0.5).astype(int)
    x = np.repeat(per_cluster, 4)
    clusters = np.repeat(np.arange(150), 4)
    item = stats.bootstrap_ci(x, n_resamples=4000)
    clus = stats.bootstrap_ci(x, n_resamples=4000, clusters=clusters)
    width_item, width_clus = item.ci_high - item.ci_low, clus.ci_high - clus.ci_low
    assert width_clus > 1.6 * width_item  # about sqrt(4) = 2 times wider
    assert clus.extra["n_clusters"] == 150
    # the loop path resamples the same clusters
    loop = stats.bootstrap_ci(x, lambda idx: x[idx].mean(), n_resamples=2000, clusters=clusters)
    assert loop.ci_high - loop.ci_low == pytest.approx(width_clus, rel=0.2)


def test_group_accuracy_statistic_equals_metric_and_is_resampled_by_group():
    rng = np.random.default_rng(11)
    groups = np.repeat([f"q{i}" for i in range(200)], 2)
    correct = (rng.random(400) < 0.7).astype(int)
    stat = stats.group_accuracy_statistic(groups)
    r = stats.bootstrap_ci(correct, stat, clusters=groups, n_resamples=3000)
    ok = _pairs_all_correct(correct)
    assert r.estimate == pytest.approx(ok.mean())
    direct = stats.bootstrap_ci(ok, n_resamples=3000)
    assert (r.ci_high - r.ci_low) == pytest.approx(direct.ci_high - direct.ci_low, rel=0.15)


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(DataError, match="NaN"):
        stats.bootstrap_ci([1.0, float("nan")])
    with pytest.raises(DataError, match="needs numbers"):
        stats.bootstrap_ci(["a", "b"])
    with pytest.raises(DataError, match="same items"):
        stats.paired_bootstrap([1, 0], [1])
    with pytest.raises(SettingError):
        stats.bootstrap_ci([1, 0], method="studentized")
    with pytest.raises(DataError, match="no items"):
        stats.bootstrap_ci(np.array([]))
    with pytest.raises(DataError):
        stats.bootstrap_ci([1, 0, 1], clusters=[1, 2])
    with pytest.raises(DataError):
        stats.bootstrap_ci([1, 0, 1], stats.macro_f1_statistic([1, 0]))


def test_result_renders_in_frame_and_json():
    r = stats.bootstrap_ci([1, 0, 1, 1], n_resamples=100, name="acc")
    d = r.to_dict()
    json.dumps(d)  # NaN p became None
    assert d["p"] is None and d["name"] == "acc" and d["seed"] == 0
    df = stats.results_frame({"x": stats.wilson(3, 4), "y": r})
    assert list(df["name"]) == ["x", "acc"] and df["estimate"].dtype == float
    assert r.scaled(100).estimate == pytest.approx(75.0)


# ----------------------------------------------------------------------------- paired tests


def test_paired_bootstrap_on_macro_f1_vectorized_agrees_with_loop():
    gold, pa, pb = _systems(500, 0.75, 0.65, 12)
    vec = stats.paired_bootstrap(pa, pb, stats.macro_f1_statistic(gold), n_resamples=2000)
    loop = stats.paired_bootstrap(pa, pb, lambda v, idx: _macro_f1(gold[idx], v[idx]), n_resamples=500)
    assert vec.estimate == pytest.approx(_macro_f1(gold, pa) - _macro_f1(gold, pb))
    assert vec.estimate == pytest.approx(loop.estimate)
    assert vec.ci_low == pytest.approx(loop.ci_low, abs=0.02)
    assert vec.p < 0.01 and loop.p < 0.01
    assert vec.extra["metric_a"] > vec.extra["metric_b"]


def test_permutation_vectorized_agrees_with_loop():
    gold, pa, pb = _systems(200, 0.7, 0.62, 13)
    ca, cb = (pa == gold).astype(int), (pb == gold).astype(int)
    vec = stats.permutation_test(ca, cb, n_resamples=4000, seed=1)
    loop = stats.permutation_test(ca, cb, lambda v, idx: v[idx].mean(), n_resamples=2000, seed=1)
    assert vec.estimate == pytest.approx(loop.estimate)
    assert vec.p == pytest.approx(loop.p, abs=0.03)
    assert vec.p == pytest.approx(stats.mcnemar(ca, cb, exact=False).p, abs=0.04)
    f1 = stats.permutation_test(pa, pb, stats.macro_f1_statistic(gold), n_resamples=2000,
                                clusters=np.arange(200) // 2)
    assert 0 < f1.p <= 1 and "cluster" in f1.method


def _rejection_rate(effect: float, n_sets: int, n: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    rejections = 0
    for i in range(n_sets):
        base = rng.random(n) < 0.7
        a = (rng.random(n) < 0.7 + effect).astype(int)
        b = np.where(rng.random(n) < 0.5, a, base).astype(int)  # correlated, paired systems
        rejections += stats.paired_bootstrap(a, b, n_resamples=1000, seed=i).p < 0.05
    return rejections / n_sets


def test_paired_bootstrap_size_and_power_by_simulation():
    null = _rejection_rate(0.0, 400, 200, seed=20)
    assert 0.02 <= null <= 0.085, null
    power = _rejection_rate(0.25, 100, 200, seed=21)
    assert power >= 0.95, power


def test_percentile_ci_coverage_for_a_proportion():
    cover = stats.proportion_coverage(0.3, 150, n_datasets=300, n_resamples=1000, seed=3)
    assert 0.92 <= cover <= 0.98, cover


def test_bca_agrees_with_scipy_and_labels_work_as_values():
    from scipy.stats import bootstrap as sp_bootstrap

    rng = np.random.default_rng(14)
    x = rng.lognormal(size=80)
    ours = stats.bootstrap_ci(x, method="bca", n_resamples=8000, seed=1)
    ref = sp_bootstrap((x,), np.mean, method="BCa", n_resamples=8000, random_state=1).confidence_interval
    width = ref.high - ref.low
    assert ours.ci_low == pytest.approx(ref.low, abs=0.1 * width)
    assert ours.ci_high == pytest.approx(ref.high, abs=0.1 * width)
    gold = np.array(["yes", "no"] * 100)
    pred = np.where(rng.random(200) < 0.8, gold, np.where(gold == "yes", "no", "yes"))
    r = stats.bootstrap_ci(pred, stats.macro_f1_statistic(gold), n_resamples=2000, method="bca",
                           clusters=np.arange(200) // 4)
    assert r.estimate == pytest.approx(_macro_f1(gold, pred))
    assert r.ci_low < r.estimate < r.ci_high and "cluster" in r.method


def test_paired_group_accuracy_with_clusters_matches_per_group_paired_test():
    rng = np.random.default_rng(15)
    groups = np.repeat(np.arange(150), 2)
    a = (rng.random(300) < 0.8).astype(int)
    b = (rng.random(300) < 0.6).astype(int)
    stat = stats.group_accuracy_statistic(groups)
    r = stats.paired_bootstrap(a, b, stat, clusters=groups, n_resamples=3000)
    direct = stats.paired_bootstrap(_pairs_all_correct(a), _pairs_all_correct(b), n_resamples=3000)
    assert r.estimate == pytest.approx(direct.estimate)
    assert r.ci_high - r.ci_low == pytest.approx(direct.ci_high - direct.ci_low, rel=0.15)
    perm = stats.permutation_test(a, b, stat, clusters=groups, n_resamples=2000)
    assert perm.estimate == pytest.approx(direct.estimate) and perm.p < 0.01


# ----------------------------------------------------------------------------- library implementations
# Each function below now calls a library. The spies prove the call (they fail on the old,
# hand-written code); the literals are the hand-written implementation's outputs on the same
# inputs, computed before the switch, so the switch provably changed no reported number.


def _spy(monkeypatch, module: str, attr: str) -> list:
    import functools
    import importlib

    mod = importlib.import_module(module)
    real = getattr(mod, attr)
    calls: list = []

    @functools.wraps(real)  # keeps the signature (permutation_test's rng keyword is looked up)
    def spy(*args, **kwargs):
        calls.append((args, kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(mod, attr, spy)
    return calls


def test_wilson_calls_statsmodels_and_keeps_the_hand_written_values(monkeypatch):
    calls = _spy(monkeypatch, "statsmodels.stats.proportion", "proportion_confint")
    # (k, n, alpha) -> (low, high) of the hand-written implementation
    old = {(7, 20, 0.05): (0.18119182410108206, 0.5671457233147638),
           (0, 10, 0.05): (0.0, 0.2775327998628892),
           (10, 10, 0.1): (0.787058029916593, 1.0),
           (3, 1279, 0.05): (0.000798023337446308, 0.006873586239111422),
           (674, 1279, 0.01): (0.49096769606649726, 0.5627022845651914),
           (1, 2, 0.2): (0.1642517200298993, 0.8357482799701007)}
    for (k, n, alpha), (lo, hi) in old.items():
        r = stats.wilson(k, n, alpha)
        assert (r.ci_low, r.ci_high) == pytest.approx((lo, hi), rel=1e-12, abs=1e-15)
        assert 0.0 <= r.ci_low <= r.ci_high <= 1.0
    assert len(calls) == len(old) and all(kw.get("method") == "wilson" for _, kw in calls)


def test_bh_calls_multipletests_holm_does_not_and_both_keep_the_hand_written_values(monkeypatch):
    """Holm is numpy (statsmodels' Holm runs a full garbage collection per call); BH stays statsmodels'."""
    calls = _spy(monkeypatch, "statsmodels.stats.multitest", "multipletests")
    p = [0.01, 0.04, 0.03, 0.2, 0.001, 0.04, 0.5, 0.04]  # with ties
    old_holm = [0.07, 0.2, 0.18, 0.4, 0.008, 0.2, 0.5, 0.2]
    old_bh = [0.04, 0.05333333333333334, 0.05333333333333334, 0.2285714285714286, 0.008,
              0.05333333333333334, 0.5, 0.05333333333333334]
    assert stats.holm(p) == pytest.approx(old_holm, rel=1e-12)
    assert stats.benjamini_hochberg(p) == pytest.approx(old_bh, rel=1e-12)
    assert [kw.get("method") for _, kw in calls] == ["fdr_bh"]
    assert stats.holm([0.3, 0.6]).tolist() == [0.6, 0.6]  # capped at 1 only where needed
    assert stats.holm([0.6, 0.7]).max() == 1.0
    assert len(stats.holm([])) == 0 and len(stats.benjamini_hochberg([])) == 0


def test_cohen_kappa_calls_sklearn_and_keeps_the_hand_written_values(monkeypatch):
    calls = _spy(monkeypatch, "sklearn.metrics", "cohen_kappa_score")
    r = stats.cohen_kappa(list("aabbccabcaabcbbacaab"), list("abbbccaacaabcbcacbab"))
    # hand-written implementation: estimate, CI, p
    assert (r.estimate, r.ci_low, r.ci_high, r.p) == pytest.approx(
        (0.6981132075471699, 0.4317796505905365, 0.9644467645038033, 1.0067096795371211e-05), rel=1e-10)
    r = stats.cohen_kappa([1, 2, 2, 1, 3, 3, 1, 2], [1, 2, 1, 1, 3, 2, 1, 2], ci=False)
    assert r.estimate == pytest.approx(0.6097560975609756, rel=1e-12)
    # mixed label types, which sklearn alone rejects, still work (labels are coded first)
    r = stats.cohen_kappa(["yes", 1, "yes", 0, 1, "yes", 0, 1], ["yes", 1, 0, 0, 1, 1, 0, "yes"])
    assert (r.estimate, r.p) == pytest.approx((0.4418604651162791, 0.06893777663374537), rel=1e-10)
    assert len(calls) == 3


def test_fleiss_kappa_calls_statsmodels_and_keeps_the_hand_written_values(monkeypatch):
    calls = _spy(monkeypatch, "statsmodels.stats.inter_rater", "fleiss_kappa")
    table = np.array([[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
                      [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]])
    r = stats.fleiss_kappa(table, n_resamples=1000, seed=3)
    # hand-written implementation: estimate, bootstrap CI (same engine, same seed), z-test p
    assert (r.estimate, r.ci_low, r.ci_high, r.p) == pytest.approx(
        (0.20993070442195522, 0.047160531012821263, 0.34953562536045724, 3.6005943234666626e-35), rel=1e-10)
    assert len(calls) == 1
    assert math.isnan(stats.fleiss_kappa([[3, 0], [3, 0], [3, 0]], n_resamples=50).estimate)  # as before


def _brute_force_sign_flip_p(d: np.ndarray) -> float:
    """Exact two-sided p of the paired permutation test: all 2**m sign flips of the differences."""
    import itertools

    obs = d.sum()
    null = np.array([np.dot(s, d) for s in itertools.product((-1, 1), repeat=len(d))])
    tol = 1e-12 * max(1.0, abs(obs))
    return min(1.0, 2 * min(np.mean(null <= obs + tol), np.mean(null >= obs - tol)))


@pytest.mark.parametrize("engine", ["sign-flip", "scipy"])
def test_permutation_test_of_a_mean_agrees_with_the_hand_written_values(monkeypatch, engine):
    calls = _spy(monkeypatch, "scipy.stats", "permutation_test")
    rng = np.random.default_rng(42)
    a = (rng.random(60) < 0.7).astype(int)
    b = np.where(rng.random(60) < 0.6, a, (rng.random(60) < 0.5)).astype(int)
    # few discordant pairs: every swap is enumerated, so p is exact; the hand-written
    # Monte Carlo test gave 0.5070174649126754 (200,000 resamples, seed 1)
    r = stats.permutation_test(a, b, n_resamples=2000, seed=1, engine=engine)
    assert r.extra["exact"] and r.estimate == pytest.approx(0.05)
    assert r.p == pytest.approx(_brute_force_sign_flip_p((a - b)[a != b].astype(float)))
    assert r.p == pytest.approx(0.5070174649126754, abs=0.005)
    x = np.array([0.3, 1.2, -0.5, 2.2, 0.9, 1.1, -0.2, 0.4, 1.8, 0.0])
    y = np.array([0.1, 0.8, -0.4, 1.5, 1.0, 0.2, -0.6, 0.5, 1.1, -0.3])
    r = stats.permutation_test(x, y, n_resamples=2000, seed=1, engine=engine)  # 1024 swaps, all enumerated
    assert r.p == pytest.approx(_brute_force_sign_flip_p(x - y)) and r.estimate == pytest.approx(0.33)
    assert r.p == pytest.approx(0.025219873900630498, abs=0.002)  # hand-written, 200,000 resamples
    # clusters: whole clusters swap; hand-written Monte Carlo gave 0.5619421902890486
    cl = np.arange(60) // 3
    r = stats.permutation_test(a, b, n_resamples=2000, seed=1, clusters=cl, engine=engine)
    sums = np.bincount(cl, weights=a - b)
    assert r.p == pytest.approx(_brute_force_sign_flip_p(sums[sums != 0]))
    assert r.p == pytest.approx(0.5619421902890486, abs=0.005) and "cluster" in r.method
    # many discordant pairs: Monte Carlo; hand-written values at 200,000 resamples
    rng = np.random.default_rng(7)
    a = (rng.random(300) < 0.70).astype(int)
    b = np.where(rng.random(300) < 0.5, a, (rng.random(300) < 0.62)).astype(int)
    r = stats.permutation_test(a, b, n_resamples=20000, seed=1, engine=engine)
    assert not r.extra["exact"] and r.p == pytest.approx(0.7154714226428868, abs=0.02)
    assert r.p == pytest.approx(stats.mcnemar(a, b, exact=True).p, abs=0.02)  # same null for 0/1 data
    r = stats.permutation_test(a, b, n_resamples=20000, seed=1, clusters=np.arange(300) // 3, engine=engine)
    assert r.p == pytest.approx(0.7005564972175139, abs=0.02)
    assert r.method == "paired permutation cluster" and set(r.extra) == {"n_resamples", "n_clusters", "exact"}
    if engine == "scipy":
        assert len(calls) == 5 and all(kw["permutation_type"] == "samples" for _, kw in calls)
    else:
        assert not calls  # scipy stays the reference only
    # other statistics keep the vectorized engine (scipy has no weighted macro-F1)
    n_scipy = len(calls)
    stats.permutation_test(a, b, stats.macro_f1_statistic(np.ones(300, int)), n_resamples=200, engine=engine)
    assert len(calls) == n_scipy
    assert stats.permutation_test([1, 0, 1], [1, 0, 1], engine=engine).p == 1.0  # no pair differs
    with pytest.raises(SettingError, match="engine"):
        stats.permutation_test(a, b, engine="numba")


# ----------------------------------------------------------------------------- sign-flip permutation engine


def _exact_flip_tails(d, strict: bool = False) -> tuple[float, float]:
    """(P(T <= t), P(T >= t)) over all 2**k sign flips, in exact rationals (decimal inputs as written).

    ``strict=True`` counts only sums strictly beyond ``t``: the count a tie-blind engine would make.
    """
    import itertools
    from fractions import Fraction

    exact = [Fraction(str(v)) for v in d if v != 0]
    obs = sum(exact, Fraction(0))
    sums = [sum((s * v for s, v in zip(signs, exact, strict=True)), Fraction(0))
            for signs in itertools.product((-1, 1), repeat=len(exact))]
    total = len(sums)
    if strict:
        return sum(s < obs for s in sums) / total, sum(s > obs for s in sums) / total
    return sum(s <= obs for s in sums) / total, sum(s >= obs for s in sums) / total


def _two_sided(tails: tuple[float, float]) -> float:
    return min(1.0, 2 * min(tails))


def _mc_bound(p_exact: float, n_resamples: int) -> float:
    """4.5 binomial standard errors of twice a tail share, plus the ``+1`` of ``(# + 1) / (B + 1)``."""
    q = min(p_exact, 1.0) / 2
    return 4.5 * 2 * math.sqrt(q * (1 - q) / n_resamples) + 2 / (n_resamples + 1)


def _scipy_exact_p(d) -> float:
    from scipy.stats import permutation_test as sp

    d = np.asarray(d, dtype=float)
    res = sp((d, np.zeros(len(d))), lambda x, y, axis=-1: (x - y).mean(axis=axis), permutation_type="samples",
             vectorized=True, n_resamples=np.inf, alternative="two-sided")
    return float(res.pvalue)


@pytest.mark.parametrize("seed", range(6))
def test_sign_flip_enumeration_is_exactly_scipys_exact_p(seed):
    rng = np.random.default_rng(seed)
    k = 4 + seed
    cases = [rng.integers(-2, 3, k), np.round(rng.normal(size=k), 1), rng.integers(0, 5, k) / 4 - 0.5]
    for d in cases:
        d = d.astype(float)
        if np.count_nonzero(d) < 2:
            continue
        r = stats.sign_flip_test(d, n_resamples=100)  # k <= 20: enumerated whatever n_resamples
        assert r.exact and r.n_resamples == 2 ** np.count_nonzero(d)
        assert r.p == _scipy_exact_p(d[d != 0])  # scipy enumerates too: the same count, the same float
        assert r.p == pytest.approx(_two_sided(_exact_flip_tails(d)), rel=1e-12, abs=0)
        # through permutation_test: the sign-flip engine and scipy's agree to the last bit
        a, b = np.maximum(d, 0), np.maximum(-d, 0)
        p_flip = stats.permutation_test(a, b, n_resamples=4096, seed=seed).p
        assert p_flip == stats.permutation_test(a, b, n_resamples=4096, seed=seed, engine="scipy").p == r.p


def test_sign_flip_counts_ties_at_the_observed_sum():
    # integer differences tie often: 2 + 1 - 1 - 2 + 2 + 2 = 4 is reached by many patterns
    d = np.array([2, 1, -1, -2, 2, 2, 3, -3], float)
    with_ties, without = _two_sided(_exact_flip_tails(d)), _two_sided(_exact_flip_tails(d, strict=True))
    assert with_ties != without  # a tie-blind count would give another p
    assert stats.sign_flip_test(d).p == pytest.approx(with_ties, rel=1e-12)
    # decimal differences whose rounded sums differ where the exact sums tie (0.3 - 0.1 - 0.2 = 0)
    d = np.array([0.3, -0.1, -0.2, 0.5, 0.4, -0.4, 0.7])
    with_ties, without = _two_sided(_exact_flip_tails(d)), _two_sided(_exact_flip_tails(d, strict=True))
    assert with_ties != without
    assert stats.sign_flip_test(d).p == pytest.approx(with_ties, rel=1e-12)
    assert _scipy_exact_p(d) == pytest.approx(with_ties, rel=1e-12)
    # a sum that is 0 in exact arithmetic but not in floating point: p = 1 (every pattern ties or beats it)
    assert stats.sign_flip_test([0.1, 0.2, -0.3]).p == 1.0
    assert stats.sign_flip_test([0.1, 0.2, -0.3] * 9, n_resamples=2000).p == 1.0  # k = 27: Monte Carlo


def test_sign_flip_all_zero_differences_and_cancelling_clusters_give_p_one():
    r = stats.sign_flip_test(np.zeros(50))
    assert (r.p, r.exact, r.k, r.statistic) == (1.0, True, 0, 0.0)
    a = np.array([1, 0, 1, 1, 0, 0])
    assert stats.permutation_test(a, a.copy()).p == 1.0
    # each cluster holds one win and one loss: its summed difference is 0, so no swap changes anything
    b = np.array([0, 1, 1, 0, 1, 0])
    r = stats.permutation_test([1, 0, 1, 0, 0, 1], b, clusters=[0, 0, 1, 1, 2, 2])
    assert r.p == 1.0 and r.extra["exact"] and r.extra["n_clusters"] == 3
    assert stats.sign_flip_test([5.0]).p == 1.0  # one difference: +-5, both tails hold half
    for engine in ("sign-flip", "scipy"):  # one pair differs
        assert stats.permutation_test([1, 0, 1], [0, 0, 1], engine=engine).p == 1.0


def test_sign_flip_clusters_flip_whole_clusters():
    rng = np.random.default_rng(6)
    a = (rng.random(36) < 0.7).astype(int)
    b = np.where(rng.random(36) < 0.4, a, rng.integers(0, 2, 36))
    clusters = np.repeat(np.arange(12), 3)
    sums = np.bincount(clusters, weights=a - b)
    r = stats.permutation_test(a, b, clusters=clusters, n_resamples=100)
    assert r.extra["exact"] and "cluster" in r.method
    assert r.p == pytest.approx(_two_sided(_exact_flip_tails(sums)), rel=1e-12)
    per_item = stats.permutation_test(a, b, n_resamples=100)
    assert per_item.p == pytest.approx(_two_sided(_exact_flip_tails(a - b)), rel=1e-12)
    assert r.p != per_item.p  # flipping items one by one is another test
    k = np.count_nonzero(sums)  # scipy enumerates only when 2**k <= n_resamples
    assert r.p == stats.permutation_test(a, b, clusters=clusters, n_resamples=2**k, engine="scipy").p


def _integer_flip_distribution(d) -> tuple[np.ndarray, int]:
    """Exact sign-flip distribution of integer differences, by convolving each item's {-|d|, +|d|}:
    ``(dist, total)`` with ``dist[i] = P(T = i - total)``."""
    d = np.abs(np.asarray(d, dtype=np.int64))
    d = d[d != 0]
    total = int(d.sum())
    dist = np.zeros(2 * total + 1)  # dist[i] = P(T = i - total)
    dist[total] = 1.0
    for v in d:
        dist = 0.5 * (np.roll(dist, int(v)) + np.roll(dist, -int(v)))  # |T| <= total: nothing wraps
    return dist, total


def test_sign_flip_monte_carlo_is_within_binomial_error_of_the_exact_p():
    from scipy.stats import binom

    n_resamples = 20000
    # 0/1 scores, 300 discordant items: T = 2X - 300 with X ~ Binomial(300, 1/2) (binomial path)
    d = np.array([1.0] * 162 + [-1.0] * 138 + [0.0] * 500)
    r = stats.sign_flip_test(d, n_resamples, rng=3)
    exact = min(1.0, 2 * min(binom.cdf(162, 300, 0.5), binom.sf(161, 300, 0.5)))
    assert not r.exact and abs(r.p - exact) <= _mc_bound(exact, n_resamples), (r.p, exact)
    # the same against scipy's own Monte Carlo test (two estimates: the bound for their difference)
    from scipy.stats import permutation_test as sp

    sp_p = sp((d, np.zeros(len(d))), lambda x, y, axis=-1: (x - y).mean(axis=axis), permutation_type="samples",
              vectorized=True, n_resamples=n_resamples, rng=np.random.default_rng(3)).pvalue
    assert abs(r.p - sp_p) <= math.sqrt(2) * _mc_bound(exact, n_resamples), (r.p, sp_p)
    # integer scores of several sizes: common values by binomials, rare ones by byte tables
    rng = np.random.default_rng(8)
    d = np.concatenate([rng.choice([-1, 1], 400), rng.choice([-2, 2], 200), rng.integers(-9, 10, 37)])
    d[:50] = 2  # a shift, so the p-value is not near 1
    dist, total = _integer_flip_distribution(d)
    obs = int(d.sum())
    exact = min(1.0, 2 * min(dist[:obs + total + 1].sum(), dist[obs + total:].sum()))
    r = stats.sign_flip_test(d.astype(float), n_resamples, rng=4)
    assert 0.01 < exact < 0.5 and abs(r.p - exact) <= _mc_bound(exact, n_resamples), (r.p, exact)
    # continuous differences, k = 22 (> 20, 2**22 > B: Monte Carlo), against all 2**22 sums
    d = np.random.default_rng(9).normal(0.35, 1.0, 22)
    sums = np.zeros(1)
    for v in d:
        sums = np.concatenate([sums + v, sums - v])
    obs = d.sum()
    exact = min(1.0, 2 * min(np.mean(sums <= obs + 1e-9), np.mean(sums >= obs - 1e-9)))
    r = stats.sign_flip_test(d, n_resamples, rng=5)
    assert not r.exact and abs(r.p - exact) <= _mc_bound(exact, n_resamples), (r.p, exact)
    r = stats.sign_flip_test(d, 2**22)  # as many resamples as patterns: enumerated, as scipy would
    assert r.exact and r.p == pytest.approx(exact, rel=1e-12)


def test_sign_flip_monte_carlo_with_clusters_is_within_binomial_error():
    rng = np.random.default_rng(11)
    a = (rng.random(900) < 0.72).astype(int)
    b = np.where(rng.random(900) < 0.5, a, (rng.random(900) < 0.66)).astype(int)
    clusters = np.arange(900) // 3
    sums = np.bincount(clusters, weights=a - b).astype(np.int64)
    dist, total = _integer_flip_distribution(sums)
    obs = int(sums.sum())
    exact = min(1.0, 2 * min(dist[:obs + total + 1].sum(), dist[obs + total:].sum()))
    r = stats.permutation_test(a, b, clusters=clusters, n_resamples=20000, seed=2)
    assert not r.extra["exact"] and abs(r.p - exact) <= _mc_bound(exact, 20000), (r.p, exact)
    assert r.p == stats.permutation_test(a, b, clusters=clusters, n_resamples=20000, seed=2).p


def test_sign_flip_is_one_function_of_the_seed(monkeypatch):
    from vlamb_nb.stats import permutation

    d = np.random.default_rng(0).normal(0.05, 1.0, 3000)
    d[:400] = 1.0  # one common value (binomial) beside continuous ones (byte tables)
    p = stats.sign_flip_test(d, 6000, rng=7).p
    assert p == stats.sign_flip_test(d, 6000, rng=np.random.default_rng(7)).p
    assert p == stats.sign_flip_test(d, 6000, rng=7, threads=1).p
    nulls = {seed: permutation._monte_carlo(*np.unique(np.abs(d), return_counts=True), 6000,
                                            np.random.default_rng(seed), None) for seed in (7, 8)}
    assert not np.array_equal(nulls[7], nulls[8])
    monkeypatch.setattr(permutation, "THREAD_LOOKUPS", 0)  # force threads: parts drawn in any order
    for threads in (1, 2, 4):
        again = permutation._monte_carlo(*np.unique(np.abs(d), return_counts=True), 6000,
                                         np.random.default_rng(7), threads)
        assert np.array_equal(again, nulls[7]), threads
    # the documented rule, for 0/1 differences: per part, a PCG64 seeded by one 64-bit draw of the
    # seed's generator, one Binomial(k, 1/2) per resample
    d = np.array([1.0] * 170 + [-1.0] * 130)
    seeds = np.random.default_rng(3).integers(0, 2**64, size=3, dtype=np.uint64)
    null = np.concatenate([2 * np.random.Generator(np.random.PCG64(int(s))).binomial(
        [300], 0.5, size=(min(permutation.PART_ROWS, 9000 - i * permutation.PART_ROWS), 1))[:, 0] - 300
        for i, s in enumerate(seeds)])
    assert len(null) == 9000 and permutation.PART_ROWS == 4096
    less, greater = np.count_nonzero(null <= 40) + 1, np.count_nonzero(null >= 40) + 1
    assert stats.sign_flip_test(d, 9000, rng=3).p == min(1.0, 2 * min(less, greater) / 9001)
    # an enumerated p draws nothing: the seed cannot change it
    assert stats.sign_flip_test(d[:15], 10, rng=1).p == stats.sign_flip_test(d[:15], 10, rng=2).p


# ----------------------------------------------------------------------------- small samples


def test_five_wins_no_losses_on_31_items_exact_mcnemar_and_floored_bootstrap(monkeypatch):
    calls = _spy(monkeypatch, "scipy.stats", "binomtest")
    a = np.array([1] * 5 + [0] * 26)  # a right and b wrong on 5 items, the rest agree
    b = np.zeros(31, int)
    exact = stats.mcnemar_exact(a, b)
    assert exact.p == 0.0625 and exact.method == "mcnemar exact" and calls  # 2 * 0.5**5
    assert exact.extra["discordant_a_only"] == 5 and exact.extra["discordant_b_only"] == 0
    assert stats.mcnemar(a, b).p == 0.0625  # the default reports the exact test on few pairs
    assert stats.mcnemar(a, b, exact=False).extra["p_exact"] == 0.0625
    assert stats.permutation_test(a, b).p == pytest.approx(0.0625)  # 32 swaps, enumerated
    for seed in range(20):  # B = 100: most seeds see no resample where b catches up
        r = stats.paired_bootstrap(a, b, n_resamples=100, seed=seed)
        assert r.p >= 1 / 101 and r.extra["koehn_p"] >= 1 / 101, seed
    # why the exact test is the one to report: the bootstrap is too liberal here
    assert stats.paired_bootstrap(a, b, n_resamples=10000).p < 0.05 < exact.p


def test_mcnemar_exact_matches_binomial_at_any_size():
    from scipy.stats import binomtest

    a = np.array([1] * 40 + [0] * 25 + [1] * 100)
    b = np.array([0] * 40 + [1] * 25 + [1] * 100)
    r = stats.mcnemar(a, b)  # 65 discordant pairs: chi-square reported, exact kept alongside
    assert r.method.startswith("mcnemar chi2")
    assert r.extra["p_exact"] == pytest.approx(binomtest(40, 65, 0.5).pvalue)
    assert stats.mcnemar_exact(a, b).p == pytest.approx(binomtest(40, 65, 0.5).pvalue)
    assert stats.mcnemar_table([[3, 0], [0, 4]]).p == 1.0


def test_proportion_ci_is_wilson_by_default_with_the_bootstrap_as_an_option():
    perfect = np.ones(31, int)
    r = stats.proportion_ci(perfect)
    assert r.method == "wilson" and (r.ci_low, r.ci_high) == (stats.wilson(31, 31).ci_low, 1.0)
    assert r.ci_low < 0.9  # 31/31 does not prove 100%
    boot = stats.proportion_ci(perfect, method="percentile", n_resamples=500)
    assert (boot.ci_low, boot.ci_high) == (1.0, 1.0)  # why it is not the default
    x = np.r_[np.ones(20), np.zeros(11)]
    assert stats.proportion_ci(x, method="bca", n_resamples=500, clusters=np.arange(31) // 2).method.startswith(
        "bootstrap")
    with pytest.raises(SettingError, match="clusters"):
        stats.proportion_ci(x, clusters=np.arange(31) // 2)
    with pytest.raises(DataError):
        stats.proportion_ci([0.5, 1.0])
    with pytest.raises(SettingError):
        stats.proportion_ci(x, method="exact")


@pytest.mark.parametrize(("n", "p_true"), [(31, 0.95), (10, 0.5)])
def test_wilson_coverage_on_small_samples_by_simulation(n, p_true):
    from statsmodels.stats.proportion import proportion_confint

    cover = stats.proportion_coverage(p_true, n, n_datasets=2000, method="wilson", seed=11)
    assert cover >= 0.92, cover
    # the same simulation, vectorized by hand: one binomial draw per dataset, all intervals at once
    ks = np.random.default_rng(11).binomial(n, p_true, size=2000)
    lo, hi = proportion_confint(ks, n, method="wilson")
    assert cover == pytest.approx(np.mean((lo <= p_true) & (p_true <= hi)))
    if p_true == 0.95:  # near 1 the percentile bootstrap misses whenever all 31 are right
        boot = stats.proportion_coverage(p_true, n, n_datasets=2000, n_resamples=200, method="percentile",
                                         seed=11)
        assert boot < cover - 0.05 and boot < 0.9, (boot, cover)


# ----------------------------------------------------------------------------- speed


def test_mean_bootstrap_of_continuous_values_holds_small_blocks():
    """The gather path must not hold (resamples x n) blocks: 4.4 MB of them made it slower than a loop."""
    import tracemalloc

    from vlamb_nb.stats import gather

    x = np.random.default_rng(1).normal(size=6027)
    y = np.random.default_rng(2).normal(size=6027)
    stats.bootstrap_ci(x[:100], n_resamples=10)  # imports outside the measurement
    stats.paired_bootstrap(x[:100], y[:100], n_resamples=10)
    peaks = {}
    for b in (2000, 8000):  # (b x n) floats would be 96 MB and 386 MB
        for name, call in (("ci", lambda b=b: stats.bootstrap_ci(x, n_resamples=b)),
                           ("paired", lambda b=b: stats.paired_bootstrap(x, y, n_resamples=b))):
            tracemalloc.start()
            try:
                call()
                peaks[name, b] = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
    # one block's buffers per thread: indices and picked values (8 bytes each), the raw words and
    # low words (2 + 4 bytes per pair of indices), the rejection mask, and no more
    assert max(peaks.values()) < gather._usable_threads() * 24 * gather.BLOCK_ELEMENTS, peaks
    for name in ("ci", "paired"):  # and no more for 4x the resamples than the output itself
        assert peaks[name, 8000] - peaks[name, 2000] < 8 * 6000 + 500_000, peaks
    # the gather path still draws the textbook resample distribution
    r = stats.bootstrap_ci(x, n_resamples=4000, seed=3)
    se = x.std() / math.sqrt(len(x))
    assert r.ci_low == pytest.approx(x.mean() - 1.96 * se, abs=0.1 * se)
    assert r.ci_high == pytest.approx(x.mean() + 1.96 * se, abs=0.1 * se)
    d = stats.paired_bootstrap(x, y, n_resamples=4000, seed=3)
    assert d.estimate == pytest.approx(x.mean() - y.mean())
    se_d = (x - y).std() / math.sqrt(len(x))
    assert d.ci_high - d.ci_low == pytest.approx(2 * 1.96 * se_d, rel=0.1)


def _spec_indices(seed: int, n: int, count: int) -> list[int]:
    """The documented rule, in Python integers: a 32-bit half ``u`` (low half of a word first)
    gives the pair ``divmod((u * n * n) >> 32, n)``, accepted when ``(u * n * n) mod 2**32 >=
    2**32 mod n**2``; rejected pairs are replaced, in order, by the next accepted ones of the
    stream; all first indices come before all second ones."""
    bg = np.random.PCG64(seed)

    def halves(k: int) -> list[int]:
        return [int(u) for u in bg.random_raw((k + 1) // 2).view(np.uint32)[:k]]

    def pair(u: int) -> tuple[int, int, bool]:
        prod = u * n * n
        hi, lo = divmod(prod >> 32, n)
        return hi, lo, prod % 2**32 >= 2**32 % (n * n)

    pairs = [pair(u) for u in halves((count + 1) // 2)]
    bad = [i for i, p in enumerate(pairs) if not p[2]]
    while bad:
        again = [pair(u) for u in halves(len(bad))]
        for i, p in zip(bad, again, strict=True):
            if p[2]:
                pairs[i] = p
        bad = [i for i, p in zip(bad, again, strict=True) if not p[2]]
    return ([p[0] for p in pairs] + [p[1] for p in pairs])[:count]


@pytest.mark.parametrize("n,count", [(56755, 20001), (56755, 20000), (7, 999), (1, 10), (65536, 4000)])
def test_gather_draws_indices_by_the_documented_rule(n, count):
    """Two indices per 32-bit draw (Lemire's method for a range of n**2); n = 56,755 rejects a quarter."""
    from vlamb_nb.stats import gather

    out = np.empty(count + 1, np.int64)
    got = gather.draw_indices(np.random.PCG64(4), n, count, out)
    assert got.tolist() == _spec_indices(4, n, count)
    if n == 56755:  # the rejection path ran: some first draws were replaced
        u = np.random.PCG64(4).random_raw(count // 4).view(np.uint32).astype(object)
        assert sum((x * n * n) % 2**32 < 2**32 % (n * n) for x in u) > count // 20


def test_gather_beyond_two_indices_per_draw_uses_generator_integers():
    from vlamb_nb.stats import gather

    n = gather.PAIR_LIMIT + 1
    got = gather.draw_indices(np.random.PCG64(2), n, 3001, np.empty(3002, np.int64))
    assert np.array_equal(got, np.random.Generator(np.random.PCG64(2)).integers(0, n, size=3001))


@pytest.mark.parametrize("n,n_resamples", [(6027, 3000), (5, 20000), (777, 999), (70_000, 40)])
def test_gather_means_are_one_function_of_the_seed_whatever_the_threads(n, n_resamples, monkeypatch):
    """Parts drawn from generators seeded by the caller's: the same numbers on 1, 2 or 3 threads."""
    from vlamb_nb.stats import gather

    monkeypatch.setattr(gather, "BLOCK_ELEMENTS", 20_000)  # many parts of several blocks, even at these sizes
    monkeypatch.setattr(gather, "PART_ELEMENTS", 60_000)
    monkeypatch.setattr(gather, "THREAD_ELEMENTS", 0)
    x = np.random.default_rng(n).normal(size=n)
    runs = {t: gather.resample_means(x, n_resamples, np.random.default_rng(0), threads=t) for t in (1, 2, 3)}
    assert np.array_equal(runs[1], runs[2]) and np.array_equal(runs[1], runs[3])
    parts = -(-n_resamples // gather.part_rows(n))
    assert parts > 1
    rng, ref = np.random.default_rng(0), np.random.default_rng(0)
    gather.resample_means(x, n_resamples, rng)
    ref.integers(0, 2**64, size=parts, dtype=np.uint64)  # one 64-bit draw of the caller's per part
    assert rng.bit_generator.state == ref.bit_generator.state
    other = gather.resample_means(x, n_resamples, np.random.default_rng(1))
    assert not np.array_equal(other, runs[1])
    # the textbook resample distribution: mean x-bar, variance of the mean var(x) / n
    boot = runs[1]
    se = x.std() / math.sqrt(n)
    assert boot.mean() == pytest.approx(x.mean(), abs=5 * se / math.sqrt(n_resamples))
    assert boot.std() == pytest.approx(se, rel=5 * math.sqrt(0.5 / n_resamples))


def test_continuous_bootstrap_results_come_from_the_gather_engine():
    """bootstrap_ci and paired_bootstrap of continuous values: quantiles of the seed's resample means."""
    from vlamb_nb.stats import gather

    x = np.random.default_rng(8).normal(size=6027)
    y = x + np.random.default_rng(9).normal(size=6027)
    for seed in (0, 12345):
        boot = gather.resample_means(x, 10000, np.random.default_rng(seed))
        r = stats.bootstrap_ci(x, n_resamples=10000, seed=seed)
        assert (r.ci_low, r.ci_high) == tuple(np.quantile(boot, [0.025, 0.975]))
        assert r.estimate == pytest.approx(x.mean(), rel=1e-12)
        d = x - y
        deltas = gather.resample_means(d, 10000, np.random.default_rng(seed))
        p = stats.paired_bootstrap(x, y, n_resamples=10000, seed=seed)
        assert (p.ci_low, p.ci_high) == tuple(np.quantile(deltas, [0.025, 0.975]))
        delta = x.mean() - y.mean()
        assert p.p == (1 + np.sum(np.abs(deltas - delta) >= abs(delta) - 1e-12 * max(1.0, abs(delta)))) / 10001


def _bench_module(monkeypatch):
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "perf" / "bench_stats.py"
    spec = importlib.util.spec_from_file_location("bench_stats", path)
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_stats", mod)  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def test_benchmark_fails_loudly_when_a_vectorized_case_misses_its_target(monkeypatch, capsys):
    import time

    bench = _bench_module(monkeypatch)
    rows = [bench.Row("fast", 0.1, 1.0), bench.Row("slow", 1.0, 0.5), bench.Row("no loop", 1.0, None),
            bench.Row("library", 1.0, 0.5, gated=False), bench.Row("mean", 0.1, 0.25, target=3.0),
            bench.Row("mean ok", 0.1, 0.31, target=3.0)]
    assert bench.missed_cases(rows) == ["slow (0.50x < 1x)", "mean (2.50x < 3x)"]
    # best of 3: one hiccup decides nothing; a tiny size has no 3x to give, so that target is off here
    args = ["--n", "300", "--resamples", "300", "--repeat", "3", "--continuous-target", "1",
            "--permutation-target", "1"]
    assert bench.main(args) == 0
    real = stats.bootstrap_ci

    def slow_bootstrap_ci(*a, **k):
        if k.get("n_resamples") == 300:  # the benchmark's own calls only, not the coverage table
            time.sleep(0.3)
        return real(*a, **k)

    monkeypatch.setattr(bench.stats, "bootstrap_ci", slow_bootstrap_ci)
    assert bench.main(args) == 1
    assert "FAIL: below target: mean of continuous values (" in capsys.readouterr().err
    # the sign-flip cases are gated (scipy's is not): an unreachable target names both of them
    assert bench.main([*args[:-2], "--permutation-target", "1e9"]) == 1
    err = capsys.readouterr().err
    assert "paired permutation, accuracy (" in err and "paired permutation, continuous values (" in err
    assert "[scipy]" not in err


# -- the engine's draws for callers that keep their own statistic ------------------------------------------------
def _stratified_loop(vals, ok, n_resamples, rng):
    """The textbook stratified bootstrap and label permutation, one resample at a time (the reference)."""
    ic, iw = np.flatnonzero(ok), np.flatnonzero(~ok)
    boot = np.array([vals[rng.choice(ic, len(ic))].mean() - vals[rng.choice(iw, len(iw))].mean()
                     for _ in range(n_resamples)])
    gap = float(vals[ok].mean() - vals[~ok].mean())
    null = np.array([vals[p].mean() - vals[~p].mean() for p in (rng.permutation(ok) for _ in range(n_resamples))])
    p = (1 + np.sum(np.abs(null) >= abs(gap) - 1e-12)) / (n_resamples + 1)
    return gap, float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975)), float(p)


@pytest.mark.parametrize("chunk", [None, 50])
def test_two_groups_draw_what_a_per_resample_loop_draws(chunk, monkeypatch):
    """The stratified bootstrap (drawn a chunk of resamples at a time) and the label permutation, from one
    generator in turn, give the reference loop's numbers to the last bit."""
    from vlamb_nb.stats import bootstrap
    from vlamb_nb.stats.permutation import label_permutation_test

    if chunk:
        monkeypatch.setattr(bootstrap, "_CHUNK_ELEMENTS", chunk)  # several chunks of resamples
    for seed, n in [(0, 9), (1, 40), (2, 257)]:
        g = np.random.default_rng(100 + seed)
        vals, ok = g.random(n) * 7, g.random(n) < 0.35
        ok[:2] = [True, False]
        want = _stratified_loop(vals, ok, 400, np.random.default_rng(seed))
        rng = np.random.default_rng(seed)
        ci = bootstrap.two_sample_ci(vals, ok, n_resamples=400, seed=rng)
        test = label_permutation_test(vals, ok, n_resamples=400, seed=rng)
        assert (ci.estimate, ci.ci_low, ci.ci_high, test.p) == want
    assert ci.ci_low < ci.estimate < ci.ci_high


def test_two_groups_need_items_in_both():
    from vlamb_nb.stats.bootstrap import two_sample_ci
    from vlamb_nb.stats.permutation import label_permutation_test

    with pytest.raises(DataError, match="both groups"):
        two_sample_ci([1.0, 2.0], [True, True])
    with pytest.raises(DataError, match="both groups"):
        label_permutation_test([1.0, 2.0], [False, False])
    with pytest.raises(DataError, match="one group flag per value"):
        two_sample_ci([1.0, 2.0, 3.0], [True, False])
    assert label_permutation_test([0.0, 0.0, 5.0, 5.0], [True, True, False, False], n_resamples=200).p < 0.4


@pytest.mark.parametrize("chunk", [None, 64])
def test_ratio_of_sums_draws_clusters_by_index(chunk, monkeypatch):
    """A ratio of cluster sums: the clusters' indices drawn per resample (sorted ids), undefined resamples dropped,
    no interval below the share of defined resamples; the same numbers as indexing the draws one by one."""
    from vlamb_nb.stats import bootstrap

    if chunk:
        monkeypatch.setattr(bootstrap, "_CHUNK_ELEMENTS", chunk)
    g = np.random.default_rng(3)
    num, den = (g.random(120) < 0.4).astype(float), (g.random(120) < 0.3).astype(float)
    clusters = np.array([f"img{i % 37}" for i in range(120)])
    rng = np.random.default_rng(8)
    uniq, inv = np.unique(clusters, return_inverse=True)
    draws = rng.integers(0, len(uniq), size=(500, len(uniq)))
    s_c, a_c = np.bincount(inv, weights=num), np.bincount(inv, weights=den)
    boot = s_c[draws].sum(1) / a_c[draws].sum(1)
    r = bootstrap.ratio_ci(num, den, clusters, n_resamples=500, seed=8)
    assert r.estimate == num.sum() / den.sum()
    assert (r.ci_low, r.ci_high) == tuple(np.percentile(boot[np.isfinite(boot)], [2.5, 97.5]))
    assert r.extra["n_clusters"] == 37
    # a denominator that is mostly zero: too few resamples have a ratio, so no interval; 0/0 is NaN, k/0 inf
    rare = np.zeros(120)
    rare[5] = 1
    assert math.isnan(bootstrap.ratio_ci(num, rare, n_resamples=300).ci_low)
    assert bootstrap.ratio_ci(num, np.zeros(120), n_resamples=10).estimate == math.inf
    assert math.isnan(bootstrap.ratio_ci(np.zeros(3), np.zeros(3), n_resamples=10).estimate)
    with pytest.raises(DataError, match="same items"):
        bootstrap.ratio_ci([1.0], [1.0, 2.0])


def test_resample_counts_schemes_are_textbook_resamples():
    from vlamb_nb.stats.bootstrap import resample_counts

    rng = np.random.default_rng(0)
    for draw in ("multinomial", "indices"):
        c = resample_counts(5, 4000, rng, draw=draw)
        assert c.shape == (4000, 5) and (c.sum(axis=1) == 5).all()
        assert np.allclose(c.mean(axis=0), 1.0, atol=0.06)  # each unit drawn once per resample on average
        assert np.allclose(c.var(axis=0), 5 * 0.2 * 0.8, atol=0.08)  # binomial(5, 1/5) marginals
    with pytest.raises(SettingError, match="unknown draw"):
        resample_counts(5, 10, rng, draw="poisson")


@pytest.mark.parametrize("clusters", [None, [0, 0, 1, 2, 2, 2, 3]])
def test_the_loop_path_draws_what_one_call_per_resample_draws(clusters, monkeypatch):
    """A plain (looped) statistic sees the indices one ``integers`` call per resample would give, also when the
    resamples are drawn in chunks and clusters' items are laid end to end without a Python loop."""
    from vlamb_nb.stats import bootstrap

    monkeypatch.setattr(bootstrap, "_CHUNK_ELEMENTS", 20)
    design = bootstrap._design({"item": np.arange(7)}, clusters, 7)
    rng = np.random.default_rng(4)
    want = []
    for _ in range(30):
        if clusters is None:
            want.append(rng.integers(0, 7, size=7))
        else:
            picks = rng.integers(0, design.n_clusters, size=design.n_clusters)
            want.append(np.concatenate([design.cluster_items[i] for i in picks]))
    got = list(bootstrap._loop_draws(design, np.random.default_rng(4), 30))
    assert len(got) == 30 and all(np.array_equal(a, b) for a, b in zip(want, got, strict=True))


def test_every_models_rank_per_resample_is_the_cards_rank_among_the_rest():
    """``compare`` ranks many models with the card's rule: 1 + how many others are strictly better, so a tie
    shares the better rank, and lower-is-better turns it round."""
    from vlamb_nb.stats.ranking import rank_of, ranks

    draws = np.array([[50.0, 10.0, np.nan], [70.0, 10.0, 3.0], [50.0, 20.0, 3.0]])
    assert ranks(draws, True).tolist() == [[2, 2, 1], [1, 2, 1], [2, 1, 1]]
    assert ranks(draws, False).tolist() == [[1, 1, 1], [3, 1, 1], [1, 3, 1]]
    for i in range(3):
        assert ranks(draws, True)[i].tolist() == rank_of(draws[i], np.delete(draws, i, axis=0), True).tolist()
    assert ranks(np.array([[1.0, 2.0]]), True).tolist() == [[1, 1]]  # alone: first
