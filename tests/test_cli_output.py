"""`score` and `data stats` without --json: aligned tables a person reads; with --json: the same result as data."""

from __future__ import annotations

import json
import math
import re

import pytest

from vlamb_nb import cli


def _tables(text: str) -> list[list[str]]:
    return [b.splitlines() for b in text.split("\n\n")]


def _aligned(lines: list[str]) -> bool:
    """Every row of a two-column block starts its value at the same column (or right-aligns it to one edge)."""
    rows = [ln for ln in lines if "  " in ln and not set(ln) <= {"-", " "}]
    starts = {re.search(r"\S+\s{2,}", ln).end() for ln in rows}
    ends = {len(ln) for ln in rows}
    return len(starts) == 1 or len(ends) == 1


def test_values_are_formatted_for_reading():
    f = cli.format_value
    assert [f(1144.0), f(39.3219), f(0.000875657), f(float("nan")), f(None), f(True)] == \
        ["1144", "39.32", "0.0008757", "–", "–", "yes"]
    assert f({"estimate": 0.5231, "ci_low": 0.4012, "ci_high": 0.6444}) == "0.5231 [0.4012, 0.6444]"
    assert f([23, 418]) == "23, 418" and f(math.inf) == "inf" and f(123.456) == "123.5"


def test_nested_results_become_titled_aligned_tables():
    result = {"benchmark": "x", "n": 3, "accuracy": {"estimate": 52.31, "ci_low": 40.1, "ci_high": 64.4},
              "by_language": {"en": 2, "zh": 1, "ms": float("nan")},
              "grid": {"irfl": {"claim": 19.4, "expl": 353.1}, "muse": {"claim": 110.1, "expl": 247.2}},
              "rows": [{"model": "a", "acc": 0.5}, {"model": "bb", "acc": None}], "empty": {}}
    text = cli.render_text(result)
    assert "{" not in text and "[{" not in text  # no raw JSON or Python reprs
    blocks = _tables(text)
    assert blocks[0] == ["benchmark  x", "n          3", "accuracy   52.31 [40.1, 64.4]"]
    assert blocks[1][0] == "by_language" and blocks[1][3].split() == ["ms", "–"] and _aligned(blocks[1][1:])
    assert blocks[2][0] == "grid" and blocks[2][1].split() == ["claim", "expl"]
    assert blocks[2][3].split() == ["irfl", "19.4", "353.1"]
    assert blocks[3][0] == "rows" and blocks[3][1].split() == ["model", "acc"] and blocks[3][4].split() == ["bb", "–"]
    assert blocks[4] == ["empty", "(none)"]


def test_data_stats_prints_a_table_and_json_stays_the_data(shared_data, capsys):
    path = shared_data / "vflute" / "vflute-v2-test.csv"
    if not path.exists():
        pytest.skip("the V-FLUTE release is not beside the checkout")
    assert cli.main(["data", "stats", "vflute", "--source", str(path)]) == 0
    text = capsys.readouterr().out
    blocks = {b[0]: b for b in _tables(text.strip())}
    assert blocks["mean_chars"][1].split() == ["claim_chars", "explanation_chars"]
    all_row = next(ln for ln in blocks["mean_chars"] if ln.startswith("all ")).split()
    assert all_row[1] == "56.6"  # the release's mean claim length, rounded as computed
    assert _aligned(blocks["by_dataset"][1:]) and "{" not in text
    assert cli.main(["data", "stats", "vflute", "--source", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["n"] == 723 and data["by_label"] == {"entailment": 405, "contradiction": 318}


def test_score_prints_a_table_of_the_official_predictions(shared_data, capsys):
    path = shared_data / "refadv" / "predictions" / "qwen25a7b_direct_predictions.jsonl"
    if not path.exists():
        pytest.skip("the Ref-Adv predictions are not beside the checkout")
    assert cli.main(["score", "refadv", "--predictions", str(path)]) == 0
    text = capsys.readouterr().out
    metrics = next(b for b in _tables(text.strip()) if b[0] == "metrics")
    assert dict(ln.split() for ln in metrics[1:])["Acc@0.5"] == "39.32"
    assert _aligned(metrics[1:]) and "{" not in text
    assert cli.main(["score", "refadv", "--predictions", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["Acc@0.5"] == pytest.approx(39.32)
