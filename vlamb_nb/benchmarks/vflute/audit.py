"""V-FLUTE audit: the paper's own numbers checked against each other and against the released test split."""

from __future__ import annotations

from vlamb_nb.benchmarks.vflute.data import DATASETS, SPLIT_SIZES
from vlamb_nb.reference import Finding


# -- the audit of the paper's own arithmetic -------------------------------------------------------
def _released_test_counts() -> dict[str, int] | None:
    from vlamb_nb.paths import shared_data_dir

    shared = shared_data_dir()
    if shared is None or not (shared / "vflute" / "vflute-v2-test.json").is_file():
        return None
    from vlamb_nb.benchmarks.vflute.data import load_items

    items = load_items(shared / "vflute" / "vflute-v2-test.json")
    out = {DATASETS[d]: int(n) for d, n in items["dataset"].value_counts().items()}
    out["Total"] = int(len(items))
    for lab in ("entailment", "contradiction"):
        out[lab] = int((items["label"] == lab).sum())
    return out


def reference_findings(released: dict[str, int] | None | bool = True) -> list[Finding]:
    """Recompute derivable cells: Table 1 E+C, Table 3 row/column sums, Table 1 vs 3, the released test split."""
    from vlamb_nb import reference

    def cell(t: str, r: str, c: str) -> float:
        return reference.cell("vflute", t, r, c)

    out: list[Finding] = []
    t1_rows = list(dict.fromkeys(reference.load("vflute", "Table 1")["row"]))
    for r in t1_rows:
        e, c, tot = cell("Table 1", r, "E"), cell("Table 1", r, "C"), cell("Table 1", r, "# instances")
        out.append(Finding("vflute", "Table 1", r, "# instances", tot, e + c, "sum", e + c == tot, "E + C"))
    total1 = sum(cell("Table 1", r, "# instances") for r in t1_rows)
    out.append(Finding("vflute", "Table 1", "all", "# instances", 6027, total1, "sum", total1 == 6027,
                       "the paper's stated dataset size (6,027) vs the sum of rows"))
    t3_rows = [r for r in dict.fromkeys(reference.load("vflute", "Table 3")["row"]) if r != "Total"]
    table1_name = {"HAIVMet": "HAIVMet"}
    for r in t3_rows:
        s = sum(cell("Table 3", r, c) for c in ("Train", "Valid", "Test"))
        t1 = cell("Table 1", table1_name.get(r, r), "# instances")
        out.append(Finding("vflute", "Table 3", r, "Train+Valid+Test", t1, s, "sum", s == t1,
                           "split sizes sum to the Table 1 total"))
    for c in ("Train", "Valid", "Test"):
        s = sum(cell("Table 3", r, c) for r in t3_rows)
        out.append(Finding("vflute", "Table 3", "Total", c, cell("Table 3", "Total", c), s, "sum",
                           s == cell("Table 3", "Total", c), "column sum"))
    for split, c in (("train", "Train"), ("validation", "Valid"), ("test", "Test")):
        out.append(Finding("vflute", "Table 3", "Total", c, cell("Table 3", "Total", c), SPLIT_SIZES[split], "sum",
                           cell("Table 3", "Total", c) == SPLIT_SIZES[split], "Hugging Face card split size"))
    # Table 6 percentages as fractions of plausible agreed-item counts (denominators inferred)
    for col, (a, n_a, p, n_p) in {"LLaVA-7B eViL+VF": (25, 74, 12, 52), "LLaVA-34B SG": (20, 67, 4, 52),
                                  "GPT-4 (5 shot)": (38, 75, 23, 52)}.items():
        for row, k, n in (("Adequate %", a, n_a), ("Preference %", p, n_p)):
            pub = cell("Table 6", row, col)
            rec = round(100 * k / n, 2)
            out.append(Finding("vflute", "Table 6", row, col, pub, rec, "denominator", abs(rec - pub) < 0.006,
                               f"{k}/{n} (denominator inferred; the paper gives none)"))
    gap = round(cell("Table 4", "LLaVA-7B → VF", "F1@0") - cell("Table 4", "LLaVA-7B → VF − Image", "F1@0"), 2)
    out.append(Finding("vflute", "Table 4", "LLaVA-7B → VF − Image", "F1@0", "over 8 points (§4.3)", gap, "gain",
                       gap > 8, "VF minus −Image"))
    out.append(Finding("vflute", "Table 4", "LLaVA-ZS-7B", "F1@53", 35.57, 35.56, "consistency", False,
                       "App. H text cites 35.56 for the same cell"))
    nyc = cell("Table 7", "NYCartoons", "LLaVA-eViL+VF")
    out.append(Finding("vflute", "Table 7", "NYCartoons", "LLaVA-eViL+VF", nyc, "<= 50", "impossible", nyc <= 50,
                       "NYCartoons has only entailment gold labels: macro-F1 is capped at 50 once any item is "
                       "predicted contradiction, and is 100 only if none is"))
    counts = _released_test_counts() if released is True else (released or None)
    if counts:
        for r in t3_rows:
            pub = cell("Table 3", r, "Test")
            got = counts.get(r, 0)
            out.append(Finding("vflute", "Table 3", r, "Test", pub, got, "released data", pub == got,
                               "count in the released test split"))
        pub = cell("Table 3", "Total", "Test")
        out.append(Finding("vflute", "Table 3", "Total", "Test", pub, counts["Total"], "released data",
                           pub == counts["Total"], "released test split size"))
    return out
