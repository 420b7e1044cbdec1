"""MUCAR (Wang et al., EMNLP 2025): multilingual cross-modal ambiguity resolution, scored by pairs.

One file per step, read in this order:

- ``data.py``: ``data-all.json`` (three record layouts), grouping into pairs, quirks, images, a generated sample;
- ``prompts.py``: the templates (Table 10) and the settings (full, languages, ablations, is-C-ambiguous,
  and Table 4's CoT / CODIS / agent strategies, wording ours);
- ``parse.py``: the option letter and yes/no answers;
- ``score.py``: Acc_q / Acc_p with intervals over groups, the tables, prediction files;
- ``judge.py``: the LLM-judge step (CODIS prompt) and its agreement with the parser;
- ``audit.py``: the paper's published numbers checked against each other and the release;
- ``benchmark.py``: the :class:`~vlamb_nb.benchmarks.base.Benchmark` that wires the steps (``BENCHMARK``),
  including the agent's three chained calls;
- ``plots.py``: Fig. 3 (categories, and the scenarios panel the release cannot fill) and accuracy figures;
- ``report.py``: what the notebook calls.
"""

from vlamb_nb.benchmarks.mucar.benchmark import BENCHMARK

__all__ = ["BENCHMARK"]
