"""Table 4's e-ViL rows and App. J's ablation as recipe options: e-SNLI-VE read in the e-ViL release's format with
the checks every release gets, the two stages' training data (e-ViL alone, then e-ViL + V-FLUTE shuffled), the
label-only target, and the notebook's refusal of a generated sample outside the offline profile; one stage trained
on the tiny stand-in through the real training loop."""

from __future__ import annotations

import pandas as pd
import pytest

from vlamb_nb.benchmarks.vflute import data as vd
from vlamb_nb.benchmarks.vflute import finetune_data as ftd
from vlamb_nb.benchmarks.vflute import finetune_recipe as ftr
from vlamb_nb.benchmarks.vflute.benchmark import BENCHMARK
from vlamb_nb.benchmarks.vflute.prompts import PROMPTS
from vlamb_nb.errors import DataError, SettingError

HEADER = ",pairID,Flickr30kID,hypothesis,gold_label,explanation\n"


@pytest.fixture(scope="module")
def esnlive(tmp_path_factory):
    return vd.write_esnlive_sample(tmp_path_factory.mktemp("esnlive"), n=12, seed=2)


@pytest.fixture(scope="module")
def vflute_train(tmp_path_factory):
    return BENCHMARK.load(BENCHMARK.make_sample(tmp_path_factory.mktemp("vf"), n=4, seed=0), split="train")


def test_esnlive_is_read_in_its_released_layout_without_its_neutral_pairs(esnlive):
    raw = pd.read_csv(esnlive / "esnlive_train.csv")
    assert list(raw.columns) == ["Unnamed: 0", *vd.ESNLIVE_COLUMNS]  # the release's unnamed index column first
    items = vd.load_esnlive(esnlive, allow_mismatch=True)
    kept = raw[raw["gold_label"] != "neutral"]
    assert list(items["id"]) == list(kept["pairID"]) and items.attrs["left_out"] == {"neutral": 4}
    assert set(items["label"]) == {"entailment", "contradiction"} and (items["label_true"] ==
                                                                      (items["label"] == "entailment")).all()
    assert list(items["claim"]) == list(kept["hypothesis"]) and set(items["prompt"]) <= set(PROMPTS)
    assert items.attrs["count_mismatch"] == {"split": "train", "paper": 275_815, "ours": 8}
    assert vd.item_image(items.iloc[0]).endswith(f"flickr30k_images/{kept['Flickr30kID'].iloc[0]}")
    dev = vd.load_esnlive(esnlive, split="dev", allow_mismatch=True)
    assert dev["split"].eq("validation").all() and len(dev) == 3  # 4 dev rows, one neutral


def test_the_paper_counts_are_required_unless_a_mismatch_is_allowed(esnlive):
    with pytest.raises(DataError, match="the paper trained on 275,815") as e:
        vd.load_esnlive(esnlive)
    assert str(esnlive / "esnlive_train.csv") in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(DataError, match="neutral pair cannot be a V-FLUTE target"):
        vd.load_esnlive(esnlive, drop_neutral=False)  # the two-way task has no neutral target


@pytest.mark.parametrize("body,where", [
    ("0,1.jpg#0r1e,1.jpg,A man.,entailment,\n", ("row 1", "field 'explanation'")),
    ("0,1.jpg#0r1e,1.jpg,A man.,yes,Because.\n", ("row 1", "field 'gold_label'")),
    ("0,1.jpg#0r1e,1.jpg,A man.,entailment,Because.\n1,1.jpg#0r1e,1.jpg,A dog.,contradiction,No.\n",
     ("duplicate id",)),
])
def test_bad_rows_name_the_file_row_and_field(tmp_path, body, where):
    (tmp_path / "esnlive_train.csv").write_text(HEADER + body, encoding="utf-8")
    with pytest.raises(DataError) as e:
        vd.load_esnlive(tmp_path, allow_mismatch=True)
    msg = str(e.value)
    assert "esnlive_train.csv" in msg and all(w in msg for w in where) and "\n" not in msg


def test_a_byte_order_mark_is_read_and_a_file_of_another_layout_is_refused(tmp_path):
    (tmp_path / "esnlive_train.csv").write_text("\ufeff" + HEADER + "0,1.jpg#0r1e,1.jpg,A man.,entailment,Yes.\n",
                                                encoding="utf-8")
    assert len(vd.load_esnlive(tmp_path, allow_mismatch=True)) == 1
    (tmp_path / "esnlive_train.csv").write_text("id,claim,label\n1,x,entailment\n", encoding="utf-8")
    with pytest.raises(DataError, match="no pairID, Flickr30kID"):
        vd.load_esnlive(tmp_path)
    with pytest.raises(DataError, match="expected esnlive_dev.csv"):
        vd.load_esnlive(tmp_path, split="validation")


def test_the_two_stages_train_on_e_vil_then_on_both_shuffled(esnlive, vflute_train):
    evil = vd.load_esnlive(esnlive, allow_mismatch=True)
    assert ftd.stage_items("evil", vflute_train, evil).equals(evil.reset_index(drop=True))
    both = ftd.stage_items("evil_vflute", vflute_train, evil)
    assert len(both) == len(evil) + len(vflute_train) and set(both["id"]) == set(evil["id"]) | set(vflute_train["id"])
    assert list(both["id"]) == list(pd.concat([evil, vflute_train], ignore_index=True)
                                    .sample(frac=1, random_state=42)["id"])  # the official shuffle
    assert list(both["id"]) != list(evil["id"]) + list(vflute_train["id"])
    with pytest.raises(DataError, match="trains on e-SNLI-VE \\+ V-FLUTE: no e-SNLI-VE"):
        ftd.stage_items("evil_vflute", vflute_train, None)
    examples = ftd.training_examples(both, setting="evil_vflute")
    assert len(examples) == len(both) and all(not e.instruction.startswith("<image>") for e in examples)
    assert {ftr.TABLE4_ROWS[s] for s in ftr.EVIL_STAGES} == {"LLaVA-7B → eViL", "LLaVA-7B → eViL + VF"}
    assert ftr.QLoRAConfig.paper("evil").epochs == 1 and ftr.QLoRAConfig.paper("evil_vflute").epochs == 2
    assert "epochs" not in {d.what for d in ftr.deviations(ftr.QLoRAConfig.paper("evil_vflute"))}


def test_app_j_label_only_is_a_target_option_of_the_recipe(vflute_train):
    multi = ftd.training_examples(vflute_train)
    only = ftd.training_examples(vflute_train, target="label_only")
    label = vflute_train.loc[0, "label"]
    assert multi[0].target.endswith(f"\nLABEL: {label}") and len(multi[0].target) > 40
    assert only[0].target == f"LABEL: {label}" and only[0].instruction == multi[0].instruction
    cfg = ftr.QLoRAConfig.paper(target="label_only")
    assert "label-only target" in {d.what for d in ftr.deviations(cfg)}
    assert "label-only target" not in {d.what for d in ftr.deviations(ftr.QLoRAConfig.paper())}
    with pytest.raises(SettingError, match="unknown target"):
        ftr.QLoRAConfig(target="explanation_only")


def test_a_generated_sample_is_refused_outside_the_offline_profile():
    with pytest.raises(SettingError, match="a generated sample belongs to the offline profile") as e:
        ftd.demo_splits(None, profile="paper")
    assert "\n" not in str(e.value)
    items, why = ftd.esnlive_items(None, profile="paper")
    assert items is None and why.startswith("not run")


@pytest.mark.slow
def test_the_e_vil_stage_trains_on_the_tiny_stand_in_through_the_real_loop(esnlive, vflute_train, tmp_path):
    pytest.importorskip("peft")
    from vlamb_nb.benchmarks.vflute import finetune as ft

    evil = vd.load_esnlive(esnlive, allow_mismatch=True)
    cfg = ftr.QLoRAConfig.paper("evil_vflute", learning_rate=2e-3, projector_lr=2e-3, batch_size=2, grad_accum=1,
                                max_steps=2, target="label_only")
    res = ft.train("tiny:qwen2_5_vl", ftd.stage_items("evil_vflute", vflute_train, evil), tmp_path, cfg,
                   progress=False)
    assert len(res.losses) == 2 and (res.adapter_dir / "adapter_model.safetensors").is_file()
    assert res.config.setting == "evil_vflute" and res.config.target == "label_only"
