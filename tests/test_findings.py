"""A conclusion is computed, never typed: each sentence a notebook states follows its numbers, and says the
opposite, or that this run cannot tell, when they say so."""

from __future__ import annotations

import numpy as np
import pandas as pd

from vlamb_nb import findings as F


def test_a_difference_says_its_direction_only_when_the_interval_excludes_zero():
    up = F.difference("VLM", "LM", 12.0, 4.0, 20.0, p=0.003, n=40, discordant=(9, 2), claim="higher")
    assert up.holds is True and "VLM is higher than LM" in up.text and "As the paper states" in up.text
    assert "9 only VLM right, 2 only LM right" in up.text
    down = F.difference("VLM", "LM", -12.0, -20.0, -4.0, claim="higher")
    assert down.holds is False and "VLM is lower than LM" in down.text and "states the opposite" in down.text
    flat = F.difference("VLM", "LM", 2.0, -3.0, 7.0, claim="higher")
    assert flat.holds is None and "No detectable difference" in flat.text and "cannot tell" in flat.text
    assert flat.mark == "Cannot tell from this run"


def test_a_count_is_most_or_not_and_says_whether_the_papers_claim_is_borne_out():
    c = F.count(1, 5, "run", "score lower on negated expressions", claim="negation lowers accuracy")
    assert c.holds is False and c.text.startswith("1 of 5 runs") and "not borne out" in c.text
    assert F.count(4, 5, "run", "score lower").holds is True
    assert F.count(0, 0, "run", "x").holds is None


def test_what_a_section_cannot_show_names_what_is_missing_and_the_command():
    f = F.not_shown("the official table", "the released runs", "vlamb-nb data fetch refadv", would="each run's row")
    assert not f.shown and f.mark == "Not shown here"
    assert "`vlamb-nb data fetch refadv`" in f.text and "With it, this section shows each run's row." in f.text
    assert F.Finding.from_dict(f.to_dict()) == f and F.is_finding(f.to_dict())


def test_within_holds_the_target_against_the_interval():
    assert F.within(64.5, 46.9, 78.9, 55.0, what="Acc@0.5", target_name="the chance scripted").holds is True
    out = F.within(30.0, 20.0, 40.0, 55.0, what="Acc@0.5", target_name="the chance scripted")
    assert out.holds is False and "outside" in out.text


def test_plurals():
    assert F.plural(8, "query") == "8 queries" and F.plural(1, "query") == "1 query"
    assert F.plural(2, "box") == "2 boxes" and F.plural(3, "day") == "3 days" and F.plural(1142, "row") == "1,142 rows"


def test_vagues_setting_claims_follow_its_paired_tests():
    from vlamb_nb.benchmarks.vague import report

    paired = pd.DataFrame({"model": "m", "a": ["vlm", "sm"], "b": ["lm", "lm"], "n": 24, "diff_pts": [30.0, 10.0],
                           "ci_low": [10.0, -5.0], "ci_high": [50.0, 25.0], "p_mcnemar": [0.01, 0.3],
                           "only_a": [9, 5], "only_b": [2, 3]})
    vlm, sm = report.setting_findings(paired, "m")
    assert vlm.holds is True and sm.holds is None
    flipped = paired.assign(diff_pts=-paired["diff_pts"], ci_low=-paired["ci_high"], ci_high=-paired["ci_low"])
    assert report.setting_findings(flipped, "m")[0].holds is False
    missing = report.setting_findings(paired.iloc[:0], "m")[0]
    assert not missing.shown


def test_vagues_recomputed_cells_sentence_counts_the_table():
    from vlamb_nb.benchmarks.vague import report

    table = report.recomputed_vs_paper()
    said = report.recomputed_finding(table)
    bad = int((~table["match"].astype(bool)).sum())
    assert f"; {bad} do not" in said.text
    all_good = report.recomputed_finding(table.assign(match=True))
    assert all_good.holds is True and "all do" in all_good.text


def test_refadvs_negation_sentence_counts_the_runs_and_reverses_with_them():
    from vlamb_nb.benchmarks.refadv import report

    neg = pd.DataFrame({"acc_neg": [40.0, 55.0, 60.0], "acc_noneg": [45.0, 50.0, 52.0],
                        "gee_or_low": [0.6, 1.1, 1.2], "gee_or_high": [0.9, 1.6, 1.9]})
    said = report.negation_finding(neg)
    assert "1 of 3 runs score lower on negated expressions" in said.text and said.holds is False
    flipped = neg.assign(acc_neg=neg["acc_noneg"] - 5)
    assert "3 of 3 runs score lower" in report.negation_finding(flipped).text
    assert not report.negation_finding(None).shown


def test_refadvs_failure_sentence_names_each_runs_dominant_failure():
    from vlamb_nb.benchmarks.refadv import report

    t = pd.DataFrame({"run": ["a"], "hit": [10], "near_miss": [2], "miss": [1], "parse_failure": [7]})
    assert "most misses are parse failures (7)" in report.failure_finding(t).text
    assert "near misses" in report.failure_finding(t.assign(near_miss=[9])).text


def test_the_audit_sentence_counts_what_does_not_follow():
    from vlamb_nb import reference

    frame = pd.DataFrame({"table": ["T1", "T1", "T2"], "ok": [True, False, False]})
    said = reference.audit_finding(frame)
    assert said.text.startswith("3 printed cells checked") and "2 do not follow (T1: 1; T2: 1)" in said.text
    assert reference.audit_finding(frame.assign(ok=True)).holds is True
    assert np.isclose(said.value, 2.0)


def _nb(*cells):
    return {"cells": list(cells)}


def _md(text):
    return {"cell_type": "markdown", "source": text}


def _code(*outputs):
    return {"cell_type": "code", "source": "x", "metadata": {}, "outputs": list(outputs)}


def test_a_section_whose_cells_print_nothing_is_a_reading_problem():
    from vlamb_nb.notebook.results import RESULTS_MIME, reading_problems

    said = {"output_type": "stream", "name": "stdout", "text": "data: released demo (31 items)\n"}
    recorded_only = {"output_type": "display_data", "data": {RESULTS_MIME: {"x": 1}}}
    good = _nb(_md("# T"), _md("## 1. Data"), _code(said), _md("## 2. Negation"), _code(said))
    assert reading_problems(good) == []
    silent = _nb(_md("## 1. Data"), _code(said), _md("### Negation: a reversal"), _code(recorded_only), _code())
    assert reading_problems(silent) == ["section 'Negation: a reversal': 2 code cell(s), no output"]


def test_a_frozen_progress_widget_and_a_stand_in_counted_as_a_match_are_reading_problems():
    from vlamb_nb.notebook.results import RESULTS_MIME, reading_problems

    widget = {"output_type": "display_data", "data": {"application/vnd.jupyter.widget-view+json": {},
                                                      "text/plain": "Loading weights:   0%|          | 0/56"}}
    rows = [{"table": "Table 2a", "row": "Qwen2.5-VL-7B-Instruct", "paper": 60.47, "ours": 0.0, "match": True,
             "model": "scripted stand-in (seed 0)"}]
    nb = _nb(_md("## P"), _code({"output_type": "stream", "text": "ok"}, widget,
                                {"output_type": "display_data", "data": {RESULTS_MIME: {"paper_vs_ours": rows}}}))
    found = reading_problems(nb)
    assert any("progress widget saved at 0%" in p for p in found)
    assert any("counted as matching the paper" in p for p in found)
    rows[0]["match"] = None
    assert not any("matching" in p for p in reading_problems(nb))


def test_a_process_that_switches_progress_bars_off_gets_none_even_where_a_caller_asks(monkeypatch):
    """``reproduce``'s kernels set TQDM_DISABLE: a bar asked for with enabled=True must still be off there (an
    explicit disable=False overrode tqdm's own reading of the variable, and the widget was saved at 0%)."""
    from vlamb_nb.progress import bar, wanted

    monkeypatch.setenv("TQDM_DISABLE", "1")
    assert not wanted(True) and bar(total=3, enabled=True).disable
    monkeypatch.delenv("TQDM_DISABLE")
    assert wanted(True) and not wanted(False)


def test_the_saliency_comparison_says_when_answers_of_one_kind_leave_nothing_to_compare():
    from vlamb_nb.saliency_study import comparison_finding

    only_wrong = pd.DataFrame({"benchmark": ["refadv"], "method": ["attention"], "role": ["gold"], "n_correct": [0],
                               "n_wrong": [3]})
    said = comparison_finding(only_wrong)
    assert not said.shown and "0 right, 3 wrong" in said.text
    both = only_wrong.assign(n_correct=[5], n_wrong=[5], gap=[0.2], ci_low=[0.05], ci_high=[0.3], p=[0.01])
    assert "higher than wrong ones" in comparison_finding(both).text


def test_both_pages_print_a_recorded_finding_as_its_sentence_where_its_result_stands():
    """A notebook records a finding under ``…_finding``: the pages print the sentence with what it is (never the
    dict's fields), among the results (not the audit)."""
    from vlamb_nb.report_html import block
    from vlamb_nb.report_md import render_value
    from vlamb_nb.run_view import RESULT, section_rank

    f = F.difference("CoT", "direct", -6.5, -32.3, 19.4, what="Acc@0.5", claim="higher").to_dict()
    md = render_value("cot_finding", f)
    assert md.startswith("**CoT finding**: Cannot tell from this run. No detectable difference") and "ci_low" not in md
    html = block("cot_finding", f)
    assert html["kind"] == "value" and html["text"].startswith("Cannot tell from this run. No detectable difference")
    assert section_rank("negation_finding") == RESULT


def test_several_findings_in_one_paragraph_keep_each_mark_and_add_none():
    both = F.join([F.count(4, 5, "run", "score lower"), F.not_shown("the table", "the release", "fetch")])
    assert both.joined and both.said().startswith("Shown: 4 of 5 runs") and "Not shown here: The table" in both.said()
    assert both._repr_markdown_().startswith("**Shown:** 4 of 5") and "**Not shown here:** The table" in \
        both._repr_markdown_()

