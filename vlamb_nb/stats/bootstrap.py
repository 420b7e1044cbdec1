"""The resampling engine: vectorized statistics, cluster bootstrap by count vectors, bootstrap CIs.

Own code: no library resamples clusters through count vectors. Library: scipy ``norm`` for the
BCa correction; pandas ``factorize`` to code per-item columns.

How the bootstrap is fast and exact
-----------------------------------
A resample is described by *how many times each item is drawn* (a count vector), never by a
list of indices. Items that look identical to the statistic (same values, same gold label,
...) are merged into one "atom"; clusters with the same multiset of atoms are merged into one
"signature". Drawing ``C`` clusters with replacement is then one multinomial draw over the
signatures, which has exactly the distribution of the textbook resample but costs
``O(#signatures)`` instead of ``O(#items)`` per resample. With 0/1 correctness this turns 10,000
resamples of 6,027 items into a few thousand random numbers. A mean of values that barely
repeat (continuous scores) has nothing to merge; it is resampled by index gathering
(:mod:`.gather`).

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

Determinism: every function takes ``seed`` and draws from ``numpy.random.default_rng(seed)``; the draws for
callers that keep their own statistic (the end of this module) also take the caller's generator, so that what
the caller drew before and after stays the same.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vlamb_nb.errors import DataError, SettingError
from vlamb_nb.stats.gather import resample_means
from vlamb_nb.stats.result import NAN, Result

_CHUNK_ELEMENTS = 2_000_000  # bound on the (chunk x atoms) matrices held at once
_GATHER_ATOM_SHARE = 32  # gather when atoms > n / 32: a multinomial draw costs ~30x an index per atom
_MULTINOMIAL_SHARE = 16  # multinomial over S signatures when S <= C / 16, else count C cluster draws


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
    ``benchmarks.vflute.score.adjusted_predictions``.
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
        present = None if fixed is None else True  # fixed labels: every class counts, present or not
        return macro_f1_from_counts(cnt[:, :k], cnt[:, k:2 * k], cnt[:, 2 * k:], present)

    return Statistic(fn, {"y_true": np.asarray(y_true)}, "macro_f1")


def macro_f1_from_counts(tp: Any, n_true: Any, n_pred: Any, present: Any = None) -> np.ndarray:
    """Macro-F1 from per-class counts, classes on the last axis (any leading axes: resamples, thresholds).

    F1 of a class is ``2 TP / (n_true + n_pred)``, 0 when the class is neither gold nor predicted;
    the mean runs over ``present`` classes, by default those in gold ∪ predictions (scikit-learn's
    ``f1_score(average="macro")``, the rule behind V-FLUTE's NYCartoons cap); NaN where none is.
    """
    tp = np.asarray(tp, dtype=float)
    denom = np.asarray(n_true, dtype=float) + np.asarray(n_pred, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(denom > 0, 2 * tp / np.where(denom > 0, denom, 1), 0.0)
        keep = denom > 0 if present is None else np.broadcast_to(np.asarray(present, dtype=bool), denom.shape)
        return (f1 * keep).sum(axis=-1) / keep.sum(axis=-1)


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
    indices and gathering (:func:`.gather.resample_means`) beats a multinomial over the atoms
    (~100 ns per atom per resample against a few ns per item).
    """
    if (mean_of is not None and design.cluster_items is None and design.n_atoms > 16
            and _GATHER_ATOM_SHARE * design.n_atoms > design.n):
        return resample_means(mean_of, n_resamples, rng)
    out = np.empty(n_resamples)
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
        return NAN, NAN, method
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


def _loop_draws(design: _Design, rng: np.random.Generator, n_resamples: int) -> Iterator[np.ndarray]:
    """Each resample's item indices in turn: ``n`` item draws, or ``C`` cluster draws with the drawn clusters'
    items laid end to end. Drawn a chunk of resamples per ``Generator.integers`` call, which gives the numbers
    one call per resample would."""
    whole = design.cluster_items is None
    k = design.n if whole else design.n_clusters
    if not whole:
        flat = np.concatenate(design.cluster_items)
        sizes = np.array([len(c) for c in design.cluster_items])
        starts = np.cumsum(sizes) - sizes
    step = max(1, _CHUNK_ELEMENTS // k)
    for start in range(0, n_resamples, step):
        for picks in rng.integers(0, k, size=(min(step, n_resamples - start), k)):
            if whole:
                yield picks
                continue
            lens = sizes[picks]
            ends = np.cumsum(lens)
            yield flat[np.repeat(starts[picks] - ends + lens, lens) + np.arange(ends[-1])]


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
        boot = np.array([fn(idx) for idx in _loop_draws(design, rng, n_resamples)])
        jack = _loop_jackknife(design, fn) if method == "bca" else None
        label = getattr(stat, "__name__", "statistic")
    lo, hi, used = _interval(boot, estimate, alpha, method, jack)
    return Result(estimate, lo, hi, NAN, n, _method_name(f"bootstrap {used}", clusters,
                                                          isinstance(stat, Statistic)),
                  seed, name or label, alpha, {"n_resamples": n_resamples, "n_clusters": design.n_clusters,
                                               "statistic": label})


def _check_n(n_resamples: int, alpha: float) -> None:
    if not isinstance(n_resamples, int | np.integer) or n_resamples < 1:
        raise SettingError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    if not 0 < alpha < 1:
        raise SettingError(f"alpha must be in (0, 1), got {alpha!r}")


# --------------------------------------------------------------------------- count draws for callers' statistics
# The engine above merges items and draws its own random numbers. The functions below serve callers that keep
# their own statistic (a rank among models, a ratio of sums, a difference of two groups' means) and name the
# draws themselves, so a published interval stays the same number when its caller moves here.


def as_generator(seed: int | np.random.Generator | None) -> np.random.Generator:
    """``seed`` as a generator: a caller that draws several things from one stream passes the stream itself."""
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def resample_counts(n_units: int, n_resamples: int, rng: np.random.Generator, *,
                    draw: str = "multinomial") -> np.ndarray:
    """(n_resamples, n_units) how often each unit (an item, or a cluster drawn whole) is drawn in each resample.

    Both schemes are the textbook resample of ``n_units`` draws with replacement; they differ only in the random
    numbers used: ``"multinomial"``, one ``Generator.multinomial`` row per resample; ``"indices"``,
    ``n_units`` uniform indices per resample from one ``Generator.integers`` call, counted (the same numbers as
    drawing each resample's indices in turn).
    """
    if n_units < 1:
        raise DataError("no units to resample")
    if draw == "multinomial":
        return rng.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=n_resamples).astype(np.float64)
    if draw != "indices":
        raise SettingError(f"unknown draw {draw!r}; use 'multinomial' or 'indices'")
    out = np.empty((n_resamples, n_units))
    step = max(1, _CHUNK_ELEMENTS // n_units)
    for start in range(0, n_resamples, step):
        size = min(step, n_resamples - start)
        idx = rng.integers(0, n_units, size=(size, n_units)) + (np.arange(size) * n_units)[:, None]
        out[start:start + size] = np.bincount(idx.ravel(), minlength=size * n_units).reshape(size, n_units)
    return out


def resample_weights(n: int, clusters: Any = None, *, n_resamples: int = 2000, seed: int = 0) -> np.ndarray:
    """(n_resamples, n) row weights of a (cluster) bootstrap: how often each row is drawn in each resample.

    Clusters (images, pairs) are drawn whole (multinomial over the clusters in order of first appearance), so
    rows that share one are never treated as independent. Every statistic evaluated on the same weights sees
    the same resamples: that is what makes ranks paired (:mod:`.ranking`).
    """
    import pandas as pd

    rng = np.random.default_rng(seed)
    if clusters is None:
        return resample_counts(n, n_resamples, rng)
    codes, _ = pd.factorize(pd.Series(list(clusters), dtype=object))
    counts = resample_counts(int(codes.max()) + 1, n_resamples, rng)
    return counts[:, np.asarray(codes)]


def ratio_ci(numerator: Any, denominator: Any, clusters: Any = None, *, n_resamples: int = 2000,
             seed: int | np.random.Generator = 0, alpha: float = 0.05, min_defined: float = 0.9,
             name: str = "") -> Result:
    """``sum(numerator) / sum(denominator)`` with a (cluster) bootstrap percentile interval.

    Clusters (one id per item; default: every item its own) are drawn whole, ``draw="indices"`` over their ids
    as sorted text. A resample whose denominator sums to 0 has no ratio; with fewer than ``min_defined`` of the
    resamples defined the interval is NaN. The estimate is inf when only the denominator is 0, NaN when both are.
    Cluster sums are added per resample, exact for counts (0/1 items).
    """
    num = _check_values(numerator, "numerator", numeric=True).astype(float)
    den = _check_values(denominator, "denominator", numeric=True).astype(float)
    if len(num) != len(den):
        raise DataError(f"numerator and denominator need the same items: {len(num)} vs {len(den)}")
    _check_n(n_resamples, alpha)
    rng = as_generator(seed)
    top, bottom = num.sum(), den.sum()
    estimate = top / bottom if bottom else (float("inf") if top else NAN)
    cl = np.arange(len(num)) if clusters is None else np.asarray(clusters)
    if len(cl) != len(num):
        raise DataError(f"expected one cluster per item ({len(num)}), got {len(cl)}", field="clusters")
    if len(num) == 0:
        return Result(estimate, NAN, NAN, NAN, 0, "bootstrap percentile cluster ratio", None, name, alpha)
    uniq, inv = np.unique(cl.astype(str), return_inverse=True)
    counts = resample_counts(len(uniq), n_resamples, rng, draw="indices")
    with np.errstate(divide="ignore", invalid="ignore"):
        boot = (counts @ np.bincount(inv, weights=num, minlength=len(uniq))) / \
            (counts @ np.bincount(inv, weights=den, minlength=len(uniq)))
    boot = boot[np.isfinite(boot)]
    lo, hi = (np.quantile(boot, [alpha / 2, 1 - alpha / 2]) if len(boot) >= min_defined * n_resamples
              else (NAN, NAN))
    return Result(float(estimate), float(lo), float(hi), NAN, len(num), "bootstrap percentile cluster ratio",
                  seed if isinstance(seed, int) else None, name, alpha,
                  {"n_resamples": n_resamples, "n_defined": int(len(boot)), "n_clusters": int(len(uniq))})


def two_sample_ci(values: Any, first: Any, *, n_resamples: int = 2000, seed: int | np.random.Generator = 0,
                  alpha: float = 0.05, name: str = "") -> Result:
    """Difference of two groups' means (``first`` against the rest) with a stratified bootstrap percentile CI.

    The groups hold different items, so nothing pairs them: each resample draws each group's items within
    that group (the first group's indices, then the second's, as ``Generator.choice`` draws them, for every
    resample from one ``Generator.integers`` call). Both groups need items.
    """
    vals = _check_values(values, "values", numeric=True).astype(float)
    ok = np.asarray(first, dtype=bool)
    if ok.shape != vals.shape:
        raise DataError(f"expected one group flag per value ({len(vals)}), got shape {ok.shape}", field="first")
    ic, iw = np.flatnonzero(ok), np.flatnonzero(~ok)
    if not len(ic) or not len(iw):
        raise DataError("both groups need items to compare their means", field="first")
    _check_n(n_resamples, alpha)
    rng = as_generator(seed)
    highs = np.concatenate([np.full(len(ic), len(ic)), np.full(len(iw), len(iw))])
    boot = np.empty(n_resamples)
    step = max(1, _CHUNK_ELEMENTS // len(vals))
    for start in range(0, n_resamples, step):
        size = min(step, n_resamples - start)
        draws = rng.integers(0, np.tile(highs, size)).reshape(size, len(vals))
        boot[start:start + size] = (vals[ic[draws[:, :len(ic)]]].mean(axis=1)
                                    - vals[iw[draws[:, len(ic):]]].mean(axis=1))
    gap = float(vals[ok].mean() - vals[~ok].mean())
    lo, hi = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
    return Result(gap, float(lo), float(hi), NAN, len(vals), "stratified bootstrap percentile",
                  seed if isinstance(seed, int) else None, name, alpha,
                  {"n_resamples": n_resamples, "n_first": int(len(ic)), "n_second": int(len(iw))})
