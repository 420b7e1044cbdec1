"""One view of a run, rendered twice: ``report.md`` and ``report.html`` show a notebook's results in the same order,
and a metric declared in a paper's ``METRICS`` (and nowhere else) reaches ``vlamb-nb score``, the card,
``compare`` and both pages, with the value its stores' run records hold."""

from __future__ import annotations

import json
import re

import fixtures_items as FI
import pytest

from vlamb_nb import get_benchmark, report_card
from vlamb_nb.cli import main
from vlamb_nb.compare import compare, load_runs
from vlamb_nb.record import RunRecord
from vlamb_nb.reproduce import NotebookRun, write_report
from vlamb_nb.run_view import section_title
from vlamb_nb.stats.metric import Metric


def test_both_pages_show_a_notebooks_results_in_one_order(tmp_path):
    run = NotebookRun("x", tmp_path / "x.ipynb", tmp_path / "x.out.ipynb", {}, ok=True)
    run.results = {"deviations": [{"what": "4-bit", "paper": "bf16"}], "audit_findings": [{"finding": "a"}],
                   "table_2": [{"row": "ours", "value": 1.0}], "paper_vs_ours": [{"row": "ours", "delta": 0.1}]}
    page = write_report([run], tmp_path).read_text(encoding="utf-8")
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    want = ["paper_vs_ours", "table_2", "audit_findings", "deviations"]

    def order(text: str, marks: dict[str, str]) -> list[str]:
        at = {k: text.index(m) for k, m in marks.items()}
        return sorted(at, key=at.get)

    assert order(md, {k: f"**{section_title(k)}**" for k in want}) == want
    assert order(page, {k: f'id="nb-x-{k}"' for k in want}) == want
    # the audit opens at the same result on both pages
    assert md.index("### Audit") < md.index("**Audit findings**") and md.index("**Table 2**") < md.index("### Audit")
    head = re.search(r"<h3>Audit</h3>\s*<h4 id=\"nb-x-(\w+)\"", page)
    assert head and head.group(1) == "audit_findings"


def _recorded_keys() -> set[str]:
    """Every key a notebook of the checkout records (``record("key", ...)``)."""
    from pathlib import Path

    keys = set()
    for nb in Path(__file__).resolve().parents[1].glob("notebooks/*.ipynb"):
        for cell in json.loads(nb.read_text(encoding="utf-8"))["cells"]:
            keys |= set(re.findall(r"record\(\s*[\"']([^\"']+)[\"']", "".join(cell["source"])))
    return keys


def test_every_key_the_notebooks_record_has_a_readable_title_on_both_pages(tmp_path):
    """A section title is never a record key ("table b1 ours", "n unparsed"): every key the notebooks record
    reads as words a reader knows (one function, the same on both pages)."""
    keys = _recorded_keys()
    assert len(keys) > 60
    raw = re.compile(r"_|\b(n|ours vs|fig\d*|table\d+|[a-z]\d+|stats|eval|ci|iou|cot|refadv|vflute|mucar)\b")
    for k in keys:
        title = section_title(k)
        assert title and title[0].isupper() and not raw.search(title), (k, title)
    assert section_title("table_b1_ours") == "Table B1 (ours)"
    assert section_title("n_unparsed") == "Unparsed answers (count)"
    assert section_title("table4_vs_paper") == "Table 4 vs the paper"
    assert section_title("refadv_s_comparison") == "Ref-Adv-s comparison"
    assert section_title("n_items_left") == "Items left (count)"  # a key no notebook records yet: the word rule
    run = NotebookRun("x", tmp_path / "x.ipynb", tmp_path / "x.out.ipynb", {}, ok=True)
    run.results = {"table_b1_ours": [{"row": "ours", "value": 1.0}], "n_unparsed": 3,
                   "table1_deviations": [{"what": "4-bit", "paper": "bf16"}]}
    page = write_report([run], tmp_path).read_text(encoding="utf-8")
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    for text in (page, md):
        assert "Table B1 (ours)" in text and "Unparsed answers (count)" in text and "Table 1 deviations" in text
        assert "table b1 ours" not in text and "table_b1_ours**" not in text and "n unparsed" not in text.lower()
    # the table's box and its downloads say its title too (its files keep the key's name)
    assert 'aria-label="Table: x: Table B1 (ours)"' in page and 'Download <span class="muted">Table B1 (ours)' in page
    assert 'download="x-table_b1_ours.csv"' in page


def test_every_result_the_notebooks_record_is_placed_by_the_words_of_its_key():
    """The naming rule the notebooks follow, checked on every key they record: a comparison with the paper opens
    its section whether it is called ``paper_vs_ours``, ``table4_vs_paper`` or ``table1_comparison`` (a
    ``correct_vs_wrong`` split is a result), the audit comes after the results, the deviations last."""
    from pathlib import Path

    from vlamb_nb.run_view import AUDIT, COMPARISON, DEVIATION, RESULT, section_rank

    keys = set()
    for nb in Path(__file__).resolve().parents[1].glob("notebooks/*.ipynb"):
        for cell in json.loads(nb.read_text(encoding="utf-8"))["cells"]:
            keys |= set(re.findall(r"record\(\s*[\"']([^\"']+)[\"']", "".join(cell["source"])))
    assert len(keys) > 60
    ranks = {k: section_rank(k) for k in keys}
    for k in ("paper_vs_ours", "table4_vs_paper", "table2_vs_paper", "table1_vs_paper", "adequacy_vs_paper",
              "paper_vs_recomputed", "table1_comparison", "refadv_s_comparison"):
        assert ranks[k] == COMPARISON, k
    for k in ("correct_vs_wrong", "table2_aggregations", "not_derivable", "judge_parse"):
        assert ranks[k] == RESULT, k
    for k in ("audit", "audit_findings", "audit_mismatches", "official_iou_checks", "sanity_checks",
              "reload_check"):
        assert ranks[k] == AUDIT, k
    assert {k for k, r in ranks.items() if r == DEVIATION} == {"deviations", "table1_deviations",
                                                               "finetune_deviations"}
    assert {k for k, r in ranks.items() if r == COMPARISON} == {k for k in keys if "comparison" in k or
                                                                ("_vs_" in k and "paper" in k)}

ADDED = "Acc@0.9 (added)"


@pytest.fixture
def added_metric(monkeypatch):
    """Ref-Adv with one more declared metric: a stricter IoU threshold, on the card and compared."""
    bench = get_benchmark("refadv")
    new = Metric(ADDED, "binary", column="iou", threshold=0.9, unit="row", cluster="file_name",
                 cluster_unit="image", key=("row_idx", "id"))
    monkeypatch.setattr(type(bench), "metrics", (*type(bench).metrics, new))
    return new


def test_a_metric_declared_once_reaches_score_card_compare_and_both_pages(added_metric, tmp_path, capsys):
    sources = FI.samples(tmp_path)
    folders = {m: FI.run_folder(tmp_path, sources, m) for m in ("A", "B")}
    store = folders["B"] / "refadv" / "B" / "refadv__direct.jsonl"
    # the run record holds it, with the value its rows give
    rec = RunRecord.read(store)
    frame = rec.to_pandas()
    value = next(m.value for m in rec.metrics if m.metric == ADDED and m.whole)
    assert ADDED in frame.columns
    assert value == pytest.approx(100 * frame[ADDED].astype(float).mean(), abs=0.01)
    # 1. vlamb-nb score: one shape, the declared metrics
    assert main(["score", "refadv", "--predictions", str(store), "--source", str(sources["refadv"]), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["metrics"][ADDED] == pytest.approx(value)
    # 2. the card: the notebook's headline rows (what reproduce records) have a row of it
    results = json.loads((folders["B"] / "results.json").read_text(encoding="utf-8"))
    card = report_card.build(results)
    assert [h.value for h in card.headlines if h.metric == ADDED and h.slice == "overall"] == [pytest.approx(value, abs=0.01)]
    assert ADDED in report_card.markdown(card)
    # 3. compare: a row of values per model
    c = compare([*load_runs(folders["A"]), *load_runs(folders["B"])], n_resamples=100)
    assert set(c.values[c.values["metric"] == ADDED]["model"]) == {"A", "B"}
    # 4, 5. both pages, from the one view, with the record's value
    nb = NotebookRun("refadv", folders["B"] / "refadv.ipynb", folders["B"] / "refadv.out.ipynb", {}, ok=True,
                     results=results["refadv"]["results"])
    page = write_report([nb], folders["B"]).read_text(encoding="utf-8")
    md = (folders["B"] / "report.md").read_text(encoding="utf-8")
    row = next(ln for ln in md.splitlines() if ln.startswith("| refadv/B/refadv__direct.jsonl") and ADDED in ln)
    assert f"| {value:.4g} |" in row
    assert ADDED in page and f">{value:.4g}<" in page
    csv = (folders["B"] / "tables" / "refadv-scores.csv").read_text(encoding="utf-8")
    assert any(ADDED in ln and f"{value}" in ln for ln in csv.splitlines())


def test_a_store_whose_record_is_damaged_is_listed_with_why_and_the_pages_are_still_written(tmp_path):
    sources = FI.samples(tmp_path)
    folder = FI.run_folder(tmp_path, sources, "A")
    rec = folder / "mucar" / "A" / "mucar__full.record.json"
    rec.write_text('{"schema_version": 99}', encoding="utf-8")
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    runs = [NotebookRun(p, folder / f"{p}.ipynb", folder / f"{p}.out.ipynb", {}, ok=True,
                        results=results[p]["results"]) for p in results]
    page = write_report(runs, folder).read_text(encoding="utf-8")
    md = (folder / "report.md").read_text(encoding="utf-8")
    for text in (md, page):
        assert "(record unreadable)" in text and "schema_version 99 is newer" in text
    assert "Acc@0.5" in md  # the other paper's scores are still there


def test_a_record_with_values_of_the_wrong_type_or_a_link_out_of_the_run_never_breaks_or_feeds_the_pages(tmp_path):
    from vlamb_nb.run_view import store_scores

    sources = FI.samples(tmp_path)
    folder = FI.run_folder(tmp_path, sources, "A")
    rec = folder / "mucar" / "A" / "mucar__full.record.json"
    data = json.loads(rec.read_text(encoding="utf-8"))
    data["metrics"][0].update(value="<b>lots</b>", ci_low="x", ci_high=None, n="many")
    rec.write_text(json.dumps(data), encoding="utf-8")
    outside = tmp_path / "elsewhere" / "deep"
    outside.mkdir(parents=True)
    (outside / "other.record.json").write_text(json.dumps({**data, "setting": "planted"}), encoding="utf-8")
    (folder / "mucar" / "linked").symlink_to(outside, target_is_directory=True)
    rows = [r for s in store_scores(folder)["mucar"] for r in s.rows()]
    assert all(r["setting"] != "planted" for r in rows)  # the linked folder's record is not read
    bad = next(r for r in rows if r["metric"] == "(record unreadable)")  # a value its units do not give: refused
    assert "mucar__full.record.json, field 'metrics[0].value'" in bad["value"] and "<b>lots</b>" in bad["value"]
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    runs = [NotebookRun(p, folder / f"{p}.ipynb", folder / f"{p}.out.ipynb", {}, ok=True,
                        results=results[p]["results"]) for p in results]
    page = write_report(runs, folder).read_text(encoding="utf-8")
    assert "&lt;b&gt;lots&lt;/b&gt;" in page and "<b>lots</b>" not in page  # text, escaped


def test_what_a_paper_declares_it_cannot_rebuild_is_read_checked_and_listed(tmp_path, monkeypatch):
    """``not_derivable`` is declared data: the paper's ``not_derivable.json``, else the package's reference file;
    a malformed one is one line naming the file, and the run view lists it under the paper whether or not its
    notebook recorded it."""
    from vlamb_nb import get_benchmark
    from vlamb_nb.errors import DataError
    from vlamb_nb.run_view import _declared_not_derivable

    refadv = get_benchmark("refadv")
    assert {"item", "reason"} == set(refadv.not_derivable()[0]) and get_benchmark("vague").not_derivable()
    assert _declared_not_derivable("refadv") == refadv.not_derivable() and _declared_not_derivable("saliency") == []
    own = tmp_path / "not_derivable.json"
    monkeypatch.setattr(refadv, "folder", lambda: tmp_path)
    own.write_text('[{"item": "Table 9", "reason": "no human answers"}]', encoding="utf-8")
    assert refadv.not_derivable() == [{"item": "Table 9", "reason": "no human answers"}]
    for bad in ('{"item": "x"}', '[{"item": "x", "reason": ""}]', '[{"item": "x", "why": "y"}]', "[1", '[["x"]]'):
        own.write_text(bad, encoding="utf-8")
        with pytest.raises(DataError) as e:
            refadv.not_derivable()
        assert str(own) in str(e.value) and "\n" not in str(e.value)
        [said] = _declared_not_derivable("refadv")  # the pages say the list is unreadable, never show none
        assert "could not be read" in said["reason"] and str(own) in said["reason"]
