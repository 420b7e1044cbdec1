"""V-FLUTE notebook helpers (the notebook only calls these): the data source, runs to draw, the §5.3
section, paper-vs-ours rows. The figures themselves are in :mod:`.plots`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from vlamb_nb.benchmarks.base import NotebookData
from vlamb_nb.errors import DataError

#: the generated sample the offline profile's scripted stand-in answers: enough items for an F1 interval worth
#: reading and for paired tests between settings to tell 20 points apart
SAMPLE_N = 60


def resolve_source(source: str | os.PathLike | None, *, n: int = 16, seed: int = 0, release: bool = False,
                   sample_dir: str | os.PathLike | None = None) -> tuple[Path, str]:
    """The data folder and a label: ``source`` when given; with ``release``, the released test split beside the
    checkout when present (statistics need no images); else a generated sample in the official format."""
    from vlamb_nb.benchmarks.vflute.benchmark import BENCHMARK
    from vlamb_nb.paths import shared_data_dir

    if source is not None:
        return Path(source), "given files"
    shared = shared_data_dir()
    if release and shared is not None and (shared / "vflute" / "vflute-v2-test.json").is_file():
        return shared / "vflute", "released test split (beside the checkout)"
    from vlamb_nb.paths import sample_dir as default_sample_dir

    folder = Path(sample_dir) if sample_dir is not None else default_sample_dir("vflute", n, seed)
    return BENCHMARK.make_sample(folder, n=n, seed=seed), f"generated sample (n={n}, seed={seed})"


def notebook_data(source: str | os.PathLike | None = None, *, profile: str = "offline", n: int = SAMPLE_N,
                  seed: int = 0, sample_dir: str | os.PathLike | None = None, **load_options: Any) -> NotebookData:
    """The notebook's data (the same shape and signature in every paper's report). The paper profile: statistics and
    the pipeline on ``source`` (with its images) or, when None, on the fetched test split (``vlamb-nb data fetch
    vflute``; images embedded). The offline profile: the pipeline on a generated sample of ``n`` items with images
    (a demonstration, whatever the source); statistics on ``source`` or the released test split beside the checkout
    (no images needed), else on that same sample. The folders are returned too (few-shot and prediction files);
    ``data`` says what the pipeline's items are."""
    from vlamb_nb.benchmarks.vflute.benchmark import BENCHMARK
    from vlamb_nb.datahome import choose, sample_identity, tag
    from vlamb_nb.paths import shared_data_dir

    if profile != "offline":
        choice = choose("vflute", source, profile=profile)
        assert choice is not None
        folder = Path(choice.source)
        items = tag(BENCHMARK.load(folder, **load_options), choice.identity)
        kind = "released test split (fetched)" if choice.identity.kind == "release" else "given files"
        return NotebookData(release=items, release_kind=kind, pipeline=items, pipeline_kind=kind,
                            extra={"release_folder": folder, "pipeline_folder": folder})
    demo, demo_kind = resolve_source(None, n=n, seed=seed, sample_dir=sample_dir)
    pipeline = tag(BENCHMARK.load(demo, **load_options), sample_identity("vflute", n_items=n, seed=seed))
    shared = shared_data_dir()
    if source is not None or (shared is not None and (shared / "vflute" / "vflute-v2-test.json").is_file()):
        folder, kind = resolve_source(source, release=True)
        release = BENCHMARK.load(folder, **load_options)
    else:  # nothing beside the checkout: the statistics are the sample's own
        folder, kind, release = demo, demo_kind, pipeline
    return NotebookData(release=release, release_kind=kind, pipeline=pipeline, pipeline_kind=demo_kind,
                        extra={"release_folder": folder, "pipeline_folder": demo})


def run_tables(bench, scored: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """:meth:`tables` of each scored run, keyed by run name."""
    return {name: bench.tables(s, model=name) for name, s in scored.items()}


def scored_runs(bench, runs: dict[str, Any], predictions: dict[str, str] | None, source: Any,
                scorer: Any) -> dict[str, Any]:
    """The scored ``runs`` plus each file in ``predictions`` (name -> our store JSONL or an official prediction CSV
    on ``source``), scored alike and once for every later use: how Figs. 6 and 11 are drawn "from any predictions
    available", the official repository's per-model prediction files next to a run of ours (:func:`run_tables`)."""
    from vlamb_nb.benchmarks.vflute.score import _score_file
    from vlamb_nb.errors import SettingError
    from vlamb_nb.scorers.explanation import get_scorer

    scored = dict(runs)
    if predictions:
        if not isinstance(predictions, dict):
            raise SettingError("predictions must map a run name to a prediction file")
        items = bench.load(source)
        sc = get_scorer(scorer)
        for name, path in predictions.items():
            if name in scored:
                raise SettingError(f"run name {name!r} is used twice")
            scored[name], _ = _score_file(bench, path, items, sc, None)
    return scored


def adequacy_section(scored, labels: str | os.PathLike | None, *, n_resamples: int = 1000) -> dict[str, Any] | None:
    """The notebook's §5.3 section: None without a labels file, else the report and the paper comparison."""
    from vlamb_nb.benchmarks.vflute.adequacy import adequacy_comparison, adequacy_report, read_adequacy_labels

    if labels is None:
        return None
    rep = adequacy_report(scored, read_adequacy_labels(labels), n_resamples=n_resamples)
    return {"report": rep, "comparison": adequacy_comparison(rep),
            "summary": {k: v for k, v in rep.items() if k != "curve"}}


#: the paper's rows by the model each ran (hub ids, API names; lower case) and the setting: Table 4, and Tables 17
#: and 18 for the appendix models. The fine-tuned rows' checkpoints are released only in LLaVA's original format
PAPER_ROWS: dict[str, dict[str, tuple[str, str]]] = {
    **{k: {"zero_shot": ("Table 4", "LLaVA-ZS-7B"), "scene_graph": ("Table 4", "LLaVA-ZS-7B + SG")}
       for k in ("llava-hf/llava-v1.6-mistral-7b-hf", "liuhaotian/llava-v1.6-mistral-7b")},
    **{k: {"zero_shot": ("Table 4", "LLaVA-ZS-34B"), "scene_graph": ("Table 4", "LLaVA-ZS-34B + SG")}
       for k in ("llava-hf/llava-v1.6-34b-hf", "liuhaotian/llava-v1.6-34b")},
    "salesforce/instructblip-vicuna-7b": {"zero_shot": ("Table 17", "InstructBlip-7B-ZS"),
                                          "scene_graph": ("Table 17", "InstructBlip-7B-SG")},
    "asaakyan/llava-1.5-7b-evil-vflute-lora": {"zero_shot": ("Table 4", "LLaVA-7B → eViL + VF")},
    "gpt-4-1106-vision-preview": {"zero_shot": ("Table 4", "GPT-4"), "few_shot": ("Table 4", "GPT-4 5-shot")},
    "claude-3-opus-20240229": {"zero_shot": ("Table 4", "Claude-3 Opus"),
                               "few_shot": ("Table 4", "Claude-3 Opus 5-shot")},
    "gemini-pro-vision": {"zero_shot": ("Table 4", "Gemini-1.5-Pro"), "few_shot": ("Table 4", "Gemini-1.5-Pro 5-shot")},
    "gpt-4o": {"zero_shot": ("Table 18", "GPT-4o"), "few_shot": ("Table 18", "GPT-4o 5-shot")},
}


def _paper_key(model_id: str) -> str:
    """A model's name as :data:`PAPER_ROWS` keys it: what its spec names (a served model's name, a hub id)."""
    from vlamb_nb.models.spec import ModelSpec

    text = str(model_id).strip()
    return (ModelSpec.parse(text).name if text else text).lower()


def paper_rows_of(model_id: str) -> dict[str, tuple[str, str]]:
    """The paper's rows of the model ``model_id`` ran as, by setting (empty for a model the paper did not run)."""
    return PAPER_ROWS.get(_paper_key(model_id), {})


def _table_of(row: str) -> str | None:
    from vlamb_nb import reference

    ref = reference.load("vflute")
    hit = ref[ref["row"] == row]["table"]
    return str(hit.iloc[0]) if len(hit) else None


def paper_vs_ours(runs: dict[str, Any], model: Any, *, data: Any = None, paper_row: str = "",
                  same_model: bool | None = None, n_resamples: int = 1000, seed: int = 0):
    """Our F1@0/53/60 beside the paper's row for the same model, per setting, with each value's interval: the
    rows of :data:`PAPER_ROWS` for the model that ran, or ``paper_row`` (the first setting's) when given. Another
    model's row, a generated sample (:func:`vlamb_nb.reference.not_comparable`) or a replay the user did not name a
    row for is shown beside it but never matched; F1@53/F1@60 scored by a substitute explanation scorer are never
    matched either (the thresholds are calibrated for the paper's scorer). Empty when there is no row to set beside.
    ``model``: the model that answered (a loaded model or its id); ``same_model``: whether it is the model of
    ``paper_row`` (None: decided by :data:`PAPER_ROWS`, a replay taken to be the row the user named)."""
    import pandas as pd

    from vlamb_nb import reference
    from vlamb_nb.benchmarks.vflute.score import REPORTED, f1_metric
    from vlamb_nb.models.spec import ModelSpec
    from vlamb_nb.record import value_of

    model_id = str(getattr(getattr(model, "info", None), "model_id", model))
    own = paper_rows_of(model_id)
    wanted = dict(own)
    if paper_row:
        table = _table_of(paper_row)
        if table is None:
            from vlamb_nb.errors import SettingError

            raise SettingError(f"paper_row {paper_row!r} is not a row of the paper's tables")
        wanted = {next(iter(runs)): (table, paper_row)} if runs else {}
    parts = []
    for setting, (table, row) in wanted.items():
        run = runs.get(setting)
        if run is None:
            continue
        cells = []
        for p in REPORTED:
            m = f1_metric(p)
            (u,) = m.unit_sets(run, slices=False)
            v = value_of(m, u, n_resamples=n_resamples, seed=seed)
            cells.append({"table": table, "row": row, "column": f"F1@{p}", "value": v.value, "ci_low": v.ci_low,
                          "ci_high": v.ci_high})
        ours = pd.DataFrame(cells)
        why = reference.not_comparable(model, data if data is not None else run, paper_model=row)
        spec = ModelSpec.parse(model_id) if model_id.strip() else None
        same = same_model if same_model is not None else (
            (table, row) in own.values() or (spec is not None and spec.kind == "replay"))
        if why is None and not same:
            why = f"not the same model: {model_id} is not the model of the paper's row {row}"
        label = f"{model_id} · {setting}"
        scorer = (getattr(run, "attrs", {}) or {}).get("scorer") or {}
        if why is None and (scorer.get("substitute") or scorer.get("name") == "none"):
            parts.append(reference.compare(ours.head(1), "vflute", table=table, model=label))
            parts.append(reference.compare(ours.iloc[1:], "vflute", table=table, model=label,
                                           why_not=f"not comparable: explanation scores from {scorer.get('name')}, "
                                                   "not the paper's ExplanationScore"))
        else:
            parts.append(reference.compare(ours, "vflute", table=table, model=label, why_not=why))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def paper_vs_ours_finding(comparison, model: Any, *, data: Any = None) -> Any:
    """What the paper-vs-ours rows can say: the cells equal within rounding and inside our interval; or why nothing
    is set beside the paper (another model, a generated sample, a substitute scorer)."""
    from vlamb_nb import reference
    from vlamb_nb.findings import Finding, not_shown, plural

    model_id = str(getattr(getattr(model, "info", None), "model_id", model))
    if comparison is None or not len(comparison):
        why = reference.not_comparable(model, data)
        return not_shown(f"{model_id} beside the paper's printed rows",
                         "one of the paper's models (LLaVA-1.6 7B or 34B, InstructBLIP-7B, GPT-4, GPT-4o, Claude-3 "
                         "Opus, Gemini) on the released test split"
                         + (f"; this run: {why}" if why else f"; {model_id} is not among them"),
                         would="each published F1@0/53/60 of that model beside ours, with our interval")
    known = comparison[comparison["match"].notna()]
    if not len(known):
        flags = sorted({str(f).split(";")[0] for f in comparison["flag"] if str(f)})
        rows = ", ".join(dict.fromkeys(comparison["row"].astype(str)))
        return Finding(f"{model_id}'s numbers are not compared with the paper's {rows}: {'; '.join(flags)}.", None,
                       n=len(comparison))
    m = int(known["match"].astype(bool).sum())
    inside = known["paper_in_ci"] if "paper_in_ci" in known.columns else None
    k = int(inside.fillna(False).astype(bool).sum()) if inside is not None else 0
    n_in = int(inside.notna().sum()) if inside is not None else 0
    skipped = comparison[comparison["match"].isna()]
    why = str(skipped["flag"].iloc[0]).split(";")[0] if len(skipped) else ""
    return Finding(f"{m} of {plural(len(known), 'comparable published cell')} equal ours within rounding; the "
                   f"paper's value lies inside our 95% interval in {k} of {n_in}"
                   + (f"; {len(skipped)} more shown but not compared ({why})" if len(skipped) else "") + ".",
                   k == n_in and n_in > 0, value=float(k), n=n_in)


def random_baseline_section(items) -> dict[str, Any]:
    """Table 4's random baseline: the expectation per dataset on ``items``' label mix and the published 49.82, set
    beside it only on the paper's data (on a generated sample: shown, never matched)."""
    from vlamb_nb import reference
    from vlamb_nb.benchmarks.vflute.score import random_baseline, random_baseline_comparison

    rb = random_baseline(items)
    comparison = random_baseline_comparison(rb, why_not=reference.not_comparable(data=items))
    return {"by dataset": rb.round(2), "comparison": comparison, "finding": random_baseline_finding(comparison)}


def human_eval_annotators(runs: dict[str, Any], adequacy_path: str | os.PathLike,
                          preference_path: str | os.PathLike | None = None, *, n: int | None = None,
                          seed: int = 0, annotator: str = "") -> dict[str, Any]:
    """§5's annotation on the runs that share items with the first one (runs on other data are listed in
    ``dropped``): the rows, and the adequacy/error-type and preference annotators writing to the given files.

    ``n``: items to judge (None: the paper's 95, or all shared items when fewer).
    """
    from vlamb_nb.benchmarks.vflute import human

    names = list(runs)
    first = runs[names[0]].drop_duplicates("id").set_index("id")["claim"]
    keep, dropped = {names[0]: runs[names[0]]}, []
    for name in names[1:]:
        other = runs[name].drop_duplicates("id").set_index("id")["claim"]
        common = first.index.intersection(other.index)
        same = len(common) > 0 and bool((first.loc[common] == other.loc[common]).all())
        if same:
            keep[name] = runs[name]
        else:
            dropped.append(name)
    frame = human.annotation_frame(keep, n=human.N_ITEMS if n is None else n, seed=seed)
    return {"runs": list(keep), "dropped": dropped, "frame": frame,
            "annotators": human.annotators(frame, adequacy_path, preference_path, annotator=annotator)}


def human_eval_section(adequacy: Any, preference: Any = None, *, models: list[str] | None = None,
                       paper_columns: dict[str, str] | None = None) -> dict[str, Any] | None:
    """Table 6 and Fig. 7 from label files (None while no adequacy label exists), with the paper comparison.

    ``preference`` is used once it holds labels; ``paper_columns`` maps run names to Table 6's columns.
    """
    from vlamb_nb.benchmarks.vflute import human

    if not human.has_labels(adequacy):
        return None
    pref = preference if preference is not None and human.has_labels(preference) else None
    t6 = human.table6(adequacy, pref, models=models)
    tax = human.error_taxonomy(adequacy, models=models)
    cmp = human.table6_comparison(t6, paper_columns)
    summary = {"table6": t6["counts"].round(2).to_dict("records"), "pending": t6["pending"], "split": t6["split"],
               "kappa": t6.get("kappa"), "fig7": tax["counts"].round(2).to_dict("records")}
    return {"Table 6": t6["Table 6"], "counts": t6["counts"], "comparison": cmp, "Fig. 7": tax["Fig. 7"],
            "taxonomy": tax["counts"], "summary": summary}




# -- the evaluation: settings, intervals, paired tests ------------------------------------------------------
def runnable_settings(settings: list[str], train: Any) -> tuple[list[str], list[Any]]:
    """The settings that can run, and a not-shown line for each that cannot: ``few_shot`` draws its examples from
    a training split (``train``: the folder holding ``vflute-v2-train.json``, or None)."""
    from vlamb_nb.findings import not_shown

    run, skipped = [], []
    for s in settings:
        if s == "few_shot" and not _has_train(train):
            skipped.append(not_shown("the five-shot setting", "a training split to draw its examples from "
                                     "(vflute-v2-train.json beside the test split; the fetched release is the test "
                                     "split only)", "pass source= a folder with both splits",
                                     would="F1@0/53/60 with five examples per item, and its paired test against "
                                           "zero-shot"))
        else:
            run.append(s)
    return run, skipped


def _has_train(train: Any) -> bool:
    if train is None:
        return False
    p = Path(train)
    return p.is_dir() and any((p / f"vflute-v2-train.{ext}").is_file() for ext in ("json", "csv"))


def evaluate_settings(model: Any, items, settings: list[str], *, store_dir: Any, scorer: Any, params: Any = None,
                      train: Any = None, limit: int | None = None, progress: bool = True) -> dict[str, Any]:
    """Each setting run on the same items into its own store under ``store_dir`` (a rerun resumes; None: no store)
    and scored: ``{setting: scored}``.
    ``few_shot`` draws its shots from ``train``; ``params`` None: the paper's decoding."""
    from vlamb_nb.benchmarks.vflute.benchmark import BENCHMARK

    runs = {}
    for s in settings:
        extra = {"train": train} if s == "few_shot" else {}
        if params is not None:
            extra["params"] = params
        store = BENCHMARK.store_path(store_dir, model.info, s) if store_dir is not None else None
        runs[s] = BENCHMARK.evaluate(model, items, s, store=store, limit=limit, scorer=scorer, progress=progress,
                                     **extra)
    return runs


def answers_shown(runs: dict[str, Any], n: int = 6):
    """The first answers of each setting as parsed: the reply's start, the label read and by which rule, gold,
    the explanation score and whether the item counts at F1@0 and at F1@60."""
    import pandas as pd

    rows = []
    for s, run in runs.items():
        for _, r in run.head(n).iterrows():
            label = r.get("label_pred")
            score = float(r["explanation_score"])
            right = bool(r["correct"])
            rows.append({"setting": s, "id": r["id"], "reply": _short(r.get("text")), "rule": r.get("parse_rule"),
                         "read": "unparsed" if label is None or label != label else
                         ("entailment" if int(label) == 1 else "contradiction"),
                         "gold": r["label"], "explanation score": round(score, 3),
                         "F1@0": "right" if right and score > 0 else "wrong",
                         "F1@60": "right" if right and score > 0.6 else "wrong"})
    return pd.DataFrame(rows)


def _short(text: Any, width: int = 48) -> str:
    s = " ".join(str(text if isinstance(text, str) else "").split())
    return s if len(s) <= width else s[: width - 1] + "…"


def f1_table(runs: dict[str, Any], *, n_resamples: int = 1000, seed: int = 0):
    """F1@0, F1@53 and F1@60 of each setting, one row per setting and metric, with the metric's one interval (the
    run record's, the card's and ``compare``'s rule: :meth:`~vlamb_nb.stats.metric.Metric.interval`), the unparsed
    replies and the explanation scorer that produced it."""
    import pandas as pd

    from vlamb_nb.benchmarks.vflute.score import REPORTED, f1_metric
    from vlamb_nb.record import value_of

    rows = []
    for s, run in runs.items():
        for p in REPORTED:
            m = f1_metric(p)
            (u,) = m.unit_sets(run, slices=False)
            v = value_of(m, u, n_resamples=n_resamples, seed=seed)
            rows.append({"model": str(run["model"].iloc[0]), "setting": s, "metric": f"F1@{p}", "value": v.value,
                         "ci_low": v.ci_low, "ci_high": v.ci_high, "n": len(run),
                         "unparsed": int(run["label_pred"].isna().sum()),
                         "explanation scorer": "label only" if p == 0 else scorer_name(run),
                         "interval": interval_method(run)})
    return pd.DataFrame(rows)


def f1_wide(table):
    """:func:`f1_table` as a reader compares it: a row per setting, each F1 as ``value [low, high]``."""
    from vlamb_nb.findings import value_text

    out = table.pivot_table(index=["model", "setting", "n", "unparsed"], columns="metric", values="value",
                            sort=False, aggfunc="first")
    for metric in out.columns:
        part = table[table["metric"] == metric].set_index("setting")
        out[metric] = [value_text(part.at[s, "value"], part.at[s, "ci_low"], part.at[s, "ci_high"])
                       for s in out.index.get_level_values("setting")]
    out.columns.name = None
    return out.reset_index()


def interval_method(run) -> str:
    """How an F1's interval is drawn on this run (the metric's own rule)."""
    from vlamb_nb.benchmarks.vflute.score import f1_metric

    m = f1_metric(0)
    (u,) = m.unit_sets(run, slices=False)
    how = m.interval(u, n_resamples=10)[2] if len(u.values) > 1 else ""
    return f"{how} (percentile, 1,000 resamples)" if how else "no interval (fewer than two items)"


def scorer_name(run) -> str:
    """The explanation scorer a run's numbers come from, as a reader should read it."""
    info = (getattr(run, "attrs", {}) or {}).get("scorer") or {}
    name = str(info.get("name") or (run["explanation_scorer"].iloc[0] if "explanation_scorer" in run else "?"))
    if name == "none":
        return "none (every explanation passes: F1@53 and F1@60 equal F1@0)"
    if info.get("substitute"):
        return f"{name} (offline substitute for the paper's ExplanationScore; thresholds not calibrated for it)"
    return f"{name} (the paper's ExplanationScore)" if name == "paper" else name


#: the paper's claims about settings, as (a, b, threshold percent, direction of a against b) — Table 4: the image
#: helps (VF against −Image, p < 0.002), scene graphs help the label but not the explanation (LLaVA-ZS 7B and
#: 34B), five shots help (Gemini, Claude, GPT-4)
CLAIMS = (("zero_shot", "hypothesis_only", 0, "higher"), ("scene_graph", "zero_shot", 0, "higher"),
          ("scene_graph", "zero_shot", 60, "lower"), ("few_shot", "zero_shot", 0, "higher"))


def paired_tests(runs: dict[str, Any], *, n_resamples: int = 2000, seed: int = 0):
    """Each pair of :data:`CLAIMS` whose settings both ran: the paired difference a − b of F1@t on the items both
    answered, its interval and test (:meth:`Benchmark.compare_runs`, as ``compare`` gives it) and the discordant
    items (right at that threshold in one setting only)."""
    import pandas as pd

    from vlamb_nb.benchmarks.vflute.benchmark import BENCHMARK

    rows = []
    for a, b, pct, _ in CLAIMS:
        if a not in runs or b not in runs:
            continue
        cmp = BENCHMARK.compare_runs(runs[a], runs[b])
        r = cmp[(cmp["metric"] == f"F1@{pct}") & (cmp["slice"] == "overall")].iloc[0]
        ra, rb = (_right_at(runs[x], pct) for x in (a, b))
        common = ra.index.intersection(rb.index)
        rows.append({"a": a, "b": b, "metric": f"F1@{pct}", "n": int(r["n"]), "F1 a": r["a"], "F1 b": r["b"],
                     "diff": r["diff"], "ci_low": r["ci_low"], "ci_high": r["ci_high"], "p": r["p"],
                     "test": r["test"], "only_a": int((ra[common] & ~rb[common]).sum()),
                     "only_b": int((~ra[common] & rb[common]).sum())})
    return pd.DataFrame(rows, columns=["a", "b", "metric", "n", "F1 a", "F1 b", "diff", "ci_low", "ci_high", "p",
                                       "test", "only_a", "only_b"])


def _right_at(run, pct: int):
    """Whether each item counts as right at F1@``pct`` (label right and explanation score above the threshold)."""
    right = run["correct"].astype(bool).to_numpy() & (run["explanation_score"].to_numpy(float) > pct / 100)
    import pandas as pd

    return pd.Series(right, index=run["id"].astype(str).to_numpy())


def setting_findings(paired, model: str, settings: list[str]) -> list[Any]:
    """The paper's claims about settings (:data:`CLAIMS`), each held against this run's paired test, or why it is
    not shown (a setting that did not run)."""
    from vlamb_nb.findings import difference, not_shown

    out = []
    for a, b, pct, direction in CLAIMS:
        row = paired[(paired["a"] == a) & (paired["b"] == b) & (paired["metric"] == f"F1@{pct}")] \
            if len(paired) else paired
        if not len(row):
            missing = [s for s in (a, b) if s not in settings]
            out.append(not_shown(f"F1@{pct} of {a} against {b}", f"both settings run on the same items "
                                 f"({', '.join(missing) or a + ', ' + b} did not run)", "settings=all"))
            continue
        r = row.iloc[0]
        out.append(difference(a, b, r["diff"], r["ci_low"], r["ci_high"], what=f"F1@{pct} ({model})",
                              p=r["p"], method=str(r["test"]), n=int(r["n"]),
                              discordant=(int(r["only_a"]), int(r["only_b"])), claim=direction))
    return out


def scripted_explanations_finding(runs: dict[str, Any], model: Any) -> Any:
    """For the scripted stand-in: whether its poor explanations fail the 0.6 threshold and its good ones pass under
    the scorer that ran, and F1@60 of each setting held against its design (the chance of a right label times the
    share given a good explanation); None for any other model."""
    from vlamb_nb.benchmarks.vflute.benchmark import BENCHMARK
    from vlamb_nb.benchmarks.vflute.parse import POOR_EXPLANATIONS, SCRIPTED_POOR_SHARE, SG_POOR_EXPLANATION
    from vlamb_nb.benchmarks.vflute.score import f1_metric
    from vlamb_nb.findings import Finding, join, plural, within
    from vlamb_nb.models.base import Backend

    if getattr(getattr(model, "info", None), "backend", None) is not Backend.SCRIPTED or not runs:
        return None
    chances = BENCHMARK.scripted_accuracies()
    poor_texts = {t for _, t in POOR_EXPLANATIONS} | {SG_POOR_EXPLANATION[1]}
    first = next(iter(runs.values()))
    scorer = scorer_name(first)
    out = []
    n_poor = n_rejected = n_good = n_passed = 0
    for run in runs.values():
        right = run["correct"].astype(bool)
        poor = run["text"].map(lambda t: isinstance(t, str) and t.split("\nLABEL:")[0] in poor_texts) & right
        good = right & ~poor
        n_poor += int(poor.sum())
        n_rejected += int((run.loc[poor, "explanation_score"] <= 0.6).sum())
        n_good += int(good.sum())
        n_passed += int((run.loc[good, "explanation_score"] > 0.6).sum())
    out.append(Finding(f"Under the {scorer} scorer, {n_rejected} of {plural(n_poor, 'poor explanation')} score at "
                       f"most 0.6 (rejected at F1@60) and {n_passed} of {plural(n_good, 'gold explanation')} score "
                       "above it.", n_rejected == n_poor and n_passed == n_good, value=float(n_rejected), n=n_poor))
    m = f1_metric(60)
    for s, run in runs.items():
        (u,) = m.unit_sets(run, slices=False)
        lo, hi, how = m.interval(u)
        design = 100 * chances[s] * (1 - SCRIPTED_POOR_SHARE.get(s, 0.0))
        out.append(within(m.value_of(u), lo, hi, design, what=f"F1@60 in {s}",
                          target_name="its design (right label × good explanation)", method=how.split(",")[0],
                          n=len(u.values)))
    return join(out)


# -- what the other sections conclude, computed from their numbers -------------------------------------------
def data_finding(stats: dict[str, Any], data_label: str) -> Any:
    """Whether the data's dataset counts are Table 3's test column, or why that is not shown."""
    from vlamb_nb import reference
    from vlamb_nb.benchmarks.vflute.data import DATASETS
    from vlamb_nb.findings import Finding, not_shown

    if data_label.startswith("generated"):
        return not_shown("Table 3's test column from the data", "the released test split (723 items; this is a "
                         f"{data_label})", "vlamb-nb data fetch vflute",
                         would="each dataset's count beside Table 3's, and Figs. 8-9 on real claims and explanations")
    t3 = reference.load("vflute", "Table 3")
    t3 = t3[t3["column"] == "Test"].set_index("row")["value_num"]
    ours = stats["by_dataset"]
    same = [d for d, name in DATASETS.items() if name in t3.index and ours.get(d) == t3[name]]
    differ = [f"{DATASETS[d]} ({ours.get(d, 0)} here, {int(t3[DATASETS[d]])} in Table 3)" for d in DATASETS
              if DATASETS[d] in t3.index and d not in same]
    text = (f"{len(same)} of {len(DATASETS)} dataset counts of the {data_label} equal Table 3's test column "
            f"({stats['n']} items here, {int(t3.get('Total', 0))} in the table)"
            + (f"; these differ: {', '.join(differ)}." if differ else "."))
    return Finding(text, not differ, value=float(len(same)), n=len(DATASETS))


def audit_finding(findings) -> Any:
    """The audit's outcome in one sentence, naming every published cell that does not follow."""
    from vlamb_nb.findings import Finding, plural

    bad = findings[~findings["ok"].astype(bool)]
    cells = "; ".join(f"{r['table']} {r['row']} {r['column']}" for _, r in bad.iterrows())
    return Finding(f"{plural(len(findings), 'published cell')} checked against the paper's own counts and "
                   f"arithmetic: {len(bad)} {'does' if len(bad) == 1 else 'do'} not follow"
                   + (f" ({cells}); {'it is' if len(bad) == 1 else 'each is'} listed below." if len(bad) else
                                                               "."), len(bad) == 0, value=float(len(bad)),
                   n=len(findings))


def random_baseline_finding(comparison) -> Any:
    """What the random baseline's rows show: the printed 49.82 recovered from the label mix (and by which formula),
    or why a generated sample's expectation is not compared."""
    import pandas as pd

    from vlamb_nb.findings import Finding

    r = comparison.set_index("method")
    plug, exact = r.loc["plug-in (expected counts)"], r.loc["exact expectation"]
    n = int(plug["n"])
    if plug["match"] is None or plug["match"] is pd.NA or plug["match"] != plug["match"]:
        why = str(plug.get("flag", "")).split(";")[0]
        return Finding(f"On these {n} items the uniform guesser's expected macro-F1 is {plug['ours']:.2f} (plug-in) "
                       f"and {exact['ours']:.2f} (exact); the printed 49.82 is the expectation on the released "
                       f"test split's label mix (`vlamb-nb data fetch vflute` brings it), so this is {why}.", None,
                       value=float(plug["ours"]), n=n)
    matched = [name for name, x in (("the plug-in value", plug), ("the exact expectation", exact)) if bool(x["match"])]
    text = (f"On the label mix of these {n} items the plug-in value is {plug['ours']:.2f} and the exact expectation "
            f"{exact['ours']:.2f}, against the printed {plug['paper']:.2f}: "
            + (f"{' and '.join(matched)} equal{'s' if len(matched) == 1 else ''} it within rounding."
               if matched else "neither equals it within rounding."))
    return Finding(text, bool(matched), value=float(plug["ours"]), n=n)


def drop_finding(run_tables: dict[str, dict[str, Any]]) -> Any:
    """Fig. 6's measure on the whole test set of each run (the % drop from F1@0 to F1@60), which run loses most,
    and on which dataset each loses most."""
    from vlamb_nb.findings import Finding, not_shown

    drops = {}
    for name, t in run_tables.items():
        curve = t["F1 curve"]
        overall = curve[curve["dataset"] == "overall"].set_index("pct")["f1"]
        f0, f60 = float(overall.get(0, float("nan"))), float(overall.get(60, float("nan")))
        if f0 > 0:
            by = t["Fig. 6"].dropna(subset=["drop_pct"])
            worst = by.loc[by["drop_pct"].idxmax()] if len(by) else None
            drops[name] = (100 * (f0 - f60) / f0, worst)
    if not drops:
        return not_shown("the drop from F1@0 to F1@60", "a run with a non-zero F1@0", None,
                         would="how much each run loses when its explanations must score above 0.6")
    parts = [f"{name} {d:.1f}%" + (f" (most on {w['dataset']}, {w['drop_pct']:.0f}%)" if w is not None else "")
             for name, (d, w) in drops.items()]
    most = max(drops, key=lambda k: drops[k][0])
    return Finding(f"F1 falls from threshold 0 to 0.6 by {'; '.join(parts)}. The largest drop overall is "
                   f"{most}'s.", True, value=drops[most][0], n=len(drops))


# -- the QLoRA notebook: what training, reloading and the adapter's evaluation show ---------------------------
#: Table 4's row of each fine-tuning setting of the recipe, and the base model the paper fine-tuned (LLaVA-1.5-7B)
FINETUNE_ROWS = {"full": "LLaVA-7B → VF", "hypothesis_only": "LLaVA-7B → VF − Image"}
PAPER_BASES = ("liuhaotian/llava-v1.5-7b", "llava-hf/llava-1.5-7b-hf")


def is_paper_base(base_model: Any) -> bool:
    """Whether ``base_model`` (a spec or id) is the base the paper fine-tuned: only then is the adapter's row the
    paper's fine-tuned row (trained with this package's recipe, its deviations listed)."""
    return _paper_key(str(getattr(base_model, "text", base_model))) in PAPER_BASES


def training_finding(result: Any) -> Any:
    """The loss curve in one sentence: first and last step, and whether it fell."""
    from vlamb_nb.findings import Finding, plural

    losses = [float(x) for x in result.losses]
    if len(losses) < 2:
        return Finding(f"Training ran {plural(len(losses), 'logged step')}: too few to see the loss move.", None)
    fell = losses[-1] < losses[0]
    return Finding(f"The training loss went from {losses[0]:.2f} at the first logged step to {losses[-1]:.2f} at "
                   f"step {len(losses)} ({'down' if fell else 'not down'} by {abs(losses[0] - losses[-1]):.2f}; "
                   f"learning rate {result.config.learning_rate:g}).", fell, value=losses[-1], n=len(losses))


def reload_finding(check: dict[str, Any]) -> Any:
    """Whether the saved adapter, reloaded onto a fresh base, is the model that was trained."""
    from vlamb_nb.findings import Finding

    same = check["max_abs_logit_diff"] < 1e-4 and check["same_text"] and check["same_identity"]
    return Finding(f"Reloaded onto a fresh base, the adapter's logits differ from the trained model's by at most "
                   f"{check['max_abs_logit_diff']:.2g}; its greedy text is {'the same' if check['same_text'] else 'not the same'}"
                   f" and its identity ({check['model_id']}) {'is' if check['same_identity'] else 'is not'} the "
                   "trained model's.", bool(same), value=float(check["max_abs_logit_diff"]))


def adapter_finding(scored, model: Any) -> Any:
    """What the fine-tuned adapter's evaluation shows: answers, parsed labels, F1@0 with its interval, and, for a
    tiny random base, that it measures nothing."""
    from vlamb_nb.benchmarks.vflute.score import f1_metric
    from vlamb_nb.findings import Finding, value_text
    from vlamb_nb.models.spec import ModelSpec

    model_id = str(getattr(getattr(model, "info", None), "model_id", model))
    n = len(scored)
    failed = int(scored["error"].map(lambda e: isinstance(e, str) and bool(e)).sum()) if "error" in scored else 0
    read = int(scored["label_pred"].notna().sum())
    m = f1_metric(0)
    (u,) = m.unit_sets(scored, slices=False)
    lo, hi, how = m.interval(u)
    text = (f"{model_id} answered {n - failed} of {n} test items; the official parser read a label from {read} of "
            f"{n}; F1@0 is {value_text(m.value_of(u), lo, hi, method=how.split(',')[0] or None, n=n)}.")
    if model_id.strip() and ModelSpec.parse(model_id).kind == "tiny":
        text += (" Its base is a tiny random checkpoint trained for a few steps, so its answers measure nothing: "
                 "this shows the trained adapter going through the official evaluation.")
    return Finding(text, n > failed, value=m.value_of(u), ci_low=lo, ci_high=hi, n=n)


# -- the paper's five paired-bootstrap tests (§4.3, §5.4, App. J) ------------------------------------------------
#: why a comparison cannot be run whatever runs are at hand
NOT_DERIVABLE_SYSTEMS = {
    "Human annotator 1": "the annotators' labels on the 99 items (Table 7) are not released",
    "Human annotator 2": "the annotators' labels on the 99 items (Table 7) are not released",
}


def paper_comparisons(runs: dict[str, Any], systems: dict[str, str] | None = None, *, n_resamples: int = 10000,
                      seed: int = 0):
    """The paper's five paired-bootstrap comparisons (``score.PAPER_COMPARISONS``) on the runs at hand, each beside
    the paper's p. ``runs``: ``{name: scored}``; ``systems`` maps a system the paper compares (``"LLaVA-7B → VF"``)
    to the run standing for it (a run named as the paper's system stands for itself). A comparison runs on the items
    both runs answered (Koehn's paired bootstrap of macro-F1@0, ``score.paired_bootstrap_f1``; App. J's of the
    label's macro-F1, as the paper reports it there); one whose systems are
    not at hand says which, and one that no release allows says why. Our runs are not the paper's systems: the
    ``ours`` columns name what was compared."""
    import pandas as pd

    from vlamb_nb.benchmarks.vflute.score import PAPER_COMPARISONS, paired_bootstrap_f1

    systems = dict(systems or {})
    rows = []
    for comp in PAPER_COMPARISONS:
        row = {"paper A": comp["a"], "paper B": comp["b"], "metric": comp["metric"], "paper p": comp["paper_p"]}
        blocked = [NOT_DERIVABLE_SYSTEMS[s] for s in (comp["a"], comp["b"]) if s in NOT_DERIVABLE_SYSTEMS]
        names = [systems.get(s, s if s in runs else None) for s in (comp["a"], comp["b"])]
        if blocked:
            rows.append({**row, "status": f"not derivable: {blocked[0]}"})
            continue
        if None in names or any(n not in runs for n in names):
            missing = [s for s, n in zip((comp["a"], comp["b"]), names, strict=True) if n is None or n not in runs]
            rows.append({**row, "status": f"not run: no run stands for {' and '.join(missing)}"})
            continue
        a, b = (runs[n] for n in names)
        both = a.merge(b, on="id", suffixes=("_a", "_b"))
        if (both["label_true_a"] != both["label_true_b"]).any():
            raise DataError(f"{names[0]} and {names[1]} give other gold labels for the same ids")
        label_only = comp["metric"].startswith("F1 (")  # App. J's F1 of the label: a label-only run explains nothing
        res = paired_bootstrap_f1(both["label_true_a"], both["label_pred_filled_a"], both["label_pred_filled_b"],
                                  scores_a=None if label_only else both["explanation_score_a"],
                                  scores_b=None if label_only else both["explanation_score_b"], pct=0,
                                  n_resamples=n_resamples, seed=seed)
        rows.append({**row, "status": "run", "ours A": names[0], "ours B": names[1], "n": len(both),
                     "F1@0 A - B": round(100 * res["estimate"], 2), "ci_low": round(100 * res["ci_low"], 2),
                     "ci_high": round(100 * res["ci_high"], 2), "p": res["p"],
                     "Koehn p (A not better)": res.get("extra", {}).get("koehn_p"), "resamples": n_resamples})
    return pd.DataFrame(rows)
