"""Confidence intervals and paired significance tests for every comparison the papers make.

The papers report point estimates; this module says which differences are real. Every
function returns a :class:`Result` (estimate, CI, p, n, method, seed) that renders in a
DataFrame (:func:`results_frame`) and as error bars (``vlamb_nb.plots.bar_with_ci``).

How the bootstrap is fast and exact
-----------------------------------
A resample is described by *how many times each item is drawn* (a count vector), never by a
list of indices. Items that look identical to the statistic (same values, same gold label,
...) are merged into one "atom"; clusters with the same multiset of atoms are merged into one
"signature". Drawing ``C`` clusters with replacement is then one multinomial draw over the
signatures, which has exactly the distribution of the textbook resample but costs
``O(#signatures)`` instead of ``O(#items)`` per resample. With 0/1 correctness this turns 10,000
resamples of 6,027 items into a few thousand random numbers.

The vectorized statistic contract
---------------------------------
A :class:`Statistic` wraps ``fn(values, w, **aux) -> (B,) array`` where ``values`` (U,) holds
one value per atom, ``w`` (B, U) holds the resample counts of each atom (one row per
resample; the original sample is the row of atom multiplicities) and ``aux`` holds the
statistic's own per-item columns (e.g. the gold labels), reduced to atoms the same way. Any
statistic of a weighted sample fits: a weighted mean is ``w @ values / w.sum(1)``; macro-F1
builds per-resample confusion counts with one matrix product. See :func:`mean_statistic`,
:func:`macro_f1_statistic`, :func:`group_accuracy_statistic` and :func:`vectorized`.

A plain function is accepted too, for convenience: in :func:`bootstrap_ci` it is called as
``statistic(idx)`` with an index array into the items; in the paired functions as
``statistic(system_values, idx)``. That path loops over resamples in Python (slow, but any
code works).

Library code first
------------------
Where a library has the method, this module calls it and only adds the Result, the checks and
the parts the library lacks: Wilson intervals (statsmodels ``proportion_confint``), Holm and
Benjamini-Hochberg (statsmodels ``multipletests``), Cohen's kappa (scikit-learn) and Fleiss'
kappa (statsmodels), McNemar (statsmodels chi-square; exact: scipy ``binomtest``), the paired
permutation test of a mean (scipy ``permutation_test``). The resampling engine above is this
module's own: no library resamples clusters through count vectors.

Determinism: every function takes ``seed`` and draws from ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from vlamb_nb.errors import DataError, SettingError
from vlamb_nb.metrics import macro_f1  # re-exported: the plain (non-bootstrap) metric

__all__ = [
    "Result", "Statistic", "benjamini_hochberg", "bootstrap_ci", "cohen_kappa", "fleiss_kappa",
    "group_accuracy_statistic", "holm", "macro_f1", "macro_f1_statistic", "mcnemar", "mcnemar_exact",
    "mcnemar_table", "mean_statistic", "paired_bootstrap", "permutation_test", "adjust", "proportion_ci",
    "proportion_coverage", "results_frame", "ratings_to_table", "vectorized", "wilson", "wilson_from_percent",
]

_NAN = float("nan")
_CHUNK_ELEMENTS = 2_000_000  # bound on the (chunk x atoms) matrices held at once
_GATHER_ELEMENTS = 16_384  # indices per block on the gather path: index + value blocks fit in L2
_GATHER_ATOM_SHARE = 32  # gather when atoms > n / 32: a multinomial draw costs ~30x an index per atom
_MULTINOMIAL_SHARE = 16  # multinomial over S signatures when S <= C / 16, else count C cluster draws


# --------------------------------------------------------------------------- result type


@dataclass(frozen=True)
class Result:
    """One estimate with its interval and test: the currency of tables and error-bar plots."""

    estimate: float
    ci_low: float = _NAN
    ci_high: float = _NAN
    p: float = _NAN
    n: int = 0
    method: str = ""
    seed: int | None = None
    name: str = ""
    alpha: float = 0.05
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict (NaN becomes None so ``notebook.record`` stays valid JSON)."""
        d = asdict(self)
        return {k: _clean(v) for k, v in d.items()}

    @property
    def yerr(self) -> tuple[float, float]:
        """(below, above) distances for matplotlib ``yerr``; 0 when there is no interval."""
        lo = self.estimate - self.ci_low if math.isfinite(self.ci_low) else 0.0
        hi = self.ci_high - self.estimate if math.isfinite(self.ci_high) else 0.0
        return max(lo, 0.0), max(hi, 0.0)

    @property
    def significant(self) -> bool:
        """``p < alpha`` (False when there is no p-value)."""
        return bool(math.isfinite(self.p) and self.p < self.alpha)

    def scaled(self, factor: float = 100.0) -> Result:
        """Estimate and interval times ``factor`` (papers print percentages)."""
        return replace(self, estimate=self.estimate * factor, ci_low=self.ci_low * factor,
                       ci_high=self.ci_high * factor)

    def named(self, name: str) -> Result:
        return replace(self, name=name)

    def __str__(self) -> str:
        s = f"{self.name + ': ' if self.name else ''}{self.estimate:.4g}"
        if math.isfinite(self.ci_low) or math.isfinite(self.ci_high):
            s += f" [{self.ci_low:.4g}, {self.ci_high:.4g}]"
        if math.isfinite(self.p):
            s += f" p={self.p:.3g}"
        return s + f" (n={self.n}, {self.method})"


def _clean(v: Any) -> Any:
    if isinstance(v, float | np.floating):
        return None if not math.isfinite(float(v)) else float(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    return v


RESULT_COLUMNS = ["name", "estimate", "ci_low", "ci_high", "p", "n", "method", "seed", "alpha"]


def results_frame(results: Iterable[Result] | Mapping[str, Result]):
    """A tidy DataFrame, one row per result (a mapping's keys fill empty names)."""
    import pandas as pd

    if isinstance(results, Mapping):
        items = [r if r.name else r.named(str(k)) for k, r in results.items()]
    else:
        items = list(results)
    bad = [type(r).__name__ for r in items if not isinstance(r, Result)]
    if bad:
        raise TypeError(f"results_frame expects Result objects, got {bad[0]}")
    rows = [{c: getattr(r, c) for c in RESULT_COLUMNS} for r in items]
    df = pd.DataFrame(rows, columns=RESULT_COLUMNS)
    return df.astype({"estimate": float, "ci_low": float, "ci_high": float, "p": float})


# --------------------------------------------------------------------------- statistics


@dataclass(frozen=True, eq=False)
class Statistic:
    """A vectorized statistic: ``fn(values, w, **aux) -> (B,)`` over atoms (see module doc)."""

    fn: Callable[..., np.ndarray]
    aux: Mapping[str, Any] = field(default_factory=dict)
    name: str = "statistic"
    uses_multiplicity: bool = False  # if True, fn also receives ``mult`` (items per atom)

    def __call__(self, values: np.ndarray, w: np.ndarray, **aux: np.ndarray) -> np.ndarray:
        return np.asarray(self.fn(values, np.atleast_2d(w), **aux), dtype=float).reshape(-1)

    def value(self, values: Any) -> float:
        """The statistic on the full sample (no resampling)."""
        v = np.asarray(values)
        aux = {k: np.asarray(a) for k, a in self.aux.items()}
        if self.uses_multiplicity:
            aux["mult"] = np.ones(len(v))
        return float(self(v, np.ones((1, len(v))), **aux)[0])


def vectorized(fn: Callable[..., np.ndarray] | None = None, *, name: str | None = None,
               **aux: Any) -> Any:
    """Mark ``fn(values, w, **aux)`` as a vectorized statistic; usable as a decorator.

    ``aux`` are per-item arrays the statistic needs besides the values (gold labels, groups).
    """
    def wrap(f: Callable[..., np.ndarray]) -> Statistic:
        return Statistic(f, dict(aux), name or getattr(f, "__name__", "statistic"))

    return wrap(fn) if fn is not None else wrap


def _weighted_mean(values: np.ndarray, w: np.ndarray) -> np.ndarray:
    tot = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (w @ values.astype(float)) / tot


def mean_statistic() -> Statistic:
    """Mean of a per-item value (accuracy of 0/1 correctness, Acc@IoU of hits, mean score)."""
    return Statistic(_weighted_mean, {}, "mean")


def macro_f1_statistic(y_true: Any, labels: Sequence[Any] | None = None) -> Statistic:
    """Macro-F1 of the predictions (the values) against ``y_true``, sklearn-compatible.

    Classes are those present in the resample's gold or predictions unless ``labels`` fixes
    them. For V-FLUTE F1@t pass predictions already passed through
    ``metrics.explanation_adjusted``.
    """
    fixed = None if labels is None else list(labels)

    def fn(values: np.ndarray, w: np.ndarray, y_true: np.ndarray) -> np.ndarray:
        classes = fixed if fixed is not None else _union(y_true, values)
        k = len(classes)
        ind = np.zeros((len(values), 3 * k))
        for j, c in enumerate(classes):
            t, p = _eq(y_true, c), _eq(values, c)
            ind[:, j], ind[:, k + j], ind[:, 2 * k + j] = t & p, t, p
        cnt = w @ ind
        tp, nt, npred = cnt[:, :k], cnt[:, k:2 * k], cnt[:, 2 * k:]
        denom = nt + npred
        with np.errstate(invalid="ignore", divide="ignore"):
            f1 = np.where(denom > 0, 2 * tp / np.where(denom > 0, denom, 1), 0.0)
        present = denom > 0 if fixed is None else np.ones_like(denom, dtype=bool)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (f1 * present).sum(axis=1) / present.sum(axis=1)

    return Statistic(fn, {"y_true": np.asarray(y_true)}, "macro_f1")


def group_accuracy_statistic(groups: Any) -> Statistic:
    """Share of groups whose items are all correct (values = per-item 0/1 correctness).

    A group's weight in a resample is the mean resample count of its items, which is exactly
    the cluster's count under ``clusters=groups``; use that (resample whole groups), because
    resampling single items breaks the groups this metric is defined on.
    """
    def fn(values: np.ndarray, w: np.ndarray, groups: np.ndarray, mult: np.ndarray) -> np.ndarray:
        import pandas as pd

        codes, uniq = pd.factorize(groups, use_na_sentinel=False)
        member = np.zeros((len(values), len(uniq)))
        member[np.arange(len(values)), codes] = 1.0
        size = mult @ member  # items per group in the original sample
        all_ok = (np.asarray(values, dtype=float) < 0.5) @ member == 0
        gw = (w @ member) / np.maximum(size, 1e-300)  # resample count of each group
        with np.errstate(invalid="ignore", divide="ignore"):
            return (gw @ all_ok.astype(float)) / gw.sum(axis=1)

    return Statistic(fn, {"groups": np.asarray(groups)}, "group_accuracy", uses_multiplicity=True)


def _eq(arr: np.ndarray, c: Any) -> np.ndarray:
    return np.fromiter((x == c for x in arr), dtype=bool, count=len(arr)) if arr.dtype == object \
        else (arr == c)


def _union(a: np.ndarray, b: np.ndarray) -> list[Any]:
    seen = dict.fromkeys(np.asarray(a).tolist())
    seen.update(dict.fromkeys(np.asarray(b).tolist()))
    return list(seen)


# --------------------------------------------------------------------------- resampling engine


@dataclass
class _Design:
    """Items merged into atoms, clusters merged into signatures (see module doc)."""

    n: int
    atom_of_item: np.ndarray  # (n,)
    rep: np.ndarray  # (U,) one item per atom
    mult: np.ndarray  # (U,) items per atom
    n_clusters: int  # C
    sig_of_cluster: np.ndarray  # (C,)
    sig_count: np.ndarray  # (S,) clusters per signature
    sig_atoms: Any  # (S, U) atom counts per signature (dense or sparse); None = identity
    cluster_items: list[np.ndarray] | None  # for the loop path

    @property
    def n_atoms(self) -> int:
        return len(self.rep)

    def atom_weights(self, sig_w: np.ndarray) -> np.ndarray:
        if self.sig_atoms is None:
            return sig_w
        if isinstance(self.sig_atoms, np.ndarray):
            return sig_w @ self.sig_atoms
        return np.asarray((self.sig_atoms.T @ sig_w.T).T)

    def draw(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """(size, S) signature counts of ``size`` cluster resamples."""
        s, c = len(self.sig_count), self.n_clusters
        if _MULTINOMIAL_SHARE * s <= c or s <= 16:  # a category costs ~15x an index draw + bincount
            return rng.multinomial(c, self.sig_count / c, size=size).astype(float)
        idx = rng.integers(0, c, size=(size, c))
        flat = (self.sig_of_cluster[idx] + (np.arange(size) * s)[:, None]).ravel()
        return np.bincount(flat, minlength=size * s).reshape(size, s).astype(float)

    def chunk(self) -> int:
        width = max(self.n_atoms, len(self.sig_count), self.n_clusters)
        return max(1, _CHUNK_ELEMENTS // max(width, 1))


def _factorize(col: Any, name: str, n: int) -> np.ndarray:
    import pandas as pd

    arr = np.asarray(col)
    if arr.ndim != 1 or len(arr) != n:
        raise DataError(f"expected a 1-D per-item array of length {n}, got shape {arr.shape}", field=name)
    codes, _ = pd.factorize(arr, use_na_sentinel=False)
    return codes


def _design(columns: Mapping[str, Any], clusters: Any, n: int) -> _Design:
    if n == 0:
        raise DataError("no items to resample", field=next(iter(columns), None))
    codes = np.column_stack([_factorize(c, k, n) for k, c in columns.items()])
    _, rep, atom, mult = np.unique(codes, axis=0, return_index=True, return_inverse=True, return_counts=True)
    atom = atom.reshape(-1)
    if clusters is None:
        return _Design(n, atom, rep, mult.astype(float), n, atom, mult.astype(float), None, None)
    ccodes = _factorize(clusters, "clusters", n)
    n_c = int(ccodes.max()) + 1
    order = np.lexsort((atom, ccodes))
    bounds = np.flatnonzero(np.diff(ccodes[order])) + 1
    members = np.split(order, bounds)
    sig_ids: dict[tuple[int, ...], int] = {}
    sig_of_cluster = np.empty(n_c, dtype=np.int64)
    for m in members:
        sig_of_cluster[ccodes[m[0]]] = sig_ids.setdefault(tuple(atom[m].tolist()), len(sig_ids))
    s, u = len(sig_ids), len(rep)
    rows, cols = sig_of_cluster[ccodes], atom
    # each signature's atom counts come from one representative cluster
    first_cluster = np.full(s, -1)
    for cl, sg in enumerate(sig_of_cluster):
        if first_cluster[sg] < 0:
            first_cluster[sg] = cl
    keep = ccodes == first_cluster[rows]
    if s * u <= 4_000_000:
        a = np.zeros((s, u))
        np.add.at(a, (rows[keep], cols[keep]), 1.0)
    else:
        from scipy import sparse

        a = sparse.csr_matrix((np.ones(int(keep.sum())), (rows[keep], cols[keep])), shape=(s, u))
    sig_count = np.bincount(sig_of_cluster, minlength=s).astype(float)
    return _Design(n, atom, rep, mult.astype(float), n_c, sig_of_cluster, sig_count, a, members)


def _resolve(statistic: Any) -> Statistic | Callable[..., float]:
    if statistic is None:
        return mean_statistic()
    if isinstance(statistic, Statistic) or callable(statistic):
        return statistic
    raise SettingError(f"statistic must be None, a Statistic or a callable, got {type(statistic).__name__}")


def _check_values(values: Any, name: str, numeric: bool) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise DataError(f"expected a 1-D per-item array, got shape {arr.shape}", field=name)
    if numeric:
        if arr.dtype == object or arr.dtype.kind not in "biuf":
            raise DataError("the default statistic (mean) needs numbers; pass a statistic for labels",
                            field=name)
        if np.isnan(arr.astype(float)).any():
            raise DataError("contains NaN; decide how missing items count before the bootstrap", field=name)
    return arr


def _aux_atoms(stat: Statistic, design: _Design) -> dict[str, np.ndarray]:
    out = {k: np.asarray(v)[design.rep] for k, v in stat.aux.items()}
    if stat.uses_multiplicity:
        out["mult"] = design.mult
    return out


def _aux_columns(stat: Any, n: int) -> dict[str, Any]:
    if not isinstance(stat, Statistic):
        return {}
    out = {}
    for k, v in stat.aux.items():
        arr = np.asarray(v)
        if arr.ndim != 1 or len(arr) != n:
            raise DataError(f"statistic column has shape {arr.shape}, expected ({n},)", field=k)
        out["aux:" + k] = arr
    return out


def _boot_stats(design: _Design, rng: np.random.Generator, n_resamples: int,
                evaluate: Callable[[np.ndarray], np.ndarray], mean_of: np.ndarray | None = None) -> np.ndarray:
    """Resampled statistic values, from count weights or, for a plain mean, by index gathering.

    ``mean_of`` (n,): the statistic is the resample mean of this array (a mean, or a paired mean
    difference). Without clusters and with more than n/32 (and 16) distinct values, drawing item
    indices and gathering beats a multinomial over the atoms (~100 ns per atom per resample
    against ~4 ns per item). Indices come in blocks of ``_GATHER_ELEMENTS`` so that the index and
    value blocks stay in L2 cache; blocks of 2 MB and more made this path slower than a loop.
    """
    out = np.empty(n_resamples)
    n = design.n
    if (mean_of is not None and design.cluster_items is None and design.n_atoms > 16
            and _GATHER_ATOM_SHARE * design.n_atoms > n):
        step = max(1, _GATHER_ELEMENTS // n)
        for start in range(0, n_resamples, step):
            size = min(step, n_resamples - start)
            out[start:start + size] = np.take(mean_of, rng.integers(0, n, size=(size, n))).sum(axis=1) / n
        return out
    step = design.chunk()
    for start in range(0, n_resamples, step):
        size = min(step, n_resamples - start)
        out[start:start + size] = evaluate(design.atom_weights(design.draw(rng, size)))
    return out


def _is_mean(stat: Any) -> bool:
    return isinstance(stat, Statistic) and stat.fn is _weighted_mean


def _jackknife(design: _Design, evaluate: Callable[[np.ndarray], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Leave-one-cluster-out values, one per signature, with their multiplicities."""
    s = len(design.sig_count)
    vals = np.empty(s)
    step = design.chunk()
    for start in range(0, s, step):
        sig = np.zeros((min(step, s - start), s))
        sig[np.arange(sig.shape[0]), np.arange(start, start + sig.shape[0])] = 1.0
        vals[start:start + sig.shape[0]] = evaluate(design.mult[None, :] - design.atom_weights(sig))
    return vals, design.sig_count


def _interval(boot: np.ndarray, estimate: float, alpha: float, method: str,
              jack: tuple[np.ndarray, np.ndarray] | None) -> tuple[float, float, str]:
    from scipy.stats import norm

    boot = boot[np.isfinite(boot)]
    if len(boot) == 0:
        return _NAN, _NAN, method
    q = [alpha / 2, 1 - alpha / 2]
    if boot.min() == boot.max():
        return float(boot[0]), float(boot[0]), f"{method} (degenerate: every resample gives the same value)"
    if method == "percentile":
        lo, hi = np.quantile(boot, q)
        return float(lo), float(hi), "percentile"
    if method != "bca":
        raise SettingError(f"unknown interval method {method!r}; use 'percentile' or 'bca'")
    share = (np.sum(boot < estimate) + 0.5 * np.sum(boot == estimate)) / len(boot)
    z0 = norm.ppf(share)
    vals, cnt = jack if jack is not None else (np.array([]), np.array([]))
    ok = np.isfinite(vals)
    vals, cnt = vals[ok], cnt[ok]
    if not np.isfinite(z0) or cnt.sum() < 2:
        lo, hi = np.quantile(boot, q)
        return float(lo), float(hi), "percentile (BCa undefined: degenerate bootstrap)"
    d = np.average(vals, weights=cnt) - vals
    den = 6.0 * (np.sum(cnt * d ** 2)) ** 1.5
    acc = float(np.sum(cnt * d ** 3) / den) if den > 0 else 0.0
    zq = norm.ppf(q)
    adj = norm.cdf(z0 + (z0 + zq) / (1 - acc * (z0 + zq)))
    lo, hi = np.quantile(boot, np.clip(adj, 0, 1))
    return float(lo), float(hi), "bca"


def _loop_draw(design: _Design, rng: np.random.Generator) -> np.ndarray:
    if design.cluster_items is None:
        return rng.integers(0, design.n, size=design.n)
    picks = rng.integers(0, design.n_clusters, size=design.n_clusters)
    return np.concatenate([design.cluster_items[i] for i in picks])


def _loop_jackknife(design: _Design, fn: Callable[[np.ndarray], float]) -> tuple[np.ndarray, np.ndarray]:
    groups = design.cluster_items or [np.array([i]) for i in range(design.n)]
    allidx = np.arange(design.n)
    vals = np.array([fn(np.setdiff1d(allidx, g, assume_unique=True)) for g in groups])
    return vals, np.ones(len(groups))


def _call_arity(fn: Callable[..., Any]) -> int:
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
        return len(params)
    except (TypeError, ValueError):
        return 1


def _method_name(base: str, clusters: Any, vectorized_: bool) -> str:
    parts = [base]
    if clusters is not None:
        parts.append("cluster")
    if not vectorized_:
        parts.append("loop")
    return " ".join(parts)


# --------------------------------------------------------------------------- bootstrap API


def bootstrap_ci(values: Any, statistic: Any = None, *, n_resamples: int = 10000, alpha: float = 0.05,
                 method: str = "percentile", seed: int = 0, clusters: Any = None, name: str = "") -> Result:
    """Bootstrap CI of a statistic of per-item ``values`` (mean by default).

    ``statistic``: None (mean), a :class:`Statistic` (vectorized, e.g.
    ``macro_f1_statistic(gold)`` with predictions as values), or a plain function of an index
    array (``lambda idx: metric(x[idx])``, looped). ``clusters``: one id per item; whole
    clusters are resampled (pairs, questions of one image, expressions of one target).
    ``method``: "percentile" or "bca" (bias-corrected and accelerated, jackknife over clusters).
    """
    if method not in ("percentile", "bca"):
        raise SettingError(f"unknown interval method {method!r}; use 'percentile' or 'bca'")
    stat = _resolve(statistic)
    arr = _check_values(values, "values", numeric=statistic is None)
    n = len(arr)
    _check_n(n_resamples, alpha)
    rng = np.random.default_rng(seed)
    if isinstance(stat, Statistic):
        design = _design({"values": arr, **_aux_columns(stat, n)}, clusters, n)
        v_u, aux_u = arr[design.rep], _aux_atoms(stat, design)

        def evaluate(w: np.ndarray) -> np.ndarray:
            return stat(v_u, w, **aux_u)

        estimate = float(evaluate(design.mult[None, :])[0])
        boot = _boot_stats(design, rng, n_resamples, evaluate, arr.astype(float) if _is_mean(stat) else None)
        jack = _jackknife(design, evaluate) if method == "bca" else None
        label = stat.name
    else:
        design = _design({"item": np.arange(n)}, clusters, n)
        fn = (lambda idx: float(stat(arr, idx))) if _call_arity(stat) >= 2 else (lambda idx: float(stat(idx)))
        estimate = fn(np.arange(n))
        boot = np.array([fn(_loop_draw(design, rng)) for _ in range(n_resamples)])
        jack = _loop_jackknife(design, fn) if method == "bca" else None
        label = getattr(stat, "__name__", "statistic")
    lo, hi, used = _interval(boot, estimate, alpha, method, jack)
    return Result(estimate, lo, hi, _NAN, n, _method_name(f"bootstrap {used}", clusters,
                                                          isinstance(stat, Statistic)),
                  seed, name or label, alpha, {"n_resamples": n_resamples, "n_clusters": design.n_clusters,
                                               "statistic": label})


def _check_n(n_resamples: int, alpha: float) -> None:
    if not isinstance(n_resamples, int | np.integer) or n_resamples < 1:
        raise SettingError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    if not 0 < alpha < 1:
        raise SettingError(f"alpha must be in (0, 1), got {alpha!r}")


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
        deltas = np.empty(n_resamples)
        for i in range(n_resamples):
            idx = _loop_draw(design, rng)
            deltas[i] = float(stat(a_arr, idx)) - float(stat(b_arr, idx))
    delta = ma - mb
    fin = deltas[np.isfinite(deltas)]
    lo, hi = (np.quantile(fin, [alpha / 2, 1 - alpha / 2]) if len(fin) else (_NAN, _NAN))
    tol = 1e-12 * max(1.0, abs(delta))
    p = (1 + np.sum(np.abs(fin - delta) >= abs(delta) - tol)) / (len(fin) + 1)
    koehn = (1 + (np.sum(fin <= 0) if delta >= 0 else np.sum(fin >= 0))) / (len(fin) + 1)
    return Result(delta, float(lo), float(hi), float(min(p, 1.0)), n,
                  _method_name("paired bootstrap", clusters, isinstance(stat, Statistic)), seed,
                  name, alpha, {"metric_a": ma, "metric_b": mb, "koehn_p": float(koehn),
                                "n_resamples": n_resamples, "n_clusters": design.n_clusters})


def permutation_test(a: Any, b: Any, statistic: Any = None, *, n_resamples: int = 10000, seed: int = 0,
                     clusters: Any = None, alpha: float = 0.05, name: str = "") -> Result:
    """Paired permutation test: swap the two systems' outputs per item (or cluster) at random.

    Exact in distribution for "the systems are exchangeable" (no CI: the estimate is
    metric(a) - metric(b)). For a mean (the default statistic, with or without clusters) the
    test is ``scipy.stats.permutation_test(permutation_type="samples")`` on the per-item (or
    per-cluster) sums, with pairs whose swap changes nothing left out (same statistic); scipy
    enumerates all ``2**m`` swaps when that is at most ``n_resamples`` (``extra["exact"]``) and
    reports twice the smaller tail. Other vectorized statistics (macro-F1, group accuracy) use
    this module's engine, and plain functions a loop; both report the two-sided
    ``(1 + #{|d*| >= |d|}) / (B + 1)``.
    """
    a_arr, b_arr, stat = _paired_inputs(a, b, statistic)
    n = len(a_arr)
    _check_n(n_resamples, alpha)
    rng = np.random.default_rng(seed)
    if _is_mean(stat):
        ccodes = None if clusters is None else _factorize(clusters, "clusters", n)
        delta, p, exact, n_c = _scipy_paired_permutation(a_arr.astype(float), b_arr.astype(float), ccodes,
                                                         n_resamples, rng)
        return Result(delta, _NAN, _NAN, p, n, _method_name("paired permutation", clusters, True), seed, name,
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
    return Result(delta, _NAN, _NAN, float(min(p, 1.0)), n,
                  _method_name("paired permutation", clusters, isinstance(stat, Statistic)), seed, name,
                  alpha, {"n_resamples": n_resamples, "n_clusters": design.n_clusters})


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
    if ccodes is None:
        sa, sb = a, b
    else:
        sa, sb = np.bincount(ccodes, weights=a), np.bincount(ccodes, weights=b)
    keep = sa != sb
    x, y = sa[keep], sb[keep]
    if len(x) == 0:  # no swap changes anything: the null distribution is the point 0
        return delta, 1.0, True, len(sa)

    def mean_difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return (x - y).sum(axis=axis) / n

    rng_kw = "rng" if "rng" in inspect.signature(sp_permutation_test).parameters else "random_state"
    res = sp_permutation_test((x, y), mean_difference, permutation_type="samples", vectorized=True,
                              n_resamples=n_resamples, batch=max(1, _CHUNK_ELEMENTS // (4 * len(x))),
                              alternative="two-sided", **{rng_kw: rng})
    exact = len(x) < 63 and 2 ** len(x) <= n_resamples  # scipy's own rule for enumerating
    return delta, float(min(res.pvalue, 1.0)), exact, len(sa)


# --------------------------------------------------------------------------- counts-based tests


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
    return Result(k / n, max(0.0, float(lo)), min(1.0, float(hi)), _NAN, int(n), "wilson", None,
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


# --------------------------------------------------------------------------- agreement


def cohen_kappa(r1: Any, r2: Any, ci: bool = True, *, alpha: float = 0.05, name: str = "") -> Result:
    """Cohen's kappa of two raters with the asymptotic CI and a two-sided test of kappa = 0.

    Kappa from scikit-learn (``cohen_kappa_score``), its standard errors from statsmodels.
    """
    import pandas as pd
    from statsmodels.stats.inter_rater import cohens_kappa as sm_kappa

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
        return Result(_NAN, _NAN, _NAN, _NAN, n, "cohen kappa (undefined: one shared label)", None, name, alpha)
    kappa = float(cohen_kappa_score(cx, cy, labels=np.arange(len(labels))))
    if not ci:
        return Result(float(kappa), n=n, method="cohen kappa", name=name, alpha=alpha)
    res = sm_kappa(table, return_results=True)
    from scipy.stats import norm

    z = float(norm.ppf(1 - alpha / 2))
    se, se0 = float(res["std_kappa"]), float(res["std_kappa0"])
    p = float(2 * norm.sf(abs(kappa) / se0)) if se0 > 0 else _NAN
    return Result(float(kappa), float(kappa - z * se), float(kappa + z * se), p, n, "cohen kappa (asymptotic)",
                  None, name, alpha, {"observed_agreement": float(po), "expected_agreement": pe})


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
    p = _NAN
    if s > 0:
        var0 = 2 / (n * r * (r - 1)) * (s ** 2 - np.sum(pj * qj * (qj - pj))) / s ** 2
        p = float(2 * norm.sf(abs(kappa) / math.sqrt(var0))) if var0 > 0 else _NAN
    if not ci:
        return Result(kappa, p=p, n=n, method="fleiss kappa", name=name, alpha=alpha)
    stat = Statistic(lambda v, w, **cols: _fleiss_from_weights(np.column_stack(list(cols.values())), w, r),
                     {f"c{j}": t[:, j] for j in range(t.shape[1])}, "fleiss_kappa")
    res = bootstrap_ci(np.zeros(n), stat, n_resamples=n_resamples, alpha=alpha, method=method, seed=seed)
    return replace(res, estimate=kappa, p=p, method=f"fleiss kappa, {res.method} CI, z-test p", name=name,
                   extra={**res.extra, "raters": r})


# --------------------------------------------------------------------------- multiple comparisons


def _pvals(pvals: Any) -> np.ndarray:
    p = np.asarray([r.p if isinstance(r, Result) else r for r in pvals], dtype=float)
    if p.ndim != 1:
        raise DataError("p-values must be a flat sequence")
    if np.isnan(p).any() or (p < 0).any() or (p > 1).any():
        raise DataError("p-values must lie in [0, 1] (no NaN)")
    return p


def _multipletests(pvals: Any, method: str) -> np.ndarray:
    p = _pvals(pvals)
    if len(p) == 0:
        return np.empty(0)
    from statsmodels.stats.multitest import multipletests

    return np.asarray(multipletests(p, method=method)[1], dtype=float)


def holm(pvals: Any) -> np.ndarray:
    """Holm step-down adjusted p-values (family-wise error), in input order (statsmodels)."""
    return _multipletests(pvals, "holm")


def benjamini_hochberg(pvals: Any) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (false discovery rate), in input order (statsmodels)."""
    return _multipletests(pvals, "fdr_bh")


def adjust(results: Sequence[Result], method: str = "holm") -> list[Result]:
    """The same results with p-values adjusted for the family (``holm`` or ``bh``)."""
    funcs = {"holm": holm, "bh": benjamini_hochberg, "benjamini_hochberg": benjamini_hochberg}
    if method not in funcs:
        raise SettingError(f"unknown correction {method!r}; use one of {sorted(funcs)}")
    adj = funcs[method](results)
    return [replace(r, p=float(q), method=f"{r.method}; {method}-adjusted over {len(results)}")
            for r, q in zip(results, adj, strict=True)]


# --------------------------------------------------------------------------- simulation


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
