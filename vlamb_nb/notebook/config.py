"""A notebook's configuration: which profile it runs, which model, where its files go, what deviates.

Where things go. A notebook writes its working files (prediction stores, labels, samples) under
``store_dir`` (default :func:`run_dir`) and its figures under :func:`figures_dir`: ``$VLAMB_RUN_DIR`` /
``$VLAMB_FIGURES_DIR`` when set (``vlamb-nb reproduce`` sets both inside ``runs/<id>/``), else ``runs/`` and
``figures/`` in the working directory. Nothing is written into the installed checkout: only ``vlamb-nb
reproduce --update-figures`` refreshes the committed ``figures/``.

Profiles. A notebook's parameters default to the paper's settings (``None`` means "the paper's value").
What makes the offline reproduction cheap — tiny random checkpoints, short outputs, fewer samples — is the
``offline`` profile, chosen automatically when no real model is named and passed explicitly by
``reproduce``. A real model never inherits an offline shortcut: naming one selects the ``paper`` profile,
and asking for ``offline`` with a real model is an error. Every value that differs from the paper's is a
recorded :class:`~vlamb_nb.meta.Deviation`.

The parameter names every notebook shares are listed once in :mod:`vlamb_nb.notebook.parameters`.
"""

from __future__ import annotations

import os
from dataclasses import astuple, dataclass, field
from pathlib import Path
from typing import Any

from vlamb_nb.errors import SettingError
from vlamb_nb.meta import Deviation, all_deviations, deviation_lines, quantization_deviation
from vlamb_nb.models.spec import ModelSpec
from vlamb_nb.paths import (  # noqa: F401  (re-exported: notebooks import them from here)
    TINY_SEED_ENV,
    figures_dir,
    repo_root,
    run_dir,
    shared_data_dir,
    tiny_seed,
)

PROFILES = ("offline", "paper")
OFFLINE_MODEL = "tiny:qwen2_5_vl"
SAMPLE_STAMP = "generated sample data: not the paper's data"  # = plots.SAMPLE_DATA_STAMP


# -- profiles ----------------------------------------------------------------------------------------
def is_stand_in(spec: Any) -> bool:
    """A tiny random checkpoint, a scripted model or a replay of recorded outputs (not a real model); ``spec``: a
    spec string, a parsed :class:`~vlamb_nb.models.spec.ModelSpec` or a model object."""
    from vlamb_nb.models.base import Backend

    if spec is None:
        return True
    if isinstance(spec, ModelSpec):
        return spec.stand_in
    if not isinstance(spec, str):  # a model object: ScriptedModel and friends say what they are
        if getattr(spec, "spec", None) is not None:  # loaded from a spec, read when it was loaded
            return spec.spec.stand_in
        backend = getattr(getattr(spec, "info", None), "backend", None)
        model_id = str(getattr(spec.info, "model_id", ""))
        return backend in (Backend.SCRIPTED, Backend.REPLAY) or (bool(model_id.strip())
                                                                  and ModelSpec.parse(model_id).kind == "tiny")
    return bool(spec.strip()) and ModelSpec.parse(spec).stand_in


def resolve_profile(profile: str | None, model: Any) -> str:
    """``None`` → ``offline`` for stand-ins (or no model), ``paper`` for a real model."""
    if profile is None:
        return "offline" if is_stand_in(model) else "paper"
    if profile not in PROFILES:
        raise SettingError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILES)}")
    if profile == "offline" and not is_stand_in(model):
        raise SettingError(f"the offline profile only runs stand-ins (tiny:FAMILY, scripted, replay:FILE); "
                           f"for {(model.text if isinstance(model, ModelSpec) else model)!r} use profile='paper' "
                           "(or leave profile unset)")
    return profile


@dataclass
class NotebookConfig:
    """A notebook's resolved configuration: profile, model, endpoint, folders and the deviations they imply."""

    paper: str
    profile: str
    model: Any
    quantization: str | None = None
    seed: int = 0
    base_url: str | None = None
    concurrency: int | None = None
    store_dir: Path | None = None
    deviations: list[Deviation] = field(default_factory=list)
    #: the model's spec, parsed once (None for a model object)
    spec: ModelSpec | None = None

    def __post_init__(self) -> None:
        self.store_dir = Path(self.store_dir) if self.store_dir else self.run_dir
        self.store_dir.mkdir(parents=True, exist_ok=True)
        if self.spec is None and isinstance(self.model, str) and self.model.strip():
            self.spec = ModelSpec.parse(self.model)

    @property
    def offline(self) -> bool:
        return self.profile == "offline"

    @property
    def remote(self) -> bool:
        """The model is served elsewhere (``openai:``): its weights are not here."""
        return self.spec is not None and self.spec.served

    @property
    def run_dir(self) -> Path:
        return run_dir(self.paper)

    @property
    def figures_dir(self) -> Path:
        return figures_dir(self.paper)

    def path(self, *parts: str) -> Path:
        """A working file under the store folder (its parent is created)."""
        p = Path(self.store_dir or self.run_dir).joinpath(*parts)
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

    def limit(self, given: int | None, *, offline: int | None, paper: int | None = None,
              paper_text: str = "all items") -> int | None:
        """The shared ``limit`` parameter: items (or requests) run through the model per setting."""
        if given is not None and (not isinstance(given, int) or isinstance(given, bool) or given < 1):
            raise SettingError(f"limit must be a positive integer or None, got {given!r}")
        return self.value("limit", given, paper=paper, offline=offline, paper_text=paper_text)

    def settings(self, given: Any, choices: Any, *, single: bool = False) -> list[str]:
        """The shared ``settings`` parameter as a list: a list, one name, or a comma list; a name not in
        ``choices`` (a benchmark's ``settings``) is an error naming them. ``single``: the notebook runs one."""
        names = parse_settings(given)
        unknown = [s for s in names if s not in tuple(choices)]
        if unknown:
            raise SettingError(f"{self.paper}: unknown setting(s) {unknown}; choose from {', '.join(choices)}")
        if single and len(names) != 1:
            raise SettingError(f"{self.paper} runs one setting at a time; got {names}")
        return names

    def beams(self, num_beams: int, *, affects: str = "all") -> int:
        """Beam search where the backend has it: an OpenAI-compatible endpoint has none, so a served model
        decodes greedily instead (a recorded deviation), rather than failing every request."""
        if self.remote and num_beams and num_beams > 1:
            self.add_deviation("num_beams", str(num_beams), "1 (an OpenAI-compatible endpoint has no beam search)",
                               affects)
            return 1
        return num_beams

    def add_deviation(self, what: str, paper: str, ours: str, affects: str = "all") -> None:
        dev = Deviation(what, paper, ours, affects)
        if dev not in self.deviations:
            self.deviations.append(dev)

    def load_model(self, spec: Any = None, *, base_url: str | None = None, **kwargs: Any):
        """Load ``spec`` (default: this notebook's model). ``openai:`` models get the notebook's ``base_url`` and
        ``concurrency``; tiny checkpoints take the seed from ``$VLAMB_TINY_SEED``; served and replayed models
        are loaded without quantization (their weights are not here)."""
        from vlamb_nb.models import load_model

        spec = self.model if spec is None else spec
        if not isinstance(spec, str | ModelSpec):
            return spec
        parsed = self.spec if spec == self.model and self.spec is not None else \
            spec if isinstance(spec, ModelSpec) else ModelSpec.parse(spec)
        if parsed.kind == "tiny":
            kwargs.setdefault("seed", tiny_seed())
        if parsed.served:
            url = base_url or self.base_url
            if url:
                kwargs.setdefault("base_url", url)
            if self.concurrency is not None:
                kwargs.setdefault("concurrency", self.concurrency)
        elif base_url:
            raise SettingError(f"base_url goes with an openai:MODEL spec, not {spec!r}")
        quant = self.quantization if parsed.weights_local else None
        return load_model(parsed, quantization=quant, **kwargs)

    def answering(self, bench: Any, items: Any, model: Any = None) -> Any:
        """The model this notebook's evaluation runs: under the offline profile the paper's scripted stand-in for
        ``items`` (:meth:`~vlamb_nb.benchmarks.base.Benchmark.scripted_stand_in`: not a model; answers written
        from the gold, right at a stated chance, so every table, interval and test has something to show), seeded
        by the tiny checkpoints' seed so ``--tiny-seed`` gives another; otherwise ``model`` (this notebook's,
        loaded when not given)."""
        if self.offline:
            return bench.scripted_stand_in(items, seed=tiny_seed())
        return model if model is not None else self.load_model()

    def save_figure(self, fig: Any, name: str, *, model_output: bool = False, sample_data: bool = False,
                    data: Any = None) -> None:
        """Save a figure of this paper. ``model_output``: drawn from this run's model answers, so under the
        offline profile it is a pipeline demonstration — marked as such in the image and kept in ``demo/``,
        never refreshed into the committed ``figures/``. ``data``: what it is drawn from (a data identity, a
        tagged frame, a :class:`~vlamb_nb.plots.FigureData`), stamped under it; a generated sample (or
        ``sample_data``) keeps it out of the committed figures."""
        from vlamb_nb.plots import save_figure

        if sample_data:  # drawn from a generated sample, not the released data: never a paper's figure
            save_figure(fig, self.paper, name, demo=SAMPLE_STAMP, data=data)
            return
        save_figure(fig, self.paper, name, demo=model_output and self.offline, data=data)

    def all_deviations(self, *groups: Any) -> list[dict[str, Any]]:
        """This notebook's deviations followed by each group's (:func:`vlamb_nb.meta.all_deviations`: what the
        runs carry, e.g. ``scored.attrs["deviations"]``), each listed once."""
        return all_deviations(self.deviations, *groups)

    def record_headline(self, rows: Any, *deviations: Any, model: str | None = None, data: Any = None,
                        limit: int | None = None) -> None:
        """Record this notebook's headline numbers for the cross-paper report card, each row stamped with the
        profile, the model (``model``, default this notebook's), the deviations (this notebook's and
        ``deviations``) and the data it stands on (``data``: the notebook data's
        :class:`~vlamb_nb.datahome.DataIdentity`; with ``limit``, the run asked ``limit`` of its N items)."""
        from vlamb_nb.notebook.results import record

        devs = deviation_lines(self.all_deviations(*deviations))
        ident = None
        if data is not None:
            ident = data.to_dict() if hasattr(data, "to_dict") else dict(data)
            loaded = ident.get("n_loaded") or ident.get("n_items")
            ident["n_run"] = min(limit, loaded) if limit is not None and loaded is not None else (limit or loaded)
        out = []
        for r in rows:
            r = r.to_dict() if hasattr(r, "to_dict") else dict(r)
            r.update(model=r.get("model") or model or _model_name(self.model), profile=self.profile,
                     deviations=devs)
            if ident is not None:
                r["data"] = ident
            out.append(r)
        record("headline", out)
        _show_card(out)


def _show_card(rows: list[dict[str, Any]]) -> None:
    """The rows just recorded for the report card, as the card shows them (ours with its interval, the rank among
    the published models), so the card cell shows what it recorded; the deviations behind them are the
    notebook's, printed once where they are recorded."""
    from vlamb_nb.notebook.display import show
    from vlamb_nb.notebook.results import jsonable
    from vlamb_nb.report_card import Card, data_rule
    from vlamb_nb.stats.ranking import from_dict

    if not rows:
        return
    heads = [data_rule(from_dict(jsonable(r))) for r in rows]
    card = Card(model=heads[0].model, profile=heads[0].profile, headlines=heads, papers={heads[0].paper: "ok"})
    frame = card.frame().drop(columns=["profile"])
    show(frame, title=f"Report card rows: {card.model} ({card.profile} profile)")


def parse_settings(given: Any) -> list[str]:
    """A list of settings from a list, a tuple, one name or a comma list (``"lm,sm,vlm"``)."""
    if given is None:
        return []
    if isinstance(given, str):
        return [s.strip() for s in given.split(",") if s.strip()]
    if isinstance(given, list | tuple):
        out = [str(s).strip() for s in given]
        if any(not s for s in out):
            raise SettingError(f"settings must be names, got {given!r}")
        return out
    raise SettingError(f"settings must be a list of names or a comma list, got {given!r}")


def _show(v: Any) -> str:
    return "unlimited" if v is None else str(v)


def setup(paper: str, *, profile: str | None = None, model: Any = None, base_url: str | None = None,
          quantization: str | None = "4bit", concurrency: int | None = None, seed: int = 0,
          store_dir: str | os.PathLike | None = None) -> NotebookConfig:
    """Resolve a notebook's shared parameters (see :mod:`vlamb_nb.notebook.parameters`): its profile, model,
    endpoint, quantization and where its working files go."""
    spec = ModelSpec.parse(model) if isinstance(model, str) and model.strip() else None  # read once
    prof = resolve_profile(profile, spec or model)
    if model is None:
        if prof == "paper":
            raise SettingError(f"{paper}: profile 'paper' needs a model (a hub id, a local checkpoint or "
                               f"openai:MODEL)")
        model = OFFLINE_MODEL
        spec = ModelSpec.parse(model)
    if base_url is not None and not (spec is not None and spec.served):
        raise SettingError(f"{paper}: base_url={base_url!r} goes with an openai:MODEL model, not {model!r}")
    if concurrency is not None and (not isinstance(concurrency, int) or isinstance(concurrency, bool)
                                    or concurrency < 1):
        raise SettingError(f"{paper}: concurrency must be a positive integer, got {concurrency!r}")
    quant = None if quantization in (None, "none", "") else quantization
    if quant not in (None, "4bit", "8bit"):
        raise SettingError(f"{paper}: unknown quantization {quantization!r}; use 4bit, 8bit or none")
    cfg = NotebookConfig(paper=paper, profile=prof, model=model, quantization=quant, seed=seed, base_url=base_url,
                         concurrency=concurrency, store_dir=Path(store_dir) if store_dir else None, spec=spec)
    if spec is not None and not spec.weights_local:
        cfg.quantization = None  # served or replayed: the weights are not loaded here
    if prof == "offline":
        cfg.add_deviation("model", "the paper's models", f"{_model_name(model)} (offline profile: a stand-in that "
                          "shows the model path and measures nothing)")
    if cfg.quantization:
        cfg.add_deviation(*astuple(quantization_deviation(cfg.quantization)))
    return cfg


def _model_name(model: Any) -> str:
    return model if isinstance(model, str) else str(getattr(getattr(model, "info", None), "model_id", model))
