"""Tables as a reader wants them in a notebook: rounded as the paper rounds, one "[lo, hi]" interval column,
no all-empty columns, and paper-vs-ours comparisons laid out wide like the paper's tables.

The frames the package computes stay numeric (``record`` stores them as data); these helpers only build what is
shown. :func:`show` displays and returns None, so a cell ending in ``show(x)`` prints nothing else.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

CI_LABEL = "95% CI"
#: estimate columns an interval belongs to, in order of preference, when ``ci_low``/``ci_high`` stand alone
ESTIMATES = ("ours", "value", "estimate", "accuracy", "share", "mass", "diff", "diff_pp", "diff_pts", "f1", "kappa")
COMPARISON = ("table", "row", "column", "paper", "ours")
DASH = "–"


def _is_p(name: str) -> bool:
    from vlamb_nb.stats.result import is_p_column

    return is_p_column(name)


def format_p(p: Any) -> str:
    """A p-value in the one format of the notebooks, pages and card (:func:`vlamb_nb.stats.result.format_p`),
    empty when unknown."""
    from vlamb_nb.stats.result import format_p as one_format

    return "" if _missing(p) else one_format(float(p))


def _missing(v: Any) -> bool:
    if v is None:
        return True
    try:
        import pandas as pd

        if v is pd.NA or v is pd.NaT:
            return True
    except ImportError:  # pragma: no cover - pandas is a dependency
        pass
    return isinstance(v, float) and math.isnan(v)


def decimals_of(values: Any, cap: int = 2) -> int:
    """The decimals a column of published numbers is printed with: 0 when all are whole, else the most any
    value shows (from its shortest representation), at most ``cap``."""
    best, whole = 0, True
    for v in values:
        if _missing(v) or isinstance(v, bool):
            continue
        try:
            f = float(v)
        except (TypeError, ValueError):
            continue
        if not math.isfinite(f):
            continue
        if f != round(f):
            whole = False
        frac = repr(f).split("e")[0].partition(".")[2].rstrip("0")
        best = max(best, len(frac))
    return 0 if whole else min(max(best, 1), cap)


def _fmt(v: Any, decimals: int) -> str:
    if _missing(v):
        return ""
    if isinstance(v, bool):
        return str(v)
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    return f"{f:.{decimals}f}"


def _default_decimals(col: Any) -> int:
    """Whole numbers as integers; proportions (all within [-1, 1]) with 3 decimals, ratios and small
    differences (within [-10, 10]) with 2, percentages and the rest with 1."""
    import pandas as pd

    vals = pd.to_numeric(col, errors="coerce").dropna()
    vals = vals[vals.map(lambda x: math.isfinite(float(x)))]
    if vals.empty:
        return 1
    if (vals == vals.round()).all():
        return 0
    top = vals.abs().max()
    return 3 if top <= 1.0 else 2 if top <= 10.0 else 1


def _interval_pairs(columns: list[str]) -> list[tuple[str, str, str | None, str]]:
    """(low, high, estimate, label) for every interval in ``columns``: ``ci_low``/``ci_high`` and ``x_low``/
    ``x_high`` (or ``x_ci_low``/``x_ci_high``) pairs."""
    out = []
    cols = set(columns)
    for c in columns:
        m = re.fullmatch(r"(.*?)_?(ci_)?low", c)
        if not m:
            continue
        stem, ci = m.group(1), m.group(2) or ""
        high = f"{stem}_{ci}high" if stem else f"{ci}high"
        if high not in cols:
            continue
        if stem:
            est, label = (stem if stem in cols else None), f"{stem} {CI_LABEL}"
        else:
            est, label = next((e for e in ESTIMATES if e in cols), None), CI_LABEL
        out.append((c, high, est, label))
    return out


def readable(df: Any, *, decimals: dict[str, int] | None = None, drop_empty: bool = True, published: bool = False):
    """A display copy of ``df``: intervals joined into "[lo, hi]" columns rounded like their estimate, p-values as
    papers print them, whole numbers as integers, all-empty columns dropped, unknown coverage left blank.
    ``published``: the numbers are a paper's, so each column keeps the decimals the paper prints."""
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        df = pd.DataFrame(df)
    out = df.copy()
    if published:
        decimals = {**{str(c): decimals_of(out[c]) for c in out.columns
                       if pd.api.types.is_numeric_dtype(out[c]) and not pd.api.types.is_bool_dtype(out[c])},
                    **(decimals or {})}
    if drop_empty:
        keep = [c for c in out.columns
                if not out[c].map(lambda v: _missing(v) or (isinstance(v, str) and v == "")).all()]
        if keep or not len(out.columns):
            out = out[keep]
    chosen = dict(decimals or {})
    cols = [str(c) for c in out.columns]
    out.columns = cols
    # paper-vs-ours rows: each row rounded as its published value is printed
    per_row = None
    if {"paper", "ours"} <= set(cols) and pd.api.types.is_numeric_dtype(out["paper"]):
        group = [c for c in ("table", "column") if c in cols]
        per_row = (out.groupby(group, sort=False, dropna=False)["paper"].transform(lambda s: decimals_of(s))
                   if group else pd.Series(decimals_of(out["paper"]), index=out.index))
        fallback = _default_decimals(out["ours"])
        per_row = per_row.where(out["paper"].notna(), fallback).astype(int)
    shown = pd.DataFrame(index=out.index)
    pairs = {low: (high, est, label) for low, high, est, label in _interval_pairs(cols)}
    highs = {h for h, _, _ in pairs.values()}
    for c in cols:
        if c in highs:
            continue
        col = out[c]
        if c in pairs:
            high, est, label = pairs[c]
            d = chosen.get(est or "", None)
            if d is None:
                d = _default_decimals(pd.concat([out[c], out[high]] + ([out[est]] if est else [])))
            shown[label] = [
                "" if _missing(lo) or _missing(hi) else
                f"[{_fmt(lo, dd)}, {_fmt(hi, dd)}]"
                for lo, hi, dd in zip(col, out[high], per_row if (per_row is not None and est in ("ours", "diff"))
                                      else [d] * len(out), strict=True)]
            continue
        if c == "paper_in_ci":
            shown[c] = ["" if _missing(v) else ("yes" if bool(v) else "no") for v in col]
        elif _is_p(c) and pd.api.types.is_numeric_dtype(col):
            shown[c] = col.map(format_p)
        elif pd.api.types.is_bool_dtype(col) or col.map(lambda v: isinstance(v, bool)).all():
            shown[c] = col.map(lambda v: "" if _missing(v) else str(bool(v)))
        elif pd.api.types.is_numeric_dtype(col):
            if per_row is not None and c in ("paper", "ours", "diff"):
                shown[c] = [_fmt(v, d) for v, d in zip(col, per_row, strict=True)]
            else:
                d = chosen.get(c, _default_decimals(col))
                shown[c] = col.map(lambda v, d=d: _fmt(v, d))
        else:
            shown[c] = col.map(lambda v: "" if _missing(v) else v)
    return shown


def is_comparison(df: Any) -> bool:
    """A paper-vs-ours frame (``reference.compare`` and the notebooks' comparisons)."""
    return set(COMPARISON) <= {str(c) for c in getattr(df, "columns", [])}


def wide_comparison(df: Any):
    """One table's paper-vs-ours rows laid out as the paper lays it out: the table's rows down, its columns
    across, each cell "ours (paper)" and, when there are intervals, "ours [lo, hi] (paper)"."""
    import pandas as pd

    flat = readable(df.reset_index(drop=True), drop_empty=False)

    def cell(i: int) -> str:
        ours, paper = flat.at[i, "ours"], flat.at[i, "paper"]
        ci = flat.at[i, CI_LABEL] if CI_LABEL in flat.columns else ""
        text = ours or DASH
        if ci:
            text += f" {ci}"
        return f"{text} ({paper})" if paper else text

    long = pd.DataFrame({"row": df["row"].astype(str).to_numpy(), "column": df["column"].astype(str).to_numpy(),
                         "cell": [cell(i) for i in range(len(flat))]})
    if long.duplicated(["row", "column"]).any():
        raise ValueError("a (row, column) cell appears twice: show these rows long (readable) instead")
    wide = long.pivot(index="row", columns="column", values="cell").fillna("")
    wide = wide.loc[list(dict.fromkeys(long["row"])), list(dict.fromkeys(long["column"]))]
    wide.index.name, wide.columns.name = None, None
    return wide


def _not_compared(part: Any) -> bool:
    return "match" in part.columns and bool(part["match"].isna().all()) and bool(part["paper"].notna().any())


def comparison_heading(table: str, part: Any) -> str:
    """The line over one table's paper-vs-ours rows: whose numbers "ours" are, and how many published cells
    matched, counting only cells that can be compared (the same model on the paper's data)."""
    models = sorted({str(m) for m in part["model"].dropna()}) if "model" in part.columns else []
    whose = f"ours ({', '.join(models)})" if models else "ours"
    if _not_compared(part):
        flags = [str(f).split(";")[0] for f in part.get("flag", []) if str(f)]
        why = max(set(flags), key=flags.count) if flags else "not comparable"
        return f"*{table}*: {whose} beside the paper's printed row — {why}; no cell is counted as a match"
    n_match = int(part["match"].fillna(False).astype(bool).sum()) if "match" in part.columns else None
    known = int((part["paper"].notna() & part["match"].notna()).sum()) if "match" in part.columns else 0
    note = f" — {n_match} of {known} published cells matched" if n_match is not None and known else ""
    return f"*{table}*: {whose} (paper){note}"


def show(df: Any, *, title: str | None = None, wide: bool | None = None, published: bool = False) -> None:
    """Display ``df`` readably (and return None). Paper-vs-ours frames are shown wide, one block per table, with
    "ours (paper)" cells; ``wide=False`` keeps them long; ``published``: a paper's own numbers, decimals kept.
    Anything that is not a table (a dict, a widget) is displayed as it is."""
    import pandas as pd
    from IPython.display import Markdown, display

    if title:
        display(Markdown(f"**{title}**"))
    if dataclasses.is_dataclass(df) and not isinstance(df, type):
        df = dataclasses.asdict(df)
    if isinstance(df, dict) and df and all(not isinstance(v, (dict, set)) for v in df.values()):
        # a flat record (a check's outcome, a model's info): one row per field
        df = pd.DataFrame({"value": [", ".join(map(str, v)) if isinstance(v, (list, tuple)) else v
                                     for v in df.values()]}, index=[str(k) for k in df], dtype=object)
    if isinstance(df, pd.Series):
        df = df.to_frame(df.name if df.name is not None else "value")
    if not isinstance(df, pd.DataFrame):
        display(df)
        return
    if is_comparison(df) and wide is not False and len(df):
        for table, part in df.groupby("table", sort=False):
            display(Markdown(comparison_heading(table, part)))
            if "model" in part.columns and _not_compared(part):  # another model or data: long, each row says why
                display(readable(part.drop(columns=[c for c in ("diff", "match", "paper_in_ci") if c in part])))
                continue
            # a cell compared more than once (e.g. per setting) cannot be one grid cell: keep those rows long
            display(readable(part) if part.duplicated(["row", "column"]).any() else wide_comparison(part))
        return
    display(readable(df, published=published))


def say(finding: Any, key: str | None = None) -> None:
    """Show a computed conclusion (:class:`vlamb_nb.findings.Finding`, or several) as its sentence, and with
    ``key`` record it, so both pages print the same sentence; returns None, so a cell ending in it prints nothing
    else."""
    from IPython.display import Markdown, display

    from vlamb_nb.findings import Finding, join

    if isinstance(finding, list | tuple):
        finding = join(list(finding))
    if not isinstance(finding, Finding):
        raise TypeError(f"say() shows a Finding, got {type(finding).__name__}")
    display(Markdown(finding._repr_markdown_()))
    if key is not None:
        from vlamb_nb.notebook.results import record

        record(key, finding)

