"""Which of a paper's stated comparisons its own test set can tell apart: every gap beside its noise floor.

A paper states comparisons in words ("X outperforms Y", "CoT helps", "negation hurts"); each paper folder lists
them as reference data (``claims.csv``: the section or table, the words, the two published cells as
``table//row//column`` of the paper's reference numbers, the test set they are on, what the words expect). For
each, :func:`noise_table` gives the published gap, the minimum detectable difference of that test set at
alpha = 0.05 and 80% power (:mod:`vlamb_nb.stats.power`: paired and clustered for two systems on the same items,
two-sample for two groups of items), and whether the gap exceeds it; where per-item data exists, the test itself:
on a paper's released per-item runs (Ref-Adv's, matched by model and prompt) and on the runs a notebook made
(``runs``: ``{setting: scored}``, matched by the claim's settings).

The floor needs two numbers no paper prints: how often two systems disagree on an item (the discordance) and how
strongly disagreements cluster within an image or pair (the ICC). They are measured on the released per-item
runs of every paper that released some (:func:`agreement`: every pair of runs on the same items; the
discordance as a share of what independent errors would give, so it scales to each comparison's accuracies);
without any, they are the assumption :data:`ASSUMED` says, and the table says which. A test set's structure
comes from the paper's ``data.test_sets(items)``: counted from the release where the items are the whole
release, else declared from the paper's text, and said so.

A published value is read as a share of 0/1 outcomes (an accuracy; a macro-F1 of near balanced binary labels is
read so too, and the test set says so). ``vlamb-nb noise PAPER`` prints the table; each paper's notebook ends
with it. This module names no paper: a
paper's claims, test sets and released runs are found through the registry.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vlamb_nb.errors import DataError, NotAvailableError, SettingError

#: the columns of a paper's ``claims.csv``
CLAIM_COLUMNS = ("id", "section", "claim", "kind", "test_set", "expects", "a", "a_ref", "a_value", "part_a", "b",
                 "b_ref", "b_value", "part_b", "released_a", "released_b", "setting_a", "setting_b", "note")
KINDS = ("paired", "subsets")
EXPECTS = (">", "<", "=")


@dataclass(frozen=True)
class Agreement:
    """How often two systems disagree on an item, as a share (``ratio``) of what independent errors would give,
    and how disagreements (``icc``) and correctness (``icc_correct``) cluster: measured on released runs or
    assumed (``source`` says which)."""

    ratio: float
    icc: float
    icc_correct: float
    pairs: int = 0
    runs: int = 0
    source: str = "assumed"

    def text(self) -> str:
        if self.source == "assumed":
            return (f"assumed (no released per-item runs at hand): discordance {self.ratio:.2f} of what independent "
                    f"errors give, ICC {self.icc:.2f}")
        return (f"measured on {self.runs} released per-item runs ({self.source}, {self.pairs} pairs): discordance "
                f"{self.ratio:.2f} of what independent errors give (median), ICC of disagreements {self.icc:.2f}, "
                f"of correctness {self.icc_correct:.2f}")


#: what the floors assume when no released per-item run is at hand: two systems disagree on 60% of the items
#: independent errors would make them disagree on (released runs of one family agree more than chance), and
#: items of one image or pair correlate by 0.1
ASSUMED = Agreement(ratio=0.6, icc=0.1, icc_correct=0.1)


# -- the paper's declarations ---------------------------------------------------------------------------------
def _entry(paper: str):
    from vlamb_nb.benchmarks import paper as entry

    return entry(paper)


def claims(paper: str):
    """The paper's stated comparisons (its ``claims.csv``), each with its two published values (percent) read
    from the paper's reference numbers (``a_ref``/``b_ref``) or given in the file where the text prints them
    without a table cell; a value the paper does not print is NaN."""
    import pandas as pd

    from vlamb_nb.benchmarks import get_benchmark

    bench = get_benchmark(paper)
    path = bench.folder() / "claims.csv"
    if not path.is_file():
        raise NotAvailableError(f"{bench.name} lists no stated comparisons (no claims.csv in its folder)")
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in CLAIM_COLUMNS if c not in df.columns]
    if missing:
        raise DataError(f"missing columns {missing}", source=str(path))
    ref = bench.reference()
    values: dict[str, list[float]] = {"a": [], "b": []}
    for i, row in enumerate(df.to_dict(orient="records"), start=2):
        if row["kind"] not in KINDS:
            raise DataError(f"kind must be one of {', '.join(KINDS)}, got {row['kind']!r}", source=str(path), row=i,
                            field="kind")
        if row["expects"] not in EXPECTS:
            raise DataError(f"expects must be one of {' '.join(EXPECTS)}, got {row['expects']!r}", source=str(path),
                            row=i, field="expects")
        for side in ("a", "b"):
            values[side].append(_value(row, side, ref, path, i))
    out = df.assign(a_pub=values["a"], b_pub=values["b"])
    out.attrs["source"] = path.name
    return out


def _value(row: dict[str, str], side: str, ref: Any, path: Path, line: int) -> float:
    """One side's published value: its reference cell, or the number the file gives (NaN: none printed)."""
    cell, given = row[f"{side}_ref"].strip(), row[f"{side}_value"].strip()
    if cell and given:
        raise DataError(f"give {side}_ref or {side}_value, not both", source=str(path), row=line, field=f"{side}_ref")
    if given:
        try:
            return float(given)
        except ValueError:
            raise DataError(f"not a number: {given!r}", source=str(path), row=line, field=f"{side}_value") from None
    if not cell:
        return math.nan
    parts = cell.split("//")
    if len(parts) != 3:
        raise DataError(f"a reference cell is table//row//column, got {cell!r}", source=str(path), row=line,
                        field=f"{side}_ref")
    hit = ref[(ref["table"] == parts[0]) & (ref["row"] == parts[1]) & (ref["column"] == parts[2])]
    if len(hit) != 1:
        raise DataError(f"no published cell {cell!r} in the paper's reference numbers", source=str(path), row=line,
                        field=f"{side}_ref")
    v = hit["value_num"].iloc[0]
    return float(v) if v is not None and not pd_isna(v) else math.nan


def pd_isna(v: Any) -> bool:
    try:
        return bool(np.isnan(float(v)))
    except (TypeError, ValueError):
        return True


def test_sets(paper: str, items: Any = None) -> dict[str, Any]:
    """The paper's test sets (``data.test_sets``): counted from ``items`` where they are the whole release."""
    from vlamb_nb.benchmarks import load_module

    mod = load_module(_entry(paper), "data")
    fn = getattr(mod, "test_sets", None)
    if fn is None:
        raise NotAvailableError(f"{paper} declares no test sets (data.test_sets)")
    return fn(items)


test_sets.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


def released_runs(paper: str, *, profile: str = "offline") -> dict[str, Any] | None:
    """A paper's released per-item runs keyed ``"<model>::<setting>"`` (its ``report.released_runs``), None when
    the paper released none or none are at hand."""
    from vlamb_nb.benchmarks import load_module

    mod = load_module(_entry(paper), "report")
    fn = getattr(mod, "released_runs", None) if mod is not None else None
    return fn(profile=profile) if fn is not None else None


def all_released_runs(*, profile: str = "offline") -> dict[str, dict[str, Any]]:
    """Every registered paper's released per-item runs at hand, by paper (what :func:`agreement` measures)."""
    from vlamb_nb.benchmarks import BrokenPaper, list_benchmarks

    out = {}
    for name in list_benchmarks():
        try:
            runs = released_runs(name, profile=profile)
        except BrokenPaper:
            continue
        if runs:
            out[name] = runs
    return out


# -- the agreement released runs show ---------------------------------------------------------------------------
def _units(paper: str, runs: dict[str, Any]) -> tuple[Any, dict[str, np.ndarray], np.ndarray | None]:
    """The paper's first 0/1 metric on the units every run answered: ``(metric, {run: values}, clusters)``."""
    from vlamb_nb.benchmarks import get_benchmark

    bench = get_benchmark(paper)
    metric = next((m for m in bench.metrics if m.zero_one), None)
    if metric is None:
        raise NotAvailableError(f"{paper} declares no 0/1 metric to measure agreement on")
    from vlamb_nb.stats.common import unit_values

    series, clusters, _ = unit_values(metric, runs)
    common = sorted(set.intersection(*(set(s) for s in series.values())), key=lambda k: (len(k), k))
    values = {n: np.array([s[k] for k in common]) for n, s in series.items()}
    return metric, values, (np.array([clusters[k] for k in common]) if clusters else None)


def agreement(released: dict[str, dict[str, Any]] | None = None) -> Agreement:
    """The discordance ratio and ICCs over every pair of released runs on the same items (``released``: runs by
    paper, default :func:`all_released_runs`); :data:`ASSUMED` when there are none."""
    from vlamb_nb.stats.power import discordance, icc_anova

    released = all_released_runs() if released is None else released
    ratios, iccs, icc_c, n_runs, papers = [], [], [], 0, []
    for paper, runs in released.items():
        if len(runs) < 2:
            continue
        _, values, clusters = _units(paper, runs)
        names = list(values)
        n_runs += len(names)
        papers.append(paper)
        for i, a in enumerate(names):
            if clusters is not None:
                icc_c.append(icc_anova(values[a], clusters))
            for b in names[i + 1:]:
                d = discordance(values[a], values[b], clusters)
                ratios.append(d.ratio)
                iccs.append(d.icc)
    ratios = [r for r in ratios if math.isfinite(r)]
    if not ratios:
        return ASSUMED
    med = lambda xs, default: float(np.median(xs)) if xs else default  # noqa: E731
    return Agreement(ratio=med(ratios, ASSUMED.ratio),
                     icc=max(0.0, med([x for x in iccs if math.isfinite(x)], ASSUMED.icc)),
                     icc_correct=max(0.0, med([x for x in icc_c if math.isfinite(x)], ASSUMED.icc_correct)),
                     pairs=len(ratios), runs=n_runs, source=", ".join(papers))


# -- the table -----------------------------------------------------------------------------------------------
def noise_table(paper: str, *, items: Any = None, released: dict[str, Any] | None = None,
                runs: dict[str, Any] | None = None, agreed: Agreement | None = None, alpha: float = 0.05,
                power: float = 0.8, profile: str = "offline"):
    """One row per comparison the paper states: its published gap (a − b, points), the noise floor of its test
    set, whether the gap exceeds it and goes the way the words say, and where per-item data exists the test on
    it (``released``: the paper's released runs, default those at hand; ``runs``: ``{setting: scored}`` of this
    notebook). ``attrs``: ``conclusion`` (one line), ``agreement``, ``test_sets`` (what each floor stands on)."""
    import pandas as pd

    from vlamb_nb.stats.power import independent_discordance, mdd_paired, mdd_two_sample

    table = claims(paper)
    if released is None:
        released = released_runs(paper, profile=profile)
    if items is None and released:  # a released per-item run's rows are the release's rows
        items = next(iter(released.values()))
    sets = test_sets(paper, items)
    agreed = agreed or agreement(None if released is None else {paper: released, **{
        k: v for k, v in all_released_runs(profile=profile).items() if k != paper}})
    rows = []
    for c in table.to_dict(orient="records"):
        if c["test_set"] not in sets:
            raise DataError(f"claim {c['id']!r} names the test set {c['test_set']!r}; {paper} declares "
                            f"{', '.join(sets)}", source=table.attrs.get("source"), field="test_set")
        ts = sets[c["test_set"]]
        p1, p2 = c["a_pub"] / 100, c["b_pub"] / 100
        known = math.isfinite(p1) and math.isfinite(p2)
        gap = 100 * (p1 - p2) if known else math.nan
        row = {"id": c["id"], "section": c["section"], "claim": c["claim"], "comparison": f"{c['a']} vs {c['b']}",
               "expects": c["expects"], "a": c["a_pub"], "b": c["b_pub"], "gap": gap}
        if c["kind"] == "paired":
            pa, pb = (p1, p2) if known else (0.5, 0.5)
            disc = min(1.0, max(abs(p1 - p2) if known else 0.0, agreed.ratio * independent_discordance(pa, pb)))
            deff = ts.deff(agreed.icc)
            floor = 100 * mdd_paired(ts.n, disc, deff=deff, alpha=alpha, power=power) if disc > 0 else math.nan
            row.update(test_set=ts.name, n=ts.n, test="paired (clustered McNemar)" if ts.cluster_sizes else
                       "paired (McNemar)", discordance=100 * disc, deff=deff)
        else:
            ta, tb = _part(ts, c["part_a"], sets), _part(ts, c["part_b"], sets)
            p = (p1 + p2) / 2 if known else 0.5
            da, db = ta.deff(agreed.icc_correct), tb.deff(agreed.icc_correct)
            floor = 100 * mdd_two_sample(ta.n, tb.n, p, deff1=da, deff2=db, alpha=alpha, power=power)
            row.update(test_set=f"{ta.name} | {tb.name}", n=ta.n + tb.n, test="two groups (cluster-robust z)",
                       discordance=math.nan, deff=max(da, db))
        row["floor"] = floor
        row["exceeds"] = (abs(gap) >= floor) if known and math.isfinite(floor) else None
        row["as_stated"] = _as_stated(c["expects"], gap, floor) if known else None
        row.update(_released_test(paper, c, released, ts, agreed, alpha, power))
        row.update(_our_test(paper, c, runs))
        row["note"] = c["note"]
        rows.append(row)
    out = pd.DataFrame(rows)
    out.attrs.update(agreement=agreed.text(), alpha=alpha, power=power,
                     test_sets={k: v.describe() for k, v in sets.items()}, conclusion=conclusion(out, paper, agreed))
    return out


def _part(ts: Any, name: str, sets: dict[str, Any]) -> Any:
    if name in ts.subsets:
        return ts.part(name)
    if name in sets:
        return sets[name]
    raise DataError(f"{name!r} is neither a part of {ts.name} ({', '.join(ts.subsets) or 'none'}) nor a test set "
                    f"({', '.join(sets)})", field="part_a/part_b")


def _as_stated(expects: str, gap: float, floor: float) -> bool:
    """Whether the published gap goes the way the words say (``=``: no change, so within the floor)."""
    if expects == ">":
        return gap > 0
    if expects == "<":
        return gap < 0
    return math.isfinite(floor) and abs(gap) < floor


def _released_test(paper: str, c: dict[str, Any], released: dict[str, Any] | None, ts: Any, agreed: Agreement,
                   alpha: float, power: float) -> dict[str, Any]:
    """The comparison on the paper's released per-item runs, where both sides were released."""
    from vlamb_nb.stats import clustered_mcnemar, clustered_two_proportion
    from vlamb_nb.stats.power import TestSet, cluster_sizes, discordance, mdd_paired

    empty = {"released": "", "released_gap": math.nan, "released_p": math.nan, "released_floor": math.nan}
    a, b = c["released_a"], c["released_b"]
    if not a or not b:
        return empty
    if not released or a not in released or b not in released:
        return {**empty, "released": "not at hand"}
    metric, values, clusters = _units(paper, {a: released[a], b: released[b]})
    if c["kind"] == "paired":
        res = clustered_mcnemar(values[a], values[b], clusters, alpha=alpha)
        d = discordance(values[a], values[b], clusters)
        sizes = cluster_sizes(clusters) if clusters is not None else None
        here = TestSet("released", len(values[a]), cluster_sizes=sizes)
        deff = here.deff(max(0.0, d.icc) if math.isfinite(d.icc) else agreed.icc)
        floor = mdd_paired(here.n, d.discordance, deff=deff, alpha=alpha, power=power) if d.discordance else math.nan
        return {"released": f"{len(values[a])} rows", "released_gap": 100 * res.estimate, "released_p": res.p,
                "released_floor": 100 * floor}
    rows = metric.rows(released[a])
    masks = dict(metric.slice_masks(rows))
    if c["part_a"] not in masks or c["part_b"] not in masks:
        return {**empty, "released": "parts not in the released rows"}
    v, cl = metric.units(rows).to_numpy(float), metric.clusters(rows)
    ma, mb = masks[c["part_a"]], masks[c["part_b"]]
    res = clustered_two_proportion(v[ma], v[mb], None if cl is None else cl[ma], None if cl is None else cl[mb],
                                   alpha=alpha)
    return {"released": f"{int(ma.sum())} vs {int(mb.sum())} rows", "released_gap": 100 * res.estimate,
            "released_p": res.p, "released_floor": math.nan}


def _our_test(paper: str, c: dict[str, Any], runs: dict[str, Any] | None) -> dict[str, Any]:
    """The comparison on this notebook's own runs, where it ran both settings the claim compares."""
    from vlamb_nb.benchmarks import get_benchmark

    out = {"ours_gap": math.nan, "ours_p": math.nan}
    sa, sb = c["setting_a"], c["setting_b"]
    if not runs or not sa or not sb or sa not in runs or sb not in runs:
        return out
    bench = get_benchmark(paper)
    metric = next((m for m in bench.metrics if m.compare), None)
    if metric is None:
        return out
    try:
        if c["kind"] == "paired" and sa != sb:
            res = bench.compare_runs(runs[sa], runs[sb], n_resamples=500)
            hit = res[(res["metric"] == metric.name) & (res["slice"] == metric.overall)]
            if len(hit):
                return {"ours_gap": float(hit["diff"].iloc[0]), "ours_p": float(hit["p"].iloc[0])}
        elif c["kind"] == "subsets" and sa == sb:
            from vlamb_nb.stats import clustered_two_proportion

            rows = metric.rows(runs[sa])
            masks = dict(metric.slice_masks(rows))
            if c["part_a"] in masks and c["part_b"] in masks:
                v, cl = metric.units(rows).to_numpy(float), metric.clusters(rows)
                ma, mb = masks[c["part_a"]], masks[c["part_b"]]
                if ma.any() and mb.any():
                    res = clustered_two_proportion(v[ma], v[mb], None if cl is None else cl[ma],
                                                   None if cl is None else cl[mb])
                    return {"ours_gap": 100 * res.estimate, "ours_p": res.p}
    except (DataError, SettingError, NotAvailableError):
        return out
    return out


def conclusion(table: Any, paper: str = "", agreed: Agreement | None = None) -> str:
    """One line: how many stated comparisons exceed their test set's floor and go the stated way."""
    directional = table[table["expects"] != "="]
    known = directional[directional["gap"].notna()]
    clear = known[(known["exceeds"] == True) & (known["as_stated"] == True)]  # noqa: E712
    wrong_way = known[known["as_stated"] == False]  # noqa: E712
    within = known[(known["exceeds"] == False) & (known["as_stated"] == True)]  # noqa: E712
    floors = table["floor"].dropna()
    span = f"floors {floors.min():.1f}–{floors.max():.1f} points" if len(floors) else "no floor"
    name = f"{paper}: " if paper else ""
    parts = [f"{len(clear)} of {len(directional)} stated directional comparisons exceed their test set's noise "
             f"floor (80% power, α = 0.05)"]
    if len(within):
        parts.append(f"{len(within)} {_verb(len(within), 'goes', 'go')} the stated way but within the floor")
    if len(wrong_way):
        parts.append(f"{len(wrong_way)} {_verb(len(wrong_way), 'goes', 'go')} the other way")
    if len(directional) - len(known):
        parts.append(f"{len(directional) - len(known)} {_verb(len(directional) - len(known), 'has', 'have')} no "
                     "published gap")
    nulls = table[table["expects"] == "="]
    if len(nulls):
        inside = int((nulls["as_stated"] == True).sum())  # noqa: E712
        parts.append(f"{inside} of {len(nulls)} 'no change' claims {_verb(len(nulls), 'is', 'are')} within the floor, "
                     "where the test set could not have shown a change of that size")
    return name + "; ".join(parts) + f" ({span})."


def _verb(n: int, one: str, many: str) -> str:
    return one if n == 1 else many


def render(table: Any) -> str:
    """The table as aligned text (the CLI), the conclusion and what the floors stand on under it."""
    shown = table.copy()
    for col in ("a", "b", "gap", "floor", "released_gap", "released_floor", "ours_gap"):
        spec = "+.1f" if col.endswith("gap") else ".1f"
        shown[col] = shown[col].map(lambda v, spec=spec: "" if v is None or pd_isna(v) else format(v, spec))
    for col in ("released_p", "ours_p"):
        from vlamb_nb.stats.result import format_p

        shown[col] = shown[col].map(lambda v: "" if v is None or pd_isna(v) else format_p(v))
    shown["exceeds"] = shown["exceeds"].map(lambda v: "—" if v is None or pd_isna(v) else "yes" if v else "no")
    shown["as_stated"] = shown["as_stated"].map(lambda v: "—" if v is None or pd_isna(v) else "yes" if v else "no")
    cols = ["id", "section", "comparison", "expects", "a", "b", "gap", "test_set", "floor", "exceeds", "as_stated"]
    cols += [c for c in ("released", "released_gap", "released_p", "released_floor", "ours_gap", "ours_p")
             if (shown[c].astype(str) != "").any()]
    lines = [shown[cols].to_string(index=False), "", table.attrs.get("conclusion", ""),
             "discordance and ICC: " + table.attrs.get("agreement", "")]
    lines += [f"test set {k}: {v}" for k, v in table.attrs.get("test_sets", {}).items()]
    return "\n".join(lines)
