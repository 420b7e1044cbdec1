"""A model spec is read in one place: its kind, its name and whether its weights are here."""

from __future__ import annotations

import pytest

from vlamb_nb.errors import SettingError
from vlamb_nb.models import ModelSpec


@pytest.mark.parametrize(("spec", "kind", "name", "local", "stand_in"), [
    ("tiny:qwen2_5_vl", "tiny", "qwen2_5_vl", True, True),
    ("openai:Qwen/Qwen2.5-VL-7B-Instruct", "openai", "Qwen/Qwen2.5-VL-7B-Instruct", False, False),
    ("replay:runs/a.replay.jsonl", "replay", "runs/a.replay.jsonl", False, True),
    ("scripted-grounder", "scripted", "scripted-grounder", False, True),
    ("Qwen/Qwen2.5-VL-7B-Instruct", "hub", "Qwen/Qwen2.5-VL-7B-Instruct", True, False),
    ("  openai:m ", "openai", "m", False, False),
])
def test_a_spec_is_parsed_into_its_kind(spec, kind, name, local, stand_in):
    s = ModelSpec.parse(spec)
    assert (s.kind, s.name, s.weights_local, s.stand_in, s.served) == (kind, name, local, stand_in, kind == "openai")


def test_a_folder_is_a_local_checkpoint_and_an_empty_spec_is_refused(tmp_path):
    assert ModelSpec.parse(str(tmp_path)).kind == "local"
    assert ModelSpec.parse("openai:m", base_url="http://x/v1").base_url == "http://x/v1"
    with pytest.raises(SettingError):
        ModelSpec.parse("  ")
