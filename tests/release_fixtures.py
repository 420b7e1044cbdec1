"""Each paper's release in its exact published layout, for the stand-in hub and file server.

Real bytes where the release is beside the checkout (MUCAR's ``data-all.json``, RACQUET's JSONL files, the
Ref-Adv released runs: their pinned sha256 must match), real records with generated images where only the
records are (V-FLUTE's 723 test rows, Ref-Adv-s's 1,142 rows from its released runs), and generated records
where nothing is (VAGUE's 1,677 rows, split 1,144 VCR + 533 Ego4D by the ``@`` rule). Images are tiny
solid-colour pictures: what is tested is the path from the hub to the notebook, never what a model sees.

:func:`serve_releases` puts all five behind a :class:`hubstub.StandInHub` and a :class:`hubstub.StaticServer`
and returns the ``$VLAMB_MIRRORS`` rule that sends the release URLs to the static server.
"""

from __future__ import annotations

import io
import json
import random
from functools import cache
from pathlib import Path
from typing import Any

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data"


def shared_file(rel: str) -> Path:
    import os

    env = os.environ.get("VLAMB_SHARED_DATA")
    return (Path(env) if env else SHARED) / rel


def tiny_image(seed: int, size: tuple[int, int] = (24, 16), fmt: str = "JPEG") -> bytes:
    from PIL import Image

    rng = random.Random(seed)
    img = Image.new("RGB", size, tuple(rng.randrange(256) for _ in range(3)))
    buf = io.BytesIO()
    img.save(buf, format=fmt)
    return buf.getvalue()


def _parquet_bytes(rows: list[dict[str, Any]], schema: Any) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), buf)
    return buf.getvalue()


@cache
def vague_repo(n_vcr: int = 1144, n_ego: int = 533) -> dict[str, bytes]:
    """``HazelNam/vague-bench``: ``data/train-00000-of-00001.parquet`` (the hub schema, images embedded)."""
    import tempfile

    from vlamb_nb.benchmarks.vague.data import sample_records, write_hub_parquet

    records = sample_records(n_vcr + n_ego, seed=0, image_size=(32, 20))
    out = []
    for i, (rec, data) in enumerate(records):
        rec = dict(rec)
        rec["image_name"] = (f"{i:05d}_Movie_00.{i % 60:02d}.00.000-00.{i % 60:02d}.02.000@{i % 3}" if i < n_vcr
                             else f"{i:016x}-ego-{i:05d}")
        out.append((rec, data))
    with tempfile.TemporaryDirectory() as tmp:
        path = write_hub_parquet(out, Path(tmp) / "train.parquet")
        shard = path.read_bytes()
    return {"README.md": b"---\nconfigs:\n- config_name: default\n---\n# VAGUE\n",
            "data/train-00000-of-00001.parquet": shard}


@cache
def vflute_repo() -> dict[str, bytes]:
    """``ColumbiaNLP/V-FLUTE`` (gated): the real 723 test records as hub parquet with generated images, and a
    train shard that a fetch of the test split must not download."""
    import pyarrow as pa

    records = json.loads(shared_file("vflute/vflute-v2-test.json").read_text(encoding="utf-8"))
    schema = pa.schema([("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
                        ("source_dataset", pa.string()), ("phenomenon", pa.string()), ("claim", pa.string()),
                        ("label", pa.string()), ("explanation", pa.string())])

    def rows(recs: list[dict[str, Any]], offset: int) -> list[dict[str, Any]]:
        return [{"image": {"bytes": tiny_image(offset + i, fmt="PNG"), "path": None},
                 **{k: r[k] for k in ("source_dataset", "phenomenon", "claim", "label", "explanation")}}
                for i, r in enumerate(recs)]

    return {"README.md": b"---\nlicense: apache-2.0\n---\n# V-FLUTE\n",
            "data/test-00000-of-00001.parquet": _parquet_bytes(rows(records, 0), schema),
            "data/train-00000-of-00001.parquet": _parquet_bytes(rows(records[:5], 10_000), schema)}


def refadv_rows() -> list[dict[str, Any]]:
    path = shared_file("refadv/predictions/qwen25a72b_direct_predictions.jsonl")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@cache
def refadv_repo(n: int | None = None) -> dict[str, bytes]:
    """``dddraxxx/ref-adv-s``: the 1,142 rows of its released runs (expressions, GT boxes, flags) as the hub
    parquet, each with a generated image large enough for its box."""
    import pyarrow as pa

    schema = pa.schema([
        ("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())])), ("file_name", pa.string()),
        ("normal_caption", pa.string()), ("solution", pa.list_(pa.float64())), ("width", pa.int64()),
        ("height", pa.int64()), ("image_source", pa.string()), ("human_authored", pa.bool_()),
        ("use_negation", pa.bool_()), ("distractors", pa.string())])
    rows = []
    for r in refadv_rows()[:n]:
        box = r["gt_bbox_xyxy"]
        w, h = int(max(64, box[2] + 1)), int(max(64, box[3] + 1))
        rows.append({"image": {"bytes": tiny_image(r["row_idx"], (w, h)), "path": r["file_name"]},
                     "file_name": r["file_name"], "normal_caption": r["normal_caption"], "solution": box,
                     "width": w, "height": h, "image_source": r["image_source"], "human_authored": r["human_authored"],
                     "use_negation": r["use_negation"], "distractors": str(r["distractor_count"])})
    return {"README.md": b"# Ref-Adv-s\n", "data/train-00000-of-00001.parquet": _parquet_bytes(rows, schema)}


@cache
def mucar_image_repo() -> dict[str, bytes]:
    """``kevindragon221/MUCAR``: one generated image per ``image_id`` of the release, ``<image_id>.jpg``."""
    records = json.loads(shared_file("mucar/data-all.json").read_text(encoding="utf-8"))
    ids = sorted({str(r["image_id"]) for r in records})
    return {f"{image_id}.jpg": tiny_image(i) for i, image_id in enumerate(ids)}


def racquet_urls() -> list[str]:
    out: dict[str, None] = {}
    for name in ("racquet_general.jsonl", "racquet_bias.jsonl"):
        for line in shared_file(f"racquet/{name}").read_text(encoding="utf-8").splitlines():
            if line.strip():
                out[json.loads(line)["image_url"]] = None
    return list(out)


def url_files() -> dict[str, bytes]:
    """Every release file at a fixed URL (the real bytes) and RACQUET's images (generated), by URL."""
    from vlamb_nb.releases.catalog import RELEASES, UrlFile

    out: dict[str, bytes] = {}
    local = {"data-all.json": "mucar/data-all.json", "racquet_general.jsonl": "racquet/racquet_general.jsonl",
             "racquet_bias.jsonl": "racquet/racquet_bias.jsonl"}
    for rel in RELEASES.values():
        for part in rel.parts:
            if isinstance(part, UrlFile):
                name = Path(part.dest).name
                path = shared_file(local.get(name, f"refadv/predictions/{name}"))
                out[part.url] = path.read_bytes()
    for i, url in enumerate(racquet_urls()):
        out[url] = tiny_image(50_000 + i, fmt="PNG" if url.endswith(".png") else "JPEG")
    return out


def url_path(url: str) -> str:
    """Where the static server serves ``url`` under the ``*=`` mirror rule: ``/<host>/<path>``."""
    return "/" + url.split("://", 1)[1]


METRIC_MODELS = ("roberta-large", "microsoft/deberta-xlarge-mnli", "lucadiliello/BLEURT-20",
                 "IDEA-Research/grounding-dino-base")


def model_repo() -> dict[str, bytes]:
    """A stand-in for a metric model's repository: config, weights in both formats (only one is fetched)."""
    return {"config.json": b'{"model_type": "bert"}', "model.safetensors": b"S" * 400,
            "pytorch_model.bin": b"B" * 400, "README.md": b"# model\n"}


def serve_releases(hub: Any, files: Any, *, papers: tuple[str, ...] = ("vague", "mucar", "vflute", "refadv",
                                                                        "racquet")) -> str:
    """Register the releases of ``papers`` with the stand-ins; returns the ``$VLAMB_MIRRORS`` value."""
    if "vague" in papers:
        hub.add_repo("HazelNam/vague-bench", vague_repo())
    if "vflute" in papers:
        hub.add_repo("ColumbiaNLP/V-FLUTE", vflute_repo(), gated=True)
    if "refadv" in papers:
        hub.add_repo("dddraxxx/ref-adv-s", refadv_repo())
    if "mucar" in papers:
        hub.add_repo("kevindragon221/MUCAR", mucar_image_repo())
    for repo in METRIC_MODELS:
        hub.add_repo(repo, model_repo(), repo_type="model")
    for url, data in url_files().items():
        files.add(url_path(url), data)
    return f"*={files.endpoint}/"
