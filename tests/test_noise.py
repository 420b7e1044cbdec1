"""Noise floors: the minimum detectable difference holds up in simulation, and every paper's stated comparisons
stand beside the floor of their own test set."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from vlamb_nb.stats import power as P

PAPERS = ("vague", "mucar", "vflute", "refadv", "racquet")


def _sizes(seed: int = 1, k: int = 400) -> tuple[int, ...]:
    """Clusters of one to four units, as Ref-Adv's rows per image."""
    return tuple(int(s) for s in np.random.default_rng(seed).integers(1, 5, size=k))


@pytest.mark.parametrize("icc, disc", [(0.0, 0.3), (0.3, 0.3), (0.15, 0.15)])
def test_a_difference_planted_at_the_floor_is_detected_about_80_percent_of_the_time(icc, disc):
    sizes = _sizes()
    ts = P.TestSet("sim", sum(sizes), cluster_sizes=sizes)
    floor = P.mdd_paired(ts.n, disc, deff=ts.deff(icc))
    got = P.simulated_power(sizes, disc, floor, icc, n_sims=1200, seed=7)
    assert 0.75 <= got <= 0.86, (icc, disc, floor, got)
    # half the floor is missed most of the time: the simulation can tell a floor from any difference
    assert P.simulated_power(sizes, disc, floor / 2, icc, n_sims=600, seed=8) < 0.45


def test_a_floor_that_ignores_the_clusters_is_too_low():
    """The same test set read as independent rows claims a smaller floor, which is then detected far less than
    80% of the time: the design effect is what makes the floor hold."""
    sizes, icc, disc = _sizes(), 0.3, 0.3
    naive = P.mdd_paired(sum(sizes), disc)
    honest = P.mdd_paired(sum(sizes), disc, deff=P.design_effect(sizes, icc))
    assert naive < honest
    assert P.simulated_power(sizes, disc, naive, icc, n_sims=1200, seed=9) < 0.7


def test_the_floor_shrinks_with_items_and_grows_with_disagreement():
    assert P.mdd_paired(4000, 0.3) < P.mdd_paired(1000, 0.3) < P.mdd_paired(250, 0.3)
    assert P.mdd_paired(1000, 0.1) < P.mdd_paired(1000, 0.4)
    assert math.isnan(P.mdd_paired(10, 0.05))  # too few discordant units to detect anything
    # the two-sample floor at n per group, against the textbook 2.8 * sqrt(2 p q / n)
    assert P.mdd_two_sample(500, 500, 0.5) == pytest.approx(2.8016 * math.sqrt(0.5 / 500), rel=1e-3)


def test_the_clustered_mcnemar_test_is_mcnemars_without_clusters():
    from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

    from vlamb_nb.stats import clustered_mcnemar, mcnemar_table

    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 2, 300), rng.integers(0, 2, 300)
    table = [[int(((a == 1) & (b == 1)).sum()), int(((a == 1) & (b == 0)).sum())],
             [int(((a == 0) & (b == 1)).sum()), int(((a == 0) & (b == 0)).sum())]]
    res = clustered_mcnemar(a, b)
    assert res.p == pytest.approx(float(sm_mcnemar(table, exact=False, correction=False).pvalue))
    assert res.estimate == pytest.approx(mcnemar_table(table).estimate)
    # clusters that repeat one unit's disagreement make the same gap less certain
    clustered = clustered_mcnemar(np.repeat(a, 3), np.repeat(b, 3), np.repeat(np.arange(300), 3))
    plain = clustered_mcnemar(np.repeat(a, 3), np.repeat(b, 3))
    assert clustered.p > plain.p


def test_the_icc_estimate_finds_a_planted_correlation():
    rng = np.random.default_rng(5)
    sizes = (3,) * 3000
    a, b, c = P.simulate_paired(sizes, 0.4, 0.0, 0.25, rng)
    assert P.icc_anova(a - b, c) == pytest.approx(0.25, abs=0.04)
    d = P.discordance(a, b, c)
    assert d.discordance == pytest.approx(0.4, abs=0.02)
    assert d.icc == pytest.approx(0.25, abs=0.04)


def test_a_declared_test_set_must_add_up():
    from vlamb_nb.errors import SettingError

    with pytest.raises(SettingError, match="sum to n=10"):
        P.TestSet("bad", 10, cluster_sizes=(3, 3, 3))
    t = P.TestSet("t", 10, cluster_sizes=(5, 5), subsets={"x": 0.4})
    assert t.part("x").n == 4 and t.deff(0.5) == pytest.approx(1 + 0.5 * (50 / 10 - 1))


# -- the papers' stated comparisons -------------------------------------------------------------------------
@pytest.mark.parametrize("paper", PAPERS)
def test_every_stated_comparison_has_its_published_gap_and_a_floor(paper):
    from vlamb_nb import noise

    table = noise.noise_table(paper, released={}, agreed=noise.ASSUMED)
    assert len(table) >= 8
    assert table["floor"].notna().all() and (table["floor"] > 0).all()
    known = table[table["gap"].notna()]
    assert len(known) >= len(table) - 3
    # the gap is the difference of the two cells read from the paper's reference numbers, never typed in
    assert np.allclose(known["gap"], known["a"] - known["b"])
    exceed = known["exceeds"].astype(bool)
    assert (known.loc[exceed, "gap"].abs() >= known.loc[exceed, "floor"]).all()
    assert (known.loc[~exceed, "gap"].abs() < known.loc[~exceed, "floor"]).all()
    assert table.attrs["conclusion"].startswith(f"{paper}: ")
    assert "assumed" in table.attrs["agreement"]


def test_a_gap_below_its_floor_is_not_counted_as_clear(monkeypatch):
    """A claim whose gap sits inside its floor, and one that goes the other way, are each said so."""
    from vlamb_nb import noise

    table = noise.noise_table("vague", released={}, agreed=noise.ASSUMED)
    row = table.set_index("id")
    assert not row.loc["t1-sm-7", "exceeds"]  # Ovis2: SM beats LM by 1.9 points on 1,144 items
    assert row.loc["t1-sm-7", "as_stated"]
    assert not row.loc["t1-vlm-11", "as_stated"]  # GPT-4o: VLM does not beat SM (the paper says so itself)
    assert "go the other way" in table.attrs["conclusion"]


@pytest.mark.shared
def test_the_floors_stand_on_the_release_and_the_released_runs(shared_data):
    from vlamb_nb import noise
    from vlamb_nb.benchmarks.mucar.data import load_items

    sets = noise.test_sets("mucar", load_items(shared_data / "mucar" / "data-all.json"))
    assert sets["all queries"].origin == "release" and sets["all pairs"].n == 501
    table = noise.noise_table("refadv")
    assert "measured on" in table.attrs["agreement"]
    row = table.set_index("id").loc["cot-11"]  # Qwen2.5-VL-72B CoT vs direct, tested on its released rows
    assert row["released"] == "1142 rows"
    assert row["released_gap"] == pytest.approx(52.4 - 54.0, abs=0.1)  # the Ref-Adv-s table's own cells
    assert 0 < row["released_p"] < 1 and row["released_floor"] > 0
    assert "Ref-Adv-s" in table.attrs["test_sets"]["Ref-Adv-s"] or "614 images" in table.attrs["test_sets"]["Ref-Adv-s"]


def test_the_command_prints_the_table_and_its_conclusion():
    out = subprocess.run([sys.executable, "-m", "vlamb_nb.cli", "noise", "vflute", "--json"], capture_output=True,
                         text=True, check=True)
    doc = json.loads(out.stdout)
    assert doc["paper"] == "vflute" and doc["conclusion"].startswith("vflute: ")
    assert {c["id"] for c in doc["comparisons"]} >= {"best", "image", "human"}
