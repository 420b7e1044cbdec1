"""The report card: ranks with intervals, paired comparisons on the same rows, and a card that says what it is."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from vlamb_nb import report_card as rc


def test_cluster_weights_draw_whole_clusters():
    clusters = np.array(["a", "a", "b", "c", "c", "c"])
    w = rc.resample_weights(6, clusters, n_resamples=500, seed=1)
    assert w.shape == (500, 6)
    assert (w[:, 0] == w[:, 1]).all() and (w[:, 3] == w[:, 4]).all() and (w[:, 4] == w[:, 5]).all()
    assert set(np.unique(w[:, 2])) <= {0, 1, 2, 3} and (w[:, [0, 2, 3]].sum(axis=1) == 3).all()
    assert rc.resample_weights(6, None, n_resamples=50, seed=1).sum(axis=1).tolist() == [6] * 50


def test_rank_interval_is_narrow_when_ours_is_far_ahead_and_wide_when_it_is_not():
    n = 400
    good = rc.Comparator("weak", 40.0, n=1000)
    close = rc.Comparator("close", 70.0, n=50)
    stat = rc.weighted_mean(np.r_[np.ones(290), np.zeros(110)])  # ours: 72.5%
    h = rc.headline_among_published(paper="p", metric="acc", slice="all", stat=stat, n_rows=n,
                                    published=[good, close], n_resamples=2000, seed=0)
    assert h.value == pytest.approx(72.5) and h.rank == 1 and h.n_ranked == 3
    assert h.rank_low == 1 and h.rank_high == 2  # "close" (n=50) overtakes us in some resamples, "weak" never
    assert h.ci_low < 72.5 < h.ci_high
    assert good.ci_low is not None and good.ci_low < 40 < good.ci_high  # Wilson at the published n
    worse = rc.headline_among_published(paper="p", metric="risk", slice="all", stat=stat, n_rows=n,
                                        published=[rc.Comparator("low", 10.0, n=500)], higher_is_better=False,
                                        n_resamples=500, seed=0)
    assert (worse.rank, worse.rank_low, worse.rank_high) == (2, 2, 2)  # lower is better: 72.5% risk is last


def test_a_bound_printed_by_the_paper_is_a_comparator_at_the_bound():
    comps = rc.published("racquet", "Fig. 3", "High Risk", n=500)
    bounds = {c.name: (c.value, c.bound) for c in comps}
    assert bounds["LLaVA-34B"] == (79.0, ">") and bounds["Molmo 7B-D"] == (17.1, "")


def _scored(hits, rows, images, expressions):
    return pd.DataFrame({"row_idx": rows, "expression": expressions, "file_name": images,
                         "iou": [0.9 if h else 0.1 for h in hits], "use_negation": [i % 2 == 0 for i in rows],
                         "distractor_count": [2, 3, 5, 8] * (len(rows) // 4), "model": "m", "prompt_id": "direct"})


def test_refadv_compares_released_runs_on_exactly_our_rows_with_paired_tests():
    from vlamb_nb import get_benchmark

    rows = list(range(40))
    expr = [f"e{i}" for i in rows]
    images = [f"{i // 2}.jpg" for i in rows]
    boxes = [[float(i), 2.0, float(i) + 30, 40.0] for i in rows]
    ours = _scored([True] * 36 + [False] * 4, rows, images, expr).assign(gt_xyxy=boxes)
    worse = _scored([True] * 10 + [False] * 30, rows, images, expr).assign(model="Qwen/Qwen2.5-VL-3B-Instruct",
                                                                          gt_xyxy=boxes)
    other_rows = _scored([True] * 40, rows, images, [e + "!" for e in expr]).assign(
        model="other", gt_xyxy=[[b[0] + 50, *b[1:]] for b in boxes])
    out = get_benchmark("refadv").headline({"direct": ours}, released={"a": worse, "b": other_rows}, n_resamples=300,
                                           seed=0)
    overall = next(h for h in out if h.slice == "overall")
    assert overall.value == pytest.approx(90.0) and overall.unit == "row" and overall.ci_unit == "image"
    per_item = [c for c in overall.comparators if c.basis == "per-item"]
    assert [c.name for c in per_item] == ["Qwen2.5-VL-3B-Instruct | direct"]  # "b": other boxes there, left out
    assert per_item[0].value == pytest.approx(25.0) and per_item[0].diff == pytest.approx(65.0)
    assert per_item[0].p < 0.001 and per_item[0].p_holm == pytest.approx(per_item[0].p)
    assert (overall.rank, overall.rank_low, overall.rank_high) == (1, 1, 1)
    # ours cover 40 of the 1,142 released rows: the published values on all rows are not the same field
    assert all(c.basis == "per-item" for c in overall.comparators)
    assert {h.slice for h in out} == {"overall", "Neg", "No-Neg", "2-3", "4-6", ">=7"}


def test_the_card_names_every_paper_and_says_when_it_is_a_demo(tmp_path):
    head = rc.Headline(paper="vague", metric="accuracy", slice="VCR VLM", value=50.0, ci_low=40.0, ci_high=60.0,
                       n=100, comparators=[rc.Comparator("x", 45.0, n=1144)], rank=1, rank_low=1, rank_high=2,
                       n_ranked=2, model="tiny:qwen2_5_vl", profile="offline", deviations=["model: stand-in"])
    results = {"vague": {"ok": True, "results": {"headline": [head.to_dict()]}},
               "mucar": {"ok": False, "error": "SettingError: boom"},
               "vflute": {"ok": True, "results": {}},
               "refadv": {"ok": False, "skipped": "not run: needs weights"}}
    card = rc.build(results)
    assert card.papers == {"vague": "ok", "mucar": "failed: SettingError: boom", "vflute": "no headline recorded",
                           "refadv": "not run: not run: needs weights", "racquet": "not run"}
    text = rc.markdown(card)
    assert text.startswith("# Report card: tiny:qwen2_5_vl — PIPELINE DEMO")
    # a stand-in's row is never ranked among the paper's models, whatever its number
    assert ("| vague | – | accuracy | VCR VLM | 50.0 [40.0, 60.0] | 100 items | – (not ranked: a stand-in, not a "
            "model) | x 45.0 | unknown | offline | 1 |") in text
    assert "1. model: stand-in" in text and "**failed: SettingError: boom**" in text
    rc.save(card, directory=tmp_path)
    assert (tmp_path / "card" / "demo" / "report_card.png").is_file()
    assert not (tmp_path / "card" / "report_card.png").exists()
    real = rc.build({"vague": {"ok": True, "results": {"headline": [dict(head.to_dict(), profile="paper",
                                                                          model="acme/vlm")]}}})
    assert rc.markdown(real).startswith("# Report card: acme/vlm (paper profile)")
    assert "| 1 [1–2] of 2 |" in rc.markdown(real)


@pytest.mark.shared
def test_the_example_card_replays_the_released_run_through_the_run_path(shared_data, tmp_path):
    from vlamb_nb.benchmarks.refadv.report import example_headlines

    rows, subtitle = example_headlines(workdir=tmp_path, n_resamples=200)
    card = rc.one_paper(rows, subtitle=subtitle)
    assert card.model == "Qwen/Qwen2.5-VL-72B-Instruct" and card.profile == "paper" and "replayed" in card.subtitle
    assert card.papers["refadv"] == "ok" and {v for k, v in card.papers.items() if k != "refadv"} == {"not run"}
    overall = next(h for h in card.headlines if h.slice == "overall")
    rows = [json.loads(line) for line in (shared_data / "refadv" / "predictions" / "qwen25a72b_direct_predictions.jsonl")
            .read_text().splitlines()]
    demo = json.loads((shared_data / "refadv" / "demo" / "demo_samples.json").read_text())
    demo_rows = {int(Path(r["image"]).stem) for r in demo}  # a demo image is named by its Ref-Adv-s row
    official = [bool(r["first_hit"]) for r in rows if int(r["row_idx"]) in demo_rows]
    assert overall.n == len(official) == 31
    assert overall.value == pytest.approx(100 * sum(official) / len(official))  # the official hits, replayed
    assert overall.model == "Qwen/Qwen2.5-VL-72B-Instruct" and overall.profile == "paper"
    assert "qwen25a72b_direct" not in {c.source.split("_predictions")[0] for c in overall.comparators}
    assert any("replayed" in d for d in overall.deviations)
    rc.save(card, directory=tmp_path)  # what `vlamb-nb card --example --update-figures` writes to figures/card/
    assert (tmp_path / "card" / "report_card.png").is_file() and not (tmp_path / "card" / "demo").exists()


def test_a_row_says_what_data_it_stands_on_and_a_generated_sample_is_never_ranked():
    def row(data):
        return rc.Headline(paper="refadv", metric="Acc@0.5", slice="overall", value=50.0, ci_low=40.0, ci_high=60.0,
                           n=data.get("n_run"), comparators=[rc.Comparator("x", 45.0, n=1142)], rank=1, rank_low=1,
                           rank_high=2, n_ranked=2, rank_basis="bootstrap", model="m", profile="paper",
                           data=data).to_dict()

    release = {"kind": "release", "paper": "refadv", "release": "hub:dddraxxx/ref-adv-s", "revision": "abcdef0123",
               "n_items": 1142}
    results = {"refadv": {"ok": True, "results": {"headline": [
        row({**release, "n_run": 1142}), row({**release, "n_run": 40}),
        row({"kind": "sample", "paper": "refadv", "release": "generated sample (seed 0)", "n_items": 12,
             "n_run": 12})]}}}
    card = rc.build(results, papers=["refadv"])
    full, subset, sample = card.headlines
    assert (full.rank, full.rank_basis) == (1, "bootstrap")
    assert subset.rank == 1 and subset.rank_basis == "on a subset: 40 of 1,142 items"
    assert sample.rank is None and sample.n_ranked is None and sample.rank_basis.startswith("not ranked")
    text = rc.markdown(card)
    assert "| hub:dddraxxx/ref-adv-s@abcdef0 · 1,142 of 1,142 |" in text
    assert "1 [1–2] of 2 (on a subset: 40 of 1,142 items)" in text and "· 40 of 1,142 |" in text
    assert "| – (not ranked: a generated sample, not the paper's data) | x 45.0 | generated sample (not ranked) |" in text


def test_refadv_card_of_a_run_record_is_the_card_of_its_scored_frame():
    """A Ref-Adv run given as its run record (through JSON) is placed among the released runs as its scored
    frame is (read as its record in memory); a record keeps no expression, so a released run's rows are matched by
    row and gold box, and a run on other rows under the same numbers is left out of both."""
    from vlamb_nb import get_benchmark
    from vlamb_nb.record import RunRecord, from_scored

    rows = list(range(40))
    expr = [f"e{i}" for i in rows]
    images = [f"{i // 2}.jpg" for i in rows]
    boxes = [[float(i), 2.0, float(i) + 30, 40.0] for i in rows]
    ours = _scored([True] * 30 + [False] * 10, rows, images, expr).assign(gt_xyxy=boxes, id=[str(i) for i in rows])
    worse = _scored([True] * 10 + [False] * 30, rows, images, expr).assign(gt_xyxy=boxes,
                                                                          model="Qwen/Qwen2.5-VL-3B-Instruct")
    elsewhere = _scored([True] * 40, rows, [f"x{i}.jpg" for i in rows], [e + "!" for e in expr]).assign(
        gt_xyxy=[[b[0] + 50, *b[1:]] for b in boxes], model="other")
    released = {"a": worse, "c": elsewhere}
    bench = get_benchmark("refadv")
    headline = bench.headline
    rec = RunRecord.from_dict(json.loads(json.dumps(from_scored(bench, ours).to_dict())))
    from_frame = headline({"direct": ours}, released=released, n_resamples=300, seed=0)
    from_record = headline({"direct": rec}, released=released, n_resamples=300, seed=0)
    assert [repr(h) for h in from_record] == [repr(h) for h in from_frame]
    overall = next(h for h in from_record if h.slice == "overall")
    assert [c.name for c in overall.comparators if c.basis == "per-item"] == ["Qwen2.5-VL-3B-Instruct | direct"]
    moved = {"a": worse.assign(gt_xyxy=[[b[0] + 5, *b[1:]] for b in boxes])}  # the same rows, other boxes
    assert not [c for h in headline({"direct": rec}, released=moved, n_resamples=300) for c in h.comparators
                if c.basis == "per-item"]


def test_a_replayed_released_runs_record_meets_the_other_released_runs_as_its_frame_does(shared_data, tmp_path):
    """On the real release: the Qwen2.5-VL-72B run replayed on the demo rows into a store; its card from the run
    record the store's scoring wrote equals its card from the scored frame, every released run placed beside it."""
    from vlamb_nb import get_benchmark
    from vlamb_nb.benchmarks.refadv import release
    from vlamb_nb.benchmarks.refadv import score as rscore
    from vlamb_nb.models import load_model
    from vlamb_nb.record import RunRecord

    bench = get_benchmark("refadv")
    pred_dir, run = shared_data / "refadv" / "predictions", "qwen25a72b_direct"
    items = bench.load(shared_data / "refadv" / "demo")
    recording = release.write_recording(pred_dir / f"{run}_predictions.jsonl", items, tmp_path / "r.jsonl")
    store = tmp_path / "refadv__direct.jsonl"
    scored = bench.evaluate(load_model(f"replay:{recording}"), items, "direct", store=store, progress=False)
    released = {k: v for k, v in rscore.official_runs(pred_dir).items() if k != run}
    from_frame = bench.headline({"direct": scored}, released=released, n_resamples=200)
    from_record = bench.headline({"direct": RunRecord.read(store)}, released=released, n_resamples=200)
    assert [repr(h) for h in from_record] == [repr(h) for h in from_frame]
    assert all(len([c for c in h.comparators if c.basis == "per-item"]) == len(released) for h in from_record)
