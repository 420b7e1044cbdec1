"""The RACQUET :class:`~vlamb_nb.benchmarks.base.Benchmark`: which loader, prompts, judge and scorer it wires.

A response has no answer to extract: the judge (:mod:`.judge`) or a person labels it, and :mod:`.score` turns
labels into class shares. The ``control`` setting asks the adjective-free question once per RACQUET-BIAS image.
"""

from __future__ import annotations

import os
from typing import Any

import vlamb_nb.benchmarks.racquet.data as data
import vlamb_nb.benchmarks.racquet.prompts as prompts
import vlamb_nb.benchmarks.racquet.score as S
from vlamb_nb.benchmarks.base import ANSWER, Benchmark, RunContext, Turn
from vlamb_nb.benchmarks.racquet.judge import (
    SCRIPTED_ACCURACY,
    SCRIPTED_ERRORS,
    SCRIPTED_RIGHT,
    judge,
    scripted_reply,
)
from vlamb_nb.meta import Deviation
from vlamb_nb.models.base import Request


class Racquet(Benchmark):
    name = "racquet"
    paper = "Testoni, Plank & Fernández (EMNLP 2025)"
    settings = prompts.SETTINGS
    default_setting = "direct"
    score_options = ("judge", "judge_store", "judge_kind", "judge_max_new_tokens", "judge_progress")
    load = staticmethod(data.load)  # the release's JSONL rows, with local images, the COCO join and boxes
    data_stats = staticmethod(data.data_stats)
    make_sample = staticmethod(data.make_sample)
    control_items = staticmethod(data.control_items)
    prompt = staticmethod(prompts.question_text)
    judge = staticmethod(judge)
    tables = staticmethod(S.share_tables)  # class shares (Fig. 3/4, Table 2, §5 control), BIAS shares (Fig. 7)
    metrics = S.METRICS
    # the scripted stand-in: Explicit (CLASS A) at GPT-4o's rate per condition, else Implicit or High Risk; it also
    # writes the judge's verdicts, read from each answer (:func:`.judge.scripted_reply`)
    scripted_accuracy = SCRIPTED_ACCURACY
    scripted_right = SCRIPTED_RIGHT
    scripted_errors = SCRIPTED_ERRORS
    scripted_metric = "Explicit share"

    def scripted_reply(self, request: Request, s: Any) -> str:
        return scripted_reply(self, request, s)

    def summary(self, scored) -> dict[str, Any]:  # the declared shares, then every class's share
        return super().summary(scored) | S.label_summary(scored)

    def requests(self, items, setting: str, **options: Any) -> list[Request]:
        """Requests for ``setting`` (:func:`.prompts.requests`); greedy decoding except ``sampling``."""
        return prompts.requests(items, self.check_setting(setting), **options)

    def asked(self, items, ctx: RunContext, *, limit: int | None = None, progress: bool = True):
        """``control`` asks about the BIAS images (:meth:`control_items`), other settings the items of ``subset``
        (general or bias, default both); ``limit`` keeps the first items asked (every sample of an item is asked);
        ``images`` (a folder) re-resolves the images, so ``vlamb-nb run racquet -o images=DIR`` works on the
        read-only release."""
        subset, images = ctx.option("subset"), ctx.option("images")
        if ctx.setting == "control":
            items = self.control_items(items)
        elif subset is not None:
            items = items[items["subset"] == subset]
        items = self.first_items(items, limit)
        return data.with_images(items, images) if images is not None else items

    def turns(self, ctx: RunContext) -> list[Turn]:
        """One turn (every sample of the ``sampling`` setting in it), asked with the options the items were not
        picked by."""
        options = {k: v for k, v in ctx.options.items() if k not in ("images", "subset")}
        return [Turn(ANSWER, lambda items, _: self.requests(items, ctx.setting, **options))]

    def join(self, items, asked, ctx: RunContext):
        gens = super().join(items, asked, ctx)
        gens["model"] = ctx.model.model_id
        return gens

    def join_items(self, items, answers, id_column: str):
        """Control requests are keyed by a BIAS row (one per image): when ``items`` lacks those rows they are
        reloaded from the source, so no response loses its subset (and its share group)."""
        import pandas as pd

        ctrl = answers["setting"].eq("control") if "setting" in answers.columns else None
        if ctrl is not None and ctrl.any():
            if not answers.loc[ctrl, "item_id"].astype(str).isin(items[id_column].astype(str)).all():
                bias = data.bias_from_source(items)
                items = pd.concat([items, bias[~bias[id_column].isin(items[id_column])]], ignore_index=True)
        return super().join_items(items, answers, id_column)

    def predicted(self, predictions, generations):
        """A control response describes its image: it answers the control question, not an adjective question."""
        if "setting" in predictions.columns and predictions["setting"].eq("control").any():
            is_ctrl = predictions["setting"].eq("control")
            predictions.loc[is_ctrl, "question"] = prompts.CONTROL_QUESTION
            for c in ("adjective", "stereotype_target"):
                if c in predictions.columns:
                    predictions.loc[is_ctrl, c] = None
        return predictions

    def parse(self, text: str, item: Any) -> dict[str, Any]:
        """A VLM response has no answer to extract; an empty one is invalid (it cannot be judged)."""
        t = (text or "").strip()
        return {"response": t, "valid": bool(t), "parse_error": None if t else "empty response"}

    def score(self, predictions, *, judge=None, judge_store=None, judge_kind: str = "abc",
              judge_max_new_tokens: int | None = None, judge_progress: bool = True, batch_size: int = 8):
        """Labels from the judge (with ``judge``, a model: :func:`.judge.judge`; BIAS rows come back unjudged, for
        labelling by hand) or from given labels; without either they stay unlabelled: RACQUET has no gold answer.
        ``judge_progress``: the judge's progress bar (a notebook run in batch shows none)."""
        if judge is not None:
            predictions = self.judge(judge, predictions, kind=judge_kind, store=judge_store, batch_size=batch_size,
                                     progress=judge_progress, max_new_tokens=judge_max_new_tokens)
        return S.label_predictions(predictions)

    def run_deviations(self, ctx: RunContext, items=None) -> list[Deviation]:
        from dataclasses import replace

        # RACQUET has no gold: what the stand-in is right by is an Explicit answer, written as its class
        out = [replace(d, ours=d.ours.replace("answers written from the gold, right by design",
                                              "answers written per class (RACQUET has no gold), Explicit by design"))
               if d.what == "model" else d for d in super().run_deviations(ctx, items)]
        if ctx.setting == "sampling":
            out.append(Deviation("sampling", "nucleus sampling, top-p/temperature not reported",
                                 "top_p and temperature as run parameters (default 0.9 / 1.0), seeded", "Table 2"))
        return out

    def scored_file(self, predictions: str | os.PathLike, *, source: str | os.PathLike | None = None,
                    **options: Any):
        """Class labels from a labelled predictions file (CSV/JSONL with ``label`` or ``judge_text``)."""
        return S.score_predictions_file(self, predictions, source=source, **options)

    def reference_check(self) -> list:
        from vlamb_nb.benchmarks.racquet.audit import reference_check

        return reference_check(self)


BENCHMARK = Racquet()
