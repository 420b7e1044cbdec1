"""Prompt sensitivity: option-order and wording variants run as settings, and a planted position bias is found."""

from __future__ import annotations

import json

import pytest

from vlamb_nb import get_benchmark
from vlamb_nb.models import ScriptedModel
from vlamb_nb.sensitivity import bases_with_variants, prompt_sensitivity

VAGUE_SETTINGS = ["vlm", "vlm_shift1", "vlm_shift2", "vlm_shift3", "vlm_code"]


@pytest.fixture(scope="module")
def vague_items(tmp_path_factory):
    bench = get_benchmark("vague")
    return bench.load(bench.make_sample(tmp_path_factory.mktemp("vague"), n=24, seed=0))


def test_a_model_that_always_answers_the_first_option_is_found(vague_items):
    bench = get_benchmark("vague")
    runs = bench.run_settings(ScriptedModel(lambda r: "A", model_id="always-first"), vague_items, VAGUE_SETTINGS,
                              progress=False)
    res = prompt_sensitivity("vague", runs, n_resamples=200)
    pooled = res.bias.set_index("setting").loc["pooled"]
    assert pooled["first_chosen"] == 100 and pooled["first_right"] == pytest.approx(25, abs=10)
    assert pooled["p"] < 1e-6
    # the same letter is a different option in every order: the answers are not consistent
    assert res.consistency.iloc[0]["consistency"] < 10
    assert set(res.paired["variant"]) == {"vlm_shift1", "vlm_shift2", "vlm_shift3", "vlm_code"}
    assert "first option is chosen 100%" in res.conclusion


def test_a_model_that_follows_the_content_shows_no_position_bias(vague_items):
    from vlamb_nb.benchmarks.vague.prompts import shifted

    bench = get_benchmark("vague")
    gold = {r["id"]: list(r["ordering"]) for _, r in vague_items.iterrows()}
    model = ScriptedModel(lambda r: shifted(gold[r.meta["item_id"]], r.meta.get("shift", 0))[0], model_id="right")
    runs = bench.run_settings(model, vague_items, VAGUE_SETTINGS, progress=False)
    for s in VAGUE_SETTINGS:  # every variant is scored against the options it showed
        assert runs[s]["correct"].all(), s
    res = prompt_sensitivity("vague", runs, n_resamples=200)
    assert res.bias.set_index("setting").loc["pooled", "p"] > 0.5
    assert (res.consistency["consistency"] == 100).all()
    assert (res.paired["diff"] == 0).all()


def test_the_variants_are_settings_with_their_deviations_and_the_notebook_default_is_the_papers():
    from vlamb_nb.benchmarks.vague.prompts import SETTINGS
    from vlamb_nb.benchmarks.vague.report import parse_settings

    bench = get_benchmark("vague")
    assert set(VAGUE_SETTINGS) <= set(bench.settings)
    assert parse_settings("all") == list(SETTINGS) and "vlm_shift1" not in parse_settings("all")
    assert parse_settings("vlm,vlm_shift2") == ["vlm", "vlm_shift2"]
    devs = {d.what for d in bench.deviations(ScriptedModel(lambda r: "A").info, "vlm_shift2")}
    assert "option order" in devs
    assert bases_with_variants("vague", ["vlm", "vlm_code", "lm"]) == {"vlm": ["vlm_code"]}


def test_mucar_reversed_options_are_read_back_to_the_released_letters(tmp_path):
    bench = get_benchmark("mucar")
    items = bench.load(bench.make_sample(tmp_path, n=6, seed=0))
    first = ScriptedModel(lambda r: "Answer: A", model_id="always-first")
    runs = bench.run_settings(first, items, ["full", "full_swap", "full_lines"], progress=False)
    swap, full = runs["full_swap"], runs["full"]
    assert (full["letter"] == "A").all() and (swap["position"] == 0).all()
    two = swap["options"].map(len) == 2
    assert (swap.loc[two, "letter"] == "B").all()  # "A" shown under full_swap is the released B
    res = prompt_sensitivity("mucar", runs, n_resamples=200)
    assert res.bias.set_index("setting").loc["pooled", "first_chosen"] == 100
    assert res.bias.set_index("setting").loc["pooled", "p"] < 0.01
    gold = dict(zip(items["uid"], items["gold"], strict=True))
    right = ScriptedModel(lambda r: "Answer: " + _shown_gold(r, gold, items), model_id="right")
    runs = bench.run_settings(right, items, ["full", "full_swap"], progress=False)
    assert runs["full"]["correct"].all() and runs["full_swap"]["correct"].all()


def _shown_gold(request, gold, items):
    from vlamb_nb.benchmarks.mucar.prompts import released_letter

    uid = request.meta["item_id"]
    options = list(items.set_index("uid").loc[uid, "options"])
    return released_letter(gold[uid], options, request.setting)


def test_vflute_label_words_swapped_reveal_a_first_named_label_bias(tmp_path):
    bench = get_benchmark("vflute")
    items = bench.load(bench.make_sample(tmp_path, n=12, seed=0))

    def first_named(r):
        text = r.messages[-1]["content"][-1]["text"] if isinstance(r.messages[-1]["content"], list) \
            else r.messages[-1]["content"]
        return "Because.\nLABEL: " + ("contradiction" if "contradiction or entailment" in text else "entailment")

    runs = bench.run_settings(ScriptedModel(first_named, model_id="first-named"), items,
                              ["zero_shot", "zero_shot_swapped", "zero_shot_reworded"], progress=False, scorer="none")
    text = {s: [r.prompt_text for r in bench.requests(items, s)] for s in ("zero_shot", "zero_shot_swapped",
                                                                           "zero_shot_reworded")}
    assert all("contradiction or entailment" in t for t in text["zero_shot_swapped"])
    assert all(a != b for a, b in zip(text["zero_shot"], text["zero_shot_reworded"], strict=True))
    res = prompt_sensitivity("vflute", runs, n_resamples=200)
    pooled = res.bias.set_index("setting").loc["pooled"]
    assert pooled["first_chosen"] == 100 and pooled["p"] < 0.01
    assert res.consistency.set_index("runs").iloc[1]["consistency"] == 0  # base against the swapped labels


def test_a_sweep_that_runs_a_base_and_its_variants_writes_the_sensitivity(tmp_path, monkeypatch, inline_sweep):
    import vlamb_nb.models

    bench = get_benchmark("vague")
    src = bench.make_sample(tmp_path / "data", n=8, seed=0)
    monkeypatch.setattr(vlamb_nb.models, "load_model", lambda spec, **_: ScriptedModel(lambda r: "A", model_id=spec))

    import yaml

    out = tmp_path / "out"
    cfg = tmp_path / "sweep.yaml"
    cfg.write_text(yaml.safe_dump({"name": "s", "out_dir": str(out), "progress": False,
                                   "models": [{"spec": "first", "quantization": "none"}],
                                   "benchmarks": [{"name": "vague", "source": str(src),
                                                   "settings": ["vlm", "vlm_shift1", "vlm_shift2"]}]}))
    assert inline_sweep.sweep(cfg, quiet=True) == 0
    assert "Prompt sensitivity of 1 run(s)" in (out / "summary.md").read_text()
    doc = json.loads((out / "sensitivity.json").read_text())
    pooled = next(r for r in doc[0]["bias"] if r["setting"] == "pooled")
    assert doc[0]["base"] == "vlm" and pooled["first_chosen"] == 100


@pytest.mark.slow
def test_the_variants_run_on_a_tiny_checkpoint(vague_items):
    """The tiny stand-in answers noise, but the variants run through the same path and are compared."""
    from vlamb_nb.models import load_model

    try:
        model = load_model("tiny:qwen2_5_vl", quantization=None)
    except Exception as e:  # noqa: BLE001 - no tiny checkpoint on this machine
        pytest.skip(f"tiny checkpoints unavailable: {e}")
    bench = get_benchmark("vague")
    runs = bench.run_settings(model, vague_items, ["vlm", "vlm_shift1", "vlm_code"], limit=3, max_new_tokens=4,
                              progress=False)
    res = prompt_sensitivity("vague", runs, n_resamples=100)
    assert list(res.paired["variant"]) == ["vlm_shift1", "vlm_code"] and (res.paired["n"] == 3).all()
    assert res.conclusion.startswith("vague vlm: ")
