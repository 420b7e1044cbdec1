"""A run given as its run record is compared from the record's unit sets alone (no data, no rescoring), with the
numbers its prediction store gives when it is rescored against its data."""

from __future__ import annotations

import json

import fixtures_stored as F
import pandas as pd
import pytest

from vlamb_nb import cli, get_benchmark
from vlamb_nb.compare import compare
from vlamb_nb.errors import DataError
from vlamb_nb.models import ScriptedModel
from vlamb_nb.record import record_path

B = 200


class _Other:
    """A request as a second model answers it: the same request, keyed by another item (other answers)."""

    def __init__(self, req) -> None:
        self._req = req

    def __getattr__(self, name):
        return getattr(self._req, name)

    @property
    def meta(self):
        return {**self._req.meta, "item_id": f"{self._req.meta.get('item_id', self._req.id)}~b"}


def _two_runs(paper: str, setting: str, n: int, folder):
    bench = get_benchmark(paper)
    src = bench.make_sample(folder / "data", n=n, seed=0)
    items = bench.load(src)
    stores = []
    for name, model in (("a", F.model("model-a")),
                        ("b", ScriptedModel(lambda r: F.respond(_Other(r)), model_id="model-b"))):
        store = folder / f"{name}.jsonl"
        bench.evaluate(model, items, setting, store=store, progress=False, **F.score_options(paper))
        stores.append(store)
    return src, stores


@pytest.mark.parametrize("paper,setting,n", [("vague", "vlm", 16), ("mucar", "full", 6),
                                             ("vflute", "zero_shot", 16), ("refadv", "direct", 12)])
def test_runs_given_as_records_compare_as_their_rescored_stores_do(paper, setting, n, tmp_path):
    """The records read back give the numbers of the stores scored again now against their data (in memory: the
    record each frame gives), whether given as records, as their stores, or one of each."""
    from vlamb_nb.compare import Run

    src, stores = _two_runs(paper, setting, n, tmp_path)
    bench = get_benchmark(paper)
    items = bench.load(src)
    rescored = [Run(f"model-{name}", paper, setting, bench.score_store(s, items, record=False, **F.score_options(paper)),
                    origin=str(s)) for name, s in zip("ab", stores, strict=True)]
    by_frame = compare(rescored, n_resamples=B)
    by_record = compare([record_path(s) for s in stores], n_resamples=B)  # no data given
    assert len(by_frame.values) and len(by_frame.pairs)
    pd.testing.assert_frame_equal(by_record.values, by_frame.values)
    pd.testing.assert_frame_equal(by_record.pairs, by_frame.pairs)
    for given in (stores, [stores[0], record_path(stores[1])]):
        again = compare(given, sources={paper: src}, n_resamples=B)
        pd.testing.assert_frame_equal(again.values, by_frame.values)


def test_a_store_given_directly_is_read_as_its_record_and_scored_only_where_it_has_none(tmp_path, monkeypatch):
    """``compare a.jsonl b.jsonl --source``: each store is read as its verified run record (the data read only for
    the items' images); one with no record is scored once against the data and its record written, then read as a
    record; one whose record disagrees with it is refused in one line without its data, and scored again (said so)
    with it."""
    from vlamb_nb.benchmarks.base import Benchmark
    from vlamb_nb.record import RecordMismatch, RunRecord

    src, stores = _two_runs("vague", "vlm", 12, tmp_path)
    scorings = []
    real = Benchmark.score_store

    def counted(self, *a, **k):
        scorings.append(k.get("record", True))
        return real(self, *a, **k)

    monkeypatch.setattr(Benchmark, "score_store", counted)
    first = compare(stores, sources={"vague": src}, n_resamples=B)
    assert scorings == [] and all(e["runs"] for e in first.aligned)
    assert all(r.record is not None and r.items is not None for e in first.aligned for r in e["runs"])  # images
    record_path(stores[1]).unlink()
    second = compare(stores, sources={"vague": src}, n_resamples=B)
    assert scorings == [True] and record_path(stores[1]).is_file()  # scored once, its record written
    pd.testing.assert_frame_equal(second.values, first.values)
    compare(stores, sources={"vague": src}, n_resamples=B)
    assert scorings == [True]  # and read as its record from then on
    with open(stores[0], "a", encoding="utf-8") as fh:  # an answer added after its record was written
        lines = stores[0].read_text(encoding="utf-8").splitlines()
        assert '"request_id":"' in lines[-1]
        fh.write(lines[-1].replace('"request_id":"', '"request_id":"again-') + "\n")
    with pytest.raises(RecordMismatch) as e:  # its data not given: refused, naming the record
        compare(stores, n_resamples=B)
    assert "\n" not in str(e.value) and "a.record.json" in str(e.value)
    third = compare(stores, sources={"vague": src}, n_resamples=B)  # its data given: scored again, and said
    assert scorings == [True, True] and RunRecord.read(stores[0]).coverage.duplicates == 1
    said = [d for m in third.models for d in m["deviations"] if "its run record disagreed with it" in d]
    assert said and said[0].startswith("a.jsonl: ")


def test_a_store_given_with_another_answer_key_is_scored_against_it_not_read_from_its_record(tmp_path):
    """The data given is what a store is scored against: a record scored against other items (another answer
    key) is not used for it; the store is scored again against the data given, and the run says so."""
    import shutil

    src, stores = _two_runs("vflute", "zero_shot", 16, tmp_path)
    same = compare(stores, sources={"vflute": src}, n_resamples=B)
    assert not any("other items than the data given" in d for m in same.models for d in m["deviations"])
    other = tmp_path / "other-key"
    shutil.copytree(src, other)
    data = other / "vflute-v2-test.json"
    recs = json.loads(data.read_text(encoding="utf-8"))
    for r in recs[:6]:
        r["label"] = "contradiction" if r["label"] == "entailment" else "entailment"
    data.write_text(json.dumps(recs), encoding="utf-8")
    flipped = compare(stores, sources={"vflute": other}, n_resamples=B)
    said = [d for m in flipped.models for d in m["deviations"] if "other items than the data given" in d]
    assert len(said) == 2 and said[0].startswith(("a.jsonl: ", "b.jsonl: "))
    assert not flipped.values["value"].equals(same.values["value"])  # scored against the key given


def test_a_record_is_compared_from_the_command_line_and_a_bad_one_refused_in_one_line(tmp_path, capsys):
    src, stores = _two_runs("vague", "vlm", 12, tmp_path)
    recs = [str(record_path(s)) for s in stores]
    assert cli.main(["compare", *recs, "--n-resamples", "200", "--json", "--out", str(tmp_path / "cmp")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {v["model"] for v in out["values"]} == {"model-a", "model-b"}
    old = json.loads(record_path(stores[1]).read_text())
    old.update(schema_version=1, units={})
    (tmp_path / "old.record.json").write_text(json.dumps(old))
    with pytest.raises(DataError, match="schema 1 keeps no per-unit values") as e:
        compare([recs[0], tmp_path / "old.record.json"], n_resamples=B)
    assert "old.record.json" in str(e.value) and "\n" not in str(e.value)
    ran = json.loads(record_path(stores[1]).read_text())
    ran["stage"] = "run"
    (tmp_path / "ran.record.json").write_text(json.dumps(ran))
    with pytest.raises(DataError, match="not yet scored"):
        compare([recs[0], tmp_path / "ran.record.json"], n_resamples=B)


def test_pairs_only_some_runs_answered_whole_are_dropped_alike_from_records(tmp_path):
    """MUCAR's Acc_p counts a pair only when every query of it is right: a run that answered part of a pair
    leaves that pair out of the comparison, from its record as from its rescored store."""
    bench = get_benchmark("mucar")
    src = bench.make_sample(tmp_path / "data", n=8, seed=0)
    items = bench.load(src)
    gold = dict(zip(items["uid"].astype(str), items["gold"], strict=True))

    def knowing(share: int, name: str) -> ScriptedModel:
        def respond(req) -> str:
            item = str(req.meta["item_id"])
            right = F.pick(f"{item}:{name}", 10) < share
            return f"Answer: {gold[item] if right else ('B' if gold[item] == 'A' else 'A')}"
        return ScriptedModel(respond, model_id=name)

    stores = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    bench.evaluate(knowing(9, "model-a"), items, "full", store=stores[0], progress=False)
    bench.evaluate(knowing(6, "model-b"), items, "full", store=stores[1], progress=False, limit=len(items) - 3)
    by_store = compare(stores, sources={"mucar": src}, n_resamples=B)
    by_record = compare([record_path(s) for s in stores], n_resamples=B)
    pd.testing.assert_frame_equal(by_record.values, by_store.values)
    pd.testing.assert_frame_equal(by_record.pairs, by_store.pairs)
    acc_p = by_record.values[by_record.values["metric"] == "Acc_p"].set_index("model")
    assert acc_p["value"].max() > 0 and acc_p["n"].iloc[0] < items["group"].nunique()  # some pairs dropped
    assert any("dropped" in n for n in by_record.notes)


def test_a_store_and_its_own_record_are_one_run_never_compared_with_itself(tmp_path):
    src, stores = _two_runs("vague", "vlm", 8, tmp_path)
    with pytest.raises(DataError, match="the same run twice \\(a store and its run record\\)"):
        compare([stores[0], record_path(stores[0])], sources={"vague": src}, n_resamples=B)


def _shown(view):
    """A comparison's items page as a reader sees it, images aside: each group's items, each row's text and
    every model's answer, parse, outcome, per-metric values and turns (what makes the outcome, ``w``, apart:
    :func:`_why`)."""
    rows = {r["k"]: {**{f: r[f] for f in ("q", "g", "gb")}, "sl": sorted(view.slices[i] for i in r["sl"]),
                     "m": [None if c is None else {k: v for k, v in c.items() if k != "w"} for c in r["m"]]}
            for r in view.rows}
    groups = [(g.label, g.n, g.unit, sorted(view.rows[i]["k"] for i in g.rows)) for g in view.groups]
    return rows, groups


def _why(view):
    """Per item and model, what the page shows makes its outcome (the IoU, the parse error, the parsed letter...),
    by label."""
    return {(r["k"], j): {label: v for label, v in zip(view.why, c.get("w") or (), strict=False) if v is not None}
            for r in view.rows for j, c in enumerate(r["m"]) if c is not None}


@pytest.mark.parametrize("paper,setting,n", [("vague", "vlm", 16), ("mucar", "full", 6),
                                             ("vflute", "zero_shot", 16), ("refadv", "direct", 12)])
def test_a_comparison_of_records_opens_onto_the_items_its_stores_page_shows(paper, setting, n, tmp_path):
    """Every value and pair of a comparison made from records opens onto the same items, with the same prompt,
    answers, parses, outcomes and values, as the comparison of the rescored stores (built from the scored frames
    by other code); only the thumbnails need the data."""
    from vlamb_nb.report_items import comparison_links, comparison_view

    src, stores = _two_runs(paper, setting, n, tmp_path)
    by_store = compare(stores, sources={paper: src}, n_resamples=B)
    by_record = compare([record_path(s) for s in stores], n_resamples=B)
    want, got = comparison_view(by_store), comparison_view(by_record)
    assert _shown(got) == _shown(want)
    # what a record keeps of why an answer counts is what its store's scored rows show (those show more: scores)
    full, kept = _why(want), _why(got)
    assert full.keys() == kept.keys() and any(kept.values())
    assert all(kept[k].items() <= full[k].items() for k in kept), [(kept[k], full[k]) for k in kept
                                                                     if not kept[k].items() <= full[k].items()][:2]
    if paper != "refadv":  # the scripted boxes hit nothing on this small sample: no pair differs there
        assert any(len(g.rows) for g in got.groups if " disagree" in g.label)
    links = comparison_links(got, by_record)
    assert None not in links["values"] and None not in links["pairs"]
    assert any("show no image" in note for note in got.notes)
    mixed = comparison_view(compare([stores[0], record_path(stores[1])], sources={paper: src}, n_resamples=B))
    assert _shown(mixed) == _shown(want)
    assert mixed.images and not any("show no image" in note for note in mixed.notes)  # drawn from the data given


def test_record_rows_are_found_by_their_unit_key_not_their_item_id(tmp_path):
    """Ref-Adv keys its units by row_idx: a record whose item ids differ from its row indices (a RefCOCO-style
    item id) still opens each number onto its rows."""
    from vlamb_nb.report_items import comparison_view

    _, stores = _two_runs("refadv", "direct", 8, tmp_path)
    for s in stores:
        path = record_path(s)
        rec = json.loads(path.read_text(encoding="utf-8"))
        assert all(r["key"] == r["item_id"] for r in rec["rows"] if r["scored"])  # this sample: id is row_idx
        for r in rec["rows"]:
            r["item_id"] = f"ref-{r['item_id']}-0"
        path.write_text(json.dumps(rec), encoding="utf-8")
    view = comparison_view(compare([record_path(s) for s in stores], n_resamples=B))
    whole = next(g for g in view.groups if g.label.endswith("Acc@0.5 · overall"))
    assert len(whole.rows) == whole.n == 8 and all(view.rows[i]["q"] for i in whole.rows)


def test_run_folders_whose_data_is_gone_are_compared_from_their_records(tmp_path):
    """Two reproduce run folders copied from elsewhere (their samples are not here) compare as they do with their
    data: from each store's run record, said in the notes; a store with no record still needs its data."""
    import shutil

    import fixtures_items as FI

    from vlamb_nb.report_items import comparison_view

    sources = FI.samples(tmp_path)
    folders = [FI.run_folder(tmp_path, sources, m) for m in ("A", "B")]
    with_data = compare(folders, n_resamples=B)
    assert not any("not at hand" in n for n in with_data.notes)
    for src in sources.values():
        shutil.move(src, tmp_path / f"gone-{src.name}")
    without = compare(folders, n_resamples=B)
    pd.testing.assert_frame_equal(without.values, with_data.values)
    pd.testing.assert_frame_equal(without.pairs, with_data.pairs)
    assert sum("is not at hand; compared from its stores' run records" in n for n in without.notes) == 4
    assert _shown(comparison_view(without)) == _shown(comparison_view(with_data))
    store = next(folders[1].glob("mucar/*/mucar__full.jsonl"))
    record_path(store).unlink()
    with pytest.raises(DataError, match=r"the data the mucar notebook ran on is not at hand .*\(--source mucar=PATH\)"):
        compare(folders, n_resamples=B)


def test_a_records_image_names_are_never_read_from_this_machine(tmp_path):
    """A run record may come from anywhere: an image it names by an absolute path on this machine is not read
    into the page (which would carry the file to whoever the page is sent to); the rows say they show no image."""
    from PIL import Image

    from vlamb_nb.report_items import comparison_view

    _, stores = _two_runs("vague", "vlm", 8, tmp_path)
    private = tmp_path / "private.png"
    Image.new("RGB", (8, 8), "red").save(private)
    for s in stores:
        path = record_path(s)
        rec = json.loads(path.read_text(encoding="utf-8"))
        for r in rec["rows"]:
            r["image"] = str(private)
        path.write_text(json.dumps(rec), encoding="utf-8")
    view = comparison_view(compare([record_path(s) for s in stores], n_resamples=B))
    assert view.rows and not view.images and all(r["i"] is None for r in view.rows)
    assert any("8 item(s) show no image" in n for n in view.notes)


def test_the_page_of_a_record_comparison_carries_its_items_and_no_markup_from_a_record(tmp_path):
    """``comparison.html`` of two records holds the items blob (rows, and a link for every value and pair); text
    a record carries (an answer, a prompt) reaches the page as data, never as markup."""
    import re

    hostile = "</script><script>alert(1)</script><img src=x onerror=alert(2)>"
    _, stores = _two_runs("vague", "vlm", 8, tmp_path)
    for s in stores:
        path = record_path(s)
        rec = json.loads(path.read_text(encoding="utf-8"))
        for r in rec["rows"]:
            r["answer"], r["prompt"] = hostile, hostile
        path.write_text(json.dumps(rec), encoding="utf-8")
    c = compare([record_path(s) for s in stores], n_resamples=B)
    page = next(p for p in c.save(tmp_path / "out") if p.name == "comparison.html").read_text(encoding="utf-8")
    assert "<script>alert" not in page and "<img src=x" not in page  # no markup of it, anywhere
    blobs = re.findall(r'<script type="application/json"[^>]*>(.*?)</script>', page, re.S)
    assert len(blobs) == 1
    data = json.loads(blobs[0])
    assert len(data["rows"]) == 8 and all(r["q"] == hostile for r in data["rows"])
    assert len(data["links"]["values"]) == len(c.values) and None not in data["links"]["values"]
    assert len(data["links"]["pairs"]) == len(c.pairs) and None not in data["links"]["pairs"]


def test_one_run_copied_into_two_folders_is_refused_by_its_identity(tmp_path):
    """The same run copied into two folders (scored again in one of them, so the records' bytes differ, or as a
    store in one folder and a record in the other) is one run, never compared with itself as two models."""
    import shutil

    _, stores = _two_runs("vague", "vlm", 8, tmp_path)
    copy = tmp_path / "copy" / "a.jsonl"
    copy.parent.mkdir()
    shutil.copy(stores[0], copy)
    bench = get_benchmark("vague")
    bench.score_store(copy, bench.load(tmp_path / "data"))  # its record written anew
    assert record_path(copy).read_bytes() != record_path(stores[0]).read_bytes()
    for given in ([record_path(stores[0]), record_path(copy)], [stores[0], record_path(copy)]):
        with pytest.raises(DataError, match=r"the same run twice \(") as e:
            compare(given, sources={"vague": tmp_path / "data"}, n_resamples=B)
        assert "\n" not in str(e.value)


def test_a_copied_run_folder_whose_record_is_another_models_is_refused_in_one_line(tmp_path, capsys):
    """A copied run folder (its data not here) whose model-A record is really model-B's run: compared from the
    records, it reported A with B's numbers; the store beside the record says otherwise, in one line."""
    import shutil

    import fixtures_items as FI

    sources = FI.samples(tmp_path)
    folders = [FI.run_folder(tmp_path, sources, m) for m in ("A", "B")]
    for src in sources.values():
        shutil.move(src, tmp_path / f"gone-{src.name}")
    a, b = (next(f.glob("mucar/*/mucar__full.jsonl")) for f in folders)
    shutil.copy(record_path(b), record_path(a))
    code = cli.main(["compare", *map(str, folders), "--out", str(tmp_path / "cmp")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == cli.EXIT_ERROR and len(err) == 1, err
    assert "mucar__full.record.json, field 'run_id': mucar__full.jsonl holds no run B" in err[0], err
    assert not (tmp_path / "cmp").exists()
