"""An audit of MUCAR's published arithmetic: which printed cells the paper's own numbers contradict.

Every check returns :class:`vlamb_nb.reference.Finding` rows (``ok=False`` = a mismatch):

- Table 5 column/row sums, and every Table 5 cell against the released ``data-all.json``;
- impossible cells (Acc_p > Acc_q) in Tables 2a, 2b, 9 and 12;
- duplicated cells (two models with identical Acc_p/Acc_q in one category);
- cells that are no integer fraction k/n for any plausible denominator;
- Overall Acc_q as the micro-average over categories (the GPT-4V/GPT-4o arithmetic), Overall Acc_p;
- Table 3's printed drops, Table 4's Overall columns, and the text's claims about Table 12.
"""

from __future__ import annotations

import itertools
from typing import Any

from vlamb_nb.reference import Finding

PAPER = "mucar"
CATS = ["Polysemy", "Homonymy", "Grammar", "Semantics", "Specialized", "Cultural", "Dual-ambiguity"]
TABLE5_ROWS = {"Dual-Amb": "Dual-ambiguity"}
#: evaluation denominators the notes derive from Table 2 (queries; largest pair counts seen)
QUERY_DENOMINATORS = {"Polysemy": 179, "Homonymy": 250, "Grammar": 214, "Semantics": 84, "Specialized": 95,
                      "Cultural": 85, "Dual-ambiguity": 372}
PAIR_DENOMINATORS = {"Polysemy": 89, "Homonymy": 117, "Grammar": 108, "Semantics": 43, "Specialized": 44,
                     "Cultural": 41, "Dual-ambiguity": 97}


def _ref(table: str):
    from vlamb_nb import reference

    return reference.load(PAPER, table)


def _f(table: str, row: str, column: str, published: Any, recomputed: Any, kind: str, ok: bool,
       note: str = "") -> Finding:
    return Finding(PAPER, table, row, column, published, recomputed, kind, bool(ok), note)


def fits_fraction(value: float, n_min: int, n_max: int, decimals: int = 2) -> tuple[int, int] | None:
    """The first (k, n) with n in [n_min, n_max] whose 100*k/n rounds to ``value``; None if none."""
    for n in range(max(1, n_min), n_max + 1):
        k = round(value * n / 100)
        if 0 <= k <= n and round(100 * k / n, decimals) == round(value, decimals):
            return k, n
    return None


# -- Table 5 -------------------------------------------------------------------------------------
def table5_sums() -> list[Finding]:
    """Each language column and each category row against the printed totals."""
    df = _ref("Table 5")
    wide = df.pivot(index="row", columns="column", values="value_num")
    cats = [r for r in dict.fromkeys(df["row"]) if r != "Overall"]
    out = []
    for col in ["Chinese", "English", "Malay", "Total"]:
        s = int(wide.loc[cats, col].sum())
        pub = int(wide.loc["Overall", col])
        out.append(_f("Table 5", "Overall", col, pub, s, "sum", s == pub, f"sum of the {len(cats)} category rows"))
    for r in cats + ["Overall"]:
        s = int(wide.loc[r, ["Chinese", "English", "Malay"]].sum())
        pub = int(wide.loc[r, "Total"])
        out.append(_f("Table 5", r, "Total", pub, s, "sum", s == pub, "sum of the three language cells"))
    return out


def table5_vs_release(items) -> list[Finding]:
    """Every Table 5 cell against the released data's counts."""
    from vlamb_nb.benchmarks.mucar.data import category_language_counts

    ours = category_language_counts(items)
    out = []
    for _, r in _ref("Table 5").iterrows():
        row = TABLE5_ROWS.get(r["row"], r["row"])
        got = int(ours.loc[row, r["column"]])
        pub = int(r["value_num"])
        out.append(_f("Table 5", r["row"], r["column"], pub, got, "release", got == pub,
                      "count in the released data-all.json"))
    return out


# -- Tables 2a / 2b / 9 / 12 ---------------------------------------------------------------------
def _pairs(table: str):
    df = _ref(table)
    wide = df.pivot(index="row", columns="column", values="value_num")
    cats = [c for c in CATS + ["Overall"] if f"{c} Acc_p" in wide.columns]
    return wide.loc[list(dict.fromkeys(df["row"]))], cats


def impossible_cells(tables=("Table 2a", "Table 2b", "Table 9", "Table 12")) -> list[Finding]:
    """Acc_p (all queries of a pair right) can never exceed Acc_q; one finding per category cell."""
    out = []
    for t in tables:
        wide, cats = _pairs(t)
        for row, c in itertools.product(wide.index, cats):
            p, q = wide.loc[row, f"{c} Acc_p"], wide.loc[row, f"{c} Acc_q"]
            ok = p <= q
            out.append(_f(t, row, f"{c} Acc_p", float(p), float(q), "impossible", ok,
                          "" if ok else f"Acc_p {p:.2f} > Acc_q {q:.2f}: the two cells look swapped"))
    return out


def duplicated_cells(tables=("Table 2a", "Table 2b")) -> list[Finding]:
    """Two different models printing the same (Acc_p, Acc_q) in one category (a copy-paste sign)."""
    out = []
    for t in tables:
        wide, cats = _pairs(t)
        for c in cats:
            seen: dict[tuple[float, float], str] = {}
            for row in wide.index:
                key = (float(wide.loc[row, f"{c} Acc_p"]), float(wide.loc[row, f"{c} Acc_q"]))
                if key in seen:
                    out.append(_f(t, row, f"{c} Acc_p/Acc_q", f"{key[0]:.2f}/{key[1]:.2f}", seen[key], "duplicate",
                                  False, f"identical to the row of {seen[key]}"))
                else:
                    seen[key] = row
    t9, _ = _pairs("Table 9")
    t2b, _ = _pairs("Table 2b")
    same = bool((t9.loc["Human"] == t2b.loc["Human", t9.columns]).all())
    out.append(_f("Table 9", "Human", "all", "Table 9 row", "Table 2b Human row", "duplicate", same,
                  "Table 9 repeats Table 2b's Human row" + ("" if same else " but the cells differ")))
    return out


def fraction_cells(tables=("Table 2a", "Table 2b")) -> list[Finding]:
    """Cells that are no k/n for any denominator between half the full set and the full set (+1)."""
    out = []
    for t in tables:
        wide, cats = _pairs(t)
        for row, c in itertools.product(wide.index, [c for c in cats if c != "Overall"]):
            if row == "Human":  # averaged over evaluators: not a single fraction
                continue
            for metric, dens in (("Acc_q", QUERY_DENOMINATORS), ("Acc_p", PAIR_DENOMINATORS)):
                v = float(wide.loc[row, f"{c} {metric}"])
                n_full = dens[c]
                hit = fits_fraction(v, n_full // 2, n_full + 1)
                if hit is None:
                    out.append(_f(t, row, f"{c} {metric}", v, None, "denominator", False,
                                  f"no k/n with n in [{n_full // 2}, {n_full + 1}] rounds to {v:.2f}"))
    return out


def overall_micro(rows=("GPT-4V", "GPT-4o"), table: str = "Table 2a") -> list[Finding]:
    """Overall = micro-average: numerators k_c from each category cell over the evaluation denominators."""
    wide, _ = _pairs(table)
    out = []
    for row in rows:
        for metric, dens in (("Acc_q", QUERY_DENOMINATORS), ("Acc_p", PAIR_DENOMINATORS)):
            ks, ns, notes = [], [], []
            for c in CATS:
                v = float(wide.loc[row, f"{c} {metric}"])
                n0 = dens[c]
                hit = fits_fraction(v, n0, n0) or fits_fraction(v, n0 - 3, n0 + 3)
                if hit is None:
                    notes.append(f"{c}: no denominator near {n0}")
                    continue
                ks.append(hit[0])
                ns.append(hit[1])
                if hit[1] != n0:
                    notes.append(f"{c}: n={hit[1]}")
            micro = round(100 * sum(ks) / sum(ns), 2) if ns else None
            pub = float(wide.loc[row, f"Overall {metric}"])
            ok = micro is not None and abs(micro - pub) <= 0.01 and not any("no denominator" in x for x in notes)
            out.append(_f(table, row, f"Overall {metric}", pub, micro, "micro-average", ok,
                          f"{sum(ks)}/{sum(ns)} over the category cells" + ("; " + "; ".join(notes) if notes else "")))
    return out


def table3_drops() -> list[Finding]:
    wide = _ref("Table 3").pivot(index="row", columns="column", values="value_num")
    out = []
    for row in [r for r in wide.index if r.endswith("(w/o)")]:
        full = row.replace("(w/o)", "(w/)")
        for m in ("Overall Acc_p", "Overall Acc_q"):
            drop = round(float(wide.loc[full, m] - wide.loc[row, m]), 2)
            pub = float(wide.loc[row, f"{m} drop"])
            out.append(_f("Table 3", row, f"{m} drop", pub, drop, "gain", abs(drop - pub) <= 0.01,
                          "full input minus context removed"))
    return out


def table4_overall() -> list[Finding]:
    wide = _ref("Table 4").pivot(index="row", columns="column", values="value_num")
    out = []
    for row in wide.index:
        for m in ("Acc_p", "Acc_q"):
            mean = round(float(wide.loc[row, f"CODIS {m}"] + wide.loc[row, f"MUCAR {m}"]) / 2, 2)
            pub = float(wide.loc[row, f"Overall {m}"])
            out.append(_f("Table 4", row, f"Overall {m}", pub, mean, "mean", abs(mean - pub) <= 0.011,
                          "mean of the CODIS and MUCAR cells"))
    return out


def table12_claims() -> list[Finding]:
    """The text's numbers about Table 12 recomputed from the table's own cells."""
    wide = _ref("Table 12").pivot(index="row", columns="column", values="value_num")
    m = "InternVL2.5-8B-MPO-AWQ"

    def v(lang: str, conf: str) -> float:
        return float(wide.loc[f"In {lang}, {conf} confusing options | {m}", "Overall Acc_q"])

    claims = [("drop with confusing options, Chinese prompt", 7.72, v("Chinese", "without") - v("Chinese", "with")),
              ("drop with confusing options, Malay prompt", 11.69, v("Malay", "without") - v("Malay", "with")),
              ("Chinese minus Malay, without confusing options", 0.55, v("Chinese", "without") - v("Malay", "without")),
              ("Chinese minus Malay, with confusing options", 4.41, v("Chinese", "with") - v("Malay", "with"))]
    return [_f("Table 12", m, name, pub, round(got, 2), "text claim", abs(pub - got) <= 0.011, "Appendix D prose")
            for name, pub, got in claims]


def audit(items=None) -> list[Finding]:
    """All checks; Table 5 against the release only when ``items`` (the loaded release) is given."""
    out = table5_sums()
    if items is not None:
        out += table5_vs_release(items)
    out += impossible_cells() + duplicated_cells() + fraction_cells() + overall_micro()
    out += table3_drops() + table4_overall() + table12_claims()
    return out
