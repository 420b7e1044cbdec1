"""VAGUE (Nam et al., ICCV 2025): which intention does an ambiguous utterance express, given the scene?

One file per step, read in this order:

- ``data.py``: the hub parquet, the official JSON release with images, a generated sample, Table B1 statistics;
- ``prompts.py``: settings, the prompts verbatim (paper and released-code wording), decoding, requests;
- ``parse.py``: the option letter (MCQ and CoT), the free-form sentence, the option log-likelihood reading;
- ``score.py``: the paper's rounding, accuracy, BLEU-1/BERTScore, prediction files;
- ``audit.py``: the paper's published numbers checked against each other;
- ``benchmark.py``: the :class:`~vlamb_nb.benchmarks.base.Benchmark` that wires the steps (``BENCHMARK``);
- ``plots.py``: Fig. 4, Fig. B1 and the item viewer;
- ``report.py``: what the notebook calls.
"""

from vlamb_nb.benchmarks.vague.benchmark import BENCHMARK

__all__ = ["BENCHMARK"]
