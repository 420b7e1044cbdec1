"""Noise floors: the smallest difference a test set can detect, given how its items cluster.

A paper's gap between two models (or two prompts) on the same items is a paired difference of 0/1 outcomes:
per item ``d = a - b`` is +1, 0 or -1, and only the *discordant* items (``d != 0``) carry information. Where items
share a unit (Ref-Adv rows on one image, MUCAR queries of one pair, RACQUET questions on one image), their ``d``
are correlated and the test set holds less information than its row count says. This module turns a test set's
structure into the minimum detectable difference (MDD) at a level and a power:

- the paired test is the clustered McNemar test of Durkalski et al. (2003) (:func:`~.paired.clustered_mcnemar`;
  McNemar's own statistic without continuity correction when every cluster holds one item);
- its variance is the independent-items variance times the design effect ``1 + icc * (sum m_k**2 / n - 1)``
  (Kish; unequal cluster sizes ``m_k``), ``icc`` being the intra-cluster correlation of ``d``;
- the MDD solves Connor's (1987) sample-size equation for the difference:
  ``D = z_{1-a/2} sqrt(p_d * deff / n) + z_{power} sqrt((p_d - D**2) * deff / n)``, with ``p_d`` the share of
  discordant items (under the null the variance of ``d`` is ``p_d``, under the alternative ``p_d - D**2``).

Two different groups of items (negated against plain expressions, one model) use the two-sample version,
``D = (z_{1-a/2} + z_{power}) sqrt(p (1 - p) (deff_1 / n_1 + deff_2 / n_2))``.

What the formula stands on is checked by simulation (:func:`simulated_power`: correlated discordance drawn with a
given ICC, the clustered test run on each draw): a difference planted at the floor is detected about 80% of the
time (``tests/test_noise.py``). Where released per-item runs exist, :func:`discordance` measures ``p_d`` and the
ICC of ``d`` from two runs on the same items. Own code (numpy; scipy's ``norm`` and ``brentq``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vlamb_nb.errors import DataError, SettingError


@dataclass(frozen=True)
class TestSet:
    """A test set's structure as far as a noise floor needs it: how many units and how they cluster.

    ``cluster_sizes``: the number of units in each cluster (None: every unit is its own); ``origin`` says whether
    the structure was counted from the release (``release``) or declared from the paper's text (``declared``,
    with ``note`` saying what was assumed); ``subsets`` give the sizes of named parts (Neg / No-Neg) a two-sample
    comparison sets against each other, as shares of ``n``."""

    __test__ = False  # not a pytest class

    name: str
    n: int
    unit: str = "item"
    cluster_sizes: tuple[int, ...] | None = None
    cluster_unit: str = ""
    origin: str = "declared"
    note: str = ""
    subsets: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.n, bool) or not isinstance(self.n, int | np.integer) or self.n < 1:
            raise SettingError(f"test set {self.name!r}: n must be a positive whole number, got {self.n!r}")
        if self.cluster_sizes is not None:
            sizes = [int(s) for s in self.cluster_sizes]
            if any(s < 1 for s in sizes) or sum(sizes) != int(self.n):
                raise SettingError(f"test set {self.name!r}: cluster sizes must be positive and sum to n={self.n}, "
                                   f"got {len(sizes)} clusters summing to {sum(sizes)}")

    @property
    def n_clusters(self) -> int:
        return int(self.n) if self.cluster_sizes is None else len(self.cluster_sizes)

    def deff(self, icc: float) -> float:
        """The design effect of this structure at intra-cluster correlation ``icc``."""
        return design_effect(self.cluster_sizes, icc, n=int(self.n))

    def part(self, name: str) -> TestSet:
        """The named subset as a test set of its own (its share of the units, clusters of the same mean size)."""
        if name not in self.subsets:
            raise SettingError(f"test set {self.name!r} has no subset {name!r}; it has "
                               f"{', '.join(self.subsets) or 'none'}")
        n = max(1, round(self.subsets[name] * self.n))
        sizes = None
        if self.cluster_sizes is not None:
            mean = self.n / len(self.cluster_sizes)
            k = max(1, round(n / mean))
            sizes = tuple(int(s) for s in np.diff(np.round(np.linspace(0, n, k + 1)).astype(int)) if s > 0)
        return TestSet(f"{self.name} / {name}", n, self.unit, sizes, self.cluster_unit, self.origin,
                       f"{self.subsets[name]:.1%} of {self.name}")

    def describe(self) -> str:
        """One line: how many units, on how many clusters, counted or declared."""
        on = "" if self.cluster_sizes is None else f" on {self.n_clusters:,} {self.cluster_unit or 'clusters'}"
        how = "from the release" if self.origin == "release" else "declared"
        unit = self.unit[:-1] + "ies" if self.unit.endswith("y") else self.unit + "s"
        return f"{self.n:,} {unit}{on} ({how}{': ' + self.note if self.note else ''})"


def cluster_sizes(clusters: Sequence[Any]) -> tuple[int, ...]:
    """The size of each cluster, in order of first appearance, from one cluster label per unit."""
    import pandas as pd

    codes, _ = pd.factorize(pd.Series(list(clusters), dtype=object))
    return tuple(int(c) for c in np.bincount(codes))


def even_sizes(n: int, k: int) -> tuple[int, ...]:
    """``n`` units spread over ``k`` clusters as evenly as whole numbers allow: a declared structure where a
    paper gives the counts of units and clusters but not how they are spread."""
    if k < 1 or n < k:
        raise SettingError(f"cannot spread {n} units over {k} clusters")
    return tuple(int(s) for s in np.diff(np.round(np.linspace(0, n, k + 1)).astype(int)))


def design_effect(sizes: Sequence[int] | None, icc: float, *, n: int | None = None) -> float:
    """Kish's design effect ``1 + icc * (sum m**2 / n - 1)`` for clusters of sizes ``sizes`` (None: 1)."""
    if sizes is None:
        return 1.0
    m = np.asarray(sizes, dtype=float)
    total = float(m.sum()) if n is None else float(n)
    if not math.isfinite(icc) or icc < -1 or icc > 1:
        raise SettingError(f"icc must be in [-1, 1], got {icc!r}")
    return float(1.0 + icc * (float((m ** 2).sum()) / total - 1.0))


def _z(alpha: float, power: float) -> tuple[float, float]:
    from scipy.stats import norm

    if not 0 < alpha < 1:
        raise SettingError(f"alpha must be in (0, 1), got {alpha!r}")
    if not 0 < power < 1:
        raise SettingError(f"power must be in (0, 1), got {power!r}")
    return float(norm.ppf(1 - alpha / 2)), float(norm.ppf(power))


def mdd_paired(n: int, discordance: float, *, deff: float = 1.0, alpha: float = 0.05, power: float = 0.8) -> float:
    """The minimum detectable paired difference (a share, 0-1) on ``n`` units with ``discordance`` (the share of
    units where the two systems differ) and design effect ``deff``: Connor's equation solved for the difference.
    NaN when no difference up to the discordance itself is detectable (too few discordant units)."""
    from scipy.optimize import brentq

    if n < 1:
        raise SettingError(f"n must be positive, got {n!r}")
    if not 0 < discordance <= 1:
        raise SettingError(f"discordance must be in (0, 1], got {discordance!r}")
    za, zb = _z(alpha, power)
    scale = deff / n

    def gap(d: float) -> float:
        return za * math.sqrt(discordance * scale) + zb * math.sqrt(max(discordance - d * d, 0.0) * scale) - d

    if gap(discordance) > 0:
        return math.nan
    return float(brentq(gap, 0.0, discordance, xtol=1e-10))


def mdd_two_sample(n1: int, n2: int, p: float, *, deff1: float = 1.0, deff2: float = 1.0, alpha: float = 0.05,
                   power: float = 0.8) -> float:
    """The minimum detectable difference (a share) between two groups of different units (``n1``, ``n2`` units,
    a common proportion ``p``, each group's design effect)."""
    if n1 < 1 or n2 < 1:
        raise SettingError(f"both groups need units, got {n1} and {n2}")
    if not 0 <= p <= 1:
        raise SettingError(f"p must be a share in [0, 1], got {p!r}")
    za, zb = _z(alpha, power)
    return float((za + zb) * math.sqrt(max(p * (1 - p), 1e-12) * (deff1 / n1 + deff2 / n2)))


def independent_discordance(p1: float, p2: float) -> float:
    """The share of units two systems with accuracies ``p1``, ``p2`` (shares) disagree on if they err
    independently: the upper reference an observed discordance is measured against."""
    return float(p1 * (1 - p2) + p2 * (1 - p1))


def icc_anova(values: Any, clusters: Any) -> float:
    """The one-way ANOVA estimate of the intra-cluster correlation of ``values`` (unequal cluster sizes: the
    ``m0`` of Donner 1986). NaN when it cannot be estimated (one cluster, or no variation)."""
    import pandas as pd

    y = np.asarray(values, dtype=float)
    codes, _ = pd.factorize(pd.Series(list(clusters), dtype=object))
    if len(codes) != len(y):
        raise DataError(f"one cluster label per value: {len(y)} values, {len(codes)} labels")
    k, n = int(codes.max()) + 1 if len(codes) else 0, len(y)
    if k < 2 or n <= k:
        return math.nan
    m = np.bincount(codes).astype(float)
    means = np.bincount(codes, weights=y) / m
    grand = float(y.mean())
    msb = float((m * (means - grand) ** 2).sum() / (k - 1))
    msw = float(((y - means[codes]) ** 2).sum() / (n - k))
    m0 = (n - float((m ** 2).sum()) / n) / (k - 1)
    den = msb + (m0 - 1) * msw
    return math.nan if den <= 0 else float((msb - msw) / den)


@dataclass(frozen=True)
class Discordance:
    """How two runs on the same units disagree: the share of discordant units, its ratio to what independent
    errors would give, and the ICC of the paired difference within clusters (NaN without clusters)."""

    discordance: float
    ratio: float
    icc: float
    n: int
    accuracy_a: float
    accuracy_b: float


def discordance(a: Any, b: Any, clusters: Any = None) -> Discordance:
    """``a``, ``b``: two runs' 0/1 correctness on the same units (``clusters``: one label per unit)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape or not len(x):
        raise DataError(f"two runs on the same units are needed: {x.shape} vs {y.shape}")
    if not (np.isin(x, (0, 1)).all() and np.isin(y, (0, 1)).all()):
        raise DataError("discordance needs 0/1 correctness")
    d = x - y
    pd_ = float(np.mean(d != 0))
    ind = independent_discordance(float(x.mean()), float(y.mean()))
    icc = icc_anova(d, clusters) if clusters is not None else math.nan
    return Discordance(pd_, pd_ / ind if ind > 0 else math.nan, icc, len(x), float(x.mean()), float(y.mean()))


# -- validation by simulation --------------------------------------------------------------------------------
def simulate_paired(sizes: Sequence[int], discordance: float, diff: float, icc: float,
                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One test set of paired 0/1 outcomes with a planted difference ``diff`` (a share): each unit's ``d`` is +1
    with probability ``(discordance + diff) / 2``, -1 with ``(discordance - diff) / 2``, else 0; within a cluster
    a unit copies the cluster's draw with probability ``sqrt(icc)``, so two units of one cluster correlate by
    exactly ``icc``. Returns ``(a, b, clusters)``."""
    if not 0 <= diff <= discordance <= 1:
        raise SettingError(f"need 0 <= diff <= discordance <= 1, got diff={diff}, discordance={discordance}")
    if not 0 <= icc <= 1:
        raise SettingError(f"icc must be in [0, 1] for the simulation, got {icc}")
    sizes = np.asarray(sizes, dtype=int)
    n = int(sizes.sum())
    probs = np.array([(discordance - diff) / 2, 1 - discordance, (discordance + diff) / 2])
    clusters = np.repeat(np.arange(len(sizes)), sizes)
    template = rng.choice(3, size=len(sizes), p=probs)[clusters]
    own = rng.choice(3, size=n, p=probs)
    copy = rng.random(n) < math.sqrt(icc)
    d = np.where(copy, template, own) - 1
    both = (rng.random(n) < 0.5).astype(int)  # agreeing units: both right or both wrong
    a = np.where(d == 1, 1, np.where(d == -1, 0, both))
    b = np.where(d == -1, 1, np.where(d == 1, 0, both))
    return a, b, clusters


def simulated_power(sizes: Sequence[int], discordance: float, diff: float, icc: float, *, n_sims: int = 2000,
                    alpha: float = 0.05, seed: int = 0) -> float:
    """The share of :func:`simulate_paired` test sets on which the clustered McNemar test rejects at ``alpha``."""
    from vlamb_nb.stats.paired import clustered_mcnemar_p

    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(n_sims):
        a, b, c = simulate_paired(sizes, discordance, diff, icc, rng)
        hits += clustered_mcnemar_p(a, b, c) < alpha
    return hits / n_sims
