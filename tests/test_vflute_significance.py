"""V-FLUTE's five paired-bootstrap comparisons (§4.3, §5.4, App. J) run on the runs at hand through the real path:
two settings of one scripted model on a generated sample, each comparison beside the paper's p, those whose systems
are not at hand or not released said so."""

from __future__ import annotations

import numpy as np
import pytest
from fixtures_vflute import oracle

from vlamb_nb import get_benchmark
from vlamb_nb.benchmarks.vflute import report
from vlamb_nb.benchmarks.vflute.score import PAPER_COMPARISONS
from vlamb_nb.errors import DataError
from vlamb_nb.models import ScriptedModel


def f1_score(*args, **kwargs):
    """scikit-learn's F1, the reference (imported where a test compares with it: collecting this file does not
    import scikit-learn)."""
    from sklearn.metrics import f1_score as reference

    return reference(*args, **kwargs)


BENCH = get_benchmark("vflute")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    items = BENCH.load(BENCH.make_sample(tmp_path_factory.mktemp("vflute_sig"), n=60, seed=1))
    right, wrong = oracle(items), oracle(items, wrong=True)
    coin = iter(np.random.default_rng(0).uniform(size=10_000) < 0.5)

    def half(req):  # without the image: right about half the time
        return right(req) if next(coin) else wrong(req)

    return items, {
        "zero_shot": BENCH.evaluate(ScriptedModel(right), items, "zero_shot", progress=False, scorer="none"),
        "hypothesis_only": BENCH.evaluate(ScriptedModel(half), items, "hypothesis_only", progress=False,
                                          scorer="none")}


def test_the_five_comparisons_run_on_the_runs_at_hand_beside_the_papers_p(runs):
    items, at_hand = runs
    table = report.paper_comparisons(at_hand, {"LLaVA-7B → VF": "zero_shot", "LLaVA-7B → VF − Image": "hypothesis_only"},
                                     n_resamples=2000, seed=0)
    assert list(table["paper p"]) == [c["paper_p"] for c in PAPER_COMPARISONS]  # all five, in the paper's order
    ran = table[table["status"] == "run"].iloc[0]
    assert (ran["paper A"], ran["ours A"], ran["ours B"], ran["paper p"]) == (
        "LLaVA-7B → VF", "zero_shot", "hypothesis_only", "< 0.002")
    a, b = (at_hand[k].set_index("id").loc[items["id"]] for k in ("zero_shot", "hypothesis_only"))
    want = f1_score(a["label_true"], a["label_pred_filled"], average="macro") - f1_score(
        b["label_true"], b["label_pred_filled"], average="macro")
    assert ran["F1@0 A - B"] == pytest.approx(100 * want, abs=0.01) and ran["n"] == 60
    assert ran["ci_low"] > 0 and ran["p"] < 0.01  # the image's contribution, as VF vs -Image
    status = dict(zip(table["paper A"] + " vs " + table["paper B"], table["status"], strict=True))
    assert status["Human annotator 1 vs LLaVA-7B → eViL + VF"].startswith("not derivable: the annotators' labels")
    assert status["LLaVA-7B → eViL + VF vs GPT-4 5-shot"] == ("not run: no run stands for LLaVA-7B → eViL + VF and "
                                                            "GPT-4 5-shot")
    assert status["multi-task fine-tuning vs label-only fine-tuning"].startswith("not run")


def test_a_run_named_as_the_papers_system_stands_for_it_and_other_gold_labels_are_refused(runs):
    _, at_hand = runs
    named = {"multi-task fine-tuning": at_hand["zero_shot"], "label-only fine-tuning": at_hand["zero_shot"]}
    row = report.paper_comparisons(named, n_resamples=200).iloc[-1]
    assert row["status"] == "run" and row["F1@0 A - B"] == 0 and row["p"] == 1.0
    bad = at_hand["hypothesis_only"].assign(label_true=1 - at_hand["hypothesis_only"]["label_true"])
    with pytest.raises(DataError, match="other gold labels"):
        report.paper_comparisons({"LLaVA-7B → VF": at_hand["zero_shot"], "LLaVA-7B → VF − Image": bad},
                                 n_resamples=50)
