"""The result type every statistic returns: estimate, interval, p-value, n, method and seed.

Own code: a frozen dataclass that renders as text, as a JSON-able dict (``notebook.record``) and, through
pandas, as a tidy DataFrame (:func:`results_frame`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

NAN = float("nan")


#: the tests whose p-value a column ``<test>_p`` holds (``mcnemar_p``, ``paper_p``); any other ``<name>_p`` is a
#: value of its own (MUCAR's pair accuracy ``Acc_p``), never formatted as a p-value
P_STEMS = frozenset({"mcnemar", "koehn", "cmh", "paper", "published", "holm", "bh", "adj", "raw", "perm",
                     "permutation", "bootstrap", "exact", "fisher", "chi2", "z", "t", "wilcoxon", "tost", "test",
                     "paired", "sign", "binom", "binomial", "lr", "wald", "gee"})


def is_p_column(name: Any) -> bool:
    """A column of p-values, the one rule of the notebooks, pages and exports: ``p``, ``p_holm``, ``p_value``,
    ``p (Holm)`` and ``<test>_p`` for a test of :data:`P_STEMS` (``mcnemar_p``); ``Acc_p`` is a metric."""
    k = str(name).strip()
    low = k.lower()
    if re.fullmatch(r"p(_\w+)?|\w*p_?values?\w*|p \(.*\)|p-value", low):
        return True
    m = re.fullmatch(r"(\w+)_p", k)
    return m is not None and m.group(1) in P_STEMS


def format_p(p: Any) -> str:
    """A p-value as every table, page and card prints it: "<0.001" below 0.001 (a resampled or exact p is never
    0), else 3 significant digits; "–" for none."""
    if p is None or isinstance(p, bool) or not isinstance(p, int | float | np.floating | np.integer):
        return "–"
    p = float(p)
    if not math.isfinite(p):
        return "–"
    return "<0.001" if p < 0.001 else f"{p:.3g}"


def markdown_table(df: Any, floatfmt: str = ".4g") -> str:
    """A frame as a markdown table (tabulate, through pandas), or as aligned text where tabulate is missing."""
    try:
        return df.to_markdown(index=False, floatfmt=floatfmt)
    except ImportError:
        return df.to_string(index=False)


@dataclass(frozen=True)
class Result:
    """One estimate with its interval and test: the currency of tables and error-bar plots."""

    estimate: float
    ci_low: float = NAN
    ci_high: float = NAN
    p: float = NAN
    n: int = 0
    method: str = ""
    seed: int | None = None
    name: str = ""
    alpha: float = 0.05
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict (NaN becomes None so ``notebook.record`` stays valid JSON)."""
        d = asdict(self)
        return {k: _clean(v) for k, v in d.items()}

    def scaled(self, factor: float = 100.0) -> Result:
        """Estimate and interval times ``factor`` (papers print percentages)."""
        return replace(self, estimate=self.estimate * factor, ci_low=self.ci_low * factor,
                       ci_high=self.ci_high * factor)

    def named(self, name: str) -> Result:
        return replace(self, name=name)

    def __str__(self) -> str:
        s = f"{self.name + ': ' if self.name else ''}{self.estimate:.4g}"
        if math.isfinite(self.ci_low) or math.isfinite(self.ci_high):
            s += f" [{self.ci_low:.4g}, {self.ci_high:.4g}]"
        if math.isfinite(self.p):
            s += f" p={self.p:.3g}"
        return s + f" (n={self.n}, {self.method})"


def _clean(v: Any) -> Any:
    if isinstance(v, float | np.floating):
        return None if not math.isfinite(float(v)) else float(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    return v


RESULT_COLUMNS = ["name", "estimate", "ci_low", "ci_high", "p", "n", "method", "seed", "alpha"]


def results_frame(results: Iterable[Result] | Mapping[str, Result]):
    """A tidy DataFrame, one row per result (a mapping's keys fill empty names)."""
    import pandas as pd

    if isinstance(results, Mapping):
        items = [r if r.name else r.named(str(k)) for k, r in results.items()]
    else:
        items = list(results)
    bad = [type(r).__name__ for r in items if not isinstance(r, Result)]
    if bad:
        raise TypeError(f"results_frame expects Result objects, got {bad[0]}")
    rows = [{c: getattr(r, c) for c in RESULT_COLUMNS} for r in items]
    df = pd.DataFrame(rows, columns=RESULT_COLUMNS)
    return df.astype({"estimate": float, "ci_low": float, "ci_high": float, "p": float})
