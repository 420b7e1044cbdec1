"""Bootstrap means of values that barely repeat: two indices per random draw, parts drawn in parallel.

Own code on numpy's bit generators. A mean of continuous values has nothing for the count
path of :mod:`.bootstrap` to merge, so each resample draws ``n`` item indices and sums the
values they pick. Drawing the indices is most of the cost, and a per-resample loop over
``Generator.integers(0, n, n)`` spends one 32-bit half of a PCG64 word per index. Here one half
gives *two* indices (for ``n <= 2**16``; Brackett-Rozinsky & Lemire's batched form of Lemire's
method): ``u * n`` has the first index in its high word, and its low word times ``n`` has the
second; the pair is exactly uniform on ``n x n`` because the half is rejected, and drawn again,
when the last low word falls below ``2**32 mod n**2`` (Lemire's threshold for a range of
``n**2``; the pair is the high word of ``u * n**2`` written in base ``n``). Larger ``n`` draws
one index per half with ``Generator.integers``.

Seed semantics: the resamples are cut into parts of about ``PART_ELEMENTS`` indices; each part is
drawn from its own PCG64, seeded by one 64-bit draw of the caller's generator, so the means are a
function of the generator's state (so of the seed), ``n``, the number of resamples and this
module's block and part sizes: the same on every machine and for any number of threads. They are
not the means of ``Generator.integers``'s indices (the previous engine drew exactly those, at
twice the raw words per index); like the count path of :mod:`.bootstrap`, which draws
multinomials, the resample distribution is the textbook one and the random numbers are our own.
The parts run on up to ``MAX_THREADS`` threads (numpy releases the GIL in the draws, the gather
and the sums), never more than the cores this process may use. The point estimate is computed
from the data, not from these draws.

Costs (``perf/bench_stats.py`` sizes, 6,027 values x 10,000 resamples, 2-core machine): the loop
0.41-0.47 s; one thread here 0.17 s (raw words 0.042 s, index arithmetic ~0.05 s, gather 0.042 s,
row sums 0.016 s, rejections and calls the rest), two threads 0.093-0.10 s when the second core is
free; a shared machine has slow spells of its second core (0.13-0.16 s), which the benchmark
meets by taking the best of alternating runs.
"""

from __future__ import annotations

import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import numpy as np

BLOCK_ELEMENTS = 1 << 18  # indices per block: 1 << 16 spends 20% more on calls, 1 << 19 gains nothing
PART_ELEMENTS = 1 << 21  # indices per part (one generator each): ~10 ms of work, far more than a thread costs
MAX_THREADS = 4
THREAD_ELEMENTS = 1 << 22  # below this many indices, one thread (starting a pool costs more than it saves)
PAIR_LIMIT = 1 << 16  # n <= this: two indices per 32-bit half (n**2 <= 2**32)


def resample_means(values: np.ndarray, n_resamples: int, rng: np.random.Generator,
                   threads: int | None = None) -> np.ndarray:
    """Means of ``n_resamples`` resamples (``n`` draws with replacement each) of ``values``.

    ``threads``: how many threads draw parts (default: the usable cores, at most ``MAX_THREADS``);
    it changes the time taken, never the numbers.
    """
    vals = np.ascontiguousarray(values, dtype=float)
    n = len(vals)
    rows = part_rows(n)
    starts = range(0, n_resamples, rows)
    seeds = rng.integers(0, 2**64, size=len(starts), dtype=np.uint64)
    out = np.empty(n_resamples)
    jobs = [(np.random.PCG64(int(seed)), out[start:start + rows])
            for seed, start in zip(seeds, starts, strict=True)]
    workers = min(len(jobs), _usable_threads() if threads is None else max(1, threads))
    if workers == 1 or n * n_resamples < THREAD_ELEMENTS:
        _parts_means(vals, deque(jobs))
        return out
    # parts are taken from one queue as threads come free: a core slowed by another process draws
    # fewer of them, and which thread draws a part never changes what it draws
    queue = deque(jobs)
    with ThreadPoolExecutor(workers - 1) as pool:
        helpers = [pool.submit(_parts_means, vals, queue) for _ in range(workers - 1)]
        _parts_means(vals, queue)
        for helper in helpers:
            helper.result()
    return out


def part_rows(n: int) -> int:
    """Resamples per part: whole blocks (no short ones inside a part), about ``PART_ELEMENTS`` indices."""
    block_rows = max(1, BLOCK_ELEMENTS // n)
    return block_rows * max(1, PART_ELEMENTS // (block_rows * n))


def _usable_threads() -> int:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(MAX_THREADS, cores))


def _parts_means(vals: np.ndarray, queue: deque[tuple[np.random.BitGenerator, np.ndarray]]) -> None:
    """Take parts from ``queue`` until it is empty; fill each part's ``out`` with resample means,
    ``BLOCK_ELEMENTS`` indices at a time, from its own generator alone.

    The buffers serve every part this thread takes: fresh ones cost a page fault every 4 kB.
    """
    n = len(vals)
    rows = max(1, BLOCK_ELEMENTS // n)
    idx = np.empty(rows * n + 1, np.int64)  # + 1: an odd block still draws whole pairs
    low = np.empty((rows * n + 1) // 2, np.uint32)
    picked = np.empty(rows * n)
    while True:
        try:
            bg, out = queue.popleft()  # deque.popleft is atomic: no part is taken twice
        except IndexError:
            return
        for start in range(0, len(out), rows):
            size = min(rows, len(out) - start)
            count = size * n
            draw_indices(bg, n, count, idx, low)
            np.take(vals, idx[:count], out=picked[:count], mode="clip")  # in range by construction
            out[start:start + size] = picked[:count].reshape(size, n).sum(axis=1) / n


def draw_indices(bg: np.random.BitGenerator, n: int, count: int, out: np.ndarray,
                 low: np.ndarray | None = None) -> np.ndarray:
    """``count`` independent uniform indices in ``[0, n)`` from ``bg``, written to ``out[:count]``.

    ``out`` needs room for ``count + 1`` (int64); ``low`` (uint32, ``(count + 1) // 2``) is scratch.
    """
    if n > PAIR_LIMIT:
        out[:count] = np.random.Generator(bg).integers(0, n, size=count)
        return out[:count]
    halves = (count + 1) // 2
    low = np.empty(halves, np.uint32) if low is None else low[:halves]
    first, second = out[:halves], out[halves:2 * halves]
    u = bg.random_raw((halves + 1) // 2).view(np.uint32)[:halves]
    threshold = (1 << 32) % (n * n)
    _pairs(u, n, first, second, low)
    if threshold:
        bad = np.flatnonzero(low < threshold)
        while len(bad):  # drawn again, in order, until accepted: each pair stays exactly uniform
            u = bg.random_raw((len(bad) + 1) // 2).view(np.uint32)[:len(bad)]
            a, b = np.empty(len(bad), np.int64), np.empty(len(bad), np.int64)
            low_again = np.empty(len(bad), np.uint32)
            _pairs(u, n, a, b, low_again)
            ok = low_again >= threshold
            first[bad[ok]], second[bad[ok]] = a[ok], b[ok]
            bad = bad[~ok]
    return out[:count]  # an odd count leaves the last pair's second index out


def _pairs(u: np.ndarray, n: int, first: np.ndarray, second: np.ndarray, low: np.ndarray) -> None:
    """Two indices per 32-bit ``u``: high words of ``u * n`` and of ``(u * n mod 2**32) * n``.

    ``low`` gets the last low word, ``(u * n**2) mod 2**32``, for the rejection check.
    """
    wide = first.view(np.uint64)
    np.multiply(u, np.uint64(n), out=wide, dtype=np.uint64)
    np.right_shift(wide, np.uint64(32), out=wide)
    np.multiply(u, np.uint32(n), out=low)  # the low word, wrapped
    wide = second.view(np.uint64)
    np.multiply(low, np.uint64(n), out=wide, dtype=np.uint64)
    np.right_shift(wide, np.uint64(32), out=wide)
    np.multiply(low, np.uint32(n), out=low)
