"""The V-FLUTE notebook runs under papermill with default parameters (offline) and records its key results."""

from __future__ import annotations

import json

import pytest

from vlamb_nb.notebook import collect_results

pytestmark = pytest.mark.slow


def _run(repo_root, tmp_path, monkeypatch, **params):
    papermill = pytest.importorskip("papermill")
    monkeypatch.setenv("VLAMB_FIGURES_DIR", str(tmp_path / "figures"))
    out = tmp_path / "vflute.out.ipynb"
    papermill.execute_notebook(str(repo_root / "notebooks" / "vflute.ipynb"), str(out), kernel_name="python3",
                               parameters=params, cwd=str(tmp_path), progress_bar=False)
    return collect_results(json.loads(out.read_text()))


def test_notebook_defaults(repo_root, tmp_path, monkeypatch):
    res = _run(repo_root, tmp_path, monkeypatch, n_resamples=200)
    assert res["data_source"].startswith("generated sample")
    assert res["data_stats"]["n"] == 16
    assert res["audit"]["checked"] > 20 and res["audit"]["mismatches"] >= 1
    assert res["explanation_scorer"]["substitute"] is True
    whats = {d["what"] for d in res["deviations"]}
    assert {"quantization", "explanation score", "decoding"} <= whats
    row = res["ours_table4"][0]
    assert 0 <= row["F1@0"] <= 100 and row["F1@60"] <= row["F1@0"]
    for name in ("fig8_9_lengths", "fig6_f1_drop", "fig11_f1_vs_threshold"):
        assert (tmp_path / "figures" / "vflute" / f"{name}.png").is_file()


def test_notebook_on_released_split(shared_data, repo_root, tmp_path, monkeypatch):
    res = _run(repo_root, tmp_path, monkeypatch, source=str(shared_data / "vflute"), n_resamples=200,
               paper_row="LLaVA-ZS-7B")
    assert res["data_stats"]["n"] == 723
    assert res["data_stats"]["by_dataset"]["memecap"] == 196
    assert res["audit"]["mismatches"] == 1
    assert [r["column"] for r in res["paper_vs_ours"]] == ["F1@0", "F1@53", "F1@60"]
