"""Paired tests of two systems on the same items: paired bootstrap, paired permutation, McNemar.

Library: statsmodels ``contingency_tables.mcnemar`` runs the chi-square McNemar test and scipy
``binomtest`` its exact form; scipy ``permutation_test`` is kept as the reference permutation
test of a mean difference (``engine="scipy"``). Own: the sign-flip engine of :mod:`.permutation`
that runs that test by default (scipy's p-value, at a fraction of its cost), the paired
bootstrap (Koehn 2004) on the count-vector engine of :mod:`.bootstrap`, which also serves the
permutation test of statistics other than a mean (macro-F1, group accuracy), the two-sided
p-values floored at ``1 / (B + 1)``, the Wald interval of a paired difference of proportions,
and the rule that picks the exact McNemar test below 25 discordant pairs.
"""

from __future__ import annotations

import inspect
import math
from typing import Any, Literal

import numpy as np

from vlamb_nb.errors import DataError, SettingError
from vlamb_nb.stats.bootstrap import (
    _CHUNK_ELEMENTS,
    Statistic,
    _aux_atoms,
    _aux_columns,
    _boot_stats,
    _check_n,
    _check_values,
    _design,
    _factorize,
    _is_mean,
    _loop_draws,
    _method_name,
    _resolve,
)
from vlamb_nb.stats.permutation import sign_flip_test
from vlamb_nb.stats.result import NAN, Result


def _paired_inputs(a: Any, b: Any, statistic: Any) -> tuple[np.ndarray, np.ndarray, Any]:
    stat = _resolve(statistic)
    a_arr = _check_values(a, "a", numeric=statistic is None)
    b_arr = _check_values(b, "b", numeric=statistic is None)
    if len(a_arr) != len(b_arr):
        raise DataError(f"paired systems need the same items: len(a)={len(a_arr)}, len(b)={len(b_arr)}")
    return a_arr, b_arr, stat


def paired_bootstrap(a: Any, b: Any, statistic: Any = None, *, n_resamples: int = 10000, seed: int = 0,
                     clusters: Any = None, alpha: float = 0.05, name: str = "") -> Result:
    """Paired bootstrap test (Koehn 2004): both systems are scored on the same resamples.

    ``a``, ``b``: per-item values of two systems on the same items (0/1 correctness, or
    predictions with ``statistic=macro_f1_statistic(gold)``; a plain ``statistic(values, idx)``
    also works, looped). Estimate = metric(a) - metric(b); CI = percentile interval of the
    resampled differences; p = two-sided, from the null-centred differences
    ``P(|d* - d| >= |d|)``. Koehn's own one-sided number (share of resamples where a does not
    beat b) is in ``extra["koehn_p"]``.

    Both p-values count the observed sample as one of the resamples, ``(1 + #) / (B + 1)``, so
    neither is ever below ``1 / (B + 1)``: B resamples cannot show a smaller p, and a reported 0
    would be wrong. On small samples the bootstrap p is still too liberal (5 wins, 0 losses on
    31 items: about 0.02 against the exact 0.0625); report :func:`mcnemar_exact` for 0/1 data.
    """
    a_arr, b_arr, stat = _paired_inputs(a, b, statistic)
    n = len(a_arr)
    _check_n(n_resamples, alpha)
    rng = np.random.default_rng(seed)
    if isinstance(stat, Statistic):
        design = _design({"a": a_arr, "b": b_arr, **_aux_columns(stat, n)}, clusters, n)
        a_u, b_u, aux_u = a_arr[design.rep], b_arr[design.rep], _aux_atoms(stat, design)

        def both(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return stat(a_u, w, **aux_u), stat(b_u, w, **aux_u)

        ma, mb = (float(x[0]) for x in both(design.mult[None, :]))
        diff = a_arr.astype(float) - b_arr.astype(float) if _is_mean(stat) else None  # mean(a*) - mean(b*)
        deltas = _boot_stats(design, rng, n_resamples, lambda w: np.subtract(*both(w)), diff)
    else:
        design = _design({"item": np.arange(n)}, clusters, n)
        ma, mb = float(stat(a_arr, np.arange(n))), float(stat(b_arr, np.arange(n)))
        deltas = np.array([float(stat(a_arr, idx)) - float(stat(b_arr, idx))
                           for idx in _loop_draws(design, rng, n_resamples)])
    delta = ma - mb
    fin = deltas[np.isfinite(deltas)]
    lo, hi = (np.quantile(fin, [alpha / 2, 1 - alpha / 2]) if len(fin) else (NAN, NAN))
    tol = 1e-12 * max(1.0, abs(delta))
    p = (1 + np.sum(np.abs(fin - delta) >= abs(delta) - tol)) / (len(fin) + 1)
    koehn = (1 + (np.sum(fin <= 0) if delta >= 0 else np.sum(fin >= 0))) / (len(fin) + 1)
    return Result(delta, float(lo), float(hi), float(min(p, 1.0)), n,
                  _method_name("paired bootstrap", clusters, isinstance(stat, Statistic)), seed,
                  name, alpha, {"metric_a": ma, "metric_b": mb, "koehn_p": float(koehn),
                                "n_resamples": n_resamples, "n_clusters": design.n_clusters})


def permutation_test(a: Any, b: Any, statistic: Any = None, *, n_resamples: int = 10000, seed: int = 0,
                     clusters: Any = None, alpha: float = 0.05, name: str = "",
                     engine: Literal["sign-flip", "scipy"] = "sign-flip") -> Result:
    """Paired permutation test: swap the two systems' outputs per item (or cluster) at random.

    Exact in distribution for "the systems are exchangeable" (no CI: the estimate is
    metric(a) - metric(b)). For a mean (the default statistic, with or without clusters) a swap
    flips the sign of an item's (or cluster's summed) difference, and the test is
    :func:`.permutation.sign_flip_test` on those differences: the p-value of
    ``scipy.stats.permutation_test(permutation_type="samples")`` (twice the smaller tail), with
    all ``2**m`` swaps of the ``m`` pairs that differ enumerated when ``m <= 20`` or
    ``2**m <= n_resamples`` (``extra["exact"]``), else ``n_resamples`` random ones drawn from
    ``seed`` as that function documents. ``engine="scipy"`` runs scipy itself on a mean (the
    reference; slower, and its random swaps differ). Other vectorized statistics (macro-F1, group accuracy)
    use the count-vector engine, and plain functions a loop; both report the two-sided
    ``(1 + #{|d*| >= |d|}) / (B + 1)``.
    """
    if engine not in ("sign-flip", "scipy"):
        raise SettingError(f"permutation engine must be 'sign-flip' or 'scipy', got {engine!r}")
    a_arr, b_arr, stat = _paired_inputs(a, b, statistic)
    n = len(a_arr)
    _check_n(n_resamples, alpha)
    rng = np.random.default_rng(seed)
    if _is_mean(stat):
        ccodes = None if clusters is None else _factorize(clusters, "clusters", n)
        run = _sign_flip_paired_permutation if engine == "sign-flip" else _scipy_paired_permutation
        delta, p, exact, n_c = run(a_arr.astype(float), b_arr.astype(float), ccodes, n_resamples, rng)
        return Result(delta, NAN, NAN, p, n, _method_name("paired permutation", clusters, True), seed, name,
                      alpha, {"n_resamples": n_resamples, "n_clusters": n_c, "exact": exact})
    if isinstance(stat, Statistic):
        design = _design({"a": a_arr, "b": b_arr, **_aux_columns(stat, n)}, clusters, n)
        a_u, b_u, aux_u = a_arr[design.rep], b_arr[design.rep], _aux_atoms(stat, design)
        vals2 = np.concatenate([a_u, b_u])
        aux2 = {k: np.concatenate([v, v]) for k, v in aux_u.items()}
        m = design.mult[None, :]
        delta = float(stat(a_u, m, **aux_u)[0] - stat(b_u, m, **aux_u)[0])
        perm = np.empty(n_resamples)
        step = design.chunk()
        for start in range(0, n_resamples, step):
            size = min(step, n_resamples - start)
            swapped = design.atom_weights(rng.binomial(design.sig_count.astype(np.int64), 0.5,
                                                       size=(size, len(design.sig_count))).astype(float))
            keep = m - swapped
            wa, wb = np.hstack([keep, swapped]), np.hstack([swapped, keep])
            perm[start:start + size] = stat(vals2, wa, **aux2) - stat(vals2, wb, **aux2)
    else:
        design = _design({"item": np.arange(n)}, clusters, n)
        full = np.arange(n)
        delta = float(stat(a_arr, full)) - float(stat(b_arr, full))
        groups = design.cluster_items or [np.array([i]) for i in range(n)]
        perm = np.empty(n_resamples)
        for i in range(n_resamples):
            flip = rng.random(len(groups)) < 0.5
            idx = np.concatenate([g for g, f in zip(groups, flip, strict=True) if f] or [np.array([], int)])
            pa, pb = a_arr.copy(), b_arr.copy()
            pa[idx], pb[idx] = b_arr[idx], a_arr[idx]
            perm[i] = float(stat(pa, full)) - float(stat(pb, full))
    fin = perm[np.isfinite(perm)]
    tol = 1e-12 * max(1.0, abs(delta))
    p = (1 + np.sum(np.abs(fin) >= abs(delta) - tol)) / (len(fin) + 1)
    return Result(delta, NAN, NAN, float(min(p, 1.0)), n,
                  _method_name("paired permutation", clusters, isinstance(stat, Statistic)), seed, name,
                  alpha, {"n_resamples": n_resamples, "n_clusters": design.n_clusters})


def _cluster_sums(a: np.ndarray, b: np.ndarray,
                  ccodes: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    return (a, b) if ccodes is None else (np.bincount(ccodes, weights=a), np.bincount(ccodes, weights=b))


def _sign_flip_paired_permutation(a: np.ndarray, b: np.ndarray, ccodes: np.ndarray | None, n_resamples: int,
                                  rng: np.random.Generator) -> tuple[float, float, bool, int]:
    """(delta, p, exact, clusters) of the paired permutation test of a mean difference, by sign flips.

    Same inputs and same differences as :func:`_scipy_paired_permutation` (per-cluster sums, the
    clusters whose sums agree dropped), so the two agree exactly where both enumerate.
    """
    sa, sb = _cluster_sums(a, b, ccodes)
    keep = sa != sb
    res = sign_flip_test(sa[keep] - sb[keep], n_resamples, rng)
    return float(a.mean() - b.mean()), res.p, res.exact, len(sa)


def _scipy_paired_permutation(a: np.ndarray, b: np.ndarray, ccodes: np.ndarray | None, n_resamples: int,
                              rng: np.random.Generator) -> tuple[float, float, bool, int]:
    """(delta, p, exact, clusters) of the paired permutation test of a mean difference, by scipy.

    Swapping a cluster flips the sign of its summed difference, so the mean difference over
    all ``n`` items is ``sum(x - y) / n`` over the per-cluster sums; clusters whose sums agree
    contribute 0 under every swap and are dropped (fewer swaps to enumerate, same statistic).
    """
    from scipy.stats import permutation_test as sp_permutation_test

    n = len(a)
    delta = float(a.mean() - b.mean())
    sa, sb = _cluster_sums(a, b, ccodes)
    keep = sa != sb
    x, y = sa[keep], sb[keep]
    if len(x) == 0:  # no swap changes anything: the null distribution is the point 0
        return delta, 1.0, True, len(sa)
    if len(x) == 1:  # +-d, one in each tail: p = 1 (scipy refuses a single pair)
        return delta, 1.0, True, len(sa)

    def mean_difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return (x - y).sum(axis=axis) / n

    rng_kw = "rng" if "rng" in inspect.signature(sp_permutation_test).parameters else "random_state"
    res = sp_permutation_test((x, y), mean_difference, permutation_type="samples", vectorized=True,
                              n_resamples=n_resamples, batch=max(1, _CHUNK_ELEMENTS // (4 * len(x))),
                              alternative="two-sided", **{rng_kw: rng})
    exact = len(x) < 63 and 2 ** len(x) <= n_resamples  # scipy's own rule for enumerating
    return delta, float(min(res.pvalue, 1.0)), exact, len(sa)


MCNEMAR_EXACT_BELOW = 25  # discordant pairs; below this the chi-square approximation is poor


def mcnemar_table(table: Any, exact: bool | None = None, *, alpha: float = 0.05, name: str = "") -> Result:
    """McNemar test on a 2x2 paired table ``[[both right, only a], [only b, both wrong]]``.

    ``exact=None`` reports the exact binomial test (``scipy.stats.binomtest`` on the discordant
    pairs, two-sided) when there are fewer than 25 discordant pairs, where the chi-square
    approximation is unreliable, else the chi-square test with continuity correction
    (statsmodels); ``exact=True`` forces the exact test. The exact p is in ``extra["p_exact"]``
    either way. Estimate = acc(a) - acc(b) with a Wald interval for paired proportions.
    """
    from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

    t = np.asarray(table, dtype=float)
    if t.shape != (2, 2) or (t < 0).any() or not np.all(t == np.round(t)):
        raise DataError(f"McNemar needs a 2x2 table of non-negative counts, got {t.tolist()}")
    n = int(t.sum())
    if n == 0:
        raise DataError("McNemar table is empty")
    b, c = int(t[0, 1]), int(t[1, 0])
    use_exact = (b + c) < MCNEMAR_EXACT_BELOW if exact is None else bool(exact)
    p_exact = _binom_mcnemar(b, c)
    if use_exact:
        p, statistic = p_exact, float(min(b, c))
    else:
        res = sm_mcnemar(t, exact=False, correction=True)
        p, statistic = (float(res.pvalue) if b + c > 0 else 1.0), float(res.statistic)
    diff = (b - c) / n
    from scipy.stats import norm

    se = math.sqrt(max((b + c) - (b - c) ** 2 / n, 0.0)) / n
    z = float(norm.ppf(1 - alpha / 2))
    return Result(diff, diff - z * se, diff + z * se, p, n,
                  "mcnemar exact" if use_exact else "mcnemar chi2 (continuity corrected)", None, name, alpha,
                  {"discordant_a_only": b, "discordant_b_only": c, "statistic": statistic, "p_exact": p_exact})


def _binom_mcnemar(b: int, c: int) -> float:
    """Two-sided exact McNemar p: ``b`` successes in ``b + c`` fair coin flips (1 when no pair differs)."""
    if b + c == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(min(binomtest(b, b + c, 0.5, alternative="two-sided").pvalue, 1.0))


def _correctness_table(a_correct: Any, b_correct: Any) -> list[list[int]]:
    a = _check_values(a_correct, "a_correct", numeric=True).astype(float)
    b = _check_values(b_correct, "b_correct", numeric=True).astype(float)
    if len(a) != len(b):
        raise DataError(f"paired systems need the same items: {len(a)} vs {len(b)}")
    if not (np.isin(a, (0, 1)).all() and np.isin(b, (0, 1)).all()):
        raise DataError("McNemar needs 0/1 correctness", field="a_correct/b_correct")
    a, b = a.astype(bool), b.astype(bool)
    return [[int(np.sum(a & b)), int(np.sum(a & ~b))], [int(np.sum(~a & b)), int(np.sum(~a & ~b))]]


def mcnemar(a_correct: Any, b_correct: Any, exact: bool | None = None, *, alpha: float = 0.05,
            name: str = "") -> Result:
    """McNemar test between two systems' per-item correctness on the same items (see :func:`mcnemar_table`)."""
    return mcnemar_table(_correctness_table(a_correct, b_correct), exact, alpha=alpha, name=name)


def mcnemar_exact(a_correct: Any, b_correct: Any, *, alpha: float = 0.05, name: str = "") -> Result:
    """Exact binomial McNemar test (scipy ``binomtest`` on the discordant pairs), at any sample size.

    The test to report for small paired samples: the bootstrap and the chi-square test are
    both too liberal when few items differ (5 wins, 0 losses: exact p = 0.0625).
    """
    return mcnemar_table(_correctness_table(a_correct, b_correct), True, alpha=alpha, name=name)


def clustered_mcnemar_p(a_correct: Any, b_correct: Any, clusters: Any = None) -> float:
    """The p-value of :func:`clustered_mcnemar` alone (what a power simulation draws thousands of times)."""
    stat, _, _ = _durkalski(a_correct, b_correct, clusters)
    if not math.isfinite(stat):
        return 1.0
    from scipy.stats import chi2

    return float(chi2.sf(stat, 1))


def _durkalski(a_correct: Any, b_correct: Any, clusters: Any) -> tuple[float, np.ndarray, np.ndarray]:
    """Durkalski's statistic with each cluster's ``b_k - c_k`` and size."""
    a = np.asarray(a_correct, dtype=float)
    b = np.asarray(b_correct, dtype=float)
    if a.shape != b.shape:
        raise DataError(f"paired systems need the same items: {a.shape} vs {b.shape}")
    if clusters is None:
        codes, k = np.arange(len(a)), len(a)
    else:
        codes = _factorize(clusters, "clusters", len(a))
        k = int(codes.max()) + 1 if len(codes) else 0
    diff = np.bincount(codes, weights=a - b, minlength=k)
    sizes = np.bincount(codes, minlength=k).astype(float)
    den = float((diff ** 2).sum())
    stat = float(diff.sum() ** 2 / den) if den > 0 else math.nan
    return stat, diff, sizes


def clustered_mcnemar(a_correct: Any, b_correct: Any, clusters: Any = None, *, alpha: float = 0.05,
                      name: str = "") -> Result:
    """McNemar's test for clustered paired 0/1 outcomes (Durkalski, Palesch, Lipsitz and Rust, 2003): the
    statistic ``(sum_k (b_k - c_k))**2 / sum_k (b_k - c_k)**2`` over clusters ``k`` (``b_k``: units of the cluster
    only ``a`` got right, ``c_k``: only ``b``), chi-square with one degree of freedom. With one unit per cluster
    it is McNemar's statistic without continuity correction. Estimate: acc(a) - acc(b) with a cluster-robust
    Wald interval. The test the noise floors of :mod:`.power` are computed for (scipy's chi-square tail)."""
    from scipy.stats import chi2, norm

    a = _check_values(a_correct, "a_correct", numeric=True).astype(float)
    b = _check_values(b_correct, "b_correct", numeric=True).astype(float)
    if not (np.isin(a, (0, 1)).all() and np.isin(b, (0, 1)).all()):
        raise DataError("McNemar needs 0/1 correctness", field="a_correct/b_correct")
    stat, diff, sizes = _durkalski(a, b, clusters)
    n, k = len(a), len(diff)
    est = float((a - b).mean()) if n else NAN
    p = float(chi2.sf(stat, 1)) if math.isfinite(stat) else 1.0
    resid = diff - sizes * est
    se = math.sqrt(float((resid ** 2).sum()) * k / max(k - 1, 1)) / n if n else NAN
    z = float(norm.ppf(1 - alpha / 2))
    return Result(est, est - z * se, est + z * se, p, n, "clustered mcnemar (Durkalski)" if clusters is not None
                  else "mcnemar chi2 (uncorrected)", None, name, alpha,
                  {"statistic": stat, "n_clusters": k, "discordant_a_only": int(((a == 1) & (b == 0)).sum()),
                   "discordant_b_only": int(((a == 0) & (b == 1)).sum())})
