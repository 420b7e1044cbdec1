"""Proportions: Wilson intervals from counts or per-item correctness, and interval coverage by simulation.

Library: statsmodels ``proportion_confint(method="wilson")`` computes the Wilson interval. Own:
recovering counts from printed percentages (:func:`wilson_from_percent`), the choice between
Wilson and the bootstrap (:func:`proportion_ci`, which refuses clusters for Wilson), and the
coverage simulation (:func:`proportion_coverage`), one interval per distinct success count.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from vlamb_nb.errors import DataError, SettingError
from vlamb_nb.stats.bootstrap import _check_values, bootstrap_ci
from vlamb_nb.stats.result import NAN, Result


def wilson(k: int, n: int, alpha: float = 0.05, *, name: str = "") -> Result:
    """Wilson score interval for a proportion from counts alone (paper tables with k/n).

    Computed by statsmodels (``proportion_confint(method="wilson")``), clipped to [0, 1].
    """
    if not (isinstance(k, int | np.integer) and isinstance(n, int | np.integer)):
        if float(k) != int(k) or float(n) != int(n):
            raise DataError(f"wilson needs whole counts, got k={k!r}, n={n!r}; see wilson_from_percent")
        k, n = int(k), int(n)
    if n <= 0 or k < 0 or k > n:
        raise DataError(f"need 0 <= k <= n and n > 0, got k={k}, n={n}")
    if not 0 < alpha < 1:
        raise SettingError(f"alpha must be in (0, 1), got {alpha!r}")
    from statsmodels.stats.proportion import proportion_confint

    lo, hi = proportion_confint(int(k), int(n), alpha=alpha, method="wilson")
    return Result(k / n, max(0.0, float(lo)), min(1.0, float(hi)), NAN, int(n), "wilson", None,
                  name, alpha, {"k": int(k)})


def wilson_from_percent(percent: float, n: int, alpha: float = 0.05, *, name: str = "") -> Result:
    """Wilson interval for a printed percentage over ``n`` items (k recovered by rounding).

    The recovered count is reported in ``extra["k"]``; ``extra["residual"]`` shows how far the
    printed value is from k/n (a large residual flags a denominator that does not fit).
    """
    k = round(percent / 100 * n)
    r = wilson(int(k), int(n), alpha, name=name)
    return replace(r, extra={**r.extra, "percent": percent, "residual": percent - 100 * k / n})


def proportion_ci(correct: Any, *, method: str = "wilson", alpha: float = 0.05, n_resamples: int = 10000,
                  seed: int = 0, clusters: Any = None, name: str = "") -> Result:
    """CI of an accuracy (share of 1s in per-item 0/1 correctness): Wilson unless asked otherwise.

    Wilson keeps its nominal coverage on small or near-perfect samples, where the percentile
    bootstrap cannot: 31 of 31 correct gives the bootstrap interval [1, 1]. ``method`` may be
    "percentile" or "bca" (:func:`bootstrap_ci`), which ``clusters`` need: Wilson assumes
    independent items, so it refuses clusters rather than report too narrow an interval.
    """
    x = _check_values(correct, "correct", numeric=True).astype(float)
    if len(x) == 0:
        raise DataError("no items", field="correct")
    if not np.isin(x, (0, 1)).all():
        raise DataError("a proportion needs 0/1 correctness; use bootstrap_ci for other values", field="correct")
    if method == "wilson":
        if clusters is not None:
            raise SettingError("Wilson assumes independent items; use method='percentile' or 'bca' with clusters")
        return wilson(int(x.sum()), len(x), alpha, name=name)
    if method not in ("percentile", "bca"):
        raise SettingError(f"unknown proportion interval {method!r}; use 'wilson', 'percentile' or 'bca'")
    return bootstrap_ci(x, n_resamples=n_resamples, alpha=alpha, method=method, seed=seed, clusters=clusters,
                        name=name)


def proportion_coverage(p_true: float, n: int, *, n_datasets: int = 300, n_resamples: int = 2000,
                        method: str = "percentile", alpha: float = 0.05, seed: int = 0) -> float:
    """Share of simulated Bernoulli(p_true) datasets whose CI covers ``p_true``.

    ``method``: "wilson", or a bootstrap interval ("percentile", "bca"). Vectorized: all success
    counts are drawn at once, and since every interval here depends on a dataset only through
    its count, one interval per distinct count serves all datasets with that count.
    """
    if method not in ("wilson", "percentile", "bca"):
        raise SettingError(f"unknown interval method {method!r}; use 'wilson', 'percentile' or 'bca'")
    rng = np.random.default_rng(seed)
    ks = rng.binomial(n, p_true, size=n_datasets)
    covers = {}
    for k in np.unique(ks).tolist():
        x = np.r_[np.ones(k), np.zeros(n - k)]
        r = proportion_ci(x, method=method, n_resamples=n_resamples, alpha=alpha, seed=seed + k + 1)
        covers[k] = r.ci_low <= p_true <= r.ci_high
    return float(np.mean([covers[k] for k in ks.tolist()]))


def clustered_two_proportion(first: Any, second: Any, clusters_first: Any = None, clusters_second: Any = None, *,
                             alpha: float = 0.05, name: str = "") -> Result:
    """Two groups of different units (negated against plain expressions): the difference of their shares of 1s
    with a Wald interval and z-test whose variance sums each group's cluster totals (the cluster-robust variance
    of a mean), so units sharing an image count once. The two-sample test :mod:`.power`'s two-sample floors are
    computed for. Own code (scipy's normal tail)."""
    import math

    from scipy.stats import norm

    parts = []
    for values, clusters, label in ((first, clusters_first, "first"), (second, clusters_second, "second")):
        x = _check_values(values, label, numeric=True).astype(float)
        if not len(x):
            raise DataError(f"the {label} group has no units", field=label)
        if clusters is None:
            sums, sizes = x, np.ones(len(x))
        else:
            import pandas as pd

            codes, _ = pd.factorize(pd.Series(list(clusters), dtype=object))
            if len(codes) != len(x):
                raise DataError(f"one cluster label per unit in the {label} group", field=label)
            sums, sizes = np.bincount(codes, weights=x), np.bincount(codes).astype(float)
        mean = float(x.mean())
        k = len(sums)
        var = float(((sums - sizes * mean) ** 2).sum()) * k / max(k - 1, 1) / len(x) ** 2
        parts.append((mean, var, len(x)))
    (m1, v1, n1), (m2, v2, n2) = parts
    est, se = m1 - m2, math.sqrt(v1 + v2)
    z = float(norm.ppf(1 - alpha / 2))
    p = float(2 * norm.sf(abs(est) / se)) if se > 0 else (1.0 if est == 0 else 0.0)
    return Result(est, est - z * se, est + z * se, p, n1 + n2, "two proportions, cluster-robust z", None, name, alpha,
                  {"first": m1, "second": m2, "n_first": n1, "n_second": n2})
