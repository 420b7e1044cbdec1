"""What the notebooks call around the science: where files go, which profile they run, recording results.

Where things go. A notebook writes its working files (prediction stores, labels, samples) under
:func:`run_dir` and its figures under :func:`figures_dir`: ``$VLAMB_RUN_DIR`` / ``$VLAMB_FIGURES_DIR``
when set (``vlamb-nb reproduce`` sets both inside ``runs/<id>/``), else ``runs/`` and ``figures/`` in the
working directory. Nothing is written into the installed checkout: only ``vlamb-nb reproduce
--update-figures`` refreshes the committed ``figures/``.

Profiles. A notebook's parameters default to the paper's settings (``None`` means "the paper's value").
What makes the offline reproduction cheap — tiny random checkpoints, short outputs, fewer samples — is the
``offline`` profile, chosen automatically when no real model is named and passed explicitly by
``reproduce``. A real model never inherits an offline shortcut: naming one selects the ``paper`` profile,
and asking for ``offline`` with a real model is an error. Every value that differs from the paper's is a
recorded :class:`~vlamb_nb.meta.Deviation`.

Results. :func:`record` publishes a key result under a custom MIME type; ``reproduce`` copies it into the
executed notebook's metadata (``metadata.vlamb.results``), so reports and tests read numbers, never scraped
text. Values are made JSON-safe (NaN and infinities become ``null``).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlamb_nb.errors import SettingError
from vlamb_nb.meta import Deviation
from vlamb_nb.paths import (  # noqa: F401  (re-exported: notebooks import them from here)
    TINY_SEED_ENV,
    figures_dir,
    repo_root,
    run_dir,
    shared_data_dir,
    tiny_seed,
)

RESULTS_MIME = "application/vnd.vlamb.results+json"
PROFILES = ("offline", "paper")
OFFLINE_MODEL = "tiny:qwen2_5_vl"
SAMPLE_STAMP = "generated sample data: not the paper's data"
# model specs that are stand-ins, not models: the offline profile may run them
STAND_IN_PREFIXES = ("tiny:", "scripted", "replay:")


# -- profiles ----------------------------------------------------------------------------------------
def is_stand_in(spec: Any) -> bool:
    """A tiny random checkpoint, a scripted model or a replay of recorded outputs (not a real model)."""
    if spec is None:
        return True
    if not isinstance(spec, str):  # a model object: ScriptedModel and friends say what they are
        backend = getattr(getattr(spec, "info", None), "backend", "")
        return backend in ("scripted", "replay") or str(getattr(spec.info, "model_id", "")).startswith("tiny:")
    return spec.startswith(STAND_IN_PREFIXES)


def resolve_profile(profile: str | None, model: Any) -> str:
    """``None`` → ``offline`` for stand-ins (or no model), ``paper`` for a real model."""
    if profile is None:
        return "offline" if is_stand_in(model) else "paper"
    if profile not in PROFILES:
        raise SettingError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILES)}")
    if profile == "offline" and not is_stand_in(model):
        raise SettingError(f"the offline profile only runs stand-ins (tiny:FAMILY, scripted, replay:FILE); "
                           f"for {model!r} use profile='paper' (or leave profile unset)")
    return profile


@dataclass
class NotebookConfig:
    """A notebook's resolved configuration: profile, model, folders and the deviations they imply."""

    paper: str
    profile: str
    model: Any
    quantization: str | None = None
    seed: int = 0
    deviations: list[Deviation] = field(default_factory=list)

    @property
    def offline(self) -> bool:
        return self.profile == "offline"

    @property
    def run_dir(self) -> Path:
        return run_dir(self.paper)

    @property
    def figures_dir(self) -> Path:
        return figures_dir(self.paper)

    def path(self, *parts: str) -> Path:
        """A working file under the run folder (its parent is created)."""
        p = self.run_dir.joinpath(*parts)
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def value(self, name: str, given: Any, *, paper: Any, offline: Any = None, affects: str = "all",
              paper_text: str | None = None) -> Any:
        """The value to use for one setting: ``given`` when not None, else the profile's (``offline`` under the
        offline profile, when given) or the paper's. A value that differs from the paper's is a deviation;
        ``paper_text`` describes the paper's value when it is not a single literal (per-setting defaults)."""
        if given is not None:
            value, why = given, "set by a parameter"
        elif self.offline and offline is not None:
            value, why = offline, "offline profile"
        else:
            value, why = paper, ""
        if value != paper:
            self.add_deviation(name, paper_text or _show(paper), f"{_show(value)} ({why})", affects)
        return value

    def add_deviation(self, what: str, paper: str, ours: str, affects: str = "all") -> None:
        dev = Deviation(what, paper, ours, affects)
        if dev not in self.deviations:
            self.deviations.append(dev)

    def load_model(self, spec: Any = None, **kwargs: Any):
        """Load ``spec`` (default: this notebook's model); tiny checkpoints take the seed from ``$VLAMB_TINY_SEED``."""
        from vlamb_nb.models import load_model

        spec = self.model if spec is None else spec
        if not isinstance(spec, str):
            return spec
        if spec.startswith("tiny:"):
            kwargs.setdefault("seed", tiny_seed())
        quant = None if spec.startswith(("openai:", "replay:", "scripted")) else self.quantization
        return load_model(spec, quantization=quant, **kwargs)

    def save_figure(self, fig: Any, name: str, *, model_output: bool = False, sample_data: bool = False) -> None:
        """Save a figure of this paper. ``model_output``: drawn from this run's model answers, so under the
        offline profile it is a pipeline demonstration — marked as such in the image and kept in ``demo/``,
        never refreshed into the committed ``figures/``."""
        from vlamb_nb.plots import save_figure

        if sample_data:  # drawn from a generated sample, not the released data: never a paper's figure
            save_figure(fig, self.paper, name, demo=SAMPLE_STAMP)
            return
        save_figure(fig, self.paper, name, demo=model_output and self.offline)

    def all_deviations(self, *more: Any) -> list[dict[str, Any]]:
        """This notebook's deviations followed by ``more`` (Deviation objects or dicts), each listed once."""
        from dataclasses import asdict

        out: list[dict[str, Any]] = []
        for d in [*self.deviations, *[x for group in more for x in group]]:
            d = asdict(d) if isinstance(d, Deviation) else dict(d)
            if d not in out:
                out.append(d)
        return out

    def deviation_lines(self) -> list[str]:
        return [str(d) for d in self.deviations]


def _show(v: Any) -> str:
    return "unlimited" if v is None else str(v)


def setup(paper: str, *, profile: str | None = None, model: Any = None, quantization: str | None = "4bit",
          seed: int = 0) -> NotebookConfig:
    """Resolve a notebook's profile and model (see the module docstring)."""
    prof = resolve_profile(profile, model)
    if model is None:
        if prof == "paper":
            raise SettingError(f"{paper}: profile 'paper' needs a model (a hub id, a local checkpoint or "
                               f"openai:MODEL)")
        model = OFFLINE_MODEL
    quant = None if quantization in (None, "none") else quantization
    cfg = NotebookConfig(paper=paper, profile=prof, model=model, quantization=quant, seed=seed)
    if isinstance(model, str) and model.startswith("openai:"):
        cfg.quantization = None  # served weights: quantization is the server's business
    if prof == "offline":
        cfg.add_deviation("model", "the paper's models", f"{_model_name(model)} (offline profile: a stand-in whose "
                          "answers demonstrate the pipeline and measure nothing)")
    if cfg.quantization:
        cfg.add_deviation("quantization", "full/half precision weights", cfg.quantization)
    return cfg


def _model_name(model: Any) -> str:
    return model if isinstance(model, str) else str(getattr(getattr(model, "info", None), "model_id", model))


# -- recording results -------------------------------------------------------------------------------
def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data: numpy/pandas scalars and frames converted, NaN/inf/NA → None."""
    if value is None or isinstance(value, bool | str | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if hasattr(value, "to_dict") and hasattr(value, "columns"):  # a DataFrame: records
        return [jsonable(r) for r in value.to_dict(orient="records")]
    if hasattr(value, "to_dict") and hasattr(value, "index"):  # a Series
        return jsonable(value.to_dict())
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return jsonable(value.tolist())
    if hasattr(value, "to_dict"):  # dataclass-like results (stats.Result, Finding)
        return jsonable(value.to_dict())
    try:
        import pandas as pd

        if value is pd.NA or value is pd.NaT:
            return None
    except ImportError:  # pragma: no cover - pandas is a core dependency
        pass
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return str(value)


def record(key: str, value: Any) -> None:
    """Publish a key result from a notebook cell (collected by ``reproduce``); shows nothing in the notebook
    and returns nothing, so a cell ending in ``record(...)`` prints no value."""
    payload = {key: jsonable(value)}
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # plain Python: nothing to display to
        return
    if get_ipython() is None:
        return
    display({RESULTS_MIME: payload, "text/plain": ""}, raw=True)


def collect_results(nb: dict[str, Any]) -> dict[str, Any]:
    """Gather every recorded result from an executed notebook (JSON dict)."""
    out: dict[str, Any] = {}
    for cell in nb.get("cells", []):
        for o in cell.get("outputs", []) or []:
            data = o.get("data") or {}
            if RESULTS_MIME in data:
                payload = data[RESULTS_MIME]
                if isinstance(payload, str):
                    payload = json.loads(payload)
                out.update(payload)
    return out
