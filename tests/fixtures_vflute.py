"""A scripted V-FLUTE model that knows the answers, shared by the benchmark and run-identity tests."""

from __future__ import annotations


def oracle(items, wrong: bool = False):
    """Answers with each item's gold explanation and label (``wrong``: the opposite label)."""
    gold = dict(zip(items["claim"], zip(items["explanation"], items["label"], strict=True), strict=True))
    flip = {"entailment": "contradiction", "contradiction": "entailment"}

    def respond(req):
        claim = next(c for c in gold if f'"{c}"' in req.prompt_text)
        expl, label = gold[claim]
        return f"{expl}\nLABEL: {flip[label] if wrong else label}"
    return respond
