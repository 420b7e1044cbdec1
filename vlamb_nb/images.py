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


def _open_bytes(data: bytes, label: str) -> Image:
    from PIL import Image as PILImage
    from PIL import UnidentifiedImageError

    if not data:
        raise ImageError(f"image {label} is empty (0 bytes)")
    try:
        img = PILImage.open(io.BytesIO(data))
        img.load()
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as e:
        raise ImageError(f"image {label} is corrupt or not an image: {e}") from None
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
               exif_transpose: bool = True, mode: str | None = "RGB") -> Image:
    """Decode an image from any supported source; optional EXIF rotation and mode conversion."""
    from PIL import Image as PILImage
    from PIL import ImageOps

    if isinstance(src, PILImage.Image):
        img = src
    else:
        data, label = read_image_bytes(src, root=root, cache=cache)
        img = _open_bytes(data, label)
    if exif_transpose:
        img = ImageOps.exif_transpose(img) or img
    if mode is not None and img.mode != mode:
        img = img.convert(mode)
    return img


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


def find_with_extensions(folder: str | os.PathLike, stem: str,
                         extensions: tuple[str, ...] = IMAGE_EXTENSIONS) -> Path:
    """Find ``<folder>/<stem><ext>`` for the first matching extension; the error lists every path tried."""
    tried = []
    for ext in extensions:
        for e in (ext, ext.upper()):
            p = safe_join(folder, f"{stem}{e}")
            tried.append(p.name)
            if p.is_file():
                return p
    raise ImageError(f"no image for {stem!r} in {folder}; tried: {', '.join(tried)}")


def encode_png(img: Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()
