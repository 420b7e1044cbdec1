"""Size and speed of the pages' item tables at real scale.

Builds a synthetic reproduce run at the releases' sizes — MUCAR's 1,278 queries, Ref-Adv's 1,142 rows,
V-FLUTE's 723 test items — and one paper (VAGUE) at 5,000 items, every item with an image of its own (a crop of
a real photo where the released Ref-Adv demo images are beside the checkout, else a generated picture with
texture, so thumbnails weigh what photos weigh), answered by a scripted model through the real run path
(``Benchmark.evaluate`` into stores). Then prints:

- the time to read the runs as the report does (``reproduce.recorded_runs``: each store's run record),
- the time to build ``report.html`` from them (prompts rebuilt, thumbnails drawn, JSON, template) and its bytes,
  with what the thumbnails and the item data weigh,
- in headless Chromium (Debian's ``/usr/lib/chromium/chromium``, skipped without it or playwright): the time to
  first contentful paint, to every item table ready, and to apply a text filter, a slice filter and a headline
  link to the 5,000-item table (each the median of ``--repeat``), opened from disk.

    python perf/bench_page.py                 # the sizes above
    python perf/bench_page.py --scale 0.1     # a tenth of every size (a quick check)
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
PHOTOS = ROOT.parent / "shared" / "data" / "refadv" / "demo" / "images"
CHROMIUM = Path("/usr/lib/chromium/chromium")
#: (paper, setting, make_sample's n, the items that n gives about): the releases' sizes, one paper at 5,000
SIZES = [("mucar", "full", 630, "1,275 queries: the generator's nearest to the release's 1,278"), ("refadv", "direct", 1142, "1,142 rows"),
         ("vflute", "zero_shot", 723, "723 items"), ("vague", "vlm", 5000, "5,000 items")]


class Pictures:
    """A distinct picture per call: a crop of one of the photos (shifted, flipped), else generated texture."""

    def __init__(self, seed: int = 0) -> None:
        from PIL import Image

        self.rng = np.random.default_rng(seed)
        self.photos = [Image.open(p).convert("RGB") for p in sorted(PHOTOS.glob("*.jpg"))] if PHOTOS.is_dir() else []
        self.kind = f"crops of {len(self.photos)} photos" if self.photos else "generated textures"

    def make(self, size: tuple[int, int]):
        from PIL import Image, ImageOps

        w, h = size
        if self.photos:
            src = self.photos[int(self.rng.integers(len(self.photos)))]
            cw, ch = int(src.width * self.rng.uniform(0.5, 1)), int(src.height * self.rng.uniform(0.5, 1))
            x, y = int(self.rng.integers(src.width - cw + 1)), int(self.rng.integers(src.height - ch + 1))
            img = src.crop((x, y, x + cw, y + ch)).resize((w, h))
            return ImageOps.mirror(img) if self.rng.random() < 0.5 else img
        base = self.rng.integers(0, 255, (h // 8 + 1, w // 8 + 1, 3), dtype=np.uint8)
        img = Image.fromarray(base).resize((w, h), Image.BICUBIC)
        noise = self.rng.normal(0, 12, (h, w, 3))
        return Image.fromarray(np.clip(np.asarray(img, float) + noise, 0, 255).astype(np.uint8))

    def encoded(self, size: tuple[int, int], fmt: str = "JPEG") -> bytes:
        buf = io.BytesIO()
        self.make(size).save(buf, format=fmt, quality=85) if fmt == "JPEG" else self.make(size).save(buf, format=fmt)
        return buf.getvalue()


def _swap_files(folder: Path, pics: Pictures) -> int:
    """Every image file of a generated sample replaced by a distinct picture of its size and format."""
    from PIL import Image

    n = 0
    for p in sorted(folder.rglob("*")):
        if p.suffix.lower() in (".png", ".jpg", ".jpeg") and p.is_file():
            with Image.open(p) as im:
                size, fmt = im.size, im.format or "PNG"
            p.write_bytes(pics.encoded(size, "JPEG" if fmt == "JPEG" else "PNG"))
            n += 1
    return n


def _swap_column(items: Any, pics: Pictures) -> Any:
    """Images held in the items (``{"bytes", "path"}``) replaced by distinct pictures of their size."""
    from PIL import Image

    out = []
    for v in items["image"]:
        with Image.open(io.BytesIO(v["bytes"])) as im:
            size = im.size
        out.append({"bytes": pics.encoded(size), "path": v.get("path")})
    return items.assign(image=out)


def build_run(root: Path, scale: float) -> tuple[Path, dict[str, Any], list[Any], dict[str, int]]:
    """The run folder (stores, ``results.json``), its results, its runs with their items, items per paper."""
    from fixtures_stored import respond

    from vlamb_nb import get_benchmark
    from vlamb_nb.compare import Run
    from vlamb_nb.models import ScriptedModel

    pics = Pictures()
    print(f"images: {pics.kind}")
    run = root / "run"
    results: dict[str, Any] = {}
    runs: list[Any] = []
    counts: dict[str, int] = {}
    for paper, setting, n, _ in SIZES:
        bench = get_benchmark(paper)
        t = time.perf_counter()
        src = bench.make_sample(root / f"sample-{paper}", n=max(2, int(n * scale)), seed=0)
        _swap_files(root / f"sample-{paper}", pics)
        items = bench.load(src)
        if "image" in items.columns and isinstance(items["image"].iloc[0], dict):
            items = _swap_column(items, pics)
        store = run / paper / "scripted" / f"{paper}__{setting}.jsonl"
        store.parent.mkdir(parents=True, exist_ok=True)
        options = {"scorer": "none"} if paper == "vflute" else {}  # no metric model to load
        scored = bench.evaluate(ScriptedModel(respond, model_id="scripted"), items, setting, store=store,
                                progress=False, **options)
        heads = bench.headline({setting: scored}, n_resamples=200)
        results[paper] = {"ok": True, "parameters": {"source": str(src), **options},
                          "results": {"headline": [h.to_dict() for h in heads]}}
        runs.append(Run(model="scripted", paper=paper, setting=setting, scored=scored, items=items))
        counts[paper] = len(scored)
        print(f"  {paper:7s} {len(scored):6,d} items  (sample and run: {time.perf_counter() - t:.1f} s)")
    (run / "results.json").write_text(json.dumps(results, default=str), encoding="utf-8")
    return run, results, runs, counts


def opened_pages(path: Path, repeat: int) -> Iterator[tuple[Any, list[str], dict[str, float]] | str]:
    """``path`` opened from disk in headless Chromium ``repeat`` times, at a laptop's size, once every item table
    is ready: each page, the errors it raised and its first paint and load (ms); one string saying why instead
    where there is no browser to open it in."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        yield "playwright is not installed (the dev extra)"
        return
    if not CHROMIUM.is_file():
        yield f"no Chromium at {CHROMIUM}"
        return
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                              args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        for _ in range(repeat):
            page = b.new_page(viewport={"width": 1366, "height": 768})
            errors: list[str] = []
            page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
            page.goto(path.as_uri(), wait_until="load")
            page.wait_for_function("document.querySelectorAll('.items:not([data-ready])').length === 0")
            yield page, errors, page.evaluate("""() => ({
                paint: (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime,
                load: performance.getEntriesByType('navigation')[0].loadEventEnd})""")
            page.close()
        b.close()


def browser_timings(path: Path, box: str, repeat: int, n: int) -> dict[str, float] | str:
    """Milliseconds to first paint, to every item table ready, and to apply filters in ``#box``."""
    out: dict[str, list[float]] = {}
    for got in opened_pages(path, repeat):
        if isinstance(got, str):
            return got
        page, errors, t = got
        out.setdefault("first contentful paint", []).append(t["paint"])
        out.setdefault("load event (every item table ready)", []).append(t["load"])
        timed = """async ([box, what]) => {
            const b = document.getElementById(box), t0 = performance.now();
            if (what === "text") { const q = b.querySelector('.it-q'); q.value = 'a'; q.dispatchEvent(new Event('input')); }
            if (what === "clear") { const q = b.querySelector('.it-q'); q.value = ''; q.dispatchEvent(new Event('input')); }
            if (what === "slice") { const s = b.querySelector('.it-slice'); s.selectedIndex = 1; s.dispatchEvent(new Event('change')); }
            if (what === "link") { b.closest('section').querySelector('a.it-link').click(); }
            if (what === "text" || what === "clear") {  // the table filters once typing pauses (150 ms)
                const c = b.querySelector('.it-count'), was = c.textContent;
                await new Promise(r => { const o = new MutationObserver(() => { o.disconnect(); r(); });
                    o.observe(c, {childList: true, characterData: true, subtree: true});
                    setTimeout(() => { o.disconnect(); r(); }, 2000); });
                if (c.textContent === was) { return NaN; }
            }
            await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
            return performance.now() - t0; }"""
        for what, label in (("text", f"filter by text ({n:,} items; the 150 ms pause in typing included)"),
                            ("clear", "clear the filter (the pause included)"),
                            ("slice", "filter by slice"), ("link", "headline link -> its items")):
            out.setdefault(label, []).append(page.evaluate(timed, [box, what]))
        if errors:
            return f"page errors: {errors[:3]}"
    return {k: statistics.median(v) for k, v in out.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="every size times this (default 1: the real sizes)")
    ap.add_argument("--repeat", type=int, default=3, help="browser runs; the median is printed")
    ap.add_argument("--keep", type=Path, default=None, help="write the run here and keep it (default: a temp dir)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT / "tests"))  # the scripted answers of the stored-run tests
    sys.path.insert(0, str(ROOT))  # the package of this checkout, whatever is installed

    from vlamb_nb import report_card
    from vlamb_nb.report_html import write_run_page
    from vlamb_nb.report_items import THUMB_PX, THUMB_QUALITY
    from vlamb_nb.reproduce import recorded_runs

    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        run, results, runs, counts = build_run(root, args.scale)
        t, cpu = time.perf_counter(), time.process_time()
        reread, error, _ = recorded_runs(run)
        rescore_s, rescore_cpu = time.perf_counter() - t, time.process_time() - cpu
        if error:
            print(f"reading the run records failed: {error}")
            return 1
        card = report_card.build(results)
        t, cpu = time.perf_counter(), time.process_time()
        page = write_run_page(run, results, card, runs=runs)
        build_s, build_cpu = time.perf_counter() - t, time.process_time() - cpu
        text = page.read_text(encoding="utf-8")
        thumbs = sum(len(m) for m in re.findall(r"data:image/webp;base64,[A-Za-z0-9+/=]+", text))
        data = sum(len(m) for m in re.findall(r'class="it-data">(.*?)</script>', text, flags=re.S))
        n_images = text.count("data:image/webp;base64,")
        print(f"\n{sum(counts.values()):,} items in {len(counts)} papers "
              f"({', '.join(f'{p} {n:,}' for p, n in counts.items())}); {n_images:,} thumbnails "
              f"({THUMB_PX} px WebP q{THUMB_QUALITY}, one per distinct image)")
        print(f"read the run records (recorded_runs):   {rescore_s:7.1f} s  ({rescore_cpu:.1f} s of processor time; "
              f"{len(reread)} stores)")
        print(f"build report.html:                     {build_s:7.1f} s  ({build_cpu:.1f} s of processor time, all "
              "threads)")
        print(f"report.html:                           {len(text.encode()) / 1e6:7.2f} MB  (thumbnails "
              f"{thumbs / 1e6:.2f} MB, {thumbs / max(n_images, 1) / 1e3:.1f} kB each; item data without them "
              f"{(data - thumbs) / 1e6:.2f} MB)")
        timings = browser_timings(page, "items-vague", args.repeat, counts["vague"])
        if isinstance(timings, str):
            print(f"browser: skipped ({timings})")
        else:
            print(f"in headless Chromium, from disk (median of {args.repeat}; load average "
                  f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores):")
            for k, v in timings.items():
                print(f"  {k:40s} {v:8.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
