"""What each paper's release is: where its files come from, how many items it must hold, how it is loaded.

One :class:`Release` per paper. Hub files are listed by the hub (sizes and sha256 come from its listing);
files at fixed URLs carry the sha256 of the released bytes pinned here; images named by the records' URLs
are counted, and the ones that cannot be had are reported by id. The counts are the papers' own
(VAGUE 1,677 = 1,144 VCR + 533 Ego4D; MUCAR 1,278 queries in 501 pairs; V-FLUTE 723 test items; Ref-Adv-s
1,142 rows; RACQUET 500 + 240 questions on 366 + 45 images).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlamb_nb.errors import SettingError

RAW = "https://raw.githubusercontent.com"


@dataclass(frozen=True)
class HubFiles:
    """Files of a hub repository matching ``patterns``, placed under ``files/<dest>``."""

    repo: str
    patterns: tuple[str, ...] = ("*",)
    repo_type: str = "dataset"
    dest: str = ""
    gated: bool = False
    what: str = "data"


@dataclass(frozen=True)
class UrlFile:
    """One file at a fixed URL (a repository at a pinned commit), with the sha256 of the released bytes."""

    dest: str
    url: str
    sha256: str
    size: int
    what: str = "data"


@dataclass(frozen=True)
class RecordImages:
    """Images the records name by URL, downloaded into ``files/<dest>`` under the package's image-cache names."""

    urls: Callable[[Path], dict[str, str]]  # files folder -> {url: the first record id that uses it}
    dest: str = "images"
    what: str = "images"


@dataclass(frozen=True)
class MetricModel:
    """A model the paper's default scorer loads, fetched into the Hugging Face cache where it looks."""

    repo: str
    why: str
    allow: tuple[str, ...] = ("*.json", "*.txt", "*.model", "*.safetensors", "*.bin", "*.py")


@dataclass(frozen=True)
class Release:
    """One paper's release: its parts, the counts it must have, and what the paper's ``load`` takes."""

    paper: str
    name: str  # e.g. "hub:dddraxxx/ref-adv-s"
    licence: str
    parts: tuple[Any, ...]
    expected: dict[str, int]
    count: Callable[[Path], dict[str, int]]
    load: dict[str, Any]  # {"source": path under the release folder, "images": ..., "extra": {...}}
    n_items: int
    size: str  # what a user downloads, for the README and `data status`
    models: tuple[MetricModel, ...] = ()
    check: Callable[[Path], dict[str, Any]] | None = None  # files folder -> {what: {"count", "first"}}
    pinned_revision: str | None = None  # for releases not on the hub: the commit the URLs point at
    notes: tuple[str, ...] = field(default_factory=tuple)


# -- counting what was fetched ------------------------------------------------------------------------
def _parquet_rows(files: list[Path]) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(f).metadata.num_rows for f in files)


def _count_vague(root: Path) -> dict[str, int]:
    import pyarrow.parquet as pq

    from vlamb_nb.benchmarks.vague.data import subset_of

    shards = sorted((root / "data").glob("train-*.parquet"))
    names = [n for f in shards for n in pq.read_table(f, columns=["image_name"]).column(0).to_pylist()]
    subsets = [subset_of(str(n)) for n in names]
    return {"rows": len(names), "VCR": subsets.count("VCR"), "Ego4D": subsets.count("Ego4D")}


def _count_mucar(root: Path) -> dict[str, int]:
    from vlamb_nb.benchmarks.mucar.data import data_stats, load_items

    stats = data_stats(load_items(root / "data-all.json", images=root / "images"))
    return {"queries": stats["queries"], "pairs": stats["pairs"]}


def _check_mucar(root: Path) -> dict[str, Any]:
    """Every ``image_id`` of the records resolved in the hub's image layout (which the paper never documents)."""
    from vlamb_nb.benchmarks.mucar.data import ImageResolver, load_items
    from vlamb_nb.errors import ImageError

    items = load_items(root / "data-all.json", images=root / "images")
    folder = root / "images"
    if not folder.is_dir():
        ids = sorted(set(items["image_id"].astype(str)))
        return {"images": {"count": len(ids), "first": ids[:5]}}
    resolver = ImageResolver(folder)
    missing = []
    for image_id in sorted(set(items["image_id"].astype(str))):
        try:
            resolver.resolve(image_id)
        except ImageError:
            missing.append(image_id)
    return {"images": {"count": len(missing), "first": missing[:5]}} if missing else {}


def _count_vflute(root: Path) -> dict[str, int]:
    return {"rows": _parquet_rows(sorted((root / "data").glob("test-*.parquet")))}


def _count_refadv(root: Path) -> dict[str, int]:
    return {"rows": _parquet_rows([root / "data" / "train-00000-of-00001.parquet"])}


def _racquet_records(root: Path) -> dict[str, list[dict[str, Any]]]:
    from vlamb_nb.jsonl import read_text

    out = {}
    for subset, name in (("general", "racquet_general.jsonl"), ("bias", "racquet_bias.jsonl")):
        path = root / name
        out[subset] = [json.loads(line) for line in read_text(path).splitlines() if line.strip()]
    return out


def _count_racquet(root: Path) -> dict[str, int]:
    recs = _racquet_records(root)
    return {"general": len(recs["general"]), "bias": len(recs["bias"]),
            "general_images": len({r["image_url"] for r in recs["general"]}),
            "bias_images": len({r["image_url"] for r in recs["bias"]})}


def _racquet_urls(root: Path) -> dict[str, str]:
    out: dict[str, list[str]] = {}
    for subset, recs in _racquet_records(root).items():
        for r in recs:
            out.setdefault(r["image_url"], []).append(f"{subset}:{r['id']}")
    return {url: ids[0] for url, ids in out.items()}  # the first record that shows the image names it


def _check_racquet(root: Path) -> dict[str, Any]:
    from vlamb_nb.images import ImageCache

    cache = ImageCache(root / "images")
    missing = [ids for url, ids in _racquet_urls(root).items() if cache.lookup(url) is None]
    return {"images": {"count": len(missing), "first": missing[:5]}} if missing else {}


# -- the five releases --------------------------------------------------------------------------------
RACQUET_COMMIT = "11ac07181358471edaba153fbb324fe100f45c3c"
MUCAR_COMMIT = "c2410e1b3f229f6ebb3b0f46a3cdad80a8347a56"
REFADV_RUNS = {  # the released per-row runs of Ref-Adv-s (outputs/qwen/ of the official repository)
    "qwen25a3b_direct": ("fbcb71db8299c258ac3c03db8831a1e1318ee4f3c5567ebac882449619003d52", 630083),
    "qwen25a7b_direct": ("98976d1f6b4accd8df629783ff5eddfd94c79cd95939f6edbd57d7f67632f02d", 631494),
    "qwen25a72b_direct": ("5f0d4bccbf6661c63ebd8685c31601154691214465e427df1995b6d66524db15", 633859),
    "qwen25a72b_cot": ("53ab2f08c29499bba3a40c271b725027435a684593a04ede4332ea5a6f3fe6fc", 630292),
    "qwen3a8bthinking_direct": ("3f9af74dc8fb817e799b0791328ec0a2404af8ccfbdaa13b2acfd688d1824a96", 649315),
}

RELEASES: dict[str, Release] = {
    "vague": Release(
        paper="vague", name="hub:HazelNam/vague-bench", licence="none stated (paper, README and card)",
        parts=(HubFiles("HazelNam/vague-bench", ("data/train-*",)),),
        expected={"rows": 1677, "VCR": 1144, "Ego4D": 533}, count=_count_vague, n_items=1677,
        load={"source": "files"}, size="about 221 MB (+ 1.4 GB roberta-large for BERTScore)",
        models=(MetricModel("roberta-large", "BERTScore F1 of the free-form answers (bert-score's English default)"),)),
    "mucar": Release(
        paper="mucar", name="github:THUNLP-MT/MUCAR + hub:kevindragon221/MUCAR", licence="as released (none stated)",
        parts=(UrlFile("data-all.json", f"{RAW}/THUNLP-MT/MUCAR/{MUCAR_COMMIT}/data-all.json",
                       "9d100e26587386352143acc3ea81ba152e21aebcd7f1db9155b4f01b6391fb22", 701289),
               HubFiles("kevindragon221/MUCAR", ("*",), dest="images", what="images")),
        expected={"queries": 1278, "pairs": 501}, count=_count_mucar, check=_check_mucar, n_items=1278,
        load={"source": "files/data-all.json", "images": "files/images"}, pinned_revision=MUCAR_COMMIT,
        size="0.7 MB of records + the hub image set (size set by the hub)",
        notes=("the hub image set's layout is undocumented: every image_id is resolved and the ones that are "
               "not found are reported",)),
    "vflute": Release(
        paper="vflute", name="hub:ColumbiaNLP/V-FLUTE", licence="apache-2.0 (dataset card)",
        parts=(HubFiles("ColumbiaNLP/V-FLUTE", ("data/test-*",), gated=True),),
        expected={"rows": 723}, count=_count_vflute, n_items=723, load={"source": "files"},
        size="the test split only (not the 4.8 GB of all splits) + 3 GB deberta-xlarge-mnli and 2 GB BLEURT-20",
        models=(MetricModel("microsoft/deberta-xlarge-mnli", "ExplanationScore: BERTScore-F1"),
                MetricModel("lucadiliello/BLEURT-20", "ExplanationScore: BLEURT-20"))),
    "refadv": Release(
        paper="refadv", name="hub:dddraxxx/ref-adv-s", licence="as released (code Apache-2.0)",
        parts=(HubFiles("dddraxxx/ref-adv-s", ("data/train-00000-of-00001.parquet",)),
               *(UrlFile(f"predictions/{run}_predictions.jsonl",
                         f"{RAW}/dddraxxx/Ref-Adv/main/outputs/qwen/{run}_predictions.jsonl", sha, size,
                         what="released runs") for run, (sha, size) in REFADV_RUNS.items())),
        expected={"rows": 1142}, count=_count_refadv, n_items=1142,
        load={"source": "files/data/train-00000-of-00001.parquet", "extra": {"predictions": "files/predictions"}},
        size="the Ref-Adv-s parquet (1,142 rows with images) + 3 MB of released per-row runs"),
    "racquet": Release(
        paper="racquet", name="github:albertotestoni/RACQUET", licence="MIT",
        parts=(UrlFile("racquet_general.jsonl",
                       f"{RAW}/albertotestoni/RACQUET/{RACQUET_COMMIT}/data/racquet_general.jsonl",
                       "7799a219c18351e7f5e3ea780170d3d7bbedac22f97f7e41aa309852e67b6713", 75693),
               UrlFile("racquet_bias.jsonl",
                       f"{RAW}/albertotestoni/RACQUET/{RACQUET_COMMIT}/data/racquet_bias.jsonl",
                       "abb5b5f7476b6646c949e69d32d34095390833a7250de7618f5389441a252a7e", 39192),
               RecordImages(_racquet_urls)),
        expected={"general": 500, "bias": 240, "general_images": 366, "bias_images": 45}, count=_count_racquet,
        check=_check_racquet, n_items=740, load={"source": "files", "images": "files/images"},
        pinned_revision=RACQUET_COMMIT, size="115 kB of records + 411 images from their URLs (+ 0.9 GB Grounding DINO)",
        models=(MetricModel("IDEA-Research/grounding-dino-base", "Table 1: candidate referent boxes"),),
        notes=("the same JSONL files are on Zenodo (record 17658707): --from a copy of them works alike",)),
}


def release(paper: str) -> Release:
    """The release of ``paper`` (aliases such as ``ref-adv`` accepted)."""
    from vlamb_nb.benchmarks import paper as registry_paper

    name = registry_paper(paper).name
    if name not in RELEASES:
        raise SettingError(f"no release is known for {paper!r}")
    return RELEASES[name]
