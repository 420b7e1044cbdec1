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


# -- MUCAR: a pair is right or wrong as a whole, so its Acc_p is the chance scripted --------------------------------
@pytest.fixture(scope="module")
def mucar_sample(tmp_path_factory):
    return _items("mucar", tmp_path_factory.mktemp("mucar"), 50)


@pytest.mark.parametrize("setting", ["full", "q_i", "c_i", "c_q", "full_zh", "full_ms", "full_cot", "full_codis",
                                     "full_agent", "full_agent_unified", "c_ambiguous"])
def test_mucar_recovers_the_scripted_pair_accuracy_within_its_interval(mucar_sample, setting):
    bench, items = mucar_sample
    run = bench.evaluate(bench.scripted_stand_in(items, seed=0), items, setting, progress=False)
    value, lo, hi, target = _recovered(bench, run, setting, "Acc_p")
    assert lo <= target <= hi, (value, lo, hi, target)
    if target >= 30:  # the settings the paper reports as working: non-zero, and Acc_q above Acc_p
        acc_q = _recovered(bench, run, setting, "Acc_q")[0]
        assert 0 < value < acc_q < 100
    if setting == "full_agent":  # three calls: the analysis and the evidence reach the answer step
        assert run["step_detect"].str.contains("readings").all() and run["step_evidence"].notna().all()


def test_a_mucar_pair_scripted_wrong_is_never_right_and_one_scripted_right_never_wrong(mucar_sample):
    """Whatever the error kind, a wrong pair holds a wrong query (the image-insensitive pair and a pair with one
    refused, hedged or out-of-format query keep right queries), so Acc_p is exactly the share of pairs scripted
    right: 0 at chance 0, 100 at chance 1."""
    bench, items = mucar_sample
    never = bench.evaluate(bench.scripted_stand_in(items, accuracy=0.0), items, "full", progress=False)
    always = bench.evaluate(bench.scripted_stand_in(items, accuracy=1.0), items, "full", progress=False)
    assert _recovered(bench, never, "full", "Acc_p")[0] == 0 < _recovered(bench, never, "full", "Acc_q")[0]
    assert _recovered(bench, always, "full", "Acc_p")[0] == 100 == _recovered(bench, always, "full", "Acc_q")[0]
    assert set(never["outcome"]) == {"correct", "wrong", "refusal", "ambiguous", "unparsed"}


def _reply(bench, pair, outcome, right=False, setting="full", step=None):
    from vlamb_nb.benchmarks.base import Scripted
    from vlamb_nb.models.base import Request

    out = []
    for item in pair:
        request = Request(id=item["uid"], messages=[], setting=setting, meta={"item_id": item["uid"],
                                                                                **({"step": step} if step else {})})
        text = bench.scripted_reply(request, Scripted(item, outcome, right, setting, 0.5, tuple(pair)))
        out.append((text, bench.parse(text, item), item))
    return out


def test_each_mucar_error_kind_reads_as_the_parser_reads_it(mucar_sample):
    bench, items = mucar_sample
    pair = [r for r in items.to_dict(orient="records") if r["group"] == items["group"].iloc[0]]
    assert len(pair) == 2 and pair[0]["gold"] != pair[1]["gold"]
    right = _reply(bench, pair, "right", right=True)
    assert [p["letter"] for _, p, _ in right] == [i["gold"] for i in pair]
    assert right[0][0] == f"Answer: {pair[0]['gold']}"
    insensitive = _reply(bench, pair, "image_insensitive")  # one letter for both images: the first query wrong
    assert len({p["letter"] for _, p, _ in insensitive}) == 1 and insensitive[0][1]["letter"] != pair[0]["gold"]
    assert insensitive[1][1]["letter"] == pair[1]["gold"]
    other = _reply(bench, pair, "other_reading")
    assert all(p["valid"] and p["letter"] != i["gold"] for _, p, i in other)
    for kind, method in (("refusal", "refusal"), ("out_of_format", "unparsed"), ("hedged", "ambiguous")):
        replies = _reply(bench, pair, kind)
        spoilt = [p for _, p, _ in replies if not p["valid"]]
        assert len(spoilt) == 1 and spoilt[0]["parse_method"] == method, (kind, replies)
        assert [p["letter"] for _, p, i in replies if p["valid"]] == [i["gold"] for _, p, i in replies if p["valid"]]
        lenient = spoilt[0]["letter_lenient"]
        gold = next(i["gold"] for _, p, i in replies if not p["valid"])
        assert (lenient == gold) is (kind == "out_of_format")  # a judge would read it; a hedge or refusal, never
    cot = _reply(bench, pair, "right", right=True, setting="full_cot")
    assert cot[0][0].startswith("Reasoning:") and cot[0][1]["parse_method"] == "answer_tag"
    detect = _reply(bench, pair, "right", right=True, setting="full_agent", step="detect")
    assert not detect[0][1]["valid"]  # the agent's analysis names no option: only its answer step is read


def test_the_scripted_stand_in_judges_mucar_answers_as_a_judge_would(mucar_sample):
    """The CODIS judge's requests get verdicts: right where the answer names the gold (an answer out of the format
    too, which the strict parser cannot read), with a few verdicts wrong on purpose, as a judge errs."""
    from vlamb_nb.benchmarks.mucar.judge import SCRIPTED_SLIP, judge_summary, run_judge

    bench, items = mucar_sample
    model = bench.scripted_stand_in(items, seed=0)
    run = bench.evaluate(model, items, "full", progress=False)
    judged = run_judge(model, run, progress=False)
    assert judged["judge_valid"].all() and set(judged["judge_text"]) == {"right", "wrong"}
    slips = (judged["judge_correct"] != judged["correct_lenient"].astype(float)).mean()
    assert 0 < slips < 3 * SCRIPTED_SLIP
    out_of_format = judged[judged["outcome"] == "unparsed"]
    assert len(out_of_format) and (out_of_format["judge_correct"] == 1).mean() > 0.5
    summary = judge_summary(judged, n_resamples=0)
    assert 80 < summary["agreement_with_parser"]["percent_agreement"] < 100


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
