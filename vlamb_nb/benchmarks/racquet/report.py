"""What the notebook calls: ``notebook_data``, the CoT YES/NO judge, and the paper-shaped tables (the conditions
run and are judged through ``Benchmark.run_settings(..., judge=...)``)."""

from __future__ import annotations

import os
import re
from dataclasses import replace
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


def notebook_data(source: str | os.PathLike | None = None, *, profile: str = "offline", n: int = 6, seed: int = 0,
                  sample_dir: str | os.PathLike | None = None, **load_options: Any) -> NotebookData:
    """Items for the notebook (every paper's ``notebook_data`` has this signature): the release for statistics, and
    a pipeline set (with images) to run models on.

    ``source`` given: both use it. The paper profile: the fetched release with its images (``vlamb-nb data fetch
    racquet``). The offline profile: statistics on the release beside the checkout when present, the pipeline on a
    generated sample. ``data`` says what the pipeline's items are.
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


# -- what the sections conclude, computed from their numbers (vlamb_nb.findings) -------------------------------
#: the paper's claims about conditions, as (a, b, direction of a's Explicit share against b's, where it says so):
#: the clarification hint raises it for GPT-4o (§4.3, Fig. 4 top), CoT final answers are rarely Explicit (§4.3)
CLAIMS = (("clarify", "direct", "higher", "§4.3, Fig. 4 top (GPT-4o)"),
          ("cot", "direct", "lower", "§4.3, Fig. 4 bottom"))
FETCH = "vlamb-nb data fetch racquet"
#: the offline profile's judge: the scripted stand-in, which writes each verdict from the answer it judges
SCRIPTED_JUDGE = "the scripted stand-in (reads each answer)"


def is_scripted(model: Any) -> bool:
    """Whether ``model`` is the paper's scripted stand-in (:meth:`~vlamb_nb.benchmarks.base.Benchmark.scripted_stand_in`),
    whose answers were written per class: not any scripted backend, whose text nothing here can read."""
    from vlamb_nb.benchmarks.base import SCRIPTED_NAME
    from vlamb_nb.models.base import Backend

    info = getattr(model, "info", None)
    return getattr(info, "backend", None) is Backend.SCRIPTED and str(info.model_id).startswith(SCRIPTED_NAME)


def load_judge(cfg: Any, judge: Any, answering: Any, vlm: Any, *, base_url: str | None = None) -> Any:
    """The judge the notebook runs: the scripted stand-in answering the questions (:data:`SCRIPTED_JUDGE`), the
    model itself (``judge`` names it), or the judge named (an ``openai:`` one at ``base_url``)."""
    from vlamb_nb.errors import SettingError

    if judge == SCRIPTED_JUDGE:
        if not is_scripted(answering):
            raise SettingError("the scripted judge reads the scripted stand-in's answers only; name a judge "
                               "(judge=...) for a model's answers")
        return answering
    if str(judge) == str(cfg.model):
        return vlm
    return cfg.load_model(judge, base_url=base_url)


def data_line(data: Any) -> str:
    """What the statistics and the pipeline of this run stand on, in one line (the notebook's first output)."""
    from vlamb_nb.findings import plural

    def counts(frame: Any) -> str:
        if frame is None:
            return "nothing"
        n = frame["subset"].value_counts() if "subset" in frame.columns else {}
        return f"{plural(int(n.get('general', 0)), 'GENERAL question')} + {int(n.get('bias', 0))} BIAS"

    kinds = {"release": "the released files", "sample": "a generated sample", "none": "nothing"}
    stats_on = kinds.get(str(data["release_kind"]), str(data["release_kind"]))
    pipe_on = kinds.get(str(data["pipeline_kind"]), str(data["pipeline_kind"]))
    return (f"statistics on: {stats_on} ({counts(data['release'])}); pipeline on: {pipe_on} "
            f"({counts(data['pipeline'])})")


def dataset_comparison(stats: dict[str, Any], release: Any):
    """The dataset statistics beside the paper's; on a generated sample shown but never matched
    (:func:`vlamb_nb.reference.not_comparable`)."""
    from vlamb_nb import reference

    return reference.compare(dataset_frame(stats), "racquet", table="Dataset", tol=0.051,
                             why_not=reference.not_comparable(None, release))


def dataset_finding(comparison: Any) -> Any:
    """What the statistics table shows: how many published statistics the released files give, and which not; on
    a generated sample, that the release is needed."""
    from vlamb_nb.findings import Finding, not_shown, plural

    if comparison is None or not len(comparison) or comparison["match"].isna().all():
        return not_shown("the paper's dataset statistics (§3, App. B, §5) on the released questions",
                         "the RACQUET release (racquet_general.jsonl, racquet_bias.jsonl)", FETCH,
                         would="each statistic of the released GENERAL and BIAS questions beside the paper's; the "
                               "table above is the generated sample's, shown for its form only")
    known = comparison[comparison["match"].notna()]
    bad = known[~known["match"].astype(bool)]
    cells = "; ".join(f"{r['row']} {r['column']} (paper {r['paper']:g}, release {r['ours']:g})"
                      for _, r in bad.iterrows())
    text = (f"{len(known) - len(bad)} of {plural(len(known), 'published statistic')} match the released files"
            + (f"; {len(bad)} do not: {cells} (the audit below says why)." if len(bad) else "."))
    return Finding(text, not len(bad), value=float(len(known) - len(bad)), n=len(known))


def audit_finding(findings: Any) -> Any:
    """The audit's outcome in one sentence: how many published numbers follow from the release and the paper's own
    numbers, and each that does not."""
    from vlamb_nb.findings import Finding, plural

    bad = findings[~findings["ok"].astype(bool)]
    cells = "; ".join(f"{r['table']} {r['row']} {r['column']} (printed {r['published']}, recomputed "
                      f"{r['recomputed']}: {r['kind']})" for _, r in bad.iterrows())
    text = (f"{plural(len(findings), 'published number')} checked against the release and the paper's own "
            f"numbers: {len(bad)} do not follow" + (f": {cells}." if len(bad) else "."))
    if not findings["table"].eq("Dataset").any():
        text += f" The dataset statistics are checked when the release is at hand (`{FETCH}`)."
    return Finding(text, not len(bad), value=float(len(bad)), n=len(findings))


def published_finding() -> Any:
    """What the paper's two tables say, computed from their printed cells: each model's margin over the random
    baseline (Table 1) and the largest class of sampled answers (Table 2)."""
    from vlamb_nb import reference
    from vlamb_nb.findings import Finding

    t1 = reference.table_wide("racquet", "Table 1").astype(float)
    margins = {m: t1.loc["Responses", m] - t1.loc["Random", m] for m in t1.columns}
    above = all(v > 0 for v in margins.values())
    one = (f"Table 1: {'every' if above else 'not every'} model's single-referent answers describe the largest or "
           "centermost referent more often than a random pick ("
           + ", ".join(f"{m} +{v:.1f}" if v >= 0 else f"{m} {v:.1f}" for m, v in margins.items())
           + " points; the paper reports McNemar p < 0.001 for each).")
    t2 = reference.table_wide("racquet", "Table 2").astype(float)
    top = {m: t2[m].idxmax() for m in t2.columns}
    two = ("Table 2: the largest class of sampled answers is "
           + ", ".join(f"{c} for {m} ({t2.loc[c, m]:.1f}%)" for m, c in top.items()) + ".")
    return Finding(f"{one} {two}", above)


def labels_file_finding(tables: dict[str, Any] | None) -> Any:
    """What the labels-file section shows: the labelled responses' highest Explicit share, or what it needs."""
    from vlamb_nb.findings import Finding, not_shown, value_text

    if not tables or "class_shares" not in tables:
        return not_shown("Fig. 3/4/7-style bars of labelled predictions", "a labels file (id, model, setting, "
                         "label: A/B/C or the BIAS names)", "vlamb-nb reproduce racquet -p labels_file=PATH",
                         would="each labelled model's and condition's class shares with their intervals")
    s = tables["class_shares"]
    a = s[s["label"] == "A"].sort_values("share", ascending=False)
    if not len(a):
        return Finding("The labels file labels no GENERAL answer.", None)
    r = a.iloc[0]
    return Finding(f"{len(a)} labelled model and condition pairs; the highest Explicit share is {r['model']}'s "
                   f"({r.get('setting', '')}): "
                   f"{value_text(r['share'], r['ci_low'], r['ci_high'], method=r.get('ci_method'), n=int(r['n']), n_of='response')}.",
                   True, value=float(r["share"]), ci_low=float(r["ci_low"]), ci_high=float(r["ci_high"]),
                   n=int(r["n"]))


def judge_path(answers: Any, vlm: Any, items: Any, *, store_dir: Any, judge: Any, limit: int = 3,
               judge_max_new_tokens: int | None = None, **options: Any) -> tuple[Any, Any]:
    """The judge's path beside a model's (:func:`vlamb_nb.notebook.model_path` gave ``answers``, ``vlm``'s answers
    to the first ``limit`` GENERAL questions, stored under ``store_dir``): ``judge`` (the same checkpoint under the
    offline profile) reads each answer with the App. C prompt, text only; returns the answers with its verdict and
    the class the paper's parse read, and one computed sentence."""
    from vlamb_nb.findings import Finding

    general = items[items["subset"] == "general"] if "subset" in items.columns else items
    store = BENCHMARK.store_path(store_dir, vlm.info, "direct")  # the answers just given, read back from their store
    run = BENCHMARK.evaluate(vlm, BENCHMARK.first_items(general, limit), "direct", store=store, judge=judge,
                             judge_store=Path(store_dir) / f"judge-{_slug(judge.info.model_id)}-abc.jsonl",
                             judge_progress=False, judge_max_new_tokens=judge_max_new_tokens, progress=False,
                             **options)
    verdicts = run.set_index("id")
    answers = answers.copy()
    answers["verdict"] = [repr(str(verdicts.loc[i, "judge_text"]))[1:-1][:40] if i in verdicts.index else ""
                          for i in answers["item_id"]]
    answers["class"] = [verdicts.loc[i, "judge_label"] if i in verdicts.index else None for i in answers["item_id"]]
    read = int(run["judge_valid"].fillna(False).astype(bool).sum())
    return answers, Finding(f"As the judge (App. C prompt, text only), {judge.info.model_id} wrote {len(run)} "
                            f"verdicts; the paper's parse (the last CLASS X) read a class from {read} of them"
                            + ("." if read else ": a random checkpoint names no class, so the sections below take "
                               "the scripted stand-in's verdicts."), len(run) > 0, value=float(read), n=len(run))


def judge_summary(scored: Any, prefix: str = "judge") -> Any:
    """The judge's verdicts counted (one row: written, parsed, unparsed, failed, and each label) for the table."""
    import pandas as pd

    from vlamb_nb.scorers import judge as J

    s = J.parse_summary(scored, prefix=prefix)
    row = {"verdicts": s["n"], "parsed": s["parsed"], "unparsed": s["unparsed"],
           "generation failed": s["generation_failed"], **{f"label {k}": v for k, v in s["labels"].items()}}
    return pd.DataFrame([row])


def judge_finding(scored: Any, judge_id: str, *, prefix: str = "judge", what: str = "A/B/C judge (App. C)") -> Any:
    """How many verdicts the judge wrote and the paper's parse read, with the labels they gave."""
    from vlamb_nb.findings import Finding, plural
    from vlamb_nb.scorers import judge as J

    s = J.parse_summary(scored, prefix=prefix)
    labels = ", ".join(f"{k} {v}" for k, v in s["labels"].items()) or "none"
    text = (f"The {what}, {judge_id}, wrote {plural(s['n'], 'verdict')}; the paper's parse read "
            f"{s['parsed']} of them ({labels})")
    text += (f"; {s['unparsed']} unparsed, each counted as unlabelled in every share's denominator." if s["unparsed"]
             else "; none unparsed.")
    return Finding(text, s["parsed"] > 0, value=float(s["parsed"]), n=s["n"])


def shares_finding(shares: Any) -> Any:
    """The Explicit share of each condition with its interval, the highest named, beside the paper's printed GPT-4o
    value for direct questions (Fig. 3) as context."""
    from vlamb_nb import reference
    from vlamb_nb.findings import Finding, value_text

    a = shares[shares["label"] == "A"] if len(shares) else shares
    if not len(a):
        return Finding("No answer was labelled: no class share to read.", None)
    parts, best = [], None
    for model, g in a.groupby("model", sort=False):
        cells = [f"{r['setting']} {value_text(r['share'], r['ci_low'], r['ci_high'], n=int(r['n']), n_of='answer')}"
                 for _, r in g.iterrows()]
        top = g.loc[g["share"].idxmax()]
        best = top if best is None or top["share"] > best["share"] else best
        parts.append(f"{model}: Explicit share {'; '.join(cells)}; the highest under {top['setting']}")
    ref = reference.load("racquet")
    gpt = ref[(ref["table"] == "Fig. 3") & (ref["row"] == "GPT-4o") & (ref["column"] == "Explicit")]["value"]
    context = f" (the paper's best model on direct questions, GPT-4o: {gpt.iloc[0]}%, Fig. 3)" if len(gpt) else ""
    return Finding(". ".join(parts) + f"{context}. Intervals: {interval_method(a)}.", True,
                   value=float(best["share"]), ci_low=float(best["ci_low"]), ci_high=float(best["ci_high"]),
                   n=int(best["n"]))


def scripted_shares(runs: dict[str, Any], bias_scored: Any, model: Any) -> Any:
    """For the scripted stand-in, the other shares it was scripted with, each held against its interval (the
    declared metric's): High Risk per condition (half the answers that are not Explicit) and, where its BIAS answers
    are labelled, the Stereotypical share; None for any other model."""
    from vlamb_nb.benchmarks.racquet.judge import SCRIPTED_BIAS, SCRIPTED_ERRORS
    from vlamb_nb.findings import join, within

    if not is_scripted(model):
        return None
    chances = BENCHMARK.scripted_accuracies()
    share = SCRIPTED_ERRORS.count("high_risk") / len(SCRIPTED_ERRORS)
    todo = [(m, run, setting, 100 * (1 - chances[setting]) * share) for m in BENCHMARK.metrics
            if m.name == "High Risk share" for setting, run in runs.items() if setting in chances]
    todo += [(m, bias_scored, "BIAS", 100 * SCRIPTED_BIAS["Stereotypical"]) for m in BENCHMARK.metrics
             if m.name == "Stereotypical share" and bias_scored is not None]
    out = []
    for m, run, where, target in todo:
        sets = m.unit_sets(run, slices=False)
        if not sets:
            continue
        lo, hi, how = m.interval(sets[0])
        out.append(within(m.value_of(sets[0]), lo, hi, target, what=f"{m.name} in {where}",
                          target_name="the share scripted", method=how, n=len(sets[0].values), n_of=m.unit))
    return join(out) if out else None


def interval_method(shares: Any) -> str:
    """How a table's intervals were drawn, read from the table itself (its ``ci_method``)."""
    col = shares["ci_method"] if "ci_method" in getattr(shares, "columns", ()) else []
    how = sorted({str(m) for m in col if str(m) and str(m) != "nan"})
    return ", ".join(how) if how else "no interval"


def paired_tests(scored: Any, *, label: str = "A", n_resamples: int = 2000, seed: int = 0):
    """The conditions the paper compares (:data:`CLAIMS`), each one's share of class ``label`` against the other's
    on the same questions: a paired bootstrap over images and McNemar, Holm-adjusted (an addition; the paper
    reports no test), with the discordant questions."""
    import pandas as pd

    from vlamb_nb.stats import holm, mcnemar, paired_bootstrap

    cols = ["model", "a", "b", "n", "diff_pts", "ci_low", "ci_high", "p_bootstrap", "p_mcnemar", "only_a", "only_b",
            "test"]
    rows = []
    for model, g in scored.groupby("model", sort=False):
        once = {s: d.drop_duplicates("id").set_index("id") for s, d in g.groupby("setting")
                if s not in ("sampling", "control")}
        for a, b, *_ in CLAIMS:
            if a not in once or b not in once:
                continue
            common = once[a].index.intersection(once[b].index)
            if len(common) < 2:
                continue
            xa = once[a].loc[common, "label"].eq(label).to_numpy(float)
            xb = once[b].loc[common, "label"].eq(label).to_numpy(float)
            pb = paired_bootstrap(xa, xb, n_resamples=n_resamples, seed=seed,
                                  clusters=once[a].loc[common, "image_url"].astype(str).to_numpy())
            mc = mcnemar(xa, xb)
            rows.append({"model": model, "a": a, "b": b, "n": len(common), "diff_pts": 100 * pb.estimate,
                         "ci_low": 100 * pb.ci_low, "ci_high": 100 * pb.ci_high, "p_bootstrap": pb.p,
                         "p_mcnemar": mc.p, "only_a": int(((xa == 1) & (xb == 0)).sum()),
                         "only_b": int(((xa == 0) & (xb == 1)).sum()), "test": mc.method})
    df = pd.DataFrame(rows, columns=cols)
    if len(df):
        df["p_holm"] = holm(df["p_mcnemar"].fillna(1.0).to_numpy())
    return df


def setting_findings(paired: Any, model: str) -> list[Any]:
    """The paper's claims about conditions (:data:`CLAIMS`), each held against this run's paired test."""
    from vlamb_nb.findings import difference, not_shown

    out = []
    for a, b, direction, where in CLAIMS:
        row = paired[(paired["model"] == model) & (paired["a"] == a) & (paired["b"] == b)] if len(paired) else paired
        if not len(row):
            out.append(not_shown(f"the Explicit share of {a} against {b} ({where})",
                                 "both conditions asked on the same questions", "settings=all"))
            continue
        r = row.iloc[0]
        found = difference(a, b, r["diff_pts"], r["ci_low"], r["ci_high"], what=f"Explicit share ({model})",
                           p=r["p_mcnemar"], method="paired bootstrap over images; McNemar p", n=int(r["n"]),
                           n_of="question", claim=direction)
        out.append(replace(found, text=f"{found.text} Discordant questions: {int(r['only_a'])} Explicit only under "
                                       f"{a}, {int(r['only_b'])} only under {b} ({where})."))
    return out


def vs_paper(table: str, ours: Any, model_id: str, paper_column: str | None, *, model: Any = None,
             data: Any = None):
    """Our ``table`` ("Table 1": saliency rows; "Table 2": the sampled answers' class shares) beside the paper's
    column for the same model (``paper_column``: the user says which it is); empty without one; on a stand-in or a
    generated sample shown but never matched."""
    import pandas as pd

    from vlamb_nb import reference

    if not paper_column or ours is None or not len(ours):
        return pd.DataFrame()
    to_frame = table1_frame if table == "Table 1" else table2_frame
    frame = to_frame(ours, names={model_id: paper_column})
    if frame.empty:
        return frame
    return reference.compare(frame, "racquet", table=table, model=model_id,
                             why_not=reference.not_comparable(model if model is not None else model_id, data,
                                                              paper_model=paper_column))


def paper_vs_ours_finding(comparison: Any, table: str, model_id: str, *, model: Any = None, data: Any = None) -> Any:
    """What a paper-vs-ours table can say: the cells within rounding of the paper's and inside our interval; or why
    there is nothing to set beside the paper (no column named, another model, a generated sample)."""
    from vlamb_nb import reference
    from vlamb_nb.findings import Finding, not_shown, plural

    columns = list(reference.table_wide("racquet", table).columns)
    if comparison is None or not len(comparison):
        why = reference.not_comparable(model if model is not None else model_id, data)
        return not_shown(f"{model_id} beside the paper's {table}",
                         f"the paper's column for the same model (paper_column=, one of {', '.join(columns)})"
                         + (f"; this run: {why}" if why else ""),
                         f"vlamb-nb reproduce racquet -p model=MODEL -p paper_column='{columns[-1]}'",
                         would=f"each {table} cell of that model beside ours, with our interval")
    if comparison["match"].isna().all():
        return Finding(f"{model_id} is shown beside the paper's {table} but not compared: "
                       f"{comparison['flag'].iloc[0]}.", None, n=len(comparison))
    m = int(comparison["match"].fillna(False).astype(bool).sum())
    inside = comparison.get("paper_in_ci")
    known = int(inside.notna().sum()) if inside is not None else 0
    k = int(inside.fillna(False).astype(bool).sum()) if inside is not None else 0
    return Finding(f"{m} of {plural(len(comparison), 'published cell')} equal ours within rounding"
                   + (f"; the paper's value lies inside our 95% interval in {k} of {known}." if known else "."),
                   m == len(comparison), value=float(m), n=len(comparison))


def aggregation_finding(aggregations: Any) -> Any:
    """Table 2's Explicit share under each reading of "n samples per item" (the paper does not say which)."""
    from vlamb_nb.findings import Finding, not_shown

    if aggregations is None or not len(aggregations):
        return not_shown("Table 2 under each aggregation of sampled answers", "the sampling condition",
                         "vlamb-nb reproduce racquet -p settings=sampling")
    a = aggregations[aggregations["label"] == "A"]
    parts = []
    for model, g in a.groupby("model", sort=False):
        vals = dict(zip(g["aggregation"], g["share"], strict=True))
        spread = max(vals.values()) - min(vals.values())
        parts.append(f"{model}: Explicit " + ", ".join(f"{v:.1f}% {k.replace('_', ' ')}" for k, v in vals.items())
                     + f" (a spread of {spread:.1f} points)")
    return Finding("Table 2 depends on how samples are counted; " + "; ".join(parts) + ". The paper most likely "
                   "pools them.", True)


def subject_finding(by_subject: Any) -> Any:
    """Explicit share by subject type (App. B), with whether the intervals of the types overlap."""
    from vlamb_nb.findings import Finding, value_text

    a = by_subject[by_subject["label"] == "A"]
    if len(a) < 2:
        return Finding("Only one subject type among these questions: App. B's comparison needs several.", None)
    parts = ", ".join(f"{r['subject_type']} {value_text(r['share'], r['ci_low'], r['ci_high'], n=int(r['n']), n_of='question')}"
                      for _, r in a.iterrows())
    overlap = a["ci_low"].max() <= a["ci_high"].min()
    text = (f"Explicit share by subject type: {parts}. "
            + ("The intervals overlap: this run shows no difference by subject type"
               if overlap else "Not every interval overlaps: the subject types differ")
            + " (App. B: GPT-4o and Molmo answer Explicitly most often when the subject is 'person').")
    return Finding(text, not overlap)


def cot_gap(scored: Any, mentions: Any, *, n_resamples: int = 2000, seed: int = 0) -> Any:
    """The reasoning-answer gap (§4.3) on the same CoT answers: the share whose reasoning mentions several referents
    (the YES judge) against the share whose final answer is Explicit (the A/B/C judge), a paired test; the paper
    finds the first far larger (GPT-4o: 69% against at most 16.1%)."""
    from vlamb_nb.findings import Finding, interval, not_shown
    from vlamb_nb.stats import mcnemar, paired_bootstrap
    from vlamb_nb.stats.result import format_p

    if mentions is None or not len(mentions):
        return not_shown("the reasoning-answer gap of CoT answers (§4.3)", "the cot condition",
                         "vlamb-nb reproduce racquet -p settings=cot")
    cot = scored[scored["setting"] == "cot"].set_index("request_id")
    m = mentions.set_index("request_id")
    common = cot.index.intersection(m.index)
    yes = m.loc[common, "judge_label"].eq("YES").to_numpy(float)
    explicit = cot.loc[common, "label"].eq("A").to_numpy(float)
    if len(common) < 2:
        return Finding(f"{len(common)} CoT answer judged by both judges: too few to compare.", None)
    pb = paired_bootstrap(yes, explicit, n_resamples=n_resamples, seed=seed,
                          clusters=cot.loc[common, "image_url"].astype(str).to_numpy())
    mc = mcnemar(yes, explicit)
    lo, hi, diff = 100 * pb.ci_low, 100 * pb.ci_high, 100 * pb.estimate
    side = "larger" if lo > 0 else "smaller" if hi < 0 else None
    head = (f"Of {len(common)} CoT answers, {100 * yes.mean():.1f}% mention several referents in their reasoning "
            f"(YES judge) and {100 * explicit.mean():.1f}% give an Explicit final answer")
    how = (f"(paired bootstrap over images; McNemar p {format_p(mc.p)}; "
           f"{int(((yes == 1) & (explicit == 0)).sum())} answers notice several referents yet answer about one, "
           f"{int(((yes == 0) & (explicit == 1)).sum())} the other way round)")
    if side is None:
        text = (f"{head}: a gap of {diff:.1f} points {interval(lo, hi)}, an interval that holds zero {how}. The paper "
                "finds the reasoning notices the ambiguity far more often (§4.3); this run cannot tell.")
    else:
        text = (f"{head}: the first is {side} by {abs(diff):.1f} points {interval(lo, hi)} {how}. "
                + ("As the paper finds (§4.3)." if side == "larger" else "The paper finds the opposite (§4.3)."))
    return Finding(text, None if side is None else side == "larger", value=diff, ci_low=lo, ci_high=hi,
                   n=len(common), method="paired bootstrap over images")


def kappa_finding(kappa: Any = None) -> Any:
    """The judge's agreement with human labels, or what it needs (the paper's κ read from its reference cells)."""
    from vlamb_nb import reference
    from vlamb_nb.findings import Finding, not_shown

    ref = reference.load("racquet")
    paper = ref[(ref["table"] == "Agreement") & (ref["row"] == "A/B/C judge")
                & ref["column"].str.contains("Llama")]["value"]
    said = f"the paper's κ between humans and Llama-3-70B: {paper.iloc[0]}" if len(paper) else "the paper's κ"
    if kappa is None:
        return not_shown("the judge's agreement with human labels (Cohen's κ)", "human A/B/C labels of the same "
                         "responses (id, model, setting, label)",
                         "vlamb-nb reproduce racquet -p human_labels_file=PATH",
                         would=f"Cohen's κ with its interval beside {said}")
    est = getattr(kappa, "estimate", None)
    lo, hi = getattr(kappa, "ci_low", None), getattr(kappa, "ci_high", None)
    from vlamb_nb.findings import value_text

    return Finding(f"Cohen's κ between the judge and the human labels: {value_text(est, lo, hi, decimals=2)} "
                   f"({said}).", None, value=est, ci_low=lo, ci_high=hi)


def bias_labels(annotator: Any, predictions: Any, model: Any) -> tuple[Any, Any]:
    """The BIAS answers' labels and who gave them: the hand labels of ``annotator`` when there are any; else, for
    the scripted stand-in's answers, the labels a person would give them, read from its own words
    (:func:`.judge.scripted_bias_labels`); else none. Returns the labelled frame and a finding saying which."""
    from vlamb_nb.benchmarks.racquet.judge import scripted_bias_labels
    from vlamb_nb.findings import Finding, not_shown

    frame = annotator.frame()
    done, total = annotator.progress()
    if done:
        frame["labelled_by"] = "by hand"
        return frame, Finding(f"{done} of {total} BIAS answers labelled by hand ({annotator.path.name}).", True,
                              value=float(done), n=total)
    if is_scripted(model):
        labels = scripted_bias_labels(predictions).set_index("id")["label"]
        frame["label"] = frame["id"].map(labels)
        frame["labelled_by"] = "by the scripted stand-in, not a person"
        n = int(frame["label"].notna().sum())
        return frame, Finding(f"{n} of {total} BIAS answers labelled by the scripted stand-in (not a person): the "
                              "label a person would click for each of its answers, read from its words. Hand labels "
                              "in the widget above replace them when this cell is run again.", True, value=float(n),
                              n=total)
    return frame, not_shown("Fig. 7's shares", f"hand labels of the {total} BIAS answers (the paper labels them by "
                            "hand)", "label them in the widget above, then run this cell again",
                            would="the Explicit, Stereotypical and Anti-stereotypical shares per category")


def bias_finding(ratio: Any) -> Any:
    """Whether stereotypical answers outnumber anti-stereotypical ones (§6: they dominate for every model), from the
    ratio's interval over all categories."""
    from vlamb_nb.findings import Finding, not_shown, value_text

    if ratio is None or not len(ratio):
        return not_shown("the stereotypical : anti-stereotypical ratio", "labelled BIAS answers")
    out = []
    holds = []
    for _, r in ratio.iterrows():
        lo, hi = r["ci_low"], r["ci_high"]
        side = ("more" if lo == lo and lo > 1 else "fewer" if hi == hi and hi < 1 else None)
        what = (f"{r['model']}: {int(r['stereotypical'])} stereotypical and {int(r['anti_stereotypical'])} "
                f"anti-stereotypical answers, a ratio of {value_text(r['ratio'], lo, hi, decimals=2)}")
        if side is None:
            out.append(f"{what}, an interval that holds 1: this run cannot tell which dominates.")
        else:
            out.append(f"{what}: stereotypical answers are {side} common"
                       + (", as the paper states (§6)." if side == "more" else "; the paper states the opposite."))
        holds.append(None if side is None else side == "more")
    told = [h for h in holds if h is not None]
    return Finding(" ".join(out), all(told) if told else None)


def table1_grounder(grounder: str, scored: Any, answering: Any, *, seed: int = 0,
                    limit: int = 3) -> tuple[Any, Any, Any]:
    """The grounder Table 1 runs, and what the notebook shows of a detector's path first. For the scripted
    stand-in's answers with the offline profile's tiny detector: the tiny detector grounds the first ``limit``
    answers (its boxes as they came back, and a computed sentence: loading, the text prompt and box decoding run;
    its boxes are noise), then the scripted grounder (:class:`.referents.ScriptedGrounder`, not a detector) grounds
    Table 1. Otherwise the grounder named, with no path shown. Returns (grounder, path frame or None, finding or
    None)."""
    from vlamb_nb.benchmarks.racquet.referents import ScriptedGrounder
    from vlamb_nb.findings import Finding, plural
    from vlamb_nb.scorers.grounding import get_grounder, ground_rows

    if grounder != "tiny":
        return get_grounder(grounder), None, None
    tiny = get_grounder("tiny", box_threshold=0.0, text_threshold=0.0)
    if not is_scripted(answering):
        return tiny, None, None
    usable = scored[scored["candidate_boxes"].map(lambda b: isinstance(b, list | tuple) and len(b) > 0)
                    & scored["image"].notna()].head(limit)
    path = ground_rows(tiny, usable, progress=False)[["request_id", "response", "response_box", "ground_score"]]
    found = int(path["response_box"].notna().sum())
    return ScriptedGrounder(scored, seed=seed), path, Finding(
        f"{tiny.name} loaded and grounded {found} of {plural(len(path), 'answer')} to a box: loading, the text "
        "prompt and box decoding run. A random checkpoint's boxes are noise, so Table 1 below is grounded by the "
        "scripted grounder (not a detector), whose boxes land on the largest or centermost referent at a chance set "
        "in advance.", len(path) > 0, value=float(found), n=len(path))


def table1_recovered(per_response: Any, grounder: Any) -> Any:
    """For the scripted grounder: the share of matched boxes on a salient referent, with its Wilson interval,
    against the share it was scripted with (its chance where a question has a non-salient referent, every box where
    it has none); None for any other grounder."""
    import numpy as np

    from vlamb_nb.benchmarks.racquet.referents import ScriptedGrounder
    from vlamb_nb.findings import within
    from vlamb_nb.stats import proportion_ci

    if not isinstance(grounder, ScriptedGrounder) or per_response is None or not len(per_response):
        return None
    m = per_response[per_response["hit"].notna()]
    if len(m) < 2:
        return None
    hits = m["hit"].astype(bool).to_numpy(float)
    r = proportion_ci(hits)
    # every candidate salient (the random baseline is 1): every box hits; else the chance scripted
    target = float(np.mean([1.0 if b >= 1.0 - 1e-9 else grounder.chance for b in m["baseline"]]))
    return within(100 * hits.mean(), 100 * r.ci_low, 100 * r.ci_high, 100 * target,
                  what="the share of matched boxes on the largest or centermost referent",
                  target_name="the share scripted", method="Wilson", n=len(m), n_of="answer")


def table1_finding(table1: Any, status: dict[str, int] | None = None, *, grounder: str = "") -> Any:
    """Table 1 on this run: the hit rate against the random baseline with McNemar's p, or why nothing was scored;
    with a tiny random grounder (``grounder`` names it), that its boxes are noise."""
    from vlamb_nb.benchmarks.racquet.referents import SCRIPTED_GROUNDER
    from vlamb_nb.findings import Finding, not_shown, plural
    from vlamb_nb.stats.result import format_p

    has = table1 is not None and len(table1) and "Responses" in table1.columns
    scored = table1[table1["scored"] > 0] if has else None
    if scored is None or not len(scored):
        n = int(table1["responses"].sum()) if table1 is not None and len(table1) and "responses" in table1 else 0
        why = ", ".join(f"{k} {v}" for k, v in (status or {}).items())
        return not_shown("Table 1 on this run's answers", f"a grounder that finds the referent each answer "
                         f"describes (this run grounded {plural(n, 'answer')}, none to a candidate box"
                         + (f": {why}" if why else "") + "; the paper's lang-SAM, here Grounding DINO base)", FETCH,
                         would="the share of single-referent answers on the largest or centermost referent beside "
                               "the random baseline, with McNemar's test")
    parts, holds = [], []
    for _, r in scored.iterrows():
        diff = r["Responses"] - r["Random"]
        sig = r["mcnemar_p"] < 0.05
        parts.append(f"{r['model']}: {r['Responses']:.1f}% of {plural(int(r['scored']), 'scored answer')} on the "
                     f"largest or centermost referent against {r['Random']:.1f}% at random "
                     f"({'+' if diff >= 0 else ''}{diff:.1f} points, McNemar p {format_p(r['mcnemar_p'])}; "
                     f"discordant: {int(r['mcnemar_b'])} only the answer, {int(r['mcnemar_c'])} only the random "
                     "pick)" + (": more often than chance, as the paper finds." if sig and diff > 0 else
                                ": less often than chance; the paper finds more." if sig else
                                ": no detectable difference from chance."))
        holds.append(bool(sig and diff > 0) if sig else None)
    told = [h for h in holds if h is not None]
    if grounder.startswith(SCRIPTED_GROUNDER):
        return Finding(" ".join(parts) + " The boxes are the scripted grounder's (not a detector): this shows Table "
                       "1's matching, baseline and test working on boxes whose hit rate was set in advance.",
                       all(told) if told else None)
    if "tiny" in grounder:
        return Finding(" ".join(parts) + f" The grounder ({grounder}) is a random checkpoint: its boxes are noise, so "
                       "this shows the path (grounding, matching, the baseline, McNemar) running and measures "
                       f"nothing; the paper's grounder comes with `{FETCH}`.", None)
    return Finding(" ".join(parts), all(told) if told else None)


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
