"""Tiny checkpoints: built offline in the hub's folder layout, atomically, reused from the cache."""

from __future__ import annotations

import json
import threading

import pytest

from vlamb_nb.cli import main
from vlamb_nb.errors import SettingError
from vlamb_nb.models import tiny


def test_unknown_family_is_a_setting_error(tmp_path):
    with pytest.raises(SettingError, match="qwen2_5_vl"):
        tiny.build_tiny("gpt2", tmp_path / "x")
    assert not any(tmp_path.iterdir())


def test_cache_dir_comes_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("VLAMB_CACHE", str(tmp_path / "c"))
    assert tiny.default_cache_dir() == tmp_path / "c"
    monkeypatch.delenv("VLAMB_CACHE")
    assert tiny.default_cache_dir().name == "vlamb_nb"


@pytest.mark.slow
def test_build_writes_a_hub_layout_checkpoint(tmp_path):
    from transformers import AutoConfig, AutoProcessor

    out = tiny.build_tiny("qwen2_5_vl", tmp_path / "qwen", seed=3)
    names = {p.name for p in out.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "generation_config.json"} <= names
    assert "chat_template.jinja" in names or "chat_template.json" in names
    assert [p.name for p in tmp_path.iterdir()] == ["qwen"]  # no temporary folder left behind
    cfg = AutoConfig.from_pretrained(out)
    assert cfg.model_type == "qwen2_5_vl"
    for size in (cfg.text_config.hidden_size, cfg.vision_config.hidden_size, cfg.text_config.vocab_size):
        assert size % 64 == 0  # 4-bit blocks tile every linear layer
    proc = AutoProcessor.from_pretrained(out)
    assert len(proc.tokenizer) == cfg.text_config.vocab_size == tiny.VOCAB_SIZE
    assert proc.tokenizer.convert_tokens_to_ids("<|image_pad|>") == cfg.image_token_id
    prompt = proc.apply_chat_template([{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "hi"}]}],
                                      tokenize=False, add_generation_prompt=True)
    assert "<|vision_start|><|image_pad|><|vision_end|>hi" in prompt and prompt.endswith("assistant\n")
    # byte-level BPE: any text round-trips, including characters the corpus never had
    text = "Ünïcødé ✓ 42"
    assert proc.tokenizer.decode(proc.tokenizer(text)["input_ids"]) == text
    # a complete checkpoint is reused, not rebuilt
    stamp = (out / "model.safetensors").stat().st_mtime_ns
    assert tiny.build_tiny("qwen2_5_vl", out, seed=3) == out
    assert (out / "model.safetensors").stat().st_mtime_ns == stamp
    # a different seed gives different weights
    other = tiny.build_tiny("qwen2_5_vl", tmp_path / "qwen-seed4", seed=4)
    assert (other / "model.safetensors").read_bytes() != (out / "model.safetensors").read_bytes()


@pytest.mark.slow
def test_concurrent_builders_do_not_clash(tmp_path):
    target = tmp_path / "llava"
    results, errors = [], []

    def build():
        try:
            results.append(tiny.build_tiny("llava", target))
        except Exception as e:  # noqa: BLE001 - surfaced by the assertion below
            errors.append(e)

    threads = [threading.Thread(target=build) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and results == [target, target]
    assert json.loads((target / "vlamb_tiny.json").read_text())["tiny_version"] == tiny.TINY_VERSION
    assert [p.name for p in tmp_path.iterdir()] == ["llava"]


@pytest.mark.slow
def test_a_half_written_folder_is_rebuilt(tmp_path):
    target = tmp_path / "idefics3"
    target.mkdir()
    (target / "config.json").write_text("{}")  # a crashed, non-atomic copy: no completion marker
    tiny.build_tiny("idefics3", target)
    assert (target / "model.safetensors").is_file() and (target / "vlamb_tiny.json").is_file()


@pytest.mark.slow
def test_cli_make_tiny_model(tmp_path, capsys):
    assert main(["make-tiny-model", "llava_onevision", str(tmp_path / "ov"), "--seed", "1"]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "ov")
    cfg = json.loads((tmp_path / "ov" / "config.json").read_text())
    assert cfg["model_type"] == "llava_onevision"
