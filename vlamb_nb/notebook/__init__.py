"""What the notebooks call around the science, in one place.

- :mod:`~vlamb_nb.notebook.config`: the profile, the model and its endpoint, where files go, deviations
  (:func:`setup`);
- :mod:`~vlamb_nb.notebook.parameters`: the parameter names every notebook shares;
- :mod:`~vlamb_nb.notebook.results`: :func:`record` (key results as data, collected by ``reproduce``, with
  the figures each cell saved: :func:`collect_figures`);
- :mod:`~vlamb_nb.notebook.demo`: what the offline profile shows of a model's path (:func:`model_path`) and of
  the scripted stand-in (:func:`scripted_recovered`);
- :mod:`~vlamb_nb.notebook.display`: :func:`show` (tables as a reader wants them), :func:`say` (a computed
  conclusion, :mod:`vlamb_nb.findings`).
"""

from __future__ import annotations

__all__ = [
    "OFFLINE_MODEL", "PROFILES", "RESULTS_MIME", "SAMPLE_STAMP", "TINY_SEED_ENV", "NotebookConfig", "collect_figures",
    "collect_results", "figures_dir", "format_p", "is_stand_in", "jsonable", "model_path", "parse_settings", "readable",
    "record", "scripted_recovered",
    "repo_root", "resolve_profile", "run_dir", "say", "setup", "shared_data_dir", "show", "tiny_seed",
]

from vlamb_nb.notebook.config import (
    OFFLINE_MODEL,
    PROFILES,
    SAMPLE_STAMP,
    TINY_SEED_ENV,
    NotebookConfig,
    figures_dir,
    is_stand_in,
    parse_settings,
    repo_root,
    resolve_profile,
    run_dir,
    setup,
    shared_data_dir,
    tiny_seed,
)
from vlamb_nb.notebook.demo import model_path, scripted_recovered
from vlamb_nb.notebook.display import format_p, readable, say, show
from vlamb_nb.notebook.results import RESULTS_MIME, collect_figures, collect_results, jsonable, record
