"""The items behind every number: the item view a page embeds holds exactly the rows each headline cell, each
comparison value and each paired test is made of, and its text cannot leave the JSON it travels in."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import fixtures_items as FI
import numpy as np
import pytest

from vlamb_nb import get_benchmark, report_card
from vlamb_nb.compare import compare, load_runs
from vlamb_nb.report_html import write_comparison_page, write_run_page
from vlamb_nb.report_items import blob, comparison_links, comparison_view, paper_view
from vlamb_nb.reproduce import recorded_runs
from vlamb_nb.run_view import store_scores


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("items")
    sources = FI.samples(root)
    return {m: FI.run_folder(root, sources, m) for m in ("A", "B")}


@pytest.fixture(scope="module")
def runs(folders):
    return {m: load_runs(f) for m, f in folders.items()}


@pytest.mark.parametrize("paper", [p for p, _, _ in FI.PAPERS])
def test_each_headline_cell_has_exactly_the_items_it_counts(paper, folders, runs):
    results = json.loads((folders["A"] / "results.json").read_text(encoding="utf-8"))
    heads = [report_card.from_dict(h) for h in results[paper]["results"]["headline"]]
    prs = [r for r in runs["A"] if r.paper == paper]
    view = paper_view(paper, prs)
    metrics = {m.name: m for m in get_benchmark(paper).metrics}
    assert heads
    for h in heads:
        g = view.group_for(h.setting, h.metric, h.slice)
        assert g is not None, (h.setting, h.metric, h.slice)
        group = view.groups[g]
        assert group.n == h.n  # the metric's n
        m = metrics[h.metric]
        rows = [view.rows[i] for i in group.rows]
        if m.kind == "all_correct":  # n counts groups (pairs): every query of each counted pair is listed
            frame = prs[0].items.assign(_k=prs[0].items["uid"].astype(str))  # the pairs as the data has them
            groups = set(frame.set_index("_k").loc[[r["k"] for r in rows], m.group].astype(str))
            assert len(groups) == h.n
            assert len(rows) == int(frame[frame[m.group].astype(str).isin(groups)].shape[0])
        else:
            assert len(rows) == h.n
        # the number recomputed from the listed rows' own values is the headline's
        k = view.metrics.index(h.metric)
        vals = [r["m"][0]["v"][k] for r in rows]
        if m.kind == "binary":
            assert 100 * np.mean(vals) == pytest.approx(h.value)
    # an item's outcome is its own: the per-row 0/1 metric (a MUCAR query right in a pair that is wrong is right)
    own = [k for k, name in enumerate(view.metrics) if metrics[name].kind == "binary"]
    for r in view.rows:
        if own and r["m"][0]["v"][own[0]] is not None:
            assert r["m"][0]["ok"] == r["m"][0]["v"][own[0]]
    # the whole run is listed, each item once, with its prompt and (where the paper has one) its image
    assert all(r.scored is None and r.record is not None for r in prs)  # read from the run records
    assert len(view.rows) == sum(len(r.record) for r in prs)
    assert all(r["q"] for r in view.rows) and all(r["i"] is not None for r in view.rows)
    assert len(view.images) == len({r["i"] for r in view.rows})  # a shared image is stored once


def test_a_paired_test_links_to_its_discordant_items(runs):
    c = compare([*runs["A"], *runs["B"]], n_resamples=200)
    view = comparison_view(c)
    links = comparison_links(view, c)
    values = c.values.to_dict(orient="records")
    assert len(links["values"]) == len(values) and None not in links["values"]
    for r, g in zip(values, links["values"], strict=True):
        assert view.groups[g].n == r["n"]
    pairs = c.pairs.to_dict(orient="records")
    assert any(r["discordant_a_only"] or r["discordant_b_only"] for r in pairs)  # the check can fail
    for r, g in zip(pairs, links["pairs"], strict=True):
        group = view.groups[g]
        if r["kind"] == "binary":
            assert group.n == r["discordant_a_only"] + r["discordant_b_only"]
        a, b = view.models.index(r["model_a"]), view.models.index(r["model_b"])
        k = view.metrics.index(r["metric"])
        for i in group.rows:
            if r["metric"] != "Acc_p":  # a pair's query may agree while the pair does not
                assert view.rows[i]["m"][a]["v"][k] != view.rows[i]["m"][b]["v"][k]


def test_item_text_cannot_leave_the_json_it_travels_in(runs, tmp_path):
    text = blob({"a": FI.HOSTILE + "&\u2028"})
    assert not re.search(r"[<>&\u2028]", text)
    assert json.loads(str(text)) == {"a": FI.HOSTILE + "&\u2028"}
    c = compare([*runs["A"], *runs["B"]], n_resamples=200)
    page = write_comparison_page(c, tmp_path).read_text(encoding="utf-8")
    assert FI.HOSTILE not in page and "alert(1)" in page  # the answer is there, escaped


def test_a_run_page_lists_each_papers_items_in_its_section(folders, tmp_path):
    run = folders["A"]
    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    records = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in run.rglob("*.record.json")}
    runs, error, _ = recorded_runs(run)
    assert error == {} and runs and records
    assert all(r.scored is None and r.record is not None for r in runs)  # the records are the runs: no rescoring
    # the page reads the records the notebooks wrote and never writes them again
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in run.rglob("*.record.json")} == records
    page = write_run_page(run, results, report_card.build(results), runs=runs).read_text(encoding="utf-8")
    for paper, _, _ in FI.PAPERS:
        section = page.split(f'id="nb-{paper}"', 1)[1].split("<section", 1)[0]
        assert 'data-items-links="headline"' in section and f'id="items-{paper}"' in section
        data = json.loads(section.split('class="it-data">', 1)[1].split("</script>", 1)[0])
        assert len(data["rows"]) == sum(len(r.record) for r in runs if r.paper == paper)
        assert len(data["links"]["headline"]) == len(results[paper]["results"]["headline"])
        assert None not in data["links"]["headline"]
        # each store score (read from its run record) links to exactly the items it counts
        assert 'data-items-links="scores"' in section
        scores = [r for s in store_scores(run)[paper] for r in s.rows()]
        assert scores and len(data["links"]["scores"]) == len(scores) and None not in data["links"]["scores"]
        for r, g in zip(scores, data["links"]["scores"], strict=True):
            assert data["groups"][g]["n"] == r["n"], (paper, r["metric"])
    assert page.count("window.vlambItems = window.vlambItems") == 1  # the table's script and style once a page


def test_stores_that_cannot_be_read_are_said_on_the_page(folders, tmp_path):
    """The page reads each store's run record: one without its record or with a damaged one is said under its
    paper's items and the rest listed; a paper whose notebook's parameters cannot be read is said in its section
    alone; data that is gone leaves the items listed from their records, without images, and says so."""
    run = folders["A"]
    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    broken = dict(results, refadv={**results["refadv"], "parameters": {"source": str(tmp_path / "gone")}},
                  mucar={**results["mucar"], "parameters": ["not", "an", "object"]})
    (tmp_path / "run").mkdir()
    for f in [*run.rglob("*.jsonl"), *run.rglob("*.record.json")]:
        dst = tmp_path / "run" / f.relative_to(run)
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(f.read_bytes())
    (tmp_path / "run" / "results.json").write_text(json.dumps(broken), encoding="utf-8")
    store = next((tmp_path / "run" / "refadv").rglob("refadv__*.jsonl"))
    for other, record in (("unrecorded", None), ("damaged", "{")):  # the same answers, elsewhere, badly recorded
        copy = tmp_path / "run" / "refadv" / other / store.name
        copy.parent.mkdir()
        copy.write_bytes(store.read_bytes())
        if record is not None:
            copy.with_name(copy.stem + ".record.json").write_text(record, encoding="utf-8")
    runs, error, notes = recorded_runs(tmp_path / "run")
    assert list(error) == ["mucar"] and "not an object" in error["mucar"]  # said for that paper alone
    assert {r.paper for r in runs} == {"refadv"}
    lost = [n for n in notes["refadv"] if n.startswith("The store refadv/")]
    assert sorted(n.split("/")[1] for n in lost) == ["damaged", "unrecorded"], notes["refadv"]
    assert any("no run record" in n for n in lost)
    assert all(n.endswith("not listed here") and str(tmp_path) not in n for n in lost)
    refadv = [r for r in runs if r.paper == "refadv"]
    assert len(refadv) == 1 and refadv[0].items is None and refadv[0].record is not None  # its data is gone
    page = write_run_page(tmp_path / "run", broken, report_card.build(broken), runs=runs, items_error=error,
                          items_notes=notes).read_text(encoding="utf-8")
    for paper, _, _ in FI.PAPERS:
        section = page.split(f'id="nb-{paper}"', 1)[1].split("<section", 1)[0]
        if paper == "mucar":
            assert "could not be read" in section and "not an object" in section and 'id="items-' not in section
        else:  # the other paper's items are still listed, what was left out said beside them
            assert f'id="items-{paper}"' in section and "could not be read" not in section
            assert "no run record" in section and "show no image" in section


def test_an_image_that_cannot_be_read_is_counted_and_named(runs):
    from vlamb_nb.compare import Run

    run = next(r for r in runs["A"] if r.paper == "refadv")
    items = run.items.copy()
    first = str(items["id"].iloc[0])
    items["image"] = [{"bytes": b"<html>not an image</html>", "path": None}] + list(items["image"].iloc[1:])
    recorded = Run(run.model, run.paper, run.setting, None, items=items, record=run.record)
    view = paper_view("refadv", [recorded])
    row = next(r for r in view.rows if r["k"] == first)
    assert row["i"] is None and all(r["i"] is not None for r in view.rows if r["k"] != first)
    assert any(n.startswith("1 image(s) could not be read") for n in view.notes), view.notes
    assert not any(re.search(r"\b[A-Z]\w*(Error|Exception)\b", n) for n in view.notes), view.notes  # plain words
    assert row["q"] and row["qk"] == "r"  # the prompt its store recorded
    # a record that kept no prompts: the item's request could not be built (its image), and its own image could
    # not be read: both said, counted, the item's own text shown
    rows = [{**r, "prompt": None} for r in run.record.rows]
    bare = Run(run.model, run.paper, run.setting, None, items=items,
               record=dataclasses.replace(run.record, rows=rows))
    view = paper_view("refadv", [bare])
    row = next(r for r in view.rows if r["k"] == first)
    assert any(n.startswith("refadv direct: 1 item(s) show their own text, not the prompt the model saw: the run "
                            "did not record it, and it could not be rebuilt") for n in view.notes), view.notes
    assert row["q"] and row["qk"] == "i"  # its prompt from its own columns


def test_an_items_prompt_is_what_its_store_recorded_else_the_rebuilt_one(tmp_path):
    """A run asked with options the page does not know (another prompt mode, another grounding style) shows the
    prompt its model saw: the one its store recorded, read from the run record; without a record, the rebuilt one."""
    from vlamb_nb.record import record_path

    folder = FI.run_folder(tmp_path, FI.samples(tmp_path), "A")
    [run] = [r for r in load_runs(folder) if r.paper == "mucar"]
    rebuilt = {r["k"]: r["q"] for r in paper_view("mucar", [run]).rows}
    rec_file = record_path(run.origin)
    rec = json.loads(rec_file.read_text(encoding="utf-8"))
    answer_rows = [r for r in rec["rows"] if r["turn"] == "answer"]
    assert [r["prompt"] for r in answer_rows][:1] == [rebuilt[answer_rows[0]["item_id"]]]  # the same text today
    answer_rows[0]["prompt"] = "asked otherwise: " + answer_rows[0]["prompt"]
    rec_file.write_text(json.dumps(rec), encoding="utf-8")
    [run] = [r for r in load_runs(folder) if r.paper == "mucar"]  # its record read again
    shown = {r["k"]: r["q"] for r in paper_view("mucar", [run]).rows}
    assert shown[answer_rows[0]["item_id"]] == answer_rows[0]["prompt"]
    assert {k: v for k, v in shown.items() if k != answer_rows[0]["item_id"]} == \
        {k: v for k, v in rebuilt.items() if k != answer_rows[0]["item_id"]}
    rec_file.unlink()  # no record: the store is scored once, its record written with the prompts it recorded
    [run] = [r for r in load_runs(folder) if r.paper == "mucar"]
    assert rec_file.is_file() and {r["k"]: r["q"] for r in paper_view("mucar", [run]).rows} == rebuilt


def test_a_numbers_count_is_written_in_its_plural_for_the_page():
    """The chip over a number's items says "n = 8 queries" (it said "8 querys"): the plural is written by the
    package, which knows the word, not by the page's script."""
    from vlamb_nb.report_items import Group

    assert Group("Acc_q", [0], 8, "query").to_json()["counted"] == "8 queries"
    assert Group("Acc_p", [0], 1, "pair").to_json()["counted"] == "1 pair"
    template = (Path(__file__).parents[1] / "vlamb_nb" / "templates" / "_items.html.j2").read_text(encoding="utf-8")
    assert "g.counted" in template and '(g.n === 1 ? "" : "s")' not in template


def test_a_runs_page_lists_the_items_of_a_paper_given_as_records_with_the_data_that_would_show_images(folders,
                                                                                                    tmp_path):
    """A run folder whose data is not here (copied from the machine it ran on) is read from its stores' run
    records: its page still lists every item of every paper (Ref-Adv too) with each turn, the parse and why, its
    numbers link to them, and one line says which data would bring the images."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(folders["A"], run)
    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    for paper in results:  # the samples the notebooks read are gone
        results[paper]["parameters"] = {"source": str(tmp_path / "gone" / paper)}
    (run / "results.json").write_text(json.dumps(results), encoding="utf-8")
    runs, error, _ = recorded_runs(run)
    assert error == {} and runs and all(r.record is not None and r.scored is None for r in runs)
    page = write_run_page(run, results, report_card.build(results), runs=runs).read_text(encoding="utf-8")
    section = page.split('id="nb-refadv"', 1)[1].split("<section", 1)[0]
    data = json.loads(section.split('class="it-data">', 1)[1].split("</script>", 1)[0])
    n = next(sum(1 for x in r.record.rows if x.get("scored", True)) for r in runs if r.paper == "refadv")
    assert len(data["rows"]) == n and all(r["q"] and r["qk"] == "r" for r in data["rows"])
    assert None not in data["links"]["headline"] and None not in data["links"]["scores"]
    assert "IoU" in data["why"] and any(c.get("w") for r in data["rows"] for c in r["m"])
    said = [note for note in data["notes"] if "show no image" in note]
    assert said and "vlamb-nb data fetch refadv" in said[0] and "--source refadv=PATH" in said[0]


def test_a_prompt_that_cannot_be_shown_is_one_plain_sentence_never_an_exception(tmp_path):
    """VAGUE's caption settings build their prompt from an earlier turn's answer: the page shows the prompt
    the store recorded; where the store kept none, one plain sentence says why the prompt is missing (no
    exception's name or traceback reaches the page)."""
    import fixtures_stored as F

    from vlamb_nb.compare import score_store
    from vlamb_nb.record import record_path

    bench = get_benchmark("vague")
    src = bench.make_sample(tmp_path / "data", n=6, seed=0)
    store = tmp_path / "vague__sm.jsonl"
    bench.evaluate(F.model("model-a"), bench.load(src), "sm", store=store, progress=False)
    run = score_store(store, source=src)
    view = paper_view("vague", [run])
    assert view.rows and all(r["qk"] == "r" for r in view.rows) and not any("prompt" in n for n in view.notes)
    assert any(c.get("t") for r in view.rows for c in r["m"])  # the caption turn, then the answer
    lines = [json.loads(x) for x in store.read_text(encoding="utf-8").splitlines()]
    store.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "prompt"}) + "\n" for r in lines),
                     encoding="utf-8")  # a store that kept no prompts (written before they were kept)
    record_path(store).unlink()
    view = paper_view("vague", [score_store(store, source=src)])
    said = [n for n in view.notes if "prompt" in n]
    assert said == [f"vague sm: {len(view.rows)} item(s) show their own text, not the prompt the model saw: the run "
                    "did not record it, and it could not be rebuilt for them (setting 'sm' needs captions)."]
    assert all(r["qk"] == "i" for r in view.rows)
    assert not re.search(r"\b[A-Z]\w*(Error|Exception)\b|Traceback", json.dumps(view.notes))


def test_released_runs_show_each_items_image_and_prompt_from_the_data_given_and_say_replies_are_not_released(
        tmp_path, monkeypatch):
    """A paper's released per-item runs (Ref-Adv's per-row files) keep no image, prompt or reply: given the items
    (``--source``), the page shows each item's image, its boxes, the paper's prompt rebuilt and the IoU; it says the
    replies are not released; without the items, one line names the data that would bring the images."""
    from fixtures_pages import official_runs

    bench = get_benchmark("refadv")
    src = bench.make_sample(tmp_path / "items", n=12, seed=0)
    items = bench.load(src)
    files = official_runs(tmp_path / "runs", {"a": set(range(0, 12, 2)), "b": set(range(6))}, n=12)
    for f in files:  # the released rows answer these items (their gold boxes and flags)
        rows = [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines()]
        for r, (_, it) in zip(rows, items.iterrows(), strict=True):
            r["gt_bbox_xyxy"] = [float(v) for v in it["gt_xyxy"]]
            r["use_negation"], r["distractor_count"] = bool(it["use_negation"]), int(it["distractor_count"])
            r["pred_box_xyxy_first"] = r["gt_bbox_xyxy"] if r["first_hit"] else [0.0, 0.0, 1.0, 1.0]
        f.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    seen = comparison_view(compare(files, sources={"refadv": str(src)}, n_resamples=200))
    assert seen.rows and all(r["i"] is not None and r["qk"] == "b" for r in seen.rows)
    assert all(r["q"].count(e) == 1 for r, e in zip(seen.rows, items["expression"], strict=True))
    assert seen.unreleased == ["a", "b"] and not any("a" in c for r in seen.rows for c in r["m"])
    iou = seen.why.index("IoU")
    assert {c["w"][iou] for r in seen.rows for c in r["m"]} == {0, 1}  # hits on the gold box, misses far away
    assert not any("show no image" in n for n in seen.notes)
    monkeypatch.setenv("VLAMB_DATA", str(tmp_path / "nothing-fetched"))  # no release at hand to find them in
    blind = comparison_view(compare(files, n_resamples=200))
    assert all(r["i"] is None and r["qk"] == "i" for r in blind.rows)
    said = [n for n in blind.notes if "show no image" in n]
    assert said == ["refadv direct: 12 item(s) show no image: the released per-item files keep no images. The "
                    "paper's release holds every item's image: `vlamb-nb data fetch refadv`, then compare again (or "
                    "give the items with --source refadv=PATH)."]
