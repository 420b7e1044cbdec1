"""The stored run is the way from answers to scores: a store scored by ``Benchmark.score_store`` gives exactly the
frame its live ``evaluate`` gave, for every paper and every turn of a multi-turn setting, and a store written before
records carried their item and turn scores the same (and resumes: nothing is asked again)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import fixtures_stored as F
import pandas as pd
import pytest

from vlamb_nb import get_benchmark
from vlamb_nb.errors import DataError
from vlamb_nb.store import read_records, with_fields

IDS = [f"{p}-{s}" for p, s, _, _ in F.RUNS]


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    """Each paper's generated sample at the sizes :data:`fixtures_stored.RUNS` ran on, loaded once."""
    out = {}
    for paper, _, n, _ in F.RUNS:
        if (paper, n) not in out:
            bench = get_benchmark(paper)
            out[(paper, n)] = bench.load(bench.make_sample(tmp_path_factory.mktemp(f"{paper}-{n}"), n=n, seed=0))
    return out


def _same(live, stored, *, without: tuple[str, ...] = (), attrs_without: tuple[str, ...] = ()) -> None:
    """Equal frames (every column but the runner's ``cached`` flag and ``without``) and equal ``attrs`` (but for
    the coverage, where a run record was written: a scoring told to write none has none, and ``attrs_without``)."""
    drop = ["cached", *without]
    pd.testing.assert_frame_equal(live.drop(columns=[c for c in drop if c in live.columns]),
                                  stored.drop(columns=[c for c in drop if c in stored.columns]))
    skip = ("coverage", "record", *attrs_without)
    assert {k: v for k, v in live.attrs.items() if k not in skip} == \
        {k: v for k, v in stored.attrs.items() if k not in skip}


@pytest.mark.parametrize("paper,setting,n,options", F.RUNS, ids=IDS)
def test_a_stored_run_scores_exactly_as_its_live_run(paper, setting, n, options, samples, tmp_path):
    bench, items = get_benchmark(paper), samples[(paper, n)]
    store = tmp_path / "s.jsonl"
    live = bench.evaluate(F.model(), items, setting, store=store, progress=False, **options, **F.score_options(paper))
    assert len(live)
    stored = bench.score_store(store, items, **options, **F.score_options(paper))
    _same(live, stored)
    cov = stored.attrs["coverage"]
    assert cov.answered + cov.failed + cov.missing == cov.items == len(items)
    # every record says which item and turn it answers, whatever the turn
    turns = {r["turn"] for r in read_records(store)}
    assert {r["item_id"] for r in read_records(store)} <= set(items[bench.id_column].astype(str))
    assert "answer" in turns <= {t.name for t in bench.turns(bench.context(F.model().info, setting, options))}


@pytest.mark.parametrize("paper,setting,n,options", F.RUNS, ids=IDS)
def test_a_store_written_before_records_carried_their_turn_scores_the_same(paper, setting, n, options, samples,
                                                                           tmp_path):
    """The old store was written by the runner of that time; its keys are the keys a run asks today, so a rerun
    resumes it without asking anything, and its answers score as today's live run scores them."""
    bench, items = get_benchmark(paper), samples[(paper, n)]
    legacy = F.LEGACY / f"{paper}__{setting}.jsonl"
    assert not any("turn" in r or "item_id" in r for r in map(json.loads, legacy.read_text().splitlines()))
    live = bench.evaluate(F.model(), items, setting, store=tmp_path / "new.jsonl", progress=False, **options,
                          **F.score_options(paper))
    old = bench.score_store(legacy, items, record=False, **options, **F.score_options(paper))
    # a failure's ``seconds`` is a timing; what only the request's meta kept (Ref-Adv's rewritten expression) is
    # not in an old record; nor is the digest of the items its run was asked (the items scored against are)
    # and the deviations it stored are in that time's words (the scripted stand-in's line has been reworded since):
    # the same deviations, each as it was said then
    _same(live, old, without=("seconds", "expression_asked"), attrs_without=("asked_sha256", "deviations", "store"))
    assert [(d.what, d.paper, d.affects) for d in live.attrs["deviations"]] == \
        [(d.what, d.paper, d.affects) for d in old.attrs["deviations"]]
    resumed = shutil.copyfile(legacy, tmp_path / "old.jsonl")
    model = F.model()
    again = bench.evaluate(model, items, setting, store=resumed, progress=False, **options, **F.score_options(paper))
    assert model.calls == sum(1 for r in read_records(legacy) if r.get("error"))  # only the failures are retried
    assert len(again) == len(live)


def test_the_compatibility_reader_gives_each_old_convention_its_item_and_turn():
    old = [
        ({"request_id": "v1::caption", "setting": "caption"}, ("v1", "caption")),
        ({"request_id": "v1::sm", "setting": "sm"}, ("v1", "answer")),
        ({"request_id": "f1::sg", "setting": "scene_graph"}, ("f1", "scene_graph")),
        ({"request_id": "f1::answer", "setting": "scene_graph"}, ("f1", "answer")),
        ({"request_id": "mucar-3::evidence", "setting": "full_agent:evidence"}, ("mucar-3", "evidence")),
        ({"request_id": "mucar-3", "setting": "full_agent"}, ("mucar-3", "answer")),
        ({"request_id": "7::direct", "setting": "direct:official:direct"}, ("7", "answer")),
        ({"request_id": "7::repair-direct", "setting": "direct:official:direct:repair"}, ("7", "repair")),
        ({"request_id": "7::repair-cot", "setting": "cot:qwen3_vl:cot:repair-newlines"}, ("7", "repair-newlines")),
        ({"request_id": "general-0::sample-2", "setting": "sampling"}, ("general-0", "answer")),
    ]
    for rec, (item, turn) in old:
        got = with_fields(dict(rec, key="k"))
        assert (got["item_id"], got["turn"]) == (item, turn), rec
    judged = with_fields({"key": "k", "request_id": "general-0::sample-2::judge-racquet-abc", "setting": "judge:x"})
    assert (judged["item_id"], judged["meta"]["setting"], judged["meta"]["judge"]) == ("general-0", "sampling",
                                                                                       "racquet-abc")
    new = {"key": "k", "request_id": "a::b::c", "item_id": "z", "turn": "caption", "meta": {}}
    assert with_fields(new) is new  # a record with its fields is read as it is


def test_a_judge_store_of_old_scores_as_a_new_one(tmp_path):
    """RACQUET's A/B/C judge store: each verdict's judged item and setting, from fields or, in an old store, from
    the judge's request ids."""
    bench = get_benchmark("racquet")
    src = bench.make_sample(tmp_path / "data", n=6, seed=0)
    items = bench.load(src)
    preds = bench.predictions(items, bench.run(F.model("vlm"), items, "sampling", n_samples=3, progress=False))
    store = tmp_path / "judge.jsonl"
    bench.judge(F.judge_model(), preds, store=store, progress=False)
    assert {r["meta"]["setting"] for r in read_records(store)} == {"sampling"}
    new = bench.score_file(store, source=src)
    old = bench.score_file(shutil.copyfile(F.LEGACY / "racquet__judge.jsonl", tmp_path / "old.jsonl"), source=src)
    assert new["metrics"] and new["metrics"] == old["metrics"] and new["coverage"] == old["coverage"]
    assert new["setting"] == "sampling"


def test_one_failed_scene_graph_leaves_the_other_items_answered(samples, tmp_path):
    """A V-FLUTE scene-graph run asks the answer of every item whose graph came back; a failed graph is that item's
    failure only (a missing error cell is no failure)."""
    bench, items = get_benchmark("vflute"), samples[("vflute", 8)]
    first = items["id"].iloc[0]

    def respond(req):
        if req.meta.get("step") == "scene_graph" and req.meta["item_id"] == first:
            raise RuntimeError("graph lost")
        return "a graph" if req.meta.get("step") == "scene_graph" else "It shows it. Label: Entailment"

    from vlamb_nb.models import ScriptedModel

    scored = bench.evaluate(ScriptedModel(respond), items, "scene_graph", progress=False, scorer="none")
    failed = scored["error"].map(lambda e: isinstance(e, str) and bool(e))
    assert list(scored.loc[failed, "item_id"]) == [first]
    assert scored.loc[~failed, "label_pred"].eq(1).all() and (~failed).sum() == len(items) - 1


def test_scoring_picks_the_run_and_names_the_items_the_data_lacks(samples, tmp_path):
    bench, items = get_benchmark("vague"), samples[("vague", 8)]
    store = F.one_store(tmp_path / "s.jsonl",  # two runs in one file, as written before one run per file
                        *(lambda p, m=m, s=s: bench.evaluate(F.model(m), items, s, store=p, progress=False)
                          for m, s in (("a", "vlm"), ("b", "lm"))))
    with pytest.raises(DataError, match=r"holds 2 runs.*\[0\] a .*\[1\] b "):
        bench.score_store(store, items)
    assert bench.score_store(store, items, model="b").attrs["setting"] == "lm"
    assert set(bench.score_store(store, items, setting="vlm")["model"]) == {"a"}
    with pytest.raises(DataError, match="name items that are not in the data"):
        bench.score_store(store, items.iloc[2:], model="a")
    part = bench.score_store(store, items, model="a", fill_missing=True)
    assert len(part) == len(items)
    limited = tmp_path / "limited.jsonl"
    bench.evaluate(F.model("a"), items, "vlm", store=limited, progress=False, limit=3)
    assert len(bench.score_store(limited, items)) == 3  # only what the run asked, as the run itself
    filled = bench.score_store(limited, items, fill_missing=True)
    assert len(filled) == len(items) and filled.attrs["coverage"].missing == len(items) - 3
    assert (filled["error"].iloc[3:] == "no prediction for this item").all()


def test_a_turn_asked_with_other_options_is_set_aside_and_counted(samples, tmp_path):
    """Two repair texts share the first answers in one store: each scoring takes its own repair turn and counts the
    other's records as set aside, never as missing nor as a turn of its own."""
    from vlamb_nb.models import ScriptedModel

    bench, items = get_benchmark("refadv"), samples[("refadv", 6)]
    store = tmp_path / "s.jsonl"
    model = ScriptedModel(lambda r: "The left one." if len(r.messages) == 1 else '{"bboxes": [[1, 2, 30, 40]]}')
    bench.evaluate(model, items, "direct", store=store, progress=False)
    own = Path(bench.evaluate(model, items, "direct", store=store, progress=False,
                              repair_text="newlines").attrs["store"])
    assert own != store  # another run: its own file; a store written before one run per file held both, as here
    with open(store, "a", encoding="utf-8") as fh:
        fh.writelines(ln for ln in own.read_text(encoding="utf-8").splitlines(keepends=True)
                      if json.loads(ln)["turn"] == "repair-newlines")
    recs = read_records(store)
    n = {t: sum(r["turn"] == t for r in recs) for t in ("repair", "repair-newlines")}
    assert n["repair"] and n["repair"] == n["repair-newlines"]
    assert bench.score_store(store, items).attrs["coverage"].other_variants == n["repair-newlines"]
    other = bench.score_store(store, items, repair_text="newlines").attrs["coverage"]
    assert other.other_variants == n["repair"]
    lines = store.read_text(encoding="utf-8").splitlines()
    at = next(i for i, ln in enumerate(lines) if json.loads(ln)["turn"] == "repair")
    lines[at] = json.dumps(dict(json.loads(lines[at]), turn="retry"))
    store.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=rf"line {at + 1}: turn 'retry' is not a turn of the refadv direct run"):
        bench.score_store(store, items)
