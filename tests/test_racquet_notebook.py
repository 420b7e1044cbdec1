"""notebooks/racquet.ipynb runs top to bottom under papermill with its default parameters."""

from __future__ import annotations

import pytest
from fixtures_notebooks import deviation_lines

pytestmark = pytest.mark.slow


def test_racquet_notebook_defaults(notebook_runs):
    run = notebook_runs.get("racquet")
    res = run.results

    cmp = res["paper_vs_ours"]
    assert cmp and {r["row"] for r in cmp} >= {"GENERAL", "BIAS"}
    if res["data_stats"]["general"]["rows"] == 500:  # statistics ran on the real release
        ok = {(r["row"], r["column"]): r["match"] for r in cmp}
        assert ok[("GENERAL", "unique images")] and ok[("GENERAL", "question length mean")]
        assert ok[("BIAS", "pairs")] and ok[("RACQUET", "pairs")]
    assert res["audit"]["mismatches"] == len(res["audit_mismatches"]) >= 3

    n_resp = sum(v["size"] for k, v in res["responses"].items())
    judged = res["judge_parse"]
    assert judged["n"] == n_resp and judged["parsed"] + judged["unparsed"] == n_resp
    shares = res["class_shares"]
    for setting in ("direct", "clarify", "cot", "sampling", "control"):
        rows = [r for r in shares if r["setting"] == setting]
        assert rows and sum(r["share"] for r in rows) == pytest.approx(100.0)
    assert any("quantization" in d for d in deviation_lines(res))
    assert any("grounder" in d for d in res["table1_deviations"])
    assert res["bias_annotation_progress"][1] == 16
    coco = res["control_vs_paper"]["20 COCO images"]  # §5's control on the (stand-in) crops, beside the text
    assert {r["row"] for r in coco} >= {"GPT-4o", "Molmo 7B-D", "LLaVA-34B"}
    assert any(r.get("ours share") is not None for r in coco) and res["control_vs_paper"]["45 BIAS images"]
    assert res["fig14_annotation_progress"][1] == 20  # Fig. 14: five gender questions on each of 4 stand-in crops
    assert {r["aggregation"] for r in res["table2_aggregations"]} == {"pooled", "per_item_mean", "majority",
                                                                      "any_explicit"}
    t1 = res["table1"][0]
    # every valid response with candidate boxes is grounded (control answers are on BIAS images: no boxes)
    assert t1["responses"] == sum(v["sum"] for k, v in res["responses"].items() if k != "control")
    assert sum(res["table1_status"].values()) == t1["responses"]
    assert any(d.startswith("samples per item: paper 10; here 2 (offline profile)") for d in deviation_lines(res))
    for name in ("fig3-4-class-shares-pipeline", "fig8-class-shares-by-subject"):  # the stand-in's answers: demos
        assert (run.figures / "demo" / f"{name}.png").is_file()
        assert not (run.figures / f"{name}.png").exists()
    assert (run.work / "racquet-bias-labels.csv").exists() is False  # nothing labelled, nothing written
