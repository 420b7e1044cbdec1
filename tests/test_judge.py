"""The generic LLM-as-judge: templates, parsers, cached runs, unparsed outputs counted."""

from __future__ import annotations

import pandas as pd
import pytest

from vlamb_nb.errors import DataError, SettingError
from vlamb_nb.models.base import ScriptedModel
from vlamb_nb.scorers import judge


def test_fill_template_leaves_other_braces_and_requires_slots():
    t = 'Return JSON like {"x": 1}. Q: {question} A: {response}'
    assert judge.placeholders(t) == ["question", "response"]
    out = judge.fill_template(t, {"question": "Q1", "response": "R1"})
    assert out == 'Return JSON like {"x": 1}. Q: Q1 A: R1'
    with pytest.raises(SettingError, match="response"):
        judge.fill_template(t, {"question": "Q1"})


@pytest.mark.parametrize("text,label", [
    ("Step 1 ... so CLASS B. Wait, actually CLASS A", "A"),
    ("The answer mentions one dog. CLASS C", "C"),
    ("class b", None),  # the prompt asks for capitals; lower case is not the label
    ("CLASS D", None),
    ("", None),
])
def test_last_match_parser(text, label):
    p = judge.last_match_parser(r"CLASS\s*([ABC])", ("A", "B", "C"))
    got = p(text)
    assert got["label"] == label
    assert got["valid"] is (label is not None)


@pytest.mark.parametrize("text,label", [("YES", "YES"), ("no.", "NO"), (" Yes, because", "YES"),
                                        ("Maybe YES", None), ("", None)])
def test_first_token_parser(text, label):
    assert judge.first_token_parser(("YES", "NO"))(text)["label"] == label


def test_run_judge_counts_unparsed_and_caches(tmp_path):
    spec = judge.JudgeSpec("t", template="Q: {question} A: {response}",
                           parse=judge.last_match_parser(r"CLASS ([ABC])", "ABC"))
    rows = pd.DataFrame({"request_id": ["1", "2", "3"], "question": ["q1", "q2", "q3"],
                         "response": ["two dogs", "the dog", "???"]})

    def respond(req):
        text = req.prompt_text
        if "???" in text:
            return "I cannot tell"
        if "q2" in text:
            raise RuntimeError("endpoint down")
        return "reasoning... CLASS A"

    m = ScriptedModel(respond, model_id="judge-x")
    store = tmp_path / "judge.jsonl"
    out = judge.run_judge(m, spec, rows, store=store, progress=False)
    assert out["judge_label"].iloc[0] == "A" and out["judge_label"].iloc[1:].isna().all()
    assert list(out["judge_valid"]) == [True, False, False]
    s = judge.parse_summary(out)
    assert s == {"n": 3, "parsed": 1, "unparsed": 2, "generation_failed": 1, "labels": {"A": 1}}
    calls = m.calls
    again = judge.run_judge(m, spec, rows, store=store, progress=False)
    assert m.calls == calls + 1  # only the failed generation is retried
    assert again["judge_label"].iloc[0] == "A"


def test_judge_requests_are_text_only_and_validate_input():
    spec = judge.JudgeSpec("t", template="Q: {question} A: {response}", parse=judge.first_token_parser("AB"),
                           system="You are a careful annotator.")
    reqs = judge.judge_requests(spec, [{"request_id": "7::direct", "question": "q", "response": "r"}])
    assert reqs[0].images == [] and reqs[0].messages[0]["role"] == "system"
    assert reqs[0].id == "7::direct::judge-t" and reqs[0].meta["item_id"] == "7::direct"
    assert reqs[0].prompt_text.endswith("Q: q A: r")
    with pytest.raises(DataError, match="response"):
        judge.judge_requests(spec, [{"request_id": "1", "question": "q", "response": None}])
    mapped = judge.judge_requests(spec, [{"request_id": "1", "q": "Q?", "answer": "R!"}],
                                  field_map={"question": "q", "response": "answer"})
    assert "Q: Q? A: R!" in mapped[0].prompt_text


def test_agreement_uses_pairs_with_both_labels():
    stats = pytest.importorskip("vlamb_nb.stats")
    r = stats.cohen_kappa(["A", "B", "C", "A", None], ["A", "B", "C", "B", "A"], ci=False, drop_missing=True)
    direct = stats.cohen_kappa(["A", "B", "C", "A"], ["A", "B", "C", "B"], ci=False)
    assert r.estimate == pytest.approx(direct.estimate)
    assert r.estimate < 1.0
    with pytest.raises(DataError, match="no item has both labels"):
        stats.cohen_kappa(["A", ""], [None, "B"], drop_missing=True)
