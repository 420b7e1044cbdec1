"""A paper's headline metrics, declared once as data: the report card, sweep summaries and ``compare`` read them.

As in lm-evaluation-harness's ``metric_list`` (a metric's name, its aggregation, whether higher is better), each
paper's ``score.py`` lists its :class:`Metric` s and its benchmark exposes them as ``metrics``. A declaration
says what a number is made of — the per-item column (or the rule that derives a value from it), the kind of
aggregate, the unit it counts and the unit its intervals resample, the item key, which rows it covers and its
slices — and where it stands on the card (:class:`OnCard`: the published table it is ranked in). Everything
a paper knows about its headline lives in that declaration, so the card (:func:`headlines`), a sweep's summary
(:func:`summary`) and the paired comparison (:mod:`vlamb_nb.compare`) compute the same number the same way,
and none of them names a paper.

One parameterised aggregation per kind, never one function per threshold or class:

- ``binary``: 0/1 per item (a truthy column, or ``column >= threshold``: Ref-Adv's Acc@0.5); missing counts 0;
- ``all_correct``: 0/1 per ``group`` (MUCAR's Acc_p: a pair counts when every query of it is right);
- ``share``: the share of items whose ``column`` equals ``value`` (RACQUET's class shares; unlabelled items stay
  in the denominator);
- ``mean``: the mean of a continuous ``column`` (V-FLUTE's explanation score);
- ``macro_f1``: macro-F1 of binary predictions in ``column`` against ``gold``; with a ``support`` column a
  prediction stands only where its support exceeds ``threshold`` (V-FLUTE's F1@t: the explanation score).

What a kind means to the code that reads its values is asked of the metric, never read from the kind's name
elsewhere: whether a unit is a group of rows (:attr:`Metric.grouped`, :meth:`Metric.row_groups`), whether a unit's
value is a 0/1 outcome (:attr:`Metric.zero_one`, :attr:`Metric.paired_kind`), how a threshold decides an item
(:meth:`Metric.threshold_rule`), and, for a run record that keeps only the kind, :func:`units_are_zero_one` and
:func:`units_need_gold`; so a new kind is added in this module alone.

Every aggregate is a statistic over resample weights (:func:`~vlamb_nb.stats.ranking.resample_weights`), in
percent, so a point value, a bootstrap interval and a rank over the same resamples come from one function.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from vlamb_nb.errors import DataError

Kind = Literal["binary", "all_correct", "share", "mean", "macro_f1"]
#: the resamples and seed of every value's interval (:meth:`Metric.interval`): the run record's, so the card and
#: ``compare`` give the record's interval for the same units
INTERVAL_RESAMPLES, INTERVAL_SEED = 1000, 0

KINDS: tuple[str, ...] = ("binary", "all_correct", "share", "mean", "macro_f1")
#: kinds whose per-unit values are 0/1 outcomes (a paired difference is tested with McNemar)
ZERO_ONE: tuple[str, ...] = ("binary", "all_correct")
#: kinds whose per-unit values are 0 or 1 numbers: an outcome, a class counted, a predicted label
ZERO_ONE_VALUES: tuple[str, ...] = ("binary", "all_correct", "share", "macro_f1")


def units_are_zero_one(kind: str) -> bool:
    """Whether a kind's per-unit values are all 0 or 1 (an outcome, a class counted, a predicted label): what a run
    record, which keeps a metric's kind and not its declaration, checks its stored unit sets against."""
    return kind in ZERO_ONE_VALUES


def units_need_gold(kind: str) -> bool:
    """Whether a kind's unit sets carry each unit's gold label (macro-F1 scores predictions against it): what a
    run record checks its stored unit sets for."""
    return kind == "macro_f1"


@dataclass(frozen=True)
class Published:
    """Where the paper prints a metric: the reference table, the column of each slice, and its test size.

    ``columns`` maps a slice (the metric's ``overall`` name or a slice name) to the table's column; a column may
    name the setting (``"VCR {SETTING}"``). The card ranks ours among the table's rows in that column.
    """

    table: str
    columns: Mapping[str, str]
    #: the test size behind every published value, or per slice
    n: int | Mapping[str, int] | None = None
    #: rows with a test size of their own (RACQUET's human annotators)
    n_of_row: Mapping[str, int] = field(default_factory=dict)

    def column(self, slice_name: str, setting: str) -> str:
        return self.columns[slice_name].format(setting=setting, SETTING=setting.upper())

    def size(self, slice_name: str) -> int | None:
        return self.n.get(slice_name) if isinstance(self.n, Mapping) else self.n


@dataclass(frozen=True)
class OnCard:
    """How a metric stands on the report card: the runs it reads, what each row is called, what it is ranked
    among. The row's seed is the card's seed + the setting's position in ``settings`` + ``seed`` (fixed, so a
    published card is reproduced exactly)."""

    published: Published | None = None
    #: the runs (``{setting: scored}`` keys) the card reads, in order; empty: the first run given
    settings: tuple[str, ...] = ()
    #: the setting a row names when the run's key is not one (RACQUET's hand-labelled BIAS answers are direct)
    setting: str = ""
    #: a row's slice label; ``{slice}``, ``{setting}`` and ``{SETTING}`` are filled in
    slice: str = "{slice}"
    #: the row's note; ``{n}`` (rows counted), ``{n_all}`` (rows of the run) and the run's first-row columns
    note: str = ""
    #: (status, note) of the one row a run gets when it has none of the metric's values (no judge labels)
    missing: tuple[str, str] | tuple[()] = ()
    seed: int = 0


@dataclass(frozen=True)
class Metric:
    """One headline metric of one paper, as data (see the module doc for the kinds)."""

    name: str
    kind: Kind = "binary"
    #: the per-item column: the correctness flag, the IoU, the predicted label, the class label, the score
    column: str = "correct"
    #: binary: an item counts when ``column >= threshold``; macro_f1: a prediction stands when support > threshold
    threshold: float | None = None
    #: share: the class counted
    value: Any = None
    #: macro_f1: the gold label column; and the column a prediction needs to exceed ``threshold`` in
    gold: str = ""
    support: str = ""
    #: what a value counts (item, query, pair, row, response); all_correct: the unit of ``group``
    unit: str = "item"
    #: all_correct: the column naming the unit all of whose rows must be right, and the column ordering units
    group: str = ""
    order: str = ""
    #: rows sharing a value of this column are resampled together (an image), called ``cluster_unit``
    cluster: str = ""
    cluster_unit: str = ""
    #: the columns naming an item across runs, the first one present wins
    key: tuple[str, ...] = ("item_id", "id")
    #: the rows the metric covers (RACQUET: the GENERAL subset; MUCAR: the paper's categories for the setting)
    where: Callable[[Any], Any] | None = None
    #: its slices: a column (one slice per value) or a function giving ``[(name, mask)]``
    slices: str | Callable[[Any], list[tuple[str, Any]]] | None = None
    #: the name of the whole (unsliced) set
    overall: str = "overall"
    higher_is_better: bool = True
    #: its place on the card (None: not a card row)
    card: OnCard | None = field(default_factory=OnCard)
    #: compared by ``compare``, and with its slices
    compare: bool = True
    compare_slices: bool = True

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown metric kind {self.kind!r}; one of {', '.join(KINDS)}")
        if self.grouped and not self.group:
            raise ValueError(f"{self.name}: an all_correct metric names its group column")
        if self.kind == "macro_f1" and not self.gold:
            raise ValueError(f"{self.name}: a macro_f1 metric names its gold column")
        if self.kind == "share" and self.value is None:
            raise ValueError(f"{self.name}: a share names the value it counts")

    # -- what the kind means to a view: the one place the kind names are read ------------------------------
    @property
    def grouped(self) -> bool:
        """A unit is a group of rows (a pair counts when every query of it is right), not one row: a view maps
        a unit back to all of its rows, and a comparison keeps only groups every run answered whole."""
        return self.kind == "all_correct"

    @property
    def zero_one(self) -> bool:
        """Each unit's value is a 0/1 outcome (right or wrong): a paired difference is tested with McNemar, an
        item's outcome on a page is read from it, and an item analysis can fit it."""
        return self.kind in ZERO_ONE

    @property
    def paired_kind(self) -> str:
        """How a paired difference of two runs is tested: ``binary`` for 0/1 outcomes (McNemar), else the
        metric's own kind (a paired bootstrap); what a comparison's pairs table names in its ``kind`` column."""
        return "binary" if self.zero_one else self.kind

    def row_groups(self, rows: Any) -> Any:
        """Each row's unit where a unit is a group of rows (its group label, as a string Series indexed like
        ``rows``); None where every row is a unit of its own."""
        return rows[self.group].astype(str) if self.grouped else None

    def counts_share_of(self, value: Any) -> bool:
        """Whether this metric is the share of items whose column holds ``value`` (one class's share)."""
        return self.kind == "share" and self.value == value

    def threshold_rule(self, column: str) -> str | None:
        """One line saying how a threshold decides one item (``column``: how the page names the per-item
        column): a 0/1 outcome is right from the threshold on (Acc@0.5), otherwise a prediction stands only
        where its support exceeds it (F1@t). None: no threshold decides an item."""
        if self.threshold is None:
            return None
        if self.kind == "binary":
            return f"{self.name}: right when the {column} is at least {self.threshold:g}"
        return f"{self.name}: a prediction stands where the {self.support or column} exceeds {self.threshold:g}"

    # -- rows ------------------------------------------------------------------------------------------
    def rows(self, scored: Any) -> Any:
        """The rows the metric covers."""
        if self.where is None:
            return scored
        return scored[np.asarray(self.where(scored), dtype=bool)]

    def has_values(self, rows: Any) -> bool:
        """Whether ``rows`` hold any of the metric's values (a run without judge labels holds none)."""
        need = [self.column] + ([self.gold] if self.gold else []) + ([self.support] if self.support else [])
        return all(c in rows.columns for c in need) and bool(rows[self.column].notna().any())

    def slice_masks(self, rows: Any) -> list[tuple[str, np.ndarray]]:
        """``[(name, mask)]`` of the declared slices (a column's values sorted), without the whole set."""
        if self.slices is None:
            return []
        if callable(self.slices):
            return [(str(n), np.asarray(m, dtype=bool)) for n, m in self.slices(rows)]
        if self.slices not in rows.columns:
            return []
        col = rows[self.slices].astype(str).to_numpy()
        return [(v, col == v) for v in sorted(set(col.tolist()))]

    def item_key(self, rows: Any) -> Any:
        for col in self.key:
            if col in rows.columns:
                return rows[col].astype(str)
        raise DataError(f"the scored run has none of the item id columns {', '.join(self.key)}")

    # -- per-unit values -------------------------------------------------------------------------------
    def units(self, rows: Any) -> Any:
        """The per-unit values as a Series (a row each, or a ``group`` each for all_correct), in the
        metric's natural scale (0/1, a share's 0/1, a score, a predicted label)."""
        import pandas as pd

        if self.grouped:
            s = rows.sort_values(self.order, kind="stable") if self.order and self.order in rows.columns else rows
            ok = pd.Series(_flags(s[self.column]), index=s.index)
            g = ok.groupby(s[self.group].astype(str).to_numpy(), sort=False)
            return (g.sum() == g.size()).astype(float)
        return pd.Series(self._row_values(rows), index=rows.index)

    def _row_values(self, rows: Any) -> np.ndarray:
        col = rows[self.column]
        if self.kind == "binary":
            if self.threshold is None:
                return _flags(col)
            return (col.astype(float).fillna(0.0).to_numpy() >= self.threshold).astype(float)
        if self.kind == "share":
            return (col == self.value).to_numpy(float)
        if self.kind == "mean":
            return col.to_numpy(float)
        gold = self.gold_values(rows)
        pred = col.to_numpy(int)
        if self.support:
            s = rows[self.support].to_numpy(float)
            if np.isnan(s).any():
                raise DataError(f"{self.name}: {self.support} contains missing values; score every item",
                                field=self.support)
            pred = supported(gold, pred, s, float(self.threshold or 0.0))
        return pred.astype(float)

    def gold_values(self, rows: Any) -> np.ndarray | None:
        if not units_need_gold(self.kind):
            return None
        gold = rows[self.gold].to_numpy(int)
        if not np.isin(gold, (0, 1)).all():
            raise DataError(f"{self.name}: gold labels must be 0/1", field=self.gold)
        return gold

    def clusters(self, rows: Any) -> np.ndarray | None:
        """Per-unit cluster labels (None: units are resampled alone). all_correct units are their own clusters."""
        if self.grouped or not self.cluster or self.cluster not in rows.columns:
            return None
        return rows[self.cluster].astype(str).to_numpy()

    def ci_unit(self, rows: Any) -> str:
        """What an interval resamples: the cluster unit where the run has the cluster column, else the unit."""
        return self.cluster_unit if self.clusters(rows) is not None else self.unit

    def unit_sets(self, scored: Any, *, masks: Sequence[tuple[str, Any]] | None = None,
                  slices: bool = True) -> list[Units] | None:
        """The metric's per-unit values on the whole set and each slice of ``scored`` (``masks``: these slices of
        the covered rows instead): the one form every number of it is computed from — a run record stores it, and
        the record's values, the card and ``compare`` aggregate it. ``[]``: the metric covers no row of the run;
        None: the rows hold none of its values (a run without judge labels)."""
        rows = self.rows(scored)
        if rows.empty:
            return []
        if not self.has_values(rows):
            return None
        if masks is None:
            masks = [(self.overall, np.ones(len(rows), dtype=bool)), *(self.slice_masks(rows) if slices else ())]
        note = self.card.note.format_map(_Fill({**rows.iloc[0].to_dict(), "n": len(rows), "n_all": len(scored)})) \
            if self.card is not None and self.card.note else ""
        out: list[Units] = []
        for i, (name, mask) in enumerate(masks):
            mask = np.asarray(mask, dtype=bool)
            part = rows[mask]
            u = self.units(part)
            if not len(u):
                continue
            members = None
            if self.grouped:
                keys = u.index.astype(str)
                try:  # the items of each group: a comparison keeps only groups every run answered whole
                    of: dict[str, list[str]] = {}
                    for g, k in zip(self.row_groups(part), self.item_key(part), strict=True):
                        of.setdefault(g, []).append(str(k))
                    members = tuple(tuple(of[str(g)]) for g in keys)
                except DataError:
                    members = None
            else:
                try:
                    keys = self.item_key(part)
                except DataError:
                    keys = part.index.astype(str)
            gold = self.gold_values(part)
            clusters = self.clusters(part)
            out.append(Units(metric=self.name, slice=str(name), keys=tuple(str(k) for k in keys),
                             values=tuple(float(v) for v in u.to_numpy(float)),
                             gold=None if gold is None else tuple(int(g) for g in gold),
                             clusters=None if clusters is None else tuple(str(c) for c in clusters),
                             ci_unit=self.ci_unit(part), whole=i == 0 and str(name) == self.overall and
                             bool(mask.all()), rows=int(len(part)), run_rows=int(len(scored)),
                             note=note if i == 0 else "", members=members))
        return out

    # -- the aggregate -----------------------------------------------------------------------------------
    def statistic(self, values: Any, gold: Any = None) -> Callable[[np.ndarray], np.ndarray]:
        """The aggregate over (resamples, units) weights, in percent: this kind's one aggregation."""
        from vlamb_nb.stats.ranking import weighted_mean

        v = np.asarray(values, dtype=float)
        if self.kind == "macro_f1":
            return weighted_macro_f1(gold, v.astype(int))
        return weighted_mean(v)

    def value_of(self, units: Units) -> float:
        """The metric's point value (percent) on one of its unit sets."""
        return point_of(self.kind, units)

    def interval(self, units: Units, draws: Any = None, *, n_resamples: int = INTERVAL_RESAMPLES,
                 seed: int = INTERVAL_SEED) -> tuple[float, float, str]:
        """The value's 95% interval (percent) and how it was drawn: the one rule of the record, the card,
        ``compare`` and the notebooks. A share of 0/1 units resampled alone is Wilson's (a percentile bootstrap
        collapses to [0, 0] at 0 of 3 and under-covers at small n); anything else is the percentile interval of
        the (cluster) bootstrap ``draws``, drawn here when not given, with the record's resamples and seed, so the
        same units give the same interval in every view. NaN where fewer than two units."""
        v = units.array()
        if len(v) < 2:
            return math.nan, math.nan, ""
        alone = units.clusters is None or len(set(units.clusters)) == len(units.clusters)
        if self.kind != "macro_f1" and alone and np.isin(v, (0.0, 1.0)).all():
            from vlamb_nb.stats.proportions import proportion_ci

            r = proportion_ci(v)
            return 100.0 * r.ci_low, 100.0 * r.ci_high, f"Wilson, {units.ci_unit or self.unit}"
        from vlamb_nb.stats.ranking import interval, resample_weights

        if draws is None:
            w = resample_weights(len(v), units.cluster_array(), n_resamples=n_resamples, seed=seed)
            draws = self.statistic(v, units.gold_array())(w)
        lo, hi = interval(draws)
        return float(lo), float(hi), f"bootstrap over {units.ci_unit or self.unit}s"

    def paired_statistic(self, gold: Any = None) -> Any:
        """The statistic a paired bootstrap of two runs' values uses (None: the difference of means)."""
        if self.kind != "macro_f1":
            return None
        from vlamb_nb.stats.bootstrap import macro_f1_statistic

        return macro_f1_statistic(gold)

    def point(self, rows: Any) -> float:
        """The metric on ``rows`` (percent)."""
        v = self.units(rows).to_numpy(float)
        if not len(v):
            return math.nan
        return float(self.statistic(v, self.gold_values(rows))(np.ones((1, len(v))))[0])


@dataclass(frozen=True)
class Units:
    """One declared metric's per-unit values on one slice of one run (a row each, or a group each for
    all_correct, in the run's order): what its point value, its interval, its card row and its paired test are
    computed from, kept in the run record so each of them can be recomputed from the file alone."""

    metric: str
    slice: str
    keys: tuple[str, ...]  # each unit's key (the item id; the group for all_correct)
    values: tuple[float, ...]  # each unit's value in the metric's scale (0/1, a score, a predicted label)
    gold: tuple[int, ...] | None = None  # macro_f1: each unit's gold label
    clusters: tuple[str, ...] | None = None  # the cluster each unit is resampled with (None: alone)
    ci_unit: str = ""  # what an interval resamples
    whole: bool = False  # the whole set (not a slice)
    rows: int = 0  # rows covered (an all_correct unit is several)
    run_rows: int = 0  # rows of the whole run (the metric may cover some of them)
    note: str = ""  # the whole set's card note, filled in from the run (its judge, how many rows were labelled)
    members: tuple[tuple[str, ...], ...] | None = None  # all_correct: the item keys of each group

    def array(self) -> np.ndarray:
        return np.asarray(self.values, dtype=float)

    def gold_array(self) -> np.ndarray | None:
        return None if self.gold is None else np.asarray(self.gold, dtype=int)

    def cluster_array(self) -> np.ndarray | None:
        return None if self.clusters is None else np.asarray(self.clusters, dtype=object).astype(str)

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "slice": self.slice, "keys": list(self.keys),
                "values": [None if math.isnan(v) else v for v in self.values],
                "gold": None if self.gold is None else list(self.gold),
                "clusters": None if self.clusters is None else list(self.clusters), "ci_unit": self.ci_unit,
                "whole": self.whole, "rows": self.rows, "run_rows": self.run_rows, "note": self.note,
                "members": None if self.members is None else [list(m) for m in self.members]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Units:
        keys, values = tuple(str(k) for k in d["keys"]), tuple(math.nan if v is None else float(v)
                                                                   for v in d["values"])
        gold = None if d.get("gold") is None else tuple(int(g) for g in d["gold"])
        clusters = None if d.get("clusters") is None else tuple(str(c) for c in d["clusters"])
        if any(math.isinf(v) for v in values):
            raise ValueError(f"{d.get('metric')} / {d.get('slice')}: an infinite value")
        members = None if d.get("members") is None else tuple(tuple(str(k) for k in m) for m in d["members"])
        if len(keys) != len(values) or any(x is not None and len(x) != len(keys) for x in (gold, clusters, members)):
            raise ValueError(f"{d.get('metric')} / {d.get('slice')}: keys, values, gold, clusters and members differ "
                             "in length")
        return cls(metric=str(d["metric"]), slice=str(d["slice"]), keys=keys, values=values, gold=gold,
                   clusters=clusters, ci_unit=str(d.get("ci_unit") or ""), whole=bool(d.get("whole")),
                   rows=int(d.get("rows") or len(keys)), run_rows=int(d.get("run_rows") or 0),
                   note=str(d.get("note") or ""), members=members)


def point_of(kind: str, units: Units) -> float:
    """A metric's point value (percent) on one of its unit sets, from its kind alone: what a run record's values
    are checked against when it is read (the record keeps the kind, not the declaration)."""
    if not units.values:
        return math.nan
    v = units.array()
    stat = weighted_macro_f1(units.gold_array(), v.astype(int)) if kind == "macro_f1" else None
    if stat is None:
        from vlamb_nb.stats.ranking import weighted_mean

        stat = weighted_mean(v)
    return float(stat(np.ones((1, len(v))))[0])


def _flags(col: Any) -> np.ndarray:
    """0/1 from a correctness column whose missing values (refusals, unparsed answers) count as wrong."""
    import pandas as pd

    return pd.Series(col).map(lambda v: 1.0 if (isinstance(v, bool | np.bool_ | int | float | np.integer |
                                                             np.floating) and not pd.isna(v) and bool(v))
                              else 0.0).to_numpy(float)


def supported(gold: Any, pred: Any, support: Any, threshold: Any) -> np.ndarray:
    """A prediction stands only where its support exceeds ``threshold``; elsewhere it becomes wrong (``1 - gold``):
    V-FLUTE's official F1@t rule, the one copy of it (broadcast over arrays of thresholds for its curve)."""
    return np.where(support <= threshold, 1 - gold, pred)


def weighted_macro_f1(label_true: Any, predictions: Any) -> Callable[[np.ndarray], np.ndarray]:
    """A statistic over resample weights: macro-F1 (percent) of ``predictions`` against ``label_true``, binary
    labels 0/1, over the classes present in the resample (scikit-learn's ``average="macro"``): the weighted
    per-class counts through :func:`~vlamb_nb.stats.bootstrap.macro_f1_from_counts`, the one macro-F1 of the
    package (V-FLUTE's F1@t curve and its tables count with it too)."""
    from vlamb_nb.stats.bootstrap import macro_f1_from_counts

    t = np.asarray(label_true, dtype=int)
    p = np.asarray(predictions, dtype=int)
    hits = np.stack([((t == c) & (p == c)) for c in (0, 1)], axis=1).astype(float)  # (unit, class)
    gold = np.stack([t == c for c in (0, 1)], axis=1).astype(float)
    pred = np.stack([p == c for c in (0, 1)], axis=1).astype(float)

    def stat(w: np.ndarray) -> np.ndarray:
        f1 = macro_f1_from_counts(w @ hits, w @ gold, w @ pred)
        return 100.0 * np.where(np.isnan(f1), 0.0, f1)  # a resample with no unit at all: 0, never NaN
    return stat


# -- what the card, a summary and a comparison derive from the declarations --------------------------------
def card_slices(m: Metric, rows: Any) -> list[tuple[str, np.ndarray]]:
    """The card's slices of one metric as masks of ``rows`` (:func:`card_units` picks the same ones of a run's
    unit sets): the published slices in the table's order, or the whole set when nothing is published."""
    whole = (m.overall, np.ones(len(rows), dtype=bool))
    pub = m.card.published if m.card else None
    if pub is None:
        return [whole]
    masks = dict(m.slice_masks(rows))
    masks[m.overall] = whole[1]
    return [(name, masks[name]) for name in pub.columns if name in masks]


class _Fill(dict):
    """A card note's fields: one the run does not have stays as written."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def card_units(m: Metric, sets: Sequence[Units]) -> list[Units]:
    """The card's rows of one metric: the published slices in the table's order (the whole set where the table
    prints one), or the whole set when nothing is published."""
    whole = [u for u in sets if u.whole]
    pub = m.card.published if m.card else None
    if pub is None:
        return whole
    by_slice = {u.slice: u for u in sets if not u.whole}
    by_slice.update({u.slice: u for u in whole})
    return [by_slice[name] for name in pub.columns if name in by_slice]


def headlines(paper: str, metrics: Any, runs: Any, *, cells: Callable[[str], Any], n_resamples: int = 2000,
              seed: int = 0) -> list[Any]:
    """The card's rows (:class:`~vlamb_nb.stats.ranking.Headline`) of every declared card metric: ours by
    (cluster) bootstrap of its unit sets, ranked among the published values of its table (``cells(table)``: the
    paper's reference cells), each drawn from its binomial at its test size. ``runs``: ``{setting: run record}``
    (:class:`~vlamb_nb.record.RunRecord`; a benchmark's ``recorded`` gives one for a scored frame)."""
    from vlamb_nb.stats.ranking import Headline, headline_among_published, published

    out: list[Any] = []
    said: set[tuple[str, str]] = set()
    for m in metrics:
        if m.card is None:
            continue
        keys = m.card.settings or tuple(runs)[:1]
        for i, key in enumerate(keys):
            run = runs.get(key)
            if run is None:
                continue
            setting = m.card.setting or key
            sets = run.unit_sets(m.name)
            if sets is None:
                if m.card.missing and (key, m.column) not in said:
                    status, note = m.card.missing
                    out.append(Headline(paper=paper, metric=m.name, slice=m.card.slice.format(
                        slice=m.overall, setting=setting, SETTING=setting.upper()), value=None, status=status,
                        note=note))
                said.add((key, m.column))
                continue
            note = next((u.note for u in sets if u.whole), "")
            for u in card_units(m, sets):
                comps = []
                pub = m.card.published
                if pub is not None:
                    comps = published(paper, pub.table, pub.column(u.slice, setting), n=pub.size(u.slice),
                                      cells=cells(pub.table))
                    for c in comps:
                        c.n = pub.n_of_row.get(c.name, c.n)
                out.append(headline_among_published(
                    paper=paper, metric=m.name, slice=m.card.slice.format(slice=u.slice, setting=setting,
                                                                          SETTING=setting.upper()),
                    stat=m.statistic(u.array(), u.gold_array()), n_rows=len(u.values), clusters=u.cluster_array(),
                    published=comps, unit=m.unit, ci_unit=u.ci_unit, higher_is_better=m.higher_is_better,
                    setting=setting, n_resamples=n_resamples, seed=seed + i + m.card.seed, note=note,
                    interval=lambda draws, u=u, m=m: m.interval(u)))  # the record's interval; ranks: the draws
    return out


def summary(metrics: Any, record: Any) -> dict[str, Any]:
    """A scored run's headline numbers (sweep summaries): how many rows and invalid answers, and every declared
    metric on the rows it covers (percent, 2 decimals); a metric the run has no values for is left out.
    ``record``: the run's record (:class:`~vlamb_nb.record.RunRecord`; a benchmark's ``recorded`` gives one for a
    scored frame)."""
    rows = [r for r in record.rows if r.get("scored", True)]
    out: dict[str, Any] = {"n": len(rows)}
    if any(r.get("valid") is not None for r in rows):  # a run that parses its answers
        out["invalid"] = sum(1 for r in rows if r.get("valid") is not True)
    for m in metrics:
        whole = next((u for u in record.unit_sets(m.name) or () if u.whole), None)
        if whole is None:
            continue
        value = m.value_of(whole)
        out[m.name] = round(value, 2) if math.isfinite(value) else None
    return out
