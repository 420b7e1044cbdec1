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


# -- the scripted stand-in's replies (the inverse of the reading above) --------------------------------------
#: the scripted chance of a right label per setting, in the paper's order (Table 4): the image helps (VF 72.78
#: against −Image 64.77, p < 0.002), scene graphs help the label (LLaVA-ZS-7B 45.44 → 52.94, 34B 55.60 → 58.08) and
#: five shots help (Gemini 53.70 → 67.25, Claude 56.07 → 67.79, GPT-4 64.00 → 69.36). The gaps are wider than the
#: paper's so that paired tests on 60 items can tell them apart: the stand-in shows the tests working, not the sizes
SCRIPTED_ACCURACY = {"hypothesis_only": 0.45, "zero_shot": 0.65, "scene_graph": 0.85, "few_shot": 0.95}
#: the share of right labels given with a poor explanation (one the explanation score rejects at 0.6): most with
#: scene graphs, whose explanations dwell on the graph (§5: incomplete reasoning), so F1@60 falls where F1@0 rises
#: (Table 4: LLaVA-ZS-7B 18.38 → 14.86, 34B 31.83 → 26.77); fewest with shots (GPT-4 38.56 → 49.81)
SCRIPTED_POOR_SHARE = {"hypothesis_only": 0.3, "zero_shot": 0.3, "scene_graph": 0.75, "few_shot": 0.2}
#: the errors the label can have: the other label, or a reply the official rules read no label from ("neither")
SCRIPTED_ERRORS = ("wrong label", "unparseable")
#: poor explanations, one per error type of §5's taxonomy the paper finds most (hallucination, unsound and
#: incomplete reasoning); each scores at most 0.6 against any V-FLUTE reference under the offline substitute scorer
POOR_EXPLANATIONS = (
    ("hallucination", "The image depicts a person standing in front of a plain wall with nothing else in view."),
    ("unsound reasoning", "The picture has a blue background, and anything shown on blue is always calm, so "
                          "whatever happens in it must agree with what is said."),
    ("incomplete reasoning", "The image shows several things next to each other, and the claim names things too."),
)
#: the scene-graph setting's poor explanation: it describes the graph, not the figurative meaning (§5)
SG_POOR_EXPLANATION = ("incomplete reasoning", "The scene graph shows the objects and their attributes; nothing in "
                                               "the scene graph addresses what the claim means.")
UNPARSEABLE_REPLY = "The image and the claim could be read either way; neither label fits without more context."


def scripted_poor(s: Any) -> tuple[str, str] | None:
    """The poor explanation a right label gets (its error type and text), or None for a good one: drawn from the
    stand-in's detail draw ``s.u`` at the setting's :data:`SCRIPTED_POOR_SHARE`."""
    share = SCRIPTED_POOR_SHARE.get(s.setting, 0.0)
    if not s.right or s.u >= share:
        return None
    if s.setting == "scene_graph":
        return SG_POOR_EXPLANATION
    return POOR_EXPLANATIONS[min(int(s.u / share * len(POOR_EXPLANATIONS)), len(POOR_EXPLANATIONS) - 1)]


def scripted_scene_graph(claim: str) -> str:
    """A scene graph in JSON (the compositional CoT's first turn), its objects the claim's longer words."""
    import json

    words = [w.strip(".,!?\"'#:;()").lower() for w in str(claim).split()]
    objects = list(dict.fromkeys(w for w in words if len(w) > 3))[:3] or ["scene"]
    return json.dumps({"objects": objects, "attributes": {o: ["depicted"] for o in objects},
                       "relationships": [[objects[0], "next_to", o] for o in objects[1:]]})


def scripted_reply(request: Any, s: Any) -> str:
    """A scripted stand-in's reply (:meth:`Benchmark.scripted_reply`) in the official fine-tuning target's form,
    ``"{explanation}\\nLABEL: {label}"``, which the official extraction reads by its ``LABEL:`` rule: a scene graph
    for the scene-graph turn; a right label with the gold explanation, or with a poor one (:func:`scripted_poor`);
    the other label (``wrong label``); or a hedge the official rules read no label from (``unparseable``)."""
    if (request.meta or {}).get("step") == "scene_graph":
        return scripted_scene_graph(s.item.get("claim", ""))
    if s.outcome == "unparseable":
        return UNPARSEABLE_REPLY
    gold = 1 if int(s.item["label_true"]) == 1 else 0
    if s.right:
        poor = scripted_poor(s)
        explanation = str(s.item.get("explanation") or "").strip() if poor is None else poor[1]
        return f"{explanation}\nLABEL: {LABEL_NAMES[gold]}"
    said = "does not show" if gold == 1 else "shows"
    return f"Read literally, the image {said} what the claim states.\nLABEL: {LABEL_NAMES[1 - gold]}"
