"""Package-level guarantees: cheap import, registry, CLI behaviour, reference helpers."""

import json
import subprocess
import sys

import pandas as pd
import pytest

from vlamb_nb import cli, reference
from vlamb_nb.benchmarks import get_benchmark
from vlamb_nb.errors import SettingError
from vlamb_nb.models.base import IMAGE_SLOT, DecodingParams, ModelInfo, Request, ScriptedModel, user_message


def test_import_does_not_load_torch_or_transformers():
    """What keeps the import cheap; its time is measured in perf/bench_tests.py, not asserted here."""
    code = ("import sys; import vlamb_nb, vlamb_nb.cli; "
            "print(any(m in sys.modules for m in ('torch','transformers')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "False"


def test_unknown_benchmark_is_a_clear_error():
    with pytest.raises(SettingError, match="choose one of"):
        get_benchmark("nope")


def test_cli_help_lists_every_command(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    for c in ("data", "score", "run", "reference", "reproduce", "make-tiny-model", "sweep", "compare"):
        assert c in out


def test_cli_errors_are_one_line(capsys, tmp_path):
    rc = cli.main(["data", "stats", "nope", "--source", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == cli.EXIT_ERROR and err.count("\n") == 1 and "Traceback" not in err


def test_request_checks_image_slots():
    with pytest.raises(SettingError, match="image slot"):
        Request(id="x", messages=[user_message(IMAGE_SLOT, "q")], images=[])


def test_request_key_depends_on_image_content():
    from PIL import Image

    a, b = Image.new("RGB", (4, 4), (0, 0, 0)), Image.new("RGB", (4, 4), (0, 0, 1))
    info = ModelInfo("m", quantization="4bit")
    r1 = Request(id="x", messages=[user_message(IMAGE_SLOT, "q")], images=[a])
    r2 = Request(id="x", messages=[user_message(IMAGE_SLOT, "q")], images=[b])
    r3 = Request(id="x", messages=[user_message(IMAGE_SLOT, "q")], images=[a], params=DecodingParams(max_new_tokens=9))
    assert len({r1.key(info), r2.key(info), r3.key(info)}) == 3
    assert r1.key(info) != r1.key(ModelInfo("m", quantization=None))


def test_runner_resumes_without_model_calls(tmp_path):
    from vlamb_nb import runner

    reqs = [Request(id=f"i{i}", messages=[user_message(f"q{i}")], benchmark="b", setting="s") for i in range(10)]
    m = ScriptedModel(lambda r: r.prompt_text.upper())
    df = runner.run(m, reqs[:6], tmp_path / "p.jsonl", batch_size=4, progress=False)
    assert m.calls == 6 and list(df["text"]) == [f"Q{i}" for i in range(6)]
    df = runner.run(m, reqs, tmp_path / "p.jsonl", batch_size=4, progress=False)
    assert m.calls == 10 and df["cached"].sum() == 6 and len(df) == 10


def test_runner_records_failures_and_retries_them(tmp_path):
    from vlamb_nb import runner

    state = {"fail": True}

    def respond(r):
        if state["fail"] and r.id == "i1":
            raise RuntimeError("backend exploded")
        return "ok"

    reqs = [Request(id=f"i{i}", messages=[user_message("q")], setting=str(i)) for i in range(3)]
    m = ScriptedModel(respond)
    df = runner.run(m, reqs, tmp_path / "p.jsonl", progress=False)
    assert df["error"].notna().sum() == 1 and "exploded" in df.loc[1, "error"]
    state["fail"] = False
    df = runner.run(m, reqs, tmp_path / "p.jsonl", progress=False)
    assert df["error"].isna().all() and m.calls == 4


def test_reference_compare(monkeypatch):
    fake = pd.DataFrame({"paper": "x", "table": "T1", "row": ["a", "b"], "column": "acc",
                         "value": ["50.0", "60.0"], "unit": "%", "provenance": "test", "flag": ["", "sum off"]})
    fake["value_num"] = pd.to_numeric(fake["value"])
    monkeypatch.setattr(reference, "_load_paper", lambda paper: fake)
    ours = pd.DataFrame({"table": "T1", "row": ["a", "b", "c"], "column": "acc", "value": [50.04, 58.0, 1.0],
                         "ci_low": [45, 55, 0], "ci_high": [55, 59, 2]})
    out = reference.compare(ours, "x")
    assert list(out["match"]) == [True, False, False]
    assert out["paper_in_ci"].tolist()[:2] == [True, False]
    assert out["paper_in_ci"].isna()[2]  # nothing published: coverage unknown, not False
    no_ci = reference.compare(ours.assign(ci_low=float("nan"), ci_high=float("nan")), "x")
    assert no_ci["paper_in_ci"].isna().all()
    assert out.loc[1, "flag"] == "sum off" and out.loc[2, "flag"] == "not in the paper"
    assert out.loc[1, "diff"] == pytest.approx(-2.0)


def test_reference_csvs_are_well_formed():
    for paper in reference.available():
        df = reference.load(paper)
        assert len(df) > 0 and (df["table"] != "").all() and (df["provenance"] != "").all(), paper


def test_cli_reference_show_json(capsys):
    papers = reference.available()
    if not papers:
        pytest.skip("no reference tables yet")
    assert cli.main(["reference", "show", papers[0], "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and {"table", "row", "column", "value"} <= set(rows[0])


def test_predictions_treat_missing_error_as_success():
    """A runner frame without a store holds NaN in ``error``; only a real message marks a failure."""
    import numpy as np

    from vlamb_nb.benchmarks.base import Benchmark

    class Echo(Benchmark):
        name = "echo"
        settings = ("s",)
        load = requests = score = tables = None  # type: ignore[assignment]

        def parse(self, text, item):
            return {"valid": True, "answer": text}

    Echo.__abstractmethods__ = frozenset()
    items = pd.DataFrame({"id": ["a", "b", "c"]})
    gens = pd.DataFrame({"request_id": ["a", "b", "c"], "item_id": ["a", "b", "c"], "text": ["x", "y", ""],
                         "error": [np.nan, None, "RuntimeError: boom"]})
    out = Echo().predictions(items, gens)
    assert list(out["valid"]) == [True, True, False]
    assert out.loc[2, "parse_error"] == "generation_failed"


def test_cli_output_into_closed_pipe_is_not_an_error():
    """`vlamb-nb ... | head` must not print a traceback when head exits early."""
    code = ("import sys; from vlamb_nb import cli; "
            "sys.exit(cli.main(['reference', 'show', sys.argv[1]]))")
    papers = reference.available()
    if not papers:
        pytest.skip("no reference tables yet")
    proc = subprocess.Popen([sys.executable, "-c", code, papers[0]], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait() == 0 and "Traceback" not in err
