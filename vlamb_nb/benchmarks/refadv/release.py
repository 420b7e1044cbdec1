"""Ref-Adv Tables 1, 5 and Figs. 4-6: what the released Ref-Adv-s rows allow, and what they do not.

The official prediction files carry every dataset field of the 1,142 Ref-Adv-s rows except the image and its
size (expression, GT box, negation flag, distractor count, authorship, source), so the dataset statistics run
on all rows rather than on the 31 demo records; only what needs the image size falls back to the demo.
Table 5's printed examples are looked up in the release; the paper's declared ``not_derivable``
(``reference/refadv.not_derivable.json``) lists the rest with the reason, so the report never silently omits
them. (Table 4, a pipeline, runs in :mod:`.report`.)
"""

from __future__ import annotations

import difflib
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import vlamb_nb.benchmarks.refadv.data as data
import vlamb_nb.benchmarks.refadv.score as metrics
from vlamb_nb import boxes
from vlamb_nb.errors import DataError

PAPER = "refadv"
#: dataset fields every prediction file repeats; they must agree across files to be one release
ROW_FIELDS = ("file_name", "expression", "image_source", "human_authored", "use_negation", "distractor_count")
RELEASED_ROWS = 1142


# -- the released rows as one item frame ------------------------------------------------------------------------
def released_items(folder: str | os.PathLike):
    """The Ref-Adv-s rows from every ``*_predictions.jsonl`` in ``folder`` as one item frame (by ``row_idx``).

    Each file repeats the dataset fields; they are checked to agree across files (a disagreement means the
    files come from different releases), so the statistics do not depend on which file was read. ``width``,
    ``height`` and ``image`` are not in the files and stay empty.
    """
    import pandas as pd

    runs = metrics.official_runs(folder)
    if not runs:
        raise DataError("no *_predictions.jsonl files", source=str(folder))
    frames = {name: sc.sort_values("row_idx").reset_index(drop=True) for name, sc in runs.items()}
    first_name, base = next(iter(frames.items()))
    if base["row_idx"].duplicated().any():
        raise DataError("duplicate row_idx", source=f"{folder}/{first_name}_predictions.jsonl")
    for name, sc in frames.items():
        if not sc["row_idx"].equals(base["row_idx"]):
            raise DataError(f"rows differ from {first_name}", source=f"{folder}/{name}_predictions.jsonl",
                            field="row_idx")
        for f in ROW_FIELDS:
            if not sc[f].equals(base[f]):
                bad = int(sc.loc[sc[f] != base[f], "row_idx"].iloc[0])
                raise DataError(f"row_idx {bad} differs from {first_name}",
                                source=f"{folder}/{name}_predictions.jsonl", field=f)
        if not sc["gt_xyxy"].map(tuple).equals(base["gt_xyxy"].map(tuple)):
            raise DataError(f"GT boxes differ from {first_name}", source=f"{folder}/{name}_predictions.jsonl",
                            field="gt_bbox_xyxy")
    rows = pd.DataFrame({"id": base["row_idx"].astype(str), "row_idx": base["row_idx"], "file_name": base["file_name"],
                         "expression": base["expression"], "gt_xyxy": base["gt_xyxy"], "width": None, "height": None,
                         "image_source": base["image_source"], "human_authored": base["human_authored"],
                         "use_negation": base["use_negation"], "distractor_count": base["distractor_count"],
                         "image": None, "dataset": "ref-adv-s (prediction files)"})
    return rows[data.ITEM_COLUMNS]


# -- Table 1 -------------------------------------------------------------------------------------------------
#: our column -> (Table 1 column, what makes it (in)comparable with the paper's full-set value)
TABLE1_NOTES = {
    "Images": "size of the sample: 1,142 public rows sit on a subset of the 2,833 images",
    "Instances": "size of the sample: 1,142 public rows of 5,000",
    "Avg. Length": "whitespace words per expression (the paper does not say how it counts)",
    "Avg. Distractors": "released distractor count (same-category instances besides the target)",
    "Negation Ratio": "released use_negation flag; the subset over-samples human-written expressions",
    "Instance Size (min)": "sqrt of the GT box area in original-image pixels (the paper may use masks)",
    "Instance Size (max)": "sqrt of the GT box area; OpenImages images are 1024 px on the long side",
    "Vocab.": "lower-cased word types; vocabulary grows with the number of expressions, so not comparable",
}
#: statistics whose value does not scale with the number of rows (so the subset estimates the full set)
SIZE_FREE = ("Avg. Length", "Avg. Distractors", "Negation Ratio")


def table1_values(items) -> dict[str, float]:
    """Our Table 1 cells for ``items`` (the released rows), named as the paper's columns."""
    s = data.dataset_stats(items)
    lo, hi = s["instance_size_sqrt_area"]
    return {"Images": s["images"], "Instances": s["instances"], "Avg. Length": s["avg_length_words"],
            "Avg. Distractors": s["avg_distractors"], "Negation Ratio": s["negation_ratio_pct"],
            "Instance Size (min)": lo, "Instance Size (max)": hi, "Vocab.": s["vocabulary"]}


def _paper_size_range() -> tuple[float, float]:
    """Table 1 prints the Ref-Adv instance size as a range ("30-607"): its two ends as numbers."""
    from vlamb_nb import reference

    t = reference.load(PAPER, "Table 1")
    text = t[(t["row"] == "Ref-Adv") & (t["column"] == "Instance Size")]["value"].iloc[0]
    lo, hi = (float(v) for v in re.findall(r"\d+(?:\.\d+)?", text)[:2])
    return lo, hi


def table1_comparison(items, *, scope: str = "Ref-Adv-s: all 1,142 released rows"):
    """Ours (on ``items``) beside the paper's Ref-Adv row of Table 1, one row per statistic.

    Numeric cells go through ``reference.compare``; the instance-size range is printed as text, so its two
    ends are compared here. ``comparable`` says whether the statistic estimates the full-set value at all
    (counts and vocabulary grow with the sample, so the subset cannot match them).
    """
    import pandas as pd

    from vlamb_nb import reference

    ours = table1_values(items)
    numeric = {k: v for k, v in ours.items() if not k.startswith("Instance Size")}
    long = pd.DataFrame([{"table": "Table 1", "row": "Ref-Adv", "column": k, "value": v} for k, v in numeric.items()])
    out = reference.compare(long, PAPER, table="Table 1")
    lo, hi = _paper_size_range()
    size = pd.DataFrame([{"table": "Table 1", "row": "Ref-Adv", "column": c, "paper": p, "ours": float(ours[c]),
                          "diff": float(ours[c]) - p, "match": abs(float(ours[c]) - p) <= 0.05, "flag": ""}
                         for c, p in (("Instance Size (min)", lo), ("Instance Size (max)", hi))])
    out = pd.concat([out, size], ignore_index=True)
    out["comparable"] = out["column"].isin(SIZE_FREE)
    out["scope"] = scope
    out["note"] = out["column"].map(TABLE1_NOTES).fillna("")
    order = list(TABLE1_NOTES)
    return out.sort_values("column", key=lambda c: c.map(order.index)).reset_index(drop=True)


def table1_by_group(items):
    """Table 1 statistics within authorship and image source: the subset's mix explains its differences."""
    import pandas as pd

    groups = {"all": items, "human-authored": items[items["human_authored"].astype(bool)],
              "LLM-authored": items[~items["human_authored"].astype(bool)],
              "COCO": items[items["image_source"].astype(str).str.startswith("coco")],
              "OpenImages": items[items["image_source"].astype(str) == "openimages"]}
    rows = []
    for name, part in groups.items():
        if len(part):
            rows.append({"group": name, **table1_values(part),
                         "Negation Ratio (our lexicon)": data.dataset_stats(part)["negation_ratio_lexicon_pct"]})
    return pd.DataFrame(rows)


def demo_size_stats(demo_items) -> dict[str, Any]:
    """What needs the image size, on the demo records only (the prediction files carry no width/height).

    Absolute sqrt-area depends on the resolution (COCO ~640 px, OpenImages 1024 px), so the size relative
    to the image (sqrt of box area over image area) is the comparable one; it is known for the demo only.
    """
    import numpy as np

    w = demo_items["width"].astype(float).to_numpy()
    h = demo_items["height"].astype(float).to_numpy()
    area = np.array([boxes.area(b) for b in demo_items["gt_xyxy"]], dtype=float)
    rel = 100 * np.sqrt(area / (w * h))
    return {"scope": f"{len(demo_items)} demo records (image sizes are not in the prediction files)",
            "images": int(demo_items["file_name"].nunique()),
            "image_width_range": [int(w.min()), int(w.max())], "image_height_range": [int(h.min()), int(h.max())],
            "instance_size_sqrt_area_px": [round(float(np.sqrt(area).min())), round(float(np.sqrt(area).max()))],
            "instance_size_relative_pct": [round(float(rel.min()), 1), round(float(rel.max()), 1)],
            "instance_size_relative_median_pct": round(float(np.median(rel)), 1)}


# -- accuracy by distractor count and authorship, image-clustered intervals ---------------------------------------
def _slices(sc) -> list[tuple[str, str, Any]]:
    d = sc["distractor_count"].astype(int)
    human = sc["human_authored"].astype(bool)
    neg = sc["use_negation"].astype(bool)
    out = [("distractors", b, d.map(lambda x, b=b: data.in_bin(int(x), b)).to_numpy(bool)) for b in data.BINS]
    out += [("authorship", "human", human.to_numpy()), ("authorship", "LLM", (~human).to_numpy())]
    out += [("negation", "Neg", neg.to_numpy()), ("negation", "No-Neg", (~neg).to_numpy())]
    return out


def slice_accuracy(runs: dict[str, Any], *, n_resamples: int = 2000, seed: int = 0):
    """Acc@0.5 per distractor bin, authorship and negation for each run, with image-clustered 95% CIs.

    Rows on one image are not independent (1,142 rows on 614 images), so whole images are resampled.
    ``paper`` is the published Ref-Adv-s value where one exists (the distractor bins); the paper prints no
    authorship slice and its Neg/No-Neg columns are for the full 5k set.
    """
    import numpy as np
    import pandas as pd

    from vlamb_nb import reference, stats

    ref = reference.load(PAPER, "Ref-Adv-s").set_index(["row", "column"])["value_num"]
    rows = []
    for name in sorted(runs):
        sc = runs[name]
        hits = (sc["iou"].to_numpy(float) >= 0.5).astype(float)
        images = sc["file_name"].astype(str).to_numpy()
        rname = metrics.row_name(sc)
        for family, group, mask in _slices(sc):
            if not mask.any():
                continue
            r = stats.bootstrap_ci(hits[mask], n_resamples=n_resamples, seed=seed, clusters=images[mask])
            paper = ref.get((rname, group), np.nan) if family == "distractors" else np.nan
            rows.append({"run": name, "row": rname, "family": family, "group": group, "n": int(mask.sum()),
                         "images": int(len(set(images[mask]))), "estimate": 100 * r.estimate,
                         "ci_low": 100 * r.ci_low, "ci_high": 100 * r.ci_high, "paper": float(paper),
                         "ci_unit": "image"})
    return pd.DataFrame(rows)


# -- Table 5: the printed examples, looked up in the release ---------------------------------------------------
#: Table 5 as printed (text read from the website's table5_examples.png): (row, column, authorship, text)
TABLE5_EXAMPLES = [
    (1, 1, "LLM", "The cup that is empty and positioned at the center of the pizzas."),
    (1, 2, "LLM", "The young elephant near the water not covered in more dust."),
    (1, 3, "LLM", "The car is brown or black with a lighter tint on its windows."),
    (1, 4, "human", "The person sitting farther to the one holding a goose feather"),
    (2, 1, "LLM", "The frisbee holder who is not facing forward."),
    (2, 2, "LLM", "The occupied chair with the person's arm not resting on the lap."),
    (2, 3, "LLM", "The sailboat, identified by being anchored, is the one with a flag."),
    (2, 4, "human", "The frisbee held by the person on the right hand side of the person in red"),
]
#: a match at least this similar (difflib ratio of normalized text) is reported as a near match
NEAR_MATCH = 0.8


def _norm(text: str) -> str:
    return " ".join(data.words(text))


def table5_lookup(items, *, demo_items=None):
    """Each Table 5 example's closest released expression: exact, near (>= 0.8 similar) or absent.

    The full 5k set is not public, so an example missing from the 1,142 rows says nothing about its quality;
    a found one lets its authorship label and image be checked (``in_demo``: its image is a demo image).
    """
    import pandas as pd

    normed = [_norm(e) for e in items["expression"]]
    demo_names: set[str] = set()
    if demo_items is not None:  # demo images are named by row index: map them back to the release's file names
        by_row = items.set_index("row_idx")["file_name"]
        demo_names = {str(by_row[int(r)]) for r in demo_items["row_idx"] if int(r) in by_row.index}
    letters = [Counter(e) for e in normed]
    rows = []
    for r, c, who, text in TABLE5_EXAMPLES:
        q = _norm(text)
        k, ratio = _closest(q, normed, letters)
        best = items.iloc[k]
        kind = "exact" if ratio == 1.0 else "near" if ratio >= NEAR_MATCH else "not in Ref-Adv-s"
        found = kind != "not in Ref-Adv-s"
        rows.append({"table_row": r, "table_column": c, "paper_authorship": who, "example": text, "match": kind,
                     "similarity": round(ratio, 3), "closest_expression": best["expression"],
                     "row_idx": int(best["row_idx"]) if found else None,
                     "file_name": best["file_name"] if found else None,
                     "released_authorship": ("human" if best["human_authored"] else "LLM") if found else None,
                     "authorship_agrees": (("human" if best["human_authored"] else "LLM") == who) if found else None,
                     "in_demo": (str(best["file_name"]) in demo_names) if found else None})
    return pd.DataFrame(rows)


def _closest(q: str, texts: list[str], letters: list[Counter[str]]) -> tuple[int, float]:
    """The first of ``texts`` most similar to ``q`` (difflib's ``ratio``) and that ratio.

    ``ratio`` is 2 M / (len(q) + len(text)) with M matched characters, and M never exceeds the letters the two
    share: texts are matched in order of that bound, and once it falls below the best ratio found no later text
    can beat it. Same answer as matching every text, ties to the first, at a fraction of the matching.
    """
    mine = Counter(q)
    bounds = [2.0 * sum((mine & have).values()) / (len(q) + len(text)) if q or text else 1.0
              for text, have in zip(texts, letters, strict=True)]
    best_k, best = 0, -1.0
    for k in sorted(range(len(texts)), key=lambda i: -bounds[i]):
        if bounds[k] < best:
            break
        ratio = difflib.SequenceMatcher(None, q, texts[k]).ratio()
        if ratio > best or (ratio == best and k < best_k):
            best_k, best = k, ratio
    return best_k, best


# -- Fig. 6 (COCO rows only, with COCO instances) -------------------------------------------------------------
def category_counts(items, instances: str | os.PathLike | dict[str, Any], *, match_iou: float = 0.9):
    """Target categories of the COCO rows, from COCO ``instances_val2017.json`` (Fig. 6's curve, partly).

    Ref-Adv-s has no category field: a COCO row's GT box is matched to an instance (IoU >= ``match_iou``).
    OpenImages rows need OpenImages v7 annotations and are left out (counted in ``attrs``).
    """
    import pandas as pd

    from vlamb_nb.jsonl import read_json

    inst = instances if isinstance(instances, dict) else read_json(Path(instances))
    by_name, anns = metrics._instances_index(inst)
    cats = inst.get("categories") or [] if isinstance(inst, dict) else []
    names = {c["id"]: str(c.get("name", c["id"])) for c in cats if isinstance(c, dict) and "id" in c}
    counts: dict[str, int] = {}
    coco = items[items["image_source"].astype(str).str.startswith("coco")]
    matched = 0
    for _, r in coco.iterrows():
        image_anns = anns.get(by_name.get(r["file_name"]), [])
        best = max(image_anns, key=lambda ab: boxes.iou(ab[1], r["gt_xyxy"]), default=None)
        if best is None or boxes.iou(best[1], r["gt_xyxy"]) < match_iou:
            continue
        matched += 1
        cat = names.get(best[0]["category_id"], str(best[0]["category_id"]))
        counts[cat] = counts.get(cat, 0) + 1
    out = pd.DataFrame(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])), columns=["category", "count"])
    out["ratio"] = out["count"] / max(1, matched)
    out.attrs.update(rows=int(len(items)), coco_rows=int(len(coco)), matched=matched,
                     left_out=int(len(items) - matched))
    return out


# -- a released run as a recording: its answers replayed through the run path ----------------------------------
#: the first answer of a row whose official run needed the repair turn (the released files keep only the box)
FAILED_FIRST = "I am not able to locate it precisely."


def recording(predictions: str | os.PathLike, items, *, setting: str = "direct") -> list[dict[str, Any]]:
    """What a released run answered on ``items`` (demo records, with their image sizes), rebuilt for
    ``replay:FILE``: the predicted box in the model's own coordinate format (``pred_box_expected_format``) as the
    official JSON answer, after a failed first answer where the official run needed the repair turn. Replayed
    through ``run`` → parse → repair → score it gives the official per-row hits (tested)."""
    import json

    path = Path(predictions)
    rows: dict[int, dict[str, Any]] = {}
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(f"not JSON ({e.msg})", source=str(path), row=i) from None
            rows[int(rec["row_idx"])] = rec
    out = []
    for _, item in items.iterrows():
        rec = rows.get(int(item["row_idx"]))
        if rec is None or rec.get("normal_caption") != item["expression"]:
            raise DataError(f"item {item['id']} (row {item['row_idx']}) is not in the release with this expression",
                            source=str(path))
        box = rec.get("pred_box_xyxy_first")
        if box and len(box) == 4:
            raw = boxes.from_abs_xyxy(box, item["width"], item["height"], rec["pred_box_expected_format"])
            answer = json.dumps([{"bbox_2d": [round(v) for v in raw], "label": "target"}])
        else:
            answer = "I cannot find it."
        turns = [FAILED_FIRST, answer] if rec.get("retry_followup_used") else [answer]
        out += [{"item_id": str(item["id"]), "setting": setting, "depth": t, "text": text,
                 "model": rec["model_full_name"]} for t, text in enumerate(turns)]
    return out


def write_recording(predictions: str | os.PathLike, items, path: str | os.PathLike, **kwargs: Any) -> Path:
    """:func:`recording` as a JSON Lines file for ``replay:FILE``."""
    import json

    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recording(predictions, items, **kwargs)),
                   encoding="utf-8")
    return out


def released_run(runs: dict[str, Any] | None, model: str, prompt: str = "direct"):
    """The released run of ``model`` (its full hub name, e.g. ``Qwen/Qwen2.5-VL-72B-Instruct``) under ``prompt``,
    found by what the run's rows say rather than by its file name; None when the folder has no such run."""
    for sc in (runs or {}).values():
        if len(sc) and "model" in sc.columns and "prompt_id" in sc.columns \
                and str(sc["model"].iloc[0]) == model and str(sc["prompt_id"].iloc[0]) == prompt:
            return sc
    return None
