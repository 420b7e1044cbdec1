"""Batched, cached, resumable generation: ``run(model, requests, store)``.

Finished requests (by request hash) are skipped, each new generation is written to the
store as soon as its batch returns, and a failure inside a batch is recorded per item
instead of stopping the run.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

from vlamb_nb.models.base import VLM, Generation, Request
from vlamb_nb.store import PredictionStore

RESULT_COLUMNS = ["request_id", "key", "benchmark", "setting", "text", "error", "finish_reason",
                  "prompt_tokens", "completion_tokens", "seconds", "image_sizes", "processed_image_sizes",
                  "option_logprobs", "cached"]


def _progress(total: int, enabled: bool, desc: str):
    from tqdm.auto import tqdm

    return tqdm(total=total, disable=not enabled, desc=desc, unit="req")


def _record(req: Request, key: str, gen: Generation, model: VLM) -> dict[str, Any]:
    rec = gen.to_dict()
    rec.update(key=key, request_id=req.id, benchmark=req.benchmark, setting=req.setting,
               model=model.info.to_dict(), params=req.params.to_dict(), prompt=req.prompt_text)
    return rec


def generate_batch(model: VLM, batch: Sequence[Request]) -> list[Generation]:
    """Call the backend; an exception fails every item of the batch with the error, never the run."""
    t0 = time.perf_counter()
    try:
        gens = model.generate(list(batch))
    except Exception as e:  # noqa: BLE001 - recorded per item
        dt = time.perf_counter() - t0
        return [Generation(request_id=r.id, error=f"{type(e).__name__}: {e}", finish_reason="error",
                           seconds=dt / max(len(batch), 1)) for r in batch]
    if len(gens) != len(batch):
        return [Generation(request_id=r.id, error=f"backend returned {len(gens)} results for {len(batch)} requests",
                           finish_reason="error") for r in batch]
    return gens


def run(model: VLM, requests: Sequence[Request], store: PredictionStore | str | os.PathLike | None = None, *,
        batch_size: int = 8, limit: int | None = None, progress: bool = True, retry_failed: bool = True,
        run_meta: dict[str, Any] | None = None, desc: str = "generate"):
    """Generate for every request not already finished in ``store``; return one row per request."""
    import pandas as pd

    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    reqs = list(requests)[: limit if limit is not None else None]
    if isinstance(store, PredictionStore):
        st = store
    elif store is not None:
        st = PredictionStore(store, run_meta=run_meta)
    else:
        st = None
    keys = [r.key(model.info) for r in reqs]
    done = st.keys() if st is not None else set()
    if not retry_failed and st is not None:
        done |= st.failed_keys()
    todo = [(r, k) for r, k in zip(reqs, keys, strict=True) if k not in done]
    fresh: dict[str, dict[str, Any]] = {}
    owns = st is not None and st._fh is None
    if st is not None and todo:
        st.open()
    try:
        bar = _progress(len(todo), progress and bool(todo), desc)
        for i in range(0, len(todo), batch_size):
            chunk = todo[i: i + batch_size]
            gens = generate_batch(model, [r for r, _ in chunk])
            for (r, k), g in zip(chunk, gens, strict=True):
                rec = _record(r, k, g, model)
                if st is not None:
                    rec = st.append(rec)
                fresh[k] = rec
            bar.update(len(chunk))
        bar.close()
    finally:
        if owns and st is not None:
            st.close()
    rows = []
    for r, k in zip(reqs, keys, strict=True):
        if k in fresh:
            rec, cached = fresh[k], False
        else:
            rec, cached = st.get(k), True  # type: ignore[union-attr]
        row = {c: rec.get(c) for c in RESULT_COLUMNS if c in rec}
        row.update(request_id=r.id, key=k, benchmark=r.benchmark, setting=r.setting, cached=cached)
        rows.append(row)
    return pd.DataFrame(rows, columns=RESULT_COLUMNS)
