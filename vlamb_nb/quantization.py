"""What 4-bit changes: one model's runs of the same items at NF4, 8-bit and 16-bit, compared.

Everyone fits a 7B model on one GPU by loading it in 4-bit; no paper says whether that moves its numbers. Given a
paper's runs of one model and setting at several quantizations (``{"4bit": scored, "8bit": ..., "none": ...}``:
a sweep's ``quantization: [4bit, 8bit, none]`` axis writes them, and so do notebooks run with ``-p
quantization=...``), :func:`quantization_comparison` gives, against the unquantized run (or the one named):

- every declared metric's paired difference with its interval and test (``Benchmark.compare_runs``);
- the two one-sided tests of equivalence within a stated ``margin`` (percentage points; :func:`vlamb_nb.stats.
  equivalence.tost`): "the same within 2 points" is a claim that needs its own test, never the absence of a
  significant difference;
- the items that flip (right at one precision, wrong at the other), each named;
- the memory each load took and the tokens per second each run generated (from the runs' own timings).

This module names no paper.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vlamb_nb.errors import DataError

#: the default equivalence margin, percentage points of a metric: about the noise floor of a 1,000-item test set
#: between two runs that disagree on one item in ten (:mod:`vlamb_nb.stats.power`)
MARGIN = 2.0
#: what an unquantized run is called, whichever dtype it loaded in
REFERENCE = "none"


@dataclass
class QuantizationComparison:
    """``table``: one row per quantization and metric against the reference; ``flips``: one row per item whose
    0/1 value differs; ``resources``: memory and tokens/s per quantization; ``conclusion``: one line."""

    paper: str
    reference: str
    margin: float
    table: Any
    flips: Any
    resources: Any
    conclusion: str = ""
    notes: list[str] = field(default_factory=list)

    def markdown(self) -> str:
        from vlamb_nb.stats.result import markdown_table as table

        parts = [f"## {self.paper}: quantizations against {self.reference} (equivalence margin ±{self.margin:g} "
                 "points)", "", self.conclusion, "", table(self.table), "", "### Memory and speed", "",
                 table(self.resources), "", f"### Items that flip ({len(self.flips)})", ""]
        parts += [table(self.flips.head(50))] if len(self.flips) else ["none"]
        parts += [""] + [f"- {n}" for n in self.notes]
        return "\n".join(parts).rstrip() + "\n"

    def to_dict(self) -> dict[str, Any]:
        import json

        return {"paper": self.paper, "reference": self.reference, "margin": self.margin,
                "conclusion": self.conclusion, "notes": self.notes,
                **{k: json.loads(getattr(self, k).to_json(orient="records")) for k in ("table", "flips", "resources")}}


def label(quantization: str | None) -> str:
    """A run's quantization as one word: ``4bit``, ``8bit`` or ``none`` (16-bit or full precision)."""
    return REFERENCE if quantization in (None, "", "none", "None", "bf16", "fp16") else str(quantization)


def throughput(scored: Any) -> dict[str, float]:
    """Tokens generated per second of generation, from a run's own answers (each answer's ``completion_tokens``
    and ``seconds``: a batch's time shared by its requests). A scored frame that kept no timings (one row per
    item where a turn was repaired) is read from its store, every turn counted."""
    record = (getattr(scored, "attrs", None) or {}).get("record") or {}
    path = str(record.get("path", "")).removesuffix(".record.json") + ".jsonl" if record.get("path") else ""
    if scored is not None and {"completion_tokens", "seconds"} <= set(getattr(scored, "columns", ())):
        tok = np.nansum(scored["completion_tokens"].astype(float).to_numpy())
        sec = np.nansum(scored["seconds"].astype(float).to_numpy())
    elif path and Path(path).is_file():
        return store_throughput(path)
    else:
        return {"tokens": math.nan, "seconds": math.nan, "tokens_per_s": math.nan}
    return {"tokens": float(tok), "seconds": float(sec), "tokens_per_s": float(tok / sec) if sec > 0 else math.nan}


def store_throughput(path: Any) -> dict[str, float]:
    """:func:`throughput` of every answer a prediction store holds (every turn)."""
    from vlamb_nb.store import read_store

    tok = sec = 0.0
    for _, rec in read_store(path):
        tok += float(rec.get("completion_tokens") or 0)
        sec += float(rec.get("seconds") or 0)
    return {"tokens": tok, "seconds": sec, "tokens_per_s": tok / sec if sec > 0 else math.nan}


def quantization_comparison(paper: str, runs: dict[str, Any], *, reference: str | None = None, margin: float = MARGIN,
                            memory: dict[str, float] | None = None, n_resamples: int = 2000, alpha: float = 0.05,
                            seed: int = 0) -> QuantizationComparison:
    """``runs``: ``{quantization: scored}`` of one model and setting (at least two); ``reference``: the run the
    others are compared with (default ``none``, else the first); ``margin``: the equivalence margin in percentage
    points; ``memory``: GiB each load took (a sweep records the weights' bytes), shown beside tokens/s."""
    import pandas as pd

    from vlamb_nb.benchmarks import get_benchmark
    from vlamb_nb.stats.common import paired_scores
    from vlamb_nb.stats.equivalence import tost

    runs = {label(k): v for k, v in runs.items()}
    if len(runs) < 2:
        raise DataError(f"a quantization comparison needs runs at two quantizations at least, got {list(runs)}")
    ref = label(reference) if reference is not None else (REFERENCE if REFERENCE in runs else next(iter(runs)))
    if ref not in runs:
        raise DataError(f"no run at the reference quantization {ref!r}; the runs are {', '.join(runs)}")
    bench = get_benchmark(paper)
    metrics = [m for m in bench.metrics if m.compare]
    rows, flips = [], []
    records = bench.recorded(runs)  # each run as its record: what the test and the equivalence read
    for q, rec in records.items():
        if q == ref:
            continue
        tested = bench.compare_runs(rec, records[ref], n_resamples=n_resamples, seed=seed)
        for m, sc, k, dropped in paired_scores(paper, metrics, rec, records[ref]):
            if not sc.slice == m.overall:
                continue
            hit = tested[(tested["metric"] == m.name) & (tested["slice"] == sc.slice)].iloc[0]
            eq = tost(sc.values[0], sc.values[1], margin / 100, m.paired_statistic(sc.gold), clusters=sc.clusters,
                      alpha=alpha, n_resamples=n_resamples, seed=seed + k)
            row = {"quantization": q, "reference": ref, "metric": m.name, "value": hit["a"], "reference_value": hit["b"],
                   "diff": hit["diff"], "ci_low": hit["ci_low"], "ci_high": hit["ci_high"], "p": hit["p"],
                   "test": hit["test"], "tost_low": 100 * eq.ci_low, "tost_high": 100 * eq.ci_high,
                   "tost_p": eq.p, "equivalent": eq.extra["equivalent"], "n": len(sc.values[0]),
                   "dropped": dropped["a"] + dropped["b"]}
            if m.zero_one:
                a, b = sc.values
                changed = np.flatnonzero(a != b)
                row["flips"] = int(len(changed))
                flips += [{"quantization": q, "metric": m.name, "key": sc.keys[i] if sc.keys else str(i),
                           "at_" + q: int(a[i]), "at_" + ref: int(b[i]),
                           "change": "lost" if a[i] < b[i] else "gained"} for i in changed]
            rows.append(row)
    table = pd.DataFrame(rows)
    res_rows = []
    for q, scored in runs.items():
        t = throughput(scored)
        res_rows.append({"quantization": q, "memory_gib": (memory or {}).get(q, math.nan), **t})
    resources = pd.DataFrame(res_rows)
    out = QuantizationComparison(paper, ref, margin, table, pd.DataFrame(flips), resources)
    out.conclusion = _conclusion(out)
    out.notes = [f"equivalent: the {100 * (1 - 2 * alpha):.0f}% paired bootstrap interval of the difference lies "
                 f"inside ±{margin:g} points (two one-sided tests at α = {alpha:g})",
                 "tokens/s: tokens generated over the seconds the runner timed (a batch's time shared by its requests)"]
    return out


def _conclusion(c: QuantizationComparison) -> str:
    from vlamb_nb.stats.result import format_p

    bits = []
    for r in c.table.itertuples():
        verdict = "equivalent" if r.equivalent else "not shown equivalent"
        flips = f", {int(r.flips)} item(s) flip" if hasattr(r, "flips") and r.flips == r.flips else ""
        bits.append(f"{r.quantization} vs {r.reference} {r.metric} {r.diff:+.1f} points (p = {format_p(r.p)}), "
                    f"{verdict} within ±{c.margin:g}{flips}")
    return f"{c.paper}: " + "; ".join(bits) + "."


def from_stores(stores: list[Any], *, source: Any, options: dict[str, Any] | None = None, **kwargs: Any):
    """The comparison of prediction stores of one model, paper and setting at different quantizations (each
    store's quantization read from its records), scored against ``source``."""
    from vlamb_nb.compare import score_store

    runs, paper = {}, None
    for path in stores:
        run = score_store(path, source=source, options=options)
        q = label(_quantization_of(path))
        if q in runs:
            raise DataError(f"two stores at quantization {q!r}: give one run per quantization", source=str(path))
        if paper is not None and run.paper != paper:
            raise DataError(f"stores of two papers ({paper}, {run.paper}): compare one paper's runs", source=str(path))
        paper = run.paper
        runs[q] = run.scored
    return quantization_comparison(str(paper), runs, **kwargs)


def _quantization_of(path: Any) -> str | None:
    """The quantization a store's first record says its model was loaded at."""
    from vlamb_nb.store import read_store

    for _, rec in read_store(path):
        model = rec.get("model") or {}
        return model.get("quantization") if isinstance(model, dict) else None
    raise DataError("the store holds no answers", source=str(path))
