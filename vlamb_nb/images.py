"""Image loading with errors that say what went wrong and where.

Benchmarks reference images in several ways: a path under a dataset root, raw bytes, a
Hugging Face ``Image`` column value (``{"bytes": ..., "path": ...}``), an already decoded
PIL image, or a URL whose file a user has placed in a local cache. Nothing here downloads
unless a caller asks for it explicitly.
"""

from __future__ import annotations

import hashlib
import io
import os
import urllib.parse
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vlamb_nb.errors import ImageError

if TYPE_CHECKING:  # PIL is light, but keep the import local to the functions that need it
    from PIL.Image import Image

ImageSource = Any  # str | os.PathLike | bytes | dict | PIL.Image.Image

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".webp", ".gif", ".bmp")


def safe_join(root: str | os.PathLike, relative: str | os.PathLike) -> Path:
    """Join ``relative`` to ``root`` and refuse any result outside ``root`` (``..``, absolute paths, links)."""
    root_p = Path(root).resolve()
    rel = Path(relative)
    candidate = (rel if rel.is_absolute() else root_p / rel).resolve()
    try:
        candidate.relative_to(root_p)
    except ValueError:
        raise ImageError(f"unsafe image path {str(relative)!r}: it escapes the dataset root {root_p}") from None
    return candidate


def is_url(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(("http://", "https://"))


@dataclass
class ImageCache:
    """A folder of images keyed by URL, so URL-referenced datasets work offline once filled.

    The file for a URL is ``<dir>/<sha1(url)[:16]><ext>``, or a file named like the URL's last
    path segment (what a user gets by ``wget`` into the folder).
    """

    directory: Path

    def __post_init__(self) -> None:
        self.directory = Path(self.directory)

    def candidates(self, url: str) -> list[Path]:
        name = Path(urllib.parse.urlparse(url).path).name
        ext = Path(name).suffix.lower() or ".jpg"
        key = hashlib.sha1(url.encode()).hexdigest()[:16]
        out = [self.directory / f"{key}{ext}"]
        if name:
            out.append(self.directory / name)
        return out

    def lookup(self, url: str) -> Path | None:
        for p in self.candidates(url):
            if p.is_file():
                return p
        return None

    def fetch(self, url: str, *, timeout: float = 30.0) -> Path:
        """Download ``url`` into the cache (needs network; never called implicitly)."""
        import urllib.request

        hit = self.lookup(url)
        if hit is not None:
            return hit
        target = self.candidates(url)[0]
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(target.suffix + ".part")
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - explicit user request
            tmp.write_bytes(resp.read())
        os.replace(tmp, target)
        return target


def _orientation_swaps(img: Image) -> bool:
    """True when the EXIF orientation (5-8) shows the image rotated 90 degrees from how it is stored."""
    try:
        return img.getexif().get(0x0112) in (5, 6, 7, 8)
    except Exception:  # a damaged EXIF block: treat as no rotation, the size check still runs
        return False


def check_size(image: Image, expected: tuple[float, float], source: str) -> None:
    """Refuse an image whose size differs from the one its record gives: the file is not the one annotated.

    Boxes and points in a record are in that record's pixel frame, so a replaced, resized or
    mislabelled file would silently shift every coordinate; and a header that claims a huge size
    is refused before its pixels are decoded.
    """
    try:
        w, h = (float(v) for v in expected)
    except (TypeError, ValueError):
        raise ImageError(f"image {source}: expected size {expected!r} is not a (width, height) pair") from None
    if (float(image.size[0]), float(image.size[1])) != (w, h):
        raise ImageError(f"image {source} is {image.size[0]}x{image.size[1]} pixels but its record says "
                         f"{w:g}x{h:g}; the file is not the one the annotations refer to")


def _check_stored_or_displayed(img: Image, expected: tuple[float, float], label: str) -> None:
    """A record may give the size as stored or as displayed after the EXIF rotation; accept either."""
    if _orientation_swaps(img):
        try:
            check_size(img, (expected[1], expected[0]), label)
            return
        except ImageError:
            pass
    check_size(img, expected, label)


def _open_bytes(data: bytes, label: str, expect_size: tuple[float, float] | None = None) -> Image:
    """Decode ``data``; every failure (bomb, truncation, unknown format) becomes an ImageError naming ``label``."""
    from PIL import Image as PILImage

    if not data:
        raise ImageError(f"image {label} is empty (0 bytes)")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", PILImage.DecompressionBombWarning)
            img = PILImage.open(io.BytesIO(data))
        bomb = None
        for w in caught:
            if issubclass(w.category, PILImage.DecompressionBombWarning):
                bomb = w.message
            else:  # not ours to swallow
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if expect_size is not None:  # before load(): a wrong header is refused without decoding it
            _check_stored_or_displayed(img, expect_size, label)
        if bomb is not None:
            # PIL only warns between MAX_IMAGE_PIXELS and twice that; no benchmark image is that large
            raise PILImage.DecompressionBombError(str(bomb))
        img.load()
    except ImageError:
        raise
    except PILImage.DecompressionBombError as e:
        raise ImageError(f"image {label} refused as a possible decompression bomb "
                         f"(PIL.Image.MAX_IMAGE_PIXELS={PILImage.MAX_IMAGE_PIXELS}): {e}") from None
    except Exception as e:  # PIL raises many types on bad input (OSError, SyntaxError, struct.error, ...)
        raise ImageError(f"image {label} is corrupt or not an image: {type(e).__name__}: {e}") from None
    return img


def read_image_bytes(src: ImageSource, *, root: str | os.PathLike | None = None,
                     cache: ImageCache | None = None) -> tuple[bytes, str]:
    """Return (bytes, label) for any source that is not already a decoded image."""
    if isinstance(src, (bytes, bytearray, memoryview)):
        return bytes(src), "<bytes>"
    if isinstance(src, dict):
        if src.get("bytes"):
            return bytes(src["bytes"]), str(src.get("path") or "<hf image bytes>")
        if src.get("path"):
            return read_image_bytes(src["path"], root=root, cache=cache)
        raise ImageError("image value has neither 'bytes' nor 'path' (Hugging Face Image column format)")
    if is_url(src):
        hit = cache.lookup(src) if cache is not None else None
        if hit is None:
            where = f" in cache {cache.directory}" if cache is not None else " (no image cache given)"
            raise ImageError(f"image URL {src} is not available offline{where}; "
                             "fill the cache with ImageCache(dir).fetch(url) on a machine with network")
        return hit.read_bytes(), str(hit)
    if isinstance(src, (str, os.PathLike)):
        path = safe_join(root, src) if root is not None else Path(src)
        if not path.is_file():
            raise ImageError(f"image file not found: {path}")
        return path.read_bytes(), str(path)
    raise ImageError(f"unsupported image source of type {type(src).__name__}")


def load_image(src: ImageSource, *, root: str | os.PathLike | None = None, cache: ImageCache | None = None,
               exif_transpose: bool = True, mode: str | None = "RGB",
               expect_size: tuple[float, float] | None = None) -> Image:
    """Decode an image from any supported source; optional EXIF rotation and mode conversion.

    ``expect_size`` is the (width, height) a record gives for the image: a file of another size
    (as stored, or as displayed after EXIF rotation) is refused, see :func:`check_size`.
    ``mode="RGB"`` goes through :func:`to_rgb`, which keeps 16-bit, float and transparent images
    visible instead of PIL's white, black or alpha-dropped conversions.
    """
    from PIL import Image as PILImage
    from PIL import ImageOps

    if isinstance(src, PILImage.Image):
        img, label = src, "<decoded image>"
        if expect_size is not None:
            _check_stored_or_displayed(img, expect_size, label)
    else:
        data, label = read_image_bytes(src, root=root, cache=cache)
        img = _open_bytes(data, label, expect_size)
    try:
        if exif_transpose:
            img = ImageOps.exif_transpose(img) or img
        if mode == "RGB":
            img = to_rgb(img)
        elif mode is not None and img.mode != mode:
            img = img.convert(mode)
    except ImageError as e:
        raise ImageError(f"image {label}: {e}") from None
    except Exception as e:  # a damaged EXIF block or an unconvertible mode: name the file, not a traceback
        raise ImageError(f"image {label} could not be prepared ({type(e).__name__}: {e})") from None
    return img


_ALPHA_MODES = ("RGBA", "LA", "PA", "RGBa", "La")


def _flatten_on_white(img: Image) -> Image:
    """Composite a transparent image on white: PIL's convert("RGB") just drops alpha, exposing whatever
    colour the transparent pixels happen to store (often black)."""
    from PIL import Image as PILImage

    rgba = img.convert("RGBA")
    background = PILImage.new("RGBA", rgba.size, (255, 255, 255, 255))
    return PILImage.alpha_composite(background, rgba).convert("RGB")


def to_rgb(image: Image) -> Image:
    """Convert any PIL mode to 8-bit RGB so that what the model sees is what a viewer shows.

    PIL's own ``convert("RGB")`` clips 16-bit and 32-bit integer pixels to 255 (a 16-bit
    greyscale PNG turns all white), clips floats in [0, 1] to black, and drops alpha. Here:

    - ``I;16*`` and ``I`` (how PIL decodes 16-bit greyscale PNG/TIFF/PGM): clipped to
      0..65535, then ``value >> 8`` (0, 32896, 65535 -> 0, 128, 255);
    - ``F``: values in [0, 1] are scaled by 255, otherwise clipped to 0..255; NaN -> 0;
    - alpha (``RGBA``, ``LA``, ``PA``, ``P``/``L``/``RGB`` with a ``transparency`` key):
      composited on white;
    - ``CMYK``: through its embedded ICC profile when there is one, else PIL's formula;
    - ``1``, ``L``, ``P``, ``YCbCr`` and the rest: PIL's conversion.
    """
    import numpy as np
    from PIL import Image as PILImage

    mode = image.mode
    if mode == "RGB" and "transparency" not in image.info:
        return image
    if mode.startswith("I;16") or mode == "I":
        a = np.asarray(image).astype(np.int64)
        grey = (np.clip(a, 0, 65535) >> 8).astype(np.uint8)
        return PILImage.fromarray(grey, mode="L").convert("RGB")
    if mode == "F":
        a = np.nan_to_num(np.asarray(image, dtype=np.float64), nan=0.0, posinf=255.0, neginf=0.0)
        if a.size and a.min() >= 0.0 and a.max() <= 1.0:
            a = a * 255.0
        grey = np.clip(np.rint(a), 0, 255).astype(np.uint8)
        return PILImage.fromarray(grey, mode="L").convert("RGB")
    if mode in _ALPHA_MODES or "transparency" in image.info:
        return _flatten_on_white(image)
    if mode == "CMYK" and image.info.get("icc_profile"):
        try:
            from PIL import ImageCms

            src_profile = ImageCms.ImageCmsProfile(io.BytesIO(image.info["icc_profile"]))
            out = ImageCms.profileToProfile(image, src_profile, ImageCms.createProfile("sRGB"), outputMode="RGB")
            if out is not None:
                return out
        except Exception:  # no littlecms, or a broken profile: fall back to the plain formula
            pass
    try:
        return image.convert("RGB")
    except (ValueError, OSError) as e:
        raise ImageError(f"cannot convert mode {mode!r} to RGB: {e}") from None


def image_digest(src: ImageSource, *, root: str | os.PathLike | None = None,
                 cache: ImageCache | None = None) -> str:
    """sha256 of the encoded bytes, or of mode+size+pixels for a decoded image."""
    from PIL import Image as PILImage

    if isinstance(src, PILImage.Image):
        h = hashlib.sha256(f"{src.mode}:{src.size}".encode())
        h.update(src.tobytes())
        return h.hexdigest()
    data, _ = read_image_bytes(src, root=root, cache=cache)
    return hashlib.sha256(data).hexdigest()


def encode_png(img: Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


#: encoded formats a remote model may be sent unchanged, with their MIME types
PASSTHROUGH_MIME = {"JPEG": "image/jpeg", "PNG": "image/png", "WEBP": "image/webp"}


def _as_loaded(img: Image, data: bytes | None) -> bool:
    """True when ``img`` (and its file ``data``) already is what :func:`load_image` would give: 8-bit RGB,
    no transparency, no EXIF rotation."""
    if img.mode != "RGB" or "transparency" in img.info:
        return False
    if data is not None and img.format == "PNG" and len(data) > 24 and data[24] != 8:
        return False  # a 16-bit-per-channel PNG: PIL decodes it as RGB, another decoder may not
    try:
        orientation = img.getexif().get(0x0112)
    except Exception:  # a damaged EXIF block: load_image would not rotate either
        orientation = None
    return orientation in (None, 1)


def model_image_bytes(src: ImageSource) -> tuple[bytes, str, tuple[int, int]]:
    """``(bytes, mime, (width, height))``: the image a model is given, encoded for sending over HTTP.

    The pixels are those :func:`load_image` gives a local model (EXIF rotation applied, any mode made
    8-bit RGB by :func:`to_rgb`), so every backend sees the same image: a 16-bit PNG or a CMYK JPEG is not
    sent as it is for a server to decode its own way. A file that already decodes to that (an 8-bit RGB
    JPEG, PNG or WebP without transparency or rotation, told from its header without decoding the pixels)
    is sent byte for byte; anything else as the converted image in PNG (lossless).
    """
    from PIL import Image as PILImage

    if isinstance(src, PILImage.Image):
        img = src if _as_loaded(src, None) else load_image(src)
        return encode_png(img), "image/png", img.size
    data, _ = read_image_bytes(src)
    try:
        with warnings.catch_warnings():  # a would-be decompression bomb goes the checked way below
            warnings.simplefilter("error", PILImage.DecompressionBombWarning)
            head = PILImage.open(io.BytesIO(data))  # the header only: the pixels are the server's to decode
        mime = PASSTHROUGH_MIME.get(head.format or "")
        if mime is not None and _as_loaded(head, data):
            return data, mime, head.size
    except Exception:  # noqa: BLE001 - unreadable here: load_image below refuses it with the reason
        pass
    img = load_image(src)
    return encode_png(img), "image/png", img.size
