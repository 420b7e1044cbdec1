"""Several runs of one paper on the units all of them answered: each declared metric's per-unit values, aligned
(from a run record's unit sets or a scored frame's), and the paired difference of two runs with its interval and
test. What ``compare`` ranks many models with, and what every paper's ``compare_runs`` step pairs two runs with;
below the paper registry, so a paper's base can use it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vlamb_nb.errors import DataError, SettingError


@dataclass
class _Side:
    """One of two runs being paired, as its run record (``compare``'s runs carry more: items, data)."""

    model: str
    paper: str
    setting: str
    record: Any
    origin: str = ""


@dataclass
class Scores:
    """One declared metric on the common items, on one slice: every run's per-unit values in the same order."""

    metric: Any  # the paper's declared :class:`~vlamb_nb.stats.metric.Metric`
    slice: str
    values: list[np.ndarray]
    clusters: np.ndarray | None = None
    ci_unit: str = ""
    gold: np.ndarray | None = None
    #: each unit's key, in the values' order (given where the values come from unit sets: a page finds each
    #: unit's rows by it), and a metric over groups' items of each group
    keys: tuple[str, ...] = ()
    members: tuple[tuple[str, ...], ...] | None = None

    def interval(self, i: int, draws: np.ndarray | None = None) -> tuple[float, float]:
        """Run ``i``'s value interval on these units (percent): the metric's one rule
        (:meth:`~vlamb_nb.stats.metric.Metric.interval`, with the record's resamples), as its record and card give
        it; ``draws`` (the comparison's, which its ranks use) are not what the interval is read from."""
        from vlamb_nb.stats.metric import Units

        v = self.values[i]
        units = Units(metric=self.metric.name, slice=self.slice, keys=self.keys, values=tuple(float(x) for x in v),
                      gold=None if self.gold is None else tuple(int(g) for g in self.gold),
                      clusters=None if self.clusters is None else tuple(str(c) for c in self.clusters),
                      ci_unit=self.ci_unit)
        lo, hi, _ = self.metric.interval(units)  # the record's draws, not the comparison's: one interval per number
        return lo, hi

    @property
    def kind(self) -> str:
        """How a difference is tested: ``binary`` (0/1 per unit: McNemar) or the metric's own kind."""
        return self.metric.paired_kind


def failed(df: Any) -> np.ndarray:
    """Rows whose generation failed: they count as wrong, as in the papers."""
    if "error" not in df.columns:
        return np.zeros(len(df), dtype=bool)
    return np.array([isinstance(e, str) and bool(e.strip()) for e in df["error"]], dtype=bool)


def answered(metric: Any, run: Any) -> Any:
    """The scored rows of items this run answered (a stored run holds only the items it was asked) that the
    metric covers, keyed by item; a run none of whose items has an answer is refused."""
    df = run.scored.copy()
    bad = failed(df)
    if not len(df) or bool(bad.all()):
        why = ""
        if len(df):
            errors = [str(e).strip().splitlines()[0] for e in df.loc[bad, "error"]]
            why = f" (most often: {max(set(errors), key=errors.count)[:160]})"
        where = f" from {Path(run.origin).name}" if run.origin else ""
        raise DataError(f"{run.model}{where} has no answers in {run.paper} {run.setting}: "
                        + (f"every one of its {len(df)} items failed{why}" if len(df) else
                           "none of its records answers an item of the data given")
                        + "; leave it out or run it again")
    df = metric.rows(df)
    try:
        key = metric.item_key(df)
    except DataError as e:
        raise DataError(f"{run.paper}: {e}", source=run.origin or None) from None
    df = df.assign(_key=key.to_numpy())
    return df.drop_duplicates("_key").set_index("_key", drop=False)


def run_units(metrics: list[Any], run: Any) -> dict[str, Any]:
    """Each metric's unit sets of one run, from its record."""
    return {m.name: run.record.unit_sets(m.name) for m in metrics}


def covered(metrics: list[Any], table: dict[str, Any]) -> set[str]:
    """The items a run's unit sets cover (a group's items for a metric over groups)."""
    out: set[str] = set()
    for m in metrics:
        whole = next((u for u in table[m.name] or () if u.whole), None)
        if whole is not None:
            out |= {k for ks in whole.members for k in ks} if whole.members is not None else set(whole.keys)
    return out


def _answered_keys(run: Any) -> set[str]:
    """The items a run answered by their unit key, from its record's rows: where none of the metrics has values
    in it (answers awaiting judge labels), so it still meets the other runs and the metric is said not compared."""
    return set(run.record.keyed_rows())


def common_units(metrics: list[Any], runs: list[Any]) -> tuple[dict[str, list[Scores]], dict[str, int], int]:
    """Every metric's values on the items all runs answered, from the runs' records, in one order: overall, then
    the first run's slices. A metric some run has no values of is left out; one over groups keeps the groups
    every run answered whole."""
    tables = [run_units(metrics, r) for r in runs]
    items = [covered(metrics, t) if any(t.values()) else _answered_keys(r) for r, t in zip(runs, tables, strict=True)]
    keys = set.intersection(*items) if items else set()
    for m in metrics:
        if not m.grouped or not keys:
            continue
        union: dict[str, set[str]] = {}
        for t in tables:
            whole = next((u for u in t[m.name] or () if u.whole), None)
            for g, ks in zip(whole.keys, whole.members or (), strict=False) if whole is not None else ():
                union.setdefault(g, set()).update(ks)
        keys = {k for g, ks in union.items() if ks <= keys for k in ks}
    order = sorted(keys, key=lambda k: (len(k), k))
    dropped = {r.model: int(len(i) - len(keys)) for r, i in zip(runs, items, strict=True)}
    scores: dict[str, list[Scores]] = {}
    for m in metrics:
        first = tables[0][m.name]
        if not all(t[m.name] for t in tables):
            continue
        wholes = [{u.keys[i]: u.values[i] for i in range(len(u.keys))}
                  for t in tables for u in t[m.name] if u.whole]
        out = []
        for s_ in [u for u in first if u.whole] + ([u for u in first if not u.whole] if m.compare_slices else []):
            at = {k: i for i, k in enumerate(s_.keys)}
            if m.grouped:  # the groups whose items are all common, in the run's unit order
                mine = [k for k, ks in zip(s_.keys, s_.members or [()] * len(s_.keys), strict=True)
                        if ks and set(ks) <= keys]
            else:
                mine = [k for k in order if k in at]
            if not mine and not s_.whole:
                continue
            idx = [at[k] for k in mine]
            values = [np.array([w.get(k, np.nan) for k in mine], dtype=float) for w in wholes]
            clusters = None if s_.clusters is None else np.asarray([s_.clusters[i] for i in idx], dtype=object)
            gold = None if s_.gold is None else np.asarray([s_.gold[i] for i in idx], dtype=int)
            members = None if s_.members is None else tuple(s_.members[i] for i in idx)
            out.append(Scores(m, s_.slice, values, clusters, s_.ci_unit if clusters is not None else "", gold,
                              tuple(mine), members))
        scores[m.name] = out
    return scores, dropped, len(order)


def unit_values(metric: Any, runs: dict[str, Any]) -> tuple[dict[str, dict[str, float]], dict[str, Any], Any]:
    """Each run's per-unit values of one metric by unit key (``{run: {key: value}}``), the cluster of each key
    where the metric resamples clusters, and the first run's covered rows by key (the units' own columns): what
    an analysis over many runs of the same items (agreement, an item-response fit) starts from."""
    values: dict[str, dict[str, float]] = {}
    clusters: dict[str, Any] = {}
    first = None
    for name, scored in runs.items():
        rows = metric.rows(scored)
        keys = metric.item_key(rows).to_numpy()
        values[name] = dict(zip(keys, metric.units(rows).to_numpy(float), strict=True))
        c = metric.clusters(rows)
        if c is not None:
            clusters.update(zip(keys, c, strict=True))
        if first is None:
            first = rows.assign(key=keys).drop_duplicates("key").set_index("key")
    return values, clusters, first


def weighted(scores: Scores, values: np.ndarray):
    """The metric's aggregate over resample weights (percent): its kind's one aggregation."""
    return scores.metric.statistic(values, scores.gold)


def pair_test(scores: Scores, a: np.ndarray, b: np.ndarray, *, n_resamples: int, seed: int) -> dict[str, Any]:
    """The paired difference a − b (percentage points) with its interval, and the test for the metric's kind."""
    from vlamb_nb import stats

    statistic = scores.metric.paired_statistic(scores.gold)
    boot = stats.paired_bootstrap(a.astype(int) if statistic is not None else a,
                                  b.astype(int) if statistic is not None else b, statistic,
                                  n_resamples=n_resamples, seed=seed, clusters=scores.clusters)
    out = {"diff": 100.0 * boot.estimate, "ci_low": 100.0 * boot.ci_low, "ci_high": 100.0 * boot.ci_high,
           "ci_method": boot.method}
    if scores.metric.zero_one:
        mc = stats.mcnemar(a, b)
        out.update(p=float(mc.p), test=mc.method, discordant_a_only=int(mc.extra["discordant_a_only"]),
                   discordant_b_only=int(mc.extra["discordant_b_only"]))
    else:
        out.update(p=float(boot.p), test=boot.method, discordant_a_only=None, discordant_b_only=None)
    return out


def paired_runs(paper: str, metrics: Sequence[Any], a: Any, b: Any, *, n_resamples: int = 2000, seed: int = 0,
                same_items: bool = False):
    """Two scored runs of one paper, any models and any settings (a prompt ablation, a quantization), on the
    units both answered: each metric's (the paper's declared ones, or ``metrics``) values ``a`` and ``b``, the
    paired difference a − b with its interval (whole clusters resampled, as ``compare`` does) and its test
    (McNemar for 0/1 units, else the paired bootstrap), overall then by slice where the metric compares slices.
    Units only one run answered are dropped and counted (``dropped_a``, ``dropped_b``); ``same_items``: refuse
    instead. Runs scored against different gold are refused. What each paper's ``compare_runs`` step gives."""
    import pandas as pd

    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 1:
        raise SettingError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    rows = []
    for m, sc, k, dropped in paired_scores(paper, metrics, a, b, same_items=same_items):
        t = pair_test(sc, sc.values[0], sc.values[1], n_resamples=n_resamples, seed=seed + k)
        va, vb = (float(weighted(sc, v)(np.ones((1, len(v))))[0]) for v in sc.values)
        rows.append({"metric": m.name, "slice": sc.slice, "a": va, "b": vb, **t, "n": len(sc.values[0]),
                     "unit": m.unit, "ci_unit": sc.ci_unit or m.unit,
                     "dropped_a": dropped["a"], "dropped_b": dropped["b"]})
    return pd.DataFrame(rows)


def paired_scores(paper: str, metrics: Sequence[Any], a: Any, b: Any, *, same_items: bool = False):
    """Two scored runs' per-unit values of each metric, aligned on the units both answered, overall then by slice:
    ``(metric, Scores, seed offset, dropped)`` for each (what :func:`paired_runs` tests, and an equivalence test
    or a list of the items that flip reads). ``a``, ``b``: run records (a benchmark's ``recorded`` gives them).
    Runs scored against different gold are refused."""
    chosen = list(metrics)
    if not chosen:
        raise SettingError(f"{paper} declares no per-item metric to compare runs on")
    runs = [_Side(name, paper, rec.setting, rec) for name, rec in (("a", a), ("b", b))]
    groups: dict[int, list[Any]] = {}
    for m in chosen:
        groups.setdefault(id(m.where), []).append(m)
    for j, ms in enumerate(groups.values()):
        units, dropped, n_common = common_units(ms, runs)
        if same_items and any(dropped.values()):
            raise DataError(f"a paired comparison needs both runs on the same items: {dropped['a']} only in A, "
                            f"{dropped['b']} only in B")
        if not n_common:
            raise DataError(f"the two runs share no item of {paper}; nothing to compare")
        for m in ms:
            for k, sc in enumerate(units.get(m.name, ())):
                if not len(sc.values[0]):
                    continue
                if sc.gold is not None:
                    same_gold(m, runs, sc)
                yield m, sc, 10 * j + k, dropped


def same_gold(metric: Any, runs: list[Any], sc: Scores) -> None:
    """Both runs' gold labels agree on the units compared (else they were scored against different data)."""
    golds = []
    for r in runs:
        whole = next((u for u in r.record.unit_sets(metric.name) or () if u.whole), None)
        golds.append(dict(zip(whole.keys, whole.gold or (), strict=False)) if whole is not None else {})
    if any(golds[0].get(k) != golds[1].get(k) for k in sc.keys):
        raise DataError(f"the two runs disagree on {metric.name}'s gold labels: they were scored against "
                        "different data")
