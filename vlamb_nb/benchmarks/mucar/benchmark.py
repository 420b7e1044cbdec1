"""MUCAR (Wang et al., EMNLP 2025): multilingual cross-modal ambiguity resolution, scored by pairs.

Readable top to bottom::

    items  = BENCHMARK.load(source, images=folder)      # data-all.json, three schemas -> one row per query
    scored = BENCHMARK.evaluate(model, items, "full")   # Table 10 prompt -> Answer: X -> correct
    pair_accuracy(scored, by="category")                # Acc_q (queries), Acc_p (all of a group right) + CIs

Parts: :mod:`.data`, :mod:`.prompts`, :mod:`.parse`, :mod:`.score` (``METRICS``: Acc_q, Acc_p over ``question_id``
pairs; tables, files), :mod:`.judge`, :mod:`.audit`, :mod:`.plots`, :mod:`.report`; this module wires them.

Table 4's prompting strategies are settings too (``full_cot``, ``full_codis``, ``full_agent``,
``full_agent_unified``; prompt texts ours, see :mod:`.prompts`), read by the same parser and scored like
``full``. ``full_agent`` is multi-step: its declared turns ask each query's ambiguity (turn ``detect``),
then its evidence given that analysis (``evidence``), then the answer given the evidence (``answer``), each
call cached in the same store and stored with its turn.
"""

from __future__ import annotations

import os
from typing import Any

import vlamb_nb.benchmarks.mucar.prompts as prompts
import vlamb_nb.benchmarks.mucar.score as S
from vlamb_nb.benchmarks.base import ANSWER, NO_PREDICTION, Asked, Benchmark, RunContext, Turn
from vlamb_nb.benchmarks.mucar.data import (
    DEFAULT_GROUPING,
    NAME,
    data_stats,
    load_items,
    make_sample,
    quirk_counts,
    quirks,
)
from vlamb_nb.benchmarks.mucar.judge import judge_report, scripted_reply
from vlamb_nb.benchmarks.mucar.parse import SCRIPTED_ACCURACY, SCRIPTED_ERRORS, parse_query
from vlamb_nb.benchmarks.mucar.prompts import SETTINGS, applicable
from vlamb_nb.errors import DataError, SettingError
from vlamb_nb.meta import Deviation
from vlamb_nb.models.base import DecodingParams, Request


def _passed_on(asked: Asked) -> dict[str, str]:
    """Each query's output of a step, for the next step; a failed step passes on no text ("(no output)")."""
    gens = asked.generations
    return {str(i): ("" if isinstance(e, str) and e else str(t or ""))
            for i, t, e in zip(gens["item_id"], gens["text"], gens["error"], strict=True)}


class Mucar(Benchmark):
    name = NAME
    paper = "Wang et al., MUCAR, EMNLP 2025"
    settings = tuple(SETTINGS)
    prompt_variants = {"full": prompts.VARIANTS}
    default_setting = "full"
    id_column = "uid"
    failed_parse = S.GENERATION_FAILED  # scored wrong and labelled apart from an unreadable answer
    parse = staticmethod(parse_query)
    score = staticmethod(S.score_predictions)
    tables = staticmethod(S.tables)
    metrics = S.METRICS
    make_sample = staticmethod(make_sample)
    judge_report = staticmethod(judge_report)  # answers read again by the CODIS-prompt judge, as the paper's GPT-4o
    scripted_accuracy, scripted_errors, scripted_metric = SCRIPTED_ACCURACY, SCRIPTED_ERRORS, "Acc_p"  # per pair
    scripted_reply = staticmethod(scripted_reply)
    scripted_unit = staticmethod(lambda item: str(item["group"]))  # a pair: all its queries right, or not

    def load(self, source: str | os.PathLike | None = None, *, grouping: str = DEFAULT_GROUPING,
             images: str | os.PathLike | None = None, **kwargs: Any):
        """``data-all.json`` (a path, a folder holding it, or None for the release beside the checkout).

        ``grouping``: the paper's ``question_id`` pairs by default; other rules are for comparison only
        (:data:`~vlamb_nb.benchmarks.mucar.data.GROUPINGS`).
        """
        if kwargs:
            raise SettingError(f"unknown MUCAR load option(s): {', '.join(kwargs)}")
        return load_items(source, grouping=grouping, images=images)

    def requests(self, items, setting: str, **options: Any) -> list[Request]:
        """One request per query (per applicable context for 'c_ambiguous'), see :func:`.prompts.requests`."""
        return prompts.requests(items, self.check_setting(setting), **options)

    def turns(self, ctx: RunContext) -> list[Turn]:
        """One turn, or a multi-step setting's steps in order (``full_agent``: detect, evidence, answer), each
        asked with the step before's output; every call cached in the same store."""
        setting = ctx.setting
        steps = SETTINGS[setting].steps
        if not steps:
            return super().turns(ctx)
        assert steps[-1] == ANSWER  # the last step's answers are the ones scored
        return [Turn(step, lambda items, done, step=step: self.requests(
            items, setting, step=step, previous=_passed_on(done[-1]) if done else None, **ctx.options),
            desc=f"{setting}:{step}") for step in steps]

    def run_deviations(self, ctx: RunContext, items=None) -> list[Deviation]:
        """What differs from the paper for this run, with the token budget its requests are sent with."""
        params: DecodingParams | None = ctx.option("params")
        budget = params.max_new_tokens if params is not None else ctx.option("max_new_tokens")
        return super().run_deviations(ctx, items) + prompts.setting_deviations(ctx.model, ctx.setting,
                                                                               max_new_tokens=budget)

    def predicted(self, predictions, generations):
        """Each earlier step's text beside the answer (``step_<name>``); a query a stored run has no answer for
        labelled ``no_prediction``; a missing ``error`` cell (NaN) is no failure."""
        if "error" in predictions:
            predictions["error"] = [e if isinstance(e, str) else "" for e in predictions["error"]]
            lost = predictions["error"] == NO_PREDICTION
            if lost.any():
                for col, value in {**S.NO_PREDICTION, "parse_error": None}.items():
                    predictions.loc[lost, col] = value
        if "turn" not in generations:
            return predictions
        steps = generations[generations["turn"] != ANSWER]
        for step in dict.fromkeys(steps["turn"].astype(str)):
            rows = steps[steps["turn"] == step]
            text = dict(zip(rows["item_id"].astype(str), rows["text"], strict=True))
            predictions[f"step_{step}"] = predictions[self.id_column].map(text)
        return predictions

    def skipped(self, items, setting: str) -> dict[str, int]:
        """Queries a setting cannot be built for, by reason (reported, never silently dropped)."""
        out: dict[str, int] = {}
        for item in items.to_dict(orient="records"):
            ok, why = applicable(item, setting)
            if not ok:
                out[why] = out.get(why, 0) + 1
        return out

    def summary(self, scored) -> dict[str, Any]:  # the declared metrics, then the paper's failure pattern
        return super().summary(scored) | S.diagnostics(scored)

    def data_stats(self, items) -> dict[str, Any]:
        return data_stats(items) | {"quirks": quirk_counts(quirks(items))}

    def scored_file(self, predictions: str | os.PathLike, *, source: str | os.PathLike | None = None,
                    **options: Any):
        return S.scored_file(self, predictions, source=source, **options)

    def reference_check(self) -> list[Any]:
        from vlamb_nb.benchmarks.mucar.audit import audit

        try:
            items = load_items(None)
        except DataError:  # the release is not beside the checkout: audit the paper's own numbers only
            items = None
        return audit(items)


BENCHMARK = Mucar()
