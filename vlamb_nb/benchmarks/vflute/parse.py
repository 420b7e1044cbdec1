"""V-FLUTE's official label and explanation extraction, ported rule for rule.

Source: ``eval/extract_label_and_expl.py`` of the official repository (notes §3.3). The
rules are deliberately kept as the authors wrote them, quirks included, because the published
numbers depend on them:

1. If ``LABEL:``/``Label:``/``label:`` occurs, the label is read from the text after the first
   such marker ("neither" → unparsed, else "contradict" → 0, else "entail" → 1) and the
   explanation is the text before it (with a fallback for the ``Label: x\\nExplanation`` shape).
2. Otherwise keyword heuristics on the lowercased output decide; "entail" is checked before
   "contradict", so an output containing both parses as entailment.
3. The explanation is cleaned of label words, and cut before the last "Therefore,".

Scene-graph (compositional CoT) explanations are additionally normalised
(:func:`normalize_sg_explanation`). Labels are 1 = entailment, 0 = contradiction, None = unparsed
(scored as wrong).
"""

from __future__ import annotations

import re
from typing import Any

LABEL_MARKER = re.compile(r"LABEL:|Label:|label:")
ENTAIL_WORD = re.compile(r"entailment|Entailment|entails|Entails")
CONTRADICT_WORD = re.compile(r"contradiction|Contradiction|contradicts|Contradicts")

UNDECIDED_PHRASES = ("not possible to definitively label", "neither", "does not support or contradict",
                     "entailment or contradiction")
ENTAIL_PHRASES = ("entail", "supports the claim", "is consistent", "image can be seen as indirectly supporting",
                  "appears to be consistent with the claim", "in harmony with", "is in agreement",
                  "confirms the claim")
CONTRADICT_PHRASES = ("contradict", "appears to contest")

LABEL_NAMES = {1: "entailment", 0: "contradiction"}


def _label_from_marker(label_text: str) -> int | None:
    low = label_text.lower()
    if "neither" in low:
        return None
    if "contradict" in low:
        return 0
    if "entail" in low:
        return 1
    return None


def _label_from_heuristics(output: str) -> int | None:
    x = output.lower()
    if any(p in x for p in UNDECIDED_PHRASES):
        return None
    if any(p in x for p in ENTAIL_PHRASES):
        return 1
    if any(p in x for p in CONTRADICT_PHRASES):
        return 0
    return None


def clean_explanation(expl: str) -> str:
    """The official post-processing: drop label words, cut before the last "Therefore,"."""
    expl = expl.replace("Contradiction.", "").replace("Entailment.", "").strip()
    expl = expl.replace("Contradiction:", "").replace("Entailment:", "").strip()
    expl = expl.replace("Contradiction\n", "").replace("Entailment\n", "").strip()
    if "Therefore," in expl:
        expl = expl.rsplit("Therefore,", 1)[0].strip()
    return expl


def _is_missing(v: Any) -> bool:
    """The official ``not pd.notna(output)``: None, NaN, and pandas' NA/NaT (a nullable CSV column's empty cell)."""
    if v is None or (isinstance(v, float) and v != v):
        return True
    return type(v).__name__ in ("NAType", "NaTType")


def extract_label_and_explanation(output: Any) -> tuple[int | None, str | None, str]:
    """``(label, explanation, rule)`` from a raw model output; ``rule`` names the branch that decided.

    A missing output (None/NaN) gives ``(None, None, "missing")`` as in the official script.
    """
    if _is_missing(output):
        return None, None, "missing"
    output = str(output)
    label: int | None = None
    expl = output
    match = LABEL_MARKER.search(output)
    if match:
        rule = "label_marker"
        label = _label_from_marker(output[match.end():].strip())
        expl = output[: match.start()].strip()
        if not expl:  # the "Label: x\nExplanation" shape
            rule = "label_marker_first"
            word = ENTAIL_WORD if label == 1 else CONTRADICT_WORD if label == 0 else None
            if word is not None:
                m = word.search(output)
                if m:
                    expl = output[m.end():].strip()
        if not expl:
            expl = output
    else:
        rule = "heuristic"
        label = _label_from_heuristics(output)
    return label, clean_explanation(expl), rule


def normalize_sg_explanation(x: str) -> str:
    """The official normalisation of scene-graph explanations ("scene graph" → "image", underscores → spaces)."""
    if "scene graph" not in x.lower():
        return x
    x = x.replace("and the scene graph's description", "")
    x = x.replace("and the scene graph both support", "supports")
    x = x.replace("and the scene graph together support", "supports")
    x = x.replace("and the scene graph", "")
    x = x.replace("or the scene graph", "")
    x = x.replace("n the scene graph", "n the image")
    x = x.replace("the scene graph shows", "the image shows")
    x = x.replace("the scene graph describes", "the image shows")
    x = x.replace("the scene graph indicates", "the image displays")
    x = x.replace("the scene graph states", "the image displays")
    x = x.replace("the scene graph explicitly states", "the image displays")
    x = x.replace("scene graph", "image")
    x = x.replace("  ", " ")
    x = x.strip()
    for word in x.split():
        if "emoji" not in word and "_" in word:
            x = x.replace(word, word.replace("_", " ").replace('"', ""))
    return x


def parse_output(output: Any, *, scene_graph: bool = False) -> dict[str, Any]:
    """Parsed fields for one raw output: ``label_pred`` (1/0/None), ``label``, ``explanation``, ``valid``."""
    label, expl, rule = extract_label_and_explanation(output)
    if scene_graph and expl is not None:
        expl = normalize_sg_explanation(expl)
    return {"label_pred": label, "label_text": LABEL_NAMES.get(label) if label is not None else None,
            "explanation_pred": expl, "valid": label is not None, "parse_rule": rule}


def parse_answer(text: str, item: Any) -> dict[str, Any]:
    """The official extraction; scene-graph answers get the official SG normalisation. Beside it, what a
    prompt-sensitivity comparison reads: ``position`` 0 when the label chosen is the one the instruction names
    first, and ``choice``, the label."""
    from vlamb_nb.benchmarks.vflute.prompts import label_named_first

    out = parse_output(text, scene_graph=item.get("setting") == "scene_graph")
    label = out["label_pred"]
    out["position"] = None if label is None else int(label != label_named_first(str(item.get("setting") or "")))
    out["choice"] = label
    gold = item.get("label_true")
    first = label_named_first(str(item.get("setting") or ""))
    out["gold_position"] = None if gold is None or gold != gold else int(int(gold) != first)
    return out


def with_scene_graphs(first: Any, answers: Any, failed: list[dict[str, Any]]):
    """A scene-graph run's answers, a failed row for each item whose graph failed, and each item's graph beside."""
    import pandas as pd

    out = pd.concat([answers, pd.DataFrame(failed, columns=answers.columns)], ignore_index=True) \
        if failed else answers
    graphs = first.generations
    sg_text = dict(zip(graphs["item_id"].astype(str), graphs["text"], strict=True))
    out["scene_graph"] = out["item_id"].astype(str).map(sg_text)
    return out



def filled(predictions):
    """Parsed predictions with a failed generation read as unparsed (no label) and an empty explanation."""
    if "label_pred" not in predictions.columns:
        predictions["label_pred"] = None
    predictions["label_pred"] = predictions["label_pred"].astype(object).where(predictions["label_pred"].notna(),
                                                                               None)
    if "explanation_pred" not in predictions.columns:
        predictions["explanation_pred"] = ""
    predictions["explanation_pred"] = predictions["explanation_pred"].fillna("")
    return predictions
