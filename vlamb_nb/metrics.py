"""Generic metrics the five benchmarks share, as small pure-numpy functions.

Each function takes per-item arrays and returns a plain float (or a small mapping), so the
same definition is used for the point estimate and, through ``vlamb_nb.stats``, for its
confidence interval. Definitions follow the official scoring code where one exists:

- ``macro_f1`` matches ``sklearn.metrics.f1_score(average="macro")``: classes are those present
  in ``y_true`` or ``y_pred`` (V-FLUTE's NYCartoons quirk depends on it);
- ``explanation_adjusted`` / ``f1_at_threshold`` port V-FLUTE's F1@t (a prediction whose
  explanation score is ``<= t`` is replaced by the wrong label);
- ``iou_accuracy`` uses ``>=`` like Ref-Adv's official code (``strict=True`` gives the paper's ">");
- ``group_accuracy`` is MUCAR's Acc_p (a group counts only if all its items are correct).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from vlamb_nb.errors import DataError


def _as_1d(x: Any, name: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise DataError(f"expected a 1-D per-item array, got shape {arr.shape}", field=name)
    return arr


def _same_length(**arrays: np.ndarray) -> int:
    lengths = {k: len(v) for k, v in arrays.items()}
    if len(set(lengths.values())) > 1:
        raise DataError(f"per-item arrays differ in length: {lengths}")
    return next(iter(lengths.values()))


def _bool_correct(correct: Any, name: str = "correct") -> np.ndarray:
    arr = _as_1d(correct, name)
    if arr.dtype == bool:
        return arr
    num = arr.astype(float)
    if np.isnan(num).any():
        raise DataError("contains missing values; count unparsed answers as wrong before scoring", field=name)
    if not np.isin(num, (0.0, 1.0)).all():
        raise DataError("must hold 0/1 or booleans", field=name)
    return num.astype(bool)


def accuracy(correct: Any) -> float:
    """Share of correct items (NaN for an empty set, so an empty group is visible, not zero)."""
    c = _bool_correct(correct)
    return float(c.mean()) if len(c) else float("nan")


def per_class_f1(y_true: Any, y_pred: Any, labels: Sequence[Any] | None = None) -> dict[Any, float]:
    """F1 of each class; classes default to those present in ``y_true`` or ``y_pred``."""
    t, p = _as_1d(y_true, "y_true"), _as_1d(y_pred, "y_pred")
    _same_length(y_true=t, y_pred=p)
    if labels is None:
        labels = _present_labels(t, p)
    out = {}
    for c in labels:
        tp = float(np.sum((t == c) & (p == c)))
        denom = float(np.sum(t == c) + np.sum(p == c))
        out[c] = 2 * tp / denom if denom else 0.0
    return out


def _present_labels(t: np.ndarray, p: np.ndarray) -> list[Any]:
    seen = dict.fromkeys(t.tolist())
    seen.update(dict.fromkeys(p.tolist()))
    try:
        return sorted(seen)
    except TypeError:  # mixed types (e.g. a None for an unparsed label)
        return list(seen)


def macro_f1(y_true: Any, y_pred: Any, labels: Sequence[Any] | None = None) -> float:
    """Unweighted mean of per-class F1, as sklearn's ``average="macro"`` (zero_division=0)."""
    scores = per_class_f1(y_true, y_pred, labels)
    return float(np.mean(list(scores.values()))) if scores else float("nan")


def explanation_adjusted(y_true: Any, y_pred: Any, scores: Any, threshold: float, *,
                         labels: Sequence[Any] | None = None) -> np.ndarray:
    """V-FLUTE's rule: where ``score <= threshold`` the prediction becomes the wrong label.

    ``labels`` are the two classes; by default they are the classes of ``y_true`` and ``y_pred``
    (which must then be exactly two: with one class present nobody knows the "wrong" one).
    """
    t, p = _as_1d(y_true, "y_true"), _as_1d(y_pred, "y_pred")
    s = _as_1d(scores, "scores").astype(float)
    _same_length(y_true=t, y_pred=p, scores=s)
    if np.isnan(s).any():
        raise DataError("explanation scores contain NaN; score empty explanations explicitly", field="scores")
    labs = list(labels) if labels is not None else _present_labels(t, p)
    if len(labs) != 2:
        raise DataError(f"F1@threshold needs exactly two classes, got {labs!r}; pass labels=(neg, pos)",
                        field="labels")
    if not np.isin(t, np.asarray(labs, dtype=t.dtype if t.dtype != object else object)).all():
        raise DataError(f"y_true holds a class outside {labs!r}", field="y_true")
    wrong = np.where(t == labs[0], labs[1], labs[0])
    return np.where(s <= threshold, wrong, p)


def f1_at_threshold(y_true: Any, y_pred: Any, scores: Any, threshold: float, *,
                    labels: Sequence[Any] | None = None) -> float:
    """Macro-F1 after ``explanation_adjusted`` (V-FLUTE F1@t; use ``t = i / 100``, never arange)."""
    adjusted = explanation_adjusted(y_true, y_pred, scores, threshold, labels=labels)
    return macro_f1(y_true, adjusted)


def iou_hits(ious: Any, threshold: float = 0.5, *, strict: bool = False) -> np.ndarray:
    """Per-item hit at an IoU threshold; a missing box (NaN IoU) is a miss, never dropped."""
    v = _as_1d(ious, "ious").astype(float)
    v = np.where(np.isnan(v), -np.inf, v)
    return v > threshold if strict else v >= threshold


def iou_accuracy(ious: Any, threshold: float = 0.5, *, strict: bool = False) -> float:
    """Acc@t: share of items whose IoU reaches ``threshold`` (``>=`` as in the official code)."""
    hits = iou_hits(ious, threshold, strict=strict)
    return float(hits.mean()) if len(hits) else float("nan")


def mean_iou_accuracy(ious: Any, thresholds: Sequence[float] = (0.5, 0.75, 0.9), *,
                      strict: bool = False) -> float:
    """mAcc: mean of Acc@t over ``thresholds`` (Ref-Adv's "mean accuracy across IoU criteria")."""
    return float(np.mean([iou_accuracy(ious, t, strict=strict) for t in thresholds]))


def group_correct(correct: Any, groups: Any) -> tuple[np.ndarray, np.ndarray]:
    """(group ids, all-correct flag per group), groups in order of first appearance."""
    c = _bool_correct(correct)
    g = _as_1d(groups, "groups")
    _same_length(correct=c, groups=g)
    import pandas as pd

    codes, uniques = pd.factorize(g, use_na_sentinel=False)
    wrong = np.bincount(codes, weights=(~c).astype(float), minlength=len(uniques))
    return np.asarray(uniques), wrong == 0


def group_accuracy(correct: Any, groups: Any) -> float:
    """Share of groups whose items are all correct (MUCAR Acc_p; a constant answer gives ~0)."""
    _, ok = group_correct(correct, groups)
    return float(ok.mean()) if len(ok) else float("nan")


def class_shares(labels: Any, classes: Sequence[Any] | None = None, *, dropna: bool = False) -> dict[Any, float]:
    """Share of each class; listed ``classes`` appear even when absent (share 0).

    Missing labels (None/NaN) count in the denominator unless ``dropna``; they are reported
    under the key ``None`` so unparsed outputs stay visible.
    """
    import pandas as pd

    s = pd.Series(_as_1d(labels, "labels"), dtype=object)
    missing = s.isna()
    if dropna:
        s = s[~missing]
    n = len(s)
    counts = s[~s.isna()].value_counts(sort=False).to_dict()
    keys = list(classes) if classes is not None else sorted(counts, key=str)
    extra = [k for k in counts if k not in keys]
    if extra:
        raise DataError(f"labels outside the listed classes: {extra[:5]!r}", field="labels")
    out = {k: (counts.get(k, 0) / n if n else float("nan")) for k in keys}
    if not dropna and missing.any():
        out[None] = float(missing.sum()) / n
    return out


# -- what a score stands on -------------------------------------------------------------------------------
def coverage(items: Any, answered: Any, failed: Any = (), errors: Any = ()) -> dict[str, Any]:
    """How many items a score covers: ``items`` in the source (ids; None when scored without one), ``answered``
    (ids with an answer), ``failed`` (ids whose every request failed) and ``missing`` (no record at all).

    Every ``score_file`` reports it, so a score over 3 of 31 items, or over nothing but failures, says so;
    ``errors`` (the failed requests' messages) gives the most frequent one, the reason to show.
    """
    from collections import Counter

    got = {str(i) for i in answered}
    bad = {str(i) for i in failed} - got
    known = None if items is None else {str(i) for i in items}
    out: dict[str, Any] = {"items": None if known is None else len(known), "answered": len(got), "failed": len(bad),
                           "missing": None if known is None else len(known - got - bad)}
    counts = Counter(str(e).strip().splitlines()[0] for e in errors if isinstance(e, str) and e.strip())
    if counts:
        out["most_frequent_error"] = counts.most_common(1)[0][0][:240]
    return out


def nothing_answered(result: dict[str, Any]) -> str:
    """The one-line reason a score stands on nothing (no item answered), or "" when it stands on something."""
    cov = result.get("coverage") if isinstance(result, dict) else None
    if not isinstance(cov, dict) or cov.get("answered"):
        return ""
    if cov.get("failed"):
        why = f" ({cov['most_frequent_error']})" if cov.get("most_frequent_error") else ""
        return f"every request failed: {cov['failed']} item(s), none answered{why}"
    return "no item has an answer" + (f" (the source has {cov['items']})" if cov.get("items") else "")
