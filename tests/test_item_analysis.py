"""The item-response analysis: a planted bad item is flagged, runs are ranked with and without the flagged items."""

from __future__ import annotations

import numpy as np
import pytest

from vlamb_nb.errors import DataError


def _runs(n_runs: int = 12, n_items: int = 300, seed: int = 0):
    """Synthetic Ref-Adv runs from a known 2PL: row 0 is answered right only by the three weakest runs (a bad
    item), row 1 only by the three strongest (a good one)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    theta = np.linspace(-2, 2, n_runs)
    a, b = rng.uniform(0.8, 2.0, n_items), rng.normal(0, 1, n_items)
    y = (rng.random((n_runs, n_items)) < 1 / (1 + np.exp(-a * (theta[:, None] - b)))).astype(float)
    y[:, 0], y[:3, 0] = 0, 1
    y[:, 1], y[-3:, 1] = 0, 1
    images = [f"img{i // 2}.jpg" for i in range(n_items)]
    return {f"run{i:02d}": pd.DataFrame({"row_idx": np.arange(n_items), "id": np.arange(n_items).astype(str),
                                         "iou": y[i], "file_name": images}) for i in range(n_runs)}


def test_a_planted_bad_item_is_flagged_and_a_good_one_is_not():
    from vlamb_nb.item_analysis import SUSPECT, item_analysis

    res = item_analysis("refadv", _runs())
    items = res.items.set_index("key")
    assert items.loc["0", "status"] == SUSPECT and items.loc["0", "discrimination"] < 0
    assert items.loc["1", "status"] == "" and items.loc["1", "discrimination"] > 1
    assert list(res.flagged["key"])[:1] == ["0"]
    # on items drawn from the model the flags are rare: the prior does not invent them
    assert (items["status"] == SUSPECT).mean() < 0.03
    # abilities follow the planted order; accuracy and ability each with an interval
    models = res.models.sort_values("run")
    assert np.corrcoef(models["ability"], np.linspace(-2, 2, 12))[0, 1] > 0.95
    assert (models["acc_low"] <= models["accuracy"]).all() and (models["accuracy"] <= models["acc_high"]).all()
    assert (models["ability_low"] < models["ability"]).all() and (models["ability"] < models["ability_high"]).all()
    assert "suspect" in res.conclusion and "images" in " ".join(res.notes)


def test_items_no_run_or_every_run_gets_are_said_and_never_flagged():
    from vlamb_nb.item_analysis import EVERY, NONE, item_analysis

    runs = _runs(n_runs=6, n_items=80, seed=1)
    for sc in runs.values():
        sc.loc[5, "iou"], sc.loc[6, "iou"] = 1.0, 0.0
    items = item_analysis("refadv", runs).items.set_index("key")
    assert items.loc["5", "status"] == EVERY and items.loc["6", "status"] == NONE


def test_a_run_that_answered_part_of_the_items_is_fitted_on_those_only():
    from vlamb_nb.item_analysis import item_analysis

    runs = _runs(n_runs=6, n_items=80, seed=2)
    runs["part"] = runs["run05"].iloc[:40].copy()
    res = item_analysis("refadv", runs)
    assert int(res.models.set_index("run").loc["part", "items"]) == 40


def test_too_few_runs_is_one_line():
    from vlamb_nb.item_analysis import item_analysis

    with pytest.raises(DataError, match="at least three runs"):
        item_analysis("refadv", dict(list(_runs(n_runs=3).items())[:2]))


@pytest.mark.shared
def test_the_released_ref_adv_runs_rank_the_same_by_accuracy_and_ability(shared_data):
    from vlamb_nb import noise
    from vlamb_nb.item_analysis import item_analysis

    res = item_analysis("refadv", noise.released_runs("refadv"))
    assert len(res.items) == 1142
    assert list(res.models["rank"]) == list(res.models["rank_ability"])
    assert res.models.iloc[0]["run"] == "Qwen/Qwen3-VL-8B-Thinking::direct"


def test_a_flagged_row_whose_image_is_at_hand_is_drawn_and_otherwise_the_cell_says_why(tmp_path):
    """The notebook draws the suspect rows it has images for (gold box, and the box of the weakest run that got the
    row right); with none at hand it says so and how to get them, never an empty cell."""
    import pandas as pd
    from PIL import Image

    from vlamb_nb.benchmarks.refadv import report
    from vlamb_nb.item_analysis import item_analysis

    runs = _runs()
    for sc in runs.values():
        sc["gt_xyxy"] = [[2.0, 2.0, 20.0, 20.0]] * len(sc)
        sc["pred_xyxy"] = [[3.0, 3.0, 21.0, 21.0]] * len(sc)
        sc["expression"], sc["parse_error"] = "the second mug from the left", ""
    res = item_analysis("refadv", runs, n_resamples=200)
    n = len(res.flagged)
    keys, line = report.flagged_at_hand(res, None)
    assert keys == [] and f"none of the {n} suspect rows' images" in line and "vlamb-nb data fetch refadv" in line
    assert report.flagged_items_figure(res, runs, None) is None
    img = tmp_path / "row0.png"
    Image.new("RGB", (32, 32), "white").save(img)
    items = pd.DataFrame({"id": ["0", "1", "7"], "image": [str(img), str(img), None]})
    keys, line = report.flagged_at_hand(res, items)
    assert keys == ["0"] and line.startswith(f"1 of the {n} suspect rows' images are at hand")
    fig = report.flagged_items_figure(res, runs, items)
    weakest_right = min((name for name, sc in runs.items() if sc.loc[0, "iou"] >= 0.5),
                        key=lambda name: float(res.models.set_index("run").loc[name, "ability"]))
    assert weakest_right == "run00"  # the planted row: only the three weakest runs get it
    assert fig is not None and len([ax for ax in fig.axes if ax.images]) == 1
    assert fig.axes[0].get_title().startswith("the second mug")
