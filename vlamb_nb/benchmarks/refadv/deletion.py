"""Table 4's descriptor deletion: a text model extracts an expression's descriptors and rewrites it without one."""

from __future__ import annotations

import os
import random

from vlamb_nb.benchmarks.refadv.parse import clean_rewrite, parse_descriptors
from vlamb_nb.benchmarks.refadv.prompts import EXTRACT_PROMPT, OFFICIAL_SEED, REWRITE_PROMPT
from vlamb_nb.benchmarks.refadv.score import _failed, _text
from vlamb_nb.models.base import DecodingParams, Request, user_message


def delete_descriptors(items, rewriter, *, seed: int = 0, store: str | os.PathLike | None = None,
                       batch_size: int = 8, progress: bool = True, max_new_tokens: int = 128):
    """Table 4: extract descriptors, delete one at random (seeded per item), rewrite without it.

    Adds ``deleted_descriptor``, ``deleted_expression``, ``deletion_ok`` and ``deletion_status``
    (``ok``, ``generation_failed``, ``no_descriptor``, ``empty_rewrite``, ``unchanged``). An item
    whose extraction or rewrite fails keeps its original expression (counted, never dropped).
    """
    from vlamb_nb import runner

    params = DecodingParams(max_new_tokens=max_new_tokens, do_sample=False, seed=OFFICIAL_SEED)
    ids, exprs = [str(i) for i in items["id"]], [str(e) for e in items["expression"]]
    ex_reqs = [Request(id=f"{i}::extract", messages=[user_message(EXTRACT_PROMPT.format(expression=e))],
                       params=params, benchmark="refadv", setting="deletion:extract", meta={"item_id": i})
               for i, e in zip(ids, exprs, strict=True)]
    ex = runner.run(rewriter, ex_reqs, store, batch_size=batch_size, progress=progress, desc="extract descriptors")
    status = ["generation_failed" if _failed(err) else "no_descriptor" for err in ex["error"]]
    chosen: list[str | None] = []
    for k, (i, e, text) in enumerate(zip(ids, exprs, ex["text"], strict=True)):
        desc = [] if _failed(ex["error"].iloc[k]) else parse_descriptors(_text(text), e)
        chosen.append(random.Random(f"{seed}:{i}").choice(desc) if desc else None)
    todo = [k for k, d in enumerate(chosen) if d]
    rw_reqs = [Request(id=f"{ids[k]}::rewrite",
                       messages=[user_message(REWRITE_PROMPT.format(descriptor=chosen[k], expression=exprs[k]))],
                       params=params, benchmark="refadv", setting="deletion:rewrite",
                       meta={"item_id": ids[k]}) for k in todo]
    rw = runner.run(rewriter, rw_reqs, store, batch_size=batch_size, progress=progress, desc="rewrite")
    out = items.copy()
    out["deleted_descriptor"] = chosen
    out["deleted_expression"] = exprs
    for k, text, err in zip(todo, rw["text"], rw["error"], strict=True):
        new = "" if _failed(err) else clean_rewrite(_text(text))
        if _failed(err):
            status[k] = "generation_failed"
        elif not new:
            status[k] = "empty_rewrite"
        elif new.lower() == exprs[k].strip().lower():
            status[k] = "unchanged"
        else:
            status[k] = "ok"
            out.loc[out.index[k], "deleted_expression"] = new
    out["deletion_status"] = status
    out["deletion_ok"] = [st == "ok" for st in status]
    return out
