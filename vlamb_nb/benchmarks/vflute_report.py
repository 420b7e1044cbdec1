"""V-FLUTE figures and notebook helpers (the notebook only calls these).

Figures: Figs. 8-9 (claim / explanation length by source), Fig. 6 (% drop F1@0 → F1@0.6 by
dataset), Fig. 11 (F1 vs ExplanationScore threshold per dataset), and the §5.3 PR curve of
ExplanationScore against human adequacy labels (when a labels file is given).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from vlamb_nb.benchmarks.vflute_data import DATASETS, SOURCE_NAMES


def resolve_source(source: str | os.PathLike | None, *, n: int = 16, seed: int = 0) -> tuple[Path, str]:
    """The data folder and a label: ``source`` when given, else a generated sample in the official format."""
    from vlamb_nb.benchmarks.vflute import BENCHMARK

    if source is not None:
        return Path(source), "given files"
    folder = Path(tempfile.mkdtemp(prefix="vflute-sample-"))
    return BENCHMARK.make_sample(folder, n=n, seed=seed), f"generated sample (n={n}, seed={seed})"


def plot_lengths(items):
    """Figs. 8-9: claim and explanation length (characters) by source dataset."""
    from vlamb_nb.plots import new_figure

    fig, axes = new_figure(9, 3.2, ncols=2)
    sources = [s for s in SOURCE_NAMES if s in set(items["source_dataset"])]
    for ax, col, title in ((axes[0], "claim", "Fig. 8: caption length"),
                           (axes[1], "explanation", "Fig. 9: explanation length")):
        data = [items.loc[items["source_dataset"] == s, col].str.len().to_numpy() for s in sources]
        ax.boxplot(data, tick_labels=[SOURCE_NAMES[s] for s in sources])
        ax.set_title(title)
        ax.set_ylabel("characters")
        ax.tick_params(axis="x", rotation=30)
    fig.tight_layout()
    return fig


def figure_runs(bench, runs: dict[str, Any], predictions: dict[str, str] | None, source: Any,
                scorer: Any) -> dict[str, dict[str, Any]]:
    """Tables (``Fig. 6`` drops, ``F1 curve``) for every run to draw: the scored ``runs`` plus each file in
    ``predictions`` (name -> our store JSONL or an official prediction CSV on ``source``), scored alike.

    This is how Figs. 6 and 11 are drawn "from any predictions available": the official repository's
    per-model prediction files can be passed next to a run of ours.
    """
    from vlamb_nb.benchmarks.vflute_files import _score_file
    from vlamb_nb.errors import SettingError
    from vlamb_nb.explanation_scores import get_scorer

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


def plot_drop(drops: dict[str, Any]):
    """Fig. 6: % drop in F1 from threshold 0 to 0.6, per dataset, one bar group per model."""
    import numpy as np

    from vlamb_nb.plots import new_figure

    fig, ax = new_figure(8, 3.5)
    names = list(DATASETS.values())
    x = np.arange(len(names))
    width = 0.8 / max(len(drops), 1)
    for k, (model, df) in enumerate(drops.items()):
        vals = df.set_index("dataset")["drop_pct"].reindex(names)
        pos = x + k * width - 0.4 + width / 2
        ax.bar(pos, vals.to_numpy(), width, label=model)  # NaN: no bar
        for xi in pos[vals.isna().to_numpy()]:  # say why a bar is absent instead of drawing a 0 drop
            ax.text(xi, 0, "n/a", ha="center", va="bottom", fontsize=7, rotation=90, color="0.4")
    ax.set_xticks(x, names, rotation=20)
    ax.set_ylabel("Drop in F1 score (%)")
    ax.set_title("Fig. 6: drop in F1 from ExplanationScore threshold 0 to 0.6 (n/a: F1@0 is 0 or no items)")
    ax.legend()
    fig.tight_layout()
    return fig


def plot_f1_curves(curves: dict[str, Any], *, min_threshold: float = 0.4):
    """Fig. 11: F1 vs threshold (≥ ``min_threshold``) per dataset, one line per model."""
    from vlamb_nb.plots import new_figure

    fig, axes = new_figure(10, 5.5, nrows=2, ncols=3, sharey=True)
    for ax, (key, name) in zip(axes.ravel(), DATASETS.items(), strict=True):
        for model, c in curves.items():
            g = c[(c["dataset"] == key) & (c["threshold"] >= min_threshold)]
            if len(g):
                ax.plot(g["threshold"], g["f1"], label=model)
        ax.set_title(name)
        ax.set_xlabel("ExplanationScore threshold")
    axes[0, 0].set_ylabel("macro-F1")
    axes[0, 0].legend()
    fig.suptitle("Fig. 11: F1 vs explanation-score threshold by dataset")
    fig.tight_layout()
    return fig


def plot_adequacy_pr(report: dict[str, Any]):
    """§5.3: precision-recall curve of ExplanationScore as a predictor of human adequacy.

    Marks our max-F1 threshold and the best threshold with P and R >= 0.75; the paper's values
    (PR-AUC 0.79, max F1 0.77 at 0.53, 0.6) are in the caption for comparison.
    """
    import numpy as np

    from vlamb_nb.plots import new_figure

    curve = report["curve"]
    prec, rec, thr = (np.asarray(curve[k], dtype=float) for k in ("precision", "recall", "thresholds"))
    fig, ax = new_figure(5.0, 4.0)
    ax.plot(rec, prec, drawstyle="steps-post", label=f"ExplanationScore (PR-AUC {report['pr_auc']:.2f})")
    for key, marker, text in (("max_f1_threshold", "o", "max F1"), ("p75_r75_threshold", "s", "P,R ≥ 0.75")):
        t = report.get(key)
        if t is None:
            continue
        i = int(np.flatnonzero(thr == t)[0])
        ax.plot(rec[i], prec[i], marker, label=f"{text} at t={t:.3f}")
    ax.set_xlabel("recall (adequate)")
    ax.set_ylabel("precision (adequate)")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    sub = " (substitute scorer)" if report.get("scorer_substitute") else ""
    ax.set_title(f"ExplanationScore vs human adequacy, n={report['n_used']}{sub}\n"
                 "paper: PR-AUC 0.79, max F1 0.77 at 0.53; P,R ≥ 0.75 at 0.6", fontsize=9)
    ax.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    return fig


def adequacy_section(scored, labels: str | os.PathLike | None, *, n_resamples: int = 1000) -> dict[str, Any] | None:
    """The notebook's §5.3 section: None without a labels file, else the report and the paper comparison."""
    from vlamb_nb.benchmarks.vflute_files import adequacy_comparison, adequacy_report, read_adequacy_labels

    if labels is None:
        return None
    rep = adequacy_report(scored, read_adequacy_labels(labels), n_resamples=n_resamples)
    return {"report": rep, "comparison": adequacy_comparison(rep),
            "summary": {k: v for k, v in rep.items() if k != "curve"}}


def demo_model(spec: str, quantization: str | None = "4bit"):
    """A model for the notebook's pipeline demonstration (``tiny:FAMILY`` builds a tiny random checkpoint)."""
    from vlamb_nb.models import load_model

    return load_model(spec, quantization=quantization)


def comparison(bench, scored, row: str):
    """Paper vs ours for one Table 4 row (None when ``row`` is not a published row)."""
    from vlamb_nb import reference

    if not row:
        return None
    return reference.compare(bench.comparison_rows(scored, row=row), "vflute", table="Table 4")
