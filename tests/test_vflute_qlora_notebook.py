"""The QLoRA notebook runs under papermill with default parameters (offline) and records its key results."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


def test_notebook_defaults(notebook_runs):
    pytest.importorskip("peft")
    run = notebook_runs.get("vflute_qlora")
    res = run.results
    assert res["data_source"].startswith("generated sample") and res["n_train"] == 8
    summary = res["train_summary"]
    assert summary["steps"] == 6 and summary["loss_fell"] is True
    assert res["losses"][-1] < res["losses"][0]
    assert res["reload_check"]["max_abs_logit_diff"] < 1e-5 and res["reload_check"]["same_text"]
    assert res["reload_check"]["same_identity"] is True
    names = {r["name"] for r in res["paper_recipe"]}
    assert {"lora_r", "lora_alpha", "learning_rate", "warmup_ratio", "lr_scheduler", "epochs"} <= names
    whats = {d["what"] for d in res["deviations"]}
    # one line per meaning: the notebook's "learning rate" and the recipe's "learning_rate" are one deviation
    assert {"fine-tuning precision", "learning rate", "training length", "decoding"} <= whats
    assert "learning_rate" not in whats and len(whats) == len(res["deviations"])
    row = res["ours_table4"][0]
    assert 0 <= row["F1@0"] <= 100
    assert [r["column"] for r in res["paper_vs_ours"]] == ["F1@0", "F1@53", "F1@60"]
    # the adapter's numbers carry its own name and are never matched with the paper's LLaVA-7B → VF
    assert all(r["match"] is None and r["model"].startswith("tiny:qwen2_5_vl+adapter@") for r in res["paper_vs_ours"])
    assert all(r["row"] == "LLaVA-7B → VF" for r in res["paper_vs_ours"])
    assert res["training_finding"]["holds"] is True and res["reload_finding"]["holds"] is True
    assert "measure nothing" in res["adapter_finding"]["text"]
    assert not [d for d in res["deviations"] if d["paper"] == d["ours"].split(" ")[0]]  # no "paper paper"
    assert (run.figures / "demo" / "loss_curve.png").is_file()
    assert {"learning rate", "batch size", "max_new_tokens", "num_beams"} <= whats  # offline profile values
    assert (run.work / "adapter" / "adapter_model.safetensors").is_file()
    [app_j] = res["app_j_vs_paper"]  # App. J: the label-only adapter against the multi-task one, beside p < 0.1
    assert app_j["status"] == "run" and app_j["paper p"] == "< 0.1" and 0 <= app_j["p"] <= 1
    assert (run.work / "label_only" / "adapter" / "adapter_model.safetensors").is_file()
    evil = res["evil_stages_vs_paper"]  # Table 4's e-ViL rows, on a generated e-SNLI-VE offline
    assert {r["row"] for r in evil} == {"LLaVA-7B → eViL", "LLaVA-7B → eViL + VF"}
    assert all((run.work / stage / "adapter").is_dir() for stage in ("evil", "evil_vflute"))
