"""The RACQUET :class:`~vlamb_nb.benchmarks.base.Benchmark`: load, requests, predictions, judge, score."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from vlamb_nb.benchmarks.base import Benchmark
from vlamb_nb.benchmarks.racquet import prompts as P
from vlamb_nb.benchmarks.racquet.data import (
    BIAS_LABELS,
    CLASSES,
    COLOR_WORD,
    FILES,
    bias_fields,
    coco_category,
    label_scheme,
    load_coco,
    normalize_label,
    read_boxes_file,
    read_jsonl,
    resolve_image,
    subject_of,
    subject_type,
    url_key,
)
from vlamb_nb.benchmarks.racquet.prompts import judge_spec
from vlamb_nb.benchmarks.racquet.score import (
    NOT_JUDGED,
    score_predictions_file,
    share_tables,
)
from vlamb_nb.errors import DataError, ImageError, NotAvailableError, SettingError
from vlamb_nb.meta import Deviation
from vlamb_nb.models.base import IMAGE_SLOT, DecodingParams, ModelInfo, Request, user_message


class Racquet(Benchmark):
    name = "racquet"
    paper = "Testoni, Plank & Fernández (EMNLP 2025)"
    settings = ("direct", "clarify", "cot", "sampling", "control")
    default_setting = "direct"
    score_options = ("judge", "judge_store", "judge_kind", "judge_max_new_tokens")

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
            rec = cocoidx["by_url"].get(url_key(r["image_url"])) if cocoidx and r["subset"] == "general" else None
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
        # the control setting reloads the BIAS images from here when the caller kept only GENERAL rows
        df.attrs["images"] = str(img_dir) if img_dir is not None else None
        return df

    def _files(self, source: str | os.PathLike | None, subset: str) -> tuple[Path | None, list[tuple[str, Path]]]:
        if source is None:
            from vlamb_nb.paths import shared_data_dir

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
    def control_items(self, items):
        """The items the control question is asked about: one BIAS row per distinct BIAS image (45 in the release).

        §5 pairs "What is the person wearing?" with the RACQUET-BIAS images, whose two people are
        equally salient by design; on GENERAL images the comparison with the adjective questions
        would not hold. BIAS rows missing from ``items`` (a GENERAL-only frame) are reloaded from
        the source the frame was loaded from, with the same image folder.
        """
        bias = items[items["subset"] == "bias"] if "subset" in items.columns else items.iloc[:0]
        if bias.empty:
            bias = self._bias_from_source(items)
        return bias.drop_duplicates("image_url", keep="first")

    def _bias_from_source(self, items):
        source = items.attrs.get("source")
        if not source:
            raise SettingError("the control setting asks about the RACQUET-BIAS images, but the items hold no BIAS "
                               "rows and do not say where they were loaded from; load with subset='both'")
        try:
            return self.load(source, subset="bias", images=items.attrs.get("images"))
        except DataError as e:
            raise DataError(f"the control setting needs the RACQUET-BIAS images: {e}") from None

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
        if setting == "control":  # the adjective-free question, once per BIAS image
            items = self.control_items(items)
        rows = items.to_dict(orient="records")
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

    def run(self, model, items, setting: str | None = None, *, store=None, limit: int | None = None,
            batch_size: int = 8, progress: bool = True, images: str | os.PathLike | None = None,
            subset: str | None = None, **opts: Any):
        """Generate for ``setting`` and return the runner frame with ``model`` and ``item_id`` columns.

        ``images`` (a folder) re-resolves the items' images, so ``vlamb-nb run racquet -o images=DIR``
        works on the read-only release; ``subset`` restricts to general or bias, except for ``control``,
        which always asks about the BIAS images (:meth:`control_items`); ``limit`` keeps the first items
        asked (every sample of an item is asked).
        """
        from vlamb_nb import runner

        setting = self.check_setting(setting or self.default_setting)
        if setting == "control":
            items = self.control_items(items)
        elif subset is not None:
            items = items[items["subset"] == subset]
        items = self.first_items(items, limit)
        if images is not None:
            items = items.copy()
            folder = Path(images)
            coco_urls = items["coco_url"] if "coco_url" in items.columns else [None] * len(items)
            items["image"] = [resolve_image(u, folder) or (resolve_image(c, folder) if isinstance(c, str) else None)
                              for u, c in zip(items["image_url"], coco_urls, strict=True)]
        reqs = self.requests(items, setting, **opts)
        gens = runner.run(model, reqs, store, batch_size=batch_size, progress=progress, desc=f"racquet {setting}",
                          run_meta=self.run_meta(model.info, setting, seed=opts.get("seed"), items=items))
        gens["item_id"] = gens["request_id"].astype(str).str.split("::").str[0]
        gens["model"] = model.info.model_id
        return gens

    # -- parse / score --------------------------------------------------------------------------------
    def predictions(self, items, generations, *, id_column: str = "id"):
        """Responses joined to their items; a control response describes its image, not an adjective question.

        Control requests are keyed by a BIAS row (one per image): when ``items`` lacks those rows
        they are reloaded from the source, so no response loses its subset (and its share group).
        """
        import pandas as pd

        ctrl = generations["setting"].eq("control") if "setting" in generations.columns else None
        if ctrl is not None and ctrl.any():
            ids = generations["request_id"].astype(str).str.split("::").str[0]
            if not ids[ctrl].isin(items[id_column]).all():
                bias = self._bias_from_source(items)
                items = pd.concat([items, bias[~bias[id_column].isin(items[id_column])]], ignore_index=True)
        out = super().predictions(items, generations, id_column=id_column)
        if ctrl is not None and ctrl.any():
            is_ctrl = out["setting"].eq("control")
            out.loc[is_ctrl, "question"] = P.CONTROL_QUESTION
            for c in ("adjective", "stereotype_target"):
                if c in out.columns:
                    out.loc[is_ctrl, c] = None
        return out

    def parse(self, text: str, item: Any) -> dict[str, Any]:
        """A VLM response has no answer to extract; an empty one is invalid (it cannot be judged)."""
        t = (text or "").strip()
        return {"response": t, "valid": bool(t), "parse_error": None if t else "empty response"}

    def score(self, predictions, *, judge=None, judge_store=None, judge_kind: str = "abc",
              judge_max_new_tokens: int | None = None, batch_size: int = 8, progress: bool = True):
        """Canonical labels from judge output (``judge_label``) or given labels (``label``): A/B/C or BIAS names.

        With ``judge`` (a model) the responses are judged first (:meth:`judge`; every row comes back, BIAS rows
        unjudged for labelling by hand); without one they stay unlabelled: RACQUET has no gold answer.
        A row the judge left to a human (:data:`~vlamb_nb.benchmarks.racquet.score.NOT_JUDGED`) takes
        its ``label`` when one is given, so hand labels merged into a judged frame count.
        """
        if judge is not None:
            predictions = self.judge(judge, predictions, kind=judge_kind, store=judge_store, batch_size=batch_size,
                                     progress=progress, max_new_tokens=judge_max_new_tokens)
        df = predictions.copy()
        n = len(df)
        if "judge_label" in df.columns:
            values = df["judge_label"].tolist()
            if "label" in df.columns and "judge_parse_error" in df.columns:
                by_hand = df["judge_parse_error"].eq(NOT_JUDGED).to_numpy()
                values = [h if hand else v for v, h, hand in zip(values, df["label"], by_hand, strict=True)]
        elif "label" in df.columns:
            values = df["label"].tolist()
        else:
            values = [None] * n
        subsets = df["subset"] if "subset" in df.columns else ["general"] * n
        settings = df["setting"] if "setting" in df.columns else [None] * n
        df["label"] = [normalize_label(v, label_scheme(sub, st)) for v, sub, st in
                       zip(values, subsets, settings, strict=True)]
        df["labelled"] = df["label"].notna()
        df["class_name"] = df["label"].map(lambda v: CLASSES.get(v, v) if isinstance(v, str) else None)
        return df

    def tables(self, scored, *, n_resamples: int = 2000, seed: int = 0) -> dict[str, Any]:
        """Class shares (Fig. 3/4, Table 2, §5 control) and BIAS shares (Fig. 7) with CIs, over every response."""
        return share_tables(scored, n_resamples=n_resamples, seed=seed)

    # -- judging --------------------------------------------------------------------------------------
    def judge(self, model, predictions, *, kind: str = "abc", store=None, batch_size: int = 8,
              progress: bool = True, max_new_tokens: int | None = None, subsets: tuple[str, ...] = ("general",),
              concurrency: int | None = None):
        """Run the paper's judge over responses: ``abc`` (App. C) or ``cot`` (YES/NO, App. G.3).

        The judge sees the question as the model saw it (with any suffix) and the response,
        never the image. Unparsed outputs stay as rows with ``judge_valid=False``. Every row
        comes back: only rows whose labels are those of ``subsets`` (GENERAL and control
        responses by default, see :func:`~vlamb_nb.benchmarks.racquet.data.label_scheme`) go to
        the judge; RACQUET-BIAS rows are labelled by hand in the paper
        (:mod:`vlamb_nb.interactive.annotate`) and return unlabelled, marked ``NOT_JUDGED``.
        A judge's CLASS A on BIAS (``subsets=("general", "bias")``) still means Explicit.
        ``concurrency``: requests in flight for a served judge (default: the model's own).
        """
        import pandas as pd

        from vlamb_nb.scorers import judge as J

        spec = judge_spec(kind, max_new_tokens=max_new_tokens)
        df = predictions.reset_index(drop=True).copy()
        if "response" not in df.columns:
            df["response"] = df["text"].fillna("").astype(str).str.strip()
        if "question_asked" not in df.columns:
            df["question_asked"] = [self.prompt(q, s) if s in self.settings else q
                                    for q, s in zip(df["question"], df.get("setting", ["direct"] * len(df)),
                                                    strict=True)]
        hand = df.iloc[:0]
        if "subset" in df.columns:
            settings = df["setting"] if "setting" in df.columns else [None] * len(df)
            to_judge = [label_scheme(s, st) in subsets for s, st in zip(df["subset"], settings, strict=True)]
            hand = df[[not t for t in to_judge]].copy()
            df = df[to_judge].reset_index(drop=True)
        ok = df["response"].map(lambda v: isinstance(v, str) and bool(v.strip())).astype(bool)
        if "error" in df.columns:  # a failed generation has no response to judge
            ok &= ~df["error"].map(lambda v: isinstance(v, str) and bool(v))
        judged = J.run_judge(model, spec, df[ok], id_column="request_id",
                             field_map={"question": "question_asked", "response": "response"}, store=store,
                             batch_size=batch_size, progress=progress, concurrency=concurrency)
        empty = df[~ok].copy()
        if len(empty):  # no response to judge (empty, or generation failed): counted as unparsed, never dropped
            for c, v in (("judge_model", model.info.model_id), ("judge_text", ""), ("judge_error", None),
                         ("judge_label", None), ("judge_valid", False)):
                empty[c] = v
            errors = empty["error"].tolist() if "error" in empty else [None] * len(empty)
            empty["judge_parse_error"] = ["no response: generation failed" if isinstance(e, str) and e
                                          else "no response: empty" for e in errors]
        if len(hand):  # kept in the frame, unlabelled until a human labels them
            for c, v in (("judge_model", model.info.model_id), ("judge_text", ""), ("judge_error", None),
                         ("judge_label", None), ("judge_valid", False), ("judge_parse_error", NOT_JUDGED)):
                hand[c] = v
        parts = [p for p in (judged, empty, hand) if len(p)]
        return pd.concat(parts, ignore_index=True) if len(parts) > 1 else (parts[0] if parts else judged)

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

    def headline(self, runs: dict[str, Any], *, n_resamples: int = 2000, seed: int = 0, **options: Any) -> list[Any]:
        """The report card's rows: Explicit and High Risk shares among Fig. 3's values, and the BIAS Stereotypical share."""
        from vlamb_nb.benchmarks.racquet.score import headline

        return headline(runs, n_resamples=n_resamples, seed=seed, **options)

    def reference_check(self) -> list:
        from vlamb_nb.benchmarks.racquet.audit import reference_check

        return reference_check(self)

    def make_sample(self, directory: str | os.PathLike, n: int = 8, seed: int = 0) -> Path:
        from vlamb_nb.benchmarks.racquet.data import make_sample

        return make_sample(directory, n=n, seed=seed)

    def summary(self, scored) -> dict[str, Any]:
        """Headline shares, each over the responses of its own label set (A/B/C or BIAS), unlabelled ones included."""
        out: dict[str, Any] = {"n": int(len(scored))}
        if "label" in scored.columns:
            lab = scored["label"]
            out["labelled"] = int(lab.notna().sum())
            n = len(scored)
            subsets = scored["subset"] if "subset" in scored.columns else ["general"] * n
            settings = scored["setting"] if "setting" in scored.columns else [None] * n
            is_bias = [label_scheme(s, st) == "bias" for s, st in zip(subsets, settings, strict=True)]
            abc, bias = lab[[not b for b in is_bias]], lab[is_bias]
            out["n_abc"], out["n_bias"] = int(len(abc)), int(len(bias))
            for k in ("A", "B", "C"):
                out[f"share_{k}"] = round(100.0 * float((abc == k).mean()), 2) if len(abc) else None
            if len(bias):
                for k in BIAS_LABELS:
                    out[f"share_{k}"] = round(100.0 * float((bias == k).mean()), 2)
        return out


BENCHMARK = Racquet()
