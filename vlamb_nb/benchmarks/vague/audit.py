"""VAGUE: the paper's numbers rebuilt from its own counts, the arithmetic audit, dataset statistics,
and reading prediction files.

Every derivable published cell is recomputed (accuracies from counts over N, Table 1 from J5/J6,
the ↑ gains, Tables 3/G4 non-CoT rows from J5+J6 sums, Table F3's self-caption column, Table 2's
half-up rounding), and each check becomes a :class:`vlamb_nb.reference.Finding`.
"""

from __future__ import annotations

import functools
from collections import Counter
from decimal import Decimal
from typing import Any

from vlamb_nb.benchmarks.vague.score import accuracy_pct, round_half_up
from vlamb_nb.reference import Finding

PAPER = "vague"
N = {"VCR": 1144, "Ego4D": 533}
N_ALL = 1677
N_HUMAN = 400
J_TABLE = {"VCR": "Table J5", "Ego4D": "Table J6"}
TYPES = ("LM", "SM", "VLM")
# Table F3 / Table 2 spell some models differently from Tables 1 and J5/J6
ALIASES = {"Phi3.5-Vision-Instruct (4b)": "Phi3.5-Vision-Instruct (4B)", "LLaVA-Onevision (7b)": "LLaVA-Onevision (7B)",
           "LLaVA-NeXT-icuna (13B)": "LLaVA-NeXT-vicuna (13B)", "Idefics2 (8b)": "Idefics2 (8B)"}
# hub ids of the evaluated checkpoints → the paper's row names (for paper-vs-ours tables)
PAPER_NAMES = {
    "microsoft/Phi-3.5-vision-instruct": "Phi3.5-Vision-Instruct (4B)",
    "llava-hf/llava-onevision-qwen2-7b-ov-hf": "LLaVA-Onevision (7B)",
    "Qwen/Qwen2.5-VL-7B-Instruct": "Qwen2.5-VL-Instruct (7B)",
    "OpenGVLab/InternVL2_5-8B-MPO": "InternVL-2.5-MPO (8B)",
    "HuggingFaceM4/idefics2-8b": "Idefics2 (8B)",
    "llava-hf/llava-v1.6-vicuna-13b-hf": "LLaVA-NeXT-vicuna (13B)",
    "AIDC-AI/Ovis2-16B": "Ovis2 (16B)",
    "OpenGVLab/InternVL2_5-26B-MPO": "InternVL-2.5-MPO (26B)",
    "OpenGVLab/InternVL3-38B": "InternVL-3 (38B)",
    "Qwen/Qwen2.5-VL-72B-Instruct": "Qwen2.5-VL-Instruct (72B)",
}


def _acc(correct: int, n: int) -> float:

    return accuracy_pct(correct, n)


def _pct(value: float) -> float:

    return round_half_up(value, 1)


def _ref():
    from vlamb_nb import reference

    return reference.load(PAPER)


@functools.cache
def _cells() -> dict[tuple[str, str, str], float]:
    ref = _ref()
    return {(t, r, c): float(v) for t, r, c, v in zip(ref["table"], ref["row"], ref["column"], ref["value_num"],
                                                      strict=True)}


def _cell(ref, table: str, row: str, column: str) -> float:
    """One published number (``ref`` is kept for call-site readability; lookups use a cached index)."""
    try:
        return _cells()[(table, row, column)]
    except KeyError:
        raise KeyError(f"vague reference has no cell {table} / {row} / {column}") from None


def models(ref=None) -> list[str]:
    ref = _ref() if ref is None else ref
    return list(dict.fromkeys(ref[ref["table"] == "Table 1"]["row"]))


def published_counts():
    """Tables J5 and J6 as one long frame: model, type, subset, FS, SU, NE, correct, valid, N, printed accuracy."""
    import pandas as pd

    ref = _ref()
    rows = []
    for subset, tid in J_TABLE.items():
        t = ref[ref["table"] == tid]
        for row in dict.fromkeys(t["row"]):
            model, typ = row.split(" | ")
            g = {c: _cell(t, tid, row, c) for c in ("Acc", "FS", "SU", "WE", "Correct", "Valid", "BERT F1", "BLEU-1")}
            rows.append({"model": model, "type": typ, "subset": subset, "FS": int(g["FS"]), "SU": int(g["SU"]),
                         "NE": int(g["WE"]), "correct": int(g["Correct"]), "valid": int(g["Valid"]), "N": N[subset],
                         "printed_acc": g["Acc"], "bert_f1": g["BERT F1"], "bleu1": g["BLEU-1"]})
    return pd.DataFrame(rows)


def fig4_data():
    """The data behind Fig. 4: FS/SU/NE/correct per model and setting over all 1,677 items (J5 + J6 sums)."""
    pc = published_counts()
    g = pc.groupby(["model", "type"], sort=False)[["FS", "SU", "NE", "correct", "N"]].sum().reset_index()
    g["accuracy"] = [_acc(c, n) for c, n in zip(g["correct"], g["N"], strict=True)]
    return g


def published_with_ci(alpha: float = 0.05):
    """Every published accuracy recomputed as Correct/N with a Wilson interval (an addition of this package)."""
    from vlamb_nb.stats import wilson

    pc = published_counts()
    rows = []
    for _, r in pc.iterrows():
        w = wilson(int(r["correct"]), int(r["N"]), alpha=alpha)
        rows.append({"model": r["model"], "type": r["type"], "subset": r["subset"], "correct": r["correct"],
                     "N": r["N"], "accuracy": _acc(r["correct"], r["N"]), "ci_low": 100 * w.ci_low,
                     "ci_high": 100 * w.ci_high, "printed": r["printed_acc"]})
    for _, r in fig4_data().iterrows():
        w = wilson(int(r["correct"]), int(r["N"]), alpha=alpha)
        rows.append({"model": r["model"], "type": r["type"], "subset": "All", "correct": r["correct"],
                     "N": r["N"], "accuracy": r["accuracy"], "ci_low": 100 * w.ci_low, "ci_high": 100 * w.ci_high,
                     "printed": float("nan")})
    import pandas as pd

    return pd.DataFrame(rows)


def table1_rebuilt():
    """Table 1 (per subset LM/SM/VLM with ↑ gains) recomputed from the J5/J6 counts over N."""
    import pandas as pd

    pc = published_counts()
    out = {}
    for model, g in pc.groupby("model", sort=False):
        row = {}
        for subset in N:
            acc = {t: _acc(int(r["correct"]), N[subset]) for t, r in
                   g[g["subset"] == subset].set_index("type").iterrows()}
            row[f"{subset} LM"] = acc["LM"]
            for t in ("SM", "VLM"):
                row[f"{subset} {t}"] = acc[t]
                row[f"{subset} {t} gain"] = _pct(acc[t] - acc["LM"])
        out[model] = row
    return pd.DataFrame.from_dict(out, orient="index")


# -- the audit ---------------------------------------------------------------------------------------
def _f(table, row, column, published, recomputed, kind, note="", tol=0.05) -> Finding:
    ok = abs(float(published) - float(recomputed)) <= tol
    return Finding(PAPER, table, row, column, published, recomputed, kind, ok, note)


def _audit_j(ref, pc) -> list[Finding]:
    out = []
    for _, r in pc.iterrows():
        tid, row = J_TABLE[r["subset"]], f"{r['model']} | {r['type']}"
        parsed = r["FS"] + r["SU"] + r["NE"] + r["correct"]
        acc_n = _acc(r["correct"], r["N"])
        note = ""
        if abs(acc_n - r["printed_acc"]) > 0.05:
            alt = _acc(r["correct"], parsed)
            note = (f"printed value equals Correct/(FS+SU+WE+Correct) = {r['correct']}/{parsed} = {alt}"
                    if abs(alt - r["printed_acc"]) <= 0.05 else "does not equal Correct/N")
        out.append(_f(tid, row, "Acc", r["printed_acc"], acc_n, "denominator" if note else "accuracy",
                      note or f"{r['correct']}/{r['N']}"))
        out.append(Finding(PAPER, tid, row, "Valid", r["valid"], int(parsed), "sum", parsed == r["valid"],
                           "Valid count = FS+SU+WE+Correct" + ("" if parsed == r["valid"] else
                                                                 f"; {r['valid'] - parsed} answers unaccounted")))
    return out


def _audit_table1(ref, pc) -> list[Finding]:
    out = []
    for model, g in pc.groupby("model", sort=False):
        for subset in N:
            s = g[g["subset"] == subset].set_index("type")
            printed = {t: _cell(ref, "Table 1", model, f"{subset} {t}") for t in TYPES}
            for t in TYPES:
                c = int(s.loc[t, "correct"])
                out.append(_f("Table 1", model, f"{subset} {t}", printed[t], _acc(c, N[subset]), "cross-table",
                              f"{J_TABLE[subset]} Correct {c}/{N[subset]}"))
            for t in ("SM", "VLM"):
                col = f"{subset} {t} gain"
                pub = _cell(ref, "Table 1", model, col)
                rec = _pct(printed[t] - printed["LM"])
                raw = float(Decimal(100 * (int(s.loc[t, "correct"]) - int(s.loc["LM", "correct"]))) / N[subset])
                out.append(_f("Table 1", model, col, pub, rec, "gain",
                              f"{printed[t]} - {printed['LM']} (from counts {raw:.2f})"))
    return out


def _audit_combined(ref, pc) -> list[Finding]:
    out = []
    comb = fig4_data().set_index(["model", "type"])
    for tid in ("Table 3", "Table G4"):
        t = ref[ref["table"] == tid]
        rows = list(dict.fromkeys(t["row"]))
        for row in rows:
            model, typ = row.split(" | ")
            if typ in ("SM", "VLM"):
                c = comb.loc[(model, typ)]
                out.append(_f(tid, row, "Acc", _cell(ref, tid, row, "Acc"), c["accuracy"], "sum",
                              f"J5+J6 correct {int(c['correct'])}/{N_ALL}"))
                for col in ("FS", "SU", "NE"):
                    out.append(_f(tid, row, col, _cell(ref, tid, row, col), int(c[col]), "sum", "J5+J6 sum"))
            else:  # CoT rows: the gain over the printed non-CoT row, and how many answers the counts leave over
                base = f"{model} | {typ.replace('+CoT', '')}"
                acc, base_acc = _cell(ref, tid, row, "Acc"), _cell(ref, tid, base, "Acc")
                out.append(_f(tid, row, "Gain", _cell(ref, tid, row, "Gain"), _pct(acc - base_acc), "gain",
                              f"{acc} - {base_acc}"))
                wrong = sum(_cell(ref, tid, row, c) for c in ("FS", "SU", "NE"))
                implied_correct = round(acc * N_ALL / 100)
                unparsed = N_ALL - implied_correct - int(wrong)
                out.append(Finding(PAPER, tid, row, "implied unparsed", None, unparsed, "impossible",
                                   unparsed >= 0, f"1677 - round(Acc x 1677) - (FS+SU+NE) = {unparsed}; "
                                                  "CoT counts need not sum to 1,677"))
    for (model, typ), c in comb.iterrows():  # Fig. 4 prints bars only: its data, derived for the record
        for col in ("FS", "SU", "NE", "correct"):
            out.append(Finding(PAPER, "Fig. 4", f"{model} | {typ}", col, None, int(c[col]), "derived", True,
                               "J5 + J6 sum over 1,677 items (the figure prints bars, no numbers)"))
    f3 = ref[ref["table"] == "Table F3"]
    for row in dict.fromkeys(f3["row"]):
        model = ALIASES.get(row, row)
        c = comb.loc[(model, "SM")]
        out.append(_f("Table F3", row, "Self captioning", _cell(ref, "Table F3", row, "Self captioning"),
                      c["accuracy"], "cross-table", f"J5+J6 SM correct {int(c['correct'])}/{N_ALL}"))
        self_, gpt = (_cell(ref, "Table F3", row, k) for k in ("Self captioning", "GPT-4o captioning"))
        out.append(_f("Table F3", row, "Gain", _cell(ref, "Table F3", row, "Gain"), _pct(gpt - self_), "gain",
                      f"{gpt} - {self_}"))
    return out


def _audit_table2(ref) -> list[Finding]:
    out = []
    t = ref[ref["table"] == "Table 2"]
    for row in dict.fromkeys(t["row"]):
        g = {c: _cell(ref, "Table 2", row, c) for c in ("Acc", "FS", "SU", "NE", "Correct")}
        total = int(g["FS"] + g["SU"] + g["NE"] + g["Correct"])
        half_up = _acc(int(g["Correct"]), N_HUMAN)
        py = round(100 * g["Correct"] / N_HUMAN, 1)
        note = f"{int(g['Correct'])}/{N_HUMAN} rounded half-up"
        if py != half_up:
            note += f" (Python round() would print {py})"
        if abs(half_up - g["Acc"]) > 0.05 and total != N_HUMAN:
            note += f"; printed value = {int(g['Correct'])}/{total} = {_acc(int(g['Correct']), total)}"
        out.append(_f("Table 2", row, "Acc", g["Acc"], half_up, "rounding", note))
        out.append(Finding(PAPER, "Table 2", row, "FS+SU+NE+Correct", N_HUMAN, total, "sum", total == N_HUMAN,
                           "each row should account for all 400 items"))
    return out


def audit() -> list[Finding]:
    """Every derivable cell of Tables 1, 2, 3, F3, G4, J5 and J6, recomputed from the published counts."""
    ref = _ref()
    pc = published_counts()
    return _audit_j(ref, pc) + _audit_table1(ref, pc) + _audit_combined(ref, pc) + _audit_table2(ref)


def mismatches(findings: list[Finding] | None = None):
    from vlamb_nb.reference import findings_frame

    df = findings_frame(audit() if findings is None else findings)
    return df[~df["ok"]].reset_index(drop=True)


def ours_vs_paper(breakdown, paper_model: str):
    """Our breakdown as reference cells for ``reference.compare``: Tables J5/J6 (MCQ accuracy and counts per
    subset, and the free-form BERT F1, BLEU-1 and valid count), Table 1, Tables 3/G4 (SM and VLM with and without
    CoT over all 1,677 items, with the CoT gain) and Table F3 (self vs external captions, with the gain)."""
    import pandas as pd

    rows = []
    by = {(r["setting"], r["subset"]): r for _, r in breakdown.iterrows()}
    for (setting, subset), r in by.items():
        free_form = setting.endswith("_ff")
        typ = {"lm": "LM", "sm": "SM", "vlm": "VLM"}.get(setting.removesuffix("_ff"))
        if typ is None or subset not in N:
            continue
        tid = J_TABLE[subset]
        row = f"{paper_model} | {typ}"
        if free_form:  # J5/J6's free-form columns: means over items, on the paper's 0-1 scale
            for col, key in (("BERT F1", "BERT F1"), ("BLEU-1", "BLEU-1")):
                if key in r and r[key] == r[key]:
                    rows.append({"table": tid, "row": row, "column": col, "value": round(float(r[key]), 3)})
            rows.append({"table": tid, "row": row, "column": "FF Valid", "value": r["valid"]})
            continue
        base = {"ci_low": r.get("ci_low"), "ci_high": r.get("ci_high")}
        rows.append({"table": tid, "row": row, "column": "Acc", "value": r["accuracy"], **base})
        rows.append({"table": "Table 1", "row": paper_model, "column": f"{subset} {typ}",
                     "value": r["accuracy"], **base})
        for col, key in (("FS", "FS"), ("SU", "SU"), ("WE", "NE"), ("Correct", "correct"), ("Valid", "valid")):
            rows.append({"table": tid, "row": row, "column": col, "value": r[key]})
    rows += _cot_cells(by, paper_model) + _caption_cells(by, paper_model)
    return pd.DataFrame(rows)


def _reference_row(table: str, name: str, suffix: str = "") -> str | None:
    """The row of ``table`` naming ``name`` (the tables spell sizes "(7B)" or "(7b)"), or None."""
    from vlamb_nb import reference

    want = f"{name}{suffix}".lower()
    return next((r for r in reference.load("vague", table=table)["row"].unique() if r.lower() == want), None)


def _cot_cells(by: dict, paper_model: str) -> list[dict[str, Any]]:
    """Tables 3 (proprietary models) and G4 (open ones): SM and VLM, with and without CoT, on all 1,677 items."""
    out = []
    for typ, plain, cot in (("SM", "sm", "sm_cot"), ("VLM", "vlm", "vlm_cot")):
        table = next((t for t in ("Table 3", "Table G4") if _reference_row(t, paper_model, f" | {typ}+CoT")),
                     "Table G4")
        for setting, label in ((plain, typ), (cot, f"{typ}+CoT")):
            r = by.get((setting, "All"))
            if r is None:
                continue
            row = _reference_row(table, paper_model, f" | {label}") or f"{paper_model} | {label}"
            out.append({"table": table, "row": row, "column": "Acc", "value": r["accuracy"],
                        "ci_low": r.get("ci_low"), "ci_high": r.get("ci_high")})
            out += [{"table": table, "row": row, "column": c, "value": r[c]} for c in ("FS", "SU", "NE")]
        if (plain, "All") in by and (cot, "All") in by:
            gain = float(by[(cot, "All")]["accuracy"]) - float(by[(plain, "All")]["accuracy"])
            row = _reference_row(table, paper_model, f" | {typ}+CoT") or f"{paper_model} | {typ}+CoT"
            out.append({"table": table, "row": row, "column": "Gain", "value": round(gain, 1)})
    return out


def _caption_cells(by: dict, paper_model: str) -> list[dict[str, Any]]:
    """Table F3: SM with the model's own captions beside SM with external captions (sm_ext), all 1,677 items."""
    row = _reference_row("Table F3", paper_model) or paper_model
    own, ext = by.get(("sm", "All")), by.get(("sm_ext", "All"))
    out = []
    for r, col in ((own, "Self captioning"), (ext, "GPT-4o captioning")):
        if r is not None:
            out.append({"table": "Table F3", "row": row, "column": col, "value": r["accuracy"],
                        "ci_low": r.get("ci_low"), "ci_high": r.get("ci_high")})
    if own is not None and ext is not None:
        out.append({"table": "Table F3", "row": row, "column": "Gain",
                    "value": round(float(ext["accuracy"]) - float(own["accuracy"]), 1)})
    return out


def paper_name(model_id: str) -> str:
    """The paper's row name for a hub id (or the id itself when the paper did not evaluate it)."""
    return PAPER_NAMES.get(model_id, model_id)


def counts_summary(findings: list[Finding]) -> dict[str, Any]:
    bad = [f for f in findings if not f.ok]
    return {"checked": len(findings), "mismatches": len(bad),
            "by_table": dict(Counter(f.table for f in bad))}
