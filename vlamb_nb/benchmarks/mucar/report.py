"""MUCAR notebook helpers (the notebook only calls these): ``notebook_data``, ``paper_vs_ours`` (Table 2) and
``paper_vs_ours_table4``, published tables with intervals, the audit frame, and the list of
paper items the release cannot rebuild."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from vlamb_nb.benchmarks.base import NotebookData
from vlamb_nb.benchmarks.mucar.data import CATEGORY_ORDER, NAME, load_items, make_sample
from vlamb_nb.benchmarks.mucar.score import group_frame, results_long
from vlamb_nb.errors import DataError


def paper_table_with_ci(table: str, items, *, alpha: float = 0.05):
    """A published Table 2/9/12 in long form with Wilson CIs over the released denominators (an addition).

    Denominators: queries (Acc_q) and groups (Acc_p) per category in ``items``; the paper's own
    denominators differ by model (notes §3.5), so the intervals are approximate.
    """
    import pandas as pd

    from vlamb_nb import reference
    from vlamb_nb.stats import wilson_from_percent

    groups = group_frame(items.assign(correct=True))
    nq = items.groupby("category").size().to_dict()
    ng = groups.groupby("category").size().to_dict()
    six = [c for c in CATEGORY_ORDER if c != "Dual-ambiguity"]
    # a generated sample may hold no query of a category: its cells get no interval, never a KeyError
    overall_q = sum(nq.get(c, 0) for c in (six if table == "Table 12" else CATEGORY_ORDER))
    overall_g = sum(ng.get(c, 0) for c in (six if table == "Table 12" else CATEGORY_ORDER))
    rows = []
    for _, r in reference.load(NAME, table).iterrows():
        cat, metric = r["column"].rsplit(" ", 1)
        if metric not in ("Acc_p", "Acc_q") or r["value_num"] != r["value_num"]:
            continue
        n = (overall_q if metric == "Acc_q" else overall_g) if cat == "Overall" else \
            (nq if metric == "Acc_q" else ng).get(cat)
        res = wilson_from_percent(float(r["value_num"]), int(n), alpha) if n else None
        rows.append({"table": table, "row": r["row"], "column": r["column"], "value": r["value_num"], "n": n,
                     "ci_low": None if res is None else round(100 * res.ci_low, 2),
                     "ci_high": None if res is None else round(100 * res.ci_high, 2), "flag": r["flag"]})
    return pd.DataFrame(rows)


# -- notebook helpers (the notebook only calls these) -----------------------------------------------
def notebook_data(source: str | os.PathLike | None = None, images: str | os.PathLike | None = None, *,
                  sample_dir: str | os.PathLike | None = None, n: int = 4, seed: int = 0,
                  profile: str = "offline") -> NotebookData:
    """Data for the notebook: the release for statistics/audit, and the items the pipeline runs on.

    ``source`` given: both use it (with ``images``). The paper profile: the fetched release (``vlamb-nb data fetch
    mucar``), else one line naming that command. The offline profile: statistics on the release beside the
    checkout when present, the pipeline on a generated sample (same schema, generated images).
    ``data`` is what the pipeline's items are (:class:`~vlamb_nb.datahome.DataIdentity`), also in their attrs.
    """
    from vlamb_nb.datahome import choose, sample_identity, tag
    from vlamb_nb.paths import sample_dir as default_sample_dir

    choice = choose(NAME, source, profile=profile)
    if choice is not None:  # statistics on every record; the pipeline leaves out what the release cannot give
        release = load_items(choice.source, images=images if images is not None else choice.images)
        items = tag(release.copy(), choice.identity)
        return NotebookData(release=release, release_kind=choice.identity.kind, pipeline=items,
                            pipeline_kind=choice.identity.kind)
    release = None
    try:
        release = load_items(None)
    except DataError:
        pass
    folder = Path(sample_dir) if sample_dir is not None else default_sample_dir("mucar", n, seed)
    sample = load_items(make_sample(folder, n=n, seed=seed))
    ident = sample_identity(NAME, n_items=len(sample), seed=seed)
    tag(sample, ident)
    return NotebookData(release=release if release is not None else sample,
                        release_kind="release" if release is not None else "sample", pipeline=sample,
                        pipeline_kind="sample")


def constant_model(letter: str = "A"):
    """A scripted stand-in that always answers ``letter``: the image-insensitive failure, on purpose."""
    from vlamb_nb.models import ScriptedModel

    return ScriptedModel(lambda r: f"Answer: {letter}", model_id=f"constant-{letter}")


def paper_vs_ours(scored, paper_row: str, *, table: str = "Table 2a", n_resamples: int = 1000, seed: int = 0,
                  categories: list[str] | None = None):
    """``reference.compare`` of one run against one published row (paper value, ours, CI, flags, and the scorer
    that decided the run: :func:`scorer_of`)."""
    from vlamb_nb import reference

    long = results_long(scored, paper_row, table, n_resamples=n_resamples, seed=seed, categories=categories)
    cmp = reference.compare(long[["table", "row", "column", "value", "ci_low", "ci_high"]], NAME, table=table)
    cmp["scorer"] = scorer_of(scored)  # which decided each answer: the rule parser or an LLM judge
    return cmp


def paper_vs_ours_table4(runs: dict[str, Any], *, n_resamples: int = 1000, seed: int = 0):
    """Table 4's MUCAR columns: each strategy run (``full`` = Vanilla, ``full_cot``, ``full_codis``, the agent)
    against its published row via ``reference.compare``; runs of other settings are left out."""
    import pandas as pd

    from vlamb_nb import reference
    from vlamb_nb.benchmarks.mucar.prompts import TABLE4_ROWS
    from vlamb_nb.benchmarks.mucar.score import table4_long

    frames = []
    for setting, scored in runs.items():
        if setting not in TABLE4_ROWS:
            continue
        long = table4_long(scored, n_resamples=n_resamples, seed=seed)
        cmp = reference.compare(long[["table", "row", "column", "value", "ci_low", "ci_high"]], NAME, table="Table 4")
        cmp.insert(0, "setting", setting)
        cmp["n_queries"] = long["n_queries"].to_numpy()
        frames.append(cmp)
    if not frames:
        raise DataError(f"no Table 4 run among {sorted(runs)}; run one of {', '.join(TABLE4_ROWS)}")
    return pd.concat(frames, ignore_index=True)


def audit_frame(items=None):
    from vlamb_nb.benchmarks.mucar.audit import audit
    from vlamb_nb.reference import findings_frame

    return findings_frame(audit(items))


# -- which scorer: the rule parser, or the paper's LLM judge (App. B.2) ---------------------------------------------
RULE_PARSER = "rule parser (the answer's option letter)"


def scorer_of(scored) -> str:
    """What decided a run's ``correct``: the rule parser, or the judge :func:`score_with` named."""
    return str(scored.attrs.get("scorer") or RULE_PARSER)


def score_with(runs: dict[str, Any], judge: Any = None, *, store_dir: str | os.PathLike | None = None,
               progress: bool = False) -> dict[str, Any]:
    """Every run scored as the paper scored it where a judge is given: an LLM judge reads each answer against the
    gold option (:func:`.judge.run_judge`, CODIS's judge prompt: the paper's GPT-4o prompt is not released), its
    verdict is ``correct`` (no verdict counts as wrong) and the rule parser's stays beside it as
    ``parser_correct``. Without a judge (the offline profile) each run keeps the rule parser's reading. Each
    frame's ``attrs["scorer"]`` says which decided it, and every table built from it says so."""
    from vlamb_nb.benchmarks.mucar.judge import run_judge

    out = {}
    for setting, scored in runs.items():
        if judge is None:
            frame = scored.copy()
            frame.attrs.update(scored.attrs, scorer=RULE_PARSER)
        else:
            store = None if store_dir is None else Path(store_dir) / f"mucar-judge__{setting}.jsonl"
            judged = run_judge(judge, scored, store=store, progress=progress)
            frame = judged.assign(parser_correct=judged["correct"].astype(bool),
                                  correct=judged["judge_correct"].eq(1.0))
            frame.attrs.update(scored.attrs, scorer=f"LLM judge {judge.info.model_id} (CODIS judge prompt)",
                               no_verdict=int(judged["judge_correct"].isna().sum()))
        out[setting] = frame
    return out


def scorer_table(runs: dict[str, Any]):
    """Per run: the scorer that decided it, its queries, verdicts missing, and (judged runs) the judge's agreement
    with the rule parser (percent, as Table 7 reports agreement, and Cohen's kappa)."""
    import pandas as pd

    from vlamb_nb.benchmarks.mucar.judge import agreement

    rows = []
    for setting, scored in runs.items():
        row = {"setting": setting, "scorer": scorer_of(scored), "queries": len(scored),
               "no_verdict": scored.attrs.get("no_verdict")}
        if "parser_correct" in scored.columns:
            agree = agreement(scored["judge_correct"], scored["parser_correct"].astype(float))
            row.update(agreement_with_parser_pct=agree["percent_agreement"], cohen_kappa=agree["cohen_kappa"])
        rows.append(row)
    return pd.DataFrame(rows)


# -- the input and prompt-language ablations beside Table 3, Table 12 and Fig. 4's text values -------------------
#: where each ablation's published numbers are: (table, row pattern; ``{row}`` is the paper's model name)
ABLATION_ROWS = {
    "full": (("Table 3", "{row} (w/)"), ("Fig. 4 (text)", "{row} | (C,Q,I)")),
    "q_i": (("Table 3", "{row} (w/o)"),),
    "c_i": (("Fig. 4 (text)", "{row} | (C,I)"),),
    "c_q": (("Fig. 4 (text)", "{row} | (C,Q)"),),
    "full_zh": (("Table 12", "In Chinese, without confusing options | {row}"),),
    "full_ms": (("Table 12", "In Malay, without confusing options | {row}"),),
}
#: the paper's option setting where it differs from the release's (two original options per query)
WITH_CONFUSING = {"Table 3": "paper: with confusing options (not released); ours: the released options",
                  "Fig. 4 (text)": "paper: with confusing options (inferred; not released); ours: the released options"}


def ablations_vs_paper(runs: dict[str, Any], paper_row: str, *, n_resamples: int = 1000, seed: int = 0):
    """Each ablation run beside its published numbers (:data:`ABLATION_ROWS`), on the six non-dual categories as
    the paper reports them: (Q,I) beside Table 3's w/o row, (C,I) and (C,Q) beside the values §5.1 gives for
    Fig. 4, the Chinese and Malay prompts beside Table 12's rows without confusing options, full input beside
    Table 3's w/ row and Fig. 4. ``paper_row`` is the paper's name of the model; a run's scorer is named
    (:func:`score_with`), and a cell the paper measured with confusing options says so."""
    import pandas as pd

    from vlamb_nb import reference
    from vlamb_nb.benchmarks.mucar.data import NON_DUAL_CATEGORIES

    frames = []
    for setting, scored in runs.items():
        for table, pattern in ABLATION_ROWS.get(setting, ()):
            row = pattern.format(row=paper_row)
            long = results_long(scored, row, table, categories=list(NON_DUAL_CATEGORIES), n_resamples=n_resamples,
                                seed=seed)
            published = reference.load(NAME, table=table)
            published = published[published["row"] == row]
            if table != "Table 12":  # Table 3 and Fig. 4 print the Overall cells only
                long = long[long["column"].isin(published["column"]) if len(published) else
                            long["column"].str.startswith("Overall")]
            cmp = reference.compare(long[["table", "row", "column", "value", "ci_low", "ci_high"]], NAME, table=table)
            cmp.insert(0, "setting", setting)
            cmp["scorer"] = scorer_of(scored)
            cmp["options"] = WITH_CONFUSING.get(table, "as the paper (without confusing options)")
            frames.append(cmp)
    if not frames:
        raise DataError(f"no ablation run among {sorted(runs)}; run one of {', '.join(ABLATION_ROWS)}")
    return pd.concat(frames, ignore_index=True)
