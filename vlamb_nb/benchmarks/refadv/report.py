"""Ref-Adv analyses the notebook calls: the official table from released predictions (with CIs and
paired tests), the offline pipeline demo (direct, CoT, BoW, fixed prompt), and failure modes; and the example
report card's rows (:func:`example_headlines`, for ``vlamb-nb card --example``).

Significance testing is a package extension: the paper reports point estimates only.
"""

from __future__ import annotations

import itertools
import math
import os
from pathlib import Path
from typing import Any

import vlamb_nb.benchmarks.refadv.score as metrics
from vlamb_nb.benchmarks.base import NotebookData
from vlamb_nb.errors import DataError

PAPER = "refadv"
#: the unit resampled by every interval: rows on one image are not independent
CLUSTER_UNIT = "image"
REPORT_NUMERIC = ["Acc@0.5", "Acc@0.75", "Acc@0.9", "2-3", "d(2-3)", "4-6", "d(4-6)", ">=7", "d(>=7)"]


def demo_source(fallback_dir: str | os.PathLike | None = None, n: int = 12, seed: int = 0) -> Path:
    """The released demo (31 real images) when present, else a generated sample in ``fallback_dir``."""
    from vlamb_nb.benchmarks.refadv.data import demo_folder, make_sample

    if (demo := demo_folder()) is not None:
        return demo
    from vlamb_nb.paths import sample_dir

    return make_sample(fallback_dir or sample_dir(PAPER, n, seed), n=n, seed=seed)


def notebook_data(source: str | os.PathLike | None = None, *, profile: str = "offline", n: int = 12, seed: int = 0,
                  sample_dir: str | os.PathLike | None = None, **load_options: Any) -> NotebookData:
    """The notebook's data (the same shape and signature in every paper's report): ``source``; under the paper
    profile the fetched Ref-Adv-s release (``vlamb-nb data fetch refadv``, all 1,142 rows); offline, the released
    demo (31 real images) when present, else a generated sample. Statistics and the pipeline use the same items;
    ``data`` says what they are."""
    from vlamb_nb.benchmarks.refadv.benchmark import BENCHMARK
    from vlamb_nb.datahome import DataIdentity, choose, sample_identity, tag

    choice = choose(PAPER, source, profile=profile)
    if choice is not None:
        items = tag(BENCHMARK.load(choice.source, **load_options), choice.identity)
        kind = choice.identity.label if choice.identity.kind == "release" else str(source)
        return NotebookData(release=items, release_kind=kind, pipeline=items, pipeline_kind=kind,
                            extra={"predictions": choice.extra.get("predictions")})
    items = BENCHMARK.load(demo_source(sample_dir, n=n, seed=seed), **load_options)
    if (items["dataset"] == "ref-adv-s-demo").all():
        kind = "released demo"
        from vlamb_nb.benchmarks.refadv.data import DEMO_RELEASE
        from vlamb_nb.benchmarks.refadv.release import RELEASED_ROWS

        ident = DataIdentity(kind="source", paper=PAPER, release=DEMO_RELEASE, n_items=RELEASED_ROWS,
                             label=f"released demo ({len(items)} of the {RELEASED_ROWS:,} Ref-Adv-s rows)")
    else:
        kind = f"generated sample (n={n}, seed={seed})"
        ident = sample_identity(PAPER, n_items=len(items), seed=seed)
    tag(items, ident)
    return NotebookData(release=items, release_kind=kind, pipeline=items, pipeline_kind=kind,
                        extra={"predictions": None})


def predictions_dir(profile: str = "offline") -> Path | None:
    """The official per-row prediction files: under the paper profile those fetched with the release (all 30
    released runs), else the ones beside the checkout (five), when present."""
    from vlamb_nb.paths import shared_data_dir

    if profile != "offline":
        from vlamb_nb.datahome import fetched
        from vlamb_nb.errors import NotAvailableError

        try:
            p = fetched(PAPER).extra.get("predictions")
        except NotAvailableError:
            p = None
        if p is not None and any(Path(p).glob("*_predictions.jsonl")):
            return Path(p)
    shared = shared_data_dir()
    p = shared / "refadv" / "predictions" if shared is not None else None
    return p if p is not None and any(p.glob("*_predictions.jsonl")) else None


#: the one line the examples (``card --example``, ``compare --example``) print without the released Ref-Adv runs
EXAMPLE_NEEDS = ("the example needs the released Ref-Adv runs: run `vlamb-nb data fetch refadv` (about 275 MB) "
                 "once, then this command again")

#: the committed example comparison's title
EXAMPLE_COMPARISON = "Released Ref-Adv-s runs (direct prompt) compared on their common rows"


def example_runs() -> list[Path]:
    """The released Ref-Adv direct runs that the example comparison (``vlamb-nb compare --example``) puts side by
    side on their common rows: every run of the fetched release (all 30), else the official per-row files beside
    the checkout."""
    from vlamb_nb.errors import NotAvailableError

    folder = predictions_dir("paper")
    if folder is None:
        raise NotAvailableError(EXAMPLE_NEEDS)
    files = sorted(folder.glob("*_direct_predictions.jsonl"))
    if len(files) < 2:
        raise NotAvailableError(f"fewer than two released Ref-Adv direct runs in {folder.name}/")
    return files


def ours_long(runs: dict[str, Any], *, n_resamples: int = 2000, seed: int = 0):
    """Our Ref-Adv-s cells in long form (``table,row,column,value,ci_low,ci_high``) for ``reference.compare``."""
    import pandas as pd

    from vlamb_nb import stats

    rows = []
    for name in sorted(runs):
        sc = runs[name]
        rep = metrics.report_row(sc, model=str(sc["model"].iloc[0]), prompt=str(sc["prompt_id"].iloc[0]))
        ious = sc["iou"].to_numpy(float)
        for col in REPORT_NUMERIC:
            lo = hi = float("nan")
            mask = None
            thr = {"Acc@0.5": 0.5, "Acc@0.75": 0.75, "Acc@0.9": 0.9}.get(col)
            if thr is not None:
                values = ious
            elif col in metrics.BINS:
                mask = sc["distractor_count"].map(lambda d, c=col: metrics.in_bin(int(d), c)).to_numpy(bool)
                values, thr = ious[mask], 0.5
            else:  # a delta column: no interval
                values = None
            if values is not None and len(values):
                images = sc["file_name"].to_numpy() if mask is None else sc["file_name"].to_numpy()[mask]
                r = stats.bootstrap_ci((values >= thr).astype(float), n_resamples=n_resamples, seed=seed,
                                       clusters=images)
                lo, hi = 100 * r.ci_low, 100 * r.ci_high
            rows.append({"table": "Ref-Adv-s", "row": metrics.row_name(sc), "column": col, "value": float(rep[col]),
                         "ci_low": lo, "ci_high": hi, "ci_unit": CLUSTER_UNIT})
    return pd.DataFrame(rows)


def official_reproduction(folder: str | os.PathLike, *, n_resamples: int = 2000) -> dict[str, Any]:
    """Rebuild the official Ref-Adv-s rows from every prediction file in ``folder``.

    Returns the ``report.py``-layout table, the per-file IoU check (recomputed vs ``first_iou``),
    and ours-vs-published with bootstrap CIs.
    """
    from vlamb_nb import reference

    runs = metrics.official_runs(folder)
    table = metrics.report(runs)
    checks = {name: metrics.check_official(sc) for name, sc in runs.items()}
    comparison = reference.compare(ours_long(runs, n_resamples=n_resamples), PAPER, table="Ref-Adv-s", tol=0.05)
    return {"runs": runs, "report": table, "checks": checks, "comparison": comparison}


def significance(runs: dict[str, Any], *, n_resamples: int = 2000, seed: int = 0):
    """Paired tests on Acc@0.5 (package extension): CoT vs direct, model vs model, Neg vs No-Neg.

    The 1,142 rows sit on 614 images, so every interval resamples whole images (cluster bootstrap). For two
    runs on the same rows the reported p is McNemar's (exact binomial when fewer than 25 rows disagree):
    a bootstrap p has no floor below 1/(B+1) and is shown only beside it. Neg vs No-Neg are disjoint
    subsets: an image-clustered bootstrap CI and a two-proportion z-test (see :func:`negation_analysis`
    for the analysis stratified by authorship). Holm correction is applied within each family.
    """
    import numpy as np
    import pandas as pd
    from statsmodels.stats.proportion import proportions_ztest

    from vlamb_nb import stats

    ordered = {name: sc.sort_values("row_idx") for name, sc in runs.items()}
    hits = {name: (sc["iou"].to_numpy(float) >= 0.5).astype(float) for name, sc in ordered.items()}
    images = {name: sc["file_name"].to_numpy() for name, sc in ordered.items()}
    rows: list[dict[str, Any]] = []

    def paired(kind: str, a: str, b: str) -> None:
        if not np.array_equal(ordered[a]["row_idx"].to_numpy(), ordered[b]["row_idx"].to_numpy()):
            raise DataError(f"{a} and {b} do not cover the same rows; a paired test needs the same items")
        pb = stats.paired_bootstrap(hits[a], hits[b], n_resamples=n_resamples, seed=seed, clusters=images[a])
        mc = stats.mcnemar(hits[a], hits[b])
        rows.append({"family": kind, "comparison": f"{a} − {b}", "diff_pp": 100 * pb.estimate,
                     "ci_low": 100 * pb.ci_low, "ci_high": 100 * pb.ci_high,
                     "p_bootstrap": max(pb.p, 1.0 / (n_resamples + 1)), "p_mcnemar": mc.p,
                     "test": "McNemar " + ("exact" if _discordant(hits[a], hits[b]) < 25 else "chi2"), "n": pb.n})

    names = sorted(runs)
    for a in names:
        if a.endswith("_cot") and a.replace("_cot", "_direct") in runs:
            paired("CoT vs direct", a, a.replace("_cot", "_direct"))
    for a, b in itertools.combinations(names, 2):
        if runs[a]["prompt_id"].iloc[0] == runs[b]["prompt_id"].iloc[0]:
            paired("model vs model", a, b)
    for name in names:
        sc = runs[name]
        neg = sc["use_negation"].to_numpy(bool)
        hit = (sc["iou"].to_numpy(float) >= 0.5).astype(float)

        def diff(idx, hit=hit, neg=neg):
            n, m = neg[idx], hit[idx]
            return m[n].mean() - m[~n].mean() if n.any() and (~n).any() else 0.0

        ci = stats.bootstrap_ci(hit, diff, n_resamples=min(n_resamples, 1000), seed=seed,
                                clusters=sc["file_name"].to_numpy())
        with np.errstate(all="ignore"):
            _, p = proportions_ztest([hit[neg].sum(), hit[~neg].sum()], [neg.sum(), (~neg).sum()])
        p = float(p) if np.isfinite(p) else 1.0  # no variance (all right or all wrong): nothing to test
        rows.append({"family": "Neg vs No-Neg", "comparison": f"{name}: Neg − No-Neg", "diff_pp": 100 * diff(np.arange(len(hit))),
                     "ci_low": 100 * ci.ci_low, "ci_high": 100 * ci.ci_high, "p_bootstrap": float("nan"),
                     "p_mcnemar": float("nan"), "p_ztest": float(p), "test": "two-proportion z",
                     "n": int(len(hit))})
    df = pd.DataFrame(rows)
    df["p"] = df["p_mcnemar"].fillna(df.get("p_ztest"))
    df["ci_unit"] = CLUSTER_UNIT
    df["p_holm"] = float("nan")
    for _, idx in df.groupby("family").groups.items():
        df.loc[idx, "p_holm"] = np.asarray(stats.holm(df.loc[idx, "p"].to_numpy(float)), dtype=float)
    return df.round(4)


def _discordant(a, b) -> int:
    import numpy as np

    return int(np.sum(np.asarray(a) != np.asarray(b)))


def negation_analysis(runs: dict[str, Any]):
    """Neg vs No-Neg on Ref-Adv-s, stratified by authorship, against the paper's full-set claim.

    The paper reports lower accuracy on negated expressions. On Ref-Adv-s negation is confounded with
    authorship (human-written expressions are both more often negated and harder), so each run gets: the raw
    accuracies, the accuracies within human- and LLM-written expressions, a Cochran–Mantel–Haenszel test of
    negation stratified by authorship, and a logistic GEE (hit ~ negation + human-authored) clustered by
    image, whose odds ratio for negation is the adjusted effect. ``direction`` says whether the run agrees
    with the paper's claim or reverses it.
    """
    import numpy as np
    import pandas as pd
    import statsmodels.api as sm
    import statsmodels.formula.api as smf
    from statsmodels.stats.contingency_tables import StratifiedTable

    rows = []
    for name in sorted(runs):
        sc = runs[name]
        df = pd.DataFrame({"hit": (sc["iou"].to_numpy(float) >= 0.5).astype(int),
                           "neg": sc["use_negation"].astype(bool).astype(int).to_numpy(),
                           "human": sc["human_authored"].astype(bool).astype(int).to_numpy(),
                           "image": sc["file_name"].astype(str).to_numpy()})
        row: dict[str, Any] = {"run": name, "n": len(df), "neg_share": 100 * df["neg"].mean()}
        for label, part in (("", df), (" human", df[df["human"] == 1]), (" LLM", df[df["human"] == 0])):
            row[f"acc_neg{label}"] = 100 * part.loc[part["neg"] == 1, "hit"].mean()
            row[f"acc_noneg{label}"] = 100 * part.loc[part["neg"] == 0, "hit"].mean()
        tables = []
        for h in (1, 0):
            part = df[df["human"] == h]
            t = np.array([[((part["neg"] == 1) & (part["hit"] == 1)).sum(), ((part["neg"] == 1) & (part["hit"] == 0)).sum()],
                          [((part["neg"] == 0) & (part["hit"] == 1)).sum(), ((part["neg"] == 0) & (part["hit"] == 0)).sum()]])
            if t.sum(axis=1).all():
                tables.append(t)
        if tables:
            st = StratifiedTable(tables)
            row["cmh_or"] = float(st.oddsratio_pooled)
            row["cmh_p"] = float(st.test_null_odds(correction=True).pvalue)
        model = smf.gee("hit ~ neg + human", groups="image", data=df, family=sm.families.Binomial()).fit()
        lo, hi = model.conf_int().loc["neg"]
        row.update(gee_or=float(np.exp(model.params["neg"])), gee_or_low=float(np.exp(lo)),
                   gee_or_high=float(np.exp(hi)), gee_p=float(model.pvalues["neg"]))
        row["direction"] = ("reverses the paper (negated higher)" if row["acc_neg"] > row["acc_noneg"]
                            else "agrees with the paper (negated lower)")
        rows.append(row)
    out = pd.DataFrame(rows)
    if len(out):
        from vlamb_nb import stats

        out["cmh_p_holm"] = np.asarray(stats.holm(out["cmh_p"].to_numpy(float)), dtype=float)
    return out.round(4)


# -- Table 4: descriptor deletion ------------------------------------------------------------------------------
DELETION_COLUMNS = ["model", "rewriter", "n", "rewritten", "Orig@0.5", "1D@0.5", "Δ", "Δ rewritten rows",
                    "hits lost", "hits gained"]


def deletion_table(orig, deleted, *, model: str = "", rewriter: str = ""):
    """Table 4 layout for one grounder: Acc@0.5 with the original vs the one-descriptor-deleted expression.

    Rows whose rewrite failed keep the original expression (never dropped), so Δ over all rows dilutes the
    effect; ``Δ rewritten rows`` is the same difference on the rows that were actually rewritten.
    """
    import numpy as np
    import pandas as pd

    a = orig.set_index("id")
    b = deleted.set_index("id")
    if set(a.index) != set(b.index) or len(a) != len(b):
        raise DataError("the original and the deletion runs must cover the same items")
    b = b.loc[a.index]
    ok = b["deletion_status"].eq("ok").to_numpy() if "deletion_status" in b.columns else np.ones(len(b), bool)
    ha, hb = a["iou"].to_numpy(float) >= 0.5, b["iou"].to_numpy(float) >= 0.5
    oa, ob = 100 * ha.mean(), 100 * hb.mean()
    dr = 100 * (hb[ok].mean() - ha[ok].mean()) if ok.any() else math.nan
    row = {"model": model, "rewriter": rewriter, "n": int(len(a)), "rewritten": int(ok.sum()),
           "Orig@0.5": round(oa, 1), "1D@0.5": round(ob, 1), "Δ": round(ob - oa, 1),
           "Δ rewritten rows": round(dr, 1) if not math.isnan(dr) else None,
           "hits lost": int((ha & ~hb).sum()), "hits gained": int((~ha & hb).sum())}
    return pd.DataFrame([row], columns=DELETION_COLUMNS)


def deletion_demo(items, *, model: Any, quantization: str | None = None, rewriter: Any = None,
                  store_dir: str | os.PathLike | None = None, max_new_tokens: int | None = None,
                  rewriter_max_new_tokens: int = 128, seed: int = 0, batch_size: int = 16,
                  progress: bool = False) -> dict[str, Any]:
    """Table 4 end to end: extract descriptors, delete one (seeded), rewrite, ground both texts, tabulate.

    ``model``/``rewriter`` are load_model specs or loaded models; the rewriter defaults to the grounding model
    (the paper used the text LLM Qwen2.5-72B with unpublished prompts). The direct run shares its store with
    the settings' runs (``Benchmark.store_path``), so a notebook pays for it once.
    """
    from vlamb_nb.benchmarks.refadv.benchmark import BENCHMARK
    from vlamb_nb.benchmarks.refadv.prompts import OFFICIAL_MAX_TOKENS
    from vlamb_nb.meta import Deviation
    from vlamb_nb.models import load_model
    from vlamb_nb.paths import run_dir

    bench = BENCHMARK
    vlm = load_model(model, quantization=quantization) if isinstance(model, str) else model
    rw = vlm if rewriter is None else (load_model(rewriter, quantization=quantization)
                                       if isinstance(rewriter, str) else rewriter)
    store_dir = Path(store_dir) if store_dir is not None else run_dir(PAPER)
    tokens = OFFICIAL_MAX_TOKENS if max_new_tokens is None else max_new_tokens
    rewritten = bench.delete_descriptors(items, rw, seed=seed,
                                         store=bench.store_path(store_dir, rw.info, "deletion-rewrites"),
                                         batch_size=batch_size, progress=progress,
                                         max_new_tokens=rewriter_max_new_tokens)
    orig = bench.evaluate(vlm, items, "direct", store=bench.store_path(store_dir, vlm.info, "direct"),
                          batch_size=batch_size, max_new_tokens=tokens, seed=seed, progress=progress)
    one = bench.evaluate(vlm, rewritten, "deletion", store=bench.store_path(store_dir, vlm.info, "deletion"),
                         batch_size=batch_size, max_new_tokens=tokens, seed=seed, progress=progress)
    deviations = list(bench.deviations(vlm.info, "deletion"))
    deviations.append(Deviation("descriptor extractor/rewriter", "Qwen2.5-72B (text LLM)",
                                f"{rw.info.model_id}, up to {rewriter_max_new_tokens} new tokens", "Table 4"))
    return {"items": rewritten, "runs": {"direct": orig, "deletion": one},
            "table": deletion_table(orig, one, model=vlm.info.model_id, rewriter=rw.info.model_id),
            "status": {str(k): int(v) for k, v in rewritten["deletion_status"].value_counts().items()},
            "deviations": deviations}



def ablation_table(runs: dict[str, Any]):
    """Acc@0.5 per setting with Δ vs direct (Tables 2-3 style), parse failures and repair turns used."""
    import pandas as pd

    base = metrics.acc_at(runs["direct"]["iou"], 0.5) if "direct" in runs else None
    rows = []
    for s, sc in runs.items():
        a = metrics.acc_at(sc["iou"], 0.5)
        rows.append({"setting": s, "n": len(sc), "Acc@0.5": round(100 * a, 1),
                     "Δ vs direct": round(100 * (a - base), 1) if base is not None else None,
                     "parse_fail": int((sc["parse_error"] != "").sum()), "repair_used": int(sc["retry_used"].sum()),
                     "mean IoU": round(float(sc["iou"].mean()), 4)})
    return pd.DataFrame(rows)


def failure_table(runs: dict[str, Any]):
    """Failure breakdown per run: hits, near misses, other misses, parse failures (and rates)."""
    import pandas as pd

    rows = []
    for name, sc in runs.items():
        fb = metrics.failure_breakdown(sc)
        rows.append({"run": name, **fb, "parse_fail_rate_pct": round(100 * fb["parse_failure"] / len(sc), 2),
                     "near_miss_share_of_misses_pct": round(100 * fb["near_miss"] / max(1, len(sc) - fb["hit"]), 2)})
    return pd.DataFrame(rows)


def slice_table(runs: dict[str, Any]):
    """Acc@0.5 per slice (Neg/No-Neg, human/LLM, COCO/OpenImages, bins) with n, one row per run."""
    import pandas as pd

    rows = []
    for name, sc in runs.items():
        s = metrics.summary(sc)
        row = {"run": name, "Acc@0.5": 100 * s["acc@0.5"], "mAcc(0.50:0.95)": 100 * s["macc"]}
        for k in ("neg", "no_neg", "human", "llm", "coco", "openimages", "2-3", "4-6", ">=7"):
            row[k] = None if s[k] is None else round(100 * s[k], 1)
            row[f"n_{k}"] = s[f"n_{k}"]
        rows.append(row)
    return pd.DataFrame(rows).round(1)


# -- the example report card ---------------------------------------------------------------------------------
EXAMPLE_RUN = "qwen25a72b_direct"


def example_headlines(*, run: str = EXAMPLE_RUN, workdir: Any = None, n_resamples: int = 2000,
                      seed: int = 0) -> tuple[list[Any], str]:
    """The committed example card's rows, from real outputs, and the card's subtitle: a released Ref-Adv run
    (``run``, Qwen2.5-VL-72B direct) rebuilt as a recording and replayed through the package's run path
    (requests → parse → repair → score) on the 31 released demo images, then placed among the other released runs
    on the same rows and the published Ref-Adv-s rows. ``vlamb-nb card --example`` makes them a card
    (:func:`vlamb_nb.report_card.one_paper`), which shows the other papers as not run."""
    from vlamb_nb.benchmarks.refadv import release
    from vlamb_nb.benchmarks.refadv import score as rscore
    from vlamb_nb.benchmarks.refadv.benchmark import BENCHMARK
    from vlamb_nb.errors import NotAvailableError
    from vlamb_nb.models import load_model
    from vlamb_nb.paths import run_dir, shared_data_dir

    pred_dir = predictions_dir("paper")  # every released run present: the fetched release's, else the checkout's
    shared = shared_data_dir()
    demo = shared / "refadv" / "demo" if shared is not None else None
    if pred_dir is None or not (pred_dir / f"{run}_predictions.jsonl").is_file():
        raise NotAvailableError(EXAMPLE_NEEDS)
    bench = BENCHMARK
    if demo is not None and (demo / "demo_samples.json").is_file():
        items, where = bench.load(demo), "demo images"
    else:  # the fetched release: the run replayed on every row it answered
        from vlamb_nb.datahome import fetched

        items, where = bench.load(fetched(PAPER).source), "rows of the fetched release"
    folder = Path(workdir) if workdir is not None else run_dir("card")
    recording = release.write_recording(pred_dir / f"{run}_predictions.jsonl", items, folder / f"{run}.replay.jsonl")
    model = load_model(f"replay:{recording}")
    scored = bench.evaluate(model, items, "direct", progress=False)
    released = {k: v for k, v in rscore.official_runs(pred_dir).items() if k != run}
    rows = bench.headline({"direct": scored}, released=released, n_resamples=n_resamples, seed=seed)
    devs = [str(d) for d in bench.deviations(model.info, "direct")] + [
        "answers: the released prediction file rebuilt as a recording and replayed (the model was not run here)",
        f"data: the {len(items)} released {where} of Ref-Adv-s's 1,142 rows"]
    for h in rows:
        h.model, h.profile, h.deviations = model.info.model_id, "paper", devs
    return rows, (f"Ref-Adv: the released {run} run replayed through the run path on the {len(items)} {where}; "
                  "the other papers were not run")


# -- what the sections conclude, computed from their numbers (vlamb_nb.findings) -------------------------------
FETCH = "vlamb-nb data fetch refadv"


def released_missing(what: str, would: str) -> Any:
    """The line a section shows when the released per-row runs are not at hand."""
    from vlamb_nb.findings import not_shown

    return not_shown(what, "the 30 released per-row runs (or predictions=PATH)", FETCH, would=would)


def official_finding(official: dict[str, Any]) -> Any:
    """How many of the official table's printed Ref-Adv-s cells the released rows give back."""
    from vlamb_nb.findings import Finding, plural

    cmp = official["comparison"]
    known = cmp[cmp["paper"].notna()]
    m = int(known["match"].fillna(False).astype(bool).sum())
    return Finding(f"The released per-row files of {plural(len(official['runs']), 'run')} give back {m} of "
                   f"{plural(len(known), 'printed cell')} of the official Ref-Adv-s table within rounding.",
                   m == len(known), value=float(m), n=len(known))


def negation_finding(negation) -> Any:
    """The paper says negation lowers accuracy; how many released runs score lower on negated expressions, raw and
    within authorship (negation is confounded with human authorship on Ref-Adv-s)."""
    from vlamb_nb.findings import count, join

    if negation is None or not len(negation):
        return released_missing("negation on Ref-Adv-s", "each run's accuracy with and without negation")
    raw = count(int((negation["acc_neg"] < negation["acc_noneg"]).sum()), len(negation), "run",
                "score lower on negated expressions", claim="negation lowers accuracy (Table 6, Neg < No-Neg)")
    adj = negation[negation["gee_or_high"].notna()]
    lower = int((adj["gee_or_high"] < 1).sum())
    higher = int((adj["gee_or_low"] > 1).sum())
    within = count(lower, len(adj), "run", f"show lower odds of a hit with negation once authorship is held fixed "
                                          f"(GEE odds-ratio interval below 1; {higher} above 1, the rest include 1)")
    return join([raw, within])


def cot_finding(runs: dict[str, Any], model: str, bench: Any, *, n_resamples: int = 2000, seed: int = 0) -> Any:
    """CoT against direct for one model on the same rows (the paper: CoT generally improves on Ref-Adv)."""
    from vlamb_nb.findings import difference, not_shown

    if "direct" not in runs or "cot" not in runs:
        return not_shown("CoT against direct", "both settings run on the same rows", "settings=['direct', 'cot']")
    pair = bench.compare_runs(runs["cot"], runs["direct"], n_resamples=n_resamples, seed=seed)
    row = pair[(pair["metric"] == "Acc@0.5") & (pair["slice"] == "overall")].iloc[0]
    return difference("CoT", "direct", row["diff"], row["ci_low"], row["ci_high"], what=f"Acc@0.5 ({model})",
                      p=row.get("p"), method=f"paired, bootstrap over {row['ci_unit']}s; {row['test']}",
                      n=int(row["n"]), n_of="row",
                      discordant=(int(row["discordant_a_only"]), int(row["discordant_b_only"])), claim="higher")


def failure_finding(failures) -> Any:
    """Which failure dominates each run's misses."""
    from vlamb_nb.findings import Finding

    parts = []
    for _, r in failures.iterrows():
        misses = {"near misses (IoU 0.1-0.5)": r["near_miss"], "other misses": r["miss"],
                  "parse failures": r["parse_failure"]}
        top = max(misses, key=misses.get)
        parts.append(f"{r['run']}: {r['hit']} hits, most misses are {top} ({misses[top]})")
    return Finding("; ".join(parts) + ".", None if not parts else True, n=len(failures))

def released_runs(profile: str = "offline", *, folder: str | os.PathLike | None = None) -> dict[str, Any] | None:
    """The released per-row runs (in ``folder``, default :func:`predictions_dir`), keyed ``"<model>::<prompt>"``
    (the hub name the rows give, and the prompt: ``direct``, ``cot``), as :mod:`vlamb_nb.noise` and the item
    analysis read them; None when none are at hand."""
    folder = predictions_dir(profile=profile) if folder is None else folder
    if folder is None:
        return None
    out = {}
    for sc in metrics.official_runs(folder).values():
        if len(sc):
            out[f"{sc['model'].iloc[0]}::{sc['prompt_id'].iloc[0]}"] = sc
    return out or None


def flagged_at_hand(analysis: Any, items: Any) -> tuple[list[str], str]:
    """The item analysis's suspect rows whose image is at hand (``items``: the records loaded here), and one line
    saying what the figure draws or why it draws nothing: a suspect row is only judged by looking at it."""
    n = len(analysis.flagged)
    if not n:
        return [], "no suspect rows: no figure"
    have = (set(items.loc[items["image"].notna(), "id"].astype(str))
            if items is not None and "image" in getattr(items, "columns", ()) else set())
    keys = [k for k in analysis.flagged["key"].astype(str) if k in have]
    if not keys:
        return [], (f"none of the {n} suspect rows' images is at hand (the {len(have)} items loaded here are other "
                    "rows): `vlamb-nb data fetch refadv` brings the release's images, and this cell then draws "
                    "them with their boxes")
    return keys, (f"{len(keys)} of the {n} suspect rows' images are at hand: the worst first, each with its gold box "
                  "(cyan) and the box of the weakest run that got it right (red)")


def flagged_items_figure(analysis: Any, runs: dict[str, Any], items, *, n: int = 6):
    """The item analysis's suspect items whose image is at hand (:func:`flagged_at_hand`), each with its gold
    box and the box of the run that got it right with the lowest ability: what makes a weak run right and strong
    runs wrong is then visible. None when no suspect item's image is at hand."""
    from vlamb_nb.benchmarks.refadv.plots import draw_predictions

    flagged = flagged_at_hand(analysis, items)[0][:n]
    if not flagged:
        return None
    order = list(analysis.models.sort_values("ability")["run"])
    rows = []
    for key in flagged:
        for name in order:
            sc = runs[name]
            hit = sc[(sc["id"].astype(str) == key) & (sc["iou"].astype(float) >= 0.5)]
            if len(hit):
                rows.append(hit.iloc[0])
                break
    if not rows:
        return None
    import pandas as pd

    return draw_predictions(pd.DataFrame(rows), items, n=n)


# -- set-of-mark prompting (Table 6's API rows) ---------------------------------------------------------------
#: the paper's rows that ran with set-of-mark prompting over Semantic-SAM proposals (Table 6, the 5k set)
SOM_ROWS = ("GPT-4o (Direct)", "GPT-4o (CoT)", "Claude-3.5 Sonnet (Direct)", "Claude-3.5 Sonnet (CoT)")


def som_table(runs: dict[str, Any], *, n_resamples: int = 1000, seed: int = 0):
    """Our set-of-mark runs (``{setting: scored}``) beside Table 6's SoM rows: Acc@0.5 (with its interval by image),
    Acc@0.75, Acc@0.9, and what the proposals allowed (the share of items whose marks hold the target at IoU >= 0.5,
    marks per item, how often the model picked the best mark). The paper's rows are on the 5,000-expression set
    with Semantic-SAM; ours name their proposals."""
    import pandas as pd

    from vlamb_nb import reference
    from vlamb_nb.benchmarks.refadv import som
    from vlamb_nb.record import metric_values

    rows = []
    for setting, sc in runs.items():
        values = {v.metric: v for v in metric_values(metrics.METRICS, sc, n_resamples=n_resamples, seed=seed)[0]
                  if v.whole}
        a50 = values["Acc@0.5"]
        rec = som.recall(sc)
        who = str(sc["model"].iloc[0]) if "model" in sc.columns and len(sc) else "ours"  # never the paper's name
        rows.append({"row": f"{who} | {setting}", "proposals": ", ".join(sorted(set(map(str, sc["proposals"])))),
                     "n": len(sc), "Acc@0.5": a50.value, "ci_low": a50.ci_low, "ci_high": a50.ci_high,
                     "Acc@0.75": values["Acc@0.75"].value, "Acc@0.9": values["Acc@0.9"].value,
                     "proposal recall @0.5": round(rec["proposal_recall"], 1),
                     "marks per item": round(rec["marks_per_item"], 2),
                     "picked the best mark %": round(rec["picked_best_mark"], 1)})
    ref = reference.load("refadv", table="Table 6")
    for name in SOM_ROWS:
        cells = ref[ref["row"] == name].set_index("column")["value_num"]
        rows.append({"row": f"paper | {name}", "proposals": "Semantic-SAM (5,000-expression set)",
                     **{k: cells.get(c) for k, c in (("Acc@0.5", "Acc0.5"), ("Acc@0.75", "Acc0.75"),
                                                     ("Acc@0.9", "Acc0.9"))}})
    return pd.DataFrame(rows)
