"""A score belongs to one run: mixed stores are refused or narrowed, duplicates collapsed, unknown ids refused."""

from __future__ import annotations

import json
from dataclasses import replace

import fixtures_stored as F
import pytest
from fixtures_vflute import oracle as _oracle

from vlamb_nb import get_benchmark
from vlamb_nb.errors import DataError
from vlamb_nb.models import ScriptedModel
from vlamb_nb.run_identity import (
    DuplicateWarning,
    MixedRunsError,
    dedupe,
    identify_runs,
    select_run,
)


def _rec(rid, text, model="M", quant=None, setting="direct", params=None, error=None):
    return {"request_id": rid, "text": text, "error": error, "setting": setting, "benchmark": "b",
            "model": {"model_id": model, "quantization": quant, "revision": None, "backend": "hf"},
            "params": params or {"max_new_tokens": 16}}


def test_runs_differ_by_quantization_decoding_and_setting_and_steps_join_their_run():
    recs = [_rec("1::direct", "a"), _rec("1::direct", "a", quant="4bit"),
            _rec("1::direct", "a", params={"max_new_tokens": 1024}), _rec("1::cot", "c", setting="cot"),
            _rec("1::repair-direct", "r", setting="direct:repair", params={"max_new_tokens": 1})]
    runs = identify_runs(recs)
    assert len(runs) == 5  # two decodings of "direct": the repair step cannot tell which it belongs to
    with pytest.raises(MixedRunsError, match=r"5 runs.*4bit.*-o run=N"):
        select_run(recs)
    rid, got = select_run(recs, quantization="4bit")
    assert rid.quantization == "4bit" and [r["text"] for r in got] == ["a"]
    _, cot = select_run(recs, setting="cot")
    assert [r["text"] for r in cot] == ["c"]
    # the repair step joins the direct run only when that run is unambiguous
    only = [recs[0], recs[4]]
    assert [r["text"] for r in select_run(only)[1]] == ["a", "r"]


def test_dedupe_collapses_identical_prefers_a_retry_and_refuses_conflicts():
    with pytest.warns(DuplicateWarning, match="2 duplicate"):
        out, dropped = dedupe([_rec("1", "a"), _rec("1", "a"), _rec("2", "", error="HTTP 500"), _rec("2", "b")])
    assert dropped == 2 and {r["request_id"]: r["text"] for r in out} == {"1": "a", "2": "b"}
    with pytest.raises(DataError, match="two different answers"):
        dedupe([_rec("1", "a"), _rec("1", "b")])


def test_dedupe_keeps_an_answer_over_later_failures_and_names_the_lines_of_a_conflict():
    a, fail, fail2 = _rec("1", "a"), _rec("1", "", error="HTTP 500"), _rec("1", "", error="timeout")
    with pytest.warns(DuplicateWarning):
        assert dedupe([a, fail])[0] == [a]  # a later failure never replaces an answer
    with pytest.warns(DuplicateWarning):
        assert dedupe([fail, fail2])[0] == [fail2]  # a failure retried and failed again: still one failure
    with pytest.raises(DataError, match=r"p\.jsonl.*'1' has two different answers on lines 2 and 5"):
        dedupe([a, _rec("1", "b")], source="p.jsonl", lines=[2, 5])


@pytest.mark.parametrize("none", ["none", "None", "null", ""])
def test_the_unquantized_run_is_picked_with_none_null_or_an_empty_value(none):
    recs = [_rec("1::direct", "full"), _rec("1::direct", "4b", quant="4bit")]
    rid, got = select_run(recs, quantization=none)
    assert rid.quantization is None and [r["text"] for r in got] == ["full"]
    assert [r["text"] for r in select_run(recs, quantization="4bit")[1]] == ["4b"]


def _two_quantizations(run, items, store, answer: str) -> None:
    """One scripted model run twice, unquantized then as '4bit', both in one file (as a store written before one
    run per file holds them)."""
    full, four = (ScriptedModel(lambda r: answer, model_id="Q") for _ in range(2))
    four.info = replace(four.info, quantization="4bit")
    F.one_store(store, *(lambda p, m=m: run(m, items, p) for m in (full, four)))


@pytest.fixture(scope="module")
def vflute_sample(tmp_path_factory):
    bench = get_benchmark("vflute")
    folder = bench.make_sample(tmp_path_factory.mktemp("vf"), n=6, seed=1)
    return bench, folder, bench.load(folder)


def test_a_vflute_store_with_two_models_is_never_merged(tmp_path, vflute_sample):
    bench, folder, items = vflute_sample
    models = (ScriptedModel(_oracle(items), model_id="right"),
              ScriptedModel(_oracle(items, wrong=True), model_id="wrong"))
    store = F.one_store(tmp_path / "two.jsonl",  # both in one file, as written before one run per file
                        *(lambda p, m=m: bench.run(m, items, "zero_shot", store=p, progress=False) for m in models))
    with pytest.raises(MixedRunsError, match=r"2 runs.*right.*wrong"):
        bench.score_file(store, source=folder, scorer="none", ci=False)
    right = bench.score_file(store, source=folder, scorer="none", ci=False, model="right")
    wrong = bench.score_file(store, source=folder, scorer="none", ci=False, model="wrong")
    assert right["metrics"]["F1@0"] == 100.0 and wrong["metrics"]["F1@0"] == 0.0


def test_a_vague_store_with_a_4bit_and_a_full_run_is_never_merged(tmp_path):
    bench = get_benchmark("vague")
    folder = bench.make_sample(tmp_path / "d", n=4, seed=0)
    items = bench.load(folder)
    store = tmp_path / "s.jsonl"
    _two_quantizations(lambda m, it, st: bench.run(m, it, "lm", store=st, progress=False), items, store, "A")
    with pytest.raises(MixedRunsError, match="4bit"):
        bench.score_file(store, source=folder)
    out = bench.score_file(store, source=folder, quantization="4bit")
    assert out["scored"] == len(items)  # one row per item, not one per record
    # a store repeated by hand (the same run appended twice) counts every item once
    lines = store.read_text().splitlines()
    (tmp_path / "dup.jsonl").write_text("\n".join(lines + lines) + "\n")
    again = bench.score_file(tmp_path / "dup.jsonl", source=folder, quantization="4bit")
    assert again["scored"] == len(items)
    assert json.dumps(again["by_slice"]) == json.dumps(out["by_slice"])


def test_a_refadv_store_with_a_4bit_and_a_full_run_of_one_model_is_never_merged(tmp_path, shared_data):
    bench = get_benchmark("refadv")
    demo = shared_data / "refadv" / "demo"
    items = bench.load(demo).head(4)
    store = tmp_path / "s.jsonl"
    _two_quantizations(lambda m, it, st: bench.run(m, it, "direct", store=st, progress=False), items, store,
                       '[{"bbox_2d": [1, 2, 30, 40]}]')
    with pytest.raises(DataError, match=r"holds 2 runs.*Q \| 4bit"):
        bench.score_file(store, source=demo)
    assert bench.score_file(store, source=demo, quantization="4bit")["scored"] == 4


def test_records_carry_template_and_data_digests_and_other_data_is_another_run(tmp_path):
    bench = get_benchmark("vague")
    a = bench.load(bench.make_sample(tmp_path / "a", n=3, seed=0))
    b = bench.load(bench.make_sample(tmp_path / "b", n=3, seed=1))
    model = ScriptedModel(lambda r: "A", model_id="Q")
    store = F.one_store(tmp_path / "s.jsonl",  # both in one file, as written before one run per file
                        *(lambda p, it=it: bench.run(model, it, "lm", store=p, progress=False) for it in (a, b)))
    recs = [json.loads(x) for x in store.read_text().splitlines()]
    assert all(len(r["run"]["template"]) == 16 and len(r["run"]["source"]) == 16 for r in recs)
    assert len({r["run"]["source"] for r in recs}) == 2 and len({r["run"]["template"] for r in recs}) == 1
    with pytest.raises(MixedRunsError, match="data"):
        select_run(recs)


def test_a_mucar_store_with_two_quantizations_is_never_merged(tmp_path):
    bench = get_benchmark("mucar")
    folder = bench.make_sample(tmp_path / "d", n=2, seed=0)
    items = bench.load(folder)
    store = tmp_path / "s.jsonl"
    _two_quantizations(lambda m, it, st: bench.evaluate(m, it, "full", store=st, progress=False), items, store,
                       "Answer: A")
    with pytest.raises(MixedRunsError, match="4bit"):
        bench.score_file(store, source=folder, n_resamples=0)
