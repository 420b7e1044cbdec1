"""VAGUE notebook helpers: ``notebook_data``, running every setting (``evaluate_settings``, one store per setting), CIs and paired tests, Table B1 / Fig. B1
per data source (the example record beside a generated sample), and Table 2 beside an approximation of its subset.

The notebook only calls these; each is a thin composition of the benchmark's own steps.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import vlamb_nb.benchmarks.vague.audit as vague_audit
from vlamb_nb.benchmarks.base import NotebookData
from vlamb_nb.benchmarks.vague.benchmark import BENCHMARK
from vlamb_nb.benchmarks.vague.data import SUBSETS, dataset_statistics, human_subset_approximation, top_verbs
from vlamb_nb.benchmarks.vague.prompts import BASE_SETTINGS, SETTINGS
from vlamb_nb.benchmarks.vague.score import scored_file
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


def example_prompts(path: str | os.PathLike | None, wording: str = "paper", *, items: Any = None) -> dict[str, str]:
    """Exact text-only prompts (LM, SM with the record's caption, and free-form) for one released record, or,
    with no record (``path`` None), for the first of ``items``."""
    if path is None and items is None:
        return {}
    items = BENCHMARK.load(path) if path is not None else items
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


def setting_options(setting: str, *, bertscore: str | None = "roberta-large",
                    captions_file: str | os.PathLike | None = None, max_new_tokens: int | None = None) -> dict[str, Any]:
    """The options one VAGUE setting is evaluated with: ``sm_ext`` reads ``captions_file`` when given, else the
    dataset's own ``meta.caption`` (recorded as a deviation); BERTScore only for the free-form settings."""
    opts: dict[str, Any] = {"bertscore": bertscore if setting.endswith("_ff") else None}
    if setting.startswith("sm_ext"):
        opts["captions"] = str(captions_file) if captions_file is not None else "dataset"
    if max_new_tokens is not None:
        opts["max_new_tokens"] = max_new_tokens
    return opts


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
    b["ci_unit"] = "item (Wilson)"  # each VAGUE item is its own image and question: no shared unit to resample
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
                         "p_mcnemar": mc.p, "only_a": int(((xa == 1) & (xb == 0)).sum()),
                         "only_b": int(((xa == 0) & (xb == 1)).sum()), "test": mc.method})
    df = pd.DataFrame(rows, columns=["model", "a", "b", "n", "diff_pts", "ci_low", "ci_high", "p_bootstrap",
                                     "p_mcnemar", "only_a", "only_b", "test"])
    if len(df):
        # paired 0/1 outcomes: McNemar (exact with few discordant items) is the reported p, not the bootstrap's
        df["p_holm"] = holm(df["p_mcnemar"].fillna(1.0).to_numpy())
    return df


def paper_vs_ours(breakdown, model_id: str, *, model: Any = None, data: Any = None):
    """Paper vs ours for the evaluated model, matched by its hub id to the paper's row names: empty for a model the
    paper did not run; on a generated sample (``data``) shown but never matched
    (:func:`vlamb_nb.reference.not_comparable`)."""
    import pandas as pd

    from vlamb_nb import reference

    name = vague_audit.paper_name(model_id)
    if name not in vague_audit.PAPER_NAMES.values() and name not in vague_audit.models():
        return pd.DataFrame()  # a model the paper did not run: no row of its to set ours beside
    cells = vague_audit.ours_vs_paper(breakdown, name)
    if cells.empty:
        return cells
    return reference.compare(cells, "vague", model=model_id,
                             why_not=reference.not_comparable(model if model is not None else model_id, data,
                                                              paper_model=name))


def paper_vs_ours_finding(comparison, model_id: str, *, model: Any = None, data: Any = None) -> Any:
    """What the paper-vs-ours table can say: the cells within rounding of the paper's and inside our interval; or
    why there is nothing to set beside the paper (another model, a generated sample)."""
    from vlamb_nb import reference
    from vlamb_nb.findings import Finding, not_shown, plural

    if comparison is None or not len(comparison):
        why = reference.not_comparable(model if model is not None else model_id, data)
        return not_shown(f"{model_id} beside the paper's printed rows",
                         f"one of the paper's models ({', '.join(list(vague_audit.PAPER_NAMES)[:2])}, ...)"
                         + (f"; this run: {why}" if why else f"; {model_id} is not among them"),
                         would="each published cell of that model beside ours, with our interval")
    if comparison["match"].isna().all():
        return Finding(f"{model_id} is shown beside the paper's row but not compared: {comparison['flag'].iloc[0]}.",
                       None, n=len(comparison))
    inside = comparison.get("paper_in_ci")
    k = int(inside.fillna(False).astype(bool).sum()) if inside is not None else 0
    known = int(inside.notna().sum()) if inside is not None else 0
    m = int(comparison["match"].fillna(False).astype(bool).sum())
    return Finding(f"{m} of {plural(len(comparison), 'published cell')} equal ours within rounding; the paper's "
                   f"value lies inside our 95% interval in {k} of {known}.", k == known and known > 0,
                   value=float(k), n=known)


def score_predictions(path: str | os.PathLike, items, *, setting: str | None = None,
                      bertscore: str | None = None):
    """Scored rows from a prediction file (official result JSON or a store) against ``items``; an item without a
    prediction counts as invalid (the paper's N)."""
    return scored_file(BENCHMARK, path, items, setting=setting, bertscore=bertscore)


def notebook_data(source: str | os.PathLike | None = None, *, profile: str = "offline", n: int = 4, seed: int = 0,
                  sample_dir: str | os.PathLike | None = None, **load_options: Any) -> NotebookData:
    """The notebook's data (the same shape and signature in every paper's report): ``source`` as given; under the
    paper profile the fetched release (``vlamb-nb data fetch vague``); offline, the released data beside the
    checkout, else a generated sample. Statistics and the pipeline use the same items; ``data`` says what they are."""
    from vlamb_nb.datahome import choose, given_identity, sample_identity, tag
    from vlamb_nb.paths import sample_dir as default_sample_dir

    choice = choose("vague", source, profile=profile)
    if choice is not None:
        items = tag(BENCHMARK.load(choice.source, **load_options), choice.identity)
        kind = "released data" if choice.identity.kind == "release" else str(source)
        return NotebookData(release=items, release_kind=kind, pipeline=items, pipeline_kind=kind)
    path, kind = default_source(sample_dir or default_sample_dir("vague", n, seed), n=n, seed=seed)
    items = BENCHMARK.load(path, **load_options)
    ident = (sample_identity("vague", n_items=len(items), seed=seed) if kind.startswith("generated")
             else given_identity("vague", path, len(items)))
    tag(items, ident)
    return NotebookData(release=items, release_kind=kind, pipeline=items, pipeline_kind=kind)


def verbs_by_subset(items, k: int = 20) -> dict[str, list[tuple[str, int]]]:
    return {s: top_verbs(items, s, k) for s in SUBSETS}


# -- Table B1 / Fig. B1 from every data source at hand ------------------------------------------------------
EXAMPLE_LABEL = "the one released example record"
PAPER_B1_LABEL = "paper (Table B1)"
# stamped on figures of the example record: real data, but one item says nothing about the dataset
EXAMPLE_STAMP = "the one released example record (n=1): not the dataset's distribution"


def example_record_items():
    """The README example record as items (real data, one VCR item), or None when it is not beside the checkout."""
    path = example_record_path()
    return None if path is None else BENCHMARK.load(path)


def statistics_sources(items, description: str) -> dict[str, tuple[Any, str]]:
    """What Table B1 and Fig. B1 are computed from: label → (items, what they are).

    The loaded items always; and, when they are not the released data and do not hold it already, the one real
    record beside the checkout (the README example), so the tables show real VAGUE text next to the generated
    stand-in, each named.
    """
    n = len(items)
    if description == "released data":
        what = f"the released VAGUE data beside the checkout ({n} items)"
        label = "released data"
    elif description.startswith("generated"):
        what = (f"{description}: synthetic records in the released schema (make_sample); their statistics "
                "describe the generator, not VAGUE")
        label = "generated sample"
    else:
        what = f"{description} ({n} items)"
        label = description
    out = {label: (items, what)}
    if description != "released data":
        example = example_record_items()
        if example is not None and not set(example["id"]) <= set(items["id"]):  # not already in the data
            ex = example.iloc[0]
            out[f"{EXAMPLE_LABEL}, n={len(example)}"] = (
                example, f"real VAGUE data: the official README record {ex['id']} (VAGUE-{ex['subset']}); with "
                         "n=1 every 'average' is this record's own count, not the dataset's")
    return out


def table_b1_by_source(sources: dict[str, tuple[Any, str]], published=None):
    """Table B1 per source side by side (columns ``<subset>: <source label>``), the paper's first if given."""
    import pandas as pd

    frames = []
    if published is not None:
        paper = published.copy()
        paper.loc["Items"] = [float(vague_audit.N["VCR" if "VCR" in c else "Ego4D"]) for c in paper.columns]
        paper.columns = [f"{c}: {PAPER_B1_LABEL}" for c in paper.columns]
        frames.append(paper)
    for label, (items, _) in sources.items():
        t = dataset_statistics(items)
        t.columns = [f"{c}: {label}" for c in t.columns]
        frames.append(t)
    return pd.concat(frames, axis=1)


def verbs_by_source(sources: dict[str, tuple[Any, str]], k: int = 20) -> dict[str, dict[str, list[tuple[str, int]]]]:
    """Fig. B1's verbs per source and subset (subsets a source lacks are left out), one figure per source."""
    return {label: {s: v for s, v in verbs_by_subset(items, k).items() if v} for label, (items, _) in sources.items()}


def is_example_source(label: str) -> bool:
    return label.startswith(EXAMPLE_LABEL)


# -- Table 2: the 400-item human subset (approximated) ---------------------------------------------------------
def human_subset(items, scored=None, *, description: str = "", n: int = vague_audit.N_HUMAN,
                 seed: int = 0) -> dict[str, Any]:
    """Table 2 beside our VLM MCQ answers on :func:`~.data.human_subset_approximation` of ``items``.

    The paper's 400 ids are not released; the approximation ranks by the human ratings (direct + indirect)
    with random tie-breaks, as the paper describes. Returns ``selection`` (the chosen items), ``table``
    (Table 2's rows, then ours, each with its N) and ``notes`` (why the rows are or are not comparable).
    """
    import pandas as pd

    from vlamb_nb.benchmarks.vague.score import accuracy_pct

    notes = [f"Table 2's {n} item ids are not released: the selection takes the highest-rated items (direct + "
             f"indirect human rating), ties broken at random (seed {seed}), as the paper describes; it is not "
             "the paper's subset."]
    rated = items[["rating_direct", "rating_indirect"]].notna().all(axis=1)
    if not rated.any():
        notes.append("The items carry no human ratings (meta.rating), so the ranking is arbitrary.")
    if description.startswith("generated"):
        notes.append(f"The items are a {description}: their ratings are generated, not human.")
    if len(items) < n:
        notes.append(f"Only {len(items)} items are loaded ({description or 'the given source'}), fewer than the "
                     f"{n} the selection needs, so it returns all of them: the rows below are not a {n}-item "
                     "subset and are not comparable to Table 2. The selection needs the full release (1,677 "
                     "items with their ratings).")
    selection = human_subset_approximation(items, n=n, seed=seed)
    cols = ["Acc", "FS", "SU", "NE", "Correct"]
    paper = published_tables()["Table 2"][cols].copy()
    paper["N"] = float(vague_audit.N_HUMAN)  # the paper's N, whatever size was asked for here
    paper.insert(0, "source", "paper (Table 2)")
    rows = []
    vlm = scored[scored["setting"] == "vlm"] if scored is not None and "setting" in scored.columns else None
    if vlm is None or vlm.empty:
        notes.append("No VLM MCQ answers to score on the selection (Table 2 is the VLM setting); run setting "
                     "'vlm' or score a VLM prediction file.")
    else:
        chosen = set(selection["id"].astype(str))
        for model, g in vlm.groupby("model", sort=False) if "model" in vlm.columns else [("model", vlm)]:
            s = g[g["item_id"].astype(str).isin(chosen)]
            if len(s) < len(chosen):
                notes.append(f"{model}: {len(chosen) - len(s)} of the {len(chosen)} selected items have no VLM "
                             "answer (limit or missing predictions); the row counts the answered ones.")
            counts = {c: int((s["category"] == c).sum()) for c in ("FS", "SU", "NE", "correct")}
            rows.append({"row": f"{model} (ours, approximate subset)", "source": "ours",
                         "Acc": accuracy_pct(counts["correct"], len(s)) if len(s) else float("nan"),
                         "FS": counts["FS"], "SU": counts["SU"], "NE": counts["NE"], "Correct": counts["correct"],
                         "N": float(len(s))})
    ours = pd.DataFrame(rows, columns=["row", "source", *cols, "N"]).set_index("row")
    table = pd.concat([paper, ours]) if len(ours) else paper
    keep = [c for c in ("id", "subset", "rating_direct", "rating_indirect") if c in selection.columns]
    return {"selection": selection[keep], "table": table, "notes": notes}


def evaluate_settings(model_spec: Any, quant: str | None, items, settings: list[str], *,
                      predictions: str | os.PathLike | None = None, store_dir: str | os.PathLike | None = None,
                      limit: int | None = None, bertscore: str | None = "roberta-large",
                      max_new_tokens: int | None = None, captions_file: str | os.PathLike | None = None,
                      progress: bool = True):
    """Score a prediction file when given, else run every requested setting with ``model_spec``: a loaded model
    (a notebook loads its model once) or a spec to load with the released code's options. Each setting has
    its own store under ``store_dir`` (``Benchmark.store_path``), so a rerun resumes.

    Returns (scored, model id, runs): every setting's rows together, and each setting's scored run on its own
    (``attrs``: its deviations, and the run record its scoring wrote, which the card reads).
    """
    if predictions is not None:
        scored = score_predictions(predictions, items, bertscore=bertscore)
        return scored, str(scored["model"].iloc[0]), dict(tuple(scored.groupby("setting", sort=False)))
    if not model_spec:
        raise SettingError("give a model spec or a predictions file")
    if isinstance(model_spec, str):
        from vlamb_nb.models import ModelSpec, load_model

        spec = ModelSpec.parse(model_spec)  # read once: what it names, and the options it loads with
        model = load_model(spec, quantization=None if quant in (None, "none") else quant,
                           **official_model_options(spec))
    else:
        model = model_spec
    import pandas as pd

    runs = {}
    for s in settings:
        runs.update(BENCHMARK.run_settings(model, items, [s], store_dir=store_dir, limit=limit, progress=progress,
                                           **setting_options(s, bertscore=bertscore, captions_file=captions_file,
                                                             max_new_tokens=max_new_tokens)))
    scored = pd.concat(list(runs.values()), ignore_index=True)
    return scored, model.info.model_id, runs


def official_model_options(model_spec: Any) -> dict[str, Any]:
    """Loading options the released code uses: Qwen2.5-VL at ``max_pixels`` 1280·28·28, applied by the checkpoint's
    declared family (:mod:`vlamb_nb.models.families`, read from its config when it loads), never guessed from the
    spec's name; local weights only (an ``openai:`` server sets its own). ``model_spec``: a spec string or a
    parsed :class:`~vlamb_nb.models.spec.ModelSpec`."""
    from vlamb_nb.benchmarks.vague.benchmark import OFFICIAL_QWEN_MAX_PIXELS
    from vlamb_nb.models.spec import ModelSpec

    spec = model_spec if isinstance(model_spec, ModelSpec) else ModelSpec.parse(str(model_spec))
    if not spec.weights_local:  # a server sets its own
        return {}
    return {"family_max_pixels": {"qwen2_5_vl": OFFICIAL_QWEN_MAX_PIXELS}}


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


# -- what the sections conclude, computed from their numbers (vlamb_nb.findings) -------------------------------
#: the paper's claims about settings, as (a, b, direction of a against b): visual context helps (§5.1)
CLAIMS = (("vlm", "lm", "higher"), ("sm", "lm", "higher"))


def recomputed_finding(comparison) -> Any:
    """What the paper-vs-recomputed table shows: how many printed accuracies do not follow from the paper's own
    counts (Correct / N)."""
    from vlamb_nb.findings import Finding, plural

    bad = comparison[~comparison["match"].fillna(False).astype(bool)]
    cells = ", ".join(f"{r['table']} {r['row']} {r['column']} (printed {r['paper']:g}, counts give {r['ours']:.1f})"
                      for _, r in bad.iterrows())
    text = (f"{len(comparison) - len(bad)} of {plural(len(comparison), 'printed accuracy', 'printed accuracies')} "
            f"follow from the paper's own counts (Correct / N, half-up to one decimal)"
            + (f"; {len(bad)} do not: {cells}." if len(bad) else "; all do."))
    return Finding(text, not len(bad), value=float(len(bad)), n=len(comparison))


def setting_findings(paired, model: str) -> list[Any]:
    """The paper's claims about settings (:data:`CLAIMS`), each held against this run's paired test."""
    from vlamb_nb.findings import difference, not_shown

    out = []
    for a, b, direction in CLAIMS:
        row = paired[(paired["model"] == model) & (paired["a"] == a) & (paired["b"] == b)] if len(paired) else paired
        if not len(row):
            out.append(not_shown(f"{a.upper()} against {b.upper()}", "both settings run on the same items",
                                 "settings=all"))
            continue
        r = row.iloc[0]
        out.append(difference(f"{a.upper()}", f"{b.upper()}", r["diff_pts"], r["ci_low"], r["ci_high"],
                              what=f"accuracy ({model})", p=r["p_mcnemar"], method="paired bootstrap; McNemar p",
                              n=int(r["n"]), discordant=(int(r["only_a"]), int(r["only_b"])), claim=direction))
    return out


def interval_method(breakdown) -> str:
    """How this table's intervals were drawn, read from the table itself (its ``ci_unit``)."""
    units = sorted({str(u) for u in breakdown.get("ci_unit", []) if str(u) and str(u) != "nan"})
    return ", ".join(units) if units else "no interval"


def example_finding(sources: dict[str, tuple[Any, str]]) -> Any:
    """Whether the one real record (the README example) stands beside the loaded items in Table B1, or why not."""
    from vlamb_nb.findings import Finding, not_shown

    shown = [label for label in sources if is_example_source(label)]
    if shown:
        return Finding(f"Table B1 sets the real README example record ({shown[0]}) beside the loaded items: real "
                       "VAGUE text, but one record, so its 'averages' are its own counts.", True)
    if any(label == "released data" for label in sources):
        return Finding("Table B1 is computed on the released data.", True)
    return not_shown("real VAGUE text beside the generated sample", "the README example record "
                     "(example_record.json beside the checkout, or the fetched release)", "vlamb-nb data fetch vague",
                     would="Table B1 on real records beside the paper's")

