"""VAGUE's paper vs ours sets every table the runs compute beside the paper's row for the model: Table 1 and
J5/J6 (MCQ), the free-form BERT F1 / BLEU-1 / valid count of J5/J6, Tables 3/G4 (with and without CoT, the gain)
and Table F3 (self vs external captions, the gain); a scripted model through the real run path."""

from __future__ import annotations

import pytest

from vlamb_nb import get_benchmark
from vlamb_nb.benchmarks.vague import report
from vlamb_nb.models import ScriptedModel

BENCH = get_benchmark("vague")
PHI = "microsoft/Phi-3.5-vision-instruct"  # a model of the paper: its rows exist in J5/J6, G4 and F3


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    items = BENCH.load(BENCH.make_sample(tmp_path_factory.mktemp("vague_pvo"), n=9, seed=3))
    lookup = items.set_index("id")

    def respond(req):  # right with the image, wrong (SU) from captions; a free-form sentence for *_ff
        if req.id.endswith("::caption"):
            return "A caption."
        if req.setting.endswith("_ff"):
            return "The speaker wants person1 to go."
        want = "correct" if req.setting.startswith("vlm") else "SU"
        return next(k for k, v in lookup.loc[req.meta["item_id"], "letter_category"].items() if v == want)

    model = ScriptedModel(respond, model_id=PHI)
    settings = ["sm", "sm_ext", "sm_cot", "vlm", "vlm_cot", "vlm_ff"]
    extra = {"vlm_ff": {"bertscore": "minilm"}, "sm_ext": {"captions": "dataset"}}  # the dataset's own captions
    runs = {s: BENCH.evaluate(model, items, s, progress=False, **extra.get(s, {})) for s in settings}
    import pandas as pd

    scored = pd.concat(list(runs.values()), ignore_index=True)
    breakdown = report.breakdown_with_ci(scored)
    return breakdown, report.paper_vs_ours(breakdown, PHI)


def _cell(cmp, table, row, column):
    hit = cmp[(cmp["table"] == table) & (cmp["row"] == row) & (cmp["column"] == column)]
    assert len(hit) == 1, (table, row, column)
    return hit.iloc[0]


def test_the_cot_rows_of_table_g4_stand_beside_the_papers(compared):
    b, cmp = compared
    acc = b.set_index(["setting", "subset"])["accuracy"]
    cot = _cell(cmp, "Table G4", "Phi3.5-Vision-Instruct (4B) | VLM+CoT", "Acc")
    assert cot["paper"] == 36.6 and cot["ours"] == pytest.approx(acc[("vlm_cot", "All")])
    gain = _cell(cmp, "Table G4", "Phi3.5-Vision-Instruct (4B) | SM+CoT", "Gain")
    assert gain["paper"] == -2.5 and gain["ours"] == pytest.approx(round(acc[("sm_cot", "All")] - acc[("sm", "All")], 1))
    assert _cell(cmp, "Table G4", "Phi3.5-Vision-Instruct (4B) | SM+CoT", "SU")["ours"] == 9  # every answer SU
    assert not any(cmp["table"] == "Table 3")  # Table 3 holds the proprietary models only


def test_table_f3_sets_self_and_external_captions_side_by_side(compared):
    b, cmp = compared
    acc = b.set_index(["setting", "subset"])["accuracy"]
    ext = _cell(cmp, "Table F3", "Phi3.5-Vision-Instruct (4b)", "GPT-4o captioning")  # the table's own spelling
    assert ext["paper"] == 37.9 and ext["ours"] == pytest.approx(acc[("sm_ext", "All")])
    assert _cell(cmp, "Table F3", "Phi3.5-Vision-Instruct (4b)", "Self captioning")["paper"] == 34.0
    assert _cell(cmp, "Table F3", "Phi3.5-Vision-Instruct (4b)", "Gain")["paper"] == 3.9


def test_the_free_form_columns_of_j5_and_j6_are_compared(compared):
    b, cmp = compared
    ff = b.set_index(["setting", "subset"])
    for table, subset in (("Table J5", "VCR"), ("Table J6", "Ego4D")):
        bleu = _cell(cmp, table, "Phi3.5-Vision-Instruct (4B) | VLM", "BLEU-1")
        assert bleu["paper"] is not None and bleu["ours"] == pytest.approx(round(ff.loc[("vlm_ff", subset), "BLEU-1"], 3))
        bert = _cell(cmp, table, "Phi3.5-Vision-Instruct (4B) | VLM", "BERT F1")
        assert bert["paper"] is not None and 0 < bert["ours"] <= 1
        assert _cell(cmp, table, "Phi3.5-Vision-Instruct (4B) | VLM", "FF Valid")["ours"] == ff.loc[("vlm_ff", subset),
                                                                                                   "valid"]
    assert _cell(cmp, "Table J5", "Phi3.5-Vision-Instruct (4B) | VLM", "BERT F1")["paper"] == 0.682
