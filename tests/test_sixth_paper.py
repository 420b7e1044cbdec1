"""A sixth paper from its own folder and one registry line: run, card, summary and compare, no other file touched.

The paper is a package written into a temporary folder — one turn, a 0/1 metric declared as data, a generated
sample, its published numbers in its own ``reference.csv`` — registered by one ``Paper(..., module=...)`` entry.
Each step a user takes is one test below, in order, on the same registered paper; the steps that come next
(scoring a store with ``vlamb-nb score``, ``vlamb-nb data fetch``) are appended the same way.
"""

from __future__ import annotations

import json
import math
import sys
import textwrap
from pathlib import Path

import pytest

from vlamb_nb.models import ScriptedModel

N = 40
RIGHT = {"model-a": set(range(0, 30)), "model-b": set(range(10, 24))}  # items each scripted model gets right

#: the whole paper: every file of its folder
TOY = {
    "__init__.py": """
        from toy_paper.benchmark import BENCHMARK

        __all__ = ["BENCHMARK"]
    """,
    "data.py": """
        import json
        from pathlib import Path

        import pandas as pd


        def load(source):
            rows = [json.loads(line) for line in Path(source).read_text().splitlines() if line.strip()]
            return pd.DataFrame(rows)


        def make_sample(directory, n=8, seed=0):
            path = Path(directory) / "items.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps({"id": f"q{i}", "question": f"Is {i} even?",
                                                "gold": "yes" if i % 2 == 0 else "no"}) + "\\n" for i in range(n)))
            return path
    """,
    "prompts.py": """
        from vlamb_nb.models.base import Request


        def requests(items, setting):
            return [Request(id=str(r["id"]), messages=[{"role": "user", "content": [
                        {"type": "text", "text": f"{r['question']} Answer yes or no."}]}],
                            benchmark="toy", setting=setting, meta={"item_id": str(r["id"])})
                    for r in items.to_dict(orient="records")]
    """,
    "score.py": """
        from vlamb_nb.stats.metric import Metric, OnCard, Published

        METRICS = (Metric("accuracy", "binary", column="correct",
                          card=OnCard(published=Published("Table 1", {"overall": "accuracy"}, n=200))),)


        def score(predictions):
            out = predictions.copy()
            out["correct"] = out["valid"].fillna(False).astype(bool) & (out["answer"] == out["gold"])
            return out
    """,
    "benchmark.py": """
        import toy_paper.data as data
        import toy_paper.prompts as prompts
        import toy_paper.score as S
        from vlamb_nb.benchmarks.base import Benchmark


        class Toy(Benchmark):
            name = "toy"
            paper = "A toy paper (one turn, a 0/1 metric)"
            settings = ("plain",)
            default_setting = "plain"
            metrics = S.METRICS
            load = staticmethod(data.load)
            make_sample = staticmethod(data.make_sample)
            score = staticmethod(S.score)

            def requests(self, items, setting, **options):
                return prompts.requests(items, self.check_setting(setting))

            def parse(self, text, item):
                word = text.strip().lower()
                return {"answer": word, "valid": word in ("yes", "no")}

            def tables(self, scored):
                return {"accuracy": scored["correct"].mean()}


        BENCHMARK = Toy()
    """,
    "reference.csv": """
        paper,table,row,column,value,unit,provenance,flag
        toy,Table 1,Big model,accuracy,80.0,%,Table 1,
        toy,Table 1,Small model,accuracy,50.0,%,Table 1,
    """,
}


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """The toy paper written into its own folder and registered with one line, for every step below."""
    from vlamb_nb import benchmarks as registry
    from vlamb_nb.benchmarks import Paper

    root = tmp_path_factory.mktemp("elsewhere")
    folder = root / "toy_paper"
    folder.mkdir()
    for name, text in TOY.items():
        (folder / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(root))
        mp.setattr(registry, "PAPERS", registry.PAPERS + (Paper("toy", "Toy", (), module="toy_paper"),))
        bench = registry.get_benchmark("toy")
        src = bench.make_sample(root / "data", n=N)
        items = bench.load(src)
        stores = {}
        for model_id, right in RIGHT.items():
            gold = dict(zip(items["id"], items["gold"], strict=True))
            pos = {i: k for k, i in enumerate(items["id"])}

            def respond(req, gold=gold, pos=pos, right=right):
                item = req.meta["item_id"]
                return gold[item] if pos[item] in right else ("no" if gold[item] == "yes" else "yes")
            stores[model_id] = root / "runs" / f"{model_id}.jsonl"
            scored = bench.evaluate(ScriptedModel(respond, model_id=model_id), items, store=stores[model_id],
                                    progress=False)
            stores[model_id + ":scored"] = scored
        yield {"bench": bench, "src": src, "items": items, "stores": stores, "folder": folder}
    sys.modules.pop("toy_paper", None)
    for name in [m for m in sys.modules if m.startswith("toy_paper.")]:
        sys.modules.pop(name)


def test_the_toy_paper_registers_from_its_own_folder(toy):
    from vlamb_nb.benchmarks import list_benchmarks

    assert "toy" in list_benchmarks()
    assert toy["bench"].folder() == toy["folder"] and toy["bench"].package() == "toy_paper"
    assert {p.name for p in toy["folder"].iterdir() if p.is_file()} == set(TOY)


def test_step_1_evaluate_runs_one_turn_into_its_store(toy):
    scored = toy["stores"]["model-a:scored"]
    assert len(scored) == N and int(scored["correct"].sum()) == len(RIGHT["model-a"])
    records = [json.loads(line) for line in toy["stores"]["model-a"].read_text().splitlines()]
    assert len(records) == N and {r["run"]["benchmark"] for r in records} == {"toy"}
    assert records[0]["run"]["template"]  # the digest of its own prompts module, found in its own package


def test_step_2_the_card_ranks_it_among_its_own_published_numbers(toy):
    from vlamb_nb import report_card

    rows = toy["bench"].headline({"plain": toy["stores"]["model-a:scored"]}, n_resamples=300)
    assert len(rows) == 1
    h = rows[0]
    assert (h.paper, h.metric, h.slice, h.setting, h.n) == ("toy", "accuracy", "overall", "plain", N)
    assert h.value == pytest.approx(100 * len(RIGHT["model-a"]) / N)  # 75: between the published 80 and 50
    assert {c.name: c.value for c in h.comparators} == {"Big model": 80.0, "Small model": 50.0}
    assert all(c.n == 200 and c.source == "toy Table 1" for c in h.comparators)
    assert h.rank == 2 and h.n_ranked == 3 and h.rank_low <= 2 <= h.rank_high
    card = report_card.build({"toy": {"ok": True, "results": {"headline": [h.to_dict()]}}}, papers=["toy"])
    md = report_card.markdown(card)
    assert "| toy | plain | accuracy | overall | 75.0 [" in md and "Big model 80.0" in md


def test_step_3_the_sweep_summary_reads_its_declared_metric(toy):
    summary = toy["bench"].summary(toy["stores"]["model-b:scored"])
    assert summary == {"n": N, "invalid": 0, "accuracy": round(100 * len(RIGHT["model-b"]) / N, 2)}


def test_step_4_compare_two_scripted_models_from_their_stores(toy):
    from vlamb_nb.compare import compare

    c = compare([toy["stores"]["model-a"], toy["stores"]["model-b"]], sources={"toy": toy["src"]},
                n_resamples=300)
    a, b = RIGHT["model-a"], RIGHT["model-b"]
    row = c.pairs.iloc[0].to_dict()
    assert (row["paper"], row["metric"], row["model_a"], row["model_b"]) == ("toy", "accuracy", "model-a", "model-b")
    assert row["diff"] == pytest.approx(100 * (len(a) - len(b)) / N)
    assert (row["discordant_a_only"], row["discordant_b_only"]) == (len(a - b), len(b - a))
    assert row["p"] == pytest.approx(min(1.0, 2 * sum(math.comb(len(a ^ b), i) for i in range(len(b - a) + 1))
                                         / 2 ** len(a ^ b)))
    assert list(c.values.sort_values("rank")["model"]) == ["model-a", "model-b"]


def test_the_toy_paper_touched_no_file_of_the_checkout(toy):
    """Its files are its folder's; the package's own reference data and papers are untouched by it."""
    from vlamb_nb import reference

    assert "toy" not in reference.available()
    pkg = Path(__file__).resolve().parent.parent / "vlamb_nb"
    assert not list(pkg.rglob("toy*"))


def test_a_papers_own_reference_file_is_checked_like_the_packages(tmp_path):
    from vlamb_nb import reference
    from vlamb_nb.errors import DataError

    own = tmp_path / "reference.csv"
    own.write_text("paper,table,row,column,value,unit,provenance,flag\n"
                   "toy,Table 1,Big model,accuracy,80.0,%,Table 1,\n"
                   "other,Table 1,Small model,accuracy,50.0,%,Table 1,\n")
    with pytest.raises(DataError, match=r"reference.csv, row 3: rows name paper 'other'"):
        reference.load("toy", file=own)
