"""V-FLUTE §5.3: ExplanationScore against human adequacy judgements.

Human adequacy labels (the paper's own labels are not released) are a CSV with a header:

- ``id``: the V-FLUTE item id whose *predicted* explanation was judged (e.g. ``memecap-test-336``);
- ``adequate``: 1 if the annotator judged the explanation adequate, else 0;
- ``adequate_2`` (optional): a second annotator's 0/1. With it, Cohen's kappa is reported and, as in
  the paper, only items both annotators agree on enter the PR analysis.

Only judged items need a row; other columns are ignored. ``vlamb-nb score vflute --predictions FILE
-o labels=LABELS.csv`` adds the analysis to the score.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vlamb_nb.errors import DataError

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

    from vlamb_nb.jsonl import read_csv

    p = Path(path)
    if not p.is_file():
        raise DataError("adequacy labels file not found", source=str(p))
    raw = read_csv(p, allow_empty=True)
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


# -- ExplanationScore vs human adequacy ------------------------------------------------------------
def adequacy_pr(scores: Sequence[float], adequate: Sequence[bool]) -> dict[str, Any]:
    """PR curve, PR-AUC, the max-F1 threshold, and the best threshold with P and R both ≥ 0.75 (paper §5.3)."""
    from sklearn.metrics import auc, precision_recall_curve

    s = np.asarray(scores, dtype=float)
    y = np.asarray(adequate, dtype=bool)
    if s.shape != y.shape or s.size == 0:
        raise DataError("adequacy analysis needs one human label per explanation score")
    if y.all() or not y.any():
        raise DataError("adequacy labels must contain both adequate and inadequate explanations")
    prec, rec, thr = precision_recall_curve(y, s)
    # sklearn's thresholds mean "score >= thr is adequate"; F1@t passes "score > t": the same cut up to ties
    f1 = np.where(prec + rec > 0, 2 * prec * rec / np.where(prec + rec == 0, 1, prec + rec), 0)[:-1]
    best = int(np.argmax(f1))
    both = np.where((prec[:-1] >= 0.75) & (rec[:-1] >= 0.75))[0]
    bal = int(both[np.argmax(f1[both])]) if both.size else None
    return {"pr_auc": float(auc(rec, prec)), "max_f1": float(f1[best]), "max_f1_threshold": float(thr[best]),
            "p75_r75_threshold": None if bal is None else float(thr[bal]),
            "p75_r75_f1": None if bal is None else float(f1[bal]),
            "curve": {"precision": prec.tolist(), "recall": rec.tolist(), "thresholds": thr.tolist()}}


def pr_auc(scores: Sequence[float], adequate: Sequence[bool]) -> float:
    """Area under the PR curve (trapezoidal, as :func:`adequacy_pr`) without the rest of the analysis."""
    from sklearn.metrics import auc, precision_recall_curve

    prec, rec, _ = precision_recall_curve(np.asarray(adequate, dtype=bool), np.asarray(scores, dtype=float))
    return float(auc(rec, prec))
