"""What a release declares and how it reaches a result: the catalog gathered from the registry (a new paper's
release, fetched with only its folder and a registry line, is ``tests/test_sixth_paper.py``), V-FLUTE's label in
each form a parquet release may give it, and what a run's data lacks (items left out, counts accepted) said on the
card and in ``report.md``."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
import release_fixtures as rf

from vlamb_nb.errors import DataError

ROOT = Path(__file__).resolve().parent.parent


# -- the catalog is the registry's ------------------------------------------------------------------------
def test_the_catalog_names_no_paper_and_imports_no_paper_loader():
    from vlamb_nb.benchmarks import list_benchmarks

    path = ROOT / "vlamb_nb" / "releases" / "catalog.py"
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert not {m for m in imported if m.startswith("vlamb_nb.benchmarks.")}, imported
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert not {s for s in strings for p in list_benchmarks() if p in s.lower()}
    from vlamb_nb.releases import release, releases

    assert list(releases()) == list_benchmarks()
    assert all(releases()[p].paper == p for p in list_benchmarks())
    assert release("ref-adv") is releases()["refadv"]


def test_a_paper_that_declares_no_release_leaves_fetch_and_status_of_the_others_alone(tmp_path, monkeypatch, capsys):
    """A registered paper whose data is always given by the user (no ``RELEASE``): ``data status`` and ``data
    fetch`` of every paper go on without it, and naming it is one line."""
    import sys

    import vlamb_nb.benchmarks as registry
    from vlamb_nb import cli
    from vlamb_nb.releases import releases
    from vlamb_nb.releases.fetch import status

    pkg = tmp_path / "given_only"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "data.py").write_text("def load(source):\n    return source\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "PAPERS", (*registry.PAPERS, registry.Paper("given", "Given", (),
                                                                              module="given_only")))
    monkeypatch.setenv("VLAMB_DATA", str(tmp_path / "home"))
    assert list(releases()) == [p for p in registry.list_benchmarks() if p != "given"]
    assert [r["paper"] for r in status()] == list(releases())
    assert cli.main(["data", "fetch", "given", "-q"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "given: its data.py declares no RELEASE" in err[0] and "--source" in err[0]
    sys.modules.pop("given_only.data", None)
    sys.modules.pop("given_only", None)


# -- V-FLUTE's label, in each form a parquet release gives it ---------------------------------------------
def _vflute_parquet(path: Path, labels: list, *, names: list[str] | None = None) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = len(labels)
    label_type = pa.int64() if isinstance(labels[0], int) else pa.string()
    table = pa.table({
        "image": pa.array([{"bytes": rf.tiny_image(i, fmt="PNG"), "path": None} for i in range(n)],
                          type=pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
        "source_dataset": ["irfl"] * n, "phenomenon": ["metaphor"] * n, "claim": [f"claim {i}" for i in range(n)],
        "label": pa.array(labels, type=label_type), "explanation": [f"because {i}" for i in range(n)]})
    if names is not None:
        features = {"label": {"names": names, "_type": "ClassLabel"}}
        table = table.replace_schema_metadata({b"huggingface": json.dumps({"info": {"features": features}}).encode()})
    pq.write_table(table, path)
    return path


@pytest.mark.parametrize("form", ["text", "other spelling", "class label"])
def test_vflute_reads_the_label_as_text_in_either_spelling_or_as_a_class_label(tmp_path, form):
    from vlamb_nb.benchmarks.vflute.data import read_parquet

    labels, names = {"text": (["entailment", "contradiction", "Entailment"], None),
                     "other spelling": (["ENTAILS", "CONTRADICTS", "ENTAILS"], None),
                     "class label": ([1, 0, 1], ["CONTRADICTS", "ENTAILS"])}[form]
    items = read_parquet(_vflute_parquet(tmp_path / "test-00000-of-00001.parquet", labels, names=names))
    assert items["label"].tolist() == ["entailment", "contradiction", "entailment"]
    assert items["label_true"].tolist() == [1, 0, 1]


def test_vflute_refuses_a_class_number_without_names_and_a_file_that_is_not_parquet(tmp_path):
    from vlamb_nb.benchmarks.vflute.data import read_parquet

    with pytest.raises(DataError, match="class number 1, and the file's features metadata names no classes"):
        read_parquet(_vflute_parquet(tmp_path / "a.parquet", [1, 0]))
    with pytest.raises(DataError, match=r"label 2 is not one of the 2 classes"):
        read_parquet(_vflute_parquet(tmp_path / "b.parquet", [2, 0], names=["entailment", "contradiction"]))
    bad = tmp_path / "c.parquet"
    bad.write_bytes(b"<html>not found</html>")
    with pytest.raises(DataError, match="not a readable parquet file") as e:
        read_parquet(bad)
    assert "\n" not in str(e.value)
    from vlamb_nb.release_spec import parquet_rows

    with pytest.raises(DataError, match="c.parquet: not a parquet file"):
        parquet_rows([bad])


# -- what a run's data lacks reaches the card and report.md -------------------------------------------------
def _headline(data: dict) -> dict:
    from vlamb_nb.stats.ranking import Comparator, Headline

    h = Headline(paper="mucar", metric="Acc_p", slice="overall", value=40.0, ci_low=35.0, ci_high=45.0, n=400,
                 unit="pair", rank=3, rank_low=2, rank_high=5, n_ranked=9, model="openai:m", profile="paper",
                 comparators=[Comparator(name="GPT-4o", value=60.0)], data=data)
    return h.to_dict()


def test_items_left_out_and_counts_accepted_reach_the_card_and_the_report():
    from vlamb_nb import report_card

    left = {"kind": "defect", "why": "known defect of the release: the image_id names no file", "column": "image_id",
            "n_keys": 22, "first": ["malay/8", "malay/9", "malay/15"], "whole": "group", "unit": "queries",
            "items": 186, "also": 93}
    data = {"kind": "release", "paper": "mucar", "release": "github:THUNLP-MT/MUCAR + hub:kevindragon221/MUCAR",
            "revision": "c2410e1b3f229f6ebb3b0f46a3cdad80a8347a56", "n_items": 1278, "n_loaded": 999, "n_run": 999,
            "left_out": [left], "deviations": ["counts differ from the paper's (pairs: expected 501, found 500), "
                                               "accepted with --allow-mismatch"]}
    card = report_card.build({"mucar": {"ok": True, "results": {"headline": [_headline(data)]}}}, papers=["mucar"])
    (h,) = card.headlines
    assert h.rank == 3 and h.rank_basis == "on a subset: 999 of 1,278 items, 279 left out of the release"
    md = report_card.markdown(card)
    assert "@c2410e1 · 999 of 1,278 (279 left out)" in md
    assert ("data: 279 queries left out: 22 image_id values (malay/8, malay/9, malay/15, …): known defect of the "
            "release: the image_id names no file; 186 queries name them, 93 more are the rest of their groups "
            "(scored all-or-nothing)") in md
    assert "data: counts differ from the paper's (pairs: expected 501, found 500), accepted with --allow-mismatch" in md
    # a row on the whole, clean release says nothing more than before
    clean = {**data, "n_loaded": 1278, "n_run": 1278, "left_out": [], "deviations": []}
    card = report_card.build({"mucar": {"ok": True, "results": {"headline": [_headline(clean)]}}}, papers=["mucar"])
    assert card.headlines[0].rank_basis == "" and card.headlines[0].deviations == []
    assert "· 1,278 of 1,278 |" in report_card.markdown(card)


def test_tag_leaves_out_whole_groups_and_counts_them():
    import pandas as pd

    from vlamb_nb.datahome import DataIdentity, LeftOut, identity_of, tag

    items = pd.DataFrame({"uid": list("abcdef"), "image_id": ["x", "malay/8", "y", "z", "malay/8", "w"],
                          "group": ["g1", "g1", "g2", "g3", "g3", "g4"]})
    lo = LeftOut(kind="defect", why="ambiguous", column="image_id", keys=("malay/8",), n_keys=1, first=("malay/8",),
                 whole="group", unit="queries")
    ident = DataIdentity(kind="release", paper="mucar", n_items=6, left_out=(lo,))
    kept = tag(items, ident)
    assert kept["uid"].tolist() == ["c", "f"]
    got = identity_of(kept)
    assert got.n_loaded == 2 and got.n_items == 6
    (counted,) = got.left_out
    assert (counted.items, counted.also, counted.n_keys) == (2, 2, 1) and counted.keys == ()  # results keep no keys
    assert json.loads(json.dumps(kept.attrs["data"]))["left_out"][0]["items"] == 2
    # without the group column, only the items that name the key go
    kept = tag(items.drop(columns="group"), ident)
    assert kept["uid"].tolist() == ["a", "c", "d", "f"]
    with pytest.raises(DataError, match="leaves out items by 'image_id'"):
        tag(items.drop(columns="image_id"), ident)


def test_a_data_identity_read_back_keeps_a_null_field_empty():
    from vlamb_nb.datahome import DataIdentity

    ident = DataIdentity(kind="local", paper="vague", n_items=3)
    back = DataIdentity.from_dict({**ident.to_dict(), "release": None, "label": None})
    assert back == ident and back.release == "" and "None" not in back.label


def test_the_stand_in_lists_a_folder_as_githubs_contents_api_does():
    """The listing the stand-in serves has what GitHub's contents API answers (names, sizes, git object ids)."""
    from hubstub import git_blob_oid

    listing = json.loads(rf.github_listing("a/b", "out", "c" * 40, {"x_predictions.jsonl": b"{}\n"}))
    assert listing == [{"name": "x_predictions.jsonl", "path": "out/x_predictions.jsonl", "sha": git_blob_oid(b"{}\n"),
                        "size": 3, "type": "file",
                        "download_url": f"https://raw.githubusercontent.com/a/b/{'c' * 40}/out/x_predictions.jsonl"}]
