"""RACQUET (Testoni, Plank & Fernández, EMNLP 2025): referentially ambiguous image questions.

There is no gold answer: a response is classified by how it handles the ambiguity.
RACQUET-GENERAL (500 COCO questions) is classified by an LLM judge into CLASS A Explicit /
B Implicit / C High Risk; RACQUET-BIAS (240 DALL-E 3 questions "What is the {adjective}
person wearing?") is labelled by hand as Explicit / Stereotypical / Anti-stereotypical.

::

    items  = BENCHMARK.load(source)                        # GENERAL and/or BIAS rows, ids "general-0", "bias-1"
    gens   = runner.run(vlm, BENCHMARK.requests(items, "direct"), "vlm.jsonl")
    preds  = BENCHMARK.predictions(items, gens)            # one row per response
    judged = BENCHMARK.judge(judge_model, preds, store="judge.jsonl")   # A/B/C (or YES/NO for CoT)
    shares = class_shares(BENCHMARK.score(judged))         # per model x setting, cluster-bootstrap CIs

Settings: ``direct`` (the question alone), ``clarify`` and ``cot`` (the paper's suffixes),
``sampling`` (n seeded samples per item, Table 2) and ``control`` (the unambiguous
"What is the person wearing?" once per image). Data handling lives in :mod:`racquet_data`,
labels and metrics in :mod:`racquet_metrics`, Table 1 in :mod:`racquet_saliency`, the audit
in :mod:`racquet_reference`; their public names are re-exported here.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from vlamb_nb.benchmarks import racquet_prompts as P
from vlamb_nb.benchmarks.base import Benchmark
from vlamb_nb.benchmarks.racquet_data import (
    BIAS_CATEGORY_IDS,
    BIAS_LABELS,
    BIAS_QUESTION,
    CLASSES,
    COCO_SYNONYMS,
    COLOR_WORD,
    FIELDS,
    FILES,
    PEOPLE_TERMS,
    PROPERTY_WORDS,
    STEREOTYPE_TARGET,
    bias_category,
    bias_fields,
    coco_category,
    fetch_images,
    load_coco,
    read_boxes_file,
    read_jsonl,
    resolve_image,
    subject_of,
    subject_type,
)
from vlamb_nb.benchmarks.racquet_data import _url_key as _url_key
from vlamb_nb.benchmarks.racquet_metrics import (
    agreement_with_labels,
    bias_shares,
    class_shares,
    judge_spec,
    mention_rate,
    normalize_label,
    stereotype_ratio,
)
from vlamb_nb.errors import DataError, ImageError, NotAvailableError, SettingError
from vlamb_nb.meta import Deviation
from vlamb_nb.models.base import IMAGE_SLOT, DecodingParams, ModelInfo, Request, user_message

__all__ = [
    "BENCHMARK", "BIAS_CATEGORY_IDS", "BIAS_LABELS", "BIAS_QUESTION", "CLASSES", "COCO_SYNONYMS", "COLOR_WORD",
    "FIELDS", "FILES", "PEOPLE_TERMS", "PROPERTY_WORDS", "STEREOTYPE_TARGET", "Racquet", "agreement_with_labels",
    "bias_category", "bias_fields", "bias_shares", "class_shares", "coco_category", "dataset_frame", "fetch_images",
    "judge_conditions", "judge_spec", "load_coco", "mention_rate", "normalize_label", "notebook_data", "read_boxes_file",
    "read_jsonl", "records", "resolve_image", "run_conditions", "saliency_analysis", "score_predictions_file",
    "share_figure", "stereotype_ratio", "subject_of", "subject_type", "table1_frame", "table2_frame", "text_values",
]


# -- the benchmark -----------------------------------------------------------------------------------
class Racquet(Benchmark):
    name = "racquet"
    paper = "Testoni, Plank & Fernández (EMNLP 2025)"
    settings = ("direct", "clarify", "cot", "sampling", "control")
    default_setting = "direct"

    # -- load -----------------------------------------------------------------------------------------
    def load(self, source: str | os.PathLike | None = None, *, subset: str = "both",
             images: str | os.PathLike | None = None, coco: str | os.PathLike | list | None = None,
             boxes: str | os.PathLike | None = None, **kwargs: Any):
        """Released JSONL rows (``subset``: general, bias or both), with local images, COCO join and boxes.

        ``source`` is the release folder or one of its files; None uses the release beside the
        checkout. ``images`` is a folder of images named as :class:`~vlamb_nb.images.ImageCache`
        names URLs (default: ``<source>/images`` when present). ``coco`` is one or more COCO
        ``instances_*.json`` (default: any in the source folder); ``boxes`` a candidate-box file.
        """
        import pandas as pd

        if kwargs:
            raise SettingError(f"unknown racquet load option(s): {sorted(kwargs)}")
        if subset not in ("general", "bias", "both"):
            raise SettingError(f"subset must be general, bias or both, got {subset!r}")
        folder, files = self._files(source, subset)
        rows: list[dict[str, Any]] = []
        for sub, path in files:
            part = read_jsonl(path, sub)
            for r in part:
                r.update(bias_fields(r) if sub == "bias" else {"category": None, "adjective": None,
                                                                "stereotype_target": None})
                r["subject"] = "person" if sub == "bias" else subject_of(r["question"])
                r["subject_type"] = subject_type(r["subject"])
            rows.extend(part)
        img_dir = Path(images) if images is not None else (folder / "images" if folder and (folder / "images").is_dir()
                                                            else None)
        if coco is None and folder is not None:
            found = sorted(folder.glob("instances_*.json"))
            coco = found or None
        cocoidx = load_coco(coco) if coco else None
        user_boxes = read_boxes_file(boxes) if boxes else {}
        for r in rows:
            rec = cocoidx["by_url"].get(_url_key(r["image_url"])) if cocoidx and r["subset"] == "general" else None
            r["coco_id"] = int(rec["id"]) if rec else None
            r["coco_url"] = rec.get("coco_url") if rec else None
            r["width"] = float(rec["width"]) if rec and "width" in rec else None
            r["height"] = float(rec["height"]) if rec and "height" in rec else None
            r["image"] = resolve_image(r["image_url"], img_dir, rec.get("file_name") if rec else None)
            if r["image"] is None and r["coco_url"]:
                r["image"] = resolve_image(r["coco_url"], img_dir)
            cands = None
            if rec is not None:
                cat = coco_category(r["subject"], cocoidx["categories"])  # type: ignore[index]
                if cat is not None:
                    cands = [b for c, b in cocoidx["boxes"].get(int(rec["id"]), []) if c == cat]  # type: ignore[index]
                r["coco_category"] = cat
            else:
                r["coco_category"] = None
            if r["id"] in user_boxes:
                cands = user_boxes[r["id"]]
            r["candidate_boxes"] = cands
        df = pd.DataFrame(rows)
        df.attrs["source"] = str(folder or files[0][1])
        return df

    def _files(self, source: str | os.PathLike | None, subset: str) -> tuple[Path | None, list[tuple[str, Path]]]:
        if source is None:
            from vlamb_nb.notebook import shared_data_dir

            base = shared_data_dir()
            if base is None or not (base / "racquet").is_dir():
                raise NotAvailableError("no RACQUET release found beside the checkout; pass source= (the folder "
                                        "with racquet_general.jsonl / racquet_bias.jsonl) or use make_sample()")
            source = base / "racquet"
        src = Path(source)
        subsets = ("general", "bias") if subset == "both" else (subset,)
        if src.is_file():
            sub = "bias" if "bias" in src.name.lower() else "general"
            if subset not in ("both", sub):
                raise SettingError(f"{src.name} holds RACQUET-{sub.upper()}, not {subset}")
            return src.parent, [(sub, src)]
        if not src.is_dir():
            raise DataError("no such file or folder", source=str(src))
        files = [(s, src / FILES[s]) for s in subsets if (src / FILES[s]).is_file()]
        if not files:
            raise DataError(f"none of {[FILES[s] for s in subsets]} found", source=str(src))
        return src, files

    # -- statistics of the release -------------------------------------------------------------------
    def data_stats(self, items) -> dict[str, Any]:
        """Counts, unique image URLs vs contiguous image blocks, question length, colour share, BIAS categories."""
        out: dict[str, Any] = {}
        for sub, g in items.groupby("subset", sort=False):
            lengths = g["question"].str.split().str.len()
            urls = g["image_url"].tolist()
            blocks = 1 + sum(1 for a, b in zip(urls, urls[1:], strict=False) if a != b) if urls else 0
            s: dict[str, Any] = {
                "rows": int(len(g)), "unique_image_urls": int(g["image_url"].nunique()), "image_blocks": int(blocks),
                "first_questions": int((g["question_idx"] == 1).sum()),
                "questions_per_image_block": round(len(g) / blocks, 4) if blocks else None,
                "question_length_mean": round(float(lengths.mean()), 4),
                "question_length_sd": round(float(lengths.std(ddof=1)), 4),
                "color_questions": int(g["question"].str.contains(COLOR_WORD).sum()),
                "color_share": round(100.0 * float(g["question"].str.contains(COLOR_WORD).mean()), 2),
                "duplicate_image_question_pairs": int(g.duplicated(["image_url", "question"]).sum()),
                "subject_types": {k: int(v) for k, v in g["subject_type"].value_counts().items()},
                "images_with_local_file": int(g["image"].notna().sum()),
                "coco_joined": int(g["coco_id"].notna().sum()),
            }
            if sub == "bias":
                s["rows_per_category"] = {k: int(v) for k, v in g["category"].value_counts().items()}
                s["images_per_category"] = {k: int(v) for k, v in
                                            g.groupby("category")["image_url"].nunique().items()}
                s["id_range_per_category"] = {k: [int(v.min()), int(v.max())] for k, v in
                                              g.groupby("category")["source_id"]}
                s["adjectives_per_category"] = {k: list(dict.fromkeys(v)) for k, v in
                                                g.groupby("category")["adjective"]}
            out[str(sub)] = s
        return out

    # -- requests -------------------------------------------------------------------------------------
    def prompt(self, question: str, setting: str) -> str:
        """The VLM text for a question (the paper's suffixes follow the question after one space)."""
        if setting == "clarify":
            return f"{question} {P.CLARIFY_SUFFIX}"
        if setting == "cot":
            return f"{question} {P.COT_SUFFIX}"
        if setting == "control":
            return P.CONTROL_QUESTION
        return question

    def requests(self, items, setting: str, *, n_samples: int = 10, seed: int = 0, temperature: float = 1.0,
                 top_p: float = 0.9, max_new_tokens: int | None = None, **kwargs: Any) -> list[Request]:
        """Requests for ``setting``; greedy decoding (temperature 0) except ``sampling``.

        ``sampling`` makes ``n_samples`` requests per item with seeds ``seed .. seed+n-1`` (the
        paper's nucleus settings are not reported: ``top_p``/``temperature`` are parameters).
        """
        from vlamb_nb.images import load_image

        self.check_setting(setting)
        if kwargs:
            raise SettingError(f"unknown racquet request option(s): {sorted(kwargs)}")
        max_tok = max_new_tokens or (512 if setting == "cot" else 256)
        rows = items.to_dict(orient="records")
        if setting == "control":  # one unambiguous question per image
            first: dict[str, dict[str, Any]] = {}
            for r in rows:
                first.setdefault(r["image_url"], r)
            rows = list(first.values())
        out: list[Request] = []
        checked: set[str] = set()
        for r in rows:
            img = r.get("image")
            if not isinstance(img, str) or not img:
                raise ImageError(f"racquet item {r['id']}: no local image for {r['image_url']}; pass images=FOLDER "
                                 "to load() (files named as ImageCache names URLs, or COCO file names)")
            if img not in checked:  # decode once up front: a corrupt file fails here, naming the item
                try:
                    load_image(img)
                except ImageError as e:
                    raise ImageError(f"racquet item {r['id']}: {e}") from None
                checked.add(img)
            # the request carries the path: backends decode it, and 10 samples share no pixel copies
            msgs = [user_message(IMAGE_SLOT, self.prompt(r["question"], setting))]
            meta = {"item_id": r["id"], "subset": r["subset"], "image_url": r["image_url"]}
            if setting == "sampling":
                for k in range(n_samples):
                    params = DecodingParams(max_new_tokens=max_tok, do_sample=True, temperature=temperature,
                                            top_p=top_p, seed=seed + k)
                    out.append(Request(id=f"{r['id']}::sample-{k}", messages=msgs, images=[img], params=params,
                                       benchmark=self.name, setting=setting, meta={**meta, "sample": k}))
            else:
                out.append(Request(id=f"{r['id']}::{setting}", messages=msgs, images=[img],
                                   params=DecodingParams(max_new_tokens=max_tok), benchmark=self.name,
                                   setting=setting, meta=meta))
        return out

    def run(self, model, items, setting: str, *, store=None, limit: int | None = None, batch_size: int = 8,
            progress: bool = True, images: str | os.PathLike | None = None, subset: str | None = None, **opts: Any):
        """Generate for ``setting`` and return the runner frame with ``model`` and ``item_id`` columns.

        ``images`` (a folder) re-resolves the items' images, so ``vlamb-nb run racquet -o images=DIR``
        works on the read-only release; ``subset`` restricts to general or bias.
        """
        from vlamb_nb import runner

        setting = self.check_setting(setting)
        if subset is not None:
            items = items[items["subset"] == subset]
        if images is not None:
            items = items.copy()
            folder = Path(images)
            items["image"] = [resolve_image(u, folder) or (resolve_image(c, folder) if isinstance(c, str) else None)
                              for u, c in zip(items["image_url"], items["coco_url"], strict=True)]
        reqs = self.requests(items, setting, **opts)
        gens = runner.run(model, reqs, store, batch_size=batch_size, limit=limit, progress=progress,
                          run_meta=self.run_meta(model.info, setting, seed=opts.get("seed")))
        gens["item_id"] = gens["request_id"].astype(str).str.split("::").str[0]
        gens["model"] = model.info.model_id
        return gens

    def evaluate(self, model, items, setting: str | None = None, *, store=None, batch_size: int = 8,
                 limit: int | None = None, progress: bool = True, judge=None, judge_store=None, **kwargs: Any):
        """conditions → responses → (with ``judge``, a model) A/B/C judge → scored rows.

        Without a judge the responses come back unlabelled: RACQUET has no gold answer to score against.
        """
        setting = self.check_setting(setting or self.default_setting)
        gens = self.run(model, items, setting, store=store, limit=limit, batch_size=batch_size, progress=progress,
                        **kwargs)
        preds = self.predictions(items, gens)
        preds["model"] = model.info.model_id
        if judge is not None:
            import pandas as pd

            judged = self.judge(judge, preds, store=judge_store, batch_size=batch_size, progress=progress)
            by_hand = preds[preds["subset"] != "general"]  # BIAS is labelled by hand: kept, unlabelled
            preds = pd.concat([judged, by_hand], ignore_index=True) if len(by_hand) else judged
        return self.score(preds)

    # -- parse / score --------------------------------------------------------------------------------
    def parse(self, text: str, item: Any) -> dict[str, Any]:
        """A VLM response has no answer to extract; an empty one is invalid (it cannot be judged)."""
        t = (text or "").strip()
        return {"response": t, "valid": bool(t), "parse_error": None if t else "empty response"}

    def score(self, predictions):
        """Canonical labels from judge output (``judge_label``) or given labels (``label``): A/B/C or BIAS names."""
        df = predictions.copy()
        src = "judge_label" if "judge_label" in df.columns else ("label" if "label" in df.columns else None)
        if src is None:
            df["label"] = None
        else:
            df["label"] = [normalize_label(v, sub) for v, sub in
                           zip(df[src], df.get("subset", ["general"] * len(df)), strict=True)]
        df["labelled"] = df["label"].notna()
        df["class_name"] = df["label"].map(lambda v: CLASSES.get(v, v) if isinstance(v, str) else None)
        return df

    def tables(self, scored) -> dict[str, Any]:
        """Class shares (Fig. 3/4, Table 2) and BIAS shares (Fig. 7) with CIs, from labelled responses."""
        out: dict[str, Any] = {}
        gen = scored[scored["subset"] == "general"] if "subset" in scored else scored
        if len(gen):
            out["class_shares"] = class_shares(gen)
        if "subset" in scored and (scored["subset"] == "bias").any():
            out["bias_shares"] = bias_shares(scored[scored["subset"] == "bias"])
            out["bias_ratio"] = stereotype_ratio(scored[scored["subset"] == "bias"])
        return out

    # -- judging --------------------------------------------------------------------------------------
    def judge(self, model, predictions, *, kind: str = "abc", store=None, batch_size: int = 8,
              progress: bool = True, max_new_tokens: int | None = None, subsets: tuple[str, ...] = ("general",)):
        """Run the paper's judge over responses: ``abc`` (App. C) or ``cot`` (YES/NO, App. G.3).

        The judge sees the question as the model saw it (with any suffix) and the response,
        never the image. Unparsed outputs stay as rows with ``judge_valid=False``. Only
        GENERAL rows are judged (and returned) by default: the paper labels RACQUET-BIAS by hand
        (:mod:`vlamb_nb.annotate`); a judge's CLASS A on BIAS still means Explicit.
        """
        from vlamb_nb import judge as J

        spec = judge_spec(kind, max_new_tokens=max_new_tokens)
        df = predictions.reset_index(drop=True).copy()
        if "subset" in df.columns:
            df = df[df["subset"].isin(subsets)].reset_index(drop=True)
        if "response" not in df.columns:
            df["response"] = df["text"].fillna("").astype(str).str.strip()
        qcol = "question_asked" if "question_asked" in df.columns else None
        if qcol is None:
            df["question_asked"] = [self.prompt(q, s) if s in self.settings else q
                                    for q, s in zip(df["question"], df.get("setting", ["direct"] * len(df)),
                                                    strict=True)]
        ok = df["response"].map(lambda v: isinstance(v, str) and bool(v.strip())).astype(bool)
        if "error" in df.columns:  # a failed generation has no response to judge
            ok &= ~df["error"].map(lambda v: isinstance(v, str) and bool(v))
        judged = J.run_judge(model, spec, df[ok], id_column="request_id",
                             field_map={"question": "question_asked", "response": "response"}, store=store,
                             batch_size=batch_size, progress=progress)
        empty = df[~ok].copy()
        if len(empty):  # no response to judge (empty, or generation failed): counted as unparsed, never dropped
            for c, v in (("judge_model", model.info.model_id), ("judge_text", ""), ("judge_error", None),
                         ("judge_label", None), ("judge_valid", False)):
                empty[c] = v
            errors = empty["error"].tolist() if "error" in empty else [None] * len(empty)
            empty["judge_parse_error"] = ["no response: generation failed" if isinstance(e, str) and e
                                          else "no response: empty" for e in errors]
        import pandas as pd

        return pd.concat([judged, empty], ignore_index=True) if len(empty) else judged

    def deviations(self, model: ModelInfo, setting: str) -> list[Deviation]:
        out = super().deviations(model, setting)
        if setting == "sampling":
            out.append(Deviation("sampling", "nucleus sampling, top-p/temperature not reported",
                                 "top_p and temperature as run parameters (default 0.9 / 1.0), seeded", "Table 2"))
        return out

    # -- CLI hooks ------------------------------------------------------------------------------------
    def score_file(self, predictions: str | os.PathLike, *, source: str | os.PathLike | None = None,
                   **options: Any) -> dict[str, Any]:
        """Class shares from a labelled predictions file (CSV/JSONL with ``label`` or ``judge_text``)."""
        return score_predictions_file(self, predictions, source=source, **options)

    def reference_check(self) -> list:
        from vlamb_nb.benchmarks.racquet_reference import reference_check

        return reference_check(self)

    def make_sample(self, directory: str | os.PathLike, n: int = 8, seed: int = 0) -> Path:
        from vlamb_nb.benchmarks.racquet_sample import make_sample

        return make_sample(directory, n=n, seed=seed)

    def summary(self, scored) -> dict[str, Any]:
        out: dict[str, Any] = {"n": int(len(scored))}
        if "label" in scored.columns:
            lab = scored["label"]
            out["labelled"] = int(lab.notna().sum())
            for k in ("A", "B", "C"):
                out[f"share_{k}"] = round(100.0 * float((lab == k).mean()), 2) if len(lab) else None
        return out


def score_predictions_file(bench: Racquet, path: str | os.PathLike, *, source: str | os.PathLike | None = None,
                           n_resamples: int = 2000, seed: int = 0, model: str | None = None,
                           **options: Any) -> dict[str, Any]:
    """``vlamb-nb score racquet``: class shares (and BIAS shares/ratios) from a labelled file.

    Accepts a labels CSV/JSONL (``id``, ``label``; optional ``model``, ``setting``), a file with raw
    ``judge_text``, or the A/B/C judge's prediction store (``-o model=NAME`` names the evaluated model).
    """
    import pandas as pd

    from vlamb_nb import judge as J

    if options:
        raise SettingError(f"unknown racquet score option(s): {sorted(options)}")
    path = Path(path)
    if not path.is_file():
        raise DataError("no such predictions file", source=str(path))
    try:
        df = pd.read_json(path, lines=True) if path.suffix.lower() in (".jsonl", ".json") else pd.read_csv(path)
    except ValueError as e:
        raise DataError(f"cannot read predictions ({e})", source=str(path)) from None
    if "id" not in df.columns and "item_id" in df.columns:
        df["id"] = df["item_id"]
    if "id" not in df.columns and "request_id" in df.columns:
        df["id"] = df["request_id"].astype(str).str.split("::").str[0]
    if "model" in df.columns and df["model"].map(lambda v: isinstance(v, dict)).any():
        df = df.drop(columns=["model"])  # a store's model record describes the judge, not the evaluated model
    if model is not None:
        df["model"] = model
    if "id" not in df.columns:
        raise DataError("predictions need an 'id' (or 'item_id') column", source=str(path), field="id")
    df["id"] = df["id"].astype(str)
    if "label" not in df.columns and "judge_text" not in df.columns and "text" in df.columns \
            and "request_id" in df.columns:  # a judge prediction store: <item>::<setting>::judge-racquet-abc
        parts = df["request_id"].astype(str).str.split("::")
        if not parts.str[-1].eq("judge-racquet-abc").all():
            raise DataError("a store given to score must come from the racquet A/B/C judge", source=str(path),
                            field="request_id")
        df["judge_text"] = df["text"]
        df["setting"] = parts.str[1]
        if "judge_error" not in df.columns and "error" in df.columns:
            df["judge_error"] = df["error"]
    if "label" not in df.columns:
        if "judge_text" not in df.columns:
            raise DataError("predictions need a 'label' or a 'judge_text' column", source=str(path), field="label")
        spec = judge_spec("abc")
        errors = df["judge_error"].tolist() if "judge_error" in df.columns else None
        df["label"] = J.parse_outputs(spec, df["judge_text"].fillna("").tolist(), errors)["label"].to_numpy()
    if "subset" not in df.columns:
        df["subset"] = df["id"].map(lambda s: "bias" if s.startswith("bias-") else "general")
    for c, v in (("model", "model"), ("setting", "direct")):
        if c not in df.columns:
            df[c] = v
    if source is not None or "image_url" not in df.columns:
        try:
            items = bench.load(source)
            df = df.merge(items[["id", "image_url", "category"]], on="id", how="left", suffixes=("_pred", ""))
        except NotAvailableError:  # no release to join: each item is its own cluster
            df["image_url"] = df["id"]
    df["image_url"] = df["image_url"].fillna(df["id"])
    if "category" not in df.columns:
        df["category"] = None
    is_bias = df["subset"] == "bias"
    df.loc[is_bias, "category"] = [c if isinstance(c, str) else _category_of(i, path)
                                   for c, i in zip(df.loc[is_bias, "category"], df.loc[is_bias, "id"], strict=True)]
    for i, (v, s) in enumerate(zip(df["label"], df["subset"], strict=True)):
        try:
            normalize_label(v, s)
        except DataError as e:
            raise DataError(str(e), source=str(path), row=i + 1, field="label") from None
    scored = bench.score(df)
    out: dict[str, Any] = {"file": str(path), "rows": int(len(df)), "unlabelled": int(scored["label"].isna().sum())}
    gen = scored[scored["subset"] == "general"]
    if len(gen):
        out["class_shares"] = class_shares(gen, n_resamples=n_resamples, seed=seed).to_dict(orient="records")
    bias = scored[scored["subset"] == "bias"]
    if len(bias):
        out["bias_shares"] = bias_shares(bias, n_resamples=n_resamples, seed=seed).to_dict(orient="records")
        out["bias_ratio"] = stereotype_ratio(bias, n_resamples=n_resamples, seed=seed).to_dict(orient="records")
    return out


def _category_of(item_id: str, path: Path) -> str:
    m = re.fullmatch(r"bias-(\d+)", str(item_id))
    if m is None:
        raise DataError(f"BIAS id {item_id!r} is not 'bias-<number>'", source=str(path), field="id")
    return bias_category(int(m.group(1)))


BENCHMARK = Racquet()


# -- saliency analysis (Table 1), comparisons and figures ----------------------------------------------
def saliency_analysis(scored, grounder, *, by: str = "model", labels: tuple[str, ...] | None = ("B", "C"), seed: int = 0,
                      min_iou: float = 0.0, normalized: bool = False, progress: bool = True):
    """Table 1: ground each Implicit/High Risk response and test largest-or-centermost against chance.

    ``labels=None`` grounds every valid response (a demonstration population, not the paper's).
    Returns ``(per_response, table)``. Responses without candidate boxes or a local image are
    counted in ``table["skipped"]``; the grounder's choices are documented in :mod:`vlamb_nb.grounding`.
    """
    import pandas as pd

    from vlamb_nb.benchmarks.racquet_saliency import saliency_table
    from vlamb_nb.grounding import ground_rows
    from vlamb_nb.images import load_image

    valid = scored["valid"].fillna(False).astype(bool) if "valid" in scored else scored["label"].notna()
    df = scored[scored["label"].isin(labels)].copy() if labels is not None else scored[valid].copy()
    if "subset" in df:
        df = df[df["subset"] == "general"]
    usable = df["candidate_boxes"].map(lambda b: isinstance(b, list | tuple) and len(b) > 0) & df["image"].notna()
    skipped = df[~usable].groupby(by).size().to_dict() if len(df) else {}
    df = df[usable].reset_index(drop=True)
    if df.empty:
        return df, pd.DataFrame(columns=[by, "responses", "scored", "unmatched", "skipped"])
    sizes = {}
    for src in df["image"].unique():
        sizes[src] = load_image(src).size
    df["width"] = [w if isinstance(w, float) and w == w else sizes[s][0] for w, s in zip(df["width"], df["image"],
                                                                                       strict=True)]
    df["height"] = [h if isinstance(h, float) and h == h else sizes[s][1] for h, s in zip(df["height"], df["image"],
                                                                                         strict=True)]
    key = "request_id" if "request_id" in df.columns else "id"
    grounded = ground_rows(grounder, df, text_column="response", key_column=key, progress=progress)
    per, table = saliency_table(grounded, by=by, seed=seed, min_iou=min_iou, normalized=normalized)
    table["skipped"] = table[by].map(lambda k: int(skipped.get(k, 0)))
    return per, table


def table1_frame(table, *, by: str = "model", names: dict[str, str] | None = None):
    """Table 1 in the reference layout (``table,row,column,value``) for :func:`vlamb_nb.reference.compare`."""
    import pandas as pd

    rows = []
    for _, r in table.iterrows():
        col = (names or {}).get(r[by], r[by])
        for row in ("Responses", "Random"):
            if row in r and r[row] == r[row]:
                rows.append({"table": "Table 1", "row": row, "column": col, "value": round(float(r[row]), 1)})
    return pd.DataFrame(rows, columns=["table", "row", "column", "value"])


def table2_frame(shares, *, names: dict[str, str] | None = None, setting: str = "sampling"):
    """Table 2 (class shares of sampled outputs) in the reference layout; ``names`` maps model ids to paper columns."""
    import pandas as pd

    rows = []
    sub = shares[shares["setting"] == setting] if "setting" in shares else shares
    for _, r in sub[sub["label"].isin(["A", "B", "C"])].iterrows():
        rows.append({"table": "Table 2", "row": f"CLASS {r['label']}", "column": (names or {}).get(r["model"], r["model"]),
                     "value": round(float(r["share"]), 1), "ci_low": r["ci_low"], "ci_high": r["ci_high"]})
    return pd.DataFrame(rows, columns=["table", "row", "column", "value", "ci_low", "ci_high"])


def text_values():
    """The figure values and statements the paper gives only in its text (notes §6), and its kappas."""
    from vlamb_nb import reference

    ref = reference.load("racquet")
    keep = ~ref["table"].isin(["Table 1", "Table 2", "Dataset"])
    return ref.loc[keep, ["table", "row", "column", "value", "unit", "flag"]].reset_index(drop=True)


def dataset_frame(stats: dict[str, Any]):
    """Dataset statistics in the reference layout, for comparison with the paper's numbers."""
    import pandas as pd

    rows = []
    g, b = stats.get("general"), stats.get("bias")
    if g:
        rows += [("GENERAL", "pairs", g["rows"]), ("GENERAL", "unique images", g["image_blocks"]),
                 ("GENERAL", "questions per image", round(g["questions_per_image_block"], 2)),
                 ("GENERAL", "question length mean", round(g["question_length_mean"], 1)),
                 ("GENERAL", "question length SD", round(g["question_length_sd"], 2)),
                 ("GENERAL", "colour or attire questions", round(g["color_share"], 1))]
        n = g["rows"]
        for t, col in (("person", "subject person"), ("people", "subject other people terms"),
                       ("object", "subject objects")):
            rows.append(("GENERAL", col, round(100.0 * g["subject_types"].get(t, 0) / n)))
    if b:
        rows += [("BIAS", "pairs", b["rows"]), ("BIAS", "images", b["unique_image_urls"])]
        rows += [("BIAS", f"{c} pairs", b["rows_per_category"].get(c, 0)) for c in ("gender", "ethnicity", "disability")]
    if g and b:
        rows.append(("RACQUET", "pairs", g["rows"] + b["rows"]))
    return pd.DataFrame([{"table": "Dataset", "row": r, "column": c, "value": v} for r, c, v in rows])


def share_figure(shares, *, bar: tuple[str, ...] = ("model", "setting"), title: str | None = None,
                 labels: tuple[str, ...] = ("Explicit", "Implicit", "High Risk")):
    """Fig. 3/4/7-style horizontal stacked bars of class shares with each segment's CI."""
    from vlamb_nb.plots import stacked_bars

    df = shares.copy()
    cols = [c for c in bar if c in df.columns]
    df["group"] = df[cols].astype(str).agg(" / ".join, axis=1) if cols else "all"
    df["series"] = df["class_name"]
    df["estimate"] = df["share"]
    df = df[df["series"].isin(labels)]
    order = list(dict.fromkeys(df["group"]))[::-1]  # horizontal bars stack upwards: first group on top
    present = [x for x in labels if x in set(df["series"])]
    return stacked_bars(df, title=title, ylabel="% of responses", segment_order=present, bar_order=order,
                        horizontal=True)


# -- notebook helpers: whole steps, so the notebook only calls ---------------------------------------
def notebook_data(source: str | os.PathLike | None = None, *, sample_dir: str | os.PathLike | None = None,
                  n: int = 6, seed: int = 0, **load_options: Any) -> dict[str, Any]:
    """Items for the notebook: the release for statistics, and a pipeline set (with images) to run models on.

    With ``source`` None the statistics use the release beside the checkout when present and
    the pipeline a generated sample; with ``source`` given both use it.
    """
    import tempfile

    out: dict[str, Any] = {}
    if source is not None:
        items = BENCHMARK.load(source, **load_options)
        return {"release": items, "release_kind": "source", "pipeline": items, "pipeline_kind": "source"}
    try:
        out.update(release=BENCHMARK.load(None), release_kind="release")
    except NotAvailableError:
        out.update(release=None, release_kind="none")
    folder = Path(sample_dir) if sample_dir is not None else Path(tempfile.mkdtemp(prefix="racquet-sample-"))
    sample = BENCHMARK.load(BENCHMARK.make_sample(folder, n=n, seed=seed))
    if out["release"] is None:
        out.update(release=sample, release_kind="sample")
    out.update(pipeline=sample, pipeline_kind="sample")
    return out


def run_conditions(model, items, settings: tuple[str, ...] | list[str] = ("direct", "clarify", "cot"), *,
                   store_dir: str | os.PathLike | None = None, limit: int | None = None, progress: bool = True,
                   batch_size: int = 8, subset: str = "general", **request_options: Any):
    """Run every prompting condition on one subset; one predictions frame (``model``, ``setting``) for all.

    ``control`` asks the unambiguous question once per image of the subset.
    """
    import pandas as pd

    frames = []
    for s in settings:
        store = Path(store_dir) / f"{_slug(model.info.model_id)}-{subset}-{s}.jsonl" if store_dir else None
        part = items[items["subset"] == subset]
        gens = BENCHMARK.run(model, part, s, store=store, limit=limit, progress=progress, batch_size=batch_size,
                             **request_options)
        preds = BENCHMARK.predictions(items, gens)
        preds["model"] = model.info.model_id
        frames.append(preds)
    return pd.concat(frames, ignore_index=True)


def judge_conditions(judge_model, predictions, *, store_dir: str | os.PathLike | None = None, progress: bool = True,
                     max_new_tokens: int | None = None, batch_size: int = 8) -> dict[str, Any]:
    """A/B/C judge on every response and the YES/NO judge on CoT responses; scored frames."""
    def store(kind: str):
        return Path(store_dir) / f"judge-{_slug(judge_model.info.model_id)}-{kind}.jsonl" if store_dir else None

    judged = BENCHMARK.judge(judge_model, predictions, kind="abc", store=store("abc"), progress=progress,
                             max_new_tokens=max_new_tokens, batch_size=batch_size)
    out = {"scored": BENCHMARK.score(judged)}
    cot = predictions[predictions["setting"] == "cot"]
    if len(cot):
        out["cot_mentions"] = BENCHMARK.judge(judge_model, cot, kind="cot", store=store("cot"), progress=progress,
                                              max_new_tokens=max_new_tokens, batch_size=batch_size)
    return out


def records(frame) -> list[dict[str, Any]]:
    """Rows as JSON-safe dicts (NaN and inf become None) for ``vlamb_nb.notebook.record``."""
    import math

    def clean(v: Any) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            return None
        return v.item() if hasattr(v, "item") and not isinstance(v, str | bytes) else v

    return [{k: clean(v) for k, v in r.items()} for r in frame.to_dict(orient="records")]


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", s)
