"""VAGUE data: the loader (hub parquet, local parquet, official JSON release) and a generated sample.

One function, :func:`load_vague`, reads every released form, so the hub and a local copy give
identical items. Records are validated as they are read (the option ordering must be a
permutation of A–D, the solution a ``(subject, action, object)`` triplet), and every error names
the file, the row and the field.
"""

from __future__ import annotations

import json
import os
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

from vlamb_nb.errors import DataError, ImageError, NotAvailableError
from vlamb_nb.jsonl import iter_jsonl, read_json
from vlamb_nb.release_spec import HubFiles, MetricModel, Release

HUB_ID = "HazelNam/vague-bench"
JSON_FILES = ("vcr_1144_final.json", "ego4d_533_final.json")
IMAGE_SUFFIX = "_annot.jpg"
IMAGE_DIR_CANDIDATES = ("", "images", "annotated_images", "ego4d_final_annotated")
EXPECTED_COUNTS = {"VCR": 1144, "Ego4D": 533}

# option keys in key order (correct, FS, SU, NE); ordering[i] is the letter shown for key i
MCQ_KEYS_V2 = ("1_correct", "2_fake_scene", "3_surface_understanding", "4_wrong_entity")
MCQ_KEYS_V1 = ("1_correct", "2_incorrect_fake_scene", "3_incorrect_surface_understanding", "4_incorrect_entity")
CATEGORIES = ("correct", "FS", "SU", "NE")
LETTERS = ("A", "B", "C", "D")

ITEM_COLUMNS = ["id", "image_name", "subset", "direct", "indirect", "indirect_raw", "solution", "addressee",
                "action", "object", "options", "ordering", "gold", "letter_category", "caption", "ram_entity",
                "img_size", "person_bbox", "rating_direct", "rating_indirect", "fake_caption", "image",
                "source_file", "row"]


def subset_of(image_name: str) -> str:
    """VCR/LSMDC frame names carry an ``@N`` suffix; Ego4D names do not (no source field exists)."""
    return "VCR" if "@" in image_name else "Ego4D"


def parse_solution(solution: str) -> tuple[str, str, str]:
    """``"(person1, move, sedan)"`` → (subject, action, object); the addressee is the subject."""
    s = solution.strip()
    if not (s.startswith("(") and s.endswith(")")):
        raise ValueError(f"not a (subject, action, object) triplet: {solution!r}")
    parts = [p.strip() for p in s[1:-1].split(",")]
    if len(parts) < 3 or not parts[0]:
        raise ValueError(f"not a (subject, action, object) triplet: {solution!r}")
    # objects may contain commas; everything after the action is the object
    return parts[0], parts[1], ", ".join(parts[2:])


def official_addressee(solution: str) -> str:
    """The released code's rule ``solution.split(",")[0][1:]`` (kept for exact prompt parity)."""
    return solution.split(",")[0][1:]


def _plain(value: Any) -> Any:
    """numpy arrays / tuples from parquet → plain Python lists, recursively."""
    if hasattr(value, "tolist") and not isinstance(value, (bytes, str)):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _require(rec: dict[str, Any], key: str, source: str, row: int, kind: type = str) -> Any:
    if key not in rec or rec[key] is None:
        raise DataError("missing field", source=source, row=row, field=key)
    if not isinstance(rec[key], kind):
        raise DataError(f"expected {kind.__name__}, got {type(rec[key]).__name__}", source=source, row=row,
                        field=key)
    return rec[key]


def normalize_record(rec: dict[str, Any], *, source: str, row: int, image: Any = None) -> dict[str, Any]:
    """One released record (2.0 or 1.0 keys) → one item row; raises DataError naming the field."""
    rec = _plain(rec)
    if not isinstance(rec, dict):
        raise DataError(f"expected a JSON object, got {type(rec).__name__}", source=source, row=row)
    name = _require(rec, "image_name", source, row)
    direct = _require(rec, "direct", source, row)
    indirect_raw = _require(rec, "indirect", source, row)
    solution = _require(rec, "solution", source, row)
    mcq = _require(rec, "mcq", source, row, dict)
    meta = rec.get("meta") or {}
    if not isinstance(meta, dict):
        raise DataError("expected an object", source=source, row=row, field="meta")
    is_v1 = any(k in mcq for k in MCQ_KEYS_V1[1:]) and not any(k in mcq for k in MCQ_KEYS_V2[1:])
    keys = MCQ_KEYS_V1 if is_v1 else MCQ_KEYS_V2
    options = {}
    for cat, key in zip(CATEGORIES, keys, strict=True):
        text = mcq.get(key)
        if not isinstance(text, str) or not text.strip():
            other = "; 1.0 keys also accepted" if keys is MCQ_KEYS_V2 else "; 2.0 keys also accepted"
            raise DataError(f"missing or empty option text{other}", source=source, row=row, field=f"mcq.{key}")
        options[cat] = text
    ordering = mcq.get("ordering", rec.get("ordering"))  # Fig. J25 draws it at top level
    if not isinstance(ordering, list) or sorted(str(x) for x in ordering) != list(LETTERS):
        raise DataError(f"must be a permutation of A, B, C, D, got {ordering!r}", source=source, row=row,
                        field="mcq.ordering")
    try:
        subject, action, obj = parse_solution(solution)
    except ValueError as e:
        raise DataError(str(e), source=source, row=row, field="solution") from None
    for key in ("caption", "fake_caption"):  # prompt text: a number or a list here is an edited record
        if meta.get(key) is not None and not isinstance(meta[key], str):
            raise DataError(f"expected str, got {type(meta[key]).__name__}", source=source, row=row,
                            field=f"meta.{key}")
    rating = meta.get("rating") or {}
    return {
        "id": name,
        "image_name": name,
        "subset": subset_of(name),
        "direct": direct.strip(),
        "indirect": indirect_raw.strip(),
        "indirect_raw": indirect_raw,
        "solution": solution,
        "addressee": subject,
        "action": action,
        "object": obj,
        "options": options,
        "ordering": [str(x) for x in ordering],
        "gold": str(ordering[0]),
        "letter_category": {str(letter): cat for letter, cat in zip(ordering, CATEGORIES, strict=True)},
        "caption": meta.get("caption") or "",
        "ram_entity": list(meta.get("ram_entity") or []),
        "img_size": meta.get("img_size"),
        "person_bbox": [list(b) for b in (meta.get("person_bbox") or [])],
        "rating_direct": rating.get("direct"),
        "rating_indirect": rating.get("indirect"),
        "fake_caption": meta.get("fake_caption") or "",
        "image": image,
        "source_file": source,
        "row": row,
    }


# -- reading each released form ------------------------------------------------------------------
def _read_parquet(paths: list[Path]) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    out = []
    for path in paths:
        try:
            rows = pq.read_table(path).to_pylist()
        except Exception as e:  # noqa: BLE001 - a damaged file is reported with its name
            raise DataError(f"cannot read parquet: {e}", source=path.name) from None
        for i, rec in enumerate(rows, start=1):
            image = rec.pop("image", None)
            if image is None:
                raise DataError("missing embedded image", source=path.name, row=i, field="image")
            out.append(normalize_record(rec, source=path.name, row=i, image=image))
    return out


def _find_image_dir(json_path: Path, image_dir: str | os.PathLike | None) -> Path:
    if image_dir is not None:
        return Path(image_dir)
    for cand in IMAGE_DIR_CANDIDATES:
        d = json_path.parent / cand
        if d.is_dir() and any(d.glob(f"*{IMAGE_SUFFIX}")):
            return d
    return json_path.parent


def _read_json(path: Path, image_dir: str | os.PathLike | None) -> list[dict[str, Any]]:
    from vlamb_nb.images import safe_join

    if path.suffix == ".jsonl":  # a record is numbered by its line, as in every JSON Lines file
        numbered = list(iter_jsonl(path))
    else:
        data = read_json(path)
        if isinstance(data, dict):  # a single record (like the README example)
            data = [data]
        if not isinstance(data, list):
            raise DataError("expected a list of records", source=path.name)
        numbered = list(enumerate(data, start=1))
    folder = _find_image_dir(path, image_dir)
    out = []
    for i, rec in numbered:
        name = rec.get("image_name") if isinstance(rec, dict) else None
        img = None
        if isinstance(name, str):
            try:
                img = str(safe_join(folder, name + IMAGE_SUFFIX))
            except ImageError as e:
                raise DataError(str(e), source=path.name, row=i, field="image_name") from None
        out.append(normalize_record(rec, source=path.name, row=i, image=img))
    return out


def _hub_snapshot(repo_id: str, revision: str | None = None) -> Path:
    """Download (or reuse the cached) parquet shards of a hub dataset; needs network the first time."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise NotAvailableError("loading from the hub needs huggingface_hub (pip install huggingface_hub)") from None
    try:
        return Path(snapshot_download(repo_id, repo_type="dataset", revision=revision,
                                      allow_patterns=["*.parquet", "data/*.parquet", "README.md"]))
    except Exception as e:  # noqa: BLE001 - offline, gated or unknown repo
        raise NotAvailableError(f"cannot fetch {repo_id} from the Hugging Face hub ({type(e).__name__}: {e}); "
                                "pass a local parquet file or folder instead") from None


def _looks_like_hub_id(source: str) -> bool:
    return bool(re.fullmatch(r"[\w.-]+/[\w.-]+", source)) and not Path(source).exists()


def _records_from(path: Path, image_dir: str | os.PathLike | None) -> list[dict[str, Any]]:
    if path.is_dir():
        shards = sorted(path.glob("data/*.parquet")) or sorted(path.glob("*.parquet"))
        if shards:
            return _read_parquet(shards)
        jsons = [path / f for f in JSON_FILES if (path / f).is_file()] or sorted(path.glob("*.json"))
        if not jsons:
            raise DataError("no parquet shards (data/*.parquet) or JSON release files found", source=str(path))
        return [r for j in jsons for r in _read_json(j, image_dir)]
    if not path.exists():
        raise DataError("no such file or folder", source=str(path))
    if path.suffix == ".parquet":
        return _read_parquet([path])
    if path.suffix in (".json", ".jsonl"):
        return _read_json(path, image_dir)
    raise DataError("unsupported file type (expected .parquet, .json or .jsonl)", source=str(path))


def load_vague(source: str | os.PathLike | None = None, *, image_dir: str | os.PathLike | None = None,
               revision: str | None = None, strict_counts: bool = True):
    """Items as a DataFrame from the hub id, a parquet file/folder, or the official JSON files.

    ``attrs["subset_counts"]`` holds the VCR/Ego4D counts from the ``@`` rule; for the full
    release (1,677 items) they must be 1,144 / 533 (``strict_counts``).
    """
    import pandas as pd

    src = HUB_ID if source is None else source
    if isinstance(src, str) and _looks_like_hub_id(src):
        path = _hub_snapshot(src, revision)
    else:
        path = Path(src)
    records = _records_from(path, image_dir)
    df = pd.DataFrame(records, columns=ITEM_COLUMNS)
    dup = df["id"].duplicated()
    if dup.any():
        r = df[dup].iloc[0]
        raise DataError(f"duplicate image_name {r['id']!r}", source=r["source_file"], row=r["row"],
                        field="image_name")
    counts = {k: int((df["subset"] == k).sum()) for k in EXPECTED_COUNTS}
    if strict_counts and len(df) == sum(EXPECTED_COUNTS.values()) and counts != EXPECTED_COUNTS:
        raise DataError(f"subset split by the '@' rule gives {counts}, expected {EXPECTED_COUNTS}",
                        source=str(src), field="image_name")
    df.attrs["subset_counts"] = counts
    df.attrs["source"] = str(src)
    return df


def item_image(item: Any):
    """The item's image (PIL, RGB) with a clear error naming the item when missing or corrupt."""
    from vlamb_nb.images import load_image

    ref = item["image"]
    if ref is None:
        raise ImageError(f"item {item['id']}: no image reference")
    try:
        return load_image(ref)
    except ImageError as e:
        raise ImageError(f"item {item['id']}: {e}") from None


# -- a generated sample in the released formats ----------------------------------------------------
_SCENES = [
    ("kitchen", ["stove", "kettle", "window", "sink", "cup"], "turn off", "stove",
     "Hey person{p}, something smells like it is about to become charcoal."),
    ("office", ["desk", "lamp", "window", "laptop", "chair"], "open", "window",
     "Hey person{p}, I think we are growing our own climate in here."),
    ("street", ["car", "curb", "hydrant", "sign", "bicycle"], "move", "car",
     "Hey person{p}, that spot looks a little too exclusive, doesn't it?"),
    ("living room", ["television", "sofa", "remote", "lamp", "rug"], "turn down", "television",
     "Hey person{p}, are we hosting a concert for the whole building?"),
    ("garden", ["hose", "plant", "bench", "shovel", "fence"], "water", "plant",
     "Hey person{p}, these leaves look like they crossed a desert."),
    ("classroom", ["board", "marker", "desk", "book", "clock"], "clean", "board",
     "Hey person{p}, is this a museum of yesterday's lessons?"),
]


def _draw_image(rng: random.Random, n_people: int, size: tuple[int, int]):
    """A synthetic frame with person boxes and the official tag style (white numbers on black)."""
    from PIL import Image, ImageDraw

    w, h = size
    img = Image.new("RGB", size, tuple(rng.randrange(60, 200) for _ in range(3)))
    draw = ImageDraw.Draw(img)
    boxes = []
    for i in range(n_people):
        bw, bh = rng.randrange(w // 8, w // 4), rng.randrange(h // 3, h // 2)
        x1, y1 = rng.randrange(0, w - bw), rng.randrange(0, h - bh)
        box = [float(x1), float(y1), float(x1 + bw), float(y1 + bh)]
        boxes.append(box)
        draw.rectangle(box, fill=tuple(rng.randrange(0, 255) for _ in range(3)))
        cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
        label = str(i + 1)
        draw.rectangle([cx - 7, cy - 8, cx + 7 * len(label), cy + 8], fill=(0, 0, 0))
        draw.text((cx - 4, cy - 6), label, fill=(255, 255, 255))
    return img, boxes


def sample_records(n: int = 8, seed: int = 0, image_size: tuple[int, int] = (320, 200)):
    """``n`` records in the released 2.0 schema plus their JPEG bytes (synthetic, deterministic)."""
    import io

    rng = random.Random(seed)
    out = []
    for i in range(n):
        scene, ents, action, obj, utt = _SCENES[i % len(_SCENES)]
        n_people = rng.randrange(1, 4)
        p = rng.randrange(1, n_people + 1)
        img, boxes = _draw_image(rng, n_people, image_size)
        buf = io.BytesIO()
        img.save(buf, format="JPEG", quality=85)
        name = (f"{i:04d}_Sample_Movie_00.{i:02d}.00.000-00.{i:02d}.02.000@{i % 3}" if i % 3 != 2
                else f"{rng.getrandbits(64):016x}-sample-{i:03d}")
        ordering = list(LETTERS)
        rng.shuffle(ordering)
        absent = "candle" if obj != "candle" else "lamp"
        rec = {
            "image_name": name,
            "direct": f"Hey, person{p}, you should {action} the {obj} in this {scene}.",
            "indirect": utt.format(p=p) + "  ",
            "solution": f"(person{p}, {action}, {obj})",
            "mcq": {
                "1_correct": f"The speaker wants person{p} to {action} the {obj}.",
                "2_fake_scene": f"The speaker wants person{p} to light the campfire in the forest.",
                "3_surface_understanding": f"The speaker wants person{p} to talk about the {scene} in general.",
                "4_wrong_entity": f"The speaker wants person{p} to {action} the {absent}.",
                "ordering": ordering,
            },
            "meta": {
                "caption": f"A {scene} with {n_people} people near a {obj}. Person{p} stands close to it.",
                "ram_entity": sorted(rng.sample(ents, rng.randrange(3, len(ents) + 1))),
                "img_size": {"width": float(image_size[0]), "height": float(image_size[1])},
                "person_bbox": boxes,
                "rating": {"direct": rng.choice([4, 5]), "indirect": rng.choice([3, 4, 5])},
                "fake_caption": f"A quiet forest camp at night where person{p} sits by a fire.",
            },
        }
        out.append((rec, buf.getvalue()))
    return out


def _hf_features() -> dict[str, Any]:
    """The dataset card's feature spec, stored in the parquet metadata as the hub does."""
    s = {"dtype": "string", "_type": "Value"}
    return {"info": {"features": {
        "image": {"_type": "Image"}, "image_name": s, "direct": s, "indirect": s, "solution": s,
        "mcq": {"1_correct": s, "2_fake_scene": s, "3_surface_understanding": s, "4_wrong_entity": s,
                "ordering": {"feature": s, "_type": "Sequence"}},
        "meta": {"caption": s, "ram_entity": {"feature": s, "_type": "Sequence"},
                 "img_size": {"width": {"dtype": "float32", "_type": "Value"},
                              "height": {"dtype": "float32", "_type": "Value"}},
                 "person_bbox": {"feature": {"feature": {"dtype": "float32", "_type": "Value"},
                                             "_type": "Sequence"}, "_type": "Sequence"},
                 "rating": {"direct": {"dtype": "int32", "_type": "Value"},
                            "indirect": {"dtype": "int32", "_type": "Value"}},
                 "fake_caption": s},
    }}}


def write_hub_parquet(records: list[tuple[dict[str, Any], bytes]], path: str | os.PathLike) -> Path:
    """Write records with embedded images exactly as the hub stores them (``{"bytes","path"}`` struct)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    string = pa.string()
    schema = pa.schema([
        ("image", pa.struct([("bytes", pa.binary()), ("path", string)])),
        ("image_name", string), ("direct", string), ("indirect", string), ("solution", string),
        ("mcq", pa.struct([("1_correct", string), ("2_fake_scene", string), ("3_surface_understanding", string),
                           ("4_wrong_entity", string), ("ordering", pa.list_(string))])),
        ("meta", pa.struct([("caption", string), ("ram_entity", pa.list_(string)),
                            ("img_size", pa.struct([("width", pa.float32()), ("height", pa.float32())])),
                            ("person_bbox", pa.list_(pa.list_(pa.float32()))),
                            ("rating", pa.struct([("direct", pa.int32()), ("indirect", pa.int32())])),
                            ("fake_caption", string)])),
    ], metadata={"huggingface": json.dumps(_hf_features())})
    rows = [{"image": {"bytes": data, "path": rec["image_name"] + IMAGE_SUFFIX}, **rec} for rec, data in records]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".parquet.part")
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp)
    os.replace(tmp, path)
    return path


def write_json_release(records: list[tuple[dict[str, Any], bytes]], directory: str | os.PathLike) -> Path:
    """Write the official JSON form: one file per subset and ``{image_name}_annot.jpg`` images."""
    directory = Path(directory)
    img_dir = directory / "images"
    img_dir.mkdir(parents=True, exist_ok=True)
    by_subset: dict[str, list[dict[str, Any]]] = {"VCR": [], "Ego4D": []}
    for rec, data in records:
        by_subset[subset_of(rec["image_name"])].append(rec)
        (img_dir / (rec["image_name"] + IMAGE_SUFFIX)).write_bytes(data)
    for (subset, recs), fname in zip(by_subset.items(), JSON_FILES, strict=True):
        del subset
        (directory / fname).write_text(json.dumps(recs, indent=1), encoding="utf-8")
    return directory


def make_sample(directory: str | os.PathLike, n: int = 8, seed: int = 0, fmt: str = "parquet") -> Path:
    """A small generated sample in a released format (``parquet`` hub layout, or ``json``)."""
    records = sample_records(n, seed)
    directory = Path(directory)
    if fmt == "parquet":
        write_hub_parquet(records, directory / "data" / "train-00000-of-00001.parquet")
        return directory
    if fmt == "json":
        return write_json_release(records, directory)
    from vlamb_nb.errors import SettingError

    raise SettingError(f"unknown sample format {fmt!r}; choose parquet or json")


def human_subset_approximation(items, n: int = 400, seed: int = 0):
    """An approximation of Table 2's 400-item subset (its id list is not released): the highest-rated items
    (direct + indirect rating), ties broken at random with ``seed``, as the paper describes the selection.

    Not the paper's subset; numbers on it are comparable to Table 2 only loosely.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    score = items["rating_direct"].fillna(0).astype(float) + items["rating_indirect"].fillna(0).astype(float)
    order = np.lexsort((rng.random(len(items)), -score.to_numpy()))
    return items.iloc[order[: min(n, len(items))]].reset_index(drop=True)


SUBSETS = ("VCR", "Ego4D")


# -- captions for SM -----------------------------------------------------------------------------------
def read_captions(path: str | os.PathLike) -> dict[str, str]:
    """External captions keyed by image name: the released ``{"<name>_annot.jpg": caption}`` JSON, or a CSV
    with ``image_name,caption`` columns."""

    p = Path(path)
    if not p.is_file():
        raise DataError("caption file not found", source=str(p))
    if p.suffix == ".csv":
        from vlamb_nb.jsonl import read_csv

        df = read_csv(p)
        for col in ("image_name", "caption"):
            if col not in df.columns:
                raise DataError("missing column", source=p.name, field=col)
        pairs = zip(df["image_name"], df["caption"], strict=True)
    else:
        data = read_json(p, expect=dict, what="{image name: caption}")
        pairs = data.items()
    out = {}
    for k, v in pairs:
        if not isinstance(v, str):
            raise DataError("caption must be a string", source=p.name, field=str(k))
        out[str(k).removesuffix(IMAGE_SUFFIX)] = v
    return out


# -- dataset statistics (Table B1, Fig. B1) ------------------------------------------------------------
def dataset_statistics(items):
    """Table B1 from the data: mean RAM objects, tagged people and words (whitespace split) per subset."""
    import pandas as pd

    cols = {}
    for subset, label in (("VCR", "VAGUE-VCR"), ("Ego4D", "VAGUE-Ego4D")):
        s = items[items["subset"] == subset]
        if s.empty:
            continue
        cols[label] = {
            "Average object counts": float(s["ram_entity"].map(len).mean()),
            "Average people counts": float(s["person_bbox"].map(len).mean()),
            "Average word counts (direct)": float(s["direct"].map(lambda t: len(t.split())).mean()),
            "Average word counts (indirect)": float(s["indirect"].map(lambda t: len(t.split())).mean()),
            "Items": float(len(s)),
        }
    return pd.DataFrame(cols).round(2)


def top_verbs(items, subset: str | None = None, k: int = 20) -> list[tuple[str, int]]:
    """The ``k`` most frequent actions of the solution triplets (Fig. B1), lower-cased."""
    s = items if subset is None else items[items["subset"] == subset]
    return Counter(a.strip().lower() for a in s["action"] if a.strip()).most_common(k)


def data_stats(items) -> dict[str, Any]:
    """Dataset statistics for ``vlamb-nb data stats``: subset counts, Table B1, the top verbs per subset."""
    return {"n": len(items), "subset_counts": {s: int((items["subset"] == s).sum()) for s in SUBSETS},
            "table_b1": dataset_statistics(items).to_dict(),
            "top_verbs": {s: top_verbs(items, s, 20) for s in SUBSETS}}


# -- the release -------------------------------------------------------------------------------------
def release_counts(root: Path) -> dict[str, int]:
    """Rows per subset of the fetched hub shards, read from the names alone (no image is decoded)."""
    import pyarrow.parquet as pq

    shards = sorted((root / "data").glob("train-*.parquet"))
    names = [n for f in shards for n in pq.read_table(f, columns=["image_name"]).column(0).to_pylist()]
    subsets = [subset_of(str(n)) for n in names]
    return {"rows": len(names), "VCR": subsets.count("VCR"), "Ego4D": subsets.count("Ego4D")}


#: no known-good revision of the hub dataset yet: the commit fetched first is recorded and asked for again
RELEASE = Release(
    paper="vague", name=f"hub:{HUB_ID}", licence="none stated (paper, README and card)",
    parts=(HubFiles(HUB_ID, ("data/train-*",), revision=None),),
    expected={"rows": 1677, **EXPECTED_COUNTS}, count=release_counts, n_items=1677, unit="rows",
    load={"source": "files"}, size="about 221 MB (+ 1.4 GB roberta-large for BERTScore)",
    models=(MetricModel("roberta-large", "BERTScore F1 of the free-form answers (bert-score's English default)"),))


# -- the test sets as a noise floor sees them ---------------------------------------------------------------------
#: Ego4D's frames come from this many videos (§4.1: 888 candidates from 94 videos, neighbouring frames skipped)
EGO4D_VIDEOS = 94
_MOVIE = re.compile(r"^(.*?)_\d{2}\.\d{2}\.\d{2}")


def test_sets(items=None) -> dict[str, Any]:
    """VAGUE's test sets for :mod:`vlamb_nb.noise`: all 1,677 items, each subset, the 400-item human subset.
    Items share a source where frames come from one movie (VCR, LSMDC) or one video (Ego4D). Given the whole
    release, VCR frames are grouped by the movie their name starts with; otherwise (and always for Ego4D, whose
    video ids the paper does not tie to frames) the structure is declared: VCR frames independent (the movie
    count is not stated: a lower bound on the floor), Ego4D's 533 frames spread over 94 videos."""
    from vlamb_nb.stats.power import TestSet, cluster_sizes, even_sizes

    ego = even_sizes(EXPECTED_COUNTS["Ego4D"], EGO4D_VIDEOS)
    vcr: tuple[int, ...] | None = None
    how = "VCR frames taken as independent (movies not stated)"
    origin = "declared"
    if items is not None and len(items) == sum(EXPECTED_COUNTS.values()) and "image_name" in items.columns:
        names = items.loc[items["subset"] == "VCR", "image_name"].astype(str)
        if len(names) == EXPECTED_COUNTS["VCR"]:
            vcr = cluster_sizes([(m.group(1) if (m := _MOVIE.match(n)) else n) for n in names])
            how, origin = f"VCR frames grouped by movie ({len(vcr)} movies)", "release"
    ego_note = f"Ego4D's 533 frames spread over {EGO4D_VIDEOS} videos (declared)"
    return {
        "all": TestSet("all", 1677, "item", (vcr or (1,) * EXPECTED_COUNTS["VCR"]) + ego, "sources", origin,
                       f"{how}; {ego_note}"),
        "VCR": TestSet("VCR", EXPECTED_COUNTS["VCR"], "item", vcr, "movies", origin, how),
        "Ego4D": TestSet("Ego4D", EXPECTED_COUNTS["Ego4D"], "item", ego, "videos", "declared", ego_note),
        "human400": TestSet("human400", 400, "item", None, "", "declared",
                            "Table 2's 400 items (ids not released), taken as independent"),
    }
