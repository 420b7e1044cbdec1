"""MUCAR (Wang et al., EMNLP 2025): multilingual cross-modal ambiguity resolution, scored by pairs.

Readable top to bottom::

    items  = BENCHMARK.load(source, images=folder)      # data-all.json, three schemas -> one row per query
    scored = BENCHMARK.evaluate(model, items, "full")   # Table 10 prompt -> Answer: X -> correct
    pair_accuracy(scored, by="category")                # Acc_q (queries), Acc_p (all of a group right) + CIs

Parts: :mod:`.data`, :mod:`.prompts`, :mod:`.parse`, :mod:`.score` (``METRICS``: Acc_q, Acc_p over ``question_id``
pairs; tables, files), :mod:`.judge`, :mod:`.audit`, :mod:`.plots`, :mod:`.report`; this module wires them.

Table 4's prompting strategies are settings too (``full_cot``, ``full_codis``, ``full_agent``,
``full_agent_unified``; prompt texts ours, see :mod:`.prompts`), read by the same parser and scored like
``full``. ``full_agent`` is multi-step: its declared turns ask each query's ambiguity (step
``detect``), then its evidence given that analysis, then the answer given the evidence, each call cached
in the same store under ``full_agent:<step>`` (the run's step records), the answer under ``full_agent``.
"""

from __future__ import annotations

import os
from typing import Any

import vlamb_nb.benchmarks.mucar.prompts as prompts
import vlamb_nb.benchmarks.mucar.score as S
from vlamb_nb.benchmarks.base import Asked, Benchmark, Turn
from vlamb_nb.benchmarks.mucar.data import (
    DEFAULT_GROUPING,
    NAME,
    data_stats,
    load_items,
    make_sample,
    quirk_counts,
    quirks,
)
from vlamb_nb.benchmarks.mucar.judge import judge_report
from vlamb_nb.benchmarks.mucar.parse import parse_query
from vlamb_nb.benchmarks.mucar.prompts import SETTINGS, applicable
from vlamb_nb.errors import DataError, SettingError
from vlamb_nb.meta import Deviation
from vlamb_nb.models.base import DecodingParams, ModelInfo, Request


def _passed_on(asked: Asked) -> dict[str, str]:
    """Each query's output of a step, for the next step; a failed step passes on no text ("(no output)")."""
    gens = asked.generations
    return {str(r).split("::")[0]: ("" if isinstance(e, str) and e else str(t or ""))
            for r, t, e in zip(gens["request_id"], gens["text"], gens["error"], strict=True)}


class Mucar(Benchmark):
    name = NAME
    paper = "Wang et al., MUCAR, EMNLP 2025"
    settings = tuple(SETTINGS)
    default_setting = "full"
    id_column = "uid"
    parse = staticmethod(parse_query)
    score = staticmethod(S.score_predictions)
    tables = staticmethod(S.tables)
    metrics = S.METRICS
    make_sample = staticmethod(make_sample)
    judge_report = staticmethod(judge_report)  # answers read again by the CODIS-prompt judge, as the paper's GPT-4o

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

    def turns(self, model, setting: str, **options: Any) -> list[Turn]:
        """One turn, or a multi-step setting's steps in order (``full_agent``: detect, evidence, answer), each
        asked with the step before's output; every call cached in the same store."""
        steps = SETTINGS[setting].steps
        if not steps:
            return super().turns(model, setting, **options)
        return [Turn(step, lambda items, done, step=step: self.requests(
            items, setting, step=step, previous=_passed_on(done[-1]) if done else None, **options),
            desc=f"{setting}:{step}") for step in steps]

    def run_deviations(self, model, setting: str, items, *, max_new_tokens: int | None = None,
                       params: DecodingParams | None = None, **_: Any) -> list[Deviation]:
        """The deviations with the token budget the requests are sent with."""
        return self.deviations(model.info, setting,
                               max_new_tokens=params.max_new_tokens if params is not None else max_new_tokens)

    def answers(self, generations):
        """The answer rows (a multi-step run's step rows, ``<setting>:<step>``, stay aside); a missing ``error``
        cell (NaN) is no failure."""
        gens = generations.copy()
        if "error" in gens:
            gens["error"] = [e if isinstance(e, str) else "" for e in gens["error"]]
        if "setting" not in gens:
            return gens
        return gens[~gens["setting"].astype(str).str.contains(":", regex=False)].reset_index(drop=True)

    def predicted(self, predictions, generations):
        """Each earlier step's text beside the answer (``step_<name>``)."""
        if "setting" not in generations:
            return predictions
        steps = generations[generations["setting"].astype(str).str.contains(":", regex=False)]
        for tag in dict.fromkeys(steps["setting"].astype(str)):
            rows = steps[steps["setting"] == tag]
            text = dict(zip(rows["request_id"].astype(str).str.split("::").str[0], rows["text"], strict=True))
            predictions[f"step_{tag.split(':', 1)[1]}"] = predictions[self.id_column].map(text)
        return predictions

    def skipped(self, items, setting: str) -> dict[str, int]:
        """Queries a setting cannot be built for, by reason (reported, never silently dropped)."""
        out: dict[str, int] = {}
        for item in items.to_dict(orient="records"):
            ok, why = applicable(item, setting)
            if not ok:
                out[why] = out.get(why, 0) + 1
        return out

    def deviations(self, model: ModelInfo, setting: str, *, max_new_tokens: int | None = None) -> list[Deviation]:
        """What differs from the paper for this run; ``max_new_tokens`` is the budget actually used."""
        return super().deviations(model, setting) + prompts.setting_deviations(model, setting,
                                                                               max_new_tokens=max_new_tokens)

    def summary(self, scored) -> dict[str, Any]:  # the declared metrics, then the paper's failure pattern
        return super().summary(scored) | S.diagnostics(scored)

    def data_stats(self, items) -> dict[str, Any]:
        return data_stats(items) | {"quirks": quirk_counts(quirks(items))}

    def score_file(self, predictions: str | os.PathLike, *, source: str | os.PathLike | None = None,
                   **options: Any) -> dict[str, Any]:
        return S.score_file(self, predictions, source=source, **options)

    def reference_check(self) -> list[Any]:
        from vlamb_nb.benchmarks.mucar.audit import audit

        try:
            items = load_items(None)
        except DataError:  # the release is not beside the checkout: audit the paper's own numbers only
            items = None
        return audit(items)


BENCHMARK = Mucar()
