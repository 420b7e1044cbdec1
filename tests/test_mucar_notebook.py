"""The MUCAR notebook runs top to bottom under papermill with its default parameters."""

from __future__ import annotations

import json

import pytest


@pytest.mark.slow
def test_mucar_notebook_defaults(repo_root, tmp_path, monkeypatch):
    papermill = pytest.importorskip("papermill")
    from vlamb_nb.notebook import collect_results, shared_data_dir

    monkeypatch.setenv("VLAMB_FIGURES_DIR", str(tmp_path))
    out = tmp_path / "mucar.ipynb"
    papermill.execute_notebook(str(repo_root / "notebooks" / "mucar.ipynb"), str(out), kernel_name="python3",
                               cwd=str(tmp_path), progress_bar=False)
    res = collect_results(json.loads(out.read_text(encoding="utf-8")))
    assert res["audit"]["mismatches"] > 0
    kinds = {m["kind"] for m in res["audit_mismatches"]}
    assert {"sum", "impossible", "duplicate"} <= kinds
    if shared_data_dir() is not None and (shared_data_dir() / "mucar").is_dir():
        assert res["data_stats"]["queries"] == 1278
        assert "release" in kinds
    cols = {r["column"] for r in res["paper_vs_ours"]}
    assert "Overall Acc_p" in cols and all(r["paper"] is not None for r in res["paper_vs_ours"])
    assert any("quantization" in d for d in res["deviations"])
    assert {r["setting"] for r in res["settings"]} >= {"full", "q_i", "c_q"}
    const = next(s for s in res["failure_summaries"] if s["label"] == "constant-A")
    assert const["image_insensitive_groups"] == const["groups_with_distinct_golds"] > 0
    for name in ("fig3-category-language-distribution", "fig4-input-and-prompt-language-ablations",
                 "image-insensitive-failure"):
        assert (tmp_path / "mucar" / f"{name}.png").is_file()
