"""Ref-Adv (Dong et al., ICLR 2026): referring expression comprehension with hard distractors.

One file per step, read in this order:

- ``data.py``: Ref-Adv-s (hub parquet, local parquet, the website demo), RefCOCO(+/g), a generated sample;
- ``prompts.py``: the official prompts, the repair turn, ablation texts and decoding;
- ``parse.py``: the official JSON box parser, bracket parsers, per-family grounding styles (coordinate formats);
- ``score.py``: IoU accuracy, slices, the official per-row prediction files and report;
- ``audit.py``: the paper's published numbers checked against each other;
- ``benchmark.py``: the :class:`~vlamb_nb.benchmarks.base.Benchmark` that wires the steps (``BENCHMARK``);
- ``tables.py``: Tables 1, 4, 5 and Figs. 4-6 from the released rows, and what they cannot give;
- ``plots.py``: the Ref-Adv figures;
- ``report.py``: what the notebook calls.
"""

from vlamb_nb.benchmarks.refadv.benchmark import BENCHMARK

__all__ = ["BENCHMARK"]
