"""An audit of MUCAR's published arithmetic: which printed cells the paper's own numbers contradict.

Every check returns :class:`vlamb_nb.reference.Finding` rows (``ok=False`` = a mismatch):

- Table 5 column/row sums, and every Table 5 cell against the released ``data-all.json``;
- impossible cells (Acc_p > Acc_q) in Tables 2a, 2b, 9 and 12;
- duplicated cells (two models with identical Acc_p/Acc_q in one category);
- cells that are no integer fraction k/n for any plausible denominator;
- Overall Acc_q as the micro-average over categories (the GPT-4V/GPT-4o arithmetic), Overall Acc_p;
- Table 2's Dual-ambiguity Acc_p denominators (97 for GPT-4V/GPT-4o/Deepseek, 62 for the InternVL/Qwen
  rows), and, given the release, the grouping that yields each count and the paper's 501 pairs;
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


#: Dual-ambiguity pair counts Table 2's Dual Acc_p cells are multiples of (the notes, §3.5), with the
#: release grouping (``data.GROUPINGS``) that gives that many dual groups [inferred from the counts].
DUAL_PAIR_COUNTS: dict[int, tuple[str | None, str]] = {
    97: ("question_id_schema", "question_id pairs with their schema-B and schema-C records counted apart: "
                               "62 pairs, 35 of which hold both schemas, 62 + 35 = 97"),
    62: ("question_id", "the paper's question_id pairs: 501 in all, 439 non-dual + 62 dual (§3.3)"),
    70: ("pair_id", "distinct pair_id values (used by Table 2b's Kimi/Llama/MiniCPM/Idefics/LLaVA rows)"),
    71: (None, "no grouping of the release gives 71 (pair ids run 1-71 with '28' absent); "
               "Table 2a's Kimi/Llama/MiniCPM/Idefics/LLaVA rows"),
}
#: the denominator each published row's Dual Acc_p uses, read off the arithmetic (``dual_denominators``
#: checks it); rows in none of these fit no common denominator (Gemini-2.0-flash, Claude-3.5-Sonnet)
DUAL_ROWS_97 = ("GPT-4V", "GPT-4o", "Deepseek-VL-Tiny", "mPLUG-Owl3-2B-241014")
DUAL_ROWS_62 = ("InternVL2-8B", "InternVL2.5-8B-MPO", "InternVL2.5-8B-MPO-AWQ", "Qwen2.5-VL-3B-Instruct",
                "Qwen2.5-VL-7B-Instruct", "mPLUG-Owl3-7B-240728")
DUAL_ROWS_PAIR_ID = {"Table 2a": 71, "Table 2b": 70}
DUAL_ROWS_PAIR_ID_MODELS = ("Kimi-VL", "Llama-3.2-Vision-11B", "MiniCPM-o 2.6", "Idefics3-8B-Llama3",
                            "LLaVA-v1.6-vicuna-7b", "LLaVA-v1.6-mistral-7b", "LLaVA-OneVision")


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


def dual_denominator(table: str, row: str) -> int | None:
    """The pair count a Table 2 row's Dual Acc_p is a multiple of (None: no common one fits)."""
    if row in DUAL_ROWS_97:
        return 97
    if row in DUAL_ROWS_62:
        return 62
    if row in DUAL_ROWS_PAIR_ID_MODELS:
        return DUAL_ROWS_PAIR_ID.get(table)
    return None


def _times(v: float, n: int) -> str:
    """``v×n/100 = x ≈ k``: a 2-decimal percentage of k/n is off k by at most 0.005·n/100."""
    x = v * n / 100
    near = abs(x - round(x)) <= 0.005 * n / 100
    return f"{v:.2f}×{n}/100 = {x:.3f}" + (f" ≈ {round(x)}" if near else " (not an integer)")


def dual_denominators(tables=("Table 2a", "Table 2b")) -> list[Finding]:
    """Why Table 2's Dual Acc_p is k/97 in some rows and k/62 in others: one finding per row.

    The two counts are two groupings of the same 372 queries (:data:`DUAL_PAIR_COUNTS`): 97 treats a
    question_id's schema-B and schema-C records as two pairs, 62 is the paper's 501-pair grouping. So
    the rows were not scored on one pair set, and Dual Acc_p is not comparable across them. The note
    shows the arithmetic: published × 97 / 100 and × 62 / 100, exactly one of which is (near) an integer.
    """
    out = []
    for t in tables:
        wide, _ = _pairs(t)
        for row in wide.index:
            if row == "Human":  # averaged over evaluators: not a single fraction
                continue
            v = float(wide.loc[row, "Dual-ambiguity Acc_p"])
            n = dual_denominator(t, row)
            arithmetic = "; ".join(_times(v, m) for m in (97, 62) + ((n,) if n not in (None, 97, 62) else ()))
            hit = fits_fraction(v, n, n) if n is not None else None
            if hit is not None:
                k = hit[0]
                out.append(_f(t, row, "Dual-ambiguity Acc_p", v, f"{k}/{n}", "dual denominator", True,
                              f"{arithmetic}; {k}/{n} = {100 * k / n:.2f}. n = {n}: {DUAL_PAIR_COUNTS[n][1]}"))
                continue
            near = fits_fraction(v, 40, 140)
            why = f"expected k/{n} and it does not fit" if n is not None else "fits neither 97 nor 62 (nor 70/71)"
            out.append(_f(t, row, "Dual-ambiguity Acc_p", v, None if near is None else f"{near[0]}/{near[1]}",
                          "dual denominator", False,
                          f"{arithmetic}; {why}; " + ("no k/n with n in [40, 140]" if near is None else
                                                     f"smallest fitting denominator {near[1]}")))
    return out


def dual_pairs_vs_release(items) -> list[Finding]:
    """The release grouped each way: the counts behind the denominators, and the paper's 501 pairs."""
    from vlamb_nb.benchmarks.mucar.data import NON_DUAL_CATEGORIES, regroup

    dual = items["category"] == "Dual-ambiguity"
    out = []
    for n, (rule, meaning) in DUAL_PAIR_COUNTS.items():
        if rule is None:
            continue
        got = int(regroup(items[dual], rule).nunique())
        out.append(_f("Table 2", f"Dual-ambiguity pairs ({rule})", "n_pairs", n, got, "release", got == n,
                      f"dual groups in the released data-all.json by {rule}: {meaning}"))
    keys = regroup(items, "question_id")
    non_dual = int(keys[items["category"].isin(NON_DUAL_CATEGORIES)].nunique())
    for col, pub, got in (("pairs", 501, int(keys.nunique())), ("non-dual pairs", 439, non_dual),
                          ("dual pairs", 62, int(keys[dual].nunique()))):
        out.append(_f("§3.3", "question_id pairs", col, pub, got, "release", got == pub,
                      "the paper's 501 (C, Q, I) pairs, counted in the release by question_id"))
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
        out += table5_vs_release(items) + dual_pairs_vs_release(items)
    out += impossible_cells() + duplicated_cells() + fraction_cells() + overall_micro() + dual_denominators()
    out += table3_drops() + table4_overall() + table12_claims()
    return out
