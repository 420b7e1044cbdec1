"""Cached, resumable generation: ``run(model, requests, store)``, batched or streamed per backend.

Finished requests (by request hash) are skipped and a failure is recorded per item instead of
stopping the run. How the rest is sent depends on the backend, never on the caller:

* a local model (any plain :class:`~vlamb_nb.models.base.VLM`) gets batches of ``batch_size``; each
  batch's answers are written when it returns. Out-of-memory during a batch halves the batch size (kept
  for the rest of the run) and retries, down to 1; an item that fails alone is recorded as failed.
* a remote endpoint (a :class:`~vlamb_nb.models.base.StreamingVLM`) gets every request at once and keeps
  ``concurrency`` in flight, sending the next as each answer arrives (no batch barrier); each answer is
  written to the store the moment it arrives (answers that arrive together share one fsync) and moves
  the progress bar. A crash loses at most the requests in flight.

The store has one writer: the thread that called :func:`run` (worker threads only hand answers back).

Every stored record carries the item it answers (``item_id``), the turn of the run that asked it (``turn``: a
:class:`~vlamb_nb.benchmarks.base.Turn`'s name, ``"answer"`` for a call outside a benchmark's chain) and the
request's ``meta``, beside the request hash it is keyed by. They are carried, not hashed: a store written before
they existed is still resumed by key, and read by the one compatibility reader (:func:`vlamb_nb.store.read_store`).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vlamb_nb.errors import SettingError
from vlamb_nb.hashing import canonical_json
from vlamb_nb.models.base import VLM, Generation, Request, StreamingVLM
from vlamb_nb.store import ANSWER, PredictionStore

RESULT_COLUMNS = ["request_id", "key", "benchmark", "setting", "text", "error", "finish_reason",
                  "prompt_tokens", "completion_tokens", "seconds", "image_sizes", "processed_image_sizes",
                  "option_logprobs", "cached", "item_id", "turn"]



def _progress(total: int, enabled: bool, desc: str):
    from vlamb_nb.progress import bar

    return bar(total=total, enabled=enabled, desc=desc, unit="req")


def _record(req: Request, key: str, gen: Generation, model: dict[str, Any], turn: str) -> dict[str, Any]:
    rec = gen.to_dict()
    rec.update(key=key, request_id=req.id, benchmark=req.benchmark, setting=req.setting,
               model=dict(model), params=req.params.to_dict(), prompt=req.prompt_text, item_id=req.item_id,
               turn=turn, meta={k: v for k, v in (req.meta or {}).items() if k != "item_id"})
    return rec


def is_oom(exc: BaseException) -> bool:
    """CUDA (or other accelerator) out-of-memory, recognised without importing torch."""
    return type(exc).__name__ == "OutOfMemoryError" or "out of memory" in str(exc).lower()


def _release_memory() -> None:
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


class _BatchOOM(Exception):
    def __init__(self, original: BaseException) -> None:
        super().__init__(str(original))
        self.original = original


def generate_batch(model: VLM, batch: Sequence[Request], *, raise_oom: bool = False) -> list[Generation]:
    """Call the backend; an exception fails every item of the batch with the error, never the run.

    With ``raise_oom`` an out-of-memory error is raised (as ``_BatchOOM``) so the caller can retry smaller.
    """
    t0 = time.perf_counter()
    try:
        gens = model.generate(list(batch))
    except Exception as e:  # noqa: BLE001 - recorded per item
        if raise_oom and is_oom(e):
            _release_memory()
            raise _BatchOOM(e) from e
        dt = time.perf_counter() - t0
        return [Generation(request_id=r.id, error=f"{type(e).__name__}: {e}", finish_reason="error",
                           seconds=dt / max(len(batch), 1)) for r in batch]
    if len(gens) != len(batch):
        return [Generation(request_id=r.id, error=f"backend returned {len(gens)} results for {len(batch)} requests",
                           finish_reason="error") for r in batch]
    # results are matched to requests by id, never by position alone: a backend that reorders them gets each
    # answer to its own request, and one that loses track fails those items instead of mislabelling them
    ids = [str(g.request_id) for g in gens]
    if ids == [r.id for r in batch]:
        return gens
    if len(set(ids)) < len(ids):
        return [Generation(request_id=r.id, error="backend returned results with repeated request ids",
                           finish_reason="error") for r in batch]
    by_id = dict(zip(ids, gens, strict=True))
    return [by_id.get(r.id) or Generation(request_id=r.id, error=f"backend returned no result for request {r.id!r}",
                                          finish_reason="error") for r in batch]


def run(model: VLM, requests: Sequence[Request], store: PredictionStore | str | os.PathLike | None = None, *,
        batch_size: int = 8, limit: int | None = None, progress: bool = True, retry_failed: bool = True,
        run_meta: dict[str, Any] | None = None, desc: str = "generate", concurrency: int | None = None,
        stream: bool | None = None, turn: str = ANSWER, reuse: Sequence[str | os.PathLike] = ()):
    """Generate for every request not already finished in ``store``; return one row per request.

    ``reuse``: other stores (other runs' files beside this one, :func:`vlamb_nb.store.choose_store`): a request
    one of them answered is not asked again; its answer is copied into ``store`` under this run (marked
    ``reused_from``), so the file holds every answer of its run.

    ``turn``: the name of the turn these requests are (stored with every answer, and a column of the result,
    beside each request's ``item_id``); a call outside a benchmark's chain of turns (a judge, a rewriter) is its
    one answer, :data:`~vlamb_nb.store.ANSWER`.

    ``concurrency``: requests in flight for a streaming (remote) backend, default its own setting; a local
    model ignores it. ``stream``: None chooses per backend (see the module docstring); False sends even a
    streaming backend batches of ``batch_size`` with a barrier after each (how remote runs went before
    streaming, kept to measure against). The returned frame's ``attrs`` hold ``strategy`` ("stream" or
    "batch"), ``batch_size`` (after any out-of-memory halving), ``oom_events`` and ``model_calls`` (batches
    sent, or requests when streamed).
    """
    import pandas as pd

    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    if concurrency is not None and concurrency < 1:
        raise ValueError("concurrency must be >= 1")
    streaming = isinstance(model, StreamingVLM) if stream is None else bool(stream)
    if streaming and not isinstance(model, StreamingVLM):
        raise ValueError(f"{model.info.model_id} ({model.info.backend}) answers batches only; use stream=None")
    reqs = list(requests)[: limit if limit is not None else None]
    if isinstance(store, PredictionStore):
        st = store
    elif store is not None:
        st = PredictionStore(store, run_meta=run_meta if run_meta is not None else default_run_meta(model))
    else:
        st = None
    try:  # a model named from bytes that are not UTF-8 (a lone surrogate) can be neither hashed nor stored
        canonical_json(model.info.to_dict()).encode("utf-8")
    except UnicodeEncodeError:
        raise SettingError(f"model {ascii(model.info.model_id)}: its identity holds text that is not UTF-8 (a lone "
                           "surrogate); name the model in UTF-8") from None
    keys = [r.key(model.info) for r in reqs]
    done = st.keys() if st is not None else set()
    if not retry_failed and st is not None:
        done |= st.failed_keys()
    todo = [(r, k) for r, k in zip(reqs, keys, strict=True) if k not in done]
    fresh: dict[tuple[str, str], dict[str, Any]] = {}  # by request hash and id: each request its own answer
    owns = st is not None and st._fh is None
    if st is not None and todo:
        st.open()
    try:
        reused = _reuse(st, todo, reuse, turn) if st is not None and todo and reuse else {}
    except BaseException:  # a full disk, Ctrl-C: the store's lock is not kept
        if owns and st is not None:
            st.close()
        raise
    todo = [(r, k) for r, k in todo if (k, r.id) not in reused]

    info = model.info.to_dict()

    def keep(pairs: Sequence[tuple[tuple[Request, str], Generation]]) -> None:
        recs = [_record(r, k, g, info, turn) for (r, k), g in pairs]
        if st is not None:
            recs = st.append_many(recs)
        for ((r, k), _), rec in zip(pairs, recs, strict=True):
            fresh[(k, r.id)] = rec

    size, oom_events, calls = batch_size, 0, 0
    try:
        bar = _progress(len(todo), progress and bool(todo), desc)
        if streaming:
            calls = len(todo)
            if todo:
                _stream(model, todo, keep, bar, concurrency)  # type: ignore[arg-type]
        else:
            size, oom_events, calls = _batches(model, todo, keep, bar, batch_size)
        bar.close()
    finally:
        if owns and st is not None:
            st.close()
    rows = []
    for r, k in zip(reqs, keys, strict=True):
        if (k, r.id) in fresh:
            rec, cached = fresh[(k, r.id)], False
        elif (k, r.id) in reused:
            rec, cached = reused[(k, r.id)], True
        else:  # the request's own stored answer, else the answer its hash has (two ids asking alike)
            rec, cached = st.answer(k, r.id), True  # type: ignore[union-attr]
        row = {c: rec.get(c) for c in RESULT_COLUMNS if c in rec}
        row.update(request_id=r.id, key=k, benchmark=r.benchmark, setting=r.setting, cached=cached,
                   item_id=r.item_id, turn=turn)
        rows.append(row)
    out = pd.DataFrame(rows, columns=RESULT_COLUMNS)
    out.attrs.update(strategy="stream" if streaming else "batch", batch_size=size, oom_events=oom_events,
                     model_calls=calls)
    log_generations(out, model=model.info.model_id, desc=desc)
    return out


def _reuse(st: PredictionStore, todo: list[tuple[Request, str]], donors: Sequence[str | os.PathLike],
           turn: str) -> dict[tuple[str, str], dict[str, Any]]:
    """The requests of ``todo`` another store answered (not failed), each answer copied into ``st`` as this run's
    (its own request id, item and turn; the store it came from in ``reused_from``)."""
    import warnings

    from vlamb_nb.errors import StoreError
    from vlamb_nb.store import TornLineWarning

    found: dict[tuple[str, str], dict[str, Any]] = {}
    for path in donors:
        if not Path(path).is_file():
            continue
        try:
            with warnings.catch_warnings():  # its torn last line is its own run's to repair, not this one's
                warnings.simplefilter("ignore", TornLineWarning)
                donor = PredictionStore(path)
        except StoreError as e:  # another run's damaged file: its answers are asked again, never guessed
            warnings.warn(f"answers not reused from {path}: {e}", stacklevel=3)
            continue
        copies = []
        for r, k in todo:
            if (k, r.id) in found or k not in donor:
                continue
            rec = {c: v for c, v in donor.answer(k, r.id).items() if c != "run"}  # type: ignore[union-attr]
            rec.update(request_id=r.id, benchmark=r.benchmark, setting=r.setting, item_id=r.item_id, turn=turn,
                       meta={m: v for m, v in (r.meta or {}).items() if m != "item_id"},
                       reused_from=Path(path).name)
            copies.append(((k, r.id), rec))
        for (pair, _), rec in zip(copies, st.append_many([c for _, c in copies]), strict=True):
            found[pair] = rec
    return found


def _batches(model: VLM, todo: list[tuple[Request, str]], keep, bar, size: int) -> tuple[int, int, int]:
    """Batches of ``size``, each kept when it returns; an out-of-memory batch is retried at half the size.
    Returns the final batch size, the out-of-memory events and the batches sent."""
    oom_events = calls = i = 0
    while i < len(todo):
        chunk = todo[i: i + size]
        calls += 1
        try:
            gens = generate_batch(model, [r for r, _ in chunk], raise_oom=True)
        except _BatchOOM as oom:
            oom_events += 1
            if size > 1:
                size = max(1, size // 2)
                bar.write(f"out of memory with {len(chunk)} requests per batch; retrying with {size}")
                continue
            gens = [Generation(request_id=r.id, finish_reason="error",
                               error=f"{type(oom.original).__name__} at batch size 1: {oom.original}")
                    for r, _ in chunk]
        keep(list(zip(chunk, gens, strict=True)))
        bar.update(len(chunk))
        i += len(chunk)
    return size, oom_events, calls


def _stream(model: StreamingVLM, todo: list[tuple[Request, str]], keep, bar, concurrency: int | None) -> None:
    """Send every request through ``model.stream`` and keep each answer as it arrives.

    An answer is filed under the request at the index the backend names, after checking that it answers
    that request (its id), so a backend that mixes answers up fails those items instead of mislabelling them.
    """
    reqs = [r for r, _ in todo]
    answered: set[int] = set()
    for finished in model.stream(reqs, concurrency=concurrency):
        pairs = []
        for i, g in finished:
            if not 0 <= i < len(todo) or i in answered:
                continue  # an index the run never asked for, or a second answer: dropped, counted below
            answered.add(i)
            if str(g.request_id) != reqs[i].id:
                g = Generation(request_id=reqs[i].id, finish_reason="error",
                               error=f"backend returned the answer to {g.request_id!r} for request {reqs[i].id!r}")
            pairs.append((todo[i], g))
        if pairs:
            keep(pairs)
            bar.update(len(pairs))
    missing = [i for i in range(len(todo)) if i not in answered]
    if missing:
        keep([(todo[i], Generation(request_id=reqs[i].id, finish_reason="error",
                                   error=f"backend returned no result for request {reqs[i].id!r}"))
              for i in missing])
        bar.update(len(missing))


def default_run_meta(model: VLM) -> dict[str, Any]:
    """Metadata for a run no benchmark described: the model and its quantization deviation."""
    from vlamb_nb.meta import RunMeta, quantization_deviation

    info = model.info
    devs = [quantization_deviation(info.quantization)] if info.quantization else []
    return RunMeta(model=info.to_dict(), deviations=devs).to_dict()


# -- did anything work? ------------------------------------------------------------------------------
GENERATION_LOG_ENV = "VLAMB_GENERATION_LOG"


def failure_summary(generations, *, top: int = 3) -> dict[str, Any]:
    """Requests, failures, and the first distinct errors with their counts (for one-line reasons)."""
    from collections import Counter

    errors = [str(e) for e in generations["error"]] if "error" in generations.columns else []
    errors = [e for e in errors if e and e not in ("None", "nan")]
    counts = Counter(_short_error(e) for e in errors)
    return {"requests": int(len(generations)), "failed": len(errors),
            "errors": [{"error": e, "count": n} for e, n in counts.most_common(top)],
            "distinct_errors": len(counts)}


def _short_error(error: str, width: int = 240) -> str:
    line = error.strip().splitlines()[0] if error.strip() else error
    return line if len(line) <= width else line[: width - 1] + "…"


def failure_line(summary: dict[str, Any]) -> str:
    """``31 of 31 requests failed: 31 × EndpointError: HTTP 401 ...`` (empty when nothing failed)."""
    if not summary["failed"]:
        return ""
    parts = "; ".join(f"{e['count']} × {e['error']}" for e in summary["errors"])
    more = summary["distinct_errors"] - len(summary["errors"])
    return (f"{summary['failed']} of {summary['requests']} requests failed: {parts}"
            + (f" (and {more} other distinct errors)" if more > 0 else ""))


def log_generations(generations, *, model: str, desc: str) -> None:
    """Append this call's counts to ``$VLAMB_GENERATION_LOG`` (set by ``reproduce`` per notebook), so a
    notebook whose model requests all failed is reported as failed, not as a score of 0."""
    path = os.environ.get(GENERATION_LOG_ENV)
    if not path or not len(generations):
        return
    import json

    entry = {"model": model, "desc": desc, **failure_summary(generations)}
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry, ensure_ascii=False) + "\n")
