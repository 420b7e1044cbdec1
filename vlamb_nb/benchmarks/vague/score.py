"""VAGUE scoring: the paper's rounding, accuracy, BLEU-1 and BERTScore for free-form answers, and reading
prediction files (the official result JSON and our prediction stores)."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from vlamb_nb.benchmarks.vague.data import IMAGE_SUFFIX
from vlamb_nb.benchmarks.vague.prompts import SETTINGS, setting_spec
from vlamb_nb.errors import DataError, NotAvailableError, SettingError
from vlamb_nb.jsonl import read_json

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


def check_true_answers(items, gens, label: str = "predictions") -> None:
    """The official result files store each item's ``true_answer`` (gold letter, or the correct sentence for
    free-form); one that disagrees with the source means the predictions were made on other data (e.g. the
    1.0 release, whose option orders differ), and scoring them against this source would be silently wrong."""
    if "true_answer" not in gens.columns:
        return
    by_id = items.set_index("id")
    bad = []
    for _, g in gens.dropna(subset=["true_answer"]).iterrows():
        item = by_id.loc[g["item_id"]]
        ff = setting_spec(g["setting"]).free_form
        want = str(item["options"]["correct"]).strip() if ff else str(item["gold"])
        if str(g["true_answer"]).strip() != want:
            bad.append((g["item_id"], g["true_answer"], want))
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


def predictions_frame(path: str | os.PathLike, *, setting: str | None = None, model: str | None = None,
                      quantization: str | None = None, run: int | None = None):
    """Generations (``request_id, item_id, setting, text, error``) from an official result JSON or a store.

    A store holding several runs (models, quantizations, settings, decodings) must be narrowed to one with
    ``setting``/``model``/``quantization``/``run`` (:func:`vlamb_nb.run_identity.select_run`); repeated requests are
    collapsed by :func:`vlamb_nb.run_identity.dedupe` (conflicting answers are an error)."""
    import pandas as pd


    p = Path(path)
    if not p.is_file():
        raise DataError("predictions file not found", source=str(p))
    if p.suffix == ".jsonl":
        from vlamb_nb.run_identity import one_run
        from vlamb_nb.store import read_store

        numbered = [(ln, r) for ln, r in read_store(p) if not str(r.get("request_id", "")).endswith("::caption")]
        recs = [r for _, r in one_run(numbered, setting=setting, model=model, quantization=quantization, run=run,
                                      source=p.name)]
        df = pd.DataFrame([{"request_id": r.get("request_id"), "setting": r.get("setting"), "text": r.get("text"),
                            "error": r.get("error"), "model": (r.get("model") or {}).get("model_id", p.stem)}
                           for r in recs])
    else:
        data = read_json(p)
        setting = setting or setting_from_filename(p.name)
        if setting is None:
            raise SettingError(f"cannot tell the setting of {p.name}; pass -o setting=<one of {', '.join(SETTINGS)}>")
        if not isinstance(data, dict):
            raise DataError("expected {image file: {model_output, true_answer}}", source=p.name)
        m = re.match(r"(.+?)_(?:VLM|SM_gpt|SM|LLM|zeroshot_cot_SM|zeroshot_cot)_(?:mcq|da)\.json$", p.name)
        model = m.group(1) if m else p.stem
        rows = []
        for i, (k, v) in enumerate(data.items(), start=1):
            if not isinstance(v, dict) or "model_output" not in v:
                raise DataError(f"{k!r} has no model_output", source=p.name, row=i, field="model_output")
            for name in ("model_output", "true_answer"):  # text, or null: never a number turned into text
                if v.get(name) is not None and not isinstance(v[name], str):
                    raise DataError(f"{k!r}: expected text, got {type(v[name]).__name__} {v[name]!r}", source=p.name,
                                    row=i, field=name)
            item = str(k).removesuffix(IMAGE_SUFFIX)
            truth = v.get("true_answer")
            rows.append({"request_id": f"{item}::{setting}", "setting": setting, "model": model,
                         "text": "" if v["model_output"] is None else str(v["model_output"]), "error": None,
                         "true_answer": None if truth is None else str(truth)})
        df = pd.DataFrame(rows)
    if df.empty:
        raise DataError("no predictions found", source=p.name)
    bad = sorted(set(df["setting"]) - set(SETTINGS))
    if bad:
        raise SettingError(f"{p.name}: unknown setting(s) {bad}")
    df["item_id"] = df["request_id"].astype(str).str.split("::").str[0]
    return df.reset_index(drop=True)


# -- the report card ------------------------------------------------------------------------------------
#: items per subset, the denominators of Table 1 (refusals and unparsed answers count wrong)
SUBSET_N = {"VCR": 1144, "Ego4D": 533}


def headline(runs: Any, *, n_resamples: int = 2000, seed: int = 0) -> list[Any]:
    """VAGUE's headline for the report card: MCQ accuracy per subset and setting (LM, SM, VLM), among Table 1's
    twelve models. ``runs``: ``{setting: scored}`` or one scored frame holding several settings."""
    import pandas as pd

    from vlamb_nb.stats.ranking import headline_among_published, published, weighted_mean

    frames = list(runs.values()) if isinstance(runs, dict) else [runs]
    scored = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    out = []
    for i, setting in enumerate(("lm", "sm", "vlm")):
        if scored.empty or setting not in set(scored["setting"]):
            continue
        rows = scored[scored["setting"] == setting]
        for subset in SUBSET_N:
            part = rows[rows["subset"] == subset]
            if part.empty:
                continue
            column = f"{subset} {setting.upper()}"
            correct = part["correct"].map(lambda v: bool(v) if isinstance(v, bool | int) else False)
            out.append(headline_among_published(
                paper="vague", metric="accuracy", slice=column, stat=weighted_mean(correct.to_numpy(float)),
                n_rows=len(part), published=published("vague", "Table 1", column, n=SUBSET_N[subset]),
                unit="item", setting=setting, n_resamples=n_resamples, seed=seed + i,
                note="Correct / N; refusals and unparsed answers count wrong"))
    return out
