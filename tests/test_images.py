import io

import pytest
from PIL import Image

from vlamb_nb.errors import ImageError
from vlamb_nb.images import ImageCache, find_with_extensions, image_digest, load_image, safe_join


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


def test_find_with_extensions_lists_tries(tmp_path):
    (tmp_path / "img7.png").write_bytes(_png())
    assert find_with_extensions(tmp_path, "img7").name == "img7.png"
    with pytest.raises(ImageError, match=r"tried: .*img8\.jpg.*img8\.png"):
        find_with_extensions(tmp_path, "img8")
