"""Ref-Adv data: the Ref-Adv-s release (HF parquet, website demo JSON), RefCOCO/+/g, and a generated sample.

Every loader returns the same item frame, one row per (image, expression)::

    id, row_idx, file_name, expression, gt_xyxy, width, height, image_source, human_authored,
    use_negation, distractor_count, image, dataset

``gt_xyxy`` is absolute ``[x1, y1, x2, y2]``; ``image`` is whatever ``vlamb_nb.images.load_image``
accepts (an HF ``{"bytes", "path"}`` dict or a file path).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from vlamb_nb import boxes
from vlamb_nb.errors import DataError, ImageError, NotAvailableError
from vlamb_nb.jsonl import read_json
from vlamb_nb.release_spec import GitHubFolder, HubFiles, Release, parquet_rows

HUB_ID = "dddraxxx/ref-adv-s"
HUB_FILE = "data/train-00000-of-00001.parquet"
ITEM_COLUMNS = ["id", "row_idx", "file_name", "expression", "gt_xyxy", "width", "height", "image_source",
                "human_authored", "use_negation", "distractor_count", "image", "dataset"]
REFADV_REQUIRED = ("image", "normal_caption", "solution", "width", "height")
NEGATION_WORDS = ("not", "no", "without", "nothing", "neither", "nor", "never", "none", "n't")


def _frame(rows: list[dict[str, Any]]):
    import pandas as pd

    return pd.DataFrame(rows, columns=ITEM_COLUMNS)


def _box(value: Any, source: str, row: int, field: str) -> list[float]:
    try:
        vals = value.tolist() if hasattr(value, "tolist") else list(value)
        b = [float(v) for v in vals]
    except (TypeError, ValueError):
        raise DataError(f"expected 4 numbers, got {value!r}", source=source, row=row, field=field) from None
    if len(b) != 4:
        raise DataError(f"expected 4 numbers, got {len(b)}", source=source, row=row, field=field)
    return b


def _int(value: Any, source: str, row: int, field: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise DataError(f"expected an integer, got {value!r}", source=source, row=row, field=field) from None


def _typed(rec: dict[str, Any], name: str, kind: type, default: Any, source: str, row: int,
           field: str | None = None) -> Any:
    """``rec[name]`` when it has the type the release gives it (``default`` when absent or null); a value of
    another type (a number for a text, the text "false" for a flag) is refused, never converted."""
    v = rec.get(name)
    if v is None:
        return default
    if not isinstance(v, kind) or (kind is not bool and isinstance(v, bool)):
        raise DataError(f"expected {kind.__name__}, got {type(v).__name__} {v!r}", source=source, row=row,
                        field=field or name)
    return v


def refadv_row(rec: dict[str, Any], i: int, source: str, *, dataset: str = "ref-adv-s",
               fields: dict[str, str] | None = None) -> dict[str, Any]:
    """One released Ref-Adv-s record (HF columns) as an item row; errors name the row (``i + 1``: rows count
    from 1) and the field, under its name in the file (``fields`` maps the HF column names to it)."""
    row = i + 1
    name = {**{f: f for f in rec}, **(fields or {})}
    for f in REFADV_REQUIRED:
        if f not in rec or rec[f] is None:
            raise DataError("missing value", source=source, row=row, field=name.get(f, f))
    caption = rec["normal_caption"]
    if not isinstance(caption, str) or not caption.strip():
        raise DataError(f"expected a non-empty string, got {caption!r}", source=source, row=row,
                        field=name["normal_caption"])
    row_idx = _int(rec.get("row_idx", i), source, row, "row_idx")
    return {
        "id": str(row_idx),
        "row_idx": row_idx,
        "file_name": _typed(rec, "file_name", str, "", source, row, name.get("file_name")),
        "expression": caption,
        "gt_xyxy": _box(rec["solution"], source, row, name["solution"]),
        "width": _int(rec["width"], source, row, name["width"]),
        "height": _int(rec["height"], source, row, name["height"]),
        "image_source": _typed(rec, "image_source", str, "", source, row, name.get("image_source")),
        "human_authored": _typed(rec, "human_authored", bool, False, source, row, name.get("human_authored")),
        "use_negation": _typed(rec, "use_negation", bool, False, source, row, name.get("use_negation")),
        "distractor_count": parse_distractor_count(rec.get("distractors")),
        "image": rec["image"],
        "dataset": dataset,
    }


def load_refadv_parquet(path: str | os.PathLike):
    """A Ref-Adv-s parquet as released on the hub (image column in the HF ``{"bytes","path"}`` layout)."""
    import pyarrow.parquet as pq

    path = Path(path)
    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as e:
        raise DataError(f"not a readable parquet file: {e}", source=str(path)) from None
    missing = [c for c in REFADV_REQUIRED if c not in table.column_names]
    if missing:
        raise DataError(f"missing columns {missing}; found {table.column_names}", source=str(path))
    return _frame([refadv_row(rec, i, str(path)) for i, rec in enumerate(table.to_pylist())])


def load_refadv_hub(repo_id: str = HUB_ID, *, revision: str | None = None):
    """Download (or reuse the local HF cache of) the released parquet, then load it."""
    try:
        from huggingface_hub import hf_hub_download

        path = hf_hub_download(repo_id, HUB_FILE, repo_type="dataset", revision=revision)
    except Exception as e:  # noqa: BLE001 - offline, gated or missing: one clear message
        raise NotAvailableError(f"cannot fetch {repo_id}/{HUB_FILE} from the Hugging Face hub ({type(e).__name__}: "
                                f"{e}); pass a local parquet or the demo folder instead") from None
    return load_refadv_parquet(path)


#: the demo file's names of the release's columns (errors name the field as the file has it)
DEMO_FIELDS = {"normal_caption": "caption", "solution": "bbox", "image_source": "source",
               "human_authored": "human_authored", "use_negation": "negation"}


def load_demo(folder: str | os.PathLike):
    """The website demo: ``demo_samples.json`` plus ``images/NNNN.jpg`` (NNNN is the release row index)."""
    from vlamb_nb.images import safe_join

    folder = Path(folder)
    jpath = folder / "demo_samples.json" if folder.is_dir() else folder
    folder = jpath.parent
    records = read_json(jpath, expect=list, what="records")
    rows = []
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise DataError("record is not an object", source=str(jpath), row=i + 1)
        for f in ("image", "caption", "bbox", "width", "height"):
            if rec.get(f) is None:
                raise DataError("missing value", source=str(jpath), row=i + 1, field=f)
        name = Path(_typed(rec, "image", str, "", str(jpath), i + 1)).name
        try:
            image_path = safe_join(folder / "images", name)
        except ImageError as e:
            raise DataError(str(e), source=str(jpath), row=i + 1, field="image") from None
        stem = Path(name).stem
        row_idx = int(stem) if stem.isdigit() else i
        rows.append(refadv_row({
            "image": str(image_path), "normal_caption": rec["caption"], "solution": rec["bbox"],
            "width": rec["width"], "height": rec["height"], "image_source": rec.get("source"),
            "human_authored": rec.get("human_authored"), "use_negation": rec.get("negation"),
            "distractors": rec.get("distractors"), "row_idx": row_idx, "file_name": name,
        }, i, str(jpath), dataset="ref-adv-s-demo", fields=DEMO_FIELDS))
    return _frame(rows)


# -- RefCOCO / RefCOCO+ / RefCOCOg ----------------------------------------------------------------------
_COCO_ID_RE = re.compile(r"(\d{6,})")


def _image_id(file_name: str) -> int | None:
    m = _COCO_ID_RE.findall(Path(file_name).stem)
    return int(m[0]) if m else None


def _coco_index(instances: dict[str, Any], source: str):
    for key in ("images", "annotations"):
        if key not in instances:
            raise DataError(f"missing key {key!r} (expected COCO instances format)", source=source)
    images = {im["id"]: im for im in instances["images"]}
    anns: dict[int, list[dict[str, Any]]] = {}
    by_id: dict[int, dict[str, Any]] = {}
    for a in instances["annotations"]:
        anns.setdefault(a["image_id"], []).append(a)
        by_id[a["id"]] = a
    return images, anns, by_id


def same_category_distractors(anns: list[dict[str, Any]], category_id: int) -> int:
    """Other instances of the target's category in the image (the target itself excluded)."""
    return max(0, sum(1 for a in anns if a.get("category_id") == category_id) - 1)


def load_refcoco_refer(folder: str | os.PathLike, *, split_by: str = "unc", splits: tuple[str, ...] | None = None,
                       allow_pickle: bool = False, dataset: str | None = None):
    """``refs(<split_by>).p`` + ``instances.json`` (the original refer release), one row per sentence.

    Unpickling runs code, so the pickle is read only with ``allow_pickle=True`` (trusted files only).
    ``splits`` uses the refer API rule: ``testA`` also matches any split containing "A".
    """
    import pickle

    folder = Path(folder)
    refs_path = folder / f"refs({split_by}).p"
    inst_path = folder / "instances.json"
    if not allow_pickle:
        raise DataError(f"{refs_path.name} is a pickle; unpickling can run arbitrary code. Pass allow_pickle=True "
                        "only for a file you trust", source=str(refs_path))
    for p in (refs_path, inst_path):
        if not p.is_file():
            raise DataError("file not found", source=str(p))
    with open(refs_path, "rb") as fh:
        refs = pickle.load(fh)  # noqa: S301 - explicit opt-in above
    instances = read_json(inst_path, expect=dict, what="COCO instances")
    images, anns, by_id = _coco_index(instances, str(inst_path))
    name = dataset or folder.name
    rows = []
    for i, ref in enumerate(refs):
        split = str(ref.get("split", ""))
        if splits is not None and not any(s == split or (s in ("testA", "testB") and s[-1] in split) for s in splits):
            continue
        ann = by_id.get(ref.get("ann_id"))
        img = images.get(ref.get("image_id"))
        if ann is None or img is None:
            raise DataError(f"annotation {ref.get('ann_id')} or image {ref.get('image_id')} not in instances.json",
                            source=str(refs_path), row=i + 1, field="ann_id")
        gt = list(boxes.xywh_to_xyxy(ann["bbox"]))
        n_dis = same_category_distractors(anns.get(img["id"], []), ref.get("category_id", ann.get("category_id")))
        for j, sent in enumerate(ref.get("sentences", [])):
            rows.append({"id": f"{ref.get('ref_id', i)}-{sent.get('sent_id', j)}", "row_idx": len(rows),
                         "file_name": img.get("file_name", ""), "expression": sent.get("sent", ""),
                         "gt_xyxy": gt, "width": int(img["width"]), "height": int(img["height"]),
                         "image_source": f"coco_train2014:{split}", "human_authored": True,
                         "use_negation": has_negation(sent.get("sent", "")), "distractor_count": n_dis,
                         "image": img.get("file_name", ""), "dataset": name})
    return _frame(rows)


def load_refcoco_parquet(path: str | os.PathLike, *, instances: str | os.PathLike | None = None,
                         dataset: str | None = None):
    """An lmms-lab RefCOCO/+/g parquet (bbox ``[x,y,w,h]`` absolute; ``answer`` lists all sentences).

    Rows are exploded to one per sentence and duplicate (question_id, sentence) pairs dropped. The
    parquet has no category, so the distractor count needs the COCO ``instances`` file (else -1).
    """
    import pyarrow.parquet as pq

    path = Path(path)
    table = pq.read_table(path)
    need = ("question_id", "image", "answer", "bbox", "file_name")
    missing = [c for c in need if c not in table.column_names]
    if missing:
        raise DataError(f"missing columns {missing}; found {table.column_names}", source=str(path))
    index = None
    if instances is not None:
        index = _coco_index(read_json(instances, expect=dict, what="COCO instances"), str(instances))
    name = dataset or path.stem
    rows, seen = [], set()
    for i, rec in enumerate(table.to_pylist()):
        gt = list(boxes.xywh_to_xyxy(_box(rec["bbox"], str(path), i + 1, "bbox")))
        w, h = rec.get("width"), rec.get("height")
        if w is None or h is None:
            from vlamb_nb.images import load_image

            w, h = load_image(rec["image"]).size
        n_dis = -1
        if index is not None:
            images, anns, _ = index
            image_anns = anns.get(_image_id(rec["file_name"]) or -1, [])
            match = max(image_anns, key=lambda a: boxes.iou(boxes.xywh_to_xyxy(a["bbox"]), gt), default=None)
            if match is not None and boxes.iou(boxes.xywh_to_xyxy(match["bbox"]), gt) > 0.99:
                n_dis = same_category_distractors(image_anns, match["category_id"])
        answers = rec["answer"] if isinstance(rec["answer"], list) else [rec["answer"]]
        for j, sent in enumerate(answers):
            key = (rec["question_id"], sent)
            if key in seen:
                continue
            seen.add(key)
            rows.append({"id": f"{rec['question_id']}-{j}", "row_idx": len(rows), "file_name": rec["file_name"],
                         "expression": sent, "gt_xyxy": gt, "width": int(w), "height": int(h),
                         "image_source": "coco_train2014", "human_authored": True,
                         "use_negation": has_negation(sent), "distractor_count": n_dis,
                         "image": rec["image"], "dataset": name})
    return _frame(rows)


# -- dispatch -------------------------------------------------------------------------------------------
def load_any(source: str | os.PathLike | None = None, **kwargs: Any):
    """Hub id, parquet file, demo folder/JSON, or a refer folder (``refs(...).p``)."""
    if source is None:
        return load_refadv_hub(**kwargs)
    p = Path(source)
    if p.is_dir():
        if (p / "demo_samples.json").is_file():
            return load_demo(p)
        if list(p.glob("refs(*).p")):
            return load_refcoco_refer(p, **kwargs)
        parquets = sorted(p.rglob("*.parquet"))
        if parquets:
            import pandas as pd

            return pd.concat([load_parquet(q, **kwargs) for q in parquets], ignore_index=True)
        raise DataError("no demo_samples.json, refs(*).p or *.parquet in this folder", source=str(p))
    if p.is_file():
        if p.suffix == ".parquet":
            return load_parquet(p, **kwargs)
        if p.suffix == ".json":
            return load_demo(p)
        raise DataError("unsupported file type (expected .parquet or demo .json)", source=str(p))
    if re.fullmatch(r"[\w.-]+/[\w.-]+", str(source)) and not str(source).startswith("."):
        return load_refadv_hub(str(source), **kwargs)
    raise DataError("no such file or folder", source=str(source))


def load_parquet(path: str | os.PathLike, **kwargs: Any):
    """Ref-Adv-s or lmms-lab RefCOCO parquet, told apart by their columns."""
    import pyarrow.parquet as pq

    try:
        names = pq.read_schema(path).names
    except (OSError, ValueError) as e:
        raise DataError(f"not a readable parquet file: {e}", source=str(path)) from None
    if "normal_caption" in names:
        return load_refadv_parquet(path)
    if "question_id" in names and "answer" in names:
        return load_refcoco_parquet(path, **kwargs)
    raise DataError(f"unrecognised parquet columns {names}", source=str(path))


# -- statistics -------------------------------------------------------------------------------------------
_WORD_RE = re.compile(r"[a-z0-9']+")


def words(text: str) -> list[str]:
    """Lower-cased word tokens (letters, digits, apostrophes); our tokenizer for lengths and vocabulary."""
    return _WORD_RE.findall(str(text).lower())


def has_negation(text: str) -> bool:
    """Explicit negation by our lexicon (the paper does not give its own)."""
    toks = words(text)
    return any(t in NEGATION_WORDS or t.endswith("n't") for t in toks)


def dataset_stats(items) -> dict[str, Any]:
    """Table 1-style statistics of a loaded item frame (word length, distractors, negation, size, vocab)."""
    import math

    import numpy as np

    if len(items) == 0:
        return {"images": 0, "instances": 0}
    lengths = [len(str(e).split()) for e in items["expression"]]
    sizes = [math.sqrt(boxes.area(b)) for b in items["gt_xyxy"]]
    vocab = set()
    for e in items["expression"]:
        vocab.update(words(e))
    images = items["file_name"].where(items["file_name"] != "", items["id"])
    dis = items["distractor_count"][items["distractor_count"] >= 0]
    return {
        "images": int(images.nunique()),
        "instances": int(len(items)),
        "avg_length_words": round(float(np.mean(lengths)), 2),
        "avg_distractors": round(float(dis.mean()), 2) if len(dis) else None,
        "negation_ratio_pct": round(100 * float(items["use_negation"].mean()), 2),
        "negation_ratio_lexicon_pct": round(100 * float(np.mean([has_negation(e) for e in items["expression"]])), 2),
        "instance_size_sqrt_area": [round(min(sizes)), round(max(sizes))],
        "vocabulary": len(vocab),
        "human_authored": int(items["human_authored"].sum()),
        "by_source": {str(k): int(v) for k, v in items["image_source"].value_counts().items()},
        "distractor_bins": {b: int(sum(in_bin(d, b) for d in items["distractor_count"])) for b in BINS},
    }


BINS = ("2-3", "4-6", ">=7")


def in_bin(d: int, name: str) -> bool:
    """The official ``report.py`` distractor bins; counts below 2 fall in none."""
    if name == "2-3":
        return 2 <= d <= 3
    if name == "4-6":
        return 4 <= d <= 6
    if name == ">=7":
        return d >= 7
    return False


# -- generated sample ------------------------------------------------------------------------------------
SAMPLE_COLORS = {"red": (200, 40, 40), "blue": (40, 70, 200), "green": (40, 160, 60), "yellow": (220, 200, 40)}


def make_sample(directory: str | os.PathLike, n: int = 8, seed: int = 0) -> Path:
    """A small Ref-Adv-s parquet in the hub layout, with generated images of coloured boxes.

    Each image holds 3-8 same-category "objects" (rectangles); the expression names the target's
    colour and position, sometimes with a negation, like the released records.
    """
    import io
    import random

    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    directory = Path(directory)
    (directory / "data").mkdir(parents=True, exist_ok=True)
    records = []
    for i in range(n):
        w, h = rng.choice([(320, 240), (640, 480), (480, 640)])
        img = Image.new("RGB", (w, h), (235, 235, 230))
        draw = ImageDraw.Draw(img)
        k = rng.randint(3, 8)
        objs = []
        for j in range(k):
            bw, bh = rng.randint(w // 12, w // 5), rng.randint(h // 12, h // 5)
            x = int((j + 0.5) * w / k - bw / 2)
            y = rng.randint(0, h - bh - 1)
            color = rng.choice(list(SAMPLE_COLORS))
            draw.rectangle([x, y, x + bw, y + bh], fill=SAMPLE_COLORS[color])
            objs.append((color, [float(x), float(y), float(x + bw), float(y + bh)]))
        t = rng.randrange(k)
        color, box = objs[t]
        other = rng.choice([c for c in SAMPLE_COLORS if c != color])
        neg = rng.random() < 0.25
        pos = "leftmost" if t == 0 else "rightmost" if t == k - 1 else f"number {t + 1} from the left"
        expr = f"the {color} box, {pos}" + (f", not the {other} one" if neg else "")
        buf = io.BytesIO()
        img.save(buf, format="JPEG", quality=90)
        name = f"{rng.getrandbits(64):016x}.jpg" if i % 2 else f"{100000 + i:012d}.jpg"
        records.append({"image": {"bytes": buf.getvalue(), "path": name}, "file_name": name,
                        "normal_caption": expr, "solution": box, "width": w, "height": h,
                        "image_source": "openimages" if i % 2 else "coco_val2017", "human_authored": i % 3 == 0,
                        "use_negation": neg, "distractors": str(k - 1)})
    schema = pa.schema([
        ("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
        ("file_name", pa.string()), ("normal_caption", pa.string()), ("solution", pa.list_(pa.float64())),
        ("width", pa.int64()), ("height", pa.int64()), ("image_source", pa.string()),
        ("human_authored", pa.bool_()), ("use_negation", pa.bool_()), ("distractors", pa.string()),
    ])
    out = directory / HUB_FILE
    pq.write_table(pa.Table.from_pylist(records, schema=schema), out)
    return out


def parse_distractor_count(x: Any) -> int:
    """The official ``parse_distractor_count``: int, list (its length) or a JSON/number string.

    The official quirk is kept: a non-JSON string counts its *numbers*, not their value. One
    deliberate difference: a float (pandas turns an int column with gaps into floats) is truncated
    to an int, where the official code would count the digit groups of ``"5.0"``.
    """
    if x is None:
        return 0
    if isinstance(x, bool):
        return int(x)
    if isinstance(x, int):
        return max(0, int(x))
    if isinstance(x, float) and x == x:
        return max(0, int(x))
    if isinstance(x, (list, tuple)):
        return len(x)
    if hasattr(x, "tolist"):  # numpy arrays from parquet list columns
        v = x.tolist()
        return len(v) if isinstance(v, list) else parse_distractor_count(v)
    s = str(x).strip()
    if not s:
        return 0
    try:
        obj = json.loads(s)
        if isinstance(obj, list):
            return len(obj)
        if isinstance(obj, int) and not isinstance(obj, bool):
            return max(0, obj)
    except ValueError:
        pass
    return len(re.findall(r"\d+", s))


# -- the release -------------------------------------------------------------------------------------
HUB_REVISION = "e7a53e352b5885b8228fc6afa8645ab78e76d5f1"  # one parquet, 255,481,432 bytes, 1,142 rows
PARQUET = "data/train-00000-of-00001.parquet"
RUNS_REPO = "dddraxxx/Ref-Adv"
RUNS_COMMIT = "b6b18262d9fea0bbdd72d7066e0d40f513d1f453"  # outputs/qwen/ holds 30 per-row runs
#: the released per-row runs whose bytes are known here (sha256, size); the other 25 are checked against the
#: listing's git object id and their sha256 recorded at first fetch
PINNED_RUNS = {
    "qwen25a3b_direct_predictions.jsonl": (
        "fbcb71db8299c258ac3c03db8831a1e1318ee4f3c5567ebac882449619003d52", 630083),
    "qwen25a7b_direct_predictions.jsonl": (
        "98976d1f6b4accd8df629783ff5eddfd94c79cd95939f6edbd57d7f67632f02d", 631494),
    "qwen25a72b_direct_predictions.jsonl": (
        "5f0d4bccbf6661c63ebd8685c31601154691214465e427df1995b6d66524db15", 633859),
    "qwen25a72b_cot_predictions.jsonl": (
        "53ab2f08c29499bba3a40c271b725027435a684593a04ede4332ea5a6f3fe6fc", 630292),
    "qwen3a8bthinking_direct_predictions.jsonl": (
        "3f9af74dc8fb817e799b0791328ec0a2404af8ccfbdaa13b2acfd688d1824a96", 649315),
}
RELEASED_RUNS = 30


#: the release name a run on the website's demo records (its data identity), and where that demo lies
DEMO_RELEASE = "the website's Ref-Adv-s demo"


def demo_folder() -> Path | None:
    """The website's demo (``demo_samples.json`` and its 31 images) beside the checkout, else None."""
    from vlamb_nb.paths import shared_data_dir

    shared = shared_data_dir()
    folder = shared / "refadv" / "demo" if shared is not None else None
    return folder if folder is not None and (folder / "demo_samples.json").is_file() else None


def release_counts(root: Path) -> dict[str, int]:
    return {"rows": parquet_rows([root / PARQUET]),
            "released runs": len(list((root / "predictions").glob("*_predictions.jsonl")))}


RELEASE = Release(
    paper="refadv", name=f"hub:{HUB_ID}", licence="as released (code Apache-2.0)",
    parts=(HubFiles(HUB_ID, (PARQUET,), revision=HUB_REVISION),
           GitHubFolder(RUNS_REPO, "outputs/qwen", RUNS_COMMIT, pattern="*_predictions.jsonl", dest="predictions",
                        expected=RELEASED_RUNS, pinned=PINNED_RUNS, what="released runs")),
    expected={"rows": 1142, "released runs": RELEASED_RUNS}, count=release_counts, n_items=1142, unit="rows",
    load={"source": f"files/{PARQUET}", "extra": {"predictions": "files/predictions"}},
    size="the Ref-Adv-s parquet (255 MB, 1,142 rows with images) + 19 MB of released per-row runs (30)",
    beside={DEMO_RELEASE: demo_folder})


# -- the test sets as a noise floor sees them ---------------------------------------------------------------------
#: Table 1: the full set's rows and images; the public Ref-Adv-s subset's rows and images (its release)
FULL_SET = (5000, 2833)
PUBLIC_SET = (1142, 614)
#: Table 1: the full set's negation ratio
FULL_NEGATION = 0.2125


def test_sets(items=None) -> dict[str, Any]:
    """Ref-Adv's test sets for :mod:`vlamb_nb.noise`: the full 5k set the paper's tables are on (declared: 5,000
    rows spread over 2,833 images; negation 21.25%; distractor bins as shared as in Ref-Adv-s where its rows are
    at hand, else in thirds) and the public Ref-Adv-s subset (given its 1,142 released rows: rows per image,
    negation and distractor shares counted from them)."""
    from vlamb_nb.stats.power import TestSet, cluster_sizes, even_sizes

    bins = {"2-3": (2, 3), "4-6": (4, 6), ">=7": (7, 10 ** 6)}
    public = items is not None and len(items) == PUBLIC_SET[0] and "file_name" in items.columns
    if public:
        d = items["distractor_count"].astype(int)
        shares = {k: float(((d >= lo) & (d <= hi)).mean()) for k, (lo, hi) in bins.items()}
        neg = float(items["use_negation"].astype(bool).mean())
        sizes, origin, how = cluster_sizes(items["file_name"].astype(str)), "release", "rows by image"
    else:
        shares = {k: 1 / 3 for k in bins}
        neg, sizes, origin, how = 0.40, even_sizes(*PUBLIC_SET), "declared", "1,142 rows spread over 614 images"
    full_bins = "distractor bins as in Ref-Adv-s" if public else "distractor bins in thirds (not published)"
    return {
        "Ref-Adv": TestSet("Ref-Adv", FULL_SET[0], "row", even_sizes(*FULL_SET), "images", "declared",
                           f"5,000 rows spread over 2,833 images (Table 1); {full_bins}",
                           {"Neg": FULL_NEGATION, "No-Neg": 1 - FULL_NEGATION, **shares}),
        "Ref-Adv-s": TestSet("Ref-Adv-s", PUBLIC_SET[0], "row", sizes, "images", origin, how,
                             {"Neg": neg, "No-Neg": 1 - neg, **shares}),
    }
