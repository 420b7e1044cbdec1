"""MUCAR scoring (the paper's formulas, §3.4): Acc_q = micro average over queries; Acc_p = share of
groups (pairs) whose queries are all correct. A group is counted under its first query's category
(two released groups mix categories); a query counts under its own language, so per-language Acc_p
asks whether a pair's queries in that language are all right (dual pairs span three languages).
Overall Acc_p here is the micro average over all groups; the paper's own Overall Acc_p rule cannot
be reconstructed. The Overall of the ablation and prompt-language settings (Table 3, Fig. 4,
Table 12) covers the six non-dual categories only, as the paper's does.
Confidence intervals (an addition) resample groups, never queries, so Acc_p stays defined.
Also: reading prediction files (JSON/JSONL/CSV rows, stores, the release's own ``eval`` layout).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from vlamb_nb.benchmarks.mucar.data import (
    CATEGORY_ORDER,
    DEFAULT_GROUPING,
    LANGUAGE_ORDER,
    NON_DUAL_CATEGORIES,
    load_items,
)
from vlamb_nb.benchmarks.mucar.prompts import SETTINGS, TABLE4_ROWS, applicable
from vlamb_nb.errors import DataError, SettingError
from vlamb_nb.jsonl import iter_jsonl
from vlamb_nb.stats.metric import Metric, OnCard, Published

# -- scoring -------------------------------------------------------------------------------------
# a query a prediction file has no output for: scored wrong and labelled, never dropped
NO_PREDICTION = {"letter": None, "valid": False, "parse_method": "no_prediction", "refusal": False}
# a query whose generation failed: scored wrong and labelled apart from an unreadable answer
GENERATION_FAILED = {"letter": None, "valid": False, "parse_method": "generation_failed",
                     "parse_error": "generation_failed", "refusal": False}


def outcome(row: Any) -> str:
    """One label per query: correct, wrong, refusal, ambiguous (several letters), unparsed, out_of_range,
    no_prediction or generation_failed."""
    if row.get("parse_error") == "generation_failed":
        return "generation_failed"
    if row.get("valid"):
        return "correct" if row.get("correct") else "wrong"
    method = row.get("parse_method")
    return method if method in ("refusal", "ambiguous", "out_of_range", "no_prediction") else "unparsed"


def score_predictions(preds):
    """``correct`` per query (invalid answers count as wrong, never dropped) and an ``outcome`` label."""
    out = preds.copy()
    for col, default in (("letter", None), ("valid", False), ("parse_method", None)):
        if col not in out:
            out[col] = default
    valid = out["valid"].fillna(False).astype(bool) if "valid" in out else False
    if "setting" in out and (out["setting"] == "c_ambiguous").any():
        amb = out["setting"] == "c_ambiguous"
        yes = out.get("yes_no", None)
        out["correct"] = np.where(amb, valid & (yes == "yes"), valid & (out["letter"] == out["gold"]))
    else:
        out["correct"] = valid & (out["letter"] == out["gold"])
    out["correct"] = out["correct"].astype(bool)
    if "letter_lenient" in out:
        lenient = out["letter_lenient"] == out["gold"]
        out["correct_lenient"] = lenient.where(out.get("setting", "") != "c_ambiguous", out["correct"]).astype(bool)
    out["outcome"] = [outcome(r) for r in out.to_dict(orient="records")]
    return out


def strict_vs_lenient(scored, *, n_resamples: int = 2000, seed: int = 0):
    """Overall Acc_q / Acc_p under the strict rule parser and under the documented lenient reading
    (:func:`vlamb_nb.benchmarks.base.lenient_letter`). The paper's numbers come from a GPT-4o judge, which is
    closer to the lenient reading; the strict one is a lower bound."""
    import pandas as pd

    frames = []
    for reading, col in (("strict", "correct"), ("lenient", "correct_lenient")):
        if col not in scored:
            continue
        r = pair_accuracy(scored.assign(correct=scored[col]), None, n_resamples=n_resamples, seed=seed)
        r.insert(0, "reading", reading)
        frames.append(r)
    return pd.concat(frames, ignore_index=True)


# -- which categories an Overall covers ---------------------------------------------------------------
#: settings the paper reports only over the six non-dual categories (Table 3, Fig. 4, Table 12)
SIX_CATEGORY_SETTINGS = frozenset({"q_i", "c_i", "c_q", "full_zh", "full_ms"})
#: published results whose Overall is over the six non-dual categories (Table 3's "(w/)" rows are full input)
SIX_CATEGORY_TABLES = frozenset({"Table 3", "Fig. 4", "Table 12"})


def scope_categories(scored, categories: Sequence[str] | str | None = "auto",
                     table: str | None = None) -> list[str] | None:
    """The categories an aggregate covers (None = all seven).

    ``"auto"`` follows the paper: the six non-dual categories for a Table 3 / Fig. 4 / Table 12 result,
    and for runs whose every query is under an ablation or prompt-language setting (the paper never
    reports those on dual ambiguity, and an Overall over seven would not be comparable); all seven
    otherwise (Table 2 and 9).
    """
    if isinstance(categories, str):
        if categories != "auto":
            raise SettingError(f"categories must be 'auto', None or a list of categories, got {categories!r}")
        if table in SIX_CATEGORY_TABLES:
            return list(NON_DUAL_CATEGORIES)
        settings = set(scored["setting"].dropna()) if "setting" in scored else set()
        return list(NON_DUAL_CATEGORIES) if settings and settings <= SIX_CATEGORY_SETTINGS else None
    if categories is None:
        return None
    unknown = [c for c in categories if c not in CATEGORY_ORDER]
    if unknown:
        raise SettingError(f"unknown MUCAR categor{'ies' if len(unknown) > 1 else 'y'} {unknown}")
    return list(categories)


# -- Acc_p / Acc_q with cluster-bootstrap CIs ---------------------------------------------------------
def group_frame(scored):
    """One row per group: size, number correct, all correct, first query's category / language."""
    s = scored.sort_values("record_id", kind="stable")
    g = s.groupby("group", sort=False)
    out = g.agg(size=("correct", "size"), n_correct=("correct", "sum"), category=("category", "first"),
                language=("language", "first"))
    out["all_correct"] = out["n_correct"] == out["size"]
    return out.reset_index()


def _interval(metric: Metric, units: Any, n_resamples: int, seed: int) -> tuple[float, float, str]:
    """The declared metric's one interval (percent) of one cell and how it was drawn
    (:meth:`~vlamb_nb.stats.metric.Metric.interval`: Acc_p's pairs are resampled alone, so Wilson's; Acc_q's
    queries by whole pairs): the same numbers the run record, the card and ``compare`` give the cell. None with
    no resamples asked for, or fewer than two pairs."""
    groups = units.clusters if units.clusters is not None else units.keys
    if n_resamples <= 0 or len(set(groups)) < 2:
        return np.nan, np.nan, ""
    return metric.interval(units, n_resamples=n_resamples, seed=seed)


def _query_frame(scored, groups):
    """Per-query correctness under its group's (first query's) category and the query's own language.

    A dual-ambiguity pair holds English, Chinese and Malay queries; crediting them all to the first
    query's language would move two thirds of them into the wrong language column.
    """
    g = groups.set_index("group")
    out = scored[["group", "correct", "language"]].copy()
    out["correct"] = out["correct"].astype(float)
    out["category"] = out["group"].map(g["category"])
    return out


def pair_accuracy(scored, by: str | list[str] | None = None, *, categories: Sequence[str] | str | None = "auto",
                  n_resamples: int = 2000, seed: int = 0):
    """Acc_q and Acc_p (percent) overall or per ``by`` (category / language / both), with group-bootstrap CIs.

    Long format: the ``by`` columns, ``metric`` (Acc_q / Acc_p), ``value``, ``ci_low``, ``ci_high``,
    ``n_queries``, ``n_groups``. "Overall" rows are micro averages over the queries / groups of
    ``categories`` (see :func:`scope_categories`: ``"auto"`` drops dual ambiguity for ablation and
    prompt-language runs, as the paper does; None keeps all seven).
    Every cell is the declared metric's (:data:`METRICS`) on that cell's queries: its per-unit values (a query's
    0/1, a pair's all-correct) give the value and the counts, so the table and the card, the run record and
    ``compare`` count the same thing; only the scope (the categories) is the table's own.
    Each cell's 95% interval is the declared metric's one rule (:meth:`~vlamb_nb.stats.metric.Metric.interval`,
    named in ``ci_method``): Acc_p's pairs are independent 0/1 units (Wilson); Acc_q's queries are resampled by
    whole pairs, since the queries of one pair share an image set and are not independent.
    """
    import pandas as pd

    if scored.empty:
        raise DataError("no scored predictions to aggregate")
    cats = scope_categories(scored, categories)
    scored = scored.reset_index(drop=True)
    groups = group_frame(scored)
    if cats is not None:
        groups = groups[groups["category"].isin(cats)]
        scored = scored[scored["group"].isin(set(groups["group"]))].reset_index(drop=True)
        if scored.empty:
            raise DataError(f"no scored predictions in the categories {', '.join(cats)}")
    keys = [] if by is None else ([by] if isinstance(by, str) else list(by))
    bad = [k for k in keys if k not in ("category", "language")]
    if bad:
        raise SettingError(f"pair_accuracy groups by category and/or language, not {bad}")
    queries = _query_frame(scored, groups)
    parts = [((), queries)] if not keys else list(queries.groupby(keys, sort=False))
    declared = {m.name: m for m in METRICS}
    acc_p, acc_q = (replace(declared[n], where=None) for n in ("Acc_p", "Acc_q"))  # the scope is the table's
    rows = []
    for vals, df in parts:
        vals = vals if isinstance(vals, tuple) else (vals,)
        mask = np.zeros(len(scored), dtype=bool)
        mask[df.index.to_numpy()] = True
        (q,) = acc_q.unit_sets(scored, masks=[("cell", mask)])  # a query each, in the run's order
        (p,) = acc_p.unit_sets(scored, masks=[("cell", mask)])  # a pair each: all its queries here right
        ci_q = _interval(acc_q, q, n_resamples, seed)  # every cell the record's seed: the record's interval
        ci_p = _interval(acc_p, p, n_resamples, seed)
        base = dict(zip(keys, vals, strict=True)) | {"n_queries": len(q.values), "n_groups": len(p.values)}
        rows.append(base | {"metric": "Acc_q", "value": 100 * float(np.mean(q.array())), "ci_low": ci_q[0],
                            "ci_high": ci_q[1], "ci_method": ci_q[2]})
        rows.append(base | {"metric": "Acc_p", "value": 100 * float(np.mean(p.array())), "ci_low": ci_p[0],
                            "ci_high": ci_p[1], "ci_method": ci_p[2]})
    out = pd.DataFrame(rows, columns=keys + ["metric", "value", "ci_low", "ci_high", "n_queries", "n_groups",
                                             "ci_method"])
    order = {"category": CATEGORY_ORDER, "language": LANGUAGE_ORDER}
    for key in keys:
        out[key] = pd.Categorical(out[key], [c for c in order[key] if c in set(out[key])])
    out["ci_unit"] = "pair"  # what an interval counts: pairs (question_id groups), never single queries
    return out.sort_values(keys + ["metric"], ascending=[True] * len(keys) + [False]).reset_index(drop=True)


def table2(scored, label: str = "ours", *, n_resamples: int = 0, seed: int = 0,
           categories: Sequence[str] | str | None = "auto"):
    """One run as a row of Table 2 (categories × Acc_p/Acc_q + Overall), in percent."""
    import pandas as pd

    long = results_long(scored, label, n_resamples=n_resamples, seed=seed, categories=categories)
    wide = long.pivot(index="row", columns="column", values="value")
    cols = [f"{c} {m}" for c in CATEGORY_ORDER + ["Overall"] for m in ("Acc_p", "Acc_q")]
    return pd.DataFrame(wide, columns=[c for c in cols if c in wide.columns])


def results_long(scored, label: str = "ours", table: str = "Table 2a", *, n_resamples: int = 2000,
                 seed: int = 0, categories: Sequence[str] | str | None = "auto"):
    """``table,row,column,value,ci_low,ci_high`` rows in the reference layout, for ``reference.compare``.

    ``categories`` restricts the set first; by default (``"auto"``) Table 3 / Fig. 4 / Table 12 and
    ablation or prompt-language runs use the six non-dual categories, so their Overall is the paper's.
    """
    import pandas as pd

    cats = scope_categories(scored, categories, table)
    per = pair_accuracy(scored, "category", categories=cats, n_resamples=n_resamples, seed=seed)
    tot = pair_accuracy(scored, None, categories=cats, n_resamples=n_resamples, seed=seed).assign(category="Overall")
    both = pd.concat([per.astype({"category": str}), tot], ignore_index=True)
    return pd.DataFrame({"table": table, "row": label, "column": both["category"] + " " + both["metric"],
                         "value": both["value"].round(2), "ci_low": both["ci_low"].round(2),
                         "ci_high": both["ci_high"].round(2), "ci_method": both["ci_method"],
                         "n_queries": both["n_queries"], "n_groups": both["n_groups"]})


def table4_long(scored, *, n_resamples: int = 2000, seed: int = 0):
    """One run as Table 4's MUCAR cells (``MUCAR Acc_p`` / ``MUCAR Acc_q``, row = the strategy), with CIs.

    The row follows the run's setting (:data:`~vlamb_nb.benchmarks.mucar.prompts.TABLE4_ROWS`: ``full`` is
    Vanilla, both agent variants are OURS). Table 4 does not state its MUCAR subset, so every category the
    run covers counts (all seven on the full release).
    """
    import pandas as pd

    settings = set(scored["setting"].dropna()) if "setting" in scored else set()
    if len(settings) != 1 or next(iter(settings)) not in TABLE4_ROWS:
        raise SettingError(f"Table 4 compares one run of {', '.join(TABLE4_ROWS)}; got settings {sorted(settings)}")
    setting = next(iter(settings))
    acc = pair_accuracy(scored, None, categories=None, n_resamples=n_resamples, seed=seed)
    return pd.DataFrame({"table": "Table 4", "row": TABLE4_ROWS[setting], "column": "MUCAR " + acc["metric"],
                         "value": acc["value"].round(2), "ci_low": acc["ci_low"].round(2),
                         "ci_high": acc["ci_high"].round(2), "ci_method": acc["ci_method"],
                         "n_queries": acc["n_queries"], "n_groups": acc["n_groups"], "setting": setting})


def settings_overall(runs: dict[str, Any], *, label: str | None = None,
                     categories: Sequence[str] | None = NON_DUAL_CATEGORIES, n_resamples: int = 1000,
                     seed: int = 0):
    """Overall Acc_q / Acc_p per setting over the six non-dual categories, full input included.

    The layout of Fig. 4 / Table 3 / Table 12: every setting, the full-input reference too, on the same
    categories (Table 3's "(w/)" rows are Table 2b's six categories), so the drops compare like with like.
    """
    import pandas as pd

    rows = []
    for s, scored in runs.items():
        if s == "c_ambiguous":
            continue
        r = pair_accuracy(scored, None, categories=categories, n_resamples=n_resamples, seed=seed)
        r.insert(0, "setting", s)
        r.insert(1, "input", SETTINGS[s].description)
        r.insert(0, "label", label or str(scored["model"].iloc[0] if "model" in scored else "ours"))
        rows.append(r)
    if not rows:
        raise DataError("no runs to summarise (only 'c_ambiguous', or none)")
    return pd.concat(rows, ignore_index=True)


# -- failure modes -------------------------------------------------------------------------------
def failure_summary(scored, label: str = "ours") -> dict[str, Any]:
    """Outcome counts, and image-insensitive groups: one answer for every image although golds differ.

    Such a group scores ~half its queries (Acc_q) and never the group (Acc_p = 0): the paper's
    pattern for Deepseek-VL-Tiny and Kimi-VL, measured here directly.
    """
    s = scored.sort_values("record_id", kind="stable")
    const = insens = eligible = 0
    for _, df in s.groupby("group", sort=False):
        if len(df) < 2 or df["gold"].nunique() < 2:
            continue
        eligible += 1
        letters = df["letter"].where(df["valid"].fillna(False).astype(bool))
        if letters.notna().all() and letters.nunique() == 1:
            insens += 1
        if df["letter"].nunique(dropna=False) == 1:
            const += 1
    accs = {r["metric"]: float(r["value"]) for _, r in pair_accuracy(s, None, n_resamples=0).iterrows()}
    return {"label": label, "n_queries": int(len(s)), "outcomes": {str(k): int(v) for k, v in
                                                                 s["outcome"].value_counts().items()},
            "groups_with_distinct_golds": eligible, "image_insensitive_groups": insens,
            "image_insensitive_share": round(100 * insens / eligible, 2) if eligible else None,
            "Acc_q": round(accs["Acc_q"], 2), "Acc_p": round(accs["Acc_p"], 2)}


def diagnostics(scored) -> dict[str, Any]:
    """A sweep summary's MUCAR extra: pairs answered the same for every image although their golds differ."""
    return {"image_insensitive_groups": failure_summary(scored)["image_insensitive_groups"]}


def _records(df) -> list[dict[str, Any]]:
    return json.loads(df.astype({c: str for c in ("category", "language") if c in df}).to_json(orient="records"))


_OUTPUT_FIELDS = ("output", "response", "text", "prediction", "pred")


def _numbered_rows(p: Path) -> list[tuple[int, Any]]:
    """(row, record) of a prediction file: a JSON list or object (rows from 1), JSON Lines and CSV (rows by their
    line)."""
    from vlamb_nb.jsonl import read_csv, read_json

    if p.suffix.lower() == ".csv":
        return [(i, r) for i, r in enumerate(read_csv(p).to_dict(orient="records"), start=2)]
    if p.suffix.lower() == ".jsonl":
        return list(iter_jsonl(p))
    data = read_json(p)
    if isinstance(data, dict):
        data = [{"id": k, "output": v} for k, v in data.items()]
    if not isinstance(data, list):
        raise DataError(f"expected a JSON list of rows or an object {{id: output}}, got {type(data).__name__}",
                        source=p.name)
    return list(enumerate(data, start=1))


def read_predictions(path: str | os.PathLike, *, model: str | None = None, setting: str | None = None
                     ) -> list[dict[str, Any]]:
    """Answer records (one per query: ``item_id``, ``text``, or the ``error`` of a query whose generation failed)
    from JSON / JSONL / CSV prediction files and the release's own layout with ``eval.models.<model>.output``
    filled in (see :meth:`Mucar.score_file`; a prediction store is read by ``score_store`` itself).

    Rows carrying a ``setting`` are filtered to ``setting``; a file holding several settings, or two different
    outputs for one query, must be narrowed down (``setting=`` / ``model=``) rather than letting the last row
    silently win. An output that is not text is an error naming its row and field.
    """
    p = Path(path)
    numbered = _numbered_rows(p)
    rows = [r for _, r in numbered]
    seen = {str(r["setting"]) for r in rows if isinstance(r, dict) and r.get("setting") and not r.get("_meta")}
    if setting is None and len(seen) > 1:
        raise SettingError(f"{p.name} holds several settings ({', '.join(sorted(seen))}); pass -o setting=NAME")
    if setting is not None and seen and setting not in seen:
        raise SettingError(f"{p.name} has no predictions for setting {setting!r}; it has {', '.join(sorted(seen))}")
    out: dict[str, str] = {}
    failed: dict[str, str] = {}
    first_row: dict[str, int] = {}
    name = model
    for i, r in numbered:
        if not isinstance(r, dict):
            raise DataError("row is not an object", source=p.name, row=i)
        if r.get("_meta") or (setting is not None and r.get("setting") not in (None, setting)):
            continue
        if model is not None and isinstance(r.get("model"), dict) and r["model"].get("model_id") != model:
            continue
        rid = r.get("id", r.get("uid", r.get("request_id")))
        if rid is None:
            raise DataError("row has no id / uid / request_id", source=p.name, row=i, field="id")
        uid = str(r.get("item_id", rid))
        uid = uid if uid.startswith("mucar-") else f"mucar-{int(float(uid))}" if _is_number(uid) else uid
        error = r.get("error")
        if isinstance(error, str) and error.strip():  # the generation failed: no answer, counted apart
            if uid not in out:
                failed[uid] = error
            continue
        field = next((f for f in _OUTPUT_FIELDS if f in r), None)
        text = r[field] if field else None
        if field is None and isinstance(r.get("eval"), dict):  # the release's own layout, outputs filled in
            models = r["eval"].get("models") or {}
            name = model or (next(iter(models)) if len(models) == 1 else None)
            if name is None or name not in models:
                raise DataError(f"choose the model with model=...; available: {sorted(models)}", source=p.name,
                                row=i, field="eval.models")
            field, text = f"eval.models.{name}.output", models[name].get("output")
            if text in ("", None):
                continue  # an empty placeholder: this item was not run
        if field is None:
            raise DataError(f"row has none of {', '.join(_OUTPUT_FIELDS)}", source=p.name, row=i)
        if text is None:
            text = ""
        if not isinstance(text, str):
            raise DataError(f"an output must be text, got {type(text).__name__} {text!r}", source=p.name, row=i,
                            field=field)
        if uid in out and out[uid] != text:
            raise DataError(f"two different outputs for {uid} (rows {first_row[uid]} and {i}); narrow the file "
                            "down with -o setting=/model=", source=p.name, row=i, field="id")
        out[uid] = text
        first_row.setdefault(uid, i)
        failed.pop(uid, None)  # a failure retried with success
    if not out and not failed:
        raise DataError("no predictions found", source=p.name)
    who = {"model_id": str(name or p.stem), "backend": "file"}
    base = {"turn": "answer", "benchmark": "mucar", "setting": setting or "full", "model": who, "meta": {}}
    return ([{**base, "request_id": u, "item_id": u, "text": t, "error": None} for u, t in out.items()]
            + [{**base, "request_id": u, "item_id": u, "text": "", "error": e} for u, e in failed.items()])


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


# -- the report card ------------------------------------------------------------------------------------
#: Table 2a's denominators: 1,279 queries (the per-category fractions sum to it) and 501 pairs (§3.3)
TABLE2A_QUERIES, TABLE2A_PAIRS = 1279, 501


def in_scope(scored) -> np.ndarray:
    """The queries an Overall covers: the pairs of the paper's categories for the run's setting
    (:func:`scope_categories`: all seven for ``full``, the six non-dual ones for ablations)."""
    cats = scope_categories(scored)
    if cats is None:
        return np.ones(len(scored), dtype=bool)
    first = group_frame(scored).set_index("group")["category"]
    return scored["group"].map(first).isin(cats).to_numpy()


#: MUCAR's headline, declared once: Overall Acc_p (a pair counts when every query of it is right) and Acc_q
#: (intervals resample whole pairs) of the ``full`` setting on the card, among Table 2a's models
METRICS = (
    Metric("Acc_p", "all_correct", column="correct", unit="pair", group="group", order="record_id",
           key=("uid", "item_id"), where=in_scope, overall="Overall",
           card=OnCard(published=Published("Table 2a", {"Overall": "Overall Acc_p"}, n=TABLE2A_PAIRS),
                       settings=("full",), note="a pair counts when every query of it is right")),
    Metric("Acc_q", "binary", column="correct", unit="query", cluster="group", cluster_unit="pair",
           key=("uid", "item_id"), where=in_scope, overall="Overall",
           card=OnCard(published=Published("Table 2a", {"Overall": "Overall Acc_q"}, n=TABLE2A_QUERIES),
                       settings=("full",), note="intervals resample whole pairs")),
)


# -- a scored run's tables, a prediction file's scores ---------------------------------------------------------
def tables(scored, *, label: str | None = None, n_resamples: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Table 2-style row (with CIs), per-language Acc, category × language Acc_q, outcomes."""
    label = label or str(scored["model"].iloc[0] if "model" in scored else "ours")
    if "setting" in scored and (scored["setting"] == "c_ambiguous").all():
        return {"Is C ambiguous": pair_accuracy(scored, None, n_resamples=n_resamples, seed=seed)}
    cxl = pair_accuracy(scored, ["category", "language"], n_resamples=0)
    out = {
        "Table 2": table2(scored, label),
        "Table 2 (long, with CIs)": results_long(scored, label, n_resamples=n_resamples, seed=seed),
        "by language": pair_accuracy(scored, "language", n_resamples=n_resamples, seed=seed),
        "category x language Acc_q": cxl[cxl["metric"] == "Acc_q"].pivot(
            index="category", columns="language", values="value").round(2),
        "outcomes": scored["outcome"].value_counts().rename_axis("outcome").reset_index(name="n"),
        "strict vs lenient": strict_vs_lenient(scored, n_resamples=n_resamples, seed=seed),
    }
    settings = set(scored["setting"].dropna()) if "setting" in scored else set()
    if len(settings) == 1 and next(iter(settings)) in TABLE4_ROWS:
        out["Table 4 (MUCAR columns)"] = table4_long(scored, n_resamples=n_resamples, seed=seed)
    return out


def scored_file(bench: Any, predictions: str | os.PathLike, *, source: str | os.PathLike | None = None,
                grouping: str = DEFAULT_GROUPING, model: str | None = None, setting: str | None = None,
                missing: str = "wrong", quantization: str | None = None, run: int | None = None,
                **options: Any):
    """Raw outputs as a scored run: a prediction store (through :meth:`~vlamb_nb.benchmarks.base.Benchmark.
    score_store`), JSON/JSONL/CSV rows with an id and an output, or the release's own layout with
    ``eval.models.<model>.output`` filled in (:func:`read_predictions` turns those into answer records first).

    Queries without a prediction count as wrong (``missing="wrong"``, the paper's denominators), or
    ``missing="skip"`` leaves out every group with a missing query: scoring only the answered part of a
    group would let it pass Acc_p on fewer queries than it has. A query whose generation failed counts as
    wrong (``generation_failed``). ``model``/``setting``/``quantization``/``run`` pick one run of a store holding
    several.
    """
    from vlamb_nb.store import is_store

    if options:
        raise SettingError(f"unknown MUCAR score option(s): {', '.join(options)}")
    if setting is not None and setting not in SETTINGS:
        raise SettingError(f"unknown MUCAR setting {setting!r}; choose one of {', '.join(SETTINGS)}")
    if missing not in ("wrong", "skip"):
        raise SettingError(f"missing must be 'wrong' (count as wrong) or 'skip' (leave out incomplete "
                           f"groups), got {missing!r}")
    p = Path(predictions)
    if not p.is_file():
        raise DataError(f"predictions file not found: {p}")
    items = load_items(source, grouping=grouping)
    ok = [applicable(r, setting or "full")[0] for r in items.to_dict(orient="records")]
    items = items[ok].reset_index(drop=True)  # queries the setting cannot be asked are not "missing"
    records: Any = p
    if not is_store(p):
        records = read_predictions(p, model=model, setting=setting)
        unknown = [r["item_id"] for r in records if r["item_id"] not in set(items["uid"])]
        if unknown:
            raise DataError(f"{len(unknown)} prediction id(s) not in the data, e.g. {unknown[0]!r}",
                            source=str(predictions), field="id")
    scored = bench.score_store(records, items, setting=setting, model=model, quantization=quantization,
                               run=None if run is None else int(run), fill_missing=missing == "wrong", record=False)
    have = items["uid"].isin(scored.loc[scored["parse_method"] != "no_prediction", "uid"])
    if source is None and missing == "wrong" and not have.all():
        raise DataError(f"no --source given, so the file is scored against the whole release ({len(items)} "
                        f"queries), but it answers {int(have.sum())} of them; the rest would count as wrong. "
                        "Pass --source (the data the predictions were made on), or -o missing=wrong with an "
                        "explicit --source to score against the release on purpose", source=str(predictions))
    if missing == "skip":
        incomplete = set(items.loc[~have, "group"])
        attrs = dict(scored.attrs)
        scored = scored[~scored["group"].isin(incomplete)].reset_index(drop=True)
        scored.attrs.update(attrs)
        if scored.empty:
            raise DataError("no group has a prediction for every query; use missing='wrong'",
                            source=str(predictions))
    return scored
