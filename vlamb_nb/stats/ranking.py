"""Ranking one model among the published ones: the engine behind the report card's ranks.

A :class:`Headline` is one headline number of one paper with its :class:`Comparator` models. Where per-item data
exist for a comparator, ours and theirs are resampled together (:func:`~.bootstrap.resample_weights`: the same rows
in every resample) and the rank interval is the middle 95% of our rank over the resamples (:func:`place`); where only a
published value exists, it is drawn from its binomial at the published test size (:func:`published_draws`) and
its interval is Wilson (:func:`~vlamb_nb.stats.proportions.wilson_from_percent`). It sits with the statistics so
that every paper's ``score.py`` can rank its headline without importing the card, which imports the papers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from vlamb_nb.stats.bootstrap import resample_weights
from vlamb_nb.stats.proportions import wilson_from_percent

#: percentiles of a rank interval
RANK_LEVEL = 0.95
N_RESAMPLES = 2000


@dataclass
class Comparator:
    """A model the paper tested (or a released run), on the same metric and slice as ours."""

    name: str
    value: float | None  # percent
    n: int | None = None  # test size behind the value (None: unknown, no interval)
    basis: str = "published"  # "per-item": its released rows, resampled with ours; "published": value and n only
    source: str = ""  # table id or file
    ci_low: float | None = None
    ci_high: float | None = None
    bound: str = ""  # ">" or "<" when the paper gives only a bound (e.g. ">79")
    diff: float | None = None  # ours − this, percentage points (per-item comparators)
    p: float | None = None  # paired test of ours vs this (McNemar), per-item comparators
    p_holm: float | None = None


@dataclass
class Headline:
    """One headline number of one paper for the report card."""

    paper: str
    metric: str
    slice: str
    value: float | None  # percent
    ci_low: float | None = None
    ci_high: float | None = None
    n: int | None = None
    unit: str = "item"  # what n counts (item, pair, query, response, row)
    ci_unit: str = ""  # what the interval resamples (item, pair, image); empty: the same as unit
    higher_is_better: bool = True
    setting: str = ""
    comparators: list[Comparator] = field(default_factory=list)
    rank: int | None = None  # 1 = best, among the comparators with a value and ours
    rank_low: int | None = None
    rank_high: int | None = None
    n_ranked: int | None = None
    rank_basis: str = ""
    note: str = ""
    model: str = ""
    profile: str = ""
    deviations: list[str] = field(default_factory=list)
    status: str = "ok"  # ok | not run | failed | no data
    #: the data the row stands on (:class:`~vlamb_nb.datahome.DataIdentity` as a dict, with ``n_run`` items asked)
    data: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return _clean(asdict(self))


def _clean(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_clean(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, np.generic):
        return _clean(v.item())
    return v


def from_dict(d: dict[str, Any]) -> Headline:
    d = dict(d)
    d["comparators"] = [Comparator(**c) for c in d.get("comparators") or []]
    known = set(Headline.__dataclass_fields__)
    return Headline(**{k: v for k, v in d.items() if k in known})


# -- resampling: ours and the per-item comparators on the same resamples (:func:`~.bootstrap.resample_weights`) --
def weighted_mean(x: Any) -> Callable[[np.ndarray], np.ndarray]:
    """A statistic over resample weights: the weighted mean of ``x`` in percent (NaN-free 0/1 or scores)."""
    x = np.asarray(x, dtype=float)

    def stat(w: np.ndarray) -> np.ndarray:
        tot = w.sum(axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return 100.0 * (w @ x) / tot
    return stat


def interval(draws: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    d = np.asarray(draws, dtype=float)
    d = d[np.isfinite(d)]
    if not len(d):
        return math.nan, math.nan
    lo, hi = np.percentile(d, [50 * (1 - level), 100 - 50 * (1 - level)])
    return float(lo), float(hi)


def published_draws(value: float, n: int | None, *, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """A published percentage's own sampling uncertainty: binomial at its test size (constant when n is unknown)."""
    if n is None or not n or value is None or not math.isfinite(value):
        return np.full(n_resamples, value if value is not None else math.nan, dtype=float)
    p = min(max(float(value) / 100.0, 0.0), 1.0)
    return 100.0 * rng.binomial(int(n), p, size=n_resamples) / int(n)


def published_interval(value: float | None, n: int | None, alpha: float = 0.05) -> tuple[float | None, float | None]:
    """A published percentage's Wilson interval at its test size, in percent (None where n or the value is not
    known): :func:`~vlamb_nb.stats.proportions.wilson_from_percent` in the card's units."""
    if n is None or not n or value is None:
        return None, None
    r = wilson_from_percent(float(value), int(n), alpha)
    return 100.0 * r.ci_low, 100.0 * r.ci_high


def rank_of(ours: np.ndarray, others: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """Our rank (1 = best) per resample: 1 + how many comparators are strictly better in that resample."""
    sign = 1.0 if higher_is_better else -1.0
    if others.size == 0:
        return np.ones_like(ours)
    better = sign * (others - ours[None, :]) > 0
    return 1 + better.sum(axis=0)


def ranks(draws: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """Every model's rank per resample, (models, resamples): each one's :func:`rank_of` among the rest, so a
    comparison of many models ranks by the card's rule (1 = best, a tie shares the better rank)."""
    d = np.asarray(draws, dtype=float)
    out = np.empty(d.shape, dtype=np.int64)
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf is NaN: not better, as ``>`` says
        for i in range(len(d)):
            out[i] = rank_of(d[i], np.delete(d, i, axis=0), higher_is_better)
    return out


def place(h: Headline, ours_draws: np.ndarray, comparator_draws: Sequence[np.ndarray], *,
          basis: str) -> Headline:
    """Fill ``h``'s rank, rank interval and the number ranked from draws of ours and of each comparator (the
    same length; aligned draw by draw where they come from the same resamples)."""
    ranked = [(c, d) for c, d in zip(h.comparators, comparator_draws, strict=True)
              if c.value is not None and math.isfinite(c.value)]
    if h.value is None or not math.isfinite(h.value):
        return h
    vals = np.array([c.value for c, _ in ranked], dtype=float)
    sign = 1.0 if h.higher_is_better else -1.0
    h.rank = int(1 + (sign * (vals - h.value) > 0).sum())
    ours = np.asarray(ours_draws, float)
    others = np.vstack([d for _, d in ranked]) if ranked else np.empty((0, len(ours)))
    ok = np.isfinite(ours) & np.isfinite(others).all(axis=0)  # a resample without a row of this slice: skipped
    if not ok.any():
        return h
    ranks = rank_of(ours[ok], others[:, ok], h.higher_is_better)
    lo, hi = np.percentile(ranks, [50 * (1 - RANK_LEVEL), 100 - 50 * (1 - RANK_LEVEL)])
    h.rank_low, h.rank_high = int(math.floor(lo)), int(math.ceil(hi))
    h.n_ranked = len(ranked) + 1
    h.rank_basis = basis
    return h


def published(paper: str, table: str, column: str, *, n: int | None, exclude: Iterable[str] = (),
              rows: Iterable[str] | None = None, cells: Any = None) -> list[Comparator]:
    """The paper's published values of one column as comparators (reference data, with the table id); a cell
    printed as a bound (``>79``) becomes a comparator with ``bound`` set, drawn at the bound. ``cells``: the
    table's reference cells when the caller has them (a paper whose numbers live in its own folder)."""
    import re

    if cells is None:
        from vlamb_nb import reference

        cells = reference.load(paper, table)
    df = cells
    df = df[df["column"] == column]
    keep = set(rows) if rows is not None else None
    out = []
    for _, r in df.iterrows():
        if r["row"] in set(exclude) or (keep is not None and r["row"] not in keep):
            continue
        value, bound = r["value_num"], ""
        if not math.isfinite(value):
            m = re.fullmatch(r"\s*([<>])\s*([\d.]+)\s*%?\s*", str(r["value"]))
            if not m:
                continue
            bound, value = m.group(1), float(m.group(2))
        out.append(Comparator(name=str(r["row"]), value=float(value), n=n, source=f"{paper} {table}", bound=bound))
    return out


def headline_among_published(*, paper: str, metric: str, slice: str, stat: Callable[[np.ndarray], np.ndarray],
                             n_rows: int, clusters: Any = None, published: Iterable[Comparator],
                             unit: str = "item", ci_unit: str = "", higher_is_better: bool = True,
                             setting: str = "", n: int | None = None, n_resamples: int = N_RESAMPLES, seed: int = 0,
                             note: str = "", interval: Callable[[np.ndarray], tuple[float, float, str]] | None = None
                             ) -> Headline:
    """A headline whose comparators are published values only: ours by (cluster) bootstrap, each published value
    from its binomial at its test size, drawn independently. ``interval``: ours from the draws (the declared
    metric's one rule, :meth:`~vlamb_nb.stats.metric.Metric.interval`), else their percentile interval."""
    w = resample_weights(n_rows, clusters, n_resamples=n_resamples, seed=seed)
    point = float(stat(np.ones((1, n_rows)))[0])
    draws = stat(w)
    lo, hi, how = interval(draws) if interval is not None else (*_percentile(draws), "")
    comps = []
    rng = np.random.default_rng(seed + 1)
    cdraws = []
    for c in published:
        if c.ci_low is None and c.n:
            c.ci_low, c.ci_high = published_interval(c.value, c.n)
        comps.append(c)
        cdraws.append(published_draws(c.value, c.n, n_resamples=n_resamples, rng=rng))
    h = Headline(paper=paper, metric=metric, slice=slice, value=point, ci_low=lo, ci_high=hi,
                 n=n if n is not None else n_rows, unit=unit, ci_unit=ci_unit or unit,
                 higher_is_better=higher_is_better, setting=setting, comparators=comps, note=note)
    return place(h, draws, cdraws, basis=f"ours: {how or 'bootstrap over ' + plural(ci_unit or unit)} (ranks: "
                                         f"bootstrap over {plural(ci_unit or unit)}); published: binomial at their "
                                         "test size")


def _percentile(draws: np.ndarray) -> tuple[float, float]:
    return interval(draws)


def plural(unit: str) -> str:
    return {"query": "queries"}.get(unit, unit + "s")
