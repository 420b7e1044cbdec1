"""A sixth paper in a folder of its own: every file of its package (``TOY``), its one released file, and its
notebook (``toy.ipynb``: the paper's steps through the base's, nothing of its own), written where a test wants it;
:func:`install` makes it an installed package that registers itself through the ``vlamb_nb.papers`` entry point."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

#: the release's number of questions
N = 40
#: the release's commit the paper pins
REVISION = "0123456789abcdef0123456789abcdef01234567"
#: the release's one file, as the stand-in of its host serves it
RELEASED = "".join(json.dumps({"id": f"q{i}", "question": f"Is the number {i} even?",
                               "gold": "yes" if i % 2 == 0 else "no"}) + "\n" for i in range(N)).encode()

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

        from vlamb_nb.release_spec import RAW, Release, UrlFile


        def load(source):
            rows = [json.loads(line) for line in Path(source).read_text().splitlines() if line.strip()]
            return pd.DataFrame(rows)


        def count(files):
            return {"items": len(load(files / "items.jsonl"))}


        def make_sample(directory, n=8, seed=0):
            path = Path(directory) / "items.jsonl"
            path.write_text("".join(json.dumps({"id": f"s{seed}-{i}", "question": f"Is the number {i + seed} even?",
                                                "gold": "yes" if (i + seed) % 2 == 0 else "no"}) + "\\n"
                                    for i in range(n)))
            return path


        RELEASE = Release(
            paper="toy", name="github:acme/toy", licence="CC0",
            parts=(UrlFile("items.jsonl", RAW + "/acme/toy/{revision}/items.jsonl",
                           "c568a5dade7a3b1a925bc6d3b8a1c40b45999d3845b4ed3c5966827bac486015", 2640,
                           revision="0123456789abcdef0123456789abcdef01234567", source="acme/toy"),),
            expected={"items": 40}, count=count, n_items=40, load={"source": "files/items.jsonl"}, size="3 kB",
            unit="questions")
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
    "not_derivable.json": """
        [{"item": "Table 2 (human answers)", "reason": "the annotators' answers are not released"}]
    """,
    "reference.csv": """
        paper,table,row,column,value,unit,provenance,flag
        toy,Table 1,Big model,accuracy,80.0,%,Table 1,
        toy,Table 1,Small model,accuracy,50.0,%,Table 1,
    """,
}


#: the paper's notebook, cell by cell (the first is papermill's parameters cell)
NOTEBOOK_CELLS = [
    """
    # parameters: the shared names mean the same in every notebook (vlamb_nb.notebook.parameters)
    profile = None
    model = None
    base_url = None
    quantization = "4bit"
    concurrency = None
    settings = ["plain"]
    limit = None
    source = None
    store_dir = None
    seed = 0
    """,
    """
    from vlamb_nb import get_benchmark
    from vlamb_nb.datahome import identity_of
    from vlamb_nb.models import DecodingParams
    from vlamb_nb.notebook import record, setup

    bench = get_benchmark("toy")
    cfg = setup("toy", profile=profile, model=model, base_url=base_url, quantization=quantization,
                concurrency=concurrency, seed=seed, store_dir=store_dir)
    (setting,) = cfg.settings(settings, bench.settings, single=True)
    limit = cfg.limit(limit, offline=6, paper_text="all questions")
    data = bench.notebook_data(source, profile=cfg.profile, n=12, seed=seed)  # the base's step: one type
    items = data.pipeline
    """,
    """
    vlm = cfg.load_model()
    scored = bench.evaluate(vlm, items, setting, store=bench.store_path(cfg.store_dir, vlm.info, setting),
                            limit=limit, params=DecodingParams(max_new_tokens=4), progress=False)
    record("answers", {"rows": len(scored), "answered yes or no": int(scored["valid"].fillna(False).sum())})
    """,
    """
    cfg.record_headline(bench.headline({setting: scored}, n_resamples=200, seed=seed),
                        model=vlm.info.model_id, data=identity_of(scored), limit=limit)
    """,
    """
    # the base's step: ours beside the paper's row for the model this notebook stands in for
    record("paper_vs_ours", bench.paper_vs_ours({setting: scored}, "Small model", seed=seed))
    """,
]


def notebook() -> dict:
    """``toy.ipynb`` as nbformat 4 JSON, stored without outputs."""
    cells = []
    for k, text in enumerate(NOTEBOOK_CELLS):
        source = textwrap.dedent(text).strip("\n")
        cells.append({"cell_type": "code", "execution_count": None, "id": f"cell-{k}", "outputs": [],
                      "metadata": {"tags": ["parameters"]} if k == 0 else {}, "source": source})
    return {"cells": cells, "nbformat": 4, "nbformat_minor": 5,
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}}


def write(folder: Path, *, with_notebook: bool = False) -> Path:
    """The paper's package in ``folder`` (``toy_paper/``), and with ``with_notebook`` its notebook beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in TOY.items():
        (folder / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    if with_notebook:
        (folder / "toy.ipynb").write_text(json.dumps(notebook(), indent=1), encoding="utf-8")
    return folder


def entry_point(site: Path, name: str, module: str) -> Path:
    """An installed distribution's metadata under ``site`` that registers ``module`` as paper ``name`` through the
    ``vlamb_nb.papers`` entry-point group (what ``pip install`` of a package declaring it leaves)."""
    dist = module.replace("_", "-")
    meta = site / f"{module}-0.1.dist-info"
    meta.mkdir(parents=True, exist_ok=True)
    (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n", encoding="utf-8")
    (meta / "entry_points.txt").write_text(f"[vlamb_nb.papers]\n{name} = {module}\n", encoding="utf-8")
    return meta


def install(site: Path) -> Path:
    """The paper as an installed package under ``site`` (a folder for ``sys.path``/``PYTHONPATH``): its folder
    with its notebook, and the package's metadata naming it in the ``vlamb_nb.papers`` entry-point group."""
    folder = write(site / "toy_paper", with_notebook=True)
    entry_point(site, "toy", "toy_paper")
    return folder


def cli(*argv: str) -> tuple[int, str, str]:
    """``vlamb-nb ARGV`` in this process: its exit status, stdout and stderr."""
    import contextlib
    import io

    from vlamb_nb import cli as vlamb_cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = vlamb_cli.main(list(argv))
    return rc, out.getvalue(), err.getvalue()
