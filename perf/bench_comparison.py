"""Size and speed of ``comparison.html`` at the Ref-Adv release's scale: 30 models × 1,142 items, every item with
its image.

Builds 30 released-format Ref-Adv runs on the 1,142 Ref-Adv-s rows (the released ones where they lie beside the
checkout, the others generated in the official row format, each seeded by its name: boxes near the gold or
elsewhere, some replies with no box) and the items they answer as the release's parquet, one picture per image
(a crop of a real photo where the demo's images are beside the checkout, else generated texture, so thumbnails
weigh what photos weigh). Compares them as ``vlamb-nb compare RUNS --source refadv=PARQUET`` does, then prints:

- the time to compare (values, paired tests and ranks on every slice) and to write the page;
- ``comparison.html``'s size, with what the thumbnails and the item data weigh (the target: at most 10 MB);
- in headless Chromium (Debian's ``/usr/lib/chromium/chromium``; skipped without it or playwright), opened from
  disk: the time until every item table is ready (target: under 1 s), and the time each filter takes to show its
  rows (target: under 100 ms): text (typed a key at a time: the table filters once per pause in typing, 150 ms
  after the last key, and how many times it filtered is printed), outcome ("every model wrong", "only X right"),
  slice, "A right, B wrong" (two choices: two filters), a paired test's items, models disagree (after "show all":
  two filters), a sort, and (no target) opening one item and the folded table of every paired test. Each is the
  median of ``--repeat``. On a machine shared with other work, the load average printed says how much of a core
  the browser had.

    python perf/bench_comparison.py                # 30 models, 2,000 resamples
    python perf/bench_comparison.py --models 8     # a quicker check
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("VLAMB_SHARED_DATA", ROOT.parent / "shared" / "data"))
CHROMIUM = Path(os.environ.get("VLAMB_CHROMIUM", "/usr/lib/chromium/chromium"))
ROWS = 1142
#: the targets the issue sets
MAX_MB, MAX_READY_MS, MAX_FILTER_MS = 10.0, 1000.0, 100.0
#: the page's pause in typing before it filters (templates/_items.html.j2)
DEBOUNCE_MS = 150


def base_rows() -> tuple[list[dict[str, Any]], str]:
    """The 1,142 Ref-Adv-s rows (expression, gold box, flags): from a released run beside the checkout, else
    generated in their shape."""
    runs = sorted((SHARED / "refadv" / "predictions").glob("*_predictions.jsonl"))
    if runs:
        rows = [json.loads(line) for line in runs[0].read_text(encoding="utf-8").splitlines() if line.strip()]
        return rows, f"the Ref-Adv-s rows of {runs[0].name}"
    rng = random.Random(0)
    rows = []
    for i in range(ROWS):
        x, y = rng.uniform(0, 500), rng.uniform(0, 350)
        rows.append({"row_idx": i, "file_name": f"{i // 2:012d}.jpg", "normal_caption": f"the object number {i}",
                     "image_source": "coco_val2017", "human_authored": i % 3 == 0, "use_negation": i % 3 == 1,
                     "distractor_count": 2 + i % 7, "gt_bbox_xyxy": [x, y, x + rng.uniform(20, 130),
                                                                     y + rng.uniform(20, 120)]})
    return rows, "generated rows in the release's shape"


def run_lines(rows: list[dict[str, Any]], name: str) -> str:
    """One released-format run of ``rows``: per row a box near the gold (a hit, mostly) or elsewhere, or none."""
    from vlamb_nb.benchmarks.refadv.score import first_iou

    rng = random.Random(int(hashlib.sha256(name.encode()).hexdigest()[:8], 16))
    p_hit = 0.2 + 0.6 * rng.random()
    out = []
    for r in rows:
        gt = [float(v) for v in r["gt_bbox_xyxy"]]
        roll = rng.random()
        if roll < 0.03:
            pred, err = [], "no_bbox_found"
        elif roll < 0.03 + p_hit:
            d = rng.uniform(-3, 3)
            pred, err = [gt[0] + d, gt[1] + d, gt[2] + d, gt[3] + d], ""
        else:
            x, y = rng.uniform(0, 400), rng.uniform(0, 300)
            pred, err = [x, y, x + rng.uniform(5, 90), y + rng.uniform(5, 90)], ""
        iou = first_iou(pred, gt)
        out.append(json.dumps({
            "row_idx": r["row_idx"], "file_name": r["file_name"], "normal_caption": r["normal_caption"],
            "image_source": r["image_source"], "human_authored": r["human_authored"],
            "use_negation": r["use_negation"], "distractor_count": r["distractor_count"],
            "gt_bbox_xyxy": r["gt_bbox_xyxy"], "pred_box_xyxy_first": pred, "first_iou": iou, "first_hit": iou >= 0.5,
            "parse_error": err, "retry_followup_used": False, "model_full_name": f"Qwen/{name}", "prompt_id": "direct",
            "pred_box_expected_format": "abs_xyxy"}))
    return "\n".join(out) + "\n"


def write_items(rows: list[dict[str, Any]], path: Path) -> str:
    """The items as the release's parquet (the hub schema), one distinct picture per image file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sys.path.insert(0, str(ROOT / "perf"))
    from bench_page import Pictures

    pics = Pictures()
    images: dict[str, bytes] = {}
    sizes: dict[str, tuple[int, int]] = {}  # one size per image, large enough for every box on it
    for r in rows:
        w, h = sizes.get(r["file_name"], (640, 480))
        sizes[r["file_name"]] = (int(max(w, r["gt_bbox_xyxy"][2] + 1)), int(max(h, r["gt_bbox_xyxy"][3] + 1)))
    out = []
    for r in rows:
        box = r["gt_bbox_xyxy"]
        w, h = sizes[r["file_name"]]
        if r["file_name"] not in images:
            images[r["file_name"]] = pics.encoded((w, h))
        out.append({"image": {"bytes": images[r["file_name"]], "path": r["file_name"]}, "file_name": r["file_name"],
                    "normal_caption": r["normal_caption"], "solution": [float(v) for v in box], "width": w,
                    "height": h, "image_source": r["image_source"], "human_authored": bool(r["human_authored"]),
                    "use_negation": bool(r["use_negation"]), "distractors": str(r["distractor_count"])})
    schema = pa.schema([
        ("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())])), ("file_name", pa.string()),
        ("normal_caption", pa.string()), ("solution", pa.list_(pa.float64())), ("width", pa.int64()),
        ("height", pa.int64()), ("image_source", pa.string()), ("human_authored", pa.bool_()),
        ("use_negation", pa.bool_()), ("distractors", pa.string())])
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(out, schema=schema), buf)
    path.write_bytes(buf.getvalue())
    return f"{len(images):,} images ({pics.kind})"


def build(root: Path, n_models: int) -> tuple[list[Path], Path]:
    rows, where = base_rows()
    print(f"rows: {len(rows):,} ({where})")
    folder = root / "runs"
    folder.mkdir(parents=True, exist_ok=True)
    released = sorted((SHARED / "refadv" / "predictions").glob("*_direct_predictions.jsonl"))[:n_models]
    files = []
    for p in released:
        files.append(folder / p.name)
        files[-1].write_bytes(p.read_bytes())
    for k in range(n_models - len(files)):
        files.append(folder / f"generated{k:02d}_direct_predictions.jsonl")
        files[-1].write_text(run_lines(rows, f"Stand-In-VL-{k + 1:02d}B"), encoding="utf-8")
    print(f"runs: {len(released)} released, {len(files) - len(released)} generated in the official row format")
    t = time.perf_counter()
    parquet = root / "ref-adv-s.parquet"
    what = write_items(rows, parquet)
    print(f"items: {parquet.stat().st_size / 1e6:.1f} MB parquet, {what} ({time.perf_counter() - t:.1f} s)")
    return files, parquet


#: what each timed step does on the page (``box``: the comparison's item table); every step but typing is one
#: event, timed until the table shows its rows; typing is timed from its last key
STEPS = {
    "outcome: every model wrong": "b.querySelector('.it-outcome').value = 'allwrong'; "
                                  "b.querySelector('.it-outcome').dispatchEvent(new Event('change'));",
    "outcome: only the first model right": "b.querySelector('.it-outcome').value = 'only:0'; "
                                           "b.querySelector('.it-outcome').dispatchEvent(new Event('change'));",
    "outcome: any": "b.querySelector('.it-outcome').value = ''; "
                    "b.querySelector('.it-outcome').dispatchEvent(new Event('change'));",
    "slice: Neg": "const s = b.querySelector('.it-slice'); s.value = String(D.slices.indexOf('Neg')); "
                  "s.dispatchEvent(new Event('change'));",
    "A right, B wrong": "b.querySelector('.it-right').value = '0'; b.querySelector('.it-right')"
                        ".dispatchEvent(new Event('change')); b.querySelector('.it-wrong').value = '1'; "
                        "b.querySelector('.it-wrong').dispatchEvent(new Event('change'));",
    "a paired test's items (link)": "document.querySelector('#pairs a.it-link').click();",
    "models disagree": "b.querySelector('.it-clear').click(); const d = b.querySelector('.it-disagree'); "
                       "d.checked = true; d.dispatchEvent(new Event('change'));",
    "sort by a model": "b.querySelectorAll('thead th button')[3].click();",
    "open an item": "b.querySelector('tbody button.it-open').click();",
}


def browser_timings(path: Path, repeat: int) -> dict[str, float] | str:
    """Milliseconds: page ready, each step of :data:`STEPS`, typing (from its last key, the pause included and
    how many filters it ran)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return "playwright is not installed (the dev extra)"
    if not CHROMIUM.is_file():
        return f"no Chromium at {CHROMIUM}"
    out: dict[str, list[float]] = {}
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                              args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        for _ in range(repeat):
            page = b.new_page(viewport={"width": 1366, "height": 768})
            errors: list[str] = []
            page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
            page.goto(path.as_uri(), wait_until="load")
            page.wait_for_function("document.querySelectorAll('.items:not([data-ready])').length === 0")
            ready = page.evaluate("""() => { const n = performance.getEntriesByType('navigation')[0];
                return {ready: n.loadEventEnd, paint: (performance.getEntriesByName('first-contentful-paint')[0]
                || {}).startTime}; }""")
            out.setdefault("first contentful paint", []).append(ready["paint"])
            out.setdefault("ready (every item table drawn)", []).append(ready["ready"])
            # a long pairs table is folded; its links are made when it is opened (timed on its own)
            out.setdefault("open the folded pairs table (its links made)", []).append(page.evaluate("""async () => {
                const d = document.querySelector('#pairs details'); if (!d) { return 0; }
                const t0 = performance.now(); d.open = true;
                await new Promise(r => d.addEventListener('toggle', r, {once: true}));
                await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
                return performance.now() - t0; }"""))
            for label, js in STEPS.items():
                ms = page.evaluate("""async (js) => {
                    const b = document.getElementById('items');
                    const D = JSON.parse(b.querySelector('.it-data').textContent);
                    const t0 = performance.now();
                    new Function('b', 'D', js)(b, D);
                    await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
                    return performance.now() - t0; }""", js)
                out.setdefault(label, []).append(ms)
                if label == "open an item":
                    page.keyboard.press("Escape")
            typed = page.evaluate("""async () => {
                const b = document.getElementById('items'), q = b.querySelector('.it-q');
                b.querySelector('.it-clear').click();
                const body = b.querySelector('tbody');
                let renders = 0, last = 0;
                const seen = new MutationObserver(() => { renders++; last = performance.now(); });
                seen.observe(body, {childList: true});
                let t = 0;
                for (const ch of 'person') {
                    q.value += ch; q.dispatchEvent(new Event('input')); t = performance.now();
                    await new Promise(r => setTimeout(r, 40));
                }
                await new Promise(r => setTimeout(r, 600));
                seen.disconnect();
                return {ms: last - t, renders}; }""")
            out.setdefault(f"text, typed a key at a time (incl. the {DEBOUNCE_MS} ms pause)", []).append(typed["ms"])
            out.setdefault("filters run while typing 6 keys", []).append(typed["renders"])
            if errors:
                return f"page errors: {errors[:3]}"
            page.close()
        b.close()
    return {k: statistics.median(v) for k, v in out.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=30, help="models compared (default 30: the release's runs)")
    ap.add_argument("--repeat", type=int, default=3, help="browser runs; the median is printed")
    ap.add_argument("--n-resamples", type=int, default=2000, help="resamples of every interval and rank")
    ap.add_argument("--keep", type=Path, default=None, help="write everything here and keep it (default: temp)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))  # the package of this checkout, whatever is installed

    from vlamb_nb.compare import compare

    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        files, parquet = build(root, args.models)
        t, cpu = time.perf_counter(), time.process_time()
        c = compare(files, sources={"refadv": str(parquet)}, n_resamples=args.n_resamples, title="bench")
        compare_s, compare_cpu = time.perf_counter() - t, time.process_time() - cpu
        t = time.perf_counter()
        written = c.save(root / "cmp")
        save_s = time.perf_counter() - t
        page = next(p for p in written if p.suffix == ".html")
        text = page.read_text(encoding="utf-8")
        mb = len(text.encode()) / 1e6
        thumbs = sum(len(m) for m in re.findall(r"data:image/webp;base64,[A-Za-z0-9+/=]+", text))
        data = sum(len(m) for m in re.findall(r'class="it-data">(.*?)</script>', text, flags=re.S))
        print(f"\n{len(c.models)} models × {ROWS:,} items; {len(c.values):,} values, {len(c.pairs):,} paired tests "
              f"({c.pairs['slice'].nunique() if len(c.pairs) else 0} slices)")
        print(f"compare:                   {compare_s:7.1f} s  ({compare_cpu:.1f} s of processor time)")
        print(f"write the page and files:  {save_s:7.1f} s")
        print(f"comparison.html:           {mb:7.2f} MB  (at most {MAX_MB:.0f} MB: {'yes' if mb <= MAX_MB else 'NO'}; "
              f"thumbnails {thumbs / 1e6:.2f} MB, item data without them {(data - thumbs) / 1e6:.2f} MB)")
        timings = browser_timings(page, args.repeat)
        if isinstance(timings, str):
            print(f"browser: skipped ({timings})")
            return 0
        print(f"in headless Chromium, from disk (median of {args.repeat}; load average {os.getloadavg()[0]:.1f} on "
              f"{os.cpu_count()} cores):")
        for k, v in timings.items():
            if k.startswith("filters run"):
                print(f"  {k:55s} {v:8.0f}")
                continue
            limit = MAX_READY_MS if k.startswith("ready") else None if ("paint" in k or k.startswith("open")) else (
                MAX_FILTER_MS + DEBOUNCE_MS if k.startswith("text") else MAX_FILTER_MS)
            verdict = "" if limit is None else f"  (under {limit:.0f} ms: {'yes' if v < limit else 'NO'})"
            print(f"  {k:55s} {v:8.0f} ms{verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
