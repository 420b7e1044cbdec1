"""VAGUE (Nam et al., ICCV 2025): which intention does an ambiguous utterance express, given the scene?

The benchmark class wires the steps: settings and requests (:mod:`.prompts`) → parser (:mod:`.parse`)
→ scoring and tables (:mod:`.score`); data in :mod:`.data`, the paper audit in :mod:`.audit`, figures in
:mod:`.plots`.

Settings (MCQ; append ``_ff`` for free-form answers):

- ``lm``: the utterance and options only;
- ``sm``: two steps, the model captions the image (official caption prompt), then answers from text;
- ``sm_ext``: SM with captions from a file (Table F3's GPT-4o captions), or ``captions="dataset"``;
- ``vlm``: the tagged image, the utterance and options;
- ``sm_cot`` / ``vlm_cot``: zero-shot chain of thought (Tables 3 and G4).

Prompt-sensitivity variants of ``vlm`` on the same items: ``vlm_shift1``-``vlm_shift3`` (every option moved one to
three letters on) and ``vlm_code`` (the released code's wording); :mod:`vlamb_nb.sensitivity` compares them.

MCQ answers are read from generated text (default) or, as a labelled alternative, from the
log-likelihood of each option letter (``reading="loglik"``).
"""

from __future__ import annotations

import os
from typing import Any

import vlamb_nb.benchmarks.vague.data as vague_data
import vlamb_nb.benchmarks.vague.prompts as prompts
import vlamb_nb.benchmarks.vague.score as S
from vlamb_nb.benchmarks.base import ANSWER, Benchmark, RunContext, Turn
from vlamb_nb.benchmarks.vague.parse import (
    SCRIPTED_ACCURACY,
    SCRIPTED_ERRORS,
    OptionLikelihoodReader,
    captions_from_run,
    parse_answer,
    scripted_reply,
)
from vlamb_nb.benchmarks.vague.prompts import (  # noqa: F401  (OFFICIAL_QWEN_MAX_PIXELS: part of this module's API)
    ALL_SETTINGS,
    OFFICIAL_QWEN_MAX_PIXELS,
    VARIANTS,
    caption_requests,
    decoding,
    setting_spec,
)
from vlamb_nb.meta import Deviation
from vlamb_nb.models.base import Request

CATEGORIES = vague_data.CATEGORIES
LETTERS = vague_data.LETTERS


class Vague(Benchmark):
    name = "vague"
    paper = "Nam et al., VAGUE: Visual Contexts Clarify Ambiguous Expressions (ICCV 2025)"
    settings = ALL_SETTINGS  # the paper's, then the prompt-sensitivity variants of vlm
    prompt_variants = {"vlm": VARIANTS}
    default_setting = "vlm"
    score_options = ("bertscore",)
    offline_score_options = {"bertscore": "minilm"}  # the offline notebook's labelled substitute for roberta-large
    load = staticmethod(vague_data.load_vague)  # hub id (default), a parquet file/folder, or the official JSON
    make_sample = staticmethod(vague_data.make_sample)
    data_stats = staticmethod(vague_data.data_stats)
    parse = staticmethod(parse_answer)
    score = staticmethod(S.score_predictions)
    breakdown = staticmethod(S.breakdown)
    tables = staticmethod(S.tables)
    metrics = S.METRICS
    scripted_accuracy = SCRIPTED_ACCURACY
    scripted_errors = SCRIPTED_ERRORS

    def scripted_reply(self, request: Request, s: Any) -> str:
        return scripted_reply(request, s)

    def requests(self, items, setting: str, **options: Any) -> list[Request]:
        """Answer-step requests (:func:`.prompts.requests`); SM settings need ``captions``."""
        return prompts.requests(items, self.check_setting(setting), **options)

    def turns(self, ctx: RunContext) -> list[Turn]:
        """SM settings first caption each image with the same model (official caption prompt), then answer from
        the captions; ``reading="loglik"`` reads MCQ answers from option-letter log-likelihoods."""
        setting, options = ctx.setting, dict(ctx.options)
        captions, reading = options.pop("captions", None), options.pop("reading", "generate")
        reader = OptionLikelihoodReader if reading == "loglik" else None
        if setting_spec(setting).captions != "self" or captions is not None:
            return [Turn(ANSWER, lambda items, _: self.requests(items, setting, captions=captions, reading=reading,
                                                                **options), reader=reader, desc=setting)]
        params = decoding("caption", options.get("decoding_mode", "greedy"), options.get("max_new_tokens"))
        return [Turn("caption", lambda items, _: caption_requests(items, params=params), desc="caption"),
                Turn(ANSWER, lambda items, done: self.requests(
                    items, setting, captions=captions_from_run(done[0].generations), reading=reading, **options),
                    reader=reader, desc=setting)]

    def join(self, items, asked, ctx: RunContext):
        """The caption rows (turn ``caption``) and the answer rows, each with the ``reading`` it was asked for."""
        import pandas as pd

        out = pd.concat([a.generations for a in asked], ignore_index=True)
        # "loglik" marks the alternative MCQ reading; a stored run says which it was asked with
        out["reading"] = [r.meta.get("reading", ctx.option("reading", "generate")) for a in asked for r in a.requests]
        return out

    def run_deviations(self, ctx: RunContext, items=None) -> list[Deviation]:
        return super().run_deviations(ctx, items) + prompts.setting_deviations(
            ctx.model, ctx.setting, max_pixels=ctx.max_pixels, **ctx.options)

    def score_deviations(self, scored, *, bertscore: str | None = "roberta-large") -> list[Deviation]:
        return S.bertscore_deviations(scored, bertscore)

    def predicted(self, predictions, generations):
        """The model's own captions, asked first, in ``attrs["captions"]``."""
        predictions.attrs["captions"] = captions_from_run(generations)
        return predictions

    def scored_file(self, predictions: str | os.PathLike, *, source: str | os.PathLike | None = None,
                    **options: Any):
        """The official result JSON or a prediction store (JSONL) written by ``vlamb-nb run``, scored."""
        return S.score_file(self, predictions, source=source, **options)

    def reference_check(self) -> list[Any]:
        from vlamb_nb.benchmarks.vague.audit import audit

        return audit()


BENCHMARK = Vague()
