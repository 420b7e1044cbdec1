"""Ref-Adv (Dong et al., ICLR 2026): referring expression comprehension with hard distractors.

The benchmark class wires the steps: load (:mod:`.data`), requests (:mod:`.prompts`), parse with the
per-family grounding styles (:mod:`.parse`), a run with the official repair turn, score and tables
(:mod:`.score`), the paper audit (:mod:`.audit`); figures in :mod:`.plots`.

::

    bench = get_benchmark("refadv")
    items = bench.load(folder_or_parquet_or_hub_id)
    scored = bench.evaluate(model, items, "cot", store="runs/refadv_cot.jsonl")
    bench.tables(scored)["Ref-Adv-s"]
"""

from __future__ import annotations

import os
from typing import Any

import vlamb_nb.benchmarks.refadv.data as data
import vlamb_nb.benchmarks.refadv.prompts as prompts
import vlamb_nb.benchmarks.refadv.score as S
from vlamb_nb.benchmarks.base import Asked, Benchmark, Turn
from vlamb_nb.benchmarks.refadv.deletion import delete_descriptors
from vlamb_nb.benchmarks.refadv.parse import (
    BACKEND_FAILED,
    GroundingStyle,
    answers,
    beside_items,
    choose_style,
    parse_answer,
    style_deviations,
    style_for,
    unboxed,
)
from vlamb_nb.benchmarks.refadv.prompts import OFFICIAL_MAX_TOKENS, followup_text, repair_request
from vlamb_nb.errors import SettingError
from vlamb_nb.meta import Deviation
from vlamb_nb.models.base import ModelInfo, Request


class RefAdv(Benchmark):
    name = "refadv"
    paper = "Dong et al. 2026, Ref-Adv: Exploring MLLM Visual Reasoning in Referring Expression Tasks (ICLR)"
    settings = ("direct", "cot", "bow", "fixed", "deletion")
    default_setting = "direct"
    failed_parse = BACKEND_FAILED  # the official runner: any backend exception is backend_error, no retry

    load = staticmethod(data.load_any)  # hub id (default), a parquet, the demo folder, or a RefCOCO folder
    make_sample = staticmethod(data.make_sample)
    data_stats = staticmethod(data.dataset_stats)
    join_items = staticmethod(beside_items)  # each answer beside its item's columns (not the image)
    parse = staticmethod(parse_answer)
    score = staticmethod(S.score_ious)
    tables = staticmethod(S.tables)
    metrics = S.METRICS
    headline = staticmethod(S.headline)  # among the released runs on the same rows, then the published ones
    style_deviations = staticmethod(style_deviations)
    delete_descriptors = staticmethod(delete_descriptors)  # Table 4's rewritten expressions

    def requests(self, items, setting: str, *, style: str | GroundingStyle | None = None, model: ModelInfo | None = None,
                 prompt_mode: str | None = None, seed: int = 0, max_new_tokens: int = OFFICIAL_MAX_TOKENS,
                 **kwargs: Any) -> list[Request]:
        """One request per item: prompt text first, then the image (as the official runner sends it)."""
        if kwargs:
            raise SettingError(f"unknown refadv request option(s): {', '.join(kwargs)}")
        self.check_setting(setting)
        st = style_for(model, style)
        return prompts.requests(items, setting, st, prompt_mode=prompt_mode, seed=seed, max_new_tokens=max_new_tokens)

    def model_requests(self, model: ModelInfo, items, setting: str, *, style: str | GroundingStyle | None = None,
                       **options: Any) -> list[Request]:
        """The first-turn requests :meth:`run` sends to ``model``: the grounding style follows the model."""
        st, _ = choose_style(model, style)
        return self.requests(items, setting, style=st, **options)

    # -- a run: the answer, then the official repair turn where it has no box ----------------------------
    def asked(self, model, items, setting: str, *, limit: int | None = None, progress: bool = True, seed: int = 0,
              rewriter=None, rewriter_store: str | os.PathLike | None = None, repair_text: str = "official",
              **_: Any):
        followup_text(repair_text)  # an unknown name fails before any generation
        items = self.first_items(items, limit).reset_index(drop=True)
        if setting == "deletion" and "deleted_expression" not in items.columns:
            if rewriter is None:
                raise SettingError("the deletion setting needs rewriter=<a text model> (or pre-rewritten items)")
            items = delete_descriptors(items, rewriter, seed=seed, store=rewriter_store, progress=progress)
        return items

    def turns(self, model, setting: str, *, style: str | GroundingStyle | None = None, prompt_mode: str | None = None,
              seed: int = 0, max_new_tokens: int = OFFICIAL_MAX_TOKENS, repair: bool = True,
              repair_text: str = "official", rewriter=None, rewriter_store: str | os.PathLike | None = None) -> list[Turn]:
        """The answer; with ``repair``, the repair turn (``repair_text``: ``official`` or ``newlines``) for each
        answer that has no box, as the official runner sends it."""
        st, _ = choose_style(model.info, style)

        def ask_repair(items, previous: list[Asked]) -> list[Request]:
            return [repair_request(req, text, repair_text) for req, text in unboxed(items, previous[0], st)]

        first = Turn("answer", lambda items, _: self.requests(items, setting, style=st, prompt_mode=prompt_mode,
                                                              seed=seed, max_new_tokens=max_new_tokens),
                     desc=f"refadv {setting}")
        return [first, Turn("repair", ask_repair, desc=f"refadv {setting} repair")] if repair else [first]

    def join(self, items, asked: list[Asked], model, setting: str, *, style=None, prompt_mode: str | None = None,
             **_: Any):
        """One row per item: the answer that counts (the repair turn's where one was sent), with the grounding
        style the answer is read with."""
        out = answers(items, asked, style_for(model.info, style))
        return out.assign(model=model.info.model_id, prompt_id=prompt_mode or ("cot" if setting == "cot" else "direct"),
                          setting=setting)

    def run_facts(self, model, setting: str, *, style=None, seed: int = 0, repair_text: str = "official",
                  **_: Any) -> dict[str, Any]:
        st, reason = choose_style(model.info, style)
        return {"seed": seed, "style": st.name, "box_format": st.box_format, "style_reason": reason,
                "repair_text": repair_text}

    def run_deviations(self, model, setting: str, items, *, style=None, max_new_tokens: int = OFFICIAL_MAX_TOKENS,
                       repair_text: str = "official", **_: Any) -> list[Deviation]:
        """The setting's deviations and those of the grounding style, token budget and repair text it runs with."""
        st, _ = choose_style(model.info, style)
        return self.deviations(model.info, setting) + style_deviations(st, model.info, max_new_tokens,
                                                                       repair_text=repair_text)

    # -- read, score, report ----------------------------------------------------------------------------------
    def summary(self, scored) -> dict[str, Any]:  # the declared Acc@0.5, then every number of the official report
        s = S.summary(scored)
        return super().summary(scored) | {k: (round(100 * v, 2) if isinstance(v, float) and not k.startswith("n_")
                                              else v) for k, v in s.items()}

    def deviations(self, model: ModelInfo, setting: str) -> list[Deviation]:
        return super().deviations(model, setting) + prompts.setting_deviations(model, setting)

    def score_file(self, predictions: str | os.PathLike, *, source: str | os.PathLike | None = None,
                   **options: Any) -> dict[str, Any]:
        return S.score_file(self, predictions, source=source, **options)

    replays_stores = False  # its store reader picks one run of several and reads the repair turn as run decides
    released_run = staticmethod(S.released_run)  # an official per-row predictions file as one model's run

    def score_store(self, path: str | os.PathLike, **options: Any):
        return S.score_store(self, path, **options)

    def reference_check(self) -> list[Any]:
        from vlamb_nb.benchmarks.refadv.audit import audit

        return audit()


BENCHMARK = RefAdv()
