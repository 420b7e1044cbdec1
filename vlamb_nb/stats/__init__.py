"""Confidence intervals and paired significance tests for every comparison the papers make.

The papers report point estimates; this package says which differences are real. Every
function returns a :class:`Result` (estimate, CI, p, n, method, seed) that renders in a
DataFrame (:func:`results_frame`) and as error bars (``vlamb_nb.plots.grouped_bars``, ``stacked_bars``).

One module per concern; each names in its docstring the library it calls and what is its own:

- ``result``: :class:`Result`, :func:`results_frame` (own; pandas draws the frame);
- ``bootstrap``: vectorized statistics (mean, macro-F1, group accuracy; :func:`macro_f1_from_counts`),
  the cluster bootstrap by count vectors, :func:`bootstrap_ci` (own engine; scipy for BCa quantiles); the
  draws for callers that keep their own statistic: ``resample_weights`` (the same resamples for several
  statistics: ranks), :func:`ratio_ci` (a ratio of cluster sums), :func:`two_sample_ci` (two groups of
  different items, stratified), each named by the random numbers it draws;
- ``gather``: bootstrap means of continuous values, two indices per random draw, parts on threads (own, on PCG64);
- ``paired``: :func:`paired_bootstrap`, :func:`permutation_test` (a mean by ``permutation``, scipy as
  the reference), McNemar (statsmodels; exact: scipy), :func:`clustered_mcnemar` (Durkalski's, for items that
  share an image or pair; scipy's chi-square tail);
- ``permutation``: :func:`sign_flip_test`, the paired permutation test of a mean by sign flips, exact
  when few differ, binomials and byte tables when many (own, on PCG64; tested against scipy);
  :func:`label_permutation_test` for two groups of different items (own);
- ``proportions``: :func:`wilson`, :func:`proportion_ci`, coverage by simulation (statsmodels),
  :func:`clustered_two_proportion` (two groups of different items, cluster-robust; own);
- ``power``: noise floors, the minimum detectable difference of a paired clustered test (Connor's equation with
  Kish's design effect), discordance and ICC of released runs, validated by simulation (own; scipy); imported by
  its path, not here;
- ``agreement``: :func:`cohen_kappa` (scikit-learn, statsmodels), :func:`fleiss_kappa` (statsmodels);
- ``multiple_testing``: :func:`holm` (own numpy, statsmodels' numbers), :func:`benjamini_hochberg`
  (statsmodels), :func:`adjust`.
- ``ranking``: a model's rank among the published ones, with its interval, for the report card (own; imported
  by its path, not here).

Where a library has the method, the package calls it and only adds the Result, the checks and
the parts the library lacks; the resampling engine is its own (no library resamples clusters
through count vectors). Importing it loads numpy only; scipy, statsmodels, scikit-learn and
pandas load on first use.
"""

__all__ = [
    "Result", "SignFlip", "Statistic", "adjust", "benjamini_hochberg", "bootstrap_ci", "cohen_kappa", "fleiss_kappa",
    "group_accuracy_statistic", "holm", "label_permutation_test", "macro_f1_from_counts", "macro_f1_statistic",
    "clustered_mcnemar", "clustered_two_proportion", "mcnemar", "mcnemar_exact", "mcnemar_table", "mean_statistic", "paired_bootstrap", "permutation_test",
    "proportion_ci", "proportion_coverage", "ratings_to_table", "ratio_ci", "results_frame", "sign_flip_test",
    "two_sample_ci", "vectorized", "wilson", "wilson_from_percent",
]

from vlamb_nb.stats.agreement import cohen_kappa, fleiss_kappa, ratings_to_table
from vlamb_nb.stats.bootstrap import (
    Statistic,
    bootstrap_ci,
    group_accuracy_statistic,
    macro_f1_from_counts,
    macro_f1_statistic,
    mean_statistic,
    ratio_ci,
    two_sample_ci,
    vectorized,
)
from vlamb_nb.stats.multiple_testing import adjust, benjamini_hochberg, holm
from vlamb_nb.stats.paired import (
    clustered_mcnemar,
    mcnemar,
    mcnemar_exact,
    mcnemar_table,
    paired_bootstrap,
    permutation_test,
)
from vlamb_nb.stats.permutation import SignFlip, label_permutation_test, sign_flip_test
from vlamb_nb.stats.proportions import (
    clustered_two_proportion,
    proportion_ci,
    proportion_coverage,
    wilson,
    wilson_from_percent,
)
from vlamb_nb.stats.result import Result, results_frame
