"""MUCAR (Wang et al., EMNLP 2025): multilingual cross-modal ambiguity resolution, scored by pairs.

Readable top to bottom::

    items  = BENCHMARK.load(source, images=folder)      # data-all.json, three schemas -> one row per query
    scored = BENCHMARK.evaluate(model, items, "full")   # Table 10 prompt -> Answer: X -> correct
    pair_accuracy(scored, by="category")                # Acc_q (queries), Acc_p (all of a group right) + CIs

Parts: :mod:`mucar_data` (loader, grouping, quirks, images, sample), :mod:`mucar_prompts` (templates,
parser, judge prompt), :mod:`mucar_audit` (the paper's arithmetic); this module scores, builds tables
and figures, and wires everything into the :class:`Benchmark` shape.

Metric rules (the paper's formulas, §3.4): Acc_q = micro average over queries; Acc_p = share of
groups whose queries are all correct. A group is counted under its first query's category and
language (two released groups mix categories, two mix languages). Overall Acc_p here is the
micro average over all groups; the paper's own Overall Acc_p rule cannot be reconstructed.
Confidence intervals (an addition) resample groups, never queries, so Acc_p stays defined.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from vlamb_nb.benchmarks.base import Benchmark
from vlamb_nb.benchmarks.mucar_data import (
    CATEGORY_ORDER,
    HUB_IMAGES,
    LANGUAGE_ORDER,
    ImageResolver,
    category_language_counts,
    data_stats,
    load_items,
    make_sample,
    quirk_counts,
    quirks,
)
from vlamb_nb.benchmarks.mucar_prompts import (
    PROMPT_LANGUAGE,
    SETTINGS,
    applicable,
    build_prompt,
    judge_prompt,
    parse_answer,
    parse_judge,
    parse_yes_no,
)
from vlamb_nb.errors import DataError, SettingError
from vlamb_nb.jsonl import iter_jsonl
from vlamb_nb.meta import Deviation
from vlamb_nb.models.base import IMAGE_SLOT, VLM, DecodingParams, ModelInfo, Request, user_message

__all__ = ["BENCHMARK", "HUB_IMAGES", "Mucar", "category_language_counts", "failure_summary", "pair_accuracy",
           "quirk_counts", "quirks", "score_predictions", "table2", "results_long", "compare_runs"]

NAME = "mucar"
DEFAULT_PARAMS = DecodingParams(max_new_tokens=64)  # the paper gives no decoding settings; greedy here


# -- scoring -------------------------------------------------------------------------------------
# a query a prediction file has no output for: scored wrong and labelled, never dropped
NO_PREDICTION = {"letter": None, "valid": False, "parse_method": "no_prediction", "refusal": False}


def outcome(row: Any) -> str:
    """One label per query: correct, wrong, refusal, ambiguous (several letters), unparsed, out_of_range,
    no_prediction or generation_failed."""
    if row.get("parse_error") == "generation_failed":
        return "generation_failed"
    if row.get("valid"):
        return "correct" if row.get("correct") else "wrong"
    method = row.get("parse_method")
    return method if method in ("refusal", "ambiguous", "out_of_range", "no_prediction") else "unparsed"


def score_predictions(preds):
    """``correct`` per query (invalid answers count as wrong, never dropped) and an ``outcome`` label."""
    out = preds.copy()
    for col, default in (("letter", None), ("valid", False), ("parse_method", None)):
        if col not in out:
            out[col] = default
    valid = out["valid"].fillna(False).astype(bool) if "valid" in out else False
    if "setting" in out and (out["setting"] == "c_ambiguous").any():
        amb = out["setting"] == "c_ambiguous"
        yes = out.get("yes_no", None)
        out["correct"] = np.where(amb, valid & (yes == "yes"), valid & (out["letter"] == out["gold"]))
    else:
        out["correct"] = valid & (out["letter"] == out["gold"])
    out["correct"] = out["correct"].astype(bool)
    out["outcome"] = [outcome(r) for r in out.to_dict(orient="records")]
    return out


# -- Acc_p / Acc_q with cluster-bootstrap CIs ---------------------------------------------------------
def group_frame(scored):
    """One row per group: size, number correct, all correct, first query's category / language."""
    s = scored.sort_values("record_id", kind="stable")
    g = s.groupby("group", sort=False)
    out = g.agg(size=("correct", "size"), n_correct=("correct", "sum"), category=("category", "first"),
                language=("language", "first"))
    out["all_correct"] = out["n_correct"] == out["size"]
    return out.reset_index()


def _interval(correct: np.ndarray, groups: np.ndarray, statistic: Any, n_resamples: int, seed: int,
              alpha: float) -> tuple[float, float]:
    """Percentile CI (percent) of one statistic when whole groups are resampled (``vlamb_nb.stats``)."""
    from vlamb_nb.stats import bootstrap_ci

    if n_resamples <= 0 or len(set(groups.tolist())) < 2:
        return np.nan, np.nan
    res = bootstrap_ci(correct, statistic, n_resamples=n_resamples, seed=seed, alpha=alpha,
                       clusters=groups).scaled(100)
    return res.ci_low, res.ci_high


def _query_frame(scored, groups):
    """Per-query correctness with each query placed under its group's (first query's) category / language."""
    g = groups.set_index("group")
    out = scored[["group", "correct"]].copy()
    out["correct"] = out["correct"].astype(float)
    out["category"] = out["group"].map(g["category"])
    out["language"] = out["group"].map(g["language"])
    return out


def pair_accuracy(scored, by: str | list[str] | None = None, *, n_resamples: int = 2000, seed: int = 0,
                  alpha: float = 0.05):
    """Acc_q and Acc_p (percent) overall or per ``by`` (category / language / both), with group-bootstrap CIs.

    Long format: the ``by`` columns, ``metric`` (Acc_q / Acc_p), ``value``, ``ci_low``, ``ci_high``,
    ``n_queries``, ``n_groups``. "Overall" rows are micro averages over all queries / all groups.
    CIs resample whole groups (``stats.bootstrap_ci(..., clusters=groups)``): Acc_p is defined on
    groups, and the queries of one group share an image set, so they are not independent.
    """
    import pandas as pd

    from vlamb_nb.stats import group_accuracy_statistic, mean_statistic

    if scored.empty:
        raise DataError("no scored predictions to aggregate")
    groups = group_frame(scored)
    keys = [] if by is None else ([by] if isinstance(by, str) else list(by))
    bad = [k for k in keys if k not in ("category", "language")]
    if bad:
        raise SettingError(f"pair_accuracy groups by category and/or language, not {bad}")
    queries = _query_frame(scored, groups)
    parts = [((), queries)] if not keys else list(queries.groupby(keys, sort=False))
    rows = []
    for i, (vals, df) in enumerate(parts):
        vals = vals if isinstance(vals, tuple) else (vals,)
        correct, gid = df["correct"].to_numpy(float), df["group"].to_numpy()
        acc_p = group_accuracy_statistic(gid)
        ci_q = _interval(correct, gid, mean_statistic(), n_resamples, seed + i, alpha)
        ci_p = _interval(correct, gid, acc_p, n_resamples, seed + i, alpha)
        base = dict(zip(keys, vals, strict=True)) | {"n_queries": int(len(df)), "n_groups": int(df["group"].nunique())}
        rows.append(base | {"metric": "Acc_q", "value": 100 * float(correct.mean()), "ci_low": ci_q[0],
                            "ci_high": ci_q[1]})
        rows.append(base | {"metric": "Acc_p", "value": 100 * acc_p.value(correct), "ci_low": ci_p[0],
                            "ci_high": ci_p[1]})
    out = pd.DataFrame(rows, columns=keys + ["metric", "value", "ci_low", "ci_high", "n_queries", "n_groups"])
    order = {"category": CATEGORY_ORDER, "language": LANGUAGE_ORDER}
    for key in keys:
        out[key] = pd.Categorical(out[key], [c for c in order[key] if c in set(out[key])])
    return out.sort_values(keys + ["metric"], ascending=[True] * len(keys) + [False]).reset_index(drop=True)


def compare_runs(a, b, *, n_resamples: int = 2000, seed: int = 0, alpha: float = 0.05):
    """Paired difference a − b (percentage points) of Acc_q and Acc_p over the queries both runs scored.

    A paired bootstrap (Koehn 2004) that resamples whole groups of the shared queries, so a setting
    ablation or a model-vs-model gap comes with a CI and a two-sided p-value.
    """
    import pandas as pd

    from vlamb_nb.stats import group_accuracy_statistic, mean_statistic, paired_bootstrap

    left = a[["uid", "group", "correct"]].drop_duplicates("uid")
    both = left.merge(b[["uid", "correct"]].drop_duplicates("uid"), on="uid", suffixes=("_a", "_b"))
    if both.empty:
        raise DataError("the two runs share no query (uid); nothing to compare")
    gid = both["group"].to_numpy()
    xa, xb = both["correct_a"].to_numpy(float), both["correct_b"].to_numpy(float)
    rows = []
    for metric, stat in (("Acc_q", mean_statistic()), ("Acc_p", group_accuracy_statistic(gid))):
        r = paired_bootstrap(xa, xb, stat, n_resamples=max(int(n_resamples), 1), seed=seed, alpha=alpha,
                             clusters=gid, name=metric)
        rows.append({"metric": metric, "a": 100 * r.extra["metric_a"], "b": 100 * r.extra["metric_b"],
                     "difference": 100 * r.estimate, "ci_low": 100 * r.ci_low, "ci_high": 100 * r.ci_high,
                     "p": r.p, "n_queries": int(len(both)), "n_groups": int(len(set(gid.tolist())))})
    return pd.DataFrame(rows)


def table2(scored, label: str = "ours", *, n_resamples: int = 0, seed: int = 0):
    """One run as a row of Table 2 (categories × Acc_p/Acc_q + Overall), in percent."""
    import pandas as pd

    long = results_long(scored, label, n_resamples=n_resamples, seed=seed)
    wide = long.pivot(index="row", columns="column", values="value")
    cols = [f"{c} {m}" for c in CATEGORY_ORDER + ["Overall"] for m in ("Acc_p", "Acc_q")]
    return pd.DataFrame(wide, columns=[c for c in cols if c in wide.columns])


def results_long(scored, label: str = "ours", table: str = "Table 2a", *, n_resamples: int = 2000,
                 seed: int = 0, categories: list[str] | None = None):
    """``table,row,column,value,ci_low,ci_high`` rows in the reference layout, for ``reference.compare``.

    ``categories`` restricts the set first (Table 3 / 12 use the six non-dual categories).
    """
    import pandas as pd

    if categories is not None:
        scored = scored[scored["category"].isin(categories)]
    per = pair_accuracy(scored, "category", n_resamples=n_resamples, seed=seed)
    tot = pair_accuracy(scored, None, n_resamples=n_resamples, seed=seed).assign(category="Overall")
    both = pd.concat([per.astype({"category": str}), tot], ignore_index=True)
    return pd.DataFrame({"table": table, "row": label, "column": both["category"] + " " + both["metric"],
                         "value": both["value"].round(2), "ci_low": both["ci_low"].round(2),
                         "ci_high": both["ci_high"].round(2), "n_queries": both["n_queries"],
                         "n_groups": both["n_groups"]})


# -- failure modes -------------------------------------------------------------------------------
def failure_summary(scored, label: str = "ours") -> dict[str, Any]:
    """Outcome counts, and image-insensitive groups: one answer for every image although golds differ.

    Such a group scores ~half its queries (Acc_q) and never the group (Acc_p = 0): the paper's
    pattern for Deepseek-VL-Tiny and Kimi-VL, measured here directly.
    """
    s = scored.sort_values("record_id", kind="stable")
    const = insens = eligible = 0
    for _, df in s.groupby("group", sort=False):
        if len(df) < 2 or df["gold"].nunique() < 2:
            continue
        eligible += 1
        letters = df["letter"].where(df["valid"].fillna(False).astype(bool))
        if letters.notna().all() and letters.nunique() == 1:
            insens += 1
        if df["letter"].nunique(dropna=False) == 1:
            const += 1
    accs = {r["metric"]: float(r["value"]) for _, r in pair_accuracy(s, None, n_resamples=0).iterrows()}
    return {"label": label, "n_queries": int(len(s)), "outcomes": {str(k): int(v) for k, v in
                                                                 s["outcome"].value_counts().items()},
            "groups_with_distinct_golds": eligible, "image_insensitive_groups": insens,
            "image_insensitive_share": round(100 * insens / eligible, 2) if eligible else None,
            "Acc_q": round(accs["Acc_q"], 2), "Acc_p": round(accs["Acc_p"], 2)}


# -- the LLM judge (CODIS-style right/wrong) -------------------------------------------------------
def judge_spec():
    """The CODIS judge prompt (verbatim) as a :class:`vlamb_nb.judge.JudgeSpec` with CODIS's rule."""
    from vlamb_nb.judge import JudgeSpec

    def parse(text: str) -> dict[str, Any]:
        v = parse_judge(text, "codis")
        return {"label": "right" if v else "wrong", "valid": True, "parse_error": None}

    template = judge_prompt("{question}", "{groundtruth}", "{output}")
    return JudgeSpec("mucar-codis", template=template, parse=parse, labels=("right", "wrong"),
                     params=DecodingParams(max_new_tokens=8), benchmark=NAME)


def run_judge(model: VLM, scored, *, store: str | os.PathLike | None = None, batch_size: int = 8,
              progress: bool = True):
    """Judge every output with ``model``; adds ``judge_correct`` (1/0) beside the rule parser's ``correct``."""
    from vlamb_nb import judge

    frame = scored.reset_index(drop=True).copy()
    frame["judge_question"] = [build_prompt(r, "full") for r in frame.to_dict(orient="records")]
    frame["groundtruth"] = frame["gold"] + ". " + frame["gold_text"]
    frame["output"] = frame["text"].fillna("").replace("", "(empty)")
    out = judge.run_judge(model, judge_spec(), frame, field_map={"question": "judge_question"}, store=store,
                          batch_size=batch_size, progress=progress)
    out["judge_correct"] = np.where(out["judge_valid"].astype(bool), (out["judge_label"] == "right").astype(float),
                                    np.nan)
    return out


def agreement(a, b) -> dict[str, Any]:
    """Percent agreement (Table 7's statistic) and Cohen's kappa with its CI (an addition), on items both label."""
    import pandas as pd

    from vlamb_nb.stats import cohen_kappa

    x, y = pd.Series(list(a), dtype=float), pd.Series(list(b), dtype=float)
    both = x.notna() & y.notna()
    x, y = x[both].astype(int).to_numpy(), y[both].astype(int).to_numpy()
    if len(x) == 0:
        raise DataError("no item has both labels; cannot compute agreement")
    k = cohen_kappa(x, y, ci=True)
    return {"n": int(len(x)), "percent_agreement": round(100 * float((x == y).mean()), 2),
            "cohen_kappa": k.estimate, "kappa_ci": [k.ci_low, k.ci_high]}


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
    overall_q = sum(nq[c] for c in (six if table == "Table 12" else CATEGORY_ORDER))
    overall_g = sum(ng[c] for c in (six if table == "Table 12" else CATEGORY_ORDER))
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


# -- figures -------------------------------------------------------------------------------------
def plot_distribution(items):
    """Fig. 3 (left), regenerated: queries per category, stacked by language."""
    from vlamb_nb.plots import PALETTE, new_figure

    tab = category_language_counts(items).drop(index="Overall").drop(columns="Total")
    fig, ax = new_figure(6.5, 3.2)
    bottom = np.zeros(len(tab))
    for i, lang in enumerate(tab.columns):
        ax.bar(tab.index, tab[lang], bottom=bottom, label=lang, color=PALETTE[i])
        bottom += tab[lang].to_numpy()
    ax.set_ylabel("queries")
    ax.set_title("MUCAR release: queries per category and language")
    ax.tick_params(axis="x", rotation=30)
    ax.legend()
    return fig


def plot_accuracy(frame, *, x: str = "label", hue: str = "metric", title: str = ""):
    """Grouped bars with CI whiskers from a long frame (``value``, ``ci_low``, ``ci_high``)."""
    from vlamb_nb.plots import PALETTE, new_figure

    xs = list(dict.fromkeys(frame[x].astype(str)))
    hues = list(dict.fromkeys(frame[hue].astype(str)))
    fig, ax = new_figure(max(5.0, 0.9 * len(xs) * len(hues) / 2 + 2), 3.2)
    w = 0.8 / len(hues)
    for j, h in enumerate(hues):
        sub = frame[frame[hue].astype(str) == h].set_index(frame[frame[hue].astype(str) == h][x].astype(str))
        vals = [float(sub["value"].get(v, np.nan)) for v in xs]
        lo = [float(sub["ci_low"].get(v, np.nan)) if "ci_low" in sub else np.nan for v in xs]
        hi = [float(sub["ci_high"].get(v, np.nan)) if "ci_high" in sub else np.nan for v in xs]
        err = np.array([[max(v - a, 0) if a == a else 0 for v, a in zip(vals, lo, strict=True)],
                        [max(b - v, 0) if b == b else 0 for v, b in zip(vals, hi, strict=True)]])
        ax.bar(np.arange(len(xs)) + j * w, vals, w, yerr=err, capsize=2, label=h, color=PALETTE[j % len(PALETTE)])
    ax.set_xticks(np.arange(len(xs)) + w * (len(hues) - 1) / 2, xs, rotation=20)
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 105)
    ax.set_title(title)
    ax.legend()
    return fig


def plot_image_insensitive(summaries: list[dict[str, Any]]):
    """Acc_q, Acc_p and the share of image-insensitive groups per run (the constant-answer failure)."""
    import pandas as pd

    rows = []
    for s in summaries:
        for m, v in (("Acc_q", s["Acc_q"]), ("Acc_p", s["Acc_p"]),
                     ("image-insensitive groups", s["image_insensitive_share"] or 0.0)):
            rows.append({"label": s["label"], "metric": m, "value": v})
    return plot_accuracy(pd.DataFrame(rows), title="Image-insensitive answering: Acc_q survives, Acc_p collapses")


# -- the benchmark -------------------------------------------------------------------------------
class Mucar(Benchmark):
    name = NAME
    paper = "Wang et al., MUCAR, EMNLP 2025"
    settings = tuple(SETTINGS)
    default_setting = "full"

    def load(self, source: str | os.PathLike | None = None, *, grouping: str = "default",
             images: str | os.PathLike | None = None, **kwargs: Any):
        """``data-all.json`` (a path, a folder holding it, or None for the release beside the checkout)."""
        if kwargs:
            raise SettingError(f"unknown MUCAR load option(s): {', '.join(kwargs)}")
        return load_items(source, grouping=grouping, images=images)

    def requests(self, items, setting: str, *, images: str | os.PathLike | None = None,
                 context_mode: str = "prefix", option_sep: str = " ", option_style: str = "raw",
                 layout: str = "flat", params: DecodingParams | None = None, max_new_tokens: int | None = None,
                 **kwargs: Any) -> list[Request]:
        """One request per query (per applicable context for 'c_ambiguous'); images from ``images``.

        ``max_new_tokens`` overrides the default generation budget (a config-friendly shortcut for ``params``).

        ``images``: a folder or ``kevindragon221/MUCAR`` (a local hub snapshot); default the loader's.
        """
        if kwargs:
            raise SettingError(f"unknown MUCAR request option(s): {', '.join(kwargs)}")
        if params is None and max_new_tokens is not None:
            params = DecodingParams(max_new_tokens=int(max_new_tokens))
        self.check_setting(setting)
        spec = SETTINGS[setting]
        resolver = None
        if spec.image:
            where = images if images is not None else items.attrs.get("images")
            if where is None:
                raise SettingError(f"setting {setting!r} needs images: pass images=<folder> or "
                                   f"images={HUB_IMAGES!r} (a downloaded hub snapshot)")
            resolver = ImageResolver.from_spec(where)
        cache: dict[str, Any] = {}
        out = []
        for item in items.to_dict(orient="records"):
            ok, _ = applicable(item, setting)
            if not ok:
                continue
            text = build_prompt(item, setting, context_mode=context_mode, option_sep=option_sep,
                                option_style=option_style, layout=layout)
            imgs = []
            if resolver is not None:
                if item["image_id"] not in cache:
                    cache[item["image_id"]] = resolver.load(item["image_id"])
                imgs = [cache[item["image_id"]]]
            parts = [IMAGE_SLOT, text] if imgs else [text]
            out.append(Request(id=item["uid"], messages=[user_message(*parts)], images=imgs,
                               params=params or DEFAULT_PARAMS, benchmark=NAME, setting=setting,
                               meta={"item_id": item["uid"], "group": item["group"]}))
        return out

    def skipped(self, items, setting: str) -> dict[str, int]:
        """Queries a setting cannot be built for, by reason (reported, never silently dropped)."""
        out: dict[str, int] = {}
        for item in items.to_dict(orient="records"):
            ok, why = applicable(item, setting)
            if not ok:
                out[why] = out.get(why, 0) + 1
        return out

    def parse(self, text: str, item: Any) -> dict[str, Any]:
        if item.get("setting") == "c_ambiguous":
            return parse_yes_no(text)
        return parse_answer(text, list(item["options"]))

    def score(self, predictions):
        return score_predictions(predictions)

    def predictions(self, items, generations, *, id_column: str = "uid"):
        """The base join, after turning missing ``error`` cells (NaN) into ``""`` so they are not failures."""
        gens = generations.copy()
        if "error" in gens:
            gens["error"] = [e if isinstance(e, str) else "" for e in gens["error"]]
        return super().predictions(items, gens, id_column=id_column)

    def evaluate(self, model: VLM, items, setting: str | None = None, **kwargs: Any):
        scored = super().evaluate(model, items, setting, **kwargs)
        scored["model"] = model.info.model_id
        return scored

    def tables(self, scored, *, label: str | None = None, n_resamples: int = 2000, seed: int = 0) -> dict[str, Any]:
        """Table 2-style row (with CIs), per-language Acc, category × language Acc_q, outcomes."""
        label = label or str(scored["model"].iloc[0] if "model" in scored else "ours")
        if "setting" in scored and (scored["setting"] == "c_ambiguous").all():
            return {"Is C ambiguous": pair_accuracy(scored, None, n_resamples=n_resamples, seed=seed)}
        cxl = pair_accuracy(scored, ["category", "language"], n_resamples=0)
        return {
            "Table 2": table2(scored, label),
            "Table 2 (long, with CIs)": results_long(scored, label, n_resamples=n_resamples, seed=seed),
            "by language": pair_accuracy(scored, "language", n_resamples=n_resamples, seed=seed),
            "category x language Acc_q": cxl[cxl["metric"] == "Acc_q"].pivot(
                index="category", columns="language", values="value").round(2),
            "outcomes": scored["outcome"].value_counts().rename_axis("outcome").reset_index(name="n"),
        }

    def summary(self, scored) -> dict[str, Any]:
        s = failure_summary(scored)
        return {"n": s["n_queries"], "invalid": int((~scored["valid"].fillna(False).astype(bool)).sum()),
                "Acc_q": s["Acc_q"], "Acc_p": s["Acc_p"], "image_insensitive_groups": s["image_insensitive_groups"]}

    def deviations(self, model: ModelInfo, setting: str, *, max_new_tokens: int | None = None) -> list[Deviation]:
        """What differs from the paper for this run; ``max_new_tokens`` is the budget actually used."""
        out = super().deviations(model, setting)
        out.append(Deviation("answer matching", "a GPT-4o right/wrong judge (prompt not released)",
                             "rule parser (Answer: X, then fallbacks); optional CODIS-prompt judge", "all"))
        out.append(Deviation("context placement", "not stated (templates have no context slot)",
                             "context prefixed to the question", "all"))
        budget = max_new_tokens or DEFAULT_PARAMS.max_new_tokens
        out.append(Deviation("decoding", "not reported", f"greedy, at most {budget} new tokens", "all"))
        out.append(Deviation("option set", "Table 2b/3/12 'with confusing options' (not released)",
                             "the released options only (Table 2a setting)", "Table 2b, Table 3, Table 12"))
        out.append(Deviation("Overall Acc_p", "aggregation rule not reconstructable",
                             "micro average over all groups", "Overall Acc_p"))
        if not SETTINGS[setting].context or not SETTINGS[setting].question:
            out.append(Deviation("ablation", "context/question removed",
                                 "schema-B queries keep their embedded context (it is part of the question)",
                                 setting))
        return out

    # -- CLI hooks -----------------------------------------------------------------------------------
    def data_stats(self, items) -> dict[str, Any]:
        out = data_stats(items)
        out["quirks"] = quirk_counts(quirks(items))
        return out

    def score_file(self, predictions: str | os.PathLike, *, source: str | os.PathLike | None = None,
                   grouping: str = "default", model: str | None = None, setting: str | None = None,
                   missing: str = "wrong", n_resamples: int = 2000, **options: Any) -> dict[str, Any]:
        """Score raw outputs: JSON/JSONL/CSV rows with an id and an output, a prediction store, or the
        release's own layout with ``eval.models.<model>.output`` filled in.

        Queries without a prediction count as wrong (``missing="wrong"``, the paper's denominators), or
        ``missing="skip"`` leaves out every group with a missing query: scoring only the answered part of a
        group would let it pass Acc_p on fewer queries than it has.
        """
        if options:
            raise SettingError(f"unknown MUCAR score option(s): {', '.join(options)}")
        if setting is not None and setting not in SETTINGS:
            raise SettingError(f"unknown MUCAR setting {setting!r}; choose one of {', '.join(SETTINGS)}")
        if missing not in ("wrong", "skip"):
            raise SettingError(f"missing must be 'wrong' (count as wrong) or 'skip' (leave out incomplete "
                               f"groups), got {missing!r}")
        items = load_items(source, grouping=grouping)
        ok = [applicable(r, setting or "full")[0] for r in items.to_dict(orient="records")]
        items = items[ok]  # queries the setting cannot be asked are not "missing" (see Mucar.skipped)
        outputs = read_predictions(predictions, model=model, setting=setting)
        by_uid = dict(zip(items["uid"], items.index, strict=True))
        unknown = [u for u in outputs if u not in by_uid]
        if unknown:
            raise DataError(f"{len(unknown)} prediction id(s) not in the data, e.g. {unknown[0]!r}",
                            source=str(predictions), field="id")
        have = items["uid"].isin(outputs)
        incomplete = set(items.loc[~have, "group"])
        if missing == "skip":
            sub = items[~items["group"].isin(incomplete)].copy()
            if sub.empty:
                raise DataError("no group has a prediction for every query; use missing='wrong'",
                                source=str(predictions))
        else:
            sub = items.copy()
        sub["setting"] = setting or "full"
        sub["text"] = sub["uid"].map(outputs)
        parsed = [self.parse(t, r) if isinstance(t, str) else dict(NO_PREDICTION)
                  for t, r in zip(sub["text"], sub.to_dict(orient="records"), strict=True)]
        import pandas as pd

        scored = score_predictions(pd.concat([sub.reset_index(drop=True), pd.DataFrame(parsed)], axis=1))
        return {
            "n_predictions": int(len(outputs)), "n_items": int(len(items)),
            "missing_items": int((~have).sum()), "missing_counted_as": "wrong" if missing == "wrong" else
            "skipped (whole groups)", "incomplete_groups": len(incomplete), "scored_queries": int(len(scored)),
            "overall": _records(pair_accuracy(scored, None, n_resamples=n_resamples)),
            "per_category": _records(pair_accuracy(scored, "category", n_resamples=n_resamples)),
            "per_language": _records(pair_accuracy(scored, "language", n_resamples=n_resamples)),
            "failures": failure_summary(scored, str(model or Path(predictions).name)),
        }

    def reference_check(self) -> list[Any]:
        from vlamb_nb.benchmarks.mucar_audit import audit

        try:
            items = load_items(None)
        except DataError:  # the release is not beside the checkout: audit the paper's own numbers only
            items = None
        return audit(items)

    def make_sample(self, directory: str | os.PathLike, n: int = 8, seed: int = 0) -> Path:
        return make_sample(directory, n=n, seed=seed)


def _records(df) -> list[dict[str, Any]]:
    return json.loads(df.astype({c: str for c in ("category", "language") if c in df}).to_json(orient="records"))


_OUTPUT_FIELDS = ("output", "response", "text", "prediction", "pred")


def read_predictions(path: str | os.PathLike, *, model: str | None = None,
                     setting: str | None = None) -> dict[str, str]:
    """``{uid: raw output}`` from JSON / JSONL / CSV prediction files (see :meth:`Mucar.score_file`).

    Rows carrying a ``setting`` (a prediction store) are filtered to ``setting``; a file holding several
    settings, or two different outputs for one query, must be narrowed down (``setting=`` / ``model=``)
    rather than letting the last row silently win.
    """
    p = Path(path)
    if not p.is_file():
        raise DataError(f"predictions file not found: {p}")
    if p.suffix.lower() == ".csv":
        import pandas as pd

        rows = pd.read_csv(p, dtype=str, keep_default_na=False).to_dict(orient="records")
    elif p.suffix.lower() == ".jsonl":
        rows = [rec for _, rec in iter_jsonl(p)]
    else:
        try:
            rows = json.loads(p.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise DataError(f"not valid JSON: {e}", source=p.name) from None
        if isinstance(rows, dict):
            rows = [{"id": k, "output": v} for k, v in rows.items()]
    seen = {str(r["setting"]) for r in rows if isinstance(r, dict) and r.get("setting") and not r.get("_meta")}
    if setting is None and len(seen) > 1:
        raise SettingError(f"{p.name} holds several settings ({', '.join(sorted(seen))}); pass -o setting=NAME")
    if setting is not None and seen and setting not in seen:
        raise SettingError(f"{p.name} has no predictions for setting {setting!r}; it has {', '.join(sorted(seen))}")
    out: dict[str, str] = {}
    for i, r in enumerate(rows, 1):
        if not isinstance(r, dict):
            raise DataError("row is not an object", source=p.name, row=i)
        if r.get("_meta") or (setting is not None and r.get("setting") not in (None, setting)):
            continue
        if model is not None and isinstance(r.get("model"), dict) and r["model"].get("model_id") != model:
            continue
        rid = r.get("id", r.get("uid", r.get("request_id")))
        if rid is None:
            raise DataError("row has no id / uid / request_id", source=p.name, row=i, field="id")
        uid = str(rid).split("::")[0]
        uid = uid if uid.startswith("mucar-") else f"mucar-{int(float(uid))}" if _is_number(uid) else uid
        text = next((r[f] for f in _OUTPUT_FIELDS if f in r), None)
        if text is None and isinstance(r.get("eval"), dict):  # the release's own layout, outputs filled in
            models = r["eval"].get("models") or {}
            name = model or (next(iter(models)) if len(models) == 1 else None)
            if name is None or name not in models:
                raise DataError(f"choose the model with model=...; available: {sorted(models)}", source=p.name,
                                row=i, field="eval.models")
            text = models[name].get("output")
            if text in ("", None):
                continue  # an empty placeholder: this item was not run
        if text is None:
            raise DataError(f"row has none of {', '.join(_OUTPUT_FIELDS)}", source=p.name, row=i)
        text = "" if r.get("error") or text is None else str(text)
        if uid in out and out[uid] != text:
            raise DataError(f"two different outputs for {uid}; narrow the file down with -o setting=/model=",
                            source=p.name, row=i, field="id")
        out[uid] = text
    if not out:
        raise DataError("no predictions found", source=p.name)
    return out


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


BENCHMARK = Mucar()
PROMPT_LANGUAGES = PROMPT_LANGUAGE


# -- notebook helpers (the notebook only calls these) -----------------------------------------------
def notebook_data(source: str | os.PathLike | None = None, images: str | os.PathLike | None = None, *,
                  sample_dir: str | os.PathLike | None = None, n: int = 4, seed: int = 0) -> dict[str, Any]:
    """Data for the notebook: the release for statistics/audit, and the items the pipeline runs on.

    ``source`` given: the pipeline uses it (with ``images``). Otherwise statistics use the release
    beside the checkout when present, and the pipeline a generated sample (same schema, generated images).
    """
    import tempfile

    release = None
    try:
        release = load_items(source)
    except DataError:
        if source is not None:
            raise
    if source is not None:
        return {"release": release, "pipeline": load_items(source, images=images), "pipeline_kind": "source"}
    folder = Path(sample_dir) if sample_dir is not None else Path(tempfile.mkdtemp(prefix="mucar-sample-"))
    sample = load_items(make_sample(folder, n=n, seed=seed))
    return {"release": release if release is not None else sample, "pipeline": sample, "pipeline_kind": "sample",
            "release_kind": "release" if release is not None else "sample"}


def constant_model(letter: str = "A"):
    """A scripted stand-in that always answers ``letter``: the image-insensitive failure, on purpose."""
    from vlamb_nb.models import ScriptedModel

    return ScriptedModel(lambda r: f"Answer: {letter}", model_id=f"constant-{letter}")


def run_settings(model: VLM, items, settings: list[str], *, store_dir: str | os.PathLike | None = None,
                 batch_size: int = 8, limit: int | None = None, progress: bool = True,
                 max_new_tokens: int | None = None) -> dict[str, Any]:
    """Evaluate ``model`` under several settings (one resumable store per setting)."""
    params = DecodingParams(max_new_tokens=max_new_tokens) if max_new_tokens else None
    out = {}
    for s in settings:
        store = Path(store_dir) / f"mucar-{_safe(model.info.model_id)}-{s}.jsonl" if store_dir else None
        out[s] = BENCHMARK.evaluate(model, items, s, store=store, batch_size=batch_size, limit=limit,
                                    progress=progress, params=params)
    return out


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def settings_frame(runs: dict[str, Any], *, label: str | None = None, n_resamples: int = 1000, seed: int = 0):
    """Overall Acc_q / Acc_p with CIs per setting (Fig. 4 / Table 3 / Table 12 layout), long format."""
    import pandas as pd

    from vlamb_nb.benchmarks.mucar_prompts import SETTINGS as _S

    rows = []
    for s, scored in runs.items():
        if s == "c_ambiguous":
            continue
        r = pair_accuracy(scored, None, n_resamples=n_resamples, seed=seed)
        r.insert(0, "setting", s)
        r.insert(1, "input", _S[s].description)
        r.insert(0, "label", label or str(scored["model"].iloc[0]))
        rows.append(r)
    return pd.concat(rows, ignore_index=True)


def paper_vs_ours(scored, paper_row: str, *, table: str = "Table 2a", n_resamples: int = 1000, seed: int = 0,
                  categories: list[str] | None = None):
    """``reference.compare`` of one run against one published row (paper value, ours, CI, flags)."""
    from vlamb_nb import reference

    long = results_long(scored, paper_row, table, n_resamples=n_resamples, seed=seed, categories=categories)
    return reference.compare(long[["table", "row", "column", "value", "ci_low", "ci_high"]], NAME, table=table)


def audit_frame(items=None):
    from vlamb_nb.benchmarks.mucar_audit import audit
    from vlamb_nb.reference import findings_frame

    return findings_frame(audit(items))
