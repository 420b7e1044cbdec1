import io

import pytest
from PIL import Image

from vlamb_nb.errors import ImageError
from vlamb_nb.images import (
    ImageCache,
    check_size,
    image_digest,
    load_image,
    safe_join,
    to_rgb,
)


def _png(size=(8, 6), color=(255, 0, 0), mode="RGB") -> bytes:
    buf = io.BytesIO()
    Image.new(mode, size, color if mode == "RGB" else 128).save(buf, format="PNG")
    return buf.getvalue()


def test_sources_decode_identically(tmp_path):
    data = _png()
    (tmp_path / "a.png").write_bytes(data)
    imgs = [load_image(data), load_image(tmp_path / "a.png"), load_image("a.png", root=tmp_path),
            load_image({"bytes": data, "path": "a.png"}), load_image({"bytes": None, "path": str(tmp_path / "a.png")})]
    assert {im.size for im in imgs} == {(8, 6)}
    assert len({image_digest(im) for im in imgs}) == 1


def test_rgb_conversion_optional():
    data = _png(mode="L")
    assert load_image(data).mode == "RGB"
    assert load_image(data, mode=None).mode == "L"


def test_exif_transpose(tmp_path):
    img = Image.new("RGB", (10, 4))
    exif = img.getexif()
    exif[0x0112] = 6  # rotate 90 CW on display
    buf = io.BytesIO()
    img.save(buf, format="JPEG", exif=exif)
    assert load_image(buf.getvalue()).size == (4, 10)
    assert load_image(buf.getvalue(), exif_transpose=False).size == (10, 4)


def test_missing_file(tmp_path):
    with pytest.raises(ImageError, match="not found"):
        load_image(tmp_path / "nope.jpg")


@pytest.mark.parametrize("data", [b"", b"not an image at all", _png()[:20]])
def test_corrupt_bytes(data):
    with pytest.raises(ImageError, match="empty|corrupt"):
        load_image(data)


@pytest.mark.parametrize("rel", ["../secret.png", "sub/../../secret.png", "/etc/passwd"])
def test_path_escaping_root_refused(tmp_path, rel):
    root = tmp_path / "data"
    root.mkdir()
    (tmp_path / "secret.png").write_bytes(_png())
    with pytest.raises(ImageError, match="escapes the dataset root"):
        load_image(rel, root=root)


def test_symlink_out_of_root_refused(tmp_path):
    root = tmp_path / "data"
    root.mkdir()
    (tmp_path / "secret.png").write_bytes(_png())
    (root / "link.png").symlink_to(tmp_path / "secret.png")
    with pytest.raises(ImageError, match="escapes"):
        safe_join(root, "link.png")


def test_url_needs_cache(tmp_path):
    url = "http://images.example.org/path/0001.jpg"
    with pytest.raises(ImageError, match="not available offline"):
        load_image(url)
    cache = ImageCache(tmp_path)
    with pytest.raises(ImageError, match="not available offline"):
        load_image(url, cache=cache)
    cache.candidates(url)[0].write_bytes(_png())
    assert load_image(url, cache=cache).size == (8, 6)


def test_url_cache_accepts_plain_file_name(tmp_path):
    (tmp_path / "0002.jpg").write_bytes(_png())
    assert load_image("https://x.org/a/0002.jpg", cache=ImageCache(tmp_path)).size == (8, 6)


def test_hf_value_without_bytes_or_path():
    with pytest.raises(ImageError, match="neither"):
        load_image({"bytes": None, "path": None})


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG whose IHDR claims ``width``x``height`` but whose pixel data is one empty row: a bomb in ~70 bytes."""
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00"))
            + chunk(b"IEND", b""))


def _pixels(img) -> list:
    import numpy as np

    return np.asarray(img).reshape(-1, 3).tolist()


def test_expect_size_accepts_the_recorded_size(tmp_path):
    (tmp_path / "a.png").write_bytes(_png(size=(8, 6)))
    assert load_image(tmp_path / "a.png", expect_size=(8, 6)).size == (8, 6)
    assert load_image(tmp_path / "a.png", expect_size=(8.0, 6.0)).size == (8, 6)  # records store floats


def test_expect_size_mismatch_names_file_and_both_sizes(tmp_path):
    (tmp_path / "a.png").write_bytes(_png(size=(8, 6)))
    with pytest.raises(ImageError, match=r"a\.png is 8x6 pixels but its record says 6x8"):
        load_image(tmp_path / "a.png", expect_size=(6, 8))


def test_expect_size_refuses_huge_header_before_decoding(tmp_path):
    (tmp_path / "big.png").write_bytes(_png_header_only(10000, 10000))
    with pytest.raises(ImageError, match=r"big\.png is 10000x10000 pixels but its record says 640x480"):
        load_image(tmp_path / "big.png", expect_size=(640, 480))


def test_expect_size_allows_exif_rotation():
    img = Image.new("RGB", (10, 4))
    exif = img.getexif()
    exif[0x0112] = 6
    buf = io.BytesIO()
    img.save(buf, format="JPEG", exif=exif)
    assert load_image(buf.getvalue(), expect_size=(10, 4)).size == (4, 10)  # size as stored
    assert load_image(buf.getvalue(), expect_size=(4, 10)).size == (4, 10)  # size as displayed
    with pytest.raises(ImageError, match="10x4 pixels but its record says 5x5"):
        load_image(buf.getvalue(), expect_size=(5, 5))


def test_expect_size_on_decoded_image():
    with pytest.raises(ImageError, match="record says 3x3"):
        load_image(Image.new("RGB", (2, 2)), expect_size=(3, 3))


def test_check_size_helper():
    check_size(Image.new("RGB", (640, 480)), (640, 480), "x.jpg")
    with pytest.raises(ImageError, match=r"x\.jpg is 640x480 pixels but its record says 480x640"):
        check_size(Image.new("RGB", (640, 480)), (480, 640), "x.jpg")
    with pytest.raises(ImageError, match="not a \\(width, height\\) pair"):
        check_size(Image.new("RGB", (1, 1)), ("a", None), "x.jpg")


def test_16bit_greyscale_png_scaled_to_8_bits():
    import numpy as np

    buf = io.BytesIO()
    Image.fromarray(np.array([[0, 257, 32896, 65535]], dtype=np.uint16)).save(buf, format="PNG")
    img = load_image(buf.getvalue())
    assert img.mode == "RGB"
    assert _pixels(img) == [[0, 0, 0], [1, 1, 1], [128, 128, 128], [255, 255, 255]]


@pytest.mark.parametrize("mode", ["I;16", "I;16B", "I"])
def test_to_rgb_16bit_modes(mode):
    img = Image.new(mode, (3, 1))
    for x, v in enumerate((0, 32896, 65535)):
        img.putpixel((x, 0), v)
    assert _pixels(to_rgb(img)) == [[0, 0, 0], [128, 128, 128], [255, 255, 255]]


def test_to_rgb_int32_clipped():
    img = Image.new("I", (2, 1))
    img.putpixel((0, 0), -5)
    img.putpixel((1, 0), 1_000_000)
    assert _pixels(to_rgb(img)) == [[0, 0, 0], [255, 255, 255]]


def test_to_rgb_float():
    unit = Image.new("F", (3, 1))
    for x, v in enumerate((0.0, 0.5, 1.0)):
        unit.putpixel((x, 0), v)
    assert _pixels(to_rgb(unit)) == [[0, 0, 0], [128, 128, 128], [255, 255, 255]]  # [0, 1] scaled
    wide = Image.new("F", (3, 1))
    for x, v in enumerate((-3.0, 100.4, 300.0)):
        wide.putpixel((x, 0), v)
    assert _pixels(to_rgb(wide)) == [[0, 0, 0], [100, 100, 100], [255, 255, 255]]  # 0..255 clipped
    nan = Image.new("F", (1, 1), float("nan"))
    assert _pixels(to_rgb(nan)) == [[0, 0, 0]]


def test_to_rgb_la_composited_on_white():
    img = Image.new("LA", (3, 1))
    img.putpixel((0, 0), (0, 255))  # opaque black
    img.putpixel((1, 0), (0, 0))  # fully transparent black: shows the white background
    img.putpixel((2, 0), (0, 128))  # half transparent
    assert _pixels(to_rgb(img)) == [[0, 0, 0], [255, 255, 255], [127, 127, 127]]


def test_to_rgb_rgba_composited_on_white():
    img = Image.new("RGBA", (2, 1), (10, 20, 30, 255))
    img.putpixel((1, 0), (0, 0, 0, 0))
    assert _pixels(to_rgb(img)) == [[10, 20, 30], [255, 255, 255]]


def test_to_rgb_palette_with_transparency_via_png():
    img = Image.new("P", (2, 1))
    img.putpalette([0, 0, 0, 200, 0, 0] + [0] * 762)
    img.putpixel((0, 0), 0)
    img.putpixel((1, 0), 1)
    buf = io.BytesIO()
    img.save(buf, format="PNG", transparency=0)  # index 0 (black) is transparent
    loaded = load_image(buf.getvalue())
    assert _pixels(loaded) == [[255, 255, 255], [200, 0, 0]]


def test_to_rgb_palette_without_transparency():
    img = Image.new("P", (1, 1))
    img.putpalette([0, 0, 0, 0, 90, 0] + [0] * 762)
    img.putpixel((0, 0), 1)
    assert _pixels(to_rgb(img)) == [[0, 90, 0]]


def test_to_rgb_cmyk():
    img = Image.new("CMYK", (3, 1))
    img.putpixel((0, 0), (0, 0, 0, 0))  # no ink: white
    img.putpixel((1, 0), (0, 0, 0, 255))  # full black
    img.putpixel((2, 0), (255, 0, 0, 0))  # cyan
    assert _pixels(to_rgb(img)) == [[255, 255, 255], [0, 0, 0], [0, 255, 255]]


def test_to_rgb_bilevel():
    img = Image.new("1", (2, 1))
    img.putpixel((1, 0), 1)
    assert _pixels(to_rgb(img)) == [[0, 0, 0], [255, 255, 255]]


def test_to_rgb_keeps_rgb_as_is():
    img = Image.new("RGB", (1, 1), (1, 2, 3))
    assert to_rgb(img) is img


def test_decompression_bomb_header_is_an_image_error(tmp_path):
    (tmp_path / "bomb.png").write_bytes(_png_header_only(100_000, 100_000))
    with pytest.raises(ImageError, match=r"bomb\.png refused as a possible decompression bomb"):
        load_image(tmp_path / "bomb.png")


def test_decompression_bomb_warning_level_is_an_image_error(tmp_path, monkeypatch):
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 20)  # 8x6 = 48 pixels: above the limit, below twice it
    (tmp_path / "a.png").write_bytes(_png(size=(8, 6)))
    with pytest.raises(ImageError, match=r"a\.png refused as a possible decompression bomb"):
        load_image(tmp_path / "a.png")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 10)  # above twice the limit: PIL raises
    with pytest.raises(ImageError, match=r"a\.png refused as a possible decompression bomb"):
        load_image(tmp_path / "a.png")


def test_truncated_file_names_the_file(tmp_path):
    buf = io.BytesIO()
    Image.new("RGB", (64, 64), (1, 2, 3)).save(buf, format="JPEG")
    (tmp_path / "cut.jpg").write_bytes(buf.getvalue()[: len(buf.getvalue()) // 2])
    with pytest.raises(ImageError, match=r"cut\.jpg is corrupt"):
        load_image(tmp_path / "cut.jpg")


def test_header_only_png_without_expect_size_is_corrupt(tmp_path):
    (tmp_path / "empty.png").write_bytes(_png_header_only(4, 4))
    with pytest.raises(ImageError, match=r"empty\.png is corrupt"):
        load_image(tmp_path / "empty.png")
