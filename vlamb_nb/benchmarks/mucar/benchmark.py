"""MUCAR (Wang et al., EMNLP 2025): multilingual cross-modal ambiguity resolution, scored by pairs.

Readable top to bottom::

    items  = BENCHMARK.load(source, images=folder)      # data-all.json, three schemas -> one row per query
    scored = BENCHMARK.evaluate(model, items, "full")   # Table 10 prompt -> Answer: X -> correct
    pair_accuracy(scored, by="category")                # Acc_q (queries), Acc_p (all of a group right) + CIs

Parts: :mod:`.data` (loader, grouping, quirks, images, sample), :mod:`.prompts` (templates),
:mod:`.parse` (answers), :mod:`.score` (Acc_q/Acc_p, tables, prediction files), :mod:`.judge`,
:mod:`.audit` (the paper's arithmetic), :mod:`.plots`, :mod:`.report`; this module wires them into
the :class:`Benchmark` shape.

Metric rules (the paper's formulas, §3.4): Acc_q = micro average over queries; Acc_p = share of
groups whose queries are all correct. Groups are ``question_id`` pairs, the paper's 501 (439 + 62
dual). A group is counted under its first query's category (two released groups mix categories), a
query under its own language. Overall Acc_p here is the micro average over all groups; the paper's
own Overall Acc_p rule cannot be reconstructed. Ablation and prompt-language runs (Table 3, Fig. 4,
Table 12) are summed over the six non-dual categories, as in the paper.
Confidence intervals (an addition) resample groups, never queries, so Acc_p stays defined.

Table 4's prompting strategies are settings too (``full_cot``, ``full_codis``, ``full_agent``,
``full_agent_unified``; prompt texts ours, see :mod:`.prompts`), read by the same parser and scored like
``full``. ``full_agent`` is multi-step: :meth:`Mucar.run` asks each query's ambiguity (step
``detect``), then its evidence given that analysis, then the answer given the evidence, each call cached
in the same store under ``full_agent:<step>`` (the run's step records), the answer under ``full_agent``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from vlamb_nb.benchmarks.base import Benchmark, lenient_letter
from vlamb_nb.benchmarks.mucar.data import (
    DEFAULT_GROUPING,
    HUB_IMAGES,
    LETTERS,
    NAME,
    ImageResolver,
    data_stats,
    load_items,
    make_sample,
    quirk_counts,
    quirks,
)
from vlamb_nb.benchmarks.mucar.parse import parse_answer, parse_yes_no
from vlamb_nb.benchmarks.mucar.prompts import (
    SETTINGS,
    STRATEGY_SETTINGS,
    TABLE4_ROWS,
    applicable,
    build_prompt,
)
from vlamb_nb.benchmarks.mucar.score import (
    GENERATION_FAILED,
    NO_PREDICTION,
    _records,
    failure_summary,
    pair_accuracy,
    read_predictions,
    results_long,
    score_predictions,
    strict_vs_lenient,
    table2,
    table4_long,
)
from vlamb_nb.errors import DataError, SettingError
from vlamb_nb.meta import Deviation
from vlamb_nb.metrics import coverage
from vlamb_nb.models.base import IMAGE_SLOT, VLM, DecodingParams, ModelInfo, Request, user_message

#: the model behind every row of Table 4 (its caption)
TABLE4_MODEL = "gpt-4o-2024-11-20"


# -- the benchmark -------------------------------------------------------------------------------
class Mucar(Benchmark):
    name = NAME
    paper = "Wang et al., MUCAR, EMNLP 2025"
    settings = tuple(SETTINGS)
    default_setting = "full"

    def load(self, source: str | os.PathLike | None = None, *, grouping: str = DEFAULT_GROUPING,
             images: str | os.PathLike | None = None, **kwargs: Any):
        """``data-all.json`` (a path, a folder holding it, or None for the release beside the checkout).

        ``grouping``: the paper's ``question_id`` pairs by default; other rules are for comparison only
        (:data:`~vlamb_nb.benchmarks.mucar.data.GROUPINGS`).
        """
        if kwargs:
            raise SettingError(f"unknown MUCAR load option(s): {', '.join(kwargs)}")
        return load_items(source, grouping=grouping, images=images)

    def requests(self, items, setting: str, *, images: str | os.PathLike | None = None,
                 context_mode: str = "prefix", option_sep: str = " ", option_style: str = "raw",
                 layout: str = "flat", params: DecodingParams | None = None, max_new_tokens: int | None = None,
                 step: str | None = None, previous: dict[str, str] | None = None, **kwargs: Any) -> list[Request]:
        """One request per query (per applicable context for 'c_ambiguous'); images from ``images``.

        ``max_new_tokens`` overrides the setting's generation budget (a config-friendly shortcut for ``params``).

        ``images``: a folder or ``kevindragon221/MUCAR`` (a local hub snapshot); default the loader's.

        Multi-step settings: the requests of ``step`` (default the first); a later step needs ``previous``,
        each query's output of the step before (``uid`` → text). :meth:`run` chains the steps.
        """
        if kwargs:
            raise SettingError(f"unknown MUCAR request option(s): {', '.join(kwargs)}")
        self.check_setting(setting)
        spec = SETTINGS[setting]
        if params is None:
            params = DecodingParams(max_new_tokens=int(max_new_tokens or spec.max_new_tokens))
        if spec.steps:
            step = step or spec.steps[0]
            if step != spec.steps[0] and previous is None:
                raise SettingError(f"step {step!r} of {setting!r} needs the outputs of the step before "
                                   "(previous={uid: text}); Mucar.run chains the steps")
        resolver = None
        if spec.image:
            where = images if images is not None else items.attrs.get("images")
            if where is None:
                raise SettingError(f"setting {setting!r} needs images: pass images=<folder> or "
                                   f"images={HUB_IMAGES!r} (a downloaded hub snapshot)")
            resolver = ImageResolver.from_spec(where)
        final = not spec.steps or step == spec.steps[-1]
        cache: dict[str, Any] = {}
        out = []
        for item in items.to_dict(orient="records"):
            ok, _ = applicable(item, setting)
            if not ok:
                continue
            text = build_prompt(item, setting, context_mode=context_mode, option_sep=option_sep,
                                option_style=option_style, layout=layout, step=step,
                                previous=(previous or {}).get(item["uid"], ""))
            imgs = []
            if resolver is not None:
                if item["image_id"] not in cache:
                    cache[item["image_id"]] = resolver.load(item["image_id"])
                imgs = [cache[item["image_id"]]]
            parts = [IMAGE_SLOT, text] if imgs else [text]
            meta = {"item_id": item["uid"], "group": item["group"]} | ({"step": step} if step else {})
            out.append(Request(id=item["uid"] if final else f"{item['uid']}::{step}",
                               messages=[user_message(*parts)], images=imgs, params=params, benchmark=NAME,
                               setting=setting if final else f"{setting}:{step}", meta=meta))
        return out

    def run(self, model: VLM, items, setting: str | None = None, *, store: str | os.PathLike | None = None,
            limit: int | None = None, batch_size: int = 8, progress: bool = True, **opts: Any):
        """Generate for ``setting``; a multi-step setting runs its steps in order, each fed the one before.

        Every call goes through the runner and the store (cached, resumable); ``limit`` keeps the first queries,
        so every step asks the same ones. Returns the generations of all steps (step rows have ``setting``
        ``<setting>:<step>``).
        """
        import pandas as pd

        from vlamb_nb import runner

        setting = self.check_setting(setting or self.default_setting)
        spec = SETTINGS[setting]
        items = self.first_items(items, limit)
        meta = self.run_meta(model.info, setting, items=items)
        if not spec.steps:
            return runner.run(model, self.requests(items, setting, **opts), store, batch_size=batch_size,
                              progress=progress, run_meta=meta, desc=f"mucar {setting}")
        frames, previous = [], None
        for step in spec.steps:
            reqs = self.requests(items, setting, step=step, previous=previous, **opts)
            gens = runner.run(model, reqs, store, batch_size=batch_size, progress=progress, run_meta=meta,
                              desc=f"{setting}:{step}")
            frames.append(gens)
            # a failed step passes on no text: the next step says "(no output)" and goes on
            previous = {str(r).split("::")[0]: ("" if isinstance(e, str) and e else str(t or ""))
                        for r, t, e in zip(gens["request_id"], gens["text"], gens["error"], strict=True)}
        return pd.concat(frames, ignore_index=True)

    def skipped(self, items, setting: str) -> dict[str, int]:
        """Queries a setting cannot be built for, by reason (reported, never silently dropped)."""
        out: dict[str, int] = {}
        for item in items.to_dict(orient="records"):
            ok, why = applicable(item, setting)
            if not ok:
                out[why] = out.get(why, 0) + 1
        return out

    def parse(self, text: str, item: Any) -> dict[str, Any]:
        if item.get("setting") == "c_ambiguous":
            return parse_yes_no(text)
        out = parse_answer(text, list(item["options"]))
        # the documented lenient reading beside the strict one: the paper read answers with a GPT-4o judge,
        # so a strict rule biases scores down; an explicit answer line that the strict rule overrides
        # ("Answer: B\nNote: the answer A ...") is read as written
        letters = "".join(LETTERS[: len(item["options"])])
        lenient, rule = lenient_letter(text, letters)
        if rule == "answer_line" or not out["valid"]:
            out["letter_lenient"], out["parse_lenient"] = lenient, rule
        else:
            out["letter_lenient"], out["parse_lenient"] = out["letter"], "strict"
        return out

    def score(self, predictions):
        return score_predictions(predictions)

    def predictions(self, items, generations, *, id_column: str = "uid"):
        """Answers joined to their queries and parsed; a multi-step run keeps each earlier step's text beside the
        answer (``step_<name>``). Missing ``error`` cells (NaN) are not failures."""
        gens = generations.copy()
        if "error" in gens:
            gens["error"] = [e if isinstance(e, str) else "" for e in gens["error"]]
        is_step = gens["setting"].astype(str).str.contains(":", regex=False) if "setting" in gens else None
        if is_step is None or not is_step.any():
            return super().predictions(items, gens, id_column=id_column)
        out = super().predictions(items, gens[~is_step].reset_index(drop=True), id_column=id_column)
        steps = gens[is_step]
        for tag in dict.fromkeys(steps["setting"].astype(str)):
            rows = steps[steps["setting"] == tag]
            text = dict(zip(rows["request_id"].astype(str).str.split("::").str[0], rows["text"], strict=True))
            out[f"step_{tag.split(':', 1)[1]}"] = out[id_column].map(text)
        return out

    def run_deviations(self, model: VLM, setting: str, scored, options: dict[str, Any]) -> list[Deviation]:
        return self.deviations(model.info, setting, max_new_tokens=options.get("max_new_tokens"))

    def tables(self, scored, *, label: str | None = None, n_resamples: int = 2000, seed: int = 0) -> dict[str, Any]:
        """Table 2-style row (with CIs), per-language Acc, category × language Acc_q, outcomes."""
        label = label or str(scored["model"].iloc[0] if "model" in scored else "ours")
        if "setting" in scored and (scored["setting"] == "c_ambiguous").all():
            return {"Is C ambiguous": pair_accuracy(scored, None, n_resamples=n_resamples, seed=seed)}
        cxl = pair_accuracy(scored, ["category", "language"], n_resamples=0)
        out = {
            "Table 2": table2(scored, label),
            "Table 2 (long, with CIs)": results_long(scored, label, n_resamples=n_resamples, seed=seed),
            "by language": pair_accuracy(scored, "language", n_resamples=n_resamples, seed=seed),
            "category x language Acc_q": cxl[cxl["metric"] == "Acc_q"].pivot(
                index="category", columns="language", values="value").round(2),
            "outcomes": scored["outcome"].value_counts().rename_axis("outcome").reset_index(name="n"),
            "strict vs lenient": strict_vs_lenient(scored, n_resamples=n_resamples, seed=seed),
        }
        settings = set(scored["setting"].dropna()) if "setting" in scored else set()
        if len(settings) == 1 and next(iter(settings)) in TABLE4_ROWS:
            out["Table 4 (MUCAR columns)"] = table4_long(scored, n_resamples=n_resamples, seed=seed)
        return out

    def summary(self, scored) -> dict[str, Any]:
        s = failure_summary(scored)
        return {"n": s["n_queries"], "invalid": int((~scored["valid"].fillna(False).astype(bool)).sum()),
                "Acc_q": s["Acc_q"], "Acc_p": s["Acc_p"], "image_insensitive_groups": s["image_insensitive_groups"]}

    def deviations(self, model: ModelInfo, setting: str, *, max_new_tokens: int | None = None) -> list[Deviation]:
        """What differs from the paper for this run; ``max_new_tokens`` is the budget actually used."""
        out = super().deviations(model, setting)
        out.append(Deviation("answer matching", "a GPT-4o right/wrong judge (prompt not released)",
                             "rule parser (Answer: X, then fallbacks); optional CODIS-prompt judge", "all"))
        out.append(Deviation("context placement", "not stated (templates have no context slot)",
                             "context prefixed to the question", "all"))
        budget = max_new_tokens or SETTINGS[setting].max_new_tokens
        out.append(Deviation("decoding", "not reported", f"greedy, at most {budget} new tokens", "all"))
        out.append(Deviation("option set", "Table 2b/3/12 'with confusing options' (not released)",
                             "the released options only (Table 2a setting)", "Table 2b, Table 3, Table 12"))
        out.append(Deviation("Overall Acc_p", "aggregation rule not reconstructable",
                             "micro average over all groups (the six non-dual categories' groups for "
                             "Table 3 / Fig. 4 / Table 12 settings)", "Overall Acc_p"))
        if setting in STRATEGY_SETTINGS:
            spec = SETTINGS[setting]
            out.append(Deviation("prompt wording", f"Table 4 '{TABLE4_ROWS[setting]}': no prompt text given",
                                 f"ours ({spec.description}; prompts.py)", setting))
            out.append(Deviation("Table 4 data", "MUCAR subset and option setting not stated (Vanilla matches "
                                 "neither Table 2a nor 2b)", "all queries given, released options, all seven "
                                 "categories", "Table 4"))
            if model.model_id != TABLE4_MODEL:
                out.append(Deviation("Table 4 model", TABLE4_MODEL, model.model_id, "Table 4"))
            if spec.strategy.startswith("agent"):
                out.append(Deviation("agent variant", "three calls or one unified prompt: not stated which "
                                     "produced Table 4", "three calls (full_agent) or one unified call "
                                     "(full_agent_unified), each compared with the 'OURS' row", setting))
        if not SETTINGS[setting].context or not SETTINGS[setting].question:
            out.append(Deviation("ablation", "context/question removed",
                                 "schema-B queries keep their embedded context (it is part of the question)",
                                 setting))
        return out

    # -- CLI hooks -----------------------------------------------------------------------------------
    def data_stats(self, items) -> dict[str, Any]:
        out = data_stats(items)
        out["quirks"] = quirk_counts(quirks(items))
        return out

    def score_file(self, predictions: str | os.PathLike, *, source: str | os.PathLike | None = None,
                   grouping: str = DEFAULT_GROUPING, model: str | None = None, setting: str | None = None,
                   missing: str = "wrong", n_resamples: int = 2000, quantization: str | None = None,
                   run: int | None = None, judge: Any = None, judge_store: str | os.PathLike | None = None,
                   **options: Any) -> dict[str, Any]:
        """Score raw outputs: JSON/JSONL/CSV rows with an id and an output, a prediction store, or the
        release's own layout with ``eval.models.<model>.output`` filled in.

        Queries without a prediction count as wrong (``missing="wrong"``, the paper's denominators), or
        ``missing="skip"`` leaves out every group with a missing query: scoring only the answered part of a
        group would let it pass Acc_p on fewer queries than it has. A query whose generation failed counts as
        wrong (``generation_failed``); ``coverage`` says how many queries were answered, failed or missing.
        ``model``/``setting``/``quantization``/``run`` pick one run of a store holding several. ``judge`` (a model
        or a spec) also reads every answer with the CODIS judge prompt, as the paper read them with GPT-4o
        (:mod:`.judge`), its verdicts cached in ``judge_store``.
        """
        if options:
            raise SettingError(f"unknown MUCAR score option(s): {', '.join(options)}")
        if setting is not None and setting not in SETTINGS:
            raise SettingError(f"unknown MUCAR setting {setting!r}; choose one of {', '.join(SETTINGS)}")
        if missing not in ("wrong", "skip"):
            raise SettingError(f"missing must be 'wrong' (count as wrong) or 'skip' (leave out incomplete "
                               f"groups), got {missing!r}")
        items = load_items(source, grouping=grouping)
        ok = [applicable(r, setting or "full")[0] for r in items.to_dict(orient="records")]
        items = items[ok]  # queries the setting cannot be asked are not "missing" (see Mucar.skipped)
        outputs, failed = read_predictions(predictions, model=model, setting=setting, quantization=quantization,
                                           run=run)
        by_uid = dict(zip(items["uid"], items.index, strict=True))
        unknown = [u for u in (*outputs, *failed) if u not in by_uid]
        if unknown:
            raise DataError(f"{len(unknown)} prediction id(s) not in the data, e.g. {unknown[0]!r}",
                            source=str(predictions), field="id")
        have = items["uid"].isin(outputs) | items["uid"].isin(failed)
        if source is None and missing == "wrong" and not have.all():
            raise DataError(f"no --source given, so the file is scored against the whole release ({len(items)} "
                            f"queries), but it answers {int(have.sum())} of them; the rest would count as wrong. "
                            "Pass --source (the data the predictions were made on), or -o missing=wrong with an "
                            "explicit --source to score against the release on purpose", source=str(predictions))
        incomplete = set(items.loc[~have, "group"])
        if missing == "skip":
            sub = items[~items["group"].isin(incomplete)].copy()
            if sub.empty:
                raise DataError("no group has a prediction for every query; use missing='wrong'",
                                source=str(predictions))
        else:
            sub = items.copy()
        sub["setting"] = setting or "full"
        sub["text"] = sub["uid"].map(outputs)
        parsed = [self.parse(t, r) if isinstance(t, str) else dict(GENERATION_FAILED) if u in failed
                  else dict(NO_PREDICTION) for u, t, r in zip(sub["uid"], sub["text"], sub.to_dict(orient="records"),
                                                              strict=True)]
        import pandas as pd

        scored = score_predictions(pd.concat([sub.reset_index(drop=True), pd.DataFrame(parsed)], axis=1))
        out = {
            "coverage": coverage(items["uid"], outputs, failed, failed.values()),
            "n_predictions": int(len(outputs)), "n_items": int(len(items)),
            "missing_items": int((~have).sum()), "missing_counted_as": "wrong" if missing == "wrong" else
            "skipped (whole groups)", "incomplete_groups": len(incomplete), "scored_queries": int(len(scored)),
            "overall": _records(pair_accuracy(scored, None, n_resamples=n_resamples)),
            "per_category": _records(pair_accuracy(scored, "category", n_resamples=n_resamples)),
            "per_language": _records(pair_accuracy(scored, "language", n_resamples=n_resamples)),
            "failures": failure_summary(scored, str(model or Path(predictions).name)),
        }
        if judge is not None:
            from vlamb_nb.benchmarks.mucar.judge import judge_report

            out["judge"] = judge_report(judge, scored, store=judge_store, n_resamples=n_resamples)
        return out

    def headline(self, runs: dict[str, Any], *, n_resamples: int = 2000, seed: int = 0, **options: Any) -> list[Any]:
        """The report card's rows: Overall Acc_p and Acc_q among Table 2a's models."""
        from vlamb_nb.benchmarks.mucar.score import headline

        return headline(runs, n_resamples=n_resamples, seed=seed, **options)

    def reference_check(self) -> list[Any]:
        from vlamb_nb.benchmarks.mucar.audit import audit

        try:
            items = load_items(None)
        except DataError:  # the release is not beside the checkout: audit the paper's own numbers only
            items = None
        return audit(items)

    def make_sample(self, directory: str | os.PathLike, n: int = 8, seed: int = 0) -> Path:
        return make_sample(directory, n=n, seed=seed)


BENCHMARK = Mucar()


