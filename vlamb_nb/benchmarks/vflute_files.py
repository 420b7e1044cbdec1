"""V-FLUTE file-level hooks: scoring prediction files (ours and the official shapes) and the paper audit.

Accepted prediction files:

- our prediction store (``.jsonl`` written by ``vlamb-nb run``): raw outputs, parsed here;
- the official ``preds.csv`` of ``eval/run_eval.py`` or any CSV with ``id`` and a raw ``output``
  column: the official extraction is run on ``output``;
- the official normalised / shared-task shape ``id, label, explanation`` (``label`` as 1/0, or as
  text such as ``entailment``); missing labels count as wrong.

Gold items whose id has no prediction count as unparsed (wrong, empty explanation) and are reported
as ``n_missing``; prediction ids not in the gold data are an error (the wrong ``--source``).

Human adequacy labels (§5.3; the paper's own labels are not released) are a CSV with a header:

- ``id``: the V-FLUTE item id whose *predicted* explanation was judged (e.g. ``memecap-test-336``);
- ``adequate``: 1 if the annotator judged the explanation adequate, else 0;
- ``adequate_2`` (optional): a second annotator's 0/1. With it, Cohen's kappa is reported and, as in
  the paper, only items both annotators agree on enter the PR analysis.

Only judged items need a row; other columns are ignored. ``vlamb-nb score vflute --predictions FILE
-o labels=LABELS.csv`` adds the analysis to the score.

``-o compare=OTHER`` scores a second prediction file (any accepted shape) with the same scorer and
adds the paired bootstrap (Koehn 2004) of F1@0/53/60, this file minus the other, as the paper
reports its significance tests (notes §8).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from vlamb_nb.benchmarks.vflute_data import DATASETS, SPLIT_SIZES
from vlamb_nb.benchmarks.vflute_metrics import PAPER_COMPARISONS, REPORTED, compare_runs, f1_at_ci, f1_curve
from vlamb_nb.benchmarks.vflute_parse import _label_from_marker, parse_output
from vlamb_nb.errors import DataError
from vlamb_nb.jsonl import iter_jsonl
from vlamb_nb.reference import Finding


def _label_value(v: Any) -> int | None:
    """A label cell of an official prediction file: 1/0 (possibly as text or float), or a label word."""
    if v is None or (isinstance(v, float) and v != v):
        return None
    s = str(v).strip()
    if s in ("", "nan", "None"):
        return None
    try:
        f = float(s)
    except ValueError:
        return _label_from_marker(s)
    if f in (0.0, 1.0):
        return int(f)
    raise DataError(f"label {v!r} is neither 0/1 nor a label word")


def read_predictions(path: str | os.PathLike, *, scene_graph: bool | None = None):
    """A predictions file as ``id, label_pred, explanation_pred, parse_rule, source_format``."""
    import pandas as pd

    p = Path(path)
    if not p.is_file():
        raise DataError("predictions file not found", source=str(p))
    sg = scene_graph if scene_graph is not None else "sg" in p.name  # the official script's file-name rule
    rows = []
    if p.suffix.lower() == ".jsonl":
        for i, rec in iter_jsonl(p):
            if "request_id" not in rec:
                raise DataError("store record without request_id", source=str(p), row=i, field="request_id")
            rid = str(rec["request_id"])
            if rid.endswith("::sg"):
                continue  # the scene-graph step of a two-step run
            is_sg = sg or rec.get("setting") == "scene_graph"
            parsed = parse_output(None if rec.get("error") else rec.get("text"), scene_graph=is_sg)
            rows.append({"id": rid.split("::")[0], **parsed, "source_format": "store"})
        df = pd.DataFrame(rows)
        if not df.empty:
            df = df.drop_duplicates("id", keep="last")  # a resumed store may hold a retried request
    else:
        try:
            raw = pd.read_csv(p)
        except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as e:
            raise DataError(f"not a readable CSV: {e}", source=str(p)) from None
        if "id" not in raw.columns:
            raise DataError("missing column 'id'", source=str(p))
        if "output" in raw.columns:
            for _, r in raw.iterrows():
                rows.append({"id": str(r["id"]), **parse_output(r["output"], scene_graph=sg),
                             "source_format": "official raw output"})
        elif {"label", "explanation"} <= set(raw.columns):
            for i, r in raw.iterrows():
                try:
                    lab = _label_value(r["label"])
                except DataError as e:
                    raise DataError(str(e), source=str(p), row=int(i) + 2, field="label") from None
                expl = r["explanation"]
                expl = "" if expl is None or (isinstance(expl, float) and expl != expl) else str(expl)
                rows.append({"id": str(r["id"]), "label_pred": lab, "explanation_pred": expl,
                             "valid": lab is not None, "parse_rule": "given", "source_format": "official id,label,explanation"})
        else:
            raise DataError("expected an 'output' column or 'label' and 'explanation' columns", source=str(p))
        df = pd.DataFrame(rows)
        dup = df["id"].duplicated() if not df.empty else []
        if len(df) and dup.any():
            raise DataError(f"duplicate prediction id {df.loc[dup, 'id'].iloc[0]!r}", source=str(p))
    if df.empty:
        raise DataError("no predictions in the file", source=str(p))
    return df


def _default_source():
    from vlamb_nb.benchmarks.vflute_data import HUB_ID
    from vlamb_nb.notebook import shared_data_dir

    shared = shared_data_dir()
    if shared is not None and (shared / "vflute").is_dir():
        return shared / "vflute"
    return HUB_ID


def score_prediction_file(bench, predictions: str | os.PathLike, *, source: str | os.PathLike | None = None,
                          scorer: Any = "auto", split: str = "test", scene_graph: bool | None = None,
                          ci: bool = True, n_resamples: int = 2000,
                          labels: str | os.PathLike | None = None,
                          compare: str | os.PathLike | None = None) -> dict[str, Any]:
    """F1@0/53/60 overall and per dataset for a prediction file, with bootstrap CIs overall.

    ``labels``: a human adequacy labels CSV (module doc); adds ExplanationScore-vs-adequacy (PR-AUC,
    thresholds, kappa) under ``"adequacy"``. ``compare``: a second prediction file; adds the paired
    bootstrap of this file minus that one under ``"paired_bootstrap"``.
    """
    from vlamb_nb.explanation_scores import get_scorer

    human = read_adequacy_labels(labels) if labels is not None else None
    items = bench.load(source if source is not None else _default_source(), split=split)
    scorer = get_scorer(scorer)  # one instance, so a compared file is scored alike (and its cache reused)
    scored, n_missing = _score_file(bench, predictions, items, scorer, scene_graph)
    curve = f1_curve(scored)
    at = curve[curve["pct"].isin(REPORTED)]
    f1 = {d: {f"F1@{int(r.pct)}": round(100 * r.f1, 2) for r in g.itertuples()} for d, g in at.groupby("dataset",
                                                                                                        sort=False)}
    out: dict[str, Any] = {
        "benchmark": "vflute", "predictions": str(predictions), "n": int(len(scored)), "n_missing": n_missing,
        "n_unparsed": int(scored["label_pred"].isna().sum()), "scorer": scored.attrs["scorer"],
        "f1": {k: f1[k] for k in ["overall", *DATASETS] if k in f1},
        "mean_explanation_score": float(scored["explanation_score"].mean()),
    }
    if ci:
        out["ci"] = {f"F1@{p}": {k: (round(100 * v, 2) if k in ("estimate", "ci_low", "ci_high") else v)
                                 for k, v in f1_at_ci(scored["label_true"], scored["label_pred_filled"],
                                                      scored["explanation_score"], p,
                                                      n_resamples=n_resamples).items()}
                     for p in REPORTED}
    from vlamb_nb.models.base import ModelInfo

    devs = bench.deviations(ModelInfo("file", backend="file"), "zero_shot", scored.attrs["scorer"])
    out["deviations"] = [str(d) for d in devs]
    if human is not None:
        res = adequacy_report(scored, human, n_resamples=min(n_resamples, 1000) if ci else 0)
        res.pop("curve")
        out["adequacy"] = res
    if compare is not None:
        other, other_missing = _score_file(bench, compare, items, scorer, scene_graph)
        tests = compare_runs(scored, other, n_resamples=n_resamples)
        out["paired_bootstrap"] = {
            "a": str(predictions), "b": str(compare), "b_n_missing": other_missing,
            "b_n_unparsed": int(other["label_pred"].isna().sum()),
            "tests": {f"F1@{r['pct']}": {k: (round(100 * v, 2) if k in ("estimate", "ci_low", "ci_high") else v)
                                         for k, v in r.items()} for r in tests},
            "paper_comparisons": list(PAPER_COMPARISONS)}
    return out


def _score_file(bench, predictions: str | os.PathLike, items, scorer: Any,
                scene_graph: bool | None) -> tuple[Any, int]:
    """A prediction file joined to the gold items and scored; also how many items it has no prediction for."""
    preds = read_predictions(predictions, scene_graph=scene_graph)
    unknown = sorted(set(preds["id"]) - set(items["id"]))
    if unknown:
        raise DataError(f"{len(unknown)} prediction id(s) are not in the gold data (wrong --source?), e.g. "
                        f"{unknown[0]!r}", source=str(predictions))
    merged = items.merge(preds, on="id", how="left")
    n_missing = int(merged["source_format"].isna().sum())
    merged["label_pred"] = merged["label_pred"].astype(object).where(merged["label_pred"].notna(), None)
    merged["explanation_pred"] = merged["explanation_pred"].fillna("")
    return bench.score(merged, scorer=scorer), n_missing


# -- human adequacy labels (§5.3) ----------------------------------------------------------------
ADEQUACY_COLUMNS = ("id", "adequate")
SECOND_ANNOTATOR = "adequate_2"


def _binary(v: Any, source: str, row: int, field: str) -> int:
    s = str(v).strip()
    if s in ("0", "1", "0.0", "1.0"):
        return int(float(s))
    raise DataError(f"expected 0 or 1, got {v!r}", source=source, row=row, field=field)


def read_adequacy_labels(path: str | os.PathLike):
    """A human adequacy labels CSV (module doc) as a frame ``id, adequate[, adequate_2]`` of ints.

    Missing file, missing columns, values other than 0/1, empty or duplicated ids are
    :class:`DataError` errors naming the file, row (1 = first data row) and column.
    """
    import pandas as pd

    p = Path(path)
    if not p.is_file():
        raise DataError("adequacy labels file not found", source=str(p))
    try:
        raw = pd.read_csv(p, dtype=str, keep_default_na=False)
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as e:
        raise DataError(f"not a readable CSV: {e}", source=str(p)) from None
    raw.columns = [str(c).strip() for c in raw.columns]
    missing = [c for c in ADEQUACY_COLUMNS if c not in raw.columns]
    if missing:
        raise DataError(f"missing column(s) {missing}; expected id, adequate[, {SECOND_ANNOTATOR}]; "
                        f"found {list(raw.columns)}", source=str(p), field=missing[0])
    if raw.empty:
        raise DataError("no label rows", source=str(p))
    cols = [c for c in (*ADEQUACY_COLUMNS, SECOND_ANNOTATOR) if c in raw.columns]
    rows, seen = [], {}
    for i, rec in enumerate(raw[cols].to_dict(orient="records"), start=1):
        rid = str(rec["id"]).strip()
        if not rid:
            raise DataError("empty id", source=str(p), row=i, field="id")
        if rid in seen:
            raise DataError(f"id {rid!r} repeats row {seen[rid]}", source=str(p), row=i, field="id")
        seen[rid] = i
        rows.append({"id": rid, **{c: _binary(rec[c], str(p), i, c) for c in cols if c != "id"}})
    return pd.DataFrame(rows, columns=cols)


def adequacy_report(scored, labels, *, n_resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """ExplanationScore as a predictor of human adequacy (§5.3), on the judged items of ``scored``.

    PR curve, PR-AUC (with a bootstrap CI when ``n_resamples`` > 0), max-F1 threshold and the best
    threshold with P and R >= 0.75; with two annotators, Cohen's kappa over all judged items and the
    paper's rule (only items both agree on are analysed).
    """
    import numpy as np

    from vlamb_nb import stats
    from vlamb_nb.benchmarks.vflute_metrics import adequacy_pr, pr_auc

    unknown = sorted(set(labels["id"]) - set(scored["id"].astype(str)))
    if unknown:
        raise DataError(f"{len(unknown)} labelled id(s) are not among the scored predictions, e.g. {unknown[0]!r}",
                        field="id")
    merged = labels.merge(scored[["id", "explanation_score"]].astype({"id": str}), on="id", how="left")
    two = SECOND_ANNOTATOR in labels.columns
    out: dict[str, Any] = {"n_labelled": int(len(merged)), "annotators": 2 if two else 1,
                           "rule": "items both annotators agree on" if two else "one annotator's labels"}
    if two:
        out["cohen_kappa"] = stats.cohen_kappa(merged["adequate"], merged[SECOND_ANNOTATOR], ci=True).to_dict()
        merged = merged[merged["adequate"] == merged[SECOND_ANNOTATOR]]
    out["n_used"] = int(len(merged))
    out["n_adequate"] = int(merged["adequate"].sum())
    scores, y = merged["explanation_score"].to_numpy(float), merged["adequate"].to_numpy(bool)
    out.update(adequacy_pr(scores, y))
    if n_resamples > 0:
        def auc_of(idx: np.ndarray) -> float:
            return pr_auc(scores[idx], y[idx]) if 0 < y[idx].sum() < len(idx) else float("nan")

        ci = stats.bootstrap_ci(scores, auc_of, n_resamples=n_resamples, seed=seed, name="PR-AUC")
        out["pr_auc_ci"] = [v if np.isfinite(v) else None for v in (ci.ci_low, ci.ci_high)]
    scorer = scored.attrs.get("scorer") or {}
    out["scorer"] = scorer.get("name", "")
    out["scorer_substitute"] = bool(scorer.get("substitute", False))
    return out


def adequacy_comparison(report: dict[str, Any]):
    """Our adequacy numbers beside §5.1/§5.3 (PR-AUC 0.79, max F1 0.77 at 0.53, P,R>=0.75 at 0.6, kappa 0.47)."""
    import pandas as pd

    from vlamb_nb import reference

    cells = [("Section 5.3", "ExplanationScore vs adequacy", "PR-AUC", report["pr_auc"]),
             ("Section 5.3", "ExplanationScore vs adequacy", "max F1", report["max_f1"]),
             ("Section 5.3", "ExplanationScore vs adequacy", "max-F1 threshold", report["max_f1_threshold"]),
             ("Section 5.3", "ExplanationScore vs adequacy", "P,R>=0.75 threshold", report["p75_r75_threshold"])]
    if "cohen_kappa" in report:
        cells.append(("Section 5.1", "Human evaluation", "Cohen kappa", report["cohen_kappa"]["estimate"]))
    ours = pd.DataFrame(cells, columns=["table", "row", "column", "value"])
    return pd.concat([reference.compare(g, "vflute", table=t) for t, g in ours.groupby("table", sort=False)],
                     ignore_index=True)


# -- the audit of the paper's own arithmetic -------------------------------------------------------
def _released_test_counts() -> dict[str, int] | None:
    from vlamb_nb.notebook import shared_data_dir

    shared = shared_data_dir()
    if shared is None or not (shared / "vflute" / "vflute-v2-test.json").is_file():
        return None
    from vlamb_nb.benchmarks.vflute_data import load_items

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
