"""Which items carry a paper's ranking, and which look broken: a 2PL item-response fit over many runs' answers.

Every run of a paper (its released per-item runs, a user's stores) answers the same items; the paper's first 0/1
metric (Ref-Adv's Acc@0.5 per row) gives a (runs, items) matrix of right and wrong, fitted by the MAP 2PL of
:mod:`vlamb_nb.stats.irt`. Per item: its difficulty and discrimination, whether no run or every run gets it (it
tells runs apart not at all), and whether its discrimination is negative (weak runs get it right more often than
strong ones: a suspect gold label, expression or scoring rule). Per run: its accuracy with a (cluster) bootstrap
interval beside its ability with its interval, its rank by each, and its rank once the suspect items are left
out. This module names no paper; what an item is and what clusters it comes from the paper's declared metric.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vlamb_nb.errors import DataError, NotAvailableError


@dataclass
class ItemAnalysis:
    """``items``: one row per item (key, right, share, difficulty, discrimination, status); ``models``: one row
    per run; ``rows``: the first run's scored rows by item key (the item's own columns: image, text, gold);
    ``conclusion``: one line."""

    items: Any
    models: Any
    rows: Any
    fit: Any
    conclusion: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def flagged(self):
        """The suspect items (negative discrimination), worst first, with their own columns."""
        bad = self.items[self.items["status"] == SUSPECT].sort_values("discrimination")
        own = self.rows.drop(columns=[c for c in self.rows.columns if c in bad.columns])
        return bad.merge(own, left_on="key", right_index=True, how="left")


SUSPECT = "suspect: negative discrimination"
EVERY, NONE = "every run gets it", "no run gets it"


def item_analysis(paper: str, runs: dict[str, Any], *, flag_below: float = 0.0, n_resamples: int = 1000,
                  seed: int = 0) -> ItemAnalysis:
    """The 2PL of ``runs`` (``{name: scored}``, at least three) on the paper's first 0/1 metric: items a run did
    not answer are left out of its likelihood, never counted wrong. ``flag_below``: an item whose fitted
    discrimination is below it is suspect (default: negative)."""
    import pandas as pd

    from vlamb_nb import stats
    from vlamb_nb.benchmarks import get_benchmark
    from vlamb_nb.stats.common import unit_values
    from vlamb_nb.stats.irt import fit_2pl, rank

    bench = get_benchmark(paper)
    metric = next((m for m in bench.metrics if m.zero_one), None)
    if metric is None:
        raise NotAvailableError(f"{paper} declares no 0/1 metric to fit an item-response model on")
    if len(runs) < 3:
        raise DataError(f"an item analysis needs at least three runs of {paper}, got {len(runs)}")
    values, clusters, first_rows = unit_values(metric, runs)
    keys = sorted(set().union(*values.values()), key=lambda k: (len(k), k))
    names = list(values)
    y = np.array([[values[n].get(k, np.nan) for k in keys] for n in names], dtype=float)
    fit = fit_2pl(y)
    seen = ~np.isnan(y)
    right = np.nansum(y, axis=0)
    answered = seen.sum(axis=0)
    status = np.where(right == 0, NONE, np.where(right == answered, EVERY,
                                                   np.where(fit.a < flag_below, SUSPECT, "")))
    items = pd.DataFrame({"key": keys, "right": right.astype(int), "answered": answered.astype(int),
                          "share_right": 100 * right / np.maximum(answered, 1), "difficulty": fit.b,
                          "discrimination": fit.a, "status": status})
    keep = status != SUSPECT
    cl = np.array([clusters.get(k, k) for k in keys], dtype=object) if clusters else None
    z = 1.959963984540054
    rows = []
    for i, name in enumerate(names):
        mask = seen[i]
        acc = stats.bootstrap_ci(y[i, mask], clusters=None if cl is None else cl[mask], n_resamples=n_resamples,
                                 seed=seed)
        rows.append({"run": name, "items": int(mask.sum()), "accuracy": 100 * acc.estimate,
                     "acc_low": 100 * acc.ci_low, "acc_high": 100 * acc.ci_high, "ability": fit.theta[i],
                     "ability_low": fit.theta[i] - z * fit.theta_se[i], "ability_high": fit.theta[i] + z * fit.theta_se[i],
                     "accuracy_unflagged": 100 * float(np.nanmean(y[i, mask & keep])) if (mask & keep).any()
                     else np.nan})
    models = pd.DataFrame(rows)
    models["rank"] = rank(models["accuracy"])
    models["rank_ability"] = rank(models["ability"])
    models["rank_unflagged"] = rank(models["accuracy_unflagged"])
    models = models.sort_values(["rank", "run"]).reset_index(drop=True)
    n_flag = int((status == SUSPECT).sum())
    moved = int((models["rank"] != models["rank_unflagged"]).sum())
    text = (f"{paper}: {len(keys):,} items over {len(names)} runs: {int((status == NONE).sum())} no run gets, "
            f"{int((status == EVERY).sum())} every run gets (neither tells runs apart), {n_flag} suspect (weaker runs "
            f"get them right more often); leaving the suspect items out moves {moved} of {len(names)} ranks")
    notes = [] if fit.converged else ["the 2PL fit stopped before converging; its parameters are approximate"]
    if cl is not None:
        unit = (metric.cluster_unit or "cluster") + "s"
        notes.append(f"accuracy intervals resample whole {unit}; ability intervals are the Laplace approximation "
                     "given the fitted items")
    return ItemAnalysis(items=items, models=models, rows=first_rows, fit=fit, conclusion=text + ".", notes=notes)
