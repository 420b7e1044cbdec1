"""One benchmark's saliency study in one call: run the model, explain its answers, measure box mass.

``run_study`` chains the public benchmark API (``load`` → ``first_requests`` → ``evaluate``) with
:func:`explain_items`, so the
saliency notebook stays a list of calls and any benchmark whose rows carry target boxes
(Ref-Adv ``gt_xyxy``, VAGUE ``person_bbox`` + ``addressee``, RACQUET ``candidate_boxes``) works. It uses the
benchmarks, so it sits beside ``reproduce`` above them, not in :mod:`vlamb_nb.saliency`, which they may use.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vlamb_nb.meta import Deviation

# which released data a study can use as is (images included); others use a generated sample
REAL_SOURCES = {"refadv": ("refadv", "demo")}


def explain_items(model: Any, requests: Sequence[Any], items: Any, *, benchmark: str = "",
                  methods: Sequence[str] = ("gradient",), scored: Any = None, limit: int | None = None,
                  id_column: str = "id", progress: bool = True, **explain_kwargs: Any):
    """Saliency maps for benchmark requests and the mass each map puts in the item's target boxes.

    ``scored``: the benchmark's scored predictions: a ``correct`` column joined by item id, and the
    stored output (``text`` by ``request_id``), which is explained as given (teacher-forced) so the map
    is about the answer that was scored, not a fresh generation.
    Returns ``(records DataFrame, {(request id, method): SaliencyMap})``. A request that fails
    (e.g. an unreadable image) is recorded in ``records.attrs["failures"]``, never dropped silently.
    """
    from vlamb_nb.progress import bar as progress_bar
    from vlamb_nb.saliency.analysis import (
        _scale_boxes,
        records_frame,
        reference_size,
        role_records,
        target_boxes,
    )
    from vlamb_nb.saliency.methods import Explainer

    ex = model if isinstance(model, Explainer) else Explainer(model)
    rows = {str(r[id_column]): r for _, r in items.iterrows()}
    correct: dict[str, Any] = {}
    if scored is not None and "correct" in scored.columns:
        key = "item_id" if "item_id" in scored.columns else id_column
        correct = {str(k): v for k, v in zip(scored[key], scored["correct"], strict=True)}
    outputs: dict[str, str] = {}
    if scored is not None and {"request_id", "text"} <= set(scored.columns):
        outputs = {str(k): t for k, t in zip(scored["request_id"], scored["text"], strict=True)
                   if isinstance(t, str) and t.strip()}
    reqs = list(requests)[: limit if limit is not None else None]
    records: list[dict[str, Any]] = []
    maps: dict[tuple[str, str], Any] = {}
    failures: list[dict[str, str]] = []
    bar = progress_bar(total=len(reqs) * len(methods), enabled=progress, desc="saliency", unit="map")
    for req in reqs:
        item_id = req.item_id
        row = rows.get(item_id)
        if row is None:
            failures.append({"request_id": req.id, "error": f"item {item_id!r} not in the items"})
            bar.update(len(methods))
            continue
        ok = correct.get(item_id)
        ok = None if ok is None or (isinstance(ok, float) and np.isnan(ok)) else bool(ok)
        for method in methods:
            try:
                kw = dict(explain_kwargs)
                if str(req.id) in outputs and "answer" not in kw:
                    kw["answer"] = outputs[str(req.id)]
                smap = ex.explain(req, method, **kw)
            except Exception as e:  # noqa: BLE001 - counted per request, the run goes on
                failures.append({"request_id": req.id, "method": method, "error": f"{type(e).__name__}: {e}"})
                bar.update(1)
                continue
            maps[(req.id, method)] = smap
            boxes = _scale_boxes(target_boxes(row), reference_size(row), smap.size)
            records += role_records(smap, boxes, item_id=item_id, benchmark=benchmark, correct=ok)
            bar.update(1)
    bar.close()
    frame = records_frame(records)
    frame.attrs["failures"] = failures
    return frame, maps


@dataclass
class Study:
    benchmark: str
    setting: str
    items: Any
    scored: Any
    records: Any
    maps: dict[tuple[str, str], Any]
    failures: list[dict[str, str]]
    deviations: list[Deviation] = field(default_factory=list)
    source: str = ""
    requests: list[Any] = field(default_factory=list)

    def boxes_for(self, request_id: str, size: tuple[int, int]) -> dict[str, Any]:
        """The single target boxes of a request's item, scaled to an image of ``size``."""
        from vlamb_nb.saliency.analysis import _box_like, _scale_boxes, reference_size, target_boxes

        item_id = next((r.item_id for r in self.requests if str(r.id) == str(request_id)), str(request_id))
        match = self.items[self.items["id"].astype(str) == item_id] if "id" in self.items.columns else self.items[:0]
        if match.empty:
            return {}
        row = match.iloc[0].to_dict()
        boxes = _scale_boxes(target_boxes(row), reference_size(row), size)
        return {k: v for k, v in boxes.items() if _box_like(v)}

    def plot_item(self, methods: Any = None, request_id: str | None = None):
        """One item (the first explained, by default) under each method, with its target boxes."""
        from vlamb_nb.errors import SettingError
        from vlamb_nb.saliency.analysis import plot_methods

        if not self.maps:
            raise SettingError(f"{self.benchmark}: no saliency maps to plot")
        rid = request_id or next(iter(self.maps))[0]
        chosen = methods or list(dict.fromkeys(m for _, m in self.maps))
        maps = [self.maps[(rid, m)] for m in chosen if (rid, m) in self.maps]
        if not maps:
            raise SettingError(f"no maps for request {rid!r}")
        return plot_methods(maps, boxes=self.boxes_for(rid, maps[0].size))

    def request_for(self, row: Any):
        """The request behind a row of ``scored`` (for the explorer's on-demand saliency)."""
        from vlamb_nb.errors import SettingError

        rid = str(row.get("request_id"))
        for r in self.requests:
            if str(r.id) == rid:
                return r
        # a row from a follow-up turn (Ref-Adv's repair request) is explained through its item's first request
        item = str(row.get("item_id", row.get("id", rid)))
        for r in self.requests:
            if r.item_id == item:
                return r
        raise SettingError(f"no request {rid!r} (item {item!r}) in this study")


def default_source(benchmark: str, *, n: int = 4, seed: int = 0, directory: str | os.PathLike | None = None) -> str:
    """The real release when it is beside the checkout and has its images, else a generated sample."""
    from vlamb_nb.benchmarks import get_benchmark
    from vlamb_nb.paths import sample_dir, shared_data_dir

    root = shared_data_dir()
    if benchmark in REAL_SOURCES and root is not None:
        cand = root.joinpath(*REAL_SOURCES[benchmark])
        if cand.exists():
            return str(cand)
    out = Path(directory) if directory is not None else sample_dir(benchmark, n, seed, kind="saliency-sample")
    return str(get_benchmark(benchmark).make_sample(out, n=n, seed=seed))


def run_study(model: Any, benchmark: str, *, source: str | os.PathLike | None = None, setting: str | None = None,
              n_items: int = 3, methods: tuple[str, ...] = ("attention", "rollout", "gradient"),
              max_new_tokens: int | None = 16, max_answer_tokens: int = 16, store: str | os.PathLike | None = None,
              explainer: Any = None, progress: bool = False) -> Study:
    """Generate, score and explain the first ``n_items`` requests of ``benchmark``."""
    from vlamb_nb.benchmarks import get_benchmark
    from vlamb_nb.saliency.methods import Explainer

    bench = get_benchmark(benchmark)
    setting = bench.check_setting(setting or bench.default_setting)
    src = str(source) if source is not None else default_source(benchmark, n=max(n_items, 2))
    items = bench.load(src)
    # requests as the real run builds them (Ref-Adv's prompt and box format follow the model), answered through
    # the benchmark's own run, parse and score (Ref-Adv's repair turn included)
    full = bench.first_requests(model, items, setting)
    cap = {"max_new_tokens": max_new_tokens} if max_new_tokens is not None else {}
    reqs = (bench.first_requests(model, items, setting, **cap) if cap else full)[:n_items]
    deviations = list(bench.deviations(model.info, setting))
    if cap and any(r.params.max_new_tokens > max_new_tokens for r in full[:n_items]):
        deviations.append(Deviation("max_new_tokens", str(full[0].params.max_new_tokens), f"{max_new_tokens} (demo)",
                                    "saliency"))
    first = {str(r.meta.get("item_id")) for r in reqs}
    part = items[items["id"].astype(str).isin(first)]
    scored = bench.evaluate(model, part, setting, store=store, progress=progress, **cap)
    ex = explainer if explainer is not None else Explainer(model)
    records, maps = explain_items(ex, reqs, items, benchmark=benchmark, methods=methods, scored=scored,
                                  progress=progress, max_new_tokens=max_answer_tokens)
    deviations.append(Deviation("saliency target", "(no paper shows saliency)",
                                f"the stored answer, first {max_answer_tokens} tokens, teacher-forced", "saliency"))
    return Study(benchmark, setting, items, scored, records, maps, records.attrs.get("failures", []), deviations,
                 src, list(reqs))


# the box each benchmark's question is about, for the correct-vs-wrong comparison
PRIMARY_ROLES = {"refadv": "gold", "vague": "addressee", "racquet": "largest"}


def combine(studies: dict[str, Study]):
    """All studies' box records in one frame."""
    import pandas as pd

    frames = [s.records for s in studies.values() if len(s.records)]
    return pd.concat(frames, ignore_index=True) if frames else None


def comparisons(studies: dict[str, Study], *, n_resamples: int = 1000):
    """Correct minus wrong mass in each benchmark's primary box (rows without both outcomes show counts only)."""
    import pandas as pd

    from vlamb_nb.saliency.analysis import compare_correct_wrong

    out = [compare_correct_wrong(s.records, role=PRIMARY_ROLES.get(b, "gold"), n_resamples=n_resamples)
           for b, s in studies.items() if len(s.records)]
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def one_patch_check(explainer: Any, *, size: tuple[int, int] = (100, 60), seed: int = 0) -> dict[str, Any]:
    """Plumbing check, not a validation of saliency: hide all image tokens but one from the language model,
    explain a fixed answer with the gradient method, and report the map's mass in that token's cell.

    With every other image token masked out of attention, the gradient there is zero by construction, so
    any gradient method passes; what can fail is our side: the mask, the positions the gradient is read at,
    and the token-to-cell geometry of :mod:`.grid` (the mass must land in the right rectangle). Whether a
    method's maps depend on the model and the image at all is :mod:`.sanity`'s job."""
    from PIL import Image

    from vlamb_nb.models import IMAGE_SLOT, Request, user_message

    w, h = size
    img = Image.fromarray((np.random.default_rng(seed).random((h, w, 3)) * 255).astype(np.uint8))
    req = Request("one-patch", [user_message(IMAGE_SLOT, "Which one? (A) left (B) right")], images=[img])
    layout = explainer.explain(req, "attention", answer="B").layout
    seg = layout.segments[-1]
    r, c = seg.shape[0] - 1, seg.shape[1] // 2
    k = int(seg.indices[r * seg.shape[1] + c])
    smap = explainer.explain(req, "gradient", answer="B", visible_tokens=[k])
    x0, y0, x1, y1 = seg.region
    cw, ch = (x1 - x0) / seg.shape[1], (y1 - y0) / seg.shape[0]
    cell = (x0 + c * cw, y0 + r * ch, x0 + (c + 1) * cw, y0 + (r + 1) * ch)
    px, py = smap.peak()
    return {"family": explainer.family, "checks": "masking, gradient positions and token-to-cell geometry "
            "(not saliency faithfulness)", "segment": seg.name, "cell": [r, c], "mass_in_cell": smap.box_mass(cell),
            "peak_in_cell": bool(cell[0] <= px <= cell[2] and cell[1] <= py <= cell[3])}


def comparison_finding(comparison: Any) -> Any:
    """What the correct-versus-wrong table can say: for each benchmark whose answers hold both outcomes, whether the
    mass in its target box differs between right and wrong answers; else why it cannot (every answer wrong, as a
    random checkpoint's are)."""
    from vlamb_nb.findings import Finding, difference, join, not_shown

    if comparison is None or not len(comparison):
        return not_shown("right against wrong answers", "a scored study on some benchmark", None)
    out = []
    for b, part in comparison.groupby("benchmark", sort=False):
        both = part[(part["n_correct"] > 0) & (part["n_wrong"] > 0)] if "n_correct" in part else part.iloc[:0]
        if not len(both) or "gap" not in both.columns:
            n_c, n_w = int(part["n_correct"].max()), int(part["n_wrong"].max())
            out.append(not_shown(f"{b}: saliency of right against wrong answers", f"answers of both kinds (here "
                                 f"{n_c} right, {n_w} wrong)", "model=<a real model>",
                                 would="whether right answers put more mass in the target box"))
            continue
        for _, r in both.iterrows():
            out.append(difference(f"right answers ({b}, {r['method']})", "wrong ones", r["gap"], r.get("ci_low"),
                                  r.get("ci_high"), what=f"mass in the {r['role']} box", unit="", p=r.get("p"),
                                  method="two-sample bootstrap; permutation p",
                                  n=int(r["n_correct"] + r["n_wrong"]), n_of="answer"))
    return join(out) if out else Finding("Nothing to compare.", None)

