"""Each paper's release in its exact published layout, with its known defects, for the stand-in hub and file server.

Real bytes where the release is beside the checkout (MUCAR's ``data-all.json``, RACQUET's JSONL files, the five
Ref-Adv released runs: their pinned sha256 must match), real records with generated images where only the
records are (V-FLUTE's 723 test rows, Ref-Adv-s's 1,142 rows from its released runs), and generated records
where nothing is (VAGUE's 1,677 rows, split 1,144 VCR + 533 Ego4D by the ``@`` rule). Images are tiny
solid-colour pictures: what is tested is the path from the hub to the notebook, never what a model sees.

As released, not idealised: the hub repositories sit at the known-good commits the releases pin; MUCAR's image
set has the real defect (no ``malay/N`` file for the 22 ambiguous ``image_id``s, both ``malay/N-1`` and
``malay/N-2``); Ref-Adv's ``outputs/qwen/`` is listed by a GitHub contents API answer with 30 runs — the five real
files and 25 generated ones in the exact official row format under the real run names.

:func:`serve_releases` puts all five behind a :class:`hubstub.StandInHub` and a :class:`hubstub.StaticServer`
and returns the ``$VLAMB_MIRRORS`` rule that sends the release URLs (and GitHub's API) to the static server.
"""

from __future__ import annotations

import io
import json
import random
from functools import cache
from pathlib import Path
from typing import Any

import pytest

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


#: the size of every image the stand-in gives for a candidate of MUCAR's ambiguous ``image_id``s and for no record:
#: an image of this size reaching a model was guessed
CANDIDATE_SIZE = (37, 23)


@cache
def mucar_image_repo(defect: bool = True) -> dict[str, bytes]:
    """``kevindragon221/MUCAR``: one generated image per ``image_id`` of the release, ``<image_id>.jpg``; with
    ``defect`` (as at the pinned revision) the 22 ambiguous ``malay/N`` have no file and both ``malay/N-1`` and
    ``malay/N-2`` exist (those no record names drawn at :data:`CANDIDATE_SIZE`)."""
    from vlamb_nb.benchmarks.mucar.data import AMBIGUOUS_IMAGE_IDS

    records = json.loads(shared_file("mucar/data-all.json").read_text(encoding="utf-8"))
    ids = sorted({str(r["image_id"]) for r in records})
    files = {f"{image_id}.jpg": tiny_image(i) for i, image_id in enumerate(ids)}
    if defect:
        for k, (bare, candidates) in enumerate(AMBIGUOUS_IMAGE_IDS.items()):
            del files[f"{bare}.jpg"]
            for j, c in enumerate(candidates):
                files.setdefault(f"{c}.jpg", tiny_image(90_000 + 2 * k + j, CANDIDATE_SIZE))
    return files


REFADV_RUNS = ([f"qwen25a{n}b_{p}" for n in (3, 7, 32, 72) for p in ("direct", "cot")]
               + [f"qwen3a{n}b_{p}" for n in (2, 4, 8, 30, 32, 235) for p in ("direct", "cot")]
               + [f"qwen3a{n}bthinking_direct" for n in (2, 4, 8, 30, 32, 235)]
               + [f"qwen35a{n}b_direct" for n in ("27", "35", "122", "397fp8")])
_QWEN3_MOE = {"30": "30B-A3B", "235": "235B-A22B"}
_QWEN35 = {"27": "27B", "35": "35B-A3B", "122": "122B-A10B", "397fp8": "397B-A17B-FP8"}


def run_model(run: str) -> tuple[str, str, str]:
    """(model_full_name, prompt_id, box format) of a released run's name."""
    import re

    prompt = run.rsplit("_", 1)[1]
    if m := re.fullmatch(r"qwen25a(\d+)b_\w+", run):
        return f"Qwen/Qwen2.5-VL-{m.group(1)}B-Instruct", prompt, "abs_xyxy"
    if m := re.fullmatch(r"qwen3a(\d+)b(thinking)?_\w+", run):
        size = _QWEN3_MOE.get(m.group(1), f"{m.group(1)}B")
        return f"Qwen/Qwen3-VL-{size}-{'Thinking' if m.group(2) else 'Instruct'}", prompt, "norm_1000_xyxy"
    m = re.fullmatch(r"qwen35a(\w+?)b_\w+", run)
    assert m is not None, run
    return f"Qwen/Qwen3.5-{_QWEN35[m.group(1)]}", prompt, "norm_1000_xyxy"


def generated_run(run: str) -> bytes:
    """A released run the checkout does not hold, in the exact official row format (``row_idx`` … ``
    pred_box_expected_format``): the 1,142 rows of the released runs, each answered with a box near the GT or
    elsewhere (seeded by the run's name), IoU and hit computed as ``run.py`` does."""
    import hashlib

    from vlamb_nb.benchmarks.refadv.score import first_iou

    model, prompt, fmt = run_model(run)
    rng = random.Random(int(hashlib.sha256(run.encode()).hexdigest()[:8], 16))
    p_hit = 0.2 + 0.6 * rng.random()
    lines = []
    for r in refadv_rows():
        gt = [float(v) for v in r["gt_bbox_xyxy"]]
        roll = rng.random()
        if roll < 0.03:
            pred, err = [], "no_bbox_found"
        elif roll < 0.03 + p_hit:
            d = rng.uniform(-3, 3)
            pred, err = [gt[0] + d, gt[1] + d, gt[2] + d, gt[3] + d], ""
        else:
            x, y = rng.uniform(0, 200), rng.uniform(0, 200)
            pred, err = [x, y, x + rng.uniform(5, 60), y + rng.uniform(5, 60)], ""
        iou = first_iou(pred, gt)
        lines.append(json.dumps({
            "row_idx": r["row_idx"], "file_name": r["file_name"], "normal_caption": r["normal_caption"],
            "image_source": r["image_source"], "human_authored": r["human_authored"],
            "use_negation": r["use_negation"], "distractor_count": r["distractor_count"],
            "gt_bbox_xyxy": r["gt_bbox_xyxy"], "pred_box_xyxy_first": pred, "first_iou": iou,
            "first_hit": iou >= 0.5, "parse_error": err, "retry_followup_used": False, "model_full_name": model,
            "prompt_id": prompt, "pred_box_expected_format": fmt}))
    return ("\n".join(lines) + "\n").encode()


@cache
def refadv_runs() -> dict[str, bytes]:
    """``outputs/qwen/`` at the pinned commit: file name -> bytes (five real, 25 generated)."""
    out = {}
    for run in REFADV_RUNS:
        real = shared_file(f"refadv/predictions/{run}_predictions.jsonl")
        out[f"{run}_predictions.jsonl"] = real.read_bytes() if real.is_file() else generated_run(run)
    return out


def github_listing(repo: str, path: str, ref: str, files: dict[str, bytes]) -> bytes:
    """What GitHub's contents API answers for a folder: one entry per file, with its git object id and size."""
    from hubstub import git_blob_oid

    from vlamb_nb.release_spec import RAW

    return json.dumps([{"name": name, "path": f"{path}/{name}", "sha": git_blob_oid(data), "size": len(data),
                        "type": "file", "download_url": f"{RAW}/{repo}/{ref}/{path}/{name}"}
                       for name, data in sorted(files.items())]).encode()


def racquet_urls() -> list[str]:
    out: dict[str, None] = {}
    for name in ("racquet_general.jsonl", "racquet_bias.jsonl"):
        for line in shared_file(f"racquet/{name}").read_text(encoding="utf-8").splitlines():
            if line.strip():
                out[json.loads(line)["image_url"]] = None
    return list(out)


def url_files() -> dict[str, bytes]:
    """Every release file at a fixed URL (the real bytes), RACQUET's images (generated) and the GitHub listing of
    Ref-Adv's runs with their files, by URL."""
    from vlamb_nb.release_spec import GITHUB_API, RAW, GitHubFolder, UrlFile
    from vlamb_nb.releases import releases

    out: dict[str, bytes] = {}
    local = {"data-all.json": "mucar/data-all.json", "racquet_general.jsonl": "racquet/racquet_general.jsonl",
             "racquet_bias.jsonl": "racquet/racquet_bias.jsonl"}
    for rel in releases().values():
        for part in rel.parts:
            if isinstance(part, UrlFile):
                out[part.url.format(revision=part.revision)] = shared_file(local[Path(part.dest).name]).read_bytes()
            elif isinstance(part, GitHubFolder):
                files = refadv_runs()
                out[f"{GITHUB_API}/repos/{part.repo}/contents/{part.path}?ref={part.revision}"] = github_listing(
                    part.repo, part.path, part.revision, files)
                for name, data in files.items():
                    out[f"{RAW}/{part.repo}/{part.revision}/{part.path}/{name}"] = data
    for i, url in enumerate(racquet_urls()):
        out[url] = tiny_image(50_000 + i, fmt="PNG" if url.endswith(".png") else "JPEG")
    return out


def url_path(url: str) -> str:
    """Where the static server serves ``url`` under the ``*=`` mirror rule: ``/<host>/<path>[?query]``."""
    return "/" + url.split("://", 1)[1]


METRIC_MODELS = ("roberta-large", "microsoft/deberta-xlarge-mnli", "lucadiliello/BLEURT-20",
                 "IDEA-Research/grounding-dino-base")


def model_repo() -> dict[str, bytes]:
    """A stand-in for a metric model's repository: config, weights in both formats (only one is fetched)."""
    return {"config.json": b'{"model_type": "bert"}', "model.safetensors": b"S" * 400,
            "pytorch_model.bin": b"B" * 400, "README.md": b"# model\n"}


def serve_releases(hub: Any, files: Any, *, papers: tuple[str, ...] = ("vague", "mucar", "vflute", "refadv",
                                                                        "racquet")) -> str:
    """Register the releases of ``papers`` with the stand-ins, each hub repository at the commit its release pins
    (VAGUE, which has none, at a commit of its own); returns the ``$VLAMB_MIRRORS`` value."""
    from vlamb_nb.benchmarks.mucar.data import IMAGES_REVISION
    from vlamb_nb.benchmarks.refadv.data import HUB_REVISION as REFADV_REVISION
    from vlamb_nb.benchmarks.vflute.data import HUB_REVISION as VFLUTE_REVISION

    if "vague" in papers:
        hub.add_repo("HazelNam/vague-bench", vague_repo())
    if "vflute" in papers:
        hub.add_repo("ColumbiaNLP/V-FLUTE", vflute_repo(), gated=True, revision_sha=VFLUTE_REVISION)
    if "refadv" in papers:
        hub.add_repo("dddraxxx/ref-adv-s", refadv_repo(), revision_sha=REFADV_REVISION)
    if "mucar" in papers:
        hub.add_repo("kevindragon221/MUCAR", mucar_image_repo(), revision_sha=IMAGES_REVISION)
    for repo in METRIC_MODELS:
        hub.add_repo(repo, model_repo(), repo_type="model")
    for url, data in url_files().items():
        files.add(url_path(url), data)
    return f"*={files.endpoint}/"


@pytest.fixture
def web(stand_in_hub: Any, static_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared_data: Path):
    """Both stand-ins serving every release, the data home in tmp, URLs mirrored to the static server (a test module
    takes it with ``web = release_fixtures.web``, beside ``stand_in_hub`` and ``static_server``)."""
    monkeypatch.setenv("VLAMB_DATA", str(tmp_path / "data-home"))
    monkeypatch.setenv("VLAMB_MIRRORS", serve_releases(stand_in_hub, static_server))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    return stand_in_hub, static_server
