"""V-FLUTE (Saakyan et al., NAACL 2025): explainable visual entailment over figurative meaning.

Read top to bottom::

    items  = BENCHMARK.load(folder)                        # official JSON/CSV, HF parquet, or the gated hub id
    reqs   = BENCHMARK.requests(items, "zero_shot")        # Table 8 instruction, claim in double quotes
    gens   = runner.run(model, reqs, store)                # beam 3, greedy, 256 new tokens (paper App. D)
    scored = BENCHMARK.score(BENCHMARK.predictions(items, gens), scorer="minilm")
    BENCHMARK.tables(scored)                               # Table 4 row, per-dataset F1, F1@t curve

Settings: ``zero_shot``; ``hypothesis_only`` (a white square instead of the image, the −Image
ablation); ``scene_graph`` (compositional CoT: a scene graph first, then the answer, two steps —
use ``run``/``evaluate``); ``few_shot`` (``k`` seeded training examples, rule in
:mod:`.prompts`). Parsing is the official extraction (:mod:`.parse`); metrics are the
official F1@ExplanationScore (:mod:`.score`) with pluggable scorers
(:mod:`vlamb_nb.scorers.explanation`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import vlamb_nb.benchmarks.vflute.score as S
from vlamb_nb.benchmarks.base import Benchmark
from vlamb_nb.benchmarks.vflute.data import HUB_ID, item_image, load_items, write_sample
from vlamb_nb.benchmarks.vflute.parse import parse_output
from vlamb_nb.benchmarks.vflute.prompts import (
    PAPER_DECODING,
    SEEDED_RELEASE_MATCH,
    WHITE_SIZE,
    assigned_prompt,
    choose_shots,
    fill_claim,
    sg_first_prompt,
    sg_second_prompt,
    target_text,
    white_image,
)
from vlamb_nb.errors import DataError, SettingError
from vlamb_nb.meta import Deviation
from vlamb_nb.models.base import (
    IMAGE_SLOT,
    DecodingParams,
    ModelInfo,
    Request,
    assistant_message,
    user_message,
)
from vlamb_nb.reference import Finding


class VFlute(Benchmark):
    name = "vflute"
    paper = "Saakyan et al., Understanding Figurative Meaning through Explainable Visual Entailment (NAACL 2025)"
    settings = ("zero_shot", "hypothesis_only", "scene_graph", "few_shot")
    default_setting = "zero_shot"
    score_options = ("scorer",)

    # -- load --------------------------------------------------------------------------------------
    def load(self, source: str | os.PathLike | None = None, *, split: str = "test",
             image_root: str | None = None, token_env: str = "HF_TOKEN", **kwargs: Any):
        """Items from a folder/file in the official formats or the gated hub dataset (default ``HUB_ID``)."""
        if kwargs:
            raise SettingError(f"unknown V-FLUTE loader option(s): {', '.join(kwargs)}")
        return load_items(HUB_ID if source is None else source, split=split, image_root=image_root,
                          token_env=token_env)

    # -- ask ---------------------------------------------------------------------------------------
    @staticmethod
    def instruction(row: Any, prompt_source: str = "released") -> str:
        """The instruction template: the released one (``prompt`` column) or the official seeded draw."""
        if prompt_source not in ("released", "seeded"):
            raise SettingError("prompt_source must be 'released' or 'seeded'")
        p = row.get("prompt")
        if prompt_source == "released" and isinstance(p, str) and p:
            return p
        return assigned_prompt(row["split"], int(row["index"]))

    @staticmethod
    def prompt_origin(row: Any, prompt_source: str = "released") -> str:
        """``"released"`` when the item's instruction is the one in the official files, else ``"seeded"``."""
        p = row.get("prompt")
        origin = row.get("prompt_origin")
        if prompt_source == "released" and isinstance(p, str) and p and origin != "seeded":
            return "released"
        return "seeded"

    def seeded_prompt_count(self, items, prompt_source: str = "released") -> int:
        """How many items get a re-drawn instruction instead of the released one (a deviation when > 0)."""
        return int(sum(self.prompt_origin(r, prompt_source) == "seeded" for _, r in items.iterrows()))

    def requests(self, items, setting: str, *, prompt_source: str = "released", k: int = 5, train=None,
                 shot_seed: int = 42, params: DecodingParams | None = None, **kwargs: Any) -> list[Request]:
        """One request per item (``scene_graph``: the first, scene-graph step)."""
        if kwargs:
            raise SettingError(f"unknown V-FLUTE request option(s): {', '.join(kwargs)}")
        setting = self.check_setting(setting)
        params = params or PAPER_DECODING
        shots = self._shot_table(train, items, k, shot_seed) if setting == "few_shot" else None
        out = []
        for _, row in items.iterrows():
            filled = fill_claim(self.instruction(row, prompt_source), row["claim"])
            meta = {"item_id": row["id"], "dataset": row["dataset"],
                    "prompt_origin": self.prompt_origin(row, prompt_source)}
            if setting == "scene_graph":
                out.append(Request(id=f"{row['id']}::sg", messages=[user_message(IMAGE_SLOT, sg_first_prompt(filled))],
                                   images=[item_image(row)], params=params, benchmark=self.name, setting=setting,
                                   meta={**meta, "step": "scene_graph", "question": filled}))
                continue
            image = white_image() if setting == "hypothesis_only" else item_image(row)
            messages, images = [], []
            if shots is not None:
                for shot in shots[row["id"]]:
                    messages += [user_message(IMAGE_SLOT, fill_claim(self.instruction(shot, prompt_source),
                                                                     shot["claim"])),
                                 assistant_message(target_text(shot["explanation"], shot["label"]))]
                    images.append(item_image(shot))
                meta["shots"] = [s["id"] for s in shots[row["id"]]]
            messages.append(user_message(IMAGE_SLOT, filled))
            images.append(image)
            out.append(Request(id=str(row["id"]), messages=messages, images=images, params=params,
                               benchmark=self.name, setting=setting, meta=meta))
        return out

    def _shot_table(self, train, items, k: int, seed: int) -> dict[str, list[Any]]:
        if train is None:
            raise SettingError("few_shot needs train= (the training split: a DataFrame or a folder/file to load)")
        if not hasattr(train, "iterrows"):
            train = self.load(train, split="train")
        by_id = {r["id"]: r for _, r in train.iterrows()}
        return {iid: [by_id[s] for s in choose_shots(iid, list(by_id), k, seed)] for iid in items["id"]}

    def run(self, model, items, setting: str | None = None, *, store: str | os.PathLike | None = None,
            limit: int | None = None, batch_size: int = 8, progress: bool = True, **opts: Any):
        """Generate for a setting; ``scene_graph`` runs its two steps (both cached in the same store)."""
        import pandas as pd

        from vlamb_nb import runner

        setting = self.check_setting(setting or self.default_setting)
        items = self.first_items(items, limit)
        meta = self.run_meta(model.info, setting, items=items)
        reqs = self.requests(items, setting, **opts)
        gens = runner.run(model, reqs, store, batch_size=batch_size, progress=progress, run_meta=meta,
                          desc=f"vflute {setting}" + (" (scene graphs)" if setting == "scene_graph" else ""))
        if setting != "scene_graph":
            return gens
        graphs = dict(zip(gens["request_id"], zip(gens["text"], gens["error"], strict=True), strict=True))
        second, failed = [], []
        for r in reqs:
            text, err = graphs[r.id]
            iid = r.meta["item_id"]
            if err:
                failed.append({"request_id": f"{iid}::answer", "error": f"scene graph step failed: {err}",
                               "setting": setting, "benchmark": self.name})
                continue
            second.append(Request(id=f"{iid}::answer", messages=[user_message(IMAGE_SLOT, sg_second_prompt(
                text or "", r.meta["question"]))], images=list(r.images), params=r.params, benchmark=self.name,
                setting=setting, meta={"item_id": iid, "step": "answer"}))
        answers = runner.run(model, second, store, batch_size=batch_size, progress=progress, run_meta=meta,
                             desc="vflute scene_graph (answers)")
        out = pd.concat([answers, pd.DataFrame(failed, columns=answers.columns)], ignore_index=True) \
            if failed else answers
        sg_text = {rid.split("::")[0]: t for rid, (t, _) in graphs.items()}
        out["scene_graph"] = out["request_id"].str.split("::").str[0].map(sg_text)
        return out

    def run_deviations(self, model, setting: str, scored, options: dict[str, Any]) -> list[Deviation]:
        """The scorer actually used, the items asked with a seeded (not released) prompt, and the decoding."""
        used = scored.drop_duplicates("id") if "id" in scored.columns else scored
        devs = self.deviations(model.info, setting, scored.attrs.get("scorer"),
                               seeded_prompts=self.seeded_prompt_count(used, options.get("prompt_source", "released")))
        params = options.get("params")
        if params is not None and params != PAPER_DECODING:
            devs.append(Deviation("decoding", "beam 3, greedy, 256 new tokens, seed 42",
                                  f"num_beams={params.num_beams}, max_new_tokens={params.max_new_tokens}, "
                                  f"do_sample={params.do_sample}", "all"))
        return devs

    # -- parse and score ---------------------------------------------------------------------------
    def parse(self, text: str, item: Any) -> dict[str, Any]:
        """The official extraction; scene-graph answers get the official SG normalisation."""
        return parse_output(text, scene_graph=item.get("setting") == "scene_graph")

    def predictions(self, items, generations, *, id_column: str = "id"):
        """Join and parse; a failed generation parses as unparsed (counted wrong) with an empty explanation."""
        preds = super().predictions(items, generations, id_column=id_column)
        missing = preds["id"].isna()
        if missing.any():
            raise DataError(f"{int(missing.sum())} generation(s) name items that are not in the data, e.g. "
                            f"{preds.loc[missing, 'item_id'].iloc[0]!r}")
        if "label_pred" not in preds.columns:
            preds["label_pred"] = None
        preds["label_pred"] = preds["label_pred"].astype(object).where(preds["label_pred"].notna(), None)
        if "explanation_pred" not in preds.columns:
            preds["explanation_pred"] = ""
        preds["explanation_pred"] = preds["explanation_pred"].fillna("")
        return preds

    def score(self, predictions, *, scorer: Any = "auto"):
        """Gold vs parsed labels (unparsed → wrong) and the ExplanationScore of every explanation."""
        return S.score_predictions(predictions, scorer=scorer)

    # -- report ------------------------------------------------------------------------------------
    def tables(self, scored, *, model: str = "ours", ci: bool = False, n_resamples: int = 2000) -> dict[str, Any]:
        """Table 4 row (F1@0/53/60 ×100), the per-dataset breakdown (Table 7 layout), the F1@t curve, Fig. 6 drops."""
        return S.tables(scored, model=model, ci=ci, n_resamples=n_resamples)

    def comparison_rows(self, scored, *, row: str, table: str = "Table 4"):
        """Our F1@0/53/60 in the reference layout (``table,row,column,value``) for ``reference.compare``."""
        import pandas as pd

        t4 = self.tables(scored)["Table 4"]
        names = {"F1@0": "F1@0", "F1@53": "F1@53", "F1@60": "F1@60"}
        return pd.DataFrame([{"table": table, "row": row, "column": names[c], "value": float(t4.iloc[0][c])}
                             for c in names])

    def deviations(self, model: ModelInfo, setting: str, scorer: dict[str, Any] | None = None, *,
                   seeded_prompts: int = 0) -> list[Deviation]:
        """Every way this run differs from the paper; ``seeded_prompts``: items with a re-drawn instruction."""
        out = super().deviations(model, setting)
        if seeded_prompts:
            hit, total = SEEDED_RELEASE_MATCH
            out.append(Deviation("instruction assignment", "the released per-instance instruction (Table 8 pool)",
                                 f"{seeded_prompts} item(s) re-drawn with the official random.seed(42) procedure, "
                                 f"which matches only {hit} of the {total} released test instructions",
                                 "all"))
        if scorer and scorer.get("substitute"):
            out.append(Deviation("explanation score", "mean of BERTScore-F1 (deberta-xlarge-mnli) and BLEURT-20",
                                 scorer["description"], "Table 4 F1@53/F1@60, per-dataset F1@t"))
        if scorer and scorer.get("name") == "none":
            out.append(Deviation("explanation score", "ExplanationScore thresholds", "none (label-only F1)",
                                 "Table 4 F1@53/F1@60"))
        if setting == "few_shot":
            out.append(Deviation("few-shot examples", "not described", "k seeded training examples per item "
                                 "(random.Random(f'{seed}:{item id}'))", "Table 4 5-shot rows"))
        if setting == "hypothesis_only":
            out.append(Deviation("-Image ablation", "fine-tuned and evaluated on white.png (size not given)",
                                 f"evaluation with a {WHITE_SIZE[0]}x{WHITE_SIZE[1]} white square", "Table 4"))
        return out

    # -- CLI hooks ---------------------------------------------------------------------------------
    def data_stats(self, items) -> dict[str, Any]:
        import vlamb_nb.benchmarks.vflute.data as vd

        counts = vd.split_counts(items)
        return {"n": int(len(items)), "by_label": {k: int(v) for k, v in items["label"].value_counts().items()},
                "by_dataset": {k: int(v) for k, v in vd.dataset_counts(items).items()},
                "by_source_phenomenon_label": {f"{s}/{p}": {c: int(counts.loc[(s, p), c]) for c in counts.columns}
                                               for s, p in counts.index},
                "mean_chars": vd.length_table(items).to_dict(orient="index"),
                "distinct_prompts": int(items["prompt"].nunique()),
                "prompts_redrawn": self.seeded_prompt_count(items)}

    def score_file(self, predictions: str | os.PathLike, *, source: str | os.PathLike | None = None,
                   **options: Any) -> dict[str, Any]:
        from vlamb_nb.benchmarks.vflute.score import score_predictions_file

        return score_predictions_file(self, predictions, source=source, **options)

    def headline(self, runs: dict[str, Any], *, n_resamples: int = 2000, seed: int = 0, **options: Any) -> list[Any]:
        """The report card's rows: F1@0 and F1@60 among Table 4's rows."""
        from vlamb_nb.benchmarks.vflute.score import headline

        return headline(runs, n_resamples=n_resamples, seed=seed, **options)

    def reference_check(self) -> list[Finding]:
        from vlamb_nb.benchmarks.vflute.audit import reference_findings

        return reference_findings()

    def make_sample(self, directory: str | os.PathLike, n: int = 16, seed: int = 0) -> Path:
        """A generated test split (+ a small train split for few-shot) in the official JSON/CSV format with images."""
        return write_sample(directory, n, seed)


BENCHMARK = VFlute()
