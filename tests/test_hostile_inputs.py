"""Bad input gets a clear error naming the file (and line or field) — never a raw traceback, never silence.

One table of hostile cases across the loaders and scorers; each case writes its bad file and states the error
type and the words the message must contain.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from vlamb_nb import get_benchmark
from vlamb_nb.errors import DataError, ImageError, VlambError


def _write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


def _racquet_empty(tmp: Path):
    get_benchmark("racquet").load(_write(tmp / "racquet_general.jsonl", "\n\n"))


def _racquet_non_utf8(tmp: Path):
    good = json.dumps({"id": 0, "image_url": "http://x/a.jpg", "question": "What is it?", "question_idx": 1})
    get_benchmark("racquet").load(_write(tmp / "racquet_general.jsonl", good.encode() + b"\n\xff\xfe{}\n"))


def _racquet_bad_json_line(tmp: Path):
    good = json.dumps({"id": 0, "image_url": "http://x/a.jpg", "question": "What is it?", "question_idx": 1})
    get_benchmark("racquet").load(_write(tmp / "racquet_general.jsonl", good + "\n{not json\n"))


def _vflute_empty_csv(tmp: Path):
    get_benchmark("vflute").load(_write(tmp / "vflute-v2-test.csv", ""))


def _vflute_predictions_empty_csv(tmp: Path):
    bench = get_benchmark("vflute")
    folder = bench.make_sample(tmp / "d", n=4, seed=0)
    bench.score_file(_write(tmp / "p.csv", ""), source=folder, scorer="none", ci=False)


def _vague_non_utf8_json(tmp: Path):
    get_benchmark("vague").score_file(_write(tmp / "m_VLM_mcq.json", b'{"a": "\xff"}'))


def _vague_truncated_json(tmp: Path):
    get_benchmark("vague").score_file(_write(tmp / "m_VLM_mcq.json", '{"a_annot.jpg": {"model_output": "A"'))


def _refadv_demo_not_a_list(tmp: Path):
    get_benchmark("refadv").load(_write(tmp / "demo" / "demo_samples.json", '{"image": "x"}'))


def _mucar_partial_predictions_without_source(tmp: Path, shared: Path | None):
    if shared is None or not (shared / "mucar").is_dir():
        pytest.skip("the MUCAR release is not beside the checkout")
    bench = get_benchmark("mucar")
    items = bench.load(None)
    uid = str(items["uid"].iloc[0])
    bench.score_file(_write(tmp / "p.jsonl", json.dumps({"id": uid, "output": "Answer: A"}) + "\n"))


def _corrupt_image(tmp: Path):
    from vlamb_nb.images import load_image

    load_image(_write(tmp / "broken.jpg", b"\xff\xd8\xff\xe0 not really a jpeg"))


def _image_of_the_wrong_size(tmp: Path):
    from PIL import Image

    from vlamb_nb.images import load_image

    Image.new("RGB", (64, 48)).save(tmp / "small.png")
    load_image(tmp / "small.png", expect_size=(640, 480))


CASES: list[tuple[str, Callable, type[Exception], tuple[str, ...]]] = [
    ("racquet: empty release file", _racquet_empty, DataError, ("racquet_general.jsonl",)),
    ("racquet: a non-UTF-8 byte", _racquet_non_utf8, DataError, ("racquet_general.jsonl", "UTF-8", "row 2")),
    ("racquet: a broken JSON line", _racquet_bad_json_line, DataError, ("racquet_general.jsonl", "row 2")),
    ("vflute: empty test CSV", _vflute_empty_csv, DataError, ("vflute-v2-test.csv",)),
    ("vflute: empty predictions CSV", _vflute_predictions_empty_csv, DataError, ("p.csv",)),
    ("vague: non-UTF-8 result JSON", _vague_non_utf8_json, DataError, ("m_VLM_mcq.json", "UTF-8")),
    ("vague: truncated result JSON", _vague_truncated_json, DataError, ("m_VLM_mcq.json", "not valid JSON")),
    ("refadv: demo file of the wrong shape", _refadv_demo_not_a_list, DataError, ("demo_samples.json", "list")),
    ("image: not an image", _corrupt_image, ImageError, ("broken.jpg",)),
    ("image: not the recorded size", _image_of_the_wrong_size, ImageError, ("small.png", "64x48", "640x480")),
]


@pytest.mark.parametrize("name,make,error,words", CASES, ids=[c[0] for c in CASES])
def test_hostile_input_is_a_clear_error(tmp_path, name, make, error, words):
    with pytest.raises(error) as info:
        make(tmp_path)
    msg = str(info.value)
    for w in words:
        assert w in msg, f"{name}: {w!r} not in {msg!r}"


def test_partial_predictions_without_a_source_are_not_scored_against_the_whole_release(tmp_path):
    from vlamb_nb.paths import shared_data_dir

    with pytest.raises(VlambError, match=r"no --source given.*answers 1 of them"):
        _mucar_partial_predictions_without_source(tmp_path, shared_data_dir())


def test_a_refadv_image_of_another_size_than_its_record_is_refused(tmp_path, shared_data):
    import shutil

    from PIL import Image

    demo = tmp_path / "demo"
    shutil.copytree(shared_data / "refadv" / "demo", demo)
    first = sorted((demo / "images").glob("*.jpg"))[0]
    Image.new("RGB", (100, 100)).save(first)  # the record says 640x480
    bench = get_benchmark("refadv")
    items = bench.load(demo)
    with pytest.raises(ImageError, match=r"100x100.*640x480"):
        bench.requests(items.head(1), "direct")
