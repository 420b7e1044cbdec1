"""VAGUE notebook helpers: the default data source, running every setting, CIs and paired tests.

The notebook only calls these; each is a thin composition of the benchmark's own steps.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import vlamb_nb.benchmarks.vague.audit as vague_audit
from vlamb_nb.benchmarks.vague.benchmark import BENCHMARK
from vlamb_nb.benchmarks.vague.data import SUBSETS, top_verbs
from vlamb_nb.benchmarks.vague.prompts import BASE_SETTINGS, SETTINGS
from vlamb_nb.benchmarks.vague.score import predictions_frame
from vlamb_nb.errors import DataError, SettingError

# paired comparisons the paper makes (a vs b on the same items): visual cues, and CoT vs no CoT
PAIRS = (("sm", "lm"), ("vlm", "lm"), ("vlm", "sm"), ("sm_cot", "sm"), ("vlm_cot", "vlm"), ("sm_ext", "sm"))


def published_tables() -> dict[str, Any]:
    """Every stored table in its printed layout (paper numbers, never results)."""
    from vlamb_nb import reference

    ids = list(dict.fromkeys(reference.load("vague")["table"]))
    return {t: reference.table_wide("vague", t) for t in ids}


def example_record_path() -> Path | None:
    """The official README example record beside the checkout, when present."""
    from vlamb_nb.paths import shared_data_dir

    root = shared_data_dir()
    p = root / "vague" / "example_record.json" if root else None
    return p if p is not None and p.is_file() else None


def example_prompts(path: str | os.PathLike | None, wording: str = "paper") -> dict[str, str]:
    """Exact text-only prompts (LM, SM with the record's caption, and free-form) for one released record."""
    if path is None:
        return {}
    items = BENCHMARK.load(path)
    out = {}
    for s in ("lm", "sm", "lm_ff", "sm_ff", "sm_cot"):
        out[s] = BENCHMARK.requests(items.iloc[:1], s, captions="dataset", wording=wording)[0].prompt_text
    return out


def default_source(workdir: str | os.PathLike, n: int = 6, seed: int = 0) -> tuple[Path, str]:
    """The real release beside the checkout if it is there (parquet or the JSON files with images),
    otherwise a generated sample in the hub parquet format. Returns (path, description)."""
    from vlamb_nb.paths import shared_data_dir

    root = shared_data_dir()
    if root is not None:
        d = root / "vague"
        if any(d.glob("data/*.parquet")) or any(d.glob("*.parquet")) or (d / "vcr_1144_final.json").is_file():
            return d, "released data"
    return BENCHMARK.make_sample(workdir, n=n, seed=seed), f"generated sample ({n} items, seed {seed})"


def parse_settings(settings: str | list[str] | None) -> list[str]:
    """``"all"`` / ``"mcq"`` / a comma list → setting names (validated)."""
    if settings is None or settings == "all":
        return list(SETTINGS)
    if settings == "mcq":
        return list(BASE_SETTINGS)
    names = [s.strip() for s in settings.split(",")] if isinstance(settings, str) else list(settings)
    for s in names:
        BENCHMARK.check_setting(s)
    return names


def run_settings(model, items, settings: list[str], *, store: str | os.PathLike | None, limit: int | None = None,
                 bertscore: str | None = "roberta-large", captions_file: str | os.PathLike | None = None,
                 max_new_tokens: int | None = None, progress: bool = True, batch_size: int = 8):
    """Evaluate ``model`` under each setting on the same items; one scored frame for all of them.

    ``sm_ext`` uses ``captions_file`` when given, else the dataset's own ``meta.caption`` (recorded as a
    deviation). Returns (scored, deviations by setting).
    """
    import pandas as pd

    frames, devs = [], {}
    for s in settings:
        opts: dict[str, Any] = {}
        if s.startswith("sm_ext"):
            opts["captions"] = str(captions_file) if captions_file is not None else "dataset"
        if max_new_tokens is not None:
            opts["max_new_tokens"] = max_new_tokens
        sc = BENCHMARK.evaluate(model, items, s, store=store, limit=limit, progress=progress, batch_size=batch_size,
                                bertscore=bertscore if s.endswith("_ff") else None, **opts)
        frames.append(sc)
        devs[s] = sc.attrs.get("deviations", [])
    scored = pd.concat(frames, ignore_index=True)
    return scored, devs


def breakdown_with_ci(scored, *, n_resamples: int = 2000, seed: int = 0):
    """Our breakdown plus Wilson 95% CIs of the accuracy (per item, invalid counted wrong): a percentile
    bootstrap collapses to [1, 1] or [0, 0] at all-correct or all-wrong and under-covers at small n."""
    import numpy as np

    from vlamb_nb.stats import proportion_ci

    b = BENCHMARK.breakdown(scored)
    lows, highs = [], []
    for _, r in b.iterrows():
        s = scored[(scored["setting"] == r["setting"]) & (scored.get("model", r["model"]) == r["model"])]
        if r["subset"] != "All":
            s = s[s["subset"] == r["subset"]]
        if "accuracy" not in r or r["setting"].endswith("_ff") or len(s) < 1:
            lows.append(np.nan)
            highs.append(np.nan)
            continue
        res = proportion_ci(s["correct"].astype(float).to_numpy())
        lows.append(100 * res.ci_low)
        highs.append(100 * res.ci_high)
    b["ci_low"], b["ci_high"] = lows, highs
    return b


def paired_tests(scored, *, n_resamples: int = 2000, seed: int = 0):
    """Paired bootstrap (Koehn 2004) and McNemar tests between settings, per item on the same items,
    with Holm-adjusted p-values (an addition of this package; the paper reports no tests)."""
    import pandas as pd

    from vlamb_nb.stats import holm, mcnemar, paired_bootstrap

    rows = []
    for model, g in scored.groupby("model", sort=False):
        by = {s: d.set_index("item_id")["correct"] for s, d in g.groupby("setting") if s in BASE_SETTINGS}
        for a, b in PAIRS:
            if a not in by or b not in by:
                continue
            common = by[a].index.intersection(by[b].index)
            if len(common) < 2:
                continue
            xa = by[a].loc[common].astype(float).to_numpy()
            xb = by[b].loc[common].astype(float).to_numpy()
            pb = paired_bootstrap(xa, xb, n_resamples=n_resamples, seed=seed)
            mc = mcnemar(xa, xb)
            rows.append({"model": model, "a": a, "b": b, "n": len(common), "diff_pts": 100 * pb.estimate,
                         "ci_low": 100 * pb.ci_low, "ci_high": 100 * pb.ci_high, "p_bootstrap": pb.p,
                         "p_mcnemar": mc.p, "test": mc.method})
    df = pd.DataFrame(rows, columns=["model", "a", "b", "n", "diff_pts", "ci_low", "ci_high", "p_bootstrap",
                                     "p_mcnemar", "test"])
    if len(df):
        # paired 0/1 outcomes: McNemar (exact with few discordant items) is the reported p, not the bootstrap's
        df["p_holm"] = holm(df["p_mcnemar"].fillna(1.0).to_numpy())
    return df


def paper_vs_ours(breakdown, model_id: str):
    """Paper vs ours for the evaluated model (matched by its hub id to the paper's row names)."""
    from vlamb_nb import reference

    name = vague_audit.paper_name(model_id)
    cells = vague_audit.ours_vs_paper(breakdown, name)
    if cells.empty:
        return cells
    return reference.compare(cells, "vague")


def score_predictions(path: str | os.PathLike, items, *, setting: str | None = None,
                      bertscore: str | None = None):
    """Scored rows from a prediction file (official result JSON or a store) against ``items``."""
    gens = predictions_frame(path, setting=setting)
    scored, _ = BENCHMARK.score_generations(items, gens, bertscore=bertscore, label=str(path))
    return scored


def check_subsets(items) -> dict[str, int]:
    counts = {s: int((items["subset"] == s).sum()) for s in SUBSETS}
    if not sum(counts.values()):
        raise SettingError("no items")
    return counts


def resolve_source(source: str | os.PathLike | None, workdir: str | os.PathLike, *, n: int = 4,
                   seed: int = 0) -> tuple[str | Path, str]:
    """``source`` as given, or (when None) the released data beside the checkout, else a generated sample."""
    if source is not None:
        return source, str(source)
    return default_source(workdir, n=n, seed=seed)


def verbs_by_subset(items, k: int = 20) -> dict[str, list[tuple[str, int]]]:
    return {s: top_verbs(items, s, k) for s in SUBSETS}


def evaluate(model_spec: str | None, quant: str | None, items, settings: list[str], *,
             predictions: str | os.PathLike | None = None, store: str | os.PathLike | None = None,
             limit: int | None = None, bertscore: str | None = "roberta-large", max_new_tokens: int | None = None,
             captions_file: str | os.PathLike | None = None, progress: bool = True):
    """Score a prediction file when given, else load the model and run every requested setting.

    Returns (scored, model id, deviations by setting).
    """
    if predictions is not None:
        scored = score_predictions(predictions, items, bertscore=bertscore)
        return scored, str(scored["model"].iloc[0]), {}
    if not model_spec:
        raise SettingError("give a model spec or a predictions file")
    from vlamb_nb.models import load_model

    model = load_model(model_spec, quantization=None if quant in (None, "none") else quant,
                       **official_model_options(model_spec))
    scored, devs = run_settings(model, items, settings, store=store, limit=limit, bertscore=bertscore,
                                captions_file=captions_file, max_new_tokens=max_new_tokens, progress=progress)
    return scored, model.info.model_id, devs


def official_model_options(model_spec: str) -> dict[str, Any]:
    """Loading options the released code uses: Qwen2.5-VL at ``max_pixels`` 1280·28·28 (local weights only;
    an ``openai:`` server sets its own)."""
    from vlamb_nb.benchmarks.vague.benchmark import OFFICIAL_QWEN_MAX_PIXELS

    low = str(model_spec).lower()
    if low.startswith(("openai:", "replay:")):
        return {}
    if "qwen2.5-vl" in low or "qwen2_5_vl" in low:
        return {"max_pixels": OFFICIAL_QWEN_MAX_PIXELS}
    return {}


def all_deviations(devs: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Distinct deviations over all settings (each names the tables it affects)."""
    seen: dict[str, dict[str, Any]] = {}
    for lst in devs.values():
        for d in lst:
            seen.setdefault(json_key(d), d)
    return list(seen.values())


def json_key(d: dict[str, Any]) -> str:
    import json

    return json.dumps(d, sort_keys=True)


def mcq_rows(breakdown):
    return breakdown[breakdown["setting"].isin(BASE_SETTINGS)].reset_index(drop=True)


def recomputed_vs_paper(alpha: float = 0.05):
    """Tables 1, J5 and J6 accuracies recomputed from the published counts (Correct/N, Wilson CI) beside
    the printed values: the rows where they differ are the paper's own inconsistencies."""
    import pandas as pd

    from vlamb_nb import reference

    ci = vague_audit.published_with_ci(alpha)
    rows = []
    for _, r in ci[ci["subset"] != "All"].iterrows():
        cell = {"value": r["accuracy"], "ci_low": r["ci_low"], "ci_high": r["ci_high"]}
        rows.append({"table": vague_audit.J_TABLE[r["subset"]], "row": f"{r['model']} | {r['type']}",
                     "column": "Acc", **cell})
        rows.append({"table": "Table 1", "row": r["model"], "column": f"{r['subset']} {r['type']}", **cell})
    return reference.compare(pd.DataFrame(rows), "vague")


def ocr_check(model, folder: str | os.PathLike | None = None, *, max_new_tokens: int = 32):
    """Table B2: ask ``model`` the t-shirt colour of the tagged person in the three OCR test images (the
    released ``ocr_test/`` folder, beside the checkout by default); one row per image with the answer and
    whether it names the expected colour. The paper reports that every model it tested answered "red"."""
    import pandas as pd

    from vlamb_nb import runner
    from vlamb_nb.benchmarks.vague.prompts import OCR_ITEMS, OCR_QUESTION
    from vlamb_nb.images import load_image
    from vlamb_nb.models.base import IMAGE_SLOT, DecodingParams, Request, user_message
    from vlamb_nb.paths import shared_data_dir

    if folder is None:
        shared = shared_data_dir()
        if shared is None or not (shared / "vague" / "ocr_test").is_dir():
            raise DataError("the OCR test images (ocr_test/) are not beside the checkout; pass folder=")
        folder = shared / "vague" / "ocr_test"
    folder = Path(folder)
    reqs = []
    for label, name, person, _ in OCR_ITEMS:
        image = load_image(folder / name)
        msg = user_message(IMAGE_SLOT, OCR_QUESTION.format(person=person))
        reqs.append(Request(id=f"ocr-{label}::ocr", messages=[msg], images=[image],
                            params=DecodingParams(max_new_tokens=max_new_tokens), benchmark="vague", setting="ocr",
                            meta={"item_id": f"ocr-{label}"}))
    gens = runner.run(model, reqs, None, progress=False)
    rows = []
    for (label, name, person, colour), text, error in zip(OCR_ITEMS, gens["text"], gens["error"], strict=True):
        answer = "" if not isinstance(text, str) else text.strip()
        rows.append({"image": f"({label}) {name}", "person": person, "expected": colour, "answer": answer,
                     "names_expected": bool(re.search(rf"\b{colour}\b", answer, re.I)),
                     "error": error if isinstance(error, str) else None})
    return pd.DataFrame(rows)
