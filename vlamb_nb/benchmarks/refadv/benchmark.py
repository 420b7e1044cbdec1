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
import random
from pathlib import Path
from typing import Any

import vlamb_nb.benchmarks.refadv.data as data
import vlamb_nb.benchmarks.refadv.score as metrics
from vlamb_nb import boxes
from vlamb_nb.benchmarks.base import Benchmark
from vlamb_nb.benchmarks.refadv.parse import (
    BACKEND_ERROR,
    EMPTY_RESPONSE,
    NO_BBOX_FOUND,
    STYLES,
    GroundingStyle,
    _processed_size,
    choose_style,
    clean_rewrite,
    parse_bracket_boxes,
    parse_descriptors,
    parse_json_boxes,
    style_for,
)
from vlamb_nb.benchmarks.refadv.prompts import (
    EXTRACT_PROMPT,
    FIXED_EXPRESSION,
    OFFICIAL_MAX_TOKENS,
    OFFICIAL_SEED,
    REWRITE_PROMPT,
    _prompt_of,
    bag_of_words,
    followup_text,
    official_image,
    prompt_text,
)
from vlamb_nb.benchmarks.refadv.score import _describe_runs, _failed, _is_official, _model_identity, _text
from vlamb_nb.errors import DataError, SettingError
from vlamb_nb.hashing import digest
from vlamb_nb.meta import Deviation
from vlamb_nb.metrics import coverage
from vlamb_nb.models.base import (
    IMAGE_SLOT,
    DecodingParams,
    ModelInfo,
    Request,
    assistant_message,
    user_message,
)
from vlamb_nb.reference import Finding


# -- the benchmark ----------------------------------------------------------------------------------------------
def _record_size(item: Any) -> tuple[float, float] | None:
    """The record's (width, height) when it has both, for checking the image file against it."""
    w, h = item.get("width"), item.get("height")
    try:
        return (float(w), float(h)) if w is not None and h is not None and float(w) > 0 and float(h) > 0 else None
    except (TypeError, ValueError):
        return None


class RefAdv(Benchmark):
    name = "refadv"
    paper = "Dong et al. 2026, Ref-Adv: Exploring MLLM Visual Reasoning in Referring Expression Tasks (ICLR)"
    settings = ("direct", "cot", "bow", "fixed", "deletion")
    default_setting = "direct"

    # -- load ------------------------------------------------------------------------------------
    def load(self, source: str | os.PathLike | None = None, **kwargs: Any):
        """Hub id (default ``dddraxxx/ref-adv-s``), a parquet, the demo folder, or a RefCOCO folder/parquet."""
        return data.load_any(source, **kwargs)

    def make_sample(self, directory: str | os.PathLike, n: int = 8, seed: int = 0) -> Path:
        return data.make_sample(directory, n=n, seed=seed)

    def data_stats(self, items) -> dict[str, Any]:
        return data.dataset_stats(items)

    # -- ask -------------------------------------------------------------------------------------
    def expressions(self, items, setting: str, *, seed: int = 0) -> list[str]:
        """The text each item is asked with under ``setting`` (ablations rewrite the expression)."""
        self.check_setting(setting)
        if setting == "bow":
            return [bag_of_words(e, seed, str(i)) for e, i in zip(items["expression"], items["id"], strict=True)]
        if setting == "fixed":
            return [FIXED_EXPRESSION] * len(items)
        if setting == "deletion":
            if "deleted_expression" not in items.columns:
                raise SettingError("the deletion setting needs rewritten expressions: call "
                                   "bench.delete_descriptors(items, rewriter) first, or pass rewriter= to run()")
            return list(items["deleted_expression"])
        return list(items["expression"])

    def requests(self, items, setting: str, *, style: str | GroundingStyle | None = None, model: ModelInfo | None = None,
                 prompt_mode: str | None = None, seed: int = 0, max_new_tokens: int = OFFICIAL_MAX_TOKENS,
                 **kwargs: Any) -> list[Request]:
        """One request per item: prompt text first, then the image (as the official runner sends it)."""
        if kwargs:
            raise SettingError(f"unknown refadv request option(s): {', '.join(kwargs)}")
        self.check_setting(setting)
        st = style_for(model, style)
        mode = prompt_mode or ("cot" if setting == "cot" else "direct")
        params = DecodingParams(max_new_tokens=max_new_tokens, do_sample=False, temperature=1.0, top_p=1.0,
                                seed=OFFICIAL_SEED)
        tag = f"{setting}:{st.name}:{mode}" + (f":seed{seed}" if setting == "bow" else "")
        reqs = []
        for (_, item), expr in zip(items.iterrows(), self.expressions(items, setting, seed=seed), strict=True):
            reqs.append(Request(id=f"{item['id']}::{setting}", messages=[user_message(prompt_text(expr, st, mode),
                                                                                   IMAGE_SLOT)],
                                images=[official_image(item["image"], _record_size(item))], params=params,
                                benchmark=self.name,
                                setting=tag, meta={"item_id": str(item["id"]), "expression_asked": expr}))
        return reqs

    def model_requests(self, model: ModelInfo, items, setting: str, *, style: str | GroundingStyle | None = None,
                       **options: Any) -> list[Request]:
        """The first-turn requests :meth:`run` sends to ``model``: the grounding style follows the model."""
        st, _ = choose_style(model, style)
        return self.requests(items, setting, style=st, **options)

    def repair_request(self, first: Request, first_text: str, text: str = "official") -> Request:
        """The one follow-up turn: [user prompt + image, the first reply, the repair text named ``text``].

        The default is the text as the official runs sent it (literal backslash-n, see prompts.py);
        another variant gets its own setting tag, so a store keeps the two apart.
        """
        messages = [*first.messages, assistant_message(first_text), user_message(followup_text(text))]
        return Request(id=first.id.replace("::", "::repair-", 1), messages=messages, images=list(first.images),
                       params=first.params, benchmark=first.benchmark, setting=first.setting + _repair_tag(text),
                       meta=dict(first.meta, repair_text=text))

    # -- parse / score ------------------------------------------------------------------------------
    def parse(self, text: str, item: Any) -> dict[str, Any]:
        """Boxes in absolute original-image xyxy with the official error code; the first box is scored.

        ``item`` may carry ``box_format``, ``parser`` and, for resized-pixel styles, ``processed_image_sizes``.
        """
        fmt = item.get("box_format") or "abs_xyxy"
        parser = item.get("parser") or "json"
        w, h = float(item["width"]), float(item["height"])
        size = _processed_size(item) if item.get("resized_pixels") and fmt == "abs_xyxy" else None
        pw, ph = size or (w, h)
        fn = parse_bracket_boxes if parser == "bracket" else parse_json_boxes
        found, err = fn(text, pw, ph, fmt)
        if parser == "json+bracket" and err == NO_BBOX_FOUND:
            found, err = parse_bracket_boxes(text, pw, ph, fmt)
        if size is not None and size != (w, h):
            found = [list(boxes.clip(boxes.rescale(b, size, (w, h)), w, h)) for b in found]
        return {"pred_boxes": found, "pred_xyxy": found[0] if found else [], "parse_error": err, "valid": not err,
                "n_boxes": len(found)}

    def score(self, predictions):
        """First-box IoU with the GT and Acc@0.5 hit; parse failures score IoU 0 and stay counted."""
        out = predictions.copy()
        out["iou"] = [metrics.first_iou(p, g) for p, g in zip(out["pred_xyxy"], out["gt_xyxy"], strict=True)]
        out["hit"] = out["iou"] >= 0.5
        out["correct"] = out["hit"]
        return out

    def summary(self, scored) -> dict[str, Any]:
        s = metrics.summary(scored)
        return {k: (round(100 * v, 2) if isinstance(v, float) and not k.startswith("n_") else v) for k, v in s.items()}

    # -- run (two turns: the answer, and the repair turn when it has no box) -------------------------
    def run(self, model, items, setting: str | None = None, *, store: str | os.PathLike | None = None,
            limit: int | None = None, batch_size: int = 8, progress: bool = True,
            style: str | GroundingStyle | None = None, prompt_mode: str | None = None, seed: int = 0,
            max_new_tokens: int = OFFICIAL_MAX_TOKENS, repair: bool = True, repair_text: str = "official",
            rewriter=None, rewriter_store: str | os.PathLike | None = None):
        """Generate, and repair once where the answer has no box. Returns one row per item: the answer that
        counts (the repair turn's where one was sent), with the grounding style the answer is read with.

        ``repair_text``: ``official`` (the repair turn as the official runs sent it) or ``newlines``.
        """
        import pandas as pd

        from vlamb_nb import runner

        setting = self.check_setting(setting or self.default_setting)
        followup_text(repair_text)  # an unknown name fails before any generation
        items = self.first_items(items, limit).reset_index(drop=True)
        st, style_reason = choose_style(model.info, style)
        if setting == "deletion" and "deleted_expression" not in items.columns:
            if rewriter is None:
                raise SettingError("the deletion setting needs rewriter=<a text model> (or pre-rewritten items)")
            items = self.delete_descriptors(items, rewriter, seed=seed, store=rewriter_store, progress=progress)
        reqs = self.requests(items, setting, style=st, prompt_mode=prompt_mode, seed=seed,
                             max_new_tokens=max_new_tokens)
        meta = self.run_meta(model.info, setting, seed, items=items)
        meta.update(style=st.name, box_format=st.box_format, style_reason=style_reason, repair_text=repair_text)
        meta["deviations"] += [d.__dict__ for d in self.style_deviations(st, model.info, max_new_tokens,
                                                                         repair_text=repair_text)]
        gens = runner.run(model, reqs, store, batch_size=batch_size, progress=progress, run_meta=meta,
                          desc=f"refadv {setting}")
        rows = [self._answer(item, req, gen, st) for (_, item), req, gen
                in zip(items.iterrows(), reqs, gens.to_dict(orient="records"), strict=True)]
        todo = [i for i, r in enumerate(rows) if self.parse(r["text"] or "", {**items.iloc[i].to_dict(), **r})
                ["parse_error"] in (EMPTY_RESPONSE, NO_BBOX_FOUND) and not _failed(r["error"])]
        if repair and todo:
            reqs2 = [self.repair_request(reqs[i], rows[i]["text"] or "", repair_text) for i in todo]
            gens2 = runner.run(model, reqs2, store, batch_size=batch_size, progress=progress, run_meta=meta,
                               desc=f"refadv {setting} repair")
            for i, req2, gen2 in zip(todo, reqs2, gens2.to_dict(orient="records"), strict=True):
                first_text = rows[i]["text"]
                rows[i] = self._answer(items.iloc[i], req2, gen2, st)
                rows[i].update(retry_used=True, first_text=first_text)
        out = pd.DataFrame(rows)
        out["model"] = model.info.model_id
        out["prompt_id"] = prompt_mode or ("cot" if setting == "cot" else "direct")
        out["setting"] = setting
        return out

    def _answer(self, item, req: Request, gen: dict[str, Any], st: GroundingStyle) -> dict[str, Any]:
        """One answer as a generation row: what was asked, what came back, and how it is to be read."""
        row = {"item_id": str(item["id"]), "request_id": req.id, "expression_asked": req.meta.get("expression_asked"),
               "text": gen.get("text"), "error": gen.get("error"), "finish_reason": gen.get("finish_reason"),
               "cached": gen.get("cached"), "processed_image_sizes": gen.get("processed_image_sizes"),
               "retry_used": False, "first_text": None, "box_format": st.box_format, "parser": st.parser,
               "resized_pixels": st.resized_pixels}
        for extra in ("deleted_expression", "deleted_descriptor", "deletion_status"):
            if extra in item.index:
                row[extra] = item[extra]
        return row

    def predictions(self, items, generations, *, id_column: str = "id"):
        """Each answer beside its item, read with the run's grounding style; a backend failure is the official
        ``backend_error`` (never a silent miss)."""
        import pandas as pd

        idx = items.assign(**{id_column: items[id_column].astype(str)}).set_index(id_column, drop=False)
        missing = sorted(set(generations["item_id"].astype(str)) - set(idx.index))
        if missing:
            raise DataError(f"{len(missing)} answer(s) name items that are not in the data, e.g. {missing[0]!r}")
        rows = []
        for gen in generations.to_dict(orient="records"):
            item = idx.loc[str(gen["item_id"])]
            row = {c: item[c] for c in data.ITEM_COLUMNS if c != "image" and c in item.index}
            row.update(gen)
            if _failed(gen.get("error")):  # the official runner: any backend exception → backend_error, no retry
                row.update(pred_boxes=[], pred_xyxy=[], parse_error=BACKEND_ERROR, valid=False, n_boxes=0)
            else:
                row.update(self.parse(gen.get("text") or "", row))
            rows.append(row)
        return pd.DataFrame(rows)

    # -- ablation: descriptor deletion through a text model ----------------------------------------
    def delete_descriptors(self, items, rewriter, *, seed: int = 0, store: str | os.PathLike | None = None,
                           batch_size: int = 8, progress: bool = True, max_new_tokens: int = 128):
        """Table 4: extract descriptors, delete one at random (seeded per item), rewrite without it.

        Adds ``deleted_descriptor``, ``deleted_expression``, ``deletion_ok`` and ``deletion_status``
        (``ok``, ``generation_failed``, ``no_descriptor``, ``empty_rewrite``, ``unchanged``). An item
        whose extraction or rewrite fails keeps its original expression (counted, never dropped).
        """
        from vlamb_nb import runner

        params = DecodingParams(max_new_tokens=max_new_tokens, do_sample=False, seed=OFFICIAL_SEED)
        ids, exprs = [str(i) for i in items["id"]], [str(e) for e in items["expression"]]
        ex_reqs = [Request(id=f"{i}::extract", messages=[user_message(EXTRACT_PROMPT.format(expression=e))],
                           params=params, benchmark=self.name, setting="deletion:extract", meta={"item_id": i})
                   for i, e in zip(ids, exprs, strict=True)]
        ex = runner.run(rewriter, ex_reqs, store, batch_size=batch_size, progress=progress, desc="extract descriptors")
        status = ["generation_failed" if _failed(err) else "no_descriptor" for err in ex["error"]]
        chosen: list[str | None] = []
        for k, (i, e, text) in enumerate(zip(ids, exprs, ex["text"], strict=True)):
            desc = [] if _failed(ex["error"].iloc[k]) else parse_descriptors(_text(text), e)
            chosen.append(random.Random(f"{seed}:{i}").choice(desc) if desc else None)
        todo = [k for k, d in enumerate(chosen) if d]
        rw_reqs = [Request(id=f"{ids[k]}::rewrite",
                           messages=[user_message(REWRITE_PROMPT.format(descriptor=chosen[k], expression=exprs[k]))],
                           params=params, benchmark=self.name, setting="deletion:rewrite",
                           meta={"item_id": ids[k]}) for k in todo]
        rw = runner.run(rewriter, rw_reqs, store, batch_size=batch_size, progress=progress, desc="rewrite")
        out = items.copy()
        out["deleted_descriptor"] = chosen
        out["deleted_expression"] = exprs
        for k, text, err in zip(todo, rw["text"], rw["error"], strict=True):
            new = "" if _failed(err) else clean_rewrite(_text(text))
            if _failed(err):
                status[k] = "generation_failed"
            elif not new:
                status[k] = "empty_rewrite"
            elif new.lower() == exprs[k].strip().lower():
                status[k] = "unchanged"
            else:
                status[k] = "ok"
                out.loc[out.index[k], "deleted_expression"] = new
        out["deletion_status"] = status
        out["deletion_ok"] = [st == "ok" for st in status]
        return out

    # -- report --------------------------------------------------------------------------------------
    def tables(self, scored) -> dict[str, Any]:
        """The official Ref-Adv-s report row and a Table 6-layout row (plus our mAcc) for one run."""
        import pandas as pd

        s = metrics.summary(scored)
        model = str(scored["model"].iloc[0]) if "model" in scored.columns and len(scored) else "ours"
        prompt = str(scored["prompt_id"].iloc[0]) if "prompt_id" in scored.columns and len(scored) else "direct"
        t6 = {"Acc0.5": s["acc@0.5"], "Acc0.75": s["acc@0.75"], "Acc0.9": s["acc@0.9"], "mAcc": s["macc"],
              "Neg": s["neg"], "No-Neg": s["no_neg"], "2-3": s["2-3"], "4-6": s["4-6"], ">=7": s[">=7"]}
        return {"Ref-Adv-s": pd.DataFrame([metrics.report_row(scored, model=model, prompt=prompt)]),
                "Table 6": pd.DataFrame([{k: (round(100 * v, 1) if v is not None else None) for k, v in t6.items()}],
                                        index=[f"{model} ({prompt})"])}

    def deviations(self, model: ModelInfo, setting: str) -> list[Deviation]:
        out = super().deviations(model, setting)
        if model.backend == "hf":
            out.append(Deviation("inference backend", "vLLM OpenAI-compatible server (bf16)",
                                 "transformers generate", "all"))
        if setting == "bow":
            out.append(Deviation("BoW tokenization", "unspecified", "whitespace tokens, seeded shuffle per item",
                                 "Table 3"))
        if setting == "deletion":
            out.append(Deviation("descriptor deletion", "Qwen2.5-72B with unpublished prompts",
                                 "our extract/rewrite prompts through the model protocol", "Table 4"))
        return out

    def run_deviations(self, model, setting: str, scored, options: dict[str, Any]) -> list[Deviation]:
        """The setting's deviations and those of the grounding style, token budget and repair text it ran with."""
        st, _ = choose_style(model.info, options.get("style"))
        return self.deviations(model.info, setting) + self.style_deviations(
            st, model.info, options.get("max_new_tokens", OFFICIAL_MAX_TOKENS),
            repair_text=options.get("repair_text", "official"))

    def style_deviations(self, st: GroundingStyle, model: ModelInfo, max_new_tokens: int, *,
                         repair_text: str = "official") -> list[Deviation]:
        out = []
        if max_new_tokens != OFFICIAL_MAX_TOKENS:
            out.append(Deviation("max new tokens", str(OFFICIAL_MAX_TOKENS), str(max_new_tokens), "all"))
        if repair_text != "official":
            out.append(Deviation("repair turn text", "one line with literal backslash-n pairs (single-quoted YAML)",
                                 f"{repair_text!r} variant (real line breaks)", "repair turns"))
        if st.resized_pixels:
            out.append(Deviation("box rescale", "none (official code reads resized-image pixels as original)",
                                 "resized-image pixels mapped to the original size", "all"))
        if not st.keep_image_tag:
            out.append(Deviation("prompt", "literal '<image>' line before the instruction",
                                 "dropped (an image token for this processor)", "all"))
        if st.name not in ("official", "qwen2_5_vl", "qwen3_vl"):
            out.append(Deviation("grounding style", "per-model best-practice prompts (unpublished)", st.note, "all"))
        return out

    # -- CLI hooks -------------------------------------------------------------------------------------
    def score_file(self, predictions: str | os.PathLike, *, source: str | os.PathLike | None = None,
                   **options: Any) -> dict[str, Any]:
        """Score an official per-row prediction JSONL, or one of our prediction stores (needs ``source``)."""
        path = Path(predictions)
        if not path.is_file():
            raise DataError("file not found", source=str(path))
        if _is_official(path):
            scored = metrics.read_official_predictions(path)
            check = metrics.check_official(scored)
            kind = "official"
            failed = scored["parse_error"] == BACKEND_ERROR
            cov = coverage(None, scored.loc[~failed, "id"], scored.loc[failed, "id"])
        else:
            scored = self.score_store(path, source=source, **options)
            check, kind = None, "store"
            cov = scored.attrs["coverage"]
        s = metrics.summary(scored)
        out: dict[str, Any] = {"coverage": cov, "benchmark": self.name, "predictions": str(path), "format": kind,
                               "summary": {k: (round(100 * v, 2) if isinstance(v, float) and k not in ("parse_fail_rate",)
                                               else v) for k, v in s.items()},
                               "report": metrics.report_row(scored, model=str(scored["model"].iloc[0]),
                                                            prompt=str(scored["prompt_id"].iloc[0]),
                                                            source=path.name)}
        if check is not None:
            out["official_check"] = check
        return out

    def score_store(self, path: str | os.PathLike, *, source: str | os.PathLike | None = None,
                    style: str | None = None, setting: str | None = None, model: str | None = None,
                    repair_text: str = "official", quantization: str | None = None, run: int | None = None,
                    **_: Any):
        """Re-parse and score a prediction store written by :meth:`run` against the items in ``source``.

        A store may hold several runs (settings, grounding styles, models, quantizations, decoding parameters):
        each is scored alone, so ``setting``/``model``/``quantization`` (``none`` for the run without) or the
        run's index ``run`` must pick one when there are several (a mixed score would be silently wrong). Per item the first answer counts (a later failure
        never replaces it, a different later answer is an error: :mod:`vlamb_nb.run_identity`), and its repair turn
        only when that answer had no box, exactly as :meth:`run` decides; only repair turns sent with
        ``repair_text`` count. ``attrs["coverage"]`` says how many source items were answered, failed or missing.
        """
        import pandas as pd

        from vlamb_nb.run_identity import dedupe, quantization_matches
        from vlamb_nb.store import read_store

        if source is None:
            raise DataError("scoring a prediction store needs --source (the data the predictions refer to)",
                            source=str(path))
        items = self.load(source).set_index("id", drop=False)
        want = _repair_tag(repair_text)
        numbered = read_store(path)
        if not numbered:
            raise DataError("no records", source=str(path))
        line_of = {id(r): ln for ln, r in numbered}
        runs: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        for r in (rec for _, rec in numbered):
            rid = str(r.get("request_id", ""))
            item_id, _, suffix = rid.partition("::")
            if item_id not in items.index:
                raise DataError(f"request {rid!r} names an item not in the source", source=str(path))
            run_setting = suffix.removeprefix("repair-")
            if run_setting not in self.settings:  # e.g. descriptor-deletion rewriter calls in the same store
                continue
            is_repair, tag = suffix.startswith("repair-"), str(r.get("setting", ""))
            if is_repair and not tag.endswith(want):  # a repair turn sent with another repair text
                continue
            tag = tag.removesuffix(want) if is_repair else tag
            m = r.get("model") or {}
            ident = _model_identity(m)  # quantization, revision and backend make another run
            decoding = digest(r.get("params") or {})[:8]  # and so do other decoding parameters (a repair turn
            rec = dict(r, item_id=item_id, is_repair=is_repair)  # is sent with its first turn's)
            line_of[id(rec)] = line_of[id(r)]
            runs.setdefault((run_setting, m.get("model_id", ""), tag, ident, decoding), []).append(rec)
        chosen = [k for k in runs if (setting is None or k[0] == setting) and (model is None or k[1] == model)
                  and quantization_matches((runs[k][0].get("model") or {}).get("quantization"), quantization)]
        if run is not None:
            if not 0 <= int(run) < len(runs):
                raise SettingError(f"run index {run} out of range; the store holds {_describe_runs(runs)}")
            chosen = [k for k in chosen if k == list(runs)[int(run)]]
        if not chosen:
            raise DataError(f"no run matches setting={setting!r} model={model!r} quantization={quantization!r}"
                            f"{'' if run is None else f' run={run}'}; the store holds {_describe_runs(runs)}",
                            source=str(path))
        if len(chosen) > 1:
            raise DataError(f"the store holds several runs ({_describe_runs(runs, only=chosen)}); pick one with "
                            "setting=..., model=..., quantization=... or run=N", source=str(path))
        run_recs = runs[chosen[0]]
        run_recs, _ = dedupe(run_recs, source=str(path), lines=[line_of[id(r)] for r in run_recs])
        st = STYLES[style] if style else style_for(ModelInfo(**run_recs[0]["model"]) if "model" in run_recs[0] else None)
        first: dict[str, dict[str, Any]] = {}
        repair: dict[str, dict[str, Any]] = {}
        for r in run_recs:  # one record per request (a first answer, a repair turn)
            (repair if r["is_repair"] else first)[r["item_id"]] = r
        rows, errors = [], []
        for item_id, r in first.items():
            item = items.loc[item_id]
            row = self._store_row(item, r, st)
            if row["parse_error"] in (EMPTY_RESPONSE, NO_BBOX_FOUND) and item_id in repair:
                row = self._store_row(item, repair[item_id], st)
                row.update(retry_used=True, first_text=r.get("text"))
            if row["parse_error"] == BACKEND_ERROR:
                errors.append((repair.get(item_id) if row["retry_used"] else r).get("error"))
            rows.append(row)
        scored = self.score(pd.DataFrame(rows))
        failed = [r["id"] for r in rows if r["parse_error"] == BACKEND_ERROR]
        scored.attrs["coverage"] = coverage(items["id"], [r["id"] for r in rows if r["parse_error"] != BACKEND_ERROR],
                                            failed, errors)
        return scored

    def _store_row(self, item, r: dict[str, Any], st: GroundingStyle) -> dict[str, Any]:
        row = {c: item[c] for c in data.ITEM_COLUMNS if c != "image"}
        row.update(text=r.get("text"), retry_used=False, box_format=st.box_format, parser=st.parser,
                   resized_pixels=st.resized_pixels, processed_image_sizes=r.get("processed_image_sizes"),
                   model=(r.get("model") or {}).get("model_id", ""), prompt_id=_prompt_of(r.get("setting", "")))
        if _failed(r.get("error")):
            row.update(pred_boxes=[], pred_xyxy=[], parse_error=BACKEND_ERROR, valid=False, n_boxes=0)
        else:
            row.update(self.parse(r.get("text") or "", row))
        return row

    def headline(self, runs: dict[str, Any], *, n_resamples: int = 2000, seed: int = 0, **options: Any) -> list[Any]:
        """The report card's rows: Acc@0.5 by slice among the released runs (paired) and the published rows."""
        from vlamb_nb.benchmarks.refadv.score import headline

        return headline(runs, n_resamples=n_resamples, seed=seed, **options)

    def reference_check(self) -> list[Finding]:
        from vlamb_nb.benchmarks.refadv.audit import audit

        return audit()


def _repair_tag(text: str) -> str:
    """The setting-tag suffix of a repair turn: ``:repair`` for the official text, else ``:repair-<name>``."""
    followup_text(text)
    return ":repair" if text == "official" else f":repair-{text}"


BENCHMARK = RefAdv()
