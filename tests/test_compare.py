"""Comparing one's own models on the same items: every expected number is computed here from the answers.

The models are scripted (or replayed) with known per-item answers, so the paired difference and the exact
McNemar p follow from counting: b items only A got right, c items only B got right, p = 2·P(X ≤ min(b, c))
for X ~ Binomial(b + c, 1/2).
"""

from __future__ import annotations

import json
import math
import sys
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from vlamb_nb import get_benchmark
from vlamb_nb.compare import Run, compare
from vlamb_nb.errors import DataError, SettingError
from vlamb_nb.models import ScriptedModel

N_VAGUE = 20
B = 400  # resamples: enough for intervals, fast on a busy machine


def exact_mcnemar(b: int, c: int) -> float:
    """Two-sided exact McNemar p by hand: twice the smaller binomial tail at 1/2, at most 1."""
    n, k = b + c, min(b, c)
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n)


def _wrong(gold: str) -> str:
    return "A" if gold != "A" else "B"


def _answering(items: pd.DataFrame, right: set[int], model_id: str) -> ScriptedModel:
    """A model right exactly on the items whose position is in ``right``."""
    gold = dict(zip(items["id"], items["gold"], strict=True))
    pos = {i: k for k, i in enumerate(items["id"])}

    def respond(req) -> str:
        item = req.meta["item_id"]
        return gold[item] if pos[item] in right else _wrong(gold[item])
    return ScriptedModel(respond, model_id=model_id)


@pytest.fixture(scope="module")
def vague_runs(tmp_path_factory):
    """Two VAGUE stores with known answers (A right on 0–13, B on 8–19 and the first 16 items only for C)."""
    d = tmp_path_factory.mktemp("vague")
    bench = get_benchmark("vague")
    src = bench.make_sample(d / "data", n=N_VAGUE)
    items = bench.load(src)
    right = {"a": set(range(0, 14)), "b": set(range(8, 20)), "c": set(range(0, 16, 2))}
    stores = {}
    for name, r in right.items():
        stores[name] = d / f"{name}.jsonl"
        bench.evaluate(_answering(items, r, f"model-{name}"), items, "vlm", store=stores[name], progress=False,
                       limit=16 if name == "c" else None)
    return {"src": src, "items": items, "right": right, "stores": stores}


def _pair(c, a: str, b: str, metric: str = "accuracy", slice_: str = "all") -> dict:
    p = c.pairs
    row = p[(p["model_a"] == a) & (p["model_b"] == b) & (p["metric"] == metric) & (p["slice"] == slice_)]
    assert len(row) == 1, p
    return row.iloc[0].to_dict()


def test_two_scripted_models_give_the_difference_and_exact_mcnemar_of_their_answers(vague_runs):
    s = vague_runs["stores"]
    c = compare([s["a"], s["b"]], sources={"vague": vague_runs["src"]}, n_resamples=B)
    a_right, b_right = vague_runs["right"]["a"], vague_runs["right"]["b"]
    only_a, only_b = len(a_right - b_right), len(b_right - a_right)  # 8 and 6
    row = _pair(c, "model-a", "model-b")
    assert row["diff"] == pytest.approx(100 * (len(a_right) - len(b_right)) / N_VAGUE)
    assert (row["discordant_a_only"], row["discordant_b_only"]) == (only_a, only_b)
    assert row["test"] == "mcnemar exact"  # 14 discordant items < 25
    assert row["p"] == pytest.approx(exact_mcnemar(only_a, only_b))
    assert row["ci_low"] <= row["diff"] <= row["ci_high"]
    vals = c.values[(c.values["metric"] == "accuracy") & (c.values["slice"] == "all")].set_index("model")
    assert vals.loc["model-a", "value"] == pytest.approx(100 * 14 / N_VAGUE)
    assert vals.loc["model-a", "rank"] == 1 and vals.loc["model-b", "rank"] == 2
    assert (vals["n"] == N_VAGUE).all() and (vals["dropped"] == 0).all()
    assert "data identity unknown" in " ".join(c.notes)


def test_a_model_missing_items_is_compared_on_the_common_items_and_the_rest_counted(vague_runs):
    s = vague_runs["stores"]
    c = compare([s["a"], s["c"]], sources=str(vague_runs["src"]), n_resamples=B)
    common = set(range(16))
    a_right, c_right = vague_runs["right"]["a"] & common, vague_runs["right"]["c"]
    vals = c.values[c.values["slice"] == "all"].set_index("model")
    assert vals.loc["model-a", "n"] == 16
    assert vals.loc["model-a", "dropped"] == N_VAGUE - 16 and vals.loc["model-c", "dropped"] == 0
    row = _pair(c, "model-a", "model-c")
    assert row["diff"] == pytest.approx(100 * (len(a_right) - len(c_right)) / 16)
    assert row["p"] == pytest.approx(exact_mcnemar(len(a_right - c_right), len(c_right - a_right)))
    assert any("dropped (answered by only some): model-a 4" in n for n in c.notes)


def test_holm_over_several_pairs_matches_the_hand_computed_adjustment(vague_runs):
    s = vague_runs["stores"]
    c = compare([s["a"], s["b"], s["c"]], sources=str(vague_runs["src"]), n_resamples=B)
    p = c.pairs
    assert len(p[p["slice"] == "all"]) == 3 and p["slice"].nunique() > 1
    holm = np.empty(len(p))
    for _, family in p.groupby(["metric", "slice"]):  # one family per number: the pairs of one metric and slice
        raw = family["p"].to_numpy(float)
        m = len(raw)
        assert m == 3 and (family["family"] == m).all()
        running = 0.0
        for rank, i in enumerate(np.argsort(raw)):  # step-down: (m − rank)·p, never below the previous, at most 1
            running = max(running, min(1.0, (m - rank) * raw[i]))
            holm[p.index.get_loc(family.index[i])] = running
    assert p["p_adjusted"].to_numpy(float) == pytest.approx(holm)
    bh = compare([s["a"], s["b"], s["c"]], sources=str(vague_runs["src"]), n_resamples=B, correction="bh")
    assert (bh.pairs["p_adjusted"].to_numpy() <= holm + 1e-12).all()
    base = compare([s["a"], s["b"], s["c"]], sources=str(vague_runs["src"]), n_resamples=B, baseline="model-b")
    assert set(zip(base.pairs["model_a"], base.pairs["model_b"], strict=True)) == {("model-a", "model-b"),
                                                                                   ("model-c", "model-b")}
    with pytest.raises(SettingError, match="baseline"):
        compare([s["a"], s["b"]], sources=str(vague_runs["src"]), baseline="nobody")


def _refadv_frame(hits: list[int], images: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"row_idx": range(len(hits)), "id": [str(i) for i in range(len(hits))],
                         "file_name": images, "iou": [0.9 if h else 0.1 for h in hits]})


def test_clustered_intervals_are_wider_when_rows_of_one_image_agree():
    rng = np.random.default_rng(3)
    per_image = rng.integers(0, 2, size=(20, 2))  # each image: A's and B's outcome, shared by its 6 rows
    a = np.repeat(per_image[:, 0], 6).tolist()
    b = np.repeat(per_image[:, 1], 6).tolist()
    clustered = [f"img{i // 6}.jpg" for i in range(120)]
    alone = [f"img{i}.jpg" for i in range(120)]

    def run(hits, images, name):
        return Run(name, "refadv", "direct", _refadv_frame(hits, images))
    by_image = compare([run(a, clustered, "A"), run(b, clustered, "B")], n_resamples=1000)
    by_row = compare([run(a, alone, "A"), run(b, alone, "B")], n_resamples=1000)
    pi, pr = by_image.pairs.iloc[0], by_row.pairs.iloc[0]
    assert pi["diff"] == pytest.approx(pr["diff"])
    assert pi["p"] == pytest.approx(pr["p"])  # McNemar counts rows either way
    width = lambda r: r["ci_high"] - r["ci_low"]  # noqa: E731
    assert width(pi) > 1.5 * width(pr)
    assert "cluster" in pi["ci_method"]
    vi, vr = by_image.values.iloc[0], by_row.values.iloc[0]
    assert vi["n_clusters"] == 20 and vr["n_clusters"] == 120 and vi["ci_unit"] == "image"
    assert vi["ci_high"] - vi["ci_low"] > vr["ci_high"] - vr["ci_low"]


def test_a_continuous_score_uses_the_paired_bootstrap():
    rng = np.random.default_rng(0)
    n = 60
    gold = rng.integers(0, 2, n)

    def frame(pred_right: np.ndarray, scores: np.ndarray) -> pd.DataFrame:
        pred = np.where(pred_right, gold, 1 - gold)
        return pd.DataFrame({"id": [f"v{i}" for i in range(n)], "label_true": gold, "label_pred_filled": pred,
                             "explanation_score": scores})
    right_a, right_b = rng.random(n) < 0.8, rng.random(n) < 0.6
    sa, sb = rng.uniform(0.5, 0.9, n), rng.uniform(0.4, 0.8, n)
    c = compare([Run("A", "vflute", "zero_shot", frame(right_a, sa)),
                 Run("B", "vflute", "zero_shot", frame(right_b, sb))], n_resamples=B)
    expl = _pair(c, "A", "B", "explanation score", "overall")
    assert expl["diff"] == pytest.approx(100 * (sa.mean() - sb.mean()))
    assert expl["test"].startswith("paired bootstrap")
    assert 1 / (B + 1) <= expl["p"] <= 1 and expl["ci_low"] <= expl["diff"] <= expl["ci_high"]

    def macro_f1(pred: np.ndarray) -> float:  # by hand: the mean over both classes of 2·TP / (gold + predicted)
        return np.mean([2 * np.sum((gold == k) & (pred == k)) / (np.sum(gold == k) + np.sum(pred == k))
                        for k in (0, 1)])
    f1 = _pair(c, "A", "B", "F1@0", "overall")
    assert f1["diff"] == pytest.approx(100 * (macro_f1(np.where(right_a, gold, 1 - gold))
                                              - macro_f1(np.where(right_b, gold, 1 - gold))))
    assert f1["test"].startswith("paired bootstrap")


def _runs_with(data_a, data_b, setting_b: str = "direct"):
    hits = [1, 0, 1, 1, 0, 1]
    images = [f"i{i}" for i in range(6)]
    return [Run("A", "refadv", "direct", _refadv_frame(hits, images), data=data_a),
            Run("B", "refadv", setting_b, _refadv_frame(hits[::-1], images), data=data_b)]


RELEASE = {"kind": "release", "release": "hub:dddraxxx/ref-adv-s", "revision": "abc123", "n_items": 1142,
           "label": "Ref-Adv-s"}


def test_runs_of_different_data_or_settings_are_refused_unless_asked():
    other = {**RELEASE, "revision": "def456"}
    with pytest.raises(SettingError, match=r"different data: A ran on hub:dddraxxx/ref-adv-s@abc123, B on "
                                           r"hub:dddraxxx/ref-adv-s@def456.*--allow-different-data"):
        compare(_runs_with(RELEASE, other), n_resamples=B)
    allowed = compare(_runs_with(RELEASE, other), n_resamples=B, allow_different_data=True)
    assert any("compared across different data (allowed)" in n for n in allowed.notes)
    sample = {"kind": "sample", "release": None, "revision": None, "n_items": 6, "label": "generated sample"}
    with pytest.raises(SettingError, match="only with other sample runs"):
        compare(_runs_with(RELEASE, sample), n_resamples=B)
    both_samples = compare(_runs_with(sample, sample), n_resamples=B)
    assert any("generated sample" in n and "not a measurement" in n for n in both_samples.notes)
    limited = compare(_runs_with(RELEASE, {**RELEASE, "n_items": 100}), n_resamples=B)  # a limit: the same data
    assert len(limited.pairs) == 3  # Acc@0.5, @0.75 and @0.9: one pair each
    with pytest.raises(SettingError, match="different settings.*A has direct; B has cot"):
        compare(_runs_with(None, None, setting_b="cot"), n_resamples=B)
    with pytest.raises(DataError, match="nothing compared: refadv: no setting run by every model"):
        compare(_runs_with(None, None, "cot"), n_resamples=B, allow_different_settings=True)


def test_cli_compare_two_stores_as_json(vague_runs, tmp_path, capsys):
    from vlamb_nb.cli import main

    s = vague_runs["stores"]
    rc = main(["compare", str(s["a"]), str(s["b"]), "--source", f"vague={vague_runs['src']}", "--json",
               "--n-resamples", str(B), "--out", str(tmp_path / "cmp")])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    row = next(p for p in out["pairs"] if p["slice"] == "all")
    a_right, b_right = vague_runs["right"]["a"], vague_runs["right"]["b"]
    assert row["diff"] == pytest.approx(100 * (len(a_right) - len(b_right)) / N_VAGUE)
    assert row["p"] == pytest.approx(exact_mcnemar(len(a_right - b_right), len(b_right - a_right)))
    for f in ("comparison.md", "comparison.json", "comparison.png", "comparison.pdf"):
        assert (tmp_path / "cmp" / f).is_file()
    bare = tmp_path / "bare.jsonl"  # a store with no run record yet, and without its data: one line, no traceback
    bare.write_bytes(s["a"].read_bytes())
    assert main(["compare", str(bare), str(s["b"]), "--json"]) == 2
    assert "--source vague=PATH" in capsys.readouterr().err


def test_cli_example_is_skipped_without_the_released_data(tmp_path, monkeypatch, capsys):
    from vlamb_nb.cli import main

    monkeypatch.setenv("VLAMB_SHARED_DATA", str(tmp_path))  # a folder without refadv/predictions
    assert main(["compare", "--example"]) == 3
    assert "released Ref-Adv" in capsys.readouterr().err


@pytest.mark.shared
def test_example_compares_the_released_runs_on_their_common_rows(shared_data):
    from vlamb_nb.benchmarks.refadv.report import EXAMPLE_COMPARISON, example_runs
    from vlamb_nb.benchmarks.refadv.score import read_official_predictions
    from vlamb_nb.compare import example

    c = example(example_runs(), title=EXAMPLE_COMPARISON, n_resamples=200)
    files = sorted((shared_data / "refadv" / "predictions").glob("*_direct_predictions.jsonl"))
    assert len(c.models) == len(files) and (c.values[c.values["slice"] == "overall"]["n"] == 1142).all()
    hits, negated = {}, None
    for f in files:
        df = read_official_predictions(f)
        hits[str(df["model"].iloc[0]).replace("Qwen/", "")] = df.set_index("row_idx")["official_hit"].astype(int)
        negated = df.set_index("row_idx")["use_negation"].astype(bool)
    # every declared slice is compared: each model's value on the negated rows, and each pair's test on them,
    # adjusted within the family of that slice's pairs
    neg = c.values[c.values["slice"] == "Neg"].set_index("model")
    assert set(neg.index) == set(hits) and (neg["n"] == int(negated.sum())).all()
    for m, h in hits.items():
        assert neg.loc[m, "value"] == pytest.approx(100 * h[negated].mean())
        assert neg.loc[m, "ci_low"] < neg.loc[m, "value"] < neg.loc[m, "ci_high"]
    for sl, mask in (("overall", negated | ~negated), ("Neg", negated)):
        family = c.pairs[(c.pairs["slice"] == sl) & (c.pairs["metric"] == "Acc@0.5")]  # a family: a metric and slice
        assert len(family) == len(hits) * (len(hits) - 1) // 2 and (family["family"] == len(family)).all()
        for a, b in combinations(sorted(hits), 2):
            row = _pair(c, a, b, "Acc@0.5", sl) if ((c.pairs["model_a"] == a) & (c.pairs["model_b"] == b)).any() \
                else _pair(c, b, a, "Acc@0.5", sl)
            x, y = hits[row["model_a"]][mask], hits[row["model_b"]].reindex(hits[row["model_a"]].index)[mask]
            assert row["diff"] == pytest.approx(100 * (x.mean() - y.mean()), abs=1e-9)
            assert (row["discordant_a_only"], row["discordant_b_only"]) == (int(((x == 1) & (y == 0)).sum()),
                                                                             int(((x == 0) & (y == 1)).sum()))


def test_two_openai_models_on_different_endpoints_get_different_stores(tmp_path):
    from vlamb_nb.sweep import load_config, store_path

    spec = "openai:Qwen/Qwen2.5-VL-7B-Instruct"
    cfg = {"models": [{"spec": spec, "options": {"base_url": "http://127.0.0.1:8001/v1"}},
                      {"spec": spec, "options": {"base_url": "http://127.0.0.1:8002/v1"}}],
           "benchmarks": [{"name": "vague", "settings": ["vlm"]}], "quantization": ["none"]}
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(cfg))
    jobs = load_config(p).jobs
    paths = {store_path(j, "vague", "vlm") for j in jobs}
    assert len(paths) == 2
    assert [j.model_name for j in jobs] == [f"{spec}@127.0.0.1-8001", f"{spec}@127.0.0.1-8002"]


def _recording(items: pd.DataFrame, id_col: str, setting: str, right: set[int], model: str) -> list[dict]:
    return [{"item_id": str(i), "setting": setting, "depth": 0, "model": model,
             "text": g if k in right else _wrong(g)}
            for k, (i, g) in enumerate(zip(items[id_col], items["gold"], strict=True))]


@pytest.mark.slow
def test_a_sweep_of_two_replayed_models_on_two_papers_ends_with_the_comparison(tmp_path):
    pytest.importorskip("submitit")
    from vlamb_nb.sweep import sweep

    papers = {"vague": ("id", "vlm"), "mucar": ("uid", "full")}
    srcs, items = {}, {}
    for paper in papers:
        bench = get_benchmark(paper)
        srcs[paper] = bench.make_sample(tmp_path / paper, n=12)
        items[paper] = bench.load(srcs[paper])
    right = {"x": lambda n: set(range(0, n, 1)) - {1, 5}, "y": lambda n: set(range(0, n, 2))}
    models = []
    for name, rule in right.items():
        rec = []
        for paper, (col, setting) in papers.items():
            rec += _recording(items[paper], col, setting, rule(len(items[paper])), f"rec-{name}")
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rec))
        models.append({"spec": f"replay:{path}", "name": f"model-{name}"})
    cfg = {"name": "two", "executor": "local", "out_dir": str(tmp_path / "out"), "quantization": ["none"],
           "progress": False, "models": models,
           "benchmarks": [{"name": p, "source": str(srcs[p]), "settings": [papers[p][1]]} for p in papers]}
    conf = tmp_path / "sweep.yaml"
    conf.write_text(yaml.safe_dump(cfg))
    assert sweep(conf, quiet=True) == 0
    out = tmp_path / "out"
    for f in ("comparison.md", "comparison.json", "comparison.png", "comparison.pdf"):
        assert (out / f).is_file(), f
    result = json.loads((out / "comparison.json").read_text())
    assert "Comparison of 2 models" in (out / "summary.md").read_text()
    n = len(items["vague"])
    xr, yr = right["x"](n), right["y"](n)
    row = next(p for p in result["pairs"] if p["paper"] == "vague" and p["slice"] == "all")
    assert (row["model_a"], row["model_b"]) == ("model-x", "model-y")
    assert row["diff"] == pytest.approx(100 * (len(xr) - len(yr)) / n)
    assert row["p"] == pytest.approx(exact_mcnemar(len(xr - yr), len(yr - xr)))
    q = items["mucar"]
    xq, yq = right["x"](len(q)), right["y"](len(q))
    acc_q = next(p for p in result["pairs"] if p["paper"] == "mucar" and p["metric"] == "Acc_q")
    assert acc_q["diff"] == pytest.approx(100 * (len(xq) - len(yq)) / len(q))
    assert "cluster" in acc_q["ci_method"]
    groups = q["group"].to_numpy()
    pair_right = {m: [all(k in r for k in np.flatnonzero(groups == g)) for g in dict.fromkeys(groups)]
                  for m, r in (("x", xq), ("y", yq))}
    acc_p = next(p for p in result["pairs"] if p["paper"] == "mucar" and p["metric"] == "Acc_p")
    assert acc_p["diff"] == pytest.approx(100 * (np.mean(pair_right["x"]) - np.mean(pair_right["y"])))
    assert acc_p["unit"] == "pair"
    # resumable: a second sweep asks nothing again and writes the same comparison
    before = {p: p.read_text() for p in (out / "predictions").rglob("*.jsonl")}
    assert sweep(conf, quiet=True) == 0
    assert {p: p.read_text() for p in (out / "predictions").rglob("*.jsonl")} == before
    assert json.loads((out / "comparison.json").read_text())["pairs"] == result["pairs"]
    # the sweep folder copied where its data is not: compared from its stores' run records, said so
    import shutil

    for paper, src in srcs.items():
        shutil.move(src, tmp_path / f"gone-{paper}")
    away = compare([out], n_resamples=B)
    assert sum("is not at hand; compared from its run record" in n for n in away.notes) == 4
    mine = away.pairs.set_index(["paper", "metric", "slice"])
    assert mine.loc[("vague", "accuracy", "all"), "diff"] == pytest.approx(row["diff"])
    assert mine.loc[("mucar", "Acc_p", "Overall"), "diff"] == pytest.approx(acc_p["diff"])


def test_a_reproduce_run_folder_is_read_from_its_stores_and_its_notebook_source(vague_runs, tmp_path):
    import shutil

    run = tmp_path / "runs" / "r1"
    for name in ("a", "b"):
        target = run / "vague" / f"model-{name}" / "vague__vlm.jsonl"
        target.parent.mkdir(parents=True)
        shutil.copyfile(vague_runs["stores"][name], target)
    (run / "results.json").write_text(json.dumps({"vague": {"ok": True, "parameters": {
        "source": str(vague_runs["src"])}, "results": {}}}))
    c = compare([run], n_resamples=B)
    a_right, b_right = vague_runs["right"]["a"], vague_runs["right"]["b"]
    row = _pair(c, "model-a", "model-b")
    assert row["diff"] == pytest.approx(100 * (len(a_right) - len(b_right)) / N_VAGUE)
    assert row["p"] == pytest.approx(exact_mcnemar(len(a_right - b_right), len(b_right - a_right)))
    (run / "results.json").write_text(json.dumps({"vague": {"ok": True, "parameters": {}, "results": {}}}))
    # no source recorded: the run records its scoring wrote beside the stores give the same numbers
    pd.testing.assert_frame_equal(compare([run], n_resamples=B).pairs, c.pairs)
    for rec in run.rglob("*.record.json"):
        rec.unlink()
    with pytest.raises(DataError, match="--source vague=PATH"):
        compare([run], n_resamples=B)


def test_a_notebooks_model_path_is_no_run_to_compare(vague_runs, tmp_path):
    """The tiny checkpoint's three answers a notebook keeps under ``<paper>/model-path/`` show the model path: two
    offline runs compare their evaluations (it made them "runs of different settings", nothing compared)."""
    import shutil

    from vlamb_nb.paths import MODEL_PATH_DIR as MODEL_PATH_FOLDER

    for run, store in (("r1", "a"), ("r2", "b")):
        for where in (f"model-{store}", f"{MODEL_PATH_FOLDER}/tiny"):
            target = tmp_path / run / "vague" / where / "vague__vlm.jsonl"
            target.parent.mkdir(parents=True)
            shutil.copyfile(vague_runs["stores"][store], target)
        (tmp_path / run / "results.json").write_text(json.dumps({"vague": {"ok": True, "parameters": {
            "source": str(vague_runs["src"])}, "results": {}}}))
    c = compare([tmp_path / "r1", tmp_path / "r2"], n_resamples=B)
    assert set(c.values["model"]) == {"model-a", "model-b"}
    assert set(c.values["setting"]) == {"vlm"}


def test_the_package_calls_compare_and_stays_light(vague_runs):
    import subprocess
    import sys

    import vlamb_nb

    c = vlamb_nb.compare([vague_runs["stores"]["a"], vague_runs["stores"]["b"]], sources=str(vague_runs["src"]),
                         n_resamples=B)
    assert len(c.pairs) == 3 and isinstance(c.values, pd.DataFrame)
    code = "import sys, vlamb_nb; print(sorted(m for m in ('numpy', 'pandas', 'torch') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _with_data(src: Path, dst: Path, data: dict) -> Path:
    """A copy of a store whose run meta records ``data`` (what the runner stores with every record)."""
    recs = [json.loads(line) for line in src.read_text().splitlines() if line.strip()]
    dst.write_text("".join(json.dumps({**r, "run": {**r["run"], "data": data}}) + "\n" for r in recs))
    return dst


def test_cli_refuses_runs_of_different_data_in_one_line_unless_asked(vague_runs, tmp_path, capsys):
    from vlamb_nb.cli import main

    s = vague_runs["stores"]
    release = {"kind": "release", "release": "hub:HazelNam/vague-bench", "revision": "1111111", "n_items": 1000,
               "label": "VAGUE"}
    sample = {"kind": "sample", "release": None, "revision": None, "n_items": N_VAGUE, "label": "generated sample"}
    a = _with_data(s["a"], tmp_path / "a.jsonl", release)
    b = _with_data(s["b"], tmp_path / "b.jsonl", sample)
    args = ["compare", str(a), str(b), "--source", str(vague_runs["src"]), "--n-resamples", str(B), "--out",
            str(tmp_path / "cmp")]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "runs of different data" in err and "generated sample" in err
    assert main([*args, "--allow-different-data", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["allowed"] and "different data" in out["allowed"][0]
    assert out["models"][0]["data"]["vague/vlm"] == release


def test_different_deviations_are_compared_and_listed_per_model():
    a, b = _runs_with(RELEASE, RELEASE)
    a.deviations = ["quantization: paper full/half precision weights; here 4bit [affects all]", "decoding: greedy"]
    b.deviations = ["decoding: greedy"]
    c = compare([a, b], n_resamples=B)
    assert len(c.pairs) == 3  # Acc@0.5, @0.75, @0.9
    md = c.markdown()
    assert "- **A**: refadv/direct; own deviations: quantization" in md
    assert "- **B**: refadv/direct; own deviations: none" in md
    assert "Deviations of every model:\n\n- decoding: greedy" in md
    assert {m["model"]: m["deviations"] for m in c.to_dict()["models"]}["A"][1].startswith("quantization")


def test_one_model_name_from_two_places_is_never_merged():
    a, b = _runs_with(None, None)
    b.model = a.model = "openai:m"
    a.endpoint, b.endpoint = "http://127.0.0.1:8001/v1", "http://127.0.0.1:8002/v1"
    c = compare([a, b], n_resamples=B)
    assert set(c.values["model"]) == {"openai:m @ 127.0.0.1:8001", "openai:m @ 127.0.0.1:8002"}
    x, y = _runs_with(None, None)
    x.model = y.model = "m"
    x.origin, y.origin = "runs/one/refadv__direct.jsonl", "runs/two/refadv__direct.jsonl"
    assert set(compare([x, y], n_resamples=B).values["model"]) == {"m (one)", "m (two)"}
    # two run folders of several settings each: every setting of one folder gets one name, so settings pair
    runs = []
    for folder in ("a", "b"):
        for setting in ("direct", "cot"):
            r, _ = _runs_with(None, None)
            r.model, r.setting, r.origin = "m", setting, f"runs/{folder}/refadv/m/refadv__{setting}.jsonl"
            runs.append(r)
    c = compare(runs, n_resamples=B)
    assert set(c.values["model"]) == {"m (a)", "m (b)"} and set(c.values["setting"]) == {"direct", "cot"}


def test_racquet_shares_are_compared_by_image_with_the_paired_bootstrap():
    rng = np.random.default_rng(1)
    n = 48
    images = [f"http://images/{i // 4}.jpg" for i in range(n)]  # four questions per image

    def frame(labels) -> pd.DataFrame:
        return pd.DataFrame({"id": [f"general-{i}" for i in range(n)], "subset": "general", "image_url": images,
                             "label": labels})
    la, lb = rng.choice(["A", "B", "C"], n, p=[0.6, 0.3, 0.1]), rng.choice(["A", "B", "C"], n, p=[0.3, 0.4, 0.3])
    c = compare([Run("A", "racquet", "direct", frame(la)), Run("B", "racquet", "direct", frame(lb))], n_resamples=B)
    explicit = _pair(c, "A", "B", "Explicit share", "GENERAL")
    assert explicit["diff"] == pytest.approx(100 * (np.mean(la == "A") - np.mean(lb == "A")))
    assert explicit["test"].startswith("paired bootstrap") and "cluster" in explicit["ci_method"]
    risk = c.values[c.values["metric"] == "High Risk share"].set_index("model")
    assert not risk["higher_is_better"].any() and risk.loc["A", "rank"] == 1  # fewer risky answers rank first
    assert (risk["n_clusters"] == 12).all()
    with pytest.raises(DataError, match=r"nothing compared: racquet direct: not every run has its label \(no judge "
                                        r"labels.*\): Explicit share, High Risk share not compared"):
        compare([Run("A", "racquet", "direct", frame([None] * n)), Run("B", "racquet", "direct", frame(lb))],
                n_resamples=B)


# -- what cannot be compared is refused in one line, exit 2, by the command a user runs ----------------------
CLI = [sys.executable, "-c", "import sys; from vlamb_nb.cli import main; sys.exit(main(sys.argv[1:]))", "compare"]


def _broken_and_disjoint(d: Path, vague_runs) -> dict[str, Path]:
    """Stores a user may bring: one whose every request failed, two on disjoint items, one of another setting."""
    bench, items = get_benchmark("vague"), vague_runs["items"]
    out = {"failed": d / "failed.jsonl", "first": d / "first.jsonl", "last": d / "last.jsonl", "lm": d / "lm.jsonl"}
    bench.evaluate(ScriptedModel(lambda r: 1 / 0, model_id="broken"), items, "vlm", store=out["failed"],
                   progress=False)
    bench.evaluate(_answering(items, set(range(20)), "first-half"), items.iloc[:8], "vlm", store=out["first"],
                   progress=False)
    bench.evaluate(_answering(items, set(range(20)), "second-half"), items.iloc[8:], "vlm", store=out["last"],
                   progress=False)
    bench.evaluate(_answering(items, set(range(20)), "model-lm"), items, "lm", store=out["lm"], progress=False)
    return out


def _not_runs(d: Path) -> dict[str, Path]:
    """Paths that are no run: folders with an empty, malformed or wrong-shaped results.json, a bare folder, an
    empty file, a text file, an image, JSON Lines that name no benchmark."""
    out = {}
    for name, text in (("empty_results", ""), ("malformed_results", '{"vague": {"ok": tr'),
                       ("list_results", "[1, 2]")):
        (d / name).mkdir()
        (d / name / "results.json").write_text(text)
        out[name] = d / name
    (d / "bare").mkdir()
    out["bare"] = d / "bare"
    out["empty_file"] = d / "empty.jsonl"
    out["empty_file"].write_text("")
    out["text_file"] = d / "notes.txt"
    out["text_file"].write_text("model A looked better to me\n")
    out["image"] = d / "figure.png"
    out["image"].write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\xff\xfe")
    out["no_benchmark"] = d / "answers.jsonl"
    out["no_benchmark"].write_text('{"id": "1", "answer": "A"}\n')
    return out


@pytest.fixture(scope="module")
def refused(vague_runs, tmp_path_factory):
    """Every refusal, by ``vlamb-nb compare``: {case: (rc, stdout, stderr)}. Each class of refusal is its own
    process (all started at once); the other paths that are no run go through the same ``main`` in this one."""
    import shutil
    import subprocess

    d = tmp_path_factory.mktemp("refused")
    s, src = vague_runs["stores"], str(vague_runs["src"])
    copy = d / "copy-of-a.jsonl"
    shutil.copyfile(s["a"], copy)
    extra = _broken_and_disjoint(d, vague_runs)
    src_args = ["--source", src, "--n-resamples", "100", "--out", str(d / "out")]
    cases = {
        "one_model": [str(s["a"]), *src_args],
        "same_file_twice": [str(s["b"]), str(d / ".." / d.name / "copy-of-a.jsonl"), str(copy), *src_args],
        "identical_records": [str(s["a"]), str(copy), *src_args],
        "no_answers": [str(extra["failed"]), str(s["a"]), *src_args],
        "no_common_items": [str(extra["first"]), str(extra["last"]), *src_args],
        "nothing_compared": [str(s["a"]), str(extra["lm"]), "--allow-different-settings", *src_args],
    }
    not_runs = {f"not_a_run:{name}": [str(path), str(s["a"]), *src_args] for name, path in _not_runs(d).items()}
    in_process = {k: v for k, v in not_runs.items() if k != "not_a_run:malformed_results"}
    procs = {k: subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for k, args in {**cases, **not_runs}.items() if k not in in_process}
    out = {k: _in_process(args) for k, args in in_process.items()}  # the same main(), without a process each
    return out | {k: (p.wait(timeout=300), p.stdout.read(), p.stderr.read()) for k, p in procs.items()}


def _in_process(args: list[str]) -> tuple[int, str, str]:
    import contextlib
    import io

    from vlamb_nb.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["compare", *args])
    return rc, out.getvalue(), err.getvalue()


REFUSALS = {
    "one_model": "a comparison needs at least two models, or one model in two settings of a paper; all 1 run(s) "
                 "given are of model-a",
    "same_file_twice": "the same run twice (the same file): model-a",
    "identical_records": "the same run twice (two files with identical records): model-a",
    "no_answers": "broken has no answers: every one of its 20 requests failed (most often: ZeroDivisionError",
    "no_common_items": "vague vlm: no item answered by every model (first-half answered 8, second-half answered 12)",
    "nothing_compared": "nothing compared: vague: no setting run by every model",
    "not_a_run:empty_results": "results.json, line 1: not valid JSON",
    "not_a_run:malformed_results": "results.json, line 1: not valid JSON",
    "not_a_run:list_results": "expected a JSON object of a reproduce run's notebooks, got list",
    "not_a_run:bare": "not a run: neither a sweep folder",
    "not_a_run:empty_file": "an empty file: not a run",
    "not_a_run:text_file": "not valid JSON",
    "not_a_run:image": "not UTF-8 text",
    "not_a_run:no_benchmark": "not a run: neither a prediction store",
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_compare_refuses_in_one_line_with_exit_2(refused, case):
    rc, out, err = refused[case]
    assert rc == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vlamb-nb: error: "), err
    assert REFUSALS[case] in lines[0]
    assert not out.strip()  # nothing half-compared is printed


def test_few_common_items_are_named_and_one_item_has_no_interval(vague_runs, tmp_path, capsys):
    from vlamb_nb.cli import main

    s, items = vague_runs["stores"], vague_runs["items"]
    one = tmp_path / "one.jsonl"
    get_benchmark("vague").evaluate(_answering(items, {0}, "model-one"), items.iloc[:1], "vlm", store=one,
                                    progress=False)
    rc = main(["compare", str(s["a"]), str(one), "--source", str(vague_runs["src"]), "--json", "--n-resamples",
               str(B), "--out", str(tmp_path / "cmp")])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    whole = next(f for f in out["few"] if f["slice"] == "all")
    assert whole["n"] == 1 and whole["interval"] is False and "no interval" in whole["why"]
    row = next(v for v in out["values"] if v["slice"] == "all" and v["model"] == "model-a")
    assert row["value"] == 100.0 and row["ci_low"] is None and row["ci_high"] is None
    assert row["rank_low"] is None and row["rank_high"] is None
    assert any("accuracy (all) on 1 item: no interval" in n for n in out["notes"])
    md = (tmp_path / "cmp" / "comparison.md").read_text()
    assert "100.0 [100.0, 100.0]" not in md and "no interval" in md
    pair = next(p for p in out["pairs"] if p["slice"] == "all")
    assert pair["ci_low"] is None and pair["diff"] == 0.0
    # 20 items: named as few (below 30), with intervals
    c = compare([s["a"], s["b"]], sources=str(vague_runs["src"]), n_resamples=B)
    assert {(f["slice"], f["n"], f["interval"]) for f in c.few} >= {("all", N_VAGUE, True)}
    assert any(f"accuracy (all) on {N_VAGUE} items: few (below 30 items)" in n for n in c.notes)


def test_enough_items_and_clusters_are_not_named_as_few():
    rng = np.random.default_rng(5)
    images = [f"img{i // 2}.jpg" for i in range(60)]  # 60 rows on 30 images
    c = compare([Run("A", "refadv", "direct", _refadv_frame(rng.integers(0, 2, 60).tolist(), images)),
                 Run("B", "refadv", "direct", _refadv_frame(rng.integers(0, 2, 60).tolist(), images))], n_resamples=B)
    assert c.few == [] and c.to_dict()["few"] == []
    few_images = [f"img{i // 10}.jpg" for i in range(60)]  # 60 rows, but on 6 images: the intervals are rough
    c = compare([Run("A", "refadv", "direct", _refadv_frame(rng.integers(0, 2, 60).tolist(), few_images)),
                 Run("B", "refadv", "direct", _refadv_frame(rng.integers(0, 2, 60).tolist(), few_images))],
                n_resamples=B)
    assert [(f["n"], f["n_clusters"], f["ci_unit"]) for f in c.few] == [(60, 6, "image")] * 3  # each Acc@t
    assert "below 30 rows or 10 images" in c.few[0]["why"]


def test_a_run_frame_whose_every_item_failed_is_refused():
    a = _refadv_frame([1, 0, 1], ["i0", "i1", "i2"])
    b = a.assign(error="backend_error: connection refused")
    with pytest.raises(DataError, match="B has no answers in refadv direct: every one of its 3 items failed "
                                        r"\(most often: backend_error: connection refused\)"):
        compare([Run("A", "refadv", "direct", a), Run("B", "refadv", "direct", b)], n_resamples=B)
    some = a.assign(error=["", "backend_error: timeout", None])  # a failed item counts as wrong, as in the paper
    c = compare([Run("A", "refadv", "direct", a), Run("B", "refadv", "direct", some)], n_resamples=B)
    acc = c.values[c.values["metric"] == "Acc@0.5"].set_index("model")
    assert acc.loc["B", "value"] == pytest.approx(100 * 2 / 3)


def test_a_store_of_two_runs_that_differ_only_in_decoding_is_refused_naming_both(vague_runs, tmp_path):
    """Compare tells runs apart as every scorer does (the run identity: decoding, prompts, data, seed too), not by
    model and setting alone: two runs in one store are never compared as one."""
    import fixtures_stored as F

    bench = get_benchmark("vague")
    items = vague_runs["items"].head(4)
    store = F.one_store(tmp_path / "two.jsonl",  # two decodings in one file, as written before one run per file
                        *(lambda p, t=t: bench.evaluate(_answering(items, {0, 1}, "model-x"), items, "vlm", store=p,
                                                        progress=False, max_new_tokens=t) for t in (8, 16)))
    with pytest.raises(DataError, match=r"the store holds several runs, which are never compared together: \[0\] "
                                        r"model-x .*\[1\] model-x .*compare stores of one run each"):
        compare([store, vague_runs["stores"]["a"]], sources=str(vague_runs["src"]), n_resamples=B)


def test_one_models_settings_are_compared_with_each_other_as_an_ablation(tmp_path):
    """Two settings of one model (direct against CoT) are paired on the items both answered, as two models are:
    each named by its setting, said in the notes, the same difference as the paper's compare_runs step and as a
    count by hand; the items page shows both settings' answers. One model in one setting per paper is still
    refused."""
    import fixtures_stored as F

    from vlamb_nb.cli import main
    from vlamb_nb.report_items import comparison_links, comparison_view

    bench = get_benchmark("vague")
    src = bench.make_sample(tmp_path / "data", n=N_VAGUE)
    items = bench.load(src)
    stores, scored = {}, {}
    for setting in ("vlm", "vlm_cot"):
        stores[setting] = tmp_path / f"vague__{setting}.jsonl"
        scored[setting] = bench.evaluate(F.model("model-a"), items, setting, store=stores[setting], progress=False)
    c = compare(list(stores.values()), sources={"vague": src}, n_resamples=B)
    assert set(c.values["model"]) == {"model-a · vlm", "model-a · vlm_cot"}
    assert any("one model (model-a) in 2 settings" in n for n in c.notes)
    row = _pair(c, "model-a · vlm", "model-a · vlm_cot")
    right = {s: {str(i) for i, ok, err in zip(df["id"], df["correct"], df["error"], strict=True)
                 if ok is True and not (isinstance(err, str) and err)} for s, df in scored.items()}
    assert right["vlm"] != right["vlm_cot"]  # the settings answer differently
    assert row["diff"] == pytest.approx(100 * (len(right["vlm"]) - len(right["vlm_cot"])) / N_VAGUE)
    assert row["p"] == pytest.approx(exact_mcnemar(len(right["vlm"] - right["vlm_cot"]),
                                                   len(right["vlm_cot"] - right["vlm"])))
    step = bench.compare_runs(scored["vlm"], scored["vlm_cot"], n_resamples=B).set_index(["metric", "slice"])
    assert step.loc[("accuracy", "all"), "diff"] == pytest.approx(row["diff"])
    view = comparison_view(c)
    assert view.models == ["model-a · vlm", "model-a · vlm_cot"] and all(r["m"][0] and r["m"][1] for r in view.rows)
    assert all(r["q"] for r in view.rows) and any("the prompt shown is the vlm run's" in n for n in view.notes)
    assert None not in comparison_links(view, c)["pairs"]
    rc = main(["compare", *map(str, stores.values()), "--source", f"vague={src}", "--n-resamples", "200",
               "--out", str(tmp_path / "cmp")])
    assert rc == 0 and (tmp_path / "cmp").is_dir()
    other = get_benchmark("mucar")
    msrc = other.make_sample(tmp_path / "mdata", n=4)
    mstore = tmp_path / "mucar__full.jsonl"
    other.evaluate(F.model("model-a"), other.load(msrc), "full", store=mstore, progress=False)
    with pytest.raises(SettingError, match="at least two models, or one model in two settings of a paper"):
        compare([stores["vlm"], mstore], sources={"vague": src, "mucar": msrc}, n_resamples=B)


def test_a_run_folder_whose_split_holds_other_items_compares_the_rest_and_says_so(tmp_path):
    """RACQUET's §5 control on cropped images is a split of other items than the notebook's sample: compare leaves
    it out with one line and compares the rest (it refused the whole run folder)."""
    import shutil

    from vlamb_nb.compare import _reproduce_runs
    from vlamb_nb.datahome import sample_identity, tag

    bench = get_benchmark("vague")
    folder = tmp_path / "run"
    sample = bench.make_sample(folder / "vague" / "sample-n4-seed0", n=4, seed=0)
    items = tag(bench.load(sample), sample_identity("vague", n_items=4, seed=0))  # as a notebook tags its sample
    (folder / "results.json").write_text(json.dumps({"vague": {"ok": True, "parameters": {}}}))
    model = ScriptedModel(lambda r: "A", model_id="m")
    bench.evaluate(model, items, "lm", store=bench.store_path(folder / "vague", model.info, "lm"), progress=False)
    other = bench.load(bench.make_sample(tmp_path / "elsewhere", n=3, seed=5))
    other["id"] = [f"other-{k}" for k in range(3)]
    other = tag(other, sample_identity("vague", n_items=3, seed=5))
    bench.evaluate(model, other, "lm", store=bench.store_path(folder / "vague" / "crops", model.info, "lm"),
                   progress=False)
    left: list[str] = []
    runs = _reproduce_runs(folder, None, unloaded=left)
    assert [r.setting for r in runs] == ["lm"] and any("under crops/" in x and "not compared" in x for x in left)
    shutil.rmtree(folder / "vague" / "crops")
    assert len(_reproduce_runs(folder, None, unloaded=[])) == 1
