"""The shape every benchmark follows, so a reader who knows one knows all five (and a sixth is one folder).

::

    items  = bench.load(source)                    # DataFrame, one row per item
    reqs   = bench.requests(items, setting)        # list[Request]
    gens   = bench.run(model, items, setting)      # DataFrame, one row per answer (cached, resumable)
    preds  = bench.predictions(items, gens)        # items joined to answers, each parsed by bench.parse
    scored = bench.score(preds)                    # per-item correctness columns
    tables = bench.tables(scored)                  # {table id: DataFrame} in the paper's layout
    cards  = bench.headline({setting: scored})     # the report card's rows, ranked among published models

``evaluate`` is that chain, defined once here. A paper overrides a step only where the paper differs: ``run``
where a setting takes several turns (VAGUE's captions, MUCAR's agent, V-FLUTE's scene graphs, Ref-Adv's repair
turn, RACQUET's samples and control images), ``predictions`` where those turns need joining, ``score`` where
scoring needs a model of its own (named in ``score_options``), ``run_deviations`` where a run's options
change its setup. The CLI (``vlamb-nb data stats|run|score|reference check``), sweeps, notebooks and
``reproduce`` call these methods and nothing else.

Short example (offline, with a scripted stand-in model)::

    from vlamb_nb import get_benchmark
    from vlamb_nb.models import ScriptedModel
    bench = get_benchmark("vague")
    items = bench.load(bench.make_sample(tmp_dir))
    scored = bench.evaluate(ScriptedModel(lambda r: "A"), items, setting="vlm")
"""

from __future__ import annotations

import os
import re
from abc import ABC, abstractmethod
from dataclasses import asdict
from pathlib import Path
from typing import Any, final

from vlamb_nb.errors import NotAvailableError, SettingError
from vlamb_nb.meta import Deviation
from vlamb_nb.models.base import VLM, ModelInfo, Request


class Benchmark(ABC):
    """Base class of the five benchmarks. Subclasses set the class attributes and the abstract steps."""

    name: str = ""
    paper: str = ""  # short citation
    settings: tuple[str, ...] = ()
    default_setting: str = ""
    #: keyword options of :meth:`evaluate` that belong to :meth:`score` (a judge, an explanation scorer, a
    #: metric model); every other option goes to :meth:`run`
    score_options: tuple[str, ...] = ()

    # -- the pipeline ------------------------------------------------------------------------------
    @abstractmethod
    def load(self, source: str | os.PathLike | None = None, **kwargs: Any):
        """Items as a DataFrame, one row per item, from a hub id, a local file or folder."""

    @abstractmethod
    def requests(self, items, setting: str, **kwargs: Any) -> list[Request]:
        """Model requests for ``items`` under ``setting`` (prompts ported verbatim)."""

    def model_requests(self, model: ModelInfo, items, setting: str, **options: Any) -> list[Request]:
        """The first-turn requests a run with ``model`` sends (what a saliency study explains); a paper whose
        prompt follows the model (Ref-Adv's grounding styles) overrides this."""
        return self.requests(items, setting, **options)

    @abstractmethod
    def parse(self, text: str, item: Any) -> dict[str, Any]:
        """Parse one raw output into answer fields (e.g. ``{"letter": "C", "valid": True}``)."""

    @abstractmethod
    def score(self, predictions):
        """Add per-item correctness columns to parsed predictions."""

    @abstractmethod
    def tables(self, scored) -> dict[str, Any]:
        """The paper's tables recomputed from scored predictions, keyed by table id."""

    # -- shared helpers ----------------------------------------------------------------------------
    def check_setting(self, setting: str) -> str:
        if setting not in self.settings:
            raise SettingError(f"unknown {self.name} setting {setting!r}; choose one of {', '.join(self.settings)}")
        return setting

    def predictions(self, items, generations, *, id_column: str = "id"):
        """Join generations to items by request meta ``item_id`` (or ``request_id``) and parse each output.

        Failed generations stay as rows with ``valid=False`` so they count as wrong, never vanish.
        """
        import pandas as pd

        gens = generations.copy()
        if "item_id" not in gens.columns:
            gens["item_id"] = gens["request_id"].astype(str).str.split("::").str[0]
        merged = gens.merge(items, left_on="item_id", right_on=id_column, how="left", suffixes=("", "_item"))
        parsed = []
        for _, row in merged.iterrows():
            err = row.get("error")
            if isinstance(err, str) and err:
                parsed.append({"valid": False, "parse_error": "generation_failed"})
            else:
                parsed.append(self.parse(row.get("text") or "", row))
        return pd.concat([merged.reset_index(drop=True), pd.DataFrame(parsed)], axis=1)

    def run(self, model: VLM, items, setting: str | None = None, *, store: str | os.PathLike | None = None,
            limit: int | None = None, batch_size: int = 8, progress: bool = True, **options: Any):
        """requests → generations for one setting, through the runner (cached in ``store``, resumable).

        The default is one request per item, each answered once; ``limit`` keeps the first ``limit`` items.
        ``options`` go to :meth:`requests`. Returns the runner's frame, one row per request.
        """
        from vlamb_nb import runner

        setting = self.check_setting(setting or self.default_setting)
        items = self.first_items(items, limit)
        reqs = self.requests(items, setting, **options)
        return runner.run(model, reqs, store, batch_size=batch_size, progress=progress,
                          run_meta=self.run_meta(model.info, setting, items=items), desc=f"{self.name} {setting}")

    @final
    def evaluate(self, model: VLM, items, setting: str | None = None, *, store: str | os.PathLike | None = None,
                 limit: int | None = None, batch_size: int = 8, progress: bool = True, **options: Any):
        """run → parse → score for one setting: the whole chain, the same for every paper.

        Options named in :attr:`score_options` go to :meth:`score`, the rest to :meth:`run`. The result has a
        ``model`` column and, in ``attrs``, the ``setting``, the ``model`` and the run's ``deviations``.
        """
        setting = self.check_setting(setting or self.default_setting)
        score_kw = {k: options.pop(k) for k in self.score_options if k in options}
        gens = self.run(model, items, setting, store=store, limit=limit, batch_size=batch_size, progress=progress,
                        **options)
        scored = self.score(self.predictions(items, gens), **score_kw)
        if "model" not in scored.columns:
            scored["model"] = model.info.model_id
        devs = self.run_deviations(model, setting, scored, {**options, **score_kw})
        scored.attrs.update(setting=setting, model=model.info.model_id,
                            deviations=[asdict(d) if isinstance(d, Deviation) else dict(d) for d in devs],
                            data=dict(getattr(items, "attrs", {}).get("data") or {}))
        return scored

    def run_settings(self, model: VLM, items, settings: Any, *, store_dir: str | os.PathLike | None = None,
                     limit: int | None = None, batch_size: int = 8, progress: bool = True,
                     **options: Any) -> dict[str, Any]:
        """:meth:`evaluate` for each setting, each into its own store under ``store_dir`` (named by
        :meth:`store_path`, so a rerun resumes); returns ``{setting: scored}``."""
        out = {}
        for setting in ([settings] if isinstance(settings, str) else list(settings)):
            store = self.store_path(store_dir, model.info, setting) if store_dir is not None else None
            out[setting] = self.evaluate(model, items, setting, store=store, limit=limit, batch_size=batch_size,
                                         progress=progress, **options)
        return out

    def store_path(self, directory: str | os.PathLike, model: ModelInfo | str, setting: str) -> Path:
        """Where a run's prediction store lives: ``<directory>/<model>[__<quantization>]/<benchmark>__<setting>
        .jsonl``. The one naming rule of notebooks, sweeps and the CLI's defaults: one run per file."""
        from vlamb_nb.paths import store_path

        return store_path(directory, benchmark=self.name, model=model, setting=setting)

    @staticmethod
    def first_items(items, limit: int | None):
        """The first ``limit`` items (all when None): what the shared ``limit`` parameter means."""
        if limit is None:
            return items
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise SettingError(f"limit must be a positive integer or None, got {limit!r}")
        return items.head(limit)

    def run_deviations(self, model: VLM, setting: str, scored, options: dict[str, Any]) -> list[Deviation]:
        """How one evaluated run differs from the paper's setup; papers whose options change the setup
        (decoding, a substitute scorer, the reading of answers) override this."""
        return self.deviations(model.info, setting)

    def headline(self, runs: dict[str, Any], *, n_resamples: int = 2000, seed: int = 0, **options: Any) -> list[Any]:
        """The paper's headline numbers for the cross-paper report card (:mod:`vlamb_nb.report_card`): one
        :class:`~vlamb_nb.report_card.Headline` per metric and slice, ranked among the paper's published
        models. ``runs`` maps a setting to its scored frame."""
        raise NotAvailableError(f"{self.name} has no report-card headline")

    def summary(self, scored) -> dict[str, Any]:
        """Headline numbers of one scored run (sweep summaries); benchmarks override with their metric."""
        out: dict[str, Any] = {"n": int(len(scored))}
        if "valid" in scored.columns:
            out["invalid"] = int((~scored["valid"].fillna(False).astype(bool)).sum())
        if "correct" in scored.columns and len(scored):
            out["accuracy"] = round(100.0 * float(scored["correct"].fillna(False).astype(float).mean()), 2)
        return out

    def deviations(self, model: ModelInfo, setting: str) -> list[Deviation]:
        """Ways a run with ``model`` under ``setting`` differs from the paper's setup."""
        out: list[Deviation] = []
        if model.quantization:
            out.append(Deviation("quantization", "full/half precision weights", model.quantization, "all"))
        if model.backend == "scripted":
            out.append(Deviation("model", "a real VLM", "a scripted stand-in (pipeline demonstration only)", "all"))
        return out

    def run_meta(self, model: ModelInfo, setting: str, seed: int | None = None, items: Any = None) -> dict[str, Any]:
        """What identifies a run (stored with every record): model, setting, seed, the digest of the prompt
        templates and of the items asked, and the deviations from the paper."""
        from vlamb_nb.meta import RunMeta

        return RunMeta(benchmark=self.name, setting=setting, model=model.to_dict(), seed=seed,
                       deviations=self.deviations(model, setting), template=template_digest(self.name),
                       source=source_digest(items), data=dict(getattr(items, "attrs", {}).get("data") or {})).to_dict()

    # -- reference numbers and CLI hooks -----------------------------------------------------------
    def reference(self, table: str | None = None):
        """The paper's published numbers (each with table id and provenance)."""
        from vlamb_nb import reference

        return reference.load(self.name, table=table)

    def data_stats(self, items) -> dict[str, Any]:
        """Dataset statistics for ``vlamb-nb data stats``."""
        raise NotAvailableError(f"data stats for {self.name} are not implemented yet")

    def score_file(self, predictions: str | os.PathLike, *, source: str | os.PathLike | None = None,
                   **options: Any) -> dict[str, Any]:
        """Score a predictions file for ``vlamb-nb score``; returns JSON-ready results."""
        raise NotAvailableError(f"scoring files for {self.name} is not implemented yet")

    def reference_check(self) -> list[dict[str, Any]]:
        """Recompute derivable published cells; one finding per checked cell (see ``reference.Finding``)."""
        raise NotAvailableError(f"the reference check for {self.name} is not implemented yet")

    def make_sample(self, directory: str | os.PathLike, n: int = 8, seed: int = 0) -> Path:
        """Write a small generated sample in the benchmark's released format; return what ``load`` takes."""
        raise NotAvailableError(f"sample generation for {self.name} is not implemented yet")


# -- a lenient reading of option letters, shared by the multiple-choice benchmarks --------------------------
#: (rule name, pattern) tried in order; the first rule that names exactly one letter decides
LENIENT_RULES: tuple[tuple[str, Any], ...] = (
    # an answer line at the start of a line: the first one is the answer, later text ("Note: the answer A ...")
    # only discusses it
    ("answer_line", re.compile(r"^\W{0,3}(?:final\s+)?(?:answer|答案|回答|jawapan)\s*(?:is)?\s*[:：\-–]\s*"
                                r"[\[(（【]?\s*([A-Ea-e])(?![A-Za-z])", re.I | re.M)),
    ("x_is_correct", re.compile(r"(?<![A-Za-z])(?:option\s+)?[\[(]?([A-E])[\])]?\s+is\s+(?:the\s+)?"
                                 r"(?:correct|right|best|most\s+likely)\b", re.I)),
    ("correct_is_x", re.compile(r"(?:correct|right|best)\s+(?:answer|option|choice)\s+is\s*:?\s*(?:option\s+)?"
                                 r"[\[(]?([A-Ea-e])(?![A-Za-z])", re.I)),
    ("chooses_x", re.compile(r"(?:go\s+with|choose|pick|select|opt\s+for|I\s+think\s+it\s*(?:'s|\s+is))\s+"
                              r"(?:option\s+)?[\[(]?([A-Ea-e])(?![A-Za-z])", re.I)),
    ("option_x", re.compile(r"^\W*option\s+[\[(]?([A-Ea-e])[\])]?\W*$", re.I)),
    ("chinese_choice", re.compile(r"(?:我选|选择|答案是|答案为)\s*[\[(（【]?\s*([A-E])")),
    ("lone_letter", re.compile(r"^\W*([A-Ea-e])\W*$")),
)


def lenient_letter(text: str | None, letters: str = "ABCD") -> tuple[str | None, str]:
    """(letter, rule) under the documented lenient reading, or (None, "unparsed").

    The official parsers are strict, and a strict parser scores a readable answer ("C is the correct answer.",
    "I'd go with D", "我选A。", a lone "c") as wrong, which biases a paper's numbers down when the paper itself
    read answers with a judge (MUCAR's GPT-4o) or by hand. Tables report the strict (official) reading, which
    is what the published numbers correspond to where a rule-based parser was used, and this one beside it.
    """
    t = (text or "").replace("*", "").strip()
    if not t:
        return None, "empty"
    for name, pattern in LENIENT_RULES:
        hits = [m.group(1).upper() for m in pattern.finditer(t)]
        hits = [h for h in hits if h in letters]
        if not hits:
            continue
        if name == "answer_line" or len(set(hits)) == 1:
            return hits[0], name
        return None, "ambiguous"
    return None, "unparsed"


def template_digest(benchmark: str) -> str:
    """Digest of a benchmark's prompt templates (the source of its ``prompts`` module): runs asked with other
    prompt texts are other runs, even under the same model and setting."""
    import importlib.util

    from vlamb_nb.hashing import digest

    spec = importlib.util.find_spec(f"vlamb_nb.benchmarks.{benchmark}.prompts")
    if spec is None or spec.origin is None:
        return ""
    with open(spec.origin, encoding="utf-8") as fh:
        return digest(fh.read())[:16]


def source_digest(items: Any) -> str:
    """Digest of the items a run was asked about (their ids, in order, and the source they came from)."""
    if items is None or not hasattr(items, "columns") or "id" not in items.columns:
        return ""
    from vlamb_nb.hashing import digest

    return digest({"ids": [str(i) for i in items["id"]], "source": str(items.attrs.get("source", ""))})[:16]
