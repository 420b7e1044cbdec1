"""The default grounder on a tiny random Grounding DINO built offline (same classes as the hub model)."""

from __future__ import annotations

import pandas as pd
import pytest
from fixtures_grounding import TableGrounder
from PIL import Image

from vlamb_nb import get_benchmark
from vlamb_nb.benchmarks.racquet import referents as rsal
from vlamb_nb.errors import SettingError
from vlamb_nb.models.tiny import build_tiny_detector
from vlamb_nb.scorers.grounding import (
    Detection,
    ZeroShotDetector,
    best_box,
    get_grounder,
    ground_rows,
    prompt_text,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def detector_dir(tmp_path_factory):
    return build_tiny_detector(tmp_path_factory.mktemp("gd") / "tiny-gd", seed=0)


def test_tiny_detector_returns_boxes_in_image_pixels(detector_dir):
    assert (detector_dir / "config.json").is_file() and build_tiny_detector(detector_dir) == detector_dir
    g = ZeroShotDetector(detector_dir, box_threshold=0.0, text_threshold=0.0)
    assert g.kind == "grounding-dino"
    img = Image.new("RGB", (160, 90), (200, 40, 40))
    dets = g.ground(img, "The bus on the left is red.")
    assert dets and all(isinstance(d, Detection) for d in dets)
    assert [d.score for d in dets] == sorted((d.score for d in dets), reverse=True)
    for d in dets:
        x1, y1, x2, y2 = d.box
        assert -1 <= x1 <= x2 <= 161 and -1 <= y1 <= y2 <= 91
    strict = ZeroShotDetector(detector_dir, box_threshold=1.01)
    assert strict.ground(img, "the bus") == []  # nothing above threshold: not grounded, counted upstream
    assert g.ground(img, "   ") == []


def test_saliency_analysis_with_the_detector(detector_dir, tmp_path):
    bench = get_benchmark("racquet")
    items = bench.load(bench.make_sample(tmp_path / "s", n=6), subset="general")
    scored = items.assign(request_id=items["id"] + "::direct", model="m", response="The dog on the left is red.",
                          label="C")
    g = ZeroShotDetector(detector_dir, box_threshold=0.0, text_threshold=0.0)
    per, table = rsal.saliency_analysis(scored, g, progress=False)
    assert len(per) == len(items) and per["response_box"].notna().all()
    assert table["responses"].iloc[0] == len(items)
    assert 0.0 <= table["Random"].iloc[0] <= 100.0


def test_tiny_owlv2_path(tmp_path):
    d = build_tiny_detector(tmp_path / "owl", kind="owlv2")
    g = ZeroShotDetector(d, box_threshold=0.0)
    assert g.kind == "owlv2"
    dets = g.ground(Image.new("RGB", (120, 60), (0, 0, 200)), "the dog on the left")
    assert dets and all(0 <= d.box[0] <= d.box[2] <= 120 and 0 <= d.box[1] <= d.box[3] <= 60 for d in dets)
    with pytest.raises(SettingError):
        build_tiny_detector(tmp_path / "x", kind="yolo")


def test_helpers():
    assert best_box([]) is None
    assert best_box([Detection((0, 0, 1, 1), 0.2), Detection((1, 1, 2, 2), 0.9)]) == (1, 1, 2, 2)
    assert prompt_text(" a  b\nc ", max_words=2) == "a b"
    t = TableGrounder({"r1": (0, 0, 5, 5)})
    rows = pd.DataFrame({"image": [Image.new("RGB", (8, 8))] * 2, "response": ["x", "y"], "rid": ["r1", "r2"]})
    out = ground_rows(t, rows, key_column="rid", progress=False)
    assert out["response_box"].tolist() == [(0.0, 0.0, 5.0, 5.0), None]
    assert get_grounder(t) is t and isinstance(get_grounder("some/model"), ZeroShotDetector)
    with pytest.raises(SettingError):
        get_grounder(42)  # type: ignore[arg-type]
