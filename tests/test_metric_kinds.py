"""A metric's kind is read in one module: every other one asks the :class:`Metric` what the kind means (a unit is a
group of rows, a unit's value is a 0/1 outcome), so a new kind is declared in ``stats/metric.py`` alone.

The behavioural tests declare a metric whose answers differ from what its kind name alone would say, and check
that the record, the paired test, the comparison's alignment and the items page follow the metric; the layout test
reads the source for a comparison of a ``.kind`` against a kind name outside ``stats/metric.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pandas as pd

from vlamb_nb.record import metric_values
from vlamb_nb.report_items import _unit_items
from vlamb_nb.stats.common import Scores, _Side, common_units, pair_test
from vlamb_nb.stats.metric import KINDS, Metric

PKG = Path(__file__).resolve().parent.parent / "vlamb_nb"
#: the one module that reads a metric's kind by name
OWNER = PKG / "stats" / "metric.py"


class WholeGroup(Metric):
    """A ``binary`` metric whose unit is a group of rows (right when each of its rows is): not a kind's name."""

    @property
    def grouped(self) -> bool:
        return True


class Outcome(Metric):
    """A ``mean`` of 0/1 values declared an outcome: its paired difference is tested as a 0/1 one."""

    @property
    def zero_one(self) -> bool:
        return True


def _frame(ids: list[str], right: list[int]) -> pd.DataFrame:
    return pd.DataFrame({"item_id": ids, "group": [f"g{int(i[1:]) // 2}" for i in ids], "correct": right})


def _side(name: str, ids: list[str], right: list[int], *metrics) -> _Side:
    """A run of ``metrics`` on ``ids`` as a paired comparison takes it: its record (in memory)."""
    from types import SimpleNamespace

    from vlamb_nb.record import from_scored

    return _Side(name, "toy", "s", from_scored(SimpleNamespace(name="toy", metrics=metrics), _frame(ids, right),
                                               n_resamples=0))


def test_a_record_gives_each_row_its_groups_value_where_the_metric_says_a_unit_is_a_group():
    m = WholeGroup("Acc_g", column="correct", group="group", unit="pair")
    scored = _frame(["q0", "q1", "q2", "q3"], [1, 1, 1, 0])
    values, per_row, notes, units = metric_values([m], scored, n_resamples=0)
    assert not notes
    whole = next(u for u in units["Acc_g"] if u.whole)
    assert whole.keys == ("g0", "g1") and whole.values == (1.0, 0.0)
    assert whole.members == (("q0", "q1"), ("q2", "q3"))
    assert per_row["Acc_g"] == [1.0, 1.0, 0.0, 0.0]  # q2 is right, its pair is not
    assert [v.value for v in values if v.whole] == [50.0]


def test_a_comparison_keeps_only_the_groups_every_run_answered_whole_where_the_metric_says_so():
    m = WholeGroup("Acc_g", column="correct", group="group", unit="pair")
    a = _side("a", ["q0", "q1", "q2", "q3", "q4", "q5"], [1, 1, 1, 0, 1, 1], m)
    b = _side("b", ["q0", "q1", "q2", "q3", "q4"], [1, 0, 1, 1, 1], m)  # no q5: g2 is not whole
    scores, dropped, n = common_units([m], [a, b])
    sc = scores["Acc_g"][0]
    assert sc.keys == ("g0", "g1") and [v.tolist() for v in sc.values] == [[1.0, 0.0], [0.0, 1.0]]
    assert n == 4 and dropped == {"a": 2, "b": 1}
    assert sc.kind == "binary"  # 0/1 outcomes: McNemar


def test_the_items_page_lists_every_row_of_a_group_where_the_metric_says_so():
    """A discordant unit opens onto its rows: every query of a pair the metric groups, one row for a plain one."""
    m = WholeGroup("Acc_g", column="correct", group="group", unit="pair")
    plain_metric = Metric("Acc", column="correct")
    a = _side("a", ["q0", "q1", "q2", "q3"], [1, 1, 0, 1], m, plain_metric)
    b = _side("b", ["q0", "q1", "q2", "q3"], [1, 1, 1, 1], m, plain_metric)
    sc = common_units([m], [a, b])[0]["Acc_g"][0]
    differ = [i for i, (va, vb) in enumerate(zip(*sc.values, strict=True)) if va != vb]
    assert [sc.keys[i] for i in differ] == ["g1"]
    assert _unit_items([sc.keys[i] for i in differ], [sc.members[i] for i in differ]) == ["q2", "q3"]
    plain = common_units([plain_metric], [a, b])[0]["Acc"][0]
    assert plain.members is None and _unit_items(["q2"], plain.members) == ["q2"]


def test_a_paired_difference_is_tested_as_the_metric_says_its_units_are():
    a = np.array([1, 1, 1, 1, 0, 1, 1, 0, 1, 1], dtype=float)
    b = np.array([0, 1, 0, 0, 0, 1, 0, 0, 1, 0], dtype=float)
    outcome = Scores(Outcome("Right", "mean", column="correct"), "overall", [a, b])
    score = Scores(Metric("Score", "mean", column="correct"), "overall", [a, b])
    assert outcome.kind == "binary" and score.kind == "mean"
    t_outcome = pair_test(outcome, a, b, n_resamples=200, seed=0)
    t_score = pair_test(score, a, b, n_resamples=200, seed=0)
    assert t_outcome["test"].startswith("mcnemar") and t_outcome["discordant_a_only"] == 5
    assert not t_score["test"].startswith("mcnemar") and t_score["discordant_a_only"] is None


# -- the layout: a kind name is compared in stats/metric.py only ----------------------------------------------
def _names_a_kind(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in KINDS
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_names_a_kind(e) for e in node.elts)
    return isinstance(node, ast.Name | ast.Attribute) and (node.id if isinstance(node, ast.Name) else
                                                           node.attr) in ("ZERO_ONE", "ZERO_ONE_VALUES")


def kind_reads(root: Path = PKG, owner: Path = OWNER) -> list[str]:
    """``file:line`` of each comparison of a ``.kind`` with a metric kind's name (or the kind lists of
    ``stats/metric.py``) outside ``owner``."""
    found = []
    for f in sorted(root.rglob("*.py")):
        if f.resolve() == owner.resolve():
            continue
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            if any(isinstance(s, ast.Attribute) and s.attr == "kind" for s in sides) and \
                    any(_names_a_kind(s) for s in sides):
                found.append(f"{f.relative_to(root)}:{node.lineno}")
    return found


def test_no_module_but_the_metrics_own_compares_a_kind_with_a_kind_name():
    assert kind_reads() == []


def test_the_kind_check_can_fail(tmp_path):
    (tmp_path / "view.py").write_text(
        "def pick(m, n):\n"
        "    if m.kind == 'all_correct':\n"
        "        return 1\n"
        "    return n.kind in ZERO_ONE or n.kind in ('mean', 'share')\n"
        "def fine(d):\n"
        "    return d.kind == 'release'\n", encoding="utf-8")
    assert kind_reads(tmp_path, tmp_path / "metric.py") == ["view.py:2", "view.py:4", "view.py:4"]
