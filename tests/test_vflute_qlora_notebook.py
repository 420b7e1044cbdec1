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
    assert {"fine-tuning precision", "learning_rate", "training length", "decoding"} <= whats
    row = res["ours_table4"][0]
    assert 0 <= row["F1@0"] <= 100
    assert [r["column"] for r in res["paper_vs_ours"]] == ["F1@0", "F1@53", "F1@60"]
    assert (run.figures / "demo" / "loss_curve.png").is_file()
    assert {"learning rate", "batch size", "max_new_tokens", "num_beams"} <= whats  # offline profile values
    assert (run.work / "adapter" / "adapter_model.safetensors").is_file()
    [app_j] = res["app_j_vs_paper"]  # App. J: the label-only adapter against the multi-task one, beside p < 0.1
    assert app_j["status"] == "run" and app_j["paper p"] == "< 0.1" and 0 <= app_j["p"] <= 1
    assert (run.work / "label_only" / "adapter" / "adapter_model.safetensors").is_file()
    evil = res["evil_stages_vs_paper"]  # Table 4's e-ViL rows, on a generated e-SNLI-VE offline
    assert {r["row"] for r in evil} == {"LLaVA-7B → eViL", "LLaVA-7B → eViL + VF"}
    assert all((run.work / stage / "adapter").is_dir() for stage in ("evil", "evil_vflute"))
