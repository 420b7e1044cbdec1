"""VAGUE scoring: the paper's rounding, accuracy, BLEU-1 and BERTScore for free-form answers, and reading
prediction files (the official result JSON and our prediction stores)."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from vlamb_nb.benchmarks.vague.data import CATEGORIES, IMAGE_SUFFIX, SUBSETS
from vlamb_nb.benchmarks.vague.prompts import ALL_SETTINGS, BASE_SETTINGS, SETTINGS, setting_spec
from vlamb_nb.errors import DataError, NotAvailableError, SettingError
from vlamb_nb.jsonl import read_json
from vlamb_nb.stats.metric import Metric, OnCard, Published

MINILM_LABEL = "all-MiniLM-L6-v2 (substitute for roberta-large)"


# -- metrics -----------------------------------------------------------------------------------------
def round_half_up(value: float | Decimal, digits: int = 1) -> float:
    """The paper's rounding (44.25 → 44.3), unlike Python's ``round`` (→ 44.2)."""
    q = Decimal(1).scaleb(-digits)
    return float(Decimal(str(value)).quantize(q, rounding=ROUND_HALF_UP))


def accuracy_pct(correct: int, n: int, digits: int = 1) -> float:
    """100 × correct / n, exact decimal arithmetic, rounded half-up (invalid answers stay in n)."""
    if n <= 0:
        return float("nan")
    return round_half_up(Decimal(100 * int(correct)) / Decimal(int(n)), digits)


def bleu1(candidate: str, reference: str) -> float:
    """Unigram BLEU (nltk ``sentence_bleu`` with weights (1,0,0,0)), whitespace tokens."""
    import warnings

    from nltk.translate.bleu_score import sentence_bleu

    cand, ref = candidate.split(), reference.split()
    if not cand:
        return 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(sentence_bleu([ref], cand, weights=(1, 0, 0, 0)))


def _bert_scorer(model: str):
    """The scorer of ``model``, loaded once per process by the one BERTScore loader (scorers.explanation)."""
    from vlamb_nb.scorers.explanation import MINILM_LAYERS, bert_scorer, minilm_path

    if model == "minilm":
        kwargs: dict[str, Any] = {"model_type": minilm_path(), "num_layers": MINILM_LAYERS}
    elif model == "roberta-large":
        kwargs = {"lang": "en"}
    else:
        kwargs = {"model_type": model}
    from vlamb_nb.hubcache import require_model

    require_model(kwargs.get("model_type") or "roberta-large", what="BERTScore model",
                  instead="use bertscore='minilm' (a labelled substitute) or None")
    try:
        return bert_scorer(**kwargs)
    except OSError as e:
        raise NotAvailableError(f"BERTScore model {model!r} is not available offline ({e}); "
                                f"use bertscore='minilm' (a labelled substitute) or None") from None


def bertscore_f1(candidates: Sequence[str], references: Sequence[str], model: str = "roberta-large",
                 batch_size: int = 32) -> list[float]:
    """BERTScore F1 per pair. ``roberta-large`` is bert-score's default for English (the paper's tooling);
    ``minilm`` uses the locally shipped all-MiniLM-L6-v2 (layer 6), a labelled substitute."""
    if not candidates:
        return []
    scorer = _bert_scorer(model)
    _, _, f1 = scorer.score(list(candidates), list(references), batch_size=batch_size)
    return [float(x) for x in f1]


def bertscore_label(model: str | None) -> str | None:
    return None if model is None else MINILM_LABEL if model == "minilm" else model


def check_true_answers(items, records: list[dict[str, Any]], label: str = "predictions") -> None:
    """The official result files store each item's ``true_answer`` (gold letter, or the correct sentence for
    free-form); one that disagrees with the source means the predictions were made on other data (e.g. the
    1.0 release, whose option orders differ), and scoring them against this source would be silently wrong."""
    by_id = items.set_index("id")
    bad = []
    for r in records:
        truth = (r.get("meta") or {}).get("true_answer")
        if truth is None:
            continue
        item = by_id.loc[r["item_id"]]
        ff = setting_spec(r["setting"]).free_form
        want = str(item["options"]["correct"]).strip() if ff else str(item["gold"])
        if str(truth).strip() != want:
            bad.append((r["item_id"], truth, want))
    if bad:
        i, got, want = bad[0]
        raise DataError(f"{len(bad)} prediction(s) carry a true_answer that differs from the source, e.g. "
                        f"{i!r}: {got!r} vs {want!r}; were they made on another release of the data?",
                        source=str(label), field="true_answer")


# -- reading prediction files -------------------------------------------------------------------------
_OFFICIAL_FORMATS = {"VLM": "vlm", "SM": "sm", "SM_gpt": "sm_ext", "LLM": "lm", "zeroshot_cot": "vlm_cot",
                     "zeroshot_cot_SM": "sm_cot"}


def setting_from_filename(name: str) -> str | None:
    """``{model}_{format}_{answer_type}.json`` (the released inference script's output name) → our setting."""
    m = re.search(r"_(VLM|SM_gpt|SM|LLM|zeroshot_cot_SM|zeroshot_cot)_(mcq|da)\.json$", name)
    if not m:
        return None
    base = _OFFICIAL_FORMATS[m.group(1)]
    return base + ("_ff" if m.group(2) == "da" else "")


def read_official(path: str | os.PathLike, *, setting: str | None = None) -> list[dict[str, Any]]:
    """The official result JSON (``{"<name>_annot.jpg": {"model_output", "true_answer"}}``) as answer records:
    one per item, with the file's ``true_answer`` kept in ``meta``. The setting is ``setting`` or taken from
    the ``{model}_{format}_{answer_type}.json`` file name, the model from that name too."""
    p = Path(path)
    data = read_json(p)
    setting = setting or setting_from_filename(p.name)
    if setting is None:
        raise SettingError(f"cannot tell the setting of {p.name}; pass -o setting=<one of {', '.join(SETTINGS)}>")
    if setting not in ALL_SETTINGS:
        raise SettingError(f"{p.name}: unknown setting(s) {[setting]}")
    if not isinstance(data, dict):
        raise DataError("expected {image file: {model_output, true_answer}}", source=p.name)
    m = re.match(r"(.+?)_(?:VLM|SM_gpt|SM|LLM|zeroshot_cot_SM|zeroshot_cot)_(?:mcq|da)\.json$", p.name)
    model = m.group(1) if m else p.stem
    out = []
    for i, (k, v) in enumerate(data.items(), start=1):
        if not isinstance(v, dict) or "model_output" not in v:
            raise DataError(f"{k!r} has no model_output", source=p.name, row=i, field="model_output")
        for name in ("model_output", "true_answer"):  # text, or null: never a number turned into text
            if v.get(name) is not None and not isinstance(v[name], str):
                raise DataError(f"{k!r}: expected text, got {type(v[name]).__name__} {v[name]!r}", source=p.name,
                                row=i, field=name)
        item = str(k).removesuffix(IMAGE_SUFFIX)
        truth = v.get("true_answer")
        out.append({"request_id": f"{item}::{setting}", "item_id": item, "turn": "answer", "benchmark": "vague",
                    "setting": setting, "model": {"model_id": model, "backend": "file"},
                    "text": "" if v["model_output"] is None else str(v["model_output"]), "error": None,
                    "meta": {"true_answer": None if truth is None else str(truth)}})
    if not out:
        raise DataError("no predictions found", source=p.name)
    return out


# -- the report card ------------------------------------------------------------------------------------
#: items per subset, the denominators of Table 1 (refusals and unparsed answers count wrong)
SUBSET_N = {"VCR": 1144, "Ego4D": 533}


#: VAGUE's headline, declared once: MCQ accuracy (Correct / N, refusals and unparsed answers wrong), per subset
#: on the card (each setting's column of Table 1, among its twelve models) and overall ("all") in comparisons
METRICS = (Metric("accuracy", "binary", column="correct", slices="subset", overall="all",
                  card=OnCard(published=Published("Table 1", {s: f"{s} {{SETTING}}" for s in SUBSET_N}, n=SUBSET_N),
                              settings=("lm", "sm", "vlm"), slice="{slice} {SETTING}",
                              note="Correct / N; refusals and unparsed answers count wrong")),)


# -- scored runs: per-item correctness, the paper's tables, prediction files -----------------------------------
def score_predictions(predictions, *, bertscore: str | None = "roberta-large"):
    """Per-item ``correct`` (MCQ: the chosen option is the correct one; invalid counts wrong) and, for
    free-form rows, ``bleu1`` and ``bertscore_f1`` against ``mcq.1_correct``."""
    df = predictions.copy()
    if "category" not in df.columns:
        df["category"] = None
    df["valid"] = df["valid"].fillna(False).astype(bool)
    df["correct"] = df["valid"] & (df["category"] == "correct")
    if "category_lenient" in df.columns:
        df["correct_lenient"] = df["category_lenient"] == "correct"
    ff = df["setting"].map(lambda s: setting_spec(s).free_form if s in ALL_SETTINGS else False).astype(bool)
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


def breakdown(scored):
    """One row per (model, setting, subset ∈ VCR/Ego4D/All): N, valid, counts, accuracy (Correct/N)."""
    import pandas as pd

    df = scored.copy()
    if "model" not in df.columns:
        df["model"] = "model"
    rows = []
    (acc,) = METRICS
    for (model, setting), g in df.groupby(["model", "setting"], sort=False):
        # the declared accuracy's units (an item each: right, or wrong, refusals and unparsed answers included)
        units = {} if setting_spec(setting).free_form else {u.slice: u for u in acc.unit_sets(g) or ()}
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
                u = units.get(acc.overall if subset == "All" else subset)  # none: no answer is right
                row["accuracy"] = accuracy_pct(int(sum(u.values)) if u else 0, len(s))  # Correct / N, exact decimals
                if "correct_lenient" in s.columns:  # the lenient reading, beside the official one
                    row["accuracy_lenient"] = accuracy_pct(int(s["correct_lenient"].fillna(False).sum()),
                                                           len(s))
            rows.append(row)
    return pd.DataFrame(rows)


def tables(scored) -> dict[str, Any]:
    """Our versions of Tables 1, J5/J6, 3/G4, F3 and the Fig. 4 counts (where the settings were run)."""
    b = breakdown(scored)
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


def score_file(bench: Any, predictions: str | os.PathLike, *, source: str | os.PathLike | None = None,
               **options: Any):
    """A prediction file as a scored run: the official ``{"<name>_annot.jpg": {"model_output", "true_answer"}}``
    JSON (``setting=`` option, or taken from the ``{model}_{format}_{answer_type}.json`` file name) or a
    prediction store (JSONL) written by ``vlamb-nb run``, through :meth:`~vlamb_nb.benchmarks.base.Benchmark.
    score_store`. Items without a prediction count as invalid (``missing="wrong"``, the paper's denominator N)
    or are left out (``"skip"``)."""

    setting = options.pop("setting", None)
    bertscore = options.pop("bertscore", None)
    missing_mode = options.pop("missing", "wrong")
    pick = {k: options.pop(k) for k in ("model", "quantization", "run") if k in options}
    if "run" in pick:
        pick["run"] = int(pick["run"])
    if options:
        raise SettingError(f"unknown vague score option(s): {', '.join(options)}")
    if missing_mode not in ("wrong", "skip"):
        raise SettingError(f"missing must be 'wrong' (count as invalid, as the paper's N) or 'skip', "
                           f"got {missing_mode!r}")
    if source is None:
        if Path(predictions).is_file() and Path(predictions).suffix != ".jsonl":
            read_official(predictions, setting=setting)  # a malformed file is named first, whatever else is missing
        raise SettingError("vague scoring needs --source (the data the predictions refer to: each item's subset "
                           "and option ordering)")
    return scored_file(bench, predictions, bench.load(source), setting=setting, bertscore=bertscore,
                       fill_missing=missing_mode == "wrong", **pick)


def scored_file(bench: Any, predictions: str | os.PathLike, items, *, setting: str | None = None,
                bertscore: str | None = None, fill_missing: bool = True, **pick: Any):
    """A prediction store (``.jsonl``) or an official result JSON scored against ``items`` by
    :meth:`~vlamb_nb.benchmarks.base.Benchmark.score_store`; an official file's ids must be in ``items`` and its
    ``true_answer`` letters agree with them. Items without a prediction count as invalid with ``fill_missing``
    (the paper's denominator N)."""
    p = Path(predictions)
    if not p.is_file():
        raise DataError("predictions file not found", source=str(p))
    records: Any = p
    if p.suffix != ".jsonl":
        records = read_official(p, setting=setting)
        unknown = sorted({r["item_id"] for r in records} - set(items["id"]))
        if unknown:
            raise DataError(f"{len(unknown)} prediction(s) name items not in the source, e.g. {unknown[0]!r}",
                            source=str(predictions))
        check_true_answers(items, records, str(predictions))
    return bench.score_store(records, items, setting=setting, fill_missing=fill_missing, bertscore=bertscore,
                             record=False, **pick)


def bertscore_deviations(scored, bertscore: str | None = "roberta-large") -> list[Any]:
    """The substitute BERTScore model, where free-form answers were scored with it."""
    from vlamb_nb.meta import Deviation

    free = "free_form" in scored.columns and bool(scored["free_form"].any())
    if not (free and bertscore == "minilm"):
        return []
    return [Deviation("BERTScore model", "roberta-large (bert-score default for English)", MINILM_LABEL,
                      "Table J5, Table J6")]
