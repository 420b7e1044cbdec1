"""The MUCAR notebook runs top to bottom under papermill with its default parameters."""

from __future__ import annotations

import pytest
from fixtures_notebooks import deviation_lines


@pytest.mark.slow
def test_mucar_notebook_defaults(notebook_runs):
    from vlamb_nb.notebook import shared_data_dir

    run = notebook_runs.get("mucar")
    res = run.results
    assert res["audit"]["mismatches"] > 0
    kinds = {m["kind"] for m in res["audit_mismatches"]}
    assert {"sum", "impossible", "duplicate"} <= kinds
    if shared_data_dir() is not None and (shared_data_dir() / "mucar").is_dir():
        assert res["data_stats"]["queries"] == 1278
        assert "release" in kinds
    cols = {r["column"] for r in res["paper_vs_ours"]}
    assert "Overall Acc_p" in cols and all(r["paper"] is not None for r in res["paper_vs_ours"])
    assert any("quantization" in d for d in deviation_lines(res))
    assert {r["setting"] for r in res["settings"]} >= {"full", "q_i", "c_q"}
    assert {r["scorer"] for r in res["scorers"]} == {"rule parser (the answer's option letter)"}  # no judge given
    ablations = res["ablations_vs_paper"]  # beside Table 3, Table 12 and the values §5.1 gives for Fig. 4
    assert {r["setting"] for r in ablations} >= {"q_i", "c_q", "full_zh", "full_ms"}
    assert {r["table"] for r in ablations} == {"Table 3", "Table 12", "Fig. 4 (text)"}
    const = next(s for s in res["failure_summaries"] if s["label"] == "constant-A")
    assert const["image_insensitive_groups"] == const["groups_with_distinct_golds"] > 0
    assert any(d.startswith("limit: paper all queries; here 8 (offline profile)") for d in deviation_lines(res))
    assert (run.figures / "fig3-category-language-distribution.png").is_file()
    for name in ("fig4-input-and-prompt-language-ablations", "image-insensitive-failure"):  # the stand-in's answers
        assert not (run.figures / f"{name}.png").exists()
        assert (run.figures / "demo" / f"{name}.png").is_file()
