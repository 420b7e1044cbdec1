"""Prompt sensitivity: the same items asked with the options in another order or the instruction in the paper's
other wording, against the paper's own prompt.

Each paper declares its variants as settings (``Benchmark.prompt_variants``: VAGUE's options moved one, two and
three letters on and the released code's wording; MUCAR's A/B options reversed and Table 6's line layout;
V-FLUTE's label words named the other way round and each item's next Table 8 instruction), so they run wherever a
setting runs (``run_settings``, ``vlamb-nb run``, ``reproduce -p settings=...``, a sweep) into stores of their
own. Each answer carries ``position`` (the place of the option chosen, 0 = first shown), ``gold_position`` (where
the right option was shown) and ``choice`` (what was chosen, in the items' own terms). From the runs of a base
setting and its variants on the same items, :func:`prompt_sensitivity` gives

- **position bias**: how often each place is chosen beside how often the right option sat there, over the base and
  its order variants, with a chi-square test of the choices against the right options' places (a model that
  always picks the first option is found however accurate the base run looks);
- **consistency**: the share of items given the same answer (the same option, whatever its place) in every run,
  and between the base and each variant;
- **the paired difference against the paper's prompt**: every declared metric, each variant against the base, on
  the items both answered (``Benchmark.compare_runs``: interval and McNemar or paired bootstrap).

This module names no paper.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vlamb_nb.errors import DataError, NotAvailableError


@dataclass
class Sensitivity:
    """One paper's base setting beside its variants: ``positions`` (per run and place: chosen and right shares),
    ``bias`` (per run and pooled: the first place's shares and the chi-square test), ``consistency`` (all runs,
    and the base against each variant), ``paired`` (each variant − base, every declared metric) and a one-line
    ``conclusion``."""

    paper: str
    base: str
    variants: dict[str, str]
    positions: Any
    bias: Any
    consistency: Any
    paired: Any
    conclusion: str = ""
    notes: list[str] = field(default_factory=list)

    def markdown(self) -> str:
        from vlamb_nb.stats.result import markdown_table

        parts = [f"## {self.paper}: {self.base} against {', '.join(self.variants)}", "", self.conclusion, ""]
        for title, df in (("Position bias", self.bias), ("Consistency", self.consistency),
                          ("Paired difference against the paper's prompt", self.paired)):
            parts += [f"### {title}", "", markdown_table(df, ".3g"), ""]
        parts += [f"- {n}" for n in self.notes]
        return "\n".join(parts).rstrip() + "\n"

    def to_dict(self) -> dict[str, Any]:
        import json

        return {"paper": self.paper, "base": self.base, "variants": self.variants, "conclusion": self.conclusion,
                "notes": self.notes, **{k: json.loads(getattr(self, k).to_json(orient="records"))
                                        for k in ("positions", "bias", "consistency", "paired")}}


def bases_with_variants(paper: str, settings: list[str]) -> dict[str, list[str]]:
    """Of ``settings``, each base setting of the paper that is there with at least one of its variants."""
    from vlamb_nb.benchmarks import get_benchmark

    declared = get_benchmark(paper).prompt_variants
    return {b: [v for v in vs if v in settings] for b, vs in declared.items()
            if b in settings and any(v in settings for v in vs)}


def _answers(metric: Any, scored: Any, name: str) -> Any:
    """One run's answers by item key: position, gold position and choice (missing where the answer was unread)."""
    import pandas as pd

    missing = [c for c in ("position", "gold_position", "choice") if c not in scored.columns]
    if missing:
        raise DataError(f"the {name} run has no {', '.join(missing)} column(s): it was not scored by a version "
                        "that reads positions (score its store again)")
    rows = metric.rows(scored)
    out = pd.DataFrame({"position": pd.to_numeric(rows["position"], errors="coerce").to_numpy(),
                        "gold_position": pd.to_numeric(rows["gold_position"], errors="coerce").to_numpy(),
                        "choice": rows["choice"].to_numpy()}, index=metric.item_key(rows).to_numpy())
    return out[~out.index.duplicated()]


def prompt_sensitivity(paper: str, runs: dict[str, Any], *, base: str | None = None, n_resamples: int = 1000,
                       seed: int = 0) -> Sensitivity:
    """``runs``: ``{setting: scored}`` holding a base setting of the paper and at least one of its variants (the
    same model). ``base``: which, where runs hold several."""
    import pandas as pd
    from scipy.stats import chisquare

    from vlamb_nb.benchmarks import get_benchmark

    bench = get_benchmark(paper)
    found = bases_with_variants(paper, list(runs))
    if base is None:
        if not found:
            declared = "; ".join(f"{b}: {', '.join(v)}" for b, v in bench.prompt_variants.items()) or "none"
            raise NotAvailableError(f"{paper}: no base setting with one of its prompt variants among the runs "
                                    f"({', '.join(runs) or 'none'}); its variants: {declared}")
        base = next(iter(found))
    if base not in found:
        raise DataError(f"{paper}: {base!r} is not among the runs with one of its variants")
    kinds = {v: bench.prompt_variants[base][v] for v in found[base]}
    metric = bench.metrics[0]
    names = [base, *kinds]
    answers = {n: _answers(metric, runs[n], n) for n in names}
    order_runs = [base] + [v for v, k in kinds.items() if k == "order"]

    pos_rows, bias_rows = [], []
    pooled_obs: dict[int, float] = {}
    pooled_gold: dict[int, float] = {}
    for n in order_runs:
        a = answers[n]
        valid = a["position"].notna()
        obs = a.loc[valid, "position"].astype(int).value_counts().to_dict()
        gold = a.loc[a["gold_position"].notna(), "gold_position"].astype(int).value_counts().to_dict()
        n_valid, n_gold = int(valid.sum()), int(a["gold_position"].notna().sum())
        for k in sorted(set(obs) | set(gold)):
            pos_rows.append({"setting": n, "position": k, "chosen": 100 * obs.get(k, 0) / max(n_valid, 1),
                             "right_option_there": 100 * gold.get(k, 0) / max(n_gold, 1), "n": n_valid})
            pooled_obs[k] = pooled_obs.get(k, 0) + obs.get(k, 0)
            pooled_gold[k] = pooled_gold.get(k, 0) + gold.get(k, 0) / max(n_gold, 1) * n_valid
        bias_rows.append(_bias_row(n, obs, {k: v / max(n_gold, 1) * n_valid for k, v in gold.items()}, n_valid,
                                   chisquare))
    bias_rows.append(_bias_row("pooled", pooled_obs, pooled_gold, int(sum(pooled_obs.values())), chisquare))

    both = [set(a.index[a["choice"].notna()]) for a in answers.values()]
    common = set.intersection(*both) if both else set()
    cons_rows = []
    if common:
        keys = sorted(common)
        choices = pd.DataFrame({n: answers[n].loc[keys, "choice"].astype(str).to_numpy() for n in names}, index=keys)
        same = choices.nunique(axis=1) == 1
        cons_rows.append({"runs": " = ".join(names), "items": len(keys), "consistency": 100 * float(same.mean())})
    for v in kinds:
        ks = sorted(set(answers[base].index[answers[base]["choice"].notna()])
                    & set(answers[v].index[answers[v]["choice"].notna()]))
        if ks:
            eq = answers[base].loc[ks, "choice"].astype(str).to_numpy() == answers[v].loc[ks, "choice"].astype(str).to_numpy()
            cons_rows.append({"runs": f"{base} = {v} ({kinds[v]})", "items": len(ks), "consistency": 100 * float(eq.mean())})
    consistency = pd.DataFrame(cons_rows, columns=["runs", "items", "consistency"])

    paired_parts = []
    for v in kinds:
        res = bench.compare_runs(runs[v], runs[base], n_resamples=n_resamples, seed=seed)
        res = res[res["slice"] == res["slice"].iloc[0]] if len(res) else res
        paired_parts.append(res.assign(variant=v, varies=kinds[v]))
    paired = pd.concat(paired_parts, ignore_index=True) if paired_parts else pd.DataFrame()
    if len(paired):
        paired = paired[["variant", "varies", "metric", "slice", "a", "b", "diff", "ci_low", "ci_high", "p", "test", "n"]]
    bias = pd.DataFrame(bias_rows)
    out = Sensitivity(paper, base, kinds, pd.DataFrame(pos_rows), bias, consistency, paired)
    out.conclusion = _conclusion(out)
    out.notes = ["position 0 is the first option shown (V-FLUTE: the label the instruction names first); the right "
                 "option's shares are where the gold sat in the same runs, what an unbiased model would follow",
                 "consistency counts the items every run answered readably"]
    return out


def _bias_row(name: str, obs: dict[int, float], expected: dict[int, float], n: int, chisquare: Any) -> dict[str, Any]:
    """The first place's chosen and right shares, and the chi-square test of the places chosen against where the
    right options were (places the right option never took count as half an answer there, so the test is
    defined)."""
    keys = sorted(set(obs) | set(expected))
    o = np.array([obs.get(k, 0) for k in keys], dtype=float)
    e = np.array([max(expected.get(k, 0.0), 0.5) for k in keys], dtype=float)
    p = math.nan
    if n and len(keys) > 1:
        e = e / e.sum() * o.sum()
        p = float(chisquare(o, e).pvalue)
    first_chosen = 100 * obs.get(0, 0) / n if n else math.nan
    first_right = 100 * expected.get(0, 0.0) / n if n else math.nan
    top = max(keys, key=lambda k: obs.get(k, 0)) if keys else None
    return {"setting": name, "n": n, "first_chosen": first_chosen, "first_right": first_right,
            "most_chosen": top, "p": p}


def _conclusion(s: Sensitivity) -> str:
    from vlamb_nb.stats.result import format_p

    pooled = s.bias[s.bias["setting"] == "pooled"].iloc[0]
    bits = []
    if math.isfinite(pooled["first_chosen"]):
        bits.append(f"the first option is chosen {pooled['first_chosen']:.0f}% of the time where the right answer "
                    f"is first {pooled['first_right']:.0f}% (χ² p = {format_p(pooled['p'])})")
    if len(s.consistency):
        c = s.consistency.iloc[0]
        bits.append(f"{c['consistency']:.0f}% of {int(c['items'])} items get the same answer in every run")
    if len(s.paired):
        first = s.paired[s.paired["metric"] == s.paired["metric"].iloc[0]]
        diffs = ", ".join(f"{r.variant} {r.diff:+.1f} (p = {format_p(r.p)})" for r in first.itertuples())
        bits.append(f"{first['metric'].iloc[0]} against {s.base}: {diffs}")
    return f"{s.paper} {s.base}: " + "; ".join(bits) + "."
