"""Multiple testing: Holm (family-wise error) and Benjamini-Hochberg (false discovery rate).

Library: statsmodels ``multipletests`` computes Benjamini-Hochberg. Own: Holm's step-down, in numpy with
statsmodels' arithmetic (the same numbers, tested against it): statsmodels runs a full garbage collection on
every Holm call, a third of a second each once torch is loaded, which a notebook adjusting a dozen families paid
a dozen times. Also own: the input checks (no NaN, each p in [0, 1]), accepting
:class:`~vlamb_nb.stats.result.Result` objects, and :func:`adjust`, which returns the results with their p-values
adjusted and the method noted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from vlamb_nb.errors import DataError, SettingError
from vlamb_nb.stats.result import Result


def _pvals(pvals: Any) -> np.ndarray:
    p = np.asarray([r.p if isinstance(r, Result) else r for r in pvals], dtype=float)
    if p.ndim != 1:
        raise DataError("p-values must be a flat sequence")
    if np.isnan(p).any() or (p < 0).any() or (p > 1).any():
        raise DataError("p-values must lie in [0, 1] (no NaN)")
    return p


def _multipletests(pvals: Any, method: str) -> np.ndarray:
    p = _pvals(pvals)
    if len(p) == 0:
        return np.empty(0)
    from statsmodels.stats.multitest import multipletests

    return np.asarray(multipletests(p, method=method)[1], dtype=float)


def holm(pvals: Any) -> np.ndarray:
    """Holm step-down adjusted p-values (family-wise error), in input order.

    Sorted ascending, the i-th of m is multiplied by m - i, made non-decreasing and capped at 1: statsmodels'
    ``multipletests(method="holm")`` step for step, without its garbage collection.
    """
    p = _pvals(pvals)
    order = np.argsort(p)
    adjusted = np.maximum.accumulate(p[order] * np.arange(len(p), 0, -1)) if len(p) else np.empty(0)
    adjusted[adjusted > 1] = 1
    out = np.empty_like(adjusted)
    out[order] = adjusted
    return out


def benjamini_hochberg(pvals: Any) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (false discovery rate), in input order (statsmodels)."""
    return _multipletests(pvals, "fdr_bh")


def adjust(results: Sequence[Result], method: str = "holm") -> list[Result]:
    """The same results with p-values adjusted for the family (``holm`` or ``bh``)."""
    funcs = {"holm": holm, "bh": benjamini_hochberg, "benjamini_hochberg": benjamini_hochberg}
    if method not in funcs:
        raise SettingError(f"unknown correction {method!r}; use one of {sorted(funcs)}")
    adj = funcs[method](results)
    return [replace(r, p=float(q), method=f"{r.method}; {method}-adjusted over {len(results)}")
            for r, q in zip(results, adj, strict=True)]
