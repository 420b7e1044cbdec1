"""``vlamb-nb run`` says when nothing worked: every request failed → a non-zero exit and a one-line reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from vlamb_nb import cli, get_benchmark
from vlamb_nb.models import ScriptedModel
from vlamb_nb.models.serve import ChatServer


def _server(fail):
    def answer(r):
        if fail(r):
            raise ValueError("the model refuses this request")
        return '[{"bbox_2d": [1, 2, 30, 40]}]'

    return ChatServer(ScriptedModel(answer, model_id="m"), host="127.0.0.1", port=0).start(lifetime=60)


@pytest.fixture
def source(tmp_path):
    return str(get_benchmark("refadv").make_sample(tmp_path / "data", n=3))


def _run(source, srv, out, capsys):
    code = cli.main(["run", "refadv", "--model", "openai:m", "--base-url", srv.base_url, "--source", source,
                     "--setting", "direct", "--limit", "3", "--out", str(out), "--max-retries", "0"])
    return code, capsys.readouterr()


def test_all_requests_failed_exits_non_zero_with_the_reason(source, tmp_path, capsys):
    srv = _server(lambda r: True)
    try:
        code, out = _run(source, srv, tmp_path / "p.jsonl", capsys)
    finally:
        srv.stop()
    assert code == cli.EXIT_RUN_FAILED
    line = [ln for ln in out.err.splitlines() if "nothing was generated" in ln]
    assert len(line) == 1 and "3 of 3 requests failed: 3 × " in line[0]
    assert "the model refuses" in line[0]  # the endpoint's reason reaches the user


def test_a_partial_failure_is_a_warning_with_counts(source, tmp_path, capsys):
    bench = get_benchmark("refadv")
    first = str(bench.load(source).iloc[0]["expression"])

    def fail(r):  # every request about the first item fails, the others answer
        return first in r.prompt_text

    srv = _server(fail)
    try:
        code, out = _run(source, srv, tmp_path / "p.jsonl", capsys)
    finally:
        srv.stop()
    assert code == 0
    assert "3 requests, 1 failed" in out.out
    assert "warning: 1 of 3 requests failed: 1 × " in out.err


def test_cli_help_lists_the_benchmarks_and_settings(capsys):
    from vlamb_nb import cli
    from vlamb_nb.benchmarks import get_benchmark, list_benchmarks

    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    assert f"one of {', '.join(list_benchmarks())}" in out
    for name in list_benchmarks():  # the help names every setting each benchmark accepts, from the registry
        listed = out.split(f"{name}:")[1].split(";")[0].split()
        for setting in get_benchmark(name).settings:
            assert setting in listed, (name, setting)


def test_endpoint_settings_reach_the_model_and_only_an_openai_model_takes_them(source, tmp_path, capsys,
                                                                                monkeypatch):
    import vlamb_nb.models as models

    built = []
    real = models.load_model

    def spy(spec, **kw):
        built.append(real(spec, **kw))
        return built[-1]

    monkeypatch.setattr(models, "load_model", spy)
    srv = _server(lambda r: False)
    try:
        code = cli.main(["run", "refadv", "--model", "openai:m", "--base-url", srv.base_url, "--source", source,
                         "--setting", "direct", "--limit", "3", "--out", str(tmp_path / "p.jsonl"),
                         "--concurrency", "3", "--timeout", "7", "--max-retries", "1", "--deadline", "30"])
    finally:
        srv.stop()
    assert code == 0, capsys.readouterr().err
    m = built[0]
    assert (m.concurrency, m.timeout, m.max_retries, m.deadline) == (3, 7.0, 1, 30.0)
    code = cli.main(["run", "refadv", "--model", "replay:none.jsonl", "--source", source, "--concurrency", "3",
                     "--out", str(tmp_path / "q.jsonl")])
    assert code == cli.EXIT_ERROR and "--concurrency go with an openai:MODEL spec" in capsys.readouterr().err


def test_flags_speak_the_notebooks_vocabulary_and_old_spellings_still_work(source, tmp_path, capsys):
    """--settings, --quantization and --store-dir as in notebooks; --setting, --quant and --out are accepted with a
    note on stderr naming the new flag."""
    srv = _server(lambda r: False)
    try:
        code = cli.main(["run", "refadv", "--model", "openai:m", "--base-url", srv.base_url, "--source", source,
                         "--settings", "direct", "--limit", "2", "--store-dir", str(tmp_path / "stores"),
                         "--max-retries", "0"])
        out = capsys.readouterr()
        assert code == 0 and "deprecated" not in out.err
        store = Path(out.out.strip().rpartition("predictions in ")[2])
        assert store.is_file() and store.name == "refadv__direct.jsonl" and (tmp_path / "stores") in store.parents
        code, out = _run(source, srv, tmp_path / "p.jsonl", capsys)  # --setting and --out
    finally:
        srv.stop()
    assert code == 0 and (tmp_path / "p.jsonl").is_file()
    assert "--setting is deprecated; use --settings" in out.err and "--out is deprecated; use --store-dir" in out.err
    code = cli.main(["run", "refadv", "--model", "openai:m", "--quant", "8bit", "--source", source,
                     "--store-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == cli.EXIT_ERROR and "--quant is deprecated; use --quantization" in err
    assert "--quantization 8bit does not apply to openai: models" in err
    assert cli.main(["run", "refadv", "--model", "openai:m", "--source", source]) == cli.EXIT_ERROR
    assert "--store-dir" in capsys.readouterr().err
    args = cli.build_parser().parse_args(["reproduce", "--out", "elsewhere"])
    assert args.runs_dir == "elsewhere" and "--out is deprecated" in capsys.readouterr().err
    assert cli.build_parser().parse_args(["serve", "tiny:x", "--quant", "8bit"]).quantization == "8bit"
