"""The shape every benchmark follows, so a reader who knows one knows all five (and a sixth is one folder).

::

    items  = bench.load(source)                    # DataFrame, one row per item
    reqs   = bench.requests(items, setting)        # list[Request]
    gens   = bench.run(model, items, setting)      # DataFrame, one row per answer (cached, resumable)
    preds  = bench.predictions(items, gens)        # items joined to answers, each parsed by bench.parse
    scored = bench.score(preds)                    # per-item correctness columns
    again  = bench.score_store(store, items)       # the same scored frame, from the run's stored records
    tables = bench.tables(scored)                  # {table id: DataFrame} in the paper's layout
    cards  = bench.headline({setting: scored})     # the report card's rows, ranked among published models

``evaluate`` is that chain and ``run`` and ``predictions`` its two halves, each defined once here;
``score_store`` is the second half from the stored run: each turn's stored answers go through the same ``join``,
``predictions`` and ``score``, so a saved run scores exactly as it scored when it ran. A paper declares what
differs instead of re-running the chain: ``context`` (what a run resolves once from its model and options: the
grounding style of Ref-Adv), ``turns`` (the model calls of a setting, in order, each a :class:`Turn` that builds
its requests from the items and the turns answered before it: VAGUE's captions, MUCAR's agent steps, V-FLUTE's
scene graphs, Ref-Adv's repair turn), ``asked`` (which items a run asks: RACQUET's control images, Ref-Adv's
rewritten expressions), ``join`` (the turns' answers as one frame), ``join_items``/``predicted`` (how answers
meet their items, what is set beside them), ``parse`` and ``failed_parse``, ``score`` (with a model of its own
named in ``score_options``), and ``run_deviations``/``score_deviations`` (how the options used change the setup,
computed once). The CLI (``vlamb-nb data stats|run|score|reference check``), sweeps, ``compare``, notebooks and
``reproduce`` call these methods and nothing else.

Short example (offline, with a scripted stand-in model)::

    from vlamb_nb import get_benchmark
    from vlamb_nb.models import ScriptedModel
    bench = get_benchmark("vague")
    items = bench.load(bench.make_sample(tmp_dir))
    scored = bench.evaluate(ScriptedModel(lambda r: "A"), items, setting="vlm")
"""

from __future__ import annotations

import json
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, final

from vlamb_nb.errors import NotAvailableError, SettingError
from vlamb_nb.meta import Deviation, quantization_deviation
from vlamb_nb.models.base import VLM, Backend, DecodingParams, ModelInfo, Request
from vlamb_nb.models.spec import ModelSpec
from vlamb_nb.stats.metric import Metric
from vlamb_nb.store import ANSWER

#: the scripted stand-in's name (its model id starts with it) and what every view says it is
SCRIPTED_NAME = "scripted stand-in"
SCRIPTED_LABEL = "scripted stand-in: not a model"
#: the error of an item a stored run has no answer for, when it is counted (``score_store(fill_missing=True)``)
NO_PREDICTION = "no prediction for this item"
#: what ``vlamb-nb score -o KEY=VALUE`` picks a stored run by, where a store holds several (:mod:`vlamb_nb.run_identity`)
STORE_PICKS = ("setting", "model", "quantization", "run")


@dataclass(frozen=True)
class RunContext:
    """What one run (or one stored run being scored) resolved once, handed to every hook: the setting, the model
    (its identity, parsed spec and image budget), the run's options and what the paper read from them (the
    grounding style answers are read with; ``facts``: what else identifies the run, stored in its meta)."""

    setting: str
    model: ModelInfo
    #: the run's options as given (what :meth:`Benchmark.requests` and the turns take)
    options: Mapping[str, Any] = field(default_factory=dict)
    #: the model's spec, parsed once when it was loaded (None for a model object built in code)
    spec: ModelSpec | None = None
    #: how this model's answers are read (Ref-Adv's grounding style; None where a paper has one reading)
    style: Any = None
    #: the model's image budget (``max_pixels``), where it set one
    max_pixels: int | None = None
    #: what else identifies the run beside its model and setting (stored with every record): its seed, ...
    facts: Mapping[str, Any] = field(default_factory=dict)

    @property
    def family(self) -> str | None:
        """The model's declared family (:mod:`vlamb_nb.models.families`), never guessed from its name."""
        return self.model.family

    def option(self, name: str, default: Any = None) -> Any:
        return self.options.get(name, default)


@dataclass(frozen=True)
class Turn:
    """One model call per item in a setting's chain: ``ask(items, previous)`` builds this turn's requests from
    the items and the turns answered before it (each an :class:`Asked`), so a follow-up (Ref-Adv's repair, the
    answer after V-FLUTE's scene graph) sees the exact requests and answers it follows. The turn's ``name`` is
    stored with every answer; the turn named :data:`ANSWER` holds the answers that are parsed and scored."""

    name: str
    ask: Callable[[Any, list[Asked]], list[Request]]
    #: what answers this turn, given the run's model (VAGUE's option log-likelihood reader); None: the model
    reader: Callable[[VLM], VLM] | None = None
    #: the progress bar's label (default ``<benchmark> <setting>[ <turn>]``)
    desc: str = ""


@dataclass
class Asked:
    """One answered turn: its requests and the runner's frame (row i answers request i). A stored turn's
    requests carry what the store kept of them (id, setting, decoding, ``meta``), not their messages."""

    turn: str
    requests: list[Request]
    generations: Any


@dataclass(frozen=True)
class ReleasedRun:
    """A run a paper's authors released as rows they had already read (per-row predictions with boxes and IoUs,
    no answers to parse): what :meth:`Benchmark.released_run` reads from such a file."""

    model: str
    setting: str
    scored: Any  # the paper's scored frame
    data: Mapping[str, Any]  # the data identity the released rows stand on


@dataclass(frozen=True)
class Scripted:
    """What a scripted stand-in says to one request (:meth:`Benchmark.scripted_reply`): the item asked about, the
    outcome drawn for its unit (:attr:`Benchmark.scripted_right` or an error of :attr:`Benchmark.scripted_errors`),
    the setting, and ``u``, a further draw in [0, 1) for the details (which wrong option, how far a box is off);
    ``peers``: every item of the same unit, in the order given (a MUCAR pair's queries: a wrong pair needs one
    wrong query, so each query's reply looks at the others)."""

    item: Mapping[str, Any]
    outcome: str
    right: bool
    setting: str
    u: float
    peers: tuple[Mapping[str, Any], ...] = ()


def _draw(*parts: Any) -> float:
    """A number in [0, 1) fixed by ``parts``: the same on every machine, for every run (a stand-in's answers never
    depend on the order it is asked in)."""
    import hashlib

    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@dataclass(eq=False)  # frames inside: compared by identity, never element-wise
class NotebookData(Mapping):
    """The data a paper's notebook works on, one type for every paper (:meth:`Benchmark.notebook_data`): the items
    its statistics and audit are computed on (``release``) and those its models run on (``pipeline``, tagged with
    what they are), each with a line saying what it is, and ``data``, the pipeline's data identity. A paper adds
    what its notebook also needs in ``extra`` (V-FLUTE's folders, Ref-Adv's released predictions). Read as a
    mapping too (``data["pipeline"]``), so a notebook reads it one way whatever the paper."""

    release: Any
    release_kind: str
    pipeline: Any
    pipeline_kind: str
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def data(self) -> Any:
        """The pipeline's data identity (:class:`~vlamb_nb.datahome.DataIdentity`), as its items carry it."""
        from vlamb_nb.datahome import identity_of

        return identity_of(self.pipeline)

    def _fields(self) -> dict[str, Any]:
        return {"release": self.release, "release_kind": self.release_kind, "pipeline": self.pipeline,
                "pipeline_kind": self.pipeline_kind, "data": self.data, **self.extra}

    def __getitem__(self, key: str) -> Any:
        return self._fields()[key]

    def __iter__(self):
        return iter(self._fields())

    def __len__(self) -> int:
        return len(self._fields())


class Benchmark(ABC):
    """Base class of the five benchmarks. Subclasses set the class attributes and the abstract steps."""

    name: str = ""
    paper: str = ""  # short citation
    settings: tuple[str, ...] = ()
    default_setting: str = ""
    #: keyword options of :meth:`evaluate` that belong to :meth:`score` (a judge, an explanation scorer, a
    #: metric model); every other option goes to :meth:`run`
    score_options: tuple[str, ...] = ()
    #: the score options the offline profile's notebook uses (e.g. a metric model that ships with the package):
    #: ``compare`` scores a run on a generated sample with them unless told otherwise, as its notebook did
    offline_score_options: dict[str, Any] = {}
    #: the paper's headline metrics, declared once (:mod:`vlamb_nb.stats.metric`): the card's :meth:`headline`,
    #: :meth:`summary` and ``compare`` derive from them
    metrics: tuple[Metric, ...] = ()
    #: settings whose run asks items it rewrote first (:meth:`asked`: Ref-Adv's descriptor deletion), whose asked
    #: items' digest therefore never equals the loaded items'
    rewritten_settings: tuple[str, ...] = ()
    #: the scripted stand-in's chance of a right answer per unit (:meth:`scripted_unit`), one number or one per
    #: setting (``"*"``: the others); the offline profile's notebooks run it beside the tiny checkpoint, so every
    #: table has parsed answers, values with intervals and paired tests with discordant items to show
    scripted_accuracy: float | Mapping[str, float] = 0.7
    #: the outcomes that read as right (Ref-Adv's ``repaired``: unparseable first, fixed by the repair turn)
    scripted_right: tuple[str, ...] = ("right",)
    #: the paper's error kinds, drawn evenly among the wrong units (a wrong option, a near-miss box, ...)
    scripted_errors: tuple[str, ...] = ("wrong",)
    #: prompt-sensitivity settings, by the paper setting they vary: ``{base: {variant: "order" | "wording"}}``
    #: (an option order permuted, the instruction reworded by the paper's own variant); a variant's answers carry
    #: ``position`` (the place of the option chosen, 0 first) and ``choice`` (what was chosen, in the items'
    #: terms), which :mod:`vlamb_nb.sensitivity` compares across the settings
    prompt_variants: dict[str, dict[str, str]] = {}

    @property
    def paper_settings(self) -> tuple[str, ...]:
        """The settings the paper ran: every setting but the prompt-sensitivity variants (:attr:`prompt_variants`),
        what a notebook's ``settings="all"`` means."""
        variants = {v for vs in self.prompt_variants.values() for v in vs}
        return tuple(s for s in self.settings if s not in variants)

    # -- the pipeline ------------------------------------------------------------------------------
    @abstractmethod
    def load(self, source: str | os.PathLike | None = None, **kwargs: Any):
        """Items as a DataFrame, one row per item, from a hub id, a local file or folder."""

    @abstractmethod
    def requests(self, items, setting: str, **kwargs: Any) -> list[Request]:
        """Model requests for ``items`` under ``setting`` (prompts ported verbatim)."""

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
    @final
    def check_setting(self, setting: str) -> str:
        if setting not in self.settings:
            raise SettingError(f"unknown {self.name} setting {setting!r}; choose one of {', '.join(self.settings)}")
        return setting

    # -- generate: a setting is a short chain of declared turns, run here and nowhere else --------------
    def context(self, model: VLM | ModelInfo, setting: str, options: Mapping[str, Any] | None = None, *,
                stored: Mapping[str, Any] | None = None) -> RunContext:
        """What a run with ``model`` under ``setting`` and ``options`` resolves once (:class:`RunContext`); a paper
        that reads answers per model (Ref-Adv's grounding style) resolves it here. ``stored``: the run meta of
        a stored run being scored (what it recorded: a grounding style chosen then)."""
        info = model if isinstance(model, ModelInfo) else model.info
        opts = dict(options or {})
        max_pixels = opts.pop("max_pixels", getattr(model, "max_pixels", None))
        return RunContext(setting=setting, model=info, options=opts, spec=getattr(model, "spec", None),
                          max_pixels=max_pixels, facts={"seed": opts.get("seed")})

    def asked(self, items, ctx: RunContext, *, limit: int | None = None, progress: bool = True):
        """The items a run asks about: the first ``limit`` (a paper that picks or rewrites items first, such as
        RACQUET's control images or Ref-Adv's descriptor deletion, says so here)."""
        return self.first_items(items, limit)

    def turns(self, ctx: RunContext) -> list[Turn]:
        """The model calls of one setting, in order. The default is one turn, the answer: :meth:`requests` with
        the run's options, one per item."""
        return [Turn(ANSWER, lambda items, previous: self.requests(items, ctx.setting, **ctx.options))]

    def join(self, items, asked: list[Asked], ctx: RunContext):
        """The generations :meth:`run` returns, from every turn's runner frame (default: stacked in order)."""
        import pandas as pd

        frames = [a.generations for a in asked]
        return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)

    @final
    def run(self, model: VLM, items, setting: str | None = None, *, store: str | os.PathLike | None = None,
            limit: int | None = None, batch_size: int = 8, progress: bool = True, **options: Any):
        """Every turn of ``setting`` through the runner, into one store (cached, resumable, streamed where the
        backend streams): the same preamble for every paper, so a chain of calls is declared, never re-run.

        ``limit`` keeps the first ``limit`` items; ``options`` are resolved once into the run's
        :class:`RunContext` (:meth:`context`), which every hook is handed. The result's ``attrs["deviations"]``
        are the ones stored with every record (computed once, from the options this run used).
        """
        out, _ = self._run(model, items, setting, store=store, limit=limit, batch_size=batch_size,
                           progress=progress, **options)
        return out

    def _run(self, model: VLM, items, setting: str | None = None, *, store: str | os.PathLike | None = None,
             limit: int | None = None, batch_size: int = 8, progress: bool = True, **options: Any):
        """:meth:`run`, also giving the run meta stored with every record (what the run record's facts are)."""
        from vlamb_nb import runner

        setting = self.check_setting(setting or self.default_setting)
        ctx = self.context(model, setting, options)
        loaded = items
        items = self.asked(items, ctx, limit=limit, progress=progress)
        devs = list(self.run_deviations(ctx, items))
        facts = dict(ctx.facts)
        meta = self.run_meta(ctx.model, setting, seed=facts.pop("seed", None), items=items)
        if self.id_column in getattr(loaded, "columns", ()) and self.id_column in getattr(items, "columns", ()):
            asked = item_digests(loaded, self.id_column, set(items[self.id_column].astype(str)))
            meta.update(items_sha256=items_digest(asked), n_asked=len(asked))  # what a scoring checks its data by
        meta.update(facts, deviations=[d.to_dict() for d in devs], spec=ctx.spec.text if ctx.spec is not None else None)
        reuse: list[Path] = []
        if store is not None:  # one run per file: another run's store is left as it is, its answers reused
            from vlamb_nb.store import choose_store

            meta["run_key"] = run_key(meta, ctx.options)
            store, reuse = choose_store(store, meta)
        done: list[Asked] = []
        for i, turn in enumerate(self.turns(ctx)):
            reqs = turn.ask(items, done)
            desc = turn.desc or (f"{self.name} {setting}" + (f" {turn.name}" if i else ""))
            answerer = turn.reader(model) if turn.reader is not None else model
            gens = runner.run(answerer, reqs, store, batch_size=batch_size, progress=progress, run_meta=meta,
                              desc=desc, turn=turn.name, reuse=reuse) if reqs else \
                runner.run(answerer, [], None, progress=False, turn=turn.name)
            done.append(Asked(turn.name, reqs, gens))
        out = self.join(items, done, ctx)
        out.attrs["deviations"] = devs
        if store is not None:  # the run's record: its answers, parsed, beside the store (scoring adds the metrics)
            from vlamb_nb.record import write_for

            out.attrs["store"] = str(store)  # the file the run wrote (its own where the default held another run)

            write_for(self, lambda: self._scored(items, out, ctx.model, setting, {}, parse_only=True), store,
                      stage="run", run_meta=meta)
        return out, meta

    @final
    def first_requests(self, model: VLM | ModelInfo, items, setting: str, **options: Any) -> list[Request]:
        """The first turn's requests a run with ``model`` sends (what a saliency study explains): the prompt
        follows the model where a paper's does (Ref-Adv's grounding styles)."""
        ctx = self.context(model, self.check_setting(setting), options)
        return self.turns(ctx)[0].ask(items, [])

    # -- parse: answers joined to their items, each read by ``parse`` ------------------------------------------
    #: the item column generations are joined on
    id_column: str = "id"
    #: what a failed generation reads as (counted wrong, never dropped)
    failed_parse: dict[str, Any] = {"valid": False, "parse_error": "generation_failed"}

    def join_items(self, items, answers, id_column: str):
        """Each answer beside its item (its ``item_id``, stored with it); an answer naming no item of ``items`` is
        an error (a stored run scored against other data), never a row without its item."""
        from vlamb_nb.errors import DataError

        unknown = sorted(set(answers["item_id"].astype(str)) - set(items[id_column].astype(str)))
        if unknown:
            raise DataError(f"{len(unknown)} answer(s) name items that are not in the data, e.g. {unknown[0]!r}")
        return answers.merge(items, left_on="item_id", right_on=id_column, how="left", suffixes=("", "_item"))

    def predicted(self, predictions, generations):
        """Finishing touches on parsed predictions, given every generation (earlier turns' text beside an answer)."""
        return predictions

    @final
    def predictions(self, items, generations, *, id_column: str | None = None):
        """Join answers to items and parse each output: the rows of the :data:`ANSWER` turn (earlier turns stay
        aside) → :meth:`join_items` → :meth:`parse` (or :attr:`failed_parse`) → :meth:`predicted`. Failed
        generations stay as rows, never vanish."""
        import pandas as pd

        answers = generations
        if "turn" in generations.columns:
            turn = generations["turn"]
            answers = generations[turn.isna() | (turn == ANSWER)].reset_index(drop=True)
        merged = self.join_items(items, answers, id_column or self.id_column)
        parsed = []
        for _, row in merged.iterrows():
            err = row.get("error")
            parsed.append(dict(self.failed_parse) if isinstance(err, str) and err else
                          self.parse(row.get("text") or "", row))
        fields = pd.DataFrame(parsed)
        out = self.predicted(pd.concat([merged.reset_index(drop=True), fields], axis=1), generations)
        out.attrs["parsed_columns"] = list(fields.columns)  # what the run record shows as the parse
        return out

    @final
    def evaluate(self, model: VLM, items, setting: str | None = None, *, store: str | os.PathLike | None = None,
                 limit: int | None = None, batch_size: int = 8, progress: bool = True, **options: Any):
        """run → parse → score for one setting: the whole chain, the same for every paper.

        Options named in :attr:`score_options` go to :meth:`score`, the rest to :meth:`run`. The result has a
        ``model`` column and, in ``attrs``, the ``setting``, the ``model`` and the run's ``deviations``.
        """
        setting = self.check_setting(setting or self.default_setting)
        score_kw = {k: options.pop(k) for k in self.score_options if k in options}
        gens, meta = self._run(model, items, setting, store=store, limit=limit, batch_size=batch_size,
                               progress=progress, **options)
        scored = self._scored(items, gens, model.info, setting, score_kw)
        scored.attrs.update(items_sha256=meta.get("items_sha256"), asked_sha256=meta.get("items_sha256"))
        if store is not None:
            from vlamb_nb.record import write_for

            store = gens.attrs.get("store", store)
            scored.attrs["store"] = str(store)
            written = write_for(self, lambda: scored, store, run_meta=meta)
            scored.attrs["record"] = {"path": str(written), "rows": len(scored)}  # what :meth:`recorded` reads
        return scored

    def _scored(self, items, gens, model: ModelInfo, setting: str, score_kw: dict[str, Any], *,
                parse_only: bool = False):
        """predictions → score, and what the scored frame says about itself: the one tail of :meth:`evaluate`
        and :meth:`score_store` (``parse_only``: the parsed predictions, what a run's record holds)."""
        preds = self.predictions(items, gens)
        parsed_columns = list(preds.attrs.get("parsed_columns") or ())
        scored = preds if parse_only else self.score(preds, **score_kw)
        if "model" not in scored.columns:
            scored["model"] = model.model_id
        devs = [Deviation.of(d) for d in gens.attrs.get("deviations") or []] + (
            [] if parse_only else list(self.score_deviations(scored, **score_kw)))
        scored.attrs.update(setting=setting, model=model.model_id, deviations=devs,
                            data=dict(getattr(items, "attrs", {}).get("data") or {}), parsed_columns=parsed_columns)
        return scored

    @final
    def score_store(self, store: str | os.PathLike | Sequence[dict[str, Any]], items, *, setting: str | None = None,
                    model: str | None = None, quantization: str | None = None, run: int | None = None,
                    fill_missing: bool = False, record: bool = True, **options: Any):
        """A stored run scored exactly as its :meth:`evaluate` scored it when it ran.

        ``store``: a prediction store (a path) or records (dicts with ``item_id``, ``turn``, ``text``, ``error``:
        what a paper's reader makes of an official prediction file). The run's records (one run:
        ``setting``/``model``/``quantization``/``run`` pick it from a store holding several, see
        :mod:`vlamb_nb.run_identity`; one record per request) are grouped by turn into each turn's answers, in
        the order of ``items``, and go through the same :meth:`join`, :meth:`predictions` and :meth:`score` a live
        run uses, with the run's context rebuilt from its stored model and meta and ``options`` (the run's
        options, the score options among them). Only the items the run answered are rows, as in the run;
        ``fill_missing`` adds every other item of ``items`` as a failed answer (:data:`NO_PREDICTION`), as
        a paper's denominators count it. ``attrs["coverage"]`` says how many items were answered, failed or
        missing, and how many records answered a question already answered (``duplicates``: one question asked
        twice under two request ids is counted once; two different answers to it are refused). A record of another
        benchmark or of a turn the run does not have is refused, naming its line; one of a variant of the run's
        turn asked with other options (``repair-newlines`` beside ``repair``) is counted (``other_variants``).
        With ``record`` (and a store path) the scoring's run record is written beside the store
        (:mod:`vlamb_nb.record`).
        """
        import pandas as pd

        from vlamb_nb.metrics import coverage
        from vlamb_nb.run_identity import check_turns, stored_answers

        label = str(store) if isinstance(store, str | os.PathLike) else "records"
        if setting is not None:
            self.check_setting(setting)
        got = stored_answers(store, self.name, source=label, model=model, setting=setting, quantization=quantization,
                             run=run)
        rid, recs, number, duplicates = got.run_id, got.records, got.number, got.duplicates
        setting = self.check_setting(rid.setting)
        score_kw = {k: options.pop(k) for k in self.score_options if k in options}
        first = next((r for r in recs if r["turn"] == ANSWER), recs[0])
        stored = dict(first.get("run") or {})
        info = ModelInfo.from_dict(first.get("model"))
        ctx = self.context(info, setting, options, stored=stored)
        variants = check_turns(got.numbered, [t.name for t in self.turns(ctx)],
                               run=f"the {self.name} {setting} run", source=label)
        ids = items[self.id_column].astype(str)
        at = {i: k for k, i in enumerate(ids)}
        answered = {str(r["item_id"]) for r in recs}
        checked = self._check_items(items, answered, stored)
        if fill_missing:
            recs = recs + [{"request_id": i, "item_id": i, "turn": ANSWER, "benchmark": self.name,
                            "setting": rid.tag or setting, "model": first.get("model"), "text": "",
                            "error": NO_PREDICTION, "finish_reason": "error", "meta": {}}
                           for i in ids if i not in answered]
        asked = []
        for turn in self.turns(ctx):
            rows = sorted((r for r in recs if r["turn"] == turn.name), key=lambda r: at.get(str(r["item_id"]), -1))
            asked.append(Asked(turn.name, [_stored_request(r) for r in rows], _stored_frame(rows)))
        gens = self.join(items[ids.isin({str(r["item_id"]) for r in recs})], asked, ctx)
        gens.attrs["deviations"] = [Deviation.of(d) for d in stored.get("deviations") or []]
        scored = self._scored(items, gens, info, setting, score_kw)
        ans = gens[gens["turn"].isna() | (gens["turn"] == ANSWER)] if "turn" in gens.columns else gens
        err = ans["error"] if "error" in ans.columns else pd.Series([None] * len(ans), index=ans.index)
        bad = err.map(lambda e: isinstance(e, str) and bool(e)) & (err != NO_PREDICTION)
        ok = ~err.map(lambda e: isinstance(e, str) and bool(e))
        # duplicates: the same question answered twice under two request ids, counted once and said so; variants:
        # a turn asked with other options (another repair text), kept in the same store
        scored.attrs["coverage"] = replace(coverage(ids, ans.loc[ok, "item_id"], ans.loc[bad, "item_id"], err[bad]),
                                           duplicates=duplicates, other_variants=variants)
        if number is not None:
            scored.attrs["run_number"] = number
        if isinstance(store, str | os.PathLike):
            scored.attrs["store"] = str(store)
        scored.attrs.update(checked)
        if checked.get("differ"):
            scored.attrs["notes"] = [*scored.attrs.get("notes", ()), checked["differ"]]
        if isinstance(store, str | os.PathLike) and record:
            from vlamb_nb.record import write_for

            written = write_for(self, lambda: scored, store, run_meta=stored, model=first.get("model"))
            scored.attrs["record"] = {"path": str(written), "rows": len(scored)}
        return scored

    def _check_items(self, items, answered: set[str], stored: Mapping[str, Any]) -> dict[str, Any]:
        """The digest of the items a stored run is scored against (those its records name) beside the one its run
        was asked (its run meta's, where the run asked exactly these items): ``differ`` says why they differ (another
        answer key, edited items), for the score's notes and its record."""
        if self.id_column not in getattr(items, "columns", ()) or stored.get("setting") in self.rewritten_settings:
            return {}  # a setting whose run asks rewritten items (Ref-Adv's descriptor deletion): nothing to hold
        mine = item_digests(items, self.id_column, answered)
        out: dict[str, Any] = {"items_sha256": items_digest(mine), "asked_sha256": None}
        want, n = stored.get("items_sha256"), stored.get("n_asked")
        if isinstance(want, str) and want and n == len(mine):
            out["asked_sha256"] = want
            if want != out["items_sha256"]:
                out["differ"] = (f"scored against other items than its run was asked: the {len(mine)} items' digest "
                                 f"is {out['items_sha256'][:12]}, the run's {want[:12]} (another answer key or edited "
                                 "items give other numbers)")
        return out

    @final
    def scored_on(self, record: Any, items: Any) -> bool:
        """Whether ``record`` was scored against these ``items`` (the digest of the items its rows answer, as
        :meth:`_check_items` keeps it): a record scored against another answer key or edited items is not these
        items' scoring. True where the record keeps no digest (nothing to hold it to)."""
        want = getattr(record.data, "items_sha256", None)
        if not want or self.id_column not in getattr(items, "columns", ()):
            return True
        answered = {str(r.get("item_id")) for r in record.rows if r.get("failure") != NO_PREDICTION}
        return items_digest(item_digests(items, self.id_column, answered)) == want

    @final
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

    # -- the scripted stand-in: answers written from the gold, through the real run path ----------------------
    def scripted_unit(self, item: Mapping[str, Any]) -> str:
        """What one outcome is drawn for: an item (a paper whose metric counts groups, MUCAR's pairs, draws per
        group, so its pair accuracy is the accuracy scripted)."""
        return str(item[self.id_column])

    def scripted_reply(self, request: Request, s: Scripted) -> str:
        """The text a scripted stand-in answers ``request`` with, written in the form the paper's parser reads
        (the inverse of :meth:`parse`): right, or the error ``s.outcome``; earlier turns (a caption, an agent's
        step) and a judge's verdicts are told apart by the request."""
        raise NotAvailableError(f"{self.name} has no scripted stand-in")

    def scripted_accuracies(self, accuracy: float | Mapping[str, float] | None = None) -> dict[str, float]:
        """The scripted chance of a right unit per setting (every setting of the paper named), checked to lie in
        [0, 1]."""
        given = self.scripted_accuracy if accuracy is None else accuracy
        table = dict(given) if isinstance(given, Mapping) else {"*": given}
        default = table.get("*", 0.7)
        base_of = {v: b for b, variants in self.prompt_variants.items() for v in variants}  # a variant: its base's
        out = {st: float(table.get(st, table.get(base_of.get(st, ""), default))) for st in self.settings}
        bad = {k: v for k, v in out.items() if not 0.0 <= v <= 1.0}
        if bad:
            raise SettingError(f"{self.name}: a scripted accuracy is a chance in [0, 1], got {bad}")
        return out

    @final
    def scripted_stand_in(self, items, *, accuracy: float | Mapping[str, float] | None = None, seed: int = 0):
        """A scripted stand-in for ``items``: not a model. Each unit of each setting is right with the scripted
        chance (:meth:`scripted_accuracies`) and otherwise one of the paper's error kinds, drawn from ``seed``, the
        paper, the unit and the setting alone; its replies are written by :meth:`scripted_reply` in the form the
        paper's parser reads, and go through the runner, the store, the parser and the metrics like any model's,
        so the tables, intervals and paired tests a real run gets are shown working, and the accuracy recovered
        can be checked against the one scripted. Labelled ``backend='scripted'`` (its name says it, and its
        deviation says "not a model") so its numbers never pass as a model's."""
        from vlamb_nb.models.base import ScriptedModel

        chances = self.scripted_accuracies(accuracy)
        fallback = sum(chances.values()) / len(chances) if chances else 0.7
        by_id = {str(r[self.id_column]): r for r in items.to_dict(orient="records")}
        peers: dict[str, list[Any]] = {}
        for r in by_id.values():
            peers.setdefault(self.scripted_unit(r), []).append(r)
        described = ", ".join(f"{st} {p:.0%}" for st, p in chances.items())

        def respond(request: Request) -> str:
            item = by_id.get(request.item_id)
            if item is None:
                raise SettingError(f"the scripted stand-in knows no item {request.item_id!r}")
            asked = str(request.setting or "")  # a turn's requests may carry a tag after the setting's name
            setting = next((st for st in sorted(chances, key=len, reverse=True) if asked.startswith(st)), asked)
            unit = self.scripted_unit(item)
            right = _draw(seed, self.name, unit, setting, "outcome") < chances.get(setting, fallback)
            kinds = self.scripted_right if right else self.scripted_errors
            kind = kinds[min(int(_draw(seed, self.name, unit, setting, "kind") * len(kinds)), len(kinds) - 1)]
            return self.scripted_reply(request, Scripted(item, kind, right, setting,
                                                         _draw(seed, self.name, request.item_id, setting, "detail"),
                                                         tuple(peers[unit])))

        model = ScriptedModel(respond, model_id=f"{SCRIPTED_NAME} (seed {seed})")
        model.info = replace(model.info, revision=f"right by design: {described}")
        return model

    @final
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

    def run_deviations(self, ctx: RunContext, items: Any = None) -> list[Deviation]:
        """How a run differs from the paper's setup, from its context (the model, the decoding, the reading of
        answers; ``items``: the items asked, where that matters); computed once by :meth:`run`, stored with every
        record and carried to the scored frame."""
        out: list[Deviation] = []
        if ctx.model.quantization:
            out.append(quantization_deviation(ctx.model.quantization))
        if ctx.model.backend is Backend.SCRIPTED:
            how = f": answers written from the gold, {ctx.model.revision}" if ctx.model.revision else ""
            out.append(Deviation("model", "a real VLM", f"{SCRIPTED_LABEL}{how}", "all"))
        return out

    @final
    def deviations(self, model: VLM | ModelInfo, setting: str, items: Any = None, **options: Any) -> list[Deviation]:
        """Ways a run with ``model`` under ``setting`` and ``options`` differs from the paper's setup (what
        :meth:`run` stores, :meth:`run_deviations` of the run's context)."""
        return self.run_deviations(self.context(model, setting, options), items)

    def score_deviations(self, scored, **score_options: Any) -> list[Deviation]:
        """How scoring differed from the paper's (a substitute scorer), from the options named in
        :attr:`score_options`; :meth:`evaluate` adds them after the run's own."""
        return []

    def headline(self, runs: dict[str, Any], *, n_resamples: int = 2000, seed: int = 0, **options: Any) -> list[Any]:
        """The paper's headline numbers for the cross-paper report card (:mod:`vlamb_nb.report_card`): one
        :class:`~vlamb_nb.stats.ranking.Headline` per declared metric (:attr:`metrics`) and slice, ranked among
        the paper's published models. ``runs``: ``{setting: run}`` (or one run), each read as its run record
        (:meth:`recorded`)."""
        if not any(m.card is not None for m in self.metrics):
            raise NotAvailableError(f"{self.name} declares no report-card metric")
        from vlamb_nb.stats.metric import headlines

        return headlines(self.name, self.metrics, self.recorded(runs), cells=self.reference, n_resamples=n_resamples,
                         seed=seed)

    def recorded(self, runs: Any, *, metrics: Sequence[Any] | None = None) -> dict[str, Any]:
        """``{setting: run}`` with every run a :class:`~vlamb_nb.record.RunRecord`, the one form the card, a
        summary and a paired comparison read: a scored frame whose scoring wrote the whole run's record becomes
        that record, read back from the file (so every number is the record's); any other frame (a part of a run,
        a run with no store, hand labels) becomes its record as it stands, in memory, never written. One run
        (not a mapping) is keyed by its setting. ``metrics``: a frame's record of these metrics instead of the
        declared ones (an F1 at another threshold), made in memory."""
        from types import SimpleNamespace

        from vlamb_nb.record import RunRecord, from_scored

        declaring = self if metrics is None else SimpleNamespace(name=self.name, metrics=tuple(metrics))

        if not isinstance(runs, Mapping):
            runs = {str(getattr(runs, "attrs", {}).get("setting", getattr(runs, "setting", ""))): runs}
        out: dict[str, Any] = {}
        for key, run in runs.items():
            if run is None or isinstance(run, RunRecord):
                out[key] = run
                continue
            written = (getattr(run, "attrs", None) or {}).get("record")
            whole = metrics is None and isinstance(written, Mapping) and written.get("rows") == len(run)
            out[key] = RunRecord.read(written["path"]) if whole else from_scored(declaring, run, n_resamples=0)
        return out

    def paper_vs_ours(self, runs: Any, row: str, *, n_resamples: int = 1000, seed: int = 0, tol: float = 0.05):
        """Ours beside what the paper prints for the same model, for every declared metric the paper prints
        (:class:`~vlamb_nb.stats.metric.Published`: each slice's table and column): the metric's value on the
        run's units with its interval, the published value, their difference, whether it is within ``tol`` and
        inside the interval (:func:`vlamb_nb.reference.compare`). ``row``: the model's row in the paper's tables,
        ``{setting}`` filled in where a table has a row per setting (``"Qwen2.5-VL-7B-Instruct | {setting}"``).
        ``runs`` as :meth:`headline`. None when ``row`` is empty. A paper
        whose tables print more than its declared metrics adds its own comparison of them beside this one."""
        import pandas as pd

        from vlamb_nb import reference
        from vlamb_nb.record import value_of
        from vlamb_nb.stats.metric import card_units

        if not row:
            return None
        runs = self.recorded(runs)
        cells = []
        for m in self.metrics:
            pub = m.card.published if m.card is not None else None
            for key in (m.card.settings or tuple(runs)[:1]) if pub is not None else ():
                sets = runs[key].unit_sets(m.name) if runs.get(key) is not None else None
                for u in card_units(m, sets or []):
                    v = value_of(m, u, n_resamples=n_resamples, seed=seed)
                    setting = m.card.setting or key
                    cells.append({"table": pub.table, "row": row.format(setting=setting),
                                  "column": pub.column(u.slice, setting),
                                  "value": v.value, "ci_low": v.ci_low, "ci_high": v.ci_high})
        if not cells:
            raise NotAvailableError(f"{self.name}: no declared metric the paper prints has values in these runs "
                                    f"({', '.join(map(str, runs)) or 'none given'})")
        own = self.folder() / "reference.csv"
        return reference.compare(pd.DataFrame(cells), self.name, tol=tol, file=own if own.is_file() else None)

    def compare_runs(self, a, b, *, n_resamples: int = 2000, seed: int = 0, same_items: bool = False):
        """Two scored runs of this paper (two settings of one model, two quantizations, two models) paired on the
        units both answered: every declared metric's a, b, difference a − b with its interval and test, overall
        and by slice (:func:`vlamb_nb.stats.common.paired_runs`; ``compare`` does the same across many models)."""
        from vlamb_nb.stats.common import paired_runs

        a, b = self.recorded({"a": a, "b": b}).values()
        return paired_runs(self.name, [m for m in self.metrics if m.compare], a, b, n_resamples=n_resamples,
                           seed=seed, same_items=same_items)

    def summary(self, scored) -> dict[str, Any]:
        """Headline numbers of one scored run (sweep summaries): its rows, invalid answers and every declared
        metric (:attr:`metrics`), read from the run record its scoring wrote where there is one (:meth:`recorded`);
        a paper adds diagnostics of its own after these, from the frame."""
        from vlamb_nb.stats.metric import summary

        return summary(self.metrics, self.recorded({"run": scored})["run"])

    @final
    def run_meta(self, model: ModelInfo, setting: str, seed: int | None = None, items: Any = None) -> dict[str, Any]:
        """What identifies a run (stored with every record): model, setting, seed, the digest of the prompt
        templates and of the items asked (its deviations are added by :meth:`run`)."""
        from vlamb_nb.meta import RunMeta

        return RunMeta(benchmark=self.name, setting=setting, model=model.to_dict(), seed=seed,
                       template=template_digest(self.package()), source=source_digest(items),
                       data=dict(getattr(items, "attrs", {}).get("data") or {})).to_dict()

    # -- reference numbers and CLI hooks -----------------------------------------------------------
    @final
    def reference(self, table: str | None = None):
        """The paper's published numbers (each with table id and provenance): ``reference.csv`` in the paper's
        folder where it has one, else the package's ``reference/<name>.csv``."""
        from vlamb_nb import reference

        own = self.folder() / "reference.csv"
        return reference.load(self.name, table=table, file=own if own.is_file() else None)

    def package(self) -> str:
        """The paper's package (``vlamb_nb.benchmarks.<name>``, or where a registered paper lives)."""
        import sys

        module = sys.modules[type(self).__module__]
        return module.__name__ if getattr(module, "__path__", None) else module.__name__.rpartition(".")[0]

    def folder(self) -> Path:
        """The folder of the paper's package (where its modules and its own data files live)."""
        import sys

        return Path(str(sys.modules[type(self).__module__].__file__)).parent

    def data_stats(self, items) -> dict[str, Any]:
        """Dataset statistics for ``vlamb-nb data stats``."""
        raise NotAvailableError(f"data stats for {self.name} are not implemented yet")

    def released_run(self, path: str | os.PathLike) -> ReleasedRun | None:
        """A released run's per-row file of this paper, read into its scored rows (None: ``path`` is not one).
        Only a paper that released such rows (Ref-Adv) reads one; answers are scored by :meth:`score_store`."""
        return None

    @final
    def score_file(self, predictions: str | os.PathLike, *, source: str | os.PathLike | None = None,
                   **options: Any) -> dict[str, Any]:
        """``vlamb-nb score``: one shape for every paper. The file is read into a scored run by
        :meth:`scored_file` (a store through :meth:`score_store`; a paper's own released prediction files by its
        reader), its run record (:mod:`vlamb_nb.record`: every declared metric, overall and by slice, from
        :attr:`metrics`, with bootstrap intervals of ``n_resamples``, 0 or ``ci=false``: none) is written beside a store
        (or to ``record``, a path: a released prediction file gets none unless named), and the record's score view
        is returned."""
        from vlamb_nb.record import from_scored
        from vlamb_nb.store import is_store

        path = Path(predictions)
        n_resamples = options.pop("n_resamples", 1000)
        if str(options.pop("ci", True)).lower() in ("false", "0", "no", "none"):
            n_resamples = 0
        try:
            n_resamples = int(n_resamples)
        except (TypeError, ValueError):
            raise SettingError(f"n_resamples must be a whole number (0: no intervals), got {n_resamples!r}") from None
        target = options.pop("record", None)
        counts_unasked = str(options.get("missing", "wrong")) == "wrong"  # items never asked count as wrong
        scored = self.scored_file(path, source=source, **options)
        if {"model", "setting"} <= set(scored.columns):  # a file of several runs (a labels file): one at a time
            runs = sorted(set(zip(scored["model"].astype(str), scored["setting"].astype(str), strict=True)))
            if len(runs) > 1:
                raise SettingError(f"{path.name} holds {len(runs)} runs ({'; '.join(f'{m}/{s}' for m, s in runs)}), "
                                   "never scored together: score one at a time with -o model=NAME -o setting=NAME")
        store = path if path.is_file() and is_store(path) else None
        rec = from_scored(self, scored, store=store, n_resamples=n_resamples)
        rec.store = path.name  # the file scored: a store, or a released prediction file
        if rec.store_digest is None:  # a released prediction file: its bytes, as a store's are kept
            from vlamb_nb.record import store_digest

            rec.store_digest = store_digest(path)
        written = None
        from vlamb_nb.record import record_path, run_number

        run = None if store is None else \
            scored.attrs["run_number"] if "run_number" in scored.attrs else run_number(store, scored)
        filled = int(getattr(scored.attrs.get("coverage"), "missing", 0) or 0) if counts_unasked else 0
        kept = store is not None and target is None and filled and _record_as_asked(record_path(store, run))
        if kept:  # the record of the run as it was asked stays: compare and the pages read it
            rec.notes += (f"the run record beside {path.name} is left as it was: this scoring counts the {filled} "
                          "item(s) the run never asked as wrong (-o missing=skip scores what it asked; --record "
                          "PATH keeps this scoring)",)
        try:
            if target is not None:
                written = rec.write(target)
            elif store is not None and not kept:
                written = rec.write(store, run=run)
        except OSError as e:  # a read-only folder, a full disk: every view reads the record, so this is an error
            from vlamb_nb.record import RecordError

            raise RecordError.of(target if target is not None else record_path(path), e) from None
        out = rec.score_view()
        out.update(predictions=str(path), source=None if source is None else str(source),
                   record=None if written is None else str(written))
        return out

    def scored_file(self, predictions: str | os.PathLike, *, source: str | os.PathLike | None = None,
                    **options: Any):
        """A prediction file as a scored run (the frame :meth:`score_store` gives, ``attrs["coverage"]`` set): by
        default a prediction store scored by :meth:`score_store` against ``source`` (the data its run was asked
        about). ``options``: what picks the run (:data:`STORE_PICKS`), ``missing`` (``wrong``: an item without an
        answer counts as invalid, the paper's denominator; ``skip``) and :attr:`score_options`. A paper whose
        authors released prediction files of their own format reads them here first (into records for
        ``score_store``), and nothing after that: :meth:`score_file` shapes every paper's output alike."""
        from vlamb_nb.errors import DataError
        from vlamb_nb.store import is_store

        path = Path(predictions)
        if not path.is_file():
            raise DataError("predictions file not found", source=str(path))
        if not is_store(path):
            raise DataError(f"not a prediction store (JSON Lines written by a {self.name} run); {self.name} reads "
                            "no other prediction files", source=str(path))
        if source is None:
            raise SettingError(f"{self.name}: a prediction store holds answers, not the items they answer: give the "
                               "data it was run on (--source PATH)")
        pick = store_picks(options)
        missing = options.pop("missing", "wrong")
        if missing not in ("wrong", "skip"):
            raise SettingError(f"missing must be 'wrong' (count as invalid, as the paper's N) or 'skip', got "
                               f"{missing!r}")
        unknown = sorted(set(options) - set(self.score_options))
        if unknown:
            takes = ", ".join([*STORE_PICKS, "missing", *self.score_options])
            raise SettingError(f"unknown {self.name} score option(s): {', '.join(unknown)}; it takes {takes}")
        return self.score_store(path, self.load(source), fill_missing=missing == "wrong", record=False, **pick,
                                **options)

    @final
    def inventory(self):
        """The paper's coverage as data (:class:`vlamb_nb.inventory.Inventory`: every table, figure, test,
        ablation and case study, rebuilt, run or not derivable, and where), read from ``inventory.toml`` in the
        paper's folder; None when the paper keeps none."""
        from vlamb_nb.inventory import FILE, read

        path = self.folder() / FILE
        return read(path) if path.is_file() else None

    @final
    def not_derivable(self) -> list[dict[str, str]]:
        """What of the paper neither its released data nor its text lets one rebuild, each with the reason
        (``item``, ``reason``), so no page silently leaves it out: the ``not_derivable`` items of the paper's
        :meth:`inventory` (and any item it still lists as ``missing``); without one, ``not_derivable.json`` in
        the paper's folder, else the package's ``reference/<name>.not_derivable.json`` (none: nothing is
        listed). Every run's pages list it under the paper, whether or not its notebook recorded it."""
        import json

        from vlamb_nb.errors import DataError

        inventory = self.inventory()
        if inventory is not None:
            return inventory.not_derivable()
        own = self.folder() / "not_derivable.json"
        path = own if own.is_file() else Path(__file__).resolve().parents[1] / "reference" / \
            f"{self.name}.not_derivable.json"
        if not path.is_file():
            return []
        try:
            rows = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise DataError(f"unreadable ({e})", source=str(path)) from None
        if not isinstance(rows, list) or not all(
                isinstance(r, dict) and set(r) == {"item", "reason"} and all(isinstance(v, str) and v.strip()
                                                                           for v in r.values()) for r in rows):
            raise DataError("not a list of {item, reason} (both non-empty text)", source=str(path))
        return [dict(r) for r in rows]

    def reference_check(self) -> list[dict[str, Any]]:
        """Recompute derivable published cells; one finding per checked cell (see ``reference.Finding``)."""
        raise NotAvailableError(f"the reference check for {self.name} is not implemented yet")

    def make_sample(self, directory: str | os.PathLike, n: int = 8, seed: int = 0) -> Path:
        """Write a small generated sample in the benchmark's released format; return what ``load`` takes."""
        raise NotAvailableError(f"sample generation for {self.name} is not implemented yet")

    def notebook_data(self, source: Any = None, *, profile: str = "offline", n: int = 8, seed: int = 0,
                      sample_dir: str | os.PathLike | None = None, **load_options: Any) -> NotebookData:
        """What the paper's notebook works on (:class:`NotebookData`): by default its statistics and its models
        the same items, :meth:`notebook_items`. A paper whose statistics need more than its models run on (the
        whole release beside a generated sample) has its own step in its ``report`` module, with this signature
        (``sample_dir``: where a generated sample goes; ``load_options``: what :meth:`load` takes)."""
        items = self.notebook_items(source, profile=profile, n=n, seed=seed, sample_dir=sample_dir, **load_options)
        ident = (items.attrs.get("data") or {})
        kind = str(ident.get("label") or ident.get("kind") or "items")
        return NotebookData(release=items, release_kind=kind, pipeline=items, pipeline_kind=kind)

    @final
    def notebook_items(self, source: Any = None, *, profile: str, n: int = 8, seed: int = 0,
                       sample_dir: str | os.PathLike | None = None, **load_options: Any):
        """The items a notebook runs models on, tagged with what they are (``attrs["data"]``, the one data
        identity every store, record and page carries): ``source`` when given; under the paper profile the fetched
        release (else one line naming ``vlamb-nb data fetch``); under the offline profile a generated sample of
        ``n`` items (:meth:`make_sample`, in the run folder), never ranked as the paper's data."""
        from vlamb_nb.datahome import choose, sample_identity, tag
        from vlamb_nb.paths import sample_dir as default_sample_dir

        choice = choose(self.name, source, profile=profile)
        if choice is not None:
            if choice.images is not None:
                load_options.setdefault("images", str(choice.images))
            return tag(self.load(choice.source, **load_options), choice.identity)
        folder = Path(sample_dir) if sample_dir is not None else default_sample_dir(self.name, n, seed)
        items = self.load(self.make_sample(folder, n=n, seed=seed), **load_options)
        return tag(items, sample_identity(self.name, n_items=len(items), seed=seed))


def store_picks(options: dict[str, Any]) -> dict[str, Any]:
    """The options that pick one run of a store (:data:`STORE_PICKS`), taken out of ``options``; ``run`` as the
    run's number."""
    pick = {k: options.pop(k) for k in STORE_PICKS if k in options}
    if pick.get("run") is not None:
        try:
            pick["run"] = int(pick["run"])
        except (TypeError, ValueError):
            raise SettingError(f"run must be a run's number in the store, got {pick['run']!r}") from None
    return pick


def _stored_request(rec: dict[str, Any]) -> Request:
    """What the store kept of a request (id, setting, decoding, meta): enough for a join, never for asking."""
    known = DecodingParams.__dataclass_fields__
    params = {k: v for k, v in (rec.get("params") or {}).items() if k in known}
    return Request(id=str(rec.get("request_id", rec["item_id"])), messages=[], params=DecodingParams(**params),
                   benchmark=str(rec.get("benchmark") or ""), setting=str(rec.get("setting") or ""),
                   meta={**(rec.get("meta") or {}), "item_id": str(rec["item_id"])})


def _stored_frame(rows: list[dict[str, Any]]):
    """Stored records as the runner's frame (every answer cached)."""
    import pandas as pd

    from vlamb_nb.runner import RESULT_COLUMNS

    out = [{**{c: r.get(c) for c in RESULT_COLUMNS if c in r}, "item_id": str(r["item_id"]), "turn": r["turn"],
            "cached": True} for r in rows]
    return pd.DataFrame(out, columns=RESULT_COLUMNS)


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


def template_digest(package: str) -> str:
    """Digest of a benchmark's prompt templates (the source of its package's ``prompts`` module): runs asked with
    other prompt texts are other runs, even under the same model and setting."""
    import importlib.util

    from vlamb_nb.hashing import digest

    spec = importlib.util.find_spec(f"{package}.prompts")
    if spec is None or spec.origin is None:
        return ""
    with open(spec.origin, encoding="utf-8") as fh:
        return digest(fh.read())[:16]


def run_key(meta: Mapping[str, Any], options: Mapping[str, Any]) -> str:
    """What makes a run, as one digest: its model, setting, seed, prompts and items (from its ``meta``) and the
    options it was asked with (a model given as an option by its identity, anything else not JSON by its type).
    Two runs with one key ask the same requests, so a rerun resumes the store of its key."""
    import hashlib

    from vlamb_nb.hashing import canonical_json

    def part(v: Any) -> Any:
        try:
            canonical_json(v)
            return v
        except (TypeError, ValueError):
            info = getattr(v, "info", None)
            return {"model": info.to_dict()} if hasattr(info, "to_dict") else f"<{type(v).__qualname__}>"

    text = canonical_json({**{k: meta.get(k) for k in ("benchmark", "setting", "model", "seed", "template", "source")},
                           "options": {str(k): part(v) for k, v in sorted(options.items(), key=lambda kv: str(kv[0]))}})
    # a name that is not UTF-8 still has a key: the runner refuses it in one line before anything is stored
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _digest_part(v: Any) -> Any:
    """A field of an item as :func:`item_digests` hashes it: bytes by their sha256, a file by its name (the same
    items in another folder digest alike), an image by its name or size, numbers and text as they are."""
    import hashlib
    import math

    if isinstance(v, bytes | bytearray):
        return "sha256:" + hashlib.sha256(v).hexdigest()
    if isinstance(v, str):  # a path (absolute, or relative with a file's extension) by its file's name
        pathlike = len(v) < 4096 and (os.path.isabs(v) or ("/" in v and not any(c.isspace() for c in v)
                                                           and 1 < len(os.path.splitext(v)[1]) <= 6))
        return os.path.basename(v) if pathlike else v
    if isinstance(v, dict):
        return {str(k): _digest_part(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_digest_part(x) for x in v]
    if hasattr(v, "size") and hasattr(v, "mode") and hasattr(v, "getpixel"):  # a PIL image: never decoded here
        return f"image:{os.path.basename(getattr(v, 'filename', '') or '')}:{v.size}:{v.mode}"
    if hasattr(v, "tolist"):
        return _digest_part(v.tolist())
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if v is None or isinstance(v, bool | int | float):
        return v
    return str(type(v).__name__)


def item_digests(items: Any, id_column: str, ids: set[str] | None = None) -> dict[str, str]:
    """Each item's digest by its id (of ``ids`` only, when given): every field as loaded (:func:`_digest_part`), so
    another answer key or an edited item digests otherwise. What a run records of the items it was asked and a
    scoring checks the items it is given against."""
    from vlamb_nb.hashing import digest

    rows = items[items[id_column].astype(str).isin(ids)] if ids is not None else items
    cols = sorted(rows.columns, key=str)
    out: dict[str, str] = {}
    for k, row in zip(rows[id_column].astype(str), rows.to_dict(orient="records"), strict=True):
        out[k] = digest({str(c): _digest_part(row.get(c)) for c in cols})[:16]
    return out


def items_digest(digests: Mapping[str, str]) -> str:
    """One digest of items' digests (:func:`item_digests`), whatever their order."""
    from vlamb_nb.hashing import digest

    return digest(sorted(digests.items()))[:16]


def source_digest(items: Any) -> str:
    """Digest of the items a run was asked about (their ids, in order, and the source they came from)."""
    if items is None or not hasattr(items, "columns") or "id" not in items.columns:
        return ""
    from vlamb_nb.hashing import digest

    return digest({"ids": [str(i) for i in items["id"]], "source": str(items.attrs.get("source", ""))})[:16]


def _record_as_asked(path: Path) -> bool:
    """Whether ``path`` holds the scored run record of a run as it was asked (no item it never asked counted as
    wrong): a scoring that counts such items does not replace it (the file is read as it says, without checks)."""
    try:
        d = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
        return isinstance(d, dict) and d.get("stage") == "scored" and not any(
            isinstance(r, dict) and r.get("failure") == NO_PREDICTION for r in d.get("rows") or ())
    except (OSError, ValueError, AttributeError):
        return False
