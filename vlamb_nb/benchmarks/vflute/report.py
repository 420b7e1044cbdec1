"""V-FLUTE notebook helpers (the notebook only calls these): the data source, runs to draw, the §5.3
section, paper-vs-ours rows. The figures themselves are in :mod:`.plots`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from vlamb_nb.benchmarks.base import NotebookData
from vlamb_nb.errors import DataError


def resolve_source(source: str | os.PathLike | None, *, n: int = 16, seed: int = 0,
                   release: bool = False) -> tuple[Path, str]:
    """The data folder and a label: ``source`` when given; with ``release``, the released test split beside the
    checkout when present (statistics need no images); else a generated sample in the official format."""
    from vlamb_nb.benchmarks.vflute.benchmark import BENCHMARK
    from vlamb_nb.paths import shared_data_dir

    if source is not None:
        return Path(source), "given files"
    shared = shared_data_dir()
    if release and shared is not None and (shared / "vflute" / "vflute-v2-test.json").is_file():
        return shared / "vflute", "released test split (beside the checkout)"
    from vlamb_nb.paths import sample_dir

    folder = sample_dir("vflute", n, seed)
    return BENCHMARK.make_sample(folder, n=n, seed=seed), f"generated sample (n={n}, seed={seed})"


def notebook_data(source: str | os.PathLike | None = None, *, n: int = 8, seed: int = 0,
                  profile: str = "offline") -> NotebookData:
    """The notebook's data (the same shape in every paper's report). The paper profile: statistics and the pipeline
    on ``source`` (with its images) or, when None, on the fetched test split (``vlamb-nb data fetch vflute``; images
    embedded). The offline profile: statistics on ``source`` or the released test split beside the checkout (no
    images needed), the pipeline on a generated sample with images (a demonstration, whatever the source). The
    folders are returned too (few-shot and prediction files); ``data`` says what the pipeline's items are."""
    from vlamb_nb.benchmarks.vflute.benchmark import BENCHMARK
    from vlamb_nb.datahome import choose, sample_identity, tag

    if profile != "offline":
        choice = choose("vflute", source, profile=profile)
        assert choice is not None
        folder = Path(choice.source)
        items = tag(BENCHMARK.load(folder), choice.identity)
        kind = "released test split (fetched)" if choice.identity.kind == "release" else "given files"
        return NotebookData(release=items, release_kind=kind, pipeline=items, pipeline_kind=kind,
                            extra={"release_folder": folder, "pipeline_folder": folder})
    folder, kind = resolve_source(source, release=True)
    release = BENCHMARK.load(folder)
    demo, demo_kind = resolve_source(None, n=n, seed=seed)
    pipeline = BENCHMARK.load(demo)
    ident = sample_identity("vflute", n_items=len(pipeline), seed=seed)
    tag(pipeline, ident)
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


def paper_vs_ours(bench, scored, row: str):
    """Paper vs ours for one Table 4 row (None when ``row`` is not a published row)."""
    from vlamb_nb import reference

    if not row:
        return None
    return reference.compare(bench.comparison_rows(scored, row=row), "vflute", table="Table 4")


def random_baseline_section(items) -> dict[str, Any]:
    """Table 4's random baseline: the expectation per dataset on ``items``' label mix and the published 49.82."""
    from vlamb_nb.benchmarks.vflute.score import random_baseline, random_baseline_comparison

    rb = random_baseline(items)
    return {"by dataset": rb.round(2), "comparison": random_baseline_comparison(rb)}


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
