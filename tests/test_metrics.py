"""vlamb_nb.metrics against scikit-learn and the official scoring rules in the paper notes."""

from __future__ import annotations

import numpy as np
import pytest

from vlamb_nb import metrics
from vlamb_nb.errors import DataError


def test_accuracy_and_bad_values():
    assert metrics.accuracy([1, 0, 1, 1]) == 0.75
    assert metrics.accuracy([True, False]) == 0.5
    assert np.isnan(metrics.accuracy([]))
    with pytest.raises(DataError, match="missing"):
        metrics.accuracy([1.0, float("nan")])
    with pytest.raises(DataError, match="0/1"):
        metrics.accuracy([2, 0])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_macro_f1_matches_sklearn(seed):
    from sklearn.metrics import f1_score

    rng = np.random.default_rng(seed)
    t = rng.choice(["a", "b", "c"], 80)
    p = rng.choice(["a", "b", "c", "d"], 80)
    assert metrics.macro_f1(t, p) == pytest.approx(f1_score(t, p, average="macro"))
    assert metrics.per_class_f1(t, p)["d"] == 0.0


def test_macro_f1_single_gold_class_is_capped_at_half():
    # V-FLUTE NYCartoons: only entailment gold; any contradiction prediction adds a zero-F1 class
    t = ["entailment"] * 10
    p = ["entailment"] * 9 + ["contradiction"]
    f1_ent = 2 * 9 / (10 + 9)
    assert metrics.macro_f1(t, p) == pytest.approx(f1_ent / 2)
    assert metrics.macro_f1(t, t) == 1.0


def test_f1_at_threshold_flips_low_scored_predictions_like_the_official_code():
    from sklearn.metrics import f1_score

    t = np.array([1, 1, 0, 0, 1, 0])
    p = np.array([1, 0, 0, 1, 1, 0])
    s = np.array([0.9, 0.7, 0.53, 0.6, 0.52, -0.1])
    thr = 53 / 100
    adjusted = metrics.explanation_adjusted(t, p, s, thr)
    # official: where(score <= t, 1 - label_true, label_pred)
    assert adjusted.tolist() == np.where(s <= thr, 1 - t, p).tolist()
    assert metrics.f1_at_threshold(t, p, s, thr) == pytest.approx(f1_score(t, adjusted, average="macro"))
    # threshold 0 still flips negative (BLEURT) scores: not quite plain F1
    assert metrics.f1_at_threshold(t, p, s, 0.0) != metrics.macro_f1(t, p)
    lab = metrics.explanation_adjusted(["entailment"] * 2, ["entailment"] * 2, [0.1, 0.9], 0.5,
                                       labels=("contradiction", "entailment"))
    assert lab.tolist() == ["contradiction", "entailment"]
    with pytest.raises(DataError, match="exactly two"):
        metrics.explanation_adjusted(["e", "e"], ["e", "e"], [0.1, 0.9], 0.5)
    with pytest.raises(DataError, match="NaN"):
        metrics.f1_at_threshold(t, p, [np.nan] * 6, 0.5)


def test_iou_accuracy_official_ge_vs_paper_strict_and_missing_boxes():
    ious = [0.5, 0.75, 0.9, 0.49, float("nan")]
    assert metrics.iou_accuracy(ious, 0.5) == pytest.approx(3 / 5)
    assert metrics.iou_accuracy(ious, 0.5, strict=True) == pytest.approx(2 / 5)
    assert metrics.mean_iou_accuracy(ious) == pytest.approx((3 / 5 + 2 / 5 + 1 / 5) / 3)


def test_group_accuracy_is_all_correct_and_constant_answers_score_zero():
    groups = ["p1", "p1", "p2", "p2", "p3", "p3"]
    correct = [1, 1, 1, 0, 0, 0]
    ids, ok = metrics.group_correct(correct, groups)
    assert list(ids) == ["p1", "p2", "p3"] and ok.tolist() == [True, False, False]
    assert metrics.group_accuracy(correct, groups) == pytest.approx(1 / 3)
    # a constant answer on two-option pairs with opposite gold: Acc_q = 0.5, Acc_p = 0
    gold = np.array(["A", "B"] * 50)
    const_correct = (gold == "A").astype(int)
    pairs = np.repeat(np.arange(50), 2)
    assert metrics.accuracy(const_correct) == 0.5 and metrics.group_accuracy(const_correct, pairs) == 0.0


def test_class_shares_keep_missing_and_listed_classes():
    shares = metrics.class_shares(["x", "y", "x", None], classes=["x", "y", "z"])
    assert shares == {"x": 0.5, "y": 0.25, "z": 0.0, None: 0.25}
    assert metrics.class_shares(["x", None], dropna=True) == {"x": 1.0}
    with pytest.raises(DataError, match="outside"):
        metrics.class_shares(["w"], classes=["x"])
