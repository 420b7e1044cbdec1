"""Bootstrap means of values that barely repeat, by index gathering, faster than ``Generator.integers``.

Own code on numpy's raw bit stream. A mean of continuous values has nothing for the count
path of :mod:`.bootstrap` to merge, so each resample draws ``n`` item indices and sums the
values they pick. Drawing the indices is most of the cost: ``Generator.integers(0, n)`` hands out
one 32-bit half of a PCG64 word per index through a call per half, about three times the cost of
the word itself, and a per-resample Python loop pays the same price. :func:`resample_means` draws
the *same* indices as ``rng.integers(0, n, size=(B, n))`` from the raw words
(``PCG64.random_raw``) with numpy's own rule, vectorized:

- the 32-bit halves are used low half first, as ``next_uint32`` hands them out;
- an index is the high word of ``u * n``; a half whose low word falls below
  ``(2**32 - n) % n`` is rejected and the next one taken (Lemire's method, as numpy draws it).

Each resample is summed as one row of ``n`` values, as before, so the means are bit for bit
those of ``np.take(values, rng.integers(0, n, size=(rows, n))).sum(axis=1) / n`` and the
generator is left where ``integers`` would leave it. Where that cannot be vouched for (another
bit generator, a half-word already buffered, a numpy whose ``integers`` draws otherwise: checked
once against ``integers`` itself), the plain ``integers`` path runs instead, with the same numbers.

Why about 2x a loop and not the 3x ``perf/bench_stats.py`` asks for (6,027 values x 10,000
resamples, CPU seconds on the 2-core development machine): the loop takes 0.43-0.48 s, of which
``integers`` is ~0.24 s; here the raw words alone take 0.083 s, ``u * n`` and its shift 0.04 s,
the rejection check 0.012 s, the gather 0.043 s (``take(mode="clip")``: half the cost of the
bounds-checked one) and the row sums 0.026 s, so ~0.2 s is the floor for these indices and
0.22-0.25 s is reached; 3x would need 0.15 s. A row that spans two blocks is the only one copied
(after the first rejected draw, every block used to be copied whole). More threads were measured
and not kept: the caller drawing even blocks and a helper thread odd ones (``PCG64.advance``;
the same indices, bit for bit) took 0.217 s against 0.243 s for one thread on the idle machine,
and 0.298 s against 0.251 s with one other busy process (``take`` scales 1.3x on two threads,
the raw words 1.6x, and a thread waiting for the GIL behind a busy core costs more than the
second core gives). Faster than that needs other indices, i.e. other results for the same seed.
"""

from __future__ import annotations

import functools

import numpy as np

BLOCK_ELEMENTS = 49_152  # indices per block: larger blocks amortise the calls, 2 MB ones spill the cache
INTEGERS_BLOCK_ELEMENTS = 16_384  # the same for Generator.integers (fresh arrays: beyond 128 kB, page faults)
RAW_ELEMENTS = 500_000  # below this many indices, setting up the raw path costs more than it saves


def resample_means(values: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``n_resamples`` resamples (``n`` draws with replacement each) of ``values``.

    Equal, bit for bit, to drawing ``rng.integers(0, n, size=(rows, n))`` block after block and
    averaging each row.
    """
    vals = np.ascontiguousarray(values, dtype=float)
    n = len(vals)
    if n_resamples * n < RAW_ELEMENTS or not _raw_path_usable(rng, n):
        return _integers_means(vals, n_resamples, rng, max(1, INTEGERS_BLOCK_ELEMENTS // n))
    rows = min(max(1, BLOCK_ELEMENTS // n), n_resamples)
    if (rows * n) % 2:  # whole words per block, so blocks end on a row unless a draw was rejected
        rows += 1
    words = rows * n // 2
    bg = rng.bit_generator
    start = bg.state
    threshold = np.uint32((2**32 - n) % n)
    scratch = _Scratch(words)
    out = np.empty(n_resamples)
    done, block = 0, 0  # resamples finished; blocks drawn
    carry = vals[:0]  # the first values of a resample whose row the last block did not finish
    while True:
        picked, keep = _block(bg, words, vals, threshold, scratch)
        head = 0  # this block's values that finish the carried row
        if len(carry):  # only that row is copied (after a rejection, every block carries one)
            head = min(n - len(carry), len(picked))
            row = np.concatenate([carry, picked[:head]])
            if len(row) < n:  # a block short of even that (tiny blocks, many rejections)
                carry, block = row, block + 1
                continue
            out[done] = row.reshape(1, n).sum(axis=1)[0] / n  # summed as every other row is
            done += 1
        full = min((len(picked) - head) // n, n_resamples - done)
        out[done:done + full] = picked[head:head + full * n].reshape(full, n).sum(axis=1) / n
        done += full
        if done == n_resamples:
            need = head + full * n  # values this block gave
            used = 2 * words * block + (need if keep is None else int(np.flatnonzero(keep)[need - 1]) + 1)
            break
        carry = picked[head + full * n:].copy()  # the block's buffer is reused
        block += 1
    _set_state_after(bg, start, used)
    return out


def _integers_means(vals: np.ndarray, n_resamples: int, rng: np.random.Generator, rows: int) -> np.ndarray:
    """The reference path: ``Generator.integers`` in cache-sized blocks."""
    n = len(vals)
    out = np.empty(n_resamples)
    for start in range(0, n_resamples, rows):
        size = min(rows, n_resamples - start)
        out[start:start + size] = np.take(vals, rng.integers(0, n, size=(size, n))).sum(axis=1) / n
    return out


def _indices(u: np.ndarray, n: int, threshold: np.uint32, scratch: _Scratch | None = None,
             ) -> tuple[np.ndarray, np.ndarray | None]:
    """Indices from 32-bit halves ``u`` and the mask of halves kept (None: all kept, the usual case)."""
    idx = np.multiply(u, np.uint64(n), dtype=np.uint64, out=None if scratch is None else scratch.idx)
    np.right_shift(idx, np.uint64(32), out=idx)  # u * n < 2**64 for any n < 2**32
    idx = idx.view(np.int64)  # < n after the shift: the same numbers, the index type np.take wants
    if threshold:
        low = np.multiply(u, np.uint32(n), out=None if scratch is None else scratch.low)  # low word, wrapped
        if low.min() < threshold:
            keep = low >= threshold
            return idx[keep], keep
    return idx, None


class _Scratch:
    """Buffers reused block after block: fresh ones of this size cost a page fault every 4 kB."""

    def __init__(self, words: int) -> None:
        self.idx = np.empty(2 * words, np.uint64)
        self.low = np.empty(2 * words, np.uint32)
        self.picked = np.empty(2 * words)


def _block(bg: np.random.PCG64, words: int, vals: np.ndarray, threshold: np.uint32,
           scratch: _Scratch) -> tuple[np.ndarray, np.ndarray | None]:
    u = bg.random_raw(words).view(np.uint32)
    idx, keep = _indices(u, len(vals), threshold, scratch)
    picked = scratch.picked[:len(idx)]
    return np.take(vals, idx, out=picked, mode="clip"), keep  # in range by construction: no bounds check


def _set_state_after(bg: np.random.PCG64, start: dict, used: int) -> None:
    """Put ``bg`` where ``integers`` leaves it after ``used`` 32-bit halves from ``start``."""
    bg.state = start
    if used == 0:
        return
    bg.advance((used - 1) // 2)
    high = int(bg.random_raw(1)[0]) >> 32  # the last word touched; numpy keeps its high half, used or not
    state = bg.state
    state["has_uint32"], state["uinteger"] = used % 2, high  # an odd half stays buffered
    bg.state = state


def _raw_path_usable(rng: np.random.Generator, n: int) -> bool:
    bg = rng.bit_generator
    if type(bg) is not np.random.PCG64 or not 2 <= n < 2**32 - 1:
        return False
    return not bg.state["has_uint32"] and _draws_like_integers()


@functools.cache
def _draws_like_integers() -> bool:
    """Whether this numpy's ``Generator.integers`` draws exactly the indices :func:`_indices` derives."""
    for seed, n in ((0, 6027), (1, 7), (2, 3 * 2**30), (3, 2**31 + 1)):  # the last two reject ~25% / ~50%
        bg = np.random.PCG64(seed)
        u = bg.random_raw(2048).view(np.uint32)
        idx, _ = _indices(u, n, np.uint32((2**32 - n) % n))
        want = np.random.Generator(np.random.PCG64(seed)).integers(0, n, size=len(idx))
        if not np.array_equal(idx, want):
            return False
    return True
