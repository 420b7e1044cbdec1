"""Equivalence: is a paired difference small enough to call two runs the same (4-bit against 16-bit)?

A difference that is not significant is not evidence of no difference; the two one-sided tests (TOST, Schuirmann
1987) turn the question round: the null is "the runs differ by at least ``margin``" in either direction, and both
one-sided nulls must be rejected. At level alpha that is the same as the (1 - 2 alpha) interval of the difference
lying inside ``(-margin, margin)``.

Here the interval is the paired (cluster) bootstrap's percentile interval at ``2 * alpha`` (:func:`.paired.
paired_bootstrap`: both runs resampled together, whole clusters; any vectorized statistic, so macro-F1 too), which
decides equivalence; the reported p is its normal approximation, ``max(1 - Phi((d + m) / se), 1 - Phi((m - d) /
se))`` with ``se`` read off the interval's width. Own code (scipy's normal).
"""

from __future__ import annotations

import math
from typing import Any

from vlamb_nb.errors import SettingError
from vlamb_nb.stats.paired import paired_bootstrap
from vlamb_nb.stats.result import Result


def tost(a: Any, b: Any, margin: float, statistic: Any = None, *, clusters: Any = None, alpha: float = 0.05,
         n_resamples: int = 2000, seed: int = 0, name: str = "") -> Result:
    """Two one-sided tests of ``|metric(a) - metric(b)| < margin`` (``margin`` in the metric's own scale: a share
    for 0/1 values). Estimate and interval: the difference with its ``1 - 2 alpha`` paired bootstrap interval;
    ``extra["equivalent"]``: the interval lies inside the margins."""
    from scipy.stats import norm

    if not (isinstance(margin, int | float) and math.isfinite(margin) and margin > 0):
        raise SettingError(f"an equivalence margin must be a positive number, got {margin!r}")
    if not 0 < alpha < 0.5:
        raise SettingError(f"alpha must be in (0, 0.5) for two one-sided tests, got {alpha!r}")
    boot = paired_bootstrap(a, b, statistic, n_resamples=n_resamples, seed=seed, clusters=clusters, alpha=2 * alpha)
    d, lo, hi = boot.estimate, boot.ci_low, boot.ci_high
    z = float(norm.ppf(1 - alpha))
    se = (hi - lo) / (2 * z) if math.isfinite(hi - lo) else math.nan
    if se and se > 0:
        p = max(float(norm.sf((d + margin) / se)), float(norm.sf((margin - d) / se)))
    else:  # no spread at all: equivalent exactly when the difference itself is inside the margins
        p = 0.0 if abs(d) < margin else 1.0
    equivalent = bool(-margin < lo and hi < margin)
    return Result(d, lo, hi, min(p, 1.0), boot.n, f"TOST (paired bootstrap {100 * (1 - 2 * alpha):.0f}% interval)",
                  seed, name, 2 * alpha, {"margin": margin, "equivalent": equivalent,
                                          "n_clusters": boot.extra.get("n_clusters")})
