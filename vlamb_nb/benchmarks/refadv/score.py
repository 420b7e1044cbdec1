"""Ref-Adv metrics: first-box IoU, Acc@t, slices, the official report table, and failure-mode analyses.

A *scored frame* has one row per item with at least ``iou``, ``parse_error``, ``distractor_count``,
``use_negation``, ``human_authored``, ``image_source`` (plus ``pred_xyxy``/``gt_xyxy`` for drawings).
Official prediction JSONL files and our own runs both become scored frames, so one set of
functions reports both.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vlamb_nb import boxes
from vlamb_nb.benchmarks.refadv.data import BINS, _typed, in_bin
from vlamb_nb.benchmarks.refadv.parse import (
    BACKEND_ERROR,
)
from vlamb_nb.errors import DataError
from vlamb_nb.jsonl import iter_jsonl, read_json, read_text
from vlamb_nb.metrics import coverage
from vlamb_nb.stats.metric import Metric, OnCard, Published

THRESHOLDS = (0.5, 0.75, 0.9)
# our mAcc: COCO-style mean over IoU 0.50:0.05:0.95 (the paper's definition is not reproducible)
MACC_THRESHOLDS = tuple(round(0.5 + 0.05 * i, 2) for i in range(10))
NEAR_MISS = (0.3, 0.5)
OFFICIAL_FIELDS = ("row_idx", "distractor_count", "gt_bbox_xyxy", "pred_box_xyxy_first", "first_iou", "first_hit",
                   "parse_error")
REPORT_COLUMNS = ["Model", "Variant", "Prompt", "Rows", "ParseFail", "Acc@0.5", "Acc@0.75", "Acc@0.9", "2-3",
                  "d(2-3)", "4-6", "d(4-6)", ">=7", "d(>=7)", "Source"]


# -- basic metrics ---------------------------------------------------------------------------------------
def first_iou(pred: Any, gt: Any) -> float:
    """IoU of the first predicted box with the GT (0 when there is no 4-number prediction), as ``run.py``."""
    pred = list(pred) if pred is not None else []
    gt = list(gt) if gt is not None else []
    if len(pred) != 4 or len(gt) != 4:
        return 0.0
    return boxes.iou(gt, pred)


def acc_at(ious, threshold: float) -> float:
    """Share of rows with IoU >= threshold; parse failures (IoU 0) stay in the denominator."""
    vals = [float(v) for v in ious]
    return sum(v >= threshold for v in vals) / len(vals) if vals else 0.0


def macc(ious, thresholds: tuple[float, ...] = MACC_THRESHOLDS) -> float:
    """Mean of Acc@t over ``thresholds`` (our documented definition; not the paper's)."""
    return sum(acc_at(ious, t) for t in thresholds) / len(thresholds)


def pct(x: float) -> str:
    """``report.py`` rounding: ``f"{x*100:.1f}"``."""
    return f"{x * 100:.1f}"


def summary(scored) -> dict[str, Any]:
    """Every Ref-Adv number for one run (fractions, unrounded): Acc@t, mAcc, and all slices."""
    ious = scored["iou"].astype(float)
    # the declared Acc@0.5's units (a row each, a parse failure 0), whole and by its slices: the table's Acc@0.5,
    # negation and distractor-bin cells are the metric's own, as a share of rows
    sets = {u.slice: u for u in ACC.unit_sets(scored) or ()}
    declared = {"neg": "Neg", "no_neg": "No-Neg", **{b: b for b in BINS}}

    def share(name: str) -> tuple[float | None, int]:
        u = sets.get(name)
        return (None, 0) if u is None else (sum(u.values) / len(u.values), len(u.values))

    a50 = share(ACC.overall)[0] if sets else acc_at(ious, 0.5)
    out: dict[str, Any] = {"rows": int(len(scored)),
                           "parse_fail": int((scored["parse_error"].fillna("").astype(str).str.strip() != "").sum())}
    out["parse_fail_rate"] = out["parse_fail"] / out["rows"] if out["rows"] else 0.0
    for t in THRESHOLDS:
        out[f"acc@{t}"] = a50 if t == 0.5 else acc_at(ious, t)
    out["macc"] = macc(ious)
    out["macc_3thr"] = sum(out[f"acc@{t}"] for t in THRESHOLDS) / len(THRESHOLDS)

    def sub(mask) -> tuple[float | None, int]:
        n = int(mask.sum())
        return (acc_at(ious[mask], 0.5) if n else None), n

    slices = {
        "neg": scored["use_negation"].astype(bool),
        "no_neg": ~scored["use_negation"].astype(bool),
        "human": scored["human_authored"].astype(bool),
        "llm": ~scored["human_authored"].astype(bool),
        "coco": scored["image_source"].astype(str).str.startswith("coco"),
        "openimages": scored["image_source"].astype(str) == "openimages",
    }
    for b in BINS:
        slices[b] = scored["distractor_count"].map(lambda d, b=b: in_bin(int(d), b)).astype(bool)
    for name, mask in slices.items():
        out[name], out[f"n_{name}"] = share(declared[name]) if sets and name in declared else sub(mask)
    for b in BINS:
        out[f"d({b})"] = (out[b] if out[b] is not None else 0.0) - a50
    lo, hi = NEAR_MISS
    out["near_miss"] = int(((ious >= lo) & (ious < hi)).sum())
    return out


def row_name(scored) -> str:
    """Reference row id of a run: ``<model without 'Qwen/'> | <prompt id>``."""
    return f"{str(scored['model'].iloc[0]).replace('Qwen/', '')} | {scored['prompt_id'].iloc[0]}"


def report_row(scored, *, model: str, prompt: str, source: str = "", variant: str | None = None) -> dict[str, str]:
    """One row of the official ``report.py`` table: same columns, same rounding (empty bin → 0.0)."""
    s = summary(scored)
    a50 = s["acc@0.5"]
    row = {"Model": model.replace("Qwen/", ""),
           "Variant": variant or ("Thinking" if "thinking" in model.lower() else "Instruct"),
           "Prompt": prompt, "Rows": str(s["rows"]), "ParseFail": str(s["parse_fail"]),
           "Acc@0.5": pct(a50), "Acc@0.75": pct(s["acc@0.75"]), "Acc@0.9": pct(s["acc@0.9"])}
    for b in BINS:
        v = s[b] if s[b] is not None else 0.0
        row[b] = pct(v)
        row[f"d({b})"] = f"{(v - a50) * 100:+.1f}"
    row["Source"] = f"`{source}`" if source else ""
    return row


def report(runs: dict[str, Any]) -> Any:
    """The official report for several runs (``{source name: scored frame}``), sorted like ``report.py``."""
    import pandas as pd

    rows = []
    for name in sorted(runs):
        sc = runs[name]
        model = str(sc["model"].iloc[0]) if "model" in sc.columns and len(sc) else name
        prompt = str(sc["prompt_id"].iloc[0]) if "prompt_id" in sc.columns and len(sc) else ""
        rows.append(report_row(sc, model=model, prompt=prompt, source=name))
    return pd.DataFrame(rows, columns=REPORT_COLUMNS)


def report_markdown(table) -> str:
    """The report as ``report.py`` prints it (markdown, right-aligned numbers)."""
    lines = ["| " + " | ".join(REPORT_COLUMNS) + " |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for _, r in table.iterrows():
        lines.append("| " + " | ".join(str(r[c]) for c in REPORT_COLUMNS) + " |")
    return "\n".join(lines) + "\n"


# -- official prediction files ---------------------------------------------------------------------------
def read_official_predictions(path: str | os.PathLike):
    """An official ``*_predictions.jsonl`` as a scored frame, IoU recomputed from the boxes.

    Adds ``iou`` (ours, from ``pred_box_xyxy_first`` and ``gt_bbox_xyxy``) beside the file's
    ``first_iou``; :func:`check_official` compares them.
    """
    import pandas as pd

    path = Path(path)
    rows = []
    for ln, rec in iter_jsonl(path):
        for f in OFFICIAL_FIELDS:
            if f not in rec:
                raise DataError("missing field", source=str(path), row=ln, field=f)
        where = {"source": str(path), "row": ln}
        pred = _official_box(rec["pred_box_xyxy_first"] or [], "pred_box_xyxy_first", allow_empty=True, **where)
        gt = _official_box(rec["gt_bbox_xyxy"], "gt_bbox_xyxy", **where)
        try:
            n_distractors, official_iou = int(rec["distractor_count"]), float(rec["first_iou"])
        except (TypeError, ValueError):
            bad = "distractor_count" if not _is_int_like(rec["distractor_count"]) else "first_iou"
            raise DataError(f"not a number: {rec[bad]!r}", field=bad, **where) from None
        text = {f: _typed(rec, f, str, "", str(path), ln) for f in OFFICIAL_TEXT}
        flag = {f: _typed(rec, f, bool, False, str(path), ln) for f in OFFICIAL_FLAGS}
        rows.append({
            "id": str(rec["row_idx"]), "row_idx": int(rec["row_idx"]), "file_name": text["file_name"],
            "expression": text["normal_caption"], "image_source": text["image_source"],
            "human_authored": flag["human_authored"], "use_negation": flag["use_negation"],
            "distractor_count": n_distractors, "gt_xyxy": gt, "pred_xyxy": pred,
            "iou": first_iou(pred, gt), "official_iou": official_iou,
            "official_hit": flag["first_hit"], "parse_error": text["parse_error"],
            "retry_used": flag["retry_followup_used"],
            "model": text["model_full_name"], "prompt_id": text["prompt_id"],
            "box_format": text["pred_box_expected_format"],
        })
    if not rows:
        raise DataError("no prediction rows", source=str(path))
    df = pd.DataFrame(rows)
    # one file is one run: several models or prompts in it would be scored as one
    runs = df.groupby(["model", "prompt_id"], sort=False).size()
    if len(runs) > 1:
        listed = "; ".join(f"{m or '?'} | {pr or '?'} ({n} rows)" for (m, pr), n in runs.items())
        raise DataError(f"the file mixes {len(runs)} runs ({listed}); split it into one file per "
                        "model_full_name and prompt_id", source=str(path))
    # a row repeated verbatim is counted once (reported); the same row with another answer is an error
    answer = ["pred_xyxy", "official_iou", "parse_error", "retry_used"]
    key = df["row_idx"]
    dup = key.duplicated(keep=False)
    if dup.any():
        as_text = df[answer].astype(str).agg("|".join, axis=1)
        clash = df[dup].assign(_a=as_text[dup]).groupby("row_idx")["_a"].nunique()
        if (clash > 1).any():
            bad = clash[clash > 1].index[:5].tolist()
            raise DataError(f"row_idx {bad} appear with different predictions; the file mixes runs or was edited",
                            source=str(path), field="row_idx")
        n_before = len(df)
        df = df.drop_duplicates("row_idx", keep="first").reset_index(drop=True)
        import warnings

        from vlamb_nb.run_identity import DuplicateWarning

        warnings.warn(f"{path.name}: {n_before - len(df)} repeated row(s) counted once", DuplicateWarning,
                      stacklevel=2)
        df.attrs["duplicates_dropped"] = n_before - len(df)
    df["hit"] = df["iou"] >= 0.5
    return df


#: text and true/false fields of an official row: a value of another type is refused, never converted
OFFICIAL_TEXT = ("file_name", "normal_caption", "image_source", "parse_error", "model_full_name", "prompt_id",
                 "pred_box_expected_format")
OFFICIAL_FLAGS = ("human_authored", "use_negation", "first_hit", "retry_followup_used")


def _is_int_like(v: Any) -> bool:
    try:
        int(v)
    except (TypeError, ValueError):
        return False
    return True


def _official_box(value: Any, field: str, *, source: str, row: int, allow_empty: bool = False) -> list[float]:
    """A 4-number box from an official file (``[]`` allowed for a missing prediction), else a DataError."""
    if allow_empty and isinstance(value, list) and not value:
        return []
    if not isinstance(value, list) or len(value) != 4:
        raise DataError(f"a box must be a list of 4 numbers, got {value!r}", source=source, row=row, field=field)
    try:
        return [float(v) for v in value]
    except (TypeError, ValueError):
        raise DataError(f"box values must be numbers, got {value!r}", source=source, row=row, field=field) from None


#: the data identity of the official per-row files: the released Ref-Adv-s rows
RELEASED_DATA = {"kind": "release", "release": "hub:dddraxxx/ref-adv-s", "revision": None, "n_items": 1142,
                 "label": "Ref-Adv-s (released per-row predictions)"}


def released_run(path: str | os.PathLike) -> Any:
    """An official ``*_predictions.jsonl`` (a released run's per-row file) as its scored rows, a
    :class:`~vlamb_nb.benchmarks.base.ReleasedRun`; None for any other file."""
    from vlamb_nb.benchmarks.base import ReleasedRun

    path = Path(path)
    if path.suffix != ".jsonl" or not _is_official(path):
        return None
    scored = read_official_predictions(path)
    # what the authors' reader parsed of each reply (the reply itself was not released): the record keeps it
    scored.attrs["parsed_columns"] = [c for c in ("pred_xyxy", "parse_error") if c in scored.columns]
    return ReleasedRun(model=str(scored["model"].iloc[0]).replace("Qwen/", ""),
                       setting=str(scored["prompt_id"].iloc[0]), scored=scored, data=RELEASED_DATA)


def check_official(scored, *, tol: float = 1e-9) -> dict[str, Any]:
    """Recomputed IoU/hit vs the file's ``first_iou``/``first_hit``: counts of disagreeing rows."""
    diff = (scored["iou"] - scored["official_iou"]).abs()
    return {"rows": int(len(scored)), "iou_mismatches": int((diff > tol).sum()), "max_abs_iou_diff": float(diff.max()),
            "hit_mismatches": int((scored["hit"] != scored["official_hit"]).sum())}


def run_name(path: str | os.PathLike) -> str:
    return Path(path).name.replace("_predictions.jsonl", "")


def official_runs(folder: str | os.PathLike) -> dict[str, Any]:
    """Every ``*_predictions.jsonl`` in ``folder`` as ``{run name: scored frame}``."""
    files = sorted(Path(folder).glob("*_predictions.jsonl"))
    return {run_name(p): read_official_predictions(p) for p in files}


# -- failure modes ---------------------------------------------------------------------------------------
def failure_breakdown(scored) -> dict[str, int]:
    """Hits, near misses (0.3 <= IoU < 0.5), other misses with a box, and parse failures."""
    ious = scored["iou"].astype(float)
    failed = scored["parse_error"].fillna("").astype(str).str.strip() != ""
    lo, hi = NEAR_MISS
    return {"hit": int((ious >= hi).sum()), "near_miss": int(((ious >= lo) & (ious < hi) & ~failed).sum()),
            "miss": int(((ious < lo) & ~failed).sum()), "parse_failure": int(failed.sum())}


def accuracy_by(scored, column: str, bins: list[tuple[float, float, str]]) -> Any:
    """Acc@0.5 and n per bin of ``column`` (bins are ``(low, high_exclusive, label)``)."""
    import pandas as pd

    rows = []
    for lo, hi, label in bins:
        m = (scored[column] >= lo) & (scored[column] < hi)
        n = int(m.sum())
        rows.append({"bin": label, "n": n, "acc@0.5": acc_at(scored.loc[m, "iou"], 0.5) if n else float("nan")})
    return pd.DataFrame(rows)


LENGTH_BINS = [(1, 4, "1-3"), (4, 7, "4-6"), (7, 10, "7-9"), (10, 13, "10-12"), (13, 16, "13-15"),
               (16, 20, "16-19"), (20, math.inf, ">=20")]
DISTRACTOR_BINS = [(0, 2, "0-1"), (2, 4, "2-3"), (4, 7, "4-6"), (7, 10, "7-9"), (10, math.inf, ">=10")]


def with_length(scored):
    out = scored.copy()
    out["n_words"] = out["expression"].astype(str).str.split().str.len()
    return out


def hard_distractor_picks(scored, instances: str | os.PathLike | dict[str, Any], *, match_iou: float = 0.9,
                          pick_iou: float = 0.5) -> dict[str, Any]:
    """For COCO rows: where misses land, using COCO ``instances_val2017.json`` (an approximation).

    The GT box is matched to a COCO instance (IoU >= ``match_iou``) to get its category; a miss is
    a *same-category pick* if the predicted box overlaps another instance of that category with
    IoU >= ``pick_iou``, an *other-category pick* if it overlaps another instance, else *no instance*.
    """
    by_name, anns = _instances_index(instances)
    counts = {"coco_rows": 0, "matched": 0, "misses": 0, "same_category_pick": 0, "other_category_pick": 0,
              "no_instance": 0, "parse_failure": 0}
    for _, r in scored.iterrows():
        if not str(r["image_source"]).startswith("coco") or r["file_name"] not in by_name:
            continue
        counts["coco_rows"] += 1
        image_anns = anns.get(by_name[r["file_name"]], [])
        best = max(image_anns, key=lambda ab: boxes.iou(ab[1], r["gt_xyxy"]), default=None)
        if best is None or boxes.iou(best[1], r["gt_xyxy"]) < match_iou:
            continue
        counts["matched"] += 1
        if r["iou"] >= 0.5:
            continue
        counts["misses"] += 1
        pred = list(r["pred_xyxy"]) if r["pred_xyxy"] is not None else []
        if len(pred) != 4:
            counts["parse_failure"] += 1
            continue
        others = [(a, b) for a, b in image_anns if a is not best[0]]
        same = [b for a, b in others if a["category_id"] == best[0]["category_id"]]
        if any(boxes.iou(pred, b) >= pick_iou for b in same):
            counts["same_category_pick"] += 1
        elif any(boxes.iou(pred, b) >= pick_iou for _, b in others):
            counts["other_category_pick"] += 1
        else:
            counts["no_instance"] += 1
    with_box = counts["misses"] - counts["parse_failure"]
    counts["same_category_share_of_misses"] = counts["same_category_pick"] / counts["misses"] if counts["misses"] else None
    counts["same_category_share_of_box_misses"] = counts["same_category_pick"] / with_box if with_box else None
    return counts


def _instances_index(instances: str | os.PathLike | dict[str, Any]):
    """``{file_name: image id}`` and ``{image id: [(annotation, xyxy box)]}`` from a COCO instances file.

    A malformed file is a :class:`DataError` naming the record, not a silently empty analysis.
    """
    source = "instances" if isinstance(instances, dict) else str(instances)
    if isinstance(instances, dict):
        data = instances
    else:
        path = Path(instances)
        data = read_json(path)
    if not isinstance(data, dict):
        raise DataError("expected a COCO instances object with 'images' and 'annotations'", source=source)
    for key in ("images", "annotations"):
        if not isinstance(data.get(key), list):
            raise DataError(f"missing list {key!r} (expected COCO instances format)", source=source, field=key)
    by_name: dict[str, Any] = {}
    for i, im in enumerate(data["images"], start=1):
        if not isinstance(im, dict) or "file_name" not in im or "id" not in im:
            raise DataError(f"image record {i} needs 'id' and 'file_name'", source=source, row=i, field="images")
        by_name[str(im["file_name"])] = im["id"]
    anns: dict[Any, list[tuple[dict[str, Any], Any]]] = {}
    for i, a in enumerate(data["annotations"], start=1):
        missing = [k for k in ("image_id", "bbox", "category_id") if not isinstance(a, dict) or k not in a]
        if missing:
            raise DataError(f"annotation {i} is missing a field", source=source, row=i,
                            field=f"annotations.{missing[0]}")
        try:
            box = boxes.xywh_to_xyxy(a["bbox"])
        except (TypeError, ValueError) as e:
            raise DataError(f"annotation {i}: {e}", source=source, row=i, field="annotations.bbox") from None
        anns.setdefault(a["image_id"], []).append((a, box))
    return by_name, anns


def _text(text: Any) -> str:
    """A generation's text; a missing cell (None / NaN from a store) is empty, never the string "nan"."""
    return text if isinstance(text, str) else ""


def _failed(error: Any) -> bool:
    """A generation error is a non-empty string (pandas gives NaN/None for none)."""
    return isinstance(error, str) and bool(error)


def _is_official(path: Path) -> bool:
    """Whether a JSON Lines file holds official per-row predictions (else: one of our prediction stores)."""
    for ln, line in enumerate(read_text(path).split("\n"), start=1):
        if line.strip():
            try:
                rec = json.loads(line)
            except ValueError:
                raise DataError("the first record is not JSON", source=str(path), row=ln) from None
            return isinstance(rec, dict) and "first_iou" in rec and "pred_box_xyxy_first" in rec
    raise DataError("empty file", source=str(path))


# -- the report card ------------------------------------------------------------------------------------
#: the Ref-Adv-s rows behind the published Ref-Adv-s table
RELEASED_ROWS = 1142
#: the settings of the published Ref-Adv-s table (the ablations stay in the notebook)
HEADLINE_SETTINGS = ("direct", "cot")


def slices(scored) -> list[tuple[str, Any]]:
    """The published table's slices of Acc@0.5: negation or not, and the distractor bins (none for rows that do
    not say them: a frame without the flags)."""
    import numpy as np

    if not {"use_negation", "distractor_count"} <= set(scored.columns):
        return []
    neg = scored["use_negation"].astype(bool).to_numpy()
    d = scored["distractor_count"].astype(int).to_numpy()
    return [("Neg", neg), ("No-Neg", ~neg)] + [(b, np.array([in_bin(int(x), b) for x in d], bool)) for b in BINS]


#: Ref-Adv's headline, declared once: Acc@0.5 (the first box's IoU with the target, a parse failure 0) per row,
#: intervals resampling whole images; the card reads the direct and CoT runs, overall and by slice, among the
#: released runs and the published Ref-Adv-s rows (:func:`headline`); comparisons report it overall
ACC = Metric("Acc@0.5", "binary", column="iou", threshold=0.5, unit="row", cluster="file_name", cluster_unit="image",
             key=("row_idx", "id"), slices=slices,
             card=OnCard(published=Published("Ref-Adv-s", {"overall": "Acc@0.5", "Neg": "Neg", "No-Neg": "No-Neg",
                                                            **{b: b for b in BINS}}, n=RELEASED_ROWS),
                         settings=HEADLINE_SETTINGS))


def _acc_at(threshold: float) -> Metric:
    """Acc@t of the official table's stricter columns: the same rows, IoU and image clusters as :data:`ACC`, on the
    whole set (the table prints no slice of them), ranked on the card among the published Ref-Adv-s rows."""
    return Metric(f"Acc@{threshold}", "binary", column="iou", threshold=threshold, unit="row", cluster="file_name",
                  cluster_unit="image", key=("row_idx", "id"), compare_slices=False,
                  card=OnCard(published=Published("Ref-Adv-s", {"overall": f"Acc@{threshold}"}, n=RELEASED_ROWS),
                              settings=HEADLINE_SETTINGS))


#: the official Ref-Adv-s table's columns: Acc@0.5 (with its slices), Acc@0.75 and Acc@0.9
ACC75, ACC90 = _acc_at(0.75), _acc_at(0.9)
METRICS = (ACC, ACC75, ACC90)


def _aligned_record(rec: Any, keys: Sequence[str], released: dict[str, Any], threshold: float = 0.5) -> dict[str, Any]:
    """Each released run's hits (IoU >= ``threshold``) on a run record's rows (in the order of ``keys``, their
    row numbers), matched by row and gold box (a record keeps no expression, and names an image as its data does,
    a released file by its own name); a released run that does not cover every one of the rows is left out, so
    every comparison is on exactly the same rows."""
    rows = rec.keyed_rows()
    if not keys or any(k not in rows or not str(k).isdigit() for k in keys):
        return {}
    ours = [(int(k), rows[k].get("gold")) for k in keys]
    out = {}
    for name, rel in released.items():
        r = rel.drop_duplicates("row_idx").set_index(rel["row_idx"].astype(int).to_numpy())
        if not {i for i, _ in ours} <= set(r.index):
            continue
        part = r.loc[[i for i, _ in ours]]
        same = all(_same_box(g, gold) for (_, gold), g in zip(ours, part["gt_xyxy"], strict=True))
        if same:  # the same row number, another box: not the rows this record scored
            out[name] = part.assign(hit=part["iou"].astype(float).to_numpy() >= threshold).reset_index(drop=True)
    return out


def _same_box(a: Any, b: Any) -> bool:
    try:
        return len(a) == len(b) == 4 and all(abs(float(x) - float(y)) <= 0.5 for x, y in zip(a, b, strict=True))
    except (TypeError, ValueError):
        return False


def headline(runs: dict[str, Any], *, released: dict[str, Any] | None = None, metrics: Any = METRICS,
             cells: Any = None, n_resamples: int = 2000, seed: int = 0) -> list[Any]:
    """The card's rows of every declared card metric of ``metrics`` (``runs``: ``{setting: run record}``): Acc@0.5, Acc@0.75 and Acc@0.9 among the
    released runs on the same rows, then the published ones (:func:`acc_headline`); any other as every paper's is
    (:func:`vlamb_nb.stats.metric.headlines`, among its published values in ``cells(table)``)."""
    from vlamb_nb.stats.metric import headlines

    rows = [h for m in (ACC, ACC75, ACC90) if m in metrics
            for h in acc_headline(runs, released=released, n_resamples=n_resamples, seed=seed, metric=m)]
    if others := tuple(m for m in metrics if m not in (ACC, ACC75, ACC90) and m.card is not None):
        from vlamb_nb import reference

        rows += headlines("refadv", others, runs, cells=cells or (lambda t: reference.load("refadv", t)),
                          n_resamples=n_resamples, seed=seed)
    return rows


def acc_headline(runs: dict[str, Any], *, released: dict[str, Any] | None = None, n_resamples: int = 2000,
                 seed: int = 0, metric: Metric | None = None) -> list[Any]:
    """Ref-Adv's headline for the report card: Acc@0.5 (or ``metric``, another Acc@t of :data:`METRICS`) overall
    and by slice (negation, distractor bins; Acc@0.75 and Acc@0.9 on the whole set) of the direct and CoT runs'
    records, placed among the released runs (their per-row predictions on exactly our rows, resampled with
    ours by image, with McNemar tests, Holm-adjusted within each slice) and among the published Ref-Adv-s rows
    that have no released file (binomial at the slice's size in the 1,142 rows)."""
    import numpy as np

    from vlamb_nb import reference, stats
    from vlamb_nb.stats.metric import card_units
    from vlamb_nb.stats.ranking import (
        Comparator,
        Headline,
        interval,
        place,
        published_draws,
        published_interval,
        resample_weights,
        weighted_mean,
    )

    metric = ACC if metric is None else metric
    out = []
    pub = metric.card.published
    ref = reference.load("refadv", pub.table)
    for k, (setting, run) in enumerate(runs.items()):
        if setting not in metric.card.settings or run is None or not len(run):
            continue
        sets = run.unit_sets(metric.name)  # one unit (row) each, in the run's order
        if not sets:
            continue
        whole = next(u for u in sets if u.whole)
        aligned = _aligned_record(run, whole.keys, released or {}, metric.threshold)
        names = {name: row_name(rel) for name, rel in aligned.items()}
        hits = whole.array().astype(bool)
        w = resample_weights(len(hits), whole.cluster_array(), n_resamples=n_resamples, seed=seed + k)
        rng = np.random.default_rng(seed + k + 1)
        full = released and next(iter(released.values()), None)
        position = {key: i for i, key in enumerate(whole.keys)}
        if len(position) != len(whole.keys):
            raise DataError(f"the {setting} run scores {len(whole.keys) - len(position)} row(s) twice (one row id, "
                            "several rows): score each Ref-Adv-s row once")
        for u in card_units(metric, sets):
            slice_name = u.slice
            mask = np.zeros(len(hits), dtype=bool)
            mask[[position[key] for key in u.keys]] = True
            if not mask.any():
                continue
            wm = w * mask[None, :]
            ours_stat = weighted_mean(hits.astype(float))
            ours_draws = ours_stat(wm)
            value = 100.0 * float(hits[mask].mean())
            lo, hi = interval(ours_draws)
            comps, draws, pvals = [], [], []
            for name, rel in aligned.items():
                theirs = rel["hit"].to_numpy(bool)
                res = stats.mcnemar(hits[mask], theirs[mask])
                comps.append(Comparator(name=names[name], value=100.0 * float(theirs[mask].mean()),
                                        n=int(mask.sum()), basis="per-item", source=f"{name}_predictions.jsonl",
                                        diff=100.0 * float(hits[mask].mean() - theirs[mask].mean()),
                                        p=float(res.p) if math.isfinite(res.p) else None))
                t_draws = weighted_mean(theirs.astype(float))(wm)
                c_lo, c_hi = interval(t_draws)
                comps[-1].ci_low, comps[-1].ci_high = c_lo, c_hi
                draws.append(t_draws)
                pvals.append(comps[-1].p)
            if pvals and all(p is not None for p in pvals):
                for c, ph in zip(comps, stats.holm(pvals), strict=True):
                    c.p_holm = float(ph)
            column = pub.column(slice_name, setting)
            pub_rows = ref[(ref["column"] == column) & ref["value_num"].notna()]
            if aligned and len(run) < 0.99 * RELEASED_ROWS:
                pub_rows = pub_rows.iloc[:0]  # ours cover a part of the rows: the released runs on them are the field
            slice_n = RELEASED_ROWS
            if full is not None and slice_name != metric.overall:
                slice_n = int(dict(metric.slice_masks(full.reset_index(drop=True)))[slice_name].sum())
            for _, r in pub_rows.iterrows():
                if r["row"] in names.values() or r["row"].startswith("Human"):
                    continue  # a released run is compared row by row above; human experts are not a model
                c = Comparator(name=str(r["row"]), value=float(r["value_num"]), n=slice_n, source=f"refadv {pub.table}")
                c.ci_low, c.ci_high = published_interval(c.value, slice_n)
                comps.append(c)
                draws.append(published_draws(c.value, slice_n, n_resamples=n_resamples, rng=rng))
            h = Headline(paper="refadv", metric=metric.name, slice=slice_name, value=value, ci_low=lo, ci_high=hi,
                         n=int(mask.sum()), unit=metric.unit, ci_unit=whole.ci_unit, setting=setting,
                         comparators=comps,
                         note=(f"released runs compared on the same {int(mask.sum())} rows"
                               + ("" if len(pub_rows) else "; published values (all 1,142 rows) left out") if aligned
                               else "no released run covers these rows: published values only"))
            out.append(place(h, ours_draws, draws, basis="ours and released runs: the same image resamples; "
                                                         "published-only rows: binomial at the slice's size"))
    return out


# -- scoring runs and files -----------------------------------------------------------------------------------
def score_ious(predictions):
    """First-box IoU with the GT and Acc@0.5 hit; parse failures score IoU 0 and stay counted."""
    out = predictions.copy()
    out["iou"] = [first_iou(p, g) for p, g in zip(out["pred_xyxy"], out["gt_xyxy"], strict=True)]
    out["hit"] = out["iou"] >= 0.5
    out["correct"] = out["hit"]
    return out


def tables(scored) -> dict[str, Any]:
    """The official Ref-Adv-s report row and a Table 6-layout row (plus our mAcc) for one run."""
    import pandas as pd

    s = summary(scored)
    model = str(scored["model"].iloc[0]) if "model" in scored.columns and len(scored) else "ours"
    prompt = str(scored["prompt_id"].iloc[0]) if "prompt_id" in scored.columns and len(scored) else "direct"
    t6 = {"Acc0.5": s["acc@0.5"], "Acc0.75": s["acc@0.75"], "Acc0.9": s["acc@0.9"], "mAcc": s["macc"],
          "Neg": s["neg"], "No-Neg": s["no_neg"], "2-3": s["2-3"], "4-6": s["4-6"], ">=7": s[">=7"]}
    return {"Ref-Adv-s": pd.DataFrame([report_row(scored, model=model, prompt=prompt)]),
            "Table 6": pd.DataFrame([{k: (round(100 * v, 1) if v is not None else None) for k, v in t6.items()}],
                                    index=[f"{model} ({prompt})"])}


def score_file(bench: Any, predictions: str | os.PathLike, *, source: str | os.PathLike | None = None,
               **options: Any):
    """An official per-row prediction JSONL (rows already read by the official runner: :func:`
    read_official_predictions`, checked against the file's own IoUs: a disagreement is a note of the record), or
    one of our prediction stores (needs ``source``) through :meth:`~vlamb_nb.benchmarks.base.Benchmark.
    score_store`, as a scored run: ``setting``/``model``/``quantization``/``run`` pick one run of a store holding
    several, ``style``/``repair_text`` read it as another grounding style or repair text would."""
    path = Path(predictions)
    if not path.is_file():
        raise DataError("file not found", source=str(path))
    if _is_official(path):
        scored = read_official_predictions(path)
        check = check_official(scored)
        failed = scored["parse_error"] == BACKEND_ERROR
        scored.attrs["coverage"] = coverage(None, scored.loc[~failed, "id"], scored.loc[failed, "id"])
        scored.attrs.setdefault("model", str(scored["model"].iloc[0]) if "model" in scored and len(scored) else "")
        scored.attrs.setdefault("setting", str(scored["prompt_id"].iloc[0]) if "prompt_id" in scored and len(scored)
                                else "")
        if check["iou_mismatches"] or check["hit_mismatches"]:
            scored.attrs["notes"] = [f"our IoU disagrees with the file's own on {check['iou_mismatches']} of "
                                     f"{check['rows']} rows, its hit on {check['hit_mismatches']} (largest IoU "
                                     f"difference {check['max_abs_iou_diff']:.3g})"]
        return scored
    if source is None:
        raise DataError("scoring a prediction store needs --source (the data the predictions refer to)",
                        source=str(path))
    pick = {k: options.pop(k) for k in ("setting", "model", "quantization", "run") if k in options}
    if pick.get("run") is not None:
        pick["run"] = int(pick["run"])
    return bench.score_store(path, bench.load(source), record=False, **pick, **options)
