"""The scripted stand-in: not a model, answers written from the gold at a stated chance, read back by each paper's
own parser and metrics. What is scripted must be what the pipeline recovers (within the metric's interval), so a
broken parser, a misjoined answer or a metric that reads the wrong column shows as a number off its design."""

from __future__ import annotations

import pytest

from vlamb_nb import get_benchmark
from vlamb_nb.meta import Deviation, all_deviations
from vlamb_nb.models.base import Backend


def _items(paper: str, tmp_path, n: int):
    bench = get_benchmark(paper)
    return bench, bench.load(bench.make_sample(tmp_path / paper, n=n, seed=0))


def _recovered(bench, run, setting: str, metric: str | None = None):
    m = next(x for x in bench.metrics if x.name == (metric or bench.metrics[0].name))
    (u,) = m.unit_sets(run, slices=False)
    lo, hi, _ = m.interval(u)
    return m.value_of(u), lo, hi, 100 * bench.scripted_accuracies()[setting]


@pytest.mark.parametrize("setting", ["lm", "sm", "vlm", "vlm_cot"])
def test_vague_recovers_the_scripted_accuracy_within_its_interval(tmp_path, setting):
    bench, items = _items("vague", tmp_path, 60)
    model = bench.scripted_stand_in(items, seed=0)
    run = bench.evaluate(model, items, setting, progress=False)
    value, lo, hi, target = _recovered(bench, run, setting)
    assert 0 < value < 100 and lo <= target <= hi, (value, lo, hi, target)
    assert run["valid"].mean() < 1  # refusals are scripted too, and read as invalid
    assert set(run["category"].dropna()) >= {"correct", "FS"}


def test_the_stand_in_is_labelled_and_its_answers_are_fixed_by_seed_and_item_alone(tmp_path):
    bench, items = _items("vague", tmp_path, 12)
    a = bench.scripted_stand_in(items, seed=0)
    assert a.info.backend is Backend.SCRIPTED and a.info.model_id.startswith("scripted stand-in")
    first = bench.evaluate(a, items, "vlm", progress=False)["text"].tolist()
    again = bench.evaluate(bench.scripted_stand_in(items.iloc[::-1], seed=0), items.iloc[::-1], "vlm",
                           progress=False)["text"].tolist()[::-1]
    assert first == again  # the order items are asked in changes nothing
    other = bench.evaluate(bench.scripted_stand_in(items, seed=1), items, "vlm", progress=False)["text"].tolist()
    assert other != first
    devs = bench.deviations(a, "vlm")
    assert any(d.what == "model" and d.ours.startswith("scripted stand-in: not a model") for d in devs)


def test_a_scripted_chance_outside_zero_to_one_is_refused(tmp_path):
    from vlamb_nb.errors import SettingError

    bench, items = _items("vague", tmp_path, 4)
    with pytest.raises(SettingError, match="chance in"):
        bench.scripted_stand_in(items, accuracy=1.5)


def test_a_request_for_an_item_it_was_not_given_fails_like_a_backend_error(tmp_path):
    bench, items = _items("vague", tmp_path, 6)
    model = bench.scripted_stand_in(items.iloc[:3])
    run = bench.evaluate(model, items, "lm", progress=False)
    assert run["error"].notna().sum() == 3 and run["error"].dropna().str.contains("knows no item").all()


def test_one_deviation_is_listed_once_whatever_its_spelling():
    devs = all_deviations([Deviation("max_new_tokens", "1024", "8 (offline profile)", "all")],
                          [Deviation("max new tokens", "1024", "8", "all"),
                           Deviation("model", "a real VLM", "scripted stand-in: not a model", "all")],
                          [Deviation("model", "the paper's models", "tiny:qwen2_5_vl (offline profile)", "all")])
    assert [d.what for d in devs] == ["max_new_tokens", "model"]
    assert devs[0].ours == "8 (offline profile)"
    assert devs[1].ours == "scripted stand-in: not a model; tiny:qwen2_5_vl (offline profile)"


@pytest.mark.parametrize("setting", ["direct", "cot", "fixed"])
def test_refadv_recovers_the_scripted_hit_rate_and_each_failure_mode_reads_as_the_official_parser_says(tmp_path,
                                                                                                        setting):
    bench, items = _items("refadv", tmp_path, 60)
    run = bench.evaluate(bench.scripted_stand_in(items, seed=0), items, setting, progress=False)
    value, lo, hi, target = _recovered(bench, run, setting)
    assert 0 < value < 100 and lo <= target <= hi, (value, lo, hi, target)
    hit = run["iou"] >= 0.5
    # a repaired answer: no box first, the hit after the official repair turn
    assert (run["retry_used"] & hit).any()
    # a near miss: a box that overlaps the target, under the threshold
    assert ((run["iou"] > 0.05) & ~hit).any()
    # no box even after the repair turn: the official parse error, counted wrong
    assert ((run["parse_error"] == "no_bbox_found") & ~hit).any()


def test_refadv_deletion_prompts_get_descriptors_and_a_rewrite(tmp_path):
    bench, items = _items("refadv", tmp_path, 6)
    out = bench.delete_descriptors(items, bench.scripted_stand_in(items), progress=False)
    assert out["deletion_ok"].all()
    assert (out["deleted_expression"] != out["expression"]).all()
