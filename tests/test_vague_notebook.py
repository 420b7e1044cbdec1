"""The VAGUE notebook runs top to bottom offline with its default parameters (papermill)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


def test_vague_notebook_defaults(notebook_runs):
    run = notebook_runs.get("vague")
    results = run.results

    # the audit surfaces the paper's known inconsistencies
    assert results["audit_findings"]["mismatches"] == 15
    bad = {(m["table"], m["row"], m["column"]) for m in results["audit_mismatches"]}
    assert ("Table 1", "Ovis2 (16B)", "VCR VLM gain") in bad
    assert ("Table J5", "InternVL-3 (38B) | SM", "Acc") in bad
    assert ("Table 2", "Human", "Acc") in bad
    # paper vs recomputed-from-counts: every printed accuracy inside its Wilson interval, mismatches flagged
    cmp = results["paper_vs_recomputed"]
    assert len(cmp) == 144 and all(r["paper_in_ci"] for r in cmp)
    assert all(r["flag"] for r in cmp if not r["match"])
    f4 = {(r["model"], r["type"]): r for r in results["fig4_counts"]}
    assert f4[("GPT-4o", "SM")]["correct"] == 1155
    # the pipeline ran every setting on the generated sample with the tiny 4-bit model
    assert results["run"]["settings"] and len(results["run"]["settings"]) == 12
    rows = results["ours_breakdown"]
    assert {r["setting"] for r in rows} == set(results["run"]["settings"])
    mcq_all = [r for r in rows if r["subset"] == "All" and not r["setting"].endswith("_ff")]
    assert all(r["N"] == results["run"]["items"] for r in mcq_all)
    assert all(r["valid"] + 0 <= r["N"] for r in mcq_all)
    what = {d["what"] for d in results["deviations"]}
    assert {"quantization", "BERTScore model", "decoding", "model", "max_new_tokens", "bertscore"} <= what
    short = next(d for d in results["deviations"] if d["what"] == "max_new_tokens")
    assert short["paper"].startswith("16 MCQ") and "offline profile" in short["ours"]
    assert {(p["a"], p["b"]) for p in results["paired_tests"]} >= {("vlm", "lm"), ("vlm_cot", "vlm")}
    assert results["data"]["subset_counts"]["VCR"] >= 1
    from vlamb_nb.paths import shared_data_dir

    if shared_data_dir() is not None and (shared_data_dir() / "vague" / "ocr_test").is_dir():
        assert [r["person"] for r in results["table_b2_ocr"]] == ["person1", "person1", "person5"]
    assert (run.figures / "fig4_incorrect_choices.png").is_file()  # published counts
    # figures of a generated data sample are stamped and kept apart, never committed as the paper's
    sample = results["data"]["source"].startswith("generated")
    for name in ("figB1_top_verbs", "item_viewer"):
        where = run.figures / ("demo" if sample else "")
        assert (where / f"{name}.png").is_file()
        assert (run.figures / f"{name}.png").exists() is not sample
    # a figure of the stand-in's answers is a pipeline demo: kept apart, never a committed paper figure
    assert not (run.figures / "ours_accuracy.png").exists()
    assert (run.figures / "demo" / "ours_accuracy.png").is_file()
    # working files (stores, samples) live under the run folder, not in the system's temporary folder
    assert any(run.work.rglob("*.jsonl"))
