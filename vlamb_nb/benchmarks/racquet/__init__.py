"""RACQUET (Testoni, Plank & Fernández, EMNLP 2025): referentially ambiguous image questions.

There is no gold answer: a response is classified by how it handles the ambiguity. RACQUET-GENERAL
(500 COCO questions) is classified by an LLM judge into CLASS A Explicit / B Implicit / C High Risk;
RACQUET-BIAS (240 DALL-E 3 questions "What is the {adjective} person wearing?") is labelled by hand
as Explicit / Stereotypical / Anti-stereotypical.

One file per step, read in this order:

- ``data.py``: the released JSONL, BIAS categories and stereotype targets, subjects, COCO boxes, images, a sample,
  and labels (judge output and hand labels) to one canonical label;
- ``prompts.py``: the paper's suffixes, the control question, the two judge prompts and their decoding;
- ``judge.py``: the judge run over responses (BIAS rows left for labelling by hand), and the scripted stand-in's
  answers and verdicts (each verdict read from the answer it judges);
- ``score.py``: class shares and BIAS ratios with image-clustered intervals, judge-human agreement, label files;
- ``referents.py``: Table 1 (largest or centermost referent against chance);
- ``audit.py``: the paper's published numbers checked against the release and each other;
- ``benchmark.py``: the :class:`~vlamb_nb.benchmarks.base.Benchmark` that wires the steps (``BENCHMARK``);
- ``plots.py``: the class-share figures;
- ``report.py``: what the notebook calls.
"""

from vlamb_nb.benchmarks.racquet.benchmark import BENCHMARK

__all__ = ["BENCHMARK"]
