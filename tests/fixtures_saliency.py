"""The saliency math on full attention tensors, shared by the tests: what the explainer's per-layer hooks must equal."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from vlamb_nb.saliency.methods import _as_np, _select


def attention_scores(attentions: Sequence[Any], queries: Sequence[int], keys: Sequence[int], *,
                     layers: Sequence[int] | int | None = None, heads: Sequence[int] | int | None = None) -> np.ndarray:
    """Mean attention from ``queries`` to each of ``keys`` over the chosen layers and heads, from every layer's
    whole (heads, seq, seq) weights (a leading batch axis of 1 is dropped)."""
    mats = [_as_np(a) for a in attentions]
    lay = _select(len(mats), layers, "layer")
    hd = _select(mats[0].shape[0], heads, "head")
    q, k = np.asarray(queries), np.asarray(keys)
    acc = np.zeros(len(k), dtype=np.float64)
    for li in lay:
        acc += mats[li][np.ix_(hd, q, k)].mean(axis=(0, 1))
    return acc / len(lay)
