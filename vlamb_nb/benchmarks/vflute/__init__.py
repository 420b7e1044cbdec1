"""V-FLUTE (Saakyan et al., NAACL 2025): explainable visual entailment over figurative meaning.

One file per step, read in this order:

- ``data.py``: the official JSON/CSV files, Hugging Face parquet, the gated hub dataset, a generated sample;
- ``prompts.py``: the 21 instructions (Table 8), their seeded assignment, scene-graph CoT, k-shot, decoding;
- ``parse.py``: the official label + explanation extraction;
- ``adequacy.py``: §5.3, ExplanationScore against human adequacy labels (a V-FLUTE-only step);
- ``score.py``: F1@ExplanationScore thresholds, CIs, paired tests, prediction files, the tables, the random
  baseline's expectation;
- ``human.py``: §5 human evaluation of explanations, annotation and aggregation (Table 6, Fig. 7);
- ``audit.py``: the paper's own numbers checked against each other and the released split;
- ``benchmark.py``: the :class:`~vlamb_nb.benchmarks.base.Benchmark` that wires the steps (``BENCHMARK``);
- ``plots.py``: Figs. 6, 7, 8-9, 11, the §5.3 PR curve and the QLoRA run's losses;
- ``report.py``: what the notebook calls;
- the QLoRA recipe (LLaVA-style fine-tuning on V-FLUTE), a V-FLUTE-only step: ``finetune_recipe.py`` (the
  paper's hyperparameters, a run's config and deviations), ``finetune_data.py`` (conversations, masked batches,
  the notebook's splits), ``finetune.py`` (the model setup and the training loop with its checkpoints) and
  ``finetune_eval.py`` (an adapter read back, scored and checked).
"""

from vlamb_nb.benchmarks.vflute.benchmark import BENCHMARK

__all__ = ["BENCHMARK"]
