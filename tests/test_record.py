"""One run record: every run and every scoring writes it beside its store, it reads back in one call
(``vlamb_nb.RunRecord.read``) into the same typed record, and ``vlamb-nb score`` prints one shape for every paper,
its numbers the declared metrics' own."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import fixtures_stored as F
import numpy as np
import pandas as pd
import pytest

import vlamb_nb
from vlamb_nb import cli, get_benchmark
from vlamb_nb.errors import DataError
from vlamb_nb.record import ROW_COLUMNS, SCHEMA_VERSION, RunRecord, from_scored, record_path
from vlamb_nb.stats.metric import Metric, summary
from vlamb_nb.store import read_records

IDS = [f"{p}-{s}" for p, s, _, _ in F.RUNS]
#: one run of each paper, scored by ``vlamb-nb score`` (RACQUET's answers are scored once its judge labelled them)
ONE_EACH = [("vague", "vlm", 8), ("mucar", "full", 3), ("vflute", "zero_shot", 8), ("refadv", "direct", 6),
            ("racquet", "direct", 6)]


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    out = {}
    for paper, _, n, _ in F.RUNS:
        if (paper, n) not in out:
            bench = get_benchmark(paper)
            folder = bench.make_sample(tmp_path_factory.mktemp(f"{paper}-{n}"), n=n, seed=0)
            out[(paper, n)] = (folder, bench.load(folder))
    return out


def _per_item_mean(rec_rows: pd.DataFrame, m: Metric) -> float:
    """A metric's value from the record's per-item column alone (the unit a value counts: a row, or a group)."""
    col = rec_rows[m.name].dropna().astype(float)
    return 100 * float(col.mean())


@pytest.mark.parametrize("paper,setting,n,options", F.RUNS, ids=IDS)
def test_a_run_and_its_scoring_write_a_record_that_reads_back_typed(paper, setting, n, options, samples, tmp_path):
    bench, (_, items) = get_benchmark(paper), samples[(paper, n)]
    store = tmp_path / "run.jsonl"
    bench.run(F.model(), items, setting, store=store, progress=False, **options)
    ran = vlamb_nb.RunRecord.read(store)  # a run alone leaves its answers, parsed, with no metric yet
    assert ran.stage == "run" and not ran.metrics and ran.rows
    scored = bench.score_store(store, items, **options, **F.score_options(paper))
    rec = vlamb_nb.RunRecord.read(store)
    assert record_path(store).is_file() and rec.stage == "scored" and rec.schema_version == SCHEMA_VERSION
    # the store, the record file and the folder holding it are one record
    assert RunRecord.read(record_path(store)) == rec == RunRecord.read(tmp_path)
    assert RunRecord.from_dict(json.loads(json.dumps(rec.to_dict()))) == rec
    # the run's facts, as the store kept them
    first = next(r for r in read_records(store) if r["turn"] == "answer")
    assert (rec.benchmark, rec.setting, rec.model.model_id) == (paper, setting, "scripted")
    assert rec.model.backend == "scripted" and rec.decoding == first["params"]
    # its identity is the one every scorer tells runs apart by
    from vlamb_nb.run_identity import identify_runs

    assert [rec.run_id] == list(identify_runs(read_records(store)))
    assert rec.prompts == {"templates": first["run"]["template"], "items": first["run"]["source"]}
    assert rec.environment.vlamb_nb == vlamb_nb.__version__ and rec.environment.python
    assert list(rec.deviations) == scored.attrs["deviations"]  # one type from the frame to the record
    assert [str(d) for d in rec.deviations] == [
        f"{d.what}: paper {d.paper}; here {d.ours}" + (f" [affects {d.affects}]" if d.affects else "")
        for d in scored.attrs["deviations"]]
    stored = first["run"]["deviations"]  # the run's, as the store holds them, then the scoring's
    assert [d.to_dict() for d in rec.deviations[: len(stored)]] == stored
    cov = scored.attrs["coverage"]  # one type from the scored frame to the record
    assert type(cov) is type(rec.coverage)
    assert (rec.coverage.items, rec.coverage.answered, rec.coverage.failed, rec.coverage.missing) == (
        cov.items, cov.answered, cov.failed, cov.missing)
    # one row per scored answer, the columns a reader needs, then every metric's per-item value
    every = rec.to_pandas()
    assert list(every.columns) == [*ROW_COLUMNS, *(m.name for m in bench.metrics)]
    assert set(every["item_id"]) <= set(items[bench.id_column].astype(str))
    assert every["prompt"].notna().all()  # every turn's prompt, as the store kept it
    # every turn the store holds is a row: the answers that count, and the turns before them
    turns = {(r["request_id"], r["turn"]) for r in read_records(store)}
    assert set(zip(every["request_id"], every["turn"], strict=True)) == turns
    assert every.loc[~every["scored"].astype(bool), list(m.name for m in bench.metrics)].isna().all().all()
    rows = every[every["scored"].astype(bool)].reset_index(drop=True)
    assert len(rows) == len(scored) and rows["image"].notna().all()
    assert list(rows["request_id"]) == [str(r) for r in scored["request_id"]]
    failed = scored["error"].map(lambda e: isinstance(e, str) and bool(e)) if "error" in scored else None
    if failed is not None:
        assert rows["failure"].notna().to_numpy()[failed.to_numpy()].all()
    for m in bench.metrics:
        covered = m.rows(scored)
        value = next((v for v in rec.metrics if v.metric == m.name and v.whole), None)
        if covered.empty or not m.has_values(covered):
            assert value is None and rows[m.name].isna().all()
            continue
        assert value is not None and value.value == round(m.point(covered), 2)
        if m.kind in ("binary", "share", "mean"):
            assert _per_item_mean(rows, m) == pytest.approx(m.point(covered))


def _vague_run(tmp_path, n: int):
    """A scored VAGUE run's store and the record beside it."""
    store = tmp_path / "s.jsonl"
    bench = get_benchmark("vague")
    items = bench.load(bench.make_sample(tmp_path / "d", n=n, seed=0))
    bench.evaluate(F.model(), items, "vlm", store=store, progress=False)
    return store, record_path(store)


def test_a_record_of_a_newer_schema_is_refused_in_one_line(tmp_path):
    store, path = _vague_run(tmp_path, 4)
    data = json.loads(path.read_text())
    data["schema_version"] = SCHEMA_VERSION + 1
    path.write_text(json.dumps(data))
    with pytest.raises(DataError) as e:
        RunRecord.read(store)
    assert "\n" not in str(e.value) and f"schema_version {SCHEMA_VERSION + 1} is newer" in str(e.value)
    assert path.name in str(e.value)
    path.write_text(json.dumps({"benchmark": "vague"}))
    with pytest.raises(DataError, match="not a run record"):
        RunRecord.read(path)
    with pytest.raises(DataError, match="no run record"):
        RunRecord.read(tmp_path / "d")


def _scored_file(paper: str, setting: str, n: int, samples, tmp_path) -> tuple[list[str], object]:
    """``vlamb-nb score``'s argument list for one run of ``paper`` (RACQUET: its judge's store of the run's
    answers), and the frame the METRICS are computed on directly."""
    bench = get_benchmark(paper)
    folder, items = samples[(paper, n)]
    store = tmp_path / f"{paper}.jsonl"
    if paper == "racquet":
        preds = bench.predictions(items, bench.run(F.model(), items, setting, progress=False))
        bench.judge(F.judge_model(), preds, store=store, progress=False)
        scored = bench.scored_file(store, source=folder, model="scripted")
        return [paper, "--predictions", str(store), "--source", str(folder), "-o", "model=scripted"], scored
    scored = bench.evaluate(F.model(), items, setting, store=store, progress=False, **F.score_options(paper))
    extra = ["--scorer", "none"] if paper == "vflute" else []
    return [paper, "--predictions", str(store), "--source", str(folder), *extra], scored


def _score_json(argv: list[str], capsys) -> dict:
    assert cli.main(["score", *argv, "--json", "-o", "n_resamples=50"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_a_score_counting_items_never_asked_leaves_the_record_of_the_run_as_asked(tmp_path, capsys):
    """``vlamb-nb score`` counts the items of the data a run never asked as wrong (the paper's denominator): that
    scoring does not replace the record of the run as it was asked, which compare and the pages read; it says so,
    and ``-o missing=skip`` (what was asked) or ``--record PATH`` writes its record."""
    bench = get_benchmark("vague")
    src = bench.make_sample(tmp_path / "d", n=6, seed=0)
    items = bench.load(src)
    store = tmp_path / "s.jsonl"
    bench.evaluate(F.model(), items.head(3), "vlm", store=store, progress=False)
    asked = record_path(store).read_bytes()
    out = _score_json(["vague", "--predictions", str(store), "--source", str(src)], capsys)
    assert out["scored"] > 3 and out["record"] is None and record_path(store).read_bytes() == asked
    assert any(n.startswith("the run record beside s.jsonl is left as it was: this scoring counts the") and
               "never asked as wrong" in n for n in out["notes"])
    out = _score_json(["vague", "--predictions", str(store), "--source", str(src), "--record",
                       str(tmp_path / "all")], capsys)
    assert out["record"] == str(tmp_path / "all.record.json") and len(RunRecord.read(tmp_path / "all")) > 3
    out = _score_json(["vague", "--predictions", str(store), "--source", str(src), "-o", "missing=skip"], capsys)
    assert out["record"] == str(record_path(store)) and len(RunRecord.read(store)) == 3


def test_score_prints_one_shape_for_every_paper_with_the_declared_metrics_values(samples, tmp_path, capsys):
    keys = {}
    for paper, setting, n in ONE_EACH:
        argv, scored = _scored_file(paper, setting, n, samples, tmp_path)
        out = _score_json(argv, capsys)
        keys[paper] = set(out)
        bench = get_benchmark(paper)
        want = {k: v for k, v in bench.summary(scored).items() if k in {m.name for m in bench.metrics}}
        assert want and out["metrics"] == want, paper  # the numbers are the METRICS' own
        assert {r["metric"] for r in out["by_slice"]} == set(want)
        for r in out["by_slice"]:
            assert r["ci_low"] is None or r["ci_low"] <= r["value"] <= r["ci_high"]
        assert out["deviations"] == [d.to_dict() for d in scored.attrs.get("deviations") or []]  # typed, as stored
        assert out["benchmark"] == paper and out["setting"] == setting and out["scored"] == len(scored)
    assert len({frozenset(k) for k in keys.values()}) == 1, keys


def test_every_number_of_a_run_comes_back_from_its_record_alone(samples, tmp_path, capsys):
    """The record keeps each declared metric's unit sets: its values and intervals, and the card's rows, are
    recomputed from the file alone and equal those of the scored frame; a record of schema 1 (no unit sets)
    still reads, and ranking it is refused in one line."""
    from vlamb_nb.record import value_of
    from vlamb_nb.stats.metric import headlines

    for paper, setting, n in ONE_EACH:
        argv, scored = _scored_file(paper, setting, n, samples, tmp_path / paper)
        _score_json(argv, capsys)
        rec = RunRecord.read(argv[2])
        assert len(rec) == len(scored)
        bench = get_benchmark(paper)
        again = [value_of(m, u, n_resamples=50) for m in bench.metrics for u in rec.unit_sets(m.name) or ()]
        assert again == list(rec.metrics), paper
        on_card = [m for m in bench.metrics if m.card is not None]
        in_memory = from_scored(bench, scored, n_resamples=0)  # the frame's record, never written
        from_frame = headlines(paper, on_card, {setting: in_memory}, cells=bench.reference, n_resamples=200)
        from_record = headlines(paper, on_card, {setting: rec}, cells=bench.reference, n_resamples=200)
        assert from_frame and [repr(h) for h in from_record] == [repr(h) for h in from_frame], paper
        old = rec.to_dict()
        old.update(schema_version=1, units={})
        with pytest.raises(DataError, match="schema 1 keeps no per-unit values") as e:
            headlines(paper, on_card, {setting: RunRecord.from_dict(old)}, cells=bench.reference)
        assert "\n" not in str(e.value)


def test_a_metric_added_to_a_papers_metrics_reaches_score_with_no_other_edit(samples, tmp_path, capsys,
                                                                              monkeypatch):
    for paper, setting, n in ONE_EACH:
        argv, scored = _scored_file(paper, setting, n, samples, tmp_path / paper)
        bench = get_benchmark(paper)
        column = next(c for c in ("valid", "labelled") if c in scored.columns)
        added = Metric("answers read", "binary", column=column, card=None)
        monkeypatch.setattr(bench, "metrics", (*bench.metrics, added))
        out = _score_json(argv, capsys)
        want = round(added.point(scored), 2)
        assert out["metrics"]["answers read"] == want and not math.isnan(want), paper
        assert [r["value"] for r in out["by_slice"] if r["metric"] == "answers read"] == [want]
        rows = RunRecord.read(argv[2]).to_pandas()
        rows = rows[rows["scored"].astype(bool)]
        assert "answers read" in rows.columns
        assert 100 * np.mean(rows["answers read"].astype(float)) == pytest.approx(added.point(scored))
        monkeypatch.undo()


def test_a_store_of_several_runs_keeps_one_record_per_run(tmp_path, capsys):
    """A file holding two runs (written before one run per file, or joined by hand) is scored run by run, each
    record named by its run's number; reading the store without naming one says which there are."""
    bench = get_benchmark("vague")
    folder = bench.make_sample(tmp_path / "d", n=4, seed=0)
    items = bench.load(folder)
    store = F.one_store(tmp_path / "s.jsonl",
                        *(lambda p, m=m: bench.evaluate(F.model(m), items, "vlm", store=p, progress=False)
                          for m in ("a", "b")))
    bench.score_store(store, items, model="a")
    assert RunRecord.read(record_path(store, 0)).model.model_id == "a" and not record_path(store).exists()
    assert bench.score_store(store, items, run=1).attrs["run_number"] == 1
    with pytest.raises(DataError, match=r"holds 2 runs, each with its record \(s\.run-0\.record\.json, "
                                        r"s\.run-1\.record\.json\); name one"):
        RunRecord.read(store)
    assert RunRecord.read(record_path(store, 1)).model.model_id == "b"
    assert RunRecord.read(record_path(store, 1)).run_id.model_id == "b"
    # scoring one of them (the number -o run=N picks) rewrites its record only
    out = _score_json(["vague", "--predictions", str(store), "--source", str(folder), "-o", "model=a"], capsys)
    assert out["model"] == "a" and RunRecord.read(record_path(store, 0)).model.model_id == "a"
    assert RunRecord.read(record_path(store, 1)).model.model_id == "b"


def test_another_model_or_decoding_asked_into_a_store_writes_a_store_of_its_own(tmp_path):
    """One store file is one run: a run whose model, decoding or items differ from the run its store holds writes
    its own file beside it (``<stem>.<run key>.jsonl``) with its own record, and a rerun of either resumes its
    own file without asking anything again."""
    bench = get_benchmark("vague")
    folder = bench.make_sample(tmp_path / "d", n=4, seed=0)
    items = bench.load(folder)
    store = tmp_path / "s.jsonl"
    first = bench.evaluate(F.model("a"), items, "vlm", store=store, progress=False)
    other = bench.evaluate(F.model("b"), items, "vlm", store=store, progress=False)
    tokens = bench.evaluate(F.model("a"), items, "vlm", store=store, progress=False, max_new_tokens=7)
    paths = [Path(r.attrs["store"]) for r in (first, other, tokens)]
    assert paths[0] == store and len(set(paths)) == 3
    assert all(re.fullmatch(r"s\.[0-9a-f]{8}\.jsonl", p.name) for p in paths[1:])
    for p, model, budget in zip(paths, ("a", "b", "a"), (None, None, 7), strict=True):
        rec = RunRecord.read(p)  # each file one run, its record beside it: no run to pick
        assert rec.model.model_id == model and len(rec.rows) == len(items) and rec.store == p.name
        assert (rec.decoding["max_new_tokens"] == 7) == (budget == 7)
        assert len({r["run"]["run_key"] for r in map(json.loads, p.read_text().splitlines())}) == 1
    for p, model, options in zip(paths, ("a", "b", "a"), ({}, {}, {"max_new_tokens": 7}), strict=True):
        again = bench.evaluate(F.model(model), items, "vlm", store=store, progress=False, **options)
        answered = again["error"].isna() | (again["error"] == "")
        assert Path(again.attrs["store"]) == p and again.loc[answered, "cached"].all()  # failures are asked again
    assert sorted(tmp_path.glob("s*.jsonl")) == sorted(paths)


def test_a_damaged_store_beside_a_run_is_not_reused_and_says_so(tmp_path):
    """Another run's file that cannot be read (a line damaged in the middle) gives no answers to reuse: the run takes
    what the readable files hold, warns naming the damaged one, and leaves it as it was. (A damaged default file is
    an error, as before: it may be this run's own.)"""
    bench = get_benchmark("vague")
    items = bench.load(bench.make_sample(tmp_path / "d", n=4, seed=0))
    store = tmp_path / "s.jsonl"
    bench.evaluate(F.model("a"), items, "vlm", store=store, progress=False, limit=2)
    other = Path(bench.evaluate(F.model("a"), items, "vlm", store=store, progress=False).attrs["store"])
    lines = other.read_text().splitlines()
    damaged = "\n".join([lines[0], "{not json", *lines[1:]]) + "\n"
    other.write_text(damaged)
    with pytest.warns(UserWarning, match=rf"answers not reused from .*{re.escape(other.name)}"):
        third = bench.evaluate(F.model("a"), items, "vlm", store=store, progress=False, max_new_tokens=9)
    own = Path(third.attrs["store"])
    assert own not in (store, other) and other.read_text() == damaged
    assert {json.loads(line).get("reused_from") for line in own.read_text().splitlines()} <= {None, "s.jsonl"}
    assert len(RunRecord.read(own).rows) == len(third)


def test_a_store_written_before_run_keys_is_resumed_in_place_by_its_own_run_only(tmp_path):
    """A store of an older version (records without a run key) is still its run's: the same run resumes it and
    asks nothing; another decoding writes its own file. A sweep's views find the file its last run wrote."""
    import os

    from vlamb_nb.record import latest_store

    bench = get_benchmark("vague")
    items = bench.load(bench.make_sample(tmp_path / "d", n=4, seed=0))
    store = tmp_path / "s.jsonl"
    bench.evaluate(F.model("a"), items, "vlm", store=store, progress=False)
    old = [json.loads(line) for line in store.read_text().splitlines()]
    for r in old:
        del r["run"]["run_key"]
    store.write_text("".join(json.dumps(r) + "\n" for r in old))
    again = bench.evaluate(F.model("a"), items, "vlm", store=store, progress=False)
    assert again.attrs["store"] == str(store) and sorted(tmp_path.glob("s*.jsonl")) == [store]
    other = Path(bench.evaluate(F.model("a"), items, "vlm", store=store, progress=False,
                                max_new_tokens=5).attrs["store"])
    assert other != store and sorted(tmp_path.glob("s*.jsonl")) == sorted([store, other])
    assert latest_store(store) == other  # its record was written last
    os.utime(record_path(store), (record_path(other).stat().st_mtime + 5,) * 2)
    assert latest_store(store) == store
    assert latest_store(tmp_path / "none.jsonl") == tmp_path / "none.jsonl"


def test_a_limited_run_then_the_whole_run_keeps_both_whole_and_asks_nothing_twice(tmp_path):
    """A notebook tried with ``limit=2`` and then run on everything: the whole run is another run (other items),
    so it writes its own store, taking the limited run's answers instead of asking again (marked with the file
    they came from); each store holds every answer of its run, so each scores alone, and nothing is lost."""
    from vlamb_nb.models import ScriptedModel

    bench = get_benchmark("vague")
    folder = bench.make_sample(tmp_path / "d", n=6, seed=0)
    items = bench.load(folder)
    asked: list[str] = []

    def respond(req):
        asked.append(req.id)
        return F.respond(req)

    model = ScriptedModel(respond, model_id="m")
    store = tmp_path / "s.jsonl"
    part = bench.evaluate(model, items, "vlm", store=store, progress=False, limit=2)
    n_part = len(asked)
    whole = bench.evaluate(model, items, "vlm", store=store, progress=False)
    own = Path(whole.attrs["store"])
    assert Path(part.attrs["store"]) == store and own != store
    stored = [json.loads(line) for line in own.read_text().splitlines()]
    reused = [r for r in stored if r.get("reused_from")]
    assert reused and {r["reused_from"] for r in reused} == {"s.jsonl"}
    assert len(asked) - n_part == len(stored) - len(reused)  # the reused answers were not asked again
    assert {r["request_id"] for r in reused} <= set(asked[:n_part])
    for path, rows in ((store, len(part)), (own, len(whole))):
        rec = RunRecord.read(path)
        assert len(rec.rows) == rows
        again = bench.score_store(path, items, record=False)  # one run per file: nothing to pick
        assert len(again) == rows and list(again["text"]) == list((part if path == store else whole)["text"])


def test_the_record_names_the_data_and_what_it_leaves_out_in_their_own_types(tmp_path):
    """The data identity and what a release leaves out are the datahome's types in the record, not copies; a
    file given as the data is named by its sha256."""
    import hashlib

    from vlamb_nb.datahome import DataIdentity, LeftOut, given_identity, tag

    bench = get_benchmark("mucar")
    data_file = bench.make_sample(tmp_path / "d", n=3, seed=0)  # the release's one JSON file
    items = bench.load(data_file)
    first = str(items["image_id"].iloc[0])
    lo = LeftOut(kind="defect", why="its image_id names no single file", column="image_id", keys=(first,), n_keys=1,
                 first=(first,), whole="group", unit="queries")
    ident = given_identity("mucar", data_file, n_items=len(items))
    items = tag(items, DataIdentity(**{**ident.__dict__, "left_out": (lo,)}))
    store = tmp_path / "s.jsonl"
    bench.evaluate(F.model(), items, "full", store=store, progress=False)
    rec = RunRecord.read(store)
    assert isinstance(rec.data.identity, DataIdentity) and rec.data.release == str(data_file)
    assert rec.data.sha256 == hashlib.sha256(data_file.read_bytes()).hexdigest()
    (left,) = rec.coverage.left_out
    assert isinstance(left, LeftOut) and left.items >= 1 and "names no single file" in left.text()
    assert RunRecord.from_dict(json.loads(json.dumps(rec.to_dict()))) == rec
    assert rec.score_view()["coverage"]["left_out"] == [left.text()]


def test_a_released_prediction_file_gets_a_record_where_one_is_named(shared_data, tmp_path, capsys):
    """The authors' own per-row file is read by the paper's reader into a scored run; its record is written only
    where asked (the released data stays as released) and reads back with every row."""
    path = shared_data / "refadv" / "predictions" / "qwen25a7b_direct_predictions.jsonl"
    if not path.exists():
        pytest.skip("the Ref-Adv predictions are not beside the checkout")
    out = _score_json(["refadv", "--predictions", str(path)], capsys)
    assert out["record"] is None and not record_path(path).exists()
    out = _score_json(["refadv", "--predictions", str(path), "--record", str(tmp_path / "qwen7b")], capsys)
    assert out["record"] == str(tmp_path / "qwen7b.record.json")
    rec = RunRecord.read(tmp_path / "qwen7b")
    rows = rec.to_pandas()
    assert len(rows) == rec.score_view()["scored"] == 1142 and rows["gold"].notna().all()
    assert rows["Acc@0.5"].mean() * 100 == pytest.approx(out["metrics"]["Acc@0.5"], abs=0.005)
    assert rec.model.model_id == out["model"] and rec.setting == "direct"


def test_a_record_that_cannot_be_written_is_an_error_naming_it_and_the_answers_stand(tmp_path, monkeypatch):
    """Every view reads a run from its record, so a record that cannot be written stops the scoring in one line
    naming the file; the answers stay in the store, and scoring it again once the folder is writable writes it."""
    from vlamb_nb.record import RecordError

    bench = get_benchmark("vague")
    items = bench.load(bench.make_sample(tmp_path / "d", n=4, seed=0))
    store = tmp_path / "s.jsonl"
    live = bench.evaluate(F.model(), items, "vlm", store=store, progress=False)
    record_path(store).unlink()
    written = RunRecord.write

    def refuse(self, path, *, run=None):
        raise OSError(30, "Read-only file system", str(path))

    monkeypatch.setattr(RunRecord, "write", refuse)
    with pytest.raises(RecordError, match=r"s\.record\.json: run record not written \(Read-only file system\); "
                                          r"the answers stand in the store") as e:
        bench.score_store(store, items)
    assert "\n" not in str(e.value) and not record_path(store).exists()
    monkeypatch.setattr(RunRecord, "write", written)
    again = bench.score_store(store, items)
    pd.testing.assert_frame_equal(live.drop(columns="cached"), again.drop(columns="cached"))
    assert RunRecord.read(store).setting == "vlm" and again.attrs["record"]["rows"] == len(live)


def test_a_record_whose_unit_sets_were_tampered_with_is_refused_in_one_line(tmp_path):
    """Every number of a run is recomputed from its unit sets, so a record whose sets do not hold together (a
    value that is not a number, keys and values of different lengths, a group's items missing) is refused
    naming the file, never half read into a card or a comparison."""
    store, path = _vague_run(tmp_path, 6)
    good = json.loads(path.read_text())
    assert RunRecord.read(store).unit_sets("accuracy")
    for change in (lambda u: u.update(values=["x", *u["values"][1:]]), lambda u: u.update(keys=u["keys"][1:]),
                   lambda u: u.update(clusters=["a"]), lambda u: u.update(members=[["only one"]]),
                   lambda u: u.update(keys=7), lambda u: u.update(values=[float("inf"), *u["values"][1:]])):
        bad = json.loads(json.dumps(good))
        change(bad["units"]["accuracy"][0])
        path.write_text(json.dumps(bad))
        with pytest.raises(DataError, match="malformed run record") as e:
            RunRecord.read(store)
        assert path.name in str(e.value) and "\n" not in str(e.value)


def test_a_notebooks_card_reads_each_runs_record(tmp_path):
    """``Benchmark.recorded`` gives the card the record a run's scoring wrote (read back from the file), so a
    notebook's card rows are the record's: a record changed on disk changes the card; a part of a run and a run
    without a store become their records in memory, never written."""
    bench = get_benchmark("vague")
    items = bench.load(bench.make_sample(tmp_path / "d", n=6, seed=0))
    scored = bench.evaluate(F.model(), items, "vlm", store=tmp_path / "s.jsonl", progress=False)
    (rec,) = bench.recorded({"vlm": scored}).values()
    assert isinstance(rec, RunRecord) and rec.setting == "vlm"
    rows = lambda runs: [(h.slice, h.value, h.ci_low, h.ci_high, h.rank) for h in bench.headline(runs, seed=3)]  # noqa: E731
    unwritten = scored.copy()
    unwritten.attrs = {k: v for k, v in scored.attrs.items() if k != "record"}  # the frame alone: its own record
    assert rows({"vlm": rec}) == rows({"vlm": scored}) == rows({"vlm": unwritten})

    data = json.loads(record_path(tmp_path / "s.jsonl").read_text())
    for u in data["units"]["accuracy"]:  # every answer right, as the units now say
        u["values"] = [1.0] * len(u["values"])
    record_path(tmp_path / "s.jsonl").write_text(json.dumps(data))
    with pytest.raises(DataError, match=r"s\.record\.json, field 'metrics\[0\]\.value': accuracy \(all\) is"):
        bench.recorded({"vlm": scored})  # its own values say otherwise: refused, never a silent 100
    for m in data["metrics"]:  # every part of the file says so
        m.update(value=100.0, ci_low=100.0, ci_high=100.0)
    for r in data["rows"]:
        r["accuracy"] = 1.0 if r["accuracy"] is not None else None
    record_path(tmp_path / "s.jsonl").write_text(json.dumps(data))
    card = bench.headline(bench.recorded({"vlm": scored}), seed=3)
    assert {h.value for h in card} == {100.0} == {h.value for h in bench.headline({"vlm": scored}, seed=3)} \
        != {h.value for h in bench.headline({"vlm": unwritten}, seed=3)}

    part = scored.head(3)  # it carries the whole run's record, which is not of these rows: its own, in memory
    (of_part,) = bench.recorded({"vlm": part}).values()
    assert "record" in part.attrs and isinstance(of_part, RunRecord) and len(of_part) == 3
    assert [r["item_id"] for r in of_part.rows] == part["item_id"].astype(str).tolist()
    memory = bench.evaluate(F.model(), items, "vlm", progress=False)
    recs = bench.recorded({"vlm": memory, "other": None})
    assert recs["other"] is None and len(recs["vlm"]) == len(memory) and recs["vlm"].store is None
    assert {h.value for h in bench.headline(recs, seed=3)} == {h.value for h in bench.headline({"vlm": memory}, seed=3)}


def _set_whole_values(data: dict, value: float) -> None:
    """Every metric's whole unit set of a record (as JSON) set to ``value``, with its value and its rows' values
    rewritten to agree: an edit a record read back cannot tell from a scoring."""
    from vlamb_nb.stats.metric import Units, point_of

    for name, sets in data["units"].items():
        for u in sets or ():
            if u["whole"]:
                u["values"] = [value] * len(u["values"])
                for m in data["metrics"]:
                    if m["metric"] == name and m["whole"]:
                        m["value"] = round(point_of(m["kind"], Units.from_dict(u)), 2)
        for r in data["rows"]:
            if r.get(name) is not None and r.get("scored", True):
                r[name] = value


@pytest.mark.parametrize("paper,setting,n,options", F.RUNS, ids=IDS)
def test_a_sweeps_summary_reads_the_declared_numbers_from_the_runs_record(paper, setting, n, options, samples,
                                                                          tmp_path):
    """``bench.summary`` (a sweep's summary row) takes its rows, invalid answers and declared metrics from the run
    record the scoring wrote: the same numbers as the frame gives, and the record's when the two differ."""
    bench, (_, items) = get_benchmark(paper), samples[(paper, n)]
    store = tmp_path / "s.jsonl"
    scored = bench.evaluate(F.model(), items, setting, store=store, progress=False, **options,
                            **F.score_options(paper))
    rec = RunRecord.read(store)
    in_memory = from_scored(bench, scored, n_resamples=0)  # the frame's own record, never written
    assert summary(bench.metrics, rec) == summary(bench.metrics, in_memory)
    declared = summary(bench.metrics, in_memory)
    assert declared["n"] == len(scored)  # RACQUET's answers, not judged here, hold no metric value
    data = json.loads(record_path(store).read_text())
    _set_whole_values(data, 0.0)  # the file now says, in every part: nothing right
    record_path(store).write_text(json.dumps(data))
    row = bench.summary(scored)
    for name in set(declared) - {"n", "invalid"}:
        kind = next(m.kind for m in bench.metrics if m.name == name)
        assert row[name] == 0.0 or kind == "macro_f1", (name, row[name])  # a macro-F1 of all-0 labels is not 0
    assert {k: v for k, v in row.items() if k not in declared} == \
        {k: v for k, v in bench.summary(scored.copy()).items() if k not in declared}  # extras: from the frame


# -- a record is checked before it is believed: against its store, itself and its size ------------------------
def _line(err: Exception) -> str:
    text = str(err)
    assert "\n" not in text, text
    return text


def test_a_record_beside_another_runs_store_is_refused_naming_the_field(tmp_path):
    """A copied sweep whose model-a record is really model-c's run: the store beside it holds no run of the
    record's identity, so the record is refused, old records (written before they kept their store's digest)
    included."""
    bench = get_benchmark("vague")
    items = bench.load(bench.make_sample(tmp_path / "d", n=6, seed=0))
    a, c = tmp_path / "a" / "s.jsonl", tmp_path / "c" / "s.jsonl"
    for store, name in ((a, "model-a"), (c, "model-c")):
        store.parent.mkdir()
        bench.evaluate(F.model(name), items, "vlm", store=store, progress=False)
    assert RunRecord.read(a).unchecked == ""  # its own store: checked
    record_path(a).write_bytes(record_path(c).read_bytes())
    with pytest.raises(DataError) as e:
        RunRecord.read(a)
    assert type(e.value).__name__ == "RecordMismatch"  # a DataError: the command line says it in one line
    assert "s.record.json, field 'run_id': s.jsonl holds no run model-c" in _line(e.value)
    old = json.loads(record_path(c).read_text())
    old.pop("store_digest")  # a record of the version before
    record_path(a).write_text(json.dumps(old))
    with pytest.raises(DataError, match="field 'run_id'"):
        RunRecord.read(a)
    record_path(c).write_text(json.dumps(old))
    assert "written before records kept its digest" in RunRecord.read(c).unchecked  # readable, and said so


def test_a_store_changed_since_its_record_is_refused_and_another_runs_answers_are_not_a_change(tmp_path):
    bench = get_benchmark("vague")
    items = bench.load(bench.make_sample(tmp_path / "d", n=6, seed=0))
    store = F.one_store(tmp_path / "s.jsonl",  # two runs in one file, as written before one run per file
                        *(lambda p, m=m: bench.evaluate(F.model(m), items, "vlm", store=p, progress=False)
                          for m in ("scripted", "other")))
    bench.score_store(store, items, model="scripted")
    first = record_path(store, 0)
    assert RunRecord.read(first).unchecked == "" and RunRecord.read(first).model.model_id == "scripted"
    rec = next(r for r in map(json.loads, store.read_text().splitlines()) if r["model"]["model_id"] == "scripted")
    with open(store, "a", encoding="utf-8") as fh:  # the run's answers now hold one more
        fh.write(json.dumps(dict(rec, key="k-extra", request_id="extra", item_id="extra")) + "\n")
    with pytest.raises(DataError) as e:
        RunRecord.read(first)
    assert "s.run-0.record.json, field 'store_digest.run_sha256': the run's answers in s.jsonl changed since the " \
           "record was written" in _line(e.value) and "score it again" in str(e.value)


@pytest.mark.parametrize("case,field,words", [
    ("a value out of range", "units.accuracy[0].values", "is 25 where a binary metric's unit is 0 or 1"),
    ("a value missing", "units.accuracy[0].values", "has no value (NaN)"),
    ("every unit right", "metrics[0].value", "units give 100.0"),
    ("units and value agree, rows do not", "rows[", "the rows hold"),
    ("a count edited", "metrics[0].n", "counts 99 units"),
])
def test_a_record_that_disagrees_with_itself_is_refused_naming_the_file_and_field(tmp_path, case, field, words):
    """Unit values edited to all-right gave a silent 100 while the record's own metrics said otherwise; 25.0 or
    NaN failed deep in the statistics without naming the file: each is now one line naming the file and field."""
    store, path = _vague_run(tmp_path, 6)
    data = json.loads(path.read_text())
    whole = next(u for u in data["units"]["accuracy"] if u["whole"])
    if case == "a value out of range":
        data["units"]["accuracy"][0]["values"][0] = 25.0
    elif case == "a value missing":
        data["units"]["accuracy"][0]["values"][0] = None
    elif case == "every unit right":
        whole["values"] = [1.0] * len(whole["values"])
    elif case == "units and value agree, rows do not":
        from vlamb_nb.stats.metric import Units, point_of

        whole["values"] = [1.0] * len(whole["values"])
        data["metrics"][0]["value"] = round(point_of("binary", Units.from_dict(whole)), 2)
    else:
        data["metrics"][0]["n"] = 99
    path.write_text(json.dumps(data))
    with pytest.raises(DataError) as e:
        RunRecord.read(store)
    assert f"s.record.json, field '{field}" in _line(e.value) and words in str(e.value), str(e.value)
    argv = ["compare", str(path), str(path), "--out", str(tmp_path / "cmp")]
    assert cli.main(argv) == cli.EXIT_ERROR  # the command line: one line, exit 2


def test_a_record_nested_too_deep_or_too_big_is_one_line_never_a_traceback(tmp_path, capsys, monkeypatch):
    from vlamb_nb import record

    deep = tmp_path / "deep.record.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(DataError, match="nested deeper than 64 levels") as e:
        RunRecord.read(deep)
    assert "deep.record.json" in _line(e.value)
    store, path = _vague_run(tmp_path, 4)
    data = json.loads(path.read_text())
    nest: list = []
    for _ in range(100):
        nest = [nest]
    data["rows"][0]["parsed"] = {"x": nest}  # parses, but deeper than any record holds
    path.write_text(json.dumps(data))
    with pytest.raises(DataError, match="nested deeper"):
        RunRecord.read(store)
    assert cli.main(["compare", str(deep), str(path), "--out", str(tmp_path / "cmp")]) == cli.EXIT_ERROR
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nested deeper" in err[0] and "Traceback" not in err[0], err
    monkeypatch.setattr(record, "MAX_RECORD_BYTES", 100)
    with pytest.raises(DataError, match="more than the 100 a record may hold"):
        RunRecord.read(store)


def test_a_record_without_its_store_is_read_and_every_view_says_it_was_not_checked(tmp_path):
    """A record that travels alone is believed as far as it holds together, and every view that uses it says it
    was not checked against its store: ``compare``'s notes under the model and the run page's scores."""
    import shutil

    import fixtures_items as FI

    from vlamb_nb.compare import compare
    from vlamb_nb.run_view import store_scores

    bench = get_benchmark("vague")
    items = bench.load(bench.make_sample(tmp_path / "d", n=6, seed=0))
    recs = []
    for name in ("a", "b"):
        store = tmp_path / name / "s.jsonl"
        store.parent.mkdir()
        bench.evaluate(F.model(name), items, "vlm", store=store, progress=False)
        alone = tmp_path / "alone" / name / "s.record.json"
        alone.parent.mkdir(parents=True)
        shutil.copy(record_path(store), alone)
        recs.append(alone)
    assert RunRecord.read(recs[0]).unchecked == "not checked against its store (s.jsonl is not beside it)"
    md = compare(recs, n_resamples=200).markdown()  # (a line both models share is said once, for both)
    assert "its run record s.record.json: not checked against its store (s.jsonl is not beside it)" in md, md
    folder = FI.run_folder(tmp_path, FI.samples(tmp_path), "A")
    next(folder.glob("mucar/*/mucar__full.jsonl")).unlink()
    rows = [r for s in store_scores(folder)["mucar"] for r in s.rows()]
    assert rows and all("not checked against its store (mucar__full.jsonl is not beside it)" in r["coverage"]
                        for r in rows)


# -- the environment is true: the package's own checkout, with its local changes ---------------------------------
_ENV = ("import json; from dataclasses import asdict; from vlamb_nb.record import environment; "
        "from vlamb_nb.report_html import environment_facts; "
        "print(json.dumps({'record': asdict(environment()), 'page': environment_facts()['commit']}))")


def _git(folder, *args: str) -> str:
    import subprocess

    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, check=True,
                          env=env).stdout.strip()


def _copy_package(dest) -> None:
    import shutil
    from pathlib import Path

    shutil.copytree(Path(vlamb_nb.__file__).parent, dest / "vlamb_nb",
                    ignore=shutil.ignore_patterns("__pycache__"))


def _environment_from(folder) -> dict:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _ENV], cwd=folder, capture_output=True, text=True, timeout=120,
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(folder), "HOME": str(folder)})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_record_names_the_commit_and_its_local_changes_as_the_page_does(tmp_path):
    """A dirty tree: the page said '+ local changes', the record's environment the bare HEAD."""
    _copy_package(tmp_path)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "x")
    head = _git(tmp_path, "rev-parse", "HEAD")
    clean = _environment_from(tmp_path)
    assert (clean["record"]["commit"], clean["record"]["dirty"], clean["page"]) == (head, False, head)
    with open(tmp_path / "vlamb_nb" / "errors.py", "a", encoding="utf-8") as fh:
        fh.write("# a local change\n")
    dirty = _environment_from(tmp_path)
    assert (dirty["record"]["commit"], dirty["record"]["dirty"]) == (head, True)
    assert dirty["page"] == f"{head} + local changes"
    from vlamb_nb.record import Environment

    assert Environment(**dirty["record"]).commit_label == dirty["page"]  # exactly what the page shows


def test_a_package_vendored_in_another_repository_is_not_a_git_checkout_in_the_record_or_the_page(tmp_path):
    """The package inside another project's repository: the record named that project's commit, the page 'not a
    git checkout'; both now say it is no checkout of its own."""
    from vlamb_nb.report_html import provenance_view

    vendored = tmp_path / "third_party"
    vendored.mkdir()
    _copy_package(vendored)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "another project")
    env = _environment_from(vendored)
    assert env["record"]["commit"] is None and env["record"]["dirty"] is None and env["page"] is None
    shown = dict(provenance_view({"environment": {"commit": env["page"]}}, [])["pairs"])
    assert shown["package commit"] == "not a git checkout"


def test_the_run_page_names_a_numbered_records_store_as_the_store_and_its_run(tmp_path):
    """A store holding two runs has a record per run (``<stem>.run-<N>.record.json``); the run page's scores name
    the store that holds the answers and the run, never a store file that does not exist."""
    import shutil

    from vlamb_nb.run_view import store_scores

    bench = get_benchmark("vague")
    items = bench.load(bench.make_sample(tmp_path / "d", n=6, seed=0))
    store = tmp_path / "run" / "vague" / "m" / "vague__vlm.jsonl"
    store.parent.mkdir(parents=True)
    bench.evaluate(F.model("a"), items, "vlm", store=store, progress=False)
    shutil.copy(record_path(store), record_path(store, run=2))
    names = sorted(s.store for s in store_scores(tmp_path / "run")["vague"])
    assert names == ["vague/m/vague__vlm.jsonl", "vague/m/vague__vlm.jsonl (run 2)"]
