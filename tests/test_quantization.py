"""What 4-bit changes: equivalence tests, the items that flip, and a planted quantization shift found."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from vlamb_nb import get_benchmark
from vlamb_nb.errors import SettingError
from vlamb_nb.models import ScriptedModel

ROOT = Path(__file__).resolve().parent.parent


def test_tost_calls_the_same_runs_equivalent_and_a_shift_not():
    from vlamb_nb.stats.equivalence import tost

    rng = np.random.default_rng(0)
    a = rng.integers(0, 2, 2000)
    same = tost(a, a.copy(), 0.02, n_resamples=500)
    assert same.extra["equivalent"] and same.p < 0.05
    b = a.copy()
    flip = rng.choice(np.flatnonzero(a == 1), 100, replace=False)  # 5 points lost
    b[flip] = 0
    shifted = tost(b, a, 0.02, n_resamples=500)
    assert not shifted.extra["equivalent"] and shifted.p > 0.5
    assert shifted.estimate == pytest.approx(-0.05)
    # a small difference on few items is not shown equivalent either: equivalence needs evidence
    small = tost(b[:100], a[:100], 0.02, n_resamples=500)
    assert not small.extra["equivalent"]
    with pytest.raises(SettingError, match="margin"):
        tost(a, a, 0)


def _stores(tmp_path: Path, lost: int):
    """Two VAGUE stores of one scripted model, unquantized and '4bit': the 4-bit one answers ``lost`` items wrong."""
    bench = get_benchmark("vague")
    src = bench.make_sample(tmp_path / "data", n=40, seed=0)
    items = bench.load(src)
    gold = {r["id"]: list(r["ordering"])[0] for _, r in items.iterrows()}
    wrong = set(list(items["id"])[:lost])

    def store(q, worse):
        def answer(r):
            g = gold[r.meta["item_id"]]
            return ("D" if g != "D" else "C") if worse and r.meta["item_id"] in wrong else g

        model = ScriptedModel(answer, model_id="m")
        model.info = dataclasses.replace(model.info, quantization=q)
        path = tmp_path / f"{q or 'none'}.jsonl"
        bench.evaluate(model, items, "vlm", store=path, progress=False)
        return path

    return src, store(None, False), store("4bit", True), wrong


def test_a_planted_quantization_shift_is_found_with_the_items_that_flip(tmp_path):
    from vlamb_nb.quantization import from_stores

    src, full, four, wrong = _stores(tmp_path, lost=8)
    res = from_stores([four, full], source=src, n_resamples=500)
    row = res.table.set_index("metric").loc["accuracy"]
    assert row["quantization"] == "4bit" and row["reference"] == "none"
    assert row["diff"] == pytest.approx(-20.0) and not row["equivalent"] and row["flips"] == 8
    assert set(res.flips["key"]) == wrong and set(res.flips["change"]) == {"lost"}
    assert "not shown equivalent" in res.conclusion


def test_the_same_answers_at_two_quantizations_are_equivalent(tmp_path):
    from vlamb_nb.quantization import from_stores

    src, full, four, _ = _stores(tmp_path, lost=0)
    res = from_stores([full, four], source=src, n_resamples=500)
    row = res.table.iloc[0]
    assert row["diff"] == 0 and row["equivalent"] and row["flips"] == 0 and res.flips.empty


def test_a_sweep_over_quantizations_writes_the_comparison(tmp_path, monkeypatch, inline_sweep):
    import yaml

    import vlamb_nb.models

    bench = get_benchmark("vague")
    src = bench.make_sample(tmp_path / "data", n=30, seed=0)
    items = bench.load(src)
    gold = {r["id"]: list(r["ordering"])[0] for _, r in items.iterrows()}
    wrong = set(list(items["id"])[:6])

    def load(spec, quantization=None, **_):
        worse = quantization == "4bit"
        model = ScriptedModel(lambda r: ("D" if gold[r.meta["item_id"]] != "D" else "C")
                              if worse and r.meta["item_id"] in wrong else gold[r.meta["item_id"]], model_id=spec)
        model.info = dataclasses.replace(model.info, quantization=quantization)
        return model

    monkeypatch.setattr(vlamb_nb.models, "load_model", load)
    out = tmp_path / "out"
    cfg = tmp_path / "sweep.yaml"
    cfg.write_text(yaml.safe_dump({"name": "q", "out_dir": str(out), "progress": False,
                                   "models": [{"spec": "m", "quantization": ["4bit", "none"]}],
                                   "benchmarks": [{"name": "vague", "source": str(src), "settings": ["vlm"]}]}))
    assert inline_sweep.sweep(cfg, quiet=True) == 0
    assert "Quantizations compared for 1 run(s)" in (out / "summary.md").read_text()
    doc = json.loads((out / "quantization.json").read_text())
    row = doc[0]["table"][0]
    assert row["quantization"] == "4bit" and row["diff"] == pytest.approx(-20.0) and row["flips"] == 6


@pytest.mark.slow
def test_the_quantization_bench_runs_offline_on_a_tiny_checkpoint(tmp_path):
    """NF4, LLM.int8 and the unquantized tiny checkpoint on CPU, the same items of two papers, compared."""
    pytest.importorskip("bitsandbytes")
    out = tmp_path / "quant.json"
    subprocess.run([sys.executable, str(ROOT / "perf" / "bench_quantization.py"), "--dry-run", "--limit", "2",
                    "--papers", "vague,refadv", "--quantizations", "4bit,8bit,none", "--n-resamples", "200",
                    "--json", str(out)], check=True, cwd=tmp_path, env={**__import__("os").environ,
                                                                         "PYTHONPATH": str(ROOT)},
                   capture_output=True, timeout=900)
    doc = json.loads(out.read_text())
    loads = doc["loads"]
    assert loads["4bit"]["weights_gib"] < loads["8bit"]["weights_gib"] < loads["none"]["weights_gib"]
    for paper in ("vague", "refadv"):
        rows = doc["papers"][paper]["table"]
        assert {r["quantization"] for r in rows} == {"4bit", "8bit"} and all(r["n"] == 2 for r in rows)
        speeds = {r["quantization"]: r["tokens_per_s"] for r in doc["papers"][paper]["resources"]}
        assert all(v is not None and v > 0 for v in speeds.values()), speeds
