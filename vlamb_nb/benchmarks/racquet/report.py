"""What the notebook calls: ``notebook_data``, the CoT YES/NO judge, and the paper-shaped tables (the conditions
run and are judged through ``Benchmark.run_settings(..., judge=...)``)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from vlamb_nb.benchmarks.base import NotebookData
from vlamb_nb.benchmarks.racquet.benchmark import BENCHMARK
from vlamb_nb.errors import NotAvailableError


def table1_frame(table, *, by: str = "model", names: dict[str, str] | None = None):
    """Table 1 in the reference layout (``table,row,column,value``) for :func:`vlamb_nb.reference.compare`."""
    import pandas as pd

    rows = []
    for _, r in table.iterrows():
        col = (names or {}).get(r[by], r[by])
        for row in ("Responses", "Random"):
            if row in r and r[row] == r[row]:
                rows.append({"table": "Table 1", "row": row, "column": col, "value": round(float(r[row]), 1)})
    return pd.DataFrame(rows, columns=["table", "row", "column", "value"])


def table2_frame(shares, *, names: dict[str, str] | None = None, setting: str = "sampling"):
    """Table 2 (class shares of sampled outputs) in the reference layout; ``names`` maps model ids to paper columns."""
    import pandas as pd

    rows = []
    sub = shares[shares["setting"] == setting] if "setting" in shares else shares
    for _, r in sub[sub["label"].isin(["A", "B", "C"])].iterrows():
        rows.append({"table": "Table 2", "row": f"CLASS {r['label']}", "column": (names or {}).get(r["model"], r["model"]),
                     "value": round(float(r["share"]), 1), "ci_low": r["ci_low"], "ci_high": r["ci_high"]})
    return pd.DataFrame(rows, columns=["table", "row", "column", "value", "ci_low", "ci_high"])


def text_values():
    """The figure values and statements the paper gives only in its text (notes §6), and its kappas."""
    from vlamb_nb import reference

    ref = reference.load("racquet")
    keep = ~ref["table"].isin(["Table 1", "Table 2", "Dataset"])
    return ref.loc[keep, ["table", "row", "column", "value", "unit", "flag"]].reset_index(drop=True)


def dataset_frame(stats: dict[str, Any]):
    """Dataset statistics in the reference layout, for comparison with the paper's numbers."""
    import pandas as pd

    rows = []
    g, b = stats.get("general"), stats.get("bias")
    if g:
        rows += [("GENERAL", "pairs", g["rows"]), ("GENERAL", "unique images", g["image_blocks"]),
                 ("GENERAL", "questions per image", round(g["questions_per_image_block"], 2)),
                 ("GENERAL", "question length mean", round(g["question_length_mean"], 1)),
                 ("GENERAL", "question length SD", round(g["question_length_sd"], 2)),
                 ("GENERAL", "colour or attire questions", round(g["color_share"], 1))]
        n = g["rows"]
        for t, col in (("person", "subject person"), ("people", "subject other people terms"),
                       ("object", "subject objects")):
            rows.append(("GENERAL", col, round(100.0 * g["subject_types"].get(t, 0) / n)))
    if b:
        rows += [("BIAS", "pairs", b["rows"]), ("BIAS", "images", b["unique_image_urls"])]
        rows += [("BIAS", f"{c} pairs", b["rows_per_category"].get(c, 0)) for c in ("gender", "ethnicity", "disability")]
    if g and b:
        rows.append(("RACQUET", "pairs", g["rows"] + b["rows"]))
    return pd.DataFrame([{"table": "Dataset", "row": r, "column": c, "value": v} for r, c, v in rows])


def notebook_data(source: str | os.PathLike | None = None, *, sample_dir: str | os.PathLike | None = None,
                  n: int = 6, seed: int = 0, profile: str = "offline", **load_options: Any) -> NotebookData:
    """Items for the notebook: the release for statistics, and a pipeline set (with images) to run models on.

    ``source`` given: both use it. The paper profile: the fetched release with its images (``vlamb-nb data fetch
    racquet``). The offline profile: statistics on the release beside the checkout when present, the pipeline
    on a generated sample. ``data`` says what the pipeline's items are.
    """
    from vlamb_nb.datahome import choose, sample_identity, tag
    from vlamb_nb.paths import sample_dir as default_sample_dir

    choice = choose("racquet", source, profile=profile)
    if choice is not None:
        if choice.images is not None:
            load_options.setdefault("images", str(choice.images))
        release = BENCHMARK.load(choice.source, **load_options)  # statistics on every question
        items = tag(release.copy(), choice.identity)  # the pipeline without the questions left out
        return NotebookData(release=release, release_kind=choice.identity.kind, pipeline=items,
                            pipeline_kind=choice.identity.kind)
    out: dict[str, Any] = {}
    try:
        out.update(release=BENCHMARK.load(None), release_kind="release")
    except NotAvailableError:
        out.update(release=None, release_kind="none")
    folder = Path(sample_dir) if sample_dir is not None else default_sample_dir("racquet", n, seed)
    sample = BENCHMARK.load(BENCHMARK.make_sample(folder, n=n, seed=seed))
    ident = sample_identity("racquet", n_items=len(sample), seed=seed)
    tag(sample, ident)
    if out["release"] is None:
        out.update(release=sample, release_kind="sample")
    return NotebookData(release=out["release"], release_kind=out["release_kind"], pipeline=sample,
                        pipeline_kind="sample")


def judge_cot(judge_model, scored, *, store_dir: str | os.PathLike | None = None, progress: bool = True,
              max_new_tokens: int | None = None, batch_size: int = 8):
    """The CoT YES/NO judge (App. G.3: does the reasoning mention several referents?) on the CoT responses;
    None when no CoT run is given."""
    cot = scored[scored["setting"] == "cot"] if "setting" in scored.columns else scored.iloc[:0]
    if not len(cot):
        return None
    store = Path(store_dir) / f"judge-{_slug(judge_model.info.model_id)}-cot.jsonl" if store_dir else None
    return BENCHMARK.judge(judge_model, cot, kind="cot", store=store, progress=progress,
                           max_new_tokens=max_new_tokens, batch_size=batch_size)


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", s)


# -- §5's control and Fig. 14 -------------------------------------------------------------------------------------
def coco_crops(folder: str | os.PathLike | None, *, profile: str = "offline", sample_dir: str | os.PathLike | None = None,
               seed: int = 0) -> dict[str, Any]:
    """The cropped MSCOCO images of §5 / Fig. 14: the folder given (the paper's 20, which are not released), else,
    offline, generated stand-ins; under the paper profile without a folder ``items`` is None and ``why`` says so."""
    from vlamb_nb.benchmarks.racquet import data as rdata

    if folder is not None:
        return {"items": rdata.coco_crop_items(folder), "kind": f"cropped MSCOCO images ({folder})", "why": ""}
    if profile != "offline" or sample_dir is None:
        return {"items": None, "kind": None,
                "why": "not run: the 20 cropped MSCOCO images of §5 and Fig. 14 are not released; give "
                       "coco_crops=FOLDER (20 crops, one male- and one female-presenting person each)"}
    path = rdata.write_coco_crop_sample(sample_dir, seed=seed)
    return {"items": rdata.coco_crop_items(path, expected=None),
            "kind": "generated stand-ins (not the paper's MSCOCO crops)", "why": ""}


def control_vs_paper(shares, *, images: str, names: dict[str, str] | None = None):
    """§5's control beside the text's values: for each published model on ``images`` ("45 BIAS images" or "20 COCO
    images") its Explicit count (or share) as a share, and our control runs' Explicit share with its interval,
    under the paper's name of the model (``names``: model id → paper name; ours otherwise by its own id)."""
    import pandas as pd

    from vlamb_nb import reference

    ref = reference.load("racquet", table="§5 control")
    ref = ref[ref["row"].str.endswith(f"({images})")]
    rows = []
    for _, r in ref.iterrows():
        unit, value = str(r["unit"]), r["value_num"]
        n = int(unit.rsplit(" ", 1)[1]) if unit.startswith("count of") else None
        paper = 100.0 * value / n if n and value == value else (value if unit.startswith("%") else None)
        rows.append({"row": r["row"].rsplit(" (", 1)[0], "column": r["column"], "paper": r["value"],
                     "paper share": None if paper is None else round(float(paper), 1), "paper unit": unit})
    ours = shares[(shares["setting"] == "control") & (shares["label"] == "A")] if len(shares) else shares
    for _, s in ours.iterrows():
        name = (names or {}).get(s["model"], s["model"])
        row = next((x for x in rows if x["row"] == name and x["column"] == "Explicit"), None)
        if row is None:
            row = {"row": name, "column": "Explicit", "paper": None, "paper share": None, "paper unit": None}
            rows.append(row)
        row.update({"ours share": round(float(s["share"]), 1), "ci_low": s["ci_low"], "ci_high": s["ci_high"],
                    "n": int(s["n"]), "images": images})
    return pd.DataFrame(rows)
