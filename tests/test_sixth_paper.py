"""A sixth paper from its own folder and one registry line, taken through every front door a user meets.

The paper is a package written into a temporary folder — one turn, a 0/1 metric declared as data, its release
declared as ``RELEASE`` in its ``data.py`` (one file at a pinned commit, with its sha256, served on 127.0.0.1), its
published numbers in its own ``reference.csv`` — registered by one ``Paper(..., module=...)`` entry. Each step a
user takes is one test below, in the user's order: ``vlamb-nb data fetch`` and ``data status``, the paper profile's
data, ``evaluate`` of two scripted models into their stores, ``vlamb-nb score`` of a store, the report card, a
sweep's summary, ``vlamb-nb compare``; last, that none of it wrote into the checkout. A step runs once, when the
first test that needs it asks (so any one test also runs alone, its earlier steps first).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
from functools import cached_property
from pathlib import Path
from typing import Any

import fixtures_toy
import hubstub
import pytest
from fixtures_toy import RELEASED, REVISION, TOY, N, cli

from vlamb_nb.models import ScriptedModel

ROOT = Path(__file__).resolve().parent.parent

#: items (by position) each scripted model gets right, and those it answers with no yes or no
RIGHT = {"model-a": set(range(0, 30)), "model-b": set(range(10, 24)) | {32, 35, 38}}
UNREADABLE = {"model-a": set(), "model-b": {30, 31}}


def checkout_files() -> dict[str, tuple[int, int]]:
    """Every file of the checkout, ignored ones included (runs/, caches), with its size and mtime; git's own files,
    the environment and bytecode caches aside."""
    skip = {".git", ".venv", "__pycache__", ".pytest_cache", ".ruff_cache"}
    out = {}
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in skip]
        for name in files:
            st = os.stat(Path(folder, name), follow_symlinks=False)
            out[str(Path(folder, name).relative_to(ROOT))] = (st.st_size, st.st_mtime_ns)
    return out


def scripted(model_id: str, items: Any) -> ScriptedModel:
    """A model that answers the items in ``RIGHT[model_id]`` right, those in ``UNREADABLE`` with neither word,
    and the rest wrong."""
    gold = dict(zip(items["id"], items["gold"], strict=True))
    at = {item: k for k, item in enumerate(items["id"])}

    def respond(req):
        item = req.meta["item_id"]
        if at[item] in UNREADABLE[model_id]:
            return "It depends."
        return gold[item] if at[item] in RIGHT[model_id] else {"yes": "no", "no": "yes"}[gold[item]]
    return ScriptedModel(respond, model_id=model_id)


class User:
    """Who takes the toy paper's steps: each once, in order, when a test first asks for it."""

    def __init__(self, root: Path, folder: Path, checkout: dict[str, tuple[int, int]]) -> None:
        self.root = root
        self.folder = folder
        self.checkout_before = checkout

    @cached_property
    def bench(self) -> Any:
        from vlamb_nb.benchmarks import get_benchmark

        return get_benchmark("toy")

    @cached_property
    def fetched(self) -> tuple[int, str, str]:
        return cli("data", "fetch", "toy", "-q")

    @cached_property
    def status(self) -> tuple[int, dict[str, Any]]:
        assert self.fetched[0] == 0, self.fetched
        rc, out, _ = cli("data", "status", "--verify", "--json")
        return rc, json.loads(out)

    @cached_property
    def data(self) -> tuple[Any, Any]:
        """What a notebook under the paper profile reads: the fetched release, tagged with what it is."""
        from vlamb_nb.datahome import choose, tag

        assert self.fetched[0] == 0, self.fetched
        choice = choose("toy", profile="paper")
        return choice, tag(self.bench.load(choice.source), choice.identity)

    @cached_property
    def runs(self) -> dict[str, tuple[ScriptedModel, Path, Any]]:
        """Each model evaluated into its store (named by the one rule): the model, the store, the live scores."""
        _, items = self.data
        out = {}
        for model_id in RIGHT:
            model = scripted(model_id, items)
            store = self.bench.store_path(self.root / "runs", model.info, "plain")
            out[model_id] = (model, store, self.bench.evaluate(model, items, store=store, progress=False))
        return out

    @cached_property
    def scored_by_cli(self) -> dict[str, tuple[int, str, str]]:
        choice, _ = self.data
        return {m: cli("score", "toy", "--predictions", str(store), "--source", str(choice.source), "--json")
                for m, (_, store, _) in self.runs.items()}

    @cached_property
    def card(self) -> dict[str, Any]:
        """The headline a notebook records (``NotebookConfig.record_headline``), as ``reproduce`` collects it."""
        from vlamb_nb.datahome import identity_of
        from vlamb_nb.notebook import setup
        from vlamb_nb.notebook.results import jsonable

        model, _, scored = self.runs["model-a"]
        cfg = setup("toy", profile="paper", model=model, store_dir=self.root / "notebook")
        recorded: dict[str, Any] = {}
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr("vlamb_nb.notebook.results.record", lambda key, value: recorded.update({key: jsonable(value)}))
            cfg.record_headline(self.bench.headline(self.bench.recorded({"plain": scored}), n_resamples=300),
                                data=identity_of(scored))
        return recorded

    @cached_property
    def compared(self) -> tuple[int, str, str]:
        choice, _ = self.data
        stores = [str(store) for _, store, _ in self.runs.values()]
        return cli("compare", *stores, "--source", f"toy={choice.source}", "--json", "--n-resamples", "300",
                   "--out", str(self.root / "comparison"))

    def every_step(self) -> None:
        for step in ("status", "scored_by_cli", "card", "compared"):
            getattr(self, step)


@pytest.fixture(scope="module")
def user(tmp_path_factory):
    """The toy paper written into its own folder and registered with one line; its release served by a stand-in
    of its host on 127.0.0.1 and fetched into a data home of its own."""
    from vlamb_nb import benchmarks as registry

    root = tmp_path_factory.mktemp("elsewhere")
    folder = fixtures_toy.write(root / "toy_paper")
    before = checkout_files()
    with hubstub.StaticServer() as host, pytest.MonkeyPatch.context() as mp:
        host.add(f"/raw.githubusercontent.com/acme/toy/{REVISION}/items.jsonl", RELEASED)
        mp.setenv("VLAMB_MIRRORS", f"*={host.endpoint}/")
        mp.setenv("VLAMB_DATA", str(root / "data-home"))
        mp.syspath_prepend(str(root))
        mp.setattr(registry, "PAPERS", (*registry.PAPERS, registry.Paper("toy", "Toy", (), module="toy_paper")))
        yield User(root, folder, before)
    for name in [m for m in sys.modules if m == "toy_paper" or m.startswith("toy_paper.")]:
        sys.modules.pop(name)


def test_the_toy_paper_registers_from_its_own_folder(user):
    from vlamb_nb.benchmarks import list_benchmarks

    assert list_benchmarks()[-1] == "toy"
    assert user.bench.folder() == user.folder and user.bench.package() == "toy_paper"


def test_step_1_data_fetch_downloads_the_pinned_release_and_status_verifies_it(user):
    rc, out, err = user.fetched
    assert rc == 0, err
    assert out.startswith(f"toy: github:acme/toy@{REVISION[:7]} (40 questions) complete: 1 files"), out
    rc, status = user.status
    rows = {r["paper"]: r for r in status["papers"]}
    assert list(rows)[-1] == "toy"
    toy = rows.pop("toy")
    assert (toy["state"], toy["items"], toy["revision"], toy["bytes"]) == ("complete", N, REVISION, len(RELEASED))
    assert toy["problems"] == [] and toy["unverified"] == 0 and toy["recorded"] == 0
    assert toy["pinning"] == {"acme/toy": "known-good (pinned in the release)"}
    # the five papers' releases are not in this data home: a state to report, not an error (exit 0)
    assert rc == 0 and {r["state"] for r in rows.values()} == {"not fetched"}


def test_step_2_the_paper_profile_reads_the_fetched_release_with_its_identity(user):
    choice, items = user.data
    assert Path(choice.source).read_bytes() == RELEASED
    assert Path(choice.source).is_relative_to(user.root / "data-home" / "toy")
    assert items["question"].tolist() == [json.loads(line)["question"] for line in RELEASED.splitlines()]
    d = items.attrs["data"]
    assert (d["kind"], d["paper"], d["release"], d["revision"]) == ("release", "toy", "github:acme/toy", REVISION)
    assert (d["n_items"], d["n_loaded"], d["left_out"]) == (N, N, [])


def test_step_3_evaluate_runs_one_turn_of_each_model_into_its_store(user):
    from vlamb_nb.store import ANSWER

    for model_id, (_, store, scored) in user.runs.items():
        assert store == user.root / "runs" / model_id / "toy__plain.jsonl"
        right = {f"q{i}" for i in RIGHT[model_id]}
        assert set(scored.loc[scored["correct"], "id"]) == right and len(scored) == N
        records = [json.loads(line) for line in store.read_text().splitlines()]
        assert len(records) == N and {(r["turn"], r["benchmark"]) for r in records} == {(ANSWER, "toy")}
        assert records[0]["run"]["template"]  # the digest of its own prompts module, found in its own package
        assert records[0]["run"]["data"]["release"] == "github:acme/toy"
        assert records[0]["run"]["data"]["revision"] == REVISION


def test_step_4_vlamb_nb_score_of_a_store_gives_what_the_live_run_gave(user):
    import pandas as pd

    from vlamb_nb import RunRecord

    _, items = user.data
    for model_id, (_, store, live) in user.runs.items():
        rc, out, err = user.scored_by_cli[model_id]
        assert rc == 0, err
        got = json.loads(out)
        assert (got["model"], got["setting"], got["scored"]) == (model_id, "plain", N)
        assert got["coverage"] == {"items": N, "answered": N, "failed": 0, "missing": 0}
        assert got["metrics"] == {k: v for k, v in user.bench.summary(live).items() if k not in ("n", "invalid")}
        assert got["invalid"] == user.bench.summary(live)["invalid"]
        assert got["metrics"]["accuracy"] == 100 * len(RIGHT[model_id]) / N
        rec = RunRecord.read(store)  # the run record beside the store: the release it stood on, by its files
        assert (rec.data.kind, rec.data.revision) == ("release", REVISION) and len(rec.data.sha256 or "") == 64
        assert (rec.benchmark, rec.model.model_id, len(rec.to_pandas())) == ("toy", model_id, N)
        again = user.bench.score_store(store, items)
        cols = ["item_id", "id", "text", "answer", "valid", "correct", "model"]
        pd.testing.assert_frame_equal(again[cols], live[cols])
        assert again.attrs["data"] == live.attrs["data"] and again.attrs["deviations"] == live.attrs["deviations"]


def test_vlamb_nb_score_refuses_what_is_not_a_store_of_it_in_one_line(user):
    """The base's ``score_file`` (no paper code): each refusal one line naming what to change, never a traceback."""
    from vlamb_nb.cli import EXIT_ERROR

    choice, _ = user.data
    _, store, _ = user.runs["model-a"]
    labels = user.root / "labels.jsonl"
    labels.write_text('{"id": "q0", "label": "yes"}\n')
    cases = {("--source", str(choice.source), "-o", "judge=x"): "unknown toy score option(s): judge; it takes setting",
             ("--source", str(choice.source), "-o", "run=two"): "run must be a run's number in the store, got 'two'",
             ("--source", str(choice.source), "-o", "missing=maybe"): "missing must be 'wrong'"}
    for extra, message in cases.items():
        rc, out, err = cli("score", "toy", "--predictions", str(store), *extra)
        assert (rc, out) == (EXIT_ERROR, "") and message in err and len(err.strip().splitlines()) == 1, (extra, err)
    rc, _, err = cli("score", "toy", "--predictions", str(labels), "--source", str(choice.source))
    assert rc == EXIT_ERROR and "not a prediction store" in err and len(err.strip().splitlines()) == 1


def test_step_5_the_card_ranks_it_among_its_own_published_numbers_on_the_fetched_release(user):
    from vlamb_nb import report_card

    rows = user.card["headline"]
    assert len(rows) == 1
    h = rows[0]
    assert (h["paper"], h["metric"], h["slice"], h["setting"], h["n"]) == ("toy", "accuracy", "overall", "plain", N)
    assert h["value"] == pytest.approx(100 * len(RIGHT["model-a"]) / N)  # 75: between the published 80 and 50
    assert {c["name"]: c["value"] for c in h["comparators"]} == {"Big model": 80.0, "Small model": 50.0}
    assert all(c["n"] == 200 and c["source"] == "toy Table 1" for c in h["comparators"])
    assert h["rank"] == 2 and h["n_ranked"] == 3 and h["rank_low"] <= 2 <= h["rank_high"]
    card = report_card.build({"toy": {"ok": True, "results": user.card}}, papers=["toy"])
    table, _, _ = report_card.table(card)
    assert table[0]["data"] == f"github:acme/toy@{REVISION[:7]} · 40 of 40"
    md = report_card.markdown(card)
    assert "| toy | plain | accuracy | overall | 75.0 [" in md and "Big model 80.0" in md


def test_the_bases_paper_vs_ours_step_puts_its_declared_metric_beside_its_published_row(user):
    """A paper gets its comparison with the paper's row for a model from the base, from its run record."""
    from vlamb_nb.record import RunRecord

    _, store, scored = user.runs["model-a"]
    assert isinstance(user.bench.recorded({"plain": scored})["plain"], RunRecord)
    [row] = user.bench.paper_vs_ours(user.bench.recorded({"plain": scored}), "Small model", n_resamples=300) \
        .to_dict("records")
    ours = 100 * len(RIGHT["model-a"]) / N
    assert (row["table"], row["row"], row["column"], row["paper"], row["ours"]) == ("Table 1", "Small model",
                                                                                    "accuracy", 50.0, ours)
    assert row["diff"] == pytest.approx(ours - 50) and not row["match"] and row["paper_in_ci"] is False
    assert user.bench.paper_vs_ours({"plain": scored}, "Medium model")["paper"].isna().all()  # no such row


def test_step_6_the_sweep_summary_reads_its_declared_metric(user):
    _, _, scored = user.runs["model-b"]
    assert user.bench.summary(scored) == {"n": N, "invalid": len(UNREADABLE["model-b"]),
                                          "accuracy": round(100 * len(RIGHT["model-b"]) / N, 2)}


def test_the_bases_compare_runs_step_pairs_two_of_its_runs_on_its_declared_metric(user):
    """A paper gets the paired comparison of two of its runs (an ablation) from the base with nothing written."""
    (_, _, a), (_, _, b) = user.runs["model-a"], user.runs["model-b"]
    d = user.bench.compare_runs(a, b, n_resamples=200).set_index("metric").loc["accuracy"]
    right_a, right_b = set(RIGHT["model-a"]), set(RIGHT["model-b"])
    assert d["diff"] == pytest.approx(100 * (len(right_a) - len(right_b)) / N) and d["n"] == N
    assert (d["discordant_a_only"], d["discordant_b_only"]) == (len(right_a - right_b), len(right_b - right_a))


def test_a_store_of_a_paper_profile_run_is_scored_on_its_fetched_release_without_naming_it(user):
    """The store's records name the release and revision they stood on: ``vlamb-nb score`` and ``compare`` find
    it in the data home; a store of files a user gave still needs ``--source``."""
    from vlamb_nb.cli import EXIT_ERROR

    _, store, live = user.runs["model-a"]
    rc, out, err = cli("score", "toy", "--predictions", str(store), "--json")
    assert rc == 0, err
    got = json.loads(out)
    assert got["scored"] == N and got["metrics"]["accuracy"] == 100 * len(RIGHT["model-a"]) / N
    rc, out, err = cli("compare", str(store), str(user.runs["model-b"][1]), "--json", "--n-resamples", "200",
                       "--out", str(user.root / "cmp-no-source"))
    assert rc == 0, err
    assert json.loads(out)["pairs"][0]["diff"] == pytest.approx(100 * (len(RIGHT["model-a"]) - len(RIGHT["model-b"])) / N)
    given = user.root / "given.jsonl"
    given.write_text("".join(json.dumps({**rec, "run": {**rec["run"], "data": {"kind": "source", "paper": "toy"}}})
                             + "\n" for rec in map(json.loads, store.read_text().splitlines())))
    rc, out, err = cli("score", "toy", "--predictions", str(given))
    assert (rc, out) == (EXIT_ERROR, "") and "give the data it was run on" in err and len(err.strip().splitlines()) == 1


def test_step_7_vlamb_nb_compare_gives_the_paired_difference_and_the_exact_mcnemar_p(user):
    rc, out, err = user.compared
    assert rc == 0, err
    c = json.loads(out)
    a, b = RIGHT["model-a"], RIGHT["model-b"]
    assert len(c["pairs"]) == 1
    row = c["pairs"][0]
    assert (row["paper"], row["metric"], row["model_a"], row["model_b"]) == ("toy", "accuracy", "model-a", "model-b")
    assert row["diff"] == pytest.approx(100 * (len(a) - len(b)) / N)
    assert (row["discordant_a_only"], row["discordant_b_only"]) == (len(a - b), len(b - a))
    n = len(a ^ b)
    assert row["p"] == pytest.approx(min(1.0, 2 * sum(math.comb(n, i) for i in range(len(b - a) + 1)) / 2 ** n))
    assert [v["model"] for v in sorted(c["values"], key=lambda v: v["rank"])] == ["model-a", "model-b"]
    page = user.root / "comparison" / "comparison.html"
    assert page.is_file() and err.strip().splitlines()[-1] == str(page)
    assert "toy" in page.read_text(encoding="utf-8")


def test_step_8_the_toy_needed_only_its_folder_and_its_registry_line_and_wrote_nothing_into_the_checkout(user):
    """Every step above ran (each at most once), and the checkout is as it was: no file added, changed or
    removed, ignored ones included; the package holds none of the toy's declarations (its release, its title, its
    published numbers)."""
    from vlamb_nb import reference

    user.every_step()
    assert checkout_files() == user.checkout_before
    assert {p.name for p in user.folder.iterdir() if p.is_file()} == set(TOY)
    assert "toy" not in reference.available()
    own = (b"acme/toy", hashlib.sha256(RELEASED).hexdigest().encode(), b"A toy paper (one turn")
    mentions = [p for p in (ROOT / "vlamb_nb").rglob("*") if p.is_file() and p.suffix in (".py", ".csv", ".json")
                and any(s in p.read_bytes() for s in own)]
    assert not mentions


def test_a_papers_own_reference_file_is_checked_like_the_packages(tmp_path):
    from vlamb_nb import reference
    from vlamb_nb.errors import DataError

    own = tmp_path / "reference.csv"
    own.write_text("paper,table,row,column,value,unit,provenance,flag\n"
                   "toy,Table 1,Big model,accuracy,80.0,%,Table 1,\n"
                   "other,Table 1,Small model,accuracy,50.0,%,Table 1,\n")
    with pytest.raises(DataError, match=r"reference.csv, row 3: rows name paper 'other'"):
        reference.load("toy", file=own)
