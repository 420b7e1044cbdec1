"""Where each image token looks: map image-token positions back to rectangles of the original image.

A VLM turns one image into a run of image tokens in the prompt. How that run tiles the picture
depends on the family's processor:

- Qwen2-VL / Qwen2.5-VL: one dynamic grid (``image_grid_thw``, patches of 14 px) whose 2x2 neighbours
  are merged into one token, row-major over the merged grid; the grid covers the whole image.
- LLaVA-1.5: a fixed grid over the processor's (optionally padded, resized and) centre-cropped square.
- LLaVA-NeXT / LLaVA-OneVision: a base grid over the whole (squashed) image, then a high-resolution grid
  assembled from tiles, un-padded back to the image's aspect (OneVision may shrink it bilinearly), with one
  newline token after each row.
- Idefics3 / SmolVLM: ``rows x cols`` tiles of the resized image, each a pixel-shuffled square grid,
  then one global grid over the whole image.

:func:`image_layouts` describes each image as :class:`GridSegment` s (which tokens, which grid shape,
which rectangle of the original image), and :func:`render` spreads per-token scores over those
rectangles into a heat map with the image's aspect that sums to 1. Tokens that see no particular place
(newline, CLS) belong to no segment. Every layout is checked against the actual number of image tokens,
so a processor whose arithmetic differs from ours fails loudly instead of drawing a shifted map.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vlamb_nb.errors import SettingError

Region = tuple[float, float, float, float]  # x0, y0, x1, y1 in original image pixels


@dataclass
class GridSegment:
    """A grid of image tokens covering one rectangle of the original image (row-major token order)."""

    name: str
    indices: np.ndarray  # positions within this image's run of image tokens, row-major over ``shape``
    shape: tuple[int, int]  # rows, cols
    region: Region

    def __post_init__(self) -> None:
        self.indices = np.asarray(self.indices, dtype=np.int64)
        if self.indices.size != self.shape[0] * self.shape[1]:
            raise SettingError(f"segment {self.name}: {self.indices.size} tokens for a {self.shape} grid")


@dataclass
class ImageLayout:
    """How one image's tokens sit in the sequence: absolute token positions and their grid segments."""

    image_index: int
    size: tuple[int, int]  # original (width, height)
    positions: np.ndarray  # absolute positions of this image's tokens in input_ids, in order
    segments: list[GridSegment] = field(default_factory=list)

    @property
    def n_tokens(self) -> int:
        return int(len(self.positions))


# --------------------------------------------------------------------------------------------------
# family geometry: each returns the segments of one image given its token count
# --------------------------------------------------------------------------------------------------
def _full(size: tuple[int, int]) -> Region:
    return (0.0, 0.0, float(size[0]), float(size[1]))


def _check_count(family: str, expected: int, got: int, detail: str) -> None:
    if expected != got:
        raise SettingError(f"{family}: the layout predicts {expected} image tokens ({detail}) but the prompt "
                           f"holds {got}; this processor configuration is not supported by the saliency mapper")


def select_best_resolution(original_size: Sequence[int], resolutions: Sequence[Sequence[int]]) -> tuple[int, int]:
    """(height, width) of the anyres canvas: most effective pixels, then least waste.

    The same rule as ``transformers.image_processing_utils.select_best_resolution`` (the tests check they
    agree), written out here so mapping a layout never imports torch.
    """
    oh, ow = original_size
    best, best_eff, best_waste = None, 0, float("inf")
    for h, w in resolutions:
        scale = min(w / ow, h / oh)
        eff = min(int(ow * scale) * int(oh * scale), ow * oh)
        waste = w * h - eff
        if eff > best_eff or (eff == best_eff and waste < best_waste):
            best, best_eff, best_waste = (int(h), int(w)), eff, waste
    if best is None:
        raise SettingError("no anyres grid pinpoints to choose from")
    return best


def qwen_segments(size: tuple[int, int], n_tokens: int, grid_thw: Sequence[int], merge: int) -> list[GridSegment]:
    """Qwen2(.5)-VL: the resized image is the whole image; merged tokens row-major, frames averaged."""
    t, h, w = (int(v) for v in grid_thw)
    gh, gw = h // merge, w // merge
    _check_count("qwen", t * gh * gw, n_tokens, f"grid_thw={t}x{h}x{w}, merge {merge}")
    return [GridSegment(f"frame{k}", np.arange(k * gh * gw, (k + 1) * gh * gw), (gh, gw), _full(size))
            for k in range(t)]


def llava_segments(size: tuple[int, int], n_tokens: int, ip: Any, patch: int) -> list[GridSegment]:
    """LLaVA-1.5: optional pad-to-square, resize (shortest edge or fixed), centre crop, fixed patch grid."""
    w, h = float(size[0]), float(size[1])
    ox = oy = 0.0
    if getattr(ip, "do_pad", False):
        side = max(w, h)
        ox, oy = (side - w) / 2.0, (side - h) / 2.0
        w = h = side
    sz = _as_dict(getattr(ip, "size", None))
    if getattr(ip, "do_resize", True) and sz:
        if sz.get("shortest_edge"):
            s = sz["shortest_edge"] / min(w, h)
            rw, rh = w * s, h * s
        else:
            rw, rh = float(sz["width"]), float(sz["height"])
    else:
        rw, rh = w, h
    sx, sy = rw / w, rh / h
    crop = _as_dict(getattr(ip, "crop_size", None))
    if getattr(ip, "do_center_crop", False) and crop:
        cw, ch = float(crop["width"]), float(crop["height"])
    else:
        cw, ch = rw, rh
    gh, gw = int(ch) // patch, int(cw) // patch
    region = ((rw - cw) / 2 / sx - ox, (rh - ch) / 2 / sy - oy, (rw + cw) / 2 / sx - ox, (rh + ch) / 2 / sy - oy)
    extra = n_tokens - gh * gw  # a CLS token first when the feature strategy is "full"
    if extra not in (0, 1):
        _check_count("llava", gh * gw, n_tokens, f"{gh}x{gw} patches of {patch} px")
    return [GridSegment("grid", np.arange(extra, extra + gh * gw), (gh, gw), region)]


def anyres_segments(size: tuple[int, int], n_tokens: int, *, tile: int, patch: int,
                    pinpoints: Sequence[Sequence[int]], max_patches: int | None, base_tokens: int,
                    family: str) -> list[GridSegment]:
    """LLaVA-NeXT / OneVision: base grid, then the un-padded high-resolution grid with a newline per row."""
    p = tile // patch
    width, height = size
    full = _full(size)
    skip = base_tokens - p * p  # a dropped CLS never reaches the prompt; keep the arithmetic explicit
    base = GridSegment("base", np.arange(skip, skip + p * p), (p, p), full)
    if n_tokens in (base_tokens, base_tokens + 1):  # no tiling (several images in one prompt)
        return [base]
    bh, bw = select_best_resolution([height, width], [list(x) for x in pinpoints])
    ch, cw = p * (bh // tile), p * (bw // tile)
    if width / height > cw / ch:
        new_h = int(round(height * (cw / width), 7))
        ch -= ((ch - new_h) // 2) * 2
    else:
        new_w = int(round(width * (ch / height), 7))
        cw -= ((cw - new_w) // 2) * 2
    if max_patches is not None:
        ratio = math.sqrt(ch * cw / (max_patches * p * p))
        if ratio > 1.1:
            ch, cw = int(ch // ratio), int(cw // ratio)
    _check_count(family, base_tokens + ch * (cw + 1), n_tokens, f"base {p}x{p}, high-res {ch}x{cw} + newlines")
    rows = np.arange(ch)[:, None] * (cw + 1) + np.arange(cw)[None, :]
    return [base, GridSegment("high-res", base_tokens + rows.ravel(), (ch, cw), full)]


def idefics3_segments(size: tuple[int, int], n_tokens: int, rows: int, cols: int,
                      seq_len: int) -> list[GridSegment]:
    """Idefics3 / SmolVLM: row-major tiles of the (squashed) resized image, then the global image."""
    side = int(round(math.sqrt(seq_len)))
    if side * side != seq_len:
        raise SettingError(f"idefics3: image_seq_len {seq_len} is not a square grid")
    w, h = float(size[0]), float(size[1])
    segs = []
    k = 0
    for r in range(rows):
        for c in range(cols):
            region = (c * w / cols, r * h / rows, (c + 1) * w / cols, (r + 1) * h / rows)
            segs.append(GridSegment(f"tile r{r + 1}c{c + 1}", np.arange(k, k + seq_len), (side, side), region))
            k += seq_len
    segs.append(GridSegment("global", np.arange(k, k + seq_len), (side, side), _full(size)))
    _check_count("idefics3", k + seq_len, n_tokens, f"{rows}x{cols} tiles + global of {seq_len} tokens")
    return segs


def _as_dict(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if v is not None}
    return {k: getattr(value, k) for k in ("height", "width", "shortest_edge", "longest_edge")
            if getattr(value, k, None) is not None}


# --------------------------------------------------------------------------------------------------
# dispatch on the model type
# --------------------------------------------------------------------------------------------------
FAMILIES = ("qwen2_vl", "qwen2_5_vl", "llava", "llava_next", "llava_onevision", "idefics3", "smolvlm")


def image_token_id(config: Any) -> int:
    for name in ("image_token_id", "image_token_index"):
        v = getattr(config, name, None)
        if v is not None:
            return int(v)
    raise SettingError(f"{config.model_type}: the config names no image token id")


def image_layouts(config: Any, processor: Any, inputs: Any, images: Sequence[Any]) -> list[ImageLayout]:
    """One :class:`ImageLayout` per image of a single-sequence processor output (batch size 1)."""
    family = getattr(config, "model_type", "")
    if family not in FAMILIES:
        raise SettingError(f"saliency maps are not supported for model type {family!r}; "
                           f"supported: {', '.join(FAMILIES)}")
    ids = np.asarray(inputs["input_ids"][0])
    pos = np.flatnonzero(ids == image_token_id(config))
    sizes = [(int(im.size[0]), int(im.size[1])) for im in images]
    counts = _token_counts(family, config, processor, inputs, sizes, len(pos))
    out = []
    start = 0
    for i, (size, n) in enumerate(zip(sizes, counts, strict=True)):
        layout = ImageLayout(i, size, pos[start: start + n])
        layout.segments = _segments(family, config, processor, inputs, i, size, n, images[i])
        out.append(layout)
        start += n
    if start != len(pos):
        raise SettingError(f"{family}: {len(pos)} image tokens in the prompt but the layout accounts for {start}")
    return out


def _token_counts(family: str, config: Any, processor: Any, inputs: Any, sizes: list[tuple[int, int]],
                  total: int) -> list[int]:
    """How many image tokens each image owns (the prompt holds them back to back, in image order)."""
    if len(sizes) == 1:
        return [total]
    if family.startswith("qwen"):
        merge = config.vision_config.spatial_merge_size
        return [int(np.prod(np.asarray(g))) // merge**2 for g in np.asarray(inputs["image_grid_thw"])]
    if family == "llava" and total % len(sizes) == 0:  # a fixed grid: every image owns the same count
        return [total // len(sizes)] * len(sizes)
    raise SettingError(f"{family}: saliency maps for several images in one prompt are supported for Qwen only; "
                       "pass a request with one image")


def _segments(family: str, config: Any, processor: Any, inputs: Any, i: int, size: tuple[int, int], n: int,
              image: Any) -> list[GridSegment]:
    if family.startswith("qwen"):
        grid = np.asarray(inputs["image_grid_thw"])[i]
        return qwen_segments(size, n, grid, int(config.vision_config.spatial_merge_size))
    if family == "llava":
        return llava_segments(size, n, processor.image_processor, int(config.vision_config.patch_size))
    if family in ("llava_next", "llava_onevision"):
        vc = config.vision_config
        p = vc.image_size // vc.patch_size
        strategy = getattr(config, "vision_feature_select_strategy", "default")
        base = p * p
        if family == "llava_next" and strategy == "full":
            base += 1
        max_patches = None
        if family == "llava_onevision":
            ratio = getattr(config, "vision_aspect_ratio", "anyres_max_9") or "anyres_max_9"
            max_patches = int(str(ratio).removeprefix("anyres_max_"))
        return anyres_segments(size, n, tile=vc.image_size, patch=vc.patch_size, pinpoints=config.image_grid_pinpoints,
                               max_patches=max_patches, base_tokens=base, family=family)
    # idefics3 / smolvlm: ask the image processor how it split this image
    info = processor.image_processor([image], return_row_col_info=True, return_tensors="np")
    rows = int(np.asarray(info["rows"]).ravel()[0])
    cols = int(np.asarray(info["cols"]).ravel()[0])
    return idefics3_segments(size, n, rows, cols, int(processor.image_seq_len))


# --------------------------------------------------------------------------------------------------
# rendering token scores as a heat map over the original image
# --------------------------------------------------------------------------------------------------
def map_shape(size: tuple[int, int], max_side: int | None = 256) -> tuple[int, int]:
    """(rows, cols) of a heat map with the image's aspect, its longer side at most ``max_side``."""
    w, h = size
    if max_side is None or max(w, h) <= max_side:
        return int(h), int(w)
    s = max_side / max(w, h)
    return max(1, int(round(h * s))), max(1, int(round(w * s)))


def _cell_index(n_px: int, extent: float, lo: float, hi: float, cells: int) -> np.ndarray:
    """For each map pixel along one axis, the grid cell its centre falls in (-1 outside the region)."""
    centers = (np.arange(n_px) + 0.5) * extent / n_px
    idx = np.floor((centers - lo) / (hi - lo) * cells).astype(np.int64)
    idx[(centers < lo) | (centers >= hi)] = -1
    return np.clip(idx, -1, cells - 1)


def render(token_scores: np.ndarray, layout: ImageLayout, *, max_side: int | None = 256,
           segments: Sequence[str] | None = None) -> np.ndarray:
    """Spread each token's (non-negative) score evenly over the map pixels its cell covers; sum to 1.

    ``token_scores`` has one value per token of the image's run. Mass of cells that fall outside the
    image (padding) is dropped before normalising. An all-zero input gives a uniform map, so a
    saliency of nothing is never mistaken for a focused one.
    """
    scores = np.asarray(token_scores, dtype=np.float64)
    if scores.shape != (layout.n_tokens,):
        raise SettingError(f"expected {layout.n_tokens} token scores, got shape {scores.shape}")
    if np.any(scores < 0) or not np.all(np.isfinite(scores)):
        raise SettingError("token scores must be finite and non-negative (take abs or clip first)")
    rows, cols = map_shape(layout.size, max_side)
    out = np.zeros((rows, cols), dtype=np.float64)
    w, h = layout.size
    for seg in layout.segments:
        if segments is not None and seg.name not in segments:
            continue
        gh, gw = seg.shape
        x0, y0, x1, y1 = seg.region
        iy = _cell_index(rows, h, y0, y1, gh)
        ix = _cell_index(cols, w, x0, x1, gw)
        ok_y, ok_x = iy >= 0, ix >= 0
        if not ok_y.any() or not ok_x.any():
            continue
        mass = scores[seg.indices].reshape(gh, gw)
        count = np.bincount(iy[ok_y], minlength=gh)[:, None] * np.bincount(ix[ok_x], minlength=gw)[None, :]
        density = np.divide(mass, count, out=np.zeros_like(mass), where=count > 0)
        out[np.ix_(ok_y, ok_x)] += density[np.ix_(iy[ok_y], ix[ok_x])]
    total = out.sum()
    if total <= 0:
        return np.full((rows, cols), 1.0 / (rows * cols))
    return out / total
