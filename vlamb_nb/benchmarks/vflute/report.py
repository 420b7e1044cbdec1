"""V-FLUTE notebook helpers (the notebook only calls these): the data source, runs to draw, the §5.3
section, paper-vs-ours rows. The figures themselves are in :mod:`.plots`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


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


def figure_runs(bench, runs: dict[str, Any], predictions: dict[str, str] | None, source: Any,
                scorer: Any) -> dict[str, dict[str, Any]]:
    """Tables (``Fig. 6`` drops, ``F1 curve``) for every run to draw: the scored ``runs`` plus each file in
    ``predictions`` (name -> our store JSONL or an official prediction CSV on ``source``), scored alike.

    This is how Figs. 6 and 11 are drawn "from any predictions available": the official repository's
    per-model prediction files can be passed next to a run of ours.
    """
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
    return {name: bench.tables(s, model=name) for name, s in scored.items()}


def adequacy_section(scored, labels: str | os.PathLike | None, *, n_resamples: int = 1000) -> dict[str, Any] | None:
    """The notebook's §5.3 section: None without a labels file, else the report and the paper comparison."""
    from vlamb_nb.benchmarks.vflute.adequacy import adequacy_comparison, adequacy_report, read_adequacy_labels

    if labels is None:
        return None
    rep = adequacy_report(scored, read_adequacy_labels(labels), n_resamples=n_resamples)
    return {"report": rep, "comparison": adequacy_comparison(rep),
            "summary": {k: v for k, v in rep.items() if k != "curve"}}


def comparison(bench, scored, row: str):
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

