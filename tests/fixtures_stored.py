"""Runs of every paper with a scripted model whose answers follow from the item (right, wrong, unreadable, failed
and, where a paper has more turns, every turn taken), for the tests that score stored runs.

:data:`RUNS` lists ``(paper, setting, sample size, options)``; :func:`respond` answers a request of any of them.
``tests/legacy_stores/`` holds the stores these runs left when records did not yet carry their item and turn as
fields (``<paper>__<setting>.jsonl``), written by the runner of that time from the same samples and answers, and
``racquet__judge.jsonl``, :func:`judge_model`'s verdicts on the ``vlm`` model's sampled RACQUET answers.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vlamb_nb.models import ScriptedModel

LEGACY = Path(__file__).resolve().parent / "legacy_stores"
#: (paper, setting, items in its sample, run options): every turn convention the stores ever spelled
RUNS: list[tuple[str, str, int, dict[str, Any]]] = [
    ("vague", "vlm", 8, {}),
    ("vague", "sm", 6, {}),  # the model's own captions first
    ("mucar", "full", 3, {}),
    ("mucar", "full_agent", 3, {}),  # detect, evidence, answer
    ("vflute", "zero_shot", 8, {}),
    ("vflute", "scene_graph", 8, {}),  # the scene graph first; a failed graph is never answered
    ("refadv", "direct", 6, {}),  # the repair turn where the first answer has no box
    ("refadv", "cot", 6, {"repair_text": "newlines"}),
    ("racquet", "direct", 6, {}),
    ("racquet", "sampling", 2, {"n_samples": 3}),
    ("racquet", "control", 6, {}),
]


def pick(item_id: str, n: int) -> int:
    """A stable choice among ``n`` from an item id (the same in every process)."""
    return int(hashlib.sha256(str(item_id).encode()).hexdigest(), 16) % n


def respond(req: Any) -> str:
    """An answer to ``req``: right, wrong or unreadable by item, and a failure for one request in ten (never a
    scene graph: the stores of old marked every answer of a run failed when one graph had)."""
    item = req.meta.get("item_id", req.id)
    k = pick(f"{item}:{req.setting}:{len(req.messages)}", 10)
    if k == 0 and req.meta.get("step") != "scene_graph":
        raise RuntimeError("backend down")
    bench = req.benchmark
    if bench == "vague":
        if req.setting == "caption":
            return f"A scene around {item}."
        return "ABCD"[k % 4] if k < 8 else "I cannot tell."
    if bench == "mucar":
        step = req.meta.get("step")
        if step in ("detect", "evidence"):
            return f"{step.upper()}-{item}"
        return f"Answer: {'ABCD'[k % 4]}" if k < 8 else "no idea"
    if bench == "vflute":
        if req.meta.get("step") == "scene_graph":
            return '{"objects": ["a"], "relations": []}'
        label = "Entailment" if k % 2 else "Contradiction"
        return f"The image shows it. Label: {label}" if k < 8 else "unsure"
    if bench == "refadv":
        if len(req.messages) == 1 and k < 4:
            return "It is the one on the left."  # no box: the repair turn follows
        x = 10 * (k + 1)
        return json.dumps({"bboxes": [[x, x, x + 40, x + 30]]})
    if bench == "racquet":
        return f"The {'tall' if k % 2 else 'small'} one by the window." if k < 9 else ""
    raise AssertionError(bench)


def model(name: str = "scripted") -> ScriptedModel:
    return ScriptedModel(respond, model_id=name)


def judge_model() -> ScriptedModel:
    """RACQUET's A/B/C judge: a class by response (and an unreadable verdict now and then)."""
    return ScriptedModel(lambda r: ("CLASS A", "CLASS B", "CLASS C", "no idea")[pick(r.prompt_text, 4)],
                         model_id="judge")


def score_options(paper: str) -> dict[str, Any]:
    """What scores a paper's run offline (no metric model to download)."""
    return {"scorer": "none"} if paper == "vflute" else {}


def strip_fields(src: Path, dst: Path) -> Path:
    """A copy of a store without the fields records have carried since (``item_id``, ``turn``, ``meta``)."""
    lines = []
    for line in src.read_text(encoding="utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            for f in ("item_id", "turn", "meta"):
                rec.pop(f, None)
            lines.append(json.dumps(rec))
    dst.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return dst


def one_store(store: Path, *runs: Callable[[Path], Any]) -> Path:
    """A file holding several runs, as a store written before one run per file holds them (or files a user joined
    with ``cat``): each of ``runs`` writes its own store (``runs[k](path)``, in ``<store's folder>/parts/``, with its
    record there), then their lines are joined into ``store``, which has no record until it is scored."""
    parts = []
    for k, run in enumerate(runs):
        part = store.parent / "parts" / f"{store.stem}.{k}{store.suffix}"
        part.parent.mkdir(parents=True, exist_ok=True)
        run(part)
        parts.append(part)
    store.write_bytes(b"".join(p.read_bytes() for p in parts))
    return store
