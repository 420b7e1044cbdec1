"""MUCAR scored the paper's way where a judge is given (an LLM reads each answer; the rule parser offline), each
number naming its scorer, and the input and prompt-language ablations set beside Table 3, Table 12 and the values
§5.1 gives for Fig. 4; scripted stand-ins through the real run path."""

from __future__ import annotations

import pytest

from vlamb_nb import get_benchmark
from vlamb_nb.benchmarks.mucar import report
from vlamb_nb.errors import DataError
from vlamb_nb.models import ScriptedModel

B = get_benchmark("mucar")
ABLATIONS = ("full", "q_i", "c_i", "c_q", "full_zh", "full_ms")


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return B.load(B.make_sample(tmp_path_factory.mktemp("mucar")))


@pytest.fixture(scope="module")
def runs(sample):
    gold = dict(zip(sample["uid"], sample["gold"], strict=True))
    oracle = ScriptedModel(lambda r: f"Answer: {gold[r.meta['item_id']]}", model_id="oracle")
    return {s: B.evaluate(oracle, sample, s, progress=False) for s in ABLATIONS}


def test_without_a_judge_every_number_says_the_rule_parser_decided_it(runs):
    scored = report.score_with(runs)
    assert set(report.scorer_table(scored)["scorer"]) == {report.RULE_PARSER}
    cmp = report.paper_vs_ours(scored["full"], "Qwen2.5-VL-7B-Instruct", n_resamples=50)
    assert set(cmp["scorer"]) == {report.RULE_PARSER}


def test_a_judge_scores_every_answer_and_its_verdict_is_what_counts(runs, tmp_path):
    seen = []

    def verdict(req):  # a judge that finds every answer wrong, whatever the parser read
        seen.append(req)
        return "wrong"

    judge = ScriptedModel(verdict, model_id="judge-stand-in")
    judged = report.score_with({"full": runs["full"]}, judge, store_dir=tmp_path)
    frame = judged["full"]
    assert len(seen) == len(runs["full"]) and "Here is the groundtruth:" in seen[0].prompt_text
    assert frame["parser_correct"].all() and not frame["correct"].any()  # the oracle's letters, judged wrong
    table = report.scorer_table(judged).iloc[0]
    assert table["scorer"] == "LLM judge judge-stand-in (CODIS judge prompt)" and table["no_verdict"] == 0
    assert table["agreement_with_parser_pct"] == 0.0
    cmp = report.paper_vs_ours(frame, "Qwen2.5-VL-7B-Instruct", n_resamples=50)
    overall = cmp.set_index("column").loc["Overall Acc_q"]
    assert overall["ours"] == 0.0 and overall["scorer"].startswith("LLM judge")
    assert (tmp_path / "mucar-judge__full.jsonl").is_file()  # a rerun resumes the judge's store


def test_each_ablation_stands_beside_its_published_row(runs):
    cmp = report.ablations_vs_paper(report.score_with(runs), "Qwen2.5-VL-7B-Instruct", n_resamples=50)
    by = cmp.set_index(["setting", "table", "column"])
    assert by.loc[("q_i", "Table 3", "Overall Acc_q"), "paper"] == 12.57  # (Q,I): Table 3's w/o row
    assert by.loc[("full", "Table 3", "Overall Acc_p"), "paper"] == 20.73  # full input: the w/ row
    assert by.loc[("c_q", "Fig. 4 (text)", "Overall Acc_q"), "paper"] == 3.42  # §5.1's values for Fig. 4
    assert by.loc[("full", "Fig. 4 (text)", "Overall Acc_q"), "paper"] == 50.72
    assert ("c_i", "Fig. 4 (text)", "Overall Acc_q") in by.index  # the text gives no (C,I) value for Qwen: ours only
    zh = cmp[(cmp["setting"] == "full_zh")]
    assert set(zh["table"]) == {"Table 12"} and zh.set_index("column").loc["Overall Acc_q", "paper"] == 53.91
    assert "Polysemy Acc_p" in set(zh["column"]) and "Dual-ambiguity Acc_q" not in set(zh["column"])
    ms = cmp[cmp["setting"] == "full_ms"].set_index("column")
    assert ms.loc["Overall Acc_q", "paper"] == 59.98 and ms.loc["Overall Acc_q", "ours"] == 100.0
    assert set(cmp.loc[cmp["table"] == "Table 3", "options"]) == {report.WITH_CONFUSING["Table 3"]}
    assert set(cmp["scorer"]) == {report.RULE_PARSER}
    with pytest.raises(DataError, match="no ablation run"):
        report.ablations_vs_paper({"c_ambiguous": runs["full"]}, "Qwen2.5-VL-7B-Instruct")
