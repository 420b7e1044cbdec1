"""Compare your own models on the same items: values, paired differences, tests and ranks per headline metric.

The report card says where one model stands among the published ones; this module answers "is A better than B
here?", on the items every compared model answered (the others are dropped and counted; a metric over groups
drops whole groups). Per headline metric and slice the paper declares (:mod:`vlamb_nb.stats.metric`): each
model's value with its interval, each pair's difference with both models resampled together (whole clusters
where declared), McNemar for 0/1 scores and the paired bootstrap otherwise, Holm within a metric and slice (BH
on request), and each model's rank with its interval over the same resamples (:mod:`vlamb_nb.stats.ranking`).

A RUN is a ``reproduce`` run folder, a sweep's folder, a prediction store (read as its run record; scored once
where it has none) or a paper's released per-item file; every run is compared from its record. Runs of other
data or settings are refused unless asked for, and one model's settings of a paper compare as an ablation
(``<model> · <setting>``). What cannot be compared (fewer than two models, the same run twice, no answers, no
item in common, not a run) is refused in one line; a metric on fewer than :data:`FEW_UNITS` units or
:data:`FEW_CLUSTERS` clusters is named as rough.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import sys
import types
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vlamb_nb.errors import DataError, SettingError, reason
from vlamb_nb.stats.common import answered as _answered
from vlamb_nb.stats.common import common_units as _common_units
from vlamb_nb.stats.common import pair_test as _pair_test
from vlamb_nb.stats.common import weighted as _weighted

N_RESAMPLES = 2000
#: below this many units (items, pairs, rows) a metric's intervals and ranks are rough: named in the output
FEW_UNITS = 30
#: below this many resampled clusters (images, pairs) the same
FEW_CLUSTERS = 10


@dataclass
class Run:
    """One model's scored run of one paper and setting: the paper's scored frame, one row per item answered."""

    model: str
    paper: str
    setting: str
    scored: Any  # the paper's scored DataFrame
    origin: str = ""  # the file or folder it came from
    data: dict[str, Any] | None = None  # the data identity (kind, release, revision, n_items, label)
    deviations: list[str] = field(default_factory=list)
    endpoint: str | None = None  # a served model's address (credentials masked): one name on two servers
    #: the items its store was scored against (a page rebuilds each item's prompt and image from them)
    items: Any = field(default=None, repr=False, compare=False)
    #: its run record, when the run was given as one (``*.record.json``): compared from the record's unit sets
    #: alone, with no data and no rescoring (``scored`` is then None)
    record: Any = field(default=None, repr=False, compare=False)
    #: the setting it was asked in, where ``setting`` names a comparison of one model's settings (an ablation)
    asked: str | None = None
    #: a stand-in, not a model (a tiny random checkpoint, a scripted model, a replay): the page says so up front
    stand_in: bool = False
    #: read from a paper's released per-item file (rows already scored: no replies, no prompts kept)
    released: bool = False


def _stand_in(model: Mapping[str, Any] | None, spec: Any = None) -> bool:
    """Whether a run's model (its recorded facts) is a stand-in: a scripted or replayed backend, or a spec of a
    tiny random checkpoint (:attr:`vlamb_nb.models.spec.ModelSpec.stand_in`)."""
    from vlamb_nb.models.spec import ModelSpec

    model = model or {}
    if str(model.get("backend") or "") in ("scripted", "replay"):
        return True
    for text in (spec, model.get("spec"), model.get("model_id")):
        if isinstance(text, str) and text.strip():
            try:
                if ModelSpec.parse(text).stand_in:
                    return True
            except (SettingError, DataError):
                continue
    return False


def data_at_hand(paper: str, data: Mapping[str, Any] | None, *, origin: str | None = None) -> Any:
    """What the paper's ``load`` takes for the data a run stood on (its recorded data identity), where that data
    is on this machine: the fetched release (refused in one line when fetched at another revision), or data the
    authors published beside it (``Release.beside``: a website's demo); None when it is not here."""
    from vlamb_nb.datahome import release_source

    if not data:
        return None
    if data.get("kind") == "release":
        return release_source(paper, dict(data), origin=origin)
    from vlamb_nb.benchmarks import BrokenPaper
    from vlamb_nb.releases.catalog import release

    try:
        find = release(paper).beside.get(str(data.get("release") or ""))
    except (BrokenPaper, SettingError, DataError, AttributeError):
        return None
    return find() if find is not None else None


# -- each paper's declared metrics on the runs ----------------------------------------------------------------
def _declared(paper: str) -> list[Any]:
    """The paper's metrics ``compare`` reports (its benchmark's ``metrics``)."""
    from vlamb_nb.benchmarks import get_benchmark

    return [m for m in get_benchmark(paper).metrics if m.compare]


def _lacking(paper: str, setting: str, metrics: list[Any], has: Any) -> tuple[list[Any], list[str]]:
    """The metrics ``has`` says every run has values for; one note per column some run lacks."""
    have, lacking = [], {}
    for m in metrics:
        if has(m):
            have.append(m)
        else:
            lacking.setdefault(m.column, []).append(m)
    notes = []
    for col, ms in lacking.items():
        why = next((m.card.missing[1] for m in ms if m.card is not None and m.card.missing), f"no {col} values")
        notes.append(f"{paper} {setting}: not every run has its {col} ({why}): "
                     f"{', '.join(m.name for m in ms)} not compared")
    return have, notes


# -- data identity and settings --------------------------------------------------------------------------------
def _data_label(d: dict[str, Any] | None) -> str:
    if not d:
        return "unknown data"
    if d.get("kind") == "sample":  # its release reads "generated sample (seed 0)": said once, not nested
        how = str(d.get("label") or d.get("release") or "").strip()
        how = how.removeprefix("a ").removeprefix("generated sample").strip(" ,:")
        how = how[1:-1] if how.startswith("(") and how.endswith(")") else how
        return f"a generated sample ({how})" if how else "a generated sample"
    rev = f"@{str(d['revision'])[:12]}" if d.get("revision") else ""
    return f"{d.get('release') or d.get('label') or d.get('kind')}{rev}"


def _data_difference(runs: Sequence[Run]) -> str | None:
    """None when the runs are on the same data (kind, release, revision; the item count may differ: a limit
    run is the same data), else what differs, naming the runs."""
    known = [r for r in runs if r.data]
    sample = [r for r in runs if r.data and r.data.get("kind") == "sample"]
    if sample and len(sample) != len(runs):
        other = next(r for r in runs if r not in sample)
        return (f"{sample[0].model} ran on {_data_label(sample[0].data)}, {other.model} on "
                f"{_data_label(other.data)} (a generated sample is compared only with other sample runs)")
    for a, b in itertools.combinations(known, 2):
        da, db = a.data or {}, b.data or {}
        if da.get("kind") != db.get("kind") or da.get("release") != db.get("release") or (
                da.get("revision") and db.get("revision") and da.get("revision") != db.get("revision")):
            return f"{a.model} ran on {_data_label(da)}, {b.model} on {_data_label(db)}"
    return None


def _data_note(paper: str, runs: Sequence[Run]) -> str:
    known = [r for r in runs if r.data]
    if not known:
        return f"{paper}: data identity unknown (no run records its data); compared on the common items"
    if all(r.data.get("kind") == "sample" for r in runs):  # type: ignore[union-attr]
        return (f"{paper}: every run is on {_data_label(known[0].data)}: a pipeline check, "
                "not a measurement of the models")
    unknown = [r.model for r in runs if not r.data]
    tail = f"; unknown for {', '.join(unknown)}" if unknown else ""
    return f"{paper}: data {_data_label(known[0].data)}{tail}"


def paired(paper: str, a: Any, b: Any, *, metrics: Sequence[Any] | None = None, n_resamples: int = 2000,
           seed: int = 0, same_items: bool = False):
    """Two scored runs of ``paper`` paired on the units both answered (:func:`vlamb_nb.stats.common.paired_runs`),
    on its declared metrics or on ``metrics`` of the same form (an F1 at another threshold), from their records."""
    from vlamb_nb.benchmarks import get_benchmark
    from vlamb_nb.stats.common import paired_runs

    a, b = get_benchmark(paper).recorded({"a": a, "b": b}, metrics=metrics).values()
    return paired_runs(paper, _declared(paper) if metrics is None else list(metrics), a, b, n_resamples=n_resamples,
                       seed=seed, same_items=same_items)


def _few(base: dict[str, Any], n: int, unit: str, n_clusters: int, ci_unit: str) -> tuple[dict[str, Any], str] | None:
    """The ``few`` entry and note of a metric on few units or clusters (None: enough of both)."""
    from vlamb_nb.stats.ranking import plural

    clustered = ci_unit != unit
    if n >= FEW_UNITS and (not clustered or n_clusters >= FEW_CLUSTERS):
        return None
    resampled = n_clusters if clustered else n
    what = f"{n} {unit if n == 1 else plural(unit)}" + (
        f" in {n_clusters} {ci_unit if n_clusters == 1 else plural(ci_unit)}" if clustered else "")
    if resampled < 2:
        why = (f"no interval: every resample of one {ci_unit} is that {ci_unit}, so a bootstrap says nothing about "
               "uncertainty")
    else:
        why = (f"few (below {FEW_UNITS} {plural(unit)}" + (f" or {FEW_CLUSTERS} {plural(ci_unit)}" if clustered else "")
               + "): intervals and ranks are rough")
    entry = {**base, "n": n, "unit": unit, "n_clusters": n_clusters, "ci_unit": ci_unit,
             "interval": resampled >= 2, "why": why}
    return entry, f"{base['paper']} {base['setting']} {base['metric']} ({base['slice']}) on {what}: {why}"


# -- the comparison --------------------------------------------------------------------------------------------
@dataclass
class Comparison:
    """Values with intervals and ranks (``values``), paired differences with tests (``pairs``), and notes."""

    values: Any  # DataFrame
    pairs: Any  # DataFrame
    notes: list[str]
    models: list[dict[str, Any]]  # per model: name, origin, data, deviations
    correction: str = "holm"
    baseline: str | None = None
    title: str = "Model comparison"
    allowed: list[str] = field(default_factory=list)  # refusals waived on request (different data or settings)
    #: metrics on few units or clusters (see :data:`FEW_UNITS`): paper, setting, metric, slice, n, why
    few: list[dict[str, Any]] = field(default_factory=list)
    #: per paper, setting and metric group: the common items' rows of every model, in one order (the page's item
    #: table, :mod:`vlamb_nb.report_items`); not saved
    aligned: list[dict[str, Any]] = field(default_factory=list, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        from vlamb_nb.stats.ranking import _clean

        return _clean({"title": self.title, "correction": self.correction, "baseline": self.baseline,
                       "allowed": self.allowed, "notes": self.notes, "few": self.few, "models": self.models,
                       "values": self.values.to_dict(orient="records"),
                       "pairs": self.pairs.to_dict(orient="records")})

    def markdown(self) -> str:
        return markdown(self)

    def figure(self):
        return figure(self)

    def display(self) -> dict[str, Any]:
        """The comparison as a page shows it: both tables as text with sort keys, their notes, and the deviations
        every model shares beside each model's own (``comparison.html``, :mod:`vlamb_nb.report_html`)."""
        values, pairs = display_rows(self)
        shared, own = model_deviations(self)
        return {"value_columns": list(VALUE_COLUMNS), "values": values, "values_note": VALUES_NOTE,
                "pair_columns": list(PAIR_COLUMNS), "pairs": pairs, "pairs_note": MCNEMAR_NOTE,
                "values_export": export_rows(self.values, VALUE_EXPORT),
                "pairs_export": export_rows(self.pairs, PAIR_EXPORT),
                "slices": slice_tables(self), "family_note": family_note(self),
                "correction": {"holm": "Holm", "bh": "Benjamini–Hochberg"}[self.correction],
                "shared_deviations": shared, "own_deviations": own, "demo": self.demo, "demo_note": DEMO_NOTE}

    @property
    def demo(self) -> bool:
        """Whether what is compared is a pipeline demonstration: a stand-in model or a generated sample."""
        return any(m.get("stand_in") for m in self.models) or any(
            (d or {}).get("kind") == "sample" for m in self.models for d in (m.get("data") or {}).values())

    def save(self, directory: str | os.PathLike, *, name: str = "comparison", figure_dir: Any = None) -> list[Path]:
        """``<directory>/<name>.md`` and ``.json``, the figure beside them (or under ``figure_dir``), and last the
        page that shows them together, ``<directory>/<name>.html`` (self-contained: :mod:`vlamb_nb.report_html`).
        All-or-nothing (:mod:`vlamb_nb.atomic`): everything is written into a temporary folder first and moved in
        with Ctrl-C held back, so an earlier comparison's page never stands beside this one's files."""
        from vlamb_nb.atomic import move_in, staged
        from vlamb_nb.plots import save_figure
        from vlamb_nb.report_html import write_comparison_page

        d = Path(directory)
        with staged(d) as tmp:
            (tmp / f"{name}.md").write_text(self.markdown(), encoding="utf-8")
            (tmp / f"{name}.json").write_text(json.dumps(self.to_dict(), indent=2, ensure_ascii=False,
                                                         allow_nan=False), encoding="utf-8")
            names, outside = [f"{name}.md", f"{name}.json"], []
            png = None
            if len(self.values):
                import matplotlib.pyplot as plt

                fig = self.figure()
                if figure_dir is None:
                    save_figure(fig, tmp.name, name, directory=tmp.parent)
                    names += [f"{name}.png", f"{name}.pdf"]
                    png = tmp / f"{name}.png"
                else:
                    save_figure(fig, "compare", name, directory=figure_dir)
                    outside = [Path(figure_dir) / "compare" / f"{name}.{x}" for x in ("png", "pdf")]
                    png = outside[0]
                plt.close(fig)
            page = write_comparison_page(self, tmp, name=name, figure=png).name
            tables = sorted(f"tables/{f.name}" for f in (tmp / "tables").glob("*") if f.is_file())
            stale = [f"{name}.{x}" for x in ("png", "pdf") if f"{name}.{x}" not in names]
            stale += [f"tables/{f.name}" for f in (d / "tables").glob(f"{name}-*") if f"tables/{f.name}" not in tables]
            names += tables + [page]
            moved = move_in(tmp, d, names, page=f"{name}.html", stale=stale)
        figures = [m for m in moved[2:-1] if m.parent == d]
        return moved[:2] + (outside or figures) + moved[-1:]


def compare(runs: Iterable[Any], *, baseline: str | None = None, correction: str = "holm",
            allow_different_data: bool = False, allow_different_settings: bool = False,
            sources: Mapping[str, Any] | str | None = None, n_resamples: int = N_RESAMPLES, seed: int = 0,
            title: str = "Model comparison") -> Comparison:
    """Compare models on the items they all answered (see the module doc); ``runs``: paths (run folders, sweep
    folders, store files, released per-item files) or :class:`Run` objects. ``baseline``: compare every model
    with this one instead of all pairs. ``sources``: the data a bare store was run on (``{paper: path}``, or one
    path)."""
    import pandas as pd

    from vlamb_nb import stats
    from vlamb_nb.stats.ranking import ranks as ranks_of
    from vlamb_nb.stats.ranking import resample_weights

    if correction not in ("holm", "bh"):
        raise SettingError(f"unknown correction {correction!r}; use holm or bh")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 100:
        raise SettingError(f"n_resamples must be an integer of at least 100 (intervals and ranks need them), got "
                           f"{n_resamples!r}")
    loaded: list[Run] = []
    unloaded: list[str] = []  # runs of a registered paper that cannot be loaded: not compared, and said so
    for r in runs:
        loaded += [r] if isinstance(r, Run) else load_runs(r, sources=sources, unloaded=unloaded)
    if not loaded:
        raise DataError("nothing to compare: no runs found")
    _no_run_twice(loaded)
    loaded = [with_record(r) for r in loaded]  # every run is compared, and shown, from its record
    unloaded += _released_items(loaded, sources)
    _unique_names(loaded)
    models = list(dict.fromkeys(r.model for r in loaded))
    ablation: list[str] = []
    if len(models) < 2:
        ablation = _as_ablation(loaded)
        if not ablation:
            raise SettingError(f"a comparison needs at least two models, or one model in two settings of a paper; "
                               f"all {len(loaded)} run(s) given are of {models[0]}")
        models = list(dict.fromkeys(r.model for r in loaded))
    if baseline is not None and baseline not in models:
        raise SettingError(f"baseline {baseline!r} is not one of the compared models: {', '.join(models)}")
    notes: list[str] = list(unloaded) + ablation
    skipped: list[str] = []  # why a paper or metric was not compared (the reasons, when nothing is)
    allowed: list[str] = []
    few: list[dict[str, Any]] = []
    aligned: list[dict[str, Any]] = []
    by_paper: dict[str, list[Run]] = {}
    for r in loaded:
        by_paper.setdefault(r.paper, []).append(r)
    value_rows: list[dict[str, Any]] = []
    pair_rows: list[dict[str, Any]] = []
    for paper, pruns in by_paper.items():
        names = list(dict.fromkeys(r.model for r in pruns))
        if len(names) < 2:
            skipped.append(f"{paper}: only {names[0]} ran it; nothing to compare")
            notes.append(skipped[-1])
            continue
        settings = {m: sorted({r.setting for r in pruns if r.model == m}) for m in names}
        if len({tuple(s) for s in settings.values()}) > 1:
            desc = "; ".join(f"{m} has {', '.join(s)}" for m, s in settings.items())
            if not allow_different_settings:
                raise SettingError(f"{paper}: runs of different settings ({desc}); settings are never paired — "
                                   "pass --allow-different-settings to compare the settings they share")
            allowed.append(f"{paper}: different settings ({desc})")
            notes.append(f"{paper}: runs of different settings ({desc}); only the shared settings are compared "
                         "(allowed)")
        diff = _data_difference(pruns)
        if diff:
            if not allow_different_data:
                raise SettingError(f"{paper}: runs of different data: {diff}; pass --allow-different-data to "
                                   "compare them on their common items anyway")
            allowed.append(f"{paper}: different data ({diff})")
            notes.append(f"{paper}: compared across different data (allowed): {diff}")
        else:
            notes.append(_data_note(paper, pruns))
        declared = _declared(paper)
        if not declared:
            skipped.append(f"{paper}: the paper declares no per-item headline metric; not compared")
            notes.append(skipped[-1])
            continue
        groups: dict[int, list[Any]] = {}  # metrics covering the same rows share their common items
        for m in declared:
            groups.setdefault(id(m.where), []).append(m)
        shared = sorted(set.intersection(*(set(s) for s in settings.values())))
        if not shared:
            skipped.append(f"{paper}: no setting run by every model")
        for k, setting in enumerate(shared):
            sruns = [next(r for r in pruns if r.model == m and r.setting == setting) for m in names]
            j = 0
            for metrics in groups.values():
                units, dropped, n_common = _common_units(metrics, sruns)  # from each run's record: its unit sets
                lost = {m: d for m, d in dropped.items() if d}
                notes.append(f"{paper} {setting}: {n_common} items answered by every model"
                             + (f"; dropped (answered by only some): {', '.join(f'{m} {d}' for m, d in lost.items())}"
                                if lost else ""))
                if not n_common:  # this setting is left out, said so; nothing compared at all is refused below
                    skipped.append(f"{paper} {setting}: no item answered by every model ("
                                   + ", ".join(f"{m} answered {d}" for m, d in dropped.items())
                                   + "); compare runs of the same items")
                    notes.append(skipped[-1])
                    continue
                compared, more = _lacking(paper, setting, metrics, lambda m, units=units: m.name in units)
                skipped += more
                notes += more
                # each metric's per-unit values on the common items, by unit key: what the items page shows
                aligned.append({"paper": paper, "setting": setting, "metrics": compared, "models": names,
                                "scores": {m.name: units[m.name] for m in compared}, "runs": sruns})
                for metric in compared:
                    for sc in units[metric.name]:
                        mseed = seed + 1000 * k + 10 * j
                        j += 1
                        n = len(sc.values[0])
                        if n == 0:
                            continue
                        w = resample_weights(n, sc.clusters, n_resamples=n_resamples, seed=mseed)
                        ones = np.ones((1, n))
                        points = np.array([float(_weighted(sc, v)(ones)[0]) for v in sc.values])
                        draws = np.vstack([_weighted(sc, v)(w) for v in sc.values])
                        point_rank = ranks_of(points[:, None], metric.higher_is_better)[:, 0]
                        n_units = int(len(set(sc.clusters.tolist()))) if sc.clusters is not None else n
                        ok = np.isfinite(draws).all(axis=0)
                        ranks = ranks_of(draws[:, ok], metric.higher_is_better) if ok.any() and n_units > 1 else None
                        base = {"paper": paper, "setting": setting, "metric": metric.name, "slice": sc.slice}
                        small = _few(base, n, metric.unit, n_units, sc.ci_unit or metric.unit)
                        if small is not None:
                            few.append(small[0])
                            notes.append(small[1])
                        for i, m in enumerate(names):
                            lo, hi = sc.interval(i, draws[i]) if n_units > 1 else (math.nan, math.nan)
                            rl, rh = (np.percentile(ranks[i], [2.5, 97.5]) if ranks is not None
                                      else (math.nan, math.nan))
                            value_rows.append({**base, "model": m, "value": points[i], "ci_low": lo, "ci_high": hi,
                                               "n": n, "unit": metric.unit, "ci_unit": sc.ci_unit or metric.unit,
                                               "n_clusters": n_units, "higher_is_better": metric.higher_is_better,
                                               "rank": int(point_rank[i]),
                                               "rank_low": int(math.floor(rl)) if math.isfinite(rl) else None,
                                               "rank_high": int(math.ceil(rh)) if math.isfinite(rh) else None,
                                               "of": len(names), "dropped": dropped[m]})
                        pairs = ([(m, baseline) for m in names if m != baseline] if baseline is not None
                                 else list(itertools.combinations(names, 2)))
                        for a, b in pairs:
                            ia, ib = names.index(a), names.index(b)
                            t = _pair_test(sc, sc.values[ia], sc.values[ib], n_resamples=n_resamples, seed=mseed)
                            if n_units < 2:  # one unit resampled: no interval
                                t.update(ci_low=math.nan, ci_high=math.nan)
                            pair_rows.append({**base, "model_a": a, "model_b": b, "value_a": points[ia],
                                              "value_b": points[ib], **t, "n": n, "unit": metric.unit,
                                              "ci_unit": sc.ci_unit or metric.unit, "kind": sc.kind})
    if not value_rows:
        raise DataError("nothing compared: " + ("; ".join(dict.fromkeys(skipped)) or "no metric had values"))
    pairs_df = pd.DataFrame(pair_rows)
    if len(pairs_df):  # one family per number: the pairs of one paper, setting, metric and slice
        adjust = stats.holm if correction == "holm" else stats.benjamini_hochberg
        pairs_df["p_adjusted"] = np.nan
        pairs_df["family"] = 0
        for _, at in pairs_df.groupby(list(FAMILY), sort=False).groups.items():
            pairs_df.loc[at, "p_adjusted"] = adjust(pairs_df.loc[at, "p"].to_numpy(float))
            pairs_df.loc[at, "family"] = len(at)
    value_cols = ["paper", "setting", "metric", "slice", "model", "value", "ci_low", "ci_high", "n", "unit",
                  "ci_unit", "n_clusters", "higher_is_better", "rank", "rank_low", "rank_high", "of", "dropped"]
    meta = []
    for m in models:
        rs = [r for r in loaded if r.model == m]
        origins = sorted({r.origin for r in rs})
        meta.append({"model": m, "origins": origins,
                     "runs": [f"{r.paper}/{r.setting}" for r in rs],
                     "data": {f"{r.paper}/{r.setting}": r.data for r in rs},
                     "deviations": sorted({d for r in rs for d in r.deviations}),
                     "files": [_file_facts(o) for o in origins], "stand_in": any(r.stand_in for r in rs)})
    return Comparison(pd.DataFrame(value_rows, columns=value_cols), pairs_df, notes, meta, correction, baseline,
                      title, allowed, few, aligned)


#: what one family of tests is (Holm or Benjamini–Hochberg within it): the pairs of one number
FAMILY = ("paper", "setting", "metric", "slice")


def _file_facts(origin: str) -> dict[str, Any]:
    """A compared file's name, size and sha256 (a folder: its name only), for the comparison's provenance."""
    p = Path(origin)
    if not p.is_file():
        return {"file": origin, "bytes": None, "sha256": None}
    h = hashlib.sha256()
    with open(p, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return {"file": origin, "bytes": p.stat().st_size, "sha256": h.hexdigest()}


def _released_items(runs: list[Run], sources: Mapping[str, Any] | str | None) -> list[str]:
    """A paper's released per-item runs keep no image and no prompt: the items they answer, from the data given
    for the paper (``sources``) or the fetched release it names, are set beside them (``Run.items``) so a page
    shows each item's image and prompt. Loaded once per paper; returns what is said about it (a note)."""
    import warnings

    from vlamb_nb.benchmarks import get_benchmark
    from vlamb_nb.errors import VlambError

    notes = []
    by_paper: dict[str, list[Run]] = {}
    for r in runs:
        if r.released and r.items is None:
            by_paper.setdefault(r.paper, []).append(r)
    for paper, rs in by_paper.items():
        given = _source_for(paper, sources)
        try:
            source = given if given is not None else data_at_hand(paper, rs[0].data, origin=rs[0].origin)
        except VlambError:
            source = None  # the release is not fetched (or at another revision): no images, said on the page
        if source is None:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                items = get_benchmark(paper).load(source)
        except (VlambError, OSError) as e:
            if given is None:
                continue
            notes.append(f"{paper}: the data given for its released runs could not be read ({str(e).splitlines()[0]})"
                         "; their items show no image")
            continue
        for r in rs:
            r.items = items
    return notes


def _as_ablation(runs: list[Run]) -> list[str]:
    """One model's runs of a paper in several settings (direct against CoT, a prompt ablation), made comparable:
    each setting's run is named ``<model> · <setting>`` and they are paired on the items every setting answered,
    as models are (``asked`` keeps the setting each was asked in). Empty, and nothing changed, unless every paper
    given has two settings or more and no setting twice."""
    by_paper: dict[str, list[Run]] = {}
    for r in runs:
        by_paper.setdefault(r.paper, []).append(r)
    if any(len(rs) < 2 or len({r.setting for r in rs}) < len(rs) for rs in by_paper.values()):
        return []
    notes = []
    for paper, rs in by_paper.items():
        label = " vs ".join(r.setting for r in rs)
        for r in rs:
            r.asked, r.model, r.setting = r.setting, f"{r.model} · {r.setting}", label
        notes.append(f"{paper}: one model ({rs[0].model.rsplit(' · ', 1)[0]}) in {len(rs)} settings: the settings "
                     "are compared with each other on the items every one of them answered (an ablation: the same "
                     "model, other prompts)")
    return notes


def _no_run_twice(runs: list[Run]) -> None:
    """Refuse the same run given twice: one file (by any path to it), or two files holding the same records."""
    seen: dict[tuple[str, str, str], Run] = {}
    for r in runs:
        ids = _run_ids(r)
        for ident in ids:
            other = seen.get((r.paper, r.setting, ident))
            if other is not None and other is not r:
                how = ("a store and its run record" if _is_record(other) != _is_record(r) else
                       "the same file" if ident.startswith("path:") else
                       "one run's records in two files" if ident.startswith("run:") else
                       "two files with identical records")
                raise DataError(f"the same run twice ({how}): {other.model} ({other.origin}) and {r.model} "
                                f"({r.origin}) in {r.paper} {r.setting}; give each run once")
        for ident in ids:
            seen[(r.paper, r.setting, ident)] = r


def _is_record(r: Run) -> bool:
    """Whether the run was given as its run record's file (not its store)."""
    from vlamb_nb.record import SUFFIX

    return r.origin.endswith(SUFFIX)


def _run_ids(r: Run) -> list[str]:
    """What makes two runs one: the resolved file they came from, a digest of its bytes, and the run itself (the
    digest of its stored records, which its record keeps: the same run copied into two folders, a record and a
    copy of its store, a record scored again)."""
    if not r.origin:
        return []
    p = Path(r.origin)
    if not p.is_file():
        return [f"path:{p.resolve()}"]
    h = hashlib.sha256()
    with open(p, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    store = [] if r.record is None or not r.record.store else [f"path:{(p.parent / r.record.store).resolve()}"]
    run = None
    if r.record is not None:
        run = r.record.store_digest.run_sha256 if r.record.store_digest is not None else None
    else:
        from vlamb_nb.record import run_digest
        from vlamb_nb.store import is_store

        run = run_digest(p) if is_store(p) else None
    return [f"path:{p.resolve()}", f"sha256:{h.hexdigest()}", *store, *([f"run:{run}"] if run else [])]


def _unique_names(runs: list[Run]) -> None:
    """Two runs of one paper and setting under one model name (the same model from two folders) get the folder
    they came from in their name: a comparison must never merge them."""
    seen: dict[tuple[str, str, str], list[Run]] = {}
    for r in runs:
        seen.setdefault((r.model, r.paper, r.setting), []).append(r)
    from urllib.parse import urlsplit

    for group in seen.values():
        if len(group) < 2:
            continue
        hosts = [urlsplit(r.endpoint).netloc.rpartition("@")[2] if r.endpoint else "" for r in group]
        by_host = len(set(hosts)) == len(group)
        # the first folder where their paths part (two reproduce runs: runs/<id-a>, runs/<id-b>), so every setting
        # of one run gets the same name and settings pair across the runs
        parts = [Path(r.origin).resolve().parts for r in group]
        first = next((k for k in range(min(map(len, parts))) if len({p[k] for p in parts}) > 1), None)
        for i, (r, host) in enumerate(zip(group, hosts, strict=True), 1):
            where = host if by_host else (parts[i - 1][first] if first is not None and first < len(parts[i - 1]) - 1
                                          else "/".join(Path(r.origin).parts[-2:]) or str(i))
            r.model = f"{r.model} @ {where}" if by_host else f"{r.model} ({where})"
        for i, r in enumerate(group, 1):
            if sum(x.model == r.model for x in group) > 1:
                r.model = f"{r.model} #{i}"


# -- reading RUNs ------------------------------------------------------------------------------------------------
def load_runs(path: Any, *, sources: Mapping[str, Any] | str | None = None,
              unloaded: list[str] | None = None, failed: dict[str, str] | None = None,
              score_missing: bool = True) -> list[Run]:
    """The runs in a RUN: a sweep folder (``config.json``), a reproduce run folder (``results.json``), a
    prediction store or a paper's released per-item predictions file; anything else is refused in one line.
    A run folder's stores of a registered paper that cannot be loaded are left out, their line in ``unloaded``;
    with ``failed``, a reproduce run's paper whose stores cannot be read is left out with why, the rest read.
    A reproduce run's stores are read from the run records its notebooks wrote (:func:`_paper_runs`): a store
    without one is scored once and its record written, or with ``score_missing=False`` (the run's page, which
    scores nothing) left out with its line in ``unloaded``."""
    p = Path(path)
    if p.is_dir():
        if (p / "config.json").is_file() and (p / "predictions").is_dir():
            return _sweep_runs(p, unloaded)
        if (p / "results.json").is_file():
            return _reproduce_runs(p, sources, unloaded=unloaded, failed=failed, score_missing=score_missing)
        raise DataError("not a run: neither a sweep folder (config.json + predictions/) nor a reproduce run folder "
                        "(results.json)", source=str(p))
    if not p.is_file():
        raise DataError("no such run file or folder", source=str(p))
    from vlamb_nb.record import SUFFIX

    if p.name.endswith(SUFFIX):
        return [record_run(p)]
    return [_file_run(p, sources)]


def record_run(path: str | os.PathLike, *, name: str | None = None, compared: bool = True) -> Run:
    """A run given as its run record (``*.record.json``): compared from the record's unit sets alone, with no
    data and no rescoring; a record of a run not yet scored, of schema 1 (no unit sets), of an unknown paper or
    with no answer is refused in one line. ``compared=False`` (a page listing a run's items): those are read as
    they are (a run its notebook never scored, such as answers awaiting a hand labeller, lists its
    answers; one whose every request failed, its failures)."""
    from vlamb_nb.benchmarks import get_benchmark
    from vlamb_nb.meta import deviation_lines
    from vlamb_nb.record import RunRecord

    path = Path(path)
    rec = RunRecord.read(path)
    get_benchmark(rec.benchmark)  # an unknown paper: one line naming the registered ones
    model = {"model_id": rec.model.model_id, "quantization": rec.model.quantization}
    if compared:
        _comparable(rec, path, model)
    devs = deviation_lines(rec.deviations)
    if rec.coverage.duplicates:
        devs.append(f"{rec.coverage.duplicates} answer(s) in {rec.store} repeat an answer under another request id: "
                    "each counted once")
    devs += [f"its run record {path.name}: {why}" for why in (rec.unchecked, rec.data.scored_elsewhere) if why]
    return Run(model=name or _model_name(model), paper=rec.benchmark, setting=rec.setting, scored=None,
               origin=str(path), data=rec.data.identity.to_dict() if rec.data.identity else None, deviations=devs,
               endpoint=rec.model.endpoint, record=rec,
               stand_in=_stand_in({"backend": rec.model.backend, "model_id": rec.model.model_id}, rec.model.spec))


def _comparable(rec: Any, path: Path, model: Mapping[str, Any]) -> None:
    """Refuse, in one line, a record compare cannot pair: a run not yet scored, one with no answer, schema 1."""
    if rec.stage != "scored":
        raise DataError("the record of a run not yet scored: score its store first (vlamb-nb score)", source=str(path))
    if not rec.coverage.answered:
        raise DataError(f"{_model_name(model)} has no answers in {rec.benchmark} {rec.setting}"
                        + (f": every one of its {rec.coverage.failed} items failed" if rec.coverage.failed else "")
                        + "; leave it out or run it again", source=str(path))
    if rec.schema_version < 2:
        raise DataError(f"a run record of schema {rec.schema_version} keeps no per-unit values; score its store "
                        "again (vlamb-nb score) to compare it", source=str(path))


def with_record(run: Run) -> Run:
    """``run`` with the record it is compared and shown from: a run given as its record as it is; one given as a
    scored frame (a store scored with its data at hand, a paper's released rows) with the record that frame gives,
    as its scoring writes it (in memory, never written; its store's turns and prompts where it came from one).
    A run with no answer at all is refused in one line, as a record of one is."""
    if run.record is not None:
        return run
    import dataclasses

    from vlamb_nb.benchmarks import get_benchmark
    from vlamb_nb.record import from_scored

    bench = get_benchmark(run.paper)
    declared = [m for m in bench.metrics if m.compare]
    if declared:
        _answered(declared[0], run)  # no answer at all, or rows with no item key: refused, naming the run
    origin = Path(run.origin) if run.origin else None
    rec = from_scored(bench, run.scored, store=origin if origin is not None and origin.is_file() else None,
                      n_resamples=0)
    return dataclasses.replace(run, record=rec)


def _source_for(paper: str, sources: Mapping[str, Any] | str | os.PathLike | None) -> Any:
    if sources is None:
        return None
    if isinstance(sources, str | os.PathLike):
        return sources
    return sources.get(paper)


def _file_run(path: Path, sources: Any, *, name: str | None = None, options: dict[str, Any] | None = None) -> Run:
    """A prediction store (its records name their benchmark), else the released per-item file of the paper
    whose reader takes it (its ``released_run``)."""
    from vlamb_nb.benchmarks import BrokenPaper, get_benchmark, list_benchmarks
    from vlamb_nb.jsonl import iter_jsonl
    from vlamb_nb.store import is_store

    if is_store(path):
        return _store_run(path, _source_for(_store_meta(path)["benchmark"], sources), name=name, options=options)
    first = next((rec for _, rec in iter_jsonl(path)), None)
    if first is None:
        raise DataError("an empty file: not a run", source=str(path))
    if "benchmark" in first or "run" in first:  # records of a run without request keys: say what is wrong
        _store_meta(path)
    unloadable = []  # a paper that cannot be loaded cannot claim the file; the others still try
    for paper in list_benchmarks():
        try:
            bench = get_benchmark(paper)
        except BrokenPaper as e:
            unloadable.append(str(e))
            continue
        released = bench.released_run(path)
        if released is not None:
            return with_record(Run(model=name or released.model, paper=paper, setting=released.setting,
                                   scored=released.scored, origin=str(path), data=dict(released.data), released=True))
    untried = f" (not asked: {'; '.join(unloadable)})" if unloadable else ""
    raise DataError("not a run: neither a prediction store (records naming their benchmark) nor a paper's released "
                    f"per-item predictions{untried}", source=str(path))


def _store_run(path: Path, source: Any, *, name: str | None = None, options: dict[str, Any] | None = None,
               loaded: dict[tuple[str, str], Any] | None = None) -> Run:
    """A prediction store as its run: its scored run record, where it has one that agrees with it (the data, where
    given and here, read only for the items' images and prompts; ``loaded`` keeps what was read by paper and
    source), else scored against ``source`` once and its record written (:func:`score_store`). A record that
    disagrees with its store (answers added since it was written) is refused in one line, unless the data is
    here: then the store is scored again, its record rewritten, and the run says so; so is a record scored
    against other items than the data given (another answer key)."""
    from vlamb_nb.record import RecordMismatch

    try:
        records = _records_of([path], name=name)
    except RecordMismatch as e:
        if _not_here(source):
            raise
        run = score_store(path, source=source, name=name, options=options)
        run.deviations.append(f"{path.name}: its run record disagreed with it ({_own_words(e)}): scored again "
                              "against the data given, the record rewritten")
        return run
    if records is None:
        return score_store(path, source=source, name=name, options=options)
    (run,) = records
    run.origin = str(path)  # the store given, and its data as the store says it: as when it is scored
    run.data = _store_meta(path).get("data")
    if not _not_here(source):
        import warnings

        from vlamb_nb.benchmarks import get_benchmark

        key = (run.paper, str(source))
        loaded = {} if loaded is None else loaded
        bench = get_benchmark(run.paper)
        if key not in loaded:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                loaded[key] = bench.load(source)
        if not bench.scored_on(run.record, loaded[key]):  # another answer key, edited items: the data given counts
            again = score_store(path, source=source, name=name, options=options)
            again.deviations.append(f"{path.name}: its run record was scored against other items than the data "
                                    "given (another answer key or edited items): scored again against them, the "
                                    "record rewritten")
            return again
        run.items = loaded[key]
    return run


def _store_meta(path: Path) -> dict[str, Any]:
    """The one run a store holds (its ``RunMeta``), told apart from others as every scorer tells runs apart
    (:class:`~vlamb_nb.run_identity.RunId`: model, revision, quantization, backend, endpoint, setting, decoding,
    prompts, data, seed); a store of several runs is refused, naming them."""
    from collections import Counter

    from vlamb_nb.run_identity import MixedRunsError, stored_answers
    from vlamb_nb.store import ANSWER, read_records

    recs = read_records(path)
    if not recs:
        raise DataError("an empty prediction store", source=str(path))
    first = next((r for r in recs if r.get("turn") == ANSWER), recs[0])
    named = Counter(str(r["benchmark"]) for r in recs if r.get("benchmark"))
    if named:
        try:  # the one reader of stored answers tells the runs apart (and names a record of another benchmark)
            stored_answers(path, named.most_common(1)[0][0], source=str(path))
        except MixedRunsError as e:
            raise DataError(f"the store holds several runs, which are never compared together: {e.runs}; compare "
                            "stores of one run each (vlamb-nb score -o run=N scores one of them)",
                            source=str(path)) from None
    meta = dict(first.get("run") or {})
    model = meta.get("model") or first.get("model") or {}
    meta["model"] = {"model_id": model} if isinstance(model, str) else dict(model)  # a model named by its id alone
    meta.setdefault("benchmark", first.get("benchmark"))
    meta.setdefault("setting", first.get("setting"))
    if not meta.get("benchmark"):
        raise DataError("not a prediction store (no benchmark in its records)", source=str(path))
    errors = [str(r.get("error") or "").strip() for r in recs]
    if all(errors):
        top = max(set(errors), key=errors.count).splitlines()[0][:160]
        raise DataError(f"{_model_name(meta['model'])} has no answers: every one of its {len(recs)} requests failed "
                        f"(most often: {top}); leave it out or run it again", source=str(path))
    return meta


def _model_name(model: dict[str, Any]) -> str:
    name = str(model.get("model_id") or "model")
    if model.get("quantization"):
        name += f" ({model['quantization']})"
    return name


def score_store(path: str | os.PathLike, *, source: Any, name: str | None = None,
                options: dict[str, Any] | None = None, record: bool = True) -> Run:
    """A prediction store scored against ``source`` (the data its run was asked about) by the paper's
    :meth:`~vlamb_nb.benchmarks.base.Benchmark.score_store`, as a :class:`Run`; ``options``: the run's options
    (a sweep's), the score options among them. ``record``: write the store's run record from this scoring
    (False: a view reading a run whose records its notebooks already wrote leaves them as they are)."""
    from vlamb_nb.benchmarks import get_benchmark

    path = Path(path)
    meta = _store_meta(path)
    paper, setting = str(meta["benchmark"]), str(meta.get("setting") or "")
    if source is None:  # a paper-profile run: the fetched release it stood on
        from vlamb_nb.datahome import release_source

        source = release_source(paper, meta.get("data"), origin=str(path))
    if source is None:
        raise DataError(f"a prediction store holds answers, not the {paper} items they answer: give the data it "
                        f"was run on (--source {paper}=PATH)", source=str(path))
    bench = get_benchmark(paper)
    options = dict(options or {})
    if (meta.get("data") or {}).get("kind") == "sample":  # the offline profile's run: scored as its notebook did
        options = {**bench.offline_score_options, **options}
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        items = bench.load(source)
        scored = bench.score_store(path, items, setting=setting, record=record, **options)
    from vlamb_nb.meta import deviation_lines

    devs = deviation_lines(meta.get("deviations") or [])
    if dup := getattr(scored.attrs.get("coverage"), "duplicates", 0):  # counted once, and said so
        devs.append(f"{dup} answer(s) in {path.name} repeat an answer under another request id: each counted once")
    if scored.attrs.get("differ"):
        devs.append(f"{path.name}: {scored.attrs['differ']}")
    return with_record(Run(model=name or _model_name(meta["model"]), paper=paper, setting=setting, scored=scored,
                           origin=str(path), data=meta.get("data"), deviations=devs,
                           endpoint=meta["model"].get("endpoint"), items=items,
                           stand_in=_stand_in(meta["model"], meta.get("spec"))))


def _sweep_runs(folder: Path, notes: list[str] | None = None) -> list[Run]:
    """Every model × benchmark × setting of a sweep whose store exists (its ``config.json``; the store names
    follow the one rule, ``paths.store_path``), as its run record (:func:`_store_run`: scored against the sweep's
    source only where it has none yet); where a source is not at hand (a sweep copied from the cluster it ran
    on), said in ``notes``."""
    from vlamb_nb.jsonl import read_json
    from vlamb_nb.paths import store_path
    from vlamb_nb.record import latest_store

    jobs = read_json(folder / "config.json", expect=list, what="a sweep's jobs")
    if not all(isinstance(j, dict) and j.get("model_name") for j in jobs):
        raise DataError("not a sweep's config.json (a list of jobs, each naming its model_name)",
                        source=str(folder / "config.json"))
    out = []
    loaded: dict[tuple[str, str], Any] = {}  # each source's items, read once for every store run on it
    multi_quant = len({j.get("model_name") for j in jobs}) < len(jobs)
    for j in jobs:
        name = str(j["model_name"]) + (f" ({j.get('quantization') or 'none'})" if multi_quant else "")
        for spec in j.get("benchmarks") or []:
            for setting in spec.get("settings") or []:
                p = latest_store(store_path(folder / "predictions", benchmark=spec["name"], model=j["model_name"],
                                            quantization=j.get("quantization"), setting=setting))
                if not p.is_file():
                    continue
                source = spec.get("source")
                out.append(_store_run(p, source, name=name, options=dict(spec.get("options") or {}),
                                      loaded=loaded))
                if notes is not None and _not_here(source):
                    notes.append(f"{spec['name']} {setting} of {name}: its data ({source or 'none given'}) is not "
                                 "at hand; compared from its run record (no thumbnails)")
    return out


def _fetched_source(paper: str, stores: list[Path]) -> Any:
    """The data a run stood on where it is on this machine (its stores' data identity: the fetched release of a
    paper-profile run, the demo published beside a release), or None (:func:`data_at_hand`)."""
    return data_at_hand(paper, _store_meta(stores[0]).get("data"), origin=str(stores[0]))


def _sample_source(paper: str, pdir: Path, stores: list[Path]) -> Path | None:
    """The generated sample an offline notebook ran on, found among the folders it left under ``pdir``: one the
    paper loads, with the stores' recorded number of items and every item they answered (other notebooks, such as
    the saliency study, leave samples of their own beside it). A folder named with the recorded seed goes first,
    then the shallowest; None when none holds them."""
    import re

    from vlamb_nb.benchmarks import get_benchmark
    from vlamb_nb.store import read_records

    data = _store_meta(stores[0]).get("data") or {}
    if data.get("kind") != "sample":
        return None
    seed = re.search(r"seed (\d+)", str(data.get("release", "")))
    asked = {str(r.get("item_id")) for s in stores for r in read_records(s) if r.get("item_id") is not None}
    bench = get_benchmark(paper)
    candidates = [pdir] + sorted(d for d in pdir.rglob("*") if d.is_dir() and len(d.relative_to(pdir).parts) <= 2)
    found = []
    for d in candidates:
        try:
            items = bench.load(d)
        except Exception:  # noqa: BLE001 - not a sample of this paper (a store folder, figures, ...): not a candidate
            continue
        ids = set(items[bench.id_column].astype(str)) if bench.id_column in getattr(items, "columns", ()) else set()
        n = data.get("n_loaded") or data.get("n_items")
        if asked <= ids and (n is None or len(items) == n):
            named = seed is not None and f"seed{seed.group(1)}" in d.name
            found.append((not named, len(d.relative_to(pdir).parts), str(d), d))
    return min(found)[3] if found else None


def _reproduce_runs(folder: Path, sources: Any, *, unloaded: list[str] | None = None,
                    failed: dict[str, str] | None = None, score_missing: bool = True) -> list[Run]:
    """The stores a reproduce run left under ``<run>/<paper>/``, scored against the source its notebook was
    given (``sources`` override), else the one generated sample the notebook wrote there; a model path's few
    answers (:data:`vlamb_nb.paths.MODEL_PATH_DIR`) are no run. A paper that cannot be loaded is left out, its line in
    ``unloaded``. ``failed``: where given, a paper whose stores cannot be read is left out with why (``{paper: why}``)
    and the other papers are still read (a page lists each paper's items apart); else it is refused."""
    from vlamb_nb.benchmarks import list_benchmarks
    from vlamb_nb.jsonl import read_json

    results = read_json(folder / "results.json", expect=dict, what="a reproduce run's notebooks")
    out = []
    left: list[str] = []
    for paper in list_benchmarks():
        if not (folder / paper).is_dir():
            continue
        try:
            out += _paper_runs(folder, paper, results, sources, left, score_missing=score_missing)
        except DataError as e:
            if failed is None:
                raise
            failed[paper] = str(e)
    if not out and not failed:
        raise DataError("no prediction stores under the run folder" + (f" ({'; '.join(left)})" if left else ""),
                        source=str(folder))
    if unloaded is not None:
        unloaded += left
    elif any("is not at hand" not in x for x in left):  # nowhere to say it: refuse rather than compare less
        raise DataError("; ".join(x for x in left if "is not at hand" not in x), source=str(folder))
    return out


def _paper_runs(folder: Path, paper: str, results: dict[str, Any], sources: Any, left: list[str], *,
                score_missing: bool = True) -> list[Run]:
    """One paper's stores under ``<run>/<paper>/`` (:func:`_reproduce_runs`), what was left out added to ``left``.
    Each store's run is its run record as its notebook wrote it (verified against the store; one that disagrees
    is refused); a store with no scored record is scored once, its record written (``score_missing=False``: left
    out, its line in ``left``). Where the data is at hand it is loaded for the prompts and images records name."""
    from vlamb_nb.benchmarks import BrokenPaper, get_benchmark
    from vlamb_nb.paths import MODEL_PATH_DIR
    from vlamb_nb.record import RecordMismatch, locate

    pdir = folder / paper
    try:
        settings = set(get_benchmark(paper).settings)
    except BrokenPaper as e:
        left.append(f"{e}; its runs under {folder.name}/{paper}/ are not compared")
        return []
    # a model path's stores (a few items through the offline profile's tiny checkpoint) show a path working,
    # not a model's scores: left out
    stores = sorted(s for s in pdir.rglob(f"{paper}__*.jsonl") if s.stem.split("__", 1)[1] in settings
                    and MODEL_PATH_DIR not in s.relative_to(pdir).parts)
    if not stores:
        return []
    entry = results.get(paper)
    given = (entry.get("parameters") if isinstance(entry, dict) else None) or {}
    if not isinstance(given, dict):
        raise DataError(f"the {paper} entry's parameters are not an object", source=str(folder / "results.json"))
    given_here = _source_for(paper, sources)
    source = given_here or given.get("source")
    if source is None:
        source = _fetched_source(paper, stores)
    if source is None:
        source = _sample_source(paper, pdir, stores)
        nested = {s.relative_to(pdir).parts[:-2] for s in stores} - {()}
        if source is None and nested:  # a split of other items (cropped images): the sample holds the rest
            main = [s for s in stores if not s.relative_to(pdir).parts[:-2]]
            source = _sample_source(paper, pdir, main) if main else None
            if source is not None:
                other = [s for s in stores if s not in main and _sample_source(paper, pdir, [s]) != source]
                for where in sorted({"/".join(s.relative_to(pdir).parts[:-2]) for s in other}):
                    left.append(f"{paper}: its stores under {where}/ answered items the notebook's sample does not "
                                "hold (another data set): not compared")
                stores = [s for s in stores if s not in other]
    if source is not None and not Path(str(source)).is_absolute() and (folder / str(source)).exists():
        source = folder / str(source)
    at_hand = given_here is not None or not _not_here(source)
    if not at_hand:  # a run folder copied from elsewhere: its records, or nothing
        left.append(f"{paper}: the data its notebook ran on ({source or 'none recorded'}) is not at hand; "
                    "compared from its stores' run records (no rescoring, no thumbnails)")

    def unrecorded(why: str) -> DataError:
        if source is None:
            return DataError(f"the {paper} notebook was given no source and left no generated sample that holds "
                             f"its answered items: give the data it ran on (--source {paper}=PATH)", source=str(pdir))
        return DataError(f"the data the {paper} notebook ran on is not at hand ({source}) and not every store "
                         f"has a scored run record ({why}): give the data (--source {paper}=PATH), or score the "
                         "stores where it is", source=str(pdir))

    out: list[Run] = []
    recorded: list[Run] = []
    for s in stores:
        try:
            run = record_run(locate(s), compared=score_missing)
        except DataError as e:
            if not score_missing:  # a page: said beside the items, never scored here
                left.append(f"{paper}: the store {s.relative_to(pdir.parent).as_posix()}: {_own_words(e)}: "
                            "not listed here")
                continue
            if isinstance(e, RecordMismatch):  # a record that disagrees is refused, never scored over
                raise
            if not at_hand:
                raise unrecorded(_own_words(e)) from None
            run = score_store(s, source=source)  # no scored record yet: scored once, its record written
        else:
            recorded.append(run)
        out.append(_split_named(run, s, pdir))
    if recorded and at_hand:  # the items a record names but does not hold: prompts and images
        import warnings

        items = next((r.items for r in out if r.items is not None), None)
        if items is None:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    items = get_benchmark(paper).load(source)
            except Exception as e:  # noqa: BLE001 - the items then show no image or built prompt, said on the page
                left.append(f"{paper}: the data its notebook ran on ({source}) could not be read ({reason(e)}): "
                            "its items show the prompts their records hold and no images")
        for run in recorded:
            run.items = items
    return out


def _own_words(e: DataError) -> str:
    """Why, without the file the error names (the store it belongs to is named beside it)."""
    why = reason(e)
    for where in {str(e.source), str(e.source).rsplit("/", 1)[-1]} if e.source else ():
        why = why.removeprefix(f"{where}: ")
    return why


def _split_named(run: Run, store: Path, pdir: Path) -> Run:
    """A store of another split (``<paper>/bias/<model>/``) kept apart: its folder named in its setting."""
    nested = store.relative_to(pdir).parts[:-2]
    if nested:
        run.setting = f"{run.setting} ({'/'.join(nested)})"
    return run


def _not_here(source: Any) -> bool:
    """No source, or a local file or folder that is not on this machine (a run folder or sweep copied from where
    it ran); a hub name or URL is no local path and is left to the paper's loader."""
    if source is None:
        return True
    text = str(source)
    return "://" not in text and Path(text).is_absolute() and not Path(text).exists()


def _records_of(stores: list[Path], *, name: str | None = None) -> list[Run] | None:
    """Each store's run, given as its scored run record (one per store), or None unless every store has one; a
    record that disagrees with its store, its data or itself is refused (:class:`~vlamb_nb.record.RecordMismatch`),
    never passed over for a rescoring that cannot happen here."""
    from vlamb_nb.record import RecordMismatch, locate

    try:
        return [record_run(locate(s), name=name) for s in stores]
    except RecordMismatch:
        raise
    except DataError:
        return None


# -- rendering ----------------------------------------------------------------------------------------------------
def _fmt(v: Any, d: int = 1) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    return f"{v:.{d}f}"


def _p(p: Any) -> str:
    from vlamb_nb.stats.result import format_p

    return format_p(p)


def _rank_text(r: dict[str, Any]) -> str:
    """``rank [low–high] of n``; where no interval could be drawn, the rank with the reason instead of ``nan``."""
    lo, hi = r.get("rank_low"), r.get("rank_high")
    if any(v is None or (isinstance(v, float) and not math.isfinite(v)) for v in (lo, hi)):
        units = r.get("n_clusters")
        why = (f"only {units} {r.get('ci_unit') or 'unit'} to resample" if isinstance(units, int | float)
               and math.isfinite(units) and units < 2 else "the resamples gave no finite value")
        return f"{r['rank']} of {r['of']} (no interval: {why})"
    return f"{r['rank']} [{int(lo)}–{int(hi)}] of {r['of']}"


def _md(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


#: the columns of a comparison's two tables, in every rendering (comparison.md, comparison.html)
VALUE_COLUMNS = ("paper", "setting", "metric", "slice", "model", "value [95% CI]", "n", "rank [95% interval]",
                 "dropped")
PAIR_COLUMNS = ("paper", "setting", "metric", "slice", "a", "b", "a − b [95% CI]", "discordant: a only / b only",
                "test", "p", "p (adj.)")
#: the columns of the tables' CSV files: every number in a column of its own
VALUE_EXPORT = ("paper", "setting", "metric", "slice", "model", "value", "ci_low", "ci_high", "n", "unit", "ci_unit",
                "n_clusters", "rank", "rank_low", "rank_high", "of", "dropped")
PAIR_EXPORT = ("paper", "setting", "metric", "slice", "model_a", "model_b", "value_a", "value_b", "diff", "ci_low",
               "ci_high", "n", "unit", "test", "p", "p_adjusted", "family", "discordant_a_only", "discordant_b_only")
DEMO_NOTE = ("A pipeline demo: stand-in models or generated samples are compared here, which measures nothing about "
             "any model; the comparison shows that the path from runs to tests works.")
VALUES_NOTE = ("Values on the items every model answered; intervals and ranks resample those items (whole images, "
               "pairs where items share one) with every model on the same resamples. Rank 1 is best; a tie shares "
               "the better rank.")
MCNEMAR_NOTE = ("McNemar counts items as independent; where items share an image or a pair, the interval (which "
                "resamples whole images or pairs) is the more cautious guide.")


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) else None


def display_rows(c: Comparison) -> tuple[list[list[tuple[str, Any]]], list[list[tuple[str, Any]]]]:
    """The values and the pairs as table text (:data:`VALUE_COLUMNS`, :data:`PAIR_COLUMNS`), each cell with its
    sort key (the number behind the text; None: sort by the text)."""
    values = []
    for r in c.values.to_dict(orient="records"):
        unit = r["unit"] if r["n"] == 1 else ("queries" if r["unit"] == "query" else r["unit"] + "s")
        values.append([(str(r["paper"]), None), (str(r["setting"]), None), (str(r["metric"]), None),
                       (str(r["slice"]), None), (str(r["model"]), None),
                       (f"{_fmt(r['value'])} [{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]", _num(r["value"])),
                       (f"{r['n']} {unit}", _num(r["n"])),
                       (_rank_text(r), _num(r["rank"])),
                       (str(r["dropped"]), _num(r["dropped"]))])
    pairs = []
    for r in c.pairs.to_dict(orient="records") if len(c.pairs) else []:
        pairs.append([(str(r["paper"]), None), (str(r["setting"]), None), (str(r["metric"]), None),
                      (str(r["slice"]), None), (str(r["model_a"]), None), (str(r["model_b"]), None),
                      (f"{_fmt(r['diff'])} [{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]", _num(r["diff"])),
                      _split(r), (str(r["test"]), None), (_p(r["p"]), _num(r["p"])),
                      (_p(r["p_adjusted"]), _num(r["p_adjusted"]))])
    return values, pairs


def _split(r: Mapping[str, Any]) -> tuple[str, Any]:
    """The discordant split of a McNemar test (the units only a has right / only b has right), else a dash."""
    a, b = r.get("discordant_a_only"), r.get("discordant_b_only")
    if _num(a) is None or _num(b) is None:
        return "–", None
    return f"{int(a)} / {int(b)}", float(a + b)


def export_rows(frame: Any, columns: Sequence[str]) -> tuple[list[str], list[list[Any]]]:
    """A frame's rows for a CSV file: the columns given (those it has), each value as it is (numbers unformatted;
    a missing number empty)."""
    cols = [c for c in columns if c in getattr(frame, "columns", ())]
    rows = [[None if isinstance(v, float) and not math.isfinite(v) else v for v in (r.get(c) for c in cols)]
            for r in (frame.to_dict(orient="records") if len(frame) else [])]
    return cols, rows


def family_note(c: Comparison) -> str:
    """How the p-values are adjusted: within each family (the pairs of one metric and slice), named by size."""
    corr = {"holm": "Holm", "bh": "Benjamini–Hochberg"}[c.correction]
    if not len(c.pairs):
        return ""
    sizes = sorted({int(n) for n in c.pairs["family"]})
    n = len(c.pairs.groupby(list(FAMILY), sort=False))
    size = f"{sizes[0]} pair{'s' if sizes[0] != 1 else ''}" if len(sizes) == 1 else \
        f"{sizes[0]}–{sizes[-1]} pairs"
    return (f"p {corr}-adjusted within each metric and slice ({n} famil{'y' if n == 1 else 'ies'} of {size}: the "
            "pairs of one number)")


def slice_tables(c: Comparison) -> list[dict[str, Any]]:
    """Per paper, setting and metric with slices: one row per model, one column per slice (the whole set first),
    each cell the value with its interval (sort key: the value), and its CSV rows (value, ci_low, ci_high, n per
    slice); what a reader scans for "which model fails most on this slice"."""
    out = []
    v = c.values
    if not len(v):
        return out
    for key, part in v.groupby(["paper", "setting", "metric"], sort=False):
        slices = list(dict.fromkeys(part["slice"]))
        if len(slices) < 2:
            continue
        models = list(dict.fromkeys(part["model"]))
        cells = {(r["model"], r["slice"]): r for r in part.to_dict(orient="records")}
        rows, raw = [], []
        for m in models:
            row, line = [(str(m), None)], [m]
            for sl in slices:
                r = cells.get((m, sl))
                if r is None:
                    row.append(("–", None))
                    line += [None] * 4
                    continue
                row.append((f"{_fmt(r['value'])} [{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]", _num(r["value"])))
                line += [_num(r["value"]), _num(r["ci_low"]), _num(r["ci_high"]), r["n"]]
            rows.append(row)
            raw.append(line)
        n = {sl: int(part[part["slice"] == sl]["n"].iloc[0]) for sl in slices}
        unit = str(part["unit"].iloc[0])
        out.append({"paper": key[0], "setting": key[1], "metric": key[2], "slices": slices,
                    "title": f"{key[2]} by slice ({key[0]} {key[1]})",
                    "columns": ["model", *[f"{sl} (n = {n[sl]})" for sl in slices]], "rows": rows, "unit": unit,
                    "export": (["model", *[f"{sl} {x}" for sl in slices for x in ("value", "ci_low", "ci_high",
                                                                                   "n")]], raw)})
    return out


def model_deviations(c: Comparison) -> tuple[list[str], dict[str, list[str]]]:
    """The deviations every model shares (sorted), and each model's own."""
    shared = set.intersection(*(set(m["deviations"]) for m in c.models)) if c.models else set()
    return sorted(shared), {m["model"]: [d for d in m["deviations"] if d not in shared] for m in c.models}


def markdown(c: Comparison) -> str:
    """The comparison for reading: values with intervals and ranks, then the paired tests, then the notes."""
    lines = [f"# {c.title}", ""]
    if c.baseline:
        lines += [f"Every model is compared with **{_md(c.baseline)}**.", ""]
    for a in c.allowed:
        lines += [f"> **Compared on request despite {_md(a)}.**", ""]
    values, pairs = display_rows(c)

    def table(columns: tuple[str, ...], rows: list[list[tuple[str, Any]]]) -> list[str]:
        return (["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
                + ["| " + " | ".join(_md(text) for text, _ in row) + " |" for row in rows])

    lines += table(VALUE_COLUMNS, values) + ["", VALUES_NOTE, ""]
    if c.demo:
        lines = lines[:2] + [f"> **Pipeline demo.** {DEMO_NOTE}", ""] + lines[2:]
    if pairs:
        lines += [f"**Paired differences** (a − b on the same items, percentage points; {family_note(c)}; "
                  "discordant: the units only a has right / only b has right)", ""] + table(PAIR_COLUMNS, pairs) \
            + ["", MCNEMAR_NOTE, ""]
    if c.notes:
        lines += ["**Notes**", ""] + [f"- {_md(n)}" for n in c.notes] + [""]
    shared, own = model_deviations(c)
    lines += ["**Models** (each model's own deviations from the papers' setups; those of every model below)", ""]
    for m in c.models:
        lines.append(f"- **{_md(m['model'])}**: {', '.join(m['runs'])}; own deviations: "
                     f"{_md('; '.join(own[m['model']])) if own[m['model']] else 'none'}")
    if shared:
        lines += ["", "Deviations of every model:", ""] + [f"- {_md(d)}" for d in shared]
    lines.append("")
    return "\n".join(lines)


#: above this many pairs (all pairs of many models) the forest panel draws only each metric's pairs with its
#: top-ranked model, and says so; every pair stays in the table
MAX_FOREST_PAIRS = 40


def _forest_rows(c: Comparison, metrics: list[tuple]) -> tuple[list[dict[str, Any]], str]:
    """The pairs the forest panel draws, grouped by metric, and the panel's title (which says what is left out)."""
    rows = c.pairs.to_dict(orient="records") if len(c.pairs) else []
    by_metric = [[r for r in rows if (r["paper"], r["setting"], r["metric"], r["slice"]) == key] for key in metrics]
    pairs = [r for group in by_metric for r in group]  # the pairs of the metrics (and slices) drawn
    if c.baseline is not None or len(pairs) <= MAX_FOREST_PAIRS:
        return pairs, "paired differences"
    drawn = []
    for key, group in zip(metrics, by_metric, strict=True):
        v = c.values[(c.values["paper"] == key[0]) & (c.values["setting"] == key[1])
                     & (c.values["metric"] == key[2]) & (c.values["slice"] == key[3])]
        top = v.sort_values("rank", kind="stable")["model"].iloc[0] if len(v) else None
        drawn += [r for r in group if top in (r["model_a"], r["model_b"])]
    return drawn, (f"paired differences with each metric's top-ranked model\n({len(drawn)} of {len(pairs)} pairs "
                   "drawn; every pair is in the table)")


#: the figure's row labels and legend: readable where the page shows the figure at its width (>= 9 pt)
LABEL_PT = 9
#: the figure draws every slice only while its pairs (slices × pairs of models) stay this few, so it reads at a
#: glance (two models on six slices); past it, each metric's whole set, and says so (the slices are in the tables)
MAX_SLICE_PAIRS = 12


def _drawn_slices(keys: list[tuple], n_models: int) -> tuple[list[tuple], bool]:
    """The (paper, setting, metric, slice) rows the figure draws: all of them, or, past :data:`MAX_SLICE_PAIRS`,
    each metric's whole set (its first row: ``compare`` puts the whole set before its slices); whether it left
    slices out."""
    if len(keys) * n_models * (n_models - 1) // 2 <= MAX_SLICE_PAIRS:
        return keys, False
    first: dict[tuple, tuple] = {}
    for k in keys:
        first.setdefault(k[:3], k)
    return list(first.values()), len(first) < len(keys)


def figure(c: Comparison):
    """Left: each pair's difference with its interval (a forest plot; filled where the adjusted p < 0.05),
    one row per pair, grouped by metric (with many models, the pairs with each metric's top-ranked model); each
    paper's first declared metric only (its headline; the others are in the tables, said in the panel).
    Right: each model's rank with its interval, per metric, one colour+marker per model, named in a legend
    below both panels (clear of their axis labels). Model names in any script are drawn with the style's
    fallback fonts; a character no installed font has becomes a counted placeholder."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    from vlamb_nb.plots import NEUTRAL, PALETTE, drawable_text, new_figure, placeholder_note, series_styles

    replaced = 0

    def shown(text: Any) -> str:
        nonlocal replaced
        out, k = drawable_text(text)
        replaced += k
        return out

    metrics = list(dict.fromkeys(zip(c.values["paper"], c.values["setting"], c.values["metric"],
                                     c.values["slice"], strict=True)))
    first = {}  # each paper's headline: the first metric it declares (Acc@0.5, not @0.75 and @0.9)
    for paper, _, metric, _ in metrics:
        first.setdefault(paper, metric)
    headline_only = len(set(m for _, _, m, _ in metrics)) > len(first)
    metrics = [k for k in metrics if k[2] == first[k[0]]]
    models = list(dict.fromkeys(c.values["model"]))
    style = dict(zip(models, series_styles(len(models)), strict=True))
    metrics, sliced = _drawn_slices(metrics, len(models))
    pairs, forest_title = _forest_rows(c, metrics)
    if sliced or headline_only:
        forest_title += ("\n(" + ", ".join(x for x in ("each paper's first metric" if headline_only else "",
                                                        "on its whole set" if sliced else "") if x)
                         + f";\nevery {'metric and ' if headline_only else ''}slice is in the tables)")
    # as many legend columns as the longest name lets fit across the 10 in figure at LABEL_PT (about 0.075 in
    # a character, plus the marker)
    longest = max((len(str(m)) for m in models), default=1)
    legend_cols = max(1, min(len(models), 4, int(9.5 // (longest * 0.075 + 0.45))))
    legend_rows = math.ceil(len(models) / legend_cols)
    # labels at 9 pt (two lines each) need about 0.45 in per row to stay readable on the page
    fig, (ax_d, ax_r) = new_figure(10.0, 1.8 + 0.45 * max(len(pairs), len(metrics) * len(models) * 0.6, 1)
                                   + 0.2 * legend_rows, ncols=2, gridspec_kw={"width_ratios": [1.4, 1.0]},
                                   layout="constrained")
    labels = []
    for y, r in enumerate(pairs):
        sig = r.get("p_adjusted") is not None and math.isfinite(r["p_adjusted"]) and r["p_adjusted"] < 0.05
        lo, hi = r["ci_low"], r["ci_high"]
        ax_d.errorbar([r["diff"]], [-y], xerr=[[max(r["diff"] - lo, 0)], [max(hi - r["diff"], 0)]], fmt="o",
                      color=PALETTE[0], capsize=3, markerfacecolor=PALETTE[0] if sig else "white", zorder=3)
        labels.append((-y, shown(f"{r['metric']} · {r['slice']} ({r['paper']} {r['setting']})\n"
                                 f"{r['model_a']} − {r['model_b']}")))
    ax_d.axvline(0, color="#888888", ls="--", lw=1, zorder=1)
    if labels:
        ax_d.set_yticks([t for t, _ in labels], [s for _, s in labels], fontsize=LABEL_PT)
    ax_d.set_xlabel("difference, percentage points\n(95% CI; filled: adjusted p < 0.05)")
    ax_d.set_title(forest_title, loc="left", fontsize=9)
    rlabels = []
    step = 1.0 / (len(models) + 1)
    for i, key in enumerate(metrics):
        sub = c.values[(c.values["paper"] == key[0]) & (c.values["setting"] == key[1])
                       & (c.values["metric"] == key[2]) & (c.values["slice"] == key[3])]
        for j, m in enumerate(models):
            r = sub[sub["model"] == m]
            if r.empty:
                continue
            r = r.iloc[0]
            color, marker = style[m]
            yy = -i - (j + 1) * step + 0.5
            if r["rank_low"] is not None and not (isinstance(r["rank_low"], float) and math.isnan(r["rank_low"])):
                ax_r.plot([r["rank_low"], r["rank_high"]], [yy, yy], color=color, lw=2, alpha=0.6)
            ax_r.plot([r["rank"]], [yy], marker=marker, color=color, ms=5, ls="")
        rlabels.append((-i, f"{key[2]} · {key[3]}\n({key[0]} {key[1]})"))
    ax_r.set_yticks([t for t, _ in rlabels], [shown(s) for _, s in rlabels], fontsize=LABEL_PT)
    ax_r.set_xlim(0.5, len(models) + 0.5)
    if len(models) <= 15:
        ax_r.set_xticks(range(1, len(models) + 1))
    else:
        ax_r.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax_r.invert_xaxis()
    ax_r.set_xlabel("rank (1 = best;\n95% interval over resamples)")
    ax_r.set_title("ranks", loc="left", fontsize=9)
    handles = [Line2D([], [], color=style[m][0], marker=style[m][1], ls="", ms=5) for m in models]
    # outside the axes, below both panels: the constrained layout keeps it clear of every axis label
    fig.legend(handles, [shown(m) for m in models], loc="outside lower center", fontsize=LABEL_PT,
               ncols=legend_cols, frameon=False)
    for ax in (ax_d, ax_r):
        ax.grid(axis="y", visible=False)
    if not pairs:
        ax_d.text(0.5, 0.5, "no pairs", transform=ax_d.transAxes, ha="center", color=NEUTRAL)
    title = shown(c.title)
    note = placeholder_note(replaced)
    fig.suptitle(title + (f"\n{note}" if note else ""), fontsize=9, x=0.01, ha="left")
    return fig


# -- the committed example -----------------------------------------------------------------------------------------
def example(files: Sequence[str | os.PathLike], *, title: str, n_resamples: int = N_RESAMPLES,
            seed: int = 0) -> Comparison:
    """A committed example: released per-item runs (a paper's own files) compared on their common rows, each
    origin by its file name (where the files lie on this machine is no part of the result)."""
    out = compare(files, n_resamples=n_resamples, seed=seed, title=title)
    for m in out.models:
        m["origins"] = [Path(o).name for o in m["origins"]]
    return out


class _CallableModule(types.ModuleType):
    """``vlamb_nb.compare(runs, ...)`` reads as the one thing this module does; the module stays importable as
    a module (``from vlamb_nb.compare import compare, Run``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Comparison:
        return compare(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
