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
def notebook_data(source: str | os.PathLike | None = None, *, profile: str = "offline", n: int = 4, seed: int = 0,
                  sample_dir: str | os.PathLike | None = None, **load_options: Any) -> NotebookData:
    """Data for the notebook (every paper's ``notebook_data`` has this signature): the release for statistics/audit,
    and the items the pipeline runs on.

    ``source`` given: both use it (with ``images=``, a load option). The paper profile: the fetched release
    (``vlamb-nb data fetch mucar``), else one line naming that command. The offline profile: statistics on the
    release beside the checkout when present, the pipeline on a generated sample (same schema, generated images).
    ``data`` is what the pipeline's items are (:class:`~vlamb_nb.datahome.DataIdentity`), also in their attrs.
    """
    from vlamb_nb.datahome import choose, sample_identity, tag
    from vlamb_nb.paths import sample_dir as default_sample_dir

    choice = choose(NAME, source, profile=profile)
    if choice is not None:  # statistics on every record; the pipeline leaves out what the release cannot give
        if load_options.get("images") is None:
            load_options["images"] = choice.images
        release = load_items(choice.source, **load_options)
        items = tag(release.copy(), choice.identity)
        return NotebookData(release=release, release_kind=choice.identity.kind, pipeline=items,
                            pipeline_kind=choice.identity.kind)
    release = None
    try:
        release = load_items(None)
    except DataError:
        pass
    folder = Path(sample_dir) if sample_dir is not None else default_sample_dir("mucar", n, seed)
    sample = load_items(make_sample(folder, n=n, seed=seed), **{k: v for k, v in load_options.items()
                                                                 if k != "images"})
    ident = sample_identity(NAME, n_items=len(sample), seed=seed)
    tag(sample, ident)
    return NotebookData(release=release if release is not None else sample,
                        release_kind="release" if release is not None else "sample", pipeline=sample,
                        pipeline_kind="sample")


def constant_model(letter: str = "A"):
    """A scripted stand-in that always answers ``letter``: the image-insensitive failure, on purpose."""
    from vlamb_nb.models import ScriptedModel

    return ScriptedModel(lambda r: f"Answer: {letter}", model_id=f"constant-{letter}")


def paper_vs_ours_table4(runs: dict[str, Any], *, model: Any = None, data: Any = None, n_resamples: int = 1000,
                         seed: int = 0):
    """Table 4's MUCAR columns: each strategy run (``full`` = Vanilla, ``full_cot``, ``full_codis``, the agent)
    against its published row via ``reference.compare``, labelled with the run's model; runs of other settings are
    left out. Table 4's rows are GPT-4o-2024-11-20's: another model, a stand-in or a generated sample (``data``)
    is shown beside them but never matched or counted."""
    import pandas as pd

    from vlamb_nb import reference
    from vlamb_nb.benchmarks.mucar.prompts import TABLE4_MODEL, TABLE4_ROWS
    from vlamb_nb.benchmarks.mucar.score import table4_long

    frames = []
    for setting, scored in runs.items():
        if setting not in TABLE4_ROWS:
            continue
        model_id = _model_id(model, scored)
        why = reference.not_comparable(model, data if data is not None else scored, paper_model=TABLE4_MODEL)
        if why is None and _bare_name(model_id).lower() != TABLE4_MODEL:
            why = f"not the same model: {model_id} is not the paper's {TABLE4_MODEL}"
        long = table4_long(scored, n_resamples=n_resamples, seed=seed)
        cmp = reference.compare(long[["table", "row", "column", "value", "ci_low", "ci_high"]], NAME, table="Table 4",
                                model=model_id, why_not=why)
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



# -- what each section concludes, computed from its numbers (vlamb_nb.findings) ----------------------------------
FETCH = "vlamb-nb data fetch mucar"
#: the paper's claims about settings (Acc_p), as (a, b, direction of a against b, where the paper says it)
SETTING_CLAIMS = (("full", "q_i", "higher", "Table 3, context removed"),
                  ("full", "c_i", "higher", "Fig. 4, question removed"),
                  ("full", "c_q", "higher", "Fig. 4, image removed"),
                  ("full_zh", "full_ms", "higher", "Table 12, Chinese against Malay prompts"))
#: Table 4's claims on MUCAR Acc_p: the agent above Vanilla (the Table 10 prompt), CoT and CODIS prompting below it
STRATEGY_CLAIMS = (("full_agent", "full", "higher", "Table 4, OURS against Vanilla"),
                   ("full_cot", "full", "lower", "Table 4, CoT against Vanilla"),
                   ("full_codis", "full", "lower", "Table 4, CODIS against Vanilla"))
#: each setting as a sentence names it
SETTING_NAMES = {"full": "full input", "q_i": "no context (Q,I)", "c_i": "no question (C,I)",
                 "c_q": "no image (C,Q)", "full_zh": "the Chinese prompt", "full_ms": "the Malay prompt",
                 "full_cot": "CoT", "full_codis": "CODIS prompting", "full_agent": "the agent (three calls)",
                 "full_agent_unified": "the agent (one prompt)", "c_ambiguous": "'Is C ambiguous?'"}
#: the Table 2a row the offline stand-in is set beside (for orientation only: never a match)
DEFAULT_PAPER_ROW = "Qwen2.5-VL-7B-Instruct"
#: the outcomes the strict parser cannot read, as a sentence names them (one, many)
UNREAD = (("refusal", "refusal", "refusals"), ("ambiguous", "hedge between two letters", "hedges between two letters"),
          ("unparsed", "answer out of the format", "answers out of the format"),
          ("out_of_range", "letter beyond the options", "letters beyond the options"),
          ("generation_failed", "failed generation", "failed generations"))


def _size(items) -> str:
    from vlamb_nb.findings import plural

    return f"{plural(len(items), 'query')}, {plural(int(items['group'].nunique()), 'pair')}"


def _what(kind: str) -> str:
    return "the released data-all.json" if kind == "release" else "the generated sample"


def statistics_label(data: Any) -> str:
    """What the statistics stand on, as a table's title says it."""
    if data["release_kind"] == "release":
        return f"the released data-all.json ({_size(data['release'])})"
    return f"the generated sample ({_size(data['release'])}): not the paper's data"


def interval_methods(frame) -> str:
    """How a table's intervals were drawn, per metric, read from the table itself (its ``ci_method``)."""
    if "ci_method" not in frame:
        return "no interval"
    metric = frame["metric"] if "metric" in frame else frame["column"].astype(str).str.split().str[-1]
    found = dict.fromkeys(f"{m}: {h}" for m, h in zip(metric, frame["ci_method"], strict=True)
                          if isinstance(h, str) and h)
    return "; ".join(found) or "no interval"


def data_finding(data: Any) -> Any:
    """What the statistics, the audit and the pipeline stand on, and what the release adds where it is not here."""
    from vlamb_nb.findings import Finding, not_shown

    pipe = data["pipeline"]
    where = ("a generated sample in the release's schema (generated images)" if data["pipeline_kind"] == "sample"
             else f"the {data['pipeline_kind']} data")
    pipeline = f"The pipeline runs on {where}: {_size(pipe)}."
    if data["release_kind"] != "release":
        missing = not_shown("the statistics of the released data (Table 5, the quirks, the audit's release checks, "
                            "the published intervals)", "the released data-all.json", FETCH)
        return Finding(f"{pipeline} Not shown here: {missing.text} With it, they are computed on its 1,278 queries; "
                       "below, the generated sample stands in where a sample can show them.", None)
    return Finding(f"Statistics and the audit are computed on the released data-all.json ({_size(data['release'])})."
                   f" {pipeline}", True)


def table5_finding(ours, paper, kind: str) -> Any:
    """Table 5 recomputed beside the printed one: on the release, the cells that differ; on a generated sample,
    not comparable."""
    from vlamb_nb.findings import Finding, not_shown, plural

    if kind != "release":
        return not_shown("Table 5 recomputed from the release", "the released data-all.json", FETCH,
                         would=f"each printed count beside the release's; the table above counts the generated "
                               f"sample ({plural(int(ours.loc['Overall', 'Total']), 'query', 'queries')}), "
                               "which is not the paper's data")
    rows = {r: r for r in paper.index} | {"Dual-Amb": "Dual-ambiguity"}
    cells, off = 0, []
    for r in paper.index:
        for c in paper.columns:
            got = ours.loc[rows[r], c] if rows[r] in ours.index and c in ours.columns else None
            cells += 1
            if got is None or int(got) != int(paper.loc[r, c]):
                off.append(f"{rows[r]} {c} (printed {int(paper.loc[r, c])}, release {got})")
    text = (f"{cells - len(off)} of {plural(cells, 'printed count')} of Table 5 equal the release's"
            + (f"; {len(off)} do not: {', '.join(off)}." if off else "."))
    return Finding(text, not off, value=float(len(off)), n=cells)


def scenario_finding(info: dict[str, Any]) -> Any:
    """Whether Fig. 3's right panel (scenarios) could be drawn from the data, and what stands in for it."""
    from vlamb_nb.findings import Finding, plural

    if info.get("derivable"):
        return Finding(f"Fig. 3's scenarios are drawn from the data ({plural(info['labelled_queries'], 'query')} "
                       "labelled).", True)
    return Finding(f"Fig. 3's right panel (scenarios): the data has no scenario field (looked for: "
                   f"{', '.join(info.get('fields_looked_for', []))}), so the panel draws a stand-in, "
                   f"{info.get('stand_in')}, on {plural(int(info.get('stand_in_queries') or 0), 'query')}.", None)


def quirks_finding(counts: dict[str, int], kind: str) -> Any:
    """The data's quirks, counted (each one is what the pipeline must count rather than drop)."""
    from vlamb_nb.findings import Finding

    if not counts:
        return Finding(f"No quirk found in {_what(kind)}.", True)
    listed = ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))
    return Finding(f"In {_what(kind)}: {listed}. Each is kept and counted by the scoring (a singleton is a pair of "
                   "one; a group's category is its first query's).", True, value=float(sum(counts.values())))


def audit_finding(findings, kind: str) -> Any:
    """The audit's outcome in one sentence, by kind, and what the release would add when it is not here."""
    from vlamb_nb.findings import Finding, join, not_shown, plural

    bad = findings[~findings["ok"].astype(bool)]
    by = bad.groupby("kind").size().sort_values(ascending=False)
    text = (f"{plural(len(findings), 'check')} of the paper's printed numbers: {len(bad)} do not follow"
            + (f" ({', '.join(f'{k}: {v}' for k, v in by.items())}); each is listed below." if len(bad) else "."))
    out = [Finding(text, not len(bad), value=float(len(bad)), n=len(findings))]
    if kind != "release":
        out.append(not_shown("the checks against the release (Table 5's counts, the dual-ambiguity pairs)",
                             "the released data-all.json", FETCH, would="each printed count beside the release's"))
    return join(out)


def published_with_ci(table: str, data: Any):
    """A published table with Wilson intervals on the release's denominators (:func:`paper_table_with_ci`), or
    None when the release is not here (a generated sample's counts are no denominator of the paper's)."""
    return paper_table_with_ci(table, data["release"]) if data["release_kind"] == "release" else None


def published_ci_finding(frame, table: str = "Table 2a", column: str = "Overall Acc_p") -> Any:
    """How far the paper's own numbers separate its models: the best model's interval against the others'."""
    from vlamb_nb.findings import Finding, not_shown, plural, value_text

    if frame is None:
        return not_shown(f"{table} with intervals on the release's denominators", "the released data-all.json "
                         "(its queries and pairs per category)", FETCH,
                         would="each printed cell with an approximate Wilson 95% interval, and how many models "
                               "the best one's interval separates")
    part = frame[frame["column"] == column].dropna(subset=["ci_low"])
    if part.empty:
        return Finding(f"{table} {column}: no cell with an interval.", None)
    best = part.loc[part["value"].idxmax()]
    others = part.drop(index=best.name)
    overlap = others[others["ci_high"] >= best["ci_low"]]
    value = value_text(best["value"], best["ci_low"], best["ci_high"], method="Wilson", n=int(best["n"]),
                       n_of="pair" if column.endswith("Acc_p") else "query")
    return Finding(f"{table} {column}: the best printed row, {best['row']}, is {value}; {len(overlap)} of the "
                   f"other {plural(len(others), 'model')}' intervals reach it"
                   + (f" ({', '.join(overlap['row'])})" if len(overlap) else "")
                   + ": the paper's ranking at the top is " + ("not " if len(overlap) else "")
                   + "separated by its own numbers.", not len(overlap), value=float(len(overlap)), n=len(others))


def table3_finding() -> Any:
    """Table 3 as printed: how far every model falls without the context (Acc_p points)."""
    from vlamb_nb import reference
    from vlamb_nb.findings import Finding, plural

    t = reference.table_wide(NAME, "Table 3")
    drops = {r.replace(" (w/o)", ""): float(t.loc[r, "Overall Acc_p drop"]) for r in t.index if r.endswith("(w/o)")}
    low, high = min(drops.values()), max(drops.values())
    return Finding(f"Without the context, every one of the {plural(len(drops), 'model')} of Table 3 falls, by "
                   f"{low:.2f} ({min(drops, key=drops.get)}) to {high:.2f} ({max(drops, key=drops.get)}) Acc_p "
                   "points (as printed).", all(d > 0 for d in drops.values()), value=low, n=len(drops))


def answers_finding(scored, model_id: str) -> Any:
    """How the answers of one run read: what the strict parser read, right or wrong, and what it could not read
    (refusals, hedges, answers out of the format), with the lenient reading's credit beside it."""
    from vlamb_nb.findings import Finding, plural

    n = len(scored)
    oc = scored["outcome"].value_counts()
    read = int(scored["valid"].fillna(False).astype(bool).sum())
    right = scored["correct"].astype(bool)
    extra = int((scored.get("correct_lenient", right).astype(bool) & ~right).sum())
    unread = [plural(int(oc[k]), one, many) for k, one, many in UNREAD if oc.get(k, 0)]
    text = (f"{model_id}: the strict parser read {read} of {plural(n, 'answer')} ({100 * read / n:.0f}%), "
            f"{int(oc.get('correct', 0))} right and {int(oc.get('wrong', 0))} wrong"
            + (f"; it could not read {', '.join(unread)}" if unread else "")
            + (f"; the lenient reading credits {extra} of these" if extra else "") + ".") if n else "No answers."
    return Finding(text, read > 0, value=float(read), n=n)


def _bare_name(model_id: Any) -> str:
    """A model's name without its spec's kind or its hub owner (``openai:gpt-4o`` → ``gpt-4o``)."""
    from vlamb_nb.errors import SettingError
    from vlamb_nb.models.spec import ModelSpec

    try:
        name = ModelSpec.parse(str(model_id)).name or str(model_id)
    except SettingError:
        name = str(model_id)
    return name.rsplit("/", 1)[-1]


def paper_row_of(model_id: str) -> str | None:
    """The row of Table 2a that is ``model_id`` (a hub id, a served name), matched by name without case or
    punctuation (``Qwen/Qwen2.5-VL-7B-Instruct``, ``OpenGVLab/InternVL2_5-8B-MPO``); None for a model the paper
    did not run."""
    import re

    from vlamb_nb import reference

    def key(s: str) -> str:
        return re.sub(r"[^a-z0-9]", "", re.sub(r"-hf$", "", _bare_name(s).lower()))

    rows = {key(r): r for r in reference.load(NAME, "Table 2a")["row"].unique()}
    return rows.get(key(str(model_id)))


def _model_id(model: Any, scored: Any = None) -> str:
    info = getattr(model, "info", None)
    if info is not None:
        return str(info.model_id)
    if model is not None:
        return str(model)
    return str(scored["model"].iloc[0]) if scored is not None and "model" in scored else "ours"


def _why_not(model: Any, model_id: str, data: Any, paper_model: str) -> str | None:
    """Why ``model``'s numbers cannot be held against the paper's row ``paper_model``, or None."""
    from vlamb_nb import reference

    why = reference.not_comparable(model, data, paper_model=paper_model)
    if why is None and paper_row_of(model_id) != paper_model and model_id.lower() != paper_model.lower():
        why = f"not the same model: {model_id} is not the paper's {paper_model}"
    return why


def paper_vs_ours(scored, paper_row: str | None = None, *, model: Any = None, data: Any = None,
                  table: str = "Table 2a", n_resamples: int = 1000, seed: int = 0,
                  categories: list[str] | None = None):
    """One run beside one published row (``reference.compare``: paper value, ours, our interval, flags), labelled
    with the run's model. ``paper_row``: the row to set it beside (default: the model's own row, else
    :data:`DEFAULT_PAPER_ROW`); another model's row, a stand-in or a generated sample (``data``) is shown but
    never matched or counted (:func:`vlamb_nb.reference.not_comparable`); the scorer that decided the run
    (:func:`scorer_of`) is named on every row."""
    from vlamb_nb import reference

    model_id = _model_id(model, scored)
    row = paper_row or paper_row_of(model_id) or DEFAULT_PAPER_ROW
    long = results_long(scored, row, table, n_resamples=n_resamples, seed=seed, categories=categories)
    cmp = reference.compare(long[["table", "row", "column", "value", "ci_low", "ci_high"]], NAME, table=table,
                            model=model_id, why_not=_why_not(model, model_id, data if data is not None else scored,
                                                             row))
    cmp["scorer"] = scorer_of(scored)  # which decided each answer: the rule parser or an LLM judge
    return cmp


def paper_vs_ours_finding(comparison) -> Any:
    """What a paper-vs-ours table can say: why ours is not held against the printed row, or how many printed
    cells ours equals within rounding and holds inside its interval."""
    from vlamb_nb.findings import Finding, plural

    if comparison is None or not len(comparison):
        return Finding("Nothing to set beside the paper.", None)
    model = str(comparison["model"].iloc[0]) if "model" in comparison else "ours"
    rows = list(dict.fromkeys(comparison["row"].astype(str)))
    if comparison["match"].isna().all():
        return Finding(f"{model}'s numbers stand beside the paper's {'row' if len(rows) == 1 else 'rows'} "
                       f"{', '.join(rows)} for orientation only: {comparison['flag'].iloc[0].split(';')[0]}; no cell "
                       "is counted as a match.", None, n=len(comparison))
    inside = comparison["paper_in_ci"] if "paper_in_ci" in comparison else None
    k = int(inside.fillna(False).astype(bool).sum()) if inside is not None else 0
    known = int(inside.notna().sum()) if inside is not None else 0
    m = int(comparison["match"].fillna(False).astype(bool).sum())
    return Finding(f"{model}: {m} of {plural(len(comparison), 'published cell')} equal ours within rounding; the "
                   f"paper's value lies inside our 95% interval in {k} of {known}.", known > 0 and k == known,
                   value=float(k), n=known)


def setting_tests(runs: dict[str, Any], pairs, *, n_resamples: int = 1000, seed: int = 0):
    """Paired tests between settings of one model on the pairs both answered (the base's ``compare_runs``: the
    paired difference a − b with its interval, McNemar's test and the discordant units), one row per (a, b) of
    ``pairs`` both run and metric; an addition of this package (the paper reports no tests)."""
    import pandas as pd

    from vlamb_nb.benchmarks.mucar.benchmark import BENCHMARK

    rows = []
    for a, b, *_ in pairs:
        if a not in runs or b not in runs:
            continue
        res = BENCHMARK.compare_runs(runs[a], runs[b], n_resamples=n_resamples, seed=seed)
        res.insert(0, "b_setting", b)
        res.insert(0, "a_setting", a)
        rows.append(res)
    cols = ["a_setting", "b_setting", "metric", "a", "b", "diff", "ci_low", "ci_high", "ci_method", "p", "test",
            "discordant_a_only", "discordant_b_only", "n", "unit"]
    return (pd.concat(rows, ignore_index=True)[cols] if rows else pd.DataFrame(columns=cols))


def claim_findings(tests, claims, model_id: str, *, metric: str = "Acc_p") -> list[Any]:
    """The paper's claims (``(a, b, direction, where)``) held against this run's paired tests on ``metric``; a
    claim whose settings were not both run is not shown, with the parameter that runs them."""
    from dataclasses import replace

    from vlamb_nb.findings import difference, not_shown

    out = []
    for a, b, direction, where in claims:
        row = tests[(tests["a_setting"] == a) & (tests["b_setting"] == b) & (tests["metric"] == metric)] \
            if len(tests) else tests
        if not len(row):
            out.append(not_shown(f"{where} ({a} against {b})", "both settings run on the same pairs",
                                 f"settings / table4_settings with {a} and {b}"))
            continue
        r = row.iloc[0]
        found = difference(SETTING_NAMES.get(a, a), SETTING_NAMES.get(b, b), r["diff"], r["ci_low"], r["ci_high"],
                           what=f"{metric} of {model_id}", p=r["p"], n=int(r["n"]), n_of=str(r["unit"]),
                           method=f"paired bootstrap over {r['unit']}s, McNemar's p",
                           discordant=(int(r["discordant_a_only"]), int(r["discordant_b_only"])), claim=direction)
        out.append(replace(found, text=f"{where}: {found.text[:1].lower()}{found.text[1:]}"))
    return out


def insensitive_finding(summaries: list[dict[str, Any]]) -> Any:
    """The image-insensitive pattern per answering model: groups answered with one letter although their golds
    differ, with what it does to Acc_q and Acc_p."""
    from vlamb_nb.findings import Finding, join

    out = []
    for s in summaries:
        k, n = int(s["image_insensitive_groups"]), int(s["groups_with_distinct_golds"])
        out.append(Finding(f"{s['label']} answered {k} of {n} groups whose golds differ with one letter for every "
                           f"image (Acc_q {s['Acc_q']:.1f}, Acc_p {s['Acc_p']:.1f})"
                           + (": the paper's pattern for Deepseek-VL-Tiny and Kimi-VL." if n and k == n else "."),
                           True if n and k == n else None,
                           value=float(k), n=n))
    return join(out)


def judge_finding(summary: dict[str, Any], parser, judge_id: str) -> Any:
    """The judge's reading beside the strict parser's: Acc_p both ways and how often the two readers agree
    (Table 7 reports the judge against people, a different pair of readers)."""
    from vlamb_nb.findings import Finding, plural, value_text

    by = {r["metric"]: r for r in summary["overall"]}
    ours = parser.set_index("metric")
    agree = summary["agreement_with_parser"]
    p = by["Acc_p"]
    kappa = agree.get("kappa_ci") or [None, None]
    return Finding(f"The judge ({judge_id}) reads Acc_p "
                   f"{value_text(p['value'], p['ci_low'], p['ci_high'], method=p.get('ci_method') or None)} where the "
                   f"strict parser reads {float(ours.loc['Acc_p', 'value']):.1f}; judge and parser agree on "
                   f"{agree['percent_agreement']:.1f}% of {plural(int(agree['n']), 'query', 'queries')} (Cohen's "
                   f"kappa {agree['cohen_kappa']:.2f} [{kappa[0]:.2f}, {kappa[1]:.2f}])"
                   + (f"; {plural(summary['no_verdict'], 'output')} got no verdict" if summary["no_verdict"] else "")
                   + ".", True, value=float(p["value"]), n=int(agree["n"]))


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


def ablations_vs_paper(runs: dict[str, Any], paper_row: str | None, *, model: Any = None, data: Any = None,
                       n_resamples: int = 1000, seed: int = 0):
    """Each ablation run beside its published numbers (:data:`ABLATION_ROWS`), on the six non-dual categories as
    the paper reports them: (Q,I) beside Table 3's w/o row, (C,I) and (C,Q) beside the values §5.1 gives for
    Fig. 4, the Chinese and Malay prompts beside Table 12's rows without confusing options, full input beside
    Table 3's w/ row and Fig. 4. ``paper_row`` is the paper's name of the model; a run's scorer is named
    (:func:`score_with`), a cell the paper measured with confusing options says so, and another model's or a
    generated sample's numbers are shown but never matched (:func:`vlamb_nb.reference.not_comparable`)."""
    import pandas as pd

    from vlamb_nb import reference
    from vlamb_nb.benchmarks.mucar.data import NON_DUAL_CATEGORIES

    frames = []
    for setting, scored in runs.items():
        own = paper_row or paper_row_of(_model_id(model, scored)) or DEFAULT_PAPER_ROW
        for table, pattern in ABLATION_ROWS.get(setting, ()):
            row = pattern.format(row=own)
            long = results_long(scored, row, table, categories=list(NON_DUAL_CATEGORIES), n_resamples=n_resamples,
                                seed=seed)
            published = reference.load(NAME, table=table)
            published = published[published["row"] == row]
            if table != "Table 12":  # Table 3 and Fig. 4 print the Overall cells only
                long = long[long["column"].isin(published["column"]) if len(published) else
                            long["column"].str.startswith("Overall")]
            model_id = _model_id(model, scored)
            cmp = reference.compare(long[["table", "row", "column", "value", "ci_low", "ci_high"]], NAME, table=table,
                                    model=model_id, why_not=_why_not(model, model_id, data if data is not None
                                                                     else scored, own))
            cmp.insert(0, "setting", setting)
            cmp["scorer"] = scorer_of(scored)
            cmp["options"] = WITH_CONFUSING.get(table, "as the paper (without confusing options)")
            frames.append(cmp)
    if not frames:
        raise DataError(f"no ablation run among {sorted(runs)}; run one of {', '.join(ABLATION_ROWS)}")
    return pd.concat(frames, ignore_index=True)
