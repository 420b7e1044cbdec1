"""Notebook profiles, folders and recorded results (vlamb_nb.notebook)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from vlamb_nb import notebook as nb
from vlamb_nb.errors import SettingError


def test_the_profile_follows_the_model():
    assert nb.resolve_profile(None, None) == "offline"
    assert nb.resolve_profile(None, "tiny:llava") == "offline"
    assert nb.resolve_profile(None, "replay:out.jsonl") == "offline"
    assert nb.resolve_profile(None, "Qwen/Qwen2.5-VL-7B-Instruct") == "paper"
    assert nb.resolve_profile(None, "openai:gpt-4o") == "paper"
    with pytest.raises(SettingError, match="offline profile only runs stand-ins"):
        nb.resolve_profile("offline", "Qwen/Qwen2.5-VL-7B-Instruct")  # a real run never inherits shortcuts
    with pytest.raises(SettingError, match="unknown profile"):
        nb.resolve_profile("fast", None)


def test_values_default_to_the_paper_and_differences_are_deviations():
    real = nb.setup("vague", model="Qwen/Qwen2.5-VL-7B-Instruct", quantization=None)
    assert real.profile == "paper" and not real.deviations
    assert real.value("max_new_tokens", None, paper=1024, offline=8) == 1024  # no offline value leaks
    assert not real.deviations
    assert real.value("num_beams", 1, paper=3) == 1
    assert [d.what for d in real.deviations] == ["num_beams"]
    assert "1 (set by a parameter)" in str(real.deviations[0])

    demo = nb.setup("vague")
    assert demo.profile == "offline" and demo.model == nb.OFFLINE_MODEL
    assert demo.value("max_new_tokens", None, paper=1024, offline=8) == 8
    kinds = [d.what for d in demo.deviations]
    assert kinds == ["model", "quantization", "max_new_tokens"]
    assert "8 (offline profile)" in str(demo.deviations[-1])
    assert demo.value("n_samples", None, paper=10) == 10  # no offline value: the paper's

    with pytest.raises(SettingError, match="needs a model"):
        nb.setup("vague", profile="paper")
    api = nb.setup("vague", model="openai:gpt-4o", quantization="4bit")
    assert api.quantization is None and not api.deviations  # an API model is not quantized here


def test_folders_follow_the_environment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VLAMB_RUN_DIR", raising=False)
    monkeypatch.delenv("VLAMB_FIGURES_DIR", raising=False)
    assert nb.run_dir("vague") == tmp_path / "runs" / "vague"
    assert nb.figures_dir("vague") == tmp_path / "figures" / "vague"
    monkeypatch.setenv("VLAMB_RUN_DIR", str(tmp_path / "r"))
    monkeypatch.setenv("VLAMB_FIGURES_DIR", str(tmp_path / "f"))
    cfg = nb.setup("mucar")
    assert cfg.path("stores", "full.jsonl") == tmp_path / "r" / "mucar" / "stores" / "full.jsonl"
    assert (tmp_path / "r" / "mucar" / "stores").is_dir()
    assert cfg.figures_dir == tmp_path / "f" / "mucar"


def test_tiny_seed_from_the_environment(monkeypatch):
    monkeypatch.setenv(nb.TINY_SEED_ENV, "3")
    assert nb.tiny_seed() == 3
    monkeypatch.setenv(nb.TINY_SEED_ENV, "x")
    with pytest.raises(SettingError, match="must be an integer"):
        nb.tiny_seed()


def test_jsonable_turns_nan_into_null():
    frame = pd.DataFrame({"a": [1.0, np.nan], "b": ["x", None]})
    out = nb.jsonable({"f": frame, "s": pd.Series({"k": np.float64("inf")}), "n": np.int64(3), "na": pd.NA,
                       "t": (1, math.nan)})
    assert out == {"f": [{"a": 1.0, "b": "x"}, {"a": None, "b": None}], "s": {"k": None}, "n": 3, "na": None,
                   "t": [1, None]}
    json.dumps(out, allow_nan=False)  # strict JSON: no NaN tokens


def test_record_returns_nothing():
    assert nb.record("x", {"v": math.nan}) is None
