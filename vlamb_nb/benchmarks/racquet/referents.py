"""RACQUET Table 1: do single-referent answers describe the largest or centermost referent?

For each question the candidate referents are boxes (COCO boxes of the subject's
category, or a user file). ``bbox_largest`` has the largest area, ``bbox_center`` the
smallest Euclidean distance from its centre to the image centre (absolute pixels by
default; the paper does not say). A response is grounded to a box ``bbox_r`` by a
pluggable grounder; the matched referent is the candidate with the best IoU. A response
"hits" when that referent is the largest or the centermost one.

Random baseline, as the paper defines it: the probability that a referent drawn
uniformly from the candidates is the largest or the centermost,
``p = |{largest, center}| / n`` (1/n when the two coincide, else 2/n), averaged over the
same responses as the model's rate.

McNemar pairing (the paper gives none; documented assumption): per response, the model's
hit (0/1) is paired with the hit of one referent drawn uniformly at random (seeded).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vlamb_nb.boxes import area, center, iou

Box = Sequence[float]


def largest_index(boxes: Sequence[Box]) -> int:
    """Index of the largest box by area (first one on ties)."""
    if not boxes:
        raise ValueError("no candidate boxes")
    areas = [area(b) for b in boxes]
    return max(range(len(boxes)), key=lambda i: (areas[i], -i))


def center_index(boxes: Sequence[Box], width: float, height: float, *, normalized: bool = False) -> int:
    """Index of the box whose centre is nearest the image centre (first one on ties).

    ``normalized`` measures in 0-1 coordinates per axis, which changes the winner on
    non-square images; the paper does not say which it used.
    """
    if not boxes:
        raise ValueError("no candidate boxes")
    cx, cy = width / 2.0, height / 2.0
    sx, sy = (1.0 / width, 1.0 / height) if normalized else (1.0, 1.0)

    def dist(b: Box) -> float:
        x, y = center(b)
        return math.hypot((x - cx) * sx, (y - cy) * sy)

    d = [dist(b) for b in boxes]
    return min(range(len(boxes)), key=lambda i: (d[i], i))


def salient_indices(boxes: Sequence[Box], width: float, height: float, *, normalized: bool = False) -> set[int]:
    """{largest, centermost}: one index when they coincide, else two."""
    return {largest_index(boxes), center_index(boxes, width, height, normalized=normalized)}


def random_baseline(boxes: Sequence[Box], width: float, height: float, *, normalized: bool = False) -> float:
    """P(a uniformly drawn referent is the largest or the centermost) = |{largest, center}| / n."""
    return len(salient_indices(boxes, width, height, normalized=normalized)) / len(boxes)


def best_match(box: Box, candidates: Sequence[Box]) -> tuple[int | None, float]:
    """``argmax_i IoU(box, candidate_i)``; ``(None, 0.0)`` when no candidate overlaps (counted, not guessed)."""
    if not candidates:
        return None, 0.0
    scores = [iou(box, c) for c in candidates]
    i = max(range(len(scores)), key=lambda k: (scores[k], -k))
    return (i, scores[i]) if scores[i] > 0 else (None, 0.0)


@dataclass
class SaliencyOutcome:
    """One grounded response: which referent it matched and whether that one is salient."""

    n_candidates: int
    matched: int | None
    match_iou: float
    largest: int
    centermost: int
    hit: bool | None  # None: the response could not be matched to a referent
    baseline: float
    random_hit: bool
    status: str  # "matched" | "no_box" | "no_overlap" | "single_candidate"

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)


def analyse_response(response_box: Box | None, candidates: Sequence[Box], width: float, height: float, *,
                     rng: Any, min_iou: float = 0.0, normalized: bool = False) -> SaliencyOutcome:
    """Match one response box to the candidates and score it against the salient set.

    Questions with a single candidate are not ambiguous and cannot be scored (``hit=None``).
    A draw is taken from ``rng`` for every response, matched or not, so the McNemar pairing
    of one response never depends on whether another one was grounded.
    """
    n = len(candidates)
    draw = int(rng.integers(n)) if n else -1
    if n == 0:
        return SaliencyOutcome(0, None, 0.0, -1, -1, None, float("nan"), False, "no_candidates")
    li, ci = largest_index(candidates), center_index(candidates, width, height, normalized=normalized)
    sal = {li, ci}
    base = len(sal) / n
    rnd = draw in sal
    if n < 2:
        return SaliencyOutcome(n, None, 0.0, li, ci, None, base, rnd, "single_candidate")
    if response_box is None:
        return SaliencyOutcome(n, None, 0.0, li, ci, None, base, rnd, "no_box")
    m, score = best_match(response_box, candidates)
    if m is None or score <= min_iou:
        return SaliencyOutcome(n, None, score, li, ci, None, base, rnd, "no_overlap")
    return SaliencyOutcome(n, m, score, li, ci, m in sal, base, rnd, "matched")


def saliency_table(rows, *, by: str = "model", seed: int = 0, min_iou: float = 0.0, normalized: bool = False):
    """Table 1 from one row per single-referent response.

    ``rows`` needs ``by``, ``response_box`` (xyxy or None), ``candidate_boxes`` (list of xyxy),
    ``width``, ``height``. Returns (per-response outcomes, table with the response rate,
    the random baseline, counts of unmatched responses and McNemar's test).
    """
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    outs = []
    for _, r in rows.iterrows():
        o = analyse_response(r["response_box"], list(r["candidate_boxes"] or []), float(r["width"]),
                             float(r["height"]), rng=rng, min_iou=min_iou, normalized=normalized)
        outs.append(o.to_dict())
    per = pd.concat([rows.reset_index(drop=True), pd.DataFrame(outs)], axis=1)
    table = []
    for key, g in per.groupby(by, sort=False):
        m = g[g["hit"].notna()]
        row: dict[str, Any] = {by: key, "responses": len(g), "scored": len(m),
                               "unmatched": int((g["status"] != "matched").sum())}
        if len(m):
            hits = m["hit"].astype(bool).to_numpy()
            row["Responses"] = 100.0 * hits.mean()
            row["Random"] = 100.0 * m["baseline"].mean()
            row.update(_mcnemar(hits, m["random_hit"].astype(bool).to_numpy()))
        table.append(row)
    return per, pd.DataFrame(table)


def _mcnemar(model_hit, random_hit) -> dict[str, Any]:
    """McNemar on (model hit, random-draw hit) pairs; exact when discordant pairs are few."""
    b = int((model_hit & ~random_hit).sum())
    c = int((~model_hit & random_hit).sum())
    try:
        from vlamb_nb.stats import mcnemar

        res = mcnemar(model_hit, random_hit)
        p = float(res.p)
    except ImportError:  # the statistics module is optional here; statsmodels gives the same test
        from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

        table = [[int((model_hit & random_hit).sum()), b], [c, int((~model_hit & ~random_hit).sum())]]
        p = float(sm_mcnemar(table, exact=(b + c) < 25).pvalue)
    return {"mcnemar_b": b, "mcnemar_c": c, "mcnemar_p": p}


def saliency_analysis(scored, grounder, *, by: str = "model", labels: tuple[str, ...] | None = ("B", "C"), seed: int = 0,
                      min_iou: float = 0.0, normalized: bool = False, progress: bool = True):
    """Table 1: ground each Implicit/High Risk response and test largest-or-centermost against chance.

    ``labels=None`` grounds every valid response (a demonstration population, not the paper's).
    Returns ``(per_response, table)``. Responses without candidate boxes or a local image are
    counted in ``table["skipped"]``; the grounder's choices are documented in :mod:`vlamb_nb.scorers.grounding`.
    """
    import pandas as pd

    from vlamb_nb.benchmarks.racquet.referents import saliency_table
    from vlamb_nb.images import load_image
    from vlamb_nb.scorers.grounding import ground_rows

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


# -- a scripted grounder: not a detector -----------------------------------------------------------------------------
#: the scripted grounder's chance that a single-referent answer's box lands on the largest or centermost referent
#: (where the question has another): GPT-4o's 77.5% (Table 1)
SCRIPTED_SALIENT = 0.775
#: its chance of finding no box for an answer (counted as unmatched, as a detector's miss is)
SCRIPTED_NO_BOX = 0.05
SCRIPTED_GROUNDER = "scripted grounder: not a detector"


class ScriptedGrounder:
    """A stand-in for the paper's lang-SAM grounding, beside the scripted stand-in's answers: not a detector. For
    each answer (by its row key) it returns a box near one of the question's candidate referents, the largest or
    centermost with chance :data:`SCRIPTED_SALIENT` where the question has another (every one is salient where
    none is), else another referent, shifted by up to a fifth of its size (a near-miss box that still matches its
    referent best), and now and then none (:data:`SCRIPTED_NO_BOX`); drawn from the seed and the key alone. So
    Table 1's matching, baseline and McNemar test run on boxes whose hit rate is known in advance."""

    def __init__(self, rows: Any, *, seed: int = 0, key_column: str = "request_id", chance: float = SCRIPTED_SALIENT):
        self.name = f"{SCRIPTED_GROUNDER} (seed {seed})"
        self.seed, self.chance = seed, chance
        self._boxes = {str(k): list(b) for k, b in zip(rows[key_column], rows["candidate_boxes"], strict=True)
                       if isinstance(b, list | tuple) and len(b)}

    def expected(self, candidates: Sequence[Box], width: float, height: float) -> float:
        """The chance a matched box of this question is on a salient referent."""
        return 1.0 if len(salient_indices(candidates, width, height)) == len(candidates) else self.chance

    def ground(self, image: Any, text: str, key: str | None = None) -> list[Any]:
        from vlamb_nb.benchmarks.base import _draw
        from vlamb_nb.scorers.grounding import Detection

        boxes = self._boxes.get(str(key))
        if not boxes or _draw(self.seed, "racquet grounder", key, "none") < SCRIPTED_NO_BOX:
            return []
        width, height = image.size
        sal = sorted(salient_indices(boxes, width, height))
        others = [i for i in range(len(boxes)) if i not in sal]
        pool = sal if not others or _draw(self.seed, "racquet grounder", key, "salient") < self.chance else others
        i = pool[min(int(_draw(self.seed, "racquet grounder", key, "which") * len(pool)), len(pool) - 1)]
        x1, y1, x2, y2 = boxes[i]
        dx = (x2 - x1) * 0.2 * (2 * _draw(self.seed, "racquet grounder", key, "dx") - 1)
        dy = (y2 - y1) * 0.2 * (2 * _draw(self.seed, "racquet grounder", key, "dy") - 1)
        return [Detection((x1 + dx, y1 + dy, x2 + dx, y2 + dy), 1.0, "scripted")]
