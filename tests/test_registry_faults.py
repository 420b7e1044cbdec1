"""One broken paper never breaks the others, and a name is registered once.

Three papers are written into a temporary folder and registered beside the five: ``okpaper`` (one turn, a 0/1
metric, a release declared), ``badkind`` (the same, but its METRICS declare a metric kind the package does not
know) and ``badimp`` (its package imports a module that is not installed). Each command a user runs over every
paper — ``data status``, ``data fetch``, ``compare`` of a run folder or a file, ``score``, ``card`` — gives the
others' answers and one line for each broken paper, naming it, the cause and its file and line.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
import textwrap
from typing import Any

import pytest

from vlamb_nb.models import ScriptedModel

N = 12
ITEMS = "".join(json.dumps({"id": f"q{i}", "question": f"Is {i} even?", "gold": "yes" if i % 2 == 0 else "no"})
                + "\n" for i in range(N))

OK = {
    "__init__.py": """
        from {pkg}.benchmark import BENCHMARK

        __all__ = ["BENCHMARK"]
    """,
    "data.py": """
        import json
        from pathlib import Path

        import pandas as pd

        from vlamb_nb.release_spec import RAW, Release, UrlFile


        def load(source):
            rows = [json.loads(line) for line in Path(source).read_text().splitlines() if line.strip()]
            return pd.DataFrame(rows)


        RELEASE = Release(
            paper="{name}", name="github:acme/{name}", licence="CC0",
            parts=(UrlFile("items.jsonl", RAW + "/acme/{name}/{{revision}}/items.jsonl", "0" * 64, 10,
                           revision="0123456789abcdef0123456789abcdef01234567", source="acme/{name}"),),
            expected={{"items": 12}}, count=lambda files: {{"items": 12}}, n_items=12,
            load={{"source": "files/items.jsonl"}}, size="1 kB", unit="questions")
    """,
    "score.py": """
        from vlamb_nb.stats.metric import Metric

        METRICS = (Metric("accuracy", "{kind}", column="correct", card=None),)


        def score(predictions):
            out = predictions.copy()
            out["correct"] = out["valid"].fillna(False).astype(bool) & (out["answer"] == out["gold"])
            return out
    """,
    "benchmark.py": """
        import {pkg}.data as data
        import {pkg}.score as S
        from vlamb_nb.benchmarks.base import Benchmark
        from vlamb_nb.models.base import Request


        class Toy(Benchmark):
            name = "{name}"
            paper = "A toy paper"
            settings = ("plain",)
            default_setting = "plain"
            metrics = S.METRICS
            load = staticmethod(data.load)
            score = staticmethod(S.score)

            def requests(self, items, setting, **options):
                return [Request(id=str(r["id"]), messages=[{{"role": "user", "content": [
                            {{"type": "text", "text": r["question"]}}]}}], benchmark="{name}", setting=setting,
                                meta={{"item_id": str(r["id"])}}) for r in items.to_dict(orient="records")]

            def parse(self, text, item):
                word = text.strip().lower()
                return {{"answer": word, "valid": word in ("yes", "no")}}

            def tables(self, scored):
                return {{"accuracy": scored["correct"].mean()}}


        BENCHMARK = Toy()
    """,
}
#: the papers written (package -> registered name, metric kind, files replaced)
PACKAGES = {"ok_paper": ("okpaper", "binary", {}),
            "bad_kind": ("badkind", "ratio", {}),
            "bad_import": ("badimp", "binary", {"__init__.py": "import vlamb_missing_dependency_xyz\n"})}
FIVE = ["vague", "mucar", "vflute", "refadv", "racquet"]
KIND_CAUSE = ("badkind: cannot be loaded: ValueError: unknown metric kind 'ratio'; one of binary, all_correct, share, "
              "mean, macro_f1 (bad_kind/score.py, line 3)")
IMPORT_CAUSE = ("badimp: cannot be loaded: ModuleNotFoundError: No module named 'vlamb_missing_dependency_xyz' "
                "(bad_import/__init__.py, line 1)")


def cli(*argv: str) -> tuple[int, str, str]:
    from vlamb_nb import cli as vlamb_cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = vlamb_cli.main(list(argv))
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict[str, Any]:
    """The three papers registered after the five, a data home of their own, the ok paper's items and two
    scripted models' stores of it."""
    from vlamb_nb import benchmarks as registry

    root = tmp_path_factory.mktemp("papers")
    for pkg, (name, kind, replaced) in PACKAGES.items():
        (root / pkg).mkdir()
        for file, text in {**OK, **replaced}.items():
            (root / pkg / file).write_text(textwrap.dedent(text).lstrip().format(pkg=pkg, name=name, kind=kind))
    source = root / "items.jsonl"
    source.write_text(ITEMS)
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(root))
        mp.setenv("VLAMB_DATA", str(root / "data-home"))
        mp.setattr(registry, "PAPERS", (*registry.PAPERS, *(registry.Paper(name, name, (), module=pkg)
                                                           for pkg, (name, _, _) in PACKAGES.items())))
        bench = registry.get_benchmark("okpaper")
        items = bench.load(source)
        stores = []
        for model_id, right in (("model-a", range(10)), ("model-b", range(4, 9))):
            gold = dict(zip(items["id"], items["gold"], strict=True))

            def respond(req, gold=gold, right=frozenset(right)):
                item = req.meta["item_id"]
                ok = int(item[1:]) in right
                return gold[item] if ok else {"yes": "no", "no": "yes"}[gold[item]]
            store = root / "runs" / model_id / "okpaper__plain.jsonl"
            bench.evaluate(ScriptedModel(respond, model_id=model_id), items, store=store, progress=False)
            stores.append(store)
        yield {"root": root, "source": source, "stores": stores, "registry": registry}
    for name in [m for m in sys.modules if m.split(".")[0] in PACKAGES]:
        sys.modules.pop(name)


def test_data_status_lists_the_others_and_gives_each_broken_paper_its_row_and_one_line(world):
    rc, out, err = cli("data", "status", "--json")
    rows = {r["paper"]: r for r in json.loads(out)["papers"]}
    assert list(rows) == [*FIVE, "okpaper", "badkind", "badimp"] and err == ""
    assert {rows[p]["state"] for p in [*FIVE, "okpaper"]} == {"not fetched"}
    assert rows["badkind"]["state"] == rows["badimp"]["state"] == "broken"
    assert rows["badkind"]["problems"] == [KIND_CAUSE.removeprefix("badkind: ")]
    assert rows["badimp"]["problems"] == [IMPORT_CAUSE.removeprefix("badimp: ")]
    assert rc == 1
    rc, out, err = cli("data", "status")
    assert rc == 1 and err == ""
    assert [line for line in out.splitlines() if line.startswith("badkind:")] == [KIND_CAUSE]
    assert [line for line in out.splitlines() if line.startswith("badimp:")] == [IMPORT_CAUSE]


def test_data_fetch_fetches_every_other_paper_and_reports_each_broken_one_in_one_line(world, monkeypatch):
    import vlamb_nb.releases as releases

    asked: list[str] = []

    def fetch(paper, **_):
        from vlamb_nb.errors import FetchError

        asked.append(paper)
        raise FetchError(f"{paper}: network: offline in this test")
    monkeypatch.setattr(releases, "fetch", fetch)
    rc, out, err = cli("data", "fetch", "-q", "--no-models")
    assert asked == [*FIVE, "okpaper"] and out == "" and rc == 1
    lines = err.strip().splitlines()
    assert f"vlamb-nb: {KIND_CAUSE}" in lines and f"vlamb-nb: {IMPORT_CAUSE}" in lines
    assert len(lines) == 2 + len(asked)
    asked.clear()
    rc, out, err = cli("data", "fetch", "okpaper", "badkind", "-q", "--no-models")
    assert asked == ["okpaper"] and rc == 1
    assert err.strip().splitlines() == [f"vlamb-nb: {KIND_CAUSE}", "vlamb-nb: okpaper: network: offline in this test"]


def test_score_and_compare_of_a_paper_go_on_beside_broken_ones_and_the_broken_one_is_one_line(world):
    a, b = world["stores"]
    rc, out, err = cli("score", "okpaper", "--predictions", str(a), "--source", str(world["source"]), "--json")
    assert rc == 0, err
    assert json.loads(out)["metrics"]["accuracy"] == round(100 * 10 / N, 2)
    rc, out, err = cli("score", "badkind", "--predictions", str(a), "--source", str(world["source"]))
    assert (rc, out, err) == (2, "", f"vlamb-nb: error: {KIND_CAUSE}\n")
    rc, out, err = cli("compare", str(a), str(b), "--source", f"okpaper={world['source']}", "--json",
                       "--n-resamples", "200", "--out", str(world["root"] / "cmp-stores"))
    assert rc == 0, err
    assert json.loads(out)["pairs"][0]["diff"] == pytest.approx(100 * 5 / N)


def test_compare_of_a_run_folder_leaves_out_a_broken_papers_runs_and_says_so(world):
    """A reproduce run folder holding the broken paper's stores too: the others are compared, a note names it."""
    import shutil

    run = world["root"] / "runs" / "20260101-000000"
    for k, store in enumerate(world["stores"]):
        for paper in ("okpaper", "badkind"):
            (run / paper / f"m{k}").mkdir(parents=True, exist_ok=True)
            shutil.copy(store, run / paper / f"m{k}" / f"{paper}__plain.jsonl")
    (run / "results.json").write_text(json.dumps({"okpaper": {"ok": True, "parameters": {"source": str(
        world["source"])}}, "badkind": {"ok": False, "error": "the notebook failed"}}))
    rc, out, err = cli("compare", str(run), "--json", "--n-resamples", "200", "--out", str(world["root"] / "cmp-run"))
    assert rc == 0, err
    got = json.loads(out)
    assert {p["paper"] for p in got["pairs"]} == {"okpaper"}
    assert f"{KIND_CAUSE}; its runs under {run.name}/badkind/ are not compared" in got["notes"]
    # the card of the same run still shows every paper, the broken one as its notebook left it
    rc, out, err = cli("card", str(run))
    assert rc == 0, err
    assert "the notebook failed" in out


def test_a_file_no_paper_claims_is_refused_in_one_line_naming_the_papers_not_asked(world):
    other = world["root"] / "other.jsonl"
    other.write_text('{"x": 1}\n')
    rc, out, err = cli("compare", str(other), str(world["stores"][0]), "--out", str(world["root"] / "cmp-x"))
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "not a run" in err and f"(not asked: {KIND_CAUSE}; {IMPORT_CAUSE})" in err


def test_the_help_lists_each_papers_settings_and_a_broken_papers_cause(world):
    from vlamb_nb import cli as vlamb_cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        vlamb_cli.main(["run", "--help"])
    text = " ".join(out.getvalue().split())
    assert "okpaper: plain" in text and "badkind: (cannot be loaded: ValueError: unknown metric kind" in text


def test_a_benchmark_whose_declared_metrics_cannot_be_read_is_refused_for_that_paper(world, monkeypatch):
    """A kind changed after the declaration, or something that is not a Metric, is caught when the paper is
    loaded, not deep inside a comparison."""
    from vlamb_nb.benchmarks import BrokenPaper, get_benchmark

    bench = get_benchmark("okpaper")
    metric = bench.metrics[0]
    object.__setattr__(metric, "kind", "x")  # a frozen declaration, changed behind its back
    try:
        with pytest.raises(BrokenPaper, match=r"^okpaper: cannot be loaded: metric 'accuracy' has unknown kind 'x'"):
            get_benchmark("okpaper")
    finally:
        object.__setattr__(metric, "kind", "binary")
    monkeypatch.setattr(type(bench), "metrics", ({"name": "accuracy"},))
    with pytest.raises(BrokenPaper, match=r"its metrics hold dict .*not a Metric"):
        get_benchmark("okpaper")


def test_a_name_already_registered_is_refused_in_one_line(world, monkeypatch):
    from vlamb_nb.errors import SettingError

    registry = world["registry"]
    five = registry.PAPERS
    for taken, why in (("vague", "'vague' is already registered (by vlamb_nb.benchmarks.vague)"),
                       ("okpaper", "'okpaper' is already registered (by ok_paper)"),
                       ("ref-adv", "'ref-adv' is an alias of 'refadv'")):
        with pytest.raises(SettingError, match="^" + re.escape(f"paper registry: bad_kind cannot be registered as "
                                                               f"'{taken}': {why}; give it a name of its own") + "$"):
            registry.register(registry.Paper(taken, "Again", (), module="bad_kind"))
        assert registry.PAPERS is five  # refused: nothing registered
    # a registry line naming a paper twice: every command says so in one line, before anything runs
    monkeypatch.setattr(registry, "PAPERS", (*five, registry.Paper("vague", "VAGUE again", (), module="ok_paper")))
    rc, out, err = cli("data", "status")
    assert (rc, out) == (2, "")
    assert err == ("vlamb-nb: error: paper registry: ok_paper cannot be registered as 'vague': 'vague' is already "
                   "registered (by vlamb_nb.benchmarks.vague); give it a name of its own\n")
    monkeypatch.setattr(registry, "PAPERS", five)
    added = registry.register(registry.Paper("newpaper", "New", (), module="ok_paper"))
    assert registry.PAPERS == (*five, added) and registry.list_benchmarks()[-1] == "newpaper"


# -- installed plugins break only themselves ---------------------------------------------------------------------
@pytest.fixture(autouse=True)
def _forget_plugins():
    """The packages these tests install are forgotten after each (another module's toy_paper is another package)."""
    yield
    for name in [m for m in sys.modules if m.split(".")[0] in ("toy_paper", "exit_paper", "clash_paper")]:
        sys.modules.pop(name)


def _installed(site, name: str, pkg: str, init: str) -> None:
    """An installed package ``pkg`` (its ``__init__`` is ``init``) registered as paper ``name`` by entry point."""
    import fixtures_toy

    (site / pkg).mkdir(parents=True)
    (site / pkg / "__init__.py").write_text(textwrap.dedent(init).lstrip(), encoding="utf-8")
    fixtures_toy.entry_point(site, name, pkg)


def test_a_plugin_that_exits_on_import_is_one_broken_row_and_the_five_are_listed(tmp_path, monkeypatch):
    """``load_module`` caught ``Exception`` only: a plugin calling ``sys.exit()`` on import ended ``data status``
    with none of the five papers listed."""
    _installed(tmp_path, "exiter", "exit_paper", "import sys\nsys.exit(3)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("VLAMB_DATA", str(tmp_path / "data-home"))
    rc, out, err = cli("data", "status", "--json")
    rows = {r["paper"]: r for r in json.loads(out)["papers"]}
    assert list(rows)[:5] == FIVE and rows["exiter"]["state"] == "broken", rows
    assert rows["exiter"]["problems"] == ["cannot be loaded: SystemExit: 3 (exit_paper/__init__.py, line 2)"]
    from vlamb_nb.benchmarks import BrokenPaper, get_benchmark

    with pytest.raises(BrokenPaper, match="SystemExit: 3"):
        get_benchmark("exiter")


def test_an_entry_point_named_in_capitals_resolves_and_its_prints_stay_out_of_json(tmp_path, monkeypatch):
    """An entry point named ``MyToy`` broke ``data status`` and ``score`` ("unknown benchmark 'MyToy'; choose one
    of …, MyToy"); a plugin that prints on import corrupted ``--json``."""
    import fixtures_toy

    folder = fixtures_toy.write(tmp_path / "toy_paper")
    for f in folder.glob("*.py"):  # the toy under the name its author gave it: MyToy
        f.write_text(f.read_text(encoding="utf-8").replace('"toy"', '"MyToy"'), encoding="utf-8")
    init = folder / "__init__.py"
    init.write_text("print('hello from the toy paper')\n" + init.read_text(encoding="utf-8"), encoding="utf-8")
    fixtures_toy.entry_point(tmp_path, "MyToy", "toy_paper")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("VLAMB_DATA", str(tmp_path / "data-home"))
    from vlamb_nb.benchmarks import get_benchmark, list_benchmarks, paper

    assert "mytoy" in list_benchmarks() and paper("MyToy").name == paper("mytoy").name == "mytoy"
    rc, out, err = cli("data", "status", "--json")
    rows = {r["paper"]: r for r in json.loads(out)["papers"]}  # stdout is the JSON, whole
    assert rows["mytoy"]["state"] != "broken", rows["mytoy"]
    assert "hello from the toy paper" in err and "hello" not in out
    assert get_benchmark("MyToy").name == "MyToy"
    rc, out, err = cli("score", "MyToy", "--predictions", str(tmp_path / "none.jsonl"), "--source", str(init))
    assert rc == 2 and "unknown benchmark" not in err and "predictions file not found" in err, err


def test_a_name_clash_is_one_warning_line(tmp_path):
    """An installed package taking a registered name printed a two-line Python warning with a source line."""
    import os
    import subprocess
    from pathlib import Path

    _installed(tmp_path, "vague", "clash_paper", "BENCHMARK = None\n")
    root = Path(__file__).resolve().parent.parent
    code = "import sys; from vlamb_nb.cli import main; sys.exit(main(sys.argv[1:]))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(root)]),
           "VLAMB_DATA": str(tmp_path / "data-home")}
    env.pop("PYTHONWARNINGS", None)
    for argv in (["data", "status", "--json"], ["score", "vague", "--predictions", "none.jsonl"]):
        proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env,
                              cwd=tmp_path, timeout=300)
        lines = [ln for ln in proc.stderr.splitlines() if "clash_paper" in ln]
        assert len(lines) == 1 and lines[0].startswith("vlamb-nb: warning: the installed package clash_paper is "
                                                       "not registered as 'vague'"), proc.stderr
        assert "warnings.warn" not in proc.stderr and "RegistryWarning" not in proc.stderr, proc.stderr
    py = "import warnings; from vlamb_nb.benchmarks import list_benchmarks; list_benchmarks(); list_benchmarks()"
    proc = subprocess.run([sys.executable, "-c", py], capture_output=True, text=True, env=env, timeout=300)
    assert len(proc.stderr.strip().splitlines()) == 1 and "clash_paper" in proc.stderr, proc.stderr  # in Python too
