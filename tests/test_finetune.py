"""QLoRA fine-tuning on CPU: a few steps on a tiny 4-bit checkpoint, masking, schedule, save/reload, resume."""

from __future__ import annotations

import json
import math
import shutil

import pytest

from vlamb_nb.benchmarks.vflute import finetune as ft
from vlamb_nb.benchmarks.vflute import finetune_data as ftd
from vlamb_nb.benchmarks.vflute import finetune_eval as fte
from vlamb_nb.benchmarks.vflute import finetune_recipe as ftr
from vlamb_nb.errors import DataError, SettingError


def _torch():
    """torch, once peft and bitsandbytes are there too: imported by a test that trains, so collecting this file
    (every pytest run does) imports none of them."""
    pytest.importorskip("peft")
    pytest.importorskip("bitsandbytes")
    return pytest.importorskip("torch")


FAMILY = "tiny:qwen2_5_vl"
# a learning rate far above the paper's 2e-5 so that six steps on a random tiny model visibly learn
FAST = dict(learning_rate=2e-3, projector_lr=2e-3, batch_size=2, grad_accum=1, max_steps=6)


@pytest.fixture(scope="module")
def train_items(tmp_path_factory):
    from vlamb_nb.benchmarks.vflute.benchmark import BENCHMARK

    folder = BENCHMARK.make_sample(tmp_path_factory.mktemp("vf"), n=4, seed=0)
    return BENCHMARK.load(folder, split="train").head(4).reset_index(drop=True)


@pytest.fixture(scope="module")
def trained(train_items, tmp_path_factory):
    _torch()
    out = tmp_path_factory.mktemp("run")
    return ft.train(FAMILY, train_items, out, ftr.QLoRAConfig(**FAST), progress=False)


def _inputs(hf, example):
    batch = ftd.encode_batch(hf, [example])
    return {k: v for k, v in batch.items() if k != "labels"}


@pytest.mark.slow
def test_loss_falls(trained):
    losses = trained.losses
    assert len(losses) == 6 and all(math.isfinite(x) for x in losses)
    assert losses[-1] < losses[0] - 0.5, losses
    assert sum(losses[-2:]) / 2 < sum(losses[:2]) / 2
    assert trained.summary()["loss_fell"] is True


@pytest.mark.slow
def test_learning_rate_follows_warmup_then_cosine(trained):
    torch = _torch()
    from transformers import get_cosine_schedule_with_warmup

    total = 6
    warm = math.ceil(0.03 * total)  # the Trainer's rule
    assert warm == ft.warmup_steps(total, 0.03) == 1
    dummy = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=FAST["learning_rate"])
    ref = get_cosine_schedule_with_warmup(dummy, warm, total)
    expected = []
    for _ in range(total):
        expected.append(dummy.param_groups[0]["lr"])
        dummy.step()
        ref.step()
    got = [h["lr"] for h in trained.history]
    assert got == pytest.approx(expected)
    assert got[0] == 0.0  # the first step only warms up


@pytest.mark.slow
def test_labels_cover_only_the_answer(trained, train_items):
    hf = trained.model
    examples = ftd.training_examples(train_items.head(2))
    batch = ftd.encode_batch(hf, examples)
    ids, labels, mask = batch["input_ids"], batch["labels"], batch["attention_mask"]
    assert ids.shape[0] == 2 and (mask == 0).any()  # two lengths: right padding present
    tok = hf.tokenizer
    for i, ex in enumerate(examples):
        kept = labels[i] != ftd.IGNORE_INDEX
        first = int(kept.nonzero()[0])
        assert not kept[:first].any() and (labels[i][kept] == ids[i][kept]).all()
        assert not kept[mask[i] == 0].any()  # padding never carries loss
        text = tok.decode(ids[i][kept])
        assert text.startswith(ex.target.split("\n")[0][:30])
        assert ex.target in text and text.rstrip().endswith(tok.eos_token)
        assert "LABEL: " + train_items.loc[i, "label"] in text
        # everything before the answer is the prompt with its image tokens
        assert "<|image_pad|>" in tok.decode(ids[i][:first]) and ex.instruction in tok.decode(ids[i][:first])


@pytest.mark.slow
def test_saved_adapter_reloads_with_the_same_logits(trained, train_items):
    torch = _torch()
    hf = trained.model
    example = ftd.training_examples(train_items.tail(1))[0]
    inputs = _inputs(hf, example)
    with torch.no_grad():
        before = hf.model(**inputs).logits
        with hf.model.disable_adapter():
            base = hf.model(**inputs).logits
    reloaded = fte.load_finetuned(trained.adapter_dir)
    assert "+adapter@" in reloaded.info.model_id and reloaded.info.quantization == "4bit"
    assert reloaded.info.model_id == hf.info.model_id  # same cache identity, never the base model's
    with torch.no_grad():
        after = reloaded.model(**inputs).logits
    assert torch.allclose(before, after, atol=1e-5), float((before - after).abs().max())
    assert float((before - base).abs().max()) > 1e-2  # the adapter did change the model
    # generation through the vlamb_nb model protocol gives the same text
    from vlamb_nb.models import DecodingParams, Request

    req = ftd.example_requests(example)[0]
    req = Request(id="x", messages=req.messages, images=req.images, params=DecodingParams(max_new_tokens=8))
    assert hf.generate([req])[0].text == reloaded.generate([req])[0].text


@pytest.mark.slow
def test_adapter_holds_lora_on_the_language_model_and_the_projector(trained):
    from safetensors.torch import load_file

    keys = list(load_file(str(trained.adapter_dir / "adapter_model.safetensors")))
    lora = [k for k in keys if "lora_" in k]
    assert lora and all("language_model" in k for k in lora)
    assert not any("visual.blocks" in k for k in keys)  # the vision tower stays frozen, without LoRA
    assert any("merger" in k and "lora_" not in k for k in keys)  # projector trained in full
    cfg = json.loads((trained.adapter_dir / "adapter_config.json").read_text())
    assert cfg["r"] == 128 and cfg["lora_alpha"] == 256 and cfg["lora_dropout"] == 0.05


@pytest.mark.slow
def test_run_record_lists_every_deviation(trained):
    rec = fte.read_adapter_record(trained.adapter_dir)
    whats = {d["what"] for d in rec["deviations"]}
    assert {"fine-tuning precision", "hardware", "learning_rate", "projector_lr", "training length",
            "effective batch", "base model", "prompt format"} <= whats
    assert rec["base_model"] == FAMILY and rec["config"]["learning_rate"] == FAST["learning_rate"]
    assert [h["loss"] for h in rec["history"]] == pytest.approx(trained.losses)
    names = {h["name"] for h in rec["paper_recipe"]}
    assert {"lora_r", "lora_alpha", "lora_dropout", "learning_rate", "warmup_ratio", "epochs"} <= names


def test_paper_config_matches_the_recipe():
    """The defaults are the paper's: only the unavoidable deviations remain."""
    paper = ftr.QLoRAConfig.paper()
    whats = {d.what for d in ftr.deviations(paper, base_model=ftr.recipe()["base_model"], device="cuda",
                                            compute_dtype="bfloat16")}
    assert whats == {"fine-tuning precision", "prompt format"}
    ablation = ftr.QLoRAConfig.paper("hypothesis_only")
    assert ablation.epochs == 10 and "epochs" not in {d.what for d in ftr.deviations(ablation)}
    assert "epochs" in {d.what for d in ftr.deviations(ftr.QLoRAConfig(setting="hypothesis_only"))}


@pytest.mark.slow
def test_interrupted_run_resumes_to_the_same_losses(train_items, tmp_path):
    _torch()
    cfg = ftr.QLoRAConfig(**{**FAST, "max_steps": 3, "save_steps": 2, "lora_dropout": 0.3})
    full = ft.train(FAMILY, train_items, tmp_path / "a", cfg, progress=False)
    assert (tmp_path / "a" / "checkpoint-2").is_dir() and not (tmp_path / "a" / "checkpoint-3").exists()
    shutil.rmtree(tmp_path / "a" / "adapter")  # as if the run died after the step-2 checkpoint
    again = ft.train(FAMILY, train_items, tmp_path / "a", cfg, progress=False)
    assert again.resumed_from == 2 and len(again.losses) == 3
    assert again.losses == pytest.approx(full.losses, abs=1e-4)
    # another config never resumes from these checkpoints
    other = ftr.QLoRAConfig(**{**FAST, "max_steps": 1, "lora_r": 8})
    assert ft._latest_checkpoint(tmp_path / "a", other) is None


def test_hypothesis_only_trains_on_white_squares(train_items):
    exs = ftd.training_examples(train_items, setting="hypothesis_only")
    assert all(e.image.getextrema() == ((255, 255), (255, 255), (255, 255)) for e in exs)
    assert exs[0].target.endswith("\nLABEL: " + train_items.loc[0, "label"])
    assert '"' + train_items.loc[0, "claim"].strip() + '"' in exs[0].instruction


def test_bad_input_is_a_clear_error(train_items, tmp_path):
    bad = train_items.copy()
    bad.loc[1, "explanation"] = "  "
    with pytest.raises(DataError, match="explanation"):
        ftd.training_examples(bad)
    bad = train_items.copy()
    bad.loc[2, "label"] = "neutral"
    with pytest.raises(DataError, match=str(bad.loc[2, "id"])):
        ftd.training_examples(bad)
    with pytest.raises(DataError, match="no training items"):
        ftd.training_examples(train_items.head(0))
    with pytest.raises(SettingError):
        ftr.QLoRAConfig(setting="label_only")
    with pytest.raises(SettingError):
        ftr.QLoRAConfig(batch_size=0)
    with pytest.raises(SettingError, match="not an adapter"):
        fte.load_finetuned(tmp_path)


@pytest.mark.slow
def test_cli_script_trains_and_evaluates(repo_root, tmp_path, capsys):
    _torch()
    import importlib.util

    spec = importlib.util.spec_from_file_location("qlora_vflute", repo_root / "scripts" / "qlora_vflute.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    rc = script.main(["--model", FAMILY, "--sample", "--out", str(tmp_path / "run"), "--limit", "4",
                      "--max-steps", "2", "--batch-size", "2", "--grad-accum", "1", "--lr", "1e-3",
                      "--no-gradient-checkpointing", "--evaluate", "--scorer", "none", "--eval-limit", "2",
                      "--max-new-tokens", "4", "--num-beams", "1", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["steps"] == 2 and (tmp_path / "run" / "adapter" / ftr.RECIPE_FILE).is_file()
    assert 0 <= out["table4"][0]["F1@0"] <= 100
    whats = {d["what"] for d in out["deviations"]}
    assert {"fine-tuning precision", "decoding", "training length"} <= whats
    with pytest.raises(SystemExit):
        script.main(["--model", FAMILY, "--out", str(tmp_path / "x")])  # no data source given


@pytest.mark.slow
@pytest.mark.parametrize("family", ["llava", "llava_onevision", "idefics3"])
def test_other_families_train_and_reload(family, train_items, tmp_path):
    _torch()
    cfg = ftr.QLoRAConfig(**{**FAST, "max_steps": 2, "gradient_checkpointing": False})
    res = ft.train(f"tiny:{family}", train_items, tmp_path, cfg, progress=False)
    made = fte.read_adapter_record(res.adapter_dir)["made"]
    assert made["lora_targets"] == 14 and len(made["projector"]) == 1  # 2 layers x 7 linear; the projector
    check = fte.reload_check(res, train_items)
    assert check["max_abs_logit_diff"] < 1e-5 and check["same_text"] and check["same_identity"]


@pytest.mark.slow
@pytest.mark.parametrize("quantization", ["4bit", None])
def test_checkpointing_is_on_when_asked_and_warns_of_no_deprecated_name(quantization):
    _torch()
    import warnings

    hf = ft.load_base(FAMILY, ftr.QLoRAConfig(quantization=quantization))
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # transformers 5 warns on the old method name
        ft.attach_lora(hf, ftr.QLoRAConfig(quantization=quantization, gradient_checkpointing=True))
    base = hf.model.get_base_model()
    on = getattr(base, "is_activation_checkpointing", None)
    assert (on if on is not None else base.is_gradient_checkpointing) is True
