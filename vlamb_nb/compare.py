"""Compare your own models on the same items: values, paired differences, tests and ranks per headline metric.

A model author's most common question is "is model A better than model B here?". The report card answers
"where does one model stand among the published ones"; this module answers the paired question, on items both
models answered:

- every model's value of each paper's headline metric with its interval, on the items that *all* compared
  models answered (the others are dropped and counted, never compared across different items);
- every pair's difference on those items, both models resampled together (whole images for Ref-Adv and
  RACQUET, whole pairs for MUCAR), tested with McNemar for 0/1 scores (exact below 25 discordant items) and the
  paired bootstrap for continuous ones (F1@t, explanation scores, shares), Holm-adjusted over the family
  (Benjamini–Hochberg on request), and each model's rank with its interval over the same resamples.

The statistics are :mod:`vlamb_nb.stats` (paired bootstrap, McNemar, Holm/BH) and the resample weights and
rank rule of :mod:`vlamb_nb.report_card`; this module only finds each paper's per-item scores and lines the
runs up. A RUN is a ``reproduce`` run folder, a sweep's output folder (every model in it), a prediction store
file (scored against the items it was asked about, ``sources``) or an official Ref-Adv per-row file. Runs of
different data (``RunMeta``'s ``data``: kind, release, revision) or of different settings are refused unless
asked for, and a run on a generated sample is compared only with other sample runs.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import shutil
import sys
import tempfile
import types
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vlamb_nb.errors import DataError, NotAvailableError, SettingError

N_RESAMPLES = 2000
#: the error a store replay gives a request the store does not hold: that item was not asked in this run
NOT_STORED = "not in the prediction store (not asked in this run)"
#: what each kind of score is tested with
TESTS = {"binary": "McNemar", "mean": "paired bootstrap", "share": "paired bootstrap",
         "macro_f1": "paired bootstrap"}


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


@dataclass
class Metric:
    """One headline metric on the common items: per-run values in the same item order."""

    metric: str
    slice: str
    kind: str  # binary | mean | share | macro_f1
    unit: str
    values: list[np.ndarray]
    clusters: np.ndarray | None = None
    ci_unit: str = ""
    gold: np.ndarray | None = None
    higher_is_better: bool = True


# -- each paper's per-item scores (from its score/headline code) --------------------------------------------
def _flag(col: Any) -> np.ndarray:
    """0/1 from a correctness column whose missing values (refusals, unparsed answers) count as wrong."""
    import pandas as pd

    return pd.Series(col).map(lambda v: 1.0 if (isinstance(v, bool | np.bool_ | int | float | np.integer |
                                                             np.floating) and not pd.isna(v) and bool(v))
                              else 0.0).to_numpy(float)


def _item_key(paper: str, scored: Any) -> Any:
    """The column that names an item across runs (Ref-Adv: the release's row, shared by official files)."""
    for col in {"refadv": ("row_idx", "id"), "mucar": ("uid", "item_id")}.get(paper, ("item_id", "id")):
        if col in scored.columns:
            return scored[col].astype(str)
    raise DataError(f"{paper}: the scored run has no item id column")


def _answered(paper: str, scored: Any) -> Any:
    """The scored rows of items this run answered (a replayed store's unasked items removed), keyed."""
    df = scored.copy()
    if "error" in df.columns:
        df = df[df["error"].astype(str) != NOT_STORED]
    if paper == "racquet" and "subset" in df.columns:
        df = df[df["subset"] == "general"]
    df = df.assign(_key=_item_key(paper, df).to_numpy())
    return df.drop_duplicates("_key").set_index("_key", drop=False)


def _metrics(paper: str, frames: list[Any]) -> tuple[list[Metric], list[str]]:
    """The paper's headline metrics on already aligned frames (same items, same order); notes for what is not."""
    from vlamb_nb.stats.ranking import plural

    first = frames[0]
    if paper == "vague":
        out = [Metric("accuracy", "all", "binary", "item", [_flag(f["correct"]) for f in frames])]
        if "subset" in first.columns:
            for subset in sorted(set(first["subset"].astype(str))):
                m = (first["subset"].astype(str) == subset).to_numpy()
                out.append(Metric("accuracy", subset, "binary", "item", [_flag(f["correct"])[m] for f in frames]))
        return out, []
    if paper == "mucar":
        from vlamb_nb.benchmarks.mucar.score import group_frame

        groups = [group_frame(f.assign(correct=_flag(f["correct"]))) for f in frames]
        order = groups[0]["group"].astype(str).to_numpy()
        acc_p = [g.set_index(g["group"].astype(str))["all_correct"].reindex(order).to_numpy(float) for g in groups]
        return [Metric("Acc_p", "Overall", "binary", "pair", acc_p),
                Metric("Acc_q", "Overall", "binary", "query", [_flag(f["correct"]) for f in frames],
                       clusters=first["group"].astype(str).to_numpy(), ci_unit="pair")], []
    if paper == "vflute":
        from vlamb_nb.benchmarks.vflute.score import adjusted_predictions

        gold = first["label_true"].to_numpy(int)
        out = []
        for pct in (0, 60):
            preds = [adjusted_predictions(gold, f["label_pred_filled"].to_numpy(int),
                                          f["explanation_score"].to_numpy(float), pct) for f in frames]
            out.append(Metric(f"F1@{pct}", "overall", "macro_f1", "item", [p.astype(float) for p in preds],
                              gold=gold))
        out.append(Metric("explanation score", "overall", "mean", "item",
                          [100.0 * f["explanation_score"].to_numpy(float) for f in frames]))
        return out, []
    if paper == "refadv":
        images = first["file_name"].astype(str).to_numpy() if "file_name" in first.columns else None
        return [Metric("Acc@0.5", "overall", "binary", "row",
                       [(f["iou"].astype(float).fillna(0.0).to_numpy() >= 0.5).astype(float) for f in frames],
                       clusters=images, ci_unit="image" if images is not None else "")], []
    if paper == "racquet":
        if "label" not in first.columns or not all(f["label"].notna().any() for f in frames):
            return [], ["racquet: no judge labels in every run: shares need the A/B/C judge (skipped)"]
        images = first["image_url"].astype(str).to_numpy() if "image_url" in first.columns else None
        return [Metric(f"{name} share", "GENERAL", "share", "response",
                       [100.0 * (f["label"] == label).to_numpy(float) for f in frames], clusters=images,
                       ci_unit="image" if images is not None else "", higher_is_better=better)
                for label, name, better in (("A", "Explicit", True), ("C", "High Risk", False))], []
    return [], [f"{paper}: no per-item headline score known; not compared ({plural('run')} kept as given)"]


def _common(paper: str, runs: list[Run]) -> tuple[list[Any], dict[str, int], int]:
    """Each run's rows on the items all of them answered, in one order; how many each run lost; MUCAR drops
    whole pairs that are not complete in every run (a pair is right only when all its queries are)."""
    frames = [_answered(paper, r.scored) for r in runs]
    keys = set(frames[0].index)
    for f in frames[1:]:
        keys &= set(f.index)
    if paper == "mucar" and keys:
        union: dict[str, set[str]] = {}
        for f in frames:
            for k, g in zip(f.index, f["group"].astype(str), strict=True):
                union.setdefault(g, set()).add(k)
        keys = {k for g, ks in union.items() if ks <= keys for k in ks}
    order = sorted(keys, key=lambda k: (len(k), k))
    dropped = {r.model: int(len(f) - len(keys)) for r, f in zip(runs, frames, strict=True)}
    return [f.loc[order].reset_index(drop=True) for f in frames], dropped, len(order)


# -- data identity and settings --------------------------------------------------------------------------------
def _data_label(d: dict[str, Any] | None) -> str:
    if not d:
        return "unknown data"
    if d.get("kind") == "sample":
        return f"a generated sample ({d.get('label') or d.get('release') or 'sample'})"
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
        return (f"{paper}: every run is on a generated sample ({_data_label(known[0].data)}): a pipeline check, "
                "not a measurement of the models")
    unknown = [r.model for r in runs if not r.data]
    tail = f"; unknown for {', '.join(unknown)}" if unknown else ""
    return f"{paper}: data {_data_label(known[0].data)}{tail}"


# -- the statistics of one metric ------------------------------------------------------------------------------
def _weighted(metric: Metric, values: np.ndarray):
    from vlamb_nb.stats.ranking import weighted_mean

    if metric.kind == "macro_f1":
        from vlamb_nb.benchmarks.vflute.score import weighted_macro_f1

        return weighted_macro_f1(metric.gold, values.astype(int))
    return weighted_mean(values / 100.0 if metric.kind in ("mean", "share") else values)


def _point_scale(metric: Metric) -> float:
    """Per-item values in percent for means and shares (already scaled), fractions for 0/1 and F1 (×100)."""
    return 1.0 if metric.kind in ("mean", "share") else 100.0


def _pair_test(metric: Metric, a: np.ndarray, b: np.ndarray, *, n_resamples: int, seed: int) -> dict[str, Any]:
    """The paired difference a − b (percentage points) with its interval, and the paper-appropriate test."""
    from vlamb_nb import stats

    scale = _point_scale(metric)
    statistic = stats.macro_f1_statistic(metric.gold) if metric.kind == "macro_f1" else None
    boot = stats.paired_bootstrap(a.astype(int) if statistic is not None else a,
                                  b.astype(int) if statistic is not None else b, statistic,
                                  n_resamples=n_resamples, seed=seed, clusters=metric.clusters)
    out = {"diff": scale * boot.estimate, "ci_low": scale * boot.ci_low, "ci_high": scale * boot.ci_high,
           "ci_method": boot.method}
    if metric.kind == "binary":
        mc = stats.mcnemar(a, b)
        out.update(p=float(mc.p), test=mc.method, discordant_a_only=int(mc.extra["discordant_a_only"]),
                   discordant_b_only=int(mc.extra["discordant_b_only"]))
    else:
        out.update(p=float(boot.p), test=boot.method, discordant_a_only=None, discordant_b_only=None)
    return out


def _ranks(draws: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """(models, resamples) ranks, 1 = best, a tie shares the better rank (the report card's rule)."""
    sign = 1.0 if higher_is_better else -1.0
    d = sign * draws
    return 1 + (d[None, :, :] > d[:, None, :]).sum(axis=1)


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

    def to_dict(self) -> dict[str, Any]:
        from vlamb_nb.stats.ranking import _clean

        return _clean({"title": self.title, "correction": self.correction, "baseline": self.baseline,
                       "allowed": self.allowed, "notes": self.notes, "models": self.models,
                       "values": self.values.to_dict(orient="records"),
                       "pairs": self.pairs.to_dict(orient="records")})

    def markdown(self) -> str:
        return markdown(self)

    def figure(self):
        return figure(self)

    def save(self, directory: str | os.PathLike, *, name: str = "comparison", figure_dir: Any = None) -> list[Path]:
        """``<directory>/<name>.md`` and ``.json``, and the figure beside them (or under ``figure_dir``)."""
        from vlamb_nb.plots import save_figure

        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{name}.md").write_text(self.markdown(), encoding="utf-8")
        (d / f"{name}.json").write_text(json.dumps(self.to_dict(), indent=2, ensure_ascii=False, allow_nan=False),
                                        encoding="utf-8")
        written = [d / f"{name}.md", d / f"{name}.json"]
        if len(self.values):
            import matplotlib.pyplot as plt

            fig = self.figure()
            if figure_dir is None:
                save_figure(fig, d.name, name, directory=d.parent)
                written += [d / f"{name}.png", d / f"{name}.pdf"]
            else:
                save_figure(fig, "compare", name, directory=figure_dir)
                written += [Path(figure_dir) / "compare" / f"{name}.{x}" for x in ("png", "pdf")]
            plt.close(fig)
        return written


def compare(runs: Iterable[Any], *, baseline: str | None = None, correction: str = "holm",
            allow_different_data: bool = False, allow_different_settings: bool = False,
            sources: Mapping[str, Any] | str | None = None, n_resamples: int = N_RESAMPLES, seed: int = 0,
            title: str = "Model comparison") -> Comparison:
    """Compare models on the items they all answered (see the module doc); ``runs``: paths (run folders, sweep
    folders, store files, official Ref-Adv files) or :class:`Run` objects. ``baseline``: compare every model with
    this one instead of all pairs. ``sources``: the data a bare store was run on (``{paper: path}``, or one path)."""
    import pandas as pd

    from vlamb_nb import stats
    from vlamb_nb.stats.ranking import interval

    if correction not in ("holm", "bh"):
        raise SettingError(f"unknown correction {correction!r}; use holm or bh")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 100:
        raise SettingError(f"n_resamples must be an integer of at least 100 (intervals and ranks need them), got "
                           f"{n_resamples!r}")
    loaded: list[Run] = []
    for r in runs:
        loaded += [r] if isinstance(r, Run) else load_runs(r, sources=sources)
    if not loaded:
        raise DataError("nothing to compare: no runs found")
    _unique_names(loaded)
    models = list(dict.fromkeys(r.model for r in loaded))
    if baseline is not None and baseline not in models:
        raise SettingError(f"baseline {baseline!r} is not one of the compared models: {', '.join(models)}")
    notes: list[str] = []
    allowed: list[str] = []
    by_paper: dict[str, list[Run]] = {}
    for r in loaded:
        by_paper.setdefault(r.paper, []).append(r)
    value_rows: list[dict[str, Any]] = []
    pair_rows: list[dict[str, Any]] = []
    for paper, pruns in by_paper.items():
        names = list(dict.fromkeys(r.model for r in pruns))
        if len(names) < 2:
            notes.append(f"{paper}: only {names[0]} ran it; nothing to compare")
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
        shared = sorted(set.intersection(*(set(s) for s in settings.values())))
        for k, setting in enumerate(shared):
            sruns = [next(r for r in pruns if r.model == m and r.setting == setting) for m in names]
            frames, dropped, n_common = _common(paper, sruns)
            lost = {m: d for m, d in dropped.items() if d}
            notes.append(f"{paper} {setting}: {n_common} items answered by every model"
                         + (f"; dropped (answered by only some): {', '.join(f'{m} {d}' for m, d in lost.items())}"
                            if lost else ""))
            if not n_common:
                continue
            metrics, more = _metrics(paper, frames)
            notes += more
            for j, metric in enumerate(metrics):
                mseed = seed + 1000 * k + 10 * j
                n = len(metric.values[0])
                if n == 0:
                    continue
                from vlamb_nb.stats.ranking import resample_weights

                w = resample_weights(n, metric.clusters, n_resamples=n_resamples, seed=mseed)
                ones = np.ones((1, n))
                points = np.array([float(_weighted(metric, v)(ones)[0]) for v in metric.values])
                draws = np.vstack([_weighted(metric, v)(w) for v in metric.values])
                point_rank = _ranks(points[:, None], metric.higher_is_better)[:, 0]
                ok = np.isfinite(draws).all(axis=0)
                ranks = _ranks(draws[:, ok], metric.higher_is_better) if ok.any() else None
                base = {"paper": paper, "setting": setting, "metric": metric.metric, "slice": metric.slice}
                n_units = int(len(set(metric.clusters.tolist()))) if metric.clusters is not None else n
                for i, m in enumerate(names):
                    lo, hi = interval(draws[i])
                    rl, rh = (np.percentile(ranks[i], [2.5, 97.5]) if ranks is not None else (math.nan, math.nan))
                    value_rows.append({**base, "model": m, "value": points[i], "ci_low": lo, "ci_high": hi,
                                       "n": n, "unit": metric.unit, "ci_unit": metric.ci_unit or metric.unit,
                                       "n_clusters": n_units, "higher_is_better": metric.higher_is_better,
                                       "rank": int(point_rank[i]),
                                       "rank_low": int(math.floor(rl)) if math.isfinite(rl) else None,
                                       "rank_high": int(math.ceil(rh)) if math.isfinite(rh) else None,
                                       "of": len(names), "dropped": dropped[m]})
                pairs = ([(m, baseline) for m in names if m != baseline] if baseline is not None
                         else list(itertools.combinations(names, 2)))
                for a, b in pairs:
                    ia, ib = names.index(a), names.index(b)
                    t = _pair_test(metric, metric.values[ia], metric.values[ib], n_resamples=n_resamples, seed=mseed)
                    pair_rows.append({**base, "model_a": a, "model_b": b, "value_a": points[ia],
                                      "value_b": points[ib], **t, "n": n, "unit": metric.unit,
                                      "ci_unit": metric.ci_unit or metric.unit, "kind": metric.kind})
    pairs_df = pd.DataFrame(pair_rows)
    if len(pairs_df):
        adjust = stats.holm if correction == "holm" else stats.benjamini_hochberg
        pairs_df["p_adjusted"] = adjust(pairs_df["p"].to_numpy(float))
        pairs_df["family"] = len(pairs_df)
    value_cols = ["paper", "setting", "metric", "slice", "model", "value", "ci_low", "ci_high", "n", "unit",
                  "ci_unit", "n_clusters", "higher_is_better", "rank", "rank_low", "rank_high", "of", "dropped"]
    meta = []
    for m in models:
        rs = [r for r in loaded if r.model == m]
        meta.append({"model": m, "origins": sorted({r.origin for r in rs}),
                     "runs": [f"{r.paper}/{r.setting}" for r in rs],
                     "data": {f"{r.paper}/{r.setting}": r.data for r in rs},
                     "deviations": sorted({d for r in rs for d in r.deviations})})
    return Comparison(pd.DataFrame(value_rows, columns=value_cols), pairs_df, notes, meta, correction, baseline,
                      title, allowed)


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
        for i, (r, host) in enumerate(zip(group, hosts, strict=True), 1):
            where = host if by_host else "/".join(Path(r.origin).parts[-2:]) or str(i)
            r.model = f"{r.model} @ {where}" if by_host else f"{r.model} ({where})"
        for i, r in enumerate(group, 1):
            if sum(x.model == r.model for x in group) > 1:
                r.model = f"{r.model} #{i}"


# -- reading RUNs ------------------------------------------------------------------------------------------------
def load_runs(path: Any, *, sources: Mapping[str, Any] | str | None = None) -> list[Run]:
    """The runs in a RUN: a sweep folder (``config.json``), a reproduce run folder (``results.json``), a
    prediction store or an official Ref-Adv per-row file."""
    p = Path(path)
    if p.is_dir():
        if (p / "config.json").is_file() and (p / "predictions").is_dir():
            return _sweep_runs(p)
        if (p / "results.json").is_file():
            return _reproduce_runs(p, sources)
        raise DataError("not a sweep folder (config.json + predictions/) nor a reproduce run folder "
                        "(results.json)", source=str(p))
    if not p.is_file():
        raise DataError("no such run file or folder", source=str(p))
    return [_file_run(p, sources)]


def _source_for(paper: str, sources: Mapping[str, Any] | str | os.PathLike | None) -> Any:
    if sources is None:
        return None
    if isinstance(sources, str | os.PathLike):
        return sources
    return sources.get(paper)


def _file_run(path: Path, sources: Any, *, name: str | None = None, options: dict[str, Any] | None = None) -> Run:
    from vlamb_nb.benchmarks.refadv.score import _is_official

    if path.suffix == ".jsonl" and _is_official(path):
        from vlamb_nb.benchmarks.refadv.score import read_official_predictions

        scored = read_official_predictions(path)
        model = str(scored["model"].iloc[0]).replace("Qwen/", "")
        return Run(model=name or model, paper="refadv", setting=str(scored["prompt_id"].iloc[0]), scored=scored,
                   origin=str(path), data=RELEASED_REFADV)
    return score_store(path, source=_source_for(_store_meta(path)["benchmark"], sources), name=name,
                       options=options)


#: the data identity of the official Ref-Adv per-row files: the released Ref-Adv-s rows
RELEASED_REFADV = {"kind": "release", "release": "hub:dddraxxx/ref-adv-s", "revision": None, "n_items": 1142,
                   "label": "Ref-Adv-s (released per-row predictions)"}


def _store_meta(path: Path) -> dict[str, Any]:
    """The one run a store holds (its ``RunMeta``); a store of several runs is refused, naming them."""
    from vlamb_nb.store import read_records

    recs = read_records(path)
    if not recs:
        raise DataError("an empty prediction store", source=str(path))
    metas: dict[str, dict[str, Any]] = {}
    for r in recs:
        meta = dict(r.get("run") or {})
        model = dict(meta.get("model") or r.get("model") or {})
        meta.setdefault("benchmark", r.get("benchmark"))
        meta.setdefault("setting", r.get("setting"))
        meta["model"] = model
        ident = json.dumps([model.get("model_id"), model.get("quantization"), model.get("revision"),
                            model.get("endpoint"), meta.get("setting")], default=str)
        metas.setdefault(ident, meta)
    if len(metas) > 1:
        desc = "; ".join(f"{m['model'].get('model_id')} {m.get('setting')}" for m in metas.values())
        raise DataError(f"the store holds {len(metas)} runs ({desc}); compare stores of one run each",
                        source=str(path))
    meta = next(iter(metas.values()))
    if not meta.get("benchmark"):
        raise DataError("not a prediction store (no benchmark in its records)", source=str(path))
    return meta


class _StoredAnswers:
    """A model that answers only from a store: replaying a finished run through the paper's own steps (turns,
    parsing, scoring), so a store is scored exactly as its run was. A request the store lacks gets an error
    marking the item as not asked."""

    def __init__(self, info: Any) -> None:
        self.info = info

    def generate(self, requests: Sequence[Any]) -> list[Any]:
        from vlamb_nb.models.base import Generation

        return [Generation(request_id=r.id, error=NOT_STORED, finish_reason="error") for r in requests]

    def score_options(self, request: Any, options: Sequence[str]) -> list[float]:
        raise NotAvailableError("a stored run cannot score options")


def _model_name(model: dict[str, Any]) -> str:
    name = str(model.get("model_id") or "model")
    if model.get("quantization"):
        name += f" ({model['quantization']})"
    return name


def score_store(path: str | os.PathLike, *, source: Any, name: str | None = None,
                options: dict[str, Any] | None = None) -> Run:
    """A prediction store scored against ``source`` (the data its run was asked about), as a :class:`Run`."""
    from vlamb_nb.benchmarks import get_benchmark
    from vlamb_nb.models.base import ModelInfo

    path = Path(path)
    meta = _store_meta(path)
    paper, setting = str(meta["benchmark"]), str(meta.get("setting") or "")
    if source is None:
        raise DataError(f"a prediction store holds answers, not the {paper} items they answer: give the data it "
                        f"was run on (--source {paper}=PATH)", source=str(path))
    bench = get_benchmark(paper)
    info = ModelInfo(**{k: v for k, v in meta["model"].items() if k in ModelInfo.__dataclass_fields__})
    opts = dict(options or {})
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if paper == "refadv":
            scored = bench.score_store(path, source=source, setting=setting, model=info.model_id,
                                       **{k: v for k, v in opts.items() if k in ("style", "repair_text")})
        else:
            items = bench.load(source)
            with tempfile.TemporaryDirectory() as tmp:  # the replay never writes into the user's store
                copy = Path(tmp) / path.name
                shutil.copyfile(path, copy)
                scored = bench.evaluate(_StoredAnswers(info), items, setting, store=copy, progress=False, **opts)
    devs = [_deviation_line(d) for d in meta.get("deviations") or []]
    return Run(model=name or _model_name(meta["model"]), paper=paper, setting=setting, scored=scored,
               origin=str(path), data=meta.get("data"), deviations=devs, endpoint=info.endpoint)


def _deviation_line(d: Any) -> str:
    if isinstance(d, dict):
        from vlamb_nb.meta import Deviation

        known = {k: d[k] for k in ("what", "paper", "ours", "affects") if k in d}
        try:
            return str(Deviation(**known))
        except TypeError:
            return str(d)
    return str(d)


def _sweep_runs(folder: Path) -> list[Run]:
    """Every model × benchmark × setting of a sweep whose store exists, scored against the sweep's sources (its
    ``config.json``; the store names follow the one rule, ``paths.store_path``)."""
    from vlamb_nb.paths import store_path

    jobs = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    if not isinstance(jobs, list):
        raise DataError("not a sweep's config.json (a list of jobs)", source=str(folder / "config.json"))
    out = []
    multi_quant = len({j.get("model_name") for j in jobs}) < len(jobs)
    for j in jobs:
        name = str(j["model_name"]) + (f" ({j.get('quantization') or 'none'})" if multi_quant else "")
        for spec in j.get("benchmarks") or []:
            for setting in spec.get("settings") or []:
                p = store_path(folder / "predictions", benchmark=spec["name"], model=j["model_name"],
                               quantization=j.get("quantization"), setting=setting)
                if p.is_file():
                    out.append(score_store(p, source=spec.get("source"), name=name,
                                           options=dict(spec.get("options") or {})))
    return out


def _fetched_source(paper: str, stores: list[Path]) -> Any:
    """The fetched release a paper-profile run stood on (its stores' data identity), or None for other runs; a
    release fetched again at another revision is not the data the run asked about."""
    data = _store_meta(stores[0]).get("data") or {}
    if data.get("kind") != "release":
        return None
    from vlamb_nb.datahome import fetched

    choice = fetched(paper)
    if data.get("revision") and choice.identity.revision != data.get("revision"):
        raise DataError(f"the run stood on {paper}'s release at {str(data.get('revision'))[:7]}, the data home holds "
                        f"{str(choice.identity.revision)[:7]}: give the data it ran on (--source {paper}=PATH)",
                        source=str(stores[0]))
    return choice.source


def _reproduce_runs(folder: Path, sources: Any) -> list[Run]:
    """The stores a reproduce run left under ``<run>/<paper>/``, scored against the source its notebook was
    given (``sources`` override), else the one generated sample the notebook wrote there."""
    from vlamb_nb.benchmarks import get_benchmark, list_benchmarks

    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    out = []
    for paper in list_benchmarks():
        pdir = folder / paper
        if not pdir.is_dir():
            continue
        settings = set(get_benchmark(paper).settings)
        stores = sorted(s for s in pdir.rglob(f"{paper}__*.jsonl") if s.stem.split("__", 1)[1] in settings)
        if not stores:
            continue
        given = (results.get(paper) or {}).get("parameters") or {}
        source = _source_for(paper, sources) or given.get("source")
        if source is None:
            source = _fetched_source(paper, stores)
        if source is None:
            samples = sorted(d for d in pdir.iterdir() if d.is_dir() and d.name.startswith("sample-"))
            source = samples[0] if len(samples) == 1 else None
        if source is None:
            raise DataError(f"the {paper} notebook was given no source and left no single generated sample: give "
                            f"the data it ran on (--source {paper}=PATH)", source=str(pdir))
        elif not Path(str(source)).is_absolute() and (folder / str(source)).exists():
            source = folder / str(source)
        out += [score_store(s, source=source) for s in stores]
    if not out:
        raise DataError("no prediction stores under the run folder", source=str(folder))
    return out


# -- rendering ----------------------------------------------------------------------------------------------------
def _fmt(v: Any, d: int = 1) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    return f"{v:.{d}f}"


def _p(p: Any) -> str:
    if p is None or (isinstance(p, float) and not math.isfinite(p)):
        return "–"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _md(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown(c: Comparison) -> str:
    """The comparison for reading: values with intervals and ranks, then the paired tests, then the notes."""
    corr = {"holm": "Holm", "bh": "Benjamini–Hochberg"}[c.correction]
    lines = [f"# {c.title}", ""]
    if c.baseline:
        lines += [f"Every model is compared with **{_md(c.baseline)}**.", ""]
    for a in c.allowed:
        lines += [f"> **Compared on request despite {_md(a)}.**", ""]
    lines += ["| paper | setting | metric | slice | model | value [95% CI] | n | rank [95% interval] | dropped |",
              "|---|---|---|---|---|---|---|---|---|"]
    for r in c.values.to_dict(orient="records"):
        unit = r["unit"] if r["n"] == 1 else ("queries" if r["unit"] == "query" else r["unit"] + "s")
        rank = f"{r['rank']} [{r['rank_low']}–{r['rank_high']}] of {r['of']}"
        lines.append(f"| {r['paper']} | {_md(r['setting'])} | {_md(r['metric'])} | {_md(r['slice'])} | "
                     f"{_md(r['model'])} | {_fmt(r['value'])} [{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}] | "
                     f"{r['n']} {unit} | {rank} | {r['dropped']} |")
    lines += ["", "Values on the items every model answered; intervals and ranks resample "
              "those items (whole images, pairs where items share one) with every model on the same resamples. "
              "Rank 1 is best; a tie shares the better rank.", ""]
    if len(c.pairs):
        lines += [f"**Paired differences** (a − b on the same items, percentage points; p {corr}-adjusted over "
                  f"the {len(c.pairs)} tests)", "",
                  "| paper | setting | metric | slice | a | b | a − b [95% CI] | test | p | p (adj.) |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in c.pairs.to_dict(orient="records"):
            lines.append(f"| {r['paper']} | {_md(r['setting'])} | {_md(r['metric'])} | {_md(r['slice'])} | "
                         f"{_md(r['model_a'])} | {_md(r['model_b'])} | {_fmt(r['diff'])} [{_fmt(r['ci_low'])}, "
                         f"{_fmt(r['ci_high'])}] | {_md(r['test'])} | {_p(r['p'])} | {_p(r['p_adjusted'])} |")
        lines += ["", "McNemar counts items as independent; where items share an image or a pair, the interval "
                  "(which resamples whole images or pairs) is the more cautious guide.", ""]
    if c.notes:
        lines += ["**Notes**", ""] + [f"- {_md(n)}" for n in c.notes] + [""]
    shared = set.intersection(*(set(m["deviations"]) for m in c.models)) if c.models else set()
    lines += ["**Models** (each model's own deviations from the papers' setups; those of every model below)", ""]
    for m in c.models:
        own = [d for d in m["deviations"] if d not in shared]
        lines.append(f"- **{_md(m['model'])}**: {', '.join(m['runs'])}; own deviations: "
                     f"{_md('; '.join(own)) if own else 'none'}")
    if shared:
        lines += ["", "Deviations of every model:", ""] + [f"- {_md(d)}" for d in sorted(shared)]
    lines.append("")
    return "\n".join(lines)


def figure(c: Comparison):
    """Left: each pair's difference with its interval (a forest plot; filled where the adjusted p < 0.05),
    one row per pair, grouped by metric. Right: each model's rank with its interval, per metric."""
    from vlamb_nb.plots import NEUTRAL, PALETTE, new_figure

    metrics = list(dict.fromkeys(zip(c.values["paper"], c.values["setting"], c.values["metric"],
                                     c.values["slice"], strict=True)))
    models = list(dict.fromkeys(c.values["model"]))
    n_pairs = max(1, len(c.pairs))
    fig, (ax_d, ax_r) = new_figure(10.0, 1.4 + 0.32 * max(n_pairs, len(metrics) * len(models) * 0.6), ncols=2,
                                   gridspec_kw={"width_ratios": [1.4, 1.0]})
    labels = []
    y = 0
    pairs = c.pairs.to_dict(orient="records") if len(c.pairs) else []
    for key in metrics:
        rows = [r for r in pairs if (r["paper"], r["setting"], r["metric"], r["slice"]) == key]
        for r in rows:
            sig = r.get("p_adjusted") is not None and math.isfinite(r["p_adjusted"]) and r["p_adjusted"] < 0.05
            lo, hi = r["ci_low"], r["ci_high"]
            ax_d.errorbar([r["diff"]], [-y], xerr=[[max(r["diff"] - lo, 0)], [max(hi - r["diff"], 0)]], fmt="o",
                          color=PALETTE[0], capsize=3, markerfacecolor=PALETTE[0] if sig else "white", zorder=3)
            labels.append((-y, f"{key[2]} · {key[3]} ({key[0]} {key[1]})\n{r['model_a']} − {r['model_b']}"))
            y += 1
    ax_d.axvline(0, color="#888888", ls="--", lw=1, zorder=1)
    if labels:
        ax_d.set_yticks([t for t, _ in labels], [s for _, s in labels], fontsize=6)
    ax_d.set_xlabel("difference, percentage points (95% CI; filled: adjusted p < 0.05)")
    ax_d.set_title("paired differences", loc="left", fontsize=9)
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
            yy = -i - (j + 1) * step + 0.5
            if r["rank_low"] is not None and not (isinstance(r["rank_low"], float) and math.isnan(r["rank_low"])):
                ax_r.plot([r["rank_low"], r["rank_high"]], [yy, yy], color=PALETTE[j % len(PALETTE)], lw=2,
                          alpha=0.6)
            ax_r.plot([r["rank"]], [yy], "o", color=PALETTE[j % len(PALETTE)], ms=5,
                      label=m if i == 0 else None)
        rlabels.append((-i, f"{key[2]} · {key[3]}\n({key[0]} {key[1]})"))
    ax_r.set_yticks([t for t, _ in rlabels], [s for _, s in rlabels], fontsize=6)
    ax_r.set_xlim(0.5, len(models) + 0.5)
    ax_r.set_xticks(range(1, len(models) + 1))
    ax_r.invert_xaxis()
    ax_r.set_xlabel("rank (1 = best; 95% interval over resamples)")
    ax_r.set_title("ranks", loc="left", fontsize=9)
    ax_r.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), fontsize=6, ncol=min(len(models), 3),
                frameon=False)
    for ax in (ax_d, ax_r):
        ax.grid(axis="y", visible=False)
    if not pairs:
        ax_d.text(0.5, 0.5, "no pairs", transform=ax_d.transAxes, ha="center", color=NEUTRAL)
    fig.suptitle(c.title, fontsize=9, x=0.01, ha="left")
    fig.tight_layout()
    return fig


# -- the committed example -----------------------------------------------------------------------------------------
def example(*, n_resamples: int = N_RESAMPLES, seed: int = 0) -> Comparison:
    """The released Ref-Adv direct runs on their common rows: every run of the fetched release (all 30), else the
    official per-row files beside the checkout."""
    from vlamb_nb.benchmarks.refadv.report import predictions_dir

    folder = predictions_dir("paper")
    if folder is None:
        raise NotAvailableError("the released Ref-Adv per-row predictions are not beside the checkout "
                                "(../shared/data/refadv/predictions); the example needs them")
    files = sorted(folder.glob("*_direct_predictions.jsonl"))
    if len(files) < 2:
        raise NotAvailableError(f"fewer than two released Ref-Adv direct runs in {folder.name}/")
    out = compare(files, n_resamples=n_resamples, seed=seed,
                  title="Released Ref-Adv-s runs (direct prompt) compared on their common rows")
    for m in out.models:  # the released files by name: where they lie on this machine is no part of the result
        m["origins"] = [Path(o).name for o in m["origins"]]
    return out


class _CallableModule(types.ModuleType):
    """``vlamb_nb.compare(runs, ...)`` reads as the one thing this module does; the module stays importable as
    a module (``from vlamb_nb.compare import compare, Run``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Comparison:
        return compare(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
