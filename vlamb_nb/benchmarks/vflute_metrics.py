"""V-FLUTE metrics: macro-F1, F1@ExplanationScore thresholds, bootstrap CIs, paired tests, PR analysis.

F1@t follows the official rule (``eval/compute_metrics_bscore_bleurt.py``): an item whose
ExplanationScore is ``<= t`` is made wrong (its prediction is set to ``1 - gold``), then macro-F1
over the classes present in gold ∪ predictions is computed, exactly like scikit-learn's
``f1_score(average="macro")``. That is why NYCartoons (all gold labels entailment) is capped
at 0.5 as soon as one item is predicted or forced to contradiction.

Thresholds are indexed by integer percent ``i`` (t = i/100, i = 0..100), never by float
equality: the official script looked thresholds up by ``== 0.7`` in ``np.arange(0, 1.01, 0.01)``,
which fails for 0.7.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from vlamb_nb.errors import DataError, SettingError

PERCENTS = np.arange(101)  # threshold i/100 for i = 0..100
REPORTED = (0, 53, 60)  # Table 4's F1@0, F1@53, F1@60


def threshold(pct: int) -> float:
    """The threshold value for integer percent ``pct`` (0..100)."""
    if not 0 <= int(pct) <= 100 or int(pct) != pct:
        raise SettingError(f"threshold percent must be an integer 0..100, got {pct!r}")
    return int(pct) / 100


def macro_f1(y_true: Sequence[int], y_pred: Sequence[int]) -> float:
    """Binary macro-F1 over the labels present in ``y_true ∪ y_pred`` (scikit-learn's behaviour)."""
    t = np.asarray(y_true, dtype=int)
    p = np.asarray(y_pred, dtype=int)
    if t.shape != p.shape:
        raise DataError(f"{t.size} gold labels but {p.size} predictions")
    if t.size == 0:
        return 0.0
    return float(_macro_f1_matrix(t, p[None, :])[0])


def _macro_f1_matrix(t: np.ndarray, preds: np.ndarray) -> np.ndarray:
    """Macro-F1 of each row of ``preds`` (shape k × n) against ``t`` (n), binary labels 0/1."""
    out = np.zeros(preds.shape[0])
    n_present = np.zeros(preds.shape[0])
    for c in (0, 1):
        tc = (t == c)[None, :]
        pc = preds == c
        tp = (tc & pc).sum(axis=1)
        denom = tc.sum() + pc.sum(axis=1)  # 2TP + FP + FN
        present = denom > 0
        f1 = np.where(present, 2 * tp / np.where(denom == 0, 1, denom), 0.0)
        out += f1
        n_present += present
    return np.where(n_present > 0, out / np.maximum(n_present, 1), 0.0)


def adjusted_predictions(label_true: np.ndarray, label_pred: np.ndarray, scores: np.ndarray,
                         pct: int) -> np.ndarray:
    """Official rule: ExplanationScore ``<= t`` → the prediction becomes wrong (``1 - gold``).

    The rule lives in ``vlamb_nb.metrics.explanation_adjusted``; the classes are fixed to 0/1 so
    a subset with one class present (NYCartoons) is still adjusted.
    """
    from vlamb_nb import metrics

    return metrics.explanation_adjusted(np.asarray(label_true, dtype=int), np.asarray(label_pred, dtype=int),
                                        np.asarray(scores, dtype=float), threshold(pct), labels=(0, 1))


def f1_curve_arrays(label_true: Sequence[int], label_pred: Sequence[int], scores: Sequence[float],
                    percents: Sequence[int] = PERCENTS) -> np.ndarray:
    """Macro-F1 at each threshold percent, vectorised over thresholds."""
    t = np.asarray(label_true, dtype=int)
    p = np.asarray(label_pred, dtype=int)
    s = np.asarray(scores, dtype=float)
    if not (t.shape == p.shape == s.shape):
        raise DataError(f"lengths differ: {t.size} gold, {p.size} predictions, {s.size} scores")
    if np.isnan(s).any():
        raise DataError("explanation scores contain NaN")
    th = np.array([threshold(int(i)) for i in percents])
    if t.size == 0:
        return np.zeros(len(th))
    adjusted = np.where(s[None, :] <= th[:, None], 1 - t[None, :], p[None, :])
    return _macro_f1_matrix(t, adjusted)


def fill_unparsed(label_true: np.ndarray, label_pred: Sequence[Any]) -> np.ndarray:
    """Unparsed labels (None/NaN) become wrong, as in the official script."""
    t = np.asarray(label_true, dtype=int)
    p = np.array([np.nan if v is None else float(v) for v in label_pred])
    return np.where(np.isnan(p), 1 - t, p).astype(int)


def f1_curve(scored, *, by_dataset: bool = True, model: str = "", percents: Sequence[int] = PERCENTS):
    """Long DataFrame ``model, dataset, pct, threshold, f1`` (``dataset='overall'`` plus each V-FLUTE dataset)."""
    import pandas as pd

    groups = [("overall", scored)]
    if by_dataset:
        groups += [(d, g) for d, g in scored.groupby("dataset", sort=False)]
    rows = []
    for name, g in groups:
        f1s = f1_curve_arrays(g["label_true"], g["label_pred_filled"], g["explanation_score"], percents)
        rows += [{"model": model, "dataset": name, "pct": int(i), "threshold": threshold(int(i)), "f1": float(f)}
                 for i, f in zip(percents, f1s, strict=True)]
    return pd.DataFrame(rows)


# -- uncertainty ---------------------------------------------------------------------------------
def f1_at_ci(label_true, label_pred, scores, pct: int, *, n_resamples: int = 2000, seed: int = 0,
             alpha: float = 0.05, method: str = "percentile") -> dict[str, Any]:
    """F1@t with a bootstrap CI over items.

    Predictions are adjusted once by the F1@t rule, then ``vlamb_nb.stats.bootstrap_ci`` resamples
    them with a vectorized macro-F1 (all resamples in a few matrix products, no Python loop).
    """
    from vlamb_nb import stats

    t = np.asarray(label_true, dtype=int)
    adj = adjusted_predictions(t, np.asarray(label_pred, dtype=int), np.asarray(scores, dtype=float), pct)
    res = stats.bootstrap_ci(adj, stats.macro_f1_statistic(t), n_resamples=n_resamples, alpha=alpha,
                             method=method, seed=seed, name=f"F1@{pct}")
    out = res.to_dict()
    out["n_resamples"] = n_resamples
    return out


def paired_bootstrap_f1(label_true, pred_a, pred_b, *, n_resamples: int = 10000, seed: int = 0,
                        scores_a=None, scores_b=None, pct: int = 0) -> dict[str, Any]:
    """Koehn (2004) paired bootstrap on macro-F1@t of two systems over the same items.

    With explanation scores given, predictions are first adjusted by the F1@t rule. The paper does
    not give its number of resamples; 10,000 is the default here. ``p`` is two-sided; Koehn's
    one-sided share is in ``extra["koehn_p"]``.
    """
    from vlamb_nb import stats

    t = np.asarray(label_true, dtype=int)
    a = np.asarray(pred_a, dtype=int)
    b = np.asarray(pred_b, dtype=int)
    if not (t.shape == a.shape == b.shape):
        raise DataError("paired bootstrap needs predictions of both systems on the same items")
    if scores_a is not None:
        a = adjusted_predictions(t, a, np.asarray(scores_a, dtype=float), pct)
    if scores_b is not None:
        b = adjusted_predictions(t, b, np.asarray(scores_b, dtype=float), pct)
    res = stats.paired_bootstrap(a, b, stats.macro_f1_statistic(t), n_resamples=n_resamples, seed=seed,
                                 name=f"F1@{pct} A - B")
    out = res.to_dict()
    out["n_resamples"] = n_resamples
    return out


# the significance tests the paper reports (notes §8): system A, system B, metric, published p bound
PAPER_COMPARISONS = (
    {"a": "LLaVA-7B → eViL + VF", "b": "GPT-4 5-shot", "metric": "F1@0", "paper_p": "< 0.03"},
    {"a": "LLaVA-7B → VF", "b": "LLaVA-7B → VF − Image", "metric": "F1@0", "paper_p": "< 0.002"},
    {"a": "Human annotator 1", "b": "LLaVA-7B → eViL + VF", "metric": "F1@0 (99 items)", "paper_p": "< 0.05"},
    {"a": "Human annotator 2", "b": "LLaVA-7B → eViL + VF", "metric": "F1@0 (99 items)", "paper_p": "< 0.07"},
    {"a": "multi-task fine-tuning", "b": "label-only fine-tuning", "metric": "F1 (App. J)", "paper_p": "< 0.1"},
)


def compare_runs(scored_a, scored_b, *, percents: Sequence[int] = REPORTED, n_resamples: int = 10000,
                 seed: int = 0) -> list[dict[str, Any]]:
    """Paired bootstrap (Koehn 2004) of two scored runs at each F1@t, items matched by id.

    The paper compares systems this way (notes §8) without giving its resample count; each run's
    own ExplanationScores decide its F1@t adjustment. Both runs must cover the same items, since an
    unpaired item would silently change what is compared.
    """
    a = scored_a.set_index("id")
    b = scored_b.set_index("id")
    only_a, only_b = a.index.difference(b.index), b.index.difference(a.index)
    if len(only_a) or len(only_b) or a.index.has_duplicates or b.index.has_duplicates:
        raise DataError(f"a paired comparison needs both runs on the same items: {len(only_a)} only in A, "
                        f"{len(only_b)} only in B" + (" (duplicate ids)" if a.index.has_duplicates
                                                       or b.index.has_duplicates else ""))
    b = b.loc[a.index]
    if not (a["label_true"].to_numpy() == b["label_true"].to_numpy()).all():
        raise DataError("the two runs disagree on gold labels: they were scored against different data")
    t = a["label_true"].to_numpy(dtype=int)
    out = []
    for pct in percents:
        res = paired_bootstrap_f1(t, a["label_pred_filled"].to_numpy(dtype=int),
                                  b["label_pred_filled"].to_numpy(dtype=int), n_resamples=n_resamples, seed=seed,
                                  scores_a=a["explanation_score"].to_numpy(dtype=float),
                                  scores_b=b["explanation_score"].to_numpy(dtype=float), pct=int(pct))
        res["pct"] = int(pct)
        out.append(res)
    return out


# -- ExplanationScore vs human adequacy ------------------------------------------------------------
def adequacy_pr(scores: Sequence[float], adequate: Sequence[bool]) -> dict[str, Any]:
    """PR curve, PR-AUC, the max-F1 threshold, and the best threshold with P and R both ≥ 0.75 (paper §5.3)."""
    from sklearn.metrics import auc, precision_recall_curve

    s = np.asarray(scores, dtype=float)
    y = np.asarray(adequate, dtype=bool)
    if s.shape != y.shape or s.size == 0:
        raise DataError("adequacy analysis needs one human label per explanation score")
    if y.all() or not y.any():
        raise DataError("adequacy labels must contain both adequate and inadequate explanations")
    prec, rec, thr = precision_recall_curve(y, s)
    # sklearn's thresholds mean "score >= thr is adequate"; F1@t passes "score > t": the same cut up to ties
    f1 = np.where(prec + rec > 0, 2 * prec * rec / np.where(prec + rec == 0, 1, prec + rec), 0)[:-1]
    best = int(np.argmax(f1))
    both = np.where((prec[:-1] >= 0.75) & (rec[:-1] >= 0.75))[0]
    bal = int(both[np.argmax(f1[both])]) if both.size else None
    return {"pr_auc": float(auc(rec, prec)), "max_f1": float(f1[best]), "max_f1_threshold": float(thr[best]),
            "p75_r75_threshold": None if bal is None else float(thr[bal]),
            "p75_r75_f1": None if bal is None else float(f1[bal]),
            "curve": {"precision": prec.tolist(), "recall": rec.tolist(), "thresholds": thr.tolist()}}


def pr_auc(scores: Sequence[float], adequate: Sequence[bool]) -> float:
    """Area under the PR curve (trapezoidal, as :func:`adequacy_pr`) without the rest of the analysis."""
    from sklearn.metrics import auc, precision_recall_curve

    prec, rec, _ = precision_recall_curve(np.asarray(adequate, dtype=bool), np.asarray(scores, dtype=float))
    return float(auc(rec, prec))


def cohen_kappa(r1: Sequence[Any], r2: Sequence[Any]) -> dict[str, Any]:
    """Cohen's κ between two annotators (the statistics module's, when present)."""
    from vlamb_nb import stats

    return stats.cohen_kappa(list(r1), list(r2)).to_dict()
