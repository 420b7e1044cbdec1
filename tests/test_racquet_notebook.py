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
        assert res["dataset_finding"]["holds"] is False and "13 of 15" in res["dataset_finding"]["text"]
    else:  # a generated sample's statistics are shown, never matched, and the section says what it needs
        assert all(r["match"] is None for r in cmp)
        assert res["dataset_finding"]["holds"] is None and "data fetch racquet" in res["dataset_finding"]["text"]
    assert res["audit"]["mismatches"] == len(res["audit_mismatches"]) >= 3

    n_resp = sum(v["size"] for k, v in res["responses"].items())
    judged = res["judge_parse"]
    # the scripted stand-in's verdicts: every one parsed by the paper's last-CLASS-X rule
    assert judged["n"] == n_resp and judged["parsed"] == n_resp and judged["unparsed"] == 0
    shares = res["class_shares"]
    for setting in ("direct", "clarify", "cot", "sampling", "control"):
        rows = [r for r in shares if r["setting"] == setting]
        assert rows and sum(r["share"] for r in rows) == pytest.approx(100.0)
    direct = {r["label"]: r for r in shares if r["setting"] == "direct"}
    assert 0 < direct["A"]["share"] < 100 and 0 < direct["C"]["share"] < 100
    assert direct["A"]["ci_low"] < direct["A"]["share"] < direct["A"]["ci_high"]
    assert res["scripted_recovered"]["holds"] is True  # each share within its interval of the chance scripted
    # the card's numbers are the table's, with the same interval
    card = {r["metric"]: r for r in res["headline"]}
    assert card["Explicit share"]["value"] == pytest.approx(direct["A"]["share"])
    assert card["Explicit share"]["ci_low"] == pytest.approx(direct["A"]["ci_low"])
    assert card["Stereotypical share"]["value"] > 0
    assert {(p["a"], p["b"]) for p in res["paired_tests"]} == {("clarify", "direct"), ("cot", "direct")}
    assert "As the paper states" in res["setting_findings"]["text"]
    assert res["cot_gap"]["holds"] is True and res["judge_finding"]["holds"] is True
    assert "scripted stand-in (not a person)" in res["bias_labels"]["text"]
    assert "tiny:qwen2_5_vl" in res["model_path"]["text"]
    for key in ("labels_file_finding", "kappa_finding", "table2_finding", "table1_vs_paper_finding"):
        assert res[key]["holds"] is None and res[key]["shown"] is False, key
    lines = deviation_lines(res)
    assert any("quantization" in d for d in lines)
    assert len({d["what"] for d in res["deviations"]}) == len(res["deviations"])  # one line per deviation
    assert any("scripted stand-in: not a model" in d for d in lines)
    assert any("grounder" in d for d in res["table1_deviations"])
    assert res["bias_annotation_progress"][1] == 16
    coco = res["control_vs_paper"]["20 COCO images"]  # §5's control on the (stand-in) crops, beside the text
    assert {r["row"] for r in coco} >= {"GPT-4o", "Molmo 7B-D", "LLaVA-34B"}
    assert any(r.get("ours share") is not None for r in coco) and res["control_vs_paper"]["45 BIAS images"]
    assert res["fig14_annotation_progress"][1] == 20  # Fig. 14: five gender questions on each of 4 stand-in crops
    assert {r["aggregation"] for r in res["table2_aggregations"]} == {"pooled", "per_item_mean", "majority",
                                                                      "any_explicit"}
    t1 = res["table1"][0]
    # the paper's population: every Implicit / High Risk answer with candidate boxes (control answers have none)
    single = sum(r["count"] for r in shares if r["label"] in ("B", "C") and r["setting"] != "control")
    assert t1["responses"] == single
    assert sum(res["table1_status"].values()) == t1["responses"]
    assert any(d.startswith("samples per item: paper 10; here 2 (offline profile)") for d in lines)
    for name in ("fig3-4-class-shares-pipeline", "fig8-class-shares-by-subject"):  # the stand-in's answers: demos
        assert (run.figures / "demo" / f"{name}.png").is_file()
        assert not (run.figures / f"{name}.png").exists()
    assert (run.work / "racquet-bias-labels.csv").exists() is False  # nothing labelled, nothing written
