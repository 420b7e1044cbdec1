"""The README's main job on this checkout: every notebook runs offline with defaults, and reproduces figures/.

It runs once, with the data beside the checkout, as the pytest run's shared execution (``fixtures_notebooks``):
the notebook tests read it instead of executing the notebooks again. What a random model happens to generate
differs from one CPU to another, so a notebook that only works with one checkpoint's answers would work here and
fail on another machine: every notebook on another tiny checkpoint (and other samples) is the README's
``vlamb-nb reproduce --tiny-seed 1 -p seed=1``, run by ``make test`` in a fresh clone with nothing beside it,
whose every executed notebook must read true there too (``scripts/fresh_clone.py``).
"""

import json
import subprocess

import pytest


@pytest.mark.slow
def test_every_notebook_succeeds_and_records_results(full_run):
    names, failed, tmp = full_run.names, full_run.failed, full_run.root
    summary = json.loads((tmp / "runs" / "all" / "results.json").read_text())
    errors = {n: s["error"] for n, s in summary.items() if not s["ok"]}
    assert failed == 0, errors
    for n in names:
        assert summary[n]["results"], f"{n} recorded no results"
    report = (tmp / "runs" / "all" / "report.md").read_text()
    # the report card opens the report, says it is a pipeline demo, and has every paper's headline
    first = report.splitlines()[0]
    assert first.startswith("# Report card: ") and "PIPELINE DEMO" in first
    from vlamb_nb.benchmarks import PAPERS

    heads = {h["paper"] for s in summary.values() for h in (s["results"].get("headline") or [])}
    assert heads == {p.name for p in PAPERS}
    assert {h["profile"] for s in summary.values() for h in (s["results"].get("headline") or [])} == {"offline"}
    for n in names:
        assert f"## {n}" in report
    assert "NaN" not in (tmp / "runs" / "all" / "results.json").read_text()  # JSON null, never NaN


@pytest.mark.slow
def test_every_committed_figure_is_regenerated(full_run, repo_root, shared_data):
    """The committed figures were made with the released data beside the checkout, so compare only there.
    Pipeline demos (``figures/<nb>/demo/``) are never committed."""
    tmp = full_run.root
    tracked = subprocess.run(["git", "ls-files", "figures"], cwd=repo_root, capture_output=True, text=True,
                             check=True).stdout.split()
    figures = [f for f in tracked if f.endswith((".png", ".pdf"))]
    assert not [f for f in figures if "/demo/" in f], "a pipeline demo is committed under figures/"
    # the example report card and the example comparison are drawn by `vlamb-nb card --example` and `vlamb-nb
    # compare --example` (tests/test_report_card.py, tests/test_compare.py), not by a notebook; the offline run's own
    # card is a stamped demo
    figures = [f for f in figures if not f.startswith(("figures/card/", "figures/compare/"))]
    assert (tmp / "figures" / "card" / "demo" / "report_card.png").is_file()
    missing = [f for f in figures if not (tmp / f).is_file()]
    assert not missing, f"committed figures that reproduce did not write: {missing}"


@pytest.mark.slow
def test_every_notebook_reads_true(full_run):
    """No section between two headings without output, no progress widget frozen at 0%, no traceback, no stand-in's
    number counted as a match with the paper's (:func:`vlamb_nb.notebook.results.reading_problems`)."""
    from vlamb_nb.notebook.results import reading_problems

    problems = {n: reading_problems(json.loads((full_run.run / f"{n}.ipynb").read_text(encoding="utf-8")))
                for n in full_run.names}
    assert not {n: p for n, p in problems.items() if p}


@pytest.mark.slow
def test_every_paper_with_stores_lists_its_items_on_the_page(full_run):
    """Each paper whose notebook left answer stores lists their items in its section of report.html; one paper's
    stores that compare leaves out (RACQUET's cropped-image control: another data set) are said under its own items
    and never hide another paper's."""
    page = (full_run.run / "report.html").read_text(encoding="utf-8")
    with_stores = sorted(n for n in full_run.names if any((full_run.run / n).rglob(f"{n}__*.jsonl")))
    assert {"vague", "mucar", "vflute", "refadv", "racquet"} <= set(with_stores)
    assert "could not be read" not in page
    for n in with_stores:
        section = page.split(f'<section id="nb-{n}"', 1)[1].split("<section", 1)[0]
        assert f'id="items-{n}"' in section, n
        data = json.loads(section.split('class="it-data">', 1)[1].split("</script>", 1)[0])
        linked = sum(g is not None for g in data["links"]["headline"])
        # each headline number opens onto its items; RACQUET's two GENERAL shares come from its judge's classes,
        # which the page reads from the records the notebook wrote (its BIAS share waits for hand labels)
        assert linked >= (2 if n == "racquet" else 1), (n, data["links"]["headline"])
    racquet = page.split('<section id="nb-racquet"', 1)[1].split("<section", 1)[0]
    assert "The stores under racquet/coco-crops/ answered items the notebook&#39;s sample does not hold" in racquet


@pytest.mark.slow
def test_the_page_step_reads_the_notebooks_records_and_scores_nothing(full_run, monkeypatch):
    """What the page lists after the notebooks end is their run records as written: any scoring there (a store
    scored again, a record made from a frame) fails, and no file of the run changes."""
    from vlamb_nb import compare, record, reproduce
    from vlamb_nb.benchmarks import PAPERS, get_benchmark

    def scored(*_a, **_k):
        raise AssertionError("scored after the notebooks ended")

    for p in PAPERS:
        for cls in type(get_benchmark(p.name)).__mro__:
            for name in ("score", "score_store", "evaluate"):
                if name in vars(cls):
                    monkeypatch.setattr(cls, name, scored)
    monkeypatch.setattr(record, "from_scored", scored)
    monkeypatch.setattr(compare, "score_store", scored)
    files = {f: (f.stat().st_size, f.stat().st_mtime_ns) for f in full_run.run.rglob("*") if f.is_file()}
    runs, failed, _ = reproduce.recorded_runs(full_run.run)
    assert not failed, failed
    assert {r.paper for r in runs} >= {"vague", "mucar", "vflute", "refadv", "racquet"}
    # each run is its record as written: scored, or (RACQUET's bias answers) a run awaiting its hand labels
    assert all(r.record is not None and str(r.origin).endswith(".record.json") for r in runs)
    assert {r.record.stage for r in runs} <= {"scored", "run"} and [r for r in runs if r.record.stage == "scored"]
    assert {f: (f.stat().st_size, f.stat().st_mtime_ns) for f in full_run.run.rglob("*") if f.is_file()} == files


@pytest.mark.slow
def test_the_scripted_stand_ins_headlines_are_real_numbers(full_run):
    """Every paper's card rows come from the scripted stand-in under the offline profile: each a number above zero
    with an interval, never ranked among the paper's models."""
    summary = json.loads((full_run.run / "results.json").read_text())
    rows = [h for s in summary.values() for h in (s["results"].get("headline") or [])]
    scripted = [h for h in rows if str(h.get("model", "")).startswith("scripted stand-in")]
    assert {h["paper"] for h in scripted} == {h["paper"] for h in rows}
    for h in scripted:
        if h.get("value") is None:
            continue
        assert h["value"] > 0 and h["ci_low"] is not None and h["ci_low"] <= h["value"] <= h["ci_high"], h



@pytest.mark.slow
def test_two_offline_runs_compare_with_real_differences(notebook_runs, tmp_path):
    """The README's `compare runs/previous runs/latest`: two offline runs on the same samples, another tiny seed each,
    compare their scripted stand-ins (seed 0 against seed 1: the same chances, other draws), never the model path's
    three-item runs, and show paired tests with discordant items, not 0.0 [0.0, 0.0] everywhere."""
    import shutil

    from vlamb_nb.compare import compare

    # the whole seed-0 run against VAGUE's notebook on tiny seed 1: they share VAGUE's items
    other = notebook_runs.get("vague", tiny_seed=1).path.parent
    a, b = (shutil.copytree(run, tmp_path / f"seed{k}", symlinks=True)
            for k, run in enumerate((notebook_runs.reproduction(0).run, other)))
    c = compare([a, b], n_resamples=200)  # copies: compare scores a store its notebook left unscored, writing its record
    assert {m.split(" · ")[0] for m in c.values["model"]} == {"scripted stand-in (seed 0)", "scripted stand-in (seed 1)"}
    assert (c.values["value"] > 0).any() and c.values["ci_high"].gt(c.values["ci_low"]).any()
    discordant = c.pairs[["discordant_a_only", "discordant_b_only"]].fillna(0).sum(axis=1)
    assert (discordant > 0).any() and (c.pairs["diff"].abs() > 0).any()
