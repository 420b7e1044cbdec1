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

MCQ answers are read from generated text (default) or, as a labelled alternative, from the
log-likelihood of each option letter (``reading="loglik"``).
"""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

import vlamb_nb.benchmarks.vague.data as vague_data
import vlamb_nb.benchmarks.vague.prompts as vague_prompts
from vlamb_nb.benchmarks.base import Benchmark, lenient_letter
from vlamb_nb.benchmarks.vague.data import SUBSETS, read_captions
from vlamb_nb.benchmarks.vague.parse import OptionLikelihoodReader, parse_free_form, parse_letter
from vlamb_nb.benchmarks.vague.prompts import (
    BASE_SETTINGS,
    READINGS,
    SETTINGS,
    SettingSpec,
    caption_requests,
    decoding,
    setting_spec,
)
from vlamb_nb.benchmarks.vague.score import (
    MINILM_LABEL,
    accuracy_pct,
    bertscore_f1,
    bertscore_label,
    bleu1,
    check_true_answers,
)
from vlamb_nb.errors import DataError, SettingError
from vlamb_nb.meta import Deviation
from vlamb_nb.models.base import (
    IMAGE_SLOT,
    VLM,
    ModelInfo,
    Request,
    user_message,
)

CATEGORIES = vague_data.CATEGORIES
LETTERS = vague_data.LETTERS


def captions_from_run(generations) -> dict[str, str]:
    """Item id → caption text from the caption step (a failed caption becomes an empty description)."""
    out = {}
    for _, g in generations.iterrows():
        if str(g["request_id"]).endswith("::caption"):
            out[str(g["request_id"]).split("::")[0]] = "" if g.get("error") else str(g.get("text") or "")
    return out


# -- the benchmark ------------------------------------------------------------------------------------
#: the released code serves Qwen2.5-VL with vLLM at this pixel budget (App. / run scripts)
OFFICIAL_QWEN_MAX_PIXELS = 1280 * 28 * 28

class Vague(Benchmark):
    name = "vague"
    paper = "Nam et al., VAGUE: Visual Contexts Clarify Ambiguous Expressions (ICCV 2025)"
    settings = SETTINGS
    default_setting = "vlm"
    score_options = ("bertscore",)

    # load ------------------------------------------------------------------------------------------
    def load(self, source: str | os.PathLike | None = None, **kwargs: Any):
        """Hub id (default ``HazelNam/vague-bench``), a parquet file/folder, or the official JSON files."""
        return vague_data.load_vague(source, **kwargs)

    def make_sample(self, directory: str | os.PathLike, n: int = 8, seed: int = 0, fmt: str = "parquet") -> Path:
        return vague_data.make_sample(directory, n, seed, fmt)

    # ask -------------------------------------------------------------------------------------------
    def requests(self, items, setting: str, *, wording: str = "paper", captions: Any = None,
                 reading: str = "generate", decoding_mode: str = "greedy", max_new_tokens: int | None = None,
                 **kwargs: Any) -> list[Request]:
        """Answer-step requests. SM settings need ``captions`` (item id → caption; ``"dataset"`` uses the
        data's own GPT-4o ``meta.caption``; a path reads an external caption file)."""
        if kwargs:
            raise SettingError(f"unknown vague request option(s): {', '.join(kwargs)}")
        spec = setting_spec(self.check_setting(setting))
        vague_prompts.template(spec.prompt, wording)  # validates the wording early
        if reading not in READINGS:
            raise SettingError(f"unknown reading {reading!r}; choose one of {', '.join(READINGS)}")
        if reading == "loglik" and spec.free_form:
            raise SettingError("log-likelihood reading applies to MCQ settings only")
        caps = self._caption_map(items, spec, captions)
        params = decoding(setting, decoding_mode, max_new_tokens)
        out = []
        for _, item in items.iterrows():
            code = wording == "code"
            cap = caps.get(item["id"], "") if caps is not None else ""
            text = vague_prompts.render(
                spec.prompt, utt=item["indirect_raw"] if code else item["indirect"], options=item["options"],
                ordering=item["ordering"], caption=cap,
                addressee=vague_data.official_addressee(item["solution"]) if code else item["addressee"],
                wording=wording)
            parts = (IMAGE_SLOT, text) if spec.image else (text,)
            images = [vague_data.item_image(item)] if spec.image else []
            out.append(Request(id=f"{item['id']}::{setting}", messages=[user_message(*parts)], images=images,
                               params=params, benchmark=self.name, setting=setting,
                               options=list(LETTERS) if reading == "loglik" else None,
                               meta={"item_id": item["id"], "wording": wording, "reading": reading}))
        return out

    def _caption_map(self, items, spec: SettingSpec, captions: Any) -> dict[str, str] | None:
        if spec.captions == "none":
            return None
        if isinstance(captions, str) and captions == "dataset":
            return dict(zip(items["id"], items["caption"], strict=True))
        if isinstance(captions, (str, os.PathLike)):
            captions = read_captions(captions)
        if not isinstance(captions, dict):
            how = ("run the caption step first (Vague.run does both steps)" if spec.captions == "self"
                   else "pass captions=<file> (JSON {image: caption} or CSV image_name,caption)")
            raise SettingError(f"setting {spec.name!r} needs captions: {how}, or captions='dataset'")
        missing = [i for i in items["id"] if i not in captions]
        if missing:
            raise DataError(f"{len(missing)} item(s) have no caption, e.g. {missing[0]!r}", field="caption")
        return captions

    # generate (multi-step aware) ---------------------------------------------------------------------
    def run(self, model: VLM, items, setting: str | None = None, *, store: str | os.PathLike | None = None,
            limit: int | None = None, batch_size: int = 8, progress: bool = True, captions: Any = None,
            reading: str = "generate", **opts: Any):
        """Generate for ``setting``; SM settings first caption each image with the same model (cached).

        Returns the caption rows (``::caption``) and the answer rows; ``reading`` is kept on every row.
        """
        import pandas as pd

        from vlamb_nb import runner

        setting = self.check_setting(setting or self.default_setting)
        spec = setting_spec(setting)
        items = self.first_items(items, limit)
        meta = self.run_meta(model.info, setting, items=items)
        meta["deviations"] = [asdict(d) for d in self.deviations(model.info, setting, reading=reading,
                                                                 captions=captions,
                                                                 max_pixels=getattr(model, "max_pixels", None),
                                                                 **opts)]
        frames = []
        if spec.captions == "self" and captions is None:
            cap_params = decoding("caption", opts.get("decoding_mode", "greedy"), opts.get("max_new_tokens"))
            cap_gens = runner.run(model, caption_requests(items, params=cap_params), store, batch_size=batch_size,
                                  progress=progress, run_meta=meta, desc="caption")
            frames.append(cap_gens)
            captions = captions_from_run(cap_gens)
        reqs = self.requests(items, setting, captions=captions, reading=reading, **opts)
        reader = OptionLikelihoodReader(model) if reading == "loglik" else model
        frames.append(runner.run(reader, reqs, store, batch_size=batch_size, progress=progress, run_meta=meta,
                                 desc=setting))
        out = pd.concat(frames, ignore_index=True)
        out["reading"] = reading  # "loglik" marks the alternative MCQ reading
        return out

    def predictions(self, items, generations, *, id_column: str = "id"):
        """Answers joined to their items and parsed; the SM caption rows are kept aside in
        ``attrs["captions"]`` (they are the model's own, asked first)."""
        answers = generations[~generations["request_id"].astype(str).str.endswith("::caption")]
        preds = super().predictions(items, answers.reset_index(drop=True), id_column=id_column)
        preds.attrs["captions"] = captions_from_run(generations)
        return preds

    def run_deviations(self, model: VLM, setting: str, scored, options: dict[str, Any]) -> list[Deviation]:
        return self.deviations(model.info, setting, max_pixels=getattr(model, "max_pixels", None), **options)

    # parse / score ---------------------------------------------------------------------------------
    def parse(self, text: str, item: Any) -> dict[str, Any]:
        spec = setting_spec(item["setting"]) if "setting" in item and item["setting"] in SETTINGS else None
        if spec is not None and spec.free_form:
            return parse_free_form(text, cot=spec.cot)
        out = parse_letter(text, cot=bool(spec and spec.cot), options=item.get("options"),
                           ordering=item.get("ordering"))
        cat = None
        if out["letter"] is not None and isinstance(item.get("ordering"), list):
            cat = CATEGORIES[list(item["ordering"]).index(out["letter"])]
        out["category"] = cat
        # the documented lenient reading beside the official one (reported as accuracy_lenient)
        if out["valid"]:
            out["letter_lenient"], out["parse_lenient"], cat_l = out["letter"], "strict", cat
        else:
            lenient, rule = lenient_letter(text)
            cat_l = (CATEGORIES[list(item["ordering"]).index(lenient)]
                     if lenient is not None and isinstance(item.get("ordering"), list) else None)
            out["letter_lenient"], out["parse_lenient"] = lenient, rule
        out["category_lenient"] = cat_l
        return out

    def score(self, predictions, *, bertscore: str | None = "roberta-large"):
        """Per-item ``correct`` (MCQ: the chosen option is the correct one; invalid counts wrong) and, for
        free-form rows, ``bleu1`` and ``bertscore_f1`` against ``mcq.1_correct``."""
        df = predictions.copy()
        if "category" not in df.columns:
            df["category"] = None
        df["valid"] = df["valid"].fillna(False).astype(bool)
        df["correct"] = df["valid"] & (df["category"] == "correct")
        if "category_lenient" in df.columns:
            df["correct_lenient"] = df["category_lenient"] == "correct"
        ff = df["setting"].map(lambda s: setting_spec(s).free_form if s in SETTINGS else False).astype(bool)
        df["free_form"] = ff
        if ff.any():
            if "answer" not in df.columns:
                df["answer"] = None
            refs = df.loc[ff, "options"].map(lambda o: o["correct"])
            cands = df.loc[ff, "answer"].fillna("").astype(str)
            df.loc[ff, "bleu1"] = [bleu1(c, r) for c, r in zip(cands, refs, strict=True)]
            if bertscore is not None:
                df.loc[ff, "bertscore_f1"] = bertscore_f1(list(cands), list(refs), model=bertscore)
                df.loc[ff, "bertscore_model"] = bertscore_label(bertscore)  # a substitute says so on every row
                df.attrs["bertscore_model"] = bertscore_label(bertscore)
            df["correct"] = df["correct"].astype(object)
            df.loc[ff, "correct"] = None  # free-form has no single correct answer
        return df

    # report ------------------------------------------------------------------------------------------
    def breakdown(self, scored):
        """One row per (model, setting, subset ∈ VCR/Ego4D/All): N, valid, counts, accuracy (Correct/N)."""
        import pandas as pd

        df = scored.copy()
        if "model" not in df.columns:
            df["model"] = "model"
        rows = []
        for (model, setting), g in df.groupby(["model", "setting"], sort=False):
            for subset in (*SUBSETS, "All"):
                s = g if subset == "All" else g[g["subset"] == subset]
                if s.empty:
                    continue
                row: dict[str, Any] = {"model": model, "setting": setting, "subset": subset, "N": len(s),
                                       "valid": int(s["valid"].sum())}
                if setting_spec(setting).free_form:
                    row["BLEU-1"] = float(s["bleu1"].mean())
                    if "bertscore_f1" in s.columns and s["bertscore_f1"].notna().any():
                        row["BERT F1"] = float(s["bertscore_f1"].mean())
                        row["BERTScore model"] = str(s["bertscore_model"].dropna().iloc[0])
                else:
                    for cat in CATEGORIES:
                        row[cat] = int((s["category"] == cat).sum())
                    row["accuracy"] = accuracy_pct(row["correct"], len(s))
                    if "correct_lenient" in s.columns:  # the lenient reading, beside the official one
                        row["accuracy_lenient"] = accuracy_pct(int(s["correct_lenient"].fillna(False).sum()),
                                                               len(s))
                rows.append(row)
        return pd.DataFrame(rows)

    def tables(self, scored) -> dict[str, Any]:
        """Our versions of Tables 1, J5/J6, 3/G4, F3 and the Fig. 4 counts (where the settings were run)."""
        b = self.breakdown(scored)
        out: dict[str, Any] = {"breakdown": b}
        mcq = b[b["setting"].isin(BASE_SETTINGS)] if len(b) else b
        if mcq.empty:
            return out
        t1 = mcq[mcq["setting"].isin(["lm", "sm", "vlm"]) & (mcq["subset"] != "All")]
        if not t1.empty:
            wide = t1.pivot_table(index="model", columns=["subset", "setting"], values="accuracy", aggfunc="first")
            for subset in SUBSETS:
                for s in ("sm", "vlm"):
                    if (subset, s) in wide.columns and (subset, "lm") in wide.columns:
                        wide[(subset, f"{s} gain")] = (wide[(subset, s)] - wide[(subset, "lm")]).round(1)
            out["Table 1"] = wide.sort_index(axis=1)
        for subset, tid in (("VCR", "Table J5"), ("Ego4D", "Table J6")):
            part = b[b["subset"] == subset]
            if not part.empty:
                out[tid] = part.drop(columns="subset").reset_index(drop=True)
        comb = mcq[mcq["subset"] == "All"]
        cot = comb[comb["setting"].isin(["sm", "sm_cot", "vlm", "vlm_cot"])]
        if not cot.empty:
            out["Table 3/G4"] = cot[["model", "setting", "accuracy", "FS", "SU", "NE", "correct", "valid", "N"]]
        f3 = comb[comb["setting"].isin(["sm", "sm_ext"])]
        if not f3.empty:
            out["Table F3"] = f3.pivot_table(index="model", columns="setting", values="accuracy", aggfunc="first")
        fig4 = comb[comb["setting"].isin(["lm", "sm", "vlm"])]
        if not fig4.empty:
            out["Fig. 4"] = fig4[["model", "setting", "FS", "SU", "NE", "correct", "N"]].reset_index(drop=True)
        return out

    # deviations -----------------------------------------------------------------------------------
    def deviations(self, model: ModelInfo, setting: str, *, bertscore: str | None = "roberta-large",
                   decoding_mode: str = "greedy", reading: str = "generate", captions: Any = None,
                   max_pixels: int | None = None, **_: Any) -> list[Deviation]:
        out = super().deviations(model, setting)
        if model.family == "qwen2_5_vl" and model.backend == "hf" and max_pixels != OFFICIAL_QWEN_MAX_PIXELS:
            out.append(Deviation("image resolution", "max_pixels 1280·28·28 = 1,003,520 (released code, vLLM)",
                                 f"max_pixels {max_pixels if max_pixels else 'the processor default'}", "all"))
        if decoding_mode == "greedy":
            out.append(Deviation("decoding", "not stated (released code: vLLM sampling, temperature 0.2, "
                                 "1024 tokens)", "greedy, short token budget", "all"))
        if reading == "loglik":
            out.append(Deviation("answer reading", "letter parsed from generated text",
                                 "option-letter log-likelihood (alternative reading)", "all"))
        spec = setting_spec(setting) if setting in SETTINGS else None
        if spec is not None and spec.captions == "external" and isinstance(captions, str) and captions == "dataset":
            out.append(Deviation("external captions", "GPT-4o captions file (not released)",
                                 "the dataset's own GPT-4o meta.caption, written while the item was generated with "
                                 "the intended action known: it may leak the answer and likely inflates Table F3",
                                 "Table F3"))
        if spec is not None and spec.free_form and bertscore == "minilm":
            out.append(Deviation("BERTScore model", "roberta-large (bert-score default for English)",
                                 MINILM_LABEL, "Table J5, Table J6"))
        return out

    # CLI hooks ----------------------------------------------------------------------------------------
    def data_stats(self, items) -> dict[str, Any]:
        from vlamb_nb.benchmarks.vague.data import dataset_statistics, top_verbs

        return {"n": len(items), "subset_counts": {s: int((items["subset"] == s).sum()) for s in SUBSETS},
                "table_b1": dataset_statistics(items).to_dict(),
                "top_verbs": {s: top_verbs(items, s, 20) for s in SUBSETS}}

    def score_file(self, predictions: str | os.PathLike, *, source: str | os.PathLike | None = None,
                   **options: Any) -> dict[str, Any]:
        """Score a prediction file: the official ``{"<name>_annot.jpg": {"model_output", "true_answer"}}`` JSON
        (``setting=`` option, or taken from the ``{model}_{format}_{answer_type}.json`` file name) or a
        prediction store (JSONL) written by ``vlamb-nb run``."""

        from vlamb_nb.benchmarks.vague.score import predictions_frame

        setting = options.pop("setting", None)
        bertscore = options.pop("bertscore", None)
        missing_mode = options.pop("missing", "wrong")
        pick = {k: options.pop(k) for k in ("model", "quantization", "run") if k in options}
        if "run" in pick:
            pick["run"] = int(pick["run"])
        if options:
            raise SettingError(f"unknown vague score option(s): {', '.join(options)}")
        gens = predictions_frame(predictions, setting=setting, **pick)
        if source is None:
            return {"coverage": _coverage(None, gens)} | self.score_answers_only(gens, predictions)
        items = self.load(source)
        scored, missing = self.score_generations(items, gens, bertscore=bertscore, missing=missing_mode,
                                                 label=str(predictions))
        b = self.breakdown(scored)
        return {"coverage": _coverage(items["id"], gens), "source": str(source), "predictions": str(predictions),
                "items_in_source": len(items),
                "missing_predictions": missing, "missing_counted_as": "invalid" if missing_mode == "wrong" else
                "skipped", "scored": len(scored), "rows": b.to_dict(orient="records")}

    def score_generations(self, items, gens, *, bertscore: str | None = None, missing: str = "wrong",
                          label: str = "predictions"):
        """Score generations read from a file against ``items``. Items without a prediction count as invalid
        (``missing="wrong"``, the paper's denominator N) or are left out (``"skip"``); returns (scored, counts)."""
        import pandas as pd

        if missing not in ("wrong", "skip"):
            raise SettingError(f"missing must be 'wrong' (count as invalid, as the paper's N) or 'skip', "
                               f"got {missing!r}")
        unknown = sorted(set(gens["item_id"]) - set(items["id"]))
        if unknown:
            raise DataError(f"{len(unknown)} prediction(s) name items not in the source, e.g. {unknown[0]!r}",
                            source=label)
        check_true_answers(items, gens, label)
        if "model" not in gens.columns:
            gens = gens.assign(model=Path(label).stem)
        counts, fill = {}, []
        for (model, s), g in gens.groupby(["model", "setting"], sort=False):
            have = set(g["item_id"])
            lost = [i for i in items["id"] if i not in have]
            counts[f"{model}/{s}"] = len(lost)
            if missing == "wrong":
                fill += [{"request_id": f"{i}::{s}", "item_id": i, "setting": s, "model": model, "text": "",
                          "error": "no prediction for this item"} for i in lost]
        if fill:
            gens = pd.concat([gens, pd.DataFrame(fill)], ignore_index=True)
        return self.score(self.predictions(items, gens), bertscore=bertscore), counts

    def score_answers_only(self, gens, label: str | os.PathLike) -> dict[str, Any]:
        """Without the data: accuracy and valid count from the official file's own ``true_answer`` letters
        (subsets by the ``@`` rule). FS/SU/NE need each item's ``ordering`` and so need ``--source``."""
        if "true_answer" not in gens.columns or gens["true_answer"].isna().any():
            raise SettingError("vague scoring needs --source (the data the predictions refer to) unless every "
                               "prediction carries its true_answer (the official result JSON)")
        rows = []
        for (model, s), g in gens.groupby(["model", "setting"], sort=False):
            spec = setting_spec(s)
            if spec.free_form:
                raise SettingError("free-form scores need --source (the reference answers come from the data)")
            parsed = [parse_letter(t, cot=spec.cot) for t in g["text"].fillna("")]
            valid = [p["valid"] for p in parsed]
            correct = [p["letter"] == t for p, t in zip(parsed, g["true_answer"], strict=True)]
            subset = g["item_id"].map(vague_data.subset_of)
            for name in (*SUBSETS, "All"):
                mask = (subset == name).to_numpy() if name != "All" else [True] * len(g)
                n = int(sum(mask))
                if n == 0:
                    continue
                k = sum(c for c, m in zip(correct, mask, strict=True) if m)
                rows.append({"model": model, "setting": s, "subset": name, "N": n,
                             "valid": sum(v for v, m in zip(valid, mask, strict=True) if m), "correct": k,
                             "FS": None, "SU": None, "NE": None, "accuracy": accuracy_pct(k, n)})
        return {"source": None, "predictions": str(label), "scored": len(gens),
                "note": "no --source: N is the number of predictions in the file and FS/SU/NE need the data",
                "rows": rows}

    def headline(self, runs: dict[str, Any], *, n_resamples: int = 2000, seed: int = 0, **options: Any) -> list[Any]:
        """The report card's rows: accuracy per subset and setting among Table 1's models."""
        from vlamb_nb.benchmarks.vague.score import headline

        return headline(runs, n_resamples=n_resamples, seed=seed, **options)

    def reference_check(self) -> list[Any]:
        from vlamb_nb.benchmarks.vague.audit import audit

        return audit()


def _coverage(item_ids, gens) -> dict[str, Any]:
    """Items answered, failed (every request of the item failed) and missing, from read generations."""
    from vlamb_nb.metrics import coverage

    errors = gens["error"].tolist() if "error" in gens.columns else [None] * len(gens)
    failed = [isinstance(e, str) and bool(e) for e in errors]
    ids = gens["item_id"].tolist()
    return coverage(item_ids, [i for i, f in zip(ids, failed, strict=True) if not f],
                    [i for i, f in zip(ids, failed, strict=True) if f], [e for e, f in zip(errors, failed, strict=True) if f])


BENCHMARK = Vague()
