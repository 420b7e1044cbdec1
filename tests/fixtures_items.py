"""Scored runs whose answers follow from the item, for the item tables of the pages: two scripted models that
agree on some items and not on others (``B`` answers some items right that ``A`` gets wrong), as stores in a
reproduce run's folder with the results its notebooks would record (the card's headline rows)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import fixtures_stored as F

from vlamb_nb import get_benchmark
from vlamb_nb.models import ScriptedModel

#: (paper, setting, sample size): a grounding paper with slices and boxes, a paper scored over pairs of queries
PAPERS = [("refadv", "direct", 12), ("mucar", "full", 4)]
HOSTILE = "</script><script>alert(1)</script><img src=x onerror=alert(2)>"


def answers_of(model: str, items: Any, paper: str):
    """``A``: the scripted answers; ``B``: the same, but right on every third item (the gold box, letter A) and
    hostile text where ``A`` gives none."""
    bench = get_benchmark(paper)
    gold = {str(i): g for i, g in zip(items[bench.id_column], items["gt_xyxy" if paper == "refadv" else "gold"],
                                      strict=True)}

    def respond(req: Any) -> str:
        a = F.respond(req)
        item = str(req.meta.get("item_id", req.id))
        if model == "A" or F.pick(item + "x", 3):
            return a
        if paper == "refadv":
            return json.dumps({"bboxes": [list(gold[item])]})
        return f"Answer: {gold[item]} {HOSTILE}"
    return respond


def samples(root: Path) -> dict[str, Path]:
    """Each paper's generated sample (what its ``load`` takes), written once."""
    return {paper: get_benchmark(paper).make_sample(root / f"sample-{paper}", n=n, seed=0) for paper, _, n in PAPERS}


def run_folder(root: Path, sources: dict[str, Path], model: str = "A") -> Path:
    """A reproduce run's folder: each paper's store under ``<run>/<paper>/``, ``results.json`` naming the sample
    each notebook read and the headline rows it recorded."""
    run = root / f"run-{model}"
    results: dict[str, Any] = {}
    for paper, setting, _ in PAPERS:
        bench = get_benchmark(paper)
        src = sources[paper]
        items = bench.load(src)
        store = run / paper / model / f"{paper}__{setting}.jsonl"
        store.parent.mkdir(parents=True, exist_ok=True)
        scored = bench.evaluate(ScriptedModel(answers_of(model, items, paper), model_id=model), items, setting,
                                store=store, progress=False)
        heads = bench.headline({setting: scored}, n_resamples=200)
        results[paper] = {"ok": True, "parameters": {"source": str(src)},
                          "results": {"headline": [h.to_dict() for h in heads]}}
    (run / "results.json").write_text(json.dumps(results, default=str), encoding="utf-8")
    return run
