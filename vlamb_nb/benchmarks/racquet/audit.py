"""Audit of RACQUET's published numbers: dataset statistics recomputed from the release, and arithmetic.

``vlamb-nb reference check racquet`` calls :func:`reference_check`. Dataset cells are
recomputed from the released JSONL beside the checkout (skipped with one note when it is
absent); the arithmetic checks (Table 2 sums, whether a share is possible over the stated
number of responses, the text's ranges for Table 1) need only the stored numbers.
"""

from __future__ import annotations

from typing import Any

from vlamb_nb import reference
from vlamb_nb.benchmarks.racquet import data as R
from vlamb_nb.reference import Finding

PAPER = "racquet"


def _cell(table: str, row: str, column: str) -> float:
    return reference.cell(PAPER, table, row, column)


def _f(table: str, row: str, column: str, recomputed: Any, kind: str, ok: bool, note: str = "") -> Finding:
    ref = reference.load(PAPER, table)
    hit = ref[(ref["row"] == row) & (ref["column"] == column)]
    published = hit["value"].iloc[0] if len(hit) else None
    return Finding(PAPER, table, row, column, published, recomputed, kind, bool(ok), note)


def _rounds_to(value: float, published: float, decimals: int) -> bool:
    return abs(round(value, decimals) - published) < 10 ** (-decimals) / 2 + 1e-9


def possible_share(share: float, n: int, decimals: int = 1) -> bool:
    """Can ``share`` (%, printed with ``decimals``) be k/n for an integer k?"""
    k = round(share / 100 * n)
    return any(_rounds_to(100 * kk / n, share, decimals) for kk in (k - 1, k, k + 1) if 0 <= kk <= n)


def dataset_findings(bench) -> list[Finding]:
    """Dataset statistics from the release vs the paper."""
    items = bench.load(None)
    st = bench.data_stats(items)
    g, b = st["general"], st["bias"]
    out = [
        _f("Dataset", "RACQUET", "pairs", g["rows"] + b["rows"], "statistic",
           g["rows"] + b["rows"] == _cell("Dataset", "RACQUET", "pairs")),
        _f("Dataset", "GENERAL", "pairs", g["rows"], "statistic", g["rows"] == _cell("Dataset", "GENERAL", "pairs")),
        _f("Dataset", "GENERAL", "unique images", g["image_blocks"], "statistic",
           g["image_blocks"] == _cell("Dataset", "GENERAL", "unique images"),
           f"counted as contiguous image blocks; unique image URLs = {g['unique_image_urls']}"),
        _f("Dataset", "GENERAL", "unique images", g["unique_image_urls"], "statistic",
           g["unique_image_urls"] == _cell("Dataset", "GENERAL", "unique images"),
           "counted as unique image URLs (some images appear in two separate blocks)"),
        _f("Dataset", "GENERAL", "questions per image", round(g["questions_per_image_block"], 4), "rounding",
           _rounds_to(g["questions_per_image_block"], _cell("Dataset", "GENERAL", "questions per image"), 2),
           "rows / image blocks"),
        _f("Dataset", "GENERAL", "question length mean", g["question_length_mean"], "rounding",
           _rounds_to(g["question_length_mean"], _cell("Dataset", "GENERAL", "question length mean"), 1),
           "whitespace tokens"),
        _f("Dataset", "GENERAL", "question length SD", g["question_length_sd"], "rounding",
           _rounds_to(g["question_length_sd"], _cell("Dataset", "GENERAL", "question length SD"), 2),
           "whitespace tokens, sample SD"),
        _f("Dataset", "GENERAL", "colour or attire questions", g["color_share"], "rounding",
           _rounds_to(g["color_share"], _cell("Dataset", "GENERAL", "colour or attire questions"), 1),
           f"questions containing 'color'/'colour': {g['color_questions']}"),
    ]
    person = 100.0 * float(items[items["subset"] == "general"]["question"].str.contains(r"\bperson\b").mean())
    out.append(_f("Dataset", "GENERAL", "subject person", round(person, 2), "rounding",
                  _rounds_to(person, _cell("Dataset", "GENERAL", "subject person"), 0),
                  "share of questions containing the word 'person'"))
    n = g["rows"]
    for t, col in (("person", "subject person"), ("people", "subject other people terms"),
                   ("object", "subject objects")):
        share = 100.0 * g["subject_types"].get(t, 0) / n
        out.append(_f("Dataset", "GENERAL", col, round(share, 2), "rounding",
                      _rounds_to(share, _cell("Dataset", "GENERAL", col), 0),
                      "subject heuristic (head noun after a determiner, or a pronoun); the paper's subject "
                      "extraction is not described"))
    out.append(_f("Dataset", "BIAS", "pairs", b["rows"], "statistic", b["rows"] == _cell("Dataset", "BIAS", "pairs")))
    out.append(_f("Dataset", "BIAS", "images", b["unique_image_urls"], "statistic",
                  b["unique_image_urls"] == _cell("Dataset", "BIAS", "images")))
    for cat in ("gender", "ethnicity", "disability"):
        n = b["rows_per_category"].get(cat, 0)
        out.append(_f("Dataset", "BIAS", f"{cat} pairs", n, "statistic",
                      n == _cell("Dataset", "BIAS", f"{cat} pairs"),
                      f"ids {b['id_range_per_category'].get(cat)}, {b['images_per_category'].get(cat)} images"))
    bias_items = items[items["subset"] == "bias"]
    for cat, (lo, hi) in R.BIAS_CATEGORY_IDS.items():
        part = bias_items[bias_items["category"] == cat]
        grid = part.groupby("adjective")["image_url"].nunique()
        adjs = sorted(R.STEREOTYPE_TARGET[cat])
        full = sorted(grid.index) == adjs and (grid == 15).all() and len(part) == 15 * len(adjs)
        out.append(_f("Dataset", "BIAS", f"{cat} pairs", f"ids {lo}-{hi}: {len(grid)} adjectives x "
                      f"{part['image_url'].nunique()} images", "release", bool(full),
                      f"App. I.2 adjectives {adjs}, each asked about all 15 images of the category"))
    return out


def arithmetic_findings() -> list[Finding]:
    """Checks that need only the published numbers."""
    out: list[Finding] = []
    for col in ("GPT-4o (05/24)", "Molmo 7B-D"):
        total = sum(_cell("Table 2", f"CLASS {k}", col) for k in "ABC")
        out.append(_f("Table 2", "CLASS A+B+C", col, round(total, 2), "sum", abs(total - 100) <= 0.15,
                      "three class shares should sum to 100 (±0.15 rounding)"))
        for k in "ABC":
            v = _cell("Table 2", f"CLASS {k}", col)
            out.append(_f("Table 2", f"CLASS {k}", col, f"possible over 5000 samples: {possible_share(v, 5000)}",
                          "denominator", possible_share(v, 5000), "500 items x 10 samples, pooled"))
    for row, lo, hi in (("Responses", 76, 77), ("Random", 44, 52)):
        for col in ("GPT-4o", "LLaVA-34B", "Molmo 7B-D"):
            v = _cell("Table 1", row, col)
            ok = lo - 0.5 <= v <= hi + 0.5
            out.append(_f("Table 1", row, col, f"text says {lo}-{hi}%", "range", ok,
                          "consistency with the §4.4 text"))
    checks = [("Fig. 3", "Humans", "Explicit", 100, "25 items x 4 participants"),
              ("Fig. 3", "GPT-4o", "Explicit", 500, "all 500 GENERAL items"),
              ("Fig. 3", "Molmo 7B-D", "High Risk", 500, "all 500 GENERAL items"),
              ("Fig. 4", "Molmo 7B-D (CoT)", "Explicit", 500, "all 500 GENERAL items"),
              ("Fig. 4", "GPT-4o (CoT)", "mentions multiple referents", 500, "all 500 GENERAL items")]
    for table, row, col, n, why in checks:
        v = _cell(table, row, col)
        decimals = 0 if float(v).is_integer() and "." not in reference.load(PAPER, table).set_index(
            ["row", "column"]).loc[(row, col), "value"] else 1
        ok = possible_share(v, n, decimals)
        k = v / 100 * n
        out.append(_f(table, row, col, f"{k:g} of {n}", "denominator", ok,
                      f"{why}; " + ("an integer count" if ok else "not k/n for any integer k: the denominator "
                                    "must differ (some responses excluded?)")))
    return out


def reference_check(bench) -> list[Finding]:
    out = arithmetic_findings()
    from vlamb_nb.paths import shared_data_dir

    base = shared_data_dir()
    if base is not None and (base / "racquet").is_dir():
        out = dataset_findings(bench) + out
    return out
