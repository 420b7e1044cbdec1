"""What the page tests build on: released-format Ref-Adv per-row files with chosen hits, and a run folder's figures.

A per-row file in the official format (``*_predictions.jsonl``: ``first_iou``, ``pred_box_xyxy_first``, ...) is a
RUN ``vlamb-nb compare`` reads without any data beside it, so a comparison of any model names (a script tag, a
Chinese name) is a few lines; a row is a hit when the predicted box is the gold box, a miss when it is far away.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

GOLD = [10.0, 10.0, 50.0, 50.0]
FAR = [200.0, 200.0, 240.0, 240.0]


def write_official_run(path: Path, model: str, hits: set[int], n: int, prompt: str = "direct") -> Path:
    """An official per-row file of ``n`` rows, two rows per image, right on the rows in ``hits``."""
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            hit = i in hits
            f.write(json.dumps({
                "row_idx": i, "file_name": f"{i // 2:012d}.jpg", "normal_caption": f"the object number {i}",
                "image_source": "coco_val2017", "human_authored": i % 3 == 0, "use_negation": i % 4 == 0,
                "distractor_count": 2 + i % 5, "gt_bbox_xyxy": GOLD, "pred_box_xyxy_first": GOLD if hit else FAR,
                "first_iou": 1.0 if hit else 0.0, "first_hit": hit, "parse_error": "", "retry_followup_used": False,
                "model_full_name": model, "prompt_id": prompt, "pred_box_expected_format": "abs_xyxy",
            }, ensure_ascii=False) + "\n")
    return path


def official_runs(folder: Path, models: dict[str, set[int]], n: int = 40) -> list[Path]:
    """One per-row file per model name (its hits given), in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    return [write_official_run(folder / f"run{k}_direct_predictions.jsonl", name, hits, n)
            for k, (name, hits) in enumerate(models.items())]


def png(path: Path, size: tuple[int, int] = (40, 30), color: str = "#0173B2") -> Path:
    """A small real PNG at ``path`` (folders made)."""
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, color).save(path, format="PNG")
    return path


#: a value of 20,000 characters without a space (a path, a digest, a token run): it must wrap, not widen the page
LONG = "x" * 20_000
#: text with control bytes (NUL, ESC, DEL, a C1 control) and a lone surrogate: none of them may reach the HTML
CONTROL = "a\x00b\x1bc\x7fd\x85e\ud800f"


def awkward_run(run: Path, figs: Path, outside: Path) -> dict:
    """A run folder's ``results.json`` content whose tables a page must make readable: snake_case headers with
    the model column last, p-values of 0 and NaN, a dict of counts nested two deep, a value of 20,000
    characters, control bytes; a figure linked in from outside the run and one its cell saved with ``../``
    (outside ``figures/``). Writes the figures (``outside``: a folder outside the run and its figures)."""
    png(figs / "vague" / "fig4.png")
    png(outside / "secret.png", color="#123456")
    (figs / "vague" / "leak.png").symlink_to(outside / "secret.png")
    png(outside / "escaped.png", color="#654321")
    results = {"vague": {
        "ok": True, "skipped": None, "error": None, "warnings": [], "seconds": 2.0,
        "parameters": {"profile": "offline", "note": LONG}, "generations": [],
        "figures": [{"table": "negation", "name": "fig4", "title": "Accuracy with and without negation",
                     "files": [os.path.relpath(figs / "vague" / "fig4.png", run)]},
                    {"table": "negation", "name": "escaped",
                     "files": [os.path.relpath(outside / "escaped.png", run)]}],
        "results": {
            "negation": [{"slice": "negated", "value": 0.5, "ci_low": 0.25, "ci_high": 0.75, "paper_in_ci": True,
                          "p": 0.0, "p_holm": float("nan"), "model": "Qwen2.5-VL-7B"},
                         {"slice": "plain", "value": 0.612345, "ci_low": 0.5, "ci_high": 0.7, "paper_in_ci": False,
                          "p": 0.0123456, "p_holm": 0.0246912, "model": "Qwen2.5-VL-7B"}],
            "data_stats": {"queries": 1278, "pairs": 501, "per_language": {"Chinese": 426, "English": 426,
                                                                        "Malay": 426},
                           "group_sizes": {"2": 420, "3": 81}, "grouping": "question_id"},
            "long_value": LONG,
            "control": [{"answer": CONTROL, "n": 1}],
        }}}
    return results
