"""Readable answers the strict (official) parsers drop are read by the documented lenient rule, reported beside
the strict one — never instead of it."""

from __future__ import annotations

import pandas as pd
import pytest

from vlamb_nb import get_benchmark
from vlamb_nb.benchmarks.base import lenient_letter
from vlamb_nb.benchmarks.mucar.parse import parse_answer
from vlamb_nb.benchmarks.vague.parse import parse_letter


@pytest.mark.parametrize("text,letter", [
    ("C is the correct answer.", "C"), ("I'd go with D since the kettle is boiling.", "D"), ("c", "C"),
    ("Answer: B\nExplanation: Option A is tempting but wrong.", "B"),
])
def test_vague_answers_the_strict_rule_drops(text, letter):
    assert parse_letter(text)["valid"] is False  # the official rule: invalid, counted wrong
    assert lenient_letter(text)[0] == letter


@pytest.mark.parametrize("text,letter", [
    ("The correct option is B.", "B"), ("Option B", "B"), ("I think it is B.", "B"), ("我选A。", "A"),
    ("Answer - B", "B"),
])
def test_mucar_answers_the_strict_rule_drops(text, letter):
    opts = ["A. cat", "B. dog", "C. bird", "D. fish"]
    assert parse_answer(text, opts)["valid"] is False
    assert lenient_letter(text, "ABCD")[0] == letter


def test_mucar_an_answer_line_is_not_overridden_by_a_later_mention():
    text = "Answer: B\nNote: the answer A would fit a different image."
    assert parse_answer(text, ["A. x", "B. y"])["letter"] == "A"  # the strict rule: the last answer tag wins
    assert lenient_letter(text, "AB") == ("B", "answer_line")


def test_hedges_stay_unread():
    assert lenient_letter("A or B", "AB")[0] is None and lenient_letter("", "AB") == (None, "empty")


def test_vague_tables_report_strict_and_lenient_accuracy(tmp_path):
    from vlamb_nb.models import ScriptedModel

    bench = get_benchmark("vague")
    items = bench.load(bench.make_sample(tmp_path, n=4, seed=0))
    from vlamb_nb.benchmarks.vague.data import CATEGORIES

    by_id = items.set_index("id")

    def respond(req):  # names the correct option in words the strict rule cannot read
        item = by_id.loc[req.meta.get("item_id", req.id.split("::")[0])]
        return f"I'd go with {list(item['ordering'])[CATEGORIES.index('correct')]} here."

    scored = bench.evaluate(ScriptedModel(respond), items, "lm", progress=False)
    b = bench.breakdown(scored)
    row = b[b["subset"] == "All"].iloc[0]
    assert row["accuracy"] == 0.0 and row["accuracy_lenient"] == 100.0


def test_mucar_tables_report_strict_and_lenient(tmp_path):
    from vlamb_nb.models import ScriptedModel

    bench = get_benchmark("mucar")
    items = bench.load(bench.make_sample(tmp_path, n=4, seed=0))
    by_uid = items.set_index("uid")

    def respond(req):
        item = by_uid.loc[req.meta.get("item_id", req.id.split("::")[0])]
        return f"The correct option is {item['gold']}."

    scored = bench.evaluate(ScriptedModel(respond), items, "full", progress=False)
    t = bench.tables(scored, n_resamples=0)["strict vs lenient"]
    acc_q = t[t["metric"] == "Acc_q"].set_index("reading")["value"]
    assert acc_q["lenient"] == 100.0 and acc_q["strict"] < 100.0
    assert isinstance(t, pd.DataFrame)
