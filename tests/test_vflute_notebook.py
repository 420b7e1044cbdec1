"""The V-FLUTE notebook runs under papermill with default parameters (offline) and records its key results."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture
def run(notebook_runs):
    return lambda **params: notebook_runs.get("vflute", **params)


def test_notebook_defaults(run):
    from vlamb_nb.paths import shared_data_dir

    executed = run()
    res = executed.results
    shared = shared_data_dir()
    on_release = shared is not None and (shared / "vflute" / "vflute-v2-test.json").is_file()
    if on_release:  # statistics on the release
        assert res["data_source"].startswith("released test split") and res["data_stats"]["n"] == 723
        assert all(r["match"] for r in res["random_baseline"])  # 49.82 from the release's label mix
    else:  # the statistics are the generated sample's own, and its random baseline is never a match
        assert res["data_source"].startswith("generated sample") and res["data_stats"]["n"] == 60
        assert all(r["match"] is None for r in res["random_baseline"])
        assert res["data_finding"]["holds"] is None and "vlamb-nb data fetch vflute" in res["data_finding"]["text"]
    assert res["audit"]["checked"] > 20 and res["audit"]["mismatches"] >= 1
    assert res["explanation_scorer"]["substitute"] is True
    whats = [d["what"] for d in res["deviations"]]
    assert {"model", "quantization", "explanation score", "max_new_tokens", "num_beams"} <= set(whats)
    assert len(whats) == len(set(whats)) and "explanation scorer" not in whats  # one line per meaning
    assert not [d for d in res["deviations"] if d["paper"] == d["ours"].split(" ")[0]]  # no "paper paper"
    beams = next(d for d in res["deviations"] if d["what"] == "num_beams")
    assert beams["paper"] == "3" and beams["ours"] == "1 (offline profile)"
    # the tiny checkpoint shows its path; the scripted stand-in answers every setting, with non-zero F1s that
    # recover the chances it was scripted with, and paired tests that hold the paper's claims
    assert res["model_path"]["n"] == 3 and res["run"]["model"].startswith("scripted stand-in")
    assert res["run"]["settings"] == ["zero_shot", "hypothesis_only", "scene_graph", "few_shot"]
    assert all(r["value"] > 0 for r in res["f1_by_setting"])
    assert res["scripted_recovered"]["holds"] is True and res["scripted_explanations"]["holds"] is True
    assert res["setting_findings"]["holds"] is True
    row = res["ours_table4"][0]
    assert 0 < row["F1@60"] < row["F1@0"] < 100
    assert res["paper_vs_ours"] == [] and res["paper_vs_ours_finding"]["holds"] is None
    figs = executed.figures
    assert (figs / ("" if on_release else "demo") / "fig8_9_lengths.png").is_file()  # a sample's: never committed
    for name in ("fig6_f1_drop", "fig11_f1_vs_threshold"):  # drawn from the stand-in's answers: demos
        assert (figs / "demo" / f"{name}.png").is_file() and not (figs / f"{name}.png").exists()
    assert res["adequacy"] is None and not list(figs.rglob("adequacy_pr_curve.png"))
    assert any(r["item"].startswith("Figs. 6 and 11") for r in res["not_derivable"])
    paired = res["paired_tests_vs_paper"]  # the paper's five paired-bootstrap tests, on the runs at hand
    assert [r["paper p"] for r in paired] == ["< 0.03", "< 0.002", "< 0.05", "< 0.07", "< 0.1"]
    ran = [r for r in paired if r["status"] == "run"]
    assert len(ran) == 1 and ran[0]["ours B"] == f"{res['run']['model']} · hypothesis_only" and 0 <= ran[0]["p"] <= 1


def test_notebook_with_adequacy_labels(tmp_path, run):
    import pandas as pd
    from sklearn.metrics import cohen_kappa_score

    from vlamb_nb import get_benchmark

    bench = get_benchmark("vflute")
    ids = bench.load(bench.make_sample(tmp_path / "sample", n=8, seed=0))["id"].head(8).tolist()  # the demo run
    first = [1, 0, 1, 0, 1, 0, 1, 0]
    second = [1, 0, 1, 0, 1, 1, 0, 0]  # disagrees on two items
    pd.DataFrame({"id": ids, "adequate": first, "adequate_2": second}).to_csv(tmp_path / "labels.csv", index=False)
    executed = run(n_resamples=100, labels=str(tmp_path / "labels.csv"))
    res = executed.results
    ade = res["adequacy"]
    assert ade["n_labelled"] == 8 and ade["n_used"] == 6 and ade["annotators"] == 2
    assert ade["cohen_kappa"]["estimate"] == pytest.approx(cohen_kappa_score(first, second))
    assert 0 <= ade["pr_auc"] <= 1 and ade["scorer_substitute"] is True
    paper = {r["column"]: r["paper"] for r in res["adequacy_vs_paper"]}
    assert paper["PR-AUC"] == 0.79 and paper["Cohen kappa"] == 0.47
    assert (executed.figures / "demo" / "adequacy_pr_curve.png").is_file()


def test_notebook_on_released_split(shared_data, tmp_path, run):
    import pandas as pd

    from vlamb_nb import get_benchmark

    items = get_benchmark("vflute").load(shared_data / "vflute")
    outputs = [f"{e}\nLABEL: entailment" for e in items["explanation"]]  # an always-entailment run
    pd.DataFrame({"id": items["id"], "output": outputs}).to_csv(tmp_path / "entail.csv", index=False)
    res = run(source=str(shared_data / "vflute"), n_resamples=200,
              paper_row="LLaVA-ZS-7B", predictions={"always entailment": str(tmp_path / "entail.csv")}).results
    assert res["figure_runs"][-1] == "always entailment" and len(res["figure_runs"]) == 5
    assert res["figure_runs"][0].startswith("scripted stand-in") and res["figure_runs"][0].endswith("· zero_shot")
    assert res["data_stats"]["n"] == 723
    assert res["data_stats"]["by_dataset"]["memecap"] == 196
    assert res["audit"]["mismatches"] == 1
    assert res["data_finding"]["holds"] is True
    # the row asked for is shown beside the stand-in's numbers, never as a match
    assert [r["column"] for r in res["paper_vs_ours"]] == ["F1@0", "F1@53", "F1@60"]
    assert all(r["match"] is None and r["model"].startswith("scripted stand-in") for r in res["paper_vs_ours"])
