"""Agreement between raters: Cohen's kappa (two raters) and Fleiss' kappa (many raters).

Library: scikit-learn ``cohen_kappa_score`` computes Cohen's kappa and statsmodels
(``inter_rater.cohens_kappa``) its standard errors; statsmodels ``inter_rater.fleiss_kappa``
computes Fleiss' kappa. Own: the checks (missing ratings, equal rater counts), the labels-to-table
step (:func:`ratings_to_table`), the z test of Fleiss' kappa with the null standard error of
Fleiss, Nee & Landis (1979), and its bootstrap CI over items through :mod:`.bootstrap`, none of
which statsmodels reports.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from vlamb_nb.errors import DataError
from vlamb_nb.stats.bootstrap import Statistic, _union, bootstrap_ci
from vlamb_nb.stats.result import NAN, Result


def cohen_kappa(r1: Any, r2: Any, ci: bool = True, *, alpha: float = 0.05, name: str = "",
                drop_missing: bool = False) -> Result:
    """Cohen's kappa of two raters with the asymptotic CI and a two-sided test of kappa = 0.

    Kappa from scikit-learn (``cohen_kappa_score``), its standard errors from statsmodels. ``drop_missing``:
    over the items both raters labelled (None, NaN or "" is no label), as when a judge is set beside a person
    who labelled some items; otherwise a missing label is an error.
    """
    import pandas as pd
    from statsmodels.stats.inter_rater import cohens_kappa as sm_kappa

    if drop_missing:
        pairs = [(a, b) for a, b in zip(r1, r2, strict=True) if _labelled(a) and _labelled(b)]
        if not pairs:
            raise DataError("no item has both labels; cannot compute agreement")
        r1, r2 = (list(r) for r in zip(*pairs, strict=True))
    x, y = np.asarray(r1, dtype=object), np.asarray(r2, dtype=object)
    if x.ndim != 1 or x.shape != y.shape:
        raise DataError(f"two raters need equal-length 1-D label arrays, got {x.shape} and {y.shape}")
    if len(x) == 0:
        raise DataError("no ratings")
    if pd.isna(x).any() or pd.isna(y).any():
        raise DataError("missing ratings; drop the items or code 'missing' as a label first", field="r1/r2")
    from sklearn.metrics import cohen_kappa_score

    labels = _union(x, y)
    pos = {lab: i for i, lab in enumerate(labels)}
    cx, cy = np.array([pos[v] for v in x]), np.array([pos[v] for v in y])  # codes: sklearn rejects mixed types
    table = np.zeros((len(labels), len(labels)))
    np.add.at(table, (cx, cy), 1)
    n = len(x)
    po = np.trace(table) / n
    pe = float((table.sum(1) / n) @ (table.sum(0) / n))
    if pe >= 1.0:
        return Result(NAN, NAN, NAN, NAN, n, "cohen kappa (undefined: one shared label)", None, name, alpha)
    kappa = float(cohen_kappa_score(cx, cy, labels=np.arange(len(labels))))
    if not ci:
        return Result(float(kappa), n=n, method="cohen kappa", name=name, alpha=alpha)
    with np.errstate(invalid="ignore", divide="ignore"):  # a rater with one label: no variance, NaN CI
        res = sm_kappa(table, return_results=True)
    from scipy.stats import norm

    z = float(norm.ppf(1 - alpha / 2))
    se, se0 = float(res["std_kappa"]), float(res["std_kappa0"])
    p = float(2 * norm.sf(abs(kappa) / se0)) if se0 > 0 else NAN
    return Result(float(kappa), float(kappa - z * se), float(kappa + z * se), p, n, "cohen kappa (asymptotic)",
                  None, name, alpha, {"observed_agreement": float(po), "expected_agreement": pe})


def _labelled(x: Any) -> bool:
    return x is not None and not (isinstance(x, float) and x != x) and str(x) != ""


def ratings_to_table(ratings: Any, categories: Sequence[Any] | None = None) -> np.ndarray:
    """(items x raters) labels -> (items x categories) counts, the input of :func:`fleiss_kappa`."""
    import pandas as pd

    r = np.asarray(ratings, dtype=object)
    if r.ndim != 2:
        raise DataError(f"ratings must be items x raters, got shape {r.shape}")
    if pd.isna(r).any():
        raise DataError("missing ratings; Fleiss' kappa needs every rater on every item")
    cats = list(categories) if categories is not None else _union(r.ravel(), np.array([], dtype=object))
    pos = {c: i for i, c in enumerate(cats)}
    unknown = [v for v in r.ravel() if v not in pos]
    if unknown:
        raise DataError(f"ratings outside the categories: {unknown[:3]!r}")
    table = np.zeros((r.shape[0], len(cats)))
    for j in range(r.shape[1]):
        np.add.at(table, (np.arange(r.shape[0]), [pos[v] for v in r[:, j]]), 1)
    return table


def _fleiss_from_weights(cols: np.ndarray, w: np.ndarray, raters: int) -> np.ndarray:
    """Fleiss' kappa of weighted item rows; ``cols`` (U, k) counts, ``w`` (B, U)."""
    tot = w.sum(axis=1)
    p_item = ((cols ** 2).sum(axis=1) - raters) / (raters * (raters - 1))
    p_bar = (w @ p_item) / tot
    p_cat = (w @ cols) / (tot[:, None] * raters)
    p_e = (p_cat ** 2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (p_bar - p_e) / (1 - p_e)


def fleiss_kappa(table: Any, *, ci: bool = True, n_resamples: int = 2000, seed: int = 0, alpha: float = 0.05,
                 method: str = "percentile", name: str = "") -> Result:
    """Fleiss' kappa from an (items x categories) count table (same number of raters per item).

    Kappa from statsmodels (``inter_rater.fleiss_kappa``); CI: bootstrap over items (the
    vectorized engine, which statsmodels lacks); p: two-sided z test of kappa = 0 with the null
    standard error of Fleiss, Nee & Landis (1979), which statsmodels does not report.
    """
    t = np.asarray(table, dtype=float)
    if t.ndim != 2 or t.shape[0] < 2 or t.shape[1] < 2:
        raise DataError(f"Fleiss' kappa needs an items x categories table (>= 2 x 2), got shape {t.shape}")
    if (t < 0).any() or not np.all(t == np.round(t)):
        raise DataError("Fleiss' kappa table must hold non-negative counts")
    raters = t.sum(axis=1)
    if not np.all(raters == raters[0]) or raters[0] < 2:
        raise DataError(f"every item needs the same number (>= 2) of ratings; got {sorted(set(raters.tolist()))[:5]}")
    r, n = int(raters[0]), t.shape[0]
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    with np.errstate(invalid="ignore", divide="ignore"):  # one category only: 0/0 = NaN, as before
        kappa = float(sm_fleiss(t, method="fleiss"))
    from scipy.stats import norm

    pj = t.sum(axis=0) / (n * r)
    qj = 1 - pj
    s = float(np.sum(pj * qj))
    p = NAN
    if s > 0:
        var0 = 2 / (n * r * (r - 1)) * (s ** 2 - np.sum(pj * qj * (qj - pj))) / s ** 2
        p = float(2 * norm.sf(abs(kappa) / math.sqrt(var0))) if var0 > 0 else NAN
    if not ci:
        return Result(kappa, p=p, n=n, method="fleiss kappa", name=name, alpha=alpha)
    stat = Statistic(lambda v, w, **cols: _fleiss_from_weights(np.column_stack(list(cols.values())), w, r),
                     {f"c{j}": t[:, j] for j in range(t.shape[1])}, "fleiss_kappa")
    res = bootstrap_ci(np.zeros(n), stat, n_resamples=n_resamples, alpha=alpha, method=method, seed=seed)
    return replace(res, estimate=kappa, p=p, method=f"fleiss kappa, {res.method} CI, z-test p", name=name,
                   extra={**res.extra, "raters": r})
