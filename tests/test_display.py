"""What notebooks show: rounded as the paper, one "[lo, hi]" column, no empty columns, comparisons wide."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from vlamb_nb import reference
from vlamb_nb.notebook import display as D


def _refadv_comparison() -> pd.DataFrame:
    """Published Ref-Adv-s cells compared with values one decimal finer, with intervals on some cells."""
    ref = reference.load("refadv", "Table 6")
    ref = ref[ref["value_num"].notna()].head(6)
    ours = ref[["table", "row", "column"]].assign(value=ref["value_num"].to_numpy() + 0.04321)
    ours["ci_low"] = ours["value"] - 3.14159
    ours["ci_high"] = ours["value"] + 2.71828
    ours.loc[ours.index[-1], ["ci_low", "ci_high"]] = np.nan  # a cell without an interval
    return reference.compare(ours, "refadv", table="Table 6")


def test_comparison_is_rounded_as_the_paper_prints_it_with_one_interval_column():
    cmp = _refadv_comparison()
    shown = D.readable(cmp)
    assert "ci_low" not in shown.columns and "ci_high" not in shown.columns and D.CI_LABEL in shown.columns
    for (_, raw), (_, txt) in zip(cmp.iterrows(), shown.iterrows(), strict=True):
        dec = D.decimals_of(cmp.loc[cmp["column"] == raw["column"], "paper"])
        assert txt["paper"] == f"{raw['paper']:.{dec}f}" and txt["ours"] == f"{raw['ours']:.{dec}f}"
        if pd.isna(raw["ci_low"]):
            assert txt[D.CI_LABEL] == "" and txt["paper_in_ci"] == ""  # unknown coverage is blank, never "no"
        else:
            assert txt[D.CI_LABEL] == f"[{raw['ci_low']:.{dec}f}, {raw['ci_high']:.{dec}f}]"
            assert txt["paper_in_ci"] == "yes"


def test_all_empty_columns_are_dropped_and_p_values_printed_as_papers_do():
    sig = pd.DataFrame({"comparison": ["a", "b"], "diff_pp": [-1.6637, -30.2102], "ci_low": [-3.0192, -34.0259],
                        "ci_high": [-0.3451, -26.4576], "p_mcnemar": [0.0212, 0.00001], "p_ztest": [np.nan, np.nan],
                        "n": [1142, 1142], "gee_or": [0.894, 1.346], "gee_or_low": [0.6674, 1.0461],
                        "gee_or_high": [1.1974, 1.7316]})
    shown = D.readable(sig)
    assert list(shown.columns) == ["comparison", "diff_pp", D.CI_LABEL, "p_mcnemar", "n", "gee_or",
                                   f"gee_or {D.CI_LABEL}"]
    assert list(shown["p_mcnemar"]) == ["0.0212", "<0.001"] and list(shown["n"]) == ["1142", "1142"]
    assert list(shown[D.CI_LABEL]) == ["[-3.0, -0.3]", "[-34.0, -26.5]"]
    assert list(shown[f"gee_or {D.CI_LABEL}"]) == ["[0.67, 1.20]", "[1.05, 1.73]"]


def test_a_metric_whose_name_ends_in_p_is_a_value_not_a_p_value():
    """MUCAR's pair accuracy ``Acc_p`` is its headline: 0.0 is 0.0, not "<0.001", and 62.5 keeps its decimals."""
    from vlamb_nb.report_html import cell

    tab = pd.DataFrame({"model": ["m", "n"], "Acc_q": [0.0, 71.43], "Acc_p": [0.0, 62.5], "mcnemar_p": [0.0004, 0.5],
                        "paper_p": [0.03, 0.2]})
    shown = D.readable(tab)
    assert list(shown["Acc_p"]) == ["0.0", "62.5"]
    assert list(shown["mcnemar_p"]) == ["<0.001", "0.5"] and list(shown["paper_p"]) == ["0.03", "0.2"]
    assert cell(0.0, "Acc_p")[0] != "<0.001" and cell(0.0004, "mcnemar_p")[0] == "<0.001"


def test_decimals_follow_the_published_values():
    assert D.decimals_of([23.8, 18.1, 8.8]) == 1
    assert D.decimals_of([49.82, 72.78]) == 2
    assert D.decimals_of([1144.0, 533.0]) == 0
    assert D.decimals_of([0.12345]) == 2  # capped
    assert D.format_p(np.nan) == "" and D.format_p(0.5) == "0.5" and D.format_p(0.01234) == "0.0123"


def test_comparisons_are_wide_like_the_papers_table():
    cmp = _refadv_comparison()
    wide = D.wide_comparison(cmp)
    assert list(wide.index) == list(dict.fromkeys(cmp["row"]))
    assert list(wide.columns) == list(dict.fromkeys(cmp["column"]))
    first = cmp.iloc[0]
    dec = D.decimals_of(cmp.loc[cmp["column"] == first["column"], "paper"])
    cell = wide.loc[first["row"], first["column"]]
    assert cell.startswith(f"{first['ours']:.{dec}f} [") and cell.endswith(f"({first['paper']:.{dec}f})")


def test_show_displays_and_returns_nothing(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *objs, **_: shown.extend(objs))
    assert D.show(_refadv_comparison()) is None
    assert any(isinstance(o, pd.DataFrame) for o in shown)
    assert D.show(pd.DataFrame({"a": [1.0, np.nan]}), title="x") is None


@pytest.mark.parametrize("frame", [pd.DataFrame(), pd.DataFrame({"a": [np.nan]})])
def test_degenerate_frames_do_not_raise(frame):
    D.readable(frame)


def test_flat_records_and_dataclasses_are_shown_as_a_field_table(monkeypatch):
    from dataclasses import dataclass

    @dataclass
    class Info:
        model_id: str
        quantization: str | None

    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *objs, **_: shown.extend(objs))
    D.show({"cell": [1, 2], "mass_in_cell": 1.0, "peak_in_cell": True})
    D.show(Info("tiny:qwen2_5_vl", None))
    D.show({"nested": {"a": 1}})  # not flat: shown as it is
    first, second, third = shown
    assert list(first.index) == ["cell", "mass_in_cell", "peak_in_cell"] and first.loc["cell", "value"] == "1, 2"
    assert second.loc["model_id", "value"] == "tiny:qwen2_5_vl" and second.loc["quantization", "value"] == ""
    assert third == {"nested": {"a": 1}}


def test_a_cell_compared_twice_is_never_dropped_from_the_wide_view(monkeypatch):
    cmp = pd.concat([_refadv_comparison().head(2).assign(setting=s) for s in ("direct", "cot")], ignore_index=True)
    with pytest.raises(ValueError, match="twice"):
        D.wide_comparison(cmp)
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *objs, **_: shown.extend(objs))
    D.show(cmp)
    frames = [o for o in shown if isinstance(o, pd.DataFrame)]
    assert len(frames) == 1 and len(frames[0]) == 4 and set(frames[0]["setting"]) == {"direct", "cot"}


def test_a_paper_row_beside_another_models_numbers_is_never_a_match():
    """Ours from a stand-in (or a generated sample) beside the paper's row: shown, labelled with our model, and no
    cell counted as matched, even where the numbers happen to agree."""
    from vlamb_nb import reference

    ours = pd.DataFrame({"table": ["Table 2a"], "row": ["Qwen2.5-VL-7B-Instruct"], "column": ["Overall Acc_p"],
                         "value": [60.47], "ci_low": [50.0], "ci_high": [70.0]})
    paper_value = reference.load("mucar", "Table 2a")
    assert not paper_value.empty
    why = reference.not_comparable("scripted stand-in (seed 0)", paper_model="Qwen2.5-VL-7B-Instruct")
    assert why.startswith("not the same model")
    assert reference.not_comparable("Qwen/Qwen2.5-VL-7B-Instruct") is None
    assert reference.not_comparable("replay:run.jsonl") is None  # a real model's recorded answers
    sample = pd.DataFrame({"x": range(16)})
    sample.attrs["data"] = {"kind": "sample", "n_items": 16}
    assert reference.not_comparable(None, sample) == "not comparable: generated sample, n = 16"
    cmp = reference.compare(ours, "mucar", table="Table 2a", model="scripted stand-in (seed 0)", why_not=why)
    assert cmp["match"].isna().all() and (cmp["model"] == "scripted stand-in (seed 0)").all()
    assert cmp["flag"].str.startswith("not the same model").all()
    heading = D.comparison_heading("Table 2a", cmp)
    assert "no cell is counted as a match" in heading and "scripted stand-in (seed 0)" in heading
    same = reference.compare(ours, "mucar", table="Table 2a", model="Qwen/Qwen2.5-VL-7B-Instruct")
    assert "published cells matched" in D.comparison_heading("Table 2a", same)
