"""Sweeps: config validation, and a real 2 tiny models × 2 benchmarks sweep through submitit's local executor."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from vlamb_nb.errors import DataError, NotAvailableError, SettingError
from vlamb_nb.sweep import load_config

BENCHES = ("vague", "mucar")
MODELS = ("tiny:qwen2_5_vl", "tiny:llava")


def _write(tmp_path, cfg) -> Path:
    p = tmp_path / "sweep.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return p


def _bench_or_skip(name):
    from vlamb_nb.benchmarks import get_benchmark

    try:
        return get_benchmark(name)
    except NotAvailableError as e:
        pytest.skip(str(e))


def test_config_validation(tmp_path):
    _bench_or_skip("vague")
    base = {"models": ["m"], "benchmarks": [{"name": "vague"}]}
    cfg = load_config(_write(tmp_path, {**base, "models": ["m", {"spec": "n", "quantization": ["4bit", "none"]}]}))
    assert [(j.model, j.quantization) for j in cfg.jobs] == [("m", "4bit"), ("n", "4bit"), ("n", None)]
    assert cfg.out_dir.is_absolute()
    with pytest.raises(DataError, match="unknown key"):
        load_config(_write(tmp_path, {**base, "modles": []}))
    with pytest.raises(SettingError, match="unknown vague setting"):
        load_config(_write(tmp_path, {**base, "benchmarks": [{"name": "vague", "settings": ["bogus"]}]}))
    with pytest.raises(SettingError, match="unknown benchmark"):
        load_config(_write(tmp_path, {**base, "benchmarks": ["nope"]}))
    with pytest.raises(DataError, match="executor"):
        load_config(_write(tmp_path, {**base, "executor": "cloud"}))
    with pytest.raises(DataError, match="distinct"):
        load_config(_write(tmp_path, {**base, "models": ["m", "m"]}))


def _complete(text: str) -> list[dict]:
    """Complete records only: a line torn by the kill is not a record."""
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def _store_lines(out: Path) -> dict[str, list[dict]]:
    if not (out / "predictions").is_dir():
        return {}
    return {str(p.relative_to(out)): _complete(p.read_text()) for p in sorted((out / "predictions").rglob("*.jsonl"))}


@pytest.mark.slow
def test_sweep_two_tiny_models_two_benchmarks_resumes(tmp_path):
    pytest.importorskip("submitit")
    try:
        from vlamb_nb.models.tiny import build_tiny  # noqa: F401
    except ImportError as e:
        pytest.skip(f"tiny checkpoints unavailable: {e}")
    benches = []
    for name in BENCHES:
        bench = _bench_or_skip(name)
        src = bench.make_sample(tmp_path / f"{name}-data", n=4, seed=0)
        benches.append({"name": name, "source": str(src), "settings": [bench.default_setting],
                        "options": {"max_new_tokens": 8}})
    out = tmp_path / "sweep-out"
    cfg = _write(tmp_path, {"name": "t", "executor": "local", "out_dir": str(out), "batch_size": 2,
                            "progress": False, "models": list(MODELS), "benchmarks": benches})
    cmd = [sys.executable, "-m", "vlamb_nb.cli", "sweep", str(cfg)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # first run: interrupt it (SIGKILL to the whole process group) once some predictions are stored
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            process_group=0)
    deadline = time.time() + 600
    while time.time() < deadline and proc.poll() is None:
        if sum(len(v) for v in _store_lines(out).values()) >= 3:
            break
        time.sleep(0.2)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = _store_lines(out)
    assert sum(len(v) for v in before.values()) >= 3
    # second run finishes the sweep without redoing what was stored
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    after = _store_lines(out)
    assert len(after) == len(MODELS) * len(BENCHES)
    for path, recs in after.items():
        keys = [r["key"] for r in recs]
        assert len(keys) == len(set(keys)), f"{path}: an item was generated twice"
        assert recs[: len(before.get(path, []))] == before.get(path, []), f"{path}: earlier records changed"
    summary = (out / "summary.csv").read_text().splitlines()
    assert len(summary) == 1 + len(MODELS) * len(BENCHES)
    # and it ends with the comparison of its models on the items both answered
    assert "Comparison of 2 models" in (out / "summary.md").read_text()
    compared = json.loads((out / "comparison.json").read_text())
    assert {p["paper"] for p in compared["pairs"]} == set(BENCHES)


def test_the_example_sweep_file_in_the_repository_loads():
    from pathlib import Path

    from vlamb_nb.sweep import load_config

    cfg = load_config(Path(__file__).resolve().parent.parent / "examples" / "sweep.yaml")
    assert cfg.name == "qwen-vs-llava" and len(cfg.jobs) == 4  # Qwen 4bit, LLaVA 4bit and unquantized, a server
    served = [j for j in cfg.jobs if j.model.startswith("openai:")]
    assert len(served) == 1 and served[0].quantization is None
    assert served[0].model_options == {"base_url": "http://localhost:8000/v1", "concurrency": 64, "timeout": 120,
                                       "max_retries": 5, "deadline": 600}
    assert all(not j.model_options for j in cfg.jobs if j not in served)  # local models take no endpoint keys


def test_endpoint_keys_apply_to_served_models_and_the_command_line_wins(tmp_path):
    _bench_or_skip("refadv")
    path = _write(tmp_path, {"concurrency": 8, "timeout": 30, "deadline": 100,
                             "models": ["tiny:qwen2_5_vl", {"spec": "openai:m", "options": {"timeout": 5}}],
                             "benchmarks": [{"name": "refadv"}]})
    local, served = load_config(path).jobs
    assert local.model_options == {}  # a local model sends no requests over a network
    assert served.model_options == {"concurrency": 8, "timeout": 5, "deadline": 100}  # its own options win
    _, served = load_config(path, remote={"concurrency": 2, "max_retries": None}).jobs
    assert served.model_options == {"concurrency": 2, "timeout": 5, "deadline": 100}  # the command line wins


def test_a_served_model_sweeps_with_its_key_in_the_address_never_written(tmp_path):
    pytest.importorskip("submitit")
    from vlamb_nb.models import ScriptedModel
    from vlamb_nb.models.serve import ChatServer
    from vlamb_nb.sweep import sweep

    bench = _bench_or_skip("refadv")
    src = bench.make_sample(tmp_path / "data", n=3)
    srv = ChatServer(ScriptedModel(lambda r: '[{"bbox_2d": [1, 2, 30, 40]}]', model_id="m"), host="127.0.0.1",
                     port=0).start(lifetime=120)
    secret = "sweep-secret-0123456789"
    out = tmp_path / "out"
    cfg = _write(tmp_path, {"name": "served", "out_dir": str(out), "progress": False, "concurrency": 4,
                            "models": [{"spec": "openai:m", "quantization": "none",
                                        "options": {"base_url": f"{srv.base_url}?key={secret}", "max_retries": 0}}],
                            "benchmarks": [{"name": "refadv", "source": str(src), "settings": ["direct"]}]})
    try:
        failed = sweep(cfg, quiet=True)
    finally:
        srv.stop()
    assert failed == 0, (out / "summary.md").read_text()
    written = {p: p.read_text(errors="replace") for p in out.rglob("*") if p.is_file() and p.suffix != ".pkl"}
    assert any("key=***" in t for t in written.values())  # the address is there, masked
    assert not [p for p, t in written.items() if secret in t]
    config = json.loads((out / "config.json").read_text())[0]
    assert config["model_options"]["concurrency"] == 4
