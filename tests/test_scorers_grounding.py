"""Detector inputs are cut to each detector's own text limit, read from its config."""

from __future__ import annotations

import pytest
from PIL import Image

from vlamb_nb.models.tiny import build_tiny_detector
from vlamb_nb.scorers.grounding import ZeroShotDetector

pytestmark = pytest.mark.slow

WORDS = ["the", "red", "bus", "on", "the", "left", "is", "wearing", "a", "blue", "shirt", "and", "umbrella"]


def _long_answer(n_words: int = 300) -> str:
    return " ".join(WORDS[i % len(WORDS)] for i in range(n_words)) + "."


@pytest.mark.parametrize("kind", ["grounding-dino", "owlv2"])
def test_a_300_token_answer_fits_the_detector(tmp_path, kind):
    det_dir = build_tiny_detector(tmp_path / kind, kind=kind)
    g = ZeroShotDetector(det_dir, box_threshold=0.0, text_threshold=0.0, max_words=10_000)
    limit = g.text_limit
    assert limit == (32 if kind == "grounding-dino" else 16)  # the tiny configs' max_text_len / positions
    text = _long_answer()
    assert len(g._processor.tokenizer(text)["input_ids"]) >= 300 > limit  # a 300-token answer
    img = Image.new("RGB", (120, 80), (10, 200, 10))
    dets = g.ground(img, text)  # crashed with a tensor size mismatch before the cut
    assert all(0 <= d.box[0] <= d.box[2] <= 120 for d in dets)
    cut = g._fit(text.lower(), limit, reserve=1)
    assert len(g._processor.tokenizer(cut + ".")["input_ids"]) <= limit
    assert cut.split()[:5] == text.lower().split()[:5]  # the start of the answer is kept


def test_the_limit_comes_from_the_config(tmp_path):
    det_dir = build_tiny_detector(tmp_path / "gd")
    import json

    cfg = json.loads((det_dir / "config.json").read_text())
    cfg["max_text_len"] = 24
    (det_dir / "config.json").write_text(json.dumps(cfg))
    g = ZeroShotDetector(det_dir, box_threshold=0.0, text_threshold=0.0, max_words=10_000)
    assert g.text_limit == 24
    assert len(g._processor.tokenizer(g._fit(_long_answer(), 24, reserve=1) + ".")["input_ids"]) <= 24


def test_the_tiny_detector_tokenizer_knows_its_words(tmp_path):
    from transformers import AutoProcessor

    tok = AutoProcessor.from_pretrained(build_tiny_detector(tmp_path / "gd")).tokenizer
    assert tok.unk_token_id not in tok("the red bus on the left.", add_special_tokens=False)["input_ids"]
