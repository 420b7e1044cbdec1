"""V-FLUTE (Saakyan et al., NAACL 2025): explainable visual entailment over figurative meaning.

Read top to bottom::

    items  = BENCHMARK.load(folder)                        # official JSON/CSV, HF parquet, or the gated hub id
    reqs   = BENCHMARK.requests(items, "zero_shot")        # Table 8 instruction, claim in double quotes
    gens   = runner.run(model, reqs, store)                # beam 3, greedy, 256 new tokens (paper App. D)
    scored = BENCHMARK.score(BENCHMARK.predictions(items, gens), scorer="minilm")
    BENCHMARK.tables(scored)                               # Table 4 row, per-dataset F1, F1@t curve

Settings: ``zero_shot``; ``hypothesis_only`` (a white square instead of the image, the −Image
ablation); ``scene_graph`` (compositional CoT: a scene graph first, then the answer, two declared
turns, run by ``run``/``evaluate``); ``few_shot`` (``k`` seeded training examples, rule in
:mod:`.prompts`). Parsing is the official extraction (:mod:`.parse`); metrics are the
official F1@ExplanationScore (:mod:`.score`) with pluggable scorers
(:mod:`vlamb_nb.scorers.explanation`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import vlamb_nb.benchmarks.vflute.prompts as prompts
import vlamb_nb.benchmarks.vflute.score as S
from vlamb_nb.benchmarks.base import ANSWER, Asked, Benchmark, RunContext, Turn
from vlamb_nb.benchmarks.vflute.data import HUB_ID, data_stats, item_image, load_items, write_sample
from vlamb_nb.benchmarks.vflute.parse import (
    SCRIPTED_ACCURACY,
    SCRIPTED_ERRORS,
    filled,
    parse_answer,
    scripted_reply,
    with_scene_graphs,
)
from vlamb_nb.benchmarks.vflute.prompts import (
    PAPER_DECODING,
    answer_requests,
    graph_failures,
    instruction,
    prompt_origin,
    seeded_prompt_count,
    shot_table,
)
from vlamb_nb.errors import DataError, SettingError
from vlamb_nb.meta import Deviation
from vlamb_nb.models.base import DecodingParams, Request


class VFlute(Benchmark):
    name = "vflute"
    paper = "Saakyan et al., Understanding Figurative Meaning through Explainable Visual Entailment (NAACL 2025)"
    settings = ("zero_shot", "hypothesis_only", "scene_graph", "few_shot", *prompts.VARIANTS)
    prompt_variants = {"zero_shot": prompts.VARIANTS}
    default_setting = "zero_shot"
    score_options = ("scorer",)
    instruction = staticmethod(instruction)  # the released instruction, or the official seeded draw
    prompt_origin = staticmethod(prompt_origin)
    seeded_prompt_count = staticmethod(seeded_prompt_count)
    data_stats = staticmethod(data_stats)
    parse = staticmethod(parse_answer)
    score = staticmethod(S.score_predictions)  # gold vs parsed labels, the ExplanationScore of each explanation
    tables = staticmethod(S.tables)
    comparison_rows = staticmethod(S.comparison_rows)
    metrics = S.METRICS
    offline_score_options = {"scorer": "minilm"}  # the offline notebook's labelled substitute explanation scorer
    scripted_accuracy = SCRIPTED_ACCURACY
    scripted_errors = SCRIPTED_ERRORS

    def scripted_reply(self, request: Request, s: Any) -> str:
        return scripted_reply(request, s)

    def load(self, source: str | os.PathLike | None = None, *, split: str = "test",
             image_root: str | None = None, token_env: str = "HF_TOKEN", **kwargs: Any):
        """Items from a folder/file in the official formats or the gated hub dataset (default ``HUB_ID``)."""
        if kwargs:
            raise SettingError(f"unknown V-FLUTE loader option(s): {', '.join(kwargs)}")
        return load_items(HUB_ID if source is None else source, split=split, image_root=image_root,
                          token_env=token_env)

    def requests(self, items, setting: str, *, prompt_source: str = "released", k: int = 5, train=None,
                 shot_seed: int = 42, params: DecodingParams | None = None, **kwargs: Any) -> list[Request]:
        """One request per item (``scene_graph``: the first, scene-graph step)."""
        if kwargs:
            raise SettingError(f"unknown V-FLUTE request option(s): {', '.join(kwargs)}")
        setting = self.check_setting(setting)
        params = params or PAPER_DECODING
        if setting == "few_shot" and train is not None and not hasattr(train, "iterrows"):
            train = self.load(train, split="train")
        shots = shot_table(train, items, k, shot_seed) if setting == "few_shot" else None
        return prompts.requests(items, setting, item_image, shots, prompt_source=prompt_source, params=params)

    def turns(self, ctx: RunContext) -> list[Turn]:
        """One turn; ``scene_graph`` asks for the scene graph first, then the answer given it (both cached in the
        same store; an item whose graph failed is not asked again)."""
        if ctx.setting != "scene_graph":
            return super().turns(ctx)
        return [Turn("scene_graph", lambda items, _: self.requests(items, ctx.setting, **ctx.options),
                     desc="vflute scene_graph (scene graphs)"),
                Turn(ANSWER, lambda items, done: answer_requests(done[0])[0], desc="vflute scene_graph (answers)")]

    def join(self, items, asked: list[Asked], ctx: RunContext):
        if ctx.setting != "scene_graph":
            return super().join(items, asked, ctx)
        return with_scene_graphs(asked[0], asked[1].generations, graph_failures(asked[0]))

    def run_deviations(self, ctx: RunContext, items=None) -> list[Deviation]:
        """The items asked with a seeded (not released) instruction, and the decoding."""
        seeded = 0 if items is None else seeded_prompt_count(items, ctx.option("prompt_source", "released"))
        return super().run_deviations(ctx, items) + prompts.setting_deviations(
            ctx.setting, seeded_prompts=seeded, params=ctx.option("params"))

    def score_deviations(self, scored, **_: Any) -> list[Deviation]:
        """The explanation scorer actually used."""
        return S.scorer_deviations(scored.attrs.get("scorer"))

    def predicted(self, predictions, generations):
        """A generation naming no item is an error; a failed one parses as unparsed with an empty explanation."""
        missing = predictions["id"].isna()
        if missing.any():
            raise DataError(f"{int(missing.sum())} generation(s) name items that are not in the data, e.g. "
                            f"{predictions.loc[missing, 'item_id'].iloc[0]!r}")
        return filled(predictions)

    def scored_file(self, predictions: str | os.PathLike, *, source: str | os.PathLike | None = None,
                    **options: Any):
        return S.score_predictions_file(self, predictions, source=source, **options)

    def reference_check(self) -> list[Any]:
        from vlamb_nb.benchmarks.vflute.audit import reference_findings

        return reference_findings()

    def make_sample(self, directory: str | os.PathLike, n: int = 16, seed: int = 0) -> Path:
        """A generated test split (+ a small train split for few-shot) in the official JSON/CSV format with images."""
        return write_sample(directory, n, seed)


BENCHMARK = VFlute()
