"""Fetch throughput of ``vlamb-nb data fetch`` against ``huggingface_hub.snapshot_download``, on one local stand-in
hub, in one run (ratios are only comparable within a run).

The stand-in hub of the test suite (``tests/hubstub.py``: the real hub's listing, ``/resolve``, ETags, ranges) serves
one dataset repository at a pinned commit in two shapes: many small files (an image set, as MUCAR's) and a few
large ones (parquet shards, as Ref-Adv-s's). Each side downloads the same files at the same concurrency into a
fresh folder:

- ours: :func:`vlamb_nb.releases.fetch` of a release declaring that repository (listing with hashes, every byte
  through the bounded, resumable GET, each file's sha256 checked against the listing before it is placed, a journal
  line per file, the manifest last);
- theirs: ``snapshot_download(repo, revision=sha, max_workers=N)`` into a fresh cache (it checks the byte count, not
  the sha256).

Printed per shape: files, MB, seconds, files/s and MB/s for both, and ours/theirs. No target is gated (exit 0):
the numbers say what verification costs. The stand-in and both clients share the machine's cores.

Usage: python perf/bench_fetch.py [--small 1000] [--small-kb 20] [--large 4] [--large-mb 64] [--workers 8]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the suite's stand-in hub


def shape(kind: str, n: int, size: int) -> dict[str, bytes]:
    """``n`` files of ``size`` bytes each, different bytes per file (no two blobs alike)."""
    out = {}
    for i in range(n):
        seed = hashlib.sha256(f"{kind}{i}".encode()).digest()
        out[f"{kind}/{i:05d}.bin"] = (seed * (size // len(seed) + 1))[:size]
    return out


def ours(repo: str, sha: str, files: dict[str, bytes], home: Path, workers: int) -> float:
    import importlib

    from vlamb_nb.release_spec import HubFiles, Release

    fetch_module = importlib.import_module("vlamb_nb.releases.fetch")  # the module (the package exports the function)

    def count(root: Path) -> dict[str, int]:
        return {"files": sum(1 for p in root.rglob("*") if p.is_file())}

    rel = Release(paper="bench", name=f"hub:{repo}", licence="-", parts=(HubFiles(repo, ("*",), revision=sha),),
                  expected={"files": len(files)}, count=count, n_items=len(files), load={"source": "files"},
                  size="-")
    os.environ["VLAMB_DATA"] = str(home)
    fetch_module.release = lambda paper: rel  # the benchmark's release, not a registered paper's
    t = time.perf_counter()
    m = fetch_module.fetch("bench", progress=False, models=False, concurrency=workers)
    took = time.perf_counter() - t
    assert m["complete"] and len(m["files"]) == len(files), m["state"]
    return took


def theirs(repo: str, sha: str, files: dict[str, bytes], cache: Path, workers: int) -> float:
    from huggingface_hub import snapshot_download
    from huggingface_hub.utils import disable_progress_bars

    disable_progress_bars()  # as ours: no bar drawn on either side

    t = time.perf_counter()
    path = snapshot_download(repo, repo_type="dataset", revision=sha, cache_dir=cache, max_workers=workers)
    took = time.perf_counter() - t
    assert sum(1 for p in Path(path).rglob("*") if p.is_file()) == len(files)
    return took


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", type=int, default=1000, help="files in the small-file shape")
    ap.add_argument("--small-kb", type=int, default=20, help="size of each small file (kB)")
    ap.add_argument("--large", type=int, default=4, help="files in the large-file shape")
    ap.add_argument("--large-mb", type=int, default=64, help="size of each large file (MB)")
    ap.add_argument("--workers", type=int, default=8, help="downloads in flight, both sides")
    a = ap.parse_args(argv)

    import hubstub
    import pytest

    shapes = {"small files": shape("small", a.small, a.small_kb * 1000),
              "large files": shape("large", a.large, a.large_mb * 1_000_000)}
    tmp = Path(tempfile.mkdtemp(prefix="bench-fetch-"))
    mp = pytest.MonkeyPatch()
    rows = []
    try:
        with hubstub.StandInHub() as hub:
            hubstub.point_client_at(mp, hub.endpoint, tmp / "hf-home")
            for k, (name, files) in enumerate(shapes.items()):
                repo = f"bench/shape-{k}"
                sha = hub.add_repo(repo, files).sha
                mb = sum(len(d) for d in files.values()) / 1e6
                t_ours = ours(repo, sha, files, tmp / f"home-{k}", a.workers)
                t_theirs = theirs(repo, sha, files, tmp / f"cache-{k}", a.workers)
                rows.append((name, len(files), mb, t_ours, t_theirs))
                shutil.rmtree(tmp / f"home-{k}", ignore_errors=True)
                shutil.rmtree(tmp / f"cache-{k}", ignore_errors=True)
    finally:
        mp.undo()
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"fetch throughput on one local stand-in hub, {a.workers} downloads in flight, one run each "
          f"({os.cpu_count()} cores, shared with the stand-in)")
    head = (f"{'shape':<12} {'files':>6} {'MB':>8} | {'ours s':>7} {'files/s':>8} {'MB/s':>7} | "
            f"{'hf s':>7} {'files/s':>8} {'MB/s':>7} | {'ours/hf (files/s)':>17}")
    print(head)
    print("-" * len(head))
    for name, n, mb, t_o, t_h in rows:
        print(f"{name:<12} {n:>6} {mb:>8.1f} | {t_o:>7.2f} {n / t_o:>8.1f} {mb / t_o:>7.1f} | "
              f"{t_h:>7.2f} {n / t_h:>8.1f} {mb / t_h:>7.1f} | {t_h / t_o:>17.2f}")
    print("ours/hf > 1: ours is faster. Ours checks every file's sha256 against the listing before placing it; "
          "snapshot_download checks the byte count.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
