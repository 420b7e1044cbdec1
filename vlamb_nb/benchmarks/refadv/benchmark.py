"""Ref-Adv (Dong et al., ICLR 2026): referring expression comprehension with hard distractors.

The benchmark class wires the steps: load (:mod:`.data`), requests (:mod:`.prompts`; set-of-mark over region
proposals, :mod:`.som`), parse with the per-family grounding styles (:mod:`.parse`), a run with the official repair
turn, score and tables (:mod:`.score`), the paper audit (:mod:`.audit`); figures in :mod:`.plots`. Example:
``bench.tables(bench.evaluate(model, bench.load(hub_id_or_folder), "cot", store="refadv_cot.jsonl"))``.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

import vlamb_nb.benchmarks.refadv.data as data
import vlamb_nb.benchmarks.refadv.parse as P
import vlamb_nb.benchmarks.refadv.prompts as prompts
import vlamb_nb.benchmarks.refadv.score as S
import vlamb_nb.benchmarks.refadv.som as som
from vlamb_nb.benchmarks.base import ANSWER, Asked, Benchmark, RunContext, Turn
from vlamb_nb.benchmarks.refadv.deletion import delete_descriptors
from vlamb_nb.benchmarks.refadv.prompts import OFFICIAL_MAX_TOKENS, followup_text, repair_request, repair_tag
from vlamb_nb.errors import SettingError
from vlamb_nb.meta import Deviation
from vlamb_nb.models.base import ModelInfo, Request


class RefAdv(Benchmark):
    name = "refadv"
    paper = "Dong et al. 2026, Ref-Adv: Exploring MLLM Visual Reasoning in Referring Expression Tasks (ICLR)"
    settings = ("direct", "cot", "bow", "fixed", "deletion")
    default_setting = "direct"
    failed_parse = P.BACKEND_FAILED  # the official runner: any backend exception is backend_error, no retry

    load = staticmethod(data.load_any)  # hub id (default), a parquet, the demo folder, or a RefCOCO folder
    make_sample = staticmethod(data.make_sample)
    data_stats = staticmethod(data.dataset_stats)
    join_items = staticmethod(P.beside_items)  # each answer beside its item's columns (not the image)
    parse = staticmethod(P.parse_answer)
    score = staticmethod(S.score_ious)
    tables = staticmethod(S.tables)
    metrics = S.METRICS
    released_run = staticmethod(S.released_run)  # the official per-row files, as their scored rows
    style_deviations = staticmethod(P.style_deviations)
    delete_descriptors = staticmethod(delete_descriptors)  # Table 4's rewritten expressions
    scripted_accuracy, scripted_right, scripted_errors = P.SCRIPTED_ACCURACY, P.SCRIPTED_RIGHT, P.SCRIPTED_ERRORS
    scripted_reply = staticmethod(P.scripted_reply)  # the stand-in's official JSON: hit, near miss, repaired, ...
    rewritten_settings = ("deletion",)  # its expressions are rewritten before they are asked

    def headline(self, runs: dict[str, Any], **options: Any) -> list[Any]:
        """The card's rows of every declared card metric (:func:`.score.headline`), from each run's record."""
        return S.headline(self.recorded(runs), metrics=self.metrics, cells=self.reference, **options)

    def requests(self, items, setting: str, *, style: str | P.GroundingStyle | None = None, model: ModelInfo | None = None,
                 prompt_mode: str | None = None, seed: int = 0, max_new_tokens: int = OFFICIAL_MAX_TOKENS,
                 proposals: Any = None, **kwargs: Any) -> list[Request]:
        """One request per item: prompt text, then the image (as sent officially; marked over ``proposals``)."""
        if kwargs:
            raise SettingError(f"unknown refadv request option(s): {', '.join(kwargs)}")
        self.check_setting(setting)
        return prompts.requests(items, setting, P.style_for(model, style, proposals=proposals), prompt_mode=prompt_mode,
                                seed=seed, max_new_tokens=max_new_tokens, proposals=proposals)

    # -- a run: the answer, then the official repair turn where it has no box ----------------------------
    def context(self, model, setting: str, options=None, *, stored=None) -> RunContext:
        """The grounding style the run asks and reads with, resolved once: ``style=`` (a name or a style), else the
        one a stored run recorded, else the model's (its family, or its name when served or replayed)."""
        ctx = super().context(model, setting, options, stored=stored)
        proposals = ctx.option("proposals", (stored or {}).get("proposals"))  # set-of-mark (.som)
        st, reason = P.choose_style(ctx.model, ctx.option("style") or (stored or {}).get("style"), proposals=proposals)
        repair_text = ctx.option("repair_text", "official")
        return replace(ctx, style=st, facts={
            "seed": ctx.option("seed", 0), "style": st.name, "box_format": st.box_format, "style_reason": reason,
            "repair_text": repair_text, **som.facts(proposals)})

    def asked(self, items, ctx: RunContext, *, limit: int | None = None, progress: bool = True):
        followup_text(ctx.option("repair_text", "official"))  # an unknown name fails before any generation
        if ctx.style.prompt == "som" and ctx.option("proposals") is not None:  # read from every item at hand
            ctx.options["proposals"] = som.proposal_source(ctx.option("proposals"), items)
        items = self.first_items(items, limit).reset_index(drop=True)
        if ctx.setting == "deletion" and "deleted_expression" not in items.columns:
            rewriter = ctx.option("rewriter")
            if rewriter is None:
                raise SettingError("the deletion setting needs rewriter=<a text model> (or pre-rewritten items)")
            items = delete_descriptors(items, rewriter, seed=ctx.option("seed", 0), store=ctx.option("rewriter_store"),
                                       progress=progress)
        return items

    def turns(self, ctx: RunContext) -> list[Turn]:
        """The answer; with ``repair`` (default), the repair turn (``repair_text``: ``official``, turn ``repair``;
        ``newlines``, turn ``repair-newlines``) for each answer that has no box, as the official runner sends
        it."""
        st, setting, repair_text = ctx.style, ctx.setting, ctx.option("repair_text", "official")
        known = ("style", "prompt_mode", "seed", "max_new_tokens", "repair", "repair_text", "rewriter",
                 "rewriter_store", "proposals")
        unknown = sorted(set(ctx.options) - set(known))
        if unknown:
            raise SettingError(f"unknown refadv run option(s): {', '.join(unknown)}")

        def ask_repair(items, previous: list[Asked]) -> list[Request]:
            return [repair_request(req, text, repair_text) for req, text in P.unboxed(items, previous[0], st)]

        first = Turn(ANSWER, lambda items, _: self.requests(
            items, setting, style=st, prompt_mode=ctx.option("prompt_mode"), seed=ctx.option("seed", 0),
            max_new_tokens=ctx.option("max_new_tokens", OFFICIAL_MAX_TOKENS), proposals=ctx.option("proposals")),
            desc=f"refadv {setting}")
        if not ctx.option("repair", True) or st.prompt == "som":  # the repair text asks for JSON boxes, not a mark
            return [first]
        return [first, Turn(repair_tag(repair_text).lstrip(":"), ask_repair, desc=f"refadv {setting} repair")]

    def join(self, items, asked: list[Asked], ctx: RunContext):
        """One row per item: the answer that counts (the repair turn's where one was sent), with the grounding
        style the answer is read with."""
        first = asked[0].requests
        mode = (first[0].meta.get("prompt_mode") if first else None) or ctx.option("prompt_mode")
        return P.answers(items, asked, ctx.style).assign(
            model=ctx.model.model_id, prompt_id=mode or ("cot" if ctx.setting == "cot" else "direct"),
            setting=ctx.setting)

    def run_deviations(self, ctx: RunContext, items=None) -> list[Deviation]:
        """The setting's deviations and those of the grounding style, token budget and repair text it runs with."""
        return (super().run_deviations(ctx, items) + prompts.setting_deviations(ctx.model, ctx.setting)
                + P.style_deviations(ctx.style, ctx.model, ctx.option("max_new_tokens", OFFICIAL_MAX_TOKENS),
                                   repair_text=ctx.option("repair_text", "official"),
                                   proposals=ctx.facts.get("proposals")))

    # -- read, score, report ----------------------------------------------------------------------------------
    def summary(self, scored) -> dict[str, Any]:  # the declared Acc@0.5, then every number of the official report
        s = S.summary(scored)
        return super().summary(scored) | {k: (round(100 * v, 2) if isinstance(v, float) and not k.startswith("n_")
                                              else v) for k, v in s.items()}

    def scored_file(self, predictions: str | os.PathLike, *, source: str | os.PathLike | None = None,
                    **options: Any):
        return S.score_file(self, predictions, source=source, **options)

    def reference_check(self) -> list[Any]:
        from vlamb_nb.benchmarks.refadv.audit import audit

        return audit()


BENCHMARK = RefAdv()
