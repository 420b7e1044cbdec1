"""V-FLUTE's computed findings: each sentence follows the numbers beside it, so a perturbed input changes it (a
flipped difference reads "lower", a missing split gives the not-shown line), and a paper's row is set beside ours
only for the same model on the paper's data."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

from vlamb_nb import get_benchmark, reference
from vlamb_nb.benchmarks.vflute import report
from vlamb_nb.benchmarks.vflute.data import DATASETS

BENCH = get_benchmark("vflute")
TABLE3_TEST = {"vismet": 101, "irfl_metaphor_simile": 120, "irfl_idiom": 100, "muse": 106, "memecap": 196,
               "nycartoons": 100}


def _release_like(n_pos: int = 405, n_neg: int = 318) -> pd.DataFrame:
    """Items with the released split's label mix (what the random baseline reads)."""
    return pd.DataFrame({"label_true": [1] * n_pos + [0] * n_neg,
                         "dataset": (list(DATASETS) * (n_pos + n_neg))[: n_pos + n_neg]})


def _sample(frame: pd.DataFrame) -> pd.DataFrame:
    frame.attrs["data"] = {"kind": "sample", "n_items": len(frame), "n_loaded": len(frame)}
    return frame


def test_data_finding_holds_the_counts_against_table_3_or_says_what_is_missing():
    stats = {"n": 723, "by_dataset": dict(TABLE3_TEST)}
    same = report.data_finding(stats, "released test split (beside the checkout)")
    assert same.holds is True and same.text.startswith("6 of 6 dataset counts")
    off = report.data_finding({"n": 722, "by_dataset": {**TABLE3_TEST, "muse": 105}}, "given files")
    assert off.holds is False and "5 of 6" in off.text and "MuSE (105 here, 106 in Table 3)" in off.text
    missing = report.data_finding({"n": 60, "by_dataset": {}}, "generated sample (n=60, seed=0)")
    assert missing.holds is None and "vlamb-nb data fetch vflute" in missing.text


def test_audit_finding_names_each_cell_that_does_not_follow():
    rows = [{"paper": "vflute", "table": "Table 3", "row": r, "column": "Test", "published": 1, "recomputed": 1,
             "kind": "sum", "ok": True, "note": ""} for r in ("HAIVMet", "MuSE")]
    frame = reference.findings_frame(rows)
    assert report.audit_finding(frame).text.endswith("0 do not follow.")
    frame.loc[1, "ok"] = False
    one = report.audit_finding(frame)
    assert one.holds is False and "1 does not follow (Table 3 MuSE Test); it is listed below." in one.text


def test_the_random_baseline_is_matched_on_the_release_and_never_on_a_generated_sample():
    """On the release's label mix the plug-in expectation is the printed 49.82; on a generated sample of 16 the
    same formula gives 49.8 too, which must not be read as a reproduction: shown, never matched."""
    real = report.random_baseline_section(_release_like())
    assert real["comparison"]["match"].all() and real["finding"].holds is True
    assert "equal it within rounding" in real["finding"].text
    sample = report.random_baseline_section(_sample(_release_like(8, 8)))
    cmp = sample["comparison"]
    assert cmp["match"].isna().all() and cmp["flag"].str.startswith("not comparable: generated sample, n = 16").all()
    assert sample["finding"].holds is None and "not comparable: generated sample, n = 16" in sample["finding"].text


def _paired(diff: float, lo: float, hi: float) -> pd.DataFrame:
    rows = [{"a": a, "b": b, "metric": f"F1@{p}", "n": 60, "F1 a": 70.0, "F1 b": 50.0, "diff": diff,
             "ci_low": lo, "ci_high": hi, "p": 0.01, "test": "paired bootstrap", "only_a": 20, "only_b": 5}
            for a, b, p, _ in report.CLAIMS]
    return pd.DataFrame(rows)


def test_setting_findings_follow_the_sign_of_each_paired_difference():
    up = report.setting_findings(_paired(20.0, 5.0, 35.0), "m", list(BENCH.settings))
    assert up[0].holds is True and "zero_shot is higher than hypothesis_only" in up[0].text
    assert up[2].holds is False and "The paper states the opposite." in up[2].text  # F1@60 of scene graphs: lower
    down = report.setting_findings(_paired(-20.0, -35.0, -5.0), "m", list(BENCH.settings))
    assert down[0].holds is False and "zero_shot is lower than hypothesis_only" in down[0].text
    assert down[2].holds is True
    flat = report.setting_findings(_paired(3.0, -10.0, 16.0), "m", list(BENCH.settings))
    assert all(f.holds is None and "cannot tell" in f.text for f in flat)
    gone = report.setting_findings(_paired(20.0, 5.0, 35.0).iloc[:1], "m", ["zero_shot", "hypothesis_only"])
    assert gone[-1].holds is None and "few_shot did not run" in gone[-1].text


def _run(n: int = 20, *, scorer: dict | None = None) -> pd.DataFrame:
    gold = [i % 2 for i in range(n)]
    run = pd.DataFrame({"id": [f"x-{i}" for i in range(n)], "label_true": gold, "label_pred": gold,
                        "label_pred_filled": gold, "correct": [True] * n, "explanation_score": [0.9] * n,
                        "dataset": ["vismet"] * n, "model": ["m"] * n, "text": ["e\nLABEL: x"] * n})
    run.loc[: n // 4, ["label_pred", "label_pred_filled"]] = [[1 - g] * 2 for g in gold[: n // 4 + 1]]
    run.loc[: n // 4, "correct"] = False
    run.attrs["scorer"] = scorer or {"name": "paper", "substitute": False}
    return run


def test_paper_vs_ours_sets_a_row_beside_the_same_model_only():
    run = _run()
    real = SimpleNamespace(info=SimpleNamespace(model_id="llava-hf/llava-v1.6-mistral-7b-hf", backend=None))
    own = report.paper_vs_ours({"zero_shot": run, "scene_graph": run}, real)
    assert set(own["row"]) == {"LLaVA-ZS-7B", "LLaVA-ZS-7B + SG"} and own["match"].notna().all()
    assert (own["model"] == "llava-hf/llava-v1.6-mistral-7b-hf · zero_shot").sum() == 3
    assert report.paper_vs_ours_finding(own, real).text.startswith("0 of 6 comparable published cells")
    other = report.paper_vs_ours({"zero_shot": run}, "Qwen/Qwen2.5-VL-7B-Instruct", paper_row="LLaVA-ZS-7B")
    assert other["match"].isna().all() and other["flag"].str.startswith("not the same model").all()
    assert "not compared with the paper's LLaVA-ZS-7B" in report.paper_vs_ours_finding(other, "Qwen").text
    assert report.paper_vs_ours({"zero_shot": run}, "Qwen/Qwen2.5-VL-7B-Instruct").empty
    stand_in = report.paper_vs_ours({"zero_shot": _sample(run)}, "scripted stand-in (seed 0)",
                                    paper_row="LLaVA-7B → VF")
    assert stand_in["match"].isna().all() and stand_in["flag"].str.startswith("not comparable: generated").all()
    nothing = report.paper_vs_ours_finding(pd.DataFrame(), "scripted stand-in (seed 0)", data=_sample(run))
    assert nothing.holds is None and "not comparable: generated sample, n = 20" in nothing.text
    substitute = report.paper_vs_ours({"zero_shot": _run(scorer={"name": "minilm", "substitute": True})}, real)
    assert substitute["match"].notna().tolist() == [True, False, False]  # F1@53/60: not the paper's scorer
    assert "2 more shown but not compared" in report.paper_vs_ours_finding(substitute, real).text
    with pytest.raises(Exception, match="not a row"):
        report.paper_vs_ours({"zero_shot": run}, real, paper_row="LLaVA-99B")


def test_the_finetuned_row_is_the_same_model_only_on_the_papers_base():
    assert report.is_paper_base("llava-hf/llava-1.5-7b-hf") and not report.is_paper_base("tiny:qwen2_5_vl")
    run = _run()
    adapter = "llava-hf/llava-1.5-7b-hf+adapter@abc"
    same = report.paper_vs_ours({"zero_shot": run}, adapter, paper_row="LLaVA-7B → VF", same_model=True)
    assert same["match"].notna().all() and (same["model"] == f"{adapter} · zero_shot").all()
    other = report.paper_vs_ours({"zero_shot": run}, adapter, paper_row="LLaVA-7B → VF", same_model=False)
    assert other["match"].isna().all()


def test_drop_finding_names_the_run_that_loses_most():
    a, b = _run(), _run()
    b.loc[10:, "explanation_score"] = 0.3  # half its right labels lose their explanation at 0.6
    tables = report.run_tables(BENCH, {"a": a, "b": b})
    found = report.drop_finding(tables)
    assert "a 0.0%" in found.text and found.text.endswith("The largest drop overall is b's.")
    zero = _run()
    zero["correct"] = False
    zero["label_pred_filled"] = 1 - zero["label_true"]
    assert report.drop_finding(report.run_tables(BENCH, {"z": zero})).holds is None


def test_training_reload_and_adapter_findings_follow_their_numbers():
    fell = SimpleNamespace(losses=[8.2, 6.0], config=SimpleNamespace(learning_rate=2e-3))
    assert report.training_finding(fell).holds is True and "down by 2.20" in report.training_finding(fell).text
    rose = SimpleNamespace(losses=[6.0, 8.2], config=SimpleNamespace(learning_rate=2e-3))
    assert report.training_finding(rose).holds is False and "not down" in report.training_finding(rose).text
    check = {"max_abs_logit_diff": 0.0, "same_text": True, "model_id": "m+adapter@1", "same_identity": True}
    assert report.reload_finding(check).holds is True
    assert report.reload_finding({**check, "same_text": False}).holds is False
    assert "is not the same" not in report.reload_finding(check).text
    assert "not the same" in report.reload_finding({**check, "same_text": False}).text
    run = _run()
    run["error"] = None
    tiny = report.adapter_finding(run, "tiny:qwen2_5_vl+adapter@1")
    assert "measure nothing" in tiny.text and "read a label from 20 of 20" in tiny.text
    run.loc[:4, "label_pred"] = None
    real = report.adapter_finding(run, "llava-hf/llava-1.5-7b-hf+adapter@1")
    assert "measure nothing" not in real.text and "read a label from 15 of 20" in real.text


def test_scripted_explanations_finding_counts_what_the_scorer_rejected():
    from vlamb_nb.benchmarks.vflute.parse import POOR_EXPLANATIONS
    from vlamb_nb.models.base import Backend

    stand_in = SimpleNamespace(info=SimpleNamespace(backend=Backend.SCRIPTED, model_id="scripted stand-in (seed 0)"))
    run = _run()
    run.loc[15:, "text"] = POOR_EXPLANATIONS[0][1] + "\nLABEL: entailment"
    run.loc[15:, "explanation_score"] = 0.3
    ok = report.scripted_explanations_finding({"zero_shot": run}, stand_in)
    assert "5 of 5 poor explanations score at most 0.6" in ok.text
    run.loc[19, "explanation_score"] = 0.7
    off = report.scripted_explanations_finding({"zero_shot": run}, stand_in)
    assert "4 of 5 poor explanations" in off.text and off.holds is False
    assert report.scripted_explanations_finding({"zero_shot": run}, "Qwen/Qwen2.5-VL-7B-Instruct") is None
