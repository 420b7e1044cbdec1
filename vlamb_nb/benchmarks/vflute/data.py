"""V-FLUTE data: the official JSON/CSV files, Hugging Face parquet, the gated hub dataset, a generated sample.

Every loader returns the same item table (one row per instance)::

    id  split  index  source_dataset  dataset  dataset_name  phenomenon  claim  label  label_true
    explanation  prompt  prompt_origin  image  image_root

``prompt_origin`` is ``"released"`` when the instruction comes from the file's ``prompt`` field and
``"seeded"`` when it had to be re-drawn (Hugging Face rows carry no instruction): the re-draw follows
the official procedure but does not reproduce the released test instructions (see
``prompts.SEEDED_RELEASE_MATCH``), so it is reported as a deviation.

``dataset`` is the unit the paper reports per dataset: the source, with IRFL split into
``irfl_idiom`` and ``irfl_metaphor_simile`` by ``phenomenon`` (``vismet`` is HAIVMet).
``image`` is a path relative to ``image_root`` laid out as ``{source}/{split}/{i}.{png|jpg}``
(the official layout), or the Hugging Face ``{"bytes", "path"}`` struct for parquet rows.
"""

from __future__ import annotations

import io
import json
import os
import random
from pathlib import Path
from typing import Any

from vlamb_nb.benchmarks.vflute.prompts import (
    PROMPT_SEED,
    PROMPTS,
    SPLIT_SIZES,
    assigned_prompt,
    fill_claim,
    target_text,
)
from vlamb_nb.errors import DataError, ImageError, NotAvailableError, SettingError
from vlamb_nb.jsonl import read_csv as read_csv_file
from vlamb_nb.jsonl import read_json as read_json_file
from vlamb_nb.release_spec import HubFiles, MetricModel, Release, parquet_rows

HUB_ID = "ColumbiaNLP/V-FLUTE"
SOURCE_NAMES = {"vismet": "HAIVMet", "irfl": "IRFL", "muse": "MuSE", "memecap": "MemeCap", "nycartoons": "NYCartoons"}
PHENOMENA = ("metaphor", "simile", "idiom", "sarcasm", "humor")
LABELS = ("entailment", "contradiction")
#: the label spellings a release may use (the hub card's ``ENTAILS``/``CONTRADICTS`` among them), read as ``LABELS``
LABEL_SPELLINGS = {"entailment": "entailment", "entails": "entailment", "entail": "entailment",
                   "contradiction": "contradiction", "contradicts": "contradiction", "contradict": "contradiction"}
# reporting units, in the order of the paper's Table 3 / Table 7
DATASETS = {"vismet": "HAIVMet", "irfl_metaphor_simile": "IRFL (metaphor/simile)", "irfl_idiom": "IRFL (idiom)",
            "muse": "MuSE", "memecap": "MemeCap", "nycartoons": "NYCartoons"}
SPLIT_ALIASES = {"train": "train", "valid": "validation", "validation": "validation", "dev": "validation",
                 "test": "test"}
FILE_SPLIT = {"train": "train", "validation": "valid", "test": "test"}  # the repo's file names
ITEM_COLUMNS = ["id", "split", "index", "source_dataset", "dataset", "dataset_name", "phenomenon", "claim", "label",
                "label_true", "explanation", "prompt", "prompt_origin", "image", "image_root"]


def canonical_split(split: str) -> str:
    key = SPLIT_ALIASES.get(str(split).lower())
    if key is None:
        raise SettingError(f"unknown V-FLUTE split {split!r}; choose train, validation or test")
    return key


def dataset_of(source: str, phenomenon: str) -> str:
    """The reporting unit: IRFL split by phenomenon, every other source as is."""
    if source == "irfl":
        return "irfl_idiom" if phenomenon == "idiom" else "irfl_metaphor_simile"
    return source


# -- validation ------------------------------------------------------------------------------------
def _require(rec: dict[str, Any], fld: str, src: str, row: int) -> str:
    """A text field: present, not empty, and text (a number or a list is refused, never turned into text)."""
    v = rec.get(fld)
    if v is None or (isinstance(v, float) and v != v) or (isinstance(v, str) and not v.strip()):
        raise DataError("missing or empty value", source=src, row=row, field=fld)
    if not isinstance(v, str):
        raise DataError(f"expected text, got {type(v).__name__} {v!r}", source=src, row=row, field=fld)
    return v


def normalise_record(rec: dict[str, Any], *, src: str, row: int, split: str, index: int | None,
                     image_root: str | None, position: int | None = None) -> dict[str, Any]:
    """One validated item row; every problem names the file, row (1-based) and field. ``position`` is the
    index an id without a number of its own takes (default: ``row``)."""
    source = _require(rec, "source_dataset", src, row).strip().lower()
    if source not in SOURCE_NAMES:
        raise DataError(f"unknown source_dataset {source!r}; expected one of {', '.join(SOURCE_NAMES)}",
                        source=src, row=row, field="source_dataset")
    phen = _require(rec, "phenomenon", src, row).strip().lower()
    if phen not in PHENOMENA:
        raise DataError(f"unknown phenomenon {phen!r}", source=src, row=row, field="phenomenon")
    given = _require(rec, "label", src, row)
    label = LABEL_SPELLINGS.get(given.strip().lower())
    if label not in LABELS:
        raise DataError(f"label must be 'entailment' or 'contradiction' (or ENTAILS/CONTRADICTS), got {given!r}",
                        source=src, row=row, field="label")
    claim = _require(rec, "claim", src, row).strip()
    expl = _require(rec, "explanation", src, row).strip()
    rid = rec.get("id")
    if rid is None or (isinstance(rid, float) and rid != rid):
        if index is None:
            raise DataError("missing id", source=src, row=row, field="id")
        rid = f"{source}-{FILE_SPLIT[split]}-{index}"
    rid = str(rid)
    if index is None:
        tail = rid.rsplit("-", 1)[-1]
        index = int(tail) if tail.isdigit() else row if position is None else position
    prompt = rec.get("prompt")
    if prompt is not None and not isinstance(prompt, (str, float)):  # NaN: an empty CSV cell
        raise DataError(f"expected text, got {type(prompt).__name__}", source=src, row=row, field="prompt")
    if isinstance(prompt, str) and prompt.strip():
        if "REPLACE_CLAIM" not in prompt:
            raise DataError("prompt has no REPLACE_CLAIM slot", source=src, row=row, field="prompt")
    else:
        prompt = None
    image = rec.get("image", rec.get("path"))
    if isinstance(image, float) and image != image:
        image = None
    d = dataset_of(source, phen)
    return {"id": rid, "split": split, "index": int(index), "source_dataset": source, "dataset": d,
            "dataset_name": DATASETS[d], "phenomenon": phen, "claim": claim, "label": label,
            "label_true": 1 if label == "entailment" else 0, "explanation": expl, "prompt": prompt,
            "prompt_origin": "released" if prompt is not None else None, "image": image, "image_root": image_root}


def _frame(rows: list[dict[str, Any]], src: str):
    import pandas as pd

    df = pd.DataFrame(rows, columns=ITEM_COLUMNS)
    dup = df["id"].duplicated()
    if dup.any():
        raise DataError(f"duplicate id {df.loc[dup, 'id'].iloc[0]!r}", source=src, row=int(dup.idxmax()) + 1,
                        field="id")
    df.attrs["source"] = src
    return df


# -- the official files ----------------------------------------------------------------------------
def read_json(path: str | os.PathLike, *, split: str = "test", image_root: str | None = None):
    """The official LLaVA-format JSON (a list of records with ``conversations``)."""
    p = Path(path)
    data = read_json_file(p, expect=list, what="records")
    rows = []
    for i, rec in enumerate(data, start=1):
        if not isinstance(rec, dict):
            raise DataError("record is not an object", source=str(p), row=i)
        rows.append(normalise_record(rec, src=str(p), row=i, split=split, index=None, image_root=image_root,
                                     position=i - 1))
    return _frame(rows, str(p))


def read_csv(path: str | os.PathLike, *, split: str = "test", image_root: str | None = None):
    """The official CSV (``id, source_dataset, phenomenon, path, claim, label, explanation, prompt, transformed``)."""

    p = Path(path)
    df = read_csv_file(p)
    need = {"source_dataset", "phenomenon", "claim", "label", "explanation"}
    if missing := need - set(df.columns):
        raise DataError(f"missing columns {sorted(missing)}", source=str(p))
    rows = []
    for i, rec in enumerate(df.to_dict(orient="records")):
        rec = {k: (None if v == "" else v) for k, v in rec.items()}
        rows.append(normalise_record(rec, src=str(p), row=i + 2, split=split, index=None, image_root=image_root))
    return _frame(rows, str(p))


def _image_ext(data: bytes) -> str:
    """``jpg`` when the bytes are JPEG, else ``png`` (the official conversion's rule)."""
    return "jpg" if data[:3] == b"\xff\xd8\xff" else "png"


def class_label_names(path: str | os.PathLike, column: str = "label") -> list[str] | None:
    """The class names of an integer ``column`` from the parquet's Hugging Face features metadata (the arrow
    schema's ``huggingface`` key, as ``datasets`` writes a ``ClassLabel``), or None when it names none."""
    import pyarrow.parquet as pq

    try:
        meta = pq.read_schema(path).metadata or {}
        info = json.loads(meta.get(b"huggingface", b"{}"))
    except (OSError, ValueError):
        return None
    features = (info.get("info") or {}).get("features") or info.get("features") or {}
    feature = features.get(column) if isinstance(features, dict) else None
    names = feature.get("names") if isinstance(feature, dict) else None
    return [str(n) for n in names] if isinstance(names, list) and names else None


def _label_text(value: Any, names: list[str] | None, *, src: str, row: int) -> Any:
    """A label as text: an integer class label through the file's class names; text as it is."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        return value
    if names is None:
        raise DataError(f"label is the class number {int(value)}, and the file's features metadata names no "
                        "classes", source=src, row=row, field="label")
    if not 0 <= int(value) < len(names):
        raise DataError(f"label {int(value)} is not one of the {len(names)} classes {names}", source=src, row=row,
                        field="label")
    return names[int(value)]


def read_parquet(paths: list[str | os.PathLike] | str | os.PathLike, *, split: str = "test"):
    """Hugging Face parquet shards (``image`` as a ``{"bytes","path"}`` struct); ids and prompts as the repo builds
    them. ``label`` is read as text in any spelling of ``LABEL_SPELLINGS``, or as an integer class label named by
    the shard's Hugging Face features metadata."""
    import pandas as pd

    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if not paths:
        raise DataError(f"no parquet files for split {split!r}")
    frames = []
    for p in sorted(str(x) for x in paths):
        try:
            frame = pd.read_parquet(p)
        except Exception as e:  # noqa: BLE001 - pyarrow raises many types for a bad file
            first = (str(e).strip().splitlines() or [type(e).__name__])[0][:160]
            raise DataError(f"not a readable parquet file ({type(e).__name__}: {first})", source=p) from None
        names = class_label_names(p)
        if "label" in frame.columns:
            frame["label"] = [_label_text(v, names, src=p, row=i + 1) for i, v in enumerate(frame["label"])]
        frames.append(frame)
    df = pd.concat(frames, ignore_index=True)
    src = ", ".join(str(p) for p in paths)
    rows = []
    for i, rec in enumerate(df.to_dict(orient="records")):
        img = rec.get("image")
        if not isinstance(img, dict) or not img.get("bytes"):
            raise DataError("image is not a Hugging Face {'bytes','path'} struct with bytes", source=src, row=i + 1,
                            field="image")
        rec = dict(rec)
        rec["id"] = None
        rec["prompt"] = assigned_prompt(split, i, sizes={**SPLIT_SIZES, split: max(SPLIT_SIZES[split], len(df))})
        rec["image"] = {"bytes": img["bytes"],
                        "path": f"{str(rec.get('source_dataset', '')).lower()}/{FILE_SPLIT[split]}/{i}."
                                f"{_image_ext(img['bytes'])}"}
        item = normalise_record(rec, src=src, row=i + 1, split=split, index=i, image_root=None)
        item["prompt_origin"] = "seeded"  # the hub rows carry no instruction
        rows.append(item)
    return _frame(rows, src)


def _hub_parquet(repo_id: str, split: str, token_env: str = "HF_TOKEN") -> list[str]:
    """Download the split's parquet shards of the gated hub dataset (needs access and ``$HF_TOKEN``)."""
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, LocalEntryNotFoundError
    except ImportError:  # pragma: no cover
        raise NotAvailableError("loading from the hub needs the huggingface_hub package") from None
    token = os.environ.get(token_env) or None
    try:
        folder = snapshot_download(repo_id, repo_type="dataset", allow_patterns=[f"data/{split}-*"], token=token)
    except GatedRepoError:
        raise NotAvailableError(
            f"{repo_id} is a gated dataset: accept its conditions on huggingface.co/datasets/{repo_id} and set "
            f"${token_env} to a token of that account" + ("" if token else f" (${token_env} is not set)")) from None
    except LocalEntryNotFoundError:
        raise NotAvailableError(f"{repo_id} is not in the local Hugging Face cache and the hub is unreachable "
                                "(offline); pass source= a local folder with the official JSON/CSV or parquet") \
            from None
    except HfHubHTTPError as e:
        raise NotAvailableError(f"could not fetch {repo_id}: {e}") from None
    files = sorted(str(p) for p in Path(folder).glob(f"data/{split}-*.parquet"))
    if not files:
        raise DataError(f"no data/{split}-*.parquet files in {repo_id}", source=folder)
    return files


def load_items(source: str | os.PathLike | None = None, *, split: str = "test", image_root: str | None = None,
               token_env: str = "HF_TOKEN"):
    """Items from a folder, an official JSON/CSV file, parquet file(s), or the hub id (default)."""
    split = canonical_split(split)
    if source is None:
        source = HUB_ID
    p = Path(source)
    if p.is_dir():
        root = str(image_root or p)
        stem = f"vflute-v2-{FILE_SPLIT[split]}"
        for name, reader in ((f"{stem}.json", read_json), (f"{stem}.csv", read_csv)):
            if (p / name).is_file():
                return reader(p / name, split=split, image_root=root)
        shards = sorted(p.glob(f"data/{split}-*.parquet")) or sorted(p.glob(f"{split}-*.parquet"))
        if shards:
            return read_parquet(shards, split=split)
        raise DataError(f"no {stem}.json, {stem}.csv or {split}-*.parquet found", source=str(p))
    if p.is_file():
        root = str(image_root or p.parent)
        suffix = p.suffix.lower()
        if suffix == ".json":
            return read_json(p, split=split, image_root=root)
        if suffix == ".csv":
            return read_csv(p, split=split, image_root=root)
        if suffix == ".parquet":
            return read_parquet(p, split=split)
        raise DataError("unsupported file type (expected .json, .csv or .parquet)", source=str(p))
    if isinstance(source, str) and source.count("/") == 1 and not source.startswith((".", "/")):
        return read_parquet(_hub_parquet(source, split, token_env), split=split)
    raise DataError("no such file or folder", source=str(source))


# -- statistics ------------------------------------------------------------------------------------
def split_counts(items):
    """Per source × phenomenon × label counts (the released test split breakdown)."""
    return (items.groupby(["source_dataset", "phenomenon", "label"]).size().unstack("label", fill_value=0)
            .reindex(columns=list(LABELS), fill_value=0))


def dataset_counts(items):
    """Counts per reporting unit in Table 3's row order."""
    c = items["dataset"].value_counts()
    return c.reindex([d for d in DATASETS if d in c.index])


def length_table(items):
    """Mean claim / explanation length in characters per source (App. B, Figs. 8-9)."""
    df = items.assign(claim_chars=items["claim"].str.len(), explanation_chars=items["explanation"].str.len())
    out = df.groupby("source_dataset")[["claim_chars", "explanation_chars"]].mean()
    out.loc["all"] = df[["claim_chars", "explanation_chars"]].mean()
    return out.round(1)


# -- a generated sample in the official format ----------------------------------------------------
_SAMPLE_SPEC = [  # (source, phenomenon, labels cycled)
    ("vismet", "metaphor", LABELS), ("vismet", "simile", LABELS), ("irfl", "metaphor", LABELS),
    ("irfl", "simile", LABELS), ("irfl", "idiom", LABELS), ("muse", "sarcasm", LABELS),
    ("memecap", "humor", LABELS), ("nycartoons", "humor", ("entailment",)),
]
_SUBJECTS = ["the meeting", "her smile", "the city", "his argument", "the exam", "the market", "the garden",
             "their friendship", "the old car", "the winter night", "my inbox", "the new phone"]
_QUALITIES = [("calm", "a stormy sea"), ("bright", "the sun"), ("fast", "a cheetah"), ("cold", "ice"),
              ("heavy", "a mountain"), ("sharp", "a knife"), ("sweet", "honey"), ("loud", "thunder")]
_COLORS = ["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#CCB974"]


def _sample_image(rng: random.Random, fmt: str) -> bytes:
    from PIL import Image, ImageDraw

    w, h = rng.choice([(96, 64), (80, 80), (64, 96)])
    img = Image.new("RGB", (w, h), rng.choice(_COLORS))
    draw = ImageDraw.Draw(img)
    for _ in range(3):
        x0, y0 = rng.randrange(w // 2), rng.randrange(h // 2)
        draw.ellipse([x0, y0, x0 + rng.randrange(8, w // 2), y0 + rng.randrange(8, h // 2)], fill=rng.choice(_COLORS))
    buf = io.BytesIO()
    img.save(buf, format="JPEG" if fmt == "jpg" else "PNG")
    return buf.getvalue()


def sample_records(n: int, seed: int, split: str = "test") -> list[dict[str, Any]]:
    """``n`` generated records covering every source/phenomenon, in the official JSON record shape."""
    rng = random.Random(seed)
    recs = []
    for i in range(n):
        source, phen, labels = _SAMPLE_SPEC[i % len(_SAMPLE_SPEC)]
        label = labels[(i // len(_SAMPLE_SPEC)) % len(labels)]
        subj = rng.choice(_SUBJECTS)
        quality, vehicle = rng.choice(_QUALITIES)
        claim = f"{subj.capitalize()} is as {quality} as {vehicle}."
        shown = quality if label == "entailment" else f"the opposite of {quality}"
        expl = (f"The image shows {subj} drawn in {rng.choice(['soft', 'bold', 'muted'])} colours, suggesting "
                f"{shown}. The {phen} compares {subj} to {vehicle}, so the image "
                f"{'supports' if label == 'entailment' else 'does not support'} the claim.")
        prompt = rng.choice(PROMPTS)
        fmt = "jpg" if i % 3 == 2 else "png"
        rid = f"{source}-{FILE_SPLIT[split]}-{i}"
        recs.append({"id": rid, "source_dataset": source, "phenomenon": phen, "claim": claim, "label": label,
                     "explanation": expl, "prompt": prompt, "image": f"{source}/{FILE_SPLIT[split]}/{i}.{fmt}",
                     "conversations": [{"from": "human", "value": "<image>\n" + fill_claim(prompt, claim)},
                                       {"from": "gpt", "value": target_text(expl, label)}],
                     "_image_bytes": _sample_image(rng, fmt)})
    return recs


def write_sample(directory: str | os.PathLike, n: int = 16, seed: int = 0, *, n_train: int = 12) -> Path:
    """Write test (and a small train) split as official JSON + CSV with generated images; return the folder."""
    import pandas as pd

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    for split, count, s in (("test", n, seed), ("train", n_train, seed + 1)):
        if count <= 0:
            continue
        recs = sample_records(count, s, split)
        for r in recs:
            img_path = out / r["image"]
            img_path.parent.mkdir(parents=True, exist_ok=True)
            img_path.write_bytes(r.pop("_image_bytes"))
        stem = f"vflute-v2-{FILE_SPLIT[split]}"
        (out / f"{stem}.json").write_text(json.dumps(recs, indent=1, ensure_ascii=False), encoding="utf-8")
        rows = [{"id": r["id"], "source_dataset": r["source_dataset"], "phenomenon": r["phenomenon"],
                 "path": r["image"], "claim": r["claim"], "label": r["label"], "explanation": r["explanation"],
                 "prompt": r["prompt"], "transformed": str({k: v for k, v in r.items()})} for r in recs]
        pd.DataFrame(rows).to_csv(out / f"{stem}.csv", index=False)
    return out


def item_image(row: Any) -> Any:
    """The image source of an item: HF bytes as they are, or a checked path under the item's image root."""
    img = row["image"]
    if isinstance(img, dict):
        return img
    if not isinstance(img, str) or not img:
        raise ImageError(f"item {row['id']}: no image reference")
    from vlamb_nb.images import safe_join

    root = row.get("image_root")
    if root is None or (isinstance(root, float) and root != root):
        raise ImageError(f"item {row['id']}: image {img!r} is relative but no image root is known")
    path = safe_join(root, img)
    if not path.is_file():
        raise ImageError(f"item {row['id']}: image file not found: {path} (expected layout "
                         "{source}/{split}/{i}.{png|jpg} under the data folder)")
    return str(path)


def data_stats(items) -> dict[str, Any]:
    """Dataset statistics for ``vlamb-nb data stats``: labels, datasets, lengths, instructions re-drawn."""
    from vlamb_nb.benchmarks.vflute.prompts import seeded_prompt_count

    counts = split_counts(items)
    return {"n": int(len(items)), "by_label": {k: int(v) for k, v in items["label"].value_counts().items()},
            "by_dataset": {k: int(v) for k, v in dataset_counts(items).items()},
            "by_source_phenomenon_label": {f"{s}/{p}": {c: int(counts.loc[(s, p), c]) for c in counts.columns}
                                           for s, p in counts.index},
            "mean_chars": length_table(items).to_dict(orient="index"),
            "distinct_prompts": int(items["prompt"].nunique()),
            "prompts_redrawn": seeded_prompt_count(items)}


# -- the release -------------------------------------------------------------------------------------
HUB_REVISION = "d920d848e21b6aba96e03704b134c546f89b74f4"  # 12 parquet files under data/; the test shards are taken


def release_counts(root: Path) -> dict[str, int]:
    return {"rows": parquet_rows(sorted((root / "data").glob("test-*.parquet")))}


RELEASE = Release(
    paper="vflute", name=f"hub:{HUB_ID}", licence="apache-2.0 (dataset card)",
    parts=(HubFiles(HUB_ID, ("data/test-*",), revision=HUB_REVISION, gated=True),),
    expected={"rows": 723}, count=release_counts, n_items=723, unit="items", load={"source": "files"},
    size="the test split only (not the 4.8 GB of all splits) + 3 GB deberta-xlarge-mnli and 2 GB BLEURT-20",
    models=(MetricModel("microsoft/deberta-xlarge-mnli", "ExplanationScore: BERTScore-F1"),
            MetricModel("lucadiliello/BLEURT-20", "ExplanationScore: BLEURT-20")))


# -- the test sets as a noise floor sees them ---------------------------------------------------------------------
def test_sets(items=None) -> dict[str, Any]:
    """V-FLUTE's test sets for :mod:`vlamb_nb.noise`: the 723 test items (one claim per image, independent), the
    99 items of the human baseline (§5.4) and the explanations both annotators judged alike (Table 6: about 75
    per model). Given the release its test count is checked; the structure itself is one item per unit."""
    from vlamb_nb.stats.power import TestSet

    n = SPLIT_SIZES["test"]
    counted = items is not None and len(items) == n
    return {"test": TestSet("test", n, "item", None, "", "release" if counted else "declared",
                            "723 test items, each its own image; an F1 gap is read as an accuracy gap (binary "
                            "labels, near balanced)"),
            "human99": TestSet("human99", 99, "item", None, "", "declared", "§5.4: 99 random test items"),
            "adequacy": TestSet("adequacy", 75, "explanation", None, "", "declared",
                                "Table 6: explanations both annotators agreed on (25/74, 20/67, 38/75)")}


# -- e-SNLI-VE (e-ViL), the literal stage of Table 4's e-ViL rows ------------------------------------------------
#: the e-ViL release's CSVs (maximek3/e-ViL, data/): an unnamed index column, then these
ESNLIVE_COLUMNS = ("pairID", "Flickr30kID", "hypothesis", "gold_label", "explanation")
ESNLIVE_LABELS = ("entailment", "neutral", "contradiction")
ESNLIVE_FILES = {"train": "esnlive_train.csv", "validation": "esnlive_dev.csv", "test": "esnlive_test.csv"}
#: what V-FLUTE trained on, e-SNLI-VE without its neutral pairs (paper App. D / the checkpoint names)
ESNLIVE_PAPER_COUNTS = {"train": 275_815, "validation": 10_897}


def load_esnlive(source: str | os.PathLike, *, split: str = "train", images: str | os.PathLike | None = None,
                 drop_neutral: bool = True, allow_mismatch: bool = False):
    """e-SNLI-VE in its released format (the e-ViL repository's ``esnlive_{train,dev,test}.csv``: a folder or one
    file) as V-FLUTE items, so the fine-tuning recipe trains on it as on V-FLUTE: ``claim`` is the hypothesis,
    ``image`` the Flickr30k file under ``images`` (default ``<folder>/flickr30k_images``), the instruction the
    official seeded draw from the same 21 paraphrases (the repo sampled e-ViL's from V-FLUTE's pool).

    As every release is checked: each row's fields are named when missing, empty or of another kind, labels must
    be e-SNLI-VE's three, pair ids unique; ``drop_neutral`` (the paper's two-way setting) leaves out the neutral
    pairs and counts them in ``attrs["left_out"]``. The train and dev counts after that must be the paper's
    (275,815 / 10,897) unless ``allow_mismatch``, which records the difference in ``attrs["count_mismatch"]``."""
    import pandas as pd

    split = canonical_split(split)
    path = Path(source)
    if path.is_dir():
        path = path / ESNLIVE_FILES[split]
    if not path.is_file():
        raise DataError(f"no e-SNLI-VE {split} file (expected {ESNLIVE_FILES[split]}, as the e-ViL release names it)",
                        source=str(path))
    df = read_csv_file(path)
    missing = [c for c in ESNLIVE_COLUMNS if c not in df.columns]
    if missing:
        raise DataError(f"not an e-SNLI-VE file: no {', '.join(missing)} column (expects {', '.join(ESNLIVE_COLUMNS)})",
                        source=str(path), field=missing[0])
    root = Path(images) if images is not None else path.parent / "flickr30k_images"
    rng = random.Random(PROMPT_SEED)  # the official draw: random.seed(42), one random.choice per row in file order
    rows, neutral = [], 0
    for row_no, rec in enumerate(df.to_dict(orient="records"), start=1):
        prompt = rng.choice(PROMPTS)
        vals = {c: _require(rec, c, str(path), row_no) for c in ESNLIVE_COLUMNS}
        label = vals["gold_label"].strip().lower()
        if label not in ESNLIVE_LABELS:
            raise DataError(f"gold_label must be one of {', '.join(ESNLIVE_LABELS)}, got {vals['gold_label']!r}",
                            source=str(path), row=row_no, field="gold_label")
        if drop_neutral and label == "neutral":
            neutral += 1
            continue
        if label == "neutral":
            raise DataError("a neutral pair cannot be a V-FLUTE target (entailment or contradiction); keep "
                            "drop_neutral=True, as the paper", source=str(path), row=row_no, field="gold_label")
        rows.append({"id": vals["pairID"].strip(), "split": split, "index": row_no - 1, "source_dataset": "esnlive",
                     "dataset": "esnlive", "dataset_name": "e-SNLI-VE", "phenomenon": "literal",
                     "claim": vals["hypothesis"].strip(), "label": label, "label_true": int(label == "entailment"),
                     "explanation": vals["explanation"].strip(), "prompt": prompt, "prompt_origin": "seeded",
                     "image": vals["Flickr30kID"].strip(), "image_root": str(root)})
    items = _frame(rows, str(path)) if rows else pd.DataFrame(columns=ITEM_COLUMNS)
    items.attrs.update(source=str(path), left_out={"neutral": neutral} if neutral else {})
    want = ESNLIVE_PAPER_COUNTS.get(split) if drop_neutral else None
    if want is not None and len(items) != want:
        if not allow_mismatch:
            raise DataError(f"{len(items):,} {split} pairs without neutral, the paper trained on {want:,} "
                            "(allow_mismatch=True uses them anyway and records the difference)", source=str(path))
        items.attrs["count_mismatch"] = {"split": split, "paper": want, "ours": len(items)}
    return items


def write_esnlive_sample(directory: str | os.PathLike, n: int = 12, seed: int = 0) -> Path:
    """A small e-SNLI-VE in the e-ViL release's layout (``esnlive_train.csv``, ``esnlive_dev.csv`` with their
    unnamed index column, a third of the pairs neutral, generated ``flickr30k_images/*.jpg``); returns the folder.
    For offline runs of the e-ViL recipe only: its counts are not the paper's."""
    import pandas as pd

    out = Path(directory)
    (out / "flickr30k_images").mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    for split, count in (("train", n), ("validation", max(3, n // 3))):
        rows = []
        for i in range(count):
            image = f"{900000 + 97 * i + seed}.jpg"
            label = ESNLIVE_LABELS[i % 3]
            subj = rng.choice(_SUBJECTS)
            hyp = {"entailment": f"There is {subj} in the picture.", "neutral": f"{subj.capitalize()} is on holiday.",
                   "contradiction": f"Nobody is near {subj}."}[label]
            rows.append({"pairID": f"{image}#{i % 5}r1{label[0]}", "Flickr30kID": image, "hypothesis": hyp,
                         "gold_label": label, "explanation": f"The picture shows {subj}; {hyp.lower()}"})
            path = out / "flickr30k_images" / image
            if not path.is_file():
                path.write_bytes(_sample_image(rng, "jpg"))
        pd.DataFrame(rows).to_csv(out / ESNLIVE_FILES[split])
    return out
