"""The papers' published numbers, stored as data with their table ids and provenance.

Each paper has ``reference/<paper>.csv`` with one published cell per row::

    paper,table,row,column,value,unit,provenance,flag

``value`` is the number as printed (text kept for non-numeric cells); ``flag`` names a
known inconsistency of the paper in that cell (empty when none). Paper numbers are
reference data, never results: :func:`compare` puts ours beside them. A paper whose package lives
elsewhere keeps the same file as ``reference.csv`` in its own folder (``load(..., file=)``).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from vlamb_nb.errors import DataError, SettingError

COLUMNS = ["paper", "table", "row", "column", "value", "unit", "provenance", "flag"]


def available() -> list[str]:
    root = resources.files(__name__)
    return sorted(p.name[:-4] for p in root.iterdir() if p.name.endswith(".csv"))


@cache
def _load_paper(paper: str):
    import pandas as pd

    res = resources.files(__name__) / f"{paper}.csv"
    if not res.is_file():
        raise SettingError(f"no reference numbers for {paper!r}; available: {', '.join(available()) or 'none'}")
    with res.open("r", encoding="utf-8") as fh:
        return _checked(pd.read_csv(fh, dtype=str, keep_default_na=False), paper, f"reference/{paper}.csv")


@cache
def _load_file(paper: str, file: str):
    """A paper's own ``reference.csv`` (in its folder), read like the package's."""
    import pandas as pd

    if not Path(file).is_file():
        raise SettingError(f"no reference numbers for {paper!r}: {file} does not exist")
    with open(file, encoding="utf-8") as fh:
        return _checked(pd.read_csv(fh, dtype=str, keep_default_na=False), paper, file)


def _checked(df: Any, paper: str, where: str):
    import pandas as pd

    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise DataError(f"missing columns {missing}", source=where)
    bad = df[df["paper"] != paper]
    if len(bad):
        raise DataError(f"rows name paper {bad['paper'].iloc[0]!r}", source=where, row=int(bad.index[0]) + 2)
    dup = df.duplicated(["table", "row", "column"], keep=False)
    if dup.any():
        r = df[dup].iloc[0]
        raise DataError(f"duplicate cell {r['table']}/{r['row']}/{r['column']}", source=where)
    df["value_num"] = pd.to_numeric(df["value"].str.replace("%", "", regex=False).str.strip(), errors="coerce")
    return df


def load(paper: str, table: str | None = None, *, file: str | os.PathLike | None = None):
    """Published cells of ``paper`` (optionally one table) as a DataFrame (``value_num`` is numeric); ``file``:
    the paper's own ``reference.csv`` instead of the package's."""
    everything = _load_paper(paper) if file is None else _load_file(paper, str(Path(file).resolve()))
    df = everything.copy()
    if table is not None:
        df = df[df["table"] == table]
        if df.empty:
            tables = ", ".join(sorted(everything["table"].unique()))
            raise SettingError(f"{paper} has no reference table {table!r}; tables: {tables}")
    return df.reset_index(drop=True)


def cell(paper: str, table: str, row: str, column: str) -> float:
    """One published number (raises if the cell is not stored or not numeric)."""
    df = _load_paper(paper)
    hit = df[(df["table"] == table) & (df["row"] == row) & (df["column"] == column)]
    if hit.empty:
        raise KeyError(f"{paper} {table} has no cell row={row!r} column={column!r}")
    v = hit["value_num"].iloc[0]
    if v != v:  # NaN
        raise ValueError(f"{paper} {table} {row}/{column} is not numeric: {hit['value'].iloc[0]!r}")
    return float(v)


def table_wide(paper: str, table: str):
    """One table back in its printed layout (rows × columns) with numeric values."""
    df = load(paper, table)
    wide = df.pivot(index="row", columns="column", values="value_num")
    order_r = list(dict.fromkeys(df["row"]))
    order_c = list(dict.fromkeys(df["column"]))
    return wide.loc[order_r, order_c]


def not_comparable(model: Any = None, data: Any = None, *, paper_model: str | None = None) -> str | None:
    """Why a run's numbers cannot be held against the paper's printed row, in the words every view uses, or None
    when they can: a generated sample ("not comparable: generated sample, n = 16") or a stand-in that is not the
    paper's model ("not the same model: ..."). ``model``: the run's model (an id, a spec or a loaded model);
    ``data``: its data identity or tagged items; ``paper_model``: the paper's row it would be set beside."""
    ident = getattr(data, "attrs", {}).get("data") if hasattr(data, "attrs") else data
    if hasattr(ident, "to_dict"):
        ident = ident.to_dict()
    if isinstance(ident, dict) and ident.get("kind") == "sample":
        n = ident.get("n_loaded") or ident.get("n_items") or (len(data) if hasattr(data, "__len__") and
                                                              not isinstance(data, dict) else None)
        return "not comparable: generated sample" + (f", n = {n}" if n is not None else "")
    if model is not None:
        from vlamb_nb.models.base import Backend
        from vlamb_nb.models.spec import ModelSpec

        info = getattr(model, "info", None)
        name = str(getattr(info, "model_id", model))
        spec = getattr(model, "spec", None) or (ModelSpec.parse(name) if name.strip() else None)
        # a replay answers with a real model's recorded outputs (that model's numbers): only tiny checkpoints and
        # scripted stand-ins are no model
        if getattr(info, "backend", None) is Backend.SCRIPTED or (spec is not None
                                                                  and spec.kind in ("tiny", "scripted")):
            return f"not the same model: {name} is a stand-in" + (f", the paper's row is {paper_model}"
                                                                   if paper_model else "")
    return None


def compare(ours, paper: str, *, table: str | None = None, tol: float = 0.05,
            file: str | os.PathLike | None = None, model: str | None = None, why_not: str | None = None):
    """Side by side: ours vs published, difference, match within ``tol``, CI coverage, known flags.

    ``ours`` is a DataFrame with ``table, row, column, value`` and optional ``ci_low, ci_high``; ``file``: the
    paper's own ``reference.csv`` (a paper registered from elsewhere), as :func:`load`. ``model``: what produced
    ours, kept in a ``model`` column beside the paper's row, so a row is never read as the paper's model's score;
    ``why_not`` (:func:`not_comparable`): ours cannot be held against the paper's row (a generated sample, another
    model), so nothing is matched or counted, and every row says why.
    """
    import pandas as pd

    need = {"table", "row", "column", "value"}
    if not need <= set(ours.columns):
        raise DataError(f"compare() needs columns {sorted(need)}, got {sorted(ours.columns)}")
    ref = load(paper, table, file=file)[["table", "row", "column", "value_num", "flag", "provenance"]]
    ours = ours.copy()
    if table is not None:
        ours = ours[ours["table"] == table]
    out = ours.merge(ref, on=["table", "row", "column"], how="left")
    out = out.rename(columns={"value": "ours", "value_num": "paper"})
    out["ours"] = pd.to_numeric(out["ours"], errors="coerce")
    out["diff"] = out["ours"] - out["paper"]
    out["match"] = out["diff"].abs() <= tol
    if {"ci_low", "ci_high"} <= set(out.columns):
        for c in ("ci_low", "ci_high"):  # no interval (None) is unknown, never a comparison error
            out[c] = pd.to_numeric(out[c], errors="coerce")
        inside = (out["paper"] >= out["ci_low"]) & (out["paper"] <= out["ci_high"])
        known = out[["paper", "ci_low", "ci_high"]].notna().all(axis=1)
        # no interval (or no published value): coverage is unknown, never False
        out["paper_in_ci"] = inside.astype("boolean").where(known, pd.NA)
        out[["ci_low", "ci_high"]] = out[["ci_low", "ci_high"]].astype(float).round(3)
    out["diff"] = out["diff"].round(3)
    out["flag"] = out["flag"].fillna("")
    out.loc[out["paper"].isna(), "flag"] = "not in the paper"
    if why_not:  # a number of another model or another data: shown for orientation, never a match
        out["match"] = pd.Series(pd.NA, index=out.index, dtype="boolean")
        if "paper_in_ci" in out.columns:
            out["paper_in_ci"] = pd.Series(pd.NA, index=out.index, dtype="boolean")
        out["diff"] = float("nan")
        out["flag"] = [why_not if not f else f"{why_not}; {f}" for f in out["flag"]]
    cols = ["table", "row", "column", "paper", "ours", "diff", "match"]
    cols += [c for c in ("ci_low", "ci_high", "paper_in_ci") if c in out.columns]
    if model is not None:
        out["model"] = str(model)
        cols.insert(2, "model")
    return out[cols + ["flag"]].reset_index(drop=True)


@dataclass
class Finding:
    """One audited published cell: what the paper prints vs what its own numbers imply."""

    paper: str
    table: str
    row: str
    column: str
    published: Any
    recomputed: Any
    kind: str  # e.g. "sum", "rounding", "denominator", "gain", "impossible", "statistic"
    ok: bool
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def findings_frame(findings: list[Finding] | list[dict[str, Any]]):
    import pandas as pd

    rows = [f.to_dict() if isinstance(f, Finding) else dict(f) for f in findings]
    return pd.DataFrame(rows, columns=list(Finding.__dataclass_fields__))


def audit_finding(findings: Any) -> Any:
    """The audit's outcome in one sentence (:func:`findings_frame` rows: ``table``, ``ok``): how many printed cells
    were checked against the paper's own numbers and how many do not follow, by table."""
    from vlamb_nb.findings import Finding, plural

    bad = findings[~findings["ok"].astype(bool)]
    by = bad.groupby("table", sort=False).size()
    where = "; ".join(f"{t}: {n}" for t, n in by.items())
    return Finding(f"{plural(len(findings), 'printed cell')} checked against the paper's own numbers: {len(bad)} do "
                   f"not follow" + (f" ({where}); each is listed below" if len(bad) else "") + ".", not len(bad),
                   value=float(len(bad)), n=len(findings))

